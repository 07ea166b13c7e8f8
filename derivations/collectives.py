"""Chapter 1: the collective primitives, their algorithms, lower bounds and identities.

Everything here is data: chains of SymPy expressions with a reason per step, and the
claims the engine proves.  Costs come from the catalog (symcomm.collectives.algorithms); published
closed forms are typed here, from the paper, so that each claim compares two
independent statements.
"""

from __future__ import annotations

import sympy as sp

from symcomm.core import symbols as S
from symcomm.collectives.algorithms import SOURCE_ARTICLE, ALGORITHMS, CHAN, POW2, G_DIVIDES_N, THAKUR, PATARASUK, algorithm
from symcomm.collectives.bounds import LOWER_BOUNDS
from symcomm.core.chapters import Chapter, Derivation, Step
from symcomm.core.rewrite import rebuilt
from symcomm.core.proof import AtLeast, Claim, DEFAULT, Domain, Limit, POWER_OF_TWO
from symcomm.training.subjects import COLLECTIVE_CONVENTION

N, M = S.N, S.M
log2N = S.log2(N)
NCCL_TESTS = "nccl-tests, doc/PERFORMANCE.md (bus bandwidth)"
# the article names no author, date or address a paper can cite: the published source beside it (the ring as
# reduce-scatter + all-gather and its 2(N − 1)M/N per rank); the naive root's counts are direct counts
ARTICLE = (SOURCE_ARTICLE + ", §1.4–1.5 and §2; published: " + PATARASUK
           + " (the ring all-reduce as reduce-scatter + all-gather, 2(N − 1)M/N per rank); the naive root's counts "
           "are counted here")
ELEMENTS = COLLECTIVE_CONVENTION


def _cost(primitive: str, name: str):
    return algorithm(primitive, name).cost


def _domain(alg):
    return POWER_OF_TWO if POW2 in alg.requires else DEFAULT


_TERMS = (("alpha", "latency", S.alpha), ("beta", "bandwidth", S.beta), ("gamma", "reduction", S.gamma))
def optimality_claims(alg) -> list:
    """Per α, β, γ term: the bound is attained (a Claim) or exceeded by a stated excess."""
    bound, source = LOWER_BOUNDS[alg.primitive]
    claims = []
    for key, word, sym in _TERMS:
        got = alg.cost.coefficient(sym)
        if sym in S.INTER_NODE and alg.cost.coefficient(S.INTER_NODE[sym]) != 0:
            if G_DIVIDES_N in alg.requires and sym is S.alpha:
                continue  # ⌈log₂(G·N/G)⌉ against per-level counts is beyond the prover; see the note
            got = got + alg.cost.coefficient(S.INTER_NODE[sym])
        want = bound.coefficient(sym)
        if want == 0 and got == 0:
            continue
        if POW2 in alg.requires:  # ⌈log₂N⌉ = log₂N when N is a power of two
            want = want.subs(S.log2_ceil(N), S.log2(N))
        # the same expression attains the bound outright (0, without the rational algebra); factor alone writes the
        # excess as factoring after cancel did, for every algorithm here (tests/derivations/test_collectives.py), at a
        # third of the cost
        excess = sp.Integer(0) if got == want else sp.factor(got - want)
        label = f"{alg.primitive}/{alg.name}: {word} term"
        if alg.name == "in_network":
            # the point-to-point bounds do not bind a switch that adds; only β is compared
            if sym is not S.beta:
                continue
            claims.append(AtLeast(want, got, name=f"{label} undercuts the point-to-point bound "
                                  f"(the switch adds), by {excess}", source=source, domain=_domain(alg)))
        elif excess == 0:
            claims.append(Claim(got, want, name=f"{label} attains the lower bound", source=source,
                                domain=_domain(alg)))
        else:
            claims.append(AtLeast(got, want, name=f"{label} exceeds the lower bound by {excess}",
                                  source=source, domain=_domain(alg)))
    return claims


# -- published closed forms against the composed costs ------------------------------------

def _published(primitive, name, source, domain=DEFAULT, **coefficients):
    cost = _cost(primitive, name)
    return [Claim(cost.coefficient(S.symbol(key)), value,
                  name=f"{primitive}/{name}: {key} coefficient as published", source=source,
                  domain=domain)
            for key, value in coefficients.items()]


