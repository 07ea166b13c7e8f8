"""Chapter 6 — expert parallel (MoE): all-to-all dispatch and combine.

Per MoE layer (L_moe = 1), elements, forward + backward; uniform routing (each rank keeps
1/N of the copies it routes); b·s = the tokens each rank routes.  Dropless routing sends
the k routed copies; capacity padding sends f·k per token.  Papers describe the forward
dispatch and combine; the backward pass repeats them in reverse.
"""

from symcomm.core.chapters import Chapter, Derivation, Step
from symcomm.core.proof import Claim, POWER_OF_TWO, AtLeast
from symcomm.training.strategies import FEDUS, LEPIKHIN, STRATEGIES
from symcomm.training.terms import forward
from symcomm.core.symbols import L_moe, M, N, alpha, alpha_inter, b, beta, beta_inter, f, h, k, s
from symcomm.base.crossing import PEERS
from symcomm.collectives.algorithms import ALGORITHMS
import sympy as sp

SOURCE = LEPIKHIN + ", §2.2; " + FEDUS + ", §2.1"
kbsh = k * b * s * h
EP = STRATEGIES["ep"]

dropless = EP.cost().subs({L_moe: 1})
padded = EP.cost(capacity="padded").subs({L_moe: 1})
fwd = EP.cost_where(forward).subs({L_moe: 1})
bruck = EP.cost(algorithm="bruck").subs({L_moe: 1})

PER_GPU = Derivation(
    "Expert parallel: elements each GPU sends per MoE layer per step",
    (Step(dropless.send, "composed: dispatch and combine all-to-alls of k·b·s·h, forward and backward"),
     Step(4 * kbsh * (N - 1) / N, "each pairwise all-to-all sends (N−1)/N of its buffer"),
     Step(4 * kbsh, "as N → ∞", "→")),
    "elements, per MoE layer, forward + backward, uniform routing, exact then limit; b·s = the tokens each rank "
    "routes (its own share of the step's batch, not the global batch)", SOURCE,
    lhs="per-GPU send")

PADDED = Derivation(
    "Expert parallel with capacity padding: elements each GPU sends per MoE layer per step",
    (Step(padded.send, "composed: the same four all-to-alls on buffers padded to capacity factor f"),
     Step(4 * f * kbsh * (N - 1) / N, "f·k·b·s·h per buffer")),
    "elements, per MoE layer, forward + backward, exact; b·s = the tokens each rank routes",
    FEDUS + ", §2.2 (expert capacity, eq. 3)", lhs="per-GPU send")

CLAIMS = (
    Claim(fwd.send, 2 * kbsh * (N - 1) / N, name="EP forward only (dispatch + combine): 2kbsh(N−1)/N per MoE layer",
          source=SOURCE),
    Claim(padded.send.subs(f, 1), dropless.send, name="capacity factor f = 1 sends what dropless routing sends",
          source=FEDUS),
    Claim(dropless.total, 4 * kbsh * (N - 1), name="EP total over the N GPUs: 4kbsh(N−1) per MoE layer",
          source=SOURCE),
    Claim(dropless.alpha, 4 * (N - 1), name="pairwise all-to-all: N−1 messages each, 4 per MoE layer",
          source=SOURCE),
    AtLeast(bruck.send, dropless.send, name="Bruck all-to-all sends at least as much as pairwise (N a power of two)",
            source="Bruck et al. 1997; Thakur et al. 2005, §4", domain=POWER_OF_TWO),
)

# -- a pairwise all-to-all spanning nodes: k − 1 of a rank's N − 1 peers share its node ---------------------
#
# With k of the group's ranks on each node, a rank's N − 1 blocks of M/N go to k − 1 peers over the node's links
# (α, β) and to N − k across the network (α_inter, β_inter); one-port ranks (α-β), so the two add
# (Cost.across_nodes with base.crossing.PEERS, the rule presets.link_values prices `eval all_to_all` by too).
# The execution evidence is tests/collectives/test_simulation.py (N = 16, k = 8: 8 of 15 blocks cross).
_k_node = sp.Symbol("k_node", integer=True, positive=True)
_a2a = ALGORITHMS[("all_to_all", "pairwise")].cost
_peers = _a2a.across_nodes(_k_node, PEERS, N)
_one_per_node = _a2a.across_nodes(1, PEERS, N)
_one_node = _a2a.across_nodes(N, PEERS, N)
CLAIMS += (
    Claim(_peers.coefficient(beta_inter), (N - _k_node) * M / N,
          name="a pairwise all-to-all across nodes with k ranks on a node: N − k blocks of M/N cross per rank",
          source="NVIDIA/nccl docs, all-to-all as ncclGroupStart + one ncclSend/ncclRecv per peer"),
    Claim(_peers.coefficient(beta) + _peers.coefficient(beta_inter), _a2a.beta,
          name="a pairwise all-to-all across nodes: the elements on β and on β_inter sum to the flat count, "
               "whatever k"),
    Claim(_peers.coefficient(alpha), _k_node - 1,
          name="a pairwise all-to-all across nodes: k − 1 of its messages stay on the node (α)"),
    Claim(_peers.coefficient(alpha_inter), N - _k_node,
          name="a pairwise all-to-all across nodes: N − k of its messages cross (α_inter)"),
    Claim(_one_per_node.coefficient(beta_inter), _a2a.beta,
          name="a pairwise all-to-all with one rank per node (k = 1): all of β on β_inter, as before the split"),
    Claim(_one_per_node.coefficient(alpha_inter), _a2a.alpha,
          name="a pairwise all-to-all with one rank per node (k = 1): all of α on α_inter, as before the split"),
    Claim(_one_per_node.coefficient(beta) + _one_per_node.coefficient(alpha), 0,
          name="a pairwise all-to-all with one rank per node (k = 1): nothing left on α, β"),
    Claim(_one_node.coefficient(beta_inter) + _one_node.coefficient(alpha_inter), 0,
          name="a pairwise all-to-all whose group is one node (k = N): nothing crosses"),
)

CHAPTER = Chapter(
    6, "expert-parallel", "Expert parallel (mixture of experts)",
    "Each MoE layer routes every token to k of E experts spread over N GPUs: an all-to-all "
    "dispatches the token copies to the experts' GPUs and a second brings the results back; "
    "the backward pass runs both in reverse. Here b·s is the tokens each rank routes, its own share of the "
    "step's batch (the hybrid strategy, chapter 8, counts a rank's (b/d)(s/c)/t of the global batch b).",
    (PER_GPU, PADDED), CLAIMS)
