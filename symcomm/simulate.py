"""Every algorithm executed message by message on N simulated ranks.

This is the independent evidence for the catalog's formulas: the simulator never reads
a formula, it moves numpy buffers and counts.  The machine model is the one the α-β-γ
formulas assume (Thakur et al. 2005 §3): rounds in which every rank sends at most one
message and receives at most one (full duplex, one port); a round costs one α and the
largest message it carries in β; the largest number of elements any rank adds after
the round costs γ.  Messages between different nodes (ranks r and r' with r // G ≠
r' // G) are charged to α_inter/β_inter; a round may not mix the two levels.

The switch of in-network reduction is not a rank: it has a port per rank, adds what
arrives, and multicasts the sum while inputs still stream in (cut-through), so its
downward round costs an α but no β beyond the upward one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .primitives import PRIMITIVES, ROOT

SWITCH = -1


@dataclass(frozen=True)
class Message:
    src: int
    dst: int
    data: np.ndarray
    tag: object = None


@dataclass(frozen=True)
class Run:
    """What one execution produced and what it cost."""

    outputs: list
    sent: tuple[int, ...]        # elements each rank sent
    received: tuple[int, ...]    # elements each rank received
    messages: tuple[int, ...]    # messages each rank sent
    coefficients: dict           # "alpha", "beta", "gamma", "alpha_inter", "beta_inter" → counts

    @property
    def send(self) -> int:
        return max(self.sent)

    @property
    def recv(self) -> int:
        return max(self.received)

    @property
    def total(self) -> int:
        return sum(self.sent)


class Network:
    """N ranks joined by one-port full-duplex links; counts what the algorithms do."""

    def __init__(self, n: int, ranks_per_node: int | None = None, chunks: int | None = None):
        self.n = n
        self.ranks_per_node = ranks_per_node or n
        self.chunks = chunks or 1          # pieces a pipelined chain splits its buffer into
        self.sent = [0] * n
        self.received = [0] * n
        self.messages = [0] * n
        self.coefficients = {"alpha": 0, "beta": 0, "gamma": 0, "alpha_inter": 0, "beta_inter": 0}
        self._reduced_this_round = [0] * n
        self._last_round_size = 0

    def _level(self, message: Message) -> str:
        if SWITCH in (message.src, message.dst):
            return ""
        same_node = message.src // self.ranks_per_node == message.dst // self.ranks_per_node
        return "" if same_node else "_inter"

    def _close_round(self) -> None:
        self.coefficients["gamma"] += max(self._reduced_this_round)
        self._reduced_this_round = [0] * self.n

    def exchange(self, messages: list[Message], cut_through: bool = False) -> list[Message]:
        """Deliver one round of messages; returns them (payloads copied) for the receivers."""
        if not messages:
            return []
        self._close_round()
        senders = [m.src for m in messages if m.src != SWITCH]
        receivers = [m.dst for m in messages if m.dst != SWITCH]
        if len(set(senders)) != len(senders) or len(set(receivers)) != len(receivers):
            raise AssertionError("a rank sends or receives two messages in one round")
        levels = {self._level(m) for m in messages}
        if len(levels) != 1:
            raise AssertionError("a round mixes intra-node and inter-node messages")
        level = levels.pop()
        size = max(m.data.size for m in messages)
        self.coefficients["alpha" + level] += 1
        # cut-through: this round streams behind the previous one on the opposite links
        self.coefficients["beta" + level] += max(0, size - self._last_round_size) if cut_through else size
        self._last_round_size = size
        delivered = []
        for m in messages:
            if m.src != SWITCH:
                self.sent[m.src] += m.data.size
                self.messages[m.src] += 1
            if m.dst != SWITCH:
                self.received[m.dst] += m.data.size
            delivered.append(Message(m.src, m.dst, m.data.copy(), m.tag))
        return delivered

    def add(self, rank: int, accumulator: np.ndarray, incoming: np.ndarray) -> np.ndarray:
        """rank adds incoming into its accumulator (counted as γ work)."""
        if rank != SWITCH:
            self._reduced_this_round[rank] += incoming.size
        return accumulator + incoming

    def finish(self, outputs: list) -> Run:
        self._close_round()
        return Run(outputs, tuple(self.sent), tuple(self.received), tuple(self.messages),
                   dict(self.coefficients))


# -- helpers -------------------------------------------------------------------------------

def _split(buffer: np.ndarray, parts: int) -> list[np.ndarray]:
    return list(np.split(buffer, parts))


def _groups_of(n: int) -> list[list[int]]:
    return [list(range(n))]


# -- rooted, flat -------------------------------------------------------------------------

def flat_broadcast(net: Network, data: dict) -> dict:
    out = {ROOT: data[ROOT]}
    for r in range(1, net.n):
        (msg,) = net.exchange([Message(ROOT, r, data[ROOT])])
        out[r] = msg.data
    return out


def flat_scatter(net: Network, data: dict) -> dict:
    blocks = _split(data[ROOT], net.n)
    out = {ROOT: blocks[ROOT]}
    for r in range(1, net.n):
        (msg,) = net.exchange([Message(ROOT, r, blocks[r])])
        out[r] = msg.data
    return out


def flat_gather(net: Network, data: dict) -> dict:
    pieces = {ROOT: data[ROOT]}
    for r in range(1, net.n):
        (msg,) = net.exchange([Message(r, ROOT, data[r])])
        pieces[r] = msg.data
    return {ROOT: np.concatenate([pieces[r] for r in range(net.n)])}


def flat_reduce(net: Network, data: dict) -> dict:
    acc = data[ROOT].copy()
    for r in range(1, net.n):
        (msg,) = net.exchange([Message(r, ROOT, data[r])])
        acc = net.add(ROOT, acc, msg.data)
    return {ROOT: acc}


# -- rooted, binomial tree (N a power of two; MPICH's orientation: the root first sends
# to N/2, so rank N/2 heads the largest subtree) ------------------------------------------

def binomial_broadcast(net: Network, data: dict) -> dict:
    have = {ROOT: data[ROOT]}
    mask = net.n // 2
    while mask:
        msgs = [Message(r, r + mask, have[r]) for r in range(0, net.n, 2 * mask)]
        for msg in net.exchange(msgs):
            have[msg.dst] = msg.data
        mask //= 2
    return have


def binomial_scatter(net: Network, data: dict) -> dict:
    blocks = _split(data[ROOT], net.n)
    held = {ROOT: {i: blocks[i] for i in range(net.n)}}   # rank → {block index: block}
    mask = net.n // 2
    while mask:
        msgs = []
        for r in range(0, net.n, 2 * mask):
            upper = [i for i in range(r + mask, r + 2 * mask)]
            msgs.append(Message(r, r + mask, np.concatenate([held[r][i] for i in upper]), tuple(upper)))
            for i in upper:
                del held[r][i]
        for msg in net.exchange(msgs):
            held[msg.dst] = dict(zip(msg.tag, _split(msg.data, len(msg.tag))))
        mask //= 2
    return {r: held[r][r] for r in range(net.n)}


def binomial_gather(net: Network, data: dict) -> dict:
    held = {r: {r: data[r]} for r in range(net.n)}
    mask = 1
    while mask < net.n:
        msgs = []
        for r in range(mask, net.n, 2 * mask):
            order = sorted(held[r])
            msgs.append(Message(r, r - mask, np.concatenate([held[r][i] for i in order]), tuple(order)))
        for msg in net.exchange(msgs):
            held[msg.dst].update(zip(msg.tag, _split(msg.data, len(msg.tag))))
            del held[msg.src]
        mask *= 2
    return {ROOT: np.concatenate([held[ROOT][i] for i in range(net.n)])}


def binomial_reduce(net: Network, data: dict) -> dict:
    acc = {r: data[r].copy() for r in range(net.n)}
    mask = 1
    while mask < net.n:
        msgs = [Message(r, r - mask, acc[r]) for r in range(mask, net.n, 2 * mask)]
        for msg in net.exchange(msgs):
            acc[msg.dst] = net.add(msg.dst, acc[msg.dst], msg.data)
        mask *= 2
    return {ROOT: acc[ROOT]}


# -- symmetric, on groups of ranks that run side by side ----------------------------------
# ``groups`` lists the ranks of each group; position i in a group plays rank i.

def ring_all_gather(net: Network, blocks: dict, groups: list[list[int]]) -> dict:
    """blocks[rank] is that rank's own block; returns the concatenation on every rank."""
    size = len(groups[0])
    have = {r: {i: blocks[g[i]]} for g in groups for i, r in enumerate(g)}
    for step in range(size - 1):
        msgs = []
        for g in groups:
            for i, r in enumerate(g):
                idx = (i - step) % size
                msgs.append(Message(r, g[(i + 1) % size], have[r][idx], idx))
        for msg in net.exchange(msgs):
            have[msg.dst][msg.tag] = msg.data
    return {r: np.concatenate([have[r][i] for i in range(size)]) for g in groups for r in g}