PUBLISHED = (
    _published("all_reduce", "ring", PATARASUK + ", §3", alpha=2 * (N - 1),
               beta=2 * (N - 1) * M / N, gamma=(N - 1) * M / N)
    + _published("all_reduce", "rabenseifner", THAKUR + ", §4 (Allreduce)", POWER_OF_TWO,
                 alpha=2 * log2N, beta=2 * (N - 1) * M / N, gamma=(N - 1) * M / N)
    + _published("reduce", "rabenseifner", THAKUR + ", §4 (Reduce)", POWER_OF_TWO,
                 alpha=2 * log2N, beta=2 * (N - 1) * M / N, gamma=(N - 1) * M / N)
    + _published("broadcast", "scatter_allgather", THAKUR + ", §4 (Broadcast)", POWER_OF_TWO,
                 alpha=log2N + N - 1, beta=2 * (N - 1) * M / N)
    + _published("all_reduce", "binomial_tree", THAKUR + ", §4 (Allreduce)", POWER_OF_TWO,
                 alpha=2 * log2N, beta=2 * log2N * M, gamma=log2N * M)
)

# nccl-tests reports bus bandwidth = algorithm bandwidth × a factor chosen so that it
# equals the per-rank link load of the bandwidth-optimal (ring) algorithm: the factor
# is β/M of that algorithm.
BUS_BANDWIDTH = tuple(
    Claim(_cost(primitive, name).beta / M, factor,
          name=f"{primitive}/{name}: β/M equals nccl-tests' bus-bandwidth factor", source=NCCL_TESTS)
    for primitive, name, factor in (
        ("all_reduce", "ring", 2 * (N - 1) / N),
        ("all_gather", "ring", (N - 1) / N),
        ("reduce_scatter", "ring", (N - 1) / N),
        ("all_to_all", "pairwise", (N - 1) / N),
        ("send_recv", "direct", 1),
    )
) + tuple(
    # broadcast and reduce: factor 1, reached by the pipelined chain as its chunks grow
    Limit(_cost(primitive, "ring").beta / M, 1, var=S.C,
          name=f"{primitive}/ring: β/M → nccl-tests' bus-bandwidth factor 1 as the chunks C → ∞",
          source=NCCL_TESTS)
    for primitive in ("broadcast", "reduce")
)

# -- the source article's identities, as costs (their data form is executed in tests) -------------------

ring_rs, ring_ag, ring_ar = (_cost("reduce_scatter", "ring"), _cost("all_gather", "ring"),
                             _cost("all_reduce", "ring"))
flat_reduce, flat_bcast, flat_gather = (_cost("reduce", "flat"), _cost("broadcast", "flat"),
                                        _cost("gather", "flat"))
naive_ar, gather_bcast = _cost("all_reduce", "flat"), _cost("all_gather", "gather_broadcast")


def _adds(whole, first, second, title):
    return [Claim(getattr(whole, key), getattr(first, key) + getattr(second, key),
                  name=f"{title}: {key} adds exactly", source=ARTICLE)
            for key in ("alpha", "beta", "gamma", "total")]


IDENTITIES = tuple(
    _adds(ring_ar, ring_rs, ring_ag, "all-reduce = reduce-scatter + all-gather (ring)")
    + _adds(naive_ar, flat_reduce, flat_bcast, "all-reduce = reduce + broadcast (flat)")
    + _adds(gather_bcast, flat_gather, flat_bcast, "all-gather = gather + broadcast (flat)")
    + [
        Claim(naive_ar.total, ring_ar.total, name="naive and ring all-reduce move the same total", source=ARTICLE),
        Claim(naive_ar.beta, N * ring_ar.beta, name="naive all-reduce's bandwidth term is N× the ring's", source=ARTICLE),
        Claim(naive_ar.root.recv, (N - 1) * M, name="naive all-reduce: the root receives (N−1)M", source=ARTICLE),
        Claim(naive_ar.root.send, (N - 1) * M, name="naive all-reduce: the root sends (N−1)M", source=ARTICLE),
        AtLeast(naive_ar.send, ring_ar.send, name="ring all-reduce sends no more than naive for N ≥ 2", source=ARTICLE),
        Limit(ring_ar.send, 2 * M, name="ring all-reduce per-rank send → 2M as N → ∞", source=PATARASUK),
        Claim(_cost("all_reduce", "hierarchical").send, ring_ar.send,
              name="hierarchical all-reduce sends per rank exactly what the flat ring sends",
              source="the reduce-scatter / all-reduce / all-gather form of Horovod's hierarchical allreduce "
                     "(uber/horovod pull request #411, 2018); the equality is proved here"),
    ]
)

