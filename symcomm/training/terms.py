"""A term of a strategy: one kind of catalog collective, repeated, and the helpers that read terms.

A strategy's cost is the role-wise sum of its terms' catalog costs (:meth:`Cost.sum`); the
conventions (elements, per training step, exact forms) are those of :mod:`symcomm.training.strategies`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

import sympy as sp

from ..core import symbols as S
from ..core import rules
from ..base.crossing import ONE_NIC, RING, crossing_of
from ..collectives.algorithms import algorithm
from ..core.cost import Cost
from ..core.rules import Rule

N = S.N

_TIME = S.TIME_SYMBOLS


# -- a term: one kind of collective, repeated ---------------------------------------------

#: The pass of a training step a term runs in (:attr:`Term.phase`), as its label spells it.
PASSES = ("forward", "forward recompute", "backward", "after backward", "after the step",
          "after the optimizer step")


@dataclass(frozen=True)
class Term:
    """``count`` × the catalog's ``algorithm`` of ``primitive`` on ``group`` ranks, message M = ``message``.

    ``groups`` is how many such groups run side by side (it multiplies ``total`` only; it
    may be fractional when copies differ, e.g. the interleaved pipeline).  ``across_nodes``
    is True, False, or a relation such as ``t*c > G`` deciding the level once values are
    known: α lands on α_inter where it holds, and β on β_inter for 1/``ranks_per_node`` of it, the rest
    staying on β (:meth:`Cost.across_nodes`).  ``ranks_per_node`` (k) is how many of the group's ranks
    one node holds, each the node's exit for 1/k of a ring's crossings, or k − 1 of a pairwise all-to-all's
    N − 1 peers on its node (``base.crossing``): 1 (the default) puts all of α, β on α_inter, β_inter; only
    a ring or a pairwise all-to-all term may have another.  ``what`` names the collective in
    words and ``phase`` the pass it runs in (one of :data:`PASSES`, or "" for none); the
    :attr:`label` printed everywhere is "what (phase)".
    """

    primitive: str
    algorithm: str
    group: sp.Expr
    message: sp.Expr
    count: sp.Expr
    what: str
    groups: sp.Expr = sp.Integer(1)
    across_nodes: bool | sp.Basic = False
    axis: str = ""               # which parallel dimension the term belongs to (tp, dp, pp, ...)
    # the share of the per-GPU figures (send, recv, α, β, γ) that the busiest GPU carries,
    # where GPUs differ (a pipeline's end stages send one way only); total is unaffected
    busiest: sp.Expr = sp.Integer(1)
    phase: str = ""
    # the element type of the buffer when it is not the run's (--dtype): "fp32" for gradients Megatron
    # reduces in fp32; the formulas count its own elements, bytes use its size (:func:`cost_in_bytes_of`)
    dtype: str = ""
    # which pipeline stage's GPU the per-GPU figures describe, where stages differ: "interior" (a
    # pipeline's middle stage, sending both ways), "first", "last", "first and last"; "" = every stage alike
    stage: str = ""
    # k: the group's ranks on each node it spans, sharing the node's crossings over their own NICs (a
    # SymPy expression of the layout, e.g. G/t for a data-parallel group strided by t; 1 = one NIC)
    ranks_per_node: sp.Expr = sp.Integer(1)
    # K: the most of the group's ranks a node holds, where its nodes hold it unevenly (a ring's node leg is the
    # fullest node's: base.crossing.inter_shares); None: k, every node alike
    most_per_node: sp.Expr | None = None
    # G when the node's GPUs are wired point to point (nvlink=mesh): what stays on the node runs over the pair links
    # between the group's ranks there only (base.crossing, mesh_within and mesh_stay_share); None: NVSwitch
    mesh_gpus: sp.Expr | None = None

    def __post_init__(self):
        if self.phase and self.phase not in PASSES:
            raise ValueError(f"unknown pass {self.phase!r} for a term; choose one of: {', '.join(PASSES)}")
        if self.ranks_per_node != 1 and crossing_of(self.primitive, self.algorithm) == ONE_NIC:
            raise ValueError(f"ranks_per_node is for ring collectives and the pairwise all-to-all only; "
                             f"{self.algorithm} {self.primitive} is priced with its crossings through one rank's NIC")
        if (self.mesh_gpus is not None and crossing_of(self.primitive, self.algorithm) == ONE_NIC
                and self.primitive != "send_recv"):
            raise ValueError(f"mesh_gpus is for ring collectives, the pairwise all-to-all and a send between two GPUs "
                             f"only; {self.algorithm} {self.primitive} keeps the switch's β (base.crossing)")

    @property
    def label(self) -> str:
        """The term in words: "what (phase)", e.g. "parameter all-gather (forward)"."""
        return f"{self.what} ({self.phase})" if self.phase else self.what

    @property
    def cost(self) -> Cost:
        return _term_cost(self)


@functools.lru_cache(maxsize=None)
def _term_cost(term: Term) -> Cost:
    """A term's cost, computed once per distinct term (terms are immutable values)."""
    base = algorithm(term.primitive, term.algorithm).cost
    part = base.subs({N: sp.sympify(term.group, strict=True), S.M: sp.sympify(term.message, strict=True)}).times(term.count)
    total = part.total * sp.sympify(term.groups, strict=True)
    part = replace(part.times(term.busiest), total=total)
    return _on_level(part, term.across_nodes, term.ranks_per_node, crossing_of(term.primitive, term.algorithm),
                     term.group, term.mesh_gpus, term.most_per_node)


