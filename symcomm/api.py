"""The Python API: what the commands compute, as values (``symcomm.evaluate``, ``symcomm.compare``,
``symcomm.plan``, ``symcomm.formula``).  The documents ``evaluate`` and ``compare`` return are the
``eval`` and ``compare`` commands' own (:mod:`symcomm.training.answers`).

Every function takes the same names and values as the command line (numbers may be Python
numbers or text: ``N=8``, ``M="1GiB"``, ``bw="50GB/s"``) and returns a :class:`Result`: a
plain mapping of numbers with units, ``.to_dict()`` for JSON, and a table in Jupyter.  Bad
input raises :class:`symcomm.base.errors.InputError` (a ``ValueError``) naming the parameter, as
the commands' one-line errors do.

>>> import symcomm
>>> r = symcomm.evaluate("all_reduce", algorithm="ring", N=8, M=2**30, alpha=0, beta=1e-11, gamma=0, dtype="bf16")
>>> r["send"], r["units"]["send"]
(3758096384, 'bytes')
>>> round(r["time"], 6)
0.037581
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np
import sympy as sp

from .base import notes
from .base.errors import InputError
from .training.answers import compare_payload
from .training import hybridfast
from .training.fasteval import eval_document
from .training.subjects import Subject, subject
from .training.words import value_text


# -- the Python API ---------------------------------------------------------------------------------

def _words(values: dict) -> list[str]:
    """Python keyword values as the command line's KEY=VALUE words (what a user would type for the same call)."""
    return [f"{key}={value_text(value)}" for key, value in values.items()]


@dataclass(frozen=True, slots=True)      # slots: no instance dict made and filled per answer
class Result(Mapping):
    """An answer of the Python API: the same document the command prints with ``--json``, a read-only
    mapping of its keys (``len``, iteration, ``.get``, ``.items()``).

    ``result["time"]`` reads a number, ``result.to_dict()`` gives a copy for JSON, and Jupyter
    shows it as a table (``_repr_markdown_``, ``_repr_html_``)."""

    kind: str
    data: dict = field(repr=False)
    #: what the command would print beside the answer (symcomm.base.notes), every one, defaults included
    notes: tuple[str, ...] = ()

    def __getitem__(self, key):
        return self.data[key]

    def __contains__(self, key) -> bool:
        return key in self.data

    def __iter__(self):
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)

    def keys(self):
        return self.data.keys()

    def to_dict(self) -> dict:
        return json.loads(json.dumps(self.data, default=_json_default, allow_nan=False))

    def _rows(self) -> list[tuple[str, str, str]]:
        units = self.data.get("units", {})
        rows = []
        for key, value in self.data.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                shown = f"{value:,}" if isinstance(value, int) else f"{value:.6g}"
                rows.append((key, shown, str(units.get(key, ""))))
        return rows

    def _repr_markdown_(self) -> str:
        title = self.data.get("label") or self.data.get("primitive") or self.kind
        lines = [f"**{title}**", "", "| quantity | value | unit |", "|---|---|---|"]
        lines += [f"| {k} | {v} | {u} |" for k, v, u in self._rows()]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        import html

        title = html.escape(str(self.data.get("label") or self.data.get("primitive") or self.kind))
        body = "".join(f"<tr><td>{html.escape(k)}</td><td>{html.escape(v)}</td><td>{html.escape(u)}</td></tr>"
                       for k, v, u in self._rows())
        return (f"<p><b>{title}</b></p><table><tr><th>quantity</th><th>value</th><th>unit</th></tr>"
                f"{body}</table>")

    def __repr__(self) -> str:
        title = self.data.get("label") or self.data.get("primitive") or self.kind
        return f"<symcomm {self.kind}: {title}; {len(self.data)} fields, .to_dict() for all>"