# -- Rabenseifner with a fold to the nearest lower power of two (any N) -------------------------
#
# ⌊log₂N⌋ and ⌈log₂N⌉ differ by one exactly when N is not a power of two, so the fold is proved
# in two cases: N = 2ᵏ (it is Rabenseifner's algorithm), and N = 2^ℓ + r with r ≥ 1 extra ranks
# (then ⌈log₂N⌉ = ⌈log₂(N + 1)⌉ = ℓ + 1; the claims hold for every r ≥ 1, a fortiori r < 2^ℓ).

_FOLD = ("all_reduce", "rabenseifner_fold")
_SEGMENTED = ("reduce", "ring_segmented")   # C ≥ 2N, a multiple of N: its bounds are below, with C = kN
_fold, _raben = _cost(*_FOLD), _cost("all_reduce", "rabenseifner")
_MPICH_FOLD = THAKUR + ", §4 (Allreduce); MPICH src/mpi/coll/allreduce/allreduce_intra_reduce_scatter_allgather.c"
_ell, _extra = sp.Symbol("ell", integer=True, positive=True), sp.Symbol("r", integer=True, positive=True)
_NOT_POW2 = {S.log2_ceil(N): _ell + 1, S.log2_ceil(N + 1): _ell + 1}


def _folded(expr):
    """expr at N = 2^ℓ + r, r ≥ 1 (N not a power of two)."""
    return sp.sympify(expr, strict=True).xreplace(_NOT_POW2).xreplace({N: 2 ** _ell + _extra})


_ar_bound, _ar_bound_source = LOWER_BOUNDS["all_reduce"]
FOLD_CLAIMS = tuple(
    Claim(getattr(_fold, key), getattr(_raben, key),
          name=f"all_reduce/rabenseifner_fold: {key} equals Rabenseifner's when N is a power of two (no rank folds)",
          source=_MPICH_FOLD, domain=POWER_OF_TWO)
    for key in ("send", "recv", "total", "alpha", "beta", "gamma")
) + (
    Claim(_folded(_fold.alpha), 2 * _ell + 2,
          name="all_reduce/rabenseifner_fold: α = 2⌊log₂N⌋ + 2 when N is not a power of two, as published",
          source=_MPICH_FOLD),
    Claim(_folded(_fold.beta), 2 * (2 ** _ell - 1) * M / 2 ** _ell + 2 * M,
          name="all_reduce/rabenseifner_fold: β = 2((P − 1)/P)M + 2M with P = 2^⌊log₂N⌋ when N is not a power of two "
               "(the fold and the unfold each move M)", source=_MPICH_FOLD),
    Claim(_folded(_fold.total), 2 * (2 ** _ell + _extra - 1) * M,
          name="all_reduce/rabenseifner_fold: total 2(N − 1)M, as the ring's (r M folded in and back, 2(P − 1)M in the core)",
          source=_MPICH_FOLD),
) + tuple(
    AtLeast(_folded(_fold.coefficient(sym)), _folded(_ar_bound.coefficient(sym)),
            name=f"all_reduce/rabenseifner_fold: {word} term at least the lower bound when N is not a power of two",
            source=_ar_bound_source)
    for _, word, sym in _TERMS
)

