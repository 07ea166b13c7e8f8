"""The exact arithmetic: an expression as numerator / denominator, two integer polynomials.

Piecewise, ⌈log₂⌉, floor, ceiling, Max, Min and Abs are evaluated first, exactly, and enter as
numbers; each polynomial runs in int64 when a float64 bound of its expanded monomials is below 2⁶²
(:data:`INT64_SAFE`), on Python integers otherwise; :func:`_finish` gives integers where the
denominator divides the numerator and correctly rounded floats elsewhere.  The rule is stated once,
in :mod:`symcomm.numbers.numeric`.
"""

from __future__ import annotations

import functools
from fractions import Fraction
from typing import Callable

import numpy as np
import sympy as sp

from ..core import symbols as S
from .logarithms import _LOGARITHMS

#: A bound below this guarantees int64 arithmetic on the expanded polynomial is safe.
INT64_SAFE = 2.0 ** 62


# -- symbol names: every evaluator takes its arguments by CLI name -------------------------------

def _cli_name(sym: sp.Symbol) -> str:
    info = S.BY_SYMBOL.get(sym)
    return info.cli_name if info is not None else sym.name


# -- input classification -----------------------------------------------------------------------

def _is_float(value) -> bool:
    if isinstance(value, (bool, int, Fraction, np.integer)):
        return False
    if isinstance(value, float):
        return True
    if isinstance(value, sp.Basic):
        return not value.is_Rational
    if isinstance(value, np.ndarray):
        return value.dtype.kind in "fc"
    if isinstance(value, (np.floating,)):
        return True
    return np.asarray(value).dtype.kind in "fc"


def _as_float(value):
    if isinstance(value, np.ndarray):
        return value if value.dtype == np.float64 else value.astype(np.float64)
    if isinstance(value, (sp.Basic, Fraction)):
        return float(value)
    if isinstance(value, (int, float, np.number)):
        return float(value)
    return np.asarray(value, dtype=np.float64)


def _int_array(value):
    """An integer input as int64 (or object of Python ints beyond int64's safe range)."""
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            return value
        if value.dtype.kind in "iub":
            if value.dtype.kind == "u" and value.size and int(value.max()) >= 2 ** 63:
                return value.astype(object)
            return value.astype(np.int64, copy=False)
        raise ValueError(f"not an integer array: dtype {value.dtype}")
    number = int(value)
    if abs(number) >= 2 ** 62:
        return np.array(number, dtype=object)
    return np.array(number, dtype=np.int64)


class _Pair:
    """An exact input already split into (num, den) arrays."""

    def __init__(self, num, den):
        self.num, self.den = num, den


def _split_input(value):
    """(numerator, denominator) arrays of an exact input."""
    if isinstance(value, _Pair):
        return value.num, value.den
    if isinstance(value, (Fraction, sp.Rational)) and not isinstance(value, sp.Integer) and not (
            isinstance(value, Fraction) and value.denominator == 1):
        value = Fraction(int(value.p), int(value.q)) if isinstance(value, sp.Rational) else value
        return _int_array(value.numerator), _int_array(value.denominator)
    if isinstance(value, np.ndarray) and value.dtype == object and value.size and any(
            isinstance(v, Fraction) for v in value.flat):
        fr = np.vectorize(Fraction, otypes=[object])(value)
        return (np.vectorize(lambda x: x.numerator, otypes=[object])(fr),
                np.vectorize(lambda x: x.denominator, otypes=[object])(fr))
    if isinstance(value, sp.Integer):
        value = int(value)
    return _int_array(value), np.array(1, dtype=np.int64)


# -- exact arithmetic: numerator / denominator polynomials ---------------------------------------

_ATOMS = (sp.Piecewise, sp.ceiling, sp.floor, sp.Max, sp.Min, sp.Abs, *_LOGARITHMS)


class _Poly:
    """A polynomial with integer coefficients: int64 evaluation guarded by a float bound."""

    def __init__(self, expr: sp.Expr, symbols: tuple):
        self.symbols = symbols
        expr = sp.expand(expr)
        poly = sp.Poly(expr, *symbols) if symbols else None
        if poly is None or not symbols:
            self.constant = int(expr)
            return
        self.constant = None
        terms = poly.terms()
        bound = sp.Add(*(abs(int(coef)) * sp.Mul(*(x ** k for x, k in zip(symbols, powers)))
                         for powers, coef in terms))
        self._value = sp.lambdify(symbols, expr, modules="numpy", docstring_limit=0)
        self._bound = sp.lambdify(symbols, bound, modules="numpy", docstring_limit=0)

    def __call__(self, args: list):
        if self.constant is not None:
            return np.array(self.constant, dtype=object if abs(self.constant) >= 2 ** 62 else np.int64)
        if all(a.dtype != object for a in args):
            with np.errstate(over="ignore", invalid="ignore"):
                bound = self._bound(*(np.abs(a).astype(np.float64) for a in args))
            if np.all(bound < INT64_SAFE):
                return np.asarray(self._value(*args), dtype=np.int64)
        return np.asarray(self._value(*(a.astype(object) for a in args)), dtype=object)


