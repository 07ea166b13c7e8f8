"""Chapter 11 — step time against published runs.

The communication formulas of the other chapters become a step time once compute, overlap
and the pipeline bubble join them (symcomm/training/steptime.py).  This chapter derives the FLOPs of
a transformer from its shape and proves them equal to the papers' closed forms, derives two
closed forms the model makes visible (the interleaving degree that minimises the step, the
micro-batch that hides the data-parallel reduce), and shows the model against every
published run in ``data/published_runs.json``: predicted and published step time, the
error of each row, and which runs fitted the constants of each hardware preset.
"""

from __future__ import annotations

import functools

import numpy as np
import sympy as sp

from symcomm.training import flops, stages
from symcomm.core.chapters import Chapter, Derivation, Step, Table
from symcomm.presets import hardware
from symcomm.core.proof import AtLeast, Claim, Domain, Limit
from symcomm.core.rewrite import at, rebuilt
from symcomm.measurement.step_fit import Errors
from symcomm.core import symbols as _S     # the MoE and MLA symbols, apart from the GPT ones below
from symcomm.training import compute, frameworks, overlap, steptime
from symcomm.training.subjects import subject
from symcomm.training.memory import (COMPILED_SAVED, TE_ATTENTION_OUTPUT, TE_SAVED_INPUT, KeptWidths,
                                     activation_bytes, layer_activation_bytes, saved_input_bytes)
from symcomm.training.settings import MEGATRON_BLOCK_RECOMPUTE, RunSetting
from symcomm.collectives.algorithms import algorithm
from symcomm.core.symbols import (F, L, L_first, L_last, M, N, V, alpha, beta, c, d, eta, eta_attn, eta_fp8, gamma, h, h_kv,
                                  hbm, kappa, m, p, peak, peak_fp8, s, t, v, w_half)

from . import published, rowwise_casts


def _put(expr, values: dict) -> sp.Expr:
    """``expr.subs(values)`` for symbols whose values hold none of them: one simultaneous pass, each distinct subtree
    rebuilt once (``subs`` walks the step model's tree once per symbol, a tenth of a second for this chapter), the
    same tree."""
    return rebuilt(sp.sympify(expr, strict=True), values, {})

B = sp.Symbol("B", integer=True, positive=True)          # sequences in the batch counted
GPT = {F: 4 * h, h_kv: h}                                  # GPT: FFN 4h, multi-head attention
NARAYANAN = "Narayanan et al. 2021, Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM"
KORTHIKANTI = "Korthikanti et al. 2022, Reducing Activation Recomputation in Large Transformer Models"
KAPLAN = "Kaplan et al. 2020, Scaling Laws for Neural Language Models, §2.1 (C ≈ 6N per token)"

LAYER = Derivation(
    "FLOPs of one GPT layer's forward",
    (Step(flops.layer_forward(B, s).subs(GPT), "Q, K, V and output projections, QKᵀ and scores × V, the MLP "
                                               "h → 4h → h; 2 FLOPs per multiply-add"),
     Step(24 * B * s * h ** 2 + 4 * B * s ** 2 * h, "collect: 8Bsh² of projections, 16Bsh² of MLP, 4Bs²h of "
                                                   "attention core")),
    "FLOPs, forward, B sequences of s tokens; full s × s scores (the papers' count)",
    NARAYANAN + ", Appendix", lhs="layer forward")

MODEL_FLOPS = Derivation(
    "Model FLOPs per iteration (forward + backward)",
    (Step(flops.model_flops(B, s).subs(GPT), "3 × the forward of L layers and the LM head (backward = 2 × forward)"),
     Step(72 * B * L * s * h ** 2 * (1 + s / (6 * h) + V / (12 * h * L)), "Korthikanti et al.'s closed form")),
    "FLOPs per iteration of a batch of B sequences, no recompute (what MFU divides)",
    KORTHIKANTI + ", Appendix A (model FLOPs)", lhs="model FLOPs")

MEGATRON_FLOPS = Derivation(
    "Model FLOPs at Megatron-LM's count: causal attention at half",
    (Step(flops.model_flops(B, s).subs(GPT) - flops.causal_half(B, s), "model FLOPs less the half of every "
                                                                         "attention core a causal mask leaves undone"),
     Step(72 * B * L * s * h ** 2 * (1 + s / (12 * h) + V / (12 * h * L)), "the attention-core term halved: what "
                                                                            "mfu_causal divides")),
    "FLOPs per iteration of a batch of B sequences, no recompute; the core attention term over 2",
    "Megatron-LM megatron/training/training.py at d98e8a64, num_floating_point_operations (\"causal mask (only half "
    "of the mask is non-zero)\"); Megatron-Bridge's printed model TFLOP/s count the same "
    "(tests/training/test_mfu_causal.py: its 25.11 H100 Llama 3 70B row)", lhs="model FLOPs, causal")

FULL_RECOMPUTE = Derivation(
    "Hardware FLOPs with full recomputation",
    (Step(flops.hardware_flops(B, s, "full").subs(GPT), "model FLOPs + every layer's forward once more (the LM "
                                                        "head is not recomputed)"),
     Step(96 * B * s * L * h ** 2 * (1 + s / (6 * h) + V / (16 * L * h)), "Narayanan et al.'s eq. (3)")),
    "FLOPs per iteration, full activation recomputation",
    NARAYANAN + ", §5.1 eq. (3)", lhs="hardware FLOPs, full")

HARDWARE_CAUSAL = Derivation(
    "Hardware FLOPs with full recomputation, causal attention at half",
    (Step((flops.hardware_flops(B, s, "full") - flops.causal_half_executed(B, s, "full")).subs(GPT),
          "hardware FLOPs less the half of every attention core a causal kernel leaves undone: the forward's, the "
          "backward's two and the recompute's one"),
     Step(96 * B * s * L * h ** 2 * (1 + s / (12 * h) + V / (16 * L * h)), "Narayanan et al.'s eq. (3) with its "
                                                                           "attention term halved: what hfu_causal "
                                                                           "divides")),
    "FLOPs per iteration, full activation recomputation, each attention core counted as a causal flash kernel runs it "
    "(HFU's full s × s count passes eta at long sequences, where a causal kernel runs half of it)",
    NARAYANAN + ", §5.1 eq. (3); Dao 2023, FlashAttention-2, §3.1.1 (causal masking: the blocks above the diagonal "
    "skipped)", lhs="hardware FLOPs, causal",
    claims=(Claim(flops.causal_half_executed(B, s, "none"), flops.causal_half(B, s),
                  name="without recompute the hardware FLOPs' causal half is the model FLOPs' (hfu_causal = "
                       "mfu_causal)"),
            Claim(flops.causal_half_executed(B, s, "selective") - flops.causal_half_executed(B, s, "none"),
                  L * flops.attention_core(B, s) / 2,
                  name="selective recompute runs every core once more: half of it skipped")))

SELECTIVE = flops.hardware_flops(B, s, "selective").subs(GPT)
KORTHIKANTI_SELECTIVE = 72 * B * L * s * h ** 2 * (1 + s / (3 * h) + V / (12 * h * L))

SELECTIVE_RECOMPUTE = Derivation(
    "Hardware FLOPs with selective recomputation",
    (Step(SELECTIVE, "model FLOPs + the attention core's forward (QKᵀ, scores × V) once more"),
     Step(72 * B * L * s * h ** 2 * (1 + 2 * s / (9 * h) + V / (12 * h * L)), "collect: 4Bs²h per layer more")),
    "FLOPs per iteration, selective recomputation",
    KORTHIKANTI + ", §5 (what selective recomputation re-runs)", lhs="hardware FLOPs, selective",
    claims=(Claim(KORTHIKANTI_SELECTIVE - SELECTIVE, 8 * B * L * s ** 2 * h,
                  name="Korthikanti et al.'s printed hardware FLOPs for selective recompute count 8Bs²h per "
                       "layer more than re-running the attention core's forward (12 instead of 4)",
                  source=KORTHIKANTI + ", Appendix A (hardware FLOPs)"),))

# torchtitan's op-level selective checkpointing (recompute=op): the block's matmuls in their forward order wq, wk, wv,
# wo, w1, w3, w2 (torchtitan/models/llama/model.py at 9dec370a); its policy saves the odd-numbered ones and
# recomputes the even-numbered wk, wo, w3 (parallelize_llama.py, _save_list and the mm counter)
OP_SAC = ("pytorch/torchtitan torchtitan/parallelisms/parallelize_llama.py at 9dec370a (_save_list, "
          "_apply_ac_to_transformer_block, selective_ac_option = 'op'); torchtitan/models/llama/model.py (the matmul order)")
OP = flops.hardware_flops(B, s, "op", gated=True)
OP_RECOMPUTE = Derivation(
    "Hardware FLOPs with torchtitan's op-level selective checkpointing",
    (Step(OP, "model FLOPs + the even-numbered matmuls of each gated block once more"),
     Step(flops.model_flops(B, s, gated=True) + 2 * B * s * L * (h * h_kv + h * h + h * F),
          "wk (h × h_kv), wo (h × h) and w3 (h × F): the 2nd, 4th and 6th of wq, wk, wv, wo, w1, w3, w2")),
    "FLOPs per iteration, B sequences of s tokens; a gated (SwiGLU) grouped-query block",
    OP_SAC, lhs="hardware FLOPs, op",
    claims=(Claim(flops.recomputed(B, s, "full", gated=True) - flops.recomputed(B, s, "op", gated=True),
                  L * (flops.attention_core(B, s) + 2 * B * s * (h * h + h * h_kv + h * F + F * h)),
                  name="op recomputes less than full by the attention core (its SDPA output is saved) and the "
                       "odd-numbered matmuls wq, wv, w1, w2 (their outputs are saved): below full for every shape",
                  source=OP_SAC),
            AtLeast(activation_bytes("op", True, False) - activation_bytes("full", True, False),
                    (s / c) * _S.b / (d * m) * 4 * _S.a / t,
                    name="op keeps more than full (the block input) for every shape, by at least the SDPA's "
                         "logsumexp, without sequence parallelism", source=OP_SAC),
            AtLeast(activation_bytes("op", True, True) - activation_bytes("full", True, True),
                    (s / c) * _S.b / (d * m) * 4 * _S.a / t,
                    name="and with sequence parallelism", source=OP_SAC),
            Claim(activation_bytes("op", True, False) - activation_bytes("op", True, False, compiled=True),
                  (s / c) * _S.b / (d * m) * 2 * h,
                  name="under torch.compile a block keeps w2's output less, 2h bytes a token (its partitioner drops "
                       "the saved values the backward never reads)", source=COMPILED_SAVED),
            Claim(activation_bytes("op", True, True) - activation_bytes("op", True, True, compiled=True),
                  (s / c) * _S.b / (d * m) * (2 * h + 2 * h / t),
                  name="and with sequence parallelism w2's whole partial sum and its reduce-scatter's shard too",
                  source=COMPILED_SAVED)))

# Megatron's block recompute (recompute=block): the first L_rc layers of each model chunk recompute fully, the rest
# none; counted as full's for the share L_rc·p·v/L of every layer sum and none's for the rest (compute.
# micro_batch_compute, memory.layer_activation_bytes, the "forward recompute" terms of hybrid.stage_terms)
_BLOCK_SHARE = stages.block_share("interleaved")
MEGATRON_MTP_FLOPS = ("Megatron-LM megatron/training/training.py at d98e8a64 (num_floating_point_operations: "
                      "mtp_num_layers more layers of the last layer's kind, the MTP norms and eh_proj, (1 + mtp_num_layers) "
                      "logits); Megatron-Bridge src/megatron/bridge/training/utils/flop_utils.py at v0.4.2 (the hybrid: "
                      "the MTP pattern's blocks once per depth, (1 + mtp_num_layers) logits); " + flops.MEGATRON_MTP)
_D = _S.D_mtp
_MTP_EXTRA = 3 * _D * (2 * B * s * 2 * h ** 2 + flops.lm_head_forward(B, s))
_DSV3_KIND = dict(gated=True, moe=True, attention="mla")
_SUPER_KIND = dict(gated=False, moe=True, mamba=True, latent=True)
MTP_FLOPS = Derivation(
    "Model FLOPs with multi-token prediction",
    (Step(flops.model_flops(B, s, mtp=True, **_DSV3_KIND) - flops.model_flops(B, s, **_DSV3_KIND),
          "the D_mtp depths' forward and backward (3 × their forward)"),
     Step(3 * _D * (flops.moe_layer_forward(B, s, True, "mla") + 2 * B * s * 2 * h ** 2 + flops.lm_head_forward(B, s)),
          "each depth: one MoE layer (DeepSeek-V3's last kind), eh_proj 2h → h and the shared output head")),
    "FLOPs per iteration, B sequences of s tokens, DeepSeek-V3's layer kind (MLA, gated MoE); only matmuls",
    MEGATRON_MTP_FLOPS, lhs="model FLOPs added by mtp",
    claims=(Claim(flops.model_flops(B, s, mtp=True, **_DSV3_KIND),
                  flops.model_flops(B, s, **_DSV3_KIND).subs({L: L + _D, _S.L_moe: _S.L_moe + _D}) + _MTP_EXTRA,
                  name="as Megatron-LM counts it: D_mtp more MoE layers, D_mtp more logits and eh_proj's 2h·h a token",
                  source=MEGATRON_MTP_FLOPS),
            Claim(flops.model_flops(B, s, mtp=True, **_SUPER_KIND),
                  flops.model_flops(B, s, **_SUPER_KIND).subs({L: L + 2 * _D, _S.L_att: _S.L_att + _D,
                                                               _S.L_moe: _S.L_moe + _D}) + _MTP_EXTRA,
                  name="and as Megatron-Bridge counts the hybrid's: the '*E' pattern's attention and expert blocks once "
                       "more per depth", source=MEGATRON_MTP_FLOPS),
            Claim(flops.hardware_flops(B, s, "full", mtp=True, **_DSV3_KIND)
                  - flops.hardware_flops(B, s, "full", **_DSV3_KIND),
                  flops.model_flops(B, s, mtp=True, **_DSV3_KIND) - flops.model_flops(B, s, **_DSV3_KIND)
                  + _D * (flops.moe_layer_forward(B, s, True, "mla") + 2 * B * s * 2 * h ** 2),
                  name="full recompute reruns each depth's eh_proj and layer, not its head "
                       "(MultiTokenPredictionLayer._checkpointed_forward)", source=flops.MEGATRON_MTP)))

_BLOCK_RUNS = {mode: RunSetting(embeddings=True, gated=True, recompute=mode, sp=True) for mode in ("block", "full", "none")}
BLOCK_RECOMPUTE = Derivation(
    "Hardware FLOPs with Megatron's block recompute",
    (Step(flops.hardware_flops(B, s, "block", gated=True, schedule="interleaved"),
          "model FLOPs + the forward of the first L_rc layers of each of the p·v model chunks once more"),
     Step(flops.model_flops(B, s, gated=True) + _BLOCK_SHARE * flops.recomputed(B, s, "full", gated=True),
          "that share, L_rc·p·v/L, of full recompute's")),
    "FLOPs per iteration, B sequences of s tokens, a gated block; an even split (L/(p·v) layers per chunk)",
    MEGATRON_BLOCK_RECOMPUTE, lhs="hardware FLOPs, block",
    claims=(Claim(flops.hardware_flops(B, s, "block", gated=True, schedule="interleaved").subs(_S.L_rc, L / (p * v)),
                  flops.hardware_flops(B, s, "full", gated=True),
                  name="every layer of a chunk recomputing (L_rc = L/(p·v)) is full recompute", source=MEGATRON_BLOCK_RECOMPUTE),
            Claim(layer_activation_bytes("block", True, True, schedule="interleaved").subs(_S.L_rc, L / (p * v)),
                  layer_activation_bytes("full", True, True),
                  name="and keeps what full keeps per layer", source=MEGATRON_BLOCK_RECOMPUTE),
            Claim(compute.micro_batch_compute(_BLOCK_RUNS["block"]).total.subs(_S.L_rc, L / p),
                  compute.micro_batch_compute(_BLOCK_RUNS["full"]).total,
                  name="and its micro-batch compute is full's (one chunk per stage: L_rc = L/p)",
                  source=MEGATRON_BLOCK_RECOMPUTE),
            Claim(compute.micro_batch_compute(_BLOCK_RUNS["block"]).total.subs(_S.L_rc, 0),
                  compute.micro_batch_compute(_BLOCK_RUNS["none"]).total,
                  name="no layer recomputing (L_rc → 0) is no recompute", source=MEGATRON_BLOCK_RECOMPUTE)))

