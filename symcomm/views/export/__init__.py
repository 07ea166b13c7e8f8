"""Export the closed-form formulas: LaTeX, Markdown, Python, C, JavaScript, JSON.

Exported formulas are usable without symcomm installed: the Python module imports only
the standard library (``math``, ``fractions``; ``numpy`` with ``numpy=True``), the C
header only ``<math.h>``, the JavaScript ES module nothing, and the JSON file is plain data with a JSON Schema
(``symcomm/schema/formulas.schema.json``) shipped with the package.

**What is exported.**  Every catalog algorithm (:data:`symcomm.collectives.algorithms.ALGORITHMS`)
and every strategy (:data:`symcomm.training.strategies.STRATEGIES`, aliases such as ``fsdp``
left out: it is the ``zero3`` object).  A strategy is exported at its default options,
then once per non-default value of each option, one option at a time (a *variant*).
For each subject the quantities are those of :meth:`symcomm.core.cost.Cost.fields` (``send``,
``recv``, ``total``, the coefficients ``alpha``, ``beta``, ``gamma`` and, for two-level
forms, ``alpha_inter``, ``beta_inter``), the time ``time`` = Σ coefficient · symbol, and
a strategy's extras (e.g. ``bubble_fraction``).

**Names** (valid Python and C identifiers, documented once here)::

    <primitive>__<algorithm>__<quantity>          all_reduce__ring__send
    <strategy>__<quantity>                        zero3__total          (default options)
    <strategy>__<option>_<value>__<quantity>      tp__recompute_full__send (one option changed)

The double underscore separates the parts; single underscores belong to the names.
``--only`` takes a formula name, a subject (``all_reduce__ring``, ``tp__recompute_full``),
or a primitive / strategy name (``all_reduce``, ``tp``: all its subjects).

**Arguments.**  Python functions take keyword-only arguments named by the symbols' CLI
names (``Phi``, ``N``, ``alpha``, ...).  C functions take ``double`` arguments named the
same, in the order of :data:`symcomm.core.symbols.SYMBOLS` (the docstring comment lists them).
JavaScript functions take one object of named values (``f({N: 8n, M: 1024n})``).
A subject that runs some collectives in a width of its own (Megatron's fp32 gradient reductions in a bf16 run,
ring-flash-attn's fp32 dK, dV) is exported counted in elements of the run's dtype and takes one more argument,
``B_e``, the bytes per element of that dtype (eval's ``--dtype``: 2 for bf16): a term in its own width counts its
bytes/B_e elements, so its send, β and time are eval's (:func:`quantities_of`).

**Formats.**  Each format is one module of this package, documented there:
:mod:`~symcomm.views.export.latex`, :mod:`~symcomm.views.export.markdown`,
:mod:`~symcomm.views.export.python` (exactness of the Python module, ``numpy=True``),
:mod:`~symcomm.views.export.c`, :mod:`~symcomm.views.export.javascript` (exact ``BigInt`` counts, float
times), :mod:`~symcomm.views.export.json` (``format_version``, the ``tree``
to load and the ``srepr`` never to eval from someone else's file).

**Importing.**  ``symcomm.views.export`` is this package; the function is
:func:`symcomm.views.export.export` (``from symcomm.views.export import export, formulas, select``).

**Adding a format** is one new module in this package that defines a render function
``(formulas: list[Formula], **options) -> str`` and declares it::

    FORMAT = Format(name="yaml", order=60, render=to_yaml, description="...")

:data:`REGISTRY` discovers it (every module of the package that defines ``FORMAT``),
``--format yaml`` and :func:`export` accept it, ordered by ``order`` in
:data:`FORMATS`.  A format-specific option (``numpy`` for python) is named in
``Format.options``; any other format refuses it.
"""

from __future__ import annotations

import importlib
import json as _json   # the submodule .json is bound as the package's attribute "json"
import os
import pkgutil
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Callable

import sympy as sp

