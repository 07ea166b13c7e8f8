"""Whole-number functions the formulas name, computed on Python integers without SymPy: one definition for
the symbol that prints them (:class:`symcomm.core.symbols.OnesBelow`) and the exact code that evaluates them
(:mod:`symcomm.numbers.exactops`)."""

from __future__ import annotations


def ones_below_int(n: int) -> int:
    """Σ popcount(b) for b = 0 … n − 1, exactly: bit j is set in ⌊n/2^(j+1)⌋·2^j of them, plus
    max(0, n mod 2^(j+1) − 2^j) in the last, partial period."""
    total, j = 0, 0
    while (1 << j) < n:
        period = 1 << (j + 1)
        total += (n // period) * (1 << j) + max(0, n % period - (1 << j))
        j += 1
    return total
