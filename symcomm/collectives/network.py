"""The simulated ranks: messages, rounds and what they cost (the machine of :mod:`symcomm.collectives.simulator`).

A :class:`Network` of N one-port, full-duplex ranks delivers one round of messages at a time and
counts α, β, γ (and α_inter, β_inter between nodes of G ranks) as the α-β-γ formulas assume
(Thakur et al. 2005 §3); a :class:`Group` is a few of those ranks as one phase of a composition
sees them; :class:`Run` is what an execution produced and cost.  Nothing here reads a formula.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

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
    sent_inter: tuple[int, ...] = ()   # elements each rank sent to a rank of another node

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
                 segment: int | None = None, mixed_levels: bool = False):
        self.n = n
        # True: a round may carry intra- and inter-node messages at once (a flat ring spanning nodes); its α
        # is the slowest hop's (α_inter when any message crosses) and its elements are counted per rank and
        # level (``sent_inter``), not as one β per round, since each rank's message rides its own link
        self.mixed_levels = mixed_levels
        self.sent_inter = [0] * n
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
        for m in messages:
            if self._level(m) and m.src != SWITCH:
                self.sent_inter[m.src] += m.data.size
        if self.mixed_levels:
            self.coefficients["alpha_inter" if "_inter" in levels else "alpha"] += 1
            levels = set()
        elif len(levels) != 1:
            raise AssertionError("a round mixes intra-node and inter-node messages")
        if levels:
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
                   dict(self.coefficients), tuple(self.sent_inter))


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
