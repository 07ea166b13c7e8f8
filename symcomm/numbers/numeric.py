"""Fast numbers: compiled evaluators of any symcomm expression.

``evaluator(expr)`` returns an :class:`Evaluator`, built once per expression (cached).  It takes
keyword arguments by CLI symbol name (``Phi``, ``N``, ``alpha``...), and every argument
broadcasts: scalars and numpy arrays mix, so a sweep over 10⁷ configurations is one call::

    ring = evaluator(algorithm("all_reduce", "ring").cost.time)
    ring.float(N=np.arange(2, 10**7 + 2), M=2**30, alpha=5e-6, beta=1e-11, gamma=0.0)

Two arithmetics (the rule, stated once):

* **float** (:meth:`Evaluator.float`, what :func:`symcomm.numbers.evaluation.fast` returns) — every input is
  taken as float64.  The code is printed from the expression once per expression and kind of call,
  common subexpressions computed once (:func:`symcomm.numbers.codeprint.function_source`): with scalar arguments only, plain
  Python on floats (``math``; Piecewise as ``a if cond else b``, so only the branch taken runs;
  a division by zero or an overflow falls back to numpy's inf and nan); with arrays, numpy, one
  variant per set of array arguments, in which the scalar work is done once, terms sharing their
  array part or an array denominator are merged, small formulas are factored (``sympy.factor_terms``)
  and Piecewise is ``numpy.where``.  Precision is float64's.
* **exact** — when asked for (``exact=True``), or by default when every argument is a scalar whole
  number or fraction (Python int, ``fractions.Fraction``, SymPy Rational: one exact point, as the
  CLI's ``eval``).  Integer *arrays* take the float path unless ``exact=True`` is given.  The
  expression is written as numerator / denominator, two polynomials with integer
  coefficients in expanded form (Piecewise, ⌈log₂⌉, floor, ceiling, Max, Min are
  evaluated first, exactly, and enter as numbers).  Before a polynomial is evaluated in
  int64, a float64 bound Σ|c|·|x|^e of its expanded monomials is computed; every partial
  product and partial sum in int64 is at most that bound, so if the bound is below 2⁶² for
  every element the int64 evaluation cannot overflow.  Otherwise the polynomial is
  evaluated on Python integers (object arrays) — slower, exact at any size.  The result
  is an integer wherever the denominator divides the numerator (int64 when it fits, else
  Python ints in an object array; a scalar call returns a Python int), and the correctly
  rounded float of numerator/denominator elsewhere, as :func:`symcomm.numbers.evaluation.plain` does.

The code is compiled in the process from SymPy expressions (never from text a user gave, never
loaded from disk).  :func:`bundle` compiles several expressions into one function.  The planner's
kernels are not compiled here: they are graphs run by :mod:`symcomm.numbers.kernels`.

The evaluator is here; the float code is printed and compiled by :mod:`symcomm.numbers.codeprint`, the
exact arithmetic is :mod:`symcomm.numbers.rational`, and the exact logarithms both use are
:mod:`symcomm.numbers.logarithms`.

⌈log₂ n⌉ (:class:`symcomm.core.symbols.CeilLog2`) is exact for integers in both arithmetics
((n − 1).bit_length(), vectorised: :func:`symcomm.numbers.logarithms.ceil_log2`), and log₂ of a power of two is its
exponent (:func:`symcomm.numbers.logarithms.exact_log2`).
"""

from __future__ import annotations

import functools
import keyword
import re
from fractions import Fraction
from typing import Callable, Mapping

import numpy as np
import sympy as sp

from ..core import symbols as S
from ..core.rewrite import free_symbols
from .codeprint import _HELPERS, _compile, function_source
from .rational import _Exact, _cli_name, _finish, _is_float


# -- the evaluator -------------------------------------------------------------------------------

def _param(name: str, i: int) -> str:
    return name if name.isidentifier() and not keyword.iskeyword(name) and name not in _HELPERS \
        and not re.fullmatch(r"x\d+", name) else f"_a{i}"


#: scalar types the float path takes as they are (anything else that is not an array: float())
_SCALARS = (float, int, bool, np.float64, np.float32, np.int64, np.int32, np.int16, np.int8, np.uint64,
            np.uint32, np.uint16, np.uint8, np.bool_)


