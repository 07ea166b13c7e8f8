"""Every algorithm executed message by message on N simulated ranks.

This is the independent evidence for the catalog's formulas: the simulator never reads
a formula, it moves numpy buffers and counts.  A closed form has its own execution
(:data:`symcomm.collectives.executions.EXECUTIONS`); a composition is run from the catalog's ``phases`` alone, each phase
on its groups side by side (:func:`run`), so adding one needs no code here.

The machine model is the one the α-β-γ formulas assume (Thakur et al. 2005 §3): rounds in
which every rank sends at most one message and receives at most one (full duplex, one
port); a round costs one α and the largest message it carries in β; the largest number
of elements any rank adds after the round costs γ.  Messages between different nodes (ranks r and r' with r // G ≠
r' // G) are charged to α_inter/β_inter; a round may not mix the two levels.

The switch of in-network reduction is not a rank: it has a port per rank, adds what
arrives, and multicasts the sum while inputs still stream in (cut-through), so its
downward round costs an α but no β beyond the upward one.
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from ..core import symbols as S
from .executions import EXECUTIONS
from .network import Group, Network, Run, _split
from .primitives import PRIMITIVES


# -- compositions: the catalog's phases, run in order ---------------------------------------------
#
# A composed algorithm (one with ``phases``) is run from its phases alone: a phase runs its
# algorithm (itself closed or composed) on groups of ``group`` ranks side by side, the groups
# being consecutive ranks, or, ``across_nodes``, ranks of the same position in each block of
# consecutive ranks.  A rank's data is addressed by block (block b is rank b's share when the
# primitive splits M into N blocks), so that each phase reads and writes whole blocks, as a
# strided copy would: a gathering phase (output N× its input) unites the blocks of its group;
# a splitting phase (output 1/N of its input) leaves with each member the blocks of the ranks
# it still reaches through the phases after it that do not gather; any other phase keeps the
# blocks where they are.  Only the executions of closed forms move messages.

_BY_RATIO = {S.N: "gathers", 1 / S.N: "splits", sp.Integer(1): "keeps"}


def _layout(primitive_name: str) -> str:
    prim = PRIMITIVES[primitive_name]
    ratio = sp.simplify(prim.output_elements / prim.input_elements)
    if ratio not in _BY_RATIO or primitive_name == "all_to_all":
        raise ValueError(f"{primitive_name} cannot be a phase of a composition (its blocks change owner)")
    return _BY_RATIO[ratio]


def _number(expr, values: dict):
    value = sp.sympify(expr, strict=True).subs(values)
    if not value.is_Rational:
        raise ValueError(f"{expr} at {values} is {value}, not a number")
    return value


def _subgroups(members: list[int], size: int, across_nodes: bool) -> list[list[int]]:
    if size < 1 or len(members) % size:
        raise AssertionError(f"a group of {len(members)} ranks does not split into groups of {size}")
    if across_nodes:
        stride = len(members) // size
        return [members[i::stride] for i in range(stride)]
    return [members[i:i + size] for i in range(0, len(members), size)]


def _leaves(algorithm, groups: list[list[int]], message, ranks_per_node: int) -> list[tuple]:
    """(closed-form algorithm, its groups of global ranks in position order, its message M)
    for every closed form the algorithm runs, in order."""
    if not algorithm.phases:
        return [(algorithm, groups, message)]
    out = []
    values = {S.N: len(groups[0]), S.M: message, S.G: ranks_per_node}
    for phase in algorithm.phases:
        size = int(_number(phase.group, values))
        parts = [part for members in groups for part in _subgroups(members, size, phase.across_nodes)]
        out += _leaves(phase.implementation, parts, _number(phase.message, values), ranks_per_node)
    return out


def _reach(rank: int, later: list[tuple]) -> set[int]:
    """The ranks ``rank`` exchanges with, directly or not, in the later phases that do not gather."""
    reached = {rank}
    for algorithm, groups, _ in later:
        if _layout(algorithm.primitive) != "gathers":
            reached = set().union(reached, *(group for group in groups if reached & set(group)))
    return reached


def _run_phase(net: Network, algorithm, groups: list[list[int]], message, held: dict, later: list) -> None:
    """Run one closed form on its groups side by side; ``held`` (rank → {block: array}) is updated."""
    try:
        execute = EXECUTIONS[(algorithm.primitive, algorithm.name)]
    except KeyError:
        raise ValueError(f"no execution for {algorithm.primitive}/{algorithm.name}") from None
    layout = _layout(algorithm.primitive)
    each = PRIMITIVES[algorithm.primitive].input_elements
    views = []
    for members in groups:
        mine = {pos: held.pop(r) for pos, r in enumerate(members) if r in held}
        keys = {pos: sorted(blocks) for pos, blocks in mine.items()}
        if layout == "gathers":
            if len(mine) != len(members):
                raise AssertionError("a gathering phase needs a block on every member")
            order = [key for pos in range(len(members)) for key in keys[pos]]
        else:
            common = {tuple(k) for k in keys.values()}
            if len(common) != 1:
                raise AssertionError("the members of a phase hold different blocks")
            order = list(common.pop())
        if layout == "splits":
            parts = [[key for key in order if key in _reach(r, later)] for r in members]
            if sorted(sum(parts, [])) != order or len({len(part) for part in parts}) != 1:
                raise AssertionError("a splitting phase's blocks do not part evenly among its members")
            order = sum(parts, [])
        data = {pos: np.concatenate([blocks[key] for key in (keys[pos] if layout == "gathers" else order)])
                for pos, blocks in mine.items()}
        want = _number(each, {S.N: len(members), S.M: message})
        if any(buffer.size != want for buffer in data.values()):
            raise AssertionError(f"{algorithm.primitive} on {len(members)} ranks holds other than {want} elements")
        view = Group(members, net.chunks)
        for pos, buffer in execute(view, data).items():
            got = parts[pos] if layout == "splits" else order
            held[members[pos]] = dict(zip(got, _split(buffer, len(got))))
        views.append(view)
    net.replay(views)


def _run_composition(net: Network, algorithm, inputs: list) -> list:
    prim = PRIMITIVES[algorithm.primitive]
    n = net.n
    per_rank = sp.sympify(prim.input_elements / S.M, strict=True).subs(S.N, n)     # a rank's input over M
    message = sp.Integer(next(x.size for x in inputs if x is not None)) / per_rank
    leaves = _leaves(algorithm, [list(range(n))], message, net.ranks_per_node)
    blocks = n if per_rank != 1 or any(_layout(leaf.primitive) != "keeps" for leaf, _, _ in leaves) else 1
    held = {}
    for r, x in enumerate(inputs):
        if x is not None:
            held[r] = {r: x} if per_rank != 1 else dict(enumerate(_split(x, blocks)))
    for i, (leaf, groups, leaf_message) in enumerate(leaves):
        _run_phase(net, leaf, groups, leaf_message, held, leaves[i + 1:])
    return [None if r not in held else np.concatenate([held[r][key] for key in sorted(held[r])])
            for r in range(n)]


def run(algorithm, inputs: list, ranks_per_node: int | None = None, chunks: int | None = None,
        segment: int | None = None) -> Run:
    """Execute a catalog algorithm (a :class:`symcomm.collectives.algorithms.Algorithm`: its primitive, name
    and phases) on ``inputs`` (one entry per rank, None where a rank holds nothing); ``chunks``
    is C (pipelined chains), ``segment`` K (segmented rings)."""
    net = Network(len(inputs), ranks_per_node, chunks, segment)
    if algorithm.phases:
        return net.finish(_run_composition(net, algorithm, inputs))
    try:
        execute = EXECUTIONS[(algorithm.primitive, algorithm.name)]
    except KeyError:
        raise ValueError(f"no execution for {algorithm.primitive}/{algorithm.name}") from None
    result = execute(net, {r: x for r, x in enumerate(inputs) if x is not None})
    return net.finish([result.get(r) for r in range(len(inputs))])


def expected(primitive_name: str, inputs: list) -> list:
    """The primitive's definition applied to the same inputs."""
    return PRIMITIVES[primitive_name].define(inputs)


