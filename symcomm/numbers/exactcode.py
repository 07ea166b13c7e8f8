"""Exact scalar code: an expression printed once as plain Python over ``int`` and ``fractions.Fraction``,
compiled in the process, so that one exact point costs microseconds instead of a SymPy substitution.

What :func:`symcomm.numbers.evaluation.exact` gives at one point of whole numbers and fractions, this gives
too, or it refuses (:class:`NotExact`) and the caller falls back on SymPy: every operation here is exact on
Python integers and fractions (a quotient is ``_div``: an ``int`` when it divides, else a ``Fraction``), and
anything that is not (a float in the expression, a fractional power, log₂ or ⌈log₂⌉ of a value that is not
a whole number, a Piecewise with no branch taken, a division by zero) raises.  The code is printed from
SymPy expressions of the project (never from text a user gave) and run with the helpers below only.
"""

from __future__ import annotations

import functools
import itertools
import re
from fractions import Fraction

import sympy as sp
from sympy.printing.pycode import PythonCodePrinter

from .codeprint import NamedPrinting
# the operations the printed code calls (SymPy-free)
from .exactops import _CANNOT, HELPERS as _HELPERS, NotExact, _Unusable  # noqa: F401
from .rational import _cli_name


#: an operand printed as a name or a whole number, read again where used (_ExactPrinter._quotient)
_PLAIN = re.compile(r"[A-Za-z_]\w*|\d+")


