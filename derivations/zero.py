"""Chapter 3 — ZeRO, FSDP and HSDP: sharding the model state over the data-parallel group.

Expressions start from the composed strategies (``zero1``, ``zero2``, ``zero3``, ``hsdp``,
``dp``).  Elements, one training step, exact (N−1)/N forms.  Rajbhandari et al. print the
limits (2Ψ, 3Ψ, in elements): each is proved here both exactly and as a limit.
"""

import sympy as sp

from symcomm.core.chapters import Chapter, Derivation, Step
from symcomm.core.proof import Claim, Limit
from symcomm.training.frameworks import DEEPSPEED_BUCKET_ALLREDUCE
from symcomm.training.strategies import DEEPSPEED_ENGINE, DEEPSPEED_STAGE3, FSDP_RUNTIME, RAJBHANDARI, STRATEGIES, ZHAO
from symcomm.core.symbols import G, N, Phi, beta_inter, m

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

zero2_m = STRATEGIES["zero2"].cost(micro_batches="m")
# as DeepSpeed runs stages 1 and 2: each reduction an all-reduce of the bucket, every rank keeping its partition
zero1_ds = STRATEGIES["zero1"].cost(partition_reduce="all_reduce")
zero2_ds = STRATEGIES["zero2"].cost(micro_batches="m", partition_reduce="all_reduce")
zero2_once = STRATEGIES["zero2"].cost(micro_batches="m", grad_reduce="per_step")
zero3_m = STRATEGIES["zero3"].cost(micro_batches="m")
fsdp_no_sync = STRATEGIES["fsdp"].cost(micro_batches="m", grad_reduce="per_step")
fsdp_grad_op = STRATEGIES["fsdp"].cost(micro_batches="m", reshard_after_forward=0)
fsdp_grad_op_no_sync = STRATEGIES["fsdp"].cost(micro_batches="m", reshard_after_forward=0, grad_reduce="per_step")

ZERO2_MICRO = Derivation(
    "ZeRO-2 with the paper's reduce-scatter, m micro-batches: elements each GPU sends per step",
    (Step(zero2_m.send, "composed: a reduce-scatter of the Φ gradients after every micro-batch, one all-gather "
                        "of the updated Φ after the step"),
     Step(m * Phi * (N - 1) / N + Phi * (N - 1) / N, "m reduce-scatters and one all-gather, (N−1)/N·Φ each"),
     Step((m + 1) * Phi * (N - 1) / N, "collect: (m + 1)/2 × ZeRO-1's 2Φ(N−1)/N")),
    "elements, per step of m micro-batches, exact; the sharded gradient cannot accumulate the full one, so "
    "it is reduced at every micro-batch", RAJBHANDARI + ", §7.2.1; " + DEEPSPEED_ENGINE, lhs="per-GPU send")

ZERO2_DEEPSPEED = Derivation(
    "ZeRO-2 as DeepSpeed runs it, m micro-batches: elements each GPU sends per step",
    (Step(zero2_ds.send, "composed: an all-reduce of the Φ gradient buckets after every micro-batch, each rank "
                         "keeping its partition, one all-gather of the updated Φ after the step"),
     Step(m * 2 * Phi * (N - 1) / N + Phi * (N - 1) / N, "m ring all-reduces of 2(N−1)/N·Φ, one all-gather of "
                                                        "(N−1)/N·Φ"),
     Step((2 * m + 1) * Phi * (N - 1) / N, "collect: (2m + 1)/(m + 1) × the reduce-scatter's count")),
    "elements, per step of m micro-batches, exact; DeepSpeed's ZeRO-1 is the case m = 1 reduced once: "
    "3Φ(N−1)/N, 3/2 × the paper's 2Ψ", DEEPSPEED_BUCKET_ALLREDUCE + "; " + DEEPSPEED_ENGINE, lhs="per-GPU send")

