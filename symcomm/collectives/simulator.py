"""Every algorithm executed message by message on N simulated ranks.

This is the independent evidence for the catalog's formulas: the simulator never reads
a formula, it moves numpy buffers and counts.  A closed form has its own execution here
(:data:`EXECUTIONS`); a composition is run from the catalog's ``phases`` alone, each phase
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

from dataclasses import dataclass
from typing import Callable

import numpy as np
import sympy as sp

from ..core import symbols as S
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

    def __init__(self, n: int, ranks_per_node: int | None = None, chunks: int | None = None,
                 segment: int | None = None):
        self.n = n
        self.ranks_per_node = ranks_per_node or n
        self.chunks = chunks or 1          # pieces a pipelined chain splits its buffer into
        self.segment = segment             # most elements in one segment of a segmented ring
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

    def replay(self, groups: list["Group"]) -> None:
        """Count the rounds the groups recorded, round i of every group together: the groups
        of one phase run side by side on disjoint ranks."""
        for group in groups:
            for rank, size in group.before.items():
                self._reduced_this_round[rank] += size
        for i in range(max(len(group.rounds) for group in groups)):
            rounds = [group.rounds[i] for group in groups if i < len(group.rounds)]
            cut_through = {cut for _, cut, _ in rounds}
            if len(cut_through) != 1:
                raise AssertionError("groups running side by side disagree on a cut-through round")
            self.exchange([m for messages, _, _ in rounds for m in messages], cut_through.pop())
            for _, _, added in rounds:
                for rank, size in added.items():
                    self._reduced_this_round[rank] += size

    def finish(self, outputs: list) -> Run:
        self._close_round()
        return Run(outputs, tuple(self.sent), tuple(self.received), tuple(self.messages),
                   dict(self.coefficients))


class Group:
    """One group of ranks as an execution sees it: positions 0..n−1 standing for the global
    ``members``.  Messages are delivered at once and recorded (in global ranks) with the
    elements each member adds after them; :meth:`Network.replay` counts them."""

    def __init__(self, members: list[int], chunks: int):
        self.members = members
        self.n = len(members)
        self.chunks = chunks
        self.rounds: list[tuple[list[Message], bool, dict]] = []  # (messages, cut_through, adds)
        self.before: dict[int, int] = {}                          # adds before the first round
        self._added = self.before

    def _global(self, position: int) -> int:
        return position if position == SWITCH else self.members[position]

    def exchange(self, messages: list[Message], cut_through: bool = False) -> list[Message]:
        if not messages:
            return []
        self._added = {}
        self.rounds.append(([Message(self._global(m.src), self._global(m.dst), m.data, m.tag) for m in messages],
                            cut_through, self._added))
        return [Message(m.src, m.dst, m.data.copy(), m.tag) for m in messages]

    def add(self, rank: int, accumulator: np.ndarray, incoming: np.ndarray) -> np.ndarray:
        if rank != SWITCH:
            self._added[self.members[rank]] = self._added.get(self.members[rank], 0) + incoming.size
        return accumulator + incoming


# -- helpers -------------------------------------------------------------------------------

def _split(buffer: np.ndarray, parts: int) -> list[np.ndarray]:
    return list(np.split(buffer, parts))


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


# -- rooted, binomial tree, any N (MPICH's orientation: the root first sends to
# 2^(⌈log₂N⌉−1), so that rank heads the largest subtree) -------------------------------

def binomial_broadcast(net: Network, data: dict) -> dict:
    """Any N (MPICH's bcast_intra_binomial): masks 2^(⌈log₂N⌉−1), ..., 1; a holder r sends to
    r + mask when that rank exists."""
    have = {ROOT: data[ROOT]}
    mask = 1 << max(0, (net.n - 1).bit_length() - 1)
    while mask:
        msgs = [Message(r, r + mask, have[r]) for r in range(0, net.n, 2 * mask) if r + mask < net.n]
        for msg in net.exchange(msgs):
            have[msg.dst] = msg.data
        mask //= 2
    return have


def binomial_scatter(net: Network, data: dict) -> dict:
    """Any N (MPICH's scatter_intra_binomial): masks from 2^(⌈log₂N⌉−1) down; a holder r sends
    the blocks r + mask … min(r + 2·mask, N) − 1 to r + mask when that rank exists."""
    blocks = _split(data[ROOT], net.n)
    held = {ROOT: {i: blocks[i] for i in range(net.n)}}   # rank → {block index: block}
    mask = 1 << max(0, (net.n - 1).bit_length() - 1)
    while mask:
        msgs = []
        for r in range(0, net.n, 2 * mask):
            if r + mask >= net.n:
                continue
            upper = [i for i in range(r + mask, min(r + 2 * mask, net.n))]
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


# -- symmetric ---------------------------------------------------------------------------------

def ring_all_gather(net: Network, blocks: dict) -> dict:
    """blocks[rank] is that rank's own block; returns the concatenation on every rank."""
    have = {r: {r: blocks[r]} for r in range(net.n)}
    for step in range(net.n - 1):
        msgs = []
        for r in range(net.n):
            idx = (r - step) % net.n
            msgs.append(Message(r, (r + 1) % net.n, have[r][idx], idx))
        for msg in net.exchange(msgs):
            have[msg.dst][msg.tag] = msg.data
    return {r: np.concatenate([have[r][i] for i in range(net.n)]) for r in range(net.n)}


def ring_reduce_scatter(net: Network, data: dict) -> dict:
    """data[rank] is a full buffer; returns block r of the sum on rank r."""
    acc = {r: _split(data[r].copy(), net.n) for r in range(net.n)}
    for step in range(net.n - 1):
        msgs = []
        for r in range(net.n):
            idx = (r - step - 1) % net.n
            msgs.append(Message(r, (r + 1) % net.n, acc[r][idx], idx))
        for msg in net.exchange(msgs):
            acc[msg.dst][msg.tag] = net.add(msg.dst, acc[msg.dst][msg.tag], msg.data)
    return {r: acc[r][r] for r in range(net.n)}


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


def _halving_reduce_scatter(net: Network, real: list, blocks: dict) -> tuple[dict, list]:
    """Reduce-scatter by recursive halving from distance 1 over the core ranks ``real`` (core rank
    c is rank real[c]; ``blocks[c]`` its list of core-many blocks, reduced in place): the lower
    of a pair keeps the lower half.  Returns each core rank's span [lo, hi) of reduced blocks, and
    the spans before each round (the way back by recursive doubling retraces them)."""
    core = len(real)
    span = {c: (0, core) for c in range(core)}
    history = []
    mask = 1
    while mask < core:
        msgs, keep = [], {}
        for c in range(core):
            lo, hi = span[c]
            mid = (lo + hi) // 2
            mine, give = ((lo, mid), (mid, hi)) if c < c ^ mask else ((mid, hi), (lo, mid))
            msgs.append(Message(real[c], real[c ^ mask], np.concatenate(blocks[c][give[0]:give[1]]), give))
            keep[c] = mine
        history.append(dict(span))
        for msg in net.exchange(msgs):
            c = real.index(msg.dst)
            lo, hi = msg.tag
            for i, piece in zip(range(lo, hi), _split(msg.data, hi - lo)):
                blocks[c][i] = net.add(msg.dst, blocks[c][i], piece)
        span = keep
        mask <<= 1
    return span, history


def rabenseifner_fold_all_reduce(net: Network, data: dict) -> dict:
    """MPICH's allreduce_intra_reduce_scatter_allgather.c on any N: fold the r = N − P extra
    ranks (P = 2^⌊log₂N⌋) into their odd neighbours, Rabenseifner on the P core ranks
    (reduce-scatter by recursive halving from distance 1, all-gather by recursive doubling
    back), then unfold."""
    n = net.n
    core = 1 << (n.bit_length() - 1)
    extra = n - core
    acc = {r: data[r].copy() for r in range(n)}
    if extra:
        for msg in net.exchange([Message(e, e + 1, acc[e]) for e in range(0, 2 * extra, 2)]):
            acc[msg.dst] = net.add(msg.dst, acc[msg.dst], msg.data)
    real = [2 * c + 1 if c < extra else c + extra for c in range(core)]   # core rank → rank
    blocks = {c: _split(acc[real[c]], core) for c in range(core)}
    span, history = _halving_reduce_scatter(net, real, blocks)
    mask = core
    while mask > 1:                                                        # all-gather, the way back
        mask >>= 1
        msgs = []
        for c in range(core):
            lo, hi = span[c]
            msgs.append(Message(real[c], real[c ^ mask], np.concatenate(blocks[c][lo:hi]), (lo, hi)))
        for msg in net.exchange(msgs):
            c = real.index(msg.dst)
            lo, hi = msg.tag
            blocks[c][lo:hi] = _split(msg.data, hi - lo)
        span = history.pop()
    out = {real[c]: np.concatenate(blocks[c]) for c in range(core)}
    if extra:
        for msg in net.exchange([Message(o, o - 1, out[o]) for o in range(1, 2 * extra, 2)]):
            out[msg.dst] = msg.data
    return out


def _core_of(n: int, folds_to_odd: bool) -> list[int]:
    """MPICH's fold to P = 2^⌊log₂N⌋ ranks: core rank c → rank (the r = N − P extra ranks below 2r
    fold pairwise; the odd one of each pair stays for all-reduce, the even one for reduce)."""
    core = 1 << (n.bit_length() - 1)
    extra = n - core
    return [2 * c + (1 if folds_to_odd else 0) if c < extra else c + extra for c in range(core)]


def recursive_doubling_fold_all_reduce(net: Network, data: dict) -> dict:
    """MPICH's allreduce_intra_recursive_doubling.c on any N: the even ranks below 2r send to
    rank + 1 (which adds), the P core ranks swap whole buffers at distance 1, 2, ..., P/2 and add,
    then the odd ranks below 2r send the result back."""
    n = net.n
    real = _core_of(n, folds_to_odd=True)
    extra = n - len(real)
    acc = {r: data[r].copy() for r in range(n)}
    if extra:
        for msg in net.exchange([Message(e, e + 1, acc[e]) for e in range(0, 2 * extra, 2)]):
            acc[msg.dst] = net.add(msg.dst, acc[msg.dst], msg.data)
    mask = 1
    while mask < len(real):
        msgs = [Message(real[c], real[c ^ mask], acc[real[c]]) for c in range(len(real))]
        for msg in net.exchange(msgs):
            acc[msg.dst] = net.add(msg.dst, acc[msg.dst], msg.data)
        mask <<= 1
    if extra:
        for msg in net.exchange([Message(o, o - 1, acc[o]) for o in range(1, 2 * extra, 2)]):
            acc[msg.dst] = msg.data
    return acc


def rabenseifner_fold_reduce(net: Network, data: dict) -> dict:
    """MPICH's reduce_intra_reduce_scatter_gather.c on any N, root 0: the odd ranks below 2r send
    to rank − 1 (which adds); the P core ranks reduce-scatter by recursive halving from distance
    1 (the lower of a pair keeps the lower half); then, for mask = P/2, ..., 1, every core rank
    whose highest bit is mask sends all the blocks it holds to core rank − mask."""
    n = net.n
    real = _core_of(n, folds_to_odd=False)
    core, extra = len(real), n - len(real)
    acc = {r: data[r].copy() for r in range(n)}
    if extra:
        for msg in net.exchange([Message(o, o - 1, acc[o]) for o in range(1, 2 * extra, 2)]):
            acc[msg.dst] = net.add(msg.dst, acc[msg.dst], msg.data)
    blocks = {c: _split(acc[real[c]], core) for c in range(core)}
    span, _ = _halving_reduce_scatter(net, real, blocks)
    held = {c: {i: blocks[c][i] for i in range(*span[c])} for c in range(core)}
    mask = core // 2
    while mask:                                                            # gather to core rank 0
        msgs = []
        for c in range(mask, 2 * mask):
            order = sorted(held[c])
            msgs.append(Message(real[c], real[c - mask], np.concatenate([held[c][i] for i in order]), tuple(order)))
        for msg in net.exchange(msgs):
            c = real.index(msg.dst)
            held[c].update(zip(msg.tag, _split(msg.data, len(msg.tag))))
        mask //= 2
    return {ROOT: np.concatenate([held[0][i] for i in range(core)])}


def in_network_all_reduce(net: Network, data: dict) -> dict:
    up = net.exchange([Message(r, SWITCH, data[r]) for r in range(net.n)])
    total = up[0].data
    for msg in up[1:]:
        total = net.add(SWITCH, total, msg.data)
    down = net.exchange([Message(SWITCH, r, total) for r in range(net.n)], cut_through=True)
    return {msg.dst: msg.data for msg in down}


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
# Closed forms only: a composition runs its phases (see "compositions" below).

EXECUTIONS: dict[tuple[str, str], Callable[[Network, dict], dict]] = {
    ("broadcast", "flat"): flat_broadcast,
    ("broadcast", "binomial_tree"): binomial_broadcast,
    ("broadcast", "ring"): chain_broadcast,
    ("reduce", "ring"): chain_reduce,
    ("scatter", "flat"): flat_scatter,
    ("scatter", "binomial_tree"): binomial_scatter,
    ("gather", "flat"): flat_gather,
    ("gather", "binomial_tree"): binomial_gather,
    ("reduce", "flat"): flat_reduce,
    ("reduce", "binomial_tree"): binomial_reduce,
    ("all_gather", "ring"): ring_all_gather,
    ("all_gather", "recursive_doubling"): recursive_doubling_all_gather,
    ("all_gather", "bruck"): bruck_all_gather,
    ("reduce_scatter", "ring"): ring_reduce_scatter,
    ("reduce_scatter", "recursive_halving"): recursive_halving_reduce_scatter,
    ("reduce_scatter", "pairwise"): pairwise_reduce_scatter,
    ("all_reduce", "recursive_doubling"): recursive_doubling_all_reduce,
    ("all_reduce", "in_network"): in_network_all_reduce,
    ("all_reduce", "rabenseifner_fold"): rabenseifner_fold_all_reduce,
    ("all_reduce", "recursive_doubling_fold"): recursive_doubling_fold_all_reduce,
    ("reduce", "rabenseifner_fold"): rabenseifner_fold_reduce,
    ("all_to_all", "pairwise"): pairwise_all_to_all,
    ("all_to_all", "bruck"): bruck_all_to_all,
    ("send_recv", "direct"): direct_send_recv,
}


# -- what gloo runs (gloo/broadcast.cc, gloo/reduce.cc; see symcomm/collectives/profiles.py) --------------

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


def segmented_ring_reduce(net: Network, data: dict) -> dict:
    """gloo/reduce.cc with segments of at most K = net.segment elements: the segment size is
    min(⌈M/2N⌉, K), the segment count the least multiple of N that is at least 2N and covers the
    buffer, segment k the elements [k·size, (k + 1)·size) that exist (possibly none).  In iteration
    i < count − 2 rank r sends segment (r + 1)·count/N + i (mod count) to rank r − 1 if it holds
    any element, from its input while i < count/N and from its output after; the receiver sets
    out = in + received.  Then every rank r ≠ 0 sends the elements of its chunk (segments
    r·count/N …) that exist to the root, one after the other."""
    n, m = net.n, data[ROOT].size
    size = min(-(-m // (2 * n)), net.segment)
    count = -(-max(-(-m // size), 2 * n) // n) * n
    per = count // n
    bounds = [(min(k * size, m), min((k + 1) * size, m)) for k in range(count)]
    inp = {r: [data[r][a:b] for a, b in bounds] for r in range(n)}
    out = {r: [seg.copy() for seg in inp[r]] for r in range(n)}
    for i in range(count - 2):
        msgs = []
        for r in range(n):
            k = ((r + 1) * per + i) % count
            if bounds[k][1] > bounds[k][0]:
                msgs.append(Message(r, (r - 1) % n, (inp if i < per else out)[r][k], k))
        for msg in net.exchange(msgs):
            out[msg.dst][msg.tag] = net.add(msg.dst, inp[msg.dst][msg.tag], msg.data)
    result = list(out[ROOT][:per])
    for r in range(1, n):
        mine = range(r * per, (r + 1) * per)
        held = sum(bounds[k][1] - bounds[k][0] for k in mine)
        if held:
            (msg,) = net.exchange([Message(r, ROOT, np.concatenate([out[r][k] for k in mine]))])
            result.append(msg.data)
    return {ROOT: np.concatenate(result)}


EXECUTIONS[("reduce", "ring_segmented")] = segmented_ring_reduce


# -- a group of one rank (what every backend profile runs at N = 1) ------------------------------

def alone(net: Network, data: dict) -> dict:
    """N = 1: the rank keeps its own buffer; no round, no message, no addition (a send_recv
    whose two ends are the same rank is this too)."""
    if net.n != 1:
        raise AssertionError("a group of one runs on one rank")
    return {0: data[0]}


for _name in PRIMITIVES:
    EXECUTIONS[(_name, "alone")] = alone


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
