"""Memory per GPU of a hybrid layout, in bytes, as SymPy expressions, part by part, each on the
pipeline stage that holds it (:data:`STAGE_OF`): the weights, gradients and optimizer states the
framework's data-parallel schedule holds (every stage); the activations kept for the backward
(Korthikanti et al. 2022, Table 2, with s → s/c: the first stage, most micro-batches in flight); the
logits and loss buffers (the last stage); the recompute working set (every stage); the gathered layers
of per-layer ZeRO-3 (every stage); the data-parallel buckets (every stage).  The busiest GPU is the
larger of the first and the last stage (:func:`memory_per_gpu`; one stage when p = 1), the logits and loss
buffers and the recompute working set counted as the larger of the two (never live at once:
:func:`loss_or_recompute`).  The loss buffers follow the run's cross-entropy (:func:`loss_bytes_per_logit`);
PyTorch's FSDP (fsdp, fsdp2) keeps no 16-bit weight shard (:func:`sharded_weight_bytes`).  Under fsdp2, PyTorch's own buffers too
(:mod:`symcomm.training.torchmem`): FSDP2's unsharded root, the LM head's kept inputs (with the loss buffers) and
gradient (with the recompute working set), torch.distributed.pipelining's receive buffers and kept outputs, the
whole gathered inputs of PyTorch's tensor parallel at bf16, PyTorch's ring attention's gathered K, V and
fp32 gradient buffers under context parallelism (with the recompute working set).  Live bytes: what the CUDA
caching allocator reserves beyond them (cached, fragmented blocks) is not counted.  Part of the step model
(:mod:`symcomm.training.steptime`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

import sympy as sp

from . import flops, torchmem
from .hybrid import (embedding_parameters, end_stage_shard, expert_shard, expert_tp_size, mtp_shards,
                     replicated_embedding_share)
from .stages import block_share, in_flight as stage_in_flight
from .recipes import CAST, CAST_COPIES, TE_WEIGHT_CACHE  # noqa: F401 (TE_WEIGHT_CACHE: fp8_weight_cache's source)
from .frameworks import ROOT_KEPT_GATHERED, framework as framework_row
from .megatron_features import MEGATRON_CORE
from .settings import ADAM_STATE_BYTES, LOSS_KINDS, PIPELINE_OUTPUTS, RECOMPUTE_MODULES, torch_compiled
from ..core.symbols import (D_mtp, E_s, L, L_att, L_bf16, L_off, L_moe, L_ssm, F, Phi, Phi_E, V, F_e, a, a_ssm, b, c, d, d_nope, d_rope, d_ssm,
                             d_v, e, g_ssm, h, h_kv, h_lat, h_q, k, kv_lora, m, n_ssm, p, q_lora, s, t, v)

#: the stage whose GPU holds each part: "every" stage, the "first", or the "last"
STAGE_OF = {"weights": "every", "gradients": "every", "optimizer": "every", "activations": "first",
            "logits": "last", "recompute": "every", "gathered_layers": "every", "dp_buckets": "every",
            # PyTorch's own buffers under fsdp2 (symcomm.training.torchmem)
            "root_params": "every", "head_inputs": "last", "head_gradient": "last", "pipeline_buffers": "first",
            "ring_attention": "every",
            # multi-token prediction's depths (mtp_activation_bytes): on the last stage, beside its layers'
            "mtp_activations": "last",
            # Transformer Engine's cached quantized weights (fp8_weight_cache)
            "fp8_weights": "every"}
#: the parts live with the loss (from the LM head's forward to its backward) and those live in the layers'
#: backward (:func:`loss_or_recompute`: never at once)
LOSS_SIDE, BACKWARD_SIDE = ("logits", "head_inputs"), ("recompute", "head_gradient", "ring_attention")
#: DeepSpeed ZeRO's gradient bucket: reduce_bucket_size elements (deepspeed/runtime/zero/config.py: 5·10⁸),
#: allocated whole in the half type with contiguous_gradients, on by default: by DeepSpeedZeroOptimizer.backward at
#: ZeRO-1/2 (stage_1_and_2.py; a second one with overlap_comm, off by default below stage 3 — not counted), and at
#: ZeRO-3 once, beside the optimizer states (stage3.py at edaa7221: the IPG bucket's buffer, torch.empty of
#: reduce_bucket_size elements of the gradients' type)
DEEPSPEED_BUCKET = 500_000_000


#: FSDP2 keeps each sharded parameter in the model's own type (fp32 in torchtitan, whose model is built in fp32:
#: the optimizer's master copy) and casts it to MixedPrecisionPolicy.param_dtype only as each all-gather's input
#: (torch/distributed/fsdp/_fully_shard/_fsdp_param.py, FSDPParam.all_gather_inputs: sharded_param_data.to(
#: param_dtype)); the unsharded 16-bit copies are the gathered layers (:func:`gathered_layers`)
FSDP2_SHARDS = "torch/distributed/fsdp/_fully_shard/_fsdp_param.py (FSDPParam.all_gather_inputs)"
#: PyTorch FSDP1's FlatParameter under mixed precision: the sharded flat parameter is the fp32 master; its 16-bit copy
#: is allocated before each all-gather and freed after it (torch/distributed/fsdp/_flat_param.py, pre_unshard:
#: _use_low_precision_shard, post_unshard: _free_low_precision_sharded_param), so no 16-bit shard stays
FSDP1_SHARDS = "torch/distributed/fsdp/_flat_param.py (_use_low_precision_shard, _free_low_precision_sharded_param)"
#: the frameworks whose sharded parameter is the optimizer's fp32 master itself
MASTER_SHARD_FRAMEWORKS = ("fsdp", "fsdp2")


def sharded_weight_bytes(data) -> int:
    """Bytes per parameter of the 16-bit weight shard a data-parallel schedule keeps beside the optimizer's fp32
    master (its 4 of :func:`memory_model`'s 12): 2, but 0 under PyTorch's FSDP (fsdp, fsdp2), whose sharded parameter
    is the fp32 master itself (:data:`FSDP2_SHARDS`, :data:`FSDP1_SHARDS`)."""
    return 0 if data.framework in MASTER_SHARD_FRAMEWORKS else 2


def sharded_gradient_bytes(data, grad_bytes: int, adam_dtype: str) -> int:
    """Bytes per parameter of a gradient shard: the reduction's element type (``grad_bytes``), but under PyTorch's
    FSDP (fsdp, fsdp2) the sharded parameter's own, which the reduce-scatter's output is cast to whatever the
    reduction ran in (FSDP2: torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py, foreach_reduce's
    _to_dtype_if_needed(reduce_output, orig_dtype), orig_dtype the sharded parameter's dtype, _fsdp_param.py; FSDP1:
    _runtime_utils.py, _cast_grad_to_param_dtype, as torch 2.13.0 ships them): the fp32 master's 4, or 2 where the
    parameters themselves are bf16 (adam_dtype=bf16: the trainer cast the model)."""
    if data.framework not in MASTER_SHARD_FRAMEWORKS:
        return grad_bytes
    return 2 if adam_dtype == "bf16" else 4


@dataclass(frozen=True)
class KeptWidths:
    """How wide a layer's kept tensors are where a model departs from Korthikanti et al. 2022's GPT: K and V h_kv wide
    (``gqa``: grouped-query attention, each kept at its own width by Megatron-Core's attention core, which takes the
    query groups as they are), and the dropout masks kept or not (``dropout``: a mask per dropout of p > 0, 1 byte an
    element; with p = 0, PyTorch's dropout returns its input and keeps none: aten/src/ATen/native/Dropout.cpp,
    _dropout's p == 0 return, which torch.nn.functional.dropout reaches since its fused kernel takes only 0 < p < 1).
    Q and the attention output are h_q = a·head_dim wide where the heads are wider than h/a (``heads_q``: q_width=heads,
    Qwen3 and gpt-oss: Megatron-Core's query [s, b, np, hn] with hn = kv_channels, and linear_proj's input np·hn).
    The defaults are Korthikanti's count (multi-head attention, heads h/a wide; Megatron-Core's default hidden and
    attention dropout 0.1)."""

    gqa: bool = False
    dropout: bool = True
    heads_q: bool = False

    @property
    def mask(self) -> int:
        """Bytes per element of each dropout mask kept."""
        return 1 if self.dropout else 0

    def kv(self):
        """The width of K, and of V, per token."""
        return h_kv if self.gqa else h

    def q(self):
        """The width of Q, and of the attention output, per token."""
        return h_q if self.heads_q else h


#: Korthikanti et al.'s own count
KORTHIKANTI = KeptWidths()


#: the frameworks whose attention core keeps K and V at the query groups' width: Megatron-Core's (attention.py,
#: get_query_key_value_tensors: key and value [s, b, ng, hn] into Transformer Engine's attention, no repeat).  The
#: models the others train repeat K and V to the query heads first and keep the repeated copies, h wide: torchtitan's
#: Llama (repeat_kv before scaled_dot_product_attention: :data:`TORCHTITAN_EAGER_BLOCK`), Hugging Face's Llama under
#: DeepSpeed or PyTorch FSDP (modeling_llama.py, repeat_kv)
GROUPED_KV_FRAMEWORKS = MEGATRON_CORE


def kept_widths(opts: dict) -> KeptWidths:
    """The :class:`KeptWidths` of the hybrid's typed options (gqa, dropout; K and V at h_kv only under
    :data:`GROUPED_KV_FRAMEWORKS`)."""
    gqa = bool(opts.get("gqa")) and opts.get("framework", "megatron") in GROUPED_KV_FRAMEWORKS
    return KeptWidths(gqa, bool(opts.get("dropout", True)), opts.get("q_width") == "heads")


def scores(micro, widths: KeptWidths = KORTHIKANTI):
    """Bytes of the attention scores of one layer and micro-batch on one GPU: the softmax input
    and output (2 bytes each) and the dropout mask (1 byte; none without attention dropout), a·s² each, split over t
    heads' groups."""
    return (4 + widths.mask) * a * (s / c) ** 2 * micro / t


