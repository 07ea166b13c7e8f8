"""Compute time of one micro-batch on a pipeline stage, per GPU, as SymPy expressions (seconds).
Part of the step model (:mod:`symcomm.training.steptime`); the constants η, η_fp8, w_half and κ are
fitted per hardware preset (``derivations/fit_step_time.py``, :data:`FITTED`).

**Matmuls.**  Every GEMM of a layer is listed per GPU and micro-batch (:func:`layer_gemms`): T = (b/(d·m))·s/c
tokens, tensor-parallel widths split by t —

* QKV (one fused GEMM, Megatron-Core's ``linear_qkv``): T × h · h × (h + 2h_kv)/t;
* attention output: T × h/t · h/t × h;
* MLP: FC1 T × h · h × F/t (2F/t gated: gate and up fused, ``linear_fc1``), FC2 T × F/t · F/t × h;
* MoE: each of the E/e local experts a grouped GEMM of T·k·e/E tokens (uniform routing: the e ranks' T·k
  routed tokens over E experts) with the expert width F_e/t (Megatron's expert tensor parallel size t);
  the E_s shared experts as E_s GEMMs of width F_e/t over all T tokens;
* the LM head T × h · h × V/t; the attention core (QKᵀ, scores × V) apart.

A framework that runs each projection as its own linear (``fused_projections`` = 0, torchtitan's: wq, wk, wv and w1,
w3, :data:`SEPARATE_PROJECTIONS`) runs QKV as three GEMMs q/t, h_kv/t, h_kv/t wide and a gated FC1 as two F/t wide:
the same FLOPs, timed at their own widths.

Under ``tp_overlap``=1 Megatron-Core runs the dense block's linears through Transformer Engine's userbuffers, which
splits each GEMM beside a tensor-parallel collective into chunks of M/n rows, one per arriving or departing piece
(:data:`UB_CHUNKS`): the forward's QKV and FC1 and the backward's attention-output and FC2 input gradients in n = t,
the forward's attention output and FC2 in 4 (bf16) or t (the FP8 recipes' configs).  The chunks' FLOPs are the
GEMM's; each reads the weight again, so the additive roofline below prices (n − 1)·KN more elements per chunked
pass (:func:`ub_chunk_elements`); the communication they hide is the overlap model's
(symcomm.training.overlap.tp_exposed).

A GEMM (M × K)·(K × N) does 2MNK FLOPs and moves MK + KN + MN elements; its time is taken as the additive
roofline, FLOPs at the matmul rate plus a term proportional to those elements:
time = 2MNK/(peak·η) · (1 + w_half/w), with w = MNK/(MK + KN + MN), the GEMM's *width* (the harmonic mean of
its three dimensions over 3: the smallest of them when one is much smaller; its FLOPs per element moved,
halved).  So its share of peak is η·w/(w + w_half): it rises with w, tends to η for large GEMMs and is η/2
at w = w_half (proved in ``derivations/step_time.py``).  Why w and not one dimension: the input gradient
and weight gradient GEMMs of the backward have the same three dimensions in other roles, so one width
serves forward and backward (backward = 2 × forward, the papers' convention), and a roofline with HBM
bandwidth B_hbm gives exactly this form with w_half = peak·bytes/(2·B_hbm) (Williams et al. 2009, Roofline,
CACM 52(4)).  The presets hold w_half at that roofline value (derivations/fit_step_time.py): fitted free on
the named runs it paired with η_fp8 (not determined by them); ``calibrate-step`` may fit it on a user's runs.
With 1-byte FP8 operands at twice the rate the roofline's w_half is the same, so one w_half serves both
dtypes.  The routed experts' grouped GEMMs may have their own half-width, w_half_expert (absent: w_half; the presets
hold it at w_half), and an MoE layer's work around them, the permutations, the combine and what the all-to-alls
take from the compute they overlap, is kappa_moe HBM-pass equivalents over the routed token copies
(:func:`routed_bytes`; absent: 0).  w_half = 0 is today's shape-independent model: every matmul at η (the added term is exactly 0).
**The attention core** (QKᵀ and the scores times V) is no GEMM of the list: with flash attention (``flash``=1,
the default) it runs in one fused kernel at its own fitted share of the bf16 peak, η_attn, shape-independent
(the kernel keeps the scores on chip; its share is set by the softmax's exponentials and the tiles'
pipeline, not by HBM traffic: FlashAttention-2 reaches 50-73 % of A100's peak and 35 % of H100's,
FlashAttention-3 up to 75 % of H100's in its forward: Dao 2023 and Shah et al. 2024, abstracts), and its
backward runs five s × s GEMMs to the forward's two (it recomputes the scores QKᵀ instead of storing them:
FlashAttention-2, Algorithm 2), 5/2 of the forward's FLOPs where the papers' convention counts 2.  Without
flash attention (the 2021-22 Megatron runs η was first fitted on) the core is two batched GEMMs at η, with
the usual backward of 2 forwards.  A hardware block without η_attn reads it as η (the model before it,
:func:`symcomm.presets.systems.absent_filled`).  η_attn is fitted on the runs of frameworks whose core is a
fused kernel (Transformer Engine: cuDNN, FlashAttention-3 on Hopper); with ``attention_kernel=fa2``
(FlashAttention-2, PyTorch SDPA's flash backend) the core runs at the hardware's published FlashAttention-2
share η_fa2 instead, not fitted (H100: 0.273, SDPA's flash backend timed forward and backward with the causal mask
at head dimension 128, sequence length 8k, combined at the backward's 5/2 of the FLOPs: pytorch/benchmark commit
c0409aaf, its message's tables, where the flash-attn package ran 5 % faster, 0.287, not split from it;
A100: 0.583, the flash-attn package's forward + backward with the causal mask at head dimension 128, sequence length
8k, 182 TFLOP/s on FlashAttention-2's release chart, no published timing of SDPA's build there; hardware.json
attention_source), and with ``attention_kernel=triton``
(FlashAttention's Triton port, ``flash_attn_triton.py``, which MPT runs as attn_impl triton) at its published
share η_triton (A100: 0.250, 78 TFLOP/s on the same chart; H100: 0.133, transferred from FlashAttention-1's bar on
the H100 chart, the port running 78/80 of FlashAttention-1's speed on the A100 chart).  Each share is read at
sequence length 8k and head dimension 128 and used at every length: the charts' shares are lower at short
sequences (A100 triton 0.16 at 512), where the core is a small part of the step.

**Precision** (``precision``, :data:`symcomm.training.settings.PRECISIONS`).  Under an FP8 recipe the layers'
linear GEMMs (QKV, output, MLP, experts) run at peak_fp8·η_fp8 (same width factor); the attention core (at
peak·η_attn), the norms, softmax and the LM head (at peak·η) stay in bf16: Transformer Engine runs FP8 inside its linear modules
only (``DotProductAttention`` computes in bf16), and Megatron-Core's output layer is
``tensor_parallel.ColumnParallelLinear``, a bf16 matmul, unless the MXFP8 output projection is switched on
(NVIDIA/Megatron-LM megatron/core/models/gpt/gpt_model.py, commit d98e8a64); torchtitan's Llama 3 405B
recipe leaves it out of float8 too (``filter_fqns=["lm_head"]``, pytorch/torchtitan
torchtitan/models/llama3/config_registry.py, commit b5bcd76c), though its converter's own default list is
empty.  Each FP8 GEMM's inputs are cast, memory-bound at the HBM bandwidth (:func:`cast_bytes`, sources
there): the activation X (M × K) in the forward, the output gradient dY (M × N) in the backward, and the
weight (K × N) once per step (Megatron-Core passes ``is_first_microbatch``,
megatron/core/extensions/transformer_engine.py at d98e8a64, so Transformer Engine caches the FP8 weight over
the m micro-batches: transformer_engine/pytorch/module/linear.py, commit d0067d0d; with fp8_param_gather the
optimizer's quantization takes its place, counted the same), counted as 1/m per
micro-batch; a full recompute casts X again.  Each cast writes a rowwise and a columnwise copy (Hopper
needs the transposed copy for the backward's GEMMs; MXFP8's column-scaled copy differs from its row-scaled
one on Blackwell too; per-tensor FP8 on Blackwell shares one layout for both, so there this counts one
1-byte write per element too many).  Casts fused into a preceding kernel (Transformer Engine's LayerNormLinear writes
FP8 from the norm) are counted as separate passes: an upper bound, the rest is what κ and η_fp8 absorb.
torchao's rowwise recipe (``fp8_rowwise``) runs all three GEMMs of a linear in FP8 with per-row scales; its casts
and the backward's rescale are counted as torchao's own roofline and code run them (:data:`ROWWISE`), the weights
cast in every micro-batch, at the share :data:`ROWWISE_CAST_SHARE` of the HBM bandwidth that torchao's published
table of rowwise speedups on H100 shows them reaching (0.44; symcomm.derivations.rowwise_casts); its GEMMs at the
same peak_fp8·η_fp8 (PyTorch's rowwise CUTLASS kernel is slower on some shapes, pytorch/pytorch issue 147971: what
of it the table holds, the share holds too).
Transformer Engine's NVFP4 recipe (``nvfp4``, Blackwell) runs the same linear GEMMs, all three of each (forward,
input and weight gradients), in FP4 at peak_fp4·η_fp4 (Megatron-Core megatron/core/fp4_utils.py at d98e8a64:
``NVFP4BlockScaling()`` with its defaults: 2D weight scales, the random Hadamard transform on the weight
gradient's operands, stochastic rounding of the gradients); its casts as :data:`CAST` counts them, the weights once
per step as FP8's; the attention core, norms, softmax and LM head stay bf16 as under FP8.

**Memory-bound kernels** (norms, activation functions, dropout, residual adds, softmax): κ HBM passes over
the activation bytes Korthikanti et al. count, an MoE layer's as a dense layer's with its routed rows beside them
(:data:`symcomm.training.memory.PASSED`: what the constants were fitted on, not the bytes the layer keeps).  With
``fused_grouped_mlp`` (Transformer Engine's fused MoE grouped MLP) the routed rows' F_e-wide tensors get no pass of
their own and two casts are made in GEMM epilogues (:func:`fused_grouped_mlp_savings`).

**Recompute** (forward work run again in the backward, timed as the forward runs it): selective, the attention
core; block, full's for the first L_rc layers of each model chunk and none's for the others; full, every layer's forward (its FP8 casts of X too) and a third more memory-bound passes; op (torchtitan's
op-level selective checkpointing, symcomm.training.settings.TORCHTITAN_OP_SAC), the block's even-numbered matmuls
but its last (:func:`op_gemms`: wk, wo, w3 gated; symcomm.training.flops.op_recomputed_matmuls), at their widths,
not the attention core (the SDPA's outputs are saved), every memory-bound op as under full (only matmuls,
the SDPA, reduce-scatters and amax are on the op list) and, under FP8, every linear's cast of X (each is
a PREFER_RECOMPUTE op the eager recompute runs again).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

import sympy as sp

from . import flops
from .axes import run_data_schedule
from .hybrid import expert_tp_size
from .memory import MTP_SHARES, expert_activation_bytes, layer_activation_bytes, loss_kind, module_bytes, mtp_kind, scores
from .recipes import CAST, CAST_COPIES, CAST_READ
from .stages import block_share
from .settings import ROWWISE_CAST_SHARE as ROWWISE_CAST_SHARE_READ, fp8_tp_gather_of
from ..core.symbols import (D_mtp, E, E_s, F, F_e, L, L_att, L_moe, L_ssm, V, a, a_ssm, b, c, d, d_nope, d_rope, d_ssm, d_v, e,
                            eta, eta_fp4, eta_fp8, g_ssm, h, h_kv, h_lat, eta_attn, hbm, k, kappa, kappa_moe, kv_lora, m, n_ssm,
                            p, peak, peak_fp4, peak_fp8, q_lora, s, t, w_half, w_half_expert, L_bf16)
from ..core import symbols as S
from ..presets.systems import PUBLISHED_KERNELS, absent_filled, low_dtype


@dataclass(frozen=True)
class Fitted:
    """A constant of the step model fitted on measured runs: its CLI name, what it means, and the
    range a fit searches (the fit refuses a value at either end as undetermined by the runs)."""
    name: str
    meaning: str
    low: float
    high: float


#: the step model's fitted constants, by name: what a hardware preset's or file's ``step_time`` block holds
#: (a block without w_half is read as w_half = 0, the shape-independent model it was fitted with:
#: symcomm.presets.systems.STEP_TIME_ABSENT)
FITTED = {f.name: f for f in (
    Fitted("eta", "share of the datasheet bf16 matmul peak the bf16 matmuls reach at large shapes", 0.30, 1.00),
    Fitted("eta_fp8", "share of the datasheet FP8 matmul peak the FP8 matmuls reach at large shapes", 0.30, 1.00),
    Fitted("w_half", "GEMM width MNK/(MK + KN + MN) at which a matmul reaches half its large-shape share "
                     "(0 = shape-independent)", 0.0, 4096.0),
    Fitted("kappa", "HBM passes over each activation byte by the memory-bound kernels (forward + backward)", 0.0, 20.0),
    Fitted("eta_attn", "share of the datasheet bf16 peak the flash-attention core reaches (its forward and its "
                       "backward, the FLOPs it runs)", 0.10, 1.00),
    Fitted("w_half_expert", "GEMM width at which an MoE expert's grouped GEMM reaches half its large-shape share "
                            "(absent: w_half, the dense GEMMs' curve)", 0.0, 4096.0),
    Fitted("eta_fp4", "share of the datasheet FP4 matmul peak the NVFP4 matmuls reach at large shapes", 0.10, 1.00),
    Fitted("kappa_moe", "HBM-pass equivalents over each routed token copy's hidden vector per MoE layer (the dispatch, "
                        "the permutations and the combine around the experts; forward + backward; absent: 0)", 0.0, 400.0),
    # a named kernel's share (attention_kernel=fa2, triton, cudnn) is published per part (hardware attention_shares),
    # not fitted by the presets' script, whose fitting runs name none; a calibration on runs that name one fits it
    *(Fitted(f"eta_{kernel}", f"share of the datasheet bf16 peak {words} reaches (attention_kernel={kernel}: its "
                              "forward and its backward, the FLOPs it runs; absent: the part's published share)",
             0.10, 1.00) for kernel, words in PUBLISHED_KERNELS.items()),
)}
#: the attention kernels timed at a published share (attention_kernel=fa2, triton, cudnn) → that share's symbol, eta_<kernel>
KERNEL_SHARE = {kernel: S.SYMBOLS[f"eta_{kernel}"].symbol for kernel in PUBLISHED_KERNELS}
#: the flash-attention core's backward FLOPs over its forward's: five s × s GEMMs (S = QKᵀ recomputed, dV, dP,
#: dQ, dK) to two (S, P·V): Dao 2023, FlashAttention-2, Algorithm 2
FLASH_BACKWARD = sp.Rational(5, 2)


#: torchao float8's rowwise recipe (torchtitan's float8 recipe_name "rowwise"; Float8LinearRecipeName.ROWWISE,
#: pytorch/ao torchao/float8/config.py at 6243040, the commit torchtitan's 2025-06 async-TP benchmark names): the
#: input, the weight and the output gradient each scaled per row in e4m3 (ScalingGranularity.AXISWISE), and the
#: *_for_grad_* casts left unset take the same config (Float8LinearConfig.__post_init__), so all three GEMMs of a
#: linear run in FP8.  What its casts move, as torchao's own roofline counts them (torchao/testing/float8/
#: roofline_utils.py at 6243040, get_tensor_memory_traffic_ovhd_s, "rowwise"; a row's amax is read with the row, so
#: no separate amax pass): an input X or output gradient dY in two kernels, the first reading the bf16 tensor (2)
#: and writing its dim-0 FP8 copy (1) and a transposed bf16 copy (2), the second reading that copy (2) and writing
#: the dim-1 FP8 copy (1): 5 + 3 bytes per element; a weight in three, 2 + 1, 2·2 (the transpose), 2 + 1: 3 + 7
#: bytes, in every forward (torchao casts the weight in each Float8Linear forward, float8_linear.py
#: matmul_with_hp_or_float8_args: no cache over micro-batches).  Each tensor's first kernel is counted where its
#: dim-0 copy is used (X and W: forward; dY: backward), the rest in the backward.  The fp32 scale of each row
#: (4 bytes per row of K elements) is left out.
ROWWISE = "fp8_rowwise"
ROWWISE_ACT = (sp.Integer(5), sp.Integer(3))
ROWWISE_WEIGHT = (sp.Integer(3), sp.Integer(7))
#: the backward's two GEMMs (grad_input, grad_weight: Float8LinearConfig's gemm_config_grad_input and
#: gemm_config_grad_weight, use_fast_accum False) run rowwise without fast accumulation, which torchao routes to the
#: tensorwise cuBLAS kernel with unit scales and rescales the bf16 output after it (torchao/float8/float8_ops.py at
#: 6243040, addmm_float8_unwrapped: ``output *= post_inverse_scale``): one more read and write of each output
#: element, 2 + 2 bytes, over dX (M × K) and dW (K × N)
ROWWISE_RESCALE = sp.Integer(4)
#: torchao's rowwise casts at this share of the HBM bandwidth (symcomm.training.settings.ROWWISE_CAST_SHARE says why)
ROWWISE_CAST_SHARE = sp.Rational(ROWWISE_CAST_SHARE_READ)


#: bytes per element the eager memory-bound ops of torchtitan's Llama block move beyond their fused form (compile=0,
#: :func:`eager_bytes`), forward, each op reading its inputs and writing its output once (pytorch/torchtitan at
#: 9dec370a: torchtitan/models/norms.py RMSNorm, the config's norm_type "rmsnorm"; torchtitan/models/llama/model.py
#: apply_rotary_emb, FeedForward):
#: RMSNorm over h, eagerly x.float() 2 + 4, pow(2) 4 + 4, mean 4, x·rsqrt 4 + 4, type_as 4 + 2, ·weight 2 + 2 = 36,
#: fused one read and one write, 2 + 2: 32 more; rotary over the query and key widths, .float() 2 + 4, the complex
#: product 4 + 4, type_as 4 + 2 = 20, fused 2 + 2: 16 more; SwiGLU over F (gated=1), silu 2 + 2 and the product
#: 2 + 2 + 2 = 10, fused 2 + 2 + 2 = 6: 4 more.  The repeat_kv copy, the residual adds and the SDPA output's
#: transpose are counted alike both ways (no difference).  The backward of each eager op is taken as twice its
#: forward (the convention of κ: forward one third of the passes), a full or op recompute runs the forward again.
EAGER_NORM, EAGER_ROTARY, EAGER_SWIGLU = sp.Integer(32), sp.Integer(16), sp.Integer(4)

#: HBM bytes Megatron-Core's unfused vocab-parallel cross-entropy moves per logit element (token × entry of the
#: GPU's V/t), (forward, backward): megatron/core/tensor_parallel/cross_entropy.py at NVIDIA/Megatron-LM f2e5db402c,
#: the loss Megatron-LM runs unless --cross-entropy-loss-fusion (arguments.py there: off by default), each op one
#: kernel reading its operands and writing its result once.  Forward (_VocabParallelCrossEntropy.forward):
#: .float() of the bf16 logits 2 + 4, max over the vocabulary 4, in-place subtract 4 + 4, exp in place 4 + 4,
#: sum 4, the softmax's div_ 4 + 4 = 38.  Backward: grad_input.mul_(grad_output) 4 + 4, then autograd casts the
#: fp32 gradient to the bf16 logits' dtype 4 + 2 = 14.  The target gathers and the tensor-parallel all-reduces
#: are per token, not per logit (left out).  te_fused, Transformer Engine's kernels (transformer_engine/pytorch/
#: triton/cross_entropy.py and common/triton/cross_entropy.py at NVIDIA/TransformerEngine d0067d0d), the loss
#: Megatron-Bridge's performance scripts run (cross_entropy_fusion_impl "te"): forward online_softmax_kernel reads the
#: bf16 logits 2, cross_entropy_kernel reads them again 2 and writes the fp32 gradient 4 = 8; backward
#: element_mul_kernel scales it in place 4 + 4 (skipped only for a scalar grad_output of 1) and autograd casts it
#: to the logits' bf16 4 + 2 = 14.  eager, torchtitan's loss without torch.compile (F.cross_entropy of the logits'
#: fp32 copy: symcomm.training.memory.TORCHTITAN_LOSS), each op one kernel reading its operands and writing its result
#: once.  At t = 1, PyTorch's CUDA kernels (pytorch/pytorch aten/src/ATen/native/cuda/SoftMax.cu at e9865f53, Loss.cu;
#: read as stored, not at the benchmarks' torch commits): forward .float() 2 + 4, host_softmax's cunn_SoftMaxForward
#: (a row of 128k fp32 exceeds the shared-memory variant) reads the row three times (its max, its sum of exponentials,
#: the write pass) and writes the log-probabilities once, 12 + 4, nll_loss one element per token (left out) = 22;
#: backward nll_loss_backward's zeroed gradient 4 (its per-token scatter left out), cunn_SoftMaxBackward's sum over the
#: incoming gradient 4 and its pass reading it and the saved output and writing the input gradient 4 + 4 + 4,
#: autograd's cast to bf16 4 + 2 = 26 (an upper bound where L2 serves a re-read row).  At t > 1, torch's loss_parallel
#: (torch/distributed/tensor/parallel/loss.py at 02eef6b8: _log_softmax, _nll_loss_and_log_softmax_backward,
#: _log_softmax_backward_handler) on the local V/t shard: forward .float() 2 + 4, amax 4, x − max 4 + 4, exp 4 + 4,
#: sum 4, shifted − log Σ 4 + 4 = 38; backward zeros_like 4, exp of the log-probabilities 4 + 4, their sum with the
#: zeros 4 + 4 + 4, times the per-token gradient 4 + 4, the log-softmax backward a same-dtype no-op, autograd's cast to
#: bf16 4 + 2 = 38.  compiled is not counted here yet (0).  eager_bf16 (symcomm.training.memory.AUTOMODEL_LOSS), the
#: same kernels on the bf16 logits without the copy: forward cunn_SoftMaxForward's three reads and one write of a
#: bf16 row 2·3 + 2 = 8; backward the zeroed gradient 2, cunn_SoftMaxBackward's sum 2 and its pass 2 + 2 + 2 = 10,
#: no cast; with t > 1 on the whole vocabulary the loss gathers (t times the entries of V/t; the gather's own copies
#: left out): 8t and 10t; replicated_bf16 the same kernels on the whole logits the LM head returns: 8t and 10t.
#: xentropy_cuda, flash-attn 1.x's CrossEntropyLoss over its CUDA extension xentropy_cuda_lib (csrc/xentropy/
#: xentropy_kernel.cu at Dao-AILab/flash-attention v1.0.3, unchanged at v1.0.9), LLM Foundry's MPT default
#: loss_fn fused_crossentropy: forward cunn_SoftMaxXEntropyForward reads the bf16 row twice (its max and sum, then
#: its sum of exponentials) 2 + 2 = 4, writing only a loss and a log-sum-exp per token (left out); backward
#: cunn_SoftMaxXEntropyBackward reads the row 2 and writes the gradient in the logits' bf16 2 = 4.  xentropy_triton,
#: flash-attn 2.4's Triton kernels (flash_attn/ops/triton/cross_entropy.py at v2.4.2): forward
#: cross_entropy_fwd_kernel reads each block of the row once 2; backward cross_entropy_bwd_kernel reads it 2 and
#: writes the bf16 gradient 2 = 4.  Both over the GPU's V/t entries (their process_group splits the vocabulary).
EAGER_LOSS_T1, EAGER_LOSS_PARALLEL = (sp.Integer(22), sp.Integer(26)), (sp.Integer(38), sp.Integer(38))
LOSS_PASS_BYTES = {"vocab_parallel": (sp.Integer(38), sp.Integer(14)), "te_fused": (sp.Integer(8), sp.Integer(14)),
                   "eager_bf16": (8 * t, 10 * t), "replicated_bf16": (8 * t, 10 * t),
                   "xentropy_cuda": (sp.Integer(4), sp.Integer(4)), "xentropy_triton": (sp.Integer(2), sp.Integer(4)),
                   "eager": tuple(sp.Piecewise((one, sp.Eq(t, 1)), (parallel, True))
                                  for one, parallel in zip(EAGER_LOSS_T1, EAGER_LOSS_PARALLEL))}

#: the frameworks whose weight-gradient GEMMs accumulate into the gradient buffer (main_grad) in place:
#: Megatron-LM's --gradient-accumulation-fusion, on unless --no-gradient-accumulation-fusion (arguments.py at
#: NVIDIA/Megatron-LM f2e5db402c), handed to Transformer Engine's linears as fuse_wgrad_accumulation
#: (megatron/core/extensions/transformer_engine.py there) and run by Megatron's own linears (the LM head:
#: tensor_parallel/layers.py, wgrad_gemm_accum_fp32 / _fp16) as a GEMM with β = 1 into main_grad, whose element
#: type is the gradient buffer's (fp32 under grad_reduce_in_fp32, which --bf16 forces there).  Each micro-batch
#: reads and writes main_grad (2 × its bytes per weight element) where the width term counts one 16-bit write:
#: 2 · grad bytes − 2 more bytes per weight element, at the HBM bandwidth
WGRAD_ACCUMULATION_FRAMEWORKS = ("megatron",)


@dataclass(frozen=True)
class Gemm:
    """``count`` matmuls (rows × inner)·(inner × cols) of one layer's forward on one GPU and micro-batch;
    ``fp8``: a linear layer's GEMM, run in FP8 under an FP8 recipe (the LM head is not); ``grouped``: the routed
    experts' GEMMs, one grouped GEMM over the local experts, on their own width curve (w_half_expert)."""
    name: str
    rows: sp.Expr
    inner: sp.Expr
    cols: sp.Expr
    count: sp.Expr = sp.Integer(1)
    fp8: bool = True
    grouped: bool = False

    @property
    def half_width(self) -> sp.Symbol:
        """The width at which this GEMM reaches half its large-shape share: w_half, w_half_expert if grouped."""
        return w_half_expert if self.grouped else w_half

    @property
    def flops(self) -> sp.Expr:
        return 2 * self.count * self.rows * self.inner * self.cols

    @property
    def moved(self) -> sp.Expr:
        """Elements read and written: both operands and the product."""
        M, K, N = self.rows, self.inner, self.cols
        return self.count * (M * K + K * N + M * N)

    @property
    def weights(self) -> sp.Expr:
        """Elements of the weight (inner × cols, each of the ``count`` matmuls): what its weight gradient writes."""
        return self.count * self.inner * self.cols

    @property
    def width(self) -> sp.Expr:
        """w = MNK/(MK + KN + MN): FLOPs per element moved, halved."""
        M, K, N = self.rows, self.inner, self.cols
        return M * K * N / (M * K + K * N + M * N)