from ...core import symbols as S
from ...base.files import check_output, write_file
from ...core.printing import render
from ...core.rewrite import free_symbols
from ...training.subjects import COLLECTIVE_TIME_CONVENTION
from ...templates import FOLDER as TEMPLATE_FOLDER

SCHEMA_PATH = Path(__file__).parents[2] / "schema" / "formulas.schema.json"
TEMPLATES = TEMPLATE_FOLDER / "export"

#: bytes per element of the run's dtype (eval's --dtype): the argument of every exported formula whose subject runs some
#: collectives in a width of its own (Megatron's fp32 gradient reductions in a bf16 run), counted in elements of
#: B_e bytes (:func:`quantities_of`); the page counts every subject in bytes of it (symcomm.views.site)
BYTES, BYTES_INFO = S.BYTES, S.BYTES_INFO
#: what the convention of a subject exported in elements of B_e bytes adds
IN_RUN_ELEMENTS = ("; exported in elements of the run's dtype, B_e bytes each (eval's --dtype): a term in a width of "
                   "its own counts its bytes/B_e elements, so send, recv, β, γ and the time are eval's at that dtype")

#: What each quantity means (the JSON carries it, the tables show it).
QUANTITIES = {
    "send": "largest number of elements any one rank sends",
    "recv": "largest number of elements any one rank receives",
    "total": "elements sent, summed over all ranks",
    "alpha": "coefficient of α: messages on the critical path",
    "beta": "coefficient of β: elements moved on the critical path",
    "gamma": "coefficient of γ: elements reduced on the critical path",
    "alpha_inter": "coefficient of α_inter: inter-node messages on the critical path",
    "beta_inter": "coefficient of β_inter: inter-node elements moved on the critical path",
    "time": "time T = Σ coefficient · (α, β, γ, α_inter, β_inter), in seconds",
    "bubble_fraction": "pipeline bubble time / ideal compute time",
    "micro_batches_in_flight": "micro-batches whose activations a stage holds at once",
    "gpus": "GPUs in the layout, t·c·d·p",
}

# -- the formulas ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Formula:
    """One exported closed form: a quantity of an algorithm or of a strategy variant."""

    name: str
    kind: str                       # "primitive" | "strategy"
    subject: str                    # all_reduce__ring, tp, tp__recompute_full
    owner: str                      # the primitive or strategy name
    quantity: str
    expr: sp.Expr
    title: str
    summary: str
    convention: str
    source: str
    algorithm: str | None = None
    options: tuple[tuple[str, str], ...] = ()
    requires: tuple[str, ...] = ()
    #: the requirements as data, for the exports that check them (python, javascript): (kind,
    #: message, x, y) per rule (:meth:`symcomm.core.rules.Rule.data`; y is None for a power of two)
    checks: tuple = ()
    #: the least value of a symbol where it is not the command line's default (1 for a whole
    #: number, 0 for a real): (CLI name, least) pairs, e.g. (("N", 2),) for a collective
    least: tuple[tuple[str, int], ...] = ()

    def least_of(self, info: S.SymbolInfo) -> int:
        """The least value ``symcomm eval`` accepts for the argument ``info`` of this formula."""
        if not info.symbol.is_integer:
            return 0
        # the subject's own (N ≥ 2 for a collective), else the symbol's: 0 for E_s, which the hybrid's MoE terms read
        return dict(self.least).get(info.cli_name, S.least_value(info.symbol))

    def checked_rules(self) -> list[tuple[str, str, list[sp.Expr]]]:
        """(kind, message, expressions) of every rule whose symbols are all arguments of this
        formula: the checks an exported function makes on its exact arguments (python, javascript)."""
        args = {info.symbol for info in self.parameters}
        out = []
        for kind, message, *exprs in self.checks:
            exprs = [sp.sympify(e, strict=True) for e in exprs if e is not None]     # expressions, never text
            if all(e.free_symbols <= args for e in exprs):
                out.append((kind, message, exprs))
        return out

    @property
    def parameters(self) -> tuple[S.SymbolInfo, ...]:
        """The symbols the formula uses, in the order of :data:`symcomm.core.symbols.SYMBOLS`."""
        free = free_symbols(self.expr)          # each shared subtree walked once, once per expression
        return (tuple(info for info in S.SYMBOLS.values() if info.symbol in free)
                + ((BYTES_INFO,) if BYTES in free else ()))

    @cached_property
    def latex(self) -> str:
        """The formula in LaTeX, through :func:`symcomm.core.printing.render` like every other view."""
        return render(self.expr, "latex")

    @property
    def argnames(self) -> tuple[str, ...]:
        return tuple(info.cli_name for info in self.parameters)


