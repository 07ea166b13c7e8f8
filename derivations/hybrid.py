"""Chapter 8 — hybrid layouts: every axis on its own group, on the sizes that remain.

Elements per GPU per training step, forward + backward, exact (group−1)/group forms.
Global batch b, so a replica sees b/d sequences and a CP rank s/c tokens of each; a
pipeline stage holds L/p layers; a GPU owns Φ/(t·p) parameters, reduced over the d·c
ranks that hold the same ones.  Rank order (Megatron): t innermost, then c, d, p; a
group crosses nodes when the ranks it spans exceed G, the GPUs per node, and a ring group
across nodes with k of its ranks on a node (the fewest any node holds) sends 1/k of its
elements at β_inter, the rest at β, α_inter every step (NCCL's channels spread the crossings
over the node's NICs), the two legs at once: its β time is the slower leg's (below, with the measured
multi-node rings); the busiest pipeline stage sends forward across nodes once the
pipeline does, backward too when t·c·d ≥ G.

The worked examples use published layouts (sources at each); where the model differs
from the real run (layer counts rounded so that L/p is whole, ...) the text says so.
Bytes = elements × 2 (bf16/fp16).
"""

import json
from pathlib import Path

import sympy as sp

from symcomm.base.files import read_capped
from symcomm.core.chapters import Chapter, Derivation, Step
from symcomm.core.proof import AtLeast, Claim, Domain
from symcomm.core.rewrite import at
from symcomm.training.frameworks import DEEPSPEED_BUCKET_ALLREDUCE
from symcomm.training.tp_plans import TE_AMAX_REDUCTION, TE_FP8_GATHER
from symcomm.training.strategies import DEEPSPEED_ENGINE, KORTHIKANTI, MEGATRON_EMBEDDINGS, MEGATRON_FP32_GRADS, MEGATRON_INTERLEAVED, MEGATRON_MOE_TP, MEGATRON_RECOMPUTE, MEGATRON_SHARED_EXPERT_TP, MEGATRON_SP_REGATHER, NARAYANAN, RAJBHANDARI, RING_FLASH_ATTN, STRATEGIES
from symcomm.base.crossing import NVLINK_MESH_SOURCE as _MESH_SOURCE
from symcomm.core.symbols import t_e as S_T_E
from symcomm.training.hybrid import MEGATRON_EXPERT_GRID
from symcomm.training.terms import cost_in_bytes_of
from symcomm.training.axes import MEGATRON_PROBS_A2A
from symcomm.core.symbols import E, E_s, G, L, L_moe, N, Phi, Phi_E, V, alpha, alpha_inter, b, beta, beta_inter, c, d, e, gamma, h, k, m, p, s, t, v

HYBRID = STRATEGIES["hybrid"]
SOURCE = NARAYANAN + ", §3; " + KORTHIKANTI + "; " + RAJBHANDARI + ", §7"
BYTES = 2   # bf16 / fp16

axes = HYBRID.by_axis(zero=1)
axes_ulysses = HYBRID.by_axis(zero=1, cp="ulysses")
axes_sg = HYBRID.by_axis(zero=1, scatter_gather=1)
axes_sp = HYBRID.by_axis(zero=1, sp=1)
replica_tokens_h = (b / d) * (s / c) * h
INTERIOR_STAGE = Domain(least=((p, 3),))   # a stage with a neighbour on each side exists

TP_AXIS = Derivation(
    "Hybrid, tensor axis: elements each GPU sends per step",
    (Step(axes["tp"].send, "composed: 4 ring all-reduces per layer and micro-batch over t GPUs"),
     Step(4 * (L / p) * m * 2 * (replica_tokens_h / m) * (t - 1) / t,
          "L/p layers, m micro-batches of (b/d)/m sequences with s/c tokens each"),
     Step(8 * (b / d) * (s / c) * h * (t - 1) / t * (L / p), "Narayanan et al.'s 8bsh(t−1)/t on the remaining sizes")),
    "elements, per GPU per step, forward + backward, exact", NARAYANAN + ", §3.2", lhs="per-GPU send, TP")

PP_AXIS = Derivation(
    "Hybrid, pipeline axis: elements an interior stage's GPU sends per step",
    (Step(axes["pp"].send, "composed: one send per micro-batch each way"),
     Step(2 * (b / d) * (s / c) * h, "the replica's activations forward, their gradients backward")),
    "elements, per GPU per step, every TP rank sends its own copy (no scatter-gather); p ≥ 3",
    NARAYANAN + ", §3.2", lhs="per-GPU send, PP", domain=INTERIOR_STAGE)

PP_SCATTER_GATHER = Derivation(
    "Hybrid, pipeline axis with scatter-gather: elements each GPU sends per step",
    (Step(axes_sg["pp"].send, "composed: each TP rank sends 1/t, the receiving stage all-gathers over t"),
     Step(2 * (b / d) * (s / c) * h / t + 2 * (b / d) * (s / c) * h * (t - 1) / t,
          "point-to-point 1/t, all-gather (t−1)/t, each way"),
     Step(2 * (b / d) * (s / c) * h, "the same volume per GPU: scatter-gather moves it off the inter-node link")),
    "elements, per GPU per step; the β_inter part falls to 1/t; p ≥ 3", NARAYANAN + ", §4.1", lhs="per-GPU send, PP",
    domain=INTERIOR_STAGE)

