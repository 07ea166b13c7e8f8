"""Fast numbers: compiled evaluators of any symcomm expression.

``evaluator(expr)`` returns an :class:`Evaluator`, built once per expression (cached).  It takes
keyword arguments by CLI symbol name (``Phi``, ``N``, ``alpha``...), and every argument
broadcasts: scalars and numpy arrays mix, so a sweep over 10⁷ configurations is one call::

    ring = evaluator(algorithm("all_reduce", "ring").cost.time)
    ring.float(N=np.arange(2, 10**7 + 2), M=2**30, alpha=5e-6, beta=1e-11, gamma=0.0)

Two arithmetics (the rule, stated once):

* **float** (:meth:`Evaluator.float`, what :func:`symcomm.numbers.evaluation.fast` returns) — every input is
  taken as float64.  The code is printed from the expression once per expression and kind of call,
  common subexpressions computed once (:func:`function_source`): with scalar arguments only, plain
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

⌈log₂ n⌉ (:class:`symcomm.core.symbols.CeilLog2`) is exact for integers in both arithmetics
((n − 1).bit_length(), vectorised: :func:`ceil_log2`), and log₂ of a power of two is its
exponent (:func:`exact_log2`).
"""

from __future__ import annotations

import functools
import itertools
import keyword
import math
import re
from fractions import Fraction
from typing import Callable, Mapping

import numpy as np
import sympy as sp
from sympy.codegen.cfunctions import log2
from sympy.printing.numpy import NumPyPrinter
from sympy.printing.pycode import PythonCodePrinter

from ..core import symbols as S

#: A bound below this guarantees int64 arithmetic on the expanded polynomial is safe.
INT64_SAFE = 2.0 ** 62


# -- exact ⌈log₂⌉ and log₂ for numpy arrays ---------------------------------------------------

def ceil_log2(x):
    """⌈log₂ x⌉; exact for integers (Python ints, int and object arrays), float64 otherwise."""
    arr = np.asarray(x)
    if arr.dtype == object:
        out = np.vectorize(_ceil_log2_scalar, otypes=[object])(arr)
        return out if out.ndim else out[()]
    if np.issubdtype(arr.dtype, np.integer):
        n = arr.astype(np.int64)
        # start from the float estimate, then correct by exact integer comparisons
        guess = np.ceil(np.log2(np.maximum(n, 1).astype(np.float64))).astype(np.int64)
        guess = np.clip(guess, 0, 62)
        low = np.left_shift(np.int64(1), np.maximum(guess - 1, 0))
        guess = np.where((guess > 0) & (low >= n), guess - 1, guess)       # 2^(g−1) ≥ n: too big
        high = np.left_shift(np.int64(1), guess)
        guess = np.where(high < n, guess + 1, guess)                      # 2^g < n: too small
        return guess if guess.ndim else guess[()]
    return np.ceil(np.log2(arr))


def _ceil_log2_scalar(x):
    x = Fraction(x)
    if x.denominator == 1:
        n = int(x)
        return (n - 1).bit_length() if n >= 1 else math.ceil(math.log2(n))
    return math.ceil(math.log2(x))


def exact_log2(x):
    """log₂ x: the exponent (an integer) for powers of two, float64 otherwise."""
    arr = np.asarray(x)
    if arr.dtype == object or np.issubdtype(arr.dtype, np.integer):
        n = arr.astype(object) if arr.dtype == object else arr
        flat = [_log2_scalar(v) for v in np.ravel(n)]
        if all(isinstance(v, int) for v in flat):
            out = np.array(flat, dtype=object if arr.dtype == object else np.int64).reshape(arr.shape)
        else:
            out = np.array([float(v) for v in flat]).reshape(arr.shape)
        return out if out.ndim else out[()]
    return np.log2(arr)


def _log2_scalar(x):
    x = Fraction(x)
    if x.denominator == 1 and x > 0 and not int(x) & (int(x) - 1):
        return int(x).bit_length() - 1
    return math.log2(x)


def ones_below(x):
    """Σ popcount(b), b < x (:class:`symcomm.core.symbols.OnesBelow`): exact for whole numbers, an
    int64 array for an integer array, a float array (rounded) for floats."""
    arr = np.asarray(x)
    if arr.dtype == object or np.issubdtype(arr.dtype, np.integer):
        flat = [S.ones_below_int(int(v)) for v in np.ravel(arr)]
        out = np.array(flat, dtype=object if arr.dtype == object else np.int64).reshape(arr.shape)
    else:
        out = np.array([float(S.ones_below_int(int(round(v)))) for v in np.ravel(arr)]).reshape(arr.shape)
    return out if out.ndim else out[()]


