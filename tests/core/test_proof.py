"""The claims API as a user meets it in their own tests."""

import pytest
import sympy as sp

from symcomm import AtLeast, Claim, ClaimFailed, Limit, POWER_OF_TWO, algorithm, check, prove
from symcomm.core.proof import DEFAULT, Domain
from symcomm.core.symbols import M, N, log2, log2_ceil

ring = algorithm("all_reduce", "ring").cost


def test_true_identity_proves():
    # Patarasuk & Yuan 2009 §3: ring all-reduce moves 2(N−1)/N·M per rank
    assert prove(Claim(ring.send, 2 * (N - 1) * M / N))


def test_a_holding_proof_states_its_claim_when_asked():
    # the detail of a proof that holds is written when read (printing the sides costs more than proving them)
    proof = check(Claim(ring.send, 2 * (N - 1) * M / N))
    assert proof and proof.detail == f"{ring.send} = {2 * (N - 1) * M / N}"
    assert check(AtLeast(N - 1, log2_ceil(N))).detail == f"{N - 1} ≥ {log2_ceil(N)}"


def test_false_identity_shows_the_simplified_difference():
    with pytest.raises(ClaimFailed) as err:
        prove(Claim(ring.send, 2 * M, name="ring is 2M"))
    message = str(err.value)
    assert "ring is 2M" in message
    assert "-2*M/N" in message  # 2M(N−1)/N − 2M = −2M/N


def test_inequality_and_counterexample():
    assert prove(AtLeast(N - 1, log2_ceil(N)))        # N − 1 ≥ ⌈log₂N⌉ for all N ≥ 2
    proof = check(AtLeast(log2_ceil(N), N - 1))
    assert not proof and "negative at N=" in proof.detail


def test_power_of_two_domain():
    assert prove(Claim(log2_ceil(N), log2(N), domain=POWER_OF_TWO))
    assert not check(Claim(log2_ceil(N), log2(N)))


def test_limit():
    assert prove(Limit(ring.send, 2 * M))
    with pytest.raises(ClaimFailed):
        prove(Limit(ring.send, M))


def test_limit_in_an_unsimplified_form_proves_and_a_wrong_value_fails_with_the_simplified_limit():
    # busbw of the ring all-gather, M/(α + (N−1)/N·M·β) · (N−1)/N (nccl-tests' factor), tends to 1/β as M → ∞;
    # SymPy's limit comes back as (N − 1)/(Nβ − β), equal to 1/β only once cancelled
    beta = sp.Symbol("beta", positive=True)
    alpha = sp.Symbol("alpha", positive=True)
    busbw = M / (alpha + (N - 1) * M * beta / N) * (N - 1) / N
    assert sp.limit(busbw, M, sp.oo) != 1 / beta     # the case this test is about
    assert prove(Limit(busbw, 1 / beta, var=M))
    proof = check(Limit(busbw, 2 / beta, var=M))
    assert not proof and proof.detail.endswith("= 1/beta, not 2/beta")