DP_AXIS = Derivation(
    "Hybrid, data axis with ZeRO-1: elements each GPU sends per step",
    (Step(axes["dp"].send, "composed: reduce-scatter + all-gather of the Φ/(t·p) shard over d·c GPUs"),
     Step(2 * Phi / (t * p) * (d * c - 1) / (d * c), "DP's 2Φ(N−1)/N with Φ → Φ/(t·p), N → d·c")),
    "elements, per GPU per step, exact", RAJBHANDARI + ", §7.2.1", lhs="per-GPU send, DP")

CP_AXIS = Derivation(
    "Hybrid, context axis (ring attention): elements each GPU sends per step",
    (Step(axes["cp"].send, "composed: K, V all-gathered forward and backward, dK, dV reduce-scattered, heads split by t"),
     Step(6 * (b / d) * s * (h / t) * (c - 1) / c * (L / p), "6 ring passes of (b/d)·s·h/t per layer")),
    "elements, per GPU per step, MHA (K, V of width h)", "Liu et al. 2023, §3", lhs="per-GPU send, CP")

axes_sp_kept = HYBRID.by_axis(zero=1, sp=1, sp_regather=0)

axes_embeddings = HYBRID.by_axis(zero=1, embeddings=1)
axes_tied = HYBRID.by_axis(zero=1, embeddings=1, tied=1)
axes_zero2 = HYBRID.by_axis(zero=2, framework="deepspeed")
STAGES = Domain(least=((p, 2),))   # the embedding and the LM head on different stages

DP_EMBEDDINGS = Derivation(
    "Hybrid, data axis with the embedding and LM head on the end stages (ZeRO-1, untied): the last stage's GPU",
    (Step(axes_embeddings["dp"].send, "composed: reduce-scatter + all-gather of the last stage's shard over d·c"),
     Step(2 * ((Phi - 2 * V * h) / p + V * h) / t * (d * c - 1) / (d * c),
          "its L/p layers' share of the Φ − 2V·h layer parameters, and the V·h LM head, split over t")),
    "elements, per GPU per step, exact; p ≥ 2 (with p = 1 the one stage holds Φ/t)", MEGATRON_EMBEDDINGS,
    lhs="per-GPU send, DP", domain=STAGES)

TP_EMBEDDINGS = Derivation(
    "Hybrid, tensor axis with the LM head: the last stage's GPU",
    (Step(axes_embeddings["tp"].send, "composed: the layers' all-reduces, the LM head's input-gradient all-reduce "
                                      "and the cross-entropy's three all-reduces per token, per micro-batch"),
     Step(8 * (b / d) * (s / c) * h * (t - 1) / t * (L / p) + 2 * (b / d) * (s / c) * (h + 3) * (t - 1) / t,
          "Narayanan et al.'s 8bsh(t−1)/t per layer, plus 2(t−1)/t of (b/d)(s/c)·h and of 3·(b/d)(s/c)")),
    "elements, per GPU per step, exact; p ≥ 2 (with p = 1 the embedding's all-reduce adds 2(t−1)/t·(b/d)(s/c)h)",
    MEGATRON_EMBEDDINGS, lhs="per-GPU send, TP", domain=STAGES)

axes_moe_sp = HYBRID.by_axis(zero=1, sp=1, moe=1)
ONE_MOE_LAYER = {L_moe: p}   # one MoE layer on each stage

TP_MOE = Derivation(
    "Hybrid, tensor axis with MoE at t > 1 (SP, Megatron's all-to-all dispatcher): what one MoE layer changes",
    (Step((axes_moe_sp["tp"].send - axes_sp["tp"].send).subs(ONE_MOE_LAYER),
          "composed: the MoE layer's TP collectives less the dense MLP block's"),
     Step((4 * k - 5 + 5 * sp.Min(1, E_s)) * (b / d) * (s / c) * h * (t - 1) / t
          + 2 * k * (b / d) * (s / c) * (t - 1) / t,
          "by hand: the dense MLP's sequence all-gather and reduce-scatter, forward and backward, and its backward "
          "re-all-gather (5 collectives of (b/d)(s/c)h) do not run, but for a shared expert's MLP (E_s ≥ 1), which "
          "runs them all; the dispatcher all-gathers the k routed copies over the t ranks and reduce-scatters the "
          "expert outputs, forward, and the transposes backward (4 collectives of k(b/d)(s/c)h), and gathers the "
          "copies' router probabilities, forward, their gradient reduce-scattered backward (2 of k(b/d)(s/c)), "
          "(t−1)/t of each sent")),
    "elements, per GPU per step, per MoE layer on the stage, exact; expert tensor parallel size = t (Megatron's "
    "default); the router probabilities are fp32 elements, the rest the run's",
    MEGATRON_MOE_TP + "; " + MEGATRON_SHARED_EXPERT_TP + "; " + MEGATRON_PROBS_A2A, lhs="per-GPU send, TP")

