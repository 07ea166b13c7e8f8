"""Evaluating an expression: the one place every front end goes through.

Two paths, named for what they give:

* :func:`exact` — one point, SymPy's exact arithmetic: integers stay integers at any size
  and log₂ of a power of two is its exponent (the CLI's ``eval``, the measurement's
  predictions, the proofs' spot checks).
* :func:`fast` — floats, compiled once per expression (:mod:`symcomm.numbers.numeric`): plain Python
  for scalar arguments, numpy for arrays (the plots, the step model's figures, the planner's
  option combinations that have no generated kernel).  It never guesses: integer arrays are
  computed in float64 here, and exact array arithmetic is asked for explicitly with
  ``symcomm.numbers.numeric.evaluator(expr)(..., exact=True)``.
"""

from __future__ import annotations

import math
from fractions import Fraction

import sympy as sp

from .exactops import plain_exact

from ..base.errors import InputError


def exact(expr, values: dict) -> sp.Expr:
    """expr with ``values`` substituted, reduced to an exact number where possible."""
    numbers = python_numbers(values)
    if numbers is not None:
        value = exact_number(expr, numbers, values)
        return sp.Integer(value) if type(value) is int else sp.Rational(value.numerator, value.denominator) \
            if type(value) is Fraction else value
    return _sympy_exact(expr, values)


def python_numbers(values: dict) -> dict | None:
    """``values`` (symbol → exact number) as Python ints and Fractions, or None when one is not exact
    (a float) or a key is not a symbol: what :func:`exact_number` takes."""
    out = {}
    for key, value in values.items():
        if type(key) is not sp.Symbol and not isinstance(key, sp.Symbol):
            return None
        kind = type(value)
        if kind is int:
            out[key] = value
        elif kind in _SYMPY_WHOLE:        # the exact types first: isinstance on SymPy's classes costs more
            out[key] = int(value.p)
        elif kind is sp.Rational:
            out[key] = Fraction(int(value.p), int(value.q))
        elif isinstance(value, sp.Integer):
            out[key] = int(value)
        elif isinstance(value, sp.Rational):
            out[key] = Fraction(int(value.p), int(value.q))
        elif kind is Fraction:
            out[key] = value.numerator if value.denominator == 1 else value
        else:
            return None
    return out


def python_number(value):
    """One exact SymPy number (a parsed value) as a Python int or Fraction, None when not exact: the
    conversion :func:`python_numbers` makes of each value."""
    kind = type(value)
    if kind is int:
        return value
    if kind in _SYMPY_WHOLE:
        return int(value.p)
    if kind is sp.Rational or isinstance(value, sp.Rational):
        return int(value.p) if value.q == 1 else Fraction(int(value.p), int(value.q))
    if kind is Fraction:
        return value.numerator if value.denominator == 1 else value
    return None


def hold(values: dict, numbers: dict | None) -> None:
    """Hold ``numbers`` as :func:`held_numbers` of ``values`` (a binding that converted each value with its
    parse: :func:`python_number`, the same conversion)."""
    if len(_CONVERTED) >= 4:
        _CONVERTED.clear()
    _CONVERTED[id(values)] = (values, numbers)


def held_numbers(values: dict) -> dict | None:
    """:func:`python_numbers` of ``values``, converted once per bound dict: the binding's requirement checks
    and the answer built from the same values (never changed after binding) share one conversion."""
    held = _CONVERTED.get(id(values))
    if held is None or held[0] is not values:
        if len(_CONVERTED) >= 4:
            _CONVERTED.clear()
        held = _CONVERTED[id(values)] = (values, python_numbers(values))   # holding it keeps its id unique
    return held[1]


def bound_numbers(values: dict) -> dict | None:
    """The Python numbers :func:`hold` or :func:`held_numbers` holds for this very dict, else None (nothing
    converted here)."""
    held = _CONVERTED.get(id(values))
    return held[1] if held is not None and held[0] is values else None


#: id → (a bound dict, its Python numbers): an answer's values and times, converted once each
_CONVERTED: dict = {}


def positional(exprs: tuple, names: tuple) -> tuple | None:
    """(the compiled exact function of ``exprs``, the position in ``names`` of each of its arguments), or None
    when they have no exact code or read a symbol ``names`` lacks: a caller that binds the same names on every
    call then passes its numbers by position, hashing no symbol (:func:`exact_numbers`' code, its results
    unchecked: an int, a Fraction, or a truth value or float where the code has no exact answer)."""
    from .exactcode import compiled_many

    made = compiled_many(exprs)
    if made is None:
        return None
    function, symbols = made
    at = {sym: i for i, sym in enumerate(names)}
    if not all(sym in at for sym in symbols):
        return None
    return function, tuple(at[sym] for sym in symbols)


