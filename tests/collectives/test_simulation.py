"""Execution evidence: every algorithm, run message by message, against its formula.

The simulator (symcomm.collectives.simulator) moves numpy buffers and counts; the formulas
(symcomm.collectives.algorithms) are written from the papers.  Neither reads the other: these
tests are where they meet.  Data are random integers, so sums are exact.
"""

import ast

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from symcomm.core import symbols as S
from symcomm.collectives.algorithms import ALGORITHMS, ALONE, ALONE_NAME, POW2, N_DIVIDES_M, G_DIVIDES_N, PAIR, C_DIVIDES_M, CORE_DIVIDES_M
from symcomm.numbers.evaluation import exact
from symcomm.collectives.primitives import PRIMITIVES
from symcomm.collectives.executions import EXECUTIONS
from symcomm.collectives.simulator import run, expected

from conftest import ROOT


def test_every_algorithm_has_an_execution():
    # a closed form has its own execution; a composition runs its phases' (none of its own)
    alone = {(name, ALONE_NAME) for name in ALONE}
    assert set(EXECUTIONS) == {key for key, alg in ALGORITHMS.items() if not alg.phases} | alone
    for alg in ALGORITHMS.values():
        assert all(phase.implementation in ALGORITHMS.values() for phase in alg.phases)



#: the simulator's modules: the machine, the closed forms' executions, the compositions
SIMULATOR = ("network", "executions", "simulator")
#: all they may import of symcomm: the symbols (N, M, G name a phase's group and message) and the
#: primitives' definitions (what a rank holds before and after); never the catalog's costs
SIMULATOR_MAY_IMPORT = {"symcomm.core.symbols", "symcomm.collectives.primitives",
                        *(f"symcomm.collectives.{name}" for name in SIMULATOR)}


def _symcomm_imports(path):
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names if alias.name.startswith("symcomm")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:      # relative to symcomm.collectives
                base = ["symcomm", "collectives"][: 3 - node.level]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.startswith("symcomm"):
                # "from . import x" and "from ..core import symbols" name modules
                out |= {f"{target}.{alias.name}" if not node.module or target.count(".") == 1 else target
                        for alias in node.names}
    return out


@pytest.mark.parametrize("name", SIMULATOR)
def test_the_simulator_reads_no_formula(name):
    # the independent evidence must stay independent (module docstring): the simulator's modules import
    # no algorithm, bound, profile, strategy or evaluator, and never ask anything for its cost
    path = ROOT / "symcomm" / "collectives" / f"{name}.py"
    assert _symcomm_imports(path) <= SIMULATOR_MAY_IMPORT
    attributes = {node.attr for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                  if isinstance(node, ast.Attribute)}
    assert not attributes & {"cost", "costs", "time", "formula"}


@st.composite
def layouts(draw, alg):
    """(N, M, G, C) admissible for ``alg``: N in 2..64, powers of two where required; the two-level forms on
    N in 2..16 (every shape they have is there: one rank per node G = 1, one node G = N, both levels of two or
    more ranks with an odd or even number of nodes, 12 = 2·6 = 3·4 = 4·3 = 6·2; their simulation grows with the
    cube of N, and N up to 64 cost a minute each)."""
    if PAIR in alg.requires:
        n = 2
    elif POW2 in alg.requires:
        n = 2 ** draw(st.integers(1, 6))
    else:
        n = draw(st.integers(2, 16 if G_DIVIDES_N in alg.requires else 64))
    g = None
    if G_DIVIDES_N in alg.requires:
        divisors = [x for x in range(1, n + 1) if n % x == 0]
        g = draw(st.sampled_from(divisors))
    per_rank = draw(st.integers(1, 4))
    m = n * per_rank if N_DIVIDES_M in alg.requires else draw(st.integers(1, 3 * n))
    if CORE_DIVIDES_M in alg.requires:
        m = (1 << (n.bit_length() - 1)) * per_rank
    chunks = None
    if C_DIVIDES_M in alg.requires:
        chunks = draw(st.integers(1, 8))
        m = chunks * draw(st.integers(1, 4))
    segment = None
    if S.K in alg.cost.total.free_symbols:       # gloo's segments of at most K elements: any M,
        segment = draw(st.integers(1, 5))      # from a few segments to many per rank, odd sizes too
        m = draw(st.integers(1, 6 * n * segment + 3))
    return n, m, g, chunks, segment


def _same(got, want):
    return want is None or (got is not None and np.array_equal(got, want))