EP_MOE = Derivation(
    "Hybrid, expert axis at t > 1 (SP): elements each GPU sends per MoE layer per step",
    (Step(axes_moe_sp["ep"].send.subs(ONE_MOE_LAYER), "composed: dispatch and combine all-to-alls, forward and "
                                                      "backward, over e expert ranks"),
     Step(4 * k * (b / d) * (s / c) * h / t * (e - 1) / e + 2 * k * (b / d) * (s / c) / t * (e - 1) / e
          + m * E * (e * t - 1),
          "by hand: each rank routes the k copies of its own (b/d)(s/c)/t sequence-parallel tokens; uniform routing "
          "keeps 1/e of them; each copy's router probability goes with it, and its gradient back; and before each "
          "micro-batch's dispatch (dropless) the E per-expert token counts of each of the t·e ranks of the TPxEP "
          "group are all-gathered, (t·e − 1)·E sent by each")),
    "elements, per GPU per step, per MoE layer on the stage, exact; the probabilities are fp32 elements, the counts "
    "8-byte (int64) ones", MEGATRON_MOE_TP + "; " + MEGATRON_PROBS_A2A, lhs="per-GPU send, EP")

# the dispatch and combine all-to-alls alone (alltoall_padded: no count exchange), and the count exchange alone
_recompute = HYBRID.by_axis(zero=1, recompute="full", moe=1, dispatcher="alltoall_padded")
_no_recompute = HYBRID.by_axis(zero=1, moe=1, dispatcher="alltoall_padded")


def _count_sends(**options):
    return sum(term.cost.send for term in HYBRID.terms(zero=1, moe=1, **options) if "token-count" in term.what)
_interleaved = HYBRID.by_axis(zero=1, schedule="interleaved")

_dp_terms_zero1 = [term for term in HYBRID.terms(zero=1) if term.axis == "dp"]

#: Transformer Engine's FP8 under sequence parallel (framework=megatron): the sequence collectives of its layers, and
#: the amax all-reduces current scaling adds
_SEQUENCE = ("sequence all-gather", "sequence reduce-scatter", "input re-all-gather for the weight gradient")
_seq_fp8 = [x for x in HYBRID.terms(zero=1, sp=1, precision="fp8_tensor") if x.axis == "tp" and x.what in _SEQUENCE]
_seq_bf16 = [x for x in HYBRID.terms(zero=1, sp=1) if x.axis == "tp" and x.what in _SEQUENCE]
_amax = [x for x in HYBRID.terms(zero=1, sp=1, precision="fp8_tensor") if "amax" in x.what]