def evaluate(name: str, *, algorithm: str | None = None, dtype: str | None = None, backend: str | None = None,
             model: str | None = None, model_config: str | None = None, hardware: str | None = None,
             **values) -> Result:
    """``symcomm eval NAME KEY=VALUE ...`` as a value: send, recv, total, α/β/γ counts, time, the
    terms of a strategy, its step time with ``hardware`` (hybrid), ``inputs`` and ``units``.  As on the
    command line, send, recv and total count elements, and bytes once ``dtype`` or a size in bytes (M="1GiB")
    is given: ``units`` says which, call by call (a sweep mixing the two is not one unit).

    >>> import symcomm
    >>> symcomm.evaluate("dp", N=64, Phi=8 * 10**9)["send"]      # 2·63/64·Φ elements
    15750000000

    A sweep: values given as numpy arrays (all of one shape; scalars beside them) give every number that
    varies as an array of that shape, each element the answer at that point, exactly as a scalar call gives
    it (counts stay whole; a point refused is refused naming its index).  Each point is one evaluation on
    the compiled path; for millions of points use ``symcomm.numbers.numeric.evaluator`` on the formula.

    >>> import numpy as np
    >>> r = symcomm.evaluate("all_reduce", algorithm="ring", N=np.array([2, 4, 8]), M=2**20)
    >>> r["send"].tolist()                                    # 2·(N−1)/N·M elements
    [1048576, 1572864, 1835008]
    """
    if type(dtype) is int:              # bytes per element as a number, as its text is taken: dtype=2 as "2"
        dtype = str(dtype)
    name, algorithm, dtype, backend = (_word(k, v) for k, v in (("name", name), ("algorithm", algorithm),
                                                                   ("dtype", dtype), ("backend", backend)))
    model, model_config, hardware = (_word(k, v, path=True) for k, v in (("model", model), ("model_config", model_config),
                                                                         ("hardware", hardware)))
    for key, value in values.items():   # the common case, plain numbers and text, told apart without isinstance
        if type(value) not in _PLAIN:
            if type(value) is bool:
                _check_bool(key, value)
                continue
            if isinstance(value, (list, tuple, range)):
                raise InputError(f"{key}: a {type(value).__name__}; a sweep is a numpy array "
                                 f"({key}=numpy.array([...])), one value a number or its text")
            sweep = {key: value for key, value in values.items() if isinstance(value, np.ndarray)}
            break
    else:
        sweep = None
    if sweep:
        return _swept(name, sweep, dict(algorithm=algorithm, dtype=dtype, backend=backend, model=model,
                                        model_config=model_config, hardware=hardware, **values))
    if name == "hybrid":
        # names planned by an earlier call (hybridfast._Plan) answer here, as eval_document's warm path would, without
        # its layers (the arguments gathered, a notes collection entered, the path chosen): the plan's notes are
        # held, and its answer says none.  Anything it refuses goes the one path below, which refuses it or answers
        plan = hybridfast.held(model, hardware, dtype, backend, algorithm, model_config, values)
        if plan is not None:
            try:
                data = plan.answer(values, False)      # without eval's _result_keys and _extra_keys
            except hybridfast.REFUSED:
                pass
            else:
                return Result("evaluation", data, plan.texts)
    # the keyword values as they are (no KEY=VALUE text joined and split again): the binding reads each value
    # with the command line's grammar (training.words.given)
    args = SimpleNamespace(name=name, values=values, algorithm=algorithm, dtype=dtype,
                           backend=backend, model=model, model_config=model_config, hardware=hardware)
    with notes.collected() as said:
        data = eval_document(args)      # what `symcomm eval` answers: the one path of both
    data.pop("_result_keys", None)
    data.pop("_extra_keys", None)
    return Result("evaluation", data, tuple([n.text for n in said]) if said else ())


def _check_bool(key: str, value: bool) -> None:
    """A bool is a switch's value (sp=True), never a number or a choice among numbers: d=True ran one GPU and
    zero=True ZeRO-1, where the command line refuses the word True."""
    from .training.settings import OPTIONS

    option = OPTIONS.get(key)
    if option is not None and any(a is True for a in option.allowed) and any(a is False for a in option.allowed):
        return
    allowed = (", ".join(str(a) for a in option.allowed if a is not None) if option is not None else "a number")
    raise InputError(f"{key}={value!r}: a bool is not a value of {key}; give {allowed}")


def _word(option: str, value, path: bool = False):
    """A name the API takes (a subject, an algorithm, a model, a hardware, a dtype) as its text, or None; a path as
    text where ``path``: anything else refused naming the option, as no command line can carry it."""
    if value == "":       # the command line's rule (commands.runner): an empty name answered another question
        raise InputError(f"{option}='' is empty: give it a value or leave it out")
    if value is None or type(value) is str:
        return value
    if path and isinstance(value, os.PathLike):
        return os.fspath(value)
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
    raise InputError(f"{option} takes a name (text{' or a path' if path else ''}), not {type(value).__name__} {shown}")


