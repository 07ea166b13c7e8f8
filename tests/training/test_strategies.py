"""Strategies against independent reasoning: hand counts from the definitions, published numbers.

Expected values here are written from what each rank holds and sends, never read from
symcomm.training.strategies.  Fractions keep them exact.
"""

from fractions import Fraction

import pytest
import sympy as sp
from hypothesis import given, settings, strategies as st

from symcomm.core import symbols as S
from symcomm.core.cost import Cost
from symcomm.training.strategies import STRATEGIES, strategy
from symcomm.training.terms import Term, forward

# 25: each strategy's lines are all reached by its first example (tests/tools/hypothesis_reach.py, 2026-12-02): the
# formulas are checked against hand-written definitions at 25 points each: the values (N, b, s, h, ...) are what the
# rest vary
FAST = settings(max_examples=25, deadline=None)


def exact(expr, values) -> Fraction:
    value = sp.sympify(expr).subs(values)
    assert value.is_Rational, f"{expr} at {values} is {value}, not a number"
    return Fraction(int(value.p), int(value.q))


def ring_block_sends(n: int, buffer: Fraction) -> Fraction:
    """A ring pass (all-gather or reduce-scatter) of a full buffer: N−1 blocks of buffer/N."""
    return (n - 1) * buffer / n


# -- published numbers -------------------------------------------------------------------------

def test_narayanan_tensor_parallel_example():
    # Narayanan et al. 2021 §3.2: per layer, per device, 8bsh(t−1)/t; t=8, b=1, s=2048, h=12288
    # → 8·1·2048·12288·7/8 = 7·25,165,824 = 176,160,768 elements.
    cost = STRATEGIES["tp"].cost()
    values = {S.N: 8, S.b: 1, S.s: 2048, S.h: 12288, S.L: 1}
    assert exact(cost.send, values) == 176_160_768


def test_llama2_70b_like_hybrid():
    # Issue 3: t=8, p=4, d=4, b=128, s=4096, h=8192, L=80, bf16, ZeRO-1.
    # TP by hand: 4 all-reduces per layer (2 fwd + 2 bwd), each sends 2·(t−1)/t of the
    # replica's (b/d)·s·h = 32·4096·8192 activations; 80/4 = 20 layers per stage.
    replica = 32 * 4096 * 8192
    tp_elements = 4 * 2 * Fraction(7, 8) * replica * 20
    # PP by hand: an interior stage sends the replica's activations forward and gradients back.
    pp_elements = 2 * replica
    values = {S.t: 8, S.p: 4, S.d: 4, S.c: 1, S.e: 1, S.b: 128, S.s: 4096, S.h: 8192, S.L: 80, S.m: 32,
              S.Phi: 70 * 10**9, S.G: 8}
    axes = STRATEGIES["hybrid"].by_axis(zero=1)
    assert exact(axes["tp"].send, values) == tp_elements
    assert exact(axes["pp"].send, values) == pp_elements
    assert round(float(2 * tp_elements) / 1e9, 1) == 300.6     # GB, bf16
    assert round(float(2 * pp_elements) / 1e9, 2) == 4.29
    # DP, ZeRO-1: reduce-scatter + all-gather of the 70e9/(8·4) shard over d = 4
    assert exact(axes["dp"].send, values) == 2 * Fraction(70 * 10**9, 32) * Fraction(3, 4)
    # levels: the TP group is one node (t = G), pipeline and data groups cross nodes
    assert axes["tp"].coefficient(S.beta_inter).subs(values) == 0
    assert exact(axes["pp"].coefficient(S.beta_inter), values) == pp_elements


# -- single strategies, for many sizes ------------------------------------------------------------

@FAST
@given(n=st.integers(2, 64), phi=st.integers(1, 10**12))
def test_data_parallel_ring_and_naive(n, phi):
    values = {S.N: n, S.Phi: phi}
    ring = STRATEGIES["dp"].cost()
    # ring all-reduce = ring reduce-scatter + ring all-gather of Φ
    assert exact(ring.send, values) == 2 * ring_block_sends(n, Fraction(phi))
    assert exact(ring.total, values) == 2 * (n - 1) * phi
    naive = STRATEGIES["dp"].cost(algorithm="naive")
    # parameter server: every non-root sends Φ up, the root sends Φ to each of N−1 ranks
    assert exact(naive.root.send, values) == (n - 1) * phi
    assert exact(naive.root.recv, values) == (n - 1) * phi
    assert exact(naive.send, values) == (n - 1) * phi
    assert exact(naive.total, values) == 2 * (n - 1) * phi


