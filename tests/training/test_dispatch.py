"""MoE token dispatch as Megatron-Core runs it (dispatcher=): the flex dispatcher's hierarchical dispatch (DeepEP,
HybridEP) and the dropless dispatchers' token-count exchange, against hand counts."""

import math
from fractions import Fraction

import pytest
import sympy as sp

import symcomm
from symcomm.base.errors import InputError
from symcomm.core import symbols as S
from symcomm.training.axes import destinations_hit, dispatch_count_terms, flex_dispatch_terms
from symcomm.training.hybrid import hybrid_terms


def _value(expr, **values):
    return Fraction(str(sp.nsimplify(sp.sympify(expr).subs({getattr(S, k): v for k, v in values.items()}))))


def _by_label(terms):
    return {(term.what, term.phase): term for term in terms}


def test_flex_dispatch_over_two_nodes_by_hand():
    # Qwen3-30B-A3B (k = 8) on EP 16 over two 8-GPU nodes (the 26.04.01 H100 HybridEP row), 4096 tokens of h = 2048
    # on a rank.  A token's 8 experts, each on one of the 16 GPUs (1/16 each, independently): the other node is
    # missed only if all 8 fall on this node, (1/2)^8 = 1/256, so the network carries 255/256 copies per token; a
    # given GPU is missed with (15/16)^8 = 2562890625/4294967296, and the NVLink leg delivers one copy to each GPU
    # hit but the one the token arrived at on each node: 2 nodes × 7 GPUs × (1 − (15/16)^8)
    terms = _by_label(flex_dispatch_terms(16, 4096, 2048, 1, 8, across=True))
    network = terms[("token dispatch, network leg (one copy per destination node)", "forward")]
    nvlink = terms[("token dispatch, NVLink leg (one copy per destination GPU)", "forward")]
    assert _value(network.message, k=8) == 4096 * 2048 * Fraction(255, 256)
    assert _value(nvlink.message, k=8) == 4096 * 2048 * 14 * (1 - Fraction(2562890625, 4294967296))
    # each leg one kernel per pass, forward dispatch and combine, backward the two again: 4 of each
    assert sum(1 for what, _ in terms if "network leg" in what) == 4
    assert network.across_nodes and not nvlink.across_nodes


def test_flex_dispatch_inside_one_nvlink_domain_sends_nothing_over_the_network():
    # GB200 NVL72, EP 8 inside the domain (the GB200 Qwen3-30B rows): one node, no network copy and no launch;
    # over NVLink each token reaches the 7 other GPUs its experts fall on: 7·(1 − (7/8)^8) copies
    terms = _by_label(flex_dispatch_terms(8, 1, 1, 1, 8))
    network = terms[("token dispatch, network leg (one copy per destination node)", "forward")]
    nvlink = terms[("token dispatch, NVLink leg (one copy per destination GPU)", "forward")]
    assert _value(network.message, k=8) == 0 and _value(network.count, k=8) == 0
    assert _value(nvlink.message, k=8) == 7 * (1 - Fraction(7, 8) ** 8)


def test_one_expert_per_token_moves_what_the_pairwise_all_to_all_moves():
    # k = 1: nothing to deduplicate; a token leaves its GPU with probability (e − 1)/e, the pairwise all-to-all's
    # (N − 1)/N share of M (Thakur et al. 2005 §4), so the NVLink leg inside one node is the all-to-all's bytes
    terms = _by_label(flex_dispatch_terms(8, 1, 1, 1, 8))
    assert _value(terms[("token dispatch, NVLink leg (one copy per destination GPU)", "forward")].message,
                  k=1) == Fraction(7, 8)