def ring_reduce_scatter(net: Network, data: dict, groups: list[list[int]]) -> dict:
    """data[rank] is a full buffer; returns block i of the group's sum on position i."""
    size = len(groups[0])
    acc = {r: _split(data[r].copy(), size) for g in groups for r in g}
    for step in range(size - 1):
        msgs = []
        for g in groups:
            for i, r in enumerate(g):
                idx = (i - step - 1) % size
                msgs.append(Message(r, g[(i + 1) % size], acc[r][idx], idx))
        for msg in net.exchange(msgs):
            acc[msg.dst][msg.tag] = net.add(msg.dst, acc[msg.dst][msg.tag], msg.data)
    return {r: acc[r][i] for g in groups for i, r in enumerate(g)}


def ring_all_reduce(net: Network, data: dict, groups: list[list[int]]) -> dict:
    return ring_all_gather(net, ring_reduce_scatter(net, data, groups), groups)


# -- symmetric, whole communicator ------------------------------------------------------------

def recursive_doubling_all_gather(net: Network, blocks: dict) -> dict:
    have = {r: {r: blocks[r]} for r in range(net.n)}
    dist = 1
    while dist < net.n:
        msgs = []
        for r in range(net.n):
            order = sorted(have[r])
            msgs.append(Message(r, r ^ dist, np.concatenate([have[r][i] for i in order]), tuple(order)))
        for msg in net.exchange(msgs):
            have[msg.dst].update(zip(msg.tag, _split(msg.data, len(msg.tag))))
        dist *= 2
    return {r: np.concatenate([have[r][i] for i in range(net.n)]) for r in range(net.n)}