def efficiency(width, large=eta):
    """Share of peak a GEMM of width w reaches: η·w/(w + w_half) (η_fp8 for an FP8 GEMM)."""
    return large * width / (width + w_half)


def attention_gemms(tokens, attention: str = "mha") -> list[Gemm]:
    """The attention block's linear GEMMs on one GPU: multi-/grouped-query QKV and output; or MLA's five
    projections (symcomm.training.flops.MEGATRON_MLA: q down h → q_lora and up q_lora → a·(d_nope + d_rope), or
    one h → a·(d_nope + d_rope) without query compression; kv down h → kv_lora + d_rope, kv up kv_lora →
    a·(d_nope + d_v), output a·d_v → h), each counted split over t as the FLOPs count them."""
    if attention != "mla":
        q = flops.query_width(attention)
        return [Gemm("QKV", tokens, h, (q + 2 * h_kv) / t), Gemm("attention output", tokens, q / t, h)]
    head = a * (d_nope + d_rope)
    query = sp.Piecewise((h * head / t, sp.Eq(q_lora, 0)), (q_lora * (h + head) / t, True))
    # the query path's two GEMMs folded into one of the same FLOPs and widths h → query/h (a width-weighted
    # stand-in: q_lora = 0 has one GEMM, else two; their sum is what flops.mla_query_width counts)
    return [Gemm("MLA query", tokens, h, query / h),
            Gemm("MLA kv down", tokens, h, (kv_lora + d_rope) / t),
            Gemm("MLA kv up", tokens, kv_lora, a * (d_nope + d_v) / t),
            Gemm("attention output", tokens, a * d_v / t, h)]