class _ExactPrinter(NamedPrinting, PythonCodePrinter):
    """Python over ints and Fractions: quotients in line (``_div``'s rule), rationals as ``_F(p, q)``."""

    # the symbols' own float printing (CeilLog2._pythoncode) is not exact: only this class's methods print
    printmethod = "_symcomm_exactcode"

    def __init__(self, slot: dict | None = None, flagged: bool = False):
        super().__init__({"fully_qualified_modules": False, "inline": True, "allow_unknown_functions": False,
                          "order": "none"})
        self.names = slot or {}       # each symbol as its parameter's name (NamedPrinting): printed as built
        self.quotients = 0            # the quotients printed so far: each names its own operands
        self.flagged = flagged        # many_text's ``flagged``: what may make a number that is not an int sets _z

    def _made(self, call: str) -> str:
        # a call that may make a number that is not an int (a Fraction), flagged where asked (many_text)
        return f"((_z := 1) and {call})" if self.flagged else call

    def _quotient(self, top: str, bottom: str, shown: bool = False) -> str:
        """``_div(top, bottom)`` in line (a call and its type tests cost more than the division): an int when the
        remainder is zero (ints, or Fractions whose quotient is whole: ``//`` is then exact), else a Fraction;
        by zero, ``_by_zero`` refuses as ``_div`` does.  Its operands are held in names of its own (a quotient
        nested in its operands has others), each computed once, but an operand that is a name or a whole number,
        read where used.  ``shown``: a result the caller only shows
        (plain_exact), so a quotient that is not whole is ``top / bottom`` itself: of two ints the correctly rounded
        float plain_exact makes of their Fraction (no Fraction built to be turned into it), of a Fraction a
        Fraction as before."""
        i = self.quotients
        self.quotients += 1
        # an operand that is a name or a whole number is read where it is used (a load each), not held in a name of
        # its own (a copy, an assignment and a load more each); the same objects either way, and the same order
        # (the bottom tested first, then the top)
        n = top if _PLAIN.fullmatch(top) else f"_n{i}"
        d = bottom if _PLAIN.fullmatch(bottom) else f"_d{i}"
        rest = f"{n} / {d}" if shown else self._made(f"_F({n}, {d})")
        tested = d if d == bottom else f"({d} := {bottom})"
        # a divisor printed as a whole number other than 0 is not zero: nothing to refuse, nothing tested
        refused = "" if bottom.isdigit() and int(bottom) else f"_by_zero() if not {tested} else "
        held = top if n == top else f"({n} := {top})"
        return f"({refused}{n} // {d} if not {held} % {d} else {rest})"

    def shown(self, expr: sp.Expr) -> str:
        """``expr`` as a result only shown (:meth:`_quotient`'s ``shown``): a quotient at its top as its shown
        value, anything else as :meth:`doprint` prints it."""
        if isinstance(expr, sp.Function) and expr.func.__name__ == "_q":
            return self._quotient(self._print(expr.args[0]), self._print(expr.args[1]), shown=True)
        return self.doprint(expr)

    def _print_Float(self, expr):
        raise NotExact("a float in the expression")

    def _print_Integer(self, expr):
        return str(int(expr))

    def _print_Rational(self, expr):
        return self._made(f"_F({int(expr.p)}, {int(expr.q)})")

    def _print_Pow(self, expr, rational=False):
        base, exp = expr.args
        if not exp.is_Integer:
            if exp.is_number:
                raise NotExact("a power that is not whole")
            return self._made(f"_pow({self._print(base)}, {self._print(exp)})")    # 2**⌈log₂N⌉: whole at run time
        if exp < 0:
            return self._quotient("1", f"{self.parenthesize(base, 60)}**{-int(exp)}")
        return f"{self.parenthesize(base, 60)}**{int(exp)}"

    def _print_Mul(self, expr):
        coef, factors = expr.as_coeff_mul()
        num, den = [], []
        for f in factors:
            if f.is_Pow and f.exp.is_Integer and f.exp < 0:
                den.append(f.base if f.exp == -1 else f.base ** -f.exp)
            else:
                num.append(f)
        if not coef.is_Rational:
            raise NotExact("a float coefficient")
        top = [str(int(coef.p))] if coef.p != 1 or not num else []
        top += [self.parenthesize(f, 60) for f in num]
        bottom = ([str(int(coef.q))] if coef.q != 1 else []) + [self.parenthesize(f, 60) for f in den]
        text = "*".join(top)
        return self._quotient(text, "*".join(bottom)) if bottom else f"({text})"

    def _print_Piecewise(self, expr):
        out = "_no_branch()"
        for value, cond in reversed(expr.args):
            if cond is sp.true or cond == True:  # noqa: E712
                out = self._print(value)
            else:
                out = f"({self._print(value)} if {self._print(cond)} else {out})"
        return out

    def _print_CeilLog2(self, expr):
        return f"_ceil_log2({self._print(expr.args[0])})"

    def _print_OnesBelow(self, expr):
        return f"_ones_below({self._print(expr.args[0])})"

    def _print_log2(self, expr):
        # sympy.codegen's log2 (symbols.log2 of a power of two): exact, or NotExact at a value that is not one
        return f"_log2({self._print(expr.args[0])})"

    def _print_Function(self, expr):
        if expr.func.__name__ == "_log2":
            return f"_log2({self._print(expr.args[0])})"
        if expr.func.__name__ == "_q":           # compiled_many's opaque quotient (_quotients)
            return self._quotient(self._print(expr.args[0]), self._print(expr.args[1]))
        raise NotExact(f"no exact code for {expr.func.__name__}")

    def _print_floor(self, expr):
        return f"_floor({self._print(expr.args[0])})"

    def _print_ceiling(self, expr):
        return f"_ceiling({self._print(expr.args[0])})"

    def _print_Max(self, expr):
        return "max(" + ", ".join(self._print(a) for a in expr.args) + ")"

    def _print_Min(self, expr):
        return "min(" + ", ".join(self._print(a) for a in expr.args) + ")"

    def _print_log(self, expr):
        # log₂ is log(x)/log(2) in SymPy: each log(x) prints as _log2(x), so log(2) is _log2(2) = 1
        if len(expr.args) != 1:
            raise NotExact("a logarithm that is not log2")
        return f"_log2({self._print(expr.args[0])})"

    def _print_NaN(self, expr):
        raise NotExact("nan")

    _print_Infinity = _print_NegativeInfinity = _print_ComplexInfinity = _print_NaN


def _printed(expr: sp.Expr, slot: dict) -> str:
    """``expr`` as exact Python over the parameters ``slot`` names (symbol → parameter name); NotExact when
    it has no exact code."""
    return _ExactPrinter(slot).doprint(expr)


_QUOTIENT = sp.Function("_q")
_UNCHANGED = object()