def bruck_all_gather(net: Network, blocks: dict) -> dict:
    # local[r][j] holds block (r + j) mod n
    local = {r: [blocks[r]] for r in range(net.n)}
    dist = 1
    while dist < net.n:
        count = min(dist, net.n - dist)
        msgs = [Message(r, (r - dist) % net.n, np.concatenate(local[r][:count]), count)
                for r in range(net.n)]
        for msg in net.exchange(msgs):
            local[msg.dst].extend(_split(msg.data, msg.tag))
        dist *= 2
    return {r: np.concatenate([local[r][(i - r) % net.n] for i in range(net.n)])
            for r in range(net.n)}


def recursive_halving_reduce_scatter(net: Network, data: dict) -> dict:
    acc = {r: _split(data[r].copy(), net.n) for r in range(net.n)}
    low = {r: 0 for r in range(net.n)}          # each rank keeps blocks [low, low + span)
    span = net.n
    while span > 1:
        half = span // 2
        msgs = []
        for r in range(net.n):
            keep_upper = bool(r & half)
            give = range(low[r], low[r] + half) if keep_upper else range(low[r] + half, low[r] + span)
            msgs.append(Message(r, r ^ half, np.concatenate([acc[r][i] for i in give]), tuple(give)))
            if keep_upper:
                low[r] += half
        for msg in net.exchange(msgs):
            for i, piece in zip(msg.tag, _split(msg.data, len(msg.tag))):
                acc[msg.dst][i] = net.add(msg.dst, acc[msg.dst][i], piece)
        span = half
    return {r: acc[r][r] for r in range(net.n)}


def pairwise_reduce_scatter(net: Network, data: dict) -> dict:
    acc = {r: _split(data[r], net.n)[r].copy() for r in range(net.n)}
    for step in range(1, net.n):
        msgs = [Message(r, (r + step) % net.n, _split(data[r], net.n)[(r + step) % net.n])
                for r in range(net.n)]
        for msg in net.exchange(msgs):
            acc[msg.dst] = net.add(msg.dst, acc[msg.dst], msg.data)
    return acc


def recursive_doubling_all_reduce(net: Network, data: dict) -> dict:
    acc = {r: data[r].copy() for r in range(net.n)}
    dist = 1
    while dist < net.n:
        msgs = [Message(r, r ^ dist, acc[r]) for r in range(net.n)]
        for msg in net.exchange(msgs):
            acc[msg.dst] = net.add(msg.dst, acc[msg.dst], msg.data)
        dist *= 2
    return acc


def in_network_all_reduce(net: Network, data: dict) -> dict:
    up = net.exchange([Message(r, SWITCH, data[r]) for r in range(net.n)])
    total = up[0].data
    for msg in up[1:]:
        total = net.add(SWITCH, total, msg.data)
    down = net.exchange([Message(SWITCH, r, total) for r in range(net.n)], cut_through=True)
    return {msg.dst: msg.data for msg in down}


