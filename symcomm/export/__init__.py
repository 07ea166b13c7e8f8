"""Export the closed-form formulas: LaTeX, Markdown, Python, C, JSON.

Exported formulas are usable without symcomm installed: the Python module imports only
the standard library (``math``, ``fractions``; ``numpy`` with ``numpy=True``), the C
header only ``<math.h>``, and the JSON file is plain data with a JSON Schema
(``symcomm/schema/formulas.schema.json``) shipped with the package.

**What is exported.**  Every catalog algorithm (:data:`symcomm.algorithms.ALGORITHMS`)
and every strategy (:data:`symcomm.strategies.STRATEGIES`, aliases such as ``fsdp``
left out: it is the ``zero3`` object).  A strategy is exported at its default options,
then once per non-default value of each option, one option at a time (a *variant*).
For each subject the quantities are those of :meth:`symcomm.cost.Cost.fields` (``send``,
``recv``, ``total``, the coefficients ``alpha``, ``beta``, ``gamma`` and, for two-level
forms, ``alpha_inter``, ``beta_inter``), the time ``time`` = Σ coefficient · symbol, and
a strategy's extras (e.g. ``bubble_fraction``).

**Names** (valid Python and C identifiers, documented once here)::

    <primitive>__<algorithm>__<quantity>          all_reduce__ring__send
    <strategy>__<quantity>                        zero3__total          (default options)
    <strategy>__<option>_<value>__<quantity>      tp__recompute_1__send (one option changed)

The double underscore separates the parts; single underscores belong to the names.
``--only`` takes a formula name, a subject (``all_reduce__ring``, ``tp__recompute_1``),
or a primitive / strategy name (``all_reduce``, ``tp``: all its subjects).

**Arguments.**  Python functions take keyword-only arguments named by the symbols' CLI
names (``Phi``, ``N``, ``alpha``, ...).  C functions take ``double`` arguments named the
same, in the order of :data:`symcomm.symbols.SYMBOLS` (the docstring comment lists them).

**Exactness of the Python module.**  With ``int`` (or ``fractions.Fraction``) arguments
every function returns exactly what :func:`symcomm.evaluate.exact` returns: an ``int``
when the value is whole, a ``Fraction`` otherwise.  Division goes through ``_q(a, b)``,
which is ``Fraction(a, b)`` for exact operands (``a / b`` for floats); ⌈log₂n⌉ is
``(n - 1).bit_length()`` for an integer n ≥ 1; log₂ of a power of two (the power-of-two
algorithms) is ``n.bit_length() - 1``; any other log₂ falls back to ``math.log2`` (a
float), as does everything once a float argument is passed.  The numpy module
(``numpy=True``) is float arithmetic, vectorised over arrays.

**Importing.**  ``symcomm.export`` is the function :func:`export` (re-exported by the
package); reach this module with ``from symcomm.export import formulas, select, ...`` or
``importlib.import_module("symcomm.export")`` (``import symcomm.export as m`` gives the function).

**C.**  ``static inline double`` functions, C99; ⌈log₂x⌉ and log₂ of a power of two are
computed exactly by two helpers (``symcomm_ceil_log2``, ``symcomm_log2``); link with
``-lm``.  Doubles are exact for integers below 2⁵³.

**JSON** (``format_version`` 2).  Each formula carries its expression as ``tree``: plain
JSON data (operator nodes ``{"op": "Add", "args": [...]}``, leaves ``{"symbol": "N"}``,
``{"integer": "-1"}``, ``{"rational": "1/2"}``; the format is documented in
:mod:`symcomm.exprtree`).  Load it with :func:`symcomm.exprtree.from_tree`, which rebuilds
the SymPy expression from a whitelist of node types and symbols without evaluating any
text, or walk it with any JSON parser.  ``srepr`` (SymPy source text, with the names
``srepr_namespace`` lists), ``text`` and ``latex`` are for display and for *trusted input
only*: ``eval()`` or ``sympify()`` of text runs arbitrary code, so never eval() text from
a file you did not produce yourself; load ``tree`` instead.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path

import sympy as sp
from sympy.codegen.cfunctions import log2
from sympy.printing.c import C99CodePrinter
from sympy.printing.numpy import NumPyPrinter
from sympy.printing.precedence import PRECEDENCE
from sympy.printing.pycode import PythonCodePrinter

from . import symbols as S
from .errors import InputError
from .files import check_output, write_file
from .templates import FOLDER as TEMPLATE_FOLDER
from .exprtree import to_tree
from .printing import render, tex_text

FORMATS = ("latex", "markdown", "python", "c", "json")

SCHEMA_PATH = Path(__file__).with_name("schema") / "formulas.schema.json"
TEMPLATES = TEMPLATE_FOLDER / "export"

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

PRIMITIVE_CONVENTION = ("elements; M = the full unsharded buffer (nccl-tests); exact (N−1)/N form; "
                        "send/recv = busiest rank, total = all ranks; T = α·messages + β·elements moved "
                        "+ γ·elements reduced on the critical path")

def srepr_namespace(exprs) -> dict[str, str]:
    """Names the ``srepr`` of ``exprs`` uses that ``from sympy import *`` does not provide
    (``log2``, ``ExprCondPair``...), mapped to their import paths.

    For reading back a file you produced yourself (trusted input only); a formula from any
    other file is loaded from its ``tree`` with :func:`symcomm.exprtree.from_tree`."""
    out = {}
    for expr in exprs:
        for node in sp.preorder_traversal(expr):
            cls = type(node)
            name = cls.__name__
            if name not in out and getattr(sp, name, None) is not cls and not node.is_Atom:
                out[name] = f"{cls.__module__}.{cls.__qualname__}"
    return dict(sorted(out.items()))


# -- the formulas ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Formula:
    """One exported closed form: a quantity of an algorithm or of a strategy variant."""

    name: str
    kind: str                       # "primitive" | "strategy"
    subject: str                    # all_reduce__ring, tp, tp__recompute_1
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

    @property
    def parameters(self) -> tuple[S.SymbolInfo, ...]:
        """The symbols the formula uses, in the order of :data:`symcomm.symbols.SYMBOLS`."""
        free = self.expr.free_symbols
        return tuple(info for info in S.SYMBOLS.values() if info.symbol in free)

    @cached_property
    def latex(self) -> str:
        """The formula in LaTeX, through :func:`symcomm.printing.render` like every other view."""
        return render(self.expr, "latex")

    @property
    def argnames(self) -> tuple[str, ...]:
        return tuple(info.cli_name for info in self.parameters)


def _quantities(cost, extras: dict) -> dict[str, sp.Expr]:
    out = {key: sp.sympify(expr) for key, expr in cost.fields().items()}
    out["time"] = sp.sympify(cost.time)
    for key, expr in extras.items():
        out[key] = sp.sympify(expr)
    return out


def _strategies() -> dict:
    try:
        from .strategies import STRATEGIES
    except ImportError:  # the collectives export without the strategies module
        return {}
    return STRATEGIES


def _variants(strategy) -> list[tuple[str, dict[str, str]]]:
    """(subject suffix, options): defaults, then each option's other values one at a time."""
    out = [("", {})]
    for name, option in strategy.options.items():
        for value in option.allowed or ():
            if value != option.default:
                out.append((f"__{name}_{option.text(value)}", {name: value}))
    return out