def layer_gemms(tokens, gated: bool, moe: bool, attention: str = "mha", expert_tp: str = "tp",
                latent: bool = False) -> tuple[Gemm, ...]:
    """The linear GEMMs of one layer's forward on one GPU, ``tokens`` = T per GPU and micro-batch (the
    list of the module docstring); the MLP's or the experts' by ``moe``.  The routed experts split over the expert
    tensor-parallel size etp (``expert_tp``: t, 1 or t_e, hybrid.expert_tp_size), each GPU running 1/etp of its
    experts' width on the rows its etp ranks received, etp/t of the T·k copies (expert_tp = 1: its experts whole on
    its own 1/t of them; the same FLOPs, other shapes)."""
    up = 2 if gated else 1
    out = attention_gemms(tokens, attention)
    if not moe:
        return tuple(out + [Gemm("FC1", tokens, h, up * F / t), Gemm("FC2", tokens, F / t, h)])
    split = expert_tp_size(expert_tp)
    per_expert = tokens * k * e * split / (E * t)
    # LatentMoE (latent): the routed experts h_lat wide, and the two projections, duplicated on every TP rank, on the
    # rank's own tokens (1/t of them: MoE with t > 1 runs sequence parallel)
    width = h_lat if latent else h
    projections = [Gemm("MoE latent down-projection", tokens / t, h, h_lat),
                   Gemm("MoE latent up-projection", tokens / t, h_lat, h)] if latent else []
    return tuple(out + projections + [Gemm("expert FC1", per_expert, width, up * F_e / split, E / e, grouped=True),
                                      Gemm("expert FC2", per_expert, F_e / split, width, E / e, grouped=True),
                                      Gemm("shared expert FC1", tokens, h, up * F_e / t, E_s),
                                      Gemm("shared expert FC2", tokens, F_e / t, h, E_s)])