# Megatron-Core's recompute modules beside the attention core (settings.RECOMPUTE_MODULES): mlp and moe rerun their
# layers' MLP side (flops.hardware_flops), moe_act frees the experts' activation output (memory.module_bytes)
MEGATRON_RECOMPUTE_MODULES = ("Megatron-LM megatron/core/transformer/transformer_layer.py, moe/moe_layer.py, "
                              "moe/experts.py at d98e8a64 (recompute_modules: mlp and moe tensor_parallel.checkpoint, "
                              "moe_act and layernorm CheckpointWithoutOutput)")
_MICRO_TOKENS = (s / c) * _S.b / (d * m)
RECOMPUTE_MODULES = Derivation(
    "Hardware FLOPs with Megatron-Core's recompute modules mlp and moe",
    (Step(flops.hardware_flops(B, s, "none", gated=True, moe=True, modules=frozenset({"mlp", "moe"})),
          "model FLOPs + every dense layer's MLP and every MoE layer's experts once more"),
     Step(flops.model_flops(B, s, gated=True, moe=True)
          + 6 * B * s * h * ((L - _S.L_moe) * F + _S.L_moe * (_S.k + _S.E_s) * _S.F_e),
          "a gated MLP h → F → h is 3 matrices, 2 FLOPs per multiply-add: 6·h·F a token; each token through k routed "
          "and E_s shared experts of width F_e")),
    "FLOPs per iteration, B sequences of s tokens, gated MLPs, L_moe MoE layers of L, recompute otherwise none",
    MEGATRON_RECOMPUTE_MODULES, lhs="hardware FLOPs, mlp and moe",
    claims=(Claim(flops.hardware_flops(B, s, "none", gated=True, moe=True, modules=frozenset({"moe_act", "layernorm"})),
                  flops.model_flops(B, s, gated=True, moe=True),
                  name="moe_act and layernorm rerun no matmul: hardware FLOPs are model FLOPs",
                  source=MEGATRON_RECOMPUTE_MODULES),
            Claim(layer_activation_bytes("none", True, False, moe=True, gated=True)
                  - layer_activation_bytes("none", True, False, moe=True, gated=True, modules=frozenset({"moe_act"})),
                  _S.L_moe / L * _MICRO_TOKENS * _S.k * 2 * _S.F_e / t,
                  name="moe_act keeps no routed row's activation output: 2·F_e bytes (bf16) for each of a token's k "
                       "rows, over t, in the MoE layers' share",
                  source=MEGATRON_RECOMPUTE_MODULES),
            Claim(layer_activation_bytes("none", True, True, moe=True, gated=True)
                  - layer_activation_bytes("none", True, True, moe=True, gated=True, modules=frozenset({"layernorm"})),
                  _S.L_moe / L * _MICRO_TOKENS * 2 * h / t,
                  name="layernorm keeps no pre-MLP norm output in an MoE layer: 2h bytes a token, /t with sequence "
                       "parallelism (the TE spec fuses the other norms into their linears)",
                  source=MEGATRON_RECOMPUTE_MODULES),
            Claim(layer_activation_bytes("none", True, True, gated=True)
                  - layer_activation_bytes("none", True, True, gated=True, modules=frozenset({"mlp"})),
                  _MICRO_TOKENS * (2 * h + 6 * F) / t,
                  name="mlp keeps of a dense layer's MLP only its input: FC1's input 2h, the gated activation's input "
                       "(FC1's 2F-wide output, 4F) and FC2's input 2F, over t with sequence parallelism (Korthikanti "
                       "et al.'s MLP block less the norm's input and the dropout mask, 2 + 8 + 8 of its 21 sbh/t, at "
                       "F = 4h ungated)",
                  source=MEGATRON_RECOMPUTE_MODULES)))

# Transformer Engine's low-precision recipes keep a linear's quantized input for its weight gradient (memory.
# saved_input_bytes): Korthikanti et al.'s 34 sbh/t with sequence parallelism, its four linears' inputs (QKV and FC1,
# h wide, norm-fused; FC2's input, 4h, plain) at the bytes the recipe keeps; the attention output, h, at the core's 2
# bytes (memory.TE_ATTENTION_OUTPUT), and the projection's quantized copy beside it under delayed scaling
_SBH_T = (s / c) * _S.b / (d * m) * h / t
QUANTIZED_ACTIVATIONS = Derivation(
    "Activations a layer keeps under a Transformer Engine FP8 recipe",
    (Step(activation_bytes("none", True, True, saved=saved_input_bytes("megatron", "fp8_tensor", True)),
          "per-tensor FP8 with sequence parallelism: the norm-fused QKV and FC1 keep the row-wise FP8 copy of their "
          "input alone (1 byte: the backward all-gathers it and rebuilds the transpose), FC2 one (1 byte), the "
          "attention output its 16-bit self (the attention core's, which the projection keeps as its original input)"),
     Step((34 - 2 - 4) * _SBH_T, "Korthikanti et al.'s 34 less 1 byte of QKV's and FC1's h and of FC2's 4h")),
    "bytes per layer per micro-batch, one GPU, flash attention, no recompute, s → s/c",
    "Korthikanti et al. 2022, Table 2; " + TE_SAVED_INPUT + "; " + TE_ATTENTION_OUTPUT, lhs="activations, FP8",
    claims=(Claim(activation_bytes("none", True, True, saved=saved_input_bytes("megatron", "bf16", True)),
                  34 * _SBH_T, name="in bf16 the count is Korthikanti et al.'s 34 sbh/t", source=KORTHIKANTI),
            Claim(activation_bytes("none", True, True, saved=saved_input_bytes("megatron", "mxfp8", True)),
                  (22 + 6 * (1 + sp.Rational(1, 32))) * _SBH_T,
                  name="MXFP8 keeps every linear's input but the attention output's as one column-scaled copy, "
                       "1 + 1/32 bytes per element",
                  source=TE_SAVED_INPUT),
            Claim(activation_bytes("none", True, True, saved=saved_input_bytes("megatron", "fp8_delayed", True)),
                  (34 - 2 - 4 + 1) * _SBH_T,
                  name="delayed scaling keeps the attention output twice, 16-bit in the core and quantized in the "
                       "projection (Transformer Engine refuses it save_original_input)",
                  source=TE_ATTENTION_OUTPUT),
            Claim(activation_bytes("none", True, True, saved=saved_input_bytes("fsdp2", "fp8_tensor", True)),
                  34 * _SBH_T, name="torchao's Float8Linear (framework fsdp2) keeps the 16-bit input: unchanged",
                  source="pytorch/ao torchao/float8/float8_linear.py at 4f8021f2")))

# a dense layer's kept activations with its MLP at the model's width F (memory.dense_mlp_width_bytes), t = 1, one token
_DENSE_TOKEN = {t: 1, s: 1, _S.b: 1, d: 1, m: 1, c: 1}
MLP_WIDTH_ACTIVATIONS = Derivation(
    "Activations a dense layer keeps with its MLP at width F",
    (Step(layer_activation_bytes("none", True, False, gated=True).subs(_DENSE_TOKEN),
          "flash attention, no recompute, a gated (SwiGLU) MLP of width F, one token on one GPU (t = 1)"),
     Step(18 * h + 6 * F, "Korthikanti et al.'s 34h less their GeLU MLP's 4h-wide tensors (the GeLU's input and FC2's, "
                          "8h each), plus SwiGLU's input, FC1's 2F-wide output (4F), and FC2's input (2F)")),
    "bytes per layer and token, 2 bytes an element",
    "Megatron-LM megatron/core/fusions/fused_bias_swiglu.py (SwiGLUFunction saves its input) at d98e8a64; " + KORTHIKANTI
    + ", Table 2", lhs="activations, dense gated layer",
    claims=(Claim(layer_activation_bytes("none", True, False, gated=False).subs(_DENSE_TOKEN).subs(F, 4 * h), 34 * h,
                  name="an ungated MLP of width 4h keeps Korthikanti et al.'s 34h", source=KORTHIKANTI + ", Table 2"),
            Claim(layer_activation_bytes("full", True, False, gated=True).subs(_DENSE_TOKEN), 2 * h,
                  name="a full recompute keeps the layer's input alone, whatever the MLP's width",
                  source=KORTHIKANTI + ", §4.1"),
            Claim(layer_activation_bytes("none", True, True, gated=True, widths=KeptWidths(gqa=True, dropout=False))
                  .subs(_DENSE_TOKEN).subs({_S.h_kv: h / 8, F: 7 * h / 2}), 67 * h / 2,
                  name="Llama 3 70B (8 query groups: h_kv = h/8; F = 3.5h; no dropout) keeps 33.5h a token with "
                       "sequence parallelism, by hand from Megatron-Core's saved tensors: the two norms' inputs and "
                       "the norm-fused linears' inputs 8h, Q 2h, K and V 4h_kv, the attention output 2h, SwiGLU's "
                       "input 4F and FC2's 2F",
                  source="Megatron-LM megatron/core/transformer/attention.py (K, V at num_query_groups) and "
                         "fusions/fused_bias_dropout.py at d98e8a64; PyTorch aten/src/ATen/native/Dropout.cpp (p = 0 "
                         "keeps no mask)"),
            Claim((layer_activation_bytes("none", True, True, gated=True,
                                          widths=KeptWidths(gqa=True, dropout=False, heads_q=True))
                   - layer_activation_bytes("none", True, True, gated=True, widths=KeptWidths(gqa=True, dropout=False)))
                  .subs(_DENSE_TOKEN).subs(_S.h_q, 2 * h), 4 * h,
                  name="query heads twice h/a wide (Qwen3-30B-A3B: 32 heads of 128, h_q = 4096 = 2h) keep Q and the "
                       "attention output h_q wide, 2 bytes each: 4h a token more than counted h wide, by hand",
                  source="Megatron-LM megatron/core/transformer/attention.py at d98e8a64 (query [s, b, np, hn], hn = "
                         "kv_channels; linear_proj's input np·hn); Qwen/Qwen3-30B-A3B config.json (head_dim 128)")))

# an MoE layer's kept activations (memory.layer_activation_bytes): no dense MLP block; the MoE block as Megatron-Core
# runs it (memory.hybrid_block_bytes "moe"), every layer MoE here (L_moe = L), bf16, t = 1, one token
MEGATRON_MOE_SAVED = ("Megatron-LM megatron/core/transformer/moe/moe_layer.py, moe/experts.py (TEGroupedMLP.forward: "
                      "the probabilities multiply the activation's output), moe/shared_experts.py at d98e8a64")
_MOE_TOKEN = {t: 1, s: 1, _S.b: 1, d: 1, m: 1, c: 1, _S.L_moe: L}
MOE_ACTIVATIONS = Derivation(
    "Activations an MoE layer keeps",
    (Step(layer_activation_bytes("none", True, False, moe=True, gated=True).subs(_MOE_TOKEN),
          "flash attention, no recompute, every layer MoE, one token on one GPU (t = 1)"),
     Step(13 * h + 5 * h + 6 * _S.E_s * _S.F_e + _S.k * (2 * h + 6 * _S.F_e),
          "Korthikanti et al.'s attention block 13h; the pre-MLP norm's input and output 4h and the dropout mask after "
          "the block h (Megatron-Core's bias-dropout-add; none without dropout); each shared expert's gated "
          "FC1 output 4F_e and activation output 2F_e; each of the k routed rows its permuted input 2h, FC1's output "
          "4F_e and the activation's output 2F_e, FC2's output not kept (the probabilities multiply the activation's "
          "output, so the un-permutation saves nothing)")),
    "bytes per layer and token, 2 bytes an element", MEGATRON_MOE_SAVED + "; Korthikanti et al. 2022, Table 2",
    lhs="activations, MoE layer",
    claims=(Claim(layer_activation_bytes("none", True, False, moe=True, gated=True).subs(_MOE_TOKEN)
                  - layer_activation_bytes("none", True, False, gated=True).subs(_MOE_TOKEN),
                  6 * _S.E_s * _S.F_e + _S.k * (2 * h + 6 * _S.F_e) - 6 * F,
                  name="against a dense gated layer's 18h + 6F (Korthikanti et al.'s 34h with the MLP at its own width "
                       "F: memory.dense_mlp_width_bytes): its MLP block (its norm's input, the dropout mask and FC1's "
                       "input 5h; FC1's 2F-wide output and FC2's input 6F) gives way to the MoE block's norm input and "
                       "output and the dropout mask after it (5h) and its experts' tensors",
                  source=MEGATRON_MOE_SAVED),
            Claim(layer_activation_bytes("none", True, False, moe=True, gated=True, passed=True).subs(_MOE_TOKEN),
                  34 * h + _S.k * (4 * h + 6 * _S.F_e),
                  name="the κ passes' bytes (memory.PASSED) keep a dense layer's 34h with the routed rows beside it, "
                       "each row's FC2 output too, as the step-time constants were fitted", source=KORTHIKANTI)))

# the 6N rule: every weight matrix costs 2 FLOPs per token forward and 4 backward
WEIGHTS_PER_LAYER = 2 * h ** 2 + 2 * h * h_kv + 3 * h * F
SIX_N = Claim(3 * (flops.layer_forward(1, 1, gated=True) - flops.attention_core(1, 1)), 6 * WEIGHTS_PER_LAYER,
              name="outside the attention core, a gated (SwiGLU), grouped-query layer costs 6 FLOPs per weight "
                   "and token, forward + backward", source=KAPLAN)

# -- PyTorch's context parallel: the ring's memory-bound passes (symcomm.training.compute.CP_RING_FORWARD) ----------
# s local tokens on the GPU at every c (as torchtitan's CP rows hold 32,768 per GPU), K, V repeated to h (gqa=0)
_RING = compute.cp_ring_bytes(RunSetting(framework="fsdp2", zero=3, cp="ring_flash_attn"), s, 1)
_TORCH_CP_SOURCE = "pytorch/pytorch torch/distributed/tensor/experimental/_attention.py (late 2024)"
CP_RING_GROWS = Claim(_RING[0].subs(c, 3) - _RING[0].subs(c, 2), s * (38 + 8) * h / t,
                      name="each further CP rank adds to a layer's forward one merge of the fp32 output (upcast 6 and "
                           "three fp32 ops 32 bytes per query element) and one K, V concatenation (8 bytes per K, V "
                           "element): the ring's memory-bound bytes grow linearly in c at fixed tokens per GPU",
                      source=_TORCH_CP_SOURCE)
CP_RING_GROWS_BACKWARD = Claim(_RING[1].subs(c, 3) - _RING[1].subs(c, 2), s * (10 + 50) * h / t,
                               name="and to its backward one dQ accumulation (10 bytes per query element) and one "
                                    "dK, dV accumulation, all-to-all concatenation and K, V concatenation (26 + 16 + 8 "
                                    "bytes per K, V element)", source=_TORCH_CP_SOURCE)
CP_RING_OFF = Claim(_RING[0].subs(c, 1) + _RING[1].subs(c, 1), 0,
                    name="without context parallelism (c = 1) the plain SDPA call runs: no ring bytes",
                    source=_TORCH_CP_SOURCE)

# -- mixtures of experts and multi-head latent attention -------------------------------------------
MLA_V3 = {h: 7168, _S.a: 128, _S.q_lora: 1536, _S.kv_lora: 512, _S.d_nope: 128, _S.d_rope: 64, _S.d_v: 128}
MLA_CORE = Derivation(
    "FLOPs of multi-head latent attention's core",
    (Step(flops.attention_core(B, s, "mla"), "per head, QKᵀ over the d_nope + d_rope wide Q and K, the scores times "
                                             "V over d_v; full s × s"),
     Step(2 * B * s ** 2 * _S.a * (_S.d_nope + _S.d_rope) + 2 * B * s ** 2 * _S.a * _S.d_v, "QKᵀ, then scores × V")),
    "FLOPs, forward, B sequences of s tokens", flops.DEEPSEEK_V2_MLA, lhs="MLA core forward",
    claims=(Claim(flops.attention_core(B, s, "mla").subs({_S.d_nope: h / _S.a - _S.d_rope, _S.d_v: h / _S.a}),
                  flops.attention_core(B, s), name="MLA's core with heads as wide as multi-head attention's "
                                                   "(a(d_nope + d_rope) = a·d_v = h) is the 4Bs²h of multi-head attention",
                  source=flops.DEEPSEEK_V2_MLA),
            Claim(at(flops.attention_projections(1, 1, "mla"), MLA_V3), 2 * 187_105_280,
                  name="DeepSeek-V3's MLA projections: 2 × 187,105,280 FLOPs per token and layer (W^DQ 11,010,048, "
                       "W^UQ 37,748,736, W^DKV 4,128,768, W^UKV 16,777,216, W^O 117,440,512 multiply-adds); "
                       "Megatron-Bridge flop_utils.py (commit 4a3f2c2e) counts these plus the two latent norms",
                  source=flops.MEGATRON_MLA)))