# the same fold in MPICH's short all-reduce (recursive doubling) and long reduce (Rabenseifner's,
# the extra odd ranks folding into rank − 1 so that root 0 stays in the core)
_RD_FOLD, _REDUCE_FOLD = ("all_reduce", "recursive_doubling_fold"), ("reduce", "rabenseifner_fold")
_MPICH_RD = THAKUR + ", §4 (Allreduce); MPICH src/mpi/coll/allreduce/allreduce_intra_recursive_doubling.c"
_MPICH_REDUCE = THAKUR + ", §4 (Reduce); MPICH src/mpi/coll/reduce/reduce_intra_reduce_scatter_gather.c"
_reduce_lower, _reduce_lower_source = LOWER_BOUNDS["reduce"]
_P = 2 ** _ell
MPICH_FOLD_CLAIMS = tuple(
    Claim(value, _cost(*plain).fields()[key],
          name=f"{fold[0]}/{fold[1]}: {key} equals {plain[1]}'s when N is a power of two (no rank folds)",
          source=source, domain=POWER_OF_TWO)
    for fold, plain, source in ((_RD_FOLD, ("all_reduce", "recursive_doubling"), _MPICH_RD),
                                (_REDUCE_FOLD, ("reduce", "rabenseifner"), _MPICH_REDUCE))
    for key, value in _cost(*fold).fields().items()
) + (
    Claim(_folded(_cost(*_RD_FOLD).alpha), _ell + 2,
          name="all_reduce/recursive_doubling_fold: α = ⌊log₂N⌋ + 2 when N is not a power of two (fold, "
               "⌊log₂N⌋ swaps, unfold)", source=_MPICH_RD),
    Claim(_folded(_cost(*_RD_FOLD).total), (2 * _extra + _P * _ell) * M,
          name="all_reduce/recursive_doubling_fold: total (2r + P·⌊log₂N⌋)M with r = N − P extra ranks "
               "(r M folded in and back, P ranks swapping M ⌊log₂N⌋ times)", source=_MPICH_RD),
    Claim(_folded(_cost(*_REDUCE_FOLD).alpha), 2 * _ell + 1,
          name="reduce/rabenseifner_fold: α = 2⌊lg p⌋ + 1 when N is not a power of two, as MPICH's cost comment",
          source=_MPICH_REDUCE),
    Claim(_folded(_cost(*_REDUCE_FOLD).beta), (2 * (_P - 1) / _P + 1) * M,
          name="reduce/rabenseifner_fold: β = (2(P − 1)/P + 1)M when N is not a power of two, as MPICH's cost "
               "comment (its p the core's size P = 2^⌊log₂N⌋)", source=_MPICH_REDUCE),
    Claim(_folded(_cost(*_REDUCE_FOLD).gamma), (1 + (_P - 1) / _P) * M,
          name="reduce/rabenseifner_fold: γ = (1 + (P − 1)/P)M when N is not a power of two, as MPICH's cost comment",
          source=_MPICH_REDUCE),
) + tuple(
    AtLeast(_folded(_cost(*fold).coefficient(sym)), _folded(bound.coefficient(sym)),
            name=f"{fold[0]}/{fold[1]}: {word} term at least the lower bound when N is not a power of two",
            source=bound_source)
    for fold, bound, bound_source in ((_RD_FOLD, _ar_bound, _ar_bound_source),
                                      (_REDUCE_FOLD, _reduce_lower, _reduce_lower_source))
    for _, word, sym in _TERMS
)


# -- derivations (chains rendered in the docs) ------------------------------------------------

RING_ALL_REDUCE = Derivation(
    title="Ring all-reduce = ring reduce-scatter + ring all-gather",
    lhs="per-rank send",
    convention=ELEMENTS,
    source=PATARASUK + ", §3; " + ARTICLE,
    steps=(
        Step(ring_rs.send + ring_ag.send, "reduce-scatter, then all-gather, on the same ring"),
        Step(2 * (N - 1) * M / N, "each phase passes N−1 blocks of M/N along the ring"),
        Step(2 * M, "large-N limit", "→"),
    ),
)

NAIVE_ALL_REDUCE = Derivation(
    title="Naive all-reduce (flat reduce + flat broadcast): the root's load",
    lhs="elements the root receives plus sends",
    convention=ELEMENTS,
    source=ARTICLE,
    steps=(
        Step(flat_reduce.root.recv + flat_bcast.root.send,
             "the root receives every other rank's M, then sends M to every other rank"),
        Step(2 * (N - 1) * M, "(N−1)M each way: linear in N, the bottleneck"),
    ),
)

NAIVE_VS_RING = Derivation(
    title="Naive vs ring: the bandwidth term",
    lhs="β coefficient, naive over ring",
    convention=ELEMENTS,
    source=ARTICLE,
    steps=(
        Step(naive_ar.beta / ring_ar.beta, "critical-path elements of each algorithm"),
        Step(N, "the ring spreads the same total over N links at once"),
    ),
)