#: keyword values that are never an array (a sweep is numpy arrays, subclasses included)
_PLAIN = frozenset((int, float, str))


def _swept(name: str, sweep: dict, given: dict) -> Result:
    """:func:`evaluate` at every point of the arrays in ``sweep`` (one shape), the answers stacked."""
    shapes = {key: value.shape for key, value in sweep.items()}
    if len(set(shapes.values())) > 1:
        raise InputError("arrays of different shapes (" + ", ".join(f"{k}: {v}" for k, v in shapes.items())
                         + "); give the swept values as arrays of one shape, the others as scalars")
    shape = next(iter(shapes.values()))
    if not all(value.size for value in sweep.values()):
        raise InputError(f"{', '.join(sweep)}: an empty array; give at least one value to sweep")
    answers = []
    for index in np.ndindex(shape):
        point = {**given, **{key: _scalar(value[index]) for key, value in sweep.items()}}
        try:
            answers.append(evaluate(name, **point))
        except InputError as err:
            at = ", ".join(f"{key}[{', '.join(map(str, index))}]={point[key]}" for key in sweep)
            raise InputError(f"{at}: {err}") from None
    notes_said = tuple(dict.fromkeys(text for answer in answers for text in answer.notes))
    return Result("evaluation", _stacked([a.data for a in answers], shape), notes_said)


def _scalar(value):
    # numpy's scalars as Python's (an object array already holds Python ints: 2**70 stays exact)
    return value.item() if isinstance(value, np.generic) else value


def _stacked(documents: list, shape: tuple):
    """One document from one per point: what is the same at every point stays as it is, numbers that vary
    become arrays of ``shape`` (int64 when whole and in range, Python ints when larger, else float64), and
    anything else that varies (text, a part present at some points only) an object array of the points'."""
    first = documents[0]
    if all(doc == first for doc in documents[1:]):
        return first
    if isinstance(first, dict) and all(isinstance(d, dict) and d.keys() == first.keys() for d in documents):
        return {key: _stacked([d[key] for d in documents], shape) for key in first}
    if isinstance(first, list) and all(isinstance(d, list) and len(d) == len(first) for d in documents):
        return [_stacked([d[i] for d in documents], shape) for i in range(len(first))]
    if all(isinstance(d, (int, float)) and not isinstance(d, bool) for d in documents):
        if all(isinstance(d, int) for d in documents):
            whole = np.empty(len(documents), dtype=object)
            whole[:] = documents
            if all(-2 ** 63 <= d < 2 ** 63 for d in documents):
                whole = whole.astype(np.int64)
            return whole.reshape(shape)
        return np.array([float(d) for d in documents], dtype=np.float64).reshape(shape)
    # text, or parts whose form varies (an axis present at some points only): one entry per point
    whole = np.empty(len(documents), dtype=object)
    whole[:] = documents
    return whole.reshape(shape)


def _json_default(value):
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON")


def compare(primitive: str, *, dtype: str | None = None, hardware: str | None = None, **values) -> Result:
    """``symcomm compare PRIMITIVE ...`` as a value: every algorithm's counts and time at N and M,
    the best, and the fastest algorithm by message size with the sizes where they cross.

    >>> import symcomm
    >>> r = symcomm.compare("all_reduce", N=16, M="1MiB", alpha=1e-5, bw="50GB/s", gamma=0, dtype="bf16")
    >>> [x["algorithm"] for x in r["fastest_by_message_size"]]
    ['recursive_doubling', 'rabenseifner']
    """
    args = SimpleNamespace(name=_word("primitive", primitive),
                           values=values, dtype=_word("dtype", str(dtype) if type(dtype) is int else dtype),
                           hardware=_word("hardware", hardware, path=True), json=True)
    with notes.collected() as said:
        data = compare_payload(args)
    return Result("comparison", data, tuple(n.text for n in said))