@lru_cache(maxsize=1)
def formulas() -> tuple[Formula, ...]:
    """Every exportable formula, algorithms first (catalog order), then strategies."""
    from .algorithms import ALGORITHMS
    from .primitives import PRIMITIVES

    out: list[Formula] = []
    for (prim, alg_name), alg in ALGORITHMS.items():
        subject = f"{prim}__{alg_name}"
        title = f"{PRIMITIVES[prim].title if prim in PRIMITIVES else prim}, {alg_name.replace('_', ' ')}"
        requires = tuple(r.describe() for r in alg.requires)
        convention = PRIMITIVE_CONVENTION + ("; log₂N needs N a power of two" if alg.power_of_two else "")
        for quantity, expr in _quantities(alg.cost, {}).items():
            out.append(Formula(f"{subject}__{quantity}", "primitive", subject, prim, quantity, expr,
                               title, alg.summary, convention, alg.source, alg_name, (), requires))
    seen = set()
    for key, strategy in _strategies().items():
        if id(strategy) in seen or key != strategy.name:
            continue  # aliases (fsdp = zero3) are the same formulas
        seen.add(id(strategy))
        for suffix, changed in _variants(strategy):
            options = strategy.resolve(**changed)
            subject = strategy.name + suffix
            title = strategy.title + "".join(f" ({k}={v})" for k, v in changed.items())
            quantities = _quantities(strategy.cost(**options), strategy.extras(**options))
            for quantity, expr in quantities.items():
                out.append(Formula(f"{subject}__{quantity}", "strategy", subject, strategy.name, quantity,
                                   expr, title, strategy.summary, strategy.convention, strategy.source,
                                   options.get("algorithm"), tuple(options.items())))
    return tuple(out)


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