#: the vectorised exact function of each logarithm node (the exact arithmetic's atoms)
_LOGARITHMS = {S.CeilLog2: ceil_log2, log2: exact_log2, S.OnesBelow: ones_below}


# -- float code: one source per expression, CSE'd, printed for math (scalars) or numpy (arrays) ----


def _nested_cases(printer, expr, otherwise: str, case) -> str:
    """A Piecewise as nested cases, last first: ``case(value, condition, rest)`` joins one branch to
    the rest; a true condition ends the chain; no branch taken gives ``otherwise``."""
    out = otherwise
    for value, cond in reversed(expr.args):
        if cond is sp.true or cond == True:  # noqa: E712
            out = printer._print(value)
        else:
            out = case(printer._print(value), printer._print(cond), out)
    return out

class _MathPrinter(PythonCodePrinter):
    """Plain Python on floats: ``math`` functions, Piecewise as ``a if cond else b`` (only the branch taken
    runs), Max and Min as ``max``/``min``."""

    ceil_log2_function = "_ceil_log2_float"
    ones_below_function = "_ones_below_float"

    def _print_log2(self, expr):
        return f"_log2_float({self._print(expr.args[0])})"

    def _print_Piecewise(self, expr):
        return _nested_cases(self, expr, "nan", lambda value, cond, rest: f"({value} if {cond} else {rest})")


class _ArrayPrinter(NumPyPrinter):
    """numpy code for arrays.  Piecewise is nested ``numpy.where``, Max/Min nested ``numpy.maximum``/
    ``numpy.minimum``.  When ``arrays`` (the symbols that hold arrays) is known, every product puts its
    scalar factors first (one scalar, computed once) and every sum merges the terms that share their array
    part: (2β + γ)·M/N costs two array operations, not four."""

    ones_below_function = "_ones_below"

    def __init__(self, arrays=None):
        super().__init__({"fully_qualified_modules": True, "inline": True, "allow_unknown_functions": False,
                          "order": "none"})
        self._arrays = arrays

    def _print_CeilLog2(self, expr):
        arg = self._print(expr.args[0])
        return f"numpy.ceil(numpy.log2({arg}))"

    def _print_log2(self, expr):
        return f"numpy.log2({self._print(expr.args[0])})"

    def _print_Piecewise(self, expr):
        return _nested_cases(self, expr, "numpy.nan", lambda value, cond, rest: f"numpy.where({cond}, {value}, {rest})")

    def _fold(self, name, args):
        out = self._print(args[0])
        for arg in args[1:]:
            out = f"numpy.{name}({out}, {self._print(arg)})"
        return out

    def _print_Max(self, expr):
        return self._fold("maximum", expr.args)

    def _print_Min(self, expr):
        return self._fold("minimum", expr.args)

    def _is_array(self, expr) -> bool:
        return self._arrays is None or bool(expr.free_symbols & self._arrays)

    def _split(self, mul):
        scalars, arrays = [], []
        for arg in mul.args:
            (arrays if self._is_array(arg) else scalars).append(arg)
        return scalars, arrays

    def _array_product(self, factors, coef=sp.Integer(1)) -> str:
        """coef · Π factors, ordered so that numpy reuses its temporaries: the compound factors first (each
        makes a new array, which the scalar and the named arrays then multiply in place), the divisions last."""
        num, den = [], []
        for f in factors:
            if f.is_Pow and f.exp.is_Rational and f.exp.is_negative:
                den.append(f.base if f.exp == -1 else sp.Pow(f.base, -f.exp, evaluate=False))
            else:
                num.append(f)
        compound = [f for f in num if not f.is_Symbol]
        named = [f for f in num if f.is_Symbol]
        pieces = [self.parenthesize(f, 50) for f in compound]
        if coef == -1:
            pieces.insert(0, "(-1)")
        elif coef != 1:
            pieces.append(f"({self._print(coef)})")
        pieces += [self._print(f) for f in named]
        text = "*".join(pieces) if pieces else "1.0"
        for f in den:
            text += "/" + self.parenthesize(f, 51)
        return text

    def _print_Mul(self, expr):
        if self._arrays is None or not self._is_array(expr):
            return super()._print_Mul(expr)
        scalars, arrays = self._split(expr)
        if not scalars and len(arrays) == 1:
            return super()._print_Mul(expr)
        return self._array_product(arrays, sp.Mul(*scalars))

    def _print_Add(self, expr, order=None):
        if self._arrays is None or not self._is_array(expr):
            return super()._print_Add(expr, order="none")
        scalar_terms, groups = [], {}
        for term in expr.args:
            if not self._is_array(term):
                scalar_terms.append(term)
                continue
            coef, parts = self._split(term) if term.is_Mul else ([], [term])
            groups.setdefault(tuple(parts), []).append(sp.Mul(*coef))
        pieces = []
        if scalar_terms:
            pieces.append(f"({self._print(sp.Add(*scalar_terms))})")
        for parts, coefs in groups.items():
            text = self._array_product(parts, sp.Add(*coefs))
            pieces.append(text if len(parts) == 1 and parts[0].is_Symbol and text == str(parts[0]) else f"({text})")
        return " + ".join(pieces)


