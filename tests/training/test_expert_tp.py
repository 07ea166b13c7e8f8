"""expert_tp=t_e: an expert tensor-parallel size of its own, the innermost axis of Megatron-Core's expert grid
(symcomm.training.hybrid.MEGATRON_EXPERT_GRID: expert tensor × expert × expert data × pipeline, the dispatcher
gathering the routed tokens over the expert tensor group).  Expected values are hand counts of that grid and that
dispatcher; t_e = t and t_e = 1 must give what expert_tp=tp and expert_tp=1 give (every figure)."""

import pytest

import symcomm

# a small MoE layout: t = 2 (sequence parallel), d = 4, e = 2, t_e = 4, so t·d·c = 8 = t_e·e and the expert-data
# group is one rank; E = 8 experts, k = 2, h = 1024, s = 1024, a global batch of 32 in m = 4 micro-batches per replica
LAYOUT = dict(t=2, d=4, c=1, p=1, e=2, moe=1, sp=1, E=8, k=2, h=1024, s=1024, b=32, m=4, L=2, L_moe=2,
              Phi=10 ** 9, Phi_E=8 * 10 ** 8, G=8, E_s=0)


def _terms(**values):
    return symcomm.evaluate("hybrid", **values).to_dict()["terms"]


def _by(terms, axis, words):
    return [term for term in terms if term["axis"] == axis and words in term["label"]]


def test_the_expert_grid_of_t_e_by_hand():
    terms = _terms(**LAYOUT, expert_tp="t_e", t_e=4)
    # a replica's micro-batch: 32/4/4 = 2 sequences of 1024 tokens, 1024 on each of the t = 2 ranks (sequence
    # parallel); the all-to-all sends their k = 2 copies of h = 1024: 2,097,152 elements over the e = 2 ranks
    dispatch = _by(terms, "ep", "dispatch")
    assert dispatch and {term["group"] for term in dispatch} == {2}
    assert {term["message"] for term in dispatch} == {1024 * 2 * 1024}
    # each rank received 2,048 copies; the t_e = 4 ranks of its expert tensor group gather theirs: 8,192 rows of h
    gathered = _by(terms, "tp", "routed-token all-gather")
    assert gathered and {(term["group"], term["message"]) for term in gathered} == {(4, 8192 * 1024)}
    # experts: Φ_E = 8·10^8 over e·t_e = 8 ranks, 10^8 each, held by an expert-data group of t·d·c/(t_e·e) = 1 rank
    expert_dp = [term for term in terms if term["axis"] == "dp" and "expert" in term["label"]]
    assert expert_dp and {(term["group"], term["message"]) for term in expert_dp} == {(1, 10 ** 8)}


def test_the_expert_group_stands_t_e_apart():
    # the e = 2 ranks of an expert group stand t_e = 4 apart in the grid: on nodes of 4 they are on two nodes, one
    # rank each, and the whole all-to-all crosses the network; on nodes of 8 it stays on the node
    from symcomm.core import symbols as S
    from symcomm.training.hybrid import hybrid_terms

    a2a = [term for term in hybrid_terms(zero=1, moe=1, sp=1, expert_tp="t_e") if term.algorithm == "pairwise"]
    assert a2a
    values = {S.t: 2, S.d: 4, S.c: 1, S.p: 1, S.e: 2, S.t_e: 4, S.E: 8, S.k: 2, S.h: 1024, S.s: 1024, S.b: 32, S.m: 4,
              S.L: 2, S.L_moe: 2}
    on_four = {sym: sum(term.cost.coefficient(sym) for term in a2a).subs({**values, S.G: 4})
               for sym in (S.beta, S.beta_inter)}
    on_eight = {sym: sum(term.cost.coefficient(sym) for term in a2a).subs({**values, S.G: 8})
                for sym in (S.beta, S.beta_inter)}
    assert on_four[S.beta] == 0 and on_four[S.beta_inter] > 0
    assert on_eight[S.beta_inter] == 0 and on_eight[S.beta] == on_four[S.beta_inter]


@pytest.mark.parametrize("named, typed", [(dict(expert_tp="tp"), dict(expert_tp="t_e", t_e=2)),
                                          (dict(expert_tp="1"), dict(expert_tp="t_e", t_e=1))])
def test_t_e_at_t_or_1_answers_as_the_named_sizes(named, typed):
    # the whole answer, step time and memory included, on a preset model and hardware
    layout = dict(model="mixtral-8x7b", hardware="h100", t=2, p=2, d=8, c=1, e=8, b=256, m=32, s=4096, sp=1, moe=1,
                  recompute="selective")
    a, b = symcomm.evaluate("hybrid", **layout, **named).to_dict(), symcomm.evaluate("hybrid", **layout, **typed).to_dict()
    for key in ("send", "recv", "total", "alpha", "beta", "alpha_inter", "beta_inter", "step_time", "compute_time",
                "exposed_comm_time", "memory_per_gpu"):
        assert b[key] == pytest.approx(a[key], rel=1e-12), key


def test_a_t_e_the_grid_cannot_hold_is_refused_in_one_line():
    with pytest.raises(Exception, match=r"t\*d\*c=8 must be divisible by t_e\*e=16"):
        symcomm.evaluate("hybrid", **LAYOUT, expert_tp="t_e", t_e=8)
    with pytest.raises(Exception, match="needs an expert tensor-parallel size of 1"):
        symcomm.evaluate("hybrid", **LAYOUT, expert_tp="t_e", t_e=2, dispatcher="deepep")