def mla_attention_widths(widths: KeptWidths = KORTHIKANTI):
    """Bytes per token an MLA attention block keeps for the backward, as (kept whole on each TP rank
    without sequence parallel, split over the t heads' groups): derived here with Korthikanti et al.
    2022 §4.1's accounting (2 bytes per bf16 element, 1 per dropout-mask element) over the tensors
    Megatron-Core's multi_latent_attention.py saves: the down projections' input 2h, the output
    dropout mask h, the query latent's RMSNorm input and up-projection input 4·q_lora (0 without query
    compression: the h-wide input serves), the K, V latent's 4·kv_lora and the rotary key 2·d_rope
    (the down projections are duplicated on every TP rank); and split over t: Q and K of QKᵀ
    4a(d_nope + d_rope), V 2a·d_v, the output projection's input 2a·d_v.  With a(d_nope + d_rope) =
    a·d_v = h and no latents this is Korthikanti's 3sbh + 8sbh/t (``widths``: the mask only with dropout)."""
    whole = (2 + widths.mask) * h + 4 * q_lora + 4 * kv_lora + 2 * d_rope
    split = 4 * a * (d_nope + d_rope) + 4 * a * d_v
    return whole, split


#: torch.compile keeps of a checkpointed region's saved outputs only those its backward graph reads: AOTAutograd's
#: partitioner builds the backward from the saved values and drops every one the backward leaves unused
#: (torch/_functorch/partitioners.py at 00c07b93, _extract_fwd_bwd_modules: "filter out saved values that don't
#: actually end up being used by the backwards pass"); a MUST_SAVE tag only bars the node from recomputation.
#: Eager checkpointing keeps every output of a saved op whether read or not (torch/utils/checkpoint.py,
#: _CachingTorchDispatchMode: the policy's MUST_SAVE outputs stored as the forward runs)
COMPILED_SAVED = ("pytorch/pytorch torch/_functorch/partitioners.py at 00c07b93 (_extract_fwd_bwd_modules); "
                  "torch/utils/checkpoint.py (_CachingTorchDispatchMode)")


def op_kept_widths(sp_on: bool, gated: bool = True, compiled: bool = False) -> tuple[tuple[str, sp.Expr], ...]:
    """Bytes per token one dense Llama block keeps under recompute=op (torchtitan's op-level selective
    checkpointing: symcomm.training.settings.TORCHTITAN_OP_SAC), per GPU, as (what, bytes): the block's input,
    which the checkpoint keeps (2h, /t with sequence parallel); the outputs of the odd-numbered matmuls
    (symcomm.training.flops.op_saved_matmuls), 2 bytes per element: a column-parallel one's F/t or h_kv/t wide, a
    row-parallel one's (w2, gated) the whole h, its partial sum before the reduce-scatter; the SDPA's output
    (2h/t) and its logsumexp (fp32, one per head: 4a/t; aten._scaled_dot_product_flash_attention returns both and
    the policy saves every output of a saved op); with sequence parallel the two reduce-scatters' outputs (2h/t
    each: the op list holds _c10d_functional.reduce_scatter_tensor).  The amax scalars (aten.max) are left out;
    at 9dec370a the list also held aten.abs, whose full-size |x| an eager float8 run keeps (not counted: it left
    the list at 820504e2, and the float8 runs of that commit typed here ran under torch.compile).
    ``compiled`` (torch.compile of the block, :data:`COMPILED_SAVED`): without the saved outputs the backward never
    reads, the block's last matmul's (gated: w2; its output only joins the residual sum, whose backward reads
    neither addend) and with sequence parallel that matmul's reduce-scatter output (likewise only summed into the
    residual; wo's reduce-scatter output stays: the recompute of the MLP's norm reads the residual it joins).
    Our own count from those ops' output shapes; the width of Q is h, as memory counts it everywhere."""
    last = flops.block_matmuls(gated)[-1][0]
    unread = (f"{last} output", f"{last} reduce-scatter output") if compiled else ()
    out = [("block input", 2 * h / (t if sp_on else 1))]
    for name, _inner, outer, split in flops.op_saved_matmuls(gated):
        out.append((f"{name} output", 2 * outer / t if split == "column" else 2 * outer))
    out += [("SDPA output", 2 * h / t), ("SDPA logsumexp", 4 * a / t)]
    if sp_on:
        out += [("wo reduce-scatter output", 2 * h / t), ("w2 reduce-scatter output", 2 * h / t)]
    return tuple((what, width) for what, width in out if what not in unread)


def eager_kept_widths(sp_on: bool, gated: bool = True) -> tuple[tuple[str, sp.Expr], ...]:
    """Bytes per token one dense Llama block keeps with no recompute when it runs eagerly in PyTorch (the fsdp2
    framework's default, compile off: torchtitan's block, :data:`TORCHTITAN_EAGER_BLOCK`), per GPU, as (what, bytes):
    each RMSNorm its fp32 input (4h; the square reads it) and its normalised output (2h; the weight's product reads
    it), on the s/t tokens of its shard with sequence parallel; each of the attention's and the MLP's linears its
    16-bit input (2h), whole with sequence parallel (the all-gathered input) as without; the attention kernel its
    rotated Q and its K and V repeated to the query heads (2h/t each; the rotary's fp32 copies are not kept: its
    frequencies need no gradient, so the product keeps only them) and its output (2h/t) and logsumexp (4a/t); the
    SwiGLU its two column outputs, the SiLU's output and their product (2F/t each; without gating the activation's
    input and output).  The residual sums, the row-parallel outputs and their reduce-scatters keep nothing.  Our own
    count of the tensors autograd saves; PyTorch's MemTracker holds the same for a Llama 3.1 8B-wide block
    (tests/integration/test_torch_kept_activations.py)."""
    norms = 1 / t if sp_on else sp.Integer(1)
    return (("RMSNorm fp32 inputs (two)", 8 * h * norms), ("RMSNorm outputs (two)", 4 * h * norms),
            ("linear inputs (attention, MLP)", 4 * h), ("rotated Q", 2 * h / t),
            ("K, V repeated to the query heads", 4 * h / t), ("SDPA output", 2 * h / t),
            ("SDPA logsumexp", 4 * a / t), ("MLP", (8 if gated else 4) * F / t))


#: the model the eager count reads: RMSNorm in fp32 (norms.py), rotary embedding as a complex product with the
#: precomputed frequencies, K and V repeated to the query heads (repeat_kv) before scaled_dot_product_attention, and
#: w2(silu(w1(x)) * w3(x)) (model.py), with torchtitan's tensor-parallel plan (SequenceParallel norms, the attention
#: and the MLP all-gathering their inputs: parallelize_llama.py)
TORCHTITAN_EAGER_BLOCK = ("pytorch/torchtitan torchtitan/models/llama/model.py, torchtitan/models/norms.py and "
                          "torchtitan/parallelisms/parallelize_llama.py at 9dec370a")


#: the frameworks whose linear layers are Transformer Engine modules (Megatron-Core's TE spec: QKV and FC1
#: TELayerNormColumnParallelLinear, the attention output and FC2 TERowParallelLinear, the experts TEGroupedLinear),
#: which under a low-precision recipe keep their quantized input for the weight gradient (:func:`saved_input_bytes`)
TE_LINEAR_FRAMEWORKS = MEGATRON_CORE
#: where Transformer Engine keeps a quantized input (NVIDIA/TransformerEngine at d0067d0d): module/linear.py
#: _Linear.forward, ``saved_inputmat = inputmat`` (the quantized tensor, its row-wise data discarded: one copy);
#: module/layernorm_linear.py, ``ln_out_to_save = ln_out``, whose row-wise data is kept too where the input is
#: all-gathered in the backward (sequence parallel) and the format is neither MXFP8 nor blockwise FP8; per-tensor FP8's
#: quantizers gather row-wise data only (tensor/float8_tensor.py, supports_only_rowwise_all_gather: True for
#: Float8Quantizer and Float8CurrentScalingQuantizer), so its norm output is made row-wise alone (set_usage(columnwise=
#: False)) and one copy is kept, the transpose rebuilt after the backward's gather; NVFP4's quantizer gathers either,
#: so both copies; module/grouped_linear.py, the columnwise data only; unless save_original_input (off by default)
TE_SAVED_INPUT = ("NVIDIA/TransformerEngine transformer_engine/pytorch/module/linear.py, layernorm_linear.py, "
                  "grouped_linear.py at d0067d0d (the saved input of the weight gradient)")


def fp8_weight_cache(data, opts: dict, layer_params) -> dict:
    """{"fp8_weights": bytes per GPU} of Transformer Engine's cached quantized weights (:data:`TE_WEIGHT_CACHE`) of the
    ``layer_params`` parameters of the GPU's linear layers and experts (not the embedding and LM head, which stay bf16;
    the layers kept bf16 under bf16_layers=1 in the model's proportion), or {}: not Transformer Engine's linears, no
    low-precision recipe, the parameters gathered in FP8 (fp8_param_gather=1), or ZeRO-3 (Megatron-FSDP's own
    parameter handling, not modelled).  The rowwise and columnwise copies, an element and its weight scale each
    (recipes.CAST)."""
    precision = opts.get("precision", "bf16")
    if (data.framework not in TE_LINEAR_FRAMEWORKS or precision not in CAST or opts.get("fp8_param_gather")
            or data.zero == 3):
        return {}
    *_, weight_scale, element = CAST[precision]
    share = (L - L_bf16) / L if opts.get("bf16_layers") else 1
    return {"fp8_weights": CAST_COPIES * (element + weight_scale) * layer_params * share}