CLAIMS = [
    Claim(cost_in_bytes_of(_seq_fp8, 2).send / cost_in_bytes_of(_seq_bf16, 2).send, sp.Rational(7, 10),
          name="hybrid, framework=megatron, sp=1, precision=fp8_tensor: Transformer Engine quantizes before it gathers, "
               "so of a layer's ten sequence collectives the six all-gathers (two forward, two output-gradient, two "
               "re-gathers) move 1 byte an element and the four reduce-scatters 2: 7/10 of a bf16 run's bytes",
          source=TE_FP8_GATHER),
    Claim(sum(x.count for x in _amax), 4 * L * m / p,
          name="hybrid, framework=megatron, sp=1, precision=fp8_tensor: current scaling all-reduces one fp32 amax "
               "over the tensor-parallel group before each of a layer's four quantized gathers (the re-gathers reuse "
               "the saved quantized input): 4·L/p per micro-batch, 4·m·L/p a step", source=TE_AMAX_REDUCTION),
    Claim(cost_in_bytes_of(_dp_terms_zero1, 2).send / axes["dp"].send, sp.Rational(3, 2),
          name="hybrid, Megatron ZeRO-1 in a bf16 run: the fp32 gradient reduce-scatter and the bf16 parameter "
               "all-gather move 3/2 the bytes of two bf16 collectives", source=MEGATRON_FP32_GRADS),
    Claim(axes_zero2["dp"].send / axes["dp"].send, m + sp.Rational(1, 2),
          name="hybrid: DeepSpeed ZeRO-2 (the gradient buckets all-reduced every micro-batch, each rank keeping its "
               "partition) sends (2m + 1)/2 × Megatron's distributed optimizer (ZeRO-1, a reduce-scatter once per "
               "step) on the data-parallel axis, in elements: 33/2 at m = 16 micro-batches "
               "(the formulas' ratio at any layout; DeepSpeed itself runs ZeRO-2 only with p = 1, its pipeline engine "
               "taking ZeRO 0 and 1)",
          source=DEEPSPEED_ENGINE + "; " + DEEPSPEED_BUCKET_ALLREDUCE),
    Claim(axes_tied["dp"].send - axes_embeddings["dp"].send,
          V * h / t + 2 * V * h / (p * t) * (d * c - 1) / (d * c),
          name="hybrid, p ≥ 2: tied embeddings add the V·h/t gradient all-reduce of the first and last stage, and "
               "the shard keeps V·h/p more of the layers", source=MEGATRON_EMBEDDINGS, domain=STAGES),
    Claim(axes_sp_kept["tp"].send, axes["tp"].send,
          name="hybrid: sequence parallel keeping the gathered input (sp_regather=0) keeps the TP volume",
          source=KORTHIKANTI),
    Claim(axes_sp["tp"].send, axes["tp"].send * sp.Rational(5, 4),
          name="hybrid, framework=megatron: sequence parallel with the backward re-all-gather sends 10/8 of TP's",
          source=MEGATRON_SP_REGATHER),
    Claim(axes_sp["pp"].send, axes["pp"].send / t, name="hybrid: with SP the pipeline sends 1/t (already sharded)",
          source=KORTHIKANTI),
    Claim(axes_moe_sp["tp"].send.subs(L_moe, L),
          (b / d) * (s / c) * (t - 1) / t * (L / p) * (h * (5 + 4 * k + 5 * sp.Min(1, E_s)) + 2 * k),
          name="hybrid, every layer MoE at t > 1 (SP): per layer, attention's 5 sequence-parallel collectives of "
               "(b/d)(s/c)h, the dispatcher's 4 of k(b/d)(s/c)h and 2 of its k(b/d)(s/c) router probabilities; the "
               "dense MLP's 5 are gone, but for a shared expert's (E_s ≥ 1)",
          source=MEGATRON_MOE_TP + "; " + MEGATRON_SHARED_EXPERT_TP + "; " + MEGATRON_PROBS_A2A),
    Claim(_recompute["cp"].send / _no_recompute["cp"].send, sp.Rational(4, 3),
          name="hybrid, full recompute: ring attention's forward K, V pass runs again, 8 ring passes per layer "
               "instead of 6", source=MEGATRON_RECOMPUTE),
    Claim(_recompute["ep"].send / _no_recompute["ep"].send, sp.Rational(3, 2),
          name="hybrid, full recompute: the MoE dispatch and combine all-to-alls run again, 6 per MoE layer "
               "instead of 4", source=MEGATRON_RECOMPUTE),
    Claim(_count_sends(recompute="full") / _count_sends(), 2,
          name="hybrid, full recompute, dropless: the token counts are all-gathered again with the recomputed "
               "forward; the backward reuses the forward's splits", source=MEGATRON_RECOMPUTE),
    Claim(_recompute["pp"].send + _recompute["dp"].send, _no_recompute["pp"].send + _no_recompute["dp"].send,
          name="hybrid, full recompute: the pipeline sends and the data-parallel reductions lie outside the "
               "recomputed layers and do not change", source=MEGATRON_RECOMPUTE),
    Claim(_interleaved["pp"].send, v * axes["pp"].send,
          name="hybrid, interleaved schedule: an interior stage sends v times the 1F1B pipeline volume",
          source=NARAYANAN + ", §2.2.2; " + MEGATRON_INTERLEAVED, domain=INTERIOR_STAGE),
    Claim(axes_ulysses["cp"].send, 8 * (b / d) * (s / c) * (h / t) * (c - 1) / c * (L / p),
          name="hybrid: Ulysses CP, 8 all-to-alls per layer of the rank's (b/d)(s/c)(h/t)", source="Jacobs et al. 2023, §3"),
    Claim(HYBRID.by_axis(zero=1, cp="ring_flash_attn")["cp"].send.subs(c, 1)
          + HYBRID.by_axis(zero=1, cp="ring_flash_attn")["cp"].total.subs(c, 1), 0,
          name="hybrid, c = 1: no context parallelism, no CP traffic, also with cp=ring_flash_attn (its return "
               "sends of dK, dV run only on a ring of c ≥ 2 ranks)", source=RING_FLASH_ATTN),
]


# -- worked examples ---------------------------------------------------------------------------------

def _values_text(values: dict) -> str:
    """The values an example is evaluated at, as a reader retypes them (b the global batch in sequences, m the
    micro-batches per replica)."""
    return ", ".join(f"{symbol}={value:,}" for symbol, value in values.items())


def _example(title, source, values, expected, options, note=""):
    """Derivations evaluating the composed per-axis sends at a layout; expected = hand formulas."""
    got = HYBRID.by_axis(**options)
    out = []
    for axis, hand in expected.items():
        out.append(Derivation(
            f"{title}: {axis.upper()} elements per GPU per step",
            (Step(at(got[axis].send, values), "the composed per-axis send at this layout"),
             Step(hand, "the closed form, by hand")),
            "elements, per GPU per step, forward + backward; at " + _values_text(values) + (f"; {note}" if note else ""),
            source, lhs=f"per-GPU send, {axis.upper()}"))
    return tuple(out)


LLAMA2 = {t: 8, p: 4, d: 4, c: 1, e: 1, b: 128, s: 4096, h: 8192, L: 80, m: 32, Phi: 70 * 10**9, G: 8}
LLAMA2_TP = 8 * 32 * 4096 * 8192 * sp.Rational(7, 8) * 20          # 8(b/d)sh(t−1)/t·L/p
LLAMA2_PP = 2 * 32 * 4096 * 8192                                   # 2(b/d)sh
LLAMA2_DP = 2 * sp.Rational(70 * 10**9, 32) * sp.Rational(3, 4)     # 2Φ/(tp)·(d−1)/d

GPT3 = {t: 8, p: 16, d: 12, c: 1, e: 1, b: 1536, s: 2048, h: 12288, L: 96, m: 128, Phi: 175 * 10**9, G: 8}
GPT3_TP = 8 * 128 * 2048 * 12288 * sp.Rational(7, 8) * 6
GPT3_PP = 2 * 128 * 2048 * 12288
GPT3_DP = 2 * sp.Rational(175 * 10**9, 128) * sp.Rational(11, 12)

