"""⌈log₂⌉, log₂ and the set bits below n, exact on integers (Python ints, int and object arrays).

Both arithmetics of :mod:`symcomm.numbers.numeric` use them: the float code calls :func:`ones_below`
(:mod:`symcomm.numbers.codeprint`), the exact arithmetic evaluates every logarithm node with the
function :data:`_LOGARITHMS` gives it (:mod:`symcomm.numbers.rational`).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from sympy.codegen.cfunctions import log2

from ..core import symbols as S


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