#: the two-level compositions simulate a group of nodes of G ranks each: the slow ones
SLOW = {key for key in ALGORITHMS if key[1] == "hierarchical"}


@pytest.mark.parametrize("key", [pytest.param(k, marks=pytest.mark.slow) if k in SLOW else k for k in sorted(ALGORITHMS)],
                         ids=lambda k: f"{k[0]}-{k[1]}")
# 25 per algorithm: each algorithm's lines (simulator and formula) are all reached by its 4th example
# (tests/tools/hypothesis_reach.py, 2026-12-02); the rest vary the values a closed form can get wrong while the code
# path stays: N odd, even and a power of two, M with and without a remainder, every divisor G on the two-level forms
# (layouts above)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_execution_matches_definition_and_formula(key, data):
    alg = ALGORITHMS[key]
    n, m, g, chunks, segment = data.draw(layouts(alg))
    seed = data.draw(st.integers(0, 2**32 - 1))
    inputs = PRIMITIVES[alg.primitive].inputs_for(n, m, np.random.default_rng(seed))

    result = run(alg, inputs, ranks_per_node=g, chunks=chunks, segment=segment)

    # 1. the data: the algorithm computes the primitive
    want = expected(alg.primitive, inputs)
    assert all(_same(got, w) for got, w in zip(result.outputs, want))

    # 2. the counts: what the execution measured equals the formula at this N, M (and G)
    values = {S.N: n, S.M: m}
    if g is not None:
        values[S.G] = g
    if chunks is not None:
        values[S.C] = chunks
    if segment is not None:
        values[S.K] = segment
    cost = alg.cost
    assert result.send == exact(cost.send, values)
    assert result.recv == exact(cost.recv, values)
    assert result.total == exact(cost.total, values)
    for name, measured in result.coefficients.items():
        assert measured == exact(cost.coefficient(S.symbol(name)), values), name
    if cost.root is not None:
        assert result.sent[0] == exact(cost.root.send, values)
        assert result.received[0] == exact(cost.root.recv, values)
        assert max(result.sent[1:]) == exact(cost.others.send, values)
        assert max(result.received[1:]) == exact(cost.others.recv, values)


@pytest.mark.parametrize("primitive", sorted(ALONE))
def test_a_group_of_one_moves_nothing(primitive):
    # definition: at N = 1 every primitive maps the one rank's buffer to itself (a sum of one
    # term, one block of one, a broadcast to nobody), so no message is needed: all counts 0
    x = np.random.default_rng(1).integers(-9, 9, 12)
    result = run(ALONE[primitive], [x])
    assert np.array_equal(result.outputs[0], x)
    assert result.sent == (0,) and result.received == (0,) and result.messages == (0,)
    assert set(result.coefficients.values()) == {0}
    cost = ALONE[primitive].cost
    assert all(exact(v, {S.N: 1, S.M: 12}) == 0 for v in cost.fields().values())


def test_binomial_broadcast_and_reduce_on_twelve_ranks():
    # hand count, MPICH's binomial trees on N = 12 (masks 8, 4, 2, 1; ⌈log₂12⌉ = 4 rounds):
    # broadcast: 0 → 8; 0 → 4, 8 → (12 absent); 0 → 2, 4 → 6, 8 → 10; 0 → 1, 2 → 3, 4 → 5, 6 → 7, 8 → 9, 10 → 11
    # so the root sends 4 messages, ranks 4 and 8 two each, every rank but 0 receives one;
    # reduce is the same tree upside down (the root receives 4, ranks 4 and 8 two each)
    n, m = 12, 5
    for primitive, root_field, other_field in (("broadcast", "send", "send"), ("reduce", "recv", "recv")):
        alg = ALGORITHMS[(primitive, "binomial_tree")]
        assert not alg.violations({S.N: n})
        inputs = PRIMITIVES[primitive].inputs_for(n, m, np.random.default_rng(3))
        result = run(alg, inputs)
        assert all(_same(got, want) for got, want in zip(result.outputs, expected(primitive, inputs)))
        per_rank = result.sent if root_field == "send" else result.received
        assert per_rank[0] == 4 * m and per_rank[4] == per_rank[8] == 2 * m
        assert max(per_rank[1:]) == 2 * m
        assert result.coefficients["alpha"] == 4 and result.coefficients["beta"] == 4 * m
        assert result.total == 11 * m
        cost = alg.cost
        assert exact(getattr(cost.root, root_field), {S.N: n, S.M: m}) == 4 * m
        assert exact(getattr(cost.others, other_field), {S.N: n, S.M: m}) == 2 * m


