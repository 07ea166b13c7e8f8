"""``--format python``: a standalone Python module, one function per formula.

**Exactness.**  The module imports only the standard library (``math``, ``re``, ``reprlib``,
``fractions``).
With ``int`` (or ``fractions.Fraction``) arguments every function returns exactly what
:func:`symcomm.numbers.evaluation.exact` returns: an ``int`` when the value is whole, a ``Fraction``
otherwise.  Division goes through ``_q(a, b)``, which is ``Fraction(a, b)`` for exact
operands (``a / b`` for floats); ⌈log₂n⌉ is ``(n - 1).bit_length()`` for an integer
n ≥ 1; log₂ of a power of two (the power-of-two algorithms) is ``n.bit_length() - 1``;
any other log₂ falls back to ``math.log2`` (a float), as does everything once a float
argument is passed.

**Arguments are checked as the command line checks them.**  Each argument is read by a copy of
:func:`symcomm.base.inputs.parse_fraction` (written into the module from its source, so the two cannot
drift): an int, a Fraction or a float as it would be typed, text (``"2**30"``, ``"3/4"``) by the
same grammar.  A bool, None, a list, NaN, ±inf, more than 200 characters, a magnitude above 2¹⁰⁰, a
nonzero one below 10⁻³⁰, a non-whole value for an integer symbol, or one below its least (N ≥ 2
for a collective, 1 for other whole numbers, 0 for α, β, ...) raises ``InputError`` (a
``ValueError`` defined in the module) with the one line ``symcomm eval`` prints for that value.
Then the requirements (a power of two, a multiple of N, ...) are checked on the values read (a float by
its exact binary value, so N=6.0 is refused where N=6 is): each rule
(:mod:`symcomm.core.rules`) is a ``_need(kind, message, x, y)`` line, its message the rule's own (``{x}``,
``{y}`` filled with the values), its kind's test written from :data:`symcomm.core.rules.KINDS`.  The one
exception: a parameter the command line also accepts as ``gpus_per_node`` is named ``G`` only.

**numpy** (``numpy=True``, this format's one option).  Float arithmetic, vectorised over
arrays; the module imports ``numpy`` only.  Its arguments are arrays, so they are not checked
(neither bounds nor requirements): check the values before, e.g. with the exact module.
"""

from __future__ import annotations

import re
from fractions import Fraction

import sympy as sp
from sympy.printing.numpy import NumPyPrinter
from sympy.printing.precedence import PRECEDENCE
from sympy.printing.pycode import PythonCodePrinter

from ...training.subjects import COLLECTIVE_TIME_CONVENTION
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


class ArrayPrinter(NumPyPrinter):
    """NumPy over float arrays, with the module's vectorised Σ popcount below n (:data:`_ARRAY_HELPERS`)."""

    ones_below_function = "_ones_below"


#: the numpy module's helpers: :class:`symcomm.core.symbols.OnesBelow` elementwise, on whole numbers below 2⁵³ (the
#: C header's loop over the bits, on arrays)
_ARRAY_HELPERS = '''
def _ones_below(x):
    """The set bits of 0, 1, ..., x - 1 summed, elementwise over whole numbers x >= 0 (exact below 2**53)."""
    x = numpy.asarray(x, dtype=numpy.float64)
    total, bit = numpy.zeros_like(x), 1.0
    while numpy.any(bit < x):
        period = 2.0 * bit
        total = total + numpy.floor(x / period) * bit + numpy.maximum(numpy.fmod(x, period) - bit, 0.0)
        bit = period
    return total
'''


class ExactPythonPrinter(PythonCodePrinter):
    """Python that stays exact on int / Fraction arguments (see the module docstring)."""

    #: ⌈log₂⌉ (:class:`symcomm.core.symbols.CeilLog2`) prints as a call of the module's exact helper
    ceil_log2_function = "_ceil_log2"
    #: Σ popcount below n (:class:`symcomm.core.symbols.OnesBelow`) likewise
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