NO_SHARED_EXPERT = Claim(flops.moe_layer_forward(B, s, True).subs(_S.E_s, 0),
                         flops.attention_projections(B, s) + flops.attention_core(B, s)
                         + _S.k * flops.mlp(B, s, _S.F_e, True),
                         name="an MoE layer without shared experts (E_s = 0: Mixtral, Qwen3-MoE, gpt-oss) runs each "
                              "token through its k routed experts only",
                         source="Jiang et al. 2024, Mixtral of Experts, §2; Qwen Team 2025, Qwen3 Technical Report, §2")
EXPERT_TP_FLOPS = Claim(flops.expert_forward(B * t, s).subs(_S.F_e, _S.F_e / t), flops.expert_forward(B, s),
                        name="expert tensor parallel size t or 1 gives a GPU the same expert FLOPs: 1/t of each expert "
                             "on the t-fold gathered tokens, or whole experts on its own 1/t of them",
                        source="Megatron-LM megatron/core/transformer/moe/token_dispatcher.py (the expert-tensor-"
                               "parallel all-gather runs only with more than one rank), parallel_state.py")

# -- the interleaving degree that minimises the step -------------------------------------------
# one micro-batch slot of the busiest stage: compute and on-path communication C, plus the pipeline
# sends, which interleaving makes v times as many (P per send pair of one chunk boundary)
C_slot = sp.Symbol("C", positive=True)
P_send = sp.Symbol("P", positive=True)
STEP_OF_V = (m + (p - 1) / v) * (C_slot + v * P_send)
V_BEST = sp.sqrt((p - 1) * C_slot / (m * P_send))

INTERLEAVING = Derivation(
    "The interleaving degree that minimises the step",
    (Step(STEP_OF_V, "(m + (p − 1)/v) slots; a slot is C of compute and on-path communication plus v pipeline "
                     "send pairs of P each (Narayanan et al. §2.2.2: v times the 1F1B sends)"),
     Step(m * C_slot + (p - 1) * P_send + (p - 1) * C_slot / v + m * P_send * v,
          "expand: the bubble term falls as 1/v, the send term grows as v")),
    "seconds per step, busiest stage; v treated as continuous",
    NARAYANAN + ", §2.2.2", lhs="step(v)",
    claims=(Claim(sp.diff(STEP_OF_V, v).subs(v, V_BEST), 0,
                  name="the step is stationary at v* = √((p − 1)·C / (m·P))", source=NARAYANAN + ", §2.2.2"),
            Claim(STEP_OF_V.subs(v, V_BEST), (sp.sqrt(m * C_slot) + sp.sqrt((p - 1) * P_send)) ** 2,
                  name="at v* the step is (√(m·C) + √((p − 1)·P))²", source=NARAYANAN + ", §2.2.2")))

# -- uneven pipeline stages (pipeline_split=first_last) ------------------------------------------
# the first of the p·v chunks holds L_first layers, the last L_last, the p·v − 2 middle ones MID each; stage i holds
# chunks i, i + p, ... (symcomm/training/stages.py: Megatron-LM's layout order and its first/last-stage flags)
_MAX = sp.Max(p * v - 2, 1)
MID = stages.middle_chunk_layers("interleaved").xreplace({_MAX: p * v - 2})      # where middle chunks exist
STAGE = {kind: stages.stage_layers("first_last", "interleaved", kind).xreplace({_MAX: p * v - 2})
         for kind in stages.KINDS}
_EQUAL_ENDS = {L_first: L / (p * v), L_last: L / (p * v)}      # the even split's chunks at both ends
MEGATRON_SPLIT = ("Megatron-LM megatron/core/transformer/transformer_block.py, get_num_layers_to_build, and "
                  "megatron/core/transformer/pipeline_parallel_layer_layout.py (NVIDIA/Megatron-LM at "
                  "d98e8a64ddf34856e74b24714e3bedb2f5a39553)")

UNEVEN = Derivation(
    "Layers per stage under a first/last split",
    (Step(L_first + (p * v - 2) * MID + L_last, "the p·v chunks: the first, the p·v − 2 middle ones, the last"),
     Step(STAGE["first"] + (p - 2) * STAGE["middle"] + STAGE["last"],
          "regrouped by stage: the first stage holds chunk 0 and v − 1 middle chunks, the last chunk p·v − 1 and "
          "v − 1 middle ones, each of the p − 2 middle stages v middle chunks")),
    "transformer layers (p·v ≥ 3 chunks)",
    MEGATRON_SPLIT, lhs="L",
    claims=(Claim(L_first + (p * v - 2) * MID + L_last, L, definition=True,
                  name="the chunks of a first/last split hold the L layers (MID = (L − L_first − L_last)/(p·v − 2))"),
            Claim(STAGE["first"] + (p - 2) * STAGE["middle"] + STAGE["last"], L,
                  name="the stages of a first/last split hold the L layers: first + (p − 2)·middle + last = L",
                  source=MEGATRON_SPLIT),
            Claim(_put(STAGE["last"], _EQUAL_ENDS), L / p,
                  name="with L_first = L_last = L/(p·v) an end stage holds L/p layers, as the even split",
                  source=MEGATRON_SPLIT),
            Claim(_put(STAGE["middle"], _EQUAL_ENDS), L / p,
                  name="and so does a middle stage: the even split is the first/last split of equal chunks",
                  source=MEGATRON_SPLIT)))


# -- gradient accumulation over whole schedules (ga_schedules=1) --------------------------------------------------
# torchtitan and NeMo AutoModel under pipeline parallelism: each of a step's n_ga gradient-accumulation steps runs its
# own schedule, filling and draining the pipeline and ending in the stage's reduction and resharding
_GA_LAYOUT = dict(framework="fsdp2", zero="3", embeddings="1", reshard_after_forward="0", grad_reduce="per_step",
                  grad_dtype="fp32")
_ONE_SCHEDULE = steptime.step_model(**_GA_LAYOUT)
_GA_SCHEDULES = steptime.step_model(**_GA_LAYOUT, ga_schedules="1")
# the model's micro-batch slot of the busiest stage, named C as in the derivation (1F1B: the bubble is (p − 1)·C)
_MODEL_SLOT = {_ONE_SCHEDULE.bubble / (p - 1): C_slot}


def _dp_counts(**options) -> dict:
    """The hybrid strategy's data-parallel collectives of the layout, by name: how many run a step."""
    return {x.what: x.count for x in subject("hybrid", **_GA_LAYOUT, **options).terms if x.axis == "dp"}


_DP_ONE, _DP_GA = _dp_counts(), _dp_counts(ga_schedules="1")
_PIPELINE = Domain(least=((p, 2),))          # ga_schedules=1 counts a pipeline's schedules

GA_SCHEDULES = Derivation(
    "Gradient accumulation over whole pipeline schedules",
    (Step(_S.n_ga * (m / _S.n_ga + (p - 1)) * C_slot,
          "n_ga schedules of m/n_ga micro-batches, each (m/n_ga + p − 1) slots of C (1F1B; the interleaved schedule's "
          "bubble is (p − 1)/v slots)"),
     Step((m + _S.n_ga * (p - 1)) * C_slot, "the micro-batches add up to m; the bubble is paid n_ga times")),
    "seconds per step, busiest stage, before the data-parallel tail (which every schedule's post-backward "
    "reduce-scatter adds to)",
    frameworks.PIPELINING_GA, lhs="pipeline(n_ga)",
    claims=(Claim(_GA_SCHEDULES.bubble.xreplace(_MODEL_SLOT), _S.n_ga * (p - 1) * C_slot,
                  name="the step model's bubble under ga_schedules=1 (FSDP2, 1F1B, its slot named C): n_ga fills and "
                       "drains", source=NARAYANAN + ", §2.2"),
            *(Claim(_DP_GA[what], _S.n_ga * _DP_ONE[what],
                    name=f"the {what} runs once per schedule: n_ga times a step (p ≥ 2, a pipeline)",
                    source=frameworks.PIPELINING_GA, domain=_PIPELINE)
              for what in ("per-layer gradient reduce-scatter", "per-layer parameter all-gather"))))


# -- hybrid sharding (hsdp=1) ---------------------------------------------------------------------------------------
# FSDP2 on a (replicate, shard) mesh: the model sharded over d·c/d_r ranks, d_r times; the hybrid's own terms
_HSDP_TERMS = {x.what: x for x in subject("hybrid", framework="fsdp2", zero="3", embeddings="1", hsdp="1").terms
               if x.axis == "dp"}
_HSDP_SCATTER = _HSDP_TERMS["per-layer gradient reduce-scatter"]
_HSDP_REDUCE = _HSDP_TERMS["per-layer gradient all-reduce over the replicas"]

HSDP = Derivation(
    "Hybrid sharding: the shard group's reduce-scatter, then the replicas' all-reduce",
    (Step(_HSDP_SCATTER.message, "a unit's gradients (the busiest stage's shard over t, per unit), reduce-scattered over "
                                 "the d·c/d_r ranks of its shard group"),
     Step(_HSDP_REDUCE.message * _HSDP_SCATTER.group,
          "each of those ranks then all-reduces its 1/(d·c/d_r) of it over the d_r replicas")),
    "elements per unit and reduction, the busiest stage's",
    frameworks.HSDP_SOURCE, lhs="M",
    claims=(Claim(_HSDP_REDUCE.message * _HSDP_SCATTER.group, _HSDP_SCATTER.message,
                  name="the replicas all-reduce what the shard group reduce-scattered, a shard at a time",
                  source=frameworks.HSDP_SOURCE),
            Claim(_HSDP_REDUCE.count, _HSDP_SCATTER.count,
                  name="one all-reduce over the replicas after every reduce-scatter", source=frameworks.HSDP_SOURCE),
            Claim(_HSDP_SCATTER.group.subs(_S.d_r, 1), d * c,
                  name="with one replica (d_r = 1) the shard group is the d·c ranks of plain sharding",
                  source=frameworks.HSDP_SOURCE)))


# -- the micro-batch that hides the data-parallel reduce ----------------------------------------
# Megatron with --overlap-grad-reduce: the ring all-reduce of the stage's Φ/(t·p) gradients (β_g per
# element) runs behind the last micro-batch's backward, 2·(L/p)·f·B/(t·c·peak·η) for B sequences of
# f forward FLOPs per layer each
f_seq = flops.layer_forward(1, s).subs(GPT)
# the catalog's ring all-reduce over the d replicas, γ left out (the reduction runs at HBM speed beside it)
REDUCE = algorithm("all_reduce", "ring").cost.time.subs({N: d, M: 12 * L * h ** 2 / (t * p), gamma: 0})
BACKWARD_PER_SEQUENCE = 2 * (L / p) * f_seq / (t * c * peak * eta)
B_HIDDEN = REDUCE / BACKWARD_PER_SEQUENCE

HIDING = Derivation(
    "The micro-batch that hides the data-parallel gradient reduce",
    (Step(B_HIDDEN.subs(alpha, 0), "ring all-reduce of the stage's 12Lh²/(t·p) gradients over d replicas ÷ the "
                                   "backward time of one sequence on the stage"),
     Step(sp.factor(B_HIDDEN.subs(alpha, 0)), "t and p cancel: a wider tensor or pipeline split shrinks the "
                                               "gradient and the backward alike")),
    "sequences per micro-batch; transformer-layer parameters 12Lh² (GPT); β per gradient element; latency α "
    "left out (large buckets)",
    NARAYANAN + ", §3.3 (data and model parallelism: the data-parallel all-reduce); Megatron-LM --overlap-grad-reduce (whose last bucket of "
    "max(40M, 1M·d) parameters stays exposed beyond B*: megatron/core/distributed/distributed_data_parallel.py)",
    lhs="B*",
    claims=(Claim(sp.diff(B_HIDDEN.subs(alpha, 0), t), 0,
                  name="the micro-batch that hides the gradient all-reduce does not depend on t"),
            Claim(sp.diff(B_HIDDEN.subs(alpha, 0), p), 0,
                  name="nor on p"),
            Limit(B_HIDDEN.subs(alpha, 0) * s, (d - 1) / d * beta * c * peak * eta / 2, var=h,
                  name="for wide models the tokens per micro-batch that hide it tend to (d−1)/d · β·c·peak·η/2")))



# -- what hidden communication costs the compute beside it ---------------------------------------------------
# W seconds of compute, X ≤ W(1 + σ) seconds of a collective started with it; while the collective runs the compute
# runs σ slower (Lee et al. 2025): in X seconds it does X/(1 + σ) of its work, the rest alone after
W_C, X_C = sp.symbols("W X", positive=True)                 # compute alone, collective alone (seconds)
SIGMA = sp.Symbol("sigma", positive=True)                   # the compute's slowdown while they overlap
SLOWED = X_C + (W_C - X_C / (1 + SIGMA))

OVERLAP_SLOWDOWN = Derivation(
    "What hidden communication costs the compute it runs beside",
    (Step(SLOWED, "X seconds beside the collective do X/(1 + σ) of the compute's work; the rest runs alone"),
     Step(W_C + SIGMA / (1 + SIGMA) * X_C, "the compute's own W plus σ/(1 + σ) of the hidden collective")),
    "seconds; W the compute alone, X the collective alone, X/(1 + σ) ≤ W (the compute outlasts it; where the "
    "collective outlasts the compute the slowed compute partly hides behind the collective's tail and the model's "
    "term is an upper bound); σ = 0.189, the mean of the published measurements, every axis and collective alike",
    overlap.OVERLAP_SLOWDOWN_SOURCE, lhs="step",
    claims=(Limit(SLOWED, W_C, var=SIGMA, point=0, name="without contention a hidden collective costs nothing"),
            Claim(sp.diff(SLOWED, SIGMA), X_C / (1 + SIGMA) ** 2,
                  name="the cost grows with σ, at X/(1 + σ)² a unit of σ"),
            Claim(overlap.with_slowdown(sp.Integer(0), X_C) / X_C, sp.Rational(189, 1189),
                  name="the step model's with_slowdown of a collective that waits for nothing: at the published "
                       "mean σ = 18.9 % a hidden second costs 189/1189 s ≈ 0.159 s",
                  source=overlap.OVERLAP_SLOWDOWN_SOURCE)))

# -- FSDP2 / Megatron-FSDP: one collective per layer ------------------------------------------------------
# fully_shard on every transformer block (torchtitan apply_fsdp; Megatron-FSDP per module) runs L gathers of
# M/L where a whole-model unit runs one of M: the same elements, L times the messages
Lu = sp.Symbol("L_u", integer=True, positive=True)          # FSDP units (layers) of a stage
RING_AG = algorithm("all_gather", "ring").cost.time
RING_RS = algorithm("reduce_scatter", "ring").cost.time
FSDP_SOURCE = ("PyTorch torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py (one all-gather and one "
               "reduce-scatter per fully_shard'ed module); torchtitan torchtitan/models/llama3/infra/parallelize.py "
               "(apply_fsdp: each transformer block)")

FSDP_UNITS = Derivation(
    "Per-layer FSDP units: the same bytes, L times the latency",
    (Step(Lu * RING_AG.subs(M, M / Lu), "L_u ring all-gathers of M/L_u each (one per layer)"),
     Step(RING_AG + (Lu - 1) * (N - 1) * alpha, "one all-gather of M plus (L_u − 1)·(N − 1) more α")),
    "seconds; ring all-gather over N ranks of a stage's shard M, split in L_u equal units",
    FSDP_SOURCE, lhs="per-layer gathers",
    claims=(Claim(Lu * RING_RS.subs(M, M / Lu) - RING_RS, (Lu - 1) * (N - 1) * alpha,
                  name="per-layer reduce-scatters add (L_u − 1)·(N − 1)·α and nothing else", source=FSDP_SOURCE),))