CHAPTER = Chapter(
    number=1,
    slug="collectives",
    title="Collective primitives",
    intro=("Eight collectives and send/recv carry every parallel strategy. Each has an executable "
           "definition, several algorithms with exact α-β-γ costs, a lower bound, and identities "
           "that compose them: all-reduce = reduce-scatter + all-gather = reduce + broadcast, "
           "all-gather = gather + broadcast."),
    derivations=(RING_ALL_REDUCE, NAIVE_ALL_REDUCE, NAIVE_VS_RING),
    claims=tuple(c for alg in ALGORITHMS.values() if alg.key not in (_FOLD, _RD_FOLD, _REDUCE_FOLD, _SEGMENTED)
                 for c in optimality_claims(alg))
    + tuple(PUBLISHED) + BUS_BANDWIDTH + IDENTITIES + FOLD_CLAIMS + MPICH_FOLD_CLAIMS,
)


# -- what gloo runs (backend profiles: symcomm/collectives/profiles.py) ---------------------------

from dataclasses import replace as _replace  # noqa: E402

from symcomm.collectives.algorithms import GLOO as _GLOO_SOURCE  # noqa: E402
from symcomm.core.cost import Cost  # noqa: E402

_bin_any, _bin_tree = _cost("broadcast", "binomial_any"), _cost("broadcast", "binomial_tree")
_ring_gather = _cost("reduce", "ring_gather")

GLOO_CLAIMS = (
    Claim(_bin_any.root.send.subs(S.log2_ceil(N), log2N), _bin_tree.root.send,
          name="broadcast/binomial_any: the root sends what the binomial tree's root sends when N is a power of two",
          source=_GLOO_SOURCE + ", gloo/broadcast.cc", domain=POWER_OF_TWO),
    Claim(_bin_any.total, _bin_tree.total, name="broadcast/binomial_any: every rank but the root receives M once",
          source=_GLOO_SOURCE + ", gloo/broadcast.cc"),
    *_adds(_ring_gather, ring_rs, flat_gather, "reduce = ring reduce-scatter + flat gather (gloo/reduce.cc)"),
    Claim(_ring_gather.others.send, M, name="reduce/ring_gather: a non-root rank sends exactly M",
          source=_GLOO_SOURCE + ", gloo/reduce.cc"),
    Claim(ring_ar.send, 2 * ring_rs.send,
          name="gloo runs reduce-scatter as a whole all-reduce: twice the ring reduce-scatter's traffic",
          source="torch 2.13.0 ProcessGroupGloo (measured: identical wire bytes to all_reduce)"),
)


# -- binomial trees on any N (MPICH's bcast/reduce binomial trees run ⌈log₂N⌉ rounds) ------

_MPICH_BINOMIAL = (THAKUR + ", §4; " + CHAN.cite + "; MPICH src/mpi/coll/bcast/bcast_intra_binomial.c, "
                   "reduce/reduce_intra_binomial.c, scatter/scatter_intra_binomial.c, gather/gather_intra_binomial.c")