def test_rabenseifner_fold_on_six_ranks_by_hand():
    # MPICH allreduce_intra_reduce_scatter_allgather.c, N = 6, M = 8: pof2 = 4, rem = 2.
    # fold: 0 → 1, 2 → 3 (8 each, added); core ranks 1, 3, 4, 5 halve 8 → 4 → 2 and double back
    # (4 + 2 sent each way); unfold: 1 → 0, 3 → 2 (8 each).
    # rank 1 sends 6 + 6 + 8 = 20 and receives 8 + 6 + 6 = 20; total 16 + 4·12 + 16 = 80 = 2(N − 1)M;
    # rounds 1 + 2 + 2 + 1 = 6; β = 8 + 4 + 2 + 2 + 4 + 8 = 28; γ = 8 + 4 + 2 = 14
    alg = ALGORITHMS[("all_reduce", "rabenseifner_fold")]
    inputs = PRIMITIVES["all_reduce"].inputs_for(6, 8, np.random.default_rng(5))
    result = run(alg, inputs)
    assert all(_same(got, want) for got, want in zip(result.outputs, expected("all_reduce", inputs)))
    assert (result.send, result.recv, result.total) == (20, 20, 80)
    assert result.coefficients["alpha"] == 6 and result.coefficients["beta"] == 28
    assert result.coefficients["gamma"] == 14
    values = {S.N: 6, S.M: 8}
    cost = alg.cost
    assert [exact(getattr(cost, k), values) for k in ("send", "recv", "total", "alpha", "beta", "gamma")] == \
        [20, 20, 80, 6, 28, 14]
    assert alg.violations({S.N: 6, S.M: 6})      # 6 is no multiple of pof2 = 4
    assert not alg.violations({S.N: 12, S.M: 8})


def test_bruck_all_to_all_moves_half_the_buffer_per_round():
    # N = 8, M = 64 (blocks of 8): rounds k = 0, 1, 2 each forward the 4 blocks whose index has
    # bit k set: 32 elements a round, 96 in all. MPICH's n (data sent to all others) is 7 * 8 = 56,
    # and its published (n/2) lg p = 84 = 96 * 7/8 (alltoall_intra_brucks.c)
    inputs = PRIMITIVES["all_to_all"].inputs_for(8, 64, np.random.default_rng(7))
    result = run(ALGORITHMS[("all_to_all", "bruck")], inputs)
    assert result.send == 96 and result.coefficients["beta"] == 96 and result.coefficients["alpha"] == 3
    assert 56 // 2 * 3 == 96 * 7 // 8


def test_binomial_scatter_and_gather_on_twelve_ranks():
    # hand count, N = 12, M = 12 (blocks of one element), MPICH's binomial tree: the subtree of
    # rank r is min(lowbit(r), N − r) ranks: ranks 4 and 8 hold 4, ranks 2, 6, 10 hold 2, the odd
    # ranks 1. Gather: each non-root sends its subtree (busiest 4), receives it minus its own block
    # (busiest 3), total 4 + 4 + 2·3 + 6 = 20 (= Σ popcount(0..11)); the root receives 11 in
    # rounds of 1, 2, 4, 4 (β = 11, α = 4). Scatter is the same tree downwards.
    n, m = 12, 12
    for primitive, send, recv in (("gather", 4, 3), ("scatter", 3, 4)):
        alg = ALGORITHMS[(primitive, "binomial_tree")]
        inputs = PRIMITIVES[primitive].inputs_for(n, m, np.random.default_rng(11))
        result = run(alg, inputs)
        assert all(_same(got, want) for got, want in zip(result.outputs, expected(primitive, inputs)))
        assert max(result.sent[1:]) == send and max(result.received[1:]) == recv
        assert result.total == 20
        assert result.coefficients["alpha"] == 4 and result.coefficients["beta"] == 11
        values = {S.N: n, S.M: m}
        assert exact(alg.cost.others.send, values) == send and exact(alg.cost.others.recv, values) == recv
        assert exact(alg.cost.total, values) == 20