def _input_helpers() -> str:
    """The command line's number reader (:func:`symcomm.base.inputs.parse_fraction` and the functions it
    calls), copied into the module from their source: one reader, so that an exported function
    refuses a value with the words ``symcomm eval`` uses for it, bounds and all."""
    import inspect

    from ...base import inputs as I

    functions = (I._bound_text, I._show, I._factor, I._not_a_number, I.parse_fraction, I._bounded, I._short)
    # the module-level constants those functions read, found from their code (not listed by hand, so
    # a constant added to inputs.py comes along)
    used = sorted({name for fn in functions for name in _names_read(fn.__code__)
                   if name in vars(I) and not name.startswith("__") and not callable(vars(I)[name])
                   and not inspect.ismodule(vars(I)[name])})
    constants = "\n".join([
        "class InputError(ValueError):",
        '    """A bad argument, in the words of the command line (`symcomm eval`)."""',
        "",
        "",
        *(f"{name} = {_constant(vars(I)[name])}" for name in used),
    ])
    functions = [inspect.getsource(fn).strip("\n") for fn in functions]
    return "\n\n\n".join([constants] + functions + [_ARGUMENT_HELPER.strip("\n")])


def _names_read(code) -> set:
    """The global names a function's code (and the code nested in it) reads."""
    names = set(code.co_names)
    for const in code.co_consts:
        if hasattr(const, "co_names"):
            names |= _names_read(const)
    return names


def _constant(value) -> str:
    """A constant of symcomm.base.inputs as Python source: a compiled pattern as re.compile, a Fraction
    by its parts, anything else by its repr (str, int, float, tuples of them)."""
    if isinstance(value, re.Pattern):
        return f"re.compile({value.pattern!r}, {int(value.flags)})"
    if isinstance(value, Fraction):
        return f"Fraction({value.numerator!r}, {value.denominator!r})"
    if isinstance(value, (str, int, float, tuple, frozenset)):
        return repr(value)
    raise TypeError(f"symcomm.base.inputs constant of type {type(value).__name__} cannot be written into the export")


#: an argument as the command line reads it: the Python value spelled as it would be typed
_ARGUMENT_HELPER = '''
def _digits(n):
    """The decimal digits of the int |n|, without writing it out (int -> str is capped at 4300 digits)."""
    n = abs(n)
    d = max(1, int((n.bit_length() - 1) * 0.30102999566398120) + 1)
    while 10 ** d <= n:
        d += 1
    while d > 1 and 10 ** (d - 1) > n:
        d -= 1
    return d


def _text(n):
    """str(n) for an int, or a stand-in of the same length when it is too long to be read anyway."""
    if n.bit_length() <= 4 * MAX_TEXT:      # at most 241 digits: written out; more are refused for their length
        return str(n)
    return "9" * (_digits(n) + (n < 0))


def _arg(key, x, integer, least):
    """x if `symcomm eval` accepts key=x, else InputError with its message.

    x is read as the command line would read it typed: an int (or a numpy integer) or a Fraction
    exactly (p/q), a float as it prints (repr: 1.5, 1e-35, nan), text by the command line's
    grammar (8, 2**30, 3/4, 5e-6; at most 200 characters); a bool, None, a list or anything else
    is not a number.
    Text is returned as the exact value it names; numbers are returned as given.
    """
    if not isinstance(x, (int, float, Fraction, str)) and hasattr(type(x), "__index__"):
        try:
            x = type(x).__index__(x)      # a numpy integer reads as the int it holds
        except TypeError:
            pass
    if isinstance(x, bool) or not isinstance(x, (int, float, Fraction, str)):
        raise _not_a_number(key, reprlib.repr(x))
    if isinstance(x, int):
        text = _text(x)
    elif isinstance(x, Fraction):
        text = _text(x.numerator) + ("" if x.denominator == 1 else "/" + _text(x.denominator))
    elif isinstance(x, float):
        text = float.__repr__(x)          # numpy's float64 prints as np.float64(...)
    else:
        text = x
    if len(text) > MAX_TEXT:
        raise InputError(f"{key}: a number of {len(text)} characters is not allowed: at most {MAX_TEXT}")
    value = parse_fraction(key, text, integer=integer, least=least if integer else 0)
    if isinstance(x, str):
        return _exact(value)
    return x
'''


def _docstring(text: str) -> str:
    return str(text).replace('"""', '\\"\\"\\"')