def _levels(net: Network):
    """(G, nodes, the groups inside each node, the groups of one local index across nodes)."""
    g = net.ranks_per_node
    nodes = net.n // g
    inside = [list(range(node * g, (node + 1) * g)) for node in range(nodes)]
    across = [[node * g + local for node in range(nodes)] for local in range(g)]
    return g, nodes, inside, across


def hierarchical_all_reduce(net: Network, data: dict) -> dict:
    _, _, inside, across = _levels(net)
    shards = ring_reduce_scatter(net, data, inside)
    shards = ring_all_reduce(net, shards, across)
    return ring_all_gather(net, shards, inside)


def hierarchical_all_gather(net: Network, blocks: dict) -> dict:
    g, nodes, inside, across = _levels(net)
    # across nodes: local index l gathers blocks l, G + l, 2G + l, … (node order)
    strided = ring_all_gather(net, blocks, across)
    # inside the node: every local index's strided chunk
    mixed = ring_all_gather(net, strided, inside)
    # local reordering only: chunk l holds block node·G + l at position node
    out = {}
    for r, buffer in mixed.items():
        pieces = _split(buffer, net.n)            # order (l, node)
        out[r] = np.concatenate([pieces[l * nodes + node] for node in range(nodes) for l in range(g)])
    return out


def hierarchical_reduce_scatter(net: Network, data: dict) -> dict:
    g, nodes, inside, across = _levels(net)
    # local reordering only: chunk l gathers blocks l, G + l, 2G + l, … so that the two
    # reduce-scatters leave block node·G + l on rank node·G + l
    permuted = {}
    for r, buffer in data.items():
        pieces = _split(buffer, net.n)            # block index node·G + l
        permuted[r] = np.concatenate([pieces[node * g + l] for l in range(g) for node in range(nodes)])
    partial = ring_reduce_scatter(net, permuted, inside)
    return ring_reduce_scatter(net, partial, across)


def pairwise_all_to_all(net: Network, data: dict) -> dict:
    blocks = {r: _split(data[r], net.n) for r in range(net.n)}
    out = {r: {r: blocks[r][r]} for r in range(net.n)}
    for step in range(1, net.n):
        msgs = [Message(r, (r + step) % net.n, blocks[r][(r + step) % net.n]) for r in range(net.n)]
        for msg in net.exchange(msgs):
            out[msg.dst][msg.src] = msg.data
    return {r: np.concatenate([out[r][src] for src in range(net.n)]) for r in range(net.n)}


def bruck_all_to_all(net: Network, data: dict) -> dict:
    # local[r][j] is the block travelling j ranks forward: from rank r − j (after arrival)
    local = {r: [_split(data[r], net.n)[(r + j) % net.n] for j in range(net.n)] for r in range(net.n)}
    bit = 1
    while bit < net.n:
        moving = [j for j in range(net.n) if j & bit]
        msgs = [Message(r, (r + bit) % net.n, np.concatenate([local[r][j] for j in moving]))
                for r in range(net.n)]
        for msg in net.exchange(msgs):
            for j, piece in zip(moving, _split(msg.data, len(moving))):
                local[msg.dst][j] = piece
        bit *= 2
    return {r: np.concatenate([local[r][(r - src) % net.n] for src in range(net.n)])
            for r in range(net.n)}


# -- pipelined chains: chunk k leaves rank i (i-th along the chain) in round i + k -----------

def chain_broadcast(net: Network, data: dict) -> dict:
    pieces = {ROOT: _split(data[ROOT], net.chunks)}
    held = {r: {} for r in range(net.n)}
    held[ROOT] = dict(enumerate(pieces[ROOT]))
    for rnd in range(net.n + net.chunks - 2):
        msgs = [Message(i, i + 1, held[i][rnd - i], rnd - i)
                for i in range(net.n - 1) if 0 <= rnd - i < net.chunks]
        for msg in net.exchange(msgs):
            held[msg.dst][msg.tag] = msg.data
    return {r: np.concatenate([held[r][k] for k in range(net.chunks)]) for r in range(net.n)}


def chain_reduce(net: Network, data: dict) -> dict:
    # the chain runs N−1 → … → 0; position i along it is rank N−1−i
    partial = {r: _split(data[r].copy(), net.chunks) for r in range(net.n)}
    for rnd in range(net.n + net.chunks - 2):
        msgs = []
        for i in range(net.n - 1):
            k = rnd - i
            if 0 <= k < net.chunks:
                src = net.n - 1 - i
                msgs.append(Message(src, src - 1, partial[src][k], k))
        for msg in net.exchange(msgs):
            partial[msg.dst][msg.tag] = net.add(msg.dst, partial[msg.dst][msg.tag], msg.data)
    return {ROOT: np.concatenate(partial[ROOT])}