# -- printers -------------------------------------------------------------------------------------

def _is_ceil_log2(expr) -> bool:
    return isinstance(expr, sp.ceiling) and isinstance(expr.args[0], log2)


def _split_mul(expr: sp.Mul):
    """(numerator factors, denominator factors) of a product; a rational coefficient splits."""
    num, den = [], []
    for factor in expr.args:
        if factor.is_Rational:
            if factor.p != 1:
                num.append(sp.Integer(factor.p))
            if factor.q != 1:
                den.append(sp.Integer(factor.q))
        elif factor.is_Pow and factor.exp.is_Integer and factor.exp < 0:
            den.append(factor.base ** -factor.exp)
        else:
            num.append(factor)
    return num, den


class ExactPythonPrinter(PythonCodePrinter):
    """Python that stays exact on int / Fraction arguments (see the module docstring)."""

    def _product(self, factors) -> str:
        if not factors:
            return "1"
        return "*".join(self.parenthesize(x, PRECEDENCE["Mul"]) for x in factors)

    def _print_Integer(self, expr):
        return str(expr.p)

    def _print_Rational(self, expr):
        return f"_q({expr.p}, {expr.q})"

    def _print_Mul(self, expr):
        coeff, _ = expr.as_coeff_Mul()
        if coeff.is_negative:
            return "-" + self.parenthesize(-expr, PRECEDENCE["Mul"])
        num, den = _split_mul(expr)
        if not den:
            return self._product(num)
        return f"_q({self._product(num)}, {self._product(den)})"

    def _print_Pow(self, expr, rational=False):
        if expr.exp.is_Integer and expr.exp < 0:
            return f"_q(1, {self._print(expr.base ** -expr.exp)})"
        if expr.exp.is_Integer:
            return f"{self.parenthesize(expr.base, PRECEDENCE['Pow'])}**{expr.exp.p}"
        return super()._print_Pow(expr, rational)

    def _print_log2(self, expr):
        return f"_log2({self._print(expr.args[0])})"

    def _print_ceiling(self, expr):
        if _is_ceil_log2(expr):
            return f"_ceil_log2({self._print(expr.args[0].args[0])})"
        return f"math.ceil({self._print(expr.args[0])})"

    def _print_floor(self, expr):
        return f"math.floor({self._print(expr.args[0])})"


class _NumpyPrinter(NumPyPrinter):
    def _print_log2(self, expr):
        return f"numpy.log2({self._print(expr.args[0])})"


class HeaderPrinter(C99CodePrinter):
    """C99 over doubles, with the two exact log₂ helpers of the header."""

    def _print_log2(self, expr):
        return f"symcomm_log2({self._print(expr.args[0])})"

    def _print_ceiling(self, expr):
        if _is_ceil_log2(expr):
            return f"symcomm_ceil_log2({self._print(expr.args[0].args[0])})"
        return f"ceil({self._print(expr.args[0])})"

    def _print_Integer(self, expr):
        return f"{expr.p}.0"  # double constants: no int/int division anywhere

    def _print_Piecewise(self, expr):
        # one line: (c1 ? e1 : (c2 ? e2 : e3))
        *pairs, (last, cond) = expr.args
        if cond != sp.true:
            raise ValueError("a Piecewise without a default branch cannot be exported to C")
        text = self._print(last)
        for e, c in reversed(pairs):
            text = f"(({self._print(c)}) ? ({self._print(e)}) : ({text}))"
        return text