#: Megatron-Core's attention output projection under a low-precision recipe (NVIDIA/Megatron-LM commit 781e765818,
#: core_v0.15.0, megatron/core/transformer/attention.py): linear_proj keeps its original 16-bit input (Transformer
#: Engine's save_original_input, TE 2.6 on), the very tensor the attention core keeps for its own backward
#: (transformer_engine/pytorch/attention/dot_product_attention/backends.py, FusedAttnFunc: the 16-bit output), so the
#: output is kept once, 2 bytes an element; under delayed scaling, for which TE refuses save_original_input, the
#: quantized copy beside it (as every recipe before core_v0.15.0)
TE_ATTENTION_OUTPUT = ("NVIDIA/Megatron-LM commit 781e765818 (core_v0.15.0) attention.py, linear_proj "
                       "save_original_input; NVIDIA/TransformerEngine backends.py FusedAttnFunc at d0067d0d")


def saved_input_bytes(framework: str, precision: str, sp_on: bool) -> tuple:
    """(bytes per element a norm-fused linear's input keeps for the backward, a plain linear's, the attention output's
    beside the core's own): 2, 2 and 2, the 16-bit input, unless the framework's linears are Transformer Engine modules
    (:data:`TE_LINEAR_FRAMEWORKS`) under one of its low-precision recipes: then the quantized copy it keeps
    (:data:`TE_SAVED_INPUT`), an element and its scale as symcomm.training.recipes.CAST counts them, twice for a
    norm-fused linear's input under sequence parallelism with NVFP4; the attention output 2 bytes
    (the 16-bit tensor the core and the projection share: :data:`TE_ATTENTION_OUTPUT`), and the quantized copy too
    under delayed scaling."""
    if framework not in TE_LINEAR_FRAMEWORKS or precision not in CAST:
        return sp.Integer(2), sp.Integer(2), sp.Integer(2)
    _, act_scale, _, element = CAST[precision]
    one = element + act_scale
    both = sp_on and precision == "nvfp4"
    return (2 * one if both else one), one, 2 + (one if precision == "fp8_delayed" else 0)


def attention_output_bytes(saved: tuple):
    """Bytes per element the attention output keeps for the backward (:func:`saved_input_bytes`' third; a pair's
    plain linear's)."""
    return saved[2] if len(saved) > 2 else saved[1]


def activation_bytes(recompute: str, flash: bool, sp_on: bool, attention: str = "mha", gated: bool = True,
                     torch_tp: bool = False, saved: tuple = (2, 2), compiled: bool = False,
                     eager: bool = False, widths: KeptWidths = KORTHIKANTI) -> sp.Expr:
    """Bytes one layer keeps for the backward, per micro-batch and GPU (Korthikanti et al. 2022,
    Table 2), with s → s/c: sbh(10 + 24/t) + 5as²b/t; with sequence parallel 34sbh/t + 5as²b/t;
    selective recompute and flash attention drop the scores; full recompute keeps the input 2sbh
    (/t with sequence parallel).  ``attention="mla"``: the attention block's 3sbh + 8sbh/t of those
    (11sbh of the 34) replaced by :func:`mla_attention_widths`.  op: the tokens' :func:`op_kept_widths`
    (``gated`` says which matmuls are odd-numbered).  ``torch_tp`` (symcomm.training.torchmem.kept_whole): with
    sequence parallel and no or selective recompute, PyTorch's tensor parallel keeps the attention's and the MLP's
    gathered inputs whole (torchmem.tp_gathered_inputs).  ``saved`` (:func:`saved_input_bytes`): the bytes per element
    of the linears' inputs Korthikanti et al. count at 2 (with sequence parallelism the QKV and FC1 inputs, h wide,
    kept by norm-fused linears; the attention output, h, and FC2's input, 4h, by plain ones), MLA's attention
    projections left at 2.  ``compiled``: op's count under torch.compile (:func:`op_kept_widths`).  ``eager``: no
    recompute in PyTorch's eager autograd (the fsdp2 framework's dense block at bf16, compile off): its
    :func:`eager_kept_widths`, not Korthikanti's (selective too: with flash attention it keeps what none keeps).
    ``widths`` (:class:`KeptWidths`): K and V of Korthikanti's Q, K, V (2h each) at their own width, and the two
    dropout masks (after the attention and after the MLP, sbh bytes each) only with dropout; PyTorch's tensor
    parallel (``torch_tp``) keeps K and V repeated to the query heads (torchtitan's repeat_kv), h wide."""
    micro = b / (d * m)
    fused, plain = saved[:2]
    if eager and recompute in ("none", "selective") and flash and attention == "mha":
        # selective recompute drops only the scores, which flash attention never keeps
        return (s / c) * micro * sp.Add(*(width for _, width in eager_kept_widths(sp_on, gated)))
    if torch_tp and sp_on and recompute in ("none", "selective"):
        return (activation_bytes(recompute, flash, sp_on, attention, gated, widths=replace(widths, gqa=False))
                + torchmem.tp_gathered_inputs(micro))
    if recompute == "op":
        return (s / c) * micro * sp.Add(*(width for _, width in op_kept_widths(sp_on, gated, compiled)))
    sbh = (s / c) * micro * h
    kept_scores = 0 if flash or recompute != "none" else scores(micro, widths)
    if recompute == "full":
        return 2 * sbh / (t if sp_on else 1)
    mask = widths.mask
    if attention == "mla":
        whole, split = mla_attention_widths(widths)
        sb = (s / c) * micro
        # the MLP and the norms, as Korthikanti: FC1's input (h) and FC2's (4h) at their saved bytes
        rest = ((12 + mask + fused + 4 * plain) * sbh / t if sp_on
                else sbh * (4 + mask + fused + (8 + 4 * plain) / t))
        return sb * (whole / (t if sp_on else 1) + split / t) + rest + kept_scores
    # Korthikanti's 34 (10 + 24/t): whole, the two norms' inputs (2h each), the two dropout masks (h each) and the
    # norm-fused linears' inputs (QKV's and FC1's, h each); split over t, Q, K and V (2h each), the GeLU's input (8h)
    # and the plain linears' inputs (the attention output's, h, and FC2's, 4h); the linears' inputs at their saved
    # bytes (the attention output's: attention_output_bytes), K and V at their own width (widths)
    whole = (4 + 2 * mask + 2 * fused) * h
    split = (2 + attention_output_bytes(saved)) * widths.q() + 4 * widths.kv() + (8 + 4 * plain) * h
    sb = (s / c) * micro
    return sb * ((whole + split) / t if sp_on else whole + split / t) + kept_scores


#: what the step model's κ passes run over (symcomm.training.compute: memory-bound time, κ·bytes/HBM bandwidth), as its
#: constants were fitted: every layer's Korthikanti et al. bytes, an MoE layer's too, with the routed rows beside them
#: and each row's second GEMM output (written by the GEMM, read by the un-permutation).  Not the bytes kept: an MoE
#: layer keeps no dense MLP block and, from Megatron-Core 0.13, no GEMM output (:func:`expert_activation_bytes`); the
#: kernels still pass over those, and what an MoE layer moves beyond is κ_moe's
PASSED = "the bytes κ's memory-bound passes run over"


def expert_activation_bytes(gated: bool, expert_tp: str = "tp", saved: tuple = (2, 2), width=h,
                            passed: bool = False) -> sp.Expr:
    """Bytes one MoE layer's routed experts keep for the backward, per micro-batch and GPU (the routed rows of
    :func:`hybrid_block_bytes`' MoE block): each of the routed token rows (T·k of the micro-batch's T =
    (b/(d·m))·s/c tokens, each row one token sent to one expert) keeps, in 16 bits, its permuted input (h), the
    first expert GEMM's output (2F_e gated: gate and up) and the activation's output (F_e), the second GEMM's input;
    the widths F_e split over the expert tensor-parallel size etp (hybrid.expert_tp_size: t with expert_tp = tp, 1,
    or t_e) on the etp/t of the T·k rows its etp ranks gathered (each rank routes its own 1/t: Megatron-Core
    moe/token_dispatcher.py): all T·k rows over F_e/t with expert_tp = tp, T·k/t whole rows with expert_tp = 1.
    The second GEMM's output is not kept: since Megatron-Core 0.13 (commit 2659630721, "Memory efficient token
    permutation") the router's probabilities multiply the activation's output (moe/experts.py at d98e8a64,
    TEGroupedMLP.forward, bias_act_func), so the un-permutation after the second GEMM is a plain scatter whose
    backward reads no values (before 0.13, through NeMo 25.04, the un-permutation multiplied by the probabilities
    and kept that output, h a row more: not counted).  Our own count from those saved tensors, in Korthikanti et al.
    2022's way (Table 2: 2 bytes per element, what the backward reads); routing probabilities and indices (k
    numbers per token) left out.  ``saved``
    (:func:`saved_input_bytes`): the two GEMMs' inputs (the permuted h, the activation's F_e) at a plain linear's
    saved bytes (Transformer Engine's grouped linear keeps its quantized input).  ``width``: a routed row's width, h
    (LatentMoE: h_lat).  ``passed``: the bytes the memory-bound kernels pass over (:data:`PASSED`), the second GEMM's
    output too, which the un-permutation reads."""
    up = 2 if gated else 1
    plain = saved[1]
    tokens = (b / (d * m)) * s / c
    row = (plain + (2 if passed else 0)) * width
    etp = expert_tp_size(expert_tp)
    return tokens * k * etp / t * (row + (2 * up + plain) * F_e / etp)