@lru_cache(maxsize=1)
def formulas() -> tuple[Formula, ...]:
    """Every exportable formula: each subject of :func:`symcomm.training.subjects.every` (algorithms in
    catalog order, then each strategy at its defaults and once per other option value),
    quantity by quantity."""
    from ...training.subjects import every

    out: list[Formula] = []
    for sub in every(with_variants=True):
        if sub.kind == "primitive":
            convention = COLLECTIVE_TIME_CONVENTION + ("; log₂N needs N a power of two" if sub.power_of_two else "")
            algorithm, options = sub.algorithm, ()
        else:
            convention, algorithm, options = sub.convention, sub.algorithm or None, tuple(sub.options.items())
        checks = requirement_checks(sub)
        least = tuple((S.BY_SYMBOL[sym].cli_name, int(value)) for sym, value in sub.least.items()
                      if sym in S.BY_SYMBOL)
        quantities = quantities_of(sub)
        if BYTES in frozenset().union(*(free_symbols(expr) for expr in quantities.values())):
            convention += IN_RUN_ELEMENTS
        for quantity, expr in quantities.items():
            # a strategy's rules, worded, where the function takes every symbol a rule reads (those it checks:
            # Formula.checked_rules); an algorithm's are its own requires
            requires = sub.requires or tuple(rule.text for rule in sub.rules
                                             if set(rule.symbols) <= free_symbols(expr))
            out.append(Formula(f"{sub.ident}__{quantity}", sub.kind, sub.ident, sub.name, quantity, expr,
                               sub.title, sub.summary, convention, sub.source, algorithm, options, requires,
                               checks, least))
    return tuple(out)


def quantities_of(sub) -> dict[str, sp.Expr]:
    """The subject's exported quantities: :meth:`~symcomm.training.subjects.Subject.quantities`, or, where some of
    its terms run in a width of their own (``Term.dtype``), the same counted in elements of the run's dtype of
    :data:`BYTES` bytes (:meth:`~symcomm.training.subjects.Subject.cost_in`): one β per element then prices every
    term's own bytes, as eval does, where the raw count would price an fp32 element as a bf16 one."""
    return sub.quantities(BYTES)        # cost_in leaves a subject without such terms as it is: no B_e there


def requirement_checks(sub) -> tuple:
    """The subject's rules (:attr:`symcomm.training.subjects.Subject.rules`, options resolved) as data:
    ``(kind, message, x, y)`` each (:meth:`symcomm.core.rules.Rule.data`); the exports write the
    kind's test from :data:`symcomm.core.rules.KINDS` and fill the message with the values."""
    return tuple(rule.data() for rule in sub.rules)


def select(only=None) -> list[Formula]:
    """The formulas ``only`` names (all when empty); ValueError naming an unknown one."""
    every = formulas()
    if not only:
        return list(every)
    chosen: list[Formula] = []
    for word in only:
        hits = [f for f in every if word in (f.name, f.subject, f.owner)]
        if not hits:
            owners = ", ".join(dict.fromkeys(f.owner for f in every))
            raise ValueError(f"--only {word!r} is not a formula, subject, primitive or strategy; choose one of "
                             f"{owners}, a subject like all_reduce__ring or a formula like all_reduce__ring__send "
                             "(symcomm export --list shows them all)")
        chosen.extend(f for f in hits if f not in chosen)
    return chosen