#: SymPy's whole-number classes (Integer and its singletons)
_SYMPY_WHOLE = frozenset({sp.Integer, type(sp.S.One), type(sp.S.Zero), type(sp.S.NegativeOne)})


def exact_number(expr, numbers: dict, values: dict | None = None):
    """``expr`` at ``numbers`` (symbol → int or Fraction, :func:`python_numbers`), exactly: an int or a
    Fraction from the compiled exact code (:mod:`symcomm.numbers.exactcode`), or, where that has no exact
    answer (no branch taken, log₂ of a value that is not a power of two, a symbol without a value) and at a
    formula's first use in the process, SymPy's own exact result (at ``values``, by default ``numbers``) —
    the same number either way."""
    from .exactcode import NotExact, at

    expr = expr if isinstance(expr, sp.Basic) else sp.sympify(expr, strict=True)
    if expr in _USED:
        try:
            return at(expr, numbers)
        except NotExact:
            pass
    else:
        # compiled on its second use: a process that evaluates a formula once (the command line) pays
        # SymPy's substitution as before, not a compilation it would not earn back
        if len(_USED) > 8192:
            _USED.clear()
        _USED.add(expr)
    return _sympy_exact(expr, numbers if values is None else values)


def exact_numbers(exprs: tuple, numbers: dict, values: dict | None = None) -> tuple:
    """Every expression of ``exprs`` at ``numbers``, each as :func:`exact_number` gives it, in one compiled
    call where every one of them has exact code (from the bundle's second use on)."""
    from .exactcode import NotExact, at_many

    if exprs in _USED:
        try:
            return at_many(exprs, numbers)
        except NotExact:
            pass
    else:
        _USED.add(exprs)
    return tuple(exact_number(expr, numbers, values) for expr in exprs)


def is_warm(exprs: tuple) -> bool:
    """Whether :func:`exact_numbers` has evaluated this bundle before (from its second use it runs compiled):
    a caller that would compile it itself waits for the same second use."""
    return exprs in _USED


class Formulas(tuple):
    """A tuple of formulas that computes its hash once: a bundle :func:`exact_numbers` is handed on every
    call (an answer's sheet of formulas) is looked up in the caches without hashing each formula again."""

    def __hash__(self):
        held = self.__dict__.get("_hash")
        if held is None:
            held = self.__dict__["_hash"] = tuple.__hash__(self)
        return held


#: the formulas evaluated once already in this process (exact_number compiles them from the second use)
_USED: set = set()


def _sympy_exact(expr, values: dict) -> sp.Expr:
    values = {sp.sympify(k, strict=True): sp.sympify(v, strict=True) for k, v in dict(values).items()}
    if all(key.is_Symbol for key in values):
        # structural replacement: simultaneous, and the tree evaluates as it is rebuilt
        result = sp.sympify(expr, strict=True).xreplace(values)
    else:
        result = sp.sympify(expr, strict=True).subs(values, simultaneous=True)
    if result.has(sp.Max, sp.Min, sp.ceiling, sp.floor, sp.Piecewise):
        result = result.doit()
    return result


def fast(expr):
    """The float evaluator of ``expr``: call it with keyword arguments by CLI symbol name
    (``N=..., M=...``; other symcomm symbols are ignored), scalars or numpy arrays."""
    from .numeric import evaluator

    return evaluator(expr).float


def plain(number: sp.Expr) -> int | float:
    """An exact integer stays a Python int (any size); anything else becomes a float."""
    if type(number) is int or type(number) is Fraction:
        return plain_exact(number)        # the one rule, SymPy-free (the primitives' fast path reads it too)
    if isinstance(number, sp.Integer):
        return int(number)
    if isinstance(number, sp.Rational):       # correctly rounded, as float() of SymPy's Rational
        return plain(Fraction(int(number.p), int(number.q)))
    number = sp.sympify(number, strict=True)
    if number.is_Integer:
        return int(number)
    if number.is_number:
        if number.is_integer:
            return int(number)
        value = float(number)
        if not math.isfinite(value):
            raise InputError(f"a result ({'infinite' if number.is_infinite else 'beyond the float range'}) "
                             "cannot be shown; give smaller values")
        return value
    raise ValueError(f"not a number: {number} (a symbol has no value: {sorted(map(str, number.free_symbols))})")