# -- text helpers --------------------------------------------------------------------------------

def _markdown_cell(text: str) -> str:
    return str(text).replace("|", r"\|").replace("\n", " ")


def _c_comment(text: str) -> str:
    """Text that cannot end or nest a C comment (-Wcomment is part of -Wall)."""
    return str(text).replace("*/", "* /").replace("/*", "/ *")


def _docstring(text: str) -> str:
    return str(text).replace('"""', '\\"\\"\\"')


def _assumptions(sym: sp.Symbol) -> dict[str, bool]:
    keys = ("integer", "real", "positive", "nonnegative")
    return {key: bool(getattr(sym, f"is_{key}")) for key in keys}


# -- renderers -----------------------------------------------------------------------------------

def _grouped(chosen: list[Formula]) -> list[dict]:
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


def _environment():
    import jinja2

    if not TEMPLATES.is_dir():
        raise ValueError(f"the export templates are missing: {TEMPLATES} does not exist")
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=False,
                              trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
                              undefined=jinja2.StrictUndefined)


def to_markdown(chosen: list[Formula]) -> str:
    groups = _grouped(chosen)
    for g in groups:
        for key in ("title", "summary", "source", "convention"):
            g[key] = _markdown_cell(g[key])
        for row in g["rows"]:
            row["latex"] = _markdown_cell(row["latex"])
            row["meaning"] = _markdown_cell(row["meaning"])
    return _environment().get_template("formulas.md.j2").render(groups=groups)


def to_latex(chosen: list[Formula]) -> str:
    groups = _grouped(chosen)
    for g in groups:
        for key in ("title", "summary", "source", "convention"):
            g[key] = tex_text(g[key])
        g["requires"] = [tex_text(r) for r in g["requires"]]
        g["options"] = [tex_text(o) for o in g["options"]]
        g["subject"] = tex_text(g["subject"])
        for row in g["rows"]:
            row["name"] = tex_text(row["name"])
            row["quantity"] = tex_text(row["quantity"])
            row["meaning"] = tex_text(row["meaning"])
    return _environment().get_template("formulas.tex.j2").render(groups=groups)


_PY_HELPERS = '''
def _q(a, b):
    """a / b: an exact Fraction (an int when whole) for int/Fraction operands, else a / b."""
    if isinstance(a, (int, Fraction)) and isinstance(b, (int, Fraction)):
        return _exact(Fraction(a) / Fraction(b))
    return a / b


def _exact(x):
    """A whole Fraction becomes an int; anything else is returned as it is."""
    if isinstance(x, Fraction) and x.denominator == 1:
        return x.numerator
    return x


def _log2(x):
    """log2(x): exact (an int) when x is an exact power of two (2**k or 1/2**k), else math.log2."""
    if isinstance(x, (int, Fraction)) and x > 0:
        x = Fraction(x)
        n, d = x.numerator, x.denominator
        if n & (n - 1) == 0 and d & (d - 1) == 0:
            return (n.bit_length() - 1) - (d.bit_length() - 1)
    return math.log2(x)


def _ceil_log2(x):
    """ceil(log2(x)): exact for int/Fraction x > 0 ((n - 1).bit_length() for an integer n >= 1)."""
    if isinstance(x, (int, Fraction)) and x > 0:
        if x >= 1:
            return (math.ceil(x) - 1).bit_length()
        return -(math.floor(Fraction(1) / Fraction(x)).bit_length() - 1)
    return math.ceil(math.log2(x))
'''


def _py_function(f: Formula, body: str, numpy: bool) -> str:
    args = ", ".join(f.argnames)
    signature = f"def {f.name}(*, {args}):" if args else f"def {f.name}():"
    params = "\n".join(f"        {info.cli_name}: {info.meaning} [{info.unit}]"
                       + (" (integer)" if info.symbol.is_integer else "") for info in f.parameters)
    requires = f"\n    Requires: {'; '.join(f.requires)}." if f.requires else ""
    options = f"\n    Options: {', '.join(f'{k}={v}' for k, v in f.options)}." if f.options else ""
    doc = (f'{f.title}: {f.quantity} ({QUANTITIES.get(f.quantity, "see the source")}).\n\n'
           f"    .. math:: {f.latex}\n\n"
           f"    Convention: {f.convention}.{requires}{options}\n"
           f"    Source: {f.source}.\n" + (f"\n    Arguments:\n{params}\n" if params else ""))
    result = body if numpy else f"_exact({body})"
    return f'{signature}\n    r"""{_docstring(doc)}    """\n    return {result}\n'