LLAMA3 = {t: 8, p: 16, d: 128, c: 1, e: 1, b: 2048, s: 8192, h: 16384, L: 128, m: 16, Phi: 405 * 10**9, G: 8}
LLAMA3_TP = 8 * 16 * 8192 * 16384 * sp.Rational(7, 8) * 8
LLAMA3_PP = 2 * 16 * 8192 * 16384
LLAMA3_DP = 2 * sp.Rational(405 * 10**9, 128) * sp.Rational(127, 128)

# DeepSeek-V3-like: 2048 GPUs, 8 per node; 256 routed experts of 3·7168·2048 parameters in
# each of 58 MoE layers; L rounded from 61 to 64 so that L/p is whole.
DSV3_PHI_E = 58 * 256 * 3 * 7168 * 2048
DSV3 = {t: 1, p: 16, d: 128, c: 1, e: 64, b: 15360, s: 4096, h: 7168, L: 64, L_moe: 58, k: 8, m: 120,
        Phi: 671 * 10**9, Phi_E: DSV3_PHI_E, G: 8}
DSV3_EP = 4 * 8 * 120 * 4096 * 7168 * sp.Rational(63, 64) * sp.Rational(58, 16)   # 4k(b/d)sh(e−1)/e·L_moe/p
# Megatron-Core's dispatcher all-to-alls each routed copy's fp32 router probability too, forward and backward
# (symcomm.training.axes.MEGATRON_PROBS_A2A): 2k(b/d)s(e−1)/e·L_moe/p elements of 4 bytes
DSV3_EP_PROBS = 2 * 8 * 120 * 4096 * sp.Rational(63, 64) * sp.Rational(58, 16)
DSV3_PP = 2 * 120 * 4096 * 7168
DSV3_DP = (2 * sp.Rational(671 * 10**9 - DSV3_PHI_E, 16) * sp.Rational(127, 128)   # dense shard over d·c = 128
           + 2 * sp.Rational(DSV3_PHI_E, 64 * 16) * sp.Rational(1, 2))               # expert shard over d·c/e = 2
# stated hardware: NVLink 400 GB/s, one 400 Gb/s (50 GB/s) NIC per GPU, bf16, latency ignored
DSV3_HARDWARE = {beta: sp.Rational(2, 400 * 10**9), beta_inter: sp.Rational(2, 50 * 10**9), alpha: 0, alpha_inter: 0}

LLAMA2_SOURCE = ("Touvron et al. 2023, Llama 2, §2.2 (context length 4096); L=80, h=8192 from its released "
                 "configuration (meta-llama/Llama-2-70b-hf config.json); the layout t=8, p=4, d=4 and batch 128 are "
                 "an illustration, not a published run")
GPT3_SOURCE = ("Brown et al. 2020, GPT-3, Table 2.1 (175B: 96 layers, d_model 12288, context 2048); the layout t=8, "
               "p=16, d=12 on 1536 GPUs and batch 1536 are an illustration, not a published run")
LLAMA3_SOURCE = "Llama Team 2024, The Llama 3 Herd of Models, §3.3.2 (405B: TP 8, PP 16, DP 128, seq 8192, 16M tokens)"
DSV3_SOURCE = "DeepSeek-AI 2024, DeepSeek-V3 Technical Report, §3.2 (PP 16, EP 64, ZeRO-1, 2048 H800) and §4.2"

EXAMPLES = (
    _example("Llama-2-70B-like (t=8, p=4, d=4, ZeRO-1)", LLAMA2_SOURCE, LLAMA2,
             {"tp": LLAMA2_TP, "pp": LLAMA2_PP, "dp": LLAMA2_DP}, {"zero": 1}, "Φ = 70·10⁹")
    + _example("GPT-3 175B (t=8, p=16, d=12)", GPT3_SOURCE, GPT3,
               {"tp": GPT3_TP, "pp": GPT3_PP, "dp": GPT3_DP}, {"zero": 0}, "plain DP all-reduce")
    + _example("Llama-3-405B-like (t=8, p=16, d=128, ZeRO-1)", LLAMA3_SOURCE, LLAMA3,
               {"tp": LLAMA3_TP, "pp": LLAMA3_PP, "dp": LLAMA3_DP}, {"zero": 1}, "L rounded from 126 to 128")
    + _example("DeepSeek-V3-like MoE (p=16, d=128, e=64, ZeRO-1)", DSV3_SOURCE, DSV3,
               {"ep": DSV3_EP + DSV3_EP_PROBS, "pp": DSV3_PP, "dp": DSV3_DP},
               {"zero": 1, "moe": 1, "dispatcher": "alltoall_padded"},
               "uniform routing over all 64 EP ranks (the real model limits each token to 4 nodes); the all-to-alls "
               "alone (dispatcher=alltoall_padded: no token-count exchange), the tokens' bf16 elements and the "
               "2k(b/d)s(e−1)/e·L_moe/p fp32 router probabilities Megatron-Core sends beside them, each its own "
               "element")
)

