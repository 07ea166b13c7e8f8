"""nvlink=mesh: a node's GPUs wired point to point (a 4-GPU HGX H100/H200 board), each ring or pairwise all-to-all
running over the pair links between its ranks on the node (symcomm.base.crossing).  Expected values are hand counts
from the wiring (six of a GPU's 18 NVLink 4 links to each of the three others: NVIDIA/nccl on GitHub, #1617), and the
channel count behind the rule is checked by enumerating the orders themselves."""

from fractions import Fraction
from itertools import permutations

import pytest

from symcomm.base import crossing
from symcomm.core import symbols as S
from symcomm.presets import systems
from symcomm.presets.hardware_values import mesh_board_note
from symcomm.training.terms import Term


def _directed_orders(n: int) -> list[tuple[int, ...]]:
    """Every ring over ranks 0..n−1 as NCCL's channels may order them: rank 0 first, each cyclic order once."""
    return [(0, *rest) for rest in permutations(range(1, n))]


@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_uniform_channels_over_every_ring_order_load_every_pair_link_alike_and_reach_n_minus_one_links(n):
    # a ring channel sends one block from each rank to the next; with one channel per cyclic order at rate w, the
    # arc i → j carries w times the orders that put j after i.  Counted here, not assumed: every arc lies on
    # (n − 2)! orders, so the busiest link allows w = c/(n − 2)! and a rank sends (n − 1)!·w = (n − 1)·c, the
    # capacity of its n − 1 links to the group: a group of n reaches (n − 1)/(G − 1) of a GPU's G − 1 pair links
    orders = _directed_orders(n)
    load = {}
    for order in orders:
        for i, a in enumerate(order):
            arc = (a, order[(i + 1) % n])
            load[arc] = load.get(arc, 0) + 1
    assert len(load) == n * (n - 1)                       # every ordered pair of ranks carries traffic
    busiest = max(load.values())
    assert set(load.values()) == {busiest}               # ... and all alike
    capacity = 1                                          # one pair link's bandwidth, c
    rate = Fraction(capacity, busiest)                    # per channel, limited by the busiest arc
    assert len(orders) * rate == (n - 1) * capacity       # what one rank sends, over all channels


def test_a_ring_inside_a_mesh_node_runs_on_the_pair_links_of_its_ranks():
    # ring all-reduce of M = 1024 on a node of G = 4 wired point to point: a rank sends 2·(n − 1)/n·M elements;
    # over NVSwitch at the GPU's whole bandwidth, on the mesh over n − 1 of its 3 pair links
    def beta(n, mesh):
        term = Term("all_reduce", "ring", n, 1024, 1, "x", mesh_gpus=4 if mesh else None)
        return term.cost.coefficient(S.beta), term.cost.coefficient(S.alpha)

    assert beta(2, False) == (1024, 2)                    # 2·1/2·1024
    assert beta(2, True) == (3072, 2)                     # one pair link, a third: 3×; the steps' α unchanged
    assert beta(3, True)[0] == Fraction(2 * 2 * 1024, 3) * Fraction(3, 2)   # two links of three: 3/2×
    assert beta(4, True) == beta(4, False) == (1536, 6)  # the whole node: every link, the switch's β


def test_a_ring_across_mesh_nodes_keeps_what_stays_on_the_pair_links_of_its_ranks_there():
    # ring all-reduce of M = 1024 over 16 ranks: a rank sends 2·15/16·1024 = 1920 elements; with k of them on each
    # node, 1/k leave through its NIC (β_inter), the rest stay on the node, over k − 1 of its G − 1 = 3 pair links
    def split(k):
        term = Term("all_reduce", "ring", 16, 1024, 1, "x", across_nodes=True, ranks_per_node=k, mesh_gpus=4)
        return term.cost.coefficient(S.beta), term.cost.coefficient(S.beta_inter)

    assert split(4) == (1440, 480)                        # 3/4 stay at the whole node's links: as NVSwitch
    assert split(2) == (960 * 3, 960)                     # half stays, on one pair link: 3×
    assert split(1) == (0, 1920)                          # nothing stays on the node
    # a relation deciding the level keeps both: inside a node of 4 (t = 2), one pair link
    term = Term("all_reduce", "ring", S.t, 1024, 1, "x", across_nodes=S.t > S.G, mesh_gpus=S.G)
    assert term.cost.coefficient(S.beta).subs({S.t: 2, S.G: 4}) == 3072