# -- matmul efficiency as a function of the GEMM's shape -----------------------------------------
# a GEMM (M × K)·(K × N): 2MNK FLOPs, MK + KN + MN elements moved; the additive roofline (Williams et al.
# 2009) times it as FLOPs at the matmul rate plus a term per element moved, fitted as w_half
GM, GK, GN = sp.symbols("M_g K_g N_g", positive=True)
W = sp.Symbol("w", positive=True)                          # a GEMM's width MNK/(MK + KN + MN)
W_HALF = sp.Symbol("W", positive=True)                     # a positive w_half, where one is needed
ELEMENT_BYTES = sp.Symbol("bytes", positive=True)         # bytes per element of a GEMM's operands and product
GEMM = compute.Gemm("a GEMM", GM, GK, GN)
ROOFLINE = (GEMM.flops + 2 * w_half * GEMM.moved) / (peak * eta)
EFFICIENCY = compute.efficiency(W)
WILLIAMS = "Williams, Waterman & Patterson 2009, Roofline: an insightful visual performance model, CACM 52(4)"

GEMM_EFFICIENCY = Derivation(
    "Matmul efficiency of a GEMM's shape",
    (Step(ROOFLINE, "2MNK FLOPs at peak·η, and w_half FLOP-times per FLOP per element moved (both operands and "
                    "the product: MK + KN + MN)"),
     Step(GEMM.flops / (peak * compute.efficiency(GEMM.width)), "the FLOPs at peak × η·w/(w + w_half), with the "
                                                               "width w = MNK/(MK + KN + MN)")),
    "seconds per GEMM; η for bf16 (η_fp8 at peak_fp8 for an FP8 GEMM, the same form); w_half = 0: today's η",
    WILLIAMS + "; symcomm/training/compute.py", lhs="GEMM time",
    claims=(AtLeast(sp.diff(EFFICIENCY, W), 0, name="the matmul efficiency η·w/(w + w_half) does not fall as the "
                                                     "GEMM widens"),
            Limit(EFFICIENCY, eta, var=W, name="for wide GEMMs it tends to η, the fitted large-shape share"),
            Claim(EFFICIENCY.subs(w_half, W_HALF).subs(W, W_HALF), eta / 2,
                  name="at w = w_half it is half of η"),
            Claim(EFFICIENCY.subs(w_half, 0), eta, name="with w_half = 0 every GEMM runs at η (today's model)"),
            Claim(ROOFLINE.subs({eta: 1, w_half: peak * ELEMENT_BYTES / (2 * hbm)}),
                  GEMM.flops / peak + ELEMENT_BYTES * GEMM.moved / hbm,
                  name="at η = 1 and w_half = peak·bytes/(2·B_hbm) it is the additive roofline: the FLOPs at peak plus "
                       "the operands' and product's bytes at the HBM bandwidth (the roofline value of w_half: 295 on "
                       "H100 SXM in bf16, 989.4 TFLOP/s and 3.35 TB/s; the same in FP8, twice the rate on half the "
                       "bytes; a preset borrowing another's fitted constants takes its own, 206 on H200 at 4.8 TB/s)",
                  source=WILLIAMS)))

# the routed experts' GEMMs: Megatron-Core runs a rank's local experts as one grouped GEMM (TEGroupedMLP, Transformer
# Engine's GroupedLinear split by tokens_per_expert: NVIDIA/Megatron-LM megatron/core/transformer/moe/experts.py,
# commit d98e8a64), each expert's M its own few hundred routed tokens; their width curve has its own half-width
# (the presets hold it at w_half, the dense GEMMs' roofline curve: derivations/fit_step_time.py; calibrate-step may fit it)
EXPERT_GEMM = compute.Gemm("an expert's GEMM", GM, GK, GN, grouped=True)
GROUPED = (EXPERT_GEMM.flops + 2 * EXPERT_GEMM.half_width * EXPERT_GEMM.moved) / (peak * eta)
MEGATRON_GROUPED = "NVIDIA/Megatron-LM megatron/core/transformer/moe/experts.py (TEGroupedMLP), commit d98e8a64"

GROUPED_GEMM = Derivation(
    "The experts' grouped GEMMs on their own width curve",
    (Step(GROUPED, "an expert's GEMM (M tokens routed to it × K)·(K × N): 2MNK FLOPs at peak·η and w_half_expert "
                   "FLOP-times per FLOP per element moved"),),
    "seconds per expert GEMM (η_fp8 at peak_fp8 under an FP8 recipe); absent w_half_expert: w_half",
    MEGATRON_GROUPED + "; symcomm/training/compute.py", lhs="expert GEMM time",
    claims=(Claim(GROUPED.subs(_S.w_half_expert, w_half), ROOFLINE,
                  name="with w_half_expert = w_half an expert's GEMM is timed as a dense GEMM of its shape (the "
                       "model before it)"),
            AtLeast(sp.diff(GROUPED, _S.w_half_expert), 0, name="a larger w_half_expert never makes it faster"),
            Claim(sp.diff(compute.micro_batch_compute(RunSetting(embeddings=True, gated=True, recompute="full",
                                                                 sp=True)).total, _S.w_half_expert), 0,
                  name="a dense model's compute does not depend on w_half_expert")))


def _gemms_forward(gated: bool, moe: bool) -> sp.Expr:
    """FLOPs of one layer's GEMMs on one of its t GPUs (compute.layer_gemms) and its share of the attention
    core (a/t heads), for one sequence of s tokens."""
    return sum(g.flops for g in compute.layer_gemms(s, gated, moe)) + flops.attention_core(1, s) / t


def _micro(run: RunSetting) -> sp.Expr:
    """One micro-batch's compute (forward + backward) on the last stage, per GPU."""
    return compute.micro_batch_compute(run).total


# today's model (before the GEMM widths), written out for a gated run with the LM head under full recompute:
# (3 × forward + the recomputed layers) / (peak·η) + κ HBM passes over 4/3 of the stored activations
_FULL = RunSetting(embeddings=True, gated=True, recompute="full", sp=True)
_MB = sp.Symbol("b", integer=True, positive=True) / (d * m)
_FWD = compute.stage_forward_flops(_MB, True, False, L / p, True) / (t * c)
_AGAIN = _FWD - flops.lm_head_forward(_MB, s) / (t * c)
_TOUCHED = activation_bytes(recompute="none", flash=True, sp_on=True) * (L / p) * sp.Rational(4, 3)
_CORE = (L / p) * flops.attention_core(_MB, s) / (t * c)     # the stage's attention core as the papers count it
# flash attention (the default) runs the causal half of it (FlashAttention-2, Dao 2023, §3.1.1)
TODAY_FULL = (3 * (_FWD - _CORE / 2) + (_AGAIN - _CORE / 2)) / (peak * eta) + kappa * _TOUCHED / hbm
# flash attention's backward recomputes the scores: five s × s GEMMs to the forward's two (FlashAttention-2,
# Algorithm 2), half a forward core more than the papers' 2 × forward
FLASH_EXTRA = (_CORE / 2) / 2 / (peak * eta)
# Megatron's memory-bound work beside the GEMMs, counted by hand: the unfused vocab-parallel cross-entropy over the
# micro-batch's (b/(d·m))·s/c × V/t logits, 38 + 14 bytes per logit (megatron/core/tensor_parallel/cross_entropy.py
# at NVIDIA/Megatron-LM f2e5db402c: .float() 2 + 4, max 4, subtract 4 + 4, exp 4 + 4, sum 4, div_ 4 + 4; mul_ 4 + 4,
# the cast back 4 + 2), and the weight gradients accumulated into the fp32 buffer in place, 4 + 4 − 2 = 6 bytes per
# weight element: a gated layer's QKV h·(h + 2h_kv), output h·h, FC1 h·2F, FC2 F·h over t, and the head's h·V/t
MEGATRON_LOSS = 52 * _MB * s / c * V / t / hbm
MEGATRON_WGRAD = 6 * ((L / p) * (h * (h + 2 * h_kv) + h * h + 3 * F * h) + h * V) / t / hbm
_FP8 = RunSetting(embeddings=True, gated=True, recompute="full", sp=True, precision="fp8_tensor")
_X, _W8, _DY = compute.cast_bytes(compute.stage_gemms(_MB * s / c, True, False, L / p, True), "fp8_tensor")
# torchao's recipe runs under torchtitan's framework (megatron_features.TE_PRECISIONS), compiled, against its bf16 run
_ROWWISE, _TORCHTITAN_BF16 = (RunSetting(framework="fsdp2", zero=3, compile=True, embeddings=True, gated=True,
                                         recompute="full", sp=True, precision=precision)
                              for precision in ("fp8_rowwise", "bf16"))
_NVFP4 = RunSetting(embeddings=True, gated=True, recompute="full", sp=True, precision="nvfp4")
# the FP8 GEMMs' elements, counted from the layer's GEMM list (each linear's input X: M × K, weight W: K × N, output
# gradient dY: M × N), for torchao's rowwise recipe by its own roofline (compute.ROWWISE): X 5 bytes per element in
# the forward (again under full recompute) and 3 + 4 (its second cast, the rescale of dX) in the backward; W 3 + 7
# + 4 in every micro-batch; dY 5 + 3
# torchtitan eager (compile=0) against compiled, a gated sequence-parallel block under full recompute: two RMSNorms
# over h on T/t tokens at 32 bytes per element more, rotary over (h + h_kv)/t at 16 more, SwiGLU over F/t at 4 more
# (compute.EAGER_NORM, its sources), forward once, backward twice and the recompute once: 4 times the forward's
_EAGER, _COMPILED = (RunSetting(framework="fsdp2", zero=3, gated=True, recompute="full", sp=True, compile=flag)
                     for flag in (False, True))
_T = _MB * s / c
EAGER_EXTRA = 4 * (L / p) * (2 * 32 * h * _T / t + _T * (16 * (h + h_kv) / t + 4 * F / t)) / hbm
_LINEARS = [(g, n) for g, n in compute.stage_gemms(_MB * s / c, True, False, L / p, True) if g.fp8]
# NVFP4's bytes per element of a cast, by hand: amax 2 + read 2 + two copies of (1/2 + 1/16), weights 1/256 per scale
NVFP4_ACT = 2 + 2 + 2 * (sp.Rational(1, 2) + sp.Rational(1, 16))
NVFP4_WEIGHT = 2 + 2 + 2 * (sp.Rational(1, 2) + sp.Rational(1, 256))
_X_EL, _W_EL, _DY_EL = (sum(n * g.count * f(g) for g, n in _LINEARS) for f in (
    lambda g: g.rows * g.inner, lambda g: g.inner * g.cols, lambda g: g.rows * g.cols))

GEMM_CLASSES = Derivation(
    "A layer's GEMMs, one by one",
    (Step(_gemms_forward(True, False), "QKV (h → h + 2h_kv), output (h → h), FC1 (h → 2F, gate and up fused), "
                                       "FC2 (F → h), and the attention core, for s tokens on one GPU"),
     Step(flops.layer_forward(1, s, gated=True) / t, "the layer's forward FLOPs as the papers count them, over t")),
    "FLOPs, forward, one sequence, per GPU of the t tensor-parallel ones",
    NARAYANAN + ", Appendix; Megatron-Core linear_qkv and linear_fc1 (fused GEMMs)", lhs="layer forward",
    claims=(Claim(_gemms_forward(True, True), flops.moe_layer_forward(1, s, gated=True) / t,
                  name="an MoE layer's grouped expert GEMMs (E/e experts of s·k·e/E tokens each) and E_s shared "
                       "ones add up to its forward FLOPs"),
            Claim(_gemms_forward(False, False), flops.layer_forward(1, s, gated=False) / t,
                  name="so do a plain MLP layer's"),
            Claim(_put(_micro(_FULL), {w_half: 0, eta_attn: eta}), TODAY_FULL + FLASH_EXTRA + MEGATRON_LOSS
                  + MEGATRON_WGRAD,
                  name="with w_half = 0 and η_attn = η the micro-batch's compute is the shape-independent model's: "
                       "hardware FLOPs with the causal half of the attention core (flash attention) / (peak·η), the "
                       "core's backward 5/2 of its forward, plus κ passes over the activations, plus Megatron's "
                       "cross-entropy passes (52 bytes per logit) and its weight gradients accumulated in place "
                       "(6 bytes per weight element)"),
            Claim(_put(_micro(_FP8), {peak_fp8: peak, eta_fp8: eta}) - _micro(_FULL), (2 * _X + _W8 + _DY) / hbm,
                  name="an FP8 run at the bf16 rate differs from the bf16 run by its casts alone (X twice under "
                       "full recompute, the weights, the output gradients): the matmuls split into bf16 and FP8 "
                       "parts that add up"),
            Claim(_put(_micro(_NVFP4), {_S.peak_fp4: peak, _S.eta_fp4: eta}) - _micro(_FULL),
                  (2 * _X_EL * NVFP4_ACT + _W_EL * NVFP4_WEIGHT / m + _DY_EL * NVFP4_ACT) / hbm,
                  name="an NVFP4 run at the bf16 rate differs from the bf16 run by its casts alone, by hand from "
                       "Transformer Engine's NVFP4 page and quantizer (docs/features/low_precision_training/nvfp4, "
                       "csrc/quantizer.cpp at d0067d0d): the amax read 2, the cast's read 2, two E2M1 copies of "
                       "half a byte with one E4M3 scale per 16 elements (activations, gradients: 41/8 bytes per "
                       "element) or per 16 × 16 block (weights, once per step: 641/128)"),
            Claim(_put(_micro(_ROWWISE), {peak_fp8: peak, eta_fp8: eta}) - _micro(_TORCHTITAN_BF16),
                  ((2 * 5 + 3 + 4) * _X_EL + (2 * 3 + 7 + 4) * _W_EL + (5 + 3) * _DY_EL)
                  / (hbm * compute.ROWWISE_CAST_SHARE),
                  name="torchao float8 rowwise (torchtitan, compiled) at the bf16 rate differs from its bf16 run by "
                       "what torchao's roofline counts for its casts (X 5 bytes per element forward, twice under full "
                       "recompute, and 3 backward; W 3 forward, again in the recompute's forward (torchao casts the "
                       "weight at every forward call: float8_linear.py forward_fp8_matmul), and 7 in every "
                       "micro-batch's backward; dY 5 + 3) and the backward's rescale of dX and dW (2 + 2 bytes per "
                       "element: torchao float8_ops.py addmm_float8_unwrapped), at the share of the HBM bandwidth "
                       f"torchao's own table shows them reaching ({float(compute.ROWWISE_CAST_SHARE):g}, the table below)"),
            Claim(_micro(_EAGER) - _micro(_COMPILED), EAGER_EXTRA,
                  name="torchtitan eager (compile=0) differs from compiled by its unfused memory-bound ops alone: "
                       "RMSNorm 36 bytes per element against 4, rotary 20 against 4, SwiGLU 10 against 6, the "
                       "forward once, the backward twice and a full recompute once more")))


# -- the published runs ------------------------------------------------------------------------

def run_rows() -> list[dict]:
    """One row per published run: the layout, published and predicted step time, the error (each run predicted
    once in a process: the chapter's table and the docs' plot read the same rows; the caller gets its own copies)."""
    return [dict(row) for row in _run_rows()]


@functools.lru_cache(maxsize=1)
def _run_rows() -> tuple:
    rows = []
    for run in published.runs():
        if not published.has_step_time(run):      # TFLOP/s with no stated FLOP count (OPT, GPT-NeoX-20B)
            continue
        q = published.predict(run)
        predicted, measured = float(q["step_time"]), published.measured_step_time(run)
        rows.append({"id": run["id"], "where": run["where"], "role": run["role"], "hardware": run["hardware"],
                     "gpus": run["gpus"], "layout": f"t={run['t']} p={run['p']} d={run['d']} c={run['c']} "
                                                   f"v={run['v']} mb={run['micro_batch']}",
                     "settings": f"{run['recompute']}" + (" + SP" if run["sp"] else ""),
                     "published": measured, "predicted": predicted, "error": predicted / measured - 1,
                     "mfu": float(q["mfu"]), "bubble": float(q["bubble_time"]) / predicted})
    return tuple(rows)


def _percent(x: float) -> str:
    return f"{100 * x:+.1f} %"