def op_gemms(tokens, gated: bool, attention: str = "mha") -> tuple[Gemm, ...]:
    """The GEMMs recompute=op runs again in one layer's backward on one GPU (symcomm.training.flops.
    op_recomputed_matmuls): column-parallel ones split over t in their output, row-parallel ones in their input;
    wk is K alone (the forward's fused QKV count is one GEMM: here torchtitan's three are apart)."""
    return tuple(Gemm(name, tokens, inner / t if split == "row" else inner, outer / t if split == "column" else outer)
                 for name, inner, outer, split in flops.op_recomputed_matmuls(gated, attention))


#: the frameworks whose dense block runs each projection as its own GEMM (fused_projections=0 by default): torchtitan's
#: Llama (framework fsdp2) holds wq, wk, wv and w1, w3 as separate nn.Linear modules, called one by one on the same
#: input (``self.wq(x), self.wk(x), self.wv(x)``; ``self.w2(F.silu(self.w1(x)) * self.w3(x))``): pytorch/torchtitan
#: torchtitan/models/llama/model.py at 9dec370a (Attention, FeedForward) and torchtitan/models/llama3/model.py at
#: 820504e2; Megatron-Core fuses them (linear_qkv, linear_fc1 of gated width 2F)
SEPARATE_PROJECTIONS = ("fsdp2",)


def fused_projections(run) -> bool:
    """Does ``run`` project Q, K, V with one GEMM and a gated MLP's gate and up with one (its fused_projections;
    framework: all but :data:`SEPARATE_PROJECTIONS`)?"""
    return run.framework not in SEPARATE_PROJECTIONS if run.fused_projections is None else run.fused_projections


def projection_parts(g: Gemm, attention: str, gated: bool) -> tuple[Gemm, ...]:
    """The GEMMs a fused projection of :func:`layer_gemms` runs as when each projection is its own linear
    (fused_projections=0): QKV as Q (q/t wide), K and V (h_kv/t each); a gated FC1 as gate and up (F/t each); any other
    GEMM as itself.  The same rows, inner size and FLOPs; narrower, so the width term grows."""
    if g.name == "QKV":
        widths = (("Q", flops.query_width(attention) / t), ("K", h_kv / t), ("V", h_kv / t))
    elif g.name == "FC1" and gated:
        widths = (("FC1 gate", F / t), ("FC1 up", F / t))
    else:
        return (g,)
    return tuple(Gemm(name, g.rows, g.inner, cols, g.count, g.fp8, g.grouped) for name, cols in widths)


def as_run(pairs, run, attention: str) -> tuple[tuple[Gemm, sp.Expr], ...]:
    """(GEMM, times) pairs of :func:`stage_gemms` as ``run``'s framework calls them: unchanged when its projections
    are fused (:func:`fused_projections`), else each fused projection as its parts (:func:`projection_parts`)."""
    if fused_projections(run):
        return tuple(pairs)
    return tuple((part, n) for g, n in pairs for part in projection_parts(g, attention, run.gated))


def lm_head_gemm(tokens) -> Gemm:
    return Gemm("LM head", tokens, h, V / t, fp8=False)


def mla_up_gemms(tokens) -> tuple[Gemm, ...]:
    """MLA's up projections on one GPU, what recompute_mla_up runs again before the core's backward (Megatron-Core's
    mla_up_proj: symcomm.training.flops.mla_up_per_token): the query's q_lora → a·(d_nope + d_rope)/t (from h without
    query compression) and K, V's kv_lora → a·(d_nope + d_v)/t."""
    query_in = sp.Piecewise((h, sp.Eq(q_lora, 0)), (q_lora, True))
    return (Gemm("MLA query up", tokens, query_in, a * (d_nope + d_rope) / t),
            Gemm("MLA kv up", tokens, kv_lora, a * (d_nope + d_v) / t))


def mamba_gemms(tokens) -> tuple[Gemm, ...]:
    """A Mamba-2 mixer's two linear GEMMs on one GPU (symcomm.training.flops.MEGATRON_MAMBA): in_proj T × h ·
    h × (2·d_ssm + 2·g_ssm·n_ssm + a_ssm)/t (column-parallel: heads and groups split over t) and out_proj
    T × d_ssm/t · d_ssm/t × h (row-parallel)."""
    return (Gemm("Mamba in_proj", tokens, h, (2 * d_ssm + 2 * g_ssm * n_ssm + a_ssm) / t),
            Gemm("Mamba out_proj", tokens, d_ssm / t, h))


def stage_gemms(tokens, gated: bool, moe: bool, layers, lm_head: bool, attention: str = "mha",
                expert_tp: str = "tp", mamba: bool = False, latent: bool = False) -> tuple[tuple[Gemm, sp.Expr], ...]:
    """(GEMM, times per micro-batch) over a stage of ``layers`` layers (MoE layers in the model's proportion
    L_moe/L, as :func:`stage_forward_flops` counts them; with ``mamba`` each block kind of the hybrid in its
    proportion, L_att/L, L_ssm/L, L_moe/L and the dense rest) and, when ``lm_head``, the LM head."""
    dense = layer_gemms(tokens, gated, False, attention)
    blocks = len(attention_gemms(tokens, attention))
    if mamba:
        out = [(g, layers * L_att / L) for g in dense[:blocks]]
        out += [(g, layers * flops.dense_layers(moe) / L) for g in dense[blocks:]]
        out += [(g, layers * L_ssm / L) for g in mamba_gemms(tokens)]
        if moe:
            out += [(g, layers * L_moe / L)
                    for g in layer_gemms(tokens, gated, True, attention, expert_tp, latent)[blocks:]]
        return tuple(out + ([(lm_head_gemm(tokens), sp.Integer(1))] if lm_head else []))
    out = [(g, layers) for g in dense[:blocks]]                   # attention: every layer
    if moe:
        out += [(g, layers * (L - L_moe) / L) for g in dense[blocks:]]
        out += [(g, layers * L_moe / L) for g in layer_gemms(tokens, gated, True, attention, expert_tp)[blocks:]]
    else:
        out += [(g, layers) for g in dense[blocks:]]
    return tuple(out + ([(lm_head_gemm(tokens), sp.Integer(1))] if lm_head else []))


def with_bf16_layers(pairs) -> tuple[tuple[Gemm, sp.Expr], ...]:
    """(GEMM, times) pairs with the share L_bf16/L of every low-precision layer GEMM run in bf16 instead
    (bf16_layers=1: Megatron-Core's first and last layers in bf16, a stage holding them in the model's proportion)."""
    out = []
    for g, n in pairs:
        if g.fp8:
            out += [(g, n * (L - L_bf16) / L), (replace(g, fp8=False), n * L_bf16 / L)]
        else:
            out.append((g, n))
    return tuple(out)


def low_rate(precision: str) -> sp.Expr:
    """FLOP/s of a low-precision recipe's linear GEMMs at large shapes: peak_fp4 · η_fp4 under nvfp4,
    peak_fp8 · η_fp8 under the FP8 recipes (symcomm.presets.systems.low_dtype: the one rule of which recipe runs which type)."""
    return peak_fp4 * eta_fp4 if low_dtype(precision) == "fp4" else peak_fp8 * eta_fp8