@FAST
@given(n=st.integers(2, 64), phi=st.integers(1, 10**12))
def test_zero_stages(n, phi):
    values = {S.N: n, S.Phi: phi}
    rs_plus_ag = 2 * ring_block_sends(n, Fraction(phi))
    assert exact(STRATEGIES["zero1"].cost().send, values) == rs_plus_ag
    assert exact(STRATEGIES["zero2"].cost().send, values) == rs_plus_ag
    # ZeRO-3: all-gather forward, all-gather backward, reduce-scatter
    assert exact(STRATEGIES["zero3"].cost().send, values) == 3 * ring_block_sends(n, Fraction(phi))
    assert STRATEGIES["fsdp"] is STRATEGIES["zero3"]


@FAST
@given(g=st.integers(1, 16), replicas=st.integers(1, 16), phi=st.integers(1, 10**9))
def test_hsdp(g, replicas, phi):
    n = g * replicas
    values = {S.N: n, S.G: g, S.Phi: phi}
    inside = 3 * ring_block_sends(g, Fraction(phi))                     # ZeRO-3 over the node
    across = 2 * ring_block_sends(replicas, Fraction(phi, g))           # all-reduce of the shard
    cost = STRATEGIES["hsdp"].cost()
    assert exact(cost.send, values) == inside + across
    assert exact(cost.coefficient(S.beta_inter), values) == across


@FAST
@given(n=st.integers(2, 64), b=st.integers(1, 64), s=st.integers(1, 8192), h=st.integers(1, 16384),
       layers=st.integers(1, 8))
def test_tensor_and_sequence_parallel(n, b, s, h, layers):
    values = {S.N: n, S.b: b, S.s: s, S.h: h, S.L: layers}
    bsh = Fraction(b * s * h)
    # per layer: 2 all-reduces forward + 2 backward, each = reduce-scatter + all-gather
    per_layer = 4 * 2 * ring_block_sends(n, bsh)
    assert exact(STRATEGIES["tp"].cost().send, values) == layers * per_layer
    assert exact(STRATEGIES["sp"].cost().send, values) == layers * per_layer
    # full recompute: the 2 forward all-reduces again
    assert exact(STRATEGIES["tp"].cost(recompute="full").send, values) == layers * 6 * 2 * ring_block_sends(n, bsh)


def _interleaved_pipeline(n: int, chunks: int, bsh: int) -> tuple[int, int]:
    """(busiest GPU's send, total) by walking the chunk boundaries: chunk j lives on GPU j mod n."""
    sent = [0] * n
    for j in range(n * chunks - 1):
        sent[j % n] += bsh                 # activations forward, chunk j → j + 1
        sent[(j + 1) % n] += bsh           # gradients backward, chunk j + 1 → j
    return max(sent), sum(sent)


@FAST
@given(n=st.integers(3, 16), chunks=st.integers(1, 4), bsh=st.integers(1, 10**6), micro=st.integers(1, 8))
def test_pipeline_by_walking_the_boundaries(n, chunks, bsh, micro):
    busiest, total = _interleaved_pipeline(n, chunks, bsh)
    schedule = "interleaved" if chunks > 1 else "1f1b"
    values = {S.N: n, S.v: chunks, S.b: bsh, S.s: 1, S.h: 1, S.m: micro}
    cost = STRATEGIES["pp"].cost(schedule=schedule)
    assert exact(cost.send, values) == busiest
    assert exact(cost.total, values) == total
    assert exact(cost.alpha, values) == 2 * chunks * micro          # one message per micro-batch each way
    bubble = STRATEGIES["pp"].extras(schedule=schedule)["bubble_fraction"]
    assert exact(bubble, values) == Fraction(n - 1, chunks * micro)  # Narayanan et al. 2021 §2.2


def _first_stage_peak_1f1b(stages: int, micro: int) -> int:
    """Micro-batches whose activations stage 0 holds at once under 1F1B, by walking its schedule (Megatron-LM
    schedules.py, forward_backward_pipelining_without_interleaving: min(p − 1, m) warm-up forwards, then one forward
    and one backward per remaining micro-batch, then the cool-down backwards)."""
    warmup = min(stages - 1, micro)
    held = peak = warmup
    for _ in range(micro - warmup):
        held += 1                      # the steady state's forward
        peak = max(peak, held)
        held -= 1                      # and its backward
    return peak


@FAST
@given(n=st.integers(2, 16), micro=st.integers(1, 24))
def test_first_stage_in_flight_1f1b_by_walking_the_schedule(n, micro):
    held = STRATEGIES["pp"].extras(schedule="1f1b")["micro_batches_in_flight"]
    assert exact(held, {S.N: n, S.m: micro}) == _first_stage_peak_1f1b(n, micro)


