"""How a framework's tensor-parallel plan treats the sequence-sharded activations: which linears all-gather their input
under sequence parallelism (sp_input), whether the input embedding is split over the tensor-parallel ranks or whole on
each (tp_embedding) and when the sequence all-gathers may move FP8 (fp8_tp_gather), each with the
one-line refusal :class:`symcomm.training.settings.RunSetting` raises for a combination that has no meaning.  Each
function reads a setting's typed fields only, so this module imports nothing of the package (settings.py re-exports
its names).  SymPy-free: the planner imports it.
"""

from __future__ import annotations

#: which linears gather the sequence-sharded input under sequence parallelism (the sp_input setting): one gather per
#: block input, or each column-parallel projection its own (q, k, v and a gated MLP's gate and up; or a plain MLP's up)
SP_INPUTS = ("block", "linear_gated", "linear")
#: the column-parallel linears of an attention block and of a dense MLP block that gather their own input, per sp_input
SP_INPUT_LINEARS = {"linear_gated": (3, 2), "linear": (3, 1)}
#: how the input embedding's V·h weights sit on the tensor-parallel ranks (the tp_embedding setting): vocab_parallel,
#: split over the t ranks by vocabulary rows (Megatron-Core's VocabParallelEmbedding, megatron/core/tensor_parallel/
#: layers.py; torchtitan's RowwiseParallel tok_embeddings), its output partial sums reduce-scattered (all-reduced
#: without sequence parallelism); replicated, whole on every rank (:data:`TP_EMBEDDING_REPLICATED`)
TP_EMBEDDINGS = ("vocab_parallel", "replicated")
#: where the replicated embedding is read: KempnerForge leaves token_embedding out of its tensor-parallel plan, a plain
#: module whose output each rank splits by sequence itself (a DTensor Replicate that the first block's SequenceParallel
#: norm shards: no collective forward; the Shard(1) → Replicate gradient all-gathered backward, as a vocabulary-parallel
#: embedding's); untied, with sequence parallelism and no pipeline, its LM head is ColwiseParallel, split over t as
#: modelled; tied (or pipelined, or MoE) it turns sequence parallelism off and leaves the head whole, which is not
TP_EMBEDDING_REPLICATED = ("KempnerInstitute/KempnerForge kempnerforge/distributed/tensor_parallel.py at 3ad9d9a "
                           "(apply_tensor_parallel: 'Token embedding: Replicated', _wrap_replicate)")
TP_EMBEDDING_MEANING = ("embeddings=1, t > 1: how the input embedding's V x h weights sit on the tensor-parallel ranks: "
                        "vocab_parallel (split over t by vocabulary rows, the output's partial sums reduce-scattered, "
                        "all-reduced without sp: Megatron-Core's VocabParallelEmbedding, torchtitan's plan); replicated "
                        "(whole on every rank, its gradient and Adam state too, its output split by sequence locally: "
                        "no forward collective; KempnerForge's plan, tensor_parallel.py at 3ad9d9a); p = 1, t >= 2 and "
                        "tied=0 only")


#: the frameworks whose linears are Transformer Engine's (megatron_features.MEGATRON_CORE), and the recipes whose
#: sequence-parallel all-gathers it runs on quantized data (TE_FP8_GATHER)
TE_FRAMEWORKS = ("megatron", "megatron_fsdp")
TE_GATHER_RECIPES = ("fp8_tensor", "fp8_delayed", "mxfp8", "fp8_block")
#: Transformer Engine quantizes a sequence-sharded input before its all-gather (_linear_forward, LayerNormLinear,
#: LayerNormMLP: gather_along_first_dim with the quantizer), the row-parallel output gradient before the backward's
#: (base.py grad_output_preprocess) and the saved input before the weight gradient's re-gather: 1 byte an element
#: under per-tensor scaling; MXFP8 and blockwise FP8 gather 1 byte and their scales (1/32, 4/128 of a byte), the output
#: gradient in both directions (about 2.06 bytes, counted at the run's 16-bit); the reduce-scatters stay 16-bit
#: (distributed.py gather_along_first_dim; NVIDIA/TransformerEngine at d0067d0d: per-tensor FP8 since v0.12, MXFP8
#: both directions since v2.2, blockwise since v2.5)
TE_FP8_GATHER = ("NVIDIA/TransformerEngine transformer_engine/pytorch/module/linear.py, layernorm_linear.py, base.py "
                 "(grad_output_preprocess) and distributed.py (gather_along_first_dim: _all_gather_fp8, "
                 "_all_gather_mxfp8, the blockwise gather) at d0067d0d")
#: the frameworks whose tensor parallelism gathers FP8 under per-tensor scaling: torchtitan (fsdp2) applies torchao's
#: float8 TP styles when float8 is on and its recipe is tensorwise (pytorch/torchtitan torchtitan/parallelisms/
#: parallelize_llama.py at 9dec370a, apply_tp with enable_float8; torchtitan/models/llama3/parallelize_llama.py at
#: 820504e2: enable_float8_tensorwise_tp = enable_float8_linear and not float8_is_rowwise); those styles cast the
#: sequence-sharded input to FP8 before its all-gather (Float8ColwiseParallel._prepare_input_fn, PrepareFloat8ModuleInput)
#: and the output gradient before the backward's all-gather (Float8RowwiseParallel._prepare_output_fn:
#: NoopFwToFloat8BwDynamic after the reduce-scatter): pytorch/ao torchao/float8/float8_tensor_parallel.py at 6243040.
TORCHAO_GATHER_FRAMEWORKS = ("fsdp2",)