_bin_reduce = _cost("reduce", "binomial_tree")
# Thakur's power-of-two forms, typed from the paper: lg p rounds of n; the root's subtree is
# everything, the next largest (rank p/2's) has lg p − 1 children
_POW2_FORMS = (
    ("broadcast/binomial_tree: the root sends lg p·n", _bin_tree.root.send, log2N * M),
    ("broadcast/binomial_tree: the busiest non-root sends (lg p − 1)n", _bin_tree.others.send, (log2N - 1) * M),
    ("broadcast/binomial_tree: α = lg p", _bin_tree.alpha, log2N),
    ("broadcast/binomial_tree: β = n lg p", _bin_tree.beta, log2N * M),
    ("reduce/binomial_tree: the root receives lg p·n", _bin_reduce.root.recv, log2N * M),
    ("reduce/binomial_tree: the busiest non-root receives (lg p − 1)n", _bin_reduce.others.recv, (log2N - 1) * M),
    ("reduce/binomial_tree: α = lg p", _bin_reduce.alpha, log2N),
    ("reduce/binomial_tree: β = γ = n lg p", _bin_reduce.beta + _bin_reduce.gamma, 2 * log2N * M),
    # Chan et al. 2007, minimum-spanning-tree scatter/gather: rank p/2 heads half the ranks,
    # and every block crosses lg p / 2 links on average (lg p · n / 2 in all)
    ("scatter/binomial_tree: the busiest non-root receives n/2", _cost("scatter", "binomial_tree").others.recv, M / 2),
    ("scatter/binomial_tree: total (lg p / 2)·n", _cost("scatter", "binomial_tree").total, log2N * M / 2),
    ("gather/binomial_tree: the busiest non-root sends n/2", _cost("gather", "binomial_tree").others.send, M / 2),
    ("gather/binomial_tree: it receives n/2 − n/p", _cost("gather", "binomial_tree").others.recv, M / 2 - M / N),
    ("gather/binomial_tree: total (lg p / 2)·n", _cost("gather", "binomial_tree").total, log2N * M / 2),
    ("gather/binomial_tree: α = lg p", _cost("gather", "binomial_tree").alpha, log2N),
)
BINOMIAL_CLAIMS = tuple(
    Claim(got, want, name=f"{name} at powers of two (the any-N form reduces to the power-of-two one)",
          source=_MPICH_BINOMIAL, domain=POWER_OF_TWO)
    for name, got, want in _POW2_FORMS
)

# -- all-to-all: what Thakur's and MPICH's n is  ------------------------------
# MPICH alltoall_intra_brucks.c: "n is the total amount of data a process needs to send to all
# other processes", so n = (N − 1) blocks of M/N; its pairwise cost (p − 1)α + nβ
# (alltoall_intra_pairwise.c) is then exact, and Bruck's (n/2) lg p is the exact β times (N − 1)/N.
_n_alltoall = (N - 1) * M / N
_MPICH_ALLTOALL = THAKUR + ", §4 (Alltoall); MPICH src/mpi/coll/alltoall/alltoall_intra_brucks.c, alltoall_intra_pairwise.c"
ALLTOALL_CLAIMS = (
    Claim(_cost("all_to_all", "pairwise").beta, _n_alltoall,
          name="all_to_all/pairwise: β = n, the data a rank sends to all others (MPICH's n)", source=_MPICH_ALLTOALL),
    Claim(_cost("all_to_all", "bruck").beta * (N - 1) / N, _n_alltoall / 2 * log2N,
          name="all_to_all/bruck: the published (n/2) lg p is the exact β times (N − 1)/N (each round moves M/2, not n/2)",
          source=_MPICH_ALLTOALL, domain=POWER_OF_TWO),
)

# gloo's reduce (gloo/reduce.cc): the catalog's form is exact for every N and M (segments of at most
# K elements, the last ones partial or empty; tests/collectives/test_profiles.py holds it against gloo_wire, and
# tests/collectives/test_simulation.py against the execution).  Where the segments fill the buffer — M = P·N·K,
# P ≥ 2 full segments per rank — it is the equal-segment form: C = P·N segments of M/C, C − 2 ring
# rounds, then each rank's chunk M/N to the root.
_segmented = _cost("reduce", "ring_segmented")
_P_SEG = sp.Symbol("P", integer=True, positive=True)   # segments per rank, P ≥ 2
_PER_RANK = Domain(least=DEFAULT.least + ((_P_SEG, 2),))
_C_SEG = _P_SEG * N
_filled_M = _P_SEG * N * S.K
_EVEN = Cost.of(root_send=(_C_SEG - 2) * M / _C_SEG, root_recv=(_C_SEG - 2) * M / _C_SEG + (N - 1) * M / N,
                send=(_C_SEG - 2) * M / _C_SEG + M / N, recv=(_C_SEG - 2) * M / _C_SEG,
                total=N * (_C_SEG - 2) * M / _C_SEG + (N - 1) * M / N,
                alpha=_C_SEG - 2 + N - 1, beta=(_C_SEG - 2) * M / _C_SEG + (N - 1) * M / N,
                gamma=(_C_SEG - 2) * M / _C_SEG)
_reduce_bound, _reduce_bound_source = LOWER_BOUNDS["reduce"]
_GLOO_REDUCE = _GLOO_SOURCE + ", gloo/reduce.cc"


