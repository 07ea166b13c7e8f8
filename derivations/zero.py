"""Chapter 3 — ZeRO, FSDP and HSDP: sharding the model state over the data-parallel group.

Expressions start from the composed strategies (``zero1``, ``zero2``, ``zero3``, ``hsdp``,
``dp``).  Elements, one training step, exact (N−1)/N forms.  Rajbhandari et al. print the
limits (2Ψ, 3Ψ, in elements): each is proved here both exactly and as a limit.
"""

import sympy as sp

from symcomm.derivation import Chapter, Derivation, Step
from symcomm.proof import Claim, Limit
from symcomm.strategies import RAJBHANDARI, STRATEGIES, ZHAO
from symcomm.symbols import G, N, Phi, beta_inter

ZERO_72 = RAJBHANDARI + ", §7.2.1 (Pos+g: 2Ψ, same as DP)"
ZERO_722 = RAJBHANDARI + ", §7.2.2 (Pos+g+p: 3Ψ, 1.5× DP)"
PRINTED = "the paper printed the limit (it drops (N−1)/N); elements, not bytes"

dp = STRATEGIES["dp"].cost()
zero1 = STRATEGIES["zero1"].cost()
zero2 = STRATEGIES["zero2"].cost()
zero3 = STRATEGIES["zero3"].cost()
hsdp = STRATEGIES["hsdp"].cost()

ZERO12 = Derivation(
    "ZeRO-1 and ZeRO-2: elements each GPU sends per step",
    (Step(zero2.send, "composed: ring reduce-scatter of the Φ gradients, ring all-gather of the updated Φ"),
     Step(2 * Phi * (N - 1) / N, "(N−1)/N·Φ per phase"),
     Step(2 * Phi, "as N → ∞: the 2Ψ Rajbhandari et al. print", "→")),
    "elements, per step, exact (N−1)/N then the limit; " + PRINTED, ZERO_72, lhs="per-GPU send")

ZERO3 = Derivation(
    "ZeRO-3 / FSDP: elements each GPU sends per step",
    (Step(zero3.send, "composed: all-gather Φ (forward), all-gather Φ (backward), reduce-scatter Φ"),
     Step(3 * Phi * (N - 1) / N, "(N−1)/N·Φ per collective, three collectives"),
     Step(3 * Phi, "as N → ∞: the 3Ψ Rajbhandari et al. print", "→")),
    "elements, per step, exact (N−1)/N then the limit; " + PRINTED, ZERO_722, lhs="per-GPU send")

HSDP = Derivation(
    "HSDP: elements each GPU sends per step",
    (Step(hsdp.send, "composed: ZeRO-3 inside the node's G GPUs, all-reduce of the Φ/G shard across the N/G replicas"),
     Step(3 * Phi * (G - 1) / G + 2 * (Phi / G) * (N / G - 1) / (N / G),
          "three (G−1)/G·Φ collectives inside; one ring all-reduce of Φ/G over N/G ranks across"),
     Step(Phi * (3 * G * N - N - 2 * G) / (G * N), "over the common denominator G·N")),
    "elements, per step, exact; shard group = one node of G GPUs", ZHAO + ", §3.2.2", lhs="per-GPU send")

HSDP_INTER = Derivation(
    "HSDP: elements each GPU sends across nodes per step",
    (Step(hsdp.coefficient(beta_inter), "composed: the β_inter coefficient (only the replica all-reduce crosses nodes)"),
     Step(2 * Phi * (N - G) / (N * G), "ring all-reduce of Φ/G over N/G nodes"),
     Step(2 * Phi / G, "as N → ∞: G × less than DP's 2Φ", "→")),
    "elements on the inter-node level, per step", ZHAO + ", §3.2.2", lhs="per-GPU inter-node send")

CLAIMS = (
    Claim(zero1.send, dp.send, name="ZeRO-1 per-GPU send = DP's", source=ZERO_72),
    Claim(zero2.send, dp.send, name="ZeRO-2 per-GPU send = DP's", source=ZERO_72),
    Claim(zero2.total, dp.total, name="ZeRO-2 total = DP's", source=ZERO_72),
    Claim(zero3.send / dp.send, sp.Rational(3, 2), name="ZeRO-3 / DP = 3/2 exactly", source=ZERO_722),
    Claim(zero3.send, 3 * Phi * (N - 1) / N, name="ZeRO-3 exact: 3Φ(N−1)/N (" + PRINTED + ")", source=ZERO_722),
    Limit(zero3.send, 3 * Phi, name="ZeRO-3 limit: 3Φ, the printed 3Ψ", source=ZERO_722),
    Claim(STRATEGIES["fsdp"].cost().send, zero3.send, name="FSDP (full sharding) = ZeRO-3", source=ZHAO + ", §3"),
    Claim(hsdp.send.subs(G, N), zero3.send, name="HSDP with one shard group (G = N) = ZeRO-3", source=ZHAO),
    Claim(hsdp.send.subs(G, 1), dp.send, name="HSDP with G = 1 (no sharding) = DP", source=ZHAO),
    Claim(zero3.send - hsdp.send, Phi * (N - G) / (N * G),
          name="ZeRO-3 − HSDP = Φ(N−G)/(N·G) ≥ 0 for N ≥ G", source=ZHAO),
)

CHAPTER = Chapter(
    3, "zero", "ZeRO, FSDP and HSDP",
    "ZeRO shards optimizer states (stage 1), gradients (stage 2) and parameters (stage 3) "
    "over the N data-parallel GPUs. Stages 1 and 2 replace the all-reduce by its two halves "
    "and cost the same; stage 3 gathers the parameters twice, which costs half as much again. "
    "HSDP shards inside a node and replicates across nodes.",
    (ZERO12, ZERO3, HSDP, HSDP_INTER), CLAIMS)