def cast_bytes(gemms, precision: str) -> tuple[sp.Expr, sp.Expr, sp.Expr]:
    """HBM bytes of the FP8 casts of one micro-batch over these (GEMM, times) pairs: (the casts of the activations X
    in the forward, the weights' casts in the forward, the casts of the backward).  Transformer Engine's recipes
    (:data:`CAST`): each cast reads the bf16 tensor (2 bytes, and 2 more for per-tensor current scaling's amax) and
    writes a rowwise and a columnwise FP8 copy with their scales, the weights once per step (1/m of them per
    micro-batch), the backward casting the output gradients dY.  torchao's rowwise recipe (:data:`ROWWISE`): X, W
    and dY by torchao's roofline, the weights in every micro-batch, and the backward's rescale of dX and dW
    (:data:`ROWWISE_RESCALE`) with the backward's casts."""
    fp8 = [(g, n) for g, n in gemms if g.fp8]
    x_el = sum((n * g.count * g.rows * g.inner for g, n in fp8), sp.Integer(0))
    w_el = sum((n * g.count * g.inner * g.cols for g, n in fp8), sp.Integer(0))
    dy_el = sum((n * g.count * g.rows * g.cols for g, n in fp8), sp.Integer(0))
    if precision == ROWWISE:
        (x_fwd, x_back), (w_fwd, w_back) = ROWWISE_ACT, ROWWISE_WEIGHT
        back = x_el * x_back + w_el * w_back + dy_el * sum(ROWWISE_ACT) + ROWWISE_RESCALE * (x_el + w_el)
        return x_el * x_fwd, w_el * w_fwd, back
    amax, act_scale, weight_scale, element = CAST[precision]
    per_act = CAST_READ + amax + CAST_COPIES * (element + act_scale)
    per_weight = CAST_READ + amax + CAST_COPIES * (element + weight_scale)
    return x_el * per_act, w_el * per_weight / m, dy_el * per_act


@dataclass(frozen=True)
class MicroBatchCompute:
    """One micro-batch on one GPU of a stage: forward and backward seconds (recompute included in
    the backward) and, within them, the attention core's forward and backward seconds (what context parallel's
    ring transfers hide behind) and the routed experts' grouped GEMMs' (what Megatron's expert-parallel overlap pairs
    the other micro-batch's all-to-alls with: symcomm.training.overlap.a2a_exposed)."""
    forward: sp.Expr
    backward: sp.Expr
    core_forward: sp.Expr = sp.Integer(0)
    core_backward: sp.Expr = sp.Integer(0)
    expert_forward: sp.Expr = sp.Integer(0)
    expert_backward: sp.Expr = sp.Integer(0)

    def __add__(self, other: "MicroBatchCompute") -> "MicroBatchCompute":
        return MicroBatchCompute(*(a + b for a, b in zip(self.parts, other.parts)))

    @property
    def parts(self) -> tuple:
        return (self.forward, self.backward, self.core_forward, self.core_backward, self.expert_forward,
                self.expert_backward)

    @property
    def total(self) -> sp.Expr:
        return self.forward + self.backward


def stage_forward_flops(micro, gated: bool, moe: bool, layers, lm_head: bool, attention: str = "mha",
                        mamba: bool = False, latent: bool = False) -> sp.Expr:
    """Forward FLOPs of one micro-batch of ``micro`` sequences over ``layers`` layers of a stage (MoE
    layers in the model's proportion L_moe/L: an approximation where the recipe puts the dense layers
    on one stage, as DeepSeek-V3's first 3) and, when ``lm_head``, the LM head; before the split over
    the stage's t·c GPUs.  The experts' share is the same with either expert tensor-parallel size:
    with expert_tp = t a GPU runs 1/t of each expert on the t-fold gathered tokens, with 1 the whole
    expert on its own 1/t of them (sequence parallel), under balanced routing."""
    if mamba:
        body = layers * flops.hybrid_layers_forward(micro, s, gated, moe, attention, latent) / L
    elif moe:
        body = layers * ((L - L_moe) * flops.layer_forward(micro, s, gated, attention=attention)
                         + L_moe * flops.moe_layer_forward(micro, s, gated, attention)) / L
    else:
        body = layers * flops.layer_forward(micro, s, gated, attention=attention)
    return body + (flops.lm_head_forward(micro, s) if lm_head else 0)


def eager_bytes(run, tokens, layers) -> sp.Expr:
    """The forward's HBM bytes the eager memory-bound ops move beyond their fused form on one GPU (:data:`EAGER_NORM`
    and its neighbours): two RMSNorms per layer over h on the tokens a GPU holds (T/t with sequence parallelism, T
    without), rotary over the local query and key widths (h + h_kv)/t, SwiGLU over F/t (gated=1)."""
    normed = tokens / t if run.sp else tokens
    swiglu = EAGER_SWIGLU * F / t if run.gated else sp.Integer(0)
    return layers * (2 * EAGER_NORM * h * normed + tokens * (EAGER_ROTARY * (h + h_kv) / t + swiglu))


#: the frameworks whose FP8 linears are torchao's Float8Linear (torchtitan: framework fsdp2)
TORCHAO_FRAMEWORKS = ("fsdp2",)
#: why their weights are cast in every micro-batch: Float8Linear.forward_fp8_matmul calls get_weight_scale and
#: cast_weight_to_float8_t on the bf16 weight at every forward call, with no cache over micro-batches (pytorch/ao
#: torchao/float8/float8_linear.py at 4f8021f2, Dec 2024; Transformer Engine's is_first_microbatch cache has no
#: counterpart there), so under a pipeline's m micro-batches m times, and once more in a full recompute's forward;
#: with fp8_param_gather the FSDP all-gather hands it FP8 weights (the shard cast before each gather), counted as before
TORCHAO_WEIGHT_CAST = "pytorch/ao torchao/float8/float8_linear.py at 4f8021f2 (forward_fp8_matmul)"

#: PyTorch's context parallel (framework fsdp2): what its ring moves through HBM beside the flash-attention calls, in
#: bytes per element of the local query width (Q) and of the local K, V width (KV), on the GPU of the last CP rank
#: (with the round-robin load balance, on by default, it runs every step on its whole query: the busiest).  Read in
#: pytorch/pytorch torch/distributed/tensor/experimental/_attention.py (as stored, the mesh/seq_dim version of late
#: 2024; the benchmark's torch 1963fc8 not read), run eagerly in the DTensor dispatcher, each op one HBM pass:
#: forward (_templated_ring_attention, _SDPAMerger with convert_to_f32 True): a step's output upcast to fp32 (read 2,
#: write 4: 6 Q), merged at every step after the first (out − block_out, times the sigmoid of the lse difference,
#: subtracted from out: 3 fp32 ops, read 8 + 4 + 8, write 4 + 4 + 4: 32 Q), the result cast back once (6 Q), and the
#: K, V concatenated for the rotater before every step but the last (torch.cat of K and V, read 2, write 2: 8 KV);
#: backward (_templated_ring_attention_backward): fp32 zeros for dQ, dK, dV (4 Q + 8 KV), dQ accumulated at every
#: step (fp32 += bf16: read 6, write 4: 10 Q), dK, dV accumulated at the first step (20 KV) and, at the others, into
#: their first half and concatenated back (_partial_update: 5 + 8 per element, 26 KV), concatenated for the
#: all-to-all at every step (16 KV), K, V concatenated as in the forward (8 KV, all steps but the last), dQ and the
#: returned dK, dV cast back (6 Q + 12 KV).  The lse tensors (one number per head and token, 1/128 of a head's
#: width) are left out.  Per layer, over c steps: forward (38c − 26)·Q + 8(c − 1)·KV; backward (10c + 10)·Q +
#: (50c + 6)·KV.
CP_RING_FORWARD = ((38, -26), (8, -8))
CP_RING_BACKWARD = ((10, 10), (50, 6))


def cp_ring_bytes(run, tokens, layers) -> tuple[sp.Expr, sp.Expr]:
    """(forward, backward) HBM bytes PyTorch's context-parallel ring moves beside its attention calls on one GPU for
    ``layers`` layers of ``tokens`` local tokens (:data:`CP_RING_FORWARD`): framework fsdp2 with a ring (cp other
    than ulysses) when c ≥ 2, else 0 (without context parallelism the plain SDPA call runs)."""
    if run.framework != "fsdp2" or run.cp == "ulysses":
        return sp.Integer(0), sp.Integer(0)
    query, kv = tokens * h / t, tokens * (h_kv if run.gqa else h) / t

    def count(per):
        (q_per_c, q_fixed), (kv_per_c, kv_fixed) = per
        total = layers * (query * (q_per_c * c + q_fixed) + kv * (kv_per_c * c + kv_fixed))
        return sp.Piecewise((total, sp.Ge(c, 2, evaluate=False)), (0, sp.true), evaluate=False)

    return count(CP_RING_FORWARD), count(CP_RING_BACKWARD)


def _summed(pairs, what) -> sp.Expr:
    return sum((n * getattr(g, what) for g, n in pairs), sp.Integer(0))


def _width_term(pairs) -> sp.Expr:
    """Σ 2 · half-width · elements moved over (GEMM, times) pairs: the FLOPs the width term adds (exactly 0
    when every half-width is 0)."""
    return _width_sum(tuple(pairs))


@functools.lru_cache(maxsize=None)
def _width_sum(pairs: tuple) -> sp.Expr:
    # once per distinct GEMMs (immutable values): the option combinations of a kernel family ask for the same stage's
    # sum again and again (python -m symcomm.tools.codegen)
    return sum((2 * n * g.half_width * g.moved for g, n in pairs), sp.Integer(0))