_llama2 = HYBRID.by_axis(zero=1)
_dsv3 = HYBRID.by_axis(zero=1, moe=1, dispatcher="alltoall_padded")
CLAIMS += [
    Claim(at(_llama2["tp"].send, LLAMA2) * BYTES, 300_647_710_720,
          name="Llama-2-70B-like: TP sends 300,647,710,720 bytes (≈ 300.6 GB) per GPU per step in bf16",
          source=LLAMA2_SOURCE),
    Claim(at(_llama2["pp"].send, LLAMA2) * BYTES, 4_294_967_296,
          name="Llama-2-70B-like: PP sends 4,294,967,296 bytes (≈ 4.29 GB) per GPU per step in bf16",
          source=LLAMA2_SOURCE),
    Claim(at(_llama2["tp"].coefficient(beta_inter), LLAMA2), 0,
          name="Llama-2-70B-like: the TP group (t = 8 = G) stays inside a node", source=LLAMA2_SOURCE),
    Claim(at(axes_sg["pp"].coefficient(beta_inter), LLAMA2), at(_llama2["pp"].coefficient(beta_inter), LLAMA2) / 8,
          name="Llama-2-70B-like: scatter-gather cuts the inter-node pipeline traffic by t = 8",
          source=NARAYANAN + ", §4.1"),
    Claim(at(_llama2["pp"].coefficient(beta), LLAMA2), 0,
          name="Llama-2-70B-like: pipeline boundaries cross nodes", source=LLAMA2_SOURCE),
    # the 64 consecutive ranks of an EP group fill 8 nodes of 8: a rank's pairwise all-to-all sends 7 of its 63
    # blocks over NVLink and 56 across (base.crossing.PEERS; uniform routing, not V3's node-limited one)
    Claim(at(at(_dsv3["ep"].time, DSV3), DSV3_HARDWARE),
          (DSV3_EP + DSV3_EP_PROBS)
          * (sp.Rational(7, 63) * sp.Rational(2, 400 * 10**9) + sp.Rational(56, 63) * sp.Rational(2, 50 * 10**9)),
          name="DeepSeek-V3-like: EP (t·e = 64 > G = 8, 8 of the group on each node) sends 56/63 of its volume at "
               "the inter-node β and 7/63 at NVLink's (β per element, as every formula counts it)", source=DSV3_SOURCE),
]


# -- a flat ring spanning nodes: its crossings spread over the NICs of its ranks on a node -----------------
#
# NCCL runs a ring collective as several channels and gives successive channels successive NICs of a node
# (NVIDIA/nccl src/graph/search.cc, ncclTopoSearchRecNet), so with k of a group's ranks on a node each is the
# node's exit for 1/k of what a rank sends: β_inter on 1/k of it, β on the other (k − 1)/k, α_inter on every
# step (Cost.across_nodes), the two legs at once (Cost.concurrent).  k = the fewest ranks of the group a node holds (inner: the
# axes inside the group in the rank order t, c, d, p): G/inner when the group fills whole nodes, (span mod G)/inner
# for the last node of a group starting at a node boundary, else 1 (axes.ranks_per_node);
# the execution evidence is tests/collectives/test_simulation.py (simulator.run_channels).
_k_node = sp.Symbol("k_node", integer=True, positive=True)
_ring = STRATEGIES["dp"].terms()[0].cost                                 # ring all-reduce of Φ over N ranks
_split = _ring.across_nodes(_k_node)
_LAYOUT_T2 = {**LLAMA2, t: 2, d: 16}                                     # t = 2 < G = 8: k = G/t = 4
_t2 = HYBRID.by_axis(zero=1)
CLAIMS += [
    Claim(_split.coefficient(beta) + _split.coefficient(beta_inter), _ring.beta,
          name="a flat ring across nodes: the elements on β and on β_inter sum to the flat count, whatever k",
          source="NVIDIA/nccl src/graph/search.cc (ncclTopoSearchRecNet: channel c takes the node's NIC c mod n)"),
    Claim(_split.coefficient(beta_inter), _ring.beta / _k_node,
          name="a flat ring across nodes with k ranks on a node: each rank sends 1/k of its elements across"),
    Claim(_ring.across_nodes(1).coefficient(beta_inter), _ring.beta,
          name="a flat ring across nodes with one rank per node (k = 1): all of β on β_inter, as before"),
    Claim(_ring.across_nodes(1).coefficient(beta), 0,
          name="a flat ring across nodes with one rank per node (k = 1): nothing left on β"),
    Claim(at(_llama2["dp"].coefficient(beta_inter), LLAMA2), at(_llama2["dp"].send, LLAMA2),
          name="Llama-2-70B-like: the data-parallel group strided by t = 8 = G has one rank per node (k = 1): all "
               "its elements cross nodes", source=LLAMA2_SOURCE),
    Claim(at(_t2["dp"].coefficient(beta_inter), _LAYOUT_T2), at(_t2["dp"].send, _LAYOUT_T2) / 4,
          name="Llama-2-70B-like at t = 2, d = 16: the data-parallel group has G/t = 4 ranks on each node, each "
               "sending 1/4 of its elements across nodes", source=LLAMA2_SOURCE),
    Claim(at(_t2["dp"].coefficient(beta), _LAYOUT_T2), at(_t2["dp"].send, _LAYOUT_T2) * sp.Rational(3, 4),
          name="Llama-2-70B-like at t = 2, d = 16: the other 3/4 of the data-parallel elements stay on the node's "
               "links", source=LLAMA2_SOURCE),
]


