"""How a flat (single-level) algorithm's cost splits between the node's links and the network once its group
spans nodes: the one rule both the symbolic terms (``core.cost.Cost.across_nodes``) and the numeric links of a
primitive on a hardware preset (``presets.link_values``) read, so the two cannot disagree.

A group of N ranks with k of them on each node it spans (the fewest a node holds: the busiest rank's node):

* ``RING`` (a ring collective): every step waits for its slowest hop, a crossing, so all of α goes to α_inter;
  NCCL runs the ring as several channels whose node exits rotate over the node's NICs (NVIDIA/nccl
  src/graph/search.cc, ncclTopoSearchRecNet), so each of the k ranks is the exit for 1/k of the crossings:
  1/k of β goes to β_inter, (k − 1)/k stays on β.  The two legs run at once (:data:`CONCURRENT`): a channel's
  NVLink hops and its NIC carry its chunks in the same steps (src/graph/tuning.cc prices a ring's bus bandwidth
  as channels × one per-channel rate on every link of its path, no sum of an NVLink and a network time), so a
  rank's β time is the slower leg's, max((k − 1)/k·β, β_inter/k) per element sent, not their sum.  Every
  published multi-node ring bandwidth in derivations/data/nccl_multinode_busbw.json lies at or below that rule's
  (81-96 % of it) and 1.4-1.6 times above the sum's on H100 (derivations/hybrid.py's claims).
* ``PEERS`` (a pairwise all-to-all: a rank sends one block to each of its N − 1 peers, NCCL as
  ncclGroupStart + one send/recv per peer): of its N − 1 peers, k − 1 are on its own node (α, β) and N − k
  across the network (α_inter, β_inter); ranks are one-port (α-β model), so the two kinds of sends add up:
  the share (N − k)/(N − 1) of both α and β crosses.  Not :data:`CONCURRENT`: its two kinds of sends are
  added, an upper bound on the time (no published multi-node all-to-all bandwidth here to say by how much).
* ``ONE_NIC`` (everything else: trees, recursive doubling/halving, Bruck, a point-to-point send, ...): all of
  α and β at the inter-node values, k = 1, an upper bound on the time (exact for Bruck's all-to-all, whose
  last rank on a node crosses in every round).

k = 1 gives the one-NIC split (today's pricing before the split) for every rule; k = N (one node) gives no
crossing for ``PEERS``.  No SymPy here: the shares are plain arithmetic on what they are given (SymPy
expressions from the terms, ints from a preset's group; the caller passes SymPy's Min and Max where a group size
is symbolic).

**How a node's GPUs reach each other** (``nvlink``, :data:`NVLINK_TOPOLOGIES`).  ``switch``: through NVSwitches
(the 8-GPU HGX boards, NVL72), every GPU reaching any peer at its whole NVLink bandwidth, the β of the hardware.
``mesh``: wired point to point, each GPU's links split evenly over the node's G − 1 other GPUs (the 4-GPU HGX
H100/H200 boards: 6 of a GPU's 18 NVLink 4 links to each of the other three, :data:`NVLINK_MESH_SOURCE`).  A
ring or a pairwise all-to-all of n ranks of one mesh node can use only the links between those n, (n − 1)/(G − 1)
of each GPU's: NCCL's channels run rings over different orders of the n ranks, and uniform channels over all
(n − 1)! directed orders load every pair link alike and reach (n − 1) links' worth per GPU (each of the n(n − 1)
directed pairs lies on (n − 2)! of the orders).  So a group wholly in one node pays β·(G − 1)/(n − 1)
(:func:`mesh_within`: a pair on a 4-GPU board 3β, all four β); a ring spanning nodes with k ranks on each
keeps (k − 1)/k of its bytes on the node at (k − 1)/(G − 1) of the links: β·(G − 1)/k (none when k = 1),
and a pairwise all-to-all sends to its k − 1 node peers each over its own pair link: β·(G − 1)/(N − 1)
(:func:`mesh_stay_share`).  A send between two GPUs of a node runs over their one pair link: β·(G − 1) (the
pair of :func:`mesh_within`; the hybrid's pipeline sends).  Other algorithms priced through one NIC (trees, the
expert dispatch's legs, sends to many GPUs counted as one) keep the switch's β, a lower bound on their time on a
mesh.
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


#: the rules whose node leg and network leg run at once: their β time is the slower leg's (:func:`leg_time`)
CONCURRENT = frozenset({RING})


def leg_time(rule: str, stays, across, intra, inter, greater=max):
    """Per element sent (β) or message (α), the time of a flat algorithm spanning nodes whose coefficient splits
    ``stays`` on the node's link (``intra``) and ``across`` on the network (``inter``) (:func:`inter_shares`,
    :func:`mesh_stay_share`): the slower leg for a :data:`CONCURRENT` rule, max(stays·intra, across·inter)
    (``greater``: max, or SymPy's Max), else their sum (one-port).  A share of 0 leaves its link unread.  Give α
    with ``rule`` ONE_NIC: a step's messages wait for every hop."""
    node = 0 if stays == 0 else stays * intra
    network = 0 if across == 0 else across * inter
    if rule in CONCURRENT and stays != 0 and across != 0:
        return greater(node, network)
    return node + network


def crossing_of(primitive: str, algorithm: str) -> str:
    """The crossing rule of a flat ``algorithm`` of ``primitive`` (:data:`CROSSING`, else ``ONE_NIC``)."""
    return CROSSING.get((primitive, algorithm), ONE_NIC)


def inter_shares(rule: str, group, ranks_per_node, most=None):
    """((α on α_inter, α staying on α), (β on β_inter, β staying on β)): the shares of a flat algorithm's α and
    β coefficients of ``rule`` on ``group`` ranks (N) with ``ranks_per_node`` (k) of them on each node, each
    pair summing to 1.  ``group`` is read only by ``PEERS``.  ``most`` (K, default k): the most ranks a node of the
    group holds, where nodes hold it unevenly (8 + 4): a ring's legs run at once and every step waits for the
    slowest rank, so its node leg is the fullest node's, (K − 1)/K, and its network leg the emptiest's, 1/k (the
    pair then sums to more than 1: each the critical path's share on its link).  Plain arithmetic: give SymPy
    expressions or Fractions for exact shares (a Python int k would make 1/k a float)."""
    k = ranks_per_node
    if rule == RING:
        full = k if most is None else most
        return (1, 0), (1 / k, (full - 1) / full)
    if rule == PEERS:
        across, within = (group - k) / (group - 1), (k - 1) / (group - 1)
        return (across, within), (across, within)
    if rule == ONE_NIC:
        return (1, 0), (1, 0)
    raise ValueError(f"unknown crossing rule {rule!r}; choose one of: {RING}, {PEERS}, {ONE_NIC}")


SWITCH, MESH = "switch", "mesh"
#: how a node's GPUs reach each other (module docstring): the hybrid's ``nvlink`` setting
NVLINK_TOPOLOGIES = (SWITCH, MESH)
#: where the mesh's wiring is printed: a node of four H100 SXM on one board, nvidia-smi topo -m showing NV6 (a bond
#: of six NVLinks) between every pair of GPUs and one NIC beside each GPU (NVIDIA/nccl on GitHub, #1617, 'How to check
#: if NVLINK is unique among GPU pairs?', 2025-02-26), of a GPU's 18 NVLink 4 links (NVIDIA H100 Tensor Core GPU
#: Architecture whitepaper: 18 fourth-generation NVLink links, 900 GB/s; the H200 is the same GPU)
NVLINK_MESH_SOURCE = ("NVIDIA/nccl on GitHub, #1617 'How to check if NVLINK is unique among GPU pairs?' (2025-02-26): "
                      "nvidia-smi topo -m of a 4× H100 node, NV6 between every pair and a NIC beside each GPU; NVIDIA "
                      "H100 Tensor Core GPU Architecture whitepaper: 18 NVLink 4 links per GPU")
NVLINK_MEANING = ("how a node's G GPUs reach each other: switch (NVSwitch: 8-GPU HGX boards, NVL72; every pair at the "
                  "whole NVLink bandwidth) or mesh (wired point to point, each GPU's links split evenly over the other "
                  "G - 1: the 4-GPU HGX H100/H200 boards, six of 18 links per pair; a ring or all-to-all of n ranks of "
                  "a node runs at (n - 1)/(G - 1) of the bandwidth: a pair on a 4-GPU board at a third); default: "
                  "the hardware file's nvlink, else switch")


def mesh_within(group, gpus, greater=max):
    """The factor on β of a ring collective or pairwise all-to-all whose ``group`` (n) ranks share one mesh node of
    ``gpus`` (G) GPUs: (G − 1)/(n − 1), using n − 1 of each GPU's G − 1 pair links (module docstring).  n = 1 moves
    no bytes: read as n − 1 = 1 there (``greater`` is max, or SymPy's Max for a symbolic n), never 0/0."""
    return (gpus - 1) / greater(group - 1, 1)


def mesh_stay_share(rule: str, group, ranks_per_node, gpus, lesser=min):
    """The share of a spanning algorithm's β that stays on a mesh node of ``gpus`` (G) GPUs, in units of β, where
    :func:`inter_shares` gives (k − 1)/k (ring) or (k − 1)/(N − 1) (pairwise all-to-all) on a switch: the bytes that
    stay run over k − 1 of each GPU's G − 1 pair links, so the share grows by (G − 1)/(k − 1), to (G − 1)/k and
    (G − 1)/(N − 1); at k = 1 nothing stays (``lesser``: min, or SymPy's Min, keeps 0/0 out).  ONE_NIC: 0."""
    k = ranks_per_node
    stays = (k - 1) + lesser(1, k - 1) * (gpus - k)       # (k − 1)·(G − 1)/(k − 1) for k ≥ 2, 0 at k = 1
    if rule == RING:
        return stays / k
    if rule == PEERS:
        return stays / (group - 1)
    if rule == ONE_NIC:
        return 0
    raise ValueError(f"unknown crossing rule {rule!r}; choose one of: {RING}, {PEERS}, {ONE_NIC}")


def placed_note(gpus: str) -> str:
    """What a typed G does for a flat algorithm, whose formulas hold no G: it sets the nodes its ranks are placed on
    (eval and compare alike, with --hardware)."""
    return (f"G={gpus}: the ranks placed on nodes of {gpus} GPUs, which sets the link each step uses (the "
            "formulas hold no G)")


def crossing_note(rule: str, ranks: int, g: int, k: int) -> str:
    """Why a flat group of ``ranks`` on nodes of ``g`` GPUs uses the link values it does
    (symcomm.presets.systems.link_values)."""
    if rule == PEERS:
        return (f"N={ranks} spans nodes of {g} GPUs: a pairwise all-to-all sends to {k - 1} of its "
                f"{ranks - 1} peers on its node and {ranks - k} across (k={k}, the fewest ranks any node "
                f"holds): alpha = {k - 1}/{ranks - 1} of the intra-node alpha + {ranks - k}/{ranks - 1} of "
                f"alpha_inter, beta likewise per element sent")
    if rule == RING:
        full = min(ranks, g)
        node = (f"{full - 1}/{full} of the intra-node beta (a node of {full} of its ranks)" if full != k else
                f"{k - 1}/{k} of the intra-node beta")
        return (f"N={ranks} spans nodes of {g} GPUs: a ring's crossings spread over the NICs of the "
                f"{k} ranks on a node (the fewest any node holds): alpha = alpha_inter, beta = the larger of "
                f"{node} and 1/{k} of beta_inter per element sent (NCCL runs the two legs "
                "at once: a lower bound on the time, published multi-node rings reaching 81-96 % of its bandwidth, "
                "derivations/data/nccl_multinode_busbw.json)")
    return (f"N={ranks} spans nodes of {g} GPUs: alpha, beta of a single-level algorithm are the "
            "inter-node values (not a ring: its crossings leave through one rank's NIC)")