def hybrid_block_bytes(sp_on: bool, moe: bool, gated: bool, expert_tp: str = "tp",
                       saved: tuple = (2, 2), latent: bool = False, passed: bool = False,
                       widths: KeptWidths = KORTHIKANTI) -> dict:
    """Bytes each block kind of a hybrid Mamba model (mamba=1) keeps for the backward, per layer, micro-batch and GPU,
    with no recompute or the attention core's (flash attention: the scores are never kept), by kind: Korthikanti et
    al. 2022's Table 2 cut at its blocks, each layer with its own pre-norm's input (2sbh; /t, as everything whole
    below, with sequence parallel) —

    * attention: the norm's input, QKV's input (at a norm-fused linear's saved bytes), the dropout mask (sbh), and
      split over t Q, K (4sbh), V (2sbh), the output projection's input (a plain linear's) — 13sbh at 2 bytes;
    * MLP: the norm's input, FC1's input, the dropout mask, and split GeLU's input (8sbh) and FC2's (4h at a plain
      linear's bytes) — 21sbh: the two make Korthikanti's 34 (proved in derivations/hybrid_mamba.py);
    * MoE: the norm's input and its output (the router's and the shared experts' input), the routed experts'
      :func:`expert_activation_bytes`, and each of the E_s shared experts' FC1 output (2F_e/t gated) and FC2's
      input (F_e/t at a plain linear's bytes); with LatentMoE (``latent``) the routed rows h_lat wide and the
      up-projection's input, the combined h_lat-wide token (a plain linear's bytes; the down-projection's input is
      the norm's output, counted);
    * Mamba-2 (symcomm.training.flops.MEGATRON_MAMBA, megatron/core/ssm/mamba_mixer.py at d98e8a64: in_proj a
      TELayerNormColumnParallelLinear, the memory-efficient mamba_split_conv1d_scan_combined): the norm's input,
      in_proj's input (norm-fused), and split over t in_proj's output z, x, B, C, dt (2(2d_ssm + 2g_ssm·n_ssm +
      a_ssm)), which the fused kernel keeps and from which its backward recomputes the convolution, the scan's
      output before the gate (2d_ssm), the gated RMSNorm's input (2d_ssm) and out_proj's input (d_ssm at a plain
      linear's bytes).
    Our own count from the tensors those modules save; ``saved``: :func:`saved_input_bytes`; ``passed``:
    :data:`PASSED`; ``widths`` (:class:`KeptWidths`): K and V at their own width, and a dropout mask after each
    attention, MLP, MoE and Mamba block (h, 1 byte an element: Megatron-Core's bias-dropout-add after each) only with
    dropout (the MoE and Mamba blocks' kept, not passed: κ's passes were fitted without them)."""
    fused, plain = saved[:2]
    mask = widths.mask
    tokens = (s / c) * (b / (d * m))
    whole = 1 / t if sp_on else 1
    up = 2 if gated else 1
    in_proj = 2 * d_ssm + 2 * g_ssm * n_ssm + a_ssm
    out = {"attention": tokens * (h * whole * (2 + mask + fused)
                                  + ((2 + attention_output_bytes(saved)) * widths.q() + 4 * widths.kv()) / t),
           "mlp": tokens * h * (whole * (2 + mask + fused) + (8 + 4 * plain) / t),
           "mamba": tokens * (whole * (2 + (0 if passed else mask) + fused) * h + (2 * in_proj + 4 * d_ssm + plain * d_ssm) / t)}
    if moe:
        out["moe"] = (tokens * (4 + (0 if passed else mask)) * h * whole + tokens * E_s * (2 * up + plain) * F_e / t
                      + expert_activation_bytes(gated, expert_tp, saved, h_lat if latent else h, passed)
                      + (tokens * plain * h_lat * whole if latent else 0))
    return out


def hybrid_layer_bytes(sp_on: bool, moe: bool, gated: bool, expert_tp: str = "tp", saved: tuple = (2, 2),
                       latent: bool = False, passed: bool = False, widths: KeptWidths = KORTHIKANTI) -> sp.Expr:
    """The bytes of an average layer of a hybrid Mamba model (mamba=1): :func:`hybrid_block_bytes` of each kind in
    the model's proportion (a stage holds the kinds as the model does)."""
    kinds = hybrid_block_bytes(sp_on, moe, gated, expert_tp, saved, latent, passed, widths)
    total = (L_att * kinds["attention"] + flops.dense_layers(moe) * kinds["mlp"] + L_ssm * kinds["mamba"]
             + (L_moe * kinds["moe"] if moe else 0))
    return total / L


def mla_up_kept_bytes(micro) -> sp.Expr:
    """Bytes per layer and micro-batch on one GPU that Megatron-Core's mla_up_proj recompute does not keep: Q and K of
    the core, 4a(d_nope + d_rope), and V, 2a·d_v, per token over t (:func:`mla_attention_widths`' own; the
    up projections' latent inputs stay, as the output projection's input)."""
    _, split = mla_attention_widths()
    return (s / c) * micro * (split - 2 * a * d_v) / t        # all it splits over t but the output projection's input


def module_bytes(modules, sp_on: bool, attention: str = "mha", moe: bool = False, gated: bool = True,
                 expert_tp: str = "tp", saved: tuple = (2, 2), mamba: bool = False, latent: bool = False,
                 passed: bool = False) -> sp.Expr:
    """Bytes an average layer does not keep for the backward, per micro-batch and GPU, under Megatron-Core's recompute
    ``modules`` (symcomm.training.settings.RECOMPUTE_MODULES), each the bytes this model counts for the tensors the
    module's checkpoint frees (transformer_layer.py, moe/experts.py, moe/moe_layer.py at d98e8a64), in the layers that
    run it (MoE layers L_moe/L of them, dense the rest):

    * moe_act: the routed experts' activation output, FC2's input (a plain linear's saved bytes per F_e-wide row, k rows
      a token, over t either way expert_tp splits it: :func:`expert_activation_bytes`); under a low-precision recipe
      FC2 keeps its original input instead of a quantized copy (set_save_original_input), which the checkpoint frees;
    * layernorm: the MoE layers' pre-MLP norm output (the router's, dispatcher's and shared experts' input, a norm of
      its own, fused with no linear: 2 bytes an element, :func:`hybrid_block_bytes`' MoE block) and with MLA
      the input norm's output, the down projections' 2h (:func:`mla_attention_widths`), both h wide, /t with
      sequence parallelism;
    * mlp: a dense layer's MLP but its input (the checkpoint keeps it, the residual the norm reads): FC1's input, the
      activation's input (F wide, 2F gated: FC1's output) and FC2's input F (Korthikanti's MLP block at the model's
      width, :func:`dense_mlp_width_bytes`; the dropout after it outside the checkpoint);
    * moe: an MoE layer's MLP side but its input, the norm's output: all of :func:`hybrid_block_bytes`' MoE block but
      the norm's input and output (the shared experts' and the routed rows).

    ``passed``: the same modules over :data:`PASSED`'s bytes (an MoE layer's as a dense one's: layernorm the FC1
    input slot at a norm-fused linear's bytes, moe the routed rows and Korthikanti's MLP block but its input; mlp
    Korthikanti's 4h MLP block, as the passes count it)."""
    fused, plain = saved[:2]
    tokens = (s / c) * (b / (d * m))
    whole = 1 / t if sp_on else 1
    moe_share = L_moe / L if moe else sp.Integer(0)
    out = sp.Integer(0)
    if "moe" in modules:
        if mamba or not passed:
            # all but the norm's input and output and the dropout mask after the block (hybrid_block_bytes: kept)
            ends = 4 + (0 if passed else KORTHIKANTI.mask)
            inner = hybrid_block_bytes(sp_on, moe, gated, expert_tp, saved, latent, passed)["moe"] - tokens * ends * h * whole
        else:
            inner = expert_activation_bytes(gated, expert_tp, saved, passed=True) + tokens * h * (8 + 4 * plain) / t
        out += moe_share * inner
    elif "moe_act" in modules:
        out += moe_share * tokens * k * plain * F_e / t
    if "layernorm" in modules:
        out += moe_share * tokens * h * whole * (fused if passed and not mamba else 2)
        if attention == "mla":
            out += tokens * 2 * h * whole
    if "mlp" in modules and passed:
        out += (1 - moe_share) * tokens * h * (fused * whole + (8 + 4 * plain) / t)
    elif "mlp" in modules:
        # at the MLP's own width F, as the kept count holds it (dense_mlp_width_bytes): its activation's input, 2F gated
        out += (1 - moe_share) * tokens * (fused * h * whole + (2 * (2 if gated else 1) + plain) * F / t)
    return out


def dense_mlp_width_bytes(gated: bool, saved: tuple = (2, 2)) -> sp.Expr:
    """What a dense MLP of width F keeps beyond Korthikanti et al.'s count of a 4h-wide GeLU MLP, per layer, micro-batch
    and GPU: their Table 2 keeps the GeLU's input, 4h at 2 bytes, and FC2's input, 4h at a plain linear's saved bytes,
    split over t; an MLP of width F keeps its activation's input at 2 bytes, F wide, or 2F gated (the gate and the up
    projection: Megatron-Core's SwiGLU saves FC1's whole output, megatron/core/fusions/fused_bias_swiglu.py), and FC2's
    input F at a plain linear's bytes, as the MoE block counts its shared experts (:func:`hybrid_block_bytes`).  0 at
    F = 4h ungated (Korthikanti's GPT)."""
    plain = saved[1]
    up = 2 if gated else 1
    return (s / c) * (b / (d * m)) * ((2 * up + plain) * F - (8 + 4 * plain) * h) / t