@FAST
@given(n=st.integers(2, 64), k=st.integers(1, 8), tokens=st.integers(1, 10**5), h=st.integers(1, 8192))
def test_expert_parallel(n, k, tokens, h):
    values = {S.N: n, S.k: k, S.b: tokens, S.s: 1, S.h: h, S.L_moe: 1, S.f: sp.Rational(5, 4)}
    routed = Fraction(k * tokens * h)
    # dispatch + combine, forward and backward; uniform routing keeps 1/N at home
    assert exact(STRATEGIES["ep"].cost().send, values) == 4 * routed * (n - 1) / n
    assert exact(STRATEGIES["ep"].cost(capacity="padded").send, values) == 4 * Fraction(5, 4) * routed * (n - 1) / n


@FAST
@given(n=st.integers(2, 32), b=st.integers(1, 8), shard=st.integers(1, 4096), h=st.integers(1, 8192),
       h_kv=st.integers(1, 8192))
def test_context_parallel(n, b, shard, h, h_kv):
    s = n * shard
    values = {S.N: n, S.b: b, S.s: s, S.h: h, S.h_kv: h_kv, S.L: 1}
    # Ulysses forward: all-to-all of this rank's b·(s/N) tokens of Q, K, V, O; N−1 of N blocks leave
    ulysses = STRATEGIES["cp_ulysses"]
    assert exact(ulysses.cost_where(forward).send, values) == 4 * Fraction(b * shard * h * (n - 1), n)
    assert exact(ulysses.cost_where(forward, gqa=1).send, values) == 2 * Fraction(b * shard * (h + h_kv) * (n - 1), n)
    # ring attention forward: this rank forwards N−1 K blocks and N−1 V blocks of b·(s/N)·h_kv
    ring = STRATEGIES["cp_ring"]
    assert exact(ring.cost_where(forward, gqa=1).send, values) == 2 * (n - 1) * b * shard * h_kv
    assert exact(ring.cost_where(forward).send, values) == 2 * (n - 1) * b * shard * h


# -- levels and composition -------------------------------------------------------------------

def test_term_level_follows_the_relation():
    term = Term("all_reduce", "ring", S.t, S.M, 1, "x", across_nodes=S.t > S.G)
    inside = {S.t: 4, S.G: 8, S.M: 1024}
    across = {S.t: 16, S.G: 8, S.M: 1024}
    assert term.cost.coefficient(S.beta).subs(inside) == 2 * 1024 * 3 // 4
    assert term.cost.coefficient(S.beta_inter).subs(inside) == 0
    assert term.cost.coefficient(S.beta).subs(across) == 0
    assert term.cost.coefficient(S.beta_inter).subs(across) == 2 * 1024 * 15 // 16
    assert term.cost.coefficient(S.alpha_inter).subs(across) == 2 * 15


def test_a_ring_term_across_nodes_splits_its_elements_over_the_nics_of_its_ranks_on_a_node():
    # the same ring all-reduce of M = 1024 over t = 16 ranks on nodes of 8, now k = 8 of them on each node:
    # every step waits α_inter (2·15 of them); of the 2·15/16·1024 = 1920 elements a rank sends, 1/8 (240)
    # leave through its own NIC and 7/8 (1680) stay on the node's links
    term = Term("all_reduce", "ring", S.t, S.M, 1, "x", across_nodes=S.t > S.G, ranks_per_node=S.G)
    across = {S.t: 16, S.G: 8, S.M: 1024}
    assert term.cost.coefficient(S.beta_inter).subs(across) == 240
    assert term.cost.coefficient(S.beta).subs(across) == 1680
    assert term.cost.coefficient(S.alpha_inter).subs(across) == 30 and term.cost.coefficient(S.alpha).subs(across) == 0
    # inside a node k changes nothing: 2·3/4·1024 = 1536 on β
    inside = {S.t: 4, S.G: 8, S.M: 1024}
    assert term.cost.coefficient(S.beta).subs(inside) == 1536 and term.cost.coefficient(S.beta_inter).subs(inside) == 0
    # a point-to-point send or a Bruck all-to-all has no channels to spread and no peers to count: refused
    with pytest.raises(ValueError, match="ring collectives and the pairwise all-to-all only"):
        Term("all_to_all", "bruck", S.t, S.M, 1, "x", across_nodes=True, ranks_per_node=4)
    with pytest.raises(ValueError, match="ring collectives and the pairwise all-to-all only"):
        Term("send_recv", "direct", 2, S.M, 1, "x", across_nodes=True, ranks_per_node=4)