def _runs_table(rows) -> Table:
    body = tuple((r["id"], r["hardware"], r["gpus"], r["layout"], r["settings"], f"{r['published']:.3f}",
                  f"{r['predicted']:.3f}", _percent(r["error"]), r["role"]) for r in rows)
    def stats(chosen):
        e = np.array([abs(r["error"]) for r in chosen])
        return f"mean |error| {100 * e.mean():.1f} %, max {100 * e.max():.1f} % over {len(e)} runs" if len(e) else "none"

    systems = sorted({r["hardware"] for r in rows})
    summary = "; ".join(
        f"{system}: fitting runs {stats([r for r in rows if r['hardware'] == system and r['role'] == 'fit'])}, "
        f"check runs {stats([r for r in rows if r['hardware'] == system and r['role'] == 'check'])}"
        for system in systems)
    return Table(
        "Step time: predicted against published",
        ("run", "hardware", "GPUs", "layout", "recompute", "published (s)", "predicted (s)", "error", "role"),
        body,
        caption=("Seconds per iteration. Published: Korthikanti et al.'s Table 5 times as printed; Narayanan et "
                 "al.'s Table 1 and Llama 3's Table 4 through their TFLOP/s per GPU (the iteration's FLOPs, eq. (3) "
                 "for Narayanan et al., symcomm's model FLOPs for Llama 3, over the FLOP/s of all GPUs); check rows: "
                 "BLOOM's logged time, MT-NLG's printed times, the Megatron-LM README's TFLOP/s through eq. (3) "
                 "(OPT and GPT-NeoX-20B print TFLOP/s with no FLOP count and have no row). "
                 + summary + ". Role 'fit': the run fitted its system's constants; 'check': never fitted to, "
                 "shown as the model predicts it."),
        source=NARAYANAN + ", Table 1; " + KORTHIKANTI + ", Tables 3 and 5; Dubey et al. 2024, The Llama 3 Herd "
               "of Models, Table 4")


def _results() -> dict:
    """The committed fit's results (derivations/data/step_fit.json, written by python -m
    symcomm.derivations.fit_step_time --write): the docs read them rather than refit (a fit takes minutes)."""
    import json
    from importlib import resources

    return json.loads(resources.files(__package__).joinpath("data", "step_fit.json").read_text(encoding="utf-8"))


def _attention_cell(found: dict, constants: dict) -> str:
    """eta_attn's cell: its value where fitted, held (and why: "held"), or "— (= eta)" where no run fitted on
    depends on it and the preset reads it as eta (symcomm.presets.systems.absent_filled)."""
    if "eta_attn" in found.get("fitted", []):
        return f"{constants['eta_attn']:g}"
    if "eta_attn" in found.get("held", {}) and "eta_attn" in constants:
        return f"{constants['eta_attn']:g} (held)"
    return "— (= eta)"


def _fp4_determined_by(fitted: dict) -> str:
    """Where eta_fp4 is fitted, the runs that alone determine it (the NVFP4 ones) with their in-sample and
    leave-one-out errors: few runs, said as such."""
    out = []
    for system in sorted(fitted):
        if "eta_fp4" not in fitted[system].get("fitted", []):
            continue
        runs = [r for r in fitted[system].get("runs", []) if "nvfp4" in r["id"]]
        errors = ", ".join(f"{r['id']} {_percent(r['error'])} (leave-one-out {_percent(r['loo_error'])})"
                           for r in runs)
        out.append(f"{system}'s determined by its {len(runs)} NVFP4 runs alone: {errors}")
    return f"; {'; '.join(out)}" if out else ""


def _held_cell(name: str, constants: dict, fitted: dict) -> str:
    """A constant's cell: its value, "(held)" where the fit held it, "—" where the preset leaves it out."""
    if name not in constants:
        return "—"
    return f"{constants[name]:g}" + (" (held)" if name in fitted.get("held", {}) else "")


def _constants_table() -> Table:
    rows = []
    fitted = _results()["systems"]
    for system in sorted(fitted):
        hw = hardware(system)
        constants = dict(hw.step_time)
        runs = len(fitted[system].get("runs", []))
        # eta held where the runs leave it undetermined (fit_step_time.transferred_eta) is said, as eta_attn's hold is
        held_eta = " (held)" if "eta" in fitted[system].get("held", {}) else ""
        rows.append((system, f"{hw.peak('bf16') / 1e12:g}", f"{constants['eta']:g}{held_eta}",
                     f"{constants['eta_fp8']:g}" if "eta_fp8" in constants else "—",
                     _held_cell("eta_fp4", constants, fitted[system]), f"{constants.get('w_half', 0):g}",
                     f"{constants['kappa']:g}",
                     _held_cell("kappa_moe", constants, fitted[system]),
                     _attention_cell(fitted[system], constants), runs or "not refitted"))
    return Table("Fitted constants", ("hardware", "peak bf16 (TFLOP/s)", "eta", "eta_fp8", "eta_fp4", "w_half",
                                      "kappa", "kappa_moe", "eta_attn", "runs fitted on"),
                 tuple(rows),
                 caption=("eta: the share of the datasheet bf16 peak the bf16 matmuls reach at large shapes; eta_fp8: "
                          "the same for FP8 matmuls at the FP8 peak (— : no FP8 run fitted, precision=fp8_* refused); "
                          "eta_fp4: for NVFP4 matmuls at the FP4 peak (— : no NVFP4 run fitted, precision=nvfp4 "
                          f"refused; held: one run alone reads it, so not fitted but carried over as the part's fitted eta_fp8 "
                          f"times another part's fitted eta_fp4 over eta_fp8, derivations/fit_step_time.py "
                          f"transferred_eta_fp4){_fp4_determined_by(fitted)}; "
                          "w_half: the GEMM width at which a matmul reaches half that share (0: shape-independent); "
                          "kappa: HBM passes over each activation byte by the memory-bound kernels; kappa_moe: HBM-pass "
                          "equivalents over each routed token copy of an MoE layer, what it does around its experts' "
                          "GEMMs, which run on the dense GEMMs' curve (w_half_expert held at w_half) (— : no MoE run "
                          "fitted, read as 0 and said; held: a free fit ends at its range's edge); eta_attn: the share "
                          "of the bf16 peak the flash-attention core reaches (— : left out, read as eta: no run fitted depends on "
                          "it, or a free fit ends at its range's edge). Fitted by python -m "
                          "symcomm.derivations.fit_step_time (the fitting core of symcomm calibrate-step: least mean "
                          "|relative error| of the step time); a constant the runs leave at its range's edge is held "
                          "and said, as is one held at a published figure (w_half: the roofline; eta on h100, b200 and "
                          "gb200, whose runs leave it undetermined: the part's maximum achievable bf16 matmul times the "
                          "share of it the A100 runs' fitted eta sustains, one table of measured maxima for all four; "
                          "eta_attn: a fused-attention benchmark) "
                          "(derivations/data/step_fit.json, 'held'). Presets without runs of their own "
                          "borrow another's constants (symcomm/presets/hardware.json)."),
                 source="symcomm/presets/hardware.json; derivations/data/step_fit.json")


def _spans_table() -> Table:
    """Per hardware preset and fitted constant: its value and span, the values its fitting runs fit as well at
    (symcomm.measurement.step_fit.spans, calibrate-step's rule): what the runs determine of it."""
    rows = []
    fitted = _results()["systems"]
    for system in sorted(fitted):
        spans = fitted[system].get("spans", {})
        for name in fitted[system].get("fitted", []):
            if name in spans:
                low, high = spans[name]
                rows.append((system, name, f"{fitted[system]['constants'][name]:g}", f"{low:g} to {high:g}",
                             len(fitted[system].get("runs", []))))
    return Table("What the fitting runs determine", ("hardware", "constant", "fitted", "as good from", "runs"),
                 tuple(rows),
                 caption=("each fitted constant's span: the values at which its preset's fitting runs fit as well as at "
                          "the fit (mean |error| within 0.5 points of the fit's, the other fitted constants refitted "
                          "at each value; symcomm.measurement.step_fit.spans, the rule symcomm calibrate-step applies "
                          "to a team's own runs). A narrow span: the runs determine the constant; a wide one: they "
                          "leave it free, and the fitted value is one point of it, traded against the others (the "
                          "held constants are in the table above)."),
                 source="derivations/data/step_fit.json (spans), written by python -m "
                        "symcomm.derivations.fit_step_time --write")


def _coverage_table() -> Table:
    """Per hardware preset with step-time constants (its own or borrowed): the frameworks its fitted runs ran, those
    its check runs ran, those no run measured, and the constants read as another's: what eval and plan say first
    ("checked on no published run", presets.Hardware.unchecked), one table."""
    from symcomm.presets import hardware_names
    from symcomm.presets.systems import STEP_TIME_ABSENT_AS, STEP_TIME_ABSENT_UNMEASURED, absent_as
    from symcomm.training.settings import OPTIONS

    frameworks = OPTIONS["framework"].allowed
    rows = []
    for name in hardware_names():
        hw = hardware(name)
        if not hw.step_time or not hw.step_errors:
            continue
        checked = ", ".join(f"{framework} ({runs})" for framework, _, _, _, runs, _ in hw.step_checks) or "—"
        rows.append((name, hw.step_errors_of, ", ".join(hw.step_frameworks) or "not recorded", checked,
                     ", ".join(hw.frameworks_unmeasured(frameworks)) or "—",
                     ", ".join(f"{n} as {absent_as(n)}" for n in hw.constants_taken_as_another(
                         (*STEP_TIME_ABSENT_AS, *STEP_TIME_ABSENT_UNMEASURED))) or "—"))
    return Table("What the constants were measured on", ("hardware", "constants of", "frameworks fitted",
                                                          "frameworks checked (runs)", "frameworks on no run",
                                                          "constants taken as another's"), tuple(rows),
                 caption=("Per hardware preset whose step time has fitted constants (its own, or another's it borrows): "
                          "the framework options (eval's framework=) of the runs those constants were fitted on, of the "
                          "check runs predicted with them (with their count), the framework options no run measured, "
                          "and the constants the fit left out, read as another's value when a setting needs them "
                          "(eta_attn, the flash-attention core's share, as the matmuls' eta where no fitted run ran "
                          "flash attention and no kernel benchmark gives it; w_half_expert, the grouped expert GEMMs' "
                          "half width, as the dense one's, and kappa_moe, the passes over the routed token copies, "
                          "as 0, where no fitted run was a MoE). eval hybrid and plan say these "
                          "first, beside the fit's error, when a setting reads them ('checked on no published run')."),
                 source="symcomm/presets/hardware.json (step_time: frameworks, checks); symcomm/presets/systems.py "
                        "(Hardware.unchecked)")


def _model_errors_table() -> Table:
    """Per fitted preset's constants, per model preset and framework option: the errors on that model's own
    published runs (hardware.json step_time.models, the fit script's), what eval and plan add to their off-by line
    when the model is asked for."""
    from symcomm.presets import hardware_names

    rows = []
    for name in hardware_names():
        hw = hardware(name)
        if hw.step_errors_of != name:
            continue        # a preset borrowing another's constants shows that one's rows
        for model, framework, low, high, signed, runs, fitted, on in hw.step_models:
            rows.append((name, model, framework, f"{runs} ({fitted})", _percent(low), _percent(high), _percent(signed),
                         ", ".join(on)))
    return Table("The constants on each model's own runs", ("constants of", "model", "framework", "runs (fitted)",
                                                            "lowest", "highest", "signed mean", "ran on"), tuple(rows),
                 caption=("Per hardware preset's constants, per model preset (eval's --model) and framework option: "
                          "the relative error (predicted / measured - 1; -: predicted too fast) on that model's own "
                          "published runs, the fitted ones each at its leave-one-out error (predicted by the constants "
                          "fitted without it), the others at their check error; runs of a model typed by its shape "
                          "are not counted. eval hybrid and plan add the row of the model and framework asked for to "
                          "their off-by line, after the fit's error and the framework's checks."),
                 source="symcomm/presets/hardware.json (step_time.models), written by python -m "
                        "symcomm.derivations.fit_step_time; symcomm/presets/systems.py (Hardware.step_time_error)")


def _cells(inside: dict, out: dict) -> tuple:
    return (inside["runs"], f"{100 * inside['mean']:.1f} %", f"{100 * inside['max']:.1f} %",
            _percent(inside["signed_mean"]), f"{100 * out['mean']:.1f} %", f"{100 * out['max']:.1f} %",
            _percent(out["signed_mean"]))


def _fit_errors_table() -> Table:
    """Every fitted set's in-sample and leave-one-out error, per hardware preset, per source and per framework
    (the fit script's own numbers, stored by its --write)."""
    rows = []
    for system, found in sorted(_results()["systems"].items()):
        if "not_refitted" in found:
            rows.append((system, "not refitted: " + found["not_refitted"].split(" (")[0], "", "", "", "", "", "", ""))
            continue
        rows.append((system, "all runs", *_cells(found["in_sample"], found["leave_one_out"])))
        for label, errors in found["groups"].items():
            rows.append((system, label, *_cells(errors["in_sample"], errors["leave_one_out"])))
    return Table("Fit errors in sample and left one out",
                 ("hardware", "runs grouped", "runs", "mean", "max", "signed mean", "LOO mean", "LOO max",
                  "LOO signed mean"), tuple(rows),
                 caption=("Relative error of the predicted step time (predicted / published − 1; positive: the model "
                          "is slower) over the runs marked 'fit', with the fitted constants (in sample), and with the "
                          "constants fitted without that run (leave-one-out, LOO: what to expect of a run not fitted "
                          "on). Fitted by python -m symcomm.derivations.fit_step_time through the fitting core "
                          "symcomm calibrate-step runs on a user's own runs (symcomm/measurement/step_fit.py); a set "
                          "with fewer runs than fitted constants + 2 is not refitted. The same layout measured in "
                          "two releases counts once, at the median of its times."),
                 source="derivations/fit_step_time.py; symcomm/measurement/step_fit.py; derivations/data/step_fit.json")


def _summary(errors) -> str:
    """mean |error|, max |error| and signed mean of ``errors`` (ratios), as the tables' captions say them."""
    return Errors.of(errors).sentence() if len(errors) else "no run"


def _open_words(opened: dict | None) -> str:
    """A check row's errors at each micro-batch size its source leaves open (fit_step_time.open_micro_batches)."""
    if not opened:
        return ""
    return " (micro-batch " + ", ".join(f"{size}: " + ("does not fit" if e is None else _percent(e))
                                       for size, e in opened.items()) + ")"