def fp8_tp_gather_of(setting) -> bool:
    """Do ``setting``'s forward sequence all-gathers (and the weight gradient's re-gathers) move FP8: its fp8_tp_gather,
    else the framework's (:data:`TE_FP8_GATHER` under Transformer Engine's recipes, torchao's float8 TP styles under
    fsdp2's per-tensor scaling), with sp=1."""
    if setting.fp8_tp_gather is not None:
        return setting.fp8_tp_gather
    if not setting.sp:
        return False
    if setting.framework in TE_FRAMEWORKS:
        return setting.precision in TE_GATHER_RECIPES
    return setting.framework in TORCHAO_GATHER_FRAMEWORKS and setting.precision == "fp8_tensor"


def fp8_grad_gather_of(setting) -> bool:
    """Do the backward's output-gradient all-gathers move FP8 as the forward's do (:func:`fp8_tp_gather_of`)? Not
    under MXFP8 or blockwise FP8, whose gradient Transformer Engine gathers in both directions (about 2.06 bytes an
    element, :data:`TE_FP8_GATHER`)."""
    return fp8_tp_gather_of(setting) and setting.precision not in ("mxfp8", "fp8_block")


def fp8_amax_reduced(setting) -> bool:
    """Does each quantize before a sequence all-gather all-reduce its amax over the tensor-parallel group first
    (Transformer Engine's current scaling, precision=fp8_tensor, with sp=1: :data:`TE_AMAX_REDUCTION`)?"""
    return setting.framework in TE_FRAMEWORKS and setting.precision == "fp8_tensor" and bool(setting.sp)


#: Transformer Engine's current scaling takes a per-tensor amax over the whole gathered tensor: the tensor-parallel
#: group is the amax reduction group of a column-parallel linear's input quantizer and of a row-parallel linear's
#: output-gradient quantizer under sequence parallel, and each such quantize runs a blocking MAX all-reduce of one fp32
TE_AMAX_REDUCTION = ("NVIDIA/TransformerEngine transformer_engine/pytorch/module (set_quantizer_amax_reduction_group) "
                     "and csrc/quantizer.cpp (Float8CurrentScalingQuantizer: the amax all-reduced before the scale) at "
                     "d0067d0d")


def fp8_tp_gather_refusal(setting) -> str | None:
    """Why ``setting``'s fp8_tp_gather=1 has no meaning, or None: FP8 gathers need sequence parallelism (without it
    the tensor-parallel collectives are all-reduces of 16-bit outputs) and a recipe that gathers quantized data
    (Transformer Engine's FP8 recipes; torchao's float8 TP styles take tensorwise scaling only)."""
    if not setting.fp8_tp_gather:
        return None
    te = setting.framework in TE_FRAMEWORKS and setting.precision in TE_GATHER_RECIPES
    if not (setting.sp and (te or setting.precision == "fp8_tensor")):
        return ("fp8_tp_gather=1 needs sp=1 and an FP8 recipe whose gathers move FP8 (precision=fp8_tensor; under "
                "framework=megatron or megatron_fsdp also fp8_delayed, mxfp8, fp8_block); give fp8_tp_gather=0 or "
                "framework")
    return None


def tp_embedding_refusal(setting) -> str | None:
    """Why ``setting``'s tp_embedding=replicated has no meaning, or None: it places the embedding, which only
    embeddings=1 counts, beside a split LM head, which KempnerForge keeps only untied (:data:`TP_EMBEDDING_REPLICATED`;
    the values it needs, p = 1 and t ≥ 2, are checked with the layout: hybrid.hybrid_checks)."""
    if setting.tp_embedding != "replicated":
        return None
    if not setting.embeddings:
        return "tp_embedding=replicated needs embeddings=1 (the V x h embedding it places); give tp_embedding=vocab_parallel"
    if setting.tied:
        return ("tp_embedding=replicated with tied=1 is not modelled: KempnerForge then turns sequence parallelism off "
                "and keeps the LM head whole (tensor_parallel.py at 3ad9d9a); give tied=0 or tp_embedding=vocab_parallel")
    return None


def sp_input_refusal(setting) -> str | None:
    """Why ``setting``'s sp_input has no meaning, or None: the per-linear gathers are sequence parallelism's, counted
    for multi-head or grouped-query attention and a dense or MoE transformer (MLA's and Mamba's input sides are their
    own).  Which MLP projections gather (linear_gated: gate and up; linear: the one up projection) the value says: the
    hybrid strategy's terms are built without the step model's gated."""
    if setting.sp_input == "block":
        return None
    if not setting.sp or setting.attention == "mla" or setting.mamba:
        return (f"sp_input={setting.sp_input} needs sp=1 with attention=mha or gqa and mamba=0 (the per-linear "
                "sequence all-gathers of q, k, v and the MLP's column-parallel linears); give sp_input=block")
    return None
