"""The cost of one communication operation, as SymPy expressions.

Conventions (ARCHITECTURE.md, "Conventions"): counts are *elements*; ``send``/``recv``
are the largest number of elements any one rank sends/receives; ``total`` is the
elements sent summed over all ranks; the time is T = Σ coefficient · symbol over α (messages on the critical
path), β (elements moved on the critical path), γ (elements reduced on the critical
path), plus α_inter/β_inter for the inter-node level of two-level algorithms.  A flat ring spanning nodes
moves part of its elements over the node's links (β) and part over the network (β_inter) in the same steps:
both coefficients count them, and the time takes the slower leg, T = Σ coefficient · symbol − Σ e·min(s·β,
c·β_inter) over its ``concurrent`` legs (e elements, s of them on β and c on β_inter: e·max(s·β, c·β_inter)
in all).

A rooted operation keeps two traffic roles, the root and the busiest non-root rank,
because composing phases (reduce, then broadcast) adds traffic rank by rank: the root
of a naive all-reduce sends (N−1)M, not (N−1)M + M.  A symmetric operation has no root.
"""

from __future__ import annotations

import functools

from dataclasses import dataclass
from typing import Mapping

import sympy as sp

from ..base import crossing
from . import symbols as S
from .rewrite import rebuilt

@dataclass(frozen=True)
class Traffic:
    """Elements one rank sends and receives."""

    send: sp.Expr
    recv: sp.Expr

    def __add__(self, other: "Traffic") -> "Traffic":
        return Traffic(self.send + other.send, self.recv + other.recv)

    def scaled(self, factor: sp.Expr) -> "Traffic":
        return Traffic(self.send * factor, self.recv * factor)

    def subs(self, mapping, memo: dict | None = None) -> "Traffic":
        return Traffic(_subs(self.send, mapping, memo), _subs(self.recv, mapping, memo))

    def simplified(self) -> "Traffic":
        return Traffic(_tidy(self.send), _tidy(self.recv))


def _subs(expr, mapping, memo: dict | None = None) -> sp.Expr:
    mapping = {sp.sympify(k, strict=True): sp.sympify(v, strict=True) for k, v in dict(mapping).items()}
    if all(key.is_Symbol for key in mapping):
        # symbol → expression is a structural replacement: xreplace is simultaneous and
        # many times faster than subs, and the rebuilt tree evaluates as it is built
        return rebuilt(sp.sympify(expr, strict=True), mapping, {} if memo is None else memo)
    return sp.sympify(expr, strict=True).subs(mapping, simultaneous=True)


def _tidy(expr) -> sp.Expr:
    # factored: the one normal form the tables need, at a fraction of simplify's cost
    return _tidied(sp.sympify(expr, strict=True))


@functools.lru_cache(maxsize=4096)
def _tidied(expr: sp.Expr) -> sp.Expr:
    # once per expression: a composed cost's fields repeat one another (send, recv, β), 88 asked, 31 distinct.
    # factor alone: it factors numerator and denominator over one denominator, and a factor they share cancels in
    # the product, so cancelling first gave the same trees for every composition of the catalog (held by
    # tests/collectives/test_algorithms.py) at three times the cost
    return sp.factor(expr)


def _merged(legs: tuple) -> tuple[tuple[sp.Expr, sp.Expr, sp.Expr], ...]:
    """Concurrent legs (e, s, c) with the same shares held as one (Σe·min(s·β, c·β_inter) = (Σe)·min(...)), in
    the order first met; none of 0 elements."""
    out: dict = {}
    for e, stays, across in legs:
        out[stays, across] = out.get((stays, across), 0) + e
    return tuple((e, stays, across) for (stays, across), e in out.items() if sp.sympify(e, strict=True) != 0)


def _frozen(mapping: Mapping[sp.Symbol, sp.Expr]) -> tuple[tuple[sp.Symbol, sp.Expr], ...]:
    order = {sym: i for i, sym in enumerate(S.TIME_SYMBOLS)}
    return tuple(sorted(((k, sp.sympify(v, strict=True)) for k, v in mapping.items() if sp.sympify(v, strict=True) != 0),
                        key=lambda kv: order[kv[0]]))