def layer_activation_bytes(recompute: str, flash: bool, sp_on: bool, attention: str = "mha", moe: bool = False,
                           gated: bool = True, expert_tp: str = "tp", torch_tp: bool = False,
                           schedule: str = "1f1b", saved: tuple = (2, 2), compiled: bool = False,
                           mamba: bool = False, latent: bool = False, mla_up: bool = False,
                           modules=frozenset(), passed: bool = False, eager: bool = False,
                           widths: KeptWidths = KORTHIKANTI) -> sp.Expr:
    """Bytes an average layer keeps for the backward (:func:`activation_bytes`; ``eager``: its eager count); with MoE, in the share L_moe/L of
    the layers, the MoE block of :func:`hybrid_block_bytes` (the pre-MLP norm's input and output, the shared experts',
    the routed rows of :func:`expert_activation_bytes`) in place of Korthikanti's dense MLP block, which an MoE
    layer does not run (none of it under full recompute, which keeps only each layer's input).  block: full's for the share of the layers that recompute, none's for the rest
    (symcomm.training.stages.block_share, by ``schedule``).  ``saved``: :func:`saved_input_bytes`; ``compiled``:
    :func:`op_kept_widths`.  ``mamba``: a hybrid Mamba model's average layer (:func:`hybrid_layer_bytes`; recompute
    none or selective).  ``modules``: less :func:`module_bytes` (recompute none or selective).  ``passed``: the
    bytes the memory-bound kernels pass over (:data:`PASSED`), not the bytes kept.  ``widths``: :class:`KeptWidths`
    (the kept bytes; κ's passes take Korthikanti's, as they were fitted)."""
    dropped = (module_bytes(modules, sp_on, attention, moe, gated, expert_tp, saved, mamba, latent, passed)
               if modules else 0)
    if mamba:
        return hybrid_layer_bytes(sp_on, moe, gated, expert_tp, saved, latent, passed, widths) - dropped
    if recompute == "block":
        share = block_share(schedule)
        return (share * layer_activation_bytes("full", flash, sp_on, attention, moe, gated, expert_tp, torch_tp)
                + (1 - share) * layer_activation_bytes("none", flash, sp_on, attention, moe, gated, expert_tp,
                                                       torch_tp, saved=saved, eager=eager, widths=widths))
    per_layer = activation_bytes(recompute, flash, sp_on, attention, gated, torch_tp, saved, compiled, eager, widths)
    korthikanti = recompute in ("none", "selective") and not (eager and flash and attention == "mha")
    if korthikanti and not passed:
        # the dense MLP's tensors at the model's own width F (gated: FC1's 2F-wide output), in the dense layers' share;
        # κ's passes keep Korthikanti's 4h, as they were fitted (PASSED)
        per_layer = per_layer + (1 - L_moe / L if moe else 1) * dense_mlp_width_bytes(gated, saved)
    if mla_up and attention == "mla" and recompute in ("none", "selective"):
        # recompute_mla_up: Q, K, V made again from the latents before the core's backward (settings)
        per_layer = per_layer - mla_up_kept_bytes(b / (d * m))
    if moe and recompute != "full" and passed:
        per_layer = per_layer + L_moe / L * expert_activation_bytes(gated, expert_tp, saved, passed=True)
    elif moe and recompute != "full":
        # an MoE layer has no dense MLP: Korthikanti's MLP block (which activation_bytes counts in every layer) gives
        # way, in the MoE layers' share, to the MoE block as it runs (hybrid_block_bytes: the pre-MLP norm's input
        # and output, the shared experts', the routed rows)
        blocks = hybrid_block_bytes(sp_on, moe, gated, expert_tp, saved, widths=widths)
        per_layer = per_layer + L_moe / L * (blocks["moe"] - blocks["mlp"])
    return per_layer - dropped


def memory_options(run) -> dict:
    """The options the memory model reads of a run setting (symcomm.training.settings.RunSetting): the hybrid's, typed
    (flags bool, zero int), and its cross-entropy, the pipeline's kept outputs, precision, Adam state, MLA recompute, dropout, query width and
    compile."""
    return {**run.hybrid_options(), "loss": loss_kind(run.framework, run.loss, run.compile is True),
            "pp_outputs": run.pp_outputs, "precision": run.precision,
            "adam_dtype": run.adam_dtype, "recompute_mla_up": run.recompute_mla_up, "dropout": run.dropout, "q_width": run.q_width,
            "torch_compiled": torch_compiled(run)}


def modules_of(opts: dict) -> frozenset:
    """The recompute modules of the hybrid's typed options (their recompute_<module> flags)."""
    return frozenset(name for name in RECOMPUTE_MODULES if opts.get(f"recompute_{name}"))


#: the block-kind shares that make a stage's average layer one MTP layer (symcomm.training.flops.mtp_depth_forward):
#: every layer MoE with moe=1; with mamba=1 the two blocks of '*E', an attention block and an expert block
MTP_SHARES = {"mamba": {L_att: L / 2, L_ssm: sp.Integer(0), L_moe: L / 2}, "moe": {L_moe: L}, "dense": {}}
#: bytes per element of h a token an MTP depth keeps beside its layer's (multi_token_prediction.py at d98e8a64,
#: _concat_embeddings, _postprocess): the inputs of enorm, hnorm and final_layernorm (2 bytes each) and eh_proj's
#: 2h-wide input (4)
MTP_WRAPPER_BYTES = 10


def mtp_kind(mamba: bool, moe: bool) -> str:
    """Which :data:`MTP_SHARES` entry an MTP layer takes."""
    return "mamba" if mamba else ("moe" if moe else "dense")


def mtp_activation_bytes(recompute: str, flash: bool, sp_on: bool, opts: dict, moe: bool, gated: bool,
                         torch_tp: bool, saved: tuple) -> sp.Expr:
    """Bytes the D_mtp multi-token-prediction depths of one micro-batch keep for the backward on the last stage: each
    depth's layer as the stage's own layers keep theirs (:func:`layer_activation_bytes` at :data:`MTP_SHARES`; two
    blocks with mamba=1) and :data:`MTP_WRAPPER_BYTES` a token beside it, over t with sequence parallel; under full
    recompute its checkpoint's two inputs, the hidden state and the next token's embedding (two full-recompute layer
    inputs); recompute=block recomputes no depth (Megatron-Core skips it), so none's."""
    mamba = bool(opts.get("mamba"))
    recompute = "none" if recompute == "block" else recompute
    micro = b / (d * m)
    if recompute == "full":
        return D_mtp * 2 * layer_activation_bytes("full", flash, sp_on, opts.get("attention", "mha"), moe, gated,
                                                  opts.get("expert_tp", "tp"), torch_tp)
    layer = layer_activation_bytes(recompute, flash, sp_on, opts.get("attention", "mha"), moe, gated,
                                   opts.get("expert_tp", "tp"), torch_tp, "1f1b", saved,
                                   opts.get("torch_compiled", False), mamba, bool(opts.get("moe_latent")),
                                   bool(opts.get("recompute_mla_up")), modules_of(opts), widths=kept_widths(opts))
    blocks = 2 if mamba else 1
    wrapper = MTP_WRAPPER_BYTES * h * micro * s / c / (t if sp_on else 1)
    return D_mtp * (blocks * layer.xreplace(MTP_SHARES[mtp_kind(mamba, moe)]) + wrapper)


def _mtp_parts(data, recompute, opts, flash, moe, gated, torch_tp, saved, schedule) -> tuple:
    """(dense, experts) parameters one GPU of the last stage holds for MTP (hybrid.mtp_shards) and its parts:
    the depths' activations (:func:`mtp_activation_bytes`, the micro-batches the last chunk holds: all m under GPipe,
    one else: its backward follows its forward)."""
    setting = opts.get("mtp", "0")
    attention = flops.kind_of_attention(opts.get("attention", "mha"), opts.get("q_width"))
    dense, experts = mtp_shards(setting, bool(opts["tied"]), gated, moe, attention, bool(opts.get("mamba")),
                                bool(opts.get("moe_latent")), opts.get("expert_tp", "tp"))
    if setting == "0":
        return dense, experts, {}
    kept = mtp_activation_bytes(recompute, flash, bool(opts["sp"]), opts, moe, gated, torch_tp, saved)
    return dense, experts, {"mtp_activations": kept * (m if schedule == "gpipe" else 1)}


def _with_mtp_logits(parts: dict, opts: dict) -> dict:
    """``parts`` with the logits buffer held once per output head: the model's and each MTP depth's (process_mtp_loss
    computes every depth's loss in the forward; each keeps its buffers until its backward)."""
    if opts.get("mtp", "0") == "0" or "logits" not in parts:
        return parts
    return {**parts, "logits": parts["logits"] * (1 + D_mtp)}


def _model_states(data, parts, opts: dict) -> tuple:
    """(weight, gradient and Adam-state bytes, the gradient's bytes per element) of the parameters ``parts`` holds
    ((held, the group they are sharded over) pairs) as ``data`` (the framework's schedule) keeps them, Adam's state at
    the run's adam_dtype (settings.ADAM_STATE_BYTES): one rule for every stage kind."""
    weights = grads = optimizer = sp.Integer(0)
    grad_bytes = 4 if data.grad_dtype == "fp32" else 2
    # held as the framework holds them, which may not be the type they reduce in (DeepSpeed: the model's)
    held_bytes = 2 if framework_row(data.framework).grad_held_dtype == "same" else grad_bytes
    shard_bytes = sharded_gradient_bytes(data, held_bytes, opts.get("adam_dtype", "fp32"))
    state = ADAM_STATE_BYTES[opts.get("adam_dtype", "fp32")]
    # FSDP1's NO_SHARD casts its all-reduced gradient to the parameter's own dtype too (torch/distributed/fsdp/
    # _runtime_utils.py, _reduce_grad_no_shard: _cast_grad_to_param_dtype): the whole gradient at the shard's bytes
    whole_bytes = shard_bytes if data.framework == "fsdp" and data.zero == 0 else held_bytes
    for held, group in parts:
        weights += data.full_parameters(2 * held, sharded_weight_bytes(data) * held / group)
        grads += data.gradients(whole_bytes * held, shard_bytes * held / group)
        optimizer += state * held if data.zero == 0 else state * held / group
    return weights, grads, optimizer, grad_bytes