def _quotients(expr: sp.Expr, seen: dict) -> sp.Expr:
    """``expr`` with each quotient as one opaque ``_q(numerator, denominator)``, the printer's ``_div`` of a
    product's whole top by its whole bottom: a common subexpression is then never a lone reciprocal 1/x (a
    Fraction where the quotient itself is whole, and Fraction arithmetic after it)."""
    if not expr.args:
        return expr
    held = seen.get(expr)
    if held is not None:
        return expr if held is _UNCHANGED else held      # unchanged: the caller's own object (see below)
    out = None
    if expr.is_Mul or (expr.is_Pow and expr.exp.is_Integer and expr.exp < 0):
        coef, factors = expr.as_coeff_mul()
        piece = next((f for f in factors if f.is_Piecewise and any(_is_quotient(v) for v, _ in f.args)), None)
        if coef.is_Rational and piece is not None:
            # a product with a Piecewise one of whose branches is a quotient (1/x where x may divide the rest): the
            # rest multiplied into each branch, so that each is one quotient of whole products, an int where it
            # divides, instead of a Fraction taken first and multiplied after; the same number in every branch
            rest = [f for f in factors if f is not piece]
            out = _quotients(sp.Piecewise(*((sp.Mul(coef, *rest, value), cond) for value, cond in piece.args),
                                          evaluate=False), seen)
        elif coef.is_Rational:
            top, bottom = [], []
            for f in factors:
                if f.is_Pow and f.exp.is_Integer and f.exp < 0:
                    bottom.append(sp.Pow(_quotients(f.base, seen), -f.exp))
                else:
                    top.append(_quotients(f, seen))
            if bottom or coef.q != 1:
                out = _QUOTIENT(sp.Mul(sp.Integer(coef.p), *top), sp.Mul(sp.Integer(coef.q), *bottom))
            else:
                out = sp.Mul(coef, *top)
    if out is None:
        args = [_quotients(arg, seen) for arg in expr.args]
        # rebuilt only where an argument changed: building a Min, Max or relation again re-evaluates it
        out = expr if all(new is old for new, old in zip(args, expr.args)) else expr.func(*args)
    # an equal subtree met again (in this expression or another one sharing ``seen``) gets back itself, not the
    # first one's object, so that ``new is old`` above holds for it as it would when walked anew
    seen[expr] = _UNCHANGED if out is expr else out
    return out


def _is_quotient(value: sp.Expr) -> bool:
    """Whether ``value`` is a quotient: a fraction, a reciprocal, or a product with either among its factors."""
    return any((f.is_Rational and not f.is_Integer) or (f.is_Pow and f.exp.is_Integer and f.exp < 0)
               for f in (value.args if value.is_Mul else (value,)))


def _function(result: str, params: list, body: str = ""):
    source = f"def _exact({', '.join(params)}):\n{body}    return {result}\n"
    namespace = dict(_HELPERS)
    exec(compile(source, "<symcomm.numbers.exactcode>", "exec"), namespace)   # printed from SymPy above
    return namespace["_exact"]


@functools.lru_cache(maxsize=4096)
def compiled(expr: sp.Expr):
    """(the function, its argument symbols in order) computing ``expr`` exactly, or None when it cannot
    be printed exactly (then SymPy evaluates it)."""
    symbols = tuple(sorted(expr.free_symbols, key=_cli_name))
    params = [f"_a{i}" for i in range(len(symbols))]
    try:
        text = _printed(expr, dict(zip(symbols, params)))
    except NotExact:
        return None
    return _function(text, params), symbols


@functools.lru_cache(maxsize=512)
def compiled_many(exprs: tuple):
    """(the function, its argument symbols) computing every expression of ``exprs`` exactly in one call of
    one function (a tuple), or None when one of them cannot be printed exactly.

    Their common subexpressions are computed once (an answer's sheet of a strategy's formulas repeats its
    quotients and Piecewise conditions: 2,802 operations become 241 for a hybrid layout's).  A subexpression
    hoisted out of a Piecewise branch is computed whether or not its branch is taken, so one that has no exact
    value here (a division by zero, log₂ of a value that is not a power of two) is kept as an
    :class:`_Unusable` that raises :class:`NotExact` on any use: a branch not taken never touches it, and a
    branch taken refuses as the expression alone would.  The lines run first without a handler each, in one try
    (the common case: every value exact, a third of the bytecode); only where one raises do they run again, each kept
    or made an :class:`_Unusable` as above."""
    made = many_text(exprs)
    if made is None:
        return None
    result, params, body, symbols = made
    return _function(result, params, body), symbols