def cost_in_bytes_of(terms, run_bytes) -> Cost:
    """The terms' summed cost counted in elements of ``run_bytes`` bytes: a term whose buffer has
    its own element type (``Term.dtype``) is widened by its size over ``run_bytes``, so that
    elements × ``run_bytes`` gives the bytes on the wire of every term."""
    from ..base.units import bytes_per_element

    def one(term):
        if not term.dtype or bytes_per_element(term.dtype) == run_bytes:
            return term.cost
        # run_bytes may be a symbol (the interactive page's bytes per element), so no sp.Rational
        return term.cost.widened(sp.Integer(bytes_per_element(term.dtype)) / run_bytes)
    return Cost.sum(one(term) for term in terms)


@functools.lru_cache(maxsize=None)
def time_in_bytes_of(terms: tuple, run_bytes) -> sp.Expr:
    """The terms' summed time (:func:`cost_in_bytes_of`; 0 for none), once per distinct terms (immutable values, like
    :func:`_term_cost`'s): the step model prices each axis's terms of each stage, and the option combinations of a
    kernel family price the same ones again and again (python -m symcomm.tools.codegen: 216 distinct of 3184 in the
    MoE family, whose sums, each gathering its terms' coefficients, took 5.2 s of its 23 s build)."""
    return cost_in_bytes_of(terms, run_bytes).time if terms else sp.Integer(0)


def _on_level(cost: Cost, across, ranks_per_node=1, rule=RING, group=None, mesh_gpus=None, most=None) -> Cost:
    """The cost on the level ``across`` decides (:attr:`Term.across_nodes`): across nodes α, β split between
    the levels by the algorithm's crossing ``rule`` at ``ranks_per_node`` of its ``group`` on a node
    (:meth:`Cost.across_nodes`), both levels in a Piecewise for a relation; on nodes of ``mesh_gpus`` GPUs wired
    point to point, the node's β over the group's pair links there (:meth:`Cost.on_mesh` within one node)."""
    if across is True or across is sp.true:
        return cost.across_nodes(ranks_per_node, rule, group, mesh_gpus, most)
    within = cost if mesh_gpus is None else cost.on_mesh(group, mesh_gpus)
    if across is False or across is sp.false:
        return within
    # a relation: keep both levels and let the values decide (the network's concurrent legs only where it holds)
    inter, cost = cost.across_nodes(ranks_per_node, rule, group, mesh_gpus, most), within
    coeffs = []
    for sym in _TIME:
        both = sp.Piecewise((inter.coefficient(sym), across), (cost.coefficient(sym), True))
        if both != 0:
            coeffs.append((sym, both))
    legs = tuple((sp.Piecewise((e, across), (0, True)), stays, over) for e, stays, over in inter.concurrent)
    return replace(cost, coefficients=tuple(coeffs), concurrent=cost.concurrent + legs)


def busiest_stage(terms, stages=None) -> str:
    """In words, which pipeline stage's GPU the summed per-GPU figures of ``terms`` (one axis)
    describe; ``stages`` = the number of pipeline stages when known (1 and 2 have no interior)."""
    tags = {term.stage for term in terms}
    if stages == 1 and tags - {""}:
        return "the only stage"
    if tags & {"last", "first and last"}:
        return "the last pipeline stage"
    if "interior" in tags:
        return "either stage" if stages == 2 else "an interior pipeline stage"
    return "every stage alike"


def forward(term: Term) -> bool:
    """Terms of the forward pass (recomputation excluded): what many papers count."""
    return term.phase == "forward"


def power_of_two_rule(term: Term) -> Rule | None:
    """A term whose algorithm takes log₂ of its group needs a power-of-two group."""
    alg = algorithm(term.primitive, term.algorithm)
    if not alg.power_of_two:
        return None
    return rules.power_of_two(term.group, f"{term.group}={{x}} is not allowed: {term.algorithm} {term.primitive} "
                                          "needs a power-of-two group (2, 4, 8, ...)")