# -- a flat ring spanning nodes, as NCCL runs it: several channels, their node exits rotated -------------

def run_channels(inputs: list, ranks_per_node: int, channels: int) -> Run:
    """A flat ring all-reduce of the N ranks of ``inputs``,
    ``ranks_per_node`` (k) of them on each node, run as ``channels`` rings one after another, each on
    1/channels of every buffer (the ring reduce-scatter, then the ring all-gather, on the same channel).  Channel c visits each node's ranks starting from its (c mod k)-th, so its
    ring enters the node at that rank and leaves it at the one before: over k channels every rank of a node
    is its exit once, as NCCL's search gives successive channels successive NICs (NVIDIA/nccl
    src/graph/search.cc, ncclTopoSearchRecNet: ``nets[(graph->nChannels + i) % netCount]``).  (A channel's
    reduce-scatter alone would leave its blocks in the channel's ring order, not the ranks'.)  The rounds may mix levels
    (``Network.mixed_levels``); ``Run.sent_inter`` counts what each rank sent across nodes."""
    n, k = len(inputs), ranks_per_node
    if n % k or channels < 1:
        raise ValueError(f"{n} ranks do not fill nodes of {k}, or no channel")
    net = Network(n, k, mixed_levels=True)
    parts = [None if x is None else _split(x, channels) for x in inputs]
    outputs: list = [[] for _ in range(n)]
    for c in range(channels):
        order = [node * k + (c + i) % k for node in range(n // k) for i in range(k)]
        data = {pos: parts[r][c] for pos, r in enumerate(order) if parts[r] is not None}
        for step in ("reduce_scatter", "all_gather"):
            view = Group(order, 1)
            data = EXECUTIONS[(step, "ring")](view, data)
            net.replay([view])
        for pos, r in enumerate(order):
            outputs[r].append(data[pos])
    return net.finish([np.concatenate(parts_of_rank) for parts_of_rank in outputs])