def to_python(chosen: list[Formula], numpy: bool = False) -> str:
    printer = _NumpyPrinter() if numpy else ExactPythonPrinter()
    functions = []
    for f in chosen:
        body = printer.doprint(f.expr)
        functions.append(_py_function(f, body, numpy))
    imports = printer.module_imports if numpy else {}
    header = ['"""Closed-form communication costs exported by symcomm (standalone; needs no symcomm).',
              "",
              "One function per formula, keyword arguments named by symcomm's symbol names.",
              PRIMITIVE_CONVENTION[0].upper() + PRIMITIVE_CONVENTION[1:] + ".",
              ("Float arithmetic over numpy arrays." if numpy else
               "Exact on int / fractions.Fraction arguments: an int when the value is whole, a Fraction "
               "otherwise;\nceil(log2 n) = (n - 1).bit_length(), log2 of a power of two = n.bit_length() - 1; "
               "float arguments give floats."),
              '"""', ""]
    lines = header
    if numpy:
        lines += ["import functools", "import numpy"] if any("functools" in m for m in imports) else ["import numpy"]
        lines.append("")
    else:
        lines += ["import math", "from fractions import Fraction", "", _PY_HELPERS.strip("\n"), ""]
    lines.append(f"__all__ = {[f.name for f in chosen]!r}\n")
    return "\n".join(lines) + "\n\n" + "\n\n".join(functions)


_C_HELPERS = """\
/* log2(x), exact for a power of two (frexp gives 0.5 * 2^e), else the C library's log2. */
static inline double symcomm_log2(double x)
{
    int e;
    double mantissa = frexp(x, &e);
    return mantissa == 0.5 ? (double)(e - 1) : log2(x);
}

/* ceil(log2(x)) for x > 0, exact: the smallest k with 2^k >= x. */
static inline double symcomm_ceil_log2(double x)
{
    int e;
    double mantissa = frexp(x, &e);
    return mantissa == 0.5 ? (double)(e - 1) : (double)e;
}
"""


def to_c(chosen: list[Formula]) -> str:
    printer = HeaderPrinter()
    parts = ["/* Closed-form communication costs exported by symcomm (standalone C99 header; link with -lm).",
             " * One static inline double function per formula; arguments are doubles named by symcomm's",
             " * symbol names, in symcomm's symbol order (listed in each comment).",
             f" * Convention: {_c_comment(PRIMITIVE_CONVENTION)}.",
             " */",
             "#ifndef SYMCOMM_FORMULAS_H", "#define SYMCOMM_FORMULAS_H", "", "#include <math.h>", "",
             _C_HELPERS]
    for f in chosen:
        args = ", ".join(f"double {name}" for name in f.argnames) or "void"
        comment = [f"{f.title}: {f.quantity} ({QUANTITIES.get(f.quantity, 'see the source')}).",
                   f"  {f.latex}",
                   f"Convention: {f.convention}."]
        if f.requires:
            comment.append(f"Requires: {'; '.join(f.requires)}.")
        if f.options:
            comment.append(f"Options: {', '.join(f'{k}={v}' for k, v in f.options)}.")
        comment.append(f"Source: {f.source}.")
        comment.append(f"Arguments: {', '.join(f.argnames) or 'none'}.")
        parts.append("/* " + "\n * ".join(_c_comment(line) for line in comment) + " */")
        parts.append(f"static inline double {f.name}({args})\n{{\n    return {printer.doprint(f.expr)};\n}}\n")
    parts.append("#endif /* SYMCOMM_FORMULAS_H */\n")
    return "\n".join(parts)