#: the GEMMs of :func:`layer_gemms` each recompute module runs again: mlp the dense MLP's, moe every GEMM of the MoE
#: layer's MLP side (routed and shared experts, LatentMoE's projections)
MODULE_GEMMS = {"mlp": ("FC1", "FC2"), "moe": ("expert FC", "shared expert FC", "MoE latent")}
#: the linears whose input a module's checkpoint frees and which keep it unquantized under a low precision
#: (set_save_original_input: moe/experts.py, moe/moe_layer.py set_for_recompute_pre_mlp_layernorm,
#: transformer_layer.py at d98e8a64), cast again for their weight gradients
MODULE_RECASTS = {"moe_act": ("expert FC2",), "layernorm": ("shared expert FC1", "MLA query", "MLA kv down")}


def _module_gemm(name: str, modules) -> bool:
    return any(name.startswith(prefix) for module in modules for prefix in MODULE_GEMMS.get(module, ()))


def _recast(name: str, modules) -> bool:
    # under moe the whole MoE layer is rerun, its casts with it (:data:`MODULE_GEMMS`)
    return any(name == what for module in modules for what in MODULE_RECASTS.get(module, ())
               if not ("moe" in modules and name.startswith(("expert", "shared"))))


def attention_kind(run) -> str:
    """The attention the FLOP counts take for ``run`` (symcomm.training.flops.kind_of_attention)."""
    return flops.kind_of_attention(run.attention, run.q_width)


def mtp_gemm(tokens) -> Gemm:
    """A multi-token-prediction depth's eh_proj on one GPU (symcomm.training.flops.MEGATRON_MTP): T × 2h · 2h × h/t,
    column-parallel, a linear run in the recipe's FP8 (Megatron-Core's fp8 context around _concat_embeddings)."""
    return Gemm("MTP eh_proj", tokens, 2 * h, h / t)


def mtp_setting(run):
    """The run setting an MTP depth computes under (multi_token_prediction.py at d98e8a64): no MTP of its own, none of
    the first/last bf16 layers (the depths are outside the decoder), no recompute where recompute=block (Megatron-Core
    warns and skips MTP recompute under block; uniform full recompute checkpoints each depth), and bf16 GEMMs under
    an FP4 recipe (_proj_and_transformer_layer enters the fp8 context only: "currently ignoring FP4 in MTP layers")."""
    return replace(run, mtp="0", bf16_layers=False,
                   recompute="none" if run.recompute == "block" else run.recompute,
                   precision="bf16" if low_dtype(run.precision) == "fp4" else run.precision)


def mtp_micro_batch(run) -> MicroBatchCompute:
    """The D_mtp multi-token-prediction depths of one micro-batch on one GPU of the last stage: each its eh_proj, one
    layer of the decoder's last kind (two blocks with mamba=1) and the shared output head with its cross-entropy,
    timed as the stage's own layers and head are (:func:`micro_batch_compute` on :func:`mtp_setting`, the block shares
    of :data:`MTP_SHARES`)."""
    tokens = b / (d * m) * s / c
    blocks = 2 if run.mamba else 1
    one = micro_batch_compute(mtp_setting(run), layers=sp.Integer(blocks), lm_head=True,
                              extra=((mtp_gemm(tokens), sp.Integer(1)),))
    shares = MTP_SHARES[mtp_kind(run.mamba, run.moe)]
    return MicroBatchCompute(*(D_mtp * x.xreplace(shares) for x in one.parts))


#: how Transformer Engine's userbuffers overlap (tp_overlap=1 under Megatron-Core) splits the GEMMs beside the
#: tensor-parallel collectives: ring_exchange (QKV's and FC1's forward, the attention output's and FC2's input
#: gradients) into tp_size GEMMs of M/t rows each, one per arriving chunk; pipeline (the attention output's and FC2's
#: forward, feeding the reduce-scatter) into num_splits = 4; bulk (QKV's and FC1's backward) whole, beside a
#: collective of its own
UB_CHUNKS = ("NVIDIA/TransformerEngine transformer_engine/pytorch/module/base.py at d0067d0d (initialize_ub: the "
             "default methods ring_exchange for qkv_fprop, fc1_fprop, proj_dgrad, fc2_dgrad, pipeline for proj_fprop, "
             "fc2_fprop, bulk for qkv_dgrad, qkv_wgrad, fc1_dgrad, fc1_wgrad; num_splits tp_size for ring_exchange, 4 "
             "otherwise); NVIDIA-NeMo/Megatron-Bridge src/megatron/bridge/training/comm_overlap.py at 067f987d (the "
             "performance recipes' userbuffers_fp8_* configs: proj_fprop and fc2_fprop RingExchangeOverlapCfg, the "
             "bf16 ones PipelineOverlapCfg with num_splits 4)")
#: the frameworks whose tp_overlap=1 is Transformer Engine's userbuffers overlap (:data:`UB_CHUNKS`)
UB_FRAMEWORKS = ("megatron", "megatron_fsdp")
#: the dense block's GEMMs (their parts too, fused_projections=0) that userbuffers runs beside an all-gather in the
#: forward (column-parallel) and beside a reduce-scatter in the forward, an all-gather in the backward (row-parallel)
UB_COLUMN = frozenset(("QKV", "Q", "K", "V", "FC1", "FC1 gate", "FC1 up"))
UB_ROW = frozenset(("attention output", "FC2"))


def ub_chunk_elements(run, pairs) -> tuple[sp.Expr, sp.Expr]:
    """(forward, backward) elements one micro-batch's GEMMs in ``pairs`` ((GEMM, times) of a stage) move beyond
    what they move whole, where tp_overlap=1 runs them in Transformer Engine's chunks (:data:`UB_CHUNKS`; frameworks
    :data:`UB_FRAMEWORKS`): a GEMM (M × K)·(K × N) run as n GEMMs of M/n rows moves MK + n·KN + MN elements, its
    weight read n times, so each chunked pass adds (n − 1)·KN to its width term (the additive roofline of the module
    docstring; nothing at t = 1, where nothing is split).  Forward: QKV and FC1 in t chunks, the attention output and
    FC2 in 4 (bf16; t under the FP8 and FP4 recipes, whose configs ring-exchange them too); backward: the attention
    output's and FC2's input gradients in t.  (0, 0) without tp_overlap or in another framework (PyTorch's async TP
    is its own: symcomm.training.overlap.ASYNC_TP).  Counted for the dense block's four GEMMs (and the attention output
    of every block); the experts' grouped GEMMs and MLA's other projections are counted whole (not counted: any chunks
    of theirs)."""
    zero = sp.Integer(0)
    if not run.tp_overlap or run.framework not in UB_FRAMEWORKS:
        return zero, zero
    output_chunks = (sp.Piecewise((sp.Integer(1), sp.Eq(t, 1)), (sp.Integer(4), True)) if run.precision == "bf16"
                     else t)
    forward, backward = zero, zero
    for g, n in pairs:
        weight = g.count * g.inner * g.cols
        if g.name in UB_COLUMN:
            forward += n * (t - 1) * weight
        elif g.name in UB_ROW:
            forward += n * (output_chunks - 1) * weight
            backward += n * (t - 1) * weight
    return forward, backward


