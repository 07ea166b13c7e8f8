"""The operations exact scalar code runs on: Python ``int`` and ``fractions.Fraction`` only, no SymPy.

Two callers run code made of these: :mod:`symcomm.numbers.exactcode` (an expression printed and compiled in the
process) and the primitives' generated module (:mod:`symcomm.training.primitive_data`, printed once by
``python -m symcomm.tools.codegen`` and imported, so ``symcomm eval all_reduce ...`` starts without SymPy).
Every operation is exact or raises :class:`NotExact` (the caller then evaluates with SymPy instead): a quotient
is an ``int`` when it divides, else a ``Fraction``; log₂ of a value that is not a power of two, ⌈log₂⌉ of a
value that is not whole, a Piecewise with no branch taken, a division by zero all raise.
"""

from __future__ import annotations

from fractions import Fraction

from ..base.bits import ones_below_int
from ..base.errors import InputError


class NotExact(ArithmeticError):
    """This expression or this point has no exact value here: evaluate it with SymPy instead."""


def _div(a, b):
    if type(a) is int and type(b) is int:
        if b == 0:
            raise NotExact("division by zero")
        return a // b if a % b == 0 else Fraction(a, b)
    if b == 0:
        raise NotExact("division by zero")
    out = Fraction(a) / b
    return out.numerator if out.denominator == 1 else out


def _by_zero():
    # the printed code's quotient (exactcode._ExactPrinter._quotient) by zero: _div's refusal, in its words
    raise NotExact("division by zero")


def _whole(x) -> int:
    if type(x) is int:
        return x
    if isinstance(x, Fraction) and x.denominator == 1:
        return x.numerator
    raise NotExact(f"{x} is not a whole number")


def _log2(x) -> int:
    n = _whole(x)
    if n < 1 or n & (n - 1):
        raise NotExact(f"log2({x}) is not a whole number")
    return n.bit_length() - 1


def _ceil_log2(x) -> int:
    n = _whole(x)
    if n < 1:
        raise NotExact(f"ceil(log2({x})) needs n >= 1")
    return (n - 1).bit_length()


def _ones_below(x) -> int:
    return ones_below_int(_whole(x))


def _pow(base, exp):
    e = _whole(exp)
    return base ** e if e >= 0 else _div(1, base ** -e)


def _no_branch():
    raise NotExact("no branch of a Piecewise holds")


def _floor(x):
    return x // 1


def _ceiling(x):
    return -((-x) // 1)


class _Unusable:
    """A common subexpression with no exact value at this point (kept, not raised: its branch may not be
    taken); any use of it raises :class:`NotExact`, as computing it inside its branch would have."""

    __slots__ = ("why",)

    def __init__(self, why: BaseException):
        self.why = why

    def _refuse(self, *_):
        raise NotExact(f"no exact value: {self.why}")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _refuse
    __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __pow__ = __rpow__ = __neg__ = __pos__ = _refuse
    __abs__ = __lt__ = __le__ = __gt__ = __ge__ = __eq__ = __ne__ = __bool__ = __index__ = __int__ = _refuse
    __float__ = __hash__ = _refuse


#: what computing a hoisted subexpression may raise where the expression alone would (exactcode.at_many's refusals)
_CANNOT = (ArithmeticError, TypeError, ValueError, NameError)

#: the names printed exact code calls (symcomm.numbers.exactcode prints them; the generated modules import them)
HELPERS = {"_div": _div, "_by_zero": _by_zero, "_F": Fraction, "_log2": _log2, "_ceil_log2": _ceil_log2,
           "_ones_below": _ones_below, "_pow": _pow, "_no_branch": _no_branch, "_floor": _floor, "_ceiling": _ceiling,
           "_Unusable": _Unusable, "_CANNOT": _CANNOT}


def checked(value):
    """An exact result as the answers hold it: an ``int`` when whole, else a ``Fraction``; NotExact otherwise
    (a truth value, a float)."""
    if type(value) is int:
        return value
    if type(value) is Fraction:
        return value.numerator if value.denominator == 1 else value
    raise NotExact(f"not an exact number: {type(value).__name__}")


def plain_exact(number):
    """An exact number as an answer shows it: an ``int`` stays an int (any size), a ``Fraction`` becomes an int
    when whole, else the float nearest it (correctly rounded); beyond the float range, refused."""
    if type(number) is int:
        return number
    if number.denominator == 1:
        return number.numerator
    try:
        return float(number)
    except OverflowError:
        raise InputError("a result (beyond the float range) cannot be shown; give smaller values") from None


def summed_time(positions, counts, weights: list, den: int, legs_at=None):
    """Σ count × constant as an answer shows it, by position: ``positions`` each count's constant's index in
    ``weights`` (each constant × ``den``, the lcm of their denominators); ``counts`` ints or Fractions (the compiled
    exact code's).  One numerator over one denominator in Python ints, reduced once at the end (no gcd per term);
    an int when whole, else the correctly rounded float of the quotient (:func:`plain_exact`'s rule and refusal).
    ``legs_at``: the positions of β's and β_inter's constants, where ``counts`` goes on after the positions' counts
    with the elements (a, b) of each pair of legs that run at once (``Cost.overlapped``): min(a·β, b·β_inter) is
    taken off each.  Read by the sheet (``training/sheet.py``) and the generated path (``training/hybridfast.py``)
    alike."""
    if legs_at is not None and len(counts) > len(positions):
        return shown_quotient(*less_legs(positions, counts, weights, den, legs_at))
    num = 0
    for at, count in zip(positions, counts):
        if type(count) is not int:
            break
        num += count * weights[at]
    else:       # whole counts (the common case): one numerator over den
        return shown_quotient(num, den)
    return shown_quotient(*_linear_fraction(positions, counts, weights, den))


def _linear_fraction(positions, counts, weights: list, den: int) -> tuple[int, int]:
    """Σ count × weight / den as (numerator, denominator) in Python ints, the counts ints or Fractions."""
    num, bottom = 0, 1
    for at, count in zip(positions, counts):
        if type(count) is int:
            num += count * weights[at] * bottom
        else:
            num = num * count.denominator + count.numerator * weights[at] * bottom
            bottom *= count.denominator
    return num, bottom * den


def less_legs(positions, counts, weights: list, den: int, legs_at) -> tuple[int, int]:
    """Σ count × weight / den over ``positions``, less min(a·β, b·β_inter) for each pair (a, b) of legs that follows
    the positions' counts in ``counts``, exactly, as (numerator, denominator) (:func:`summed_time`)."""
    legs = [Fraction(x) for x in counts[len(positions):]]
    total = Fraction(*_linear_fraction(positions, counts, weights, den))
    total -= faster_legs(legs, weights[legs_at[0]], weights[legs_at[1]]) / den
    return total.numerator, total.denominator


def faster_legs(legs, beta, inter):
    """Σ min(a·beta, b·inter) over the pairs (a, b) that ``legs`` lists one after another: the faster leg of each
    pair of legs that run at once, which a linear sum of both counted (``Cost.concurrent``)."""
    return sum((min(legs[i] * beta, legs[i + 1] * inter) for i in range(0, len(legs) - 1, 2)), 0)


def shown_quotient(num: int, bottom: int):
    """num / bottom as an answer shows it: an int when whole, else the correctly rounded float of the quotient."""
    if num % bottom == 0:
        return num // bottom
    try:
        return num / bottom
    except OverflowError:
        return plain_exact(Fraction(num, bottom))