def test_mpich_folds_on_six_ranks_by_hand():
    # MPICH, N = 6: pof2 = 4, rem = 2.
    # allreduce_intra_recursive_doubling.c, M = 5: fold 0 → 1, 2 → 3 (5 each, added); core ranks
    # 1, 3, 4, 5 swap whole buffers at distance 1 ((1,3), (4,5)) and 2 ((1,4), (3,5)); unfold 1 → 0,
    # 3 → 2. Rank 1 sends 5 + 5 + 5 = 15 and receives 15; total 10 + 4·10 + 10 = 60; rounds 4;
    # β = 4·5 = 20; γ = 5 (fold) + 2·5 = 15.
    # reduce_intra_reduce_scatter_gather.c, M = 8, root 0: fold 1 → 0, 3 → 2 (8 each, added); core
    # 0, 2, 4, 5 halve 8 → 4 (pairs (0,2), (4,5)) → 2 (pairs (0,4), (2,5)); gather: 4 → 0 and 5 → 2
    # (one block of 2), then 2 → 0 (two blocks, 4). Root: sends 4 + 2 = 6, receives 8 + 4 + 2 + 2 + 4 = 20;
    # rank 2 sends 4 + 2 + 4 = 10, receives 8 + 4 + 2 + 2 = 16; total 16 + 24 + 8 = 48;
    # rounds 1 + 2 + 2 = 5; β = 8 + 4 + 2 + 2 + 4 = 20; γ = 8 + 4 + 2 = 14.
    cases = ((("all_reduce", "recursive_doubling_fold"), 5, 15, 15, 60, 4, 20, 15, None),
             (("reduce", "rabenseifner_fold"), 8, 10, 16, 48, 5, 20, 14, (6, 20)))
    for key, m, send, recv, total, alpha, beta, gamma, root in cases:
        alg = ALGORITHMS[key]
        inputs = PRIMITIVES[key[0]].inputs_for(6, m, np.random.default_rng(13))
        result = run(alg, inputs)
        assert all(_same(got, want) for got, want in zip(result.outputs, expected(key[0], inputs)))
        others = (max(result.sent[1:]), max(result.received[1:])) if root else (result.send, result.recv)
        assert others == (send, recv) and result.total == total
        assert (result.coefficients["alpha"], result.coefficients["beta"], result.coefficients["gamma"]) == \
            (alpha, beta, gamma)
        values = {S.N: 6, S.M: m}
        cost = alg.cost
        part = cost.others if root else cost
        assert (exact(part.send, values), exact(part.recv, values), exact(cost.total, values)) == (send, recv, total)
        if root:
            assert (result.sent[0], result.received[0]) == root
            assert (exact(cost.root.send, values), exact(cost.root.recv, values)) == root