def micro_batch_compute(run, layers=None, lm_head: bool | None = None, extra: tuple = ()) -> MicroBatchCompute:
    """Compute of one micro-batch (b/(d·m) sequences) on one GPU of a stage holding ``layers``
    layers (default L/p) and, when ``lm_head`` (default: the run has embeddings), the LM head: the
    matmuls as the module docstring times them (FLOPs / (peak · η) and the width term w_half · 2 · elements
    moved / (peak · η); the FP8 recipe's linear GEMMs at peak_fp8 · η_fp8 and their casts at the HBM
    bandwidth), recompute as the run's mode runs it, and κ HBM passes over the activation bytes (memory.PASSED)
    (forward one third, backward two; a full or op recompute adds a third)."""
    layers = L / p if layers is None else layers
    lm_head = run.embeddings if lm_head is None else lm_head
    if lm_head and run.mtp_on:
        # multi-token prediction runs on the stage holding the output head (the last), after its layers
        return micro_batch_compute(replace(run, mtp="0"), layers, lm_head) + mtp_micro_batch(run)
    if run.recompute == "block":
        # the recomputing share of the layers as under full, the rest as under none: every count below is a sum over
        # layers but the LM head's and the loss's, which the none part takes (nothing recomputes them)
        share = block_share(run.schedule)
        again = micro_batch_compute(replace(run, recompute="full"), layers * share, False)
        kept = micro_batch_compute(replace(run, recompute="none"), layers * (1 - share), lm_head)
        return again + kept
    micro = b / (d * m)
    tokens = micro * s / c
    kind = attention_kind(run)
    # extra: GEMMs beside the layers' (an MTP depth's eh_proj: mtp_micro_batch), timed and recomputed as theirs
    gemms = stage_gemms(tokens, run.gated, run.moe, layers, lm_head, kind, run.expert_tp, run.mamba,
                        run.moe_latent) + tuple(extra)
    if run.bf16_layers:
        gemms = with_bf16_layers(gemms)
    # the GEMMs as the framework calls them (the same FLOPs; their widths): what the matmuls are timed on.  The FP8
    # casts stay counted on ``gemms``, once per distinct input (three separate linears on one input cast it three
    # times eagerly; not counted)
    shaped = as_run(gemms, run, kind)
    layer_gemms_only = stage_gemms(tokens, run.gated, run.moe, layers, False, kind, run.expert_tp, run.mamba,
                                   run.moe_latent) + tuple(extra)
    layer_pairs = as_run(with_bf16_layers(layer_gemms_only) if run.bf16_layers else layer_gemms_only, run, kind)
    op_pairs = [(g, layers) for g in op_gemms(tokens, run.gated, kind)] if run.recompute == "op" else []
    # recompute_mla_up: every layer's MLA up projections once more before the core's backward, in the recipe's
    # precision (Megatron-Core's CheckpointWithoutOutput(fp8=...)), their inputs cast again under FP8
    up_pairs = [(g, layers) for g in mla_up_gemms(tokens)] if run.recompute_mla_up else []
    # Megatron-Core's recompute modules (settings.RECOMPUTE_MODULES): the GEMMs a checkpoint runs again, in the
    # recipe's precision (te_checkpoint runs the forward's FP8 linears), and the inputs cast again under a low
    # precision: theirs, and those of the linears set to keep their original input (set_save_original_input: FC2
    # under moe_act; under layernorm the shared experts' FC1 and MLA's down projections), quantized again for their
    # weight gradients
    module_pairs = [(g, n) for g, n in layer_pairs if _module_gemm(g.name, run.modules)]
    recast_pairs = [(g, n) for g, n in gemms if _module_gemm(g.name, run.modules) or _recast(g.name, run.modules)]
    attention_layers = layers * L_att / L if run.mamba else layers
    counted = attention_layers * flops.attention_core(micro, s, kind) / (t * c)
    # causal attention: flash-attention kernels skip the score blocks above the diagonal, about half of the
    # s × s the FLOP convention counts (Dao 2023, FlashAttention-2, §3.1.1: "skip the computation of blocks
    # where the column indices are more than the row indices", ~1.7-1.8× faster causal); without flash
    # attention (Megatron-LM 2021-22) the whole masked matrix is computed
    core = counted / 2 if run.flash else counted
    fwd = (stage_forward_flops(micro, run.gated, run.moe, layers, lm_head, kind, run.mamba, run.moe_latent) / (t * c)
           - (counted - core) + _summed(extra, "flops"))
    rate = peak * eta
    # the core's forward seconds, and its backward's over them (module docstring)
    share = KERNEL_SHARE.get(run.attention_kernel, eta_attn)
    core_time, core_back = ((core / (peak * share), FLASH_BACKWARD) if run.flash
                            else (core / rate, sp.Integer(2)))
    # the chunked scans of mamba=1 (Mamba-2's SSD kernels, fused like the attention core and in bf16 under every
    # recipe) at the attention core's share of the bf16 peak, their backward twice their forward as a matmul's; no
    # recompute mode the hybrid takes reruns them (settings.MAMBA_RECOMPUTE)
    scan = layers * L_ssm / L * flops.ssd_scan(micro, s) / (t * c) if run.mamba else sp.Integer(0)
    scan_time = scan / (peak * share)
    rest = fwd - core - scan               # the linear GEMMs and the LM head, FLOPs
    fused = fused_grouped_mlp_savings(run, layers, gemms) if run.fused_grouped_mlp else None
    if run.precision == "bf16":
        # FLOPs / (peak·η), and the width term beside it (exactly 0 when w_half = 0)
        again = {"selective": core_time,
                 "full": core_time + (rest - (flops.lm_head_forward(micro, s) / (t * c) if lm_head else 0)) / rate,
                 "op": _summed(op_pairs, "flops") / rate,
                 "none": sp.Integer(0)}[run.recompute]
        extra_again = {"full": _width_term(layer_pairs), "op": _width_term(op_pairs)}.get(run.recompute, sp.Integer(0))
        extra = _width_term(shaped)
        # tp_overlap=1 under Transformer Engine: its GEMMs in the chunks userbuffers splits them into (the forward's
        # again where a full recompute reruns it)
        chunks_forward, chunks_backward = (2 * w_half * x / rate for x in ub_chunk_elements(run, shaped))
        forward = rest / rate + core_time + extra / rate + scan_time + chunks_forward
        again = again + (_summed(up_pairs + module_pairs, "flops") + _width_term(up_pairs + module_pairs)) / rate
        if run.recompute == "full":
            again = again + chunks_forward
        backward = (2 * rest / rate + core_back * core_time + again + (2 * extra + extra_again) / rate + 2 * scan_time
                    + chunks_backward)
    else:
        rate8 = low_rate(run.precision)
        low = [(g, n) for g, n in shaped if g.fp8]
        high = [(g, n) for g, n in shaped if not g.fp8]

        def matmul_time(pairs, at):
            return (_summed(pairs, "flops") + _width_term(pairs)) / at

        x, w, dy = cast_bytes(gemms, run.precision)
        # the casts' bytes at the bandwidth they reach: the HBM's, a share of it under torchao's rowwise recipe
        cast_rate = hbm * ROWWISE_CAST_SHARE if run.precision == ROWWISE else hbm
        if fused:
            # the casts the fused kernels make in their GEMMs' epilogues (fused_grouped_mlp_savings)
            x, dy = x - fused[1], dy - fused[2]
        recast = sp.Integer(0)
        if run.framework in TORCHAO_FRAMEWORKS and not run.fp8_param_gather:
            # torchao casts the weights in every forward call, the full recompute's too (TORCHAO_WEIGHT_CAST)
            w = w if run.precision == ROWWISE else w * m
            recast = w
        forward = core_time + matmul_time(high, rate) + matmul_time(low, rate8) + (x + w) / cast_rate + scan_time
        again = {"selective": core_time, "full": core_time + matmul_time(low, rate8) + (x + recast) / cast_rate,
                 "op": matmul_time(op_pairs, rate8) + x / cast_rate,
                 "none": sp.Integer(0)}[run.recompute]
        if up_pairs:
            again = again + matmul_time(up_pairs, rate8) + cast_bytes(up_pairs, run.precision)[0] / cast_rate
        if recast_pairs:
            again = (again + matmul_time([(g, n) for g, n in module_pairs if g.fp8], rate8)
                     + matmul_time([(g, n) for g, n in module_pairs if not g.fp8], rate)
                     + cast_bytes(recast_pairs, run.precision)[0] / cast_rate)
        # the userbuffers chunks' weight reads, each GEMM at its own rate (bf16_layers: some in bf16)
        low_chunks, high_chunks = ub_chunk_elements(run, low), ub_chunk_elements(run, high)
        chunks_forward = 2 * w_half * (low_chunks[0] / rate8 + high_chunks[0] / rate)
        forward += chunks_forward
        if run.recompute == "full":
            again = again + chunks_forward
        backward = (core_back * core_time + 2 * (matmul_time(high, rate) + matmul_time(low, rate8)) + again
                    + dy / cast_rate + 2 * scan_time + 2 * w_half * (low_chunks[1] / rate8 + high_chunks[1] / rate))
    touched = layer_activation_bytes("none", run.flash, run.sp, run.attention, run.moe, run.gated,
                                     run.expert_tp, mamba=run.mamba, latent=run.moe_latent, passed=True) * layers
    if fused:
        touched = touched - fused[0]
    if run.recompute in ("full", "op"):
        touched = touched * sp.Rational(4, 3)
    elif run.recompute == "selective" and not run.flash:
        touched = touched + sp.Rational(1, 3) * scores(micro) * layers
    memory_bound = kappa * touched / hbm
    if run.modules:
        # the modules' memory-bound forward (norms, activations, permutes) once more: the forward's third of κ's passes
        # over the bytes they do not keep, counted as ``touched`` is (memory.PASSED)
        backward += kappa * layers * module_bytes(run.modules, run.sp, run.attention, run.moe, run.gated,
                                                  run.expert_tp, mamba=run.mamba, latent=run.moe_latent,
                                                  passed=True) / (3 * hbm)
    routing = kappa_moe * routed_bytes(run, tokens, layers) / hbm
    if run.recompute == "full" or "moe" in run.modules:
        routing = routing * sp.Rational(4, 3)
    forward += routing / 3
    backward += 2 * routing / 3
    ring_forward, ring_backward = cp_ring_bytes(run, tokens, layers)
    # the ring's memory-bound passes: the forward's again wherever the recompute reruns the attention core
    forward += ring_forward / hbm
    backward += (ring_backward + (ring_forward if run.recompute in ("full", "selective") else 0)) / hbm
    backward += wgrad_accumulation_bytes(run, gemms) / hbm
    if lm_head:
        # the cross-entropy's passes over the micro-batch's logits (LOSS_PASS_BYTES), at the HBM bandwidth
        forward_bytes, backward_bytes = loss_pass_bytes(run, tokens)
        forward += forward_bytes / hbm
        backward += backward_bytes / hbm
    if run.eager:
        # compile=0: the eager ops' extra passes, forward once, backward twice, a full or op recompute once more
        extra = eager_bytes(run, tokens, layers) / hbm
        forward += extra
        backward += 2 * extra + (extra if run.recompute in ("full", "op") else 0)
    # the routed experts' grouped GEMMs alone: their forward, their backward twice it (input and weight gradients)
    # and a full recompute's rerun once more
    expert = _expert_seconds(shaped, run)
    return MicroBatchCompute(forward + memory_bound / 3, backward + 2 * memory_bound / 3, core_time,
                             core_back * core_time, expert,
                             (3 if run.recompute == "full" else 2) * expert)