@pytest.mark.parametrize("experts, topk, places", [(128, 8, 8), (128, 8, 64), (256, 8, 64), (128, 4, 64)])
def test_the_independent_picks_count_is_within_its_stated_bound_of_the_exact_one(experts, topk, places):
    # exact: k distinct experts of E, a place (E/places experts) missed with C(E − E/places, k)/C(E, k)
    exact = places * (1 - math.comb(experts - experts // places, topk) / math.comb(experts, topk))
    approx = float(destinations_hit(sp.Integer(places), topk))
    assert approx <= exact <= approx * 1.027


def test_the_token_count_exchange_by_hand():
    # EP 8, E = 128 int64 counts a rank: all-gathered buffer 8·128 elements of 8 bytes, forward only (the backward
    # reuses the splits), once more under full recompute
    (term,) = dispatch_count_terms(8, 1)
    assert term.dtype == "8" and _value(term.message, E=128) == 1024 and term.phase == "forward"
    assert [t.phase for t in dispatch_count_terms(8, 1, recompute=True)] == ["forward", "forward recompute"]


def test_the_dispatcher_setting_picks_the_terms():
    common = dict(moe=True, sp=True, embeddings=True, gqa=True, expert_tp="1")
    whats = {name: {term.what for term in hybrid_terms(**common, dispatcher=name) if term.axis == "ep"}
             for name in ("alltoall", "alltoall_padded", "hybridep")}
    count = "MoE per-expert token-count all-gather (the host waits for it)"
    assert count in whats["alltoall"] and count in whats["hybridep"] and count not in whats["alltoall_padded"]
    assert whats["alltoall"] - {count} == whats["alltoall_padded"]
    assert not any("all-to-all" in what for what in whats["hybridep"])


def test_flex_with_expert_tensor_parallelism_is_refused():
    # Megatron-Core's flex dispatcher over the TPxEP group sends a token to every TP rank of an expert
    # (token_dispatcher.py, MoEFlexTokenDispatcher): not modelled, so refused with expert_tp=tp and t > 1
    layout = dict(t=2, p=1, d=8, e=8, c=1, b=16, m=1, s=4096, sp=1)
    with pytest.raises(InputError, match="dispatcher=deepep or hybridep with t=2 needs expert_tp=1"):
        symcomm.evaluate("hybrid", model="qwen3-30b-a3b", hardware="h100", dispatcher="deepep", **layout)
    got = symcomm.evaluate("hybrid", model="qwen3-30b-a3b", hardware="h100", dispatcher="deepep", expert_tp="1",
                           **layout)
    assert got["options"]["dispatcher"] == "deepep"


def test_an_unknown_dispatcher_names_the_choices():
    with pytest.raises(InputError, match="dispatcher=allgather is not allowed; choose alltoall, alltoall_padded, "
                                         "deepep or hybridep"):
        symcomm.evaluate("hybrid", model="qwen3-30b-a3b", hardware="h100", dispatcher="allgather",
                         t=1, p=1, d=8, e=8, c=1, b=8, m=1, s=4096)


def test_the_two_legs_equal_an_enumeration_of_every_routing():
    # 4 GPUs on 2 nodes (0, 1 | 2, 3), a token on GPU 0 picking k = 2 experts' GPUs independently and uniformly:
    # walk all 16 routings as DeepEP sends them (FLEX_DISPATCH) — one network copy if any pick is on node 1 (to GPU 2,
    # the rank of GPU 0's local index there), then one NVLink copy to each GPU hit but GPU 0 (home) and GPU 2 (arrival)
    routings = [(a, b) for a in range(4) for b in range(4)]
    network = Fraction(sum(any(g >= 2 for g in r) for r in routings), len(routings))
    nvlink = Fraction(sum(len(set(r) - {0, 2}) for r in routings), len(routings))
    terms = _by_label(flex_dispatch_terms(4, 1, 1, 1, 2, across=True))
    assert _value(terms[("token dispatch, network leg (one copy per destination node)", "forward")].message,
                  k=2) == network == Fraction(3, 4)
    assert _value(terms[("token dispatch, NVLink leg (one copy per destination GPU)", "forward")].message,
                  k=2) == nvlink == Fraction(7, 8)


def test_flex_on_an_expert_group_filling_its_nodes_unequally_is_refused(capsys):
    # GB200 NVL72 (G = 72), EP 128 over 128 GPUs: one domain holds 72 of the group, the other 56, so the destination
    # nodes would be counted over 128/56 = 2.29 nodes, a placement no cluster has: refused in one line, exit 2
    from symcomm.commands.main import main
    code = main(["eval", "hybrid", "--model", "deepseek-v3", "--hardware", "gb200", "t=1", "p=1", "c=1", "e=128",
                 "d=128", "b=1024", "m=8", "s=4096", "dispatcher=deepep"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert ("dispatcher=deepep or hybridep with e=128 on G=72 GPUs per node needs e at most G or a multiple of G"
            in err)
    # the same layout with the all-to-all dispatcher is priced as before (its PEERS rule has no node count)
    assert main(["eval", "hybrid", "--model", "deepseek-v3", "--hardware", "gb200", "t=1", "p=1", "c=1", "e=128",
                 "d=128", "b=1024", "m=8", "s=4096", "dispatcher=alltoall", "--json"]) == 0


@pytest.mark.parametrize("dispatcher", ["deepep", "hybridep"])
def test_flex_over_whole_nodes_counts_whole_nodes_by_hand(dispatcher):
    # Qwen3-30B-A3B (k = 8, h = 2048) on H100 (G = 8), EP 16 over 16 GPUs: two full nodes.  A rank's 4096 tokens (one
    # sequence, m = 1, t = 1) each go to the other node unless all 8 experts land on this one, (1/2)^8: 255/256
    # network copies per token, bf16 (2 bytes an element); once per MoE layer and pass, 48 layers
    got = symcomm.evaluate("hybrid", model="qwen3-30b-a3b", hardware="h100", dispatcher=dispatcher, expert_tp="1",
                           t=1, p=1, d=16, e=16, c=1, b=16, m=1, s=4096)
    (network,) = [term for term in got["terms"]
                  if term["label"] == "token dispatch, network leg (one copy per destination node) (forward)"]
    assert network["message"] == 4096 * 2048 * 2 * Fraction(255, 256) and network["count"] == 48
    # an EP group of e ≤ G stays allowed: e = 8 inside one node sends nothing over the network
    inside = symcomm.evaluate("hybrid", model="qwen3-30b-a3b", hardware="h100", dispatcher=dispatcher, expert_tp="1",
                              t=1, p=1, d=16, e=8, c=1, b=16, m=1, s=4096)
    assert all(term["count"] == 0 for term in inside["terms"] if "network leg" in term["label"])