def plan(model: str, *, gpus: int, batch: int, seq: int, hardware: str, top: int = 10, **options) -> Result:
    """``symcomm plan`` as a value: the layouts ranked by the step-time model (``layouts``), with the
    request and the assumptions; ``options`` are the command's flags by name (tp=8, zero=1, no_memory_check=True)
    or eval's KEY=VALUE names (t=8, recompute="selective", eta=0.6: a typed constant in place of the hardware's),
    checked as the command checks them.

    >>> import symcomm
    >>> best = symcomm.plan("llama3-8b", gpus=16, batch=64, seq=4096, hardware="h100", top=1)["layouts"][0]
    >>> best["t"] * best["p"] * best["c"] * best["d"]
    16
    """
    from . import planner     # imported here: numpy's import is paid only by a plan

    # the command's own check of every value (symcomm.planner.request_from_args), no argv words, no argparse
    model, hardware = _word("model", model, path=True), _word("hardware", hardware, path=True)
    args = planner.namespace(model=model, gpus=gpus, batch=batch, seq=seq, hardware=hardware, top=top, **options)
    with notes.collected() as said:     # what `symcomm plan` prints beside its answer, as data
        request, top = planner.request_from_args(args), planner.top_from_args(args)
        data = planner.to_json(planner.plan(request, top), top)
    return Result("plan", data, tuple(n.text for n in said))


def formula(name: str, algorithm: str | None = None, **options):
    """The closed forms of a primitive's algorithm or a strategy (with its options), as a
    :class:`symcomm.training.subjects.Subject`-backed value that Jupyter renders in LaTeX.

    >>> import symcomm
    >>> symcomm.formula("all_reduce", "ring").send
    2*M*(N - 1)/N
    """
    from .core.symbols import SYMBOLS

    name, algorithm = _word("name", name), _word("algorithm", algorithm)
    values = [key for key in options if key in SYMBOLS]
    if values:
        key = values[0]
        raise InputError(f"formula() takes a subject's options, and {key} is a value: "
                         f"symcomm.evaluate({name!r}, {key}=...) gives its numbers, or substitute in a formula, "
                         f"symcomm.formula({name!r}).send.subs(symcomm.symbol({key!r}), ...)")
    return Formula(subject(name, algorithm, **{k: str(v) for k, v in options.items()}))


def _formula_of(name: str, algorithm: str | None, options: dict) -> "Formula":
    # formula(name, algorithm, **options) with the options as a mapping: pickle passes positional arguments only
    return formula(name, algorithm, **options)


@dataclass(frozen=True)
class Formula:
    """A subject's formulas: ``.send``, ``.recv``, ``.total``, ``.time`` (SymPy expressions), a LaTeX
    table in Jupyter (``_repr_latex_``), ``.to_dict()`` for JSON (text and LaTeX of each)."""

    subject: Subject

    def __getattr__(self, key):
        # a name Python asks of any object (copy's __reduce_ex__, __deepcopy__, __setstate__), or the field itself
        # before it is set (copy builds the instance without __init__): not a formula
        if key.startswith("__") or key == "subject":
            raise AttributeError(key)
        fields = self.subject.quantities()
        if key in fields:
            return fields[key]
        raise AttributeError(key)

    def __reduce__(self):
        # rebuilt by name: a subject holds functions made in place, which pickle cannot name
        subject_ = self.subject
        if subject_.kind == "primitive":
            return formula, (subject_.name, subject_.algorithm)
        options = dict(subject_.changed)
        return _formula_of, (subject_.name, options.pop("algorithm", None), options)

    def _fields(self) -> dict:
        return {key: expr for key, expr in self.subject.quantities().items() if key != "time" or expr != 0}

    def to_dict(self) -> dict:
        from .core.printing import render

        return {"label": self.subject.label, "convention": self.subject.convention, "source": self.subject.source,
                "formulas": {k: {"text": sp.sstr(v), "latex": render(v, "latex")} for k, v in self._fields().items()}}

    def _repr_latex_(self) -> str:
        from .core.printing import render

        rows = r" \\ ".join(rf"\text{{{k}}} &= {render(v, 'latex')}" for k, v in self._fields().items())
        return rf"$\begin{{aligned}}{rows}\end{{aligned}}$"

    def __repr__(self) -> str:
        return f"<symcomm formulas of {self.subject.label}: {', '.join(self._fields())}>"