# NCCL runs a channel's NVLink hops and its NIC at once (src/graph/search.cc charges one per-channel rate on every link
# of the channel's path; src/graph/tuning.cc prices a ring's bus bandwidth as channels × that rate, no sum of an
# NVLink and a network time), so a rank's two legs overlap and its β time is max((k − 1)/k·β, β_inter/k) per element
# sent (base.crossing.CONCURRENT; Cost.time takes the faster leg's min off the sum of the two).  Every published
# multi-node ring bandwidth in derivations/data/nccl_multinode_busbw.json is at or below that rule's
# min(k/((k − 1)·β), k/β_inter) at its hardware's line rates (k = 8), and at 4/5 of it or more, while the one-port
# sum's 1/((k − 1)/k·β + β_inter/k), which symcomm priced before, is below every one of them (1.1-1.6 times): the
# claims below.  The model's time is so a lower bound, within a quarter of the measured.
_BUSBW = json.loads(read_capped(Path(__file__).parent / "data" / "nccl_multinode_busbw.json", 1 << 20,
                                 "nccl_multinode_busbw.json").decode("utf-8"))


def _gbps(value) -> sp.Expr:
    """A bandwidth of the data file, exact: a JSON number only, any other value refused before SymPy sees it."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"nccl_multinode_busbw.json: a bandwidth must be a number, not {value!r}")
    return sp.nsimplify(float(value))


for _run in _BUSBW["runs"]:
    _stays, _crosses = 1 / _split.coefficient(beta).subs(_k_node, 8) * _ring.beta, _ring.beta / _split.coefficient(
        beta_inter).subs(_k_node, 8)
    _nvl, _nic = _gbps(_run["nvlink_GBps"]), _gbps(_run["nic_GBps_per_gpu"])
    _one_port = 1 / (1 / (_stays * _nvl) + 1 / (_crosses * _nic))        # GB/s: 1/((7/8)/NVLink + (1/8)/NIC)
    _concurrent = sp.Min(_stays * _nvl, _crosses * _nic)                  # GB/s: min(8/7·NVLink, 8·NIC)
    CLAIMS += [
        AtLeast(_gbps(_run["busbw_GBps"]), _one_port,
                name=f"{_run['id']}: the measured ring bandwidth {_run['busbw_GBps']} GB/s is above the one-port "
                     f"sum's {float(_one_port):.1f} GB/s ({_run['system']}, {_run['nodes'] or 'several'} "
                     "nodes): the two legs do not add", source=_run["source"]),
        AtLeast(_concurrent, _gbps(_run["busbw_GBps"]),
                name=f"{_run['id']}: the measured ring bandwidth is within the concurrent legs' "
                     f"{float(_concurrent):.0f} GB/s, the rule symcomm prices (its time a lower bound)",
                source=_run["source"]),
        AtLeast(_gbps(_run["busbw_GBps"]), sp.Rational(4, 5) * _concurrent,
                name=f"{_run['id']}: the measured ring bandwidth is at least 4/5 of the concurrent legs' "
                     f"({float(_gbps(_run['busbw_GBps']) / _concurrent):.0%})", source=_run["source"])]

# the time the rule gives, the slower leg's: on H100's links (NVLink 450 GB/s, a 50 GB/s NIC a GPU: β_inter = 9β)
# with k = 8 the NIC's, 9/8·β per element; across GB200 NVL72 domains (the gb200 preset: NVLink 900 GB/s, a 400 Gb/s
# NIC a GPU: β_inter = 18β) with k = 72 the NVLink's, 71/72·β; with one rank a node (k = 1) the network's whole
_legs = _split.time - _split.coefficient(alpha_inter) * alpha_inter - _split.coefficient(gamma) * gamma
_NCCL_TUNING = "NVIDIA/nccl src/graph/tuning.cc (a ring's bus bandwidth: channels × one per-channel rate)"
CLAIMS += [
    Claim(_legs.subs({beta_inter: 18 * beta, _k_node: 72}), _ring.beta * sp.Rational(71, 72) * beta,
          name="a flat ring across GB200 NVL72 domains (β_inter = 18β), k = 72: its β time is the NVLink leg's, "
               "71/72·β per element sent, where the one-port sum says 89/72·β", source=_NCCL_TUNING),
    Claim(_legs.subs(_k_node, 1), _ring.beta * beta_inter,
          name="a flat ring across nodes with one rank a node (k = 1): its β time is the network's whole"),
    Claim(_legs.subs({beta_inter: 9 * beta, _k_node: 8}), _ring.beta * sp.Rational(9, 8) * beta,
          name="a flat ring across H100 nodes (β_inter = 9β), k = 8: its β time is the NIC leg's, 9/8·β per element "
               "sent, where the one-port sum says 2β",
          source=_NCCL_TUNING),
]


# -- nodes wired point to point (nvlink=mesh): a group's bytes on a node run over its pair links there ------------
#
# A 4-GPU Hopper board wires its GPUs point to point (NVIDIA/nccl on GitHub, #1617: NV6, six of a GPU's 18 NVLink 4
# links, between every pair): a ring or pairwise all-to-all of n of a node's G GPUs uses n − 1 of each GPU's G − 1
# pair links (base.crossing, mesh_within and mesh_stay_share; the count of NCCL's channel orders behind it is checked
# by enumeration in tests/training/test_nvlink_mesh.py).  The claims: the whole node pays the switch's β, a pair
# (G − 1) times it, and a ring spanning nodes keeps the switch's split at one rank and at G ranks per node.
_mesh_axes, _switch_axes = HYBRID.by_axis(zero=1, nvlink="mesh"), HYBRID.by_axis(zero=1)
_KF_TP2 = {**LLAMA2, t: 2, p: 1, d: 1, G: 4}
CLAIMS += [
    Claim(_ring.on_mesh(G, G).beta, _ring.beta,
          name="a mesh node: a ring over all G of its GPUs pays the switch's β (every pair link in use)",
          source=_MESH_SOURCE, domain=Domain(least=((G, 2),))),
    Claim(_ring.on_mesh(2, G).beta.subs(N, 2), (G - 1) * _ring.beta.subs(N, 2),
          name="a mesh node: a ring over a pair of its GPUs pays (G − 1) times the switch's β (one pair link of G − 1)",
          source=_MESH_SOURCE),
    Claim(_ring.across_nodes(G, mesh_gpus=G).coefficient(beta), _ring.across_nodes(G).coefficient(beta),
          name="a ring across mesh nodes holding G of its ranks each stays on the node as across NVSwitch nodes",
          source=_MESH_SOURCE),
    Claim(_ring.across_nodes(1, mesh_gpus=G).coefficient(beta), 0,
          name="a ring across mesh nodes with one rank per node (k = 1): nothing on the node's links, as before"),
    Claim(_ring.across_nodes(2, mesh_gpus=4).coefficient(beta), 3 * _ring.across_nodes(2).coefficient(beta),
          name="a ring across 4-GPU mesh nodes with 2 ranks on each: the half that stays runs over one pair link, "
               "a third of a GPU's (3× the switch's β)", source=_MESH_SOURCE),
    Claim(at(_mesh_axes["tp"].coefficient(beta), _KF_TP2), 3 * at(_switch_axes["tp"].coefficient(beta), _KF_TP2),
          name="Llama-2-70B-like at t = 2 on a 4-GPU mesh node (G = 4): the tensor-parallel pair's β three times "
               "the NVSwitch node's, its α unchanged", source=_MESH_SOURCE),
    Claim(at(_mesh_axes["tp"].coefficient(alpha), _KF_TP2), at(_switch_axes["tp"].coefficient(alpha), _KF_TP2),
          name="Llama-2-70B-like at t = 2 on a 4-GPU mesh node: the tensor-parallel pair's α as on NVSwitch"),
]


# -- an expert tensor-parallel size of its own (expert_tp=t_e) ------------------------------------------------------
#
# Megatron-Core's expert grid is expert tensor × expert × expert data × pipeline, innermost first, its expert tensor
# size defaulting to t (hybrid.MEGATRON_EXPERT_GRID): at t_e the experts split over t_e ranks, an expert group's e
# ranks stand t_e apart and the dispatcher gathers the routed tokens over the t_e ranks.  The claims: the general
# size gives, term for term, what the two named ones give at t_e = t and t_e = 1 (hand counts at t_e = 4 with t = 2:
# tests/training/test_expert_tp.py).
_axes_te = HYBRID.by_axis(zero=1, moe=1, sp=1, expert_tp="t_e")
_axes_tp, _axes_one = HYBRID.by_axis(zero=1, moe=1, sp=1), HYBRID.by_axis(zero=1, moe=1, sp=1, expert_tp="1")
for _axis in ("tp", "ep", "dp"):
    for _sym in (alpha, beta, alpha_inter, beta_inter):
        CLAIMS += [
            Claim(_axes_te[_axis].coefficient(_sym).subs(S_T_E, t), _axes_tp[_axis].coefficient(_sym),
                  name=f"expert_tp=t_e at t_e = t: the {_axis} axis's {_sym} coefficient is expert_tp=tp's",
                  source=MEGATRON_EXPERT_GRID),
            Claim(_axes_te[_axis].coefficient(_sym).subs(S_T_E, 1), _axes_one[_axis].coefficient(_sym),
                  name=f"expert_tp=t_e at t_e = 1: the {_axis} axis's {_sym} coefficient is expert_tp=1's",
                  source=MEGATRON_EXPERT_GRID)]

CHAPTER = Chapter(
    8, "hybrid", "Hybrid layouts",
    "Real runs combine the axes: N = t·p·d·c GPUs, experts inside d·c. Each axis runs its own "
    "collectives on its own group, on the sizes that remain for it; whether a group crosses "
    "nodes decides whether it pays the intra- or inter-node α and β.",
    (TP_AXIS, PP_AXIS, PP_SCATTER_GATHER, DP_AXIS, CP_AXIS, DP_EMBEDDINGS, TP_EMBEDDINGS, TP_MOE, EP_MOE)
    + EXAMPLES,
    tuple(CLAIMS))