def to_data(chosen: list[Formula]) -> dict:
    """The JSON document as Python data (what ``--format json`` prints).

    ``tree`` is the expression to load (:func:`symcomm.exprtree.from_tree`, no code is
    evaluated); ``srepr`` is SymPy source text for trusted input only (see the module
    docstring)."""
    from . import __name__ as package

    records = []
    for f in chosen:
        records.append({
            "name": f.name,
            "kind": f.kind,
            "subject": f.subject,
            "primitive": f.owner if f.kind == "primitive" else None,
            "strategy": f.owner if f.kind == "strategy" else None,
            "algorithm": f.algorithm,
            "options": dict(f.options),
            "quantity": f.quantity,
            "meaning": QUANTITIES.get(f.quantity, ""),
            "title": f.title,
            "parameters": [{"name": info.cli_name, "symbol": info.symbol.name, "meaning": info.meaning,
                            "unit": info.unit, "assumptions": _assumptions(info.symbol)}
                           for info in f.parameters],
            "requires": list(f.requires),
            "tree": to_tree(f.expr),
            "srepr": sp.srepr(f.expr),
            "latex": f.latex,
            "text": sp.sstr(f.expr),
            "convention": f.convention,
            "source": f.source,
        })
    return {
        "generator": package,
        "format_version": 2,
        "srepr_namespace": srepr_namespace(f.expr for f in chosen),
        "formulas": records,
    }


def to_json(chosen: list[Formula]) -> str:
    return json.dumps(to_data(chosen), indent=2, ensure_ascii=False) + "\n"


def schema() -> dict:
    """The JSON Schema the ``json`` export validates against."""
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


# -- public entry point ------------------------------------------------------------------------------

def export(fmt: str, only=None, *, numpy: bool = False, path: str | os.PathLike | None = None) -> str:
    """The formulas in ``fmt`` (latex, markdown, python, c, json) as text.

    ``only`` selects formulas by name, subject or primitive/strategy name (all when
    empty); ``numpy=True`` makes the Python module vectorised over numpy arrays; ``path``
    also writes the text there, atomically (a temporary file in the same directory, then
    ``os.replace``); a missing directory is a ValueError and nothing is written.
    """
    if fmt not in FORMATS:
        raise ValueError(f"--format {fmt!r} is not allowed; choose one of {', '.join(FORMATS)}")
    if isinstance(only, str):
        only = [only]
    if numpy and fmt != "python":
        raise ValueError(f"--numpy applies to --format python only, not {fmt}")
    if path is not None:
        _check_target(Path(path))
    chosen = select(only)
    if fmt == "python":
        text = to_python(chosen, numpy=numpy)
    elif fmt == "c":
        text = to_c(chosen)
    elif fmt == "json":
        text = to_json(chosen)
    elif fmt == "markdown":
        text = to_markdown(chosen)
    else:
        text = to_latex(chosen)
    if path is not None:
        write_atomic(Path(path), text)
    return text


def _check_target(path: Path) -> None:
    check_output(path, "-o")


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path``: a regular file, replaced atomically, under the user's umask
    (:func:`symcomm.files.write_file`)."""
    write_file(path, text, "-o")


# -- CLI -------------------------------------------------------------------------------------------

def register_cli(subparsers) -> None:
    """``symcomm export --format F [--only NAME...] [--numpy] [-o PATH] [--list]``."""
    p = subparsers.add_parser("export", help="closed-form formulas as LaTeX, Markdown, Python, C or JSON")
    p.add_argument("--format", default=None, help=", ".join(FORMATS))
    p.add_argument("--only", nargs="+", metavar="NAME",
                   help="formula, subject (all_reduce__ring), primitive or strategy names")
    p.add_argument("--numpy", action="store_true", help="python: vectorised numpy functions (floats)")
    p.add_argument("-o", "--output", metavar="PATH", help="write to PATH atomically (default: stdout)")
    p.add_argument("--list", action="store_true", help="print the formula names and exit")
    p.set_defaults(run=_run)


def _run(args) -> int:
    import sys

    try:
        if args.list:
            for f in select(args.only):
                print(f.name)
            return 0
        if args.format is None:
            raise ValueError(f"--format is required; choose one of {', '.join(FORMATS)}")
        text = export(args.format, args.only, numpy=args.numpy, path=args.output)
    except ValueError as err:
        raise InputError(str(err)) from None
    if args.output is None:
        sys.stdout.write(text)
    return 0