def memory_model(data, recompute: str, opts: dict, flash: bool, moe: bool, embeddings: bool,
                 gated: bool = True, kind: str | None = None) -> dict:
    """Bytes per GPU, part by part (:data:`STAGE_OF` says which stage holds each):
    weights, gradients and Adam states as ``data`` (the framework's schedule) holds them; the first
    stage's activations per Korthikanti et al. 2022 Table 2 (sbh(10 + 24/t + 5as/(ht)) per layer; with
    SP 34sbh/t + 5as²b/t; selective recompute drops the 5as²b/t scores; full recompute keeps
    the layer input 2sbh, /t with SP; flash attention never stores the scores), s → s/c; with embeddings
    the last stage's logits (:func:`logits_bytes`); the recompute working set; per-layer ZeRO-3's gathered
    layers; the data-parallel buckets (Megatron-LM reduces and gathers in place in its gradient and
    parameter buffers, param_and_grad_buffer.py: 0 bytes more; DeepSpeed ZeRO-1/2/3 its gradient bucket of
    DEEPSPEED_BUCKET 16-bit elements, deepspeed/runtime/zero/stage_1_and_2.py ipg_buffer, stage3.py ipg_buckets,
    reduced in fp32 with its fp32 copy beside it; DeepSpeed's gradients held in the model's type whatever type they
    reduce in: frameworks.DEEPSPEED_GRADS_HELD).

    ``kind`` (first, middle, last; pipeline_split=first_last only): every part of one GPU of a stage of that kind,
    all held at once (:func:`stage_memory`)."""
    if kind is not None:
        return stage_memory(data, recompute, opts, flash, moe, embeddings, gated, kind)
    tied, sp_on = bool(opts["tied"]), bool(opts["sp"])
    dense = (Phi - Phi_E) if moe else Phi
    torch_tp = torchmem.kept_whole(data.framework, opts.get("precision", "bf16"))
    eager = eager_block(data.framework, opts)
    schedule = opts["schedule"]
    saved = saved_input_bytes(data.framework, opts.get("precision", "bf16"), sp_on)
    mtp_dense, mtp_experts, mtp_parts = _mtp_parts(data, recompute, opts, flash, moe, gated, torch_tp, saved,
                                                   schedule) if embeddings else (0, 0, {})
    if embeddings:
        shard = end_stage_shard(dense, tied) + mtp_dense + replicated_embedding_share(opts.get("tp_embedding") == "replicated")
    else:
        shard = dense / (t * p)
    parts = [(shard, d * c / data.replicas)]          # hybrid sharding: over a shard group of the d·c ranks
    if moe:
        held, group = expert_shard(opts.get("expert_tp", "tp"))
        parts.append((held + mtp_experts, group))
    weights, grads, optimizer, grad_bytes = _model_states(data, parts, opts)
    body = (dense - embedding_parameters(tied) if embeddings else dense) / (t * p)
    cache = fp8_weight_cache(data, opts, body + (parts[1][0] if moe else 0))
    per_layer = layer_activation_bytes(recompute, flash, sp_on, opts.get("attention", "mha"), moe, gated,
                                       opts.get("expert_tp", "tp"), torch_tp, schedule, saved,
                                       opts.get("torch_compiled", False), bool(opts.get("mamba")),
                                       bool(opts.get("moe_latent")), bool(opts.get("recompute_mla_up")),
                                       modules_of(opts), eager=eager, widths=kept_widths(opts))
    # the first stage's micro-batches in flight (stages.in_flight at rank 0): GPipe m, 1F1B min(p, m), interleaved
    # Korthikanti et al. 2022 §4.2.3 / Narayanan et al. 2021 §2.2.2's (1 + (p − 1)/(p·v)) times that, never more than m
    in_flight = stage_in_flight(schedule, "first")
    activations = per_layer * (L / p) * in_flight
    if opts.get("cpu_offload"):
        # cpu_offload=1 (p = 1: one micro-batch in flight): L_off layers' activations in host memory (settings)
        activations = per_layer * (L - L_off)
    parts = {"weights": weights, "gradients": grads, "optimizer": optimizer, "activations": activations, **mtp_parts,
             **cache}
    if data.framework == "fsdp2":       # torch.distributed.pipelining's buffers on the first stage (0 when p = 1)
        parts["pipeline_buffers"] = sp.Piecewise(
            (0, sp.Eq(p, 1)), (torchmem.pipeline_buffers("first", _chunks(schedule), in_flight / _chunks(schedule),
                                                         sp_on), True))
    return _with_mtp_logits({**parts, **_every_stage(data, recompute, flash, sp_on, moe, embeddings, tied, grad_bytes,
                                                     last=True, loss=opts.get("loss"), torch_tp=torch_tp, outputs=opts.get("pp_outputs", "freed"),
                                                     cp=opts.get("cp", "ring"), eager=eager, gated=gated,
                                                     attention=opts.get("attention", "mha"),
                                                     expert_tp=opts.get("expert_tp", "tp"),
                                                     widths=kept_widths(opts),
                                                     replicated=opts.get("tp_embedding") == "replicated")}, opts)


def eager_block(framework: str, opts: dict) -> bool:
    """Does the block run in PyTorch's eager autograd, whose kept tensors :func:`eager_kept_widths` counts: PyTorch's
    own tensor parallel at bf16 (torchmem.kept_whole: the fsdp2 framework) with the block not compiled
    (settings.torch_compiled: a dense multi-head block, compile off, fsdp2's default)."""
    return (torchmem.kept_whole(framework, opts.get("precision", "bf16"))
            and not opts.get("torch_compiled", False))


def _chunks(schedule: str) -> sp.Expr:
    return v if schedule == "interleaved" else sp.Integer(1)


def _every_stage(data, recompute, flash, sp_on, moe, embeddings, tied, grad_bytes, last: bool,
                 loss: str | None = None, torch_tp: bool = False, cp: str = "ring", eager: bool = False,
                 gated: bool = True, attention: str = "mha", expert_tp: str = "tp",
                 widths: KeptWidths = KORTHIKANTI, replicated: bool = False, outputs: str = "freed") -> dict:
    """The parts beside the states and the kept activations: the logits (``last``: a stage holding the LM head,
    with embeddings), the recompute working set, per-layer ZeRO-3's gathered layers, the data-parallel buckets."""
    parts = {}
    micro = b / (d * m)
    if embeddings and last:
        parts["logits"] = logits_bytes(micro, loss_kind(data.framework, loss), outputs)
    torch_runtime = data.framework == "fsdp2"       # PyTorch's own buffers (symcomm.training.torchmem)
    root = data.full_parameters(sp.Integer(0), torchmem.root_parameters(tied, replicated))
    if data.framework in ROOT_KEPT_GATHERED and embeddings and root != 0:
        # the root unit gathered from its forward through the backward (FSDP1 and FSDP2 alike)
        parts["root_params"] = root
    if torch_runtime and embeddings and last:
        parts["head_inputs"] = torchmem.head_inputs(micro)
        parts["head_gradient"] = torchmem.head_gradient()
    if recompute in ("full", "op", "block") or (recompute == "selective" and not flash):
        parts["recompute"] = recompute_working_set(recompute, flash, sp_on, torch_tp, eager, gated, moe, attention,
                                                   expert_tp, widths)
    if torch_runtime and cp != "ulysses":     # PyTorch's ring attention (torchmem.RING_ATTENTION); 0 at c = 1
        parts["ring_attention"] = torchmem.ring_attention_buffers(micro)
    if data.zero == 3 and data.shard_unit == "layer":
        parts["gathered_layers"] = gathered_layers(data, moe, embeddings, tied, grad_bytes)
    if data.framework == "megatron" and data.zero >= 1:
        parts["dp_buckets"] = sp.Integer(0)
    elif data.framework == "deepspeed" and data.zero in (1, 2, 3):
        # the 16-bit bucket, and reduced in fp32 the bucket's cast copy beside it (frameworks.DEEPSPEED_GRADS_HELD)
        parts["dp_buckets"] = sp.Integer((2 + (grad_bytes if grad_bytes != 2 else 0)) * DEEPSPEED_BUCKET)
    return parts