def test_a_pairwise_all_to_all_term_across_nodes_prices_its_peers_on_the_node_at_the_node_links():
    # hand count: a pairwise all-to-all of M = 1600 per rank over e = 16 ranks, k = 8 of them on each node of 8:
    # a rank sends 15 blocks of 1600/16 = 100, 7 to peers on its node (α, β: 7 messages, 700 elements) and 8
    # across (α_inter, β_inter: 8 messages, 800 elements), one-port, so they add; k = 1: all 15 and 1500 across
    term = Term("all_to_all", "pairwise", S.e, S.M, 1, "x", across_nodes=S.e > S.G, ranks_per_node=S.G)
    across = {S.e: 16, S.G: 8, S.M: 1600}
    got = {sym: term.cost.coefficient(sym).subs(across) for sym in (S.alpha, S.beta, S.alpha_inter, S.beta_inter)}
    assert got == {S.alpha: 7, S.beta: 700, S.alpha_inter: 8, S.beta_inter: 800}
    one = Term("all_to_all", "pairwise", 16, 1600, 1, "x", across_nodes=True)
    assert (one.cost.coefficient(S.alpha_inter), one.cost.coefficient(S.beta_inter), one.cost.alpha, one.cost.beta) \
        == (15, 1500, 0, 0)
    # inside a node (e = 8 ≤ G): 7 messages, 700 elements, all on the node's links
    inside = {S.e: 8, S.G: 8, S.M: 800}
    assert (term.cost.coefficient(S.beta).subs(inside), term.cost.coefficient(S.beta_inter).subs(inside)) == (700, 0)


def test_the_hybrids_expert_parallel_all_to_alls_carry_the_ranks_an_ep_group_has_on_a_node():
    # Megatron's expert grid with expert_tp=1 puts an EP group's e ranks consecutively (parallel_state.py): e = 16
    # on nodes of 8 is 8 + 8, k = 8; with the expert TP group = the TP group (t = 2), the EP group's ranks stand t
    # apart: its 16 ranks span 32 GPUs, 4 nodes holding 8/2 = 4 of them each
    from symcomm.training.strategies import STRATEGIES

    def ep_ks(**values):
        terms = STRATEGIES["hybrid"].terms(moe=1, **({"expert_tp": "1"} if values.pop("whole") else {}))
        at = {getattr(S, name): value for name, value in values.items()}
        return {sp.sympify(term.ranks_per_node).subs(at) for term in terms if term.primitive == "all_to_all"}

    assert ep_ks(whole=True, t=1, e=16, G=8, c=1, d=16, p=1) == {8}
    assert ep_ks(whole=False, t=2, e=16, G=8, c=1, d=16, p=1) == {4}


@pytest.mark.parametrize("group, inner, blocks, g, want", [
    (64, 2, 1, 72, 28),     # 128 ranks from 0 on nodes of 72: 0..71 holds 36 of the stride-2 group, 72..127 holds 28
    (64, 2, 1, 8, 4),       # nodes of 8 filled: 8/2 = 4 on each
    (16, 8, 4, 8, 1),       # t = 8 = G: one rank of the data-parallel group per node
    (64, 2, 2, 72, 1),      # p = 2: the second span starts mid-node (rank 128; 8 of its ranks on 72..143, and
                            # other sizes leave fewer): not placed from a node boundary, k = 1, the bound
    (12, 1, 1, 8, 4),       # 12 consecutive ranks: 8 + 4, the second node holds 4
    (6, 3, 1, 8, 1),        # inner 3 does not divide G = 8: nodes hold unequal strided shares; 1, the bound
])
def test_ranks_per_node_is_the_fewest_a_node_holds(group, inner, blocks, g, want):
    from symcomm.training.axes import ranks_per_node

    assert ranks_per_node(group, inner, blocks).subs(S.G, g) == want


def test_groups_multiply_only_the_total():
    term = Term("all_gather", "ring", 4, 400, 3, "x", groups=5)
    assert term.cost.send == 3 * 300
    assert term.cost.total == 5 * 3 * 3 * 400


def test_a_term_knows_its_pass():
    # the pass is a field; the label spells it in brackets, and forward() reads the field
    for name in ("forward", "forward recompute", "backward", "after the step"):
        term = Term("all_gather", "ring", 4, 400, 1, "parameter all-gather", phase=name)
        assert term.label == f"parameter all-gather ({name})"
        assert forward(term) == (name == "forward")
    assert Term("all_gather", "ring", 4, 400, 1, "x").label == "x"
    with pytest.raises(ValueError, match="unknown pass"):
        Term("all_gather", "ring", 4, 400, 1, "x", phase="sideways")
    terms = STRATEGIES["hybrid"].terms(recompute="full", sp=1)
    assert {t.phase for t in terms} == {"forward", "forward recompute", "backward", "after the step"}
    assert all(t.label.endswith(f"({t.phase})") for t in terms)


# -- bad input ------------------------------------------------------------------------------------

HYBRID_OK = {S.t: 2, S.p: 4, S.d: 4, S.c: 1, S.L: 32, S.b: 64, S.m: 8, S.N: 32}


def test_validate_accepts_a_good_layout():
    assert STRATEGIES["hybrid"].validate(HYBRID_OK) == []