def _check_table() -> Table:
    """The modern runs never fitted on (role 'check'), predicted with the fitted constants (or, on a preset with no
    runs of its own, those it borrows): the rows python -m symcomm.derivations.fit_step_time stored."""
    rows, errors, at_low, borrowed = [], [], [], []
    for system, found in sorted(_results()["checks"].items()):
        if found["constants_from"] != system and found["runs"]:
            borrowed.append(f"{system} with {found['constants_from']}'s: "
                            + _summary([r["error"] for r in found["runs"]]))
        for r in found["runs"]:
            low = r.get("error_low_peak")      # a GPU whose peak is only bounded: the error at both ends
            rows.append((r["id"], system, r["framework"], f"{r['measured_s']:.3f}",
                         f"{r['predicted_s']:.3f}" + (f" to {r['predicted_low_peak_s']:.3f}" if low is not None else ""),
                         _percent(r["error"]) + (f" to {_percent(low)}" if low is not None else "")
                         + _open_words(r.get("micro_batch_open"))))
            errors.append(r["error"])
            at_low.append(r["error"] if low is None else low)
    return Table("Check runs, never fitted on", ("run", "hardware", "framework", "published (s)",
                                                  "predicted (s)", "error"), tuple(rows),
                 caption=("Runs from releases and frameworks not named for fitting (Megatron-Bridge 26.06 and 26.06.01, "
                          "torchtitan's H100 benchmarks and the Trainy/WhiteFiber H200 runs of torchtitan's benchmarks, "
                          "Megatron-LM's H100 weak-scaling table (README.md at f2e5db402c: its step times derived from the "
                          "printed TFLOP/s per GPU through Megatron-LM's own FLOP count), NeMo 24.07's DGX-H100 FP8 "
                          "table (docs/source/performance/performance_summary.md at 8e3d65dc, each model's other settings "
                          "from NeMo-Framework-Launcher's 24.07 YAML), LLM Foundry's MPT tables (Composer with PyTorch "
                          "FSDP on A100 and H100, 2023-24: scripts/train/benchmarking/README.md at 49521837, each "
                          "row's settings from the sweep that ran it: mosaicml/examples at 9fa3ceb9 for the 2023-05 "
                          "rows, llm-foundry at b2a43a14 and 5e85bd62 for the later ones), NVIDIA's DGX Cloud benchmarking "
                          "recipes (dgxc-benchmarking v25.01: Llama 3.1 8B, 70B, 405B on NeMo 24.09 and Nemotron-4 15B, "
                          "340B on NeMo 24.11, H100, 8 to 2,304 GPUs, each recipe's YAML and configure.sh at "
                          "143b90dd; v25.05.04: Llama 3.1 405B, Nemotron-4 15B and 340B and DeepSeek-V3 on H100 and "
                          "GB200 and Nemotron-H 56B, Grok-1 314B and Llama 4 Maverick typed by their shapes, each recipe's "
                          "launch script and the NeMo performance scripts at the commit its setup.sh checks out, "
                          "1f6d9f40); NeMo AutoModel's DGX-H100 BF16 table (PyTorch FSDP2 with Transformer Engine "
                          "and DeepEP: docs/performance-summary.md, Llama 3.1 70B as at 2013a4dd6, DeepSeek-V3 and "
                          "Qwen3-30B-A3B as at 8d9bfb90e, each row's recipe under examples/ at that commit; its fake "
                          "balanced gate typed as the group-limited routing it is); KempnerForge's H200 weak-scaling "
                          "and MFU-scaling tables (PyTorch FSDP2 with DTensor tensor parallelism in 4-GPU nodes: "
                          "benchmarks/weak_scaling_160gpu/README.md run at 3ad9d9a, benchmarks/mfu_scaling/"
                          "mfu_scaling.md run at 01b461a, each row typed from the code at its commit); the Megatron "
                          "MoE Model Zoo's H100 figures (Megatron-Core: its Qwen3-235B-A22B table, step times as printed, "
                          "examples/qwen3/readme.md at 8017e112; Mixtral 8x22B's TFLOP/s in the comments of "
                          "best_practice/Mixtral/run_mixtral_8x22B.sh at b09773a8, Qwen3-235B-A22B's long-context table in "
                          "best_practice/Qwen3/readme.md at b0b92ff3 and its 'H100 config' in best_practice/qwen3/"
                          "run_h100_235b.sh at 1ed4179f, step times derived through Megatron-LM's own FLOP count; each "
                          "row's flags from the yaml and scripts at that commit); Megatron-LM's functional-test "
                          "golden values (Megatron-Core: gpt3_7b_tp4_pp1_memory_speed on one DGX H100 and one DGX A100, "
                          "tests/functional_tests/test_cases at 6e091e1b and 2795ebde, the step time the median of the "
                          "steady iterations' printed iteration-time); "
                          "the papers' check runs are also in the table above), each as its symcomm eval hybrid words "
                          "(derivations/modern.py) with its hardware's fitted constants: " + _summary(errors)
                          + " with the bounded peaks at their high end; at their low end " + _summary(at_low)
                          + (". A preset without runs of its own borrows another's constants (its GEMM widths w_half, "
                             "w_half_expert its own datasheet's roofline): " + "; ".join(borrowed)
                             if borrowed else "")
                          + ". torchtitan's H100s are Grand Teton parts (preset h100-gt: 96 GB HBM2e at 2.4 TB/s, "
                          "500 W), whose dense peak no datasheet gives: the source bounds it between H100 NVL and SXM "
                          "(its footnote 2), so each such run is predicted at both ends, the SXM end first "
                          "(the run's typed peak=, peak_fp8=), and its error is a range. Megatron-LM's H100 table prints "
                          "no micro-batch size: each of its runs is typed at 1 and predicted at every size its source "
                          "leaves open (micro_batch_open: those that divide the sequences a replica takes, where the "
                          "model counts them within the GPU's memory), the errors in brackets; the summaries count the "
                          "typed size. " + _foundry_by_sequence()),
                 source="derivations/data/bridge_runs_26.json; derivations/data/torchtitan_runs.json; "
                        "derivations/data/megatron_lm_runs.json; derivations/data/nemo_runs.json; "
                        "derivations/data/llm_foundry_runs.json; derivations/data/dgxc_runs.json; "
                        "derivations/data/dgxc_25_05_runs.json; derivations/data/automodel_runs.json; "
                        "derivations/data/kempnerforge_runs.json; derivations/data/kempnerforge_mfu_runs.json; "
                        "derivations/data/modelzoo_runs.json; derivations/data/megatron_lm_tests_runs.json; "
                        "derivations/data/step_fit.json")


def _foundry_by_sequence() -> str:
    """LLM Foundry's check rows by sequence length (their tables sweep it from 512 to 65,536 tokens at one model and
    layout): the errors of the short and of the long sequences, per hardware preset, as a sentence."""
    from . import modern

    seq = {r["id"]: r["seq"] for r in modern.runs("check") if r["id"].startswith("llm-foundry")}
    parts, drift = [], []
    for system, found in sorted(_results()["checks"].items()):
        rows = [(seq[r["id"]], r["error"]) for r in found["runs"] if r["id"] in seq]
        if rows:
            short = [e for s, e in rows if s <= 2048]
            long = [e for s, e in rows if s >= 16384]
            parts.append(f"{system}: at 2,048 tokens or fewer {_summary(short)}; at 16,384 or more {_summary(long)}")
            drift.append(sum(long) / len(long) - sum(short) / len(short))
    if not parts:
        return ""
    # the direction the rows say, read from them: which way the core's time is off where it dominates
    faster = all(x > 0 for x in drift)
    slower = all(x < 0 for x in drift)
    reading = ("the long rows ran the core faster than that share prices it" if faster else
               "the long rows ran the core slower than that share prices it" if slower else
               "the rows do not say one way the core's share is off")
    return ("LLM Foundry's rows by sequence length (" + "; ".join(parts) + "). Per token, a layer's matmuls and "
            "memory-bound kernels do the same work at every length while its attention core's work grows with the "
            "length, so the long rows measure the core. It runs at MPT's kernel's published share (attention_kernel="
            f"triton, FlashAttention's Triton port: A100 {_SHARES['a100']['triton']:.3f}; H100 "
            f"{_SHARES['h100']['triton']:.3f}, transferred "
            "from the A100 chart, no chart times it on H100; FlashAttention-2 where the table's sweep says flash), "
            "read at 8,192 tokens and head "
            "dimension 128; the error moves with the length as the signed means show: " + reading + ". None of "
            "these rows is fitted on.")


def _check_sources_table() -> Table:
    """The check runs' errors per source and hardware preset (the rows python -m symcomm.derivations.fit_step_time
    stored): one table of recipes can be off together where a run-by-run list hides it."""
    grouped: dict = {}
    for system, found in sorted(_results()["checks"].items()):
        for r in found["runs"]:
            grouped.setdefault((r["source"], system), []).append(r["error"])
    rows = []
    for (source, system), errors in sorted(grouped.items()):
        e = Errors.of(errors)
        rows.append((source, system, e.runs, f"{100 * e.mean:.1f} %", f"{100 * e.max:.1f} %", _percent(e.signed_mean)))
    return Table("Check runs per source", ("source", "hardware", "runs", "mean", "max", "signed mean"), tuple(rows),
                 caption=("The check runs of the table above grouped by the table or paper they come from and the "
                          "hardware they ran on: relative error of the predicted step time (predicted / published − 1; "
                          "positive: the model is slower), with the bounded peaks at their high end."),
                 source="derivations/data/step_fit.json")


def per_doubling(gpus, errors) -> float:
    """The least-squares slope of ``errors`` against log2 of ``gpus``: how much a series' error changes each time its
    GPU count doubles (at least two distinct counts)."""
    x = np.log2(np.asarray(gpus, dtype=float))
    y = np.asarray(errors, dtype=float)
    return float(((x - x.mean()) * (y - y.mean())).sum() / ((x - x.mean()) ** 2).sum())


def weak_scaling_series() -> list[dict]:
    """The check runs measuring one layout at three or more GPU counts with the same work per GPU (only the
    data-parallel size and, with it, the global batch grow: weak scaling), per source, hardware, model, precision and
    layout: their GPU counts, errors (the stored check rows') and the error's change per doubling of the GPUs."""
    from . import modern

    errors = {}
    for system, found in _results()["checks"].items():
        for row in found["runs"]:
            for run_id in row["id"].split("+"):
                errors[(system, run_id)] = row["error"]
    series: dict = {}
    for run in modern.runs("check"):
        key = (modern.source_of(run), run["hardware"], run["model"]["name"], run["precision"], modern.framework_of(run),
               run["t"], run["p"], run["c"], run["v"], run["e"], run["seq"], run["micro_batch"],
               run["global_batch"] / run["gpus"], run["recompute"])
        if (run["hardware"], run["id"]) in errors:
            series.setdefault(key, {})[run["gpus"]] = errors[(run["hardware"], run["id"])]
    out = []
    for key, points in sorted(series.items(), key=lambda item: item[0][:4]):
        if len(points) >= 3:
            gpus = sorted(points)
            out.append({"source": key[0], "hardware": key[1], "model": key[2], "precision": key[3],
                        "framework": key[4], "gpus": gpus,
                        "errors": [points[g] for g in gpus],
                        "per_doubling": per_doubling(gpus, [points[g] for g in gpus])})
    return out


def _weak_scaling_table() -> Table:
    found = weak_scaling_series()
    rows = tuple((f["source"], f["hardware"], f["model"], f["precision"], f"{f['gpus'][0]:,} to {f['gpus'][-1]:,} "
                  f"({len(f['gpus'])})", _percent(f["errors"][0]), _percent(f["errors"][-1]),
                  f"{100 * f['per_doubling']:+.2f} points") for f in found)
    by_framework: dict = {}
    for f in found:
        by_framework.setdefault(f["framework"], []).append(f["per_doubling"])
    said = "; ".join(f"{name}: {len(slopes)} series, {100 * float(np.mean(slopes)):+.2f} points per doubling on average "
                     f"({100 * min(slopes):+.2f} to {100 * max(slopes):+.2f})"
                     for name, slopes in sorted(by_framework.items())) or "no series"
    return Table("Weak scaling: the error as the GPU count grows",
                 ("source", "hardware", "model", "precision", "GPUs (runs)", "error at the fewest", "at the most",
                  "change per doubling"), rows,
                 caption=("Check runs of one layout at three or more GPU counts with the same work per GPU (only the "
                          "data-parallel size grows, the global batch with it), and how the step model's error moves "
                          "along each (the least-squares slope of the error against log2 of the GPUs; negative: the "
                          "model grows more optimistic as the GPUs grow), by framework: " + said + ". Megatron-Core "
                          "hides its data-parallel collectives (the distributed optimizer's overlap) and so does the "
                          "model: its step stays nearly flat while the published one grows a little, for causes not "
                          "in the model (stragglers at each synchronisation, contention in the network). LLM Foundry's "
                          "FSDP at 128 to 512 H100: the model's exposed collectives grow faster than the published "
                          "steps; it prices every step of a ring spanning nodes at the network's latency "
                          "(base/crossing.py), where NCCL's own tuning model counts that latency only on the steps "
                          "that cross nodes, nNodes − 1 of a ring all-gather's N − 1 (NVIDIA/nccl src/graph/tuning.cc, "
                          "ncclTopoTuneModel). KempnerForge's FSDP2 over 2 to 40 nodes: the published steps grow "
                          "faster than the model's, which hides the data-parallel traffic those runs expose. A "
                          "prediction at more GPUs than a table reaches is to be read with these trends beside it."),
                 source="derivations/data/step_fit.json; derivations/modern.py")


def _same_count_spread(found: list[dict]) -> str:
    """What the printed peaks of rows counted at the same bytes say: the pair of rows whose predictions are equal
    (to the stored 6 digits) and whose printed peaks lie furthest apart, as a sentence (torchtitan's 405B 1F1B row
    and its Table 6 CP 1 row hold the same tokens per micro-batch on the same layout, 4 × 8192 and 1 × 32,768)."""
    by_count: dict = {}
    for r in found:
        by_count.setdefault((r["hardware"], r["predicted_gib"]), []).append(r)
    pairs = [(max(rows, key=lambda r: r["published_gib"]), min(rows, key=lambda r: r["published_gib"]))
             for rows in by_count.values() if len(rows) > 1]
    if not pairs:
        return ""
    high, low = max(pairs, key=lambda pair: pair[0]["published_gib"] - pair[1]["published_gib"])
    return (f" Rows counted at the same bytes print peaks up to {high['published_gib'] - low['published_gib']:.1f} "
            f"GiB apart ({high['id']} {high['published_gib']:g} GiB, {low['id']} {low['published_gib']:g} GiB, both "
            f"predicted {high['predicted_gib']:.1f} GiB): a spread the tensors' sizes do not set, so the gap is not "
            "one factor of the count, and none is fitted.")


def _printed_memory_table() -> Table:
    """Every check run whose source prints its peak memory per GPU, against the step model's memory_per_gpu (the
    rows python -m symcomm.derivations.fit_step_time stored: the docs build evaluates no run)."""
    found = _results()["memory"]
    rows = tuple((r["id"], r["hardware"], f"{r['published_gib']:g}", f"{r['predicted_gib']:.1f}", _percent(r["error"]))
                 for r in found)
    return Table("Peak memory per GPU against the printed", ("run", "hardware", "published (GiB)", "predicted (GiB)",
                                                             "error"), rows,
                 caption=("GiB = 2³⁰ bytes. Published: the row's Memory(GiB), torchtitan's logged peak of the bytes "
                          "the CUDA caching allocator reserves (torch.cuda.memory_stats 'reserved_bytes.all.peak', "
                          "torchtitan/metrics.py; the 2024-12 tables take the maximum over GPUs, the H200 table samples the 100th iteration), which includes the allocator's cached and "
                          "fragmented blocks: a count of live bytes is expected below it, by an amount the tables "
                          "do not determine (not modelled, no factor applied); KempnerForge's rows print the peak of "
                          "the bytes allocated (torch.cuda.max_memory_allocated of rank 0, kempnerforge/metrics/"
                          "memory.py), live bytes as the model counts them; Megatron-LM's functional-test golden "
                          "values print the peak of the bytes allocated too (mem-max-allocated-bytes, "
                          "torch.cuda.memory_stats 'allocated_bytes.all.peak' of rank world_size − 1, "
                          "megatron/training/training.py and global_vars.py; only p = 1 tests, where that rank is "
                          "the busiest). Predicted: memory_per_gpu "
                          "of symcomm eval hybrid for the run's words (weights, gradients, optimizer states, "
                          "activations, the larger of the loss side (the loss buffers, the final norm's and LM head's "
                          "kept inputs) and the backward side (the recompute working set, the LM head's gradient "
                          "FSDP2's root holds), FSDP's gathered layers, FSDP2's unsharded root and "
                          "torch.distributed.pipelining's receive buffers and kept outputs: "
                          "symcomm.training.torchmem); the loss as each run's commit runs it: eager at 9dec370a, whose "
                          "train.py leaves the loss uncompiled even under torch.compile (12 bytes per token and "
                          "vocabulary entry of the GPU's V/t, 16 under loss parallel), compiled at e7c0cae9 "
                          "(torchtitan/components/loss.py, 4 bytes); torchtitan's op-level selective checkpointing is typed recompute=op (each "
                          "block's input and the outputs its op list saves: symcomm.training.memory.op_kept_widths), "
                          "under torch.compile only those its backward reads (AOTAutograd's partitioner drops the "
                          "rest: the last matmul's output, h wide, 4 GiB over Llama 3.1 8B's 32 blocks at local "
                          "batch 2), eagerly every one. "
                          "Error: predicted / "
                          "published − 1, " + _summary([r["error"] for r in found]) + "."
                          + _same_count_spread(found)),
                 source=("derivations/data/torchtitan_runs.json, derivations/data/kempnerforge_runs.json, "
                         "derivations/data/kempnerforge_mfu_runs.json, derivations/data/megatron_lm_tests_runs.json; "
                         "derivations/data/step_fit.json"))


def _scope_table() -> Table:
    """The modern runs the step model does not take, with the reason; and the runs marked for fitting that the fit
    left out (a constant only their prediction depends on: symcomm.measurement.step_fit)."""
    results = _results()
    left_out = {run_id: f"in scope, left out of {system}'s fit: {why}" for system, found in results["systems"].items()
                for run_id, why in found.get("not_evaluated", {}).items()}
    rows = tuple((run_id, why) for run_id, why in sorted({**results["out_of_scope"], **left_out}.items()))
    return Table("Published modern runs outside the step model", ("run", "why"), rows,
                 caption="Left out of every fit and table of errors above, and why (derivations/modern.py; a run the "
                         "fit leaves out: symcomm/measurement/step_fit.py).",
                 source="derivations/modern.py")