class Evaluator:
    """A compiled expression: call it with keyword arguments by CLI symbol name.

    ``names`` are the arguments it needs, in a fixed order.  Arguments it does not use are
    accepted when they are symcomm symbols (so one dict can feed several evaluators).

    The float arithmetic (:meth:`float`) has two compiled forms, each built on first use: plain
    Python (``math``) when every argument is a scalar, numpy when any is an array (one variant per
    set of array arguments: scalar work is done once, then the array operations).  The exact
    arithmetic runs only when asked for (``exact=True``) or when every argument is a whole number or
    a fraction given as a scalar (one exact point, as the CLI's ``eval``); integer arrays are
    computed in float64 unless ``exact=True``.
    """

    __slots__ = ("expr", "names", "_symbols", "_params", "_scalar", "_arrays", "_exact", "_known", "_exprs",
                 "_checked_names", "_merge")

    def __init__(self, expr: sp.Expr, symbols: tuple, exprs: tuple | None = None):
        self.expr = expr
        self._exprs = [expr] if exprs is None else list(exprs)      # several: float() returns a tuple
        # a bundle (the step model's quantities) regroups its sums for plain Python (codeprint.merged_branches)
        self._merge = exprs is not None
        self._symbols = symbols
        self.names = tuple(_cli_name(x) for x in symbols)
        self._params = tuple(_param(n, i) for i, n in enumerate(self.names))
        self._known = frozenset(self.names)
        #: the argument names (in order) a call gave that were checked once: every name known, none missing
        self._checked_names: set = set()
        self._scalar = None
        self._arrays: dict = {}
        self._exact = _Exact(expr, symbols)

    def __call__(self, exact: bool | None = None, **values):
        args = self._arguments(values)
        if exact is None:
            exact = all(np.ndim(value) == 0 and not _is_float(value) for value in args)
        if not exact:
            return self.float(**values)
        if len(self._exprs) > 1:
            raise ValueError("a bundle of expressions has the float arithmetic only")
        if any(_is_float(value) for value in args):
            raise ValueError("exact=True needs integer or fraction inputs; got a float for "
                             + ", ".join(n for n, v in zip(self.names, args) if _is_float(v)))
        scalar = all(np.ndim(value) == 0 for value in args)
        num, den = self._exact.fraction_at(dict(zip(self.names, args)))
        return _finish(num, den, scalar)

    def float(self, **values):
        """The float64 arithmetic, whatever the inputs: a Python float for scalar arguments, a
        numpy array when any argument is an array."""
        if len(values) != len(self.names):
            # more names than it reads (one dict feeding several evaluators, the step model's constants): the
            # same names, in the same order, checked once (_arguments names what is missing or unknown)
            given = tuple(values)
            if given not in self._checked_names:
                self._arguments(values)
                if len(self._checked_names) >= 64:
                    self._checked_names.clear()
                self._checked_names.add(given)
        try:
            args = [values[name] for name in self.names]
        except KeyError:
            self._arguments(values)
            raise
        for value in args:
            if type(value) not in _SCALARS:
                break
        else:
            function = self._scalar or self._build_scalar()
            try:
                return function(*[v if type(v) is float else float(v) for v in args])
            except (ArithmeticError, ValueError):
                pass                                     # 1/0, overflow, log of 0: numpy's inf and nan
        return self._array_call(args)

    def float_at(self, values: Mapping[str, object]) -> object:
        """:meth:`float` at a mapping of Python scalars (ints, floats), for an engine caller that binds the same
        known names on every call (the step report): its float arithmetic without the keyword expansion, the
        names' check or the pass for arrays; the names it does not read are ignored, unchecked."""
        try:
            args = [float(values[name]) for name in self.names]
        except KeyError:
            self._arguments(values)      # names what is missing
            raise
        function = self._scalar or self._build_scalar()
        try:
            return function(*args)
        except (ArithmeticError, ValueError):
            return self._array_call(args)    # 1/0, overflow, log of 0: numpy's inf and nan, as float() gives them

    def _array_call(self, args):
        floats, key = [], []
        for value in args:
            if isinstance(value, np.ndarray):
                floats.append(value if value.dtype == np.float64 else value.astype(np.float64))
                key.append(value.ndim > 0)
            elif isinstance(value, _SCALARS) or isinstance(value, (sp.Basic, Fraction)):
                floats.append(float(value))
                key.append(False)
            else:
                arr = np.asarray(value, dtype=np.float64)
                floats.append(arr)
                key.append(arr.ndim > 0)
        key = tuple(key)
        if not any(key):
            # scalars only (1/0, an overflow or log 0 stopped the plain-Python code): numpy's float semantics,
            # inf and nan.  Python floats otherwise: numpy reuses temporaries in place only beside them
            floats = [np.float64(x) for x in floats]
        function = self._arrays.get(key) or self._build_array(key)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return function(*floats)

    def _build_scalar(self):
        source = function_source("scalar", self._exprs, self._symbols, self._params, target="math",
                                 merge=self._merge)
        self._scalar = _compile(source, "scalar")
        return self._scalar

    def _build_array(self, key: tuple):
        arrays = {sym for sym, is_array in zip(self._symbols, key) if is_array}
        source = function_source("arrays", self._exprs, self._symbols, self._params, target="numpy", arrays=arrays)
        function = _compile(source, "arrays")
        self._arrays[key] = function
        return function

    @property
    def source(self) -> str:
        """The numpy code (every argument an array)."""
        return function_source("arrays", self._exprs, self._symbols, self._params, target="numpy",
                               arrays=set(self._symbols))

    def source_for(self, **values) -> str:
        """The code a call with these arguments runs (numpy with these arrays, or plain Python)."""
        args = self._arguments(values)
        arrays = {sym for sym, value in zip(self._symbols, args) if np.ndim(value) > 0}
        if not arrays:
            return self.scalar_source
        return function_source("arrays", self._exprs, self._symbols, self._params, target="numpy", arrays=arrays)

    @property
    def scalar_source(self) -> str:
        return function_source("scalar", self._exprs, self._symbols, self._params, target="math",
                               merge=self._merge)

    def _arguments(self, values: Mapping[str, object]) -> list:
        known = self._known
        unknown = [name for name in values if name not in known and name not in S.SYMBOLS]
        if unknown:
            raise ValueError(f"unknown symbol {unknown[0]!r}; this expression takes {', '.join(self.names) or 'nothing'}")
        missing = [name for name in self.names if name not in values]
        if missing:
            raise ValueError(f"missing {', '.join(missing)}: this expression needs {', '.join(self.names)}")
        return [values[name] for name in self.names]