def direct_send_recv(net: Network, data: dict) -> dict:
    (msg,) = net.exchange([Message(0, 1, data[0])])
    return {0: data[0], 1: msg.data}


# -- the registry: (primitive, algorithm) → execution on a dict rank → input -------------

def _whole(fn):
    return lambda net, data: fn(net, data, _groups_of(net.n))


def _then(first, second):
    return lambda net, data: second(net, first(net, data))


EXECUTIONS: dict[tuple[str, str], Callable[[Network, dict], dict]] = {
    ("broadcast", "flat"): flat_broadcast,
    ("broadcast", "binomial_tree"): binomial_broadcast,
    ("broadcast", "scatter_allgather"): _then(binomial_scatter, _whole(ring_all_gather)),
    ("broadcast", "ring"): chain_broadcast,
    ("reduce", "ring"): chain_reduce,
    ("scatter", "flat"): flat_scatter,
    ("scatter", "binomial_tree"): binomial_scatter,
    ("gather", "flat"): flat_gather,
    ("gather", "binomial_tree"): binomial_gather,
    ("reduce", "flat"): flat_reduce,
    ("reduce", "binomial_tree"): binomial_reduce,
    ("reduce", "rabenseifner"): _then(recursive_halving_reduce_scatter, binomial_gather),
    ("all_gather", "ring"): _whole(ring_all_gather),
    ("all_gather", "recursive_doubling"): recursive_doubling_all_gather,
    ("all_gather", "bruck"): bruck_all_gather,
    ("all_gather", "gather_broadcast"): _then(flat_gather, flat_broadcast),
    ("reduce_scatter", "ring"): _whole(ring_reduce_scatter),
    ("reduce_scatter", "recursive_halving"): recursive_halving_reduce_scatter,
    ("reduce_scatter", "pairwise"): pairwise_reduce_scatter,
    ("all_reduce", "ring"): _whole(ring_all_reduce),
    ("all_reduce", "flat"): _then(flat_reduce, flat_broadcast),
    ("all_reduce", "binomial_tree"): _then(binomial_reduce, binomial_broadcast),
    ("all_reduce", "recursive_doubling"): recursive_doubling_all_reduce,
    ("all_reduce", "rabenseifner"): _then(recursive_halving_reduce_scatter, recursive_doubling_all_gather),
    ("all_reduce", "in_network"): in_network_all_reduce,
    ("all_reduce", "hierarchical"): hierarchical_all_reduce,
    ("all_gather", "hierarchical"): hierarchical_all_gather,
    ("reduce_scatter", "hierarchical"): hierarchical_reduce_scatter,
    ("all_to_all", "pairwise"): pairwise_all_to_all,
    ("all_to_all", "bruck"): bruck_all_to_all,
    ("send_recv", "direct"): direct_send_recv,
}


# -- what gloo runs (gloo/broadcast.cc, gloo/reduce.cc; see symcomm/profiles.py) --------------

def binomial_any_broadcast(net: Network, data: dict) -> dict:
    """Any N, low bit first: in round i every holder v < 2^i sends to v + 2^i if it exists."""
    have = {ROOT: data[ROOT]}
    step = 1
    while step < net.n:
        msgs = [Message(v, v + step, have[v]) for v in range(step) if v + step < net.n]
        for msg in net.exchange(msgs):
            have[msg.dst] = msg.data
        step *= 2
    return have


EXECUTIONS[("broadcast", "binomial_any")] = binomial_any_broadcast
EXECUTIONS[("reduce", "ring_gather")] = _then(_whole(ring_reduce_scatter), flat_gather)


def run(primitive_name: str, algorithm_name: str, inputs: list,
        ranks_per_node: int | None = None, chunks: int | None = None) -> Run:
    """Execute an algorithm on ``inputs`` (one entry per rank, None where a rank holds nothing)."""
    try:
        execute = EXECUTIONS[(primitive_name, algorithm_name)]
    except KeyError:
        raise ValueError(f"no execution for {primitive_name}/{algorithm_name}") from None
    net = Network(len(inputs), ranks_per_node, chunks)
    data = {r: x for r, x in enumerate(inputs) if x is not None}
    result = execute(net, data)
    return net.finish([result.get(r) for r in range(len(inputs))])


def expected(primitive_name: str, inputs: list) -> list:
    """The primitive's definition applied to the same inputs."""
    return PRIMITIVES[primitive_name].define(inputs)