_HELPERS = {"_ceil_log2_float": lambda x: float(math.ceil(math.log2(x))),
            "_log2_float": math.log2,
            "_ones_below_float": lambda x: float(S.ones_below_int(int(round(x)))),
            "_ones_below": ones_below, "math": math, "numpy": np, "nan": math.nan}


#: expressions of more nodes than this are not factored (sympy.factor_terms costs seconds on a step model;
#: the gain is in the small formulas swept over millions of points)
ARRANGE_NODES = 400


def _arrange(expr: sp.Expr) -> sp.Expr:
    """The same value with common factors pulled out of sums ((N−1)·(2α + …)): fewer operations."""
    if not isinstance(expr, sp.Basic) or expr.is_Atom:
        return expr
    nodes = 0
    for _ in sp.preorder_traversal(expr):
        nodes += 1
        if nodes > ARRANGE_NODES:
            return expr
    return sp.factor_terms(expr)


def _over_denominators(expr, arrays: set, seen: dict | None = None):
    """The same value with the terms of a sum that share an array denominator over it once:
    a/(p·t) + b/(p·t) → (a + b)/(p·t), one array division instead of one per term."""
    seen = {} if seen is None else seen
    if expr.is_Atom or not expr.free_symbols & arrays:
        return expr
    if expr in seen:
        return seen[expr]
    args = tuple(_over_denominators(a, arrays, seen) for a in expr.args)
    out = expr.func(*args) if args != expr.args else expr
    if out.is_Add:
        groups: dict = {}
        for term in out.args:
            den = sp.Mul(*[f.base ** -f.exp for f in sp.Mul.make_args(term)
                           if f.is_Pow and f.exp.is_Rational and f.exp.is_negative and f.free_symbols & arrays])
            groups.setdefault(den, []).append(term)
        if any(den != 1 and len(terms) > 1 for den, terms in groups.items()):
            parts = []
            for den, terms in groups.items():
                if den == 1 or len(terms) == 1:
                    parts += terms
                else:
                    parts.append(sp.Mul(sp.Add(*[t * den for t in terms]),
                                        sp.Pow(den, -1), evaluate=False))
            out = sp.Add(*parts)
    seen[expr] = out
    return out


def function_source(name: str, exprs, symbols: tuple, params: tuple, *, target: str, arrays=None,
                    arrange: bool = True) -> str:
    """Python source of ``def name(params): ... return (values)``: the expressions ``exprs`` of
    ``symbols`` (passed as ``params``, in order), common subexpressions computed once.

    ``target="math"``: plain Python on floats (scalars); ``"numpy"``: numpy on arrays, where ``arrays``
    (a set of symbols, None = any) tells which inputs are arrays, so that scalar work is done once.
    The code uses ``math``, ``numpy``, ``nan`` and the helpers of :data:`_HELPERS` only."""
    exprs = [sp.sympify(e) for e in exprs]
    if arrange and target == "numpy":
        exprs = [_arrange(e) for e in exprs]
    if target == "numpy" and arrays:
        exprs = [_over_denominators(e, set(arrays)) for e in exprs]
    local = {sym: sp.Symbol(param) if sym.name != param else sym for sym, param in zip(symbols, params)}
    renamed = {sym: new for sym, new in local.items() if new is not sym}
    if renamed:
        exprs = [e.xreplace(renamed) for e in exprs]
    taken = {str(p) for p in params}
    temps = (sp.Symbol(f"x{i}") for i in itertools.count() if f"x{i}" not in taken)
    replacements, reduced = sp.cse(exprs, symbols=temps, optimizations=None, order="none")
    if target == "math":
        printer = _MathPrinter({"fully_qualified_modules": True, "inline": True, "allow_unknown_functions": False,
                                "order": "none"})
        array_set = None
    else:
        array_set = None if arrays is None else {local[s] for s in arrays if s in local}
        printer = _ArrayPrinter(array_set)
    assigned = []
    for temp, value in replacements:
        if array_set is not None and value.free_symbols & array_set:
            array_set.add(temp)
        assigned.append([str(temp), printer.doprint(value)])
    values = [printer.doprint(r) for r in reduced]
    assigned, values = _inline_single_uses(assigned, values)
    lines = [f"def {name}({', '.join(params)}):"] + [f"    {temp} = {text}" for temp, text in assigned]
    lines.append(f"    return {values[0]}" if len(values) == 1 else f"    return ({', '.join(values)},)")
    return "\n".join(lines) + "\n"