def stage_memory(data, recompute, opts, flash, moe, embeddings, gated, kind) -> dict:
    """:func:`memory_model` for one stage kind of an uneven split, every part on that stage: its layers'
    (symcomm.training.stages.stage_layers) share of the parameters (hybrid.stage_shard, the experts in the same
    proportion), the activations of the micro-batches it holds in flight (stages.in_flight), the logits on the
    last stage, and the parts every stage holds (:func:`_every_stage`)."""
    from .hybrid import stage_shard
    from .stages import in_flight, stage_layers

    tied, sp_on, schedule = bool(opts["tied"]), bool(opts["sp"]), opts["schedule"]
    layers = stage_layers(opts["pipeline_split"], schedule, kind)
    dense = (Phi - Phi_E) if moe else Phi
    torch_tp = torchmem.kept_whole(data.framework, opts.get("precision", "bf16"))
    eager = eager_block(data.framework, opts)
    saved = saved_input_bytes(data.framework, opts.get("precision", "bf16"), sp_on)
    mtp_dense, mtp_experts, mtp_parts = (_mtp_parts(data, recompute, opts, flash, moe, gated, torch_tp, saved,
                                                    schedule) if embeddings and kind == "last" else (0, 0, {}))
    parts = [((stage_shard(dense, tied, layers, kind) if embeddings else dense * layers / (L * t)) + mtp_dense,
              d * c / data.replicas)]
    if moe:
        held, group = expert_shard(opts.get("expert_tp", "tp"))
        parts.append((held * p * layers / L + mtp_experts, group))
    weights, grads, optimizer, grad_bytes = _model_states(data, parts, opts)
    body = (dense - embedding_parameters(tied) if embeddings else dense) * layers / (L * t)
    cache = fp8_weight_cache(data, opts, body + (parts[1][0] if moe else 0))
    per_layer = layer_activation_bytes(recompute, flash, sp_on, opts.get("attention", "mha"), moe, gated,
                                       opts.get("expert_tp", "tp"), torch_tp, schedule, saved,
                                       opts.get("torch_compiled", False), bool(opts.get("mamba")),
                                       bool(opts.get("moe_latent")), bool(opts.get("recompute_mla_up")),
                                       modules_of(opts), eager=eager, widths=kept_widths(opts))
    held = in_flight(schedule, kind)
    activations = per_layer * layers * held
    buffers = {}
    if data.framework == "fsdp2":       # torch.distributed.pipelining's buffers (symcomm.training.torchmem)
        chunks = _chunks(schedule)
        buffers["pipeline_buffers"] = torchmem.pipeline_buffers(kind, chunks, held / chunks, sp_on)
    return _with_mtp_logits({"weights": weights, "gradients": grads, "optimizer": optimizer, "activations": activations,
                             **mtp_parts, **buffers, **cache,
                             **_every_stage(data, recompute, flash, sp_on, moe, embeddings, tied, grad_bytes,
                                            last=kind == "last", loss=opts.get("loss"), torch_tp=torch_tp, outputs=opts.get("pp_outputs", "freed"),
                                            cp=opts.get("cp", "ring"), eager=eager, gated=gated,
                                            attention=opts.get("attention", "mha"),
                                            expert_tp=opts.get("expert_tp", "tp"), widths=kept_widths(opts))}, opts)


#: torchtitan's eager loss, the 2024-12 benchmarks' commit: torchtitan train.py@9dec370a, loss_fn =
#: F.cross_entropy(pred.flatten(0, 1).float(), labels) (its torch.compile commented out: "compiling loss function
#: causes CUDA errors"), then ``del pred`` before loss.backward(); torchtitan/components/loss.py@820504e2 and
#: @e7c0cae9 compile the same function when training.compile is on
TORCHTITAN_LOSS = ("torchtitan train.py@9dec370a (loss_fn, del pred); torchtitan/components/loss.py@e7c0cae9 "
                   "(build_cross_entropy_loss: torch.compile(loss_fn) when training.compile)")
#: what PyTorch's eager autograd keeps and allocates: _log_softmax saves its result and its backward
#: (_log_softmax_backward_data(grad, result, ...)) writes a new tensor; nll_loss_backward writes a zeroed
#: tensor of the input's shape (pytorch tools/autograd/derivatives.yaml, aten/src/ATen/native/cuda/Loss.cu);
#: with t > 1 torch's loss_parallel computes the log-softmax as x − max, exp, x − max − log Σexp and fuses the
#: two backwards into (zeros + exp(log-probs)) · grad (torch/distributed/tensor/parallel/loss.py,
#: _log_softmax, _nll_loss_and_log_softmax_backward); a pipeline stage keeps its output until its backward
#: (torch/distributed/pipelining/stage.py, forward_one_chunk: fwd_cache)
PYTORCH_CROSS_ENTROPY = ("pytorch tools/autograd/derivatives.yaml (_log_softmax, nll_loss_forward); "
                         "torch/distributed/tensor/parallel/loss.py; torch/distributed/pipelining/stage.py")
#: NeMo AutoModel's MaskedCrossEntropy with fp32_upcast false, as its MoE benchmark recipes set it
#: (nemo_automodel/components/loss/masked_ce.py at NVIDIA-NeMo/Automodel 8d9bfb90e: F.cross_entropy of the bf16 logits
#: themselves, no .float()), called by the recipe with the model's output still referenced through the backward
#: (nemo_automodel/recipes/llm/train_ft.py there, _forward_backward_step: ``out``, then local_loss.backward())
AUTOMODEL_LOSS = ("NVIDIA-NeMo/Automodel nemo_automodel/components/loss/masked_ce.py@8d9bfb90e (fp32_upcast), "
                  "nemo_automodel/recipes/llm/train_ft.py@8d9bfb90e (_forward_backward_step)")
KEMPNERFORGE_LOSS = ("KempnerInstitute/KempnerForge kempnerforge/distributed/tensor_parallel.py@3ad9d9a "
                     "(apply_tensor_parallel: the output head), kempnerforge/training/loss.py@3ad9d9a "
                     "(cross_entropy_loss: F.cross_entropy of the logits as given), scripts/train.py@3ad9d9a (the "
                     "training step: logits = model(...); loss_fn(logits, labels); backward)")


#: torchtitan compiles its loss with the model: its compile components default to both (CompileConfig
#: components ["model", "loss"]) and BaseLoss._maybe_compile wraps the loss in torch.compile when compile is on
TORCHTITAN_LOSS_COMPILED = "pytorch/torchtitan torchtitan/components/loss.py (BaseLoss._maybe_compile) at 00a388d9"


def loss_kind(framework: str, loss: str | None, compiled: bool = False) -> str:
    """The cross-entropy a run's loss buffers follow: the ``loss`` setting, or as the framework does: FSDP2 runs
    (torchtitan's) PyTorch's F.cross_entropy, eager, or compiled with the model (``compiled``: compile=1,
    :data:`TORCHTITAN_LOSS_COMPILED`; its training.compile defaults off); Megatron-LM and Megatron-FSDP Megatron-Core's
    vocab-parallel one, which DeepSpeed and FSDP runs keep as before (their scripts' loss is not read here)."""
    if loss is not None:
        return loss
    if framework == "fsdp2":
        return "compiled" if compiled else "eager"
    return "vocab_parallel"


def loss_bytes_per_logit(loss: str, outputs: str = "freed") -> sp.Expr:
    """Bytes the cross-entropy holds at its peak, per token and vocabulary entry of the GPU's V/t, on the stage
    holding the LM head (our count from the sources' tensors, 2 bytes per bf16 element, 4 per fp32):

    * vocab_parallel (Megatron-LM megatron/core/tensor_parallel/cross_entropy.py): the LM head's bf16 output (2)
      and the fp32 copy the loss makes, exponentiates in place and saves for the backward (4): 6.
    * te_fused (Megatron-Core's --cross-entropy-loss-fusion with cross_entropy_fusion_impl "te", as Megatron-Bridge's
      performance scripts set it: Transformer Engine transformer_engine/pytorch/triton/cross_entropy.py at
      d0067d0d): the LM head's bf16 output (2) and the fp32 input gradient the forward writes (4): 6.
    * eager (:data:`TORCHTITAN_LOSS`, :data:`PYTORCH_CROSS_ENTROPY`), t = 1: the forward holds the bf16 logits (2),
      their fp32 copy (4) and the log-softmax (4): 10; ``del pred`` frees the logits and the copy is saved by no
      node, so the backward holds the saved log-softmax (4), nll_loss's gradient (4) and the log-softmax
      backward's output (4): 12, the peak.  t > 1 (loss_parallel): the forward's x − max (4) and its exp (4)
      beside the logits and the copy: 14; the fused backward's zeros (4), exp(log-probs) (4) and their sum (4)
      beside the saved log-softmax (4): 16.  With p > 1 the last pipeline stage holds its bf16 output (2) where
      ``del pred`` would free it: ``outputs`` (the pp_outputs setting, :data:`PIPELINE_OUTPUTS`) = freed, the
      micro-batch's own until its backward (forward_one_chunk's fwd_cache): 12 + 2 and 16 + 2; kept, every one of
      the m micro-batches' to the step's end (output_chunks, symcomm.training.torchmem.PIPELINE_STAGE), all m of
      them at the last one's loss: 12 + 2m and 16 + 2m.
    * compiled (torch.compile of the same loss, the upcast fused into its kernels: the reason torchtitan pull
      request 551 (closed) and allenai/OLMo-core pull request 77 give for compiling the loss): the bf16 logits
      the compiled graph saves as its input (2) and the bf16 gradient its backward writes (2): 4, the fp32 rows
      recomputed inside the fused kernels.  An assumption on Inductor's partitioner (no printed run isolates
      it), and with t > 1 (loss_parallel traced) taken the same.
    * eager_bf16 (:data:`AUTOMODEL_LOSS`): the same eager ops on the bf16 logits, no fp32 copy.  t = 1: the logits
      the caller keeps (2) and the log-softmax _log_softmax saves (2); the backward's zeroed nll_loss gradient (2)
      and the log-softmax backward's output (2) beside them: 8.  t > 1: the LM head's output is a DTensor sharded
      over the vocabulary (AutoModel's tensor-parallel plans: lm_head ColwiseParallel(output_layouts=Shard(-1),
      use_local_output=False), nemo_automodel/components/distributed/optimized_tp_plans.py@8d9bfb90e), which the
      loss gathers whole (full_tensor()) before the same ops: the kept shard (2) beside the whole vocabulary's
      saved log-softmax, zeroed gradient and backward output (3 · 2t per entry of V/t): 6t + 2 (the forward's
      gathered logits and log-softmax, 4t + 2, are below it).  With p > 1 the output the caller kept is the one
      the stage holds: nothing more when freed, the other m − 1 micro-batches' when kept, 2(m − 1).
    * replicated_bf16 (:data:`KEMPNERFORGE_LOSS`): the same eager ops on bf16 logits the LM head returns whole on
      every tensor-parallel rank (KempnerForge's plan: ColwiseParallel(input_layouts=Shard(1),
      output_layouts=Replicate()), its local output the gathered whole vocabulary), which the training loop keeps
      (its ``logits``) through the backward: the kept whole logits, the saved log-softmax, the zeroed gradient and
      the log-softmax backward's output, 4 · 2t per entry of V/t: 8t (8 at t = 1, as eager_bf16; the vocabulary
      shard the head's matmul wrote is freed once gathered).  With p > 1, as eager_bf16 with whole outputs: nothing
      more when freed, 2t(m − 1) when kept.
    * xentropy_cuda, xentropy_triton (flash-attn's CrossEntropyLoss: csrc/xentropy/xentropy_kernel.cu at
      Dao-AILab/flash-attention v1.0.3, flash_attn/ops/triton/cross_entropy.py at v2.4.2), LLM Foundry MPT's
      default loss_fn fused_crossentropy (llmfoundry/models/mpt/modeling_mpt.py at mosaicml/llm-foundry ef350d9e):
      the bf16 logits its autograd function saves (2, which Composer's outputs keep too) and the bf16 gradient
      its backward allocates beside them (2, inplace_backward off): 4.  Its forward writes only a loss and a
      log-sum-exp per token.
    """
    if loss in ("vocab_parallel", "te_fused"):
        return sp.Integer(6)
    if loss in ("compiled", "xentropy_cuda", "xentropy_triton"):
        return sp.Integer(4)
    if outputs not in PIPELINE_OUTPUTS:
        raise ValueError(f"pp_outputs {outputs!r}: one of {PIPELINE_OUTPUTS}")
    kept = outputs == "kept"

    def pipelined(held):
        return sp.Piecewise((held, sp.Gt(p, 1)), (0, True))

    if loss == "eager":
        return sp.Piecewise((16, sp.Gt(t, 1)), (12, True)) + pipelined(2 * m if kept else 2)
    if loss == "eager_bf16":
        return 6 * t + 2 + (pipelined(2 * (m - 1)) if kept else 0)
    if loss == "replicated_bf16":
        return 8 * t + (pipelined(2 * t * (m - 1)) if kept else 0)
    raise ValueError(f"loss kind {loss!r}: one of {LOSS_KINDS}")