def test_a_pairwise_all_to_all_on_mesh_nodes_sends_each_node_peer_its_block_over_their_own_link():
    # M = 1600 per rank over 16 ranks: blocks of 100.  Switch (one port): the k − 1 node blocks one after another
    # at the whole bandwidth, (k − 1)·100; mesh: each over its own pair link at a third, side by side: 3·100
    def stays(k, mesh):
        term = Term("all_to_all", "pairwise", 16, 1600, 1, "x", across_nodes=True, ranks_per_node=k,
                    mesh_gpus=4 if mesh else None)
        return term.cost.coefficient(S.beta)

    assert stays(4, False) == stays(4, True) == 300       # three peers, three links: the same
    assert (stays(2, False), stays(2, True)) == (100, 300)
    # a pair inside one node: one block of 800 over one pair link at a third
    pair = Term("all_to_all", "pairwise", 2, 1600, 1, "x", mesh_gpus=4)
    assert pair.cost.coefficient(S.beta) == 3 * 800


def test_a_send_between_two_gpus_of_a_mesh_node_runs_over_their_one_pair_link():
    # M = 1000 elements from one GPU to another: the whole NVLink bandwidth through NVSwitch, a third of it on the
    # pair link of a 4-GPU board; across nodes it leaves by the NIC either way
    def beta(mesh, across=False):
        term = Term("send_recv", "direct", 2, 1000, 1, "x", across_nodes=across, mesh_gpus=4 if mesh else None)
        return term.cost.coefficient(S.beta), term.cost.coefficient(S.beta_inter)

    assert (beta(False), beta(True)) == ((1000, 0), (3000, 0))
    assert beta(True, across=True) == beta(False, across=True) == (0, 1000)


def test_a_tree_on_a_mesh_is_refused_as_a_term_not_guessed():
    with pytest.raises(ValueError, match="a send between two GPUs only"):
        Term("all_reduce", "recursive_doubling", 4, S.M, 1, "x", mesh_gpus=4)


def test_the_hybrid_prices_a_tensor_parallel_pair_on_a_mesh_node_at_a_third_of_the_bandwidth():
    from symcomm.training.strategies import STRATEGIES

    hybrid = STRATEGIES["hybrid"]
    layout = {S.t: 2, S.d: 2, S.p: 1, S.c: 1, S.G: 4, S.b: 8, S.s: 4096, S.h: 4096, S.L: 32, S.m: 2,
              S.Phi: 8 * 10 ** 9}
    mesh, switch = hybrid.by_axis(zero=3, framework="fsdp2", nvlink="mesh"), hybrid.by_axis(zero=3, framework="fsdp2")
    assert mesh["tp"].coefficient(S.beta).subs(layout) == 3 * switch["tp"].coefficient(S.beta).subs(layout)
    assert mesh["tp"].coefficient(S.alpha).subs(layout) == switch["tp"].coefficient(S.alpha).subs(layout)
    # the data-parallel pair (d = 2 strided by t = 2, inside the node): one pair link as well
    assert mesh["dp"].coefficient(S.beta).subs(layout) == 3 * switch["dp"].coefficient(S.beta).subs(layout)
    # two pipeline stages of t = 2 on one node (p = 2, d = 1): each send from a GPU to one GPU, over their pair link
    staged = {**layout, S.p: 2, S.d: 1, S.b: 4}
    assert mesh["pp"].coefficient(S.beta).subs(staged) == 3 * switch["pp"].coefficient(S.beta).subs(staged) != 0
    # t = 4 fills the node: every link, as on NVSwitch; d = 2 then spans two nodes with one rank each: no change
    whole = {**layout, S.t: 4}
    for axis in ("tp", "dp"):
        assert mesh[axis].coefficient(S.beta).subs(whole) == switch[axis].coefficient(S.beta).subs(whole)
        assert mesh[axis].coefficient(S.beta_inter).subs(whole) == switch[axis].coefficient(S.beta_inter).subs(whole)