class _Exact:
    """expr as num/den: atoms (Piecewise, ⌈log₂⌉, Max...) first, then two polynomials."""

    def __init__(self, expr: sp.Expr, symbols: tuple):
        self.expr, self.symbols = expr, symbols
        self._compiled = None

    def _compile(self):
        atoms, replacements = [], {}

        def visit(node):
            if isinstance(node, _ATOMS):
                if node not in replacements:
                    i = len(atoms)
                    n, q = sp.Dummy(f"an{i}", integer=True), sp.Dummy(f"ad{i}", integer=True)
                    replacements[node] = n / q
                    atoms.append((node, n, q, _atom(node)))
                return
            for arg in node.args:
                visit(arg)

        visit(self.expr)
        body = self.expr.xreplace(replacements) if replacements else self.expr
        # every non-integer input x is x_num / x_den
        inputs = []
        split = {}
        for sym in self.symbols:
            if sym.is_integer:
                inputs.append((sym, sym, None))
            else:
                n, q = sp.Dummy(f"{sym.name}_n", integer=True), sp.Dummy(f"{sym.name}_d", integer=True)
                split[sym] = n / q
                inputs.append((sym, n, q))
        body = body.xreplace(split) if split else body
        num, den = sp.fraction(sp.together(body))
        variables = [x for _, n, q in inputs for x in ((n,) if q is None else (n, q))]
        variables += [x for _, n, q, _ in atoms for x in (n, q)]
        variables = tuple(variables)
        self._compiled = (inputs, atoms, variables, _Poly(num, variables), _Poly(den, variables))

    def fraction_at(self, values: dict):
        """(numerator, denominator) arrays at ``values`` (by CLI name)."""
        if self._compiled is None:
            self._compile()
        inputs, atoms, variables, num, den = self._compiled
        env = {}
        by_symbol = {}
        for sym, n, q in inputs:
            pair = _split_input(values[_cli_name(sym)])
            by_symbol[sym] = pair
            env[n] = pair[0]
            if q is not None:
                env[q] = pair[1]
            elif not _all_one(pair[1]):
                raise ValueError(f"{_cli_name(sym)} takes a whole number; got a fraction")
        for node, n, q, fn in atoms:
            env[n], env[q] = fn(by_symbol)
        args = [env[x] for x in variables]
        args = _common(args)
        return num(args), den(args)


def _all_one(arr) -> bool:
    return bool(np.all(arr == 1))


def _common(arrays: list) -> list:
    if any(a.dtype == object for a in arrays):
        return [a.astype(object) for a in arrays]
    return arrays


def _sub_exact(expr) -> "_Exact":
    symbols = tuple(sorted(expr.free_symbols, key=lambda x: _cli_name(x)))
    return _Exact(expr, symbols)


