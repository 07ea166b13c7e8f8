"""``--format python``: a standalone Python module, one function per formula.

**Exactness.**  The module imports only the standard library (``math``, ``fractions``).
With ``int`` (or ``fractions.Fraction``) arguments every function returns exactly what
:func:`symcomm.evaluate.exact` returns: an ``int`` when the value is whole, a ``Fraction``
otherwise.  Division goes through ``_q(a, b)``, which is ``Fraction(a, b)`` for exact
operands (``a / b`` for floats); ⌈log₂n⌉ is ``(n - 1).bit_length()`` for an integer
n ≥ 1; log₂ of a power of two (the power-of-two algorithms) is ``n.bit_length() - 1``;
any other log₂ falls back to ``math.log2`` (a float), as does everything once a float
argument is passed.

**numpy** (``numpy=True``, this format's one option).  Float arithmetic, vectorised over
arrays; the module imports ``numpy`` only.
"""

from __future__ import annotations

import sympy as sp
from sympy.printing.numpy import NumPyPrinter
from sympy.printing.precedence import PRECEDENCE
from sympy.printing.pycode import PythonCodePrinter

from ..subjects import COLLECTIVE_TIME_CONVENTION
from . import QUANTITIES, Format, Formula


def _split_mul(expr: sp.Mul):
    """(numerator factors, denominator factors) of a product; a rational coefficient splits."""
    num, den = [], []
    for factor in expr.args:
        if factor.is_Rational:
            if factor.p != 1:
                num.append(sp.Integer(factor.p))
            if factor.q != 1:
                den.append(sp.Integer(factor.q))
        elif factor.is_Pow and _negative_exponent(factor.exp):
            den.append(factor.base ** -factor.exp)
        else:
            num.append(factor)
    return num, den


def _negative_exponent(exp) -> bool:
    """A negative integer, or a symbolic exponent written with a minus sign (2**(1 − ⌈log₂(N+1)⌉)):
    printed as 1 / base**(−exp), so that an int base and exponent stay exact."""
    return (exp.is_Integer and exp < 0) or (not exp.is_number and exp.could_extract_minus_sign())


class ExactPythonPrinter(PythonCodePrinter):
    """Python that stays exact on int / Fraction arguments (see the module docstring)."""

    #: ⌈log₂⌉ (:class:`symcomm.symbols.CeilLog2`) prints as a call of the module's exact helper
    ceil_log2_function = "_ceil_log2"
    #: Σ popcount below n (:class:`symcomm.symbols.OnesBelow`) likewise
    ones_below_function = "_ones_below"

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
        if _negative_exponent(expr.exp):
            return f"_q(1, {self._print(expr.base ** -expr.exp)})"
        if expr.exp.is_Integer:
            return f"{self.parenthesize(expr.base, PRECEDENCE['Pow'])}**{expr.exp.p}"
        return super()._print_Pow(expr, rational)

    def _print_log2(self, expr):
        return f"_log2({self._print(expr.args[0])})"


_HELPERS = '''
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


def _ones_below(x):
    """The set bits of 0, 1, ..., x - 1 summed (x a whole number >= 0): exact, an int."""
    n, total, j = int(x), 0, 0
    while (1 << j) < n:
        period = 1 << (j + 1)
        total += (n // period) * (1 << j) + max(0, n % period - (1 << j))
        j += 1
    return total


def _ceil_log2(x):
    """ceil(log2(x)): exact for int/Fraction x > 0 ((n - 1).bit_length() for an integer n >= 1)."""
    if isinstance(x, (int, Fraction)) and x > 0:
        if x >= 1:
            return (math.ceil(x) - 1).bit_length()
        return -(math.floor(Fraction(1) / Fraction(x)).bit_length() - 1)
    return math.ceil(math.log2(x))
'''


def _docstring(text: str) -> str:
    return str(text).replace('"""', '\\"\\"\\"')


