"""How a flat (single-level) algorithm's cost splits between the node's links and the network once its group
spans nodes: the one rule both the symbolic terms (``core.cost.Cost.across_nodes``) and the numeric links of a
primitive on a hardware preset (``presets.link_values``) read, so the two cannot disagree.

A group of N ranks with k of them on each node it spans (the fewest a node holds: the busiest rank's node):

* ``RING`` (a ring collective): every step waits for its slowest hop, a crossing, so all of α goes to α_inter;
  NCCL runs the ring as several channels whose node exits rotate over the node's NICs (NVIDIA/nccl
  src/graph/search.cc, ncclTopoSearchRecNet), so each of the k ranks is the exit for 1/k of the crossings:
  1/k of β goes to β_inter, (k − 1)/k stays on β.
* ``PEERS`` (a pairwise all-to-all: a rank sends one block to each of its N − 1 peers, NCCL as
  ncclGroupStart + one send/recv per peer): of its N − 1 peers, k − 1 are on its own node (α, β) and N − k
  across the network (α_inter, β_inter); ranks are one-port (α-β model), so the two kinds of sends add up:
  the share (N − k)/(N − 1) of both α and β crosses.
* ``ONE_NIC`` (everything else: trees, recursive doubling/halving, Bruck, a point-to-point send, ...): all of
  α and β at the inter-node values, k = 1, an upper bound on the time (exact for Bruck's all-to-all, whose
  last rank on a node crosses in every round).

k = 1 gives the one-NIC split (today's pricing before the split) for every rule; k = N (one node) gives no
crossing for ``PEERS``.  No SymPy here: the shares are plain arithmetic on what they are given (SymPy
expressions from the terms, ints from a preset's group).
"""

from __future__ import annotations

RING = "ring"
PEERS = "peers"
ONE_NIC = "one_nic"

#: (primitive, algorithm) → how its crossings split; an algorithm not named here is ONE_NIC
CROSSING = {
    ("all_reduce", "ring"): RING, ("all_gather", "ring"): RING, ("reduce_scatter", "ring"): RING,
    ("all_to_all", "pairwise"): PEERS,
}


def crossing_of(primitive: str, algorithm: str) -> str:
    """The crossing rule of a flat ``algorithm`` of ``primitive`` (:data:`CROSSING`, else ``ONE_NIC``)."""
    return CROSSING.get((primitive, algorithm), ONE_NIC)


def inter_shares(rule: str, group, ranks_per_node):
    """((α on α_inter, α staying on α), (β on β_inter, β staying on β)): the shares of a flat algorithm's α and
    β coefficients of ``rule`` on ``group`` ranks (N) with ``ranks_per_node`` (k) of them on each node, each
    pair summing to 1.  ``group`` is read only by ``PEERS``.  Plain arithmetic: give SymPy expressions or
    Fractions for exact shares (a Python int k would make 1/k a float)."""
    k = ranks_per_node
    if rule == RING:
        return (1, 0), (1 / k, (k - 1) / k)
    if rule == PEERS:
        across, within = (group - k) / (group - 1), (k - 1) / (group - 1)
        return (across, within), (across, within)
    if rule == ONE_NIC:
        return (1, 0), (1, 0)
    raise ValueError(f"unknown crossing rule {rule!r}; choose one of: {RING}, {PEERS}, {ONE_NIC}")