@dataclass(frozen=True)
class Cost:
    """Traffic and α-β-γ time coefficients of one operation (or a sequence of them).

    ``others`` is the busiest non-root rank (every rank, when ``root`` is None).
    ``coefficients`` maps a time symbol (α, β, γ, α_inter, β_inter) to its coefficient.
    ``concurrent``: (e, s, c) for each pair of legs that run at once, e elements with the shares s on β and c on
    β_inter (counted in the coefficients too): the time takes the slower leg (:attr:`time`; ``base.crossing.CONCURRENT``).
    Legs of the same shares are held as one (their min is the min of their sum).
    """

    others: Traffic
    total: sp.Expr
    coefficients: tuple[tuple[sp.Symbol, sp.Expr], ...]
    root: Traffic | None = None
    concurrent: tuple[tuple[sp.Expr, sp.Expr, sp.Expr], ...] = ()

    @staticmethod
    def of(*, send, recv, total, alpha=0, beta=0, gamma=0,
           root_send=None, root_recv=None, **inter) -> "Cost":
        """Build a cost; give ``root_send``/``root_recv`` for rooted operations."""
        coeffs = {S.alpha: alpha, S.beta: beta, S.gamma: gamma}
        for key, value in inter.items():
            coeffs[S.symbol(key)] = value
        root = None
        if root_send is not None or root_recv is not None:
            root = Traffic(sp.sympify(root_send or 0, strict=True), sp.sympify(root_recv or 0, strict=True))
        return Cost(Traffic(sp.sympify(send, strict=True), sp.sympify(recv, strict=True)), sp.sympify(total, strict=True),
                    _frozen(coeffs), root)

    @staticmethod
    def zero() -> "Cost":
        """Nothing sent and no time: the neutral element of :meth:`then`."""
        return Cost(Traffic(sp.Integer(0), sp.Integer(0)), sp.Integer(0), ())

    @staticmethod
    def sum(costs) -> "Cost":
        """The costs one after another (:meth:`then`); :meth:`zero` for none."""
        total = Cost.zero()
        for cost in costs:
            total = total.then(cost)
        return total

    # -- reading -------------------------------------------------------------------
    def coefficient(self, sym: sp.Symbol) -> sp.Expr:
        return dict(self.coefficients).get(sym, sp.Integer(0))

    @property
    def alpha(self) -> sp.Expr:
        return self.coefficient(S.alpha)

    @property
    def beta(self) -> sp.Expr:
        return self.coefficient(S.beta)

    @property
    def gamma(self) -> sp.Expr:
        return self.coefficient(S.gamma)

    @property
    def send(self) -> sp.Expr:
        """Largest number of elements any one rank sends."""
        if self.root is None:
            return self.others.send
        return larger(self.root.send, self.others.send)

    @property
    def recv(self) -> sp.Expr:
        """Largest number of elements any one rank receives."""
        if self.root is None:
            return self.others.recv
        return larger(self.root.recv, self.others.recv)

    @property
    def time(self) -> sp.Expr:
        """Σ coefficient · symbol, each pair of :attr:`concurrent` legs at the slower's time: the faster leg's
        e·min(s·β, c·β_inter) taken off (e·max(s·β, c·β_inter) in all; written as a difference so that the
        coefficients, factored or not, stand as they are: docs.time_latex prints the max)."""
        linear = sp.Add(*(coef * sym for sym, coef in self.coefficients))
        if not self.concurrent:
            return linear
        return linear - sp.Add(*(e * sp.Min(stays * S.beta, across * S.beta_inter)
                                 for e, stays, across in self.concurrent))

    def overlapped(self) -> tuple[tuple[sp.Expr, sp.Expr], ...]:
        """Each pair of :attr:`concurrent` legs as (elements on β, elements on β_inter): the time is the linear sum
        less min(a·β, b·β_inter) for each (the exact sums of training.sheet read them so)."""
        return tuple((e * stays, e * across) for e, stays, across in self.concurrent)

    # -- composing -----------------------------------------------------------------
    def then(self, other: "Cost") -> "Cost":
        """This operation followed by ``other`` (sequential phases, same root)."""
        root = None
        if self.root is not None or other.root is not None:
            root = (self.root or self.others) + (other.root or other.others)
        coeffs = dict(self.coefficients)
        for sym, coef in other.coefficients:
            coeffs[sym] = coeffs.get(sym, 0) + coef
        return Cost(self.others + other.others, self.total + other.total, _frozen(coeffs), root,
                    _merged(self.concurrent + other.concurrent))

    def __add__(self, other: "Cost") -> "Cost":
        return self.then(other)

    def times(self, count) -> "Cost":
        """The operation repeated ``count`` times in sequence."""
        count = sp.sympify(count, strict=True)
        return Cost(self.others.scaled(count), self.total * count,
                    _frozen({sym: coef * count for sym, coef in self.coefficients}),
                    None if self.root is None else self.root.scaled(count),
                    tuple((e * count, stays, across) for e, stays, across in self.concurrent))

    def widened(self, ratio) -> "Cost":
        """The same operation on elements ``ratio`` times as wide (fp32 gradients in a bf16 run:
        2), counted in the narrower elements: traffic, total, β and γ scale; α (messages) does not."""
        ratio = sp.sympify(ratio, strict=True)
        keep = (S.alpha, S.alpha_inter)
        return Cost(self.others.scaled(ratio), self.total * ratio,
                    _frozen({sym: coef * (1 if sym in keep else ratio) for sym, coef in self.coefficients}),
                    None if self.root is None else self.root.scaled(ratio),
                    tuple((e * ratio, stays, across) for e, stays, across in self.concurrent))

    def subs(self, mapping) -> "Cost":
        """Substitute symbols (group size, message size...) in every expression, simultaneously."""
        memo: dict = {}   # the fields share subtrees: each is rebuilt once
        return Cost(self.others.subs(mapping, memo), _subs(self.total, mapping, memo),
                    _frozen({sym: _subs(coef, mapping, memo) for sym, coef in self.coefficients}),
                    None if self.root is None else self.root.subs(mapping, memo),
                    _merged(tuple(tuple(_subs(x, mapping, memo) for x in leg) for leg in self.concurrent)))

    def across_nodes(self, ranks_per_node=1, rule=crossing.RING, group=None, mesh_gpus=None, most=None) -> "Cost":
        """The same operation on a group of ``group`` ranks spanning nodes, ``ranks_per_node`` (k) of them on
        each node, its α and β coefficients split between the node's links and the network by the
        algorithm's crossing ``rule`` (``base.crossing.inter_shares``, the one rule ``presets.link_values``
        reads too).  A ring (the default): α → α_inter (a step waits for its slowest hop, the one crossing the
        network), b/k of β → β_inter and (k − 1)·b/k staying on β (a multi-channel ring's crossings rotate
        over the node's NICs, NVIDIA/nccl src/graph/search.cc, ncclTopoSearchRecNet).  A pairwise all-to-all
        (``PEERS``): (N − k)/(N − 1) of both α and β cross, the rest stays (k − 1 of its N − 1 peers share its
        node).  k = 1 is the whole of α, β on α_inter, β_inter for every rule.  A ring's two β legs run at
        once (``base.crossing.CONCURRENT``: recorded in :attr:`concurrent`, the time the slower's); a pairwise
        all-to-all's sends add up (one-port).  ``mesh_gpus`` (G, nodes wired point to point: nvlink=mesh):
        the β that stays runs over k − 1 of each GPU's G − 1 pair links (``base.crossing.mesh_stay_share``).
        ``most`` (K): the most ranks a node of the group holds where nodes hold it unevenly: a ring's node leg is
        that node's (``base.crossing.inter_shares``)."""
        k = sp.sympify(ranks_per_node, strict=True)
        full = None if most is None else sp.sympify(most, strict=True)
        n = None if group is None else sp.sympify(group, strict=True)
        if rule == crossing.PEERS and n is None:
            raise ValueError("a pairwise all-to-all's crossing share needs its group size")
        alpha_split, beta_split = crossing.inter_shares(rule, n, k, full)
        if mesh_gpus is not None:
            stays_at = full if rule == crossing.RING and full is not None else k
            beta_split = (beta_split[0], crossing.mesh_stay_share(rule, n, stays_at, sp.sympify(mesh_gpus), sp.Min))
        coeffs: dict = {}
        legs = list(self.concurrent)

        def add(sym, value):
            coeffs[sym] = coeffs.get(sym, 0) + value

        for sym, coef in self.coefficients:
            if sym in (S.alpha, S.beta):
                across, stays = alpha_split if sym == S.alpha else beta_split
                if across != 0:
                    add(S.INTER_NODE[sym], coef * across)
                if stays != 0:
                    add(sym, coef * stays)
                if sym == S.beta and rule in crossing.CONCURRENT and across != 0 and stays != 0:
                    legs.append((coef, sp.sympify(stays, strict=True), sp.sympify(across, strict=True)))
            else:
                add(S.INTER_NODE.get(sym, sym), coef)
        return Cost(self.others, self.total, _frozen(coeffs), self.root, _merged(tuple(legs)))

    def on_mesh(self, group, gpus) -> "Cost":
        """The same operation with its ``group`` ranks on one node of ``gpus`` GPUs wired point to point
        (nvlink=mesh): β over n − 1 of each GPU's G − 1 pair links, times (G − 1)/(n − 1)
        (``base.crossing.mesh_within``); α, the network's coefficients and the traffic unchanged."""
        factor = crossing.mesh_within(sp.sympify(group, strict=True), sp.sympify(gpus, strict=True), sp.Max)
        return Cost(self.others, self.total,
                    _frozen({sym: coef * factor if sym == S.beta else coef for sym, coef in self.coefficients}),
                    self.root, self.concurrent)

    def simplified(self) -> "Cost":
        return Cost(self.others.simplified(), _tidy(self.total),
                    _frozen({sym: _tidy(coef) for sym, coef in self.coefficients}),
                    None if self.root is None else self.root.simplified(),
                    _merged(tuple((_tidy(e), _tidy(stays), _tidy(across)) for e, stays, across in self.concurrent)))

    @property
    def free_symbols(self) -> set:
        """The symbols of every rank's traffic, the total and the coefficients: what a value of
        the cost can depend on (without deciding the larger of root and non-root, as
        :meth:`fields` does)."""
        parts = [self.others.send, self.others.recv, self.total] + [coef for _, coef in self.coefficients] + [
            x for leg in self.concurrent for x in leg]
        if self.root is not None:
            parts += [self.root.send, self.root.recv]
        return set().union(*(sp.sympify(part, strict=True).free_symbols for part in parts))

    def fields(self) -> dict[str, sp.Expr]:
        """The reported quantities by name, in display order."""
        out = {"send": self.send, "recv": self.recv, "total": self.total}
        for sym in S.TIME_SYMBOLS:
            if sym in (S.alpha, S.beta, S.gamma) or sym in dict(self.coefficients):
                out[S.BY_SYMBOL[sym].cli_name] = self.coefficient(sym)
        return out


@functools.lru_cache(maxsize=4096)
def larger(x: sp.Expr, y: sp.Expr) -> sp.Expr:
    """max(x, y), decided symbolically when the sign of x − y is provable for N ≥ 2.

    Returns an unevaluated ``Max`` when neither order can be proved.
    """
    from .proof import is_nonnegative  # the prover owns inequality reasoning

    x, y = sp.sympify(x, strict=True), sp.sympify(y, strict=True)
    if is_nonnegative(x - y):
        return x
    if is_nonnegative(y - x):
        return y
    if (x - y).has(sp.Piecewise):
        # decide branch by branch: x ≥ y in every branch of the folded difference
        folded = sp.piecewise_fold(x - y)
        if isinstance(folded, sp.Piecewise):
            if all(is_nonnegative(branch) for branch, _ in folded.args):
                return x
            if all(is_nonnegative(-branch) for branch, _ in folded.args):
                return y
    return sp.Max(x, y)