def _check_helpers() -> str:
    """The rules' tests, one function per kind written from :data:`symcomm.core.rules.KINDS`, and
    ``_need``, which raises InputError (a ValueError) with the rule's own message, its ``{x}``,
    ``{y}`` filled as :func:`symcomm.core.rules.fill` fills them."""
    from ...core.rules import KINDS

    tests = "\n".join(f"    {name!r}: lambda x, y: {kind.python}," for name, kind in KINDS.items())
    return f'''

def _whole(*values):
    """True when every value is a number the requirements' tests take: exact (int or Fraction) or a float, whose
    tests read its exact binary value (Fraction(6.0) is 6), so that N=6.0 is refused where N=6 is."""
    return all(isinstance(v, (int, Fraction, float)) and not isinstance(v, bool) for v in values)


#: kind -> its test on exact values (symcomm.core.rules.KINDS)
_HOLDS = {{
{tests}
}}


def _need(kind, message, x, y=None):
    """InputError with the message `symcomm eval` prints ({{x}}, {{y}}: the values) when (x, y) breaks the rule."""
    if not _HOLDS[kind](x, y):
        raise InputError(message.replace("{{x}}", str(x)).replace("{{y}}", str(y)))
'''


def _check_lines(f: Formula, printer) -> list[str]:
    """One line per rule whose symbols are all arguments of ``f``: checked on exact input."""
    lines = []
    for kind, message, exprs in f.checked_rules():
        values = ", ".join(printer.doprint(e) for e in exprs)
        used = sorted({str(x) for e in exprs for x in e.free_symbols})
        call = f"_need({kind!r}, {message!r}, {values})"
        lines.append(f"    if _whole({', '.join(used)}):\n        {call}" if used else f"    {call}")
    return lines


def _argument_lines(f: Formula) -> list[str]:
    """One line per argument: read and bounded as ``symcomm eval`` reads it (:func:`_input_helpers`)."""
    return [f"    {info.cli_name} = _arg({info.cli_name!r}, {info.cli_name}, {bool(info.symbol.is_integer)}, "
            f"{f.least_of(info)})" for info in f.parameters]


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
    printer = ArrayPrinter() if numpy else ExactPythonPrinter()
    functions = []
    for f in chosen:
        body = printer.doprint(f.expr)
        functions.append(_function(f, body, numpy, None if numpy else _argument_lines(f) + _check_lines(f, printer)))
    imports = printer.module_imports if numpy else {}
    header = ['"""Closed-form communication costs exported by symcomm (standalone; needs no symcomm).',
              "",
              "One function per formula, keyword arguments named by symcomm's symbol names.",
              COLLECTIVE_TIME_CONVENTION[0].upper() + COLLECTIVE_TIME_CONVENTION[1:] + ".",
              ("Float arithmetic over numpy arrays.  The arguments are not checked, neither their bounds nor\n"
               "the requirements each function's docstring states: check the values first (the exact module\n"
               "checks them as `symcomm eval` does)." if numpy else
               "Exact on int / fractions.Fraction arguments: an int when the value is whole, a Fraction "
               "otherwise;\nceil(log2 n) = (n - 1).bit_length(), log2 of a power of two = n.bit_length() - 1; "
               "float arguments give floats.\nA bad argument (a bool, None, a list, NaN, a value out of bounds) "
               "raises InputError, a ValueError, with the\nline `symcomm eval` prints for the same value."),
              '"""', ""]
    lines = header
    if numpy:
        lines += ["import functools", "import numpy"] if any("functools" in m for m in imports) else ["import numpy"]
        lines += ["", _ARRAY_HELPERS.strip("\n"), "", ""]
    else:
        lines += ["import math", "import re", "import reprlib", "from fractions import Fraction", "",
                  _HELPERS.strip("\n"), _check_helpers().rstrip("\n"), "", "", _input_helpers(), ""]
    lines.append(f"__all__ = {[f.name for f in chosen]!r}\n")
    return "\n".join(lines) + "\n\n" + "\n\n".join(functions)


FORMAT = Format(name="python", order=30, render=to_python, options=("numpy",),
                description="a standalone Python module (exact on int/Fraction; numpy=True: vectorised floats)")