def fused_grouped_mlp_savings(run, layers, gemms) -> tuple[sp.Expr, sp.Expr, sp.Expr]:
    """What fused_grouped_mlp=1 takes off one micro-batch on a stage of ``layers`` layers (symcomm.training.settings;
    Transformer Engine's fused grouped MLP, megatron_features.FUSED_GROUPED_MLP_SOURCE): (the bytes κ's passes run over,
    the forward's cast bytes, the backward's).  The forward kernel writes FC1's 2F_e-wide output (kept for the backward)
    and FC2's quantized input from its epilogue, and the backward one reads that output and writes FC1's quantized
    output gradient from its own, so no memory-bound kernel passes over a routed row's F_e-wide tensors: of the bytes
    :data:`symcomm.training.memory.PASSED` counts for it (memory.expert_activation_bytes at 2 bytes an element: FC1's
    output 2·2F_e, the activation's output 2·F_e), all its F_e terms go, tokens·k·(4 + 2)·F_e/t a layer (gated: gate
    and up) in the MoE layers' share L_moe/L, whichever way expert_tp splits the rows; and two casts are no pass of their own:
    FC2's input (its X) and FC1's output gradient (its dY), as :func:`cast_bytes` counts them.  The permuted rows' h-wide
    passes (the permutation, FC1's input cast, FC2's output, the un-permutation) stay."""
    rows = expert_activation_bytes(True, run.expert_tp, passed=True)
    passed = layers * L_moe / L * (rows - rows.subs(F_e, 0))
    _, _, fc1_dy = cast_bytes([(g, n) for g, n in gemms if g.name == "expert FC1"], run.precision)
    fc2_x, _, _ = cast_bytes([(g, n) for g, n in gemms if g.name == "expert FC2"], run.precision)
    return passed, fc2_x, fc1_dy


def routed_bytes(run, tokens, layers) -> sp.Expr:
    """Bytes of the routed token copies one GPU sends through its MoE layers in one micro-batch's forward: each of the
    rank's tokens/t tokens (its sequence-parallel share: Megatron-Core dispatches the rank's own tokens) in k copies of
    its hidden vector (h wide; h_lat under LatentMoE), 2 bytes an element, over the stage's MoE layers (``layers`` in
    the model's proportion L_moe/L, as the GEMMs count them); 0 without experts.  kappa_moe HBM-pass equivalents over
    these bytes time what moves each copy around the experts' GEMMs beyond their width term: the permutation into
    expert order and back, the combine's weighted sum, the router's top-k (Megatron-Core
    megatron/core/transformer/moe/token_dispatcher.py and moe_utils.py permute/unpermute at d98e8a64); the
    all-to-all's slowing of the compute it overlaps is the step model's overlap slowdown
    (:func:`symcomm.training.overlap.with_slowdown`), not these passes; forward one third, backward two, as κ's
    passes."""
    if not run.moe:
        return sp.Integer(0)
    width = h_lat if run.moe_latent else h
    return 2 * tokens / t * k * width * layers * L_moe / L


def _expert_seconds(shaped, run) -> sp.Expr:
    """The forward seconds of the routed experts' grouped GEMMs among ``shaped`` ((GEMM, times) pairs as the run
    calls them), each at the rate its precision runs it (micro_batch_compute's: peak·η in bf16, the recipe's low
    rate for an FP8 or FP4 linear), width term included; 0 without experts."""
    low = run.precision != "bf16"
    return sum(((_summed([pair], "flops") + _width_term([pair])) / (low_rate(run.precision) if low and pair[0].fp8
                                                                    else peak * eta)
                for pair in shaped if pair[0].grouped), sp.Integer(0))


def wgrad_accumulation_bytes(run, gemms) -> sp.Expr:
    """HBM bytes the weight-gradient GEMMs of one micro-batch move into the gradient buffer beyond the width term's
    16-bit write (:data:`WGRAD_ACCUMULATION_FRAMEWORKS`): 2 · (grad bytes) − 2 per weight element of ``gemms``
    ((GEMM, times) pairs) under the run's wgrad_fusion (framework: :data:`WGRAD_ACCUMULATION_FRAMEWORKS`); else 0."""
    fused = run.framework in WGRAD_ACCUMULATION_FRAMEWORKS if run.wgrad_fusion is None else run.wgrad_fusion
    if not fused:
        return sp.Integer(0)
    data = run_data_schedule(run)
    grad_bytes = 4 if data.grad_dtype == "fp32" else 2
    return (2 * grad_bytes - 2) * _summed(gemms, "weights")


def loss_pass_bytes(run, tokens) -> tuple[sp.Expr, sp.Expr]:
    """(forward, backward) HBM bytes of the cross-entropy over one micro-batch's ``tokens`` × V/t logits on the
    GPU holding the LM head, by the run's loss (:func:`symcomm.training.memory.loss_kind`, the memory model's
    own setting): :data:`LOSS_PASS_BYTES`; a loss it does not list is counted as 0."""
    forward, backward = LOSS_PASS_BYTES.get(loss_kind(run.framework, run.loss, run.compile is True), (0, 0))
    logits = tokens * V / t
    return forward * logits, backward * logits


def tp_fused_gemm_seconds(run):
    """((QKV, FC1), (attention output, FC2)): the forward seconds of one layer's column- and row-parallel GEMMs on
    one GPU per micro-batch, at the rate the run's precision gives them (bf16: peak·η; FP8: peak_fp8·η_fp8, width
    factor alike) — the GEMMs async TP fuses with the sequence collectives (symcomm.training.overlap.tp_exposed);
    None for a layer whose GEMMs are not the dense block's four (moe=1, attention=mla)."""
    if run.moe or run.attention != "mha":
        return None
    kind = attention_kind(run)
    qkv, out, fc1, fc2 = layer_gemms(b / (d * m) * s / c, run.gated, False, kind)
    rate = peak * eta if run.precision == "bf16" else low_rate(run.precision)

    def seconds(g):
        # a fused projection's parts where the framework runs them apart (as_run): async TP's fused matmul takes
        # the parts sharing the gathered input together
        parts = (g,) if fused_projections(run) else projection_parts(g, kind, run.gated)
        return sum(((x.flops + 2 * w_half * x.moved) / rate for x in parts), sp.Integer(0))

    return (seconds(qkv), seconds(fc1)), (seconds(out), seconds(fc2))


#: which sequence collectives PyTorch's async TP fuses with a GEMM (the others run as plain collectives): Inductor's
#: micro-pipeline pass (pytorch/pytorch torch/_inductor/fx_passes/micro_pipeline_tp.py) fuses an all-gather with the
#: matmuls that take its output as their left operand (_find_consumer_matmuls: mm or _scaled_mm, through a reshape)
#: and a reduce-scatter with the one matmul producing its input (_find_producer_matmul: mm, _scaled_mm, or
#: reshape–mm–reshape).  So (i) a column-parallel block whose projections are separate linears on one gathered input
#: (torchtitan's wq, wk, wv; a gated MLP's w1, w3) gets that input's gradient as the sum of their input-gradient
#: matmuls (autograd accumulates a tensor's gradients with add): its backward reduce-scatter is fed by an add; (ii) under
#: an FP8 recipe whose sequence all-gathers move bf16 (no float8 TP styles: fp8_tp_gather=0, torchtitan's rowwise runs)
#: the gathered tensor is consumed by the FP8 cast, not by the matmul: forward and backward all-gathers unfused; (iii)
#: torchao's rowwise input-gradient GEMM is rescaled after the matmul (ROWWISE_RESCALE: ``output *= ...``): its
#: reduce-scatter is fed by a mul
ASYNC_TP_FUSION = ("pytorch/pytorch torch/_inductor/fx_passes/micro_pipeline_tp.py (fuse_all_gather_matmul, "
                   "_find_consumer_matmuls, fuse_matmul_reduce_scatter, _find_producer_matmul); pytorch/ao "
                   "torchao/float8/float8_ops.py at 6243040 (addmm_float8_unwrapped)")


def async_tp_fusion(run):
    """The GEMMs each sequence collective of a dense block is fused with under async TP, by (pass, primitive) —
    ("forward" | "backward", "all_gather" | "reduce_scatter") → (attention block's, MLP's) forward seconds
    (:func:`tp_fused_gemm_seconds`), 0 where :data:`ASYNC_TP_FUSION` leaves the collective unfused: in the forward the
    all-gathers feed the column-parallel GEMMs and the reduce-scatters follow the row-parallel ones; in the backward the
    all-gathers feed the row-parallel GEMMs' input gradients and the reduce-scatters follow the column-parallel ones'.
    None as :func:`tp_fused_gemm_seconds`."""
    seconds = tp_fused_gemm_seconds(run)
    if seconds is None:
        return None
    (qkv, fc1), (out, fc2) = seconds
    none = sp.Integer(0)
    # (ii): the gathered tensor feeds the matmul unless an FP8 cast stands between them
    direct = run.precision == "bf16" or fp8_tp_gather_of(run)
    # (i) and (iii): one matmul produces the input gradient, and nothing rescales it
    single = run.precision != ROWWISE
    attention_single = single and fused_projections(run)
    mlp_single = single and (fused_projections(run) or not run.gated)
    return {("forward", "all_gather"): (qkv, fc1) if direct else (none, none),
            ("forward", "reduce_scatter"): (out, fc2),
            ("backward", "all_gather"): (out, fc2) if direct else (none, none),
            ("backward", "reduce_scatter"): (qkv if attention_single else none, fc1 if mlp_single else none)}


def with_absent_constants(values: dict) -> dict:
    """``values`` with the fitted constants a caller may leave out at their meaning when absent (w_half = 0:
    the shape-independent model; η_attn = η): the one rule, :func:`symcomm.presets.systems.absent_filled`."""
    return absent_filled(values)