def _inline_single_uses(assigned: list, values: list) -> tuple[list, list]:
    """Put back into its one use a temporary that the printer's grouping left with a single use: a named
    temporary array cannot be reused in place by numpy, an inline one can."""
    words = re.compile(r"\b(x\d+)\b")
    while True:
        uses: dict = {}
        for text in [t for _, t in assigned] + values:
            for word in words.findall(text):
                uses[word] = uses.get(word, 0) + 1
        single = next((i for i, (temp, _) in enumerate(assigned) if uses.get(temp, 0) == 1), None)
        if single is None:
            return assigned, values
        temp, text = assigned.pop(single)
        pattern = re.compile(rf"\b{temp}\b")
        assigned = [[t, pattern.sub(lambda _m: f"({text})", v)] for t, v in assigned]
        values = [pattern.sub(lambda _m: f"({text})", v) for v in values]


def _compile(source: str, name: str) -> Callable:
    namespace = dict(_HELPERS)
    exec(compile(source, f"<symcomm.numbers.numeric {name}>", "exec"), namespace)   # source printed from SymPy above
    return namespace[name]


# -- the evaluator -------------------------------------------------------------------------------

def _cli_name(sym: sp.Symbol) -> str:
    info = S.BY_SYMBOL.get(sym)
    return info.cli_name if info is not None else sym.name


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

    __slots__ = ("expr", "names", "_symbols", "_params", "_scalar", "_arrays", "_exact", "_known", "_exprs")

    def __init__(self, expr: sp.Expr, symbols: tuple, exprs: tuple | None = None):
        self.expr = expr
        self._exprs = [expr] if exprs is None else list(exprs)      # several: float() returns a tuple
        self._symbols = symbols
        self.names = tuple(_cli_name(x) for x in symbols)
        self._params = tuple(_param(n, i) for i, n in enumerate(self.names))
        self._known = frozenset(self.names)
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
            self._arguments(values)                      # names what is missing or unknown
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
        source = function_source("scalar", self._exprs, self._symbols, self._params, target="math")
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
        return function_source("scalar", self._exprs, self._symbols, self._params, target="math")

    def _arguments(self, values: Mapping[str, object]) -> list:
        known = self._known
        unknown = [name for name in values if name not in known and name not in S.SYMBOLS]
        if unknown:
            raise ValueError(f"unknown symbol {unknown[0]!r}; this expression takes {', '.join(self.names) or 'nothing'}")
        missing = [name for name in self.names if name not in values]
        if missing:
            raise ValueError(f"missing {', '.join(missing)}: this expression needs {', '.join(self.names)}")
        return [values[name] for name in self.names]


@functools.lru_cache(maxsize=4096)
def _build(expr: sp.Expr) -> Evaluator:
    symbols = tuple(sorted(expr.free_symbols, key=lambda x: _cli_name(x)))
    return Evaluator(expr, symbols)


def evaluator(expr) -> Evaluator:
    """The cached evaluator of ``expr`` (any SymPy expression or number)."""
    return _build(sp.sympify(expr, strict=True))


@functools.lru_cache(maxsize=256)
def _build_bundle(exprs: tuple) -> Evaluator:
    symbols = tuple(sorted(set().union(*(e.free_symbols for e in exprs)), key=_cli_name))
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