# -- shared by the table formats (latex, markdown) ------------------------------------------------

def grouped(chosen: list[Formula]) -> list[dict]:
    """Subjects in order, each with its rows: the context the table templates receive."""
    groups: dict[str, dict] = {}
    for f in chosen:
        group = groups.setdefault(f.subject, {
            "subject": f.subject, "kind": f.kind, "title": f.title, "summary": f.summary,
            "source": f.source, "convention": f.convention, "requires": list(f.requires),
            "options": [f"{k}={v}" for k, v in f.options], "rows": []})
        group["rows"].append({"name": f.name, "quantity": f.quantity, "meaning": QUANTITIES.get(f.quantity, ""),
                              "latex": f.latex})
    return list(groups.values())


def template(name: str):
    """The Jinja template ``name`` of :data:`TEMPLATES`."""
    import jinja2

    if not TEMPLATES.is_dir():
        raise ValueError(f"the export templates are missing: {TEMPLATES} does not exist")
    environment = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=False,
                                     trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
                                     undefined=jinja2.StrictUndefined)
    return environment.get_template(name)


# -- the formats -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Format:
    """An export format, declared by its module as ``FORMAT``.

    ``render(formulas, **options)`` gives the text; ``options`` names the keyword options
    it takes (``numpy`` for python); ``order`` places it in :data:`FORMATS`."""

    name: str
    order: int
    render: Callable[..., str]
    description: str
    options: tuple[str, ...] = ()


def _discover() -> dict[str, Format]:
    """name → Format for every module of this package that defines ``FORMAT``, by ``order``."""
    found: list[Format] = []
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        declared = getattr(importlib.import_module(f"{__name__}.{info.name}"), "FORMAT", None)
        if isinstance(declared, Format):
            found.append(declared)
    found.sort(key=lambda fmt: (fmt.order, fmt.name))
    registry: dict[str, Format] = {}
    for fmt in found:
        if fmt.name in registry:
            raise RuntimeError(f"two export formats are named {fmt.name!r}")
        registry[fmt.name] = fmt
    return registry


def schema() -> dict:
    """The JSON Schema the ``json`` export validates against."""
    return _json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


# -- public entry point ------------------------------------------------------------------------------

def export(fmt: str, only=None, *, numpy: bool = False, path: str | os.PathLike | None = None) -> str:
    """The formulas in ``fmt`` (latex, markdown, python, c, javascript, json) as text.

    ``only`` selects formulas by name, subject or primitive/strategy name (all when
    empty); ``numpy=True`` makes the Python module vectorised over numpy arrays; ``path``
    also writes the text there, atomically (a temporary file in the same directory, then
    ``os.replace``); a missing directory is a ValueError and nothing is written.
    """
    chosen_format = REGISTRY.get(fmt) if isinstance(fmt, str) else None
    if chosen_format is None:
        raise ValueError(f"--format {fmt!r} is not allowed; choose one of {', '.join(FORMATS)}")
    if isinstance(only, str):
        only = [only]
    options = {"numpy": numpy} if numpy else {}
    for option in options:
        if option not in chosen_format.options:
            raise ValueError(f"--{option} applies to --format "
                             f"{' or '.join(f.name for f in REGISTRY.values() if option in f.options)} only, "
                             f"not {fmt}")
    if path is not None:
        check_output(path, "-o")
    text = chosen_format.render(select(only), **options)
    if path is not None:
        write_file(path, text, "-o")
    return text


#: name → :class:`Format`, discovered from the modules of this package, in ``order``.
REGISTRY: dict[str, Format] = _discover()
#: The format names, in ``order``: ("latex", "markdown", "python", "c", "javascript", "json").
FORMATS: tuple[str, ...] = tuple(REGISTRY)
