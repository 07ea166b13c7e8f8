"""Group-limited (node-limited) routing: the places a token's experts fall on (symcomm.training.routing), against an
enumeration of every routing of small cases, its ungrouped limit, and a simulation of Megatron-Core's selection."""

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
import sympy as sp

import symcomm
from symcomm.base.errors import InputError
from symcomm.core import symbols as S
from symcomm.training.axes import flex_dispatch_terms
from symcomm.training.hybrid import hybrid_terms
from symcomm.training.routing import grouped_hit, spread


def _exact(expr, **values):
    return Fraction(str(sp.nsimplify(sp.sympify(expr).subs({getattr(S, k): v for k, v in values.items()}))))


def _enumerated(experts, places, groups, chosen, topk):
    """Every routing, each equally likely: ``chosen`` of the ``groups`` contiguous expert groups, then ``topk``
    picks, each any expert of the chosen groups; an expert's place is expert // (experts/places) (contiguous)."""
    size, per_place = experts // groups, experts // places
    total, count = Fraction(0), 0
    for picked_groups in itertools.combinations(range(groups), chosen):
        pool = [x for grp in picked_groups for x in range(grp * size, (grp + 1) * size)]
        for picks in itertools.product(pool, repeat=topk):
            total += len({x // per_place for x in picks})
            count += 1
    return total / count


@pytest.mark.parametrize("places", [1, 2, 4, 8, 16])
@pytest.mark.parametrize("groups, chosen, topk", [(4, 2, 2), (4, 2, 3), (4, 1, 2), (8, 3, 2), (4, 4, 2)])
def test_the_count_equals_an_enumeration_of_every_routing(places, groups, chosen, topk):
    # 16 experts: places of 16 … 1 experts, groups of 4 or 2; both cases (a place holding several groups, a group
    # spanning several places) and places = groups
    expected = _enumerated(16, places, groups, chosen, topk)
    assert _exact(grouped_hit(sp.Integer(places), groups, chosen, topk)) == expected


@pytest.mark.parametrize("groups", [2, 4, 8, 16])
def test_choosing_every_group_is_ungrouped_routing(groups):
    # g = G: every group chosen, the picks uniform over all experts: D(x) = x(1 − (1 − 1/x)^k) for symbolic k
    for places in (1, 2, 4, 8, 16, 32, 64):
        assert sp.simplify(grouped_hit(sp.Integer(places), groups, groups) - spread(sp.Integer(places))) == 0


def test_deepseek_v3_places_by_hand():
    # E = 256, G = 8, g = 4, k = 8.  8 nodes (one group each): the 4 chosen groups are 4 nodes, the picks uniform
    # over them: 4(1 − (3/4)^8).  4 nodes (two groups each): a node missed if neither of its groups is chosen,
    # C(6, 4)/C(8, 4) = 15/70, or if one is (C(2, 1)·C(6, 3)/70 = 40/70) and every pick lands on the other 3 chosen,
    # (3/4)^8, or both are (C(6, 2)/70 = 15/70) and every pick lands on the other 2, (1/2)^8
    assert _exact(grouped_hit(sp.Integer(8), 8, 4), k=8) == 4 * (1 - Fraction(3, 4) ** 8)
    missed = Fraction(15, 70) + Fraction(40, 70) * Fraction(3, 4) ** 8 + Fraction(15, 70) * Fraction(1, 2) ** 8
    assert _exact(grouped_hit(sp.Integer(4), 8, 4), k=8) == 4 * (1 - missed)


def _megatron_routes(experts, groups, chosen, topk, tokens=20000, seed=0):
    """Megatron-Core's group_limited_topk (moe_utils.py at d98e8a64, read, not copied) on random logits as
    moe_router_force_load_balancing draws them, with DeepSeek-V3's sigmoid scores: groups ranked by the sum of
    their top topk/chosen scores, the best ``chosen`` kept, the top ``topk`` experts among them: each token's
    experts."""
    rng = np.random.default_rng(seed)
    scores = 1 / (1 + np.exp(-rng.standard_normal((tokens, experts))))
    by_group = np.sort(scores.reshape(tokens, groups, -1), axis=-1)[:, :, -(topk // chosen):].sum(-1)
    best = np.argsort(-by_group, axis=1)[:, :chosen]
    keep = np.zeros((tokens, groups), bool)
    np.put_along_axis(keep, best, True, axis=1)
    masked = np.where(np.repeat(keep, experts // groups, axis=1), scores, -np.inf)
    return np.argpartition(-masked, topk, axis=1)[:, :topk]


def _megatron_places(experts, groups, chosen, topk, places):
    """The mean number of places Megatron's routes (:func:`_megatron_routes`) hit."""
    top = _megatron_routes(experts, groups, chosen, topk) // (experts // places)
    return np.mean([len(set(row)) for row in top.tolist()])


def test_megatrons_chosen_groups_are_nearly_always_all_hit():
    # routing.py's reason for the bound: with DeepSeek-V3's shape over 95 % of tokens hit all 4 chosen groups, where
    # 8 independent picks over 4 groups hit all 4 only with probability 4!·S(8, 4)/4^8 = 40824/65536 (surjections)
    groups_hit = [len(set(row)) for row in (_megatron_routes(256, 8, 4, 8) // 32).tolist()]
    assert np.mean(np.array(groups_hit) == 4) > 0.95
    surjections = sum((-1) ** j * math.comb(4, j) * (4 - j) ** 8 for j in range(5))
    assert surjections == 40824 and Fraction(surjections, 4 ** 8) < Fraction(2, 3)


@pytest.mark.parametrize("places", [2, 4, 8, 16, 32, 64])
def test_megatrons_selection_hits_at_most_eleven_percent_more_places(places):
    # the stated bound of the model (routing.py): Megatron ranks groups by their best experts, so a chosen group
    # almost always receives one; the independent picks are a lower bound within 11 % for DeepSeek-V3's shape
    model = float(grouped_hit(sp.Integer(places), 8, 4, 8))
    simulated = _megatron_places(256, 8, 4, 8, places)
    assert model <= simulated <= model * 1.11


def _by_label(terms):
    return {(term.what, term.phase): term for term in terms}


def test_node_limited_flex_dispatch_by_hand():
    # DeepSeek-V3 on EP 64 over eight 8-GPU nodes (the H100 rows): a token's 4 chosen groups are 4 nodes, its 8
    # picks uniform over them; the 7 other nodes each hit with probability (1 − (3/4)^8)/2, i.e. 7/8 of 4(1 − (3/4)^8)
    # copies a token; GPUs: the 4 groups span 32 GPUs, each of the 64 hit with probability (1 − (31/32)^8)/2, 56 of
    # them not an arrival GPU
    terms = _by_label(flex_dispatch_terms(64, 1, 1, 1, 8, across=True, router=(8, 4)))
    network = terms[("token dispatch, network leg (one copy per destination node)", "forward")]
    nvlink = terms[("token dispatch, NVLink leg (one copy per destination GPU)", "forward")]
    assert _exact(network.message, k=8) == 7 * (1 - Fraction(3, 4) ** 8) / 2
    assert _exact(nvlink.message, k=8) == 56 * (1 - Fraction(31, 32) ** 8) / 2


def test_grouping_leaves_the_alltoall_dispatchers_bytes_alone():
    # MoEAlltoAllTokenDispatcher sends one row per (token, selected expert) pair: k per token whatever the groups,
    # each expert still 1/E likely per pick, so the same terms
    common = dict(moe=True, sp=True, embeddings=True, gqa=True, expert_tp="1")
    for name in ("alltoall", "alltoall_padded"):
        assert hybrid_terms(**common, dispatcher=name) == hybrid_terms(**common, dispatcher=name, router_groups=8,
                                                                         router_group_topk=4)
    assert hybrid_terms(**common, dispatcher="deepep") != hybrid_terms(**common, dispatcher="deepep", router_groups=8,
                                                                        router_group_topk=4)


LAYOUT = dict(t=1, p=1, d=16, e=16, c=1, b=16, m=1, s=4096)


def test_more_chosen_groups_than_groups_is_refused():
    with pytest.raises(InputError, match="router_group_topk=4 must be at most router_groups=2"):
        symcomm.evaluate("hybrid", model="qwen3-30b-a3b", hardware="h100", moe=1, dispatcher="deepep",
                         router_groups=2, router_group_topk=4, **LAYOUT)


def test_an_unlisted_group_count_names_the_choices():
    with pytest.raises(InputError, match="router_groups=3 is not allowed; choose 1, 2, 4, 8"):
        symcomm.evaluate("hybrid", model="qwen3-30b-a3b", hardware="h100", moe=1, dispatcher="deepep",
                         router_groups=3, router_group_topk=1, **LAYOUT)


def test_groups_need_a_power_of_two_expert_group():
    # E = 96, e = 6: neither 6 nor its nodes divide the 8 groups, or the other way round: refused
    with pytest.raises(InputError, match="router_groups > 1 needs e a power of two"):
        symcomm.evaluate("hybrid", model="qwen3-30b-a3b", hardware="h100", moe=1, dispatcher="deepep",
                         router_groups=8, router_group_topk=4, E=96, t=1, p=1, d=6, e=6, c=1, b=6, m=1, s=4096)


def test_groups_must_cut_the_experts_evenly():
    with pytest.raises(InputError, match="E=120 must be divisible by router_groups=16"):
        symcomm.evaluate("hybrid", model="qwen3-30b-a3b", hardware="h100", moe=1, dispatcher="deepep",
                         router_groups=16, router_group_topk=4, E=120, t=1, p=1, d=8, e=8, c=1, b=8, m=1, s=4096)


def test_groups_that_cannot_hold_a_tokens_k_experts_are_refused_by_eval_and_plan(capsys):
    # Megatron-Core's group_limited_topk scores each group by its best k/g experts and takes the k from the g groups
    # kept (moe_utils.py): Qwen3-30B-A3B's 128 experts in 128 groups of 1, one kept, cannot give a token its k = 8; an
    # outsider's eval priced it 13 % faster (one copy per token) and plan ranked it first
    from symcomm.commands.main import main

    base = ["eval", "hybrid", "--model", "qwen3-30b-a3b", "--hardware", "h100", "t=1", "c=1", "s=4096", "moe=1",
            "b=256", "m=16", "p=1", "d=16", "e=16", "dispatcher=deepep", "expert_tp=1"]
    for groups, kept in ((128, 1), (64, 2)):       # 1 expert a group, 1 kept; 2 a group, 2 kept: 4 < 8
        assert main(base + [f"router_groups={groups}", f"router_group_topk={kept}"]) == 2
        assert f"router_groups={groups} with router_group_topk={kept} keeps {kept} group(s)" in capsys.readouterr().err
    assert main(base + ["router_groups=8", "router_group_topk=4"]) == 0      # 16 a group, 64 kept, 4 from each: runs
    capsys.readouterr()
    assert main(["plan", "--model", "qwen3-30b-a3b", "--gpus", "16", "--hardware", "h100", "--batch", "256", "--seq",
                 "4096", "--dispatcher", "deepep", "--router-groups", "128", "--router-group-topk", "1"]) == 2
    assert "--router-groups 128 with --router-group-topk 1 keeps 1 group(s)" in capsys.readouterr().err
