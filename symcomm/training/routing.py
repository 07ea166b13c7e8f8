"""Where a token's experts live: the expected number of places (nodes or GPUs of the expert group) its k routed
experts fall on, ungrouped or under group-limited routing (DeepSeek-V3's node-limited routing).

The model, and what it leaves out.  Experts sit contiguously on the ranks (rank r of the expert group holds experts
r·E/e … (r + 1)·E/e − 1: Megatron-Core moe_layer.py at d98e8a64, local_expert_indices = ep_rank·E/e + i), so a
place (a GPU, or the r ranks of the group on one node) holds a contiguous range of E/places experts.  Group-limited
routing (Megatron-Core --moe-router-num-groups G, --moe-router-group-topk g: GROUP_LIMITED_ROUTING) cuts the E
experts into G contiguous groups of E/G, picks g groups per token and its k experts among those groups' g·E/G
experts.  Under uniform routing (the runs' moe_router_force_load_balancing: random logits, router.py) the g groups
are, by symmetry, a uniform g-subset of the G; the k picks are taken independent and uniform over the chosen
groups' experts, as :func:`symcomm.training.axes.destinations_hit` takes them over all E.  Megatron ranks the
groups by their best k/g experts' scores, so a chosen group nearly always receives one of the k (over 95 % of
tokens hit all 4 of DeepSeek-V3's chosen groups in a seeded simulation of group_limited_topk,
tests/training/test_routing.py, where independent picks leave one of them empty for 38 % of tokens, 1 − 4!·S(8, 4)/
4^8): the count here is a lower bound, by at most 11 % for DeepSeek-V3's E = 256, G = 8, g = 4, k = 8 (that test bounds it).
"""

from __future__ import annotations

import math

import sympy as sp

from ..core import symbols as S

#: where group-limited routing is read
GROUP_LIMITED_ROUTING = ("DeepSeek-V3 technical report arXiv:2412.19437 §2.1.2 (node-limited routing: each "
                 "token to at most M = 4 nodes; config n_group 8, topk_group 4); NVIDIA/Megatron-LM "
                 "megatron/core/transformer/moe/moe_utils.py at d98e8a64 (group_limited_topk: experts cut into num_groups equal contiguous groups, "
                 "group_topk groups chosen per token by the sum of their top topk/group_topk scores, top-k among "
                 "them), transformer_config.py (moe_router_num_groups, moe_router_group_topk: default None, "
                 "num_moe_experts divisible by the groups, group_topk at most num_groups); NVIDIA-NeMo/Megatron-Bridge "
                 "src/megatron/bridge/models/deepseek/deepseek_provider.py at 7af9601c9 (DeepSeekV3ModelProvider: 8, "
                 "4) and models/conversion/model_bridge.py at c8101293 (n_group, topk_group → the two settings)")


def spread(places, topk=S.k):
    """D(x) = x·(1 − (1 − 1/x)^k): the places of x equal ones that k independent uniform picks hit, on average."""
    return places * (1 - (1 - 1 / places) ** topk)


def grouped_hit(places, groups: int, chosen: int, topk=S.k):
    """The expected number of the ``places`` (each E/places contiguous experts) that a token's ``topk`` experts
    fall on, its ``chosen`` groups of the ``groups`` (E/groups contiguous experts each) a uniform subset and its
    picks independent and uniform over their experts (module docstring); ``places`` and ``groups`` divide one
    another.

    A place spanning w = groups/places whole groups is missed when each pick misses it: given X of its groups
    chosen (hypergeometric: C(w, x)·C(G − w, g − x)/C(G, g)) a pick lands there with probability X/g, so it is hit
    with probability 1 − Σ_x P(X = x)·(1 − x/g)^k.  A group spanning u = places/groups places: the g chosen
    groups span g·u = places·g/G places, the picks uniform over them: D(places·g/G).  The two agree at
    places = groups (D(g)); g = G gives the ungrouped D(places) (tests/training/test_routing.py)."""
    places = sp.sympify(places, strict=True)
    if groups == 1:
        return spread(places, topk)
    whole = sp.Integer(groups) / places            # w, the groups a place holds when places | groups
    missed = 0
    for x in range(0, chosen + 1):
        # C(w, x) and C(G − w, g − x) as polynomials in w: exact at every whole w from 0 to G (zero outside)
        ways = _choose(whole, x) * _choose(groups - whole, chosen - x) / math.comb(groups, chosen)
        missed += ways * (1 - sp.Rational(x, chosen)) ** topk
    holds_groups = places * (1 - missed)
    # (at least the one place: keeps the unused branch finite where places < groups, 1 − 1/x ≥ 0)
    spans_groups = spread(sp.Max(places * sp.Rational(chosen, groups), 1), topk)
    # 1 when places ≥ groups, 0 below (places and groups whole): arithmetic, not a Piecewise on ``places``, which
    # may itself be one (the nodes of the expert group, axes.ranks_per_node) and whose relational the planner's
    # kernels cannot compute
    over = sp.Min(sp.Max(places - groups + 1, 0), 1)
    return over * spans_groups + (1 - over) * holds_groups


def _choose(n, r: int):
    """C(n, r) for a whole r ≥ 0, as the polynomial n(n − 1)…(n − r + 1)/r! (n may be a symbol)."""
    return sp.Mul(*[n - i for i in range(r)]) / math.factorial(r)


def destinations_hit(places, topk=S.k, groups: int = 1, chosen: int = 1):
    """The expected places a token's ``topk`` experts fall on: ungrouped (``groups`` = 1), the spread D(places)
    (:func:`symcomm.training.axes.destinations_hit` says how close it is to drawing without replacement); grouped,
    :func:`grouped_hit`."""
    if groups == 1:
        return spread(sp.sympify(places, strict=True), topk)
    return grouped_hit(places, groups, chosen, topk)
