"""An answer's time, Σ count × constant (× bytes per element but for the per-message α), summed exactly
over one common denominator by training.answers._time: the same number as the definition summed term by term
in Fractions, for whole and fractional counts alike."""

from fractions import Fraction

import sympy as sp
from hypothesis import given, settings, strategies as st

from symcomm.core import symbols as S
from symcomm.training import answers

_COUNT = st.one_of(st.integers(0, 10 ** 12), st.fractions(0, 10 ** 6, max_denominator=10 ** 4))
_CONSTANT = st.fractions(Fraction(1, 10 ** 15), Fraction(1, 10 ** 3), max_denominator=10 ** 15)


# 200: its 43 lines are reached within the first 10 examples (tests/tools/hypothesis_reach.py, 2026-12-02); the rest
# are values: the exact sum is the property, and a denominator slip shows only at some fractions (whole and
# fractional counts, three scales); milliseconds each
@settings(max_examples=200, deadline=None)
@given(counts=st.tuples(_COUNT, _COUNT, _COUNT), constants=st.tuples(_CONSTANT, _CONSTANT, _CONSTANT),
       scale=st.sampled_from([1, 2, 4]))
def test_a_time_summed_over_one_denominator_is_the_definitions_sum(counts, constants, scale):
    symbols = (S.alpha, S.beta, S.gamma)
    coefficients = tuple((sym, sp.Integer(1)) for sym in symbols)      # the counts are handed in evaluated
    times = {sym: sp.Rational(c.numerator, c.denominator) for sym, c in zip(symbols, constants)}
    values = {S.N: sp.Integer(8)}
    got = answers._time(coefficients, answers._numbers(values), values, times, scale, counts)
    # the definition: α counts messages (no bytes per element), β and γ count elements (× scale)
    by_hand = sum(Fraction(count) * constant * (1 if sym == S.alpha else scale)
                  for sym, count, constant in zip(symbols, counts, constants))
    assert got == by_hand and type(got) in (int, Fraction)
    assert type(got) is int or got.denominator != 1          # a whole sum is an int


@settings(max_examples=200, deadline=None)
@given(counts=st.tuples(_COUNT, _COUNT, _COUNT), constants=st.tuples(_CONSTANT, _CONSTANT, _CONSTANT),
       scale=st.sampled_from([1, 2, 4]))
def test_a_time_shown_is_the_float_nearest_the_exact_sum(counts, constants, scale):
    # shown=True (the answer's rows): an int when whole, else the float nearest the exact sum — float() of the
    # Fraction (Fraction.__float__ divides its two ints, correctly rounded), never built up in floats
    symbols = (S.alpha, S.beta, S.gamma)
    coefficients = tuple((sym, sp.Integer(1)) for sym in symbols)
    times = {sym: sp.Rational(c.numerator, c.denominator) for sym, c in zip(symbols, constants)}
    values = {S.N: sp.Integer(8)}
    got = answers._time(coefficients, answers._numbers(values), values, times, scale, counts, shown=True)
    by_hand = sum(Fraction(count) * constant * (1 if sym == S.alpha else scale)
                  for sym, count, constant in zip(symbols, counts, constants))
    assert type(got) is (int if by_hand.denominator == 1 else float)
    assert got == (by_hand.numerator if by_hand.denominator == 1 else float(by_hand))


def test_the_step_models_last_check_refuses_an_infinite_number_and_not_a_large_finite_sum():
    import pytest

    from symcomm.base.errors import InputError
    from symcomm.training.steptime import check_finite

    check_finite({"a": 1e308, "b": 1e308})          # each finite; their sum overflows to inf: nothing refused
    for bad in (float("inf"), float("nan"), -float("inf")):
        with pytest.raises(InputError, match=r"^the step model gives b = (inf|nan|-inf) \(not a finite number\)"):
            check_finite({"a": 1.0, "b": bad, "c": 2.0})
