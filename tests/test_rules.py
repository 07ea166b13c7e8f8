"""symcomm.rules: the one vocabulary of requirements.  Expected values are hand arithmetic from the
definitions (a power of two is 2^k; 2^⌊log₂6⌋ = 4 since 4 ≤ 6 < 8), never read back from the code."""

from __future__ import annotations

from fractions import Fraction

import pytest
import sympy as sp

from symcomm import rules
from symcomm import symbols as S
from symcomm.algorithms import CORE_DIVIDES_M, N_DIVIDES_M, PAIR, POW2

N, M, b, d, p = S.N, S.M, S.b, S.d, S.p


@pytest.mark.parametrize("n, ok", [(1, True), (2, True), (6, False), (8, True), (12, False), (2 ** 40, True)])
def test_power_of_two(n, ok):
    said = POW2.problem({N: sp.Integer(n)})
    assert said == (None if ok else
                    f"N={n} is not allowed: this algorithm needs N to be a power of two (2, 4, 8, ...)")


def test_multiples_name_the_value_not_allowed():
    assert N_DIVIDES_M.problem({N: 3, M: 7}) == "M=7 is not allowed: it must be a multiple of N=3"
    assert N_DIVIDES_M.problem({N: 3, M: 9}) is None
    # the fold's core: 2^⌊log₂6⌋ = 4 (4 ≤ 6 < 8), so M = 6 is refused and M = 8 kept
    assert CORE_DIVIDES_M.problem({N: 6, M: 6}) == "M=6 is not allowed: it must be a multiple of 2^⌊log₂N⌋=4"
    assert CORE_DIVIDES_M.problem({N: 6, M: 8}) is None
    assert CORE_DIVIDES_M.text == "M a multiple of 2^⌊log₂N⌋"


def test_layout_rules_and_when():
    rule = rules.divisible(b / d, S.m, "b/d|m")
    # b/d = 12/4 = 3 is no multiple of m = 2; a rational value prints as p/q, as the command line prints it
    assert rule.problem({b: 12, d: 4, S.m: 2}) == "b/d=3 must be divisible by m=2"
    assert rule.problem({b: 6, d: 4, S.m: 1}) == "b/d=3/2 must be divisible by m=1"
    # nothing to divide by: not this rule's refusal
    assert rules.divisible(b, d).problem({b: 5, d: 0}) is None
    # a symbol not given: not checked
    assert rule.problem({b: 12, d: 4}) is None
    least = rules.when("schedule", ("interleaved",), rules.at_least(p, 2))
    assert least.rules({"schedule": "1f1b"}) == ()
    (inner,) = least.rules({"schedule": "interleaved"})
    assert inner.problem({p: 1}) == "p=1 must be at least 2"
    assert PAIR.problem({N: 3}) == "N=3 is not allowed: this algorithm needs N=2"
    fixed = rules.fixed(S.e, 1, "e={x} needs moe=1")
    assert fixed.problem({S.e: 4}) == "e=4 needs moe=1" and fixed.problem({S.e: 1}) is None


def test_problems_in_order_each_once():
    both = (rules.at_least(p, 2), rules.at_least(p, 2), rules.divisible(b, d))
    assert rules.problems(both, {p: 1, b: 3, d: 2}) == ["p=1 must be at least 2", "b=3 must be divisible by d=2"]


def test_an_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="rule kind 'prime' is not one of power_of_two, divides"):
        rules.Rule("prime", N, None, "", "")


# the exports' tests of each kind (the Python text of rules.KINDS) agree with the check here
GRID = [Fraction(0), Fraction(1), Fraction(2), Fraction(3), Fraction(4), Fraction(6), Fraction(8), Fraction(3, 2),
        Fraction(1, 2), Fraction(12)]


@pytest.mark.parametrize("kind", sorted(rules.KINDS))
def test_the_exported_python_test_is_the_check(kind):
    spec = rules.KINDS[kind]
    exported = eval(f"lambda x, y: {spec.python}", {"Fraction": Fraction})   # our own source text, not user input
    for x in GRID:
        for y in GRID:
            want = spec.holds(sp.Rational(x.numerator, x.denominator), sp.Rational(y.numerator, y.denominator))
            assert bool(exported(x, y)) == bool(want), (kind, x, y)