def many_text(exprs: tuple, shown: range = range(0), flagged: bool = False):
    """(the returned tuple's text, the parameters, the body's lines, the argument symbols) of
    :func:`compiled_many`'s function, or None when an expression has no exact code; the generated modules
    print the same text (``tools.hybridgen``).  ``shown``: the positions of results the caller only shows
    (``plain_exact``): a quotient at the top of one that is not whole is its float there (of ints), never a
    Fraction (:meth:`_ExactPrinter.shown`).  ``flagged``: one number more, last, ``_z``: 0 where the code made no
    Fraction (no quotient that is not whole, no rational constant, no ``_pow``) and no subexpression went without an
    exact value (:class:`_Unusable`), so that ints given, every number but the shown ones is an int (a caller then
    tests none of them); 1 otherwise, where the numbers are as without it."""
    symbols = tuple(sorted(set().union(*(e.free_symbols for e in exprs)), key=_cli_name))
    params = [f"_a{i}" for i in range(len(symbols))]
    slot = dict(zip(symbols, params))
    try:
        seen: dict = {}     # one memo for all: the expressions share most of their subtrees
        bodies = [_quotients(e, seen) for e in exprs]
        taken = set(params)
        temps = (sp.Symbol(f"_t{i}") for i in itertools.count() if f"_t{i}" not in taken)
        replacements, reduced = sp.cse(bodies, symbols=temps, optimizations=None, order="none")
        printer = _ExactPrinter(slot, flagged)
        values = [(temp, printer.doprint(value)) for temp, value in replacements]
        texts = [printer.shown(r) if i in shown else printer.doprint(r) for i, r in enumerate(reduced)]
    except NotExact:
        return None
    if flagged:
        texts.append("_z")
    result = "(" + "".join(f"{text}, " for text in texts) + ")"
    start = "    _z = 0\n" if flagged else ""
    unusable = "\n        _z = 1" if flagged else ""
    # each hoisted value kept as an _Unusable where it has none (a branch not taken may hold it)
    careful = "".join(f"    try:\n        {temp} = {text}\n    except _CANNOT as _err:\n"
                      f"        {temp} = _Unusable(_err){unusable}\n" for temp, text in values)
    if not values:
        return result, params, start + careful, symbols
    # first the same lines without a handler each, in one try: where no value lacks an exact answer (the common case)
    # their numbers are the careful lines' own, computed in a third of the bytecode (a handler's code sits beside its
    # line); where one raises, nothing is kept of this pass and the careful lines answer (or refuse) as ever
    fast = "".join(f"        {temp} = {text}\n" for temp, text in values)
    body = (f"    try:\n{'    ' + start if start else ''}{fast}        return {result}\n"
            f"    except _CANNOT:\n        pass\n{start}{careful}")
    return result, params, body, symbols


def at_many(exprs: tuple, numbers: dict) -> tuple:
    """Every expression of ``exprs`` at ``numbers``, as :func:`at` gives each; :class:`NotExact` when one has
    no exact value here."""
    made = compiled_many(exprs)
    if made is None:
        raise NotExact("no exact code")
    function, symbols = made
    try:
        values = function(*[numbers[s] for s in symbols])
    except KeyError as err:
        raise NotExact(f"no value for {err}") from None
    except (ArithmeticError, TypeError, ValueError, NameError) as err:
        raise NotExact(str(err)) from None
    for value in values:
        if type(value) is not int:       # the common case, all whole, checked in one pass
            return tuple([value if type(value) is int else _checked(value) for value in values])   # a list: no generator
    return values


def _checked(value):
    if type(value) is int:
        return value
    if type(value) is Fraction:
        return value.numerator if value.denominator == 1 else value
    raise NotExact(f"not an exact number: {type(value).__name__}")


def at(expr: sp.Expr, numbers: dict):
    """``expr`` at ``numbers`` (symbol → int or Fraction) as an int or a Fraction; :class:`NotExact` when this
    expression or point has no exact value here."""
    made = compiled(expr)
    if made is None:
        raise NotExact("no exact code")
    function, symbols = made
    try:
        value = function(*[numbers[s] for s in symbols])
    except KeyError as err:
        raise NotExact(f"no value for {err}") from None
    except (ArithmeticError, TypeError, ValueError, NameError) as err:
        raise NotExact(str(err)) from None
    if type(value) is int:
        return value
    if type(value) is Fraction:
        return value.numerator if value.denominator == 1 else value
    if type(value) is bool:
        raise NotExact("a truth value")
    raise NotExact(f"not an exact number: {type(value).__name__}")