#: the checks of the requirements, raising ValueError with the command line's words
_CHECK_HELPERS = '''

def _whole(*values):
    """True when every value is exact (int or Fraction): the requirements are checked on exact input."""
    return all(isinstance(v, (int, Fraction)) and not isinstance(v, bool) for v in values)


def _need(kind, name, x, other_name=None, y=None):
    """ValueError with the message `symcomm eval` prints, when (x, y) breaks a requirement."""
    if kind == "power_of_two" and not (x >= 1 and x == int(x) and int(x) & (int(x) - 1) == 0):
        raise ValueError(f"{name}={x} is not allowed: this algorithm needs {name} to be a power of two (2, 4, 8, ...)")
    if kind == "multiple" and Fraction(y) % Fraction(x):
        raise ValueError(f"{other_name}={y} is not allowed: it must be a multiple of {name}={x}")
    if kind == "core_multiple":
        core = 1 << (int(x).bit_length() - 1)
        if Fraction(y) % core:
            raise ValueError(f"{other_name}={y} is not allowed: it must be a multiple of 2^⌊log₂{name}⌋={core}")
    if kind == "at_least" and x < y:
        raise ValueError(f"{name}={x} is not allowed: it must be at least {other_name}={y}")
    if kind == "equals" and x != y:
        raise ValueError(f"{name}={x} is not allowed: this algorithm needs {name}={y}")
    if kind == "divisible" and y != 0 and (Fraction(x) / Fraction(y)).denominator != 1:
        raise ValueError(f"{name}={x} must be divisible by {other_name}={y}")
    if kind == "equal" and x != y:
        raise ValueError(f"{name}={x} must equal {other_name}={y}")
    if kind == "at_least_value" and x < y:
        raise ValueError(f"{name}={x} must be at least {y}")
    if kind == "fixed" and x != y:
        raise ValueError(name.format(x=x))
'''


def _check_lines(f: Formula, printer) -> list[str]:
    """One line per requirement whose symbols are all arguments of ``f``: checked on exact input."""
    args = {info.symbol for info in f.parameters}
    lines = []
    for check in f.checks:
        kind, name, first = check[0], check[1], check[2]
        exprs = [first] + ([check[4]] if len(check) > 3 else [])
        if not all(sp.sympify(e).free_symbols <= args for e in exprs):
            continue
        values = [printer.doprint(sp.sympify(e)) for e in exprs]
        used = sorted({str(x) for e in exprs for x in sp.sympify(e).free_symbols})
        call = (f"_need({kind!r}, {name!r}, {values[0]}" +
                (f", {check[3]!r}, {values[1]})" if len(check) > 3 else ")"))
        lines.append(f"    if _whole({', '.join(used)}):\n        {call}" if used else f"    {call}")
    return lines


def _function(f: Formula, body: str, numpy: bool, checks: list[str] | None = None) -> str:
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
    checked = "".join(line + "\n" for line in (checks or []))
    return f'{signature}\n    r"""{_docstring(doc)}    """\n{checked}    return {result}\n'


def to_python(chosen: list[Formula], numpy: bool = False) -> str:
    printer = NumPyPrinter() if numpy else ExactPythonPrinter()
    functions = []
    for f in chosen:
        body = printer.doprint(f.expr)
        functions.append(_function(f, body, numpy, None if numpy else _check_lines(f, printer)))
    imports = printer.module_imports if numpy else {}
    header = ['"""Closed-form communication costs exported by symcomm (standalone; needs no symcomm).',
              "",
              "One function per formula, keyword arguments named by symcomm's symbol names.",
              COLLECTIVE_TIME_CONVENTION[0].upper() + COLLECTIVE_TIME_CONVENTION[1:] + ".",
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
        lines += ["import math", "from fractions import Fraction", "", _HELPERS.strip("\n"), _CHECK_HELPERS.rstrip("\n"), ""]
    lines.append(f"__all__ = {[f.name for f in chosen]!r}\n")
    return "\n".join(lines) + "\n\n" + "\n\n".join(functions)


FORMAT = Format(name="python", order=30, render=to_python, options=("numpy",),
                description="a standalone Python module (exact on int/Fraction; numpy=True: vectorised floats)")
