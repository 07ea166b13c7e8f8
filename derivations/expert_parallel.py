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
from symcomm.core.symbols import L_moe, N, b, f, h, k, s

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
    "elements, per MoE layer, forward + backward, uniform routing, exact then limit", SOURCE,
    lhs="per-GPU send")

PADDED = Derivation(
    "Expert parallel with capacity padding: elements each GPU sends per MoE layer per step",
    (Step(padded.send, "composed: the same four all-to-alls on buffers padded to capacity factor f"),
     Step(4 * f * kbsh * (N - 1) / N, "f·k·b·s·h per buffer")),
    "elements, per MoE layer, forward + backward, exact", FEDUS + ", §2.1 (expert capacity)", lhs="per-GPU send")

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

CHAPTER = Chapter(
    6, "expert-parallel", "Expert parallel (mixture of experts)",
    "Each MoE layer routes every token to k of E experts spread over N GPUs: an all-to-all "
    "dispatches the token copies to the experts' GPUs and a second brings the results back; "
    "the backward pass runs both in reverse.",
    (PER_GPU, PADDED), CLAIMS)