def test_a_typed_g_below_an_nvlink_presets_node_says_which_wiring_it_priced():
    h200 = systems.hardware("h200")
    said = mesh_board_note(h200, 4, crossing.SWITCH)
    assert said and "nvlink=mesh" in said and "G=4" in said
    assert mesh_board_note(h200, 4, crossing.MESH) is None        # said by the setting
    assert mesh_board_note(h200, 8, crossing.SWITCH) is None      # the preset's own board
    assert mesh_board_note(h200, None, crossing.SWITCH) is None
    assert mesh_board_note(systems.hardware("a100-pcie"), 4, crossing.SWITCH) is None   # no NVLink inside
    assert mesh_board_note(systems.hardware("b200"), 4, crossing.SWITCH) is None        # no such board sourced
    assert mesh_board_note(systems.hardware("h100"), 4, crossing.SWITCH)


def test_a_mesh_of_more_gpus_than_a_board_of_four_is_said_to_be_switched():
    # the mesh follows the 4-GPU HGX board (crossing.NVLINK_MESH_SOURCE); an NVL72 domain or an 8-GPU board is NVSwitch,
    # where nvlink=mesh would split each GPU's links over 71 peers (an outsider's EP time 285 ms -> 2.31 s, unsaid)
    said = mesh_board_note(systems.hardware("gb200"), 72, crossing.MESH)
    assert said and said.startswith("nvlink=mesh with G=72: the mesh is a board of 4 GPUs") and "NVSwitch" in said
    assert mesh_board_note(systems.hardware("h100"), 8, crossing.MESH)
    assert mesh_board_note(systems.hardware("h200"), 4, crossing.MESH) is None          # the board it follows
    assert mesh_board_note(systems.hardware("a100-pcie"), 8, crossing.MESH) is None     # no NVLink inside


def test_eval_and_plan_price_a_mesh_node_alike():
    # the planner's row, as the eval command it prints, gives the same step: one code path (the shared kernel key)
    from symcomm.api import evaluate, plan

    best = plan("llama3.1-8b", gpus=8, batch=64, seq=4096, hardware="h200", top=1, gpus_per_node=4, tp=2,
                framework="fsdp2", nvlink="mesh")["layouts"][0]
    command = best["eval_command"]
    assert "nvlink=mesh" in command
    words = dict(word.split("=", 1) for word in command.split() if "=" in word)
    got = evaluate("hybrid", model="llama3.1-8b", hardware="h200", **{**words, "nvlink": "mesh"})["step_time"]
    switch = evaluate("hybrid", model="llama3.1-8b", hardware="h200", **{**words, "nvlink": "switch"})
    assert got == pytest.approx(best["step_time"], rel=1e-9)
    assert switch["step_time"] < got          # the same layout on NVSwitch: its pair at the whole bandwidth


def test_the_expert_dispatchs_legs_keep_the_switchs_beta_on_a_mesh():
    # a dispatch leg is the sends to every GPU its tokens go to, counted as one send: no one pair link carries it, so it
    # is not priced as one (base.crossing: a lower bound on a mesh); the pipeline's sends and the rings are
    from symcomm.training.hybrid import hybrid_terms

    terms = hybrid_terms(zero=1, moe=1, dispatcher="deepep", sp=1, expert_tp="1", nvlink="mesh")
    legs = [term for term in terms if "leg" in term.what]
    assert legs and all(term.mesh_gpus is None for term in legs)
    assert all(term.mesh_gpus == S.G for term in terms if term.axis == "pp")
    assert all(term.mesh_gpus == S.G for term in terms if term.algorithm in ("ring", "pairwise"))