def logits_bytes(micro, loss: str = "vocab_parallel", outputs: str = "freed") -> sp.Expr:
    """The last stage's logits and loss buffers of one micro-batch (1F1B runs each micro-batch's backward
    right after its forward on the last stage): :func:`loss_bytes_per_logit` per token and entry of the GPU's
    V/t (the LM head is column-parallel), tokens = micro·s/c."""
    tokens = micro * s / c
    return loss_bytes_per_logit(loss, outputs) * tokens * V / t


def recompute_working_set(recompute: str, flash: bool, sp_on: bool, torch_tp: bool = False,
                          eager: bool = False, gated: bool = True, moe: bool = False, attention: str = "mha",
                          expert_tp: str = "tp", widths: KeptWidths = KORTHIKANTI) -> sp.Expr:
    """What recomputation holds beside the kept activations while a layer is recomputed and its backward
    runs: under full recompute one layer's activations of one micro-batch as no recompute keeps them
    (Table 2 of Korthikanti et al. 2022: the layer's forward runs again just before its backward and stores
    them until that backward is done: Megatron-LM megatron/core/tensor_parallel/random.py,
    CheckpointFunction.backward); under selective recompute without flash attention that layer's
    recomputed scores (Table 2's 5as²b/t).  Under block, as under full (one recomputing layer at a time).  Under op, as under full, the layer's activations as no recompute
    keeps them: the recompute rebuilds them for the layer's backward; an upper bound by the op-saved outputs
    among them, which the recompute reads from the kept ones (as full's counts the kept input twice).  ``torch_tp``:
    the recomputed layer keeps its gathered inputs whole (symcomm.training.torchmem.tp_gathered_inputs); ``eager``:
    it reruns eagerly and keeps what an eager block keeps (:func:`eager_kept_widths`).  The layer's own count, as the
    kept activations take it (:func:`layer_activation_bytes`: its MLP at the model's width F, its MoE block, its
    attention; with MoE and dense layers, their average), not Korthikanti's 4h MLP, which an outsider found it took."""
    if recompute in ("full", "op", "block"):
        return layer_activation_bytes("none", flash, sp_on, attention, moe, gated, expert_tp, torch_tp, eager=eager,
                                      widths=widths)
    return scores(b / (d * m), widths)


def gathered_layers(data, moe: bool, embeddings: bool, tied: bool, grad_bytes: int) -> sp.Expr:
    """Per-layer ZeRO-3 (FSDP2, Megatron-FSDP): the layers held unsharded beside the shards: the layer
    computing and the one prefetched (2 layers' 16-bit parameters, FSDP2_RUNTIME: the next all-gather is
    issued before the current layer computes), and, reduced every micro-batch, the gradients of the layer
    computing and the one being reduce-scattered (2 layers' unsharded gradients, in the gradient type; under
    FSDP2 the one computing's in the 16-bit type and the one before's reduce-scatter input in the gradient type:
    symcomm.training.torchmem.layer_gradient_bytes; accumulating without sync, FSDP2's one unit's 16-bit gradient
    beside the accumulator: torchmem.accumulating_gradient_bytes);
    one layer = the stage's non-embedding parameters over L, split over t (the largest, an MoE layer, with
    its experts over e·t)."""
    dense = (Phi - Phi_E) if moe else Phi
    body = dense - (embedding_parameters(tied) if embeddings else 0)
    layer = body / (L * t) + (Phi_E / (L_moe * e * t) if moe else 0)
    held = data.full_parameters(sp.Integer(0), 2 * 2 * layer)
    # FSDP2: the unit computing's 16-bit gradient and the previous unit's reduce-scatter input (torchmem.FSDP2_REDUCE)
    per_param = torchmem.layer_gradient_bytes(grad_bytes) if data.framework == "fsdp2" else 2 * grad_bytes
    # FSDP2 accumulating (no gradient sync): the unit computing's 16-bit gradient beside the fp32 accumulator,
    # until its post-backward adds it in (torchmem.accumulating_gradient_bytes); like the reduced units'
    # gradients above, counted at every moment (an upper bound at the loss, before any layer's backward)
    accumulating = torchmem.accumulating_gradient_bytes(grad_bytes) if data.framework == "fsdp2" else 0
    return held + data.gradients(accumulating, per_param) * layer


@functools.lru_cache(maxsize=None)     # its Min once per activations and schedule, not per option combination
def last_stage_activations(per_layer, schedule: str) -> sp.Expr:
    """Activations the last stage keeps: 1F1B, one micro-batch (its backward follows its forward); GPipe,
    all m; interleaved, (v − 1)·p + 1 chunk-micro-batches of L/(p·v) layers (Megatron-LM
    megatron/core/pipeline_parallel/schedules.py: warm-up (p − rank − 1)·2 + (v − 1)·p micro-batches)."""
    if schedule == "gpipe":
        return per_layer * (L / p) * m
    if schedule == "interleaved":      # capped at the m·v chunk-micro-batches there are (stages.in_flight)
        return per_layer * L / (p * v) * sp.Min((v - 1) * p + 1, m * v)
    return per_layer * (L / p)


def loss_or_recompute(parts: dict) -> sp.Expr:
    """The larger of the loss side (:data:`LOSS_SIDE`: the loss buffers ``logits`` and, under fsdp2, the LM head's
    kept inputs) and the backward side (:data:`BACKWARD_SIDE`: the recompute working set ``recompute`` and, under
    fsdp2, the LM head's gradient and the ring attention's buffers ``ring_attention``) of a stage: never live at
    once, as the cross-entropy's backward is done, its buffers freed, before the first layer's backward (and its
    recompute) begins, and the loss's forward runs after every layer's (torchtitan train.py@9dec370a:
    loss.backward() from the loss; Megatron-LM megatron/core/pipeline_parallel/schedules.py: a micro-batch's
    backward from its loss)."""
    logits = sp.Add(*(parts.get(k, sp.Integer(0)) for k in LOSS_SIDE))
    work = sp.Add(*(parts.get(k, sp.Integer(0)) for k in BACKWARD_SIDE))
    if logits == 0 or work == 0:
        return logits + work
    return sp.Max(logits, work, evaluate=False)


def stage_total(parts: dict) -> sp.Expr:
    """Bytes one stage's GPU holds at its peak: every part, the loss side and the backward side as the larger of
    the two (:func:`loss_or_recompute`)."""
    rest = sp.Add(*(x for k, x in parts.items() if k not in LOSS_SIDE + BACKWARD_SIDE))
    return rest + loss_or_recompute(parts)


def memory_per_gpu(parts: dict, per_layer, schedule: str) -> sp.Expr:
    """Bytes on the busiest GPU: every stage's parts plus the larger of the first stage's (its activations, its
    pipeline buffers under fsdp2 and the backward side: the recompute working set, the ring attention's buffers)
    and the last stage's (its own activations and the larger of the logits and the backward side:
    :func:`loss_or_recompute`); with p = 1 one stage holds them all."""
    every = sp.Add(*(x for k, x in parts.items() if STAGE_OF[k] == "every" and k not in BACKWARD_SIDE))
    work = sp.Add(*(x for k, x in parts.items() if STAGE_OF[k] == "every" and k in BACKWARD_SIDE))
    first = parts["activations"] + parts.get("pipeline_buffers", sp.Integer(0))
    logits = parts.get("logits", sp.Integer(0))
    if logits == 0:
        return every + first + work
    peak_end = loss_or_recompute(parts) + parts.get("mtp_activations", sp.Integer(0))
    last = last_stage_activations(per_layer, schedule) + peak_end
    return every + sp.Piecewise((first + peak_end, sp.Eq(p, 1)), (sp.Max(first + work, last, evaluate=False), True))