# the symbols found by core.rewrite.free_symbols, each distinct subtree walked once: SymPy's walks a step model's
# shared Max and Min arguments as often as they are reached (a bundle of one step model's quantities, most of its
# build: 0.19 s of CPU for the published runs' 16 in the docs build)
@functools.lru_cache(maxsize=4096)
def _build(expr: sp.Expr) -> Evaluator:
    symbols = tuple(sorted(free_symbols(expr), key=lambda x: _cli_name(x)))
    return Evaluator(expr, symbols)


def evaluator(expr) -> Evaluator:
    """The cached evaluator of ``expr`` (any SymPy expression or number)."""
    return _build(sp.sympify(expr, strict=True))


@functools.lru_cache(maxsize=256)
def _build_bundle(exprs: tuple) -> Evaluator:
    symbols = tuple(sorted(set().union(*(free_symbols(e) for e in exprs)), key=_cli_name))
    return Evaluator(sp.Tuple(*exprs), symbols, exprs)


def bundle(named: Mapping[str, sp.Expr]) -> Callable[..., dict]:
    """One float evaluator of several expressions, compiled together (their common subexpressions
    computed once): call it with keyword arguments by CLI name; it returns {name: value}."""
    names = tuple(named)
    ev = _build_bundle(tuple(sp.sympify(e, strict=True) for e in named.values()))

    def call(**values) -> dict:
        got = ev.float(**values)
        return dict(zip(names, got if len(names) > 1 else (got,)))
    call.evaluator = ev
    return call


def value_of(expr, exact: bool | None = None, **values):
    """``evaluator(expr)(**values)`` in one call."""
    return evaluator(expr)(exact=exact, **values)