def _row_error(results: dict, run_id: str, hardware_name: str, role: str) -> str:
    """The error of the stored row holding ``run_id`` (one command measured in several published rows, as one
    layout in several releases, is one row, its ids joined by "+", at the median of their times: said), in sample
    and left one out for a fitted run; "—" where no stored row holds it."""
    if role == "fit":
        rows, keys = results["systems"].get(hardware_name, {}).get("runs", []), ("error", "loo_error")
    elif role == "regression":
        rows, keys = results["regressions"].get(hardware_name, []), ("error",)
    else:
        rows, keys = results["checks"].get(hardware_name, {}).get("runs", []), ("error",)
    for row in rows:
        ids = row["id"].split("+")
        if run_id in ids:
            text = _percent(row[keys[0]]) + (f" (LOO {_percent(row[keys[1]])})" if len(keys) > 1 else "")
            return text + (f", median of {len(ids)} published rows of one command" if len(ids) > 1 else "")
    return "—"


def _rowwise_table() -> Table:
    """torchao's rowwise table on H100 through the model, at the cast share read off it and at the roofline."""
    found = rowwise_casts.fitted()
    share = found["share"]
    rows = [(f"{r['M']:,}", r["cells"], _percent(r["roofline"]["signed_mean"]), f"{100 * r['roofline']['mean']:.1f} %",
             _percent(r["at_share"]["signed_mean"]), f"{100 * r['at_share']['mean']:.1f} %",
             f"{100 * r['at_share']['max']:.1f} %") for r in rowwise_casts.by_m(share)]
    fit, loo = found["in_sample"], found["leave_one_out"]
    rows.append((f"M ≥ {rowwise_casts.FIT_FROM_M:,} (read on)", found["cells"],
                 _percent(found["roofline"]["signed_mean"]), f"{100 * found['roofline']['mean']:.1f} %",
                 _percent(fit["signed_mean"]), f"{100 * fit['mean']:.1f} % ({100 * loo['mean']:.1f} % left out)",
                 f"{100 * fit['max']:.1f} %"))
    return Table("torchao's float8 rowwise recipe against its own table",
                 ("M", "shapes", "signed, share 1", "mean, share 1", f"signed, share {share:.2f}",
                  f"mean, share {share:.2f}", f"max, share {share:.2f}"), tuple(rows),
                 caption=("torchao's published speedups of a compiled LayerNorm -> Linear -> Sigmoid forward + backward "
                          "in float8 rowwise over bf16 on H100 (Meta's 2.4 TB/s part, h100-gt at the SXM end of its "
                          "peak), against the model's: the linear's three GEMMs at h100's fitted constants, the rowwise "
                          "casts' bytes as torchao's roofline counts them, the LayerNorm's and Sigmoid's passes alike "
                          "in both. Error: predicted speedup / published − 1 (positive: the model says rowwise gains "
                          "more than it did). At the roofline (share 1) the casts are far too fast, most at narrow "
                          f"shapes; the step model times them at {share:.2f} of the HBM bandwidth "
                          "(compute.ROWWISE_CAST_SHARE), the share with the least squared log error over the shapes with "
                          f"M ≥ {rowwise_casts.FIT_FROM_M:,}, each also predicted by the share read without it (left "
                          f"out); at the low end of the part's peak it reads {rowwise_casts.fitted('low')['share']:.2f}. "
                          "Read on this microbenchmark only: torchtitan's rowwise runs stay check runs."),
                 source=("pytorch/ao docs/static/fp8-rowwise-perf.png at fdddb2cf (pull request 2312), "
                         "derivations/data/torchao_rowwise_h100.json; symcomm/derivations/rowwise_casts.py"))


def _known_cause_table() -> Table:
    """The modern runs whose data records why they disagree with the model (derivations/data/bridge_runs_*.json,
    known_cause; stored by python -m symcomm.derivations.fit_step_time), each with its row's error."""
    results = _results()
    rows = tuple((run_id, found["hardware"], found["role"],
                  _row_error(results, run_id, found["hardware"], found["role"]), found["cause"])
                 for run_id, found in sorted(results["known_causes"].items()))
    return Table("Published runs whose disagreement has a known cause", ("run", "hardware", "role", "error", "cause"),
                 rows,
                 caption=("Runs in the step model's scope whose sources say why their step time is not what the "
                          "model predicts: a regression the framework's maintainers published, or kernels the "
                          "model does not hold. A row published as a regression (role regression) is neither "
                          "fitted nor counted among the checks: a configuration its maintainers call broken is "
                          "not what the model predicts; every other keeps its role (fitted or checked, in every "
                          "table above): said, not corrected for. Error: predicted / published − 1 of the stored "
                          "row holding the run (a regression's with its hardware's fitted constants)."),
                 source="derivations/data/bridge_runs_25.json; derivations/data/bridge_runs_26.json (known_cause); "
                        "derivations/data/step_fit.json")


def memory_rows() -> list[dict]:
    """Korthikanti et al.'s Figure 1 against the memory model, with the figure's own count of
    parameters (the transformer layers' 12Lh², 18 bytes each: fp16 weights and fp32 gradient
    and Adam states) and activations (Table 2; the 175B and 530B runs interleaved, v = 3)."""
    from symcomm.training import steptime

    out = []
    for entry in published.load()["memory"]:
        run = next(r for r in published.runs() if r["id"] == entry["runs"][0])
        values = {**published.values_of(run), "Phi": 12 * run["layers"] * run["hidden"] ** 2}
        base = {**published.options_of(run), "embeddings": "0"}
        states = steptime.quantities(values, 2, **{**base, "recompute": "none", "sp": "0"})
        baseline = float(states["memory_activations"])
        present = float(steptime.quantities(values, 2, **{**base, "recompute": "selective", "sp": "1"})["memory_activations"])
        held = float(states["memory_weights"] + states["memory_gradients"] + states["memory_optimizer"])
        gib = 2.0 ** 30
        out.append({"model": entry["where"].split(", ")[1].split()[0], "states": (entry["weights_grads_optimizer_gib"], held / gib),
                    "baseline": (entry["activations_tp_only_gib"], baseline / gib),
                    "present": (entry["activations_sp_selective_gib"], present / gib)})
    return out


def _ran_over_table() -> Table:
    """Every published run in the step model's scope that the model counts over its GPU's memory, though it ran (the
    rows python -m symcomm.derivations.fit_step_time stored, 'ran_over')."""
    found = _results()["ran_over"]
    rows = tuple((r["id"], r["hardware"], r["role"], f"{r['predicted_gib']:.1f}", f"{r['gpu_gib']:.1f}",
                  f"+{100 * r['over']:.1f} %", "yes" if r["layout_in_doubt"] else "") for r in found)
    return Table("Published runs counted over their GPU's memory, though they ran",
                 ("run", "hardware", "role", "predicted (GiB)", "GPU (GiB)", "over", "layout in doubt"), rows,
                 caption=("Each run ran, so its peak fit in its GPU's memory: where the model counts more (memory_per_gpu "
                          "of symcomm eval hybrid for the run's words), it over-counts that run by at least the "
                          "excess shown, unless the layout typed is not the one that ran — 'layout in doubt': the "
                          "run's data says its table differs from its recipe (the table is typed), or a paper's run "
                          "assumes the chunks per pipeline rank or the micro-batch its paper does not print (the "
                          "activations in flight follow both). eval's memory verdict "
                          "takes the largest excess of the others as its band's upper end (hardware.json "
                          "memory_ran_over): a count up to that far over a GPU's memory is 'NO by the model's count', "
                          "'at the low end it would fit'. GiB = 2³⁰ bytes."),
                 source="derivations/data/step_fit.json (ran_over); the runs' data files")


def _memory_table() -> Table:
    rows = tuple((r["model"],) + tuple(f"{pub:.2f} / {ours:.2f}" for pub, ours in (r["states"], r["baseline"],
                                                                                   r["present"]))
                 for r in memory_rows())
    return Table("Memory per GPU against Korthikanti et al.'s own count (Figure 1's models)",
                 ("model", "weights + gradients + Adam (GiB)", "activations, no recompute (GiB)",
                  "activations, SP + selective (GiB)"), rows,
                 caption=("the paper's count / symcomm's, GiB (2³⁰ bytes), first pipeline stage. The first value is a "
                          "transcription said to be read off Figure 1 but not checked against a stored copy of the "
                          "paper; each equals, to 0.01 GiB, the paper's own formulas (18 bytes per parameter of the "
                          "12·L·h² transformer weights, Table 2's activations): so this checks symcomm's count against "
                          "the paper's formulas, not against a measured peak (no Megatron run here prints one)."),
                 source=KORTHIKANTI + ", Figure 1's models and §4, Table 2 (derivations/data/published_runs.json "
                        "'memory': checked_against)")


def _a100_leave_one_out() -> str:
    """The A100 fit's leave-one-out mean error against its in-sample one, as derivations/data/step_fit.json holds."""
    fit = _results()["systems"]["a100"]
    return f"{100 * fit['leave_one_out']['mean']:.1f} % against {100 * fit['in_sample']['mean']:.1f} %"


def _mtnlg_slower() -> str:
    """How much slower MT-NLG's runs (Smith et al. 2022) ran than the model predicts: the range over its check rows."""
    slower = [-run["error"] for run in _results()["checks"]["a100"]["runs"] if run["source"] == "smith2022"]
    return f"{100 * min(slower):.0f}–{100 * max(slower):.0f} %"


_A100_LOO, _MTNLG_SLOWER = _a100_leave_one_out(), _mtnlg_slower()
#: the published attention-kernel shares the chapter names (hardware.json attention_shares)
_SHARES = {name: dict(hardware(name).attention_shares) for name in ("a100", "h100")}


# what an MoE layer moves around its experts' GEMMs (the permutations into expert order and back, the combine), in
# HBM-pass equivalents over the routed token copies
_MOE = RunSetting(gated=True, moe=True, sp=True)
_ROUTED = compute.routed_bytes(_MOE, _MB * s / c, L / p)
MEGATRON_ROUTING = ("NVIDIA/Megatron-LM megatron/core/transformer/moe/token_dispatcher.py (MoEAlltoAllTokenDispatcher) "
                    "and moe_utils.py (permute, unpermute), commit d98e8a64")

ROUTING = Derivation(
    "The MoE layer's passes over its routed token copies",
    (Step(_S.kappa_moe * _ROUTED / hbm,
          "kappa_moe HBM-pass equivalents, at the HBM bandwidth, over the routed bytes: each GPU's (b/(d·m))·s/c tokens "
          "of a micro-batch, its 1/t sequence-parallel share dispatched, in k copies of its h-wide hidden vector at 2 "
          "bytes an element, over the stage's MoE layers (L/p in the model's proportion L_moe/L); forward one third, "
          "backward two (κ's convention)"),),
    "seconds per micro-batch (forward + backward); absent kappa_moe: 0 (the model before it)",
    MEGATRON_ROUTING + "; symcomm/training/compute.py (routed_bytes)", lhs="routing time",
    claims=(Claim(_ROUTED, 2 * (_MB * s / c) / t * _S.k * h * (L / p) * _S.L_moe / L,
                  name="the routed bytes by hand: 2 bytes × tokens/t × k × h per MoE layer"),
            Claim(sp.diff(_micro(_MOE), _S.kappa_moe), _ROUTED / hbm,
                  name="each unit of kappa_moe adds one pass over the routed bytes at the HBM bandwidth (no recompute)"),
            Claim(sp.diff(_micro(_FULL), _S.kappa_moe), 0, name="a dense model's compute does not depend on kappa_moe")))


