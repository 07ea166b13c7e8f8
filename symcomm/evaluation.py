"""Evaluating an expression: the one place every front end goes through.

Two paths, named for what they give:

* :func:`exact` — one point, SymPy's exact arithmetic: integers stay integers at any size
  and log₂ of a power of two is its exponent (the CLI's ``eval``, the measurement's
  predictions, the proofs' spot checks).
* :func:`fast` — floats, compiled once per expression (:mod:`symcomm.numeric`): plain Python
  for scalar arguments, numpy for arrays (the plots, the step model's figures, the planner's
  option combinations that have no generated kernel).  It never guesses: integer arrays are
  computed in float64 here, and exact array arithmetic is asked for explicitly with
  ``symcomm.numeric.evaluator(expr)(..., exact=True)``.
"""

from __future__ import annotations

import math

import sympy as sp

from .errors import InputError


def exact(expr, values: dict) -> sp.Expr:
    """expr with ``values`` substituted, reduced to an exact number where possible."""
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