def _atom(node) -> Callable:
    """A function of {symbol: (num, den)} giving the atom's exact (num, den)."""
    if isinstance(node, sp.Piecewise):
        branches = [(_sub_exact(value), _condition(cond)) for value, cond in node.args]

        def piecewise(env):
            nums, dens, conds = [], [], []
            for value, cond in branches:
                ok = cond(env)
                n, q = value.fraction_at(_by_name(value, env))
                nums.append(n), dens.append(q), conds.append(ok)
            nums, dens = _common(nums), _common(dens)
            shape = np.broadcast_shapes(*(np.shape(x) for x in nums + dens + conds))
            conds = [np.broadcast_to(cc, shape) for cc in conds]
            dtype_n = object if nums[0].dtype == object else np.int64
            dtype_q = object if dens[0].dtype == object else np.int64
            return (np.asarray(np.select(conds, [np.broadcast_to(x, shape) for x in nums], default=0), dtype=dtype_n),
                    np.asarray(np.select(conds, [np.broadcast_to(x, shape) for x in dens], default=1), dtype=dtype_q))
        return piecewise
    if isinstance(node, (sp.Max, sp.Min)):
        parts = [_sub_exact(arg) for arg in node.args]
        take_larger = isinstance(node, sp.Max)

        def extreme(env):
            best_n, best_q = parts[0].fraction_at(_by_name(parts[0], env))
            best_n, best_q = _positive_den(best_n, best_q)
            for part in parts[1:]:
                n, q = _positive_den(*part.fraction_at(_by_name(part, env)))
                lhs, rhs = _cross(n, best_q), _cross(best_n, q)
                better = lhs > rhs if take_larger else lhs < rhs
                (best_n, n), (best_q, q) = _common([best_n, n]), _common([best_q, q])
                best_n, best_q = np.where(better, n, best_n), np.where(better, q, best_q)
            return best_n, best_q
        return extreme
    if isinstance(node, (sp.floor, sp.ceiling)):
        inner = _sub_exact(node.args[0])
        up = isinstance(node, sp.ceiling)

        def rounding(env):
            n, q = _positive_den(*inner.fraction_at(_by_name(inner, env)))
            value = -((-n) // q) if up else n // q
            return value, np.ones_like(value)
        return rounding
    if isinstance(node, sp.Abs):
        inner = _sub_exact(node.args[0])

        def absolute(env):
            n, q = _positive_den(*inner.fraction_at(_by_name(inner, env)))
            return np.abs(n), q
        return absolute
    if type(node) in _LOGARITHMS:
        inner = _sub_exact(node.args[0])
        logarithm = _LOGARITHMS[type(node)]

        def func(env):
            n, q = _positive_den(*inner.fraction_at(_by_name(inner, env)))
            if not np.all(q == 1):
                raise ValueError(f"{node} needs a whole number inside the logarithm")
            value = np.asarray(logarithm(n))
            if value.dtype.kind == "f":
                raise ValueError(f"{node.args[0]} must be a power of two for log2 to be exact; "
                                 "pass floats for the float arithmetic")
            return value, np.ones_like(value)
        return func
    raise TypeError(node)


def _by_name(part: _Exact, env: dict) -> dict:
    """Rebuild CLI-name inputs for a sub-expression from (num, den) pairs."""
    out = {}
    for sym in part.symbols:
        n, q = env[sym]
        out[_cli_name(sym)] = _Pair(n, q)
    return out


def _positive_den(n, q):
    neg = q < 0
    if np.any(neg):
        return np.where(neg, -n, n), np.where(neg, -q, q)
    return n, q


def _cross(n, q):
    """n·q without int64 overflow (object arithmetic when the product might not fit)."""
    with np.errstate(over="ignore", invalid="ignore"):
        bound = np.abs(np.asarray(n).astype(np.float64)) * np.abs(np.asarray(q).astype(np.float64))
    if n.dtype == object or q.dtype == object or not np.all(bound < INT64_SAFE):
        return np.asarray(n).astype(object) * np.asarray(q).astype(object)
    return n * q


def _condition(cond) -> Callable:
    """A SymPy boolean as a function of {symbol: (num, den)} → bool array, exactly."""
    if cond is sp.true or cond == True:  # noqa: E712
        return lambda env: np.array(True)
    if cond is sp.false or cond == False:  # noqa: E712
        return lambda env: np.array(False)
    if isinstance(cond, (sp.And, sp.Or)):
        parts = [_condition(arg) for arg in cond.args]
        join = np.logical_and if isinstance(cond, sp.And) else np.logical_or
        return lambda env: functools.reduce(join, (part(env) for part in parts))
    if isinstance(cond, sp.Not):
        inner = _condition(cond.args[0])
        return lambda env: np.logical_not(inner(env))
    if isinstance(cond, sp.core.relational.Relational):
        diff = _sub_exact(cond.lhs - cond.rhs)
        compare = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
                   "==": np.equal, "!=": np.not_equal}[cond.rel_op]

        def relation(env):
            n, q = _positive_den(*diff.fraction_at(_by_name(diff, env)))
            return compare(np.sign(n).astype(np.int64) if n.dtype != object else
                           np.vectorize(lambda x: (x > 0) - (x < 0), otypes=[np.int64])(n), 0)
        return relation
    raise TypeError(f"cannot evaluate the condition {cond} exactly")


def _finish(num, den, scalar: bool):
    """num/den → integers where exact (int64 or Python ints), correctly rounded floats elsewhere."""
    num, den = _positive_den(np.asarray(num), np.asarray(den))
    num, den = np.broadcast_arrays(num, den)
    if np.any(den == 0):
        raise ZeroDivisionError("a denominator is zero at these values")
    if num.dtype == object or den.dtype == object:
        num, den = num.astype(object), den.astype(object)
    whole = np.asarray((num % den) == 0, dtype=bool)
    if np.all(whole):
        value = np.asarray(num // den)
        if value.dtype == object:
            if scalar:
                return int(value[()])
            if all(-2 ** 63 <= int(v) < 2 ** 63 for v in value.flat):
                return value.astype(np.int64)
            return value
        return int(value[()]) if scalar else value
    if scalar:
        return float(Fraction(int(num[()]), int(den[()])))
    if num.dtype == object:
        return np.array([int(a) / int(b) for a, b in zip(num.flat, den.flat)], dtype=np.float64).reshape(num.shape)
    result = num.astype(np.float64) / den.astype(np.float64)
    exact_ints = (num // np.where(den == 0, 1, den))
    return np.where(whole, exact_ints.astype(np.float64), result)