CHAPTER = Chapter(
    11, "step-time", "Step time against published runs",
    ("A step is compute, communication and waiting. symcomm's step model (symcomm/training/steptime.py) times the busiest "
     "GPU: hardware FLOPs over the datasheet peak times a fitted share eta, each GEMM at eta·w/(w + w_half) for its "
     "width w = MNK/(MK + KN + MN) (the additive roofline; w_half, the width at half the share, held on each preset "
     "at the roofline's peak · 2 bytes / (2 · HBM bandwidth), w_half = 0 the shape-independent model), plus kappa "
     "passes over the activation bytes for the memory-bound kernels; under an FP8 precision "
     "(fp8_tensor, fp8_delayed, mxfp8, fp8_block) the linear layers' and experts' GEMMs at the FP8 peak times eta_fp8 (nvfp4, "
     "Transformer Engine's NVFP4 on Blackwell: the FP4 peak times eta_fp4) and their inputs' casts at the HBM "
     "bandwidth, the attention core, norms, softmax and LM head in bf16 (with fused_grouped_mlp=1, Transformer "
     "Engine's fused MoE grouped MLP under MXFP8 on Blackwell, as Megatron-Bridge's cutedsl_fused_grouped_mlp runs it, "
     "the experts' activation and two of their casts happen inside the GEMMs: no kappa pass over the routed rows' "
     "F_e-wide tensors, no separate cast of FC2's input or of FC1's output gradient); the flash-attention "
     "core at its own fitted share eta_attn of the bf16 peak (attention_kernel=fa2: FlashAttention-2, PyTorch SDPA's "
     f"flash backend, at the hardware's published share eta_fa2, {_SHARES['h100']['fa2']:.3f} on H100, "
     f"{_SHARES['a100']['fa2']:.3f} on A100; attention_kernel=triton: FlashAttention's Triton port, MPT's attn_impl "
     f"triton, at eta_triton, {_SHARES['a100']['triton']:.3f} on A100 from the same release's chart, "
     f"{_SHARES['h100']['triton']:.3f} on H100 transferred from its charts of FlashAttention-1 and -2), its backward "
     "5/2 of its forward (it "
     "recomputes the scores); the tensor, context, expert and pipeline collectives of the hybrid "
     "strategy on the critical path of every micro-batch; (p − 1)/v micro-batch slots of bubble; the data-parallel "
     "reduce hidden behind the backward as far as the framework overlaps it; Adam at the HBM bandwidth. "
     "With an uneven split of the layers (pipeline_split=first_last: the first and the last of the p·v model "
     "chunks L_first and L_last layers, the middle ones the rest in equal parts: with one chunk a stage Megatron-LM's "
     "first/last-stage flags, interleaved a pipeline layout string's chunks, not those flags, which size a whole "
     "stage's v chunks alike) the model prices every stage kind — the first (embedding), a middle "
     "one, the last (LM head and loss) — and the slowest sets the micro-batch slot of the pipeline and its "
     "bubble; memory is the stage holding the most. "
     "The FLOPs below are proved equal to the papers' closed forms, except one: Korthikanti et al.'s hardware "
     "FLOPs for selective recomputation count the recomputed attention core three times (its forward and "
     "backward once more), which their printed HFU follows; symcomm counts what re-runs, its forward. The "
     "constants a system's runs marked 'fit' determine are fitted on them (the table of fitted constants says "
     "which, and why the others are held); on A100 eta and kappa: the 2022 runs are faster than the 2021 ones "
     "for the same work per replica (530B: 49.05 s against 54.1 s), so fitting on Narayanan et al.'s table alone "
     "would leave Korthikanti et al.'s rows 7 % slow on average. Runs never fitted to are shown beside them: "
     "BLOOM and the Megatron-LM README's GPT-3 run come within 9 %; MT-NLG, run by DeepSpeed's pipeline engine, "
     f"is {_MTNLG_SLOWER} slower than the model predicts — the model has no term for that engine's own overheads. "
     "Overlap follows the framework (symcomm/training/overlap.py, each default cited in frameworks.py): Megatron's "
     "gradient reduce behind the backward in buckets of max(40M, 1M·d) parameters (d: the data-parallel size without context parallelism), the last one exposed "
     "(overlap_grad_reduce), its post-step parameter all-gather behind the next forward but its first bucket "
     "(overlap_param_gather); under its interleaved schedule each model chunk is synced apart "
     "(megatron/core/pipeline_parallel/schedules.py: a chunk's reduce-scatter after its last micro-batch's "
     "backward, its gather while the chunk before it makes its first forwards), so the reductions hide behind "
     "(p(v − 1) + 1)/v micro-batch backwards and the gathers behind as many forwards, not one; FSDP2 and Megatron-FSDP gather and reduce-scatter one layer at a time: the first "
     "layer's gather and the last layer's reduce-scatter exposed, every other collective's latency too, their "
     "bandwidth hidden as far as their own phase's compute lasts (a forward's gathers behind the forwards, the "
     "backward's behind the backwards, the reductions behind the backwards that reduce: all of them, or the last "
     "one's when gradients are reduced once per step) — per-layer units move the same bytes as one whole-model "
     "collective with (L_u − 1)·(N − 1) more α (below), except that PyTorch's FSDP (fsdp, fsdp2) keeps its root unit, "
     "the embedding and LM head, gathered from its forward through the backward: gathered again there L_u − 1 times "
     "a micro-batch, the root's 16-bit parameters in memory meanwhile (symcomm.training.frameworks."
     "ROOT_KEPT_GATHERED); tensor-parallel comm-GEMM overlap (tp_overlap) leaves one "
     "chunk of t exposed; without it Megatron's and Transformer Engine's column-parallel linears (QKV, FC1) start "
     "their backward's input re-all-gather beside the input-gradient GEMM and the input gradient's reduce-scatter "
     "(all-reduce without sequence parallel) beside the weight-gradient GEMM, each exposing max(0, C − G) "
     "(tp_backward_overlap: Megatron-LM's default since September 2021, so off for Narayanan et al.'s runs); expert all-to-alls (a2a_overlap) "
     "hide in the four phases Megatron pairs them with the other micro-batch's compute (model_chunk_schedule_plan.py: "
     "the backward's combine beside the forward's pre-dispatch part, the dispatch beside the experts' backward, "
     "the dispatch's gradient beside the experts' forward, the combine beside the pre-dispatch part's backward), "
     "exposing the sum of max(0, A/4 − that piece) for A the micro-batch's all-to-all time; pipeline sends "
     "(p2p_overlap) hide behind the micro-batch's compute left by the ones before. What hides still costs: the compute "
     "a collective runs beside runs 18.9 % slower while it does (Lee et al. 2025, arXiv:2507.03114, the published "
     "mean), so every exposed time carries 0.189/1.189 of its hidden seconds (derived below). Memory counts live "
     "bytes: beside weights, gradients, "
     "optimizer and activations, the last stage's logits and loss buffers as the run's cross-entropy holds them "
     "at its peak, per token and vocabulary entry over t (loss=: Megatron's vocab-parallel one 6 bytes, the "
     "16-bit LM-head output and its fp32 copy; PyTorch's eager F.cross_entropy of an fp32 copy, torchtitan "
     "without a compiled loss, 12, 16 under loss parallel, 2 more under pipeline parallelism, which keeps the "
     "stage's output; a compiled one 4; F.cross_entropy of the bf16 logits themselves, NeMo AutoModel's, 8 at t = 1 and "
     "6t + 2 where the loss gathers a vocabulary-sharded output whole (eager_bf16), 8t where the LM head returns the "
     "whole logits on every tensor-parallel rank, KempnerForge's (replicated_bf16); flash-attn's fused "
     "CrossEntropyLoss, LLM Foundry MPT's default, 4, the logits and their bf16 gradient (xentropy_cuda, "
     "xentropy_triton): "
     "symcomm.training.memory.loss_bytes_per_logit), or one layer's "
     "activations while it is recomputed, whichever is larger (the two are never live at once), and FSDP's two "
     "gathered layers and their gradients; PyTorch's FSDP, FSDP1 (fsdp) and FSDP2, keeps no 16-bit shard beside the fp32 master (FSDP1 casts its 16-bit copy before each all-gather and frees it after); under Transformer "
     "Engine's FP8 and NVFP4 recipes (framework megatron, megatron_fsdp) each linear keeps its quantized input for "
     "the weight gradient, not the 16-bit one (below; the recompute working set is still counted in 16 bits, an "
     "upper bound), and its quantized weight, rowwise and transposed, is cached for the step's micro-batches beside "
     "the 16-bit one (2 bytes a linear parameter under per-tensor FP8, counted at Hopper's; none with "
     "fp8_param_gather, whose parameter is the quantized tensor: symcomm.training.recipes.TE_WEIGHT_CACHE); under "
     "those recipes the sequence-parallel all-gathers move quantized elements and current scaling all-reduces each "
     "quantize's amax over the tensor-parallel group (the hybrid chapter's claims); Adam's state 12 bytes per parameter (fp32 master and moments), 8 with bf16 moments "
     "(Megatron-Core's precision-aware optimizer), 6 all in bf16 (Apex's DistributedFusedAdam with dtype bf16, "
     "NeMo 24.07's Nemotron-340B): adam_dtype; the busiest GPU is the larger of the first and last stage. What the CUDA caching allocator reserves beyond the live bytes "
     "(cached and fragmented blocks), which torchtitan's printed memory includes, is not modelled: a printed "
     "reserved peak is expected above the prediction, by an amount no run's table determines. "
     "So eval's memory verdict is said with the spread these rows measured (hardware.json memory_checks, written by "
     "the fit script): a layout that fits by the count but not once the count is raised to the highest printed peak "
     "measured is 'uncertain within its measured error' (eval, the Python API's fits_over_error; plan marks its "
     "memory with a double dagger); and a layout over the GPU's memory by the count, but by no more than the published "
     "runs that ran were counted over theirs (hardware.json memory_ran_over, the table below), would fit at the low "
     "end (eval says 'NO … at the low end it would fit'). "
     "torchtitan's op-level selective checkpointing (recompute=op) keeps per block its input and the outputs its "
     "op list saves — every other matmul (wq, wv, w1, w2 of wq, wk, wv, wo, w1, w3, w2), the SDPA's output and "
     "logsumexp, the sequence-parallel reduce-scatters; under torch.compile (fsdp2, compile=1) only those its "
     "backward reads, so not w2's output nor its reduce-scatter's, which only join the residual sum (AOTAutograd's "
     "partitioner drops unread saved values: torch/_functorch/partitioners.py) — and runs again in the backward the "
     "other matmuls (wk, wo, "
     "w3), every memory-bound op and the sequence all-gathers, not the attention core; dense Llama blocks with "
     "flash attention only (MoE and MLA refused). A torchtitan block run eagerly (fsdp2's default; compile=0) "
     "with no recompute keeps what PyTorch's autograd keeps, not Korthikanti et al.'s count: each RMSNorm's fp32 "
     "input and output, the two linear inputs whole, the rotated Q and K, V repeated to the query heads, the SDPA's "
     "output and logsumexp, the SwiGLU's four tensors, 52.03 h bytes a token for Llama 3.1 8B against 34 h "
     "(symcomm.training.memory.eager_kept_widths; the working set an eager recompute reruns too); PyTorch's "
     "MemTracker, run on such a block, holds 2 h, 15.53 h and 52.03 h a token under full, op and no recompute, as "
     "symcomm counts them (tests/integration/test_torch_kept_activations.py). "
     "Megatron-Core keeps K and V at their grouped-query width (gqa=1: h_kv) and, for a model trained without "
     "dropout (dropout=0, every preset: PyTorch's dropout at p = 0 returns its input and keeps no mask), no dropout "
     "mask: Llama 3 70B keeps 33.5 h a token with sequence parallelism where Korthikanti et al.'s count with its MLP "
     "at width F gives 39 h (symcomm.training.memory.KeptWidths); PyTorch's own models (fsdp, fsdp2) repeat K and V "
     "to the query heads and keep them h wide. Under a Transformer Engine FP8 or FP4 recipe the attention output "
     "stays 16-bit, kept once by the attention core and the output projection (its original input: Megatron-Core "
     "0.15's save_original_input), and twice, with a quantized copy, under delayed scaling. "
     "Megatron's block recompute (recompute=block with L_rc, "
     "--recompute-method block --recompute-num-layers) reruns the forward of the first L_rc layers of each model chunk: "
     "counted as full recompute for the share L_rc·p·v/L of the layers (their FLOPs, activations and forward "
     "collectives) and as none for the rest, on an even split (below). "
     "Megatron-Core's activation offloading (cpu_offload=1 with L_off: --cpu-offloading-num-layers, refused as "
     "Megatron-Core refuses it with p > 1, with any recompute and for L_off ≥ L) keeps L_off layers' activations in "
     "host memory: the GPU holds the other L − L_off layers'; the copies to and from the host are not timed (they run "
     "on their own stream) and their buffers in flight on the GPU are not counted (Megatron-Bridge's GB200 Llama "
     "recipes offload 40 of 80 and 95 of 126 layers). "
     "The constants are fitted by one core (symcomm/measurement/step_fit.py: the least mean |relative error| "
     "of the step time on a lattice of each constant's range, searched whole where it is small, else from a "
     "coarse grid polished on the lattice), the same that symcomm "
     "calibrate-step runs on a team's own measured runs (where those name an attention kernel, it fits that kernel's "
     "share too, eta_fa2, eta_triton or eta_cudnn, in place of the published one); a constant only one run's "
     "prediction depends on is not "
     "fitted (that run alone would set it, and its leave-one-out fold would have nothing to set it with): held at "
     "the hardware's value, or, where it has none, the run is left out of the fit and said (B200's NVFP4 share, "
     "which only Nemotron 3 Super's NVFP4 row reads: held at B200's fitted eta_fp8 times GB200's fitted eta_fp4 over "
     "eta_fp8, the same Blackwell GPU, so that the row is predicted by constants it did not set, its error said); each fit reports its leave-one-out error (every run "
     f"predicted by the constants fitted without it) beside the in-sample one: on the A100 runs {_A100_LOO}. "
     "Mixtures of experts: each token through k routed and E_s shared experts (E_s = 0 allowed); a stage's "
     "FLOPs take its MoE layers in the model's proportion L_moe/L, an approximation where the recipe places the "
     "dense layers on one stage (DeepSeek-V3's first 3); expert_tp = 1 (Megatron-Core's "
     "--expert-tensor-parallel-size 1) keeps the experts whole on a GPU: no all-gather of the routed tokens over "
     "t, experts sharded over e only and reduced over t·d·c/e expert-data ranks, the same expert FLOPs per GPU. "
     "An MoE layer's kept activations are its own, not a dense layer's: the attention block, the pre-MLP norm's "
     "input and output, the shared experts' and, for each routed row, its permuted input, FC1's output and the "
     "activation's output (below; FC2's output is not kept since Megatron-Core 0.13, which multiplies the "
     "probabilities into the activation); kappa's passes still run over the dense layer's bytes with the routed "
     "rows beside them, as its constants were fitted (memory.PASSED). "
     "recompute_mla_up (Megatron-Core's recompute module mla_up_proj) runs MLA's up projections again before the "
     "core's backward, in the recipe's precision, and keeps no Q, K, V (multi_latent_attention.py: "
     "CheckpointWithoutOutput). "
     "recompute_moe_act, recompute_layernorm, recompute_mlp and recompute_moe (Megatron-Core's recompute modules "
     "moe_act, layernorm, mlp, moe, derived above) keep less and run again, before the backward, what their "
     "checkpoints free: the experts' activation (memory-bound, κ's forward passes over its bytes), the norms that are "
     "their own module (the MoE layers' pre-MLP norm, MLA's input norm), a dense layer's MLP (its GEMMs in the "
     "recipe's precision and, over t, its forward collectives), an MoE layer's MLP side (its experts' GEMMs, its "
     "dispatch and combine); under a low precision the inputs they free are cast again. "
     "attention = mla counts DeepSeek's multi-head latent attention by its own projections and core (below), "
     "its activations by its own tensors (symcomm.training.memory.mla_attention_widths, derived here), its "
     "context-parallel K and V at their widths, and with sequence parallel the latents' all-gathers Megatron-Core "
     "runs instead of the h-wide one. Models whose heads are not h/a wide (Qwen3-MoE, gpt-oss: head_dim) count "
     "the FLOPs of their Q and output projections and of the attention core at the heads' own width h_q = "
     "a·head_dim (q_width=heads, taken from the model preset; q_width=h counts them h wide), their Φ exactly, and "
     "Megatron-Core's kept Q and attention output h_q wide (its query is [s, b, np, hn], hn = head_dim; the eager and "
     "op-level counts of PyTorch's blocks keep h, their collectives the residual stream's h). "
     "Hybrid Mamba-Transformer models (mamba=1: Nemotron 3 Nano) make each layer one block, attention, a Mamba-2 "
     "mixer, MoE or an MLP, counted block kind by block kind in the model's proportion (chapter 13): the mixers' "
     "in_proj and out_proj as GEMMs of their widths, their chunked scan's FLOPs at the attention core's share of the "
     "bf16 peak (eta_attn: no run isolates the scan, so it is not fitted on its own; the scan is 4 % of a Nano "
     "Mamba layer's FLOPs), their convolution, gates and norms in kappa's passes over the bytes the layer keeps; "
     "Megatron-Core's recompute of the MoE, norm and activation modules and its CUDA graphs are not counted. "
     "Nemotron 3 Super's LatentMoE (moe_latent=1) projects each MoE block's tokens h → h_lat and back around the "
     "dispatch: its routed experts h_lat wide, its all-to-alls carry h_lat elements a token, the two projections "
     "(duplicated on the TP ranks) are GEMMs of their own whose weight gradients are all-reduced over t. "
     "Multi-token prediction (mtp=1, or shared for one layer run at every depth: Megatron-Core's "
     "MultiTokenPredictionBlock, on the last pipeline stage and its last chunk) runs D_mtp depths after the last "
     "stage's layers: each the next token's embedding (a copy of the embedding on the last stage when p > 1, its "
     "gradient summed with the first stage's), eh_proj 2h → h, one layer of the model's last kind (DeepSeek-V3's MLA "
     "and MoE layer; Nemotron 3 Super's '*E' attention and expert blocks), the shared output head and its "
     "cross-entropy, with the layer's collectives, logits and kept activations; its layers' parameters on the last "
     "stage (reduced and updated there); under an FP4 recipe its GEMMs in bf16 (Megatron-Core ignores FP4 there), "
     "under recompute=block none recomputed (Megatron-Core skips it). Model FLOPs count the depths, as Megatron-LM's "
     "and Megatron-Bridge's printed model TFLOP/s do (below). Under a low-precision recipe bf16_layers keeps L_bf16 layers' "
     "linears in bf16 (Megatron-Core's --first-last-layers-bf16; the Super NVFP4 recipe keeps the last 14), in the "
     "model's proportion on a stage. "
     "torchtitan (framework=fsdp2) as PyTorch runs it: under pipeline parallelism torch.distributed.pipelining "
     "reduce-scatters a stage's gradients only after its last micro-batch's backward, so the first stage's are "
     "exposed in full (one chunk of v); torchao's Float8Linear casts the weights in every micro-batch and again in a "
     "full recompute, and its rowwise recipe's casts run at the share of the HBM bandwidth torchao's own table of "
     "rowwise speedups on H100 shows (below); context parallel's ring merges each step's output in fp32, accumulates dQ, dK, dV in fp32 and "
     "concatenates K, V and their gradients for every transfer, memory-bound passes counted op by op (below), "
     "hides its K, V all-gather behind the first step's block and each dK, dV transfer behind the next step's "
     "backward, the last one home exposed, and at torchtitan 9dec370a moves K, V repeated to every query head "
     "(gqa=0)."),
    derivations=(LAYER, MODEL_FLOPS, MEGATRON_FLOPS, FULL_RECOMPUTE, HARDWARE_CAUSAL, SELECTIVE_RECOMPUTE, OP_RECOMPUTE, BLOCK_RECOMPUTE,
                 RECOMPUTE_MODULES,
                 QUANTIZED_ACTIVATIONS, MLP_WIDTH_ACTIVATIONS, MOE_ACTIVATIONS, MLA_CORE, MTP_FLOPS, INTERLEAVING,
                 UNEVEN, GA_SCHEDULES, HSDP, HIDING, OVERLAP_SLOWDOWN, FSDP_UNITS,
                 GEMM_EFFICIENCY, GROUPED_GEMM, ROUTING, GEMM_CLASSES),
    claims=(SIX_N, NO_SHARED_EXPERT, EXPERT_TP_FLOPS, CP_RING_GROWS, CP_RING_GROWS_BACKWARD, CP_RING_OFF),
    late_tables=lambda: (_runs_table(run_rows()), _constants_table(), _spans_table(), _fit_errors_table(), _check_table(), _check_sources_table(),
                         _weak_scaling_table(),
                         _coverage_table(), _model_errors_table(),
                         _rowwise_table(), _printed_memory_table(), _ran_over_table(), _scope_table(), _known_cause_table(),
                         _memory_table()),
)