def test_a_limit_proof_does_not_load_sympy_physics():
    # sp.simplify imports sympy.physics.units (a third of `symcomm prove`'s second) on every call; a limit
    # that equals its value outright or once cancelled needs no simplify
    import subprocess
    import sys
    code = ("import sys, sympy as sp; from symcomm import Limit, prove; from symcomm.core.symbols import M, N; "
            "b = sp.Symbol('b', positive=True); prove(Limit(M / (1 + (N - 1) * M * b / N) * (N - 1) / N, 1 / b, var=M)); "
            "print('sympy.physics.units' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_a_max_that_only_expansion_settles_is_still_proved():
    # (N + 1)² = N² + 2N + 1 inside a Max against M, which no domain orders: the two Max differ as written and
    # agree once expanded (a difference holding a Min or Max is tried in the domain first, then expanded)
    assert prove(Claim(sp.Max((N + 1) ** 2, M), sp.Max(N ** 2 + 2 * N + 1, M)))
    assert not check(Claim(sp.Max((N + 1) ** 2, M), sp.Max(N ** 2 + 2 * N, M)))
    # x ≥ 1 only: the domain's rewrite of ⌈log₂x⌉ refuses it (it needs x ≥ 2); the expansion proves it still
    x = sp.Symbol("x", integer=True, positive=True)
    assert prove(Claim(sp.Max(log2_ceil(x) * (x + 1), M), sp.Max(log2_ceil(x) * x + log2_ceil(x), M)))


def test_induction_proves_exponential_beats_linear():
    j = sp.Symbol("j", integer=True, positive=True)
    assert prove(AtLeast(2 ** j, j + 1, domain=POWER_OF_TWO))


def test_min_and_max_are_decided_only_where_ordered_over_the_domain():
    # P ≥ 2 segments per rank: Max(N·P, 2N) is N·P, so ⌈Max(N·P, 2N)/N⌉ = P; with P ≥ 1 it is not
    seg = sp.Symbol("P", integer=True, positive=True)
    at_least_two = Domain(least=DEFAULT.least + ((seg, 2),))
    assert prove(Claim(sp.ceiling(sp.Max(N * seg, 2 * N) / N), seg, domain=at_least_two))
    assert not check(Claim(sp.ceiling(sp.Max(N * seg, 2 * N) / N), seg))
    assert prove(Claim(sp.Max(N * M, M) + sp.Min(N, 2), N * M + 2))   # N ≥ 2
    assert not check(Claim(sp.Max(N, 3), N))                          # N = 2
    assert not check(Claim(sp.Min(N, 3), 3))                          # N = 2


def test_a_claim_stated_twice_is_proved_once_and_each_proof_names_its_own_claim():
    from symcomm.core import proof as P

    # (N−1)/N·M + M/N = M: the ring reduce-scatter's share plus the rank's own block is the whole buffer (by hand)
    first = P.Claim((N - 1) / N * M + M / N, M, name="a table's row")
    again = P.Claim((N - 1) / N * M + M / N, M, name="the chapter's text", source="elsewhere")
    wrong = P.Claim((N - 1) / N * M, M, name="wrong")
    before = P._checked.cache_info()
    one, two, bad = P.check(first), P.check(again), P.check(wrong)
    after = P._checked.cache_info()
    assert one and two and not bad
    assert one.claim is first and two.claim is again and bad.claim is wrong
    assert one.detail == two.detail
    assert after.hits - before.hits >= 1            # the second statement was not proved again
    assert after.misses - before.misses <= 2        # at most the first and the wrong one were proved


def test_a_rational_identity_that_expanding_leaves_proves_and_a_false_one_fails():
    # (N² − 1)/(N − 1) = N + 1 (difference of squares): expand leaves the fraction, cancelling settles it, in any
    # domain (the power-of-two one included: a rational function zero on infinitely many N is zero)
    assert prove(Claim((N ** 2 - 1) / (N - 1), N + 1))
    assert prove(Claim((N ** 2 - 1) / (N - 1), N + 1, domain=POWER_OF_TWO))
    proof = check(Claim((N ** 2 - 1) / (N - 1), N))
    assert not proof and "simplifies to 1" in proof.detail


def test_limits_of_rational_functions_from_their_leading_terms():
    # (a·x² + x)/(b·x² + 1) → a/b, (x + 1)/x² → 0 as x → ∞ (the leading terms); x²/(x + 1) grows without bound
    x = sp.Symbol("x", positive=True)
    a, b = sp.Symbol("a", positive=True), sp.Symbol("b", positive=True)
    assert prove(Limit((a * x ** 2 + x) / (b * x ** 2 + 1), a / b, var=x))
    assert not check(Limit((a * x ** 2 + x) / (b * x ** 2 + 1), a, var=x))
    assert prove(Limit((x + 1) / x ** 2, 0, var=x))
    assert prove(Limit(x ** 2 / (x + 1), sp.oo, var=x))
    assert not check(Limit(x ** 2 / (x + 1), 1, var=x))


def test_a_failed_claim_says_when_two_of_its_symbols_share_a_name():
    # an outsider's sympy.Symbol("N") beside the library's N (an integer ≥ 1): "simplifies to 2*M*(N - N)/(N*N)"
    # read as nonsense; the refusal names the cause
    n_plain = sp.Symbol("N")
    with pytest.raises(ClaimFailed, match=r"two different symbols are named N: use the library's, "
                                          r"symcomm.symbol\('N'\)"):
        prove(Claim(2 * (N - 1) * M / N, 2 * (n_plain - 1) * M / n_plain))