ZERO3_MICRO = Derivation(
    "ZeRO-3 / FSDP FULL_SHARD, m micro-batches: elements each GPU sends per step",
    (Step(zero3_m.send, "composed: per micro-batch, all-gather Φ for the forward, again for the backward, "
                        "reduce-scatter the gradients"),
     Step(3 * m * Phi * (N - 1) / N, "3m collectives of (N−1)/N·Φ")),
    "elements, per step of m micro-batches, exact", DEEPSPEED_STAGE3 + "; " + FSDP_RUNTIME, lhs="per-GPU send")

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
    Claim(STRATEGIES["fsdp"].cost().send, zero3.send, name="FSDP (full sharding) = ZeRO-3 (one object: fsdp is "
          "an alias of zero3)", source=ZHAO + ", §3", definition=True),
    Claim(hsdp.send.subs(G, N), zero3.send, name="HSDP with one shard group (G = N) = ZeRO-3", source=ZHAO),
    Claim(hsdp.send.subs(G, 1), dp.send, name="HSDP with G = 1 (no sharding) = DP", source=ZHAO),
    Claim(zero3.send - hsdp.send, Phi * (N - G) / (N * G),
          name="ZeRO-3 − HSDP = Φ(N−G)/(N·G) ≥ 0 for N ≥ G", source=ZHAO),
)

CLAIMS += (
    Claim(zero2_m.send.subs(m, 1), zero1.send, name="ZeRO-2 with one micro-batch = ZeRO-1 (the same terms)",
          source=ZERO_72, definition=True),
    Claim(zero2_once.send, zero1.send,
          name="ZeRO-2 reduced once per step (grad_reduce=per_step) sends what ZeRO-1 sends (the same terms; it "
               "needs ZeRO-1's full gradient memory)", source=DEEPSPEED_ENGINE, definition=True),
    Claim(zero2_m.send - zero1.send, (m - 1) * Phi * (N - 1) / N,
          name="ZeRO-2 reduced per micro-batch sends (m − 1)·Φ(N−1)/N more than ZeRO-1 per step, both with the "
               "paper's reduce-scatter", source=RAJBHANDARI + ", §7.2.1; " + DEEPSPEED_ENGINE),
    Claim(zero2_ds.send - zero1_ds.send, 2 * (m - 1) * Phi * (N - 1) / N,
          name="as DeepSpeed runs them, ZeRO-2 sends 2(m − 1)·Φ(N−1)/N more than ZeRO-1 per step: m − 1 more "
               "all-reduces", source=DEEPSPEED_BUCKET_ALLREDUCE + "; " + DEEPSPEED_ENGINE),
    Claim(zero1_ds.send, 3 * Phi * (N - 1) / N,
          name="ZeRO-1 as DeepSpeed runs it: the gradient all-reduce (each rank keeping its partition) and the "
               "parameter all-gather, 3Φ(N−1)/N, 3/2 × the paper's (elements, exact)", source=DEEPSPEED_BUCKET_ALLREDUCE),
    Claim(zero2_ds.send - zero2_m.send, m * Phi * (N - 1) / N,
          name="ZeRO-2 as DeepSpeed runs it sends m·Φ(N−1)/N more per step than with reduce-scatters: each of its m "
               "all-reduces sends the reduce-scatter's twice", source=DEEPSPEED_BUCKET_ALLREDUCE),
    Claim(fsdp_no_sync.send, (2 * m + 1) * Phi * (N - 1) / N,
          name="FSDP FULL_SHARD inside no_sync: 2m all-gathers, one reduce-scatter", source=FSDP_RUNTIME),
    Claim(fsdp_grad_op.send, 2 * m * Phi * (N - 1) / N,
          name="FSDP SHARD_GRAD_OP (reshard_after_forward=0): m forward all-gathers, m reduce-scatters",
          source=FSDP_RUNTIME),
    Claim(fsdp_grad_op_no_sync.send, 2 * Phi * (N - 1) / N,
          name="FSDP SHARD_GRAD_OP inside no_sync: the units stay gathered, one all-gather and one reduce-scatter "
               "per step", source=FSDP_RUNTIME),
)

CHAPTER = Chapter(
    3, "zero", "ZeRO, FSDP and HSDP",
    "ZeRO shards optimizer states (stage 1), gradients (stage 2) and parameters (stage 3) "
    "over the N data-parallel GPUs. Stages 1 and 2 replace the all-reduce by its two halves "
    "and cost the same; stage 3 gathers the parameters twice, which costs half as much again. "
    "HSDP shards inside a node and replicates across nodes. DeepSpeed runs stages 1 and 2 with an "
    "all-reduce of each gradient bucket, every rank keeping its partition, which sends the reduce-scatter's "
    "twice. With m micro-batches per step the "
    "frameworks differ: DeepSpeed's stage 2 and 3 reduce after every micro-batch, ZeRO-3 and "
    "FSDP gather the parameters in every micro-batch, and FSDP's no_sync reduces once.",
    (ZERO12, ZERO3, ZERO2_MICRO, ZERO2_DEEPSPEED, ZERO3_MICRO, HSDP, HSDP_INTER), CLAIMS)