def test_validate_names_the_parameter():
    hybrid = STRATEGIES["hybrid"]
    assert hybrid.validate({**HYBRID_OK, S.p: 3, S.L: 32, S.N: 32}) == [
        "t*p*d*c=24 must equal N=32",
        "L=32 must be divisible by p=3 (pipeline_split=first_last with L_first, L_last splits the layers unevenly)"]
    assert any(m.startswith("L=30 must be divisible by p=4") for m in hybrid.validate({**HYBRID_OK, S.L: 30}))
    assert hybrid.validate(HYBRID_OK, zero=4) == ["zero=4 is not allowed; choose 0, 1, 2 or 3"]
    assert hybrid.validate({**HYBRID_OK, S.a: 6, S.t: 4, S.N: 64}) == ["a=6 must be divisible by t=4"]
    assert any(msg.startswith("e=8") for msg in hybrid.validate({**HYBRID_OK, S.e: 8}))
    # Megatron's arguments.py: no interleaved schedule on one stage (schedules.py then runs no pipeline)
    one_stage = {**HYBRID_OK, S.p: 1, S.d: 16, S.L: 8, S.v: 2, S.b: 128}
    assert hybrid.validate(one_stage, schedule="interleaved") == ["p=1 must be at least 2"]
    assert hybrid.validate({**HYBRID_OK, S.v: 2}, schedule="interleaved") == []
    dp = STRATEGIES["dp"]
    assert dp.validate({S.N: 6}, algorithm="recursive_doubling") == [
        "N=6 is not allowed: recursive_doubling all_reduce needs a power-of-two group (2, 4, 8, ...)"]
    assert dp.validate({S.N: 8}, algorithm="recursive_doubling") == []


def test_unknown_options_raise_with_the_allowed_values():
    with pytest.raises(ValueError, match="zero=4 is not allowed; choose 0, 1, 2 or 3"):
        STRATEGIES["hybrid"].cost(zero=4)
    with pytest.raises(ValueError, match="schedule=zigzag is not allowed; choose gpipe, 1f1b or interleaved"):
        STRATEGIES["pp"].cost(schedule="zigzag")
    with pytest.raises(ValueError, match="unknown option"):
        STRATEGIES["tp"].cost(zero=1)
    with pytest.raises(ValueError, match="unknown strategy"):
        strategy("dpp")


# -- every chapter's claims prove ----------------------------------------------------------------

def test_every_chapter_claim_proves():
    from symcomm.derivations import CHAPTERS
    from symcomm.core.chapters import check_chapters

    failed = [(chapter.number, proof.claim.name, proof.detail)
              for chapter, proof in check_chapters(CHAPTERS) if not proof]
    assert failed == []