# With P ≥ 2 segments per rank a segment is K: gloo's segment is min(K, ⌈M/(2N)⌉) and at
# M = P·N·K, ⌈P·K/2⌉ ≥ P·K/2 ≥ K (the first claim below).  Writing that Min as K before the prover runs turns
# a ceiling-and-Min search of seconds per claim into rational algebra (each claim still checked).
_SEGMENT = sp.Min(S.K, sp.ceiling(M / (2 * N)))


_FILL = {_SEGMENT: S.K, M: _filled_M}
_FILLED_MEMO: dict = {}     # the rebuilt subtrees, shared by every field and role: they repeat one segment's Min


def _as_they_stand(func, args):
    """A rebuilt node: a Min or Max on its new arguments as it stands, anything else evaluated.  SymPy's own Min
    and Max compare their new arguments (P·N·K against 2N, ...) through its assumptions and decide none of them here
    (the same trees either way: tests/derivations/test_collectives.py) at a tenth of a second; the prover decides
    them in the claims' domain."""
    return func(*args, evaluate=False) if func in (sp.Min, sp.Max) else func(*args)


def _filled(expr):
    """``expr`` where the segments of K fill the buffer: a segment is K (M ≥ 2NK), and M = P·N·K.  One pass
    (the segment's Min is replaced whole before the walk reaches the M inside it): each ceiling is rebuilt once, on
    its final arguments, and once for all the fields (``rebuilt`` is ``xreplace`` with each distinct subtree rebuilt
    once: the same trees, in a quarter of the time), each Min and Max as it stands (:func:`_as_they_stand`)."""
    return rebuilt(sp.sympify(expr, strict=True), _FILL, _FILLED_MEMO, _as_they_stand)


def _by_role(cost):
    return {"root send": cost.root.send, "root recv": cost.root.recv, "non-root send": cost.others.send,
            "non-root recv": cost.others.recv, "total": cost.total, "alpha": cost.alpha, "beta": cost.beta,
            "gamma": cost.gamma}


SEGMENTED_CLAIMS = (
    AtLeast(S.K * _P_SEG / 2, S.K, name="reduce/ring_segmented: with P ≥ 2 segments per rank, ⌈P·K/2⌉ ≥ P·K/2 ≥ K, "
            "so a segment, min(K, ⌈M/(2N)⌉), is K", source=_GLOO_REDUCE, domain=_PER_RANK),
) + tuple(
    Claim(_filled(value), _filled(_by_role(_EVEN)[key]),
          name=f"reduce/ring_segmented: {key}, where segments of K fill the buffer (M = P·N·K, P ≥ 2), is the "
               f"equal-segment form (C = P·N segments of M/C, C − 2 ring rounds, chunks of M/N to the root)",
          source=_GLOO_REDUCE, domain=_PER_RANK)
    for key, value in _by_role(_segmented).items()
) + tuple(
    AtLeast(_EVEN.coefficient(sym), _reduce_bound.coefficient(sym),
            name=f"reduce/ring_segmented: {word} term at least the lower bound where segments fill the buffer "
                 f"(C = P·N segments, P ≥ 2)",
            source=_reduce_bound_source, domain=_PER_RANK)
    for _, word, sym in _TERMS
) + tuple(
    Claim(_EVEN.fields()[key].subs(_P_SEG, 2), _ring_gather.fields()[key],
          name=f"reduce/ring_segmented: {key} with two segments per rank (C = 2N) is the ring reduce-scatter + "
               "gather's", source=_GLOO_REDUCE)
    for key in ("send", "total", "beta", "gamma")
) + (
    # the ring needs (N − 1)·P segments from each rank; the loop sends N·P − 2
    Claim(_filled(_segmented.others.send) - _filled(_ring_gather.others.send),
          (_P_SEG - 2) * S.K,
          name="reduce/ring_segmented: where segments fill the buffer, a non-root sends P − 2 segments of K "
               "beyond the ring's M", source=_GLOO_REDUCE, domain=_PER_RANK),
)

CHAPTER = _replace(CHAPTER, claims=tuple(CHAPTER.claims) + GLOO_CLAIMS + BINOMIAL_CLAIMS + ALLTOALL_CLAIMS
                   + SEGMENTED_CLAIMS)