@pytest.mark.parametrize("nodes, k", [(2, 8), (4, 4), (3, 2)])
def test_a_multi_channel_flat_ring_crosses_nodes_at_every_rank_for_1_over_k(nodes, k):
    # Hand count: a ring all-reduce of M over g = nodes·k ranks sends 2(g−1)/g·M per rank (g − 1 reduce-scatter
    # and g − 1 all-gather steps of M/g).  On one channel (one ring) the node's last rank in ring order is its
    # exit: it sends all of that across nodes, the others nothing.  With k channels whose order rotates inside
    # each node, each rank is the exit of exactly one channel, of M/k: it sends 2(g−1)/g·M/k across nodes and
    # 2(g−1)/g·M·(k−1)/k inside; g = 16, k = 8, M = 512 (a multiple of g·k): 960 sent, 120 across.
    from symcomm.collectives.simulator import run_channels

    g = nodes * k
    m = g * k * 4
    rng = np.random.default_rng(g)
    inputs = [rng.integers(0, 100, m).astype(float) for _ in range(g)]
    flat = 2 * (g - 1) * m // g
    spread = run_channels(inputs, k, channels=k)
    assert all(np.array_equal(out, sum(inputs)) for out in spread.outputs)
    assert spread.sent == tuple([flat] * g)
    assert spread.sent_inter == tuple([flat // k] * g)
    # every step of every channel has a hop across nodes: 2(g − 1) α_inter per channel, run one after another
    assert spread.coefficients["alpha_inter"] == k * 2 * (g - 1) and spread.coefficients["alpha"] == 0
    # where the execution meets the formula: the catalog's ring all-reduce moved across nodes with k ranks per
    # node (Cost.across_nodes) puts on β_inter what each rank sent across, on β what it sent inside the node
    cost = ALGORITHMS[("all_reduce", "ring")].cost.subs({S.N: g, S.M: m}).across_nodes(k)
    assert cost.coefficient(S.beta_inter) == spread.sent_inter[0]
    assert cost.coefficient(S.beta) == spread.sent[0] - spread.sent_inter[0]
    assert cost.coefficient(S.alpha_inter) == 2 * (g - 1)      # one channel's steps: the channels run side by side
    # one channel: the one-NIC pricing, all of the exit rank's elements across nodes
    one = run_channels(inputs, k, channels=1)
    assert max(one.sent_inter) == flat and sorted(one.sent_inter)[-nodes - 1] == 0


@pytest.mark.parametrize("n, g, fewest", [(16, 8, 8), (12, 8, 4), (32, 8, 8)])
def test_a_pairwise_all_to_all_across_nodes_sends_n_minus_k_of_its_n_minus_1_blocks_across(n, g, fewest):
    # Hand count: in a pairwise all-to-all of M per rank over n ranks, a rank sends one block of M/n to each of
    # its n − 1 peers, one peer per step.  With nodes of g consecutive ranks, a rank on a node holding k of the
    # group has k − 1 peers beside it and n − k across: n = 16, g = 8 gives k = 8 on both nodes, 8 of its 15
    # blocks (8/15 of what it sends) and 8 of its 15 steps across; n = 12 gives the second node k = 4, its
    # ranks sending 8 of 11 blocks across (the first node's: 4 of 11); n = 32, k = 8: 24 of 31.
    from symcomm.base.crossing import PEERS
    from symcomm.collectives.network import Network

    m = n * 6
    rng = np.random.default_rng(n)
    inputs = [rng.integers(0, 100, m).astype(float) for _ in range(n)]
    # the rounds mix levels (a rank's peer this step may be beside it or across): counted per rank and level
    net = Network(n, g, mixed_levels=True)
    out = EXECUTIONS[("all_to_all", "pairwise")](net, dict(enumerate(inputs)))
    result = net.finish([out[r] for r in range(n)])
    assert all(np.array_equal(a, b) for a, b in zip(result.outputs, expected("all_to_all", inputs)))
    block = m // n
    assert result.sent == tuple([(n - 1) * block] * n)
    steps_across = [result.sent_inter[r] // block for r in range(n)]
    assert steps_across == [n - min(g, n - node * g) for node in range(-(-n // g)) for _ in range(min(g, n - node * g))]
    if (n, g) == (16, 8):
        assert steps_across == [8] * 16 and result.sent_inter[0] * 15 == result.sent[0] * 8     # 8/15 crosses
    # where the execution meets the formula: the busiest rank (on the node with the fewest, k) against the
    # catalog's pairwise all-to-all moved across nodes by the PEERS rule (Cost.across_nodes)
    busiest = max(range(n), key=lambda r: result.sent_inter[r])
    cost = ALGORITHMS[("all_to_all", "pairwise")].cost.subs({S.N: n, S.M: m}).across_nodes(fewest, PEERS, n)
    assert cost.coefficient(S.beta_inter) == result.sent_inter[busiest]
    assert cost.coefficient(S.beta) == result.sent[busiest] - result.sent_inter[busiest]
    assert cost.coefficient(S.alpha_inter) == steps_across[busiest] and cost.coefficient(S.alpha) == n - 1 - steps_across[busiest]


def test_a_bruck_all_to_all_across_nodes_crosses_in_every_round_at_a_nodes_last_rank():
    # Why Bruck keeps the one-NIC pricing (base.crossing.ONE_NIC, k = 1): in round j a rank sends to the rank
    # 2^j ahead, and a node's last rank has its next 2^j ≥ 1 ranks on the next node, so every one of its rounds
    # crosses: all it sends goes across, as the k = 1 split counts (hand count, 16 ranks on nodes of 8).
    from symcomm.collectives.network import Network

    n, g, m = 16, 8, 16 * 4
    rng = np.random.default_rng(7)
    inputs = [rng.integers(0, 100, m).astype(float) for _ in range(n)]
    net = Network(n, g, mixed_levels=True)
    out = EXECUTIONS[("all_to_all", "bruck")](net, dict(enumerate(inputs)))
    result = net.finish([out[r] for r in range(n)])
    assert all(np.array_equal(a, b) for a, b in zip(result.outputs, expected("all_to_all", inputs)))
    assert result.sent_inter[g - 1] == result.sent[g - 1] > 0
    assert result.sent_inter[0] < result.sent[0]          # the first rank's short hops stay on its node