def test_pipeline_levels_by_rank_placement():
    # Megatron order: stage s holds ranks [s·tcd, (s+1)·tcd). With t·c·d = 4 and 8 GPUs per
    # node, stages 0-1 share node 0 and stages 2-3 node 1: only the 1→2 boundary crosses.
    # Stage 1 is the busiest: its activations go forward across nodes, its gradients go back
    # to stage 0 inside the node. One step of (b/d)·s·h elements each way.
    values = {S.t: 2, S.c: 1, S.d: 2, S.p: 4, S.G: 8, S.b: 8, S.s: 16, S.h: 32, S.L: 4, S.m: 2, S.Phi: 10**6}
    pp = STRATEGIES["hybrid"].by_axis(zero=1)["pp"]
    per_direction = (8 // 2) * 16 * 32
    assert exact(pp.coefficient(S.beta_inter), values) == per_direction
    assert exact(pp.coefficient(S.beta), values) == per_direction
    # with t·c·d = 8 = G every stage is a node of its own: both directions cross
    values.update({S.t: 4, S.d: 2})
    assert exact(pp.coefficient(S.beta_inter), values) == 2 * (8 // 2) * 16 * 32
    assert exact(pp.coefficient(S.beta), values) == 0


# -- strategies as the frameworks run them (issue 12) -------------------------------------------

@FAST
@given(n=st.integers(2, 64), phi=st.integers(1, 10**12), micro=st.integers(1, 64))
def test_zero_over_micro_batches(n, phi, micro):
    values = {S.N: n, S.Phi: phi, S.m: micro}
    block = ring_block_sends(n, Fraction(phi))           # one ring all-gather or reduce-scatter of Φ
    # DeepSpeed ZeRO-2 (deepspeed/runtime/engine.py allreduce_gradients): a reduce-scatter after every
    # micro-batch, one all-gather of the updated parameters after the step
    assert exact(STRATEGIES["zero2"].cost(micro_batches="m").send, values) == (micro + 1) * block
    # reduced once (what ZeRO-1 does): one reduce-scatter, one all-gather
    assert exact(STRATEGIES["zero2"].cost(micro_batches="m", grad_reduce="per_step").send, values) == 2 * block
    # ZeRO-3 / FSDP FULL_SHARD: per micro-batch, all-gather forward, all-gather backward, reduce-scatter
    assert exact(STRATEGIES["zero3"].cost(micro_batches="m").send, values) == 3 * micro * block
    # FSDP no_sync (torch/distributed/fsdp/fully_sharded_data_parallel.py): gathers as before, one reduce-scatter
    assert exact(STRATEGIES["fsdp"].cost(micro_batches="m", grad_reduce="per_step").send, values) \
        == (2 * micro + 1) * block
    # SHARD_GRAD_OP: gathered once per micro-batch for forward and backward
    assert exact(STRATEGIES["fsdp"].cost(micro_batches="m", reshard_after_forward=0).send, values) \
        == 2 * micro * block
    # SHARD_GRAD_OP inside no_sync: _should_free_in_backward is False, the parameters stay gathered
    assert exact(STRATEGIES["fsdp"].cost(micro_batches="m", reshard_after_forward=0, grad_reduce="per_step").send,
                 values) == 2 * block


LAYOUT = {S.t: 2, S.p: 4, S.d: 8, S.c: 1, S.e: 1, S.b: 512, S.s: 4096, S.h: 8192, S.L: 32, S.m: 16,
          S.Phi: 7 * 10**9, S.G: 8}


def test_hybrid_data_axis_per_framework():
    shard = Fraction(7 * 10**9, 2 * 4)                    # Φ/(t·p)
    block = ring_block_sends(8, shard)                    # one ring collective of the shard over d = 8
    hybrid = STRATEGIES["hybrid"]
    dp = lambda **o: exact(hybrid.by_axis(**o)["dp"].send, LAYOUT)   # noqa: E731
    # Megatron (distributed_data_parallel.py, finish_grad_sync once per step): all-reduce = RS + AG, once
    assert dp(zero=0) == 2 * block
    assert dp(zero=1) == 2 * block
    # DeepSpeed ZeRO-2: 16 all-reduces of the bucket, each rank keeping its partition (stage_1_and_2.py,
    # allreduce_and_scatter: 2 blocks each) + 1 all-gather; ZeRO-3: 16 × (2 all-gathers + reduce-scatter)
    assert dp(zero=2, framework="deepspeed") == 33 * block
    assert dp(zero=3, framework="deepspeed") == 48 * block
    assert dp(zero=1, framework="deepspeed") == 3 * block
    # each switch on its own
    assert dp(zero=2, framework="deepspeed", grad_reduce="per_step") == 3 * block
    assert dp(zero=0, framework="fsdp") == 16 * 2 * block                 # DDP/NO_SHARD without no_sync
    assert dp(zero=1, grad_reduce="per_micro_batch") == 17 * block
    assert dp(zero=3, framework="fsdp", reshard_after_forward=0) == 32 * block
    with pytest.raises(ValueError, match="zero=2 is not run by framework=megatron"):
        hybrid.cost(zero=2)
    with pytest.raises(ValueError, match="zero=1 is not run by framework=fsdp"):
        hybrid.cost(framework="fsdp")


def test_sequence_parallel_backward_regather():
    # Megatron-LM layers.py: the backward of each column-parallel GEMM (QKV, FC1) all-gathers its
    # sequence-sharded input again: per layer 6 all-gathers + 4 reduce-scatters of b·s·h, 10 instead of 8
    values = {S.N: 4, S.b: 2, S.s: 1024, S.h: 512, S.L: 3}
    block = ring_block_sends(4, Fraction(2 * 1024 * 512))
    assert exact(STRATEGIES["sp"].cost().send, values) == 3 * 8 * block
    assert exact(STRATEGIES["sp"].cost(sp_regather=1).send, values) == 3 * 10 * block
    # in the hybrid, megatron and deepspeed re-gather, torch's tensor parallel (fsdp) keeps the input
    tp = lambda **o: exact(STRATEGIES["hybrid"].by_axis(sp=1, **o)["tp"].send, LAYOUT)   # noqa: E731
    per_layer_micro = ring_block_sends(2, Fraction(512 // 8 // 16 * 4096 * 8192))
    assert tp() == 8 * 16 * 10 * per_layer_micro
    assert tp(framework="fsdp", zero=3) == 8 * 16 * 8 * per_layer_micro
    assert tp(sp_regather=0) == 8 * 16 * 8 * per_layer_micro


def test_moe_with_tensor_parallel_needs_sequence_parallel():
    values = {**LAYOUT, S.N: 64, S.E: 8, S.e: 8, S.L_moe: 32, S.k: 2, S.Phi_E: 10**9}
    problems = STRATEGIES["hybrid"].validate(values, moe=1)
    assert problems == ["moe=1 with t=2 needs sp=1: Megatron-Core refuses MoE with tensor parallelism without "
                        "sequence parallelism (megatron/core/transformer/moe/moe_layer.py)"]
    assert STRATEGIES["hybrid"].validate(values, moe=1, sp=1) == []
    assert STRATEGIES["hybrid"].validate({**values, S.t: 1, S.d: 16}, moe=1) == []


def _ring_flash_attn_sends(n: int) -> tuple[int, int]:
    """Blocks one rank sends per layer (forward, backward), walking the loops of
    zhuzilin/ring-flash-attention ring_flash_attn.py: forward, K and V go on at every step but
    the last; backward, the same for K and V, and dK and dV go on at every one of the n steps."""
    forward = sum(2 for step in range(n) if step + 1 != n)
    backward = sum(2 for step in range(n) if step + 1 != n) + sum(2 for _ in range(n))
    return forward, backward


@FAST
@given(n=st.integers(2, 32), b=st.integers(1, 8), shard=st.integers(1, 512), h=st.integers(1, 1024))
def test_ring_attention_backward_variants(n, b, shard, h):
    values = {S.N: n, S.b: b, S.s: n * shard, S.h: h, S.L: 1}
    block = b * shard * h                                 # a rank's K (or V) block: b·(s/N)·h
    forward, backward = _ring_flash_attn_sends(n)
    flash = STRATEGIES["cp_ring"].cost(backward="ring_flash_attn")
    assert exact(flash.send, values) == (forward + backward) * block
    assert exact(flash.total, values) == n * (forward + backward) * block
    # the minimum: dK, dV reduce-scattered, N − 1 blocks each
    assert exact(STRATEGIES["cp_ring"].cost().send, values) == (forward + backward - 2) * block


def test_hybrid_embeddings_on_the_end_stages():
    # Megatron-LM: the last stage holds the V·h LM head (the first the embedding), split over t by vocabulary
    # (layers.py VocabParallelEmbedding, ColumnParallelLinear); per micro-batch the LM head's input gradient is
    # all-reduced (mappings.py, copy_to_tensor_model_parallel_region) and cross_entropy.py all-reduces 3 values
    # per token; tied weights: the last stage keeps a copy, the two stages all-reduce its gradient once.
    V = 32000
    values = {**LAYOUT, S.V: V}
    t, p, d, m = 2, 4, 8, 16
    act = 512 // d // m * 4096 * 8192                     # one micro-batch's (b/d)/m · s · h
    tokens = 512 // d // m * 4096
    ring_ar = lambda size: 2 * Fraction(t - 1, t) * size   # noqa: E731  ring all-reduce over t sends 2(t−1)/t·M
    hybrid = STRATEGIES["hybrid"]
    layers = 4 * (32 // p) * m * ring_ar(act)
    assert exact(hybrid.by_axis(embeddings=1)["tp"].send, values) == layers + m * ring_ar(act) + 3 * m * ring_ar(tokens)
    vh = V * 8192
    for tied, in_phi, extra in ((0, 2 * vh, 0), (1, vh, Fraction(vh, t))):   # AR over 2 ranks sends its M once
        shard = (Fraction(7 * 10**9 - in_phi, p) + vh) / t
        got = exact(hybrid.by_axis(embeddings=1, tied=tied)["dp"].send, values)
        assert got == 2 * ring_block_sends(d, shard) + extra
    # p = 1: one stage holds everything (Φ/t), and pays the embedding's all-reduce too
    one = {**values, S.p: 1, S.d: 32}
    act1 = 512 // 32 // m * 4096 * 8192
    tokens1 = 512 // 32 // m * 4096
    assert exact(hybrid.by_axis(embeddings=1)["tp"].send, one) == \
        4 * 32 * m * ring_ar(act1) + 2 * m * ring_ar(act1) + 3 * m * ring_ar(tokens1)
    assert exact(hybrid.by_axis(embeddings=1, tied=1)["dp"].send, one) == \
        2 * ring_block_sends(32, Fraction(7 * 10**9, t))


def test_gradient_reductions_in_their_own_element_type():
    from symcomm.training.terms import cost_in_bytes_of

    # Megatron-LM (megatron/training/arguments.py): a bf16 run reduces its gradients in fp32.  ZeRO-1 over d = 8
    # of the Φ/(t·p) shard: the reduce-scatter moves 7/8 of it in 4-byte elements, the all-gather 7/8 in 2-byte ones
    shard = Fraction(7 * 10**9, 8)
    hybrid = STRATEGIES["hybrid"]
    dp_terms = [term for term in hybrid.terms(zero=1) if term.axis == "dp"]
    assert [term.dtype for term in dp_terms] == ["fp32", ""]
    in_bf16 = exact(cost_in_bytes_of(dp_terms, 2).send, LAYOUT) * 2          # bytes
    assert in_bf16 == Fraction(7, 8) * shard * 4 + Fraction(7, 8) * shard * 2
    # the elements formulas are unchanged; grad_dtype=same or DeepSpeed reduce in the run's type
    assert exact(hybrid.by_axis(zero=1)["dp"].send, LAYOUT) == 2 * Fraction(7, 8) * shard
    same = [term for term in hybrid.terms(zero=1, grad_dtype="same") if term.axis == "dp"]
    assert exact(cost_in_bytes_of(same, 2).send, LAYOUT) * 2 == 2 * Fraction(7, 8) * shard * 2
    assert all(term.dtype == "" for term in hybrid.terms(zero=2, framework="deepspeed"))
    # an fp32 run: 4 bytes everywhere, nothing widened
    assert exact(cost_in_bytes_of(dp_terms, 4).send, LAYOUT) * 4 == 2 * Fraction(7, 8) * shard * 4


def test_by_axis_is_summed_once_per_option_set_and_handed_out_fresh():
    # the sums are kept per option set (chapters ask for the same layout again); a caller's dict is its own
    hybrid = STRATEGIES["hybrid"]
    first = hybrid.by_axis(zero=1)
    first.pop("tp")
    again = hybrid.by_axis(zero="1")              # the same settings typed as text: the same kept sums
    assert "tp" in again and again["dp"] is first["dp"]
    # each axis is the sum of its terms' costs, in term order (Cost.sum of the term costs, by definition)
    terms = hybrid.terms(zero=1)
    assert again["tp"] == Cost.sum(term.cost for term in terms if term.axis == "tp")


def test_a_shared_expert_runs_a_dense_mlp_blocks_sequence_parallel_collectives():
    # Megatron-Core's SharedExpertMLP (moe/shared_experts.py at d98e8a64) is an MLP of a column- and a row-parallel
    # linear on the TP group: with SP, per MoE layer and micro-batch, its input all-gather and output reduce-scatter
    # (forward), their transposes and the input's re-all-gather (backward): 5 collectives of M = (b/d/m)·s·h elements,
    # each sending (t − 1)/t · M on a ring of t = 2. DeepSeek-V3 on one stage: 58 MoE layers, 8 micro-batches of 1
    # sequence of 4096 tokens, h = 7168 (an expert reviewer's find: E_s = 1 and E_s = 0 sent the same)
    import json
    import subprocess
    import sys

    def tp_send(shared):
        out = subprocess.run([sys.executable, "-m", "symcomm", "eval", "hybrid", "--model", "deepseek-v3", "t=2", "p=1",
                              "d=8", "e=8", "c=1", "b=64", "m=8", "s=4096", "sp=1", f"E_s={shared}", "G=8", "--json"],
                             capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        return sum(term["send"] for term in json.loads(out.stdout)["terms"] if term["axis"] == "tp")

    assert tp_send(1) - tp_send(0) == 5 * 8 * 58 * (4096 * 7168) // 2


def test_megatrons_dispatcher_sends_the_routed_copies_probabilities_beside_them():
    # Megatron-Core's MoEAlltoAllTokenDispatcher.token_dispatch (token_dispatcher.py at d98e8a64) all-to-alls the
    # permuted fp32 probabilities after the tokens, one per routed copy, and dispatch_postprocess gathers them over the
    # expert-TP group (an expert reviewer's find). Qwen3-235B-A22B (k = 8, 94 MoE layers), t = 4 with SP, p = 2 (47 MoE
    # layers a stage), d = 32, e = 16, 32 micro-batches of one 4096-token sequence: a rank dispatches k·4096/t = 8192
    # copies per layer and micro-batch, the pairwise all-to-all sending (e − 1)/e of them; the expert-TP ring gathers
    # the t = 4 ranks' copies, sending (t − 1)/t of 4·8192; in fp32, 4 bytes each with --dtype bf16
    import json
    import subprocess
    import sys

    def terms(*extra):
        out = subprocess.run([sys.executable, "-m", "symcomm", "eval", "hybrid", "--model", "qwen3-235b-a22b", "t=4",
                              "p=2", "d=32", "e=16", "c=1", "b=1024", "m=32", "s=4096", "sp=1", "G=8", "--json", *extra],
                             capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        return {term["label"]: term for term in json.loads(out.stdout)["terms"]}

    got = terms()
    assert got["router-probability all-to-all (forward)"]["send"] == 15 * 8192 * 47 * 32 // 16
    assert got["router-probability gradient all-to-all (backward)"]["send"] == 15 * 8192 * 47 * 32 // 16
    gathered = "MoE router-probability all-gather over the expert-tensor-parallel group (forward)"
    assert got[gathered]["send"] == 3 * 8192 * 47 * 32
    assert got[gathered]["dtype"] == "fp32"
    assert terms("--dtype", "bf16")["router-probability all-to-all (forward)"]["send"] == 4 * 15 * 8192 * 47 * 32 // 16
    # torchtitan weighs the experts' outputs by the scores where the token is: nothing of the kind sent
    assert not any("probability" in label for label in terms("framework=fsdp2", "zero=3", "compile=1"))
