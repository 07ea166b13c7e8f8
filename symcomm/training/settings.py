"""Settings that are not symbols, typed once at the edge: :class:`Option` (one setting: its typed
values, their text forms, the aliases it accepts) and :class:`RunSetting` (every setting of a
training run, for the hybrid strategy, the step model and the planner).

Text comes in once (:func:`parse`, from KEY=VALUE texts or the planner's flags) and goes out once
(:func:`format`, the canonical KEY=VALUE words every command echoes).  Inside, values are typed:
flags are ``bool``, the ZeRO stage an ``int``, choices ``str``, and "as the framework does" is
``None`` (written ``framework``).  ``recompute`` is one thing everywhere: none, selective, full or op
activation recomputation (0 and 1 are the documented aliases of none and full), and for the hybrid alone block
(full for the first L_rc layers of each model chunk: :data:`HYBRID_RECOMPUTE`); the collectives
of the forward run again only under full and block (:func:`reruns_forward`), the sequence all-gathers alone under
op (:func:`regathers_forward`).  SymPy-free: the planner imports it.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from fractions import Fraction
from typing import Iterable, Mapping

from . import frameworks as F
from ..base.crossing import NVLINK_MEANING, NVLINK_TOPOLOGIES, SWITCH
from ..base.errors import InputError
from .option import BY_FRAMEWORK, Option, choices, flag  # noqa: F401 (re-exported)
from .tp_plans import (SP_INPUT_LINEARS, SP_INPUTS, TP_EMBEDDING_MEANING, TP_EMBEDDINGS,  # noqa: F401 (re-exported)
                       fp8_amax_reduced, fp8_grad_gather_of, fp8_tp_gather_of, fp8_tp_gather_refusal, sp_input_refusal,
                       tp_embedding_refusal)
from .megatron_features import (MAMBA_FRAMEWORKS, MAMBA_RECOMPUTE, MTP_FRAMEWORKS, MTP_KINDS,  # noqa: F401 (re-exported)
                                RECOMPUTE_MODULES, bf16_layers_refusal, mamba_refusal, mla_up_refusal, mtp_refusal,
                                recompute_modules_refusal, te_precision_refusal, cpu_offload_refusal, EXPERT_TP_SIZE,
                                FLEX_DISPATCHERS, FUSED_GROUPED_MLP_SOURCE, fused_grouped_mlp_refusal, fused_grouped_mlp_shape_refusal)

#: activation recomputation (Korthikanti et al. 2022): none; selective (the attention core only,
#: no collective re-runs); full (each layer's forward again in the backward, its collectives too); op
#: (torchtitan's op-level selective activation checkpointing, TORCHTITAN_OP_SAC: each block keeps the outputs of
#: its odd-numbered matmuls, of the attention core and of the reduce-scatters, and recomputes the rest)
RECOMPUTE = ("none", "selective", "full", "op")
#: torchtitan's op-level selective activation checkpointing, where the op mode is read
TORCHTITAN_OP_SAC = ("pytorch/torchtitan torchtitan/parallelisms/parallelize_llama.py at 9dec370a (_save_list, "
                     "_apply_ac_to_transformer_block: selective_ac_option = 'op'), the same list and policy in "
                     "torchtitan/models/llama3/parallelize_llama.py at 820504e2 and e7c0cae9: aten.mm (all but every "
                     "second one, counted per block and pass), the flash/efficient SDPA, _c10d_functional."
                     "reduce_scatter_tensor and aten.max saved, every other op recomputed in the backward "
                     "(torch.utils.checkpoint, create_selective_checkpoint_contexts)")
#: attention: multi-/grouped-query (mha, gqa=1 for grouped) or DeepSeek's multi-head latent attention
ATTENTION = ("mha", "mla")
#: the expert tensor-parallel size: the TP size t (Megatron-Core's default) or 1
EXPERT_TP = tuple(EXPERT_TP_SIZE)
#: MoE token dispatch as Megatron-Core runs it (megatron/core/transformer/moe/token_dispatcher.py):
#: alltoall (MoEAlltoAllTokenDispatcher, dropless: pairwise all-to-alls, the counts all-gathered and copied to the
#: host first); alltoall_padded (the same with moe_pad_expert_input_to_capacity: the splits are constant, no
#: counts exchange, no host wait); deepep and hybridep (MoEFlexTokenDispatcher's backends, fused_a2a.py: one
#: network copy per destination node, fanned out over NVLink)
DISPATCHERS = ("alltoall", "alltoall_padded", *FLEX_DISPATCHERS)
#: group-limited routing (symcomm.training.routing.GROUP_LIMITED_ROUTING): the groups G the experts are cut into
#: (powers of two: the places-per-group count needs G and the expert group's nodes to divide one another) and the g
#: chosen
ROUTER_GROUPS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
ROUTER_GROUP_TOPK = tuple(range(1, 17))
#: the spellings of recompute kept from its flag form: 0 = none, 1 = full
RECOMPUTE_ALIASES = {"0": "none", "1": "full"}
#: the matmul precision recipes (symcomm.training.compute): bf16; FP8 with one scale per tensor (Transformer
#: Engine's current scaling, torchao float8 tensorwise: the cast reads the tensor twice); MXFP8 (one E8M0 scale per 32
#: elements, Blackwell); DeepSeek-V3's blockwise FP8 (1×128 activation and 128×128 weight blocks, fp32 scales); torchao
#: float8 rowwise (one fp32 scale per row of the input, weight and output gradient, all three GEMMs in FP8); NVFP4
#: (Transformer Engine's NVFP4BlockScaling, Blackwell: E2M1 values, one E4M3 scale per 16 elements of an activation or
#: gradient and per 16×16 block of a weight, all three GEMMs in FP4); FP8 with one scale per tensor from the amax
#: history (Transformer Engine's delayed scaling, Megatron-Core's default fp8_recipe, megatron/core/transformer/
#: transformer_config.py at d98e8a64: the cast reads the tensor once)
PRECISIONS = ("bf16", "fp8_tensor", "mxfp8", "fp8_block", "fp8_rowwise", "nvfp4", "fp8_delayed")
#: the share of the HBM bandwidth torchao's rowwise casts reach, as torchao's own table of rowwise speedups on H100
#: shows it (pytorch/ao docs/static/fp8-rowwise-perf.png at fdddb2cf, pull request 2312: a compiled LayerNorm ->
#: Linear -> Sigmoid forward + backward against bf16 over 216 shapes, derivations/data/torchao_rowwise_h100.json):
#: the share on the lattice of hundredths whose predicted speedups have the least squared log error over its 144
#: shapes with M ≥ 4096, the model's GEMMs at h100's fitted constants on the part it ran on (symcomm.derivations.
#: rowwise_casts, which finds it; 11.5 % mean error, −0.3 % signed, against 38.3 % and +38.3 % at the roofline,
#: share 1).  Read on H100 (0.38 at the low end of that part's bounded peak) and used on every part: no other
#: part's table is published.  Fitted on no training run.
ROWWISE_CAST_SHARE = Fraction(43, 100)
#: Adam's state bytes per parameter, by its type (the adam_dtype setting; the memory model and the optimizer step read
#: them): fp32 master weight and moments (4 + 4 +
#: 4); fp32 master, bf16 moments (4 + 2 + 2: Megatron-Core's precision-aware optimizer, megatron/core/optimizer/
#: optimizer_config.py at d98e8a64 exp_avg_dtype, exp_avg_sq_dtype); all three bf16 (2 + 2 + 2: NVIDIA/apex
#: apex/contrib/optimizers/distributed_fused_adam.py, DistributedFusedAdam ``dtype``, the optimizer state's type,
#: its parameter copy included); fp32 moments and the fp32 master kept as the bf16 weight and an int16 remainder (2 + 4
#: + 4: the same optimizer's store_param_remainders, StateBucket.param_remainders_shard, which NeMo sets for an fp32
#: optimizer over a bf16 model: nemo/collections/nlp/models/language_modeling/megatron_base_model.py at 579983fbfc,
#: setup_optimization)
ADAM_STATE_BYTES = {"fp32": 12, "bf16_moments": 8, "bf16": 6, "fp32_remainders": 10}
#: Adam's state types, the adam_dtype setting's values
ADAM_DTYPES = tuple(ADAM_STATE_BYTES)
#: the flash-attention kernels the step model times apart (symcomm.training.compute): fused (the framework's own:
#: cuDNN / FA3 class through Transformer Engine, PyTorch SDPA's first backend under fsdp and fsdp2),
#: FlashAttention-2 (PyTorch SDPA's flash backend), FlashAttention's Triton port (MPT's attn_impl triton) and cuDNN's
#: fused attention named whatever the framework (Transformer Engine's FusedAttention under a PyTorch-native trainer,
#: PyTorch SDPA's cuDNN backend): the last three at their published shares
#: (symcomm.presets.hardware_values.PUBLISHED_KERNELS)
ATTENTION_KERNELS = ("fused", "fa2", "triton", "cudnn")
#: the cross-entropy kinds of the ``loss`` setting (symcomm.training.memory.loss_bytes_per_logit counts each); None: as
#: the framework does (symcomm.training.memory.loss_kind)
LOSS_KINDS = ("vocab_parallel", "te_fused", "eager", "compiled", "eager_bf16", "replicated_bf16", "xentropy_cuda",
              "xentropy_triton")

#: what torch.distributed.pipelining's last stage does with each micro-batch's output (the pp_outputs setting):
#: freed at the micro-batch's backward (schedule.step(return_outputs=False), which torchtitan passes since
#: pytorch/torchtitan e5ef99aa, 2025-10-22, "Update PP to release memory earlier", on the API of pytorch/pytorch pull
#: request 165822, PyTorch 2.10); kept to the step's end for the step to merge and return (return_outputs=True, the
#: API's default and the only behaviour before it: torch/distributed/pipelining/stage.py, output_chunks)
PIPELINE_OUTPUTS = ("freed", "kept")
#: the frameworks whose pipeline is torch.distributed.pipelining (the only one that can keep the outputs)
TORCH_PIPELINING_FRAMEWORKS = ("fsdp2",)


def pp_outputs_refusal(run) -> str | None:
    """Why pp_outputs=kept does not apply to ``run``'s framework, or None."""
    if run.pp_outputs == "kept" and run.framework not in TORCH_PIPELINING_FRAMEWORKS:
        return (f"pp_outputs=kept: only framework={'/'.join(TORCH_PIPELINING_FRAMEWORKS)} runs "
                f"torch.distributed.pipelining, whose schedules can keep the last stage's outputs; "
                f"framework={run.framework}'s pipeline frees them (give pp_outputs=freed or leave it out)")
    return None


def reruns_forward(recompute: str) -> bool:
    """Whether the forward's collectives run again before the backward: under full recompute, and under block for
    its L_rc layers of each chunk (selective recomputes the attention core, which holds no collective; op:
    :func:`regathers_forward`)."""
    return recompute in ("full", "block")


def regathers_forward(recompute: str) -> bool:
    """Whether the forward's sequence-parallel all-gathers, and they alone, run again before the backward: under
    op (TORCHTITAN_OP_SAC: the op list saves the reduce-scatters' outputs, not the all-gathers', which the recompute
    of the block's norms-to-matmuls path runs again)."""
    return recompute == "op"


#: why recompute=op refuses some settings: the op list and its matmul order are those of torchtitan's dense Llama
#: block (torchtitan/models/llama/model.py at 9dec370a: wq, wk, wv, SDPA, wo, w1, w3, w2)
OP_REFUSED = {
    "moe": "recompute=op with moe=1 is not modelled: torchtitan's MoE blocks run grouped matmuls and all-to-alls "
           "outside the dense block's op list and matmul order this mode counts; give recompute=full or none",
    "attention": "recompute=op with attention=mla is not modelled: the op list and matmul order counted are those of "
                 "torchtitan's Llama block (wq, wk, wv, SDPA, wo, w1, w3, w2); give recompute=full or none",
    "flash": "recompute=op needs flash=1: the op list keeps the fused SDPA's output (aten._scaled_dot_product_flash/"
             "efficient_attention); without it the attention core is no saved op",
}


def op_refusal(setting) -> str | None:
    """Why ``setting`` (recompute=op) has no meaning, or None (:data:`OP_REFUSED`)."""
    if setting.recompute != "op":
        return None
    if setting.moe:
        return OP_REFUSED["moe"]
    if setting.attention == "mla":
        return OP_REFUSED["attention"]
    if not setting.flash:
        return OP_REFUSED["flash"]
    return None


#: the frameworks that run eager by default: torchtitan (fsdp2), whose training.compile is false unless asked
#: (pytorch/torchtitan torchtitan/config_manager.py at 9dec370a: --training.compile store_true; train_configs/
#: llama3_8b.toml: compile = false)
EAGER_DEFAULT = ("fsdp2",)


def runs_eager(setting) -> bool:
    """Do the memory-bound ops run eagerly, op by op?  compile=0; or compile=framework with a framework of
    :data:`EAGER_DEFAULT` and a dense multi-head block (the one whose eager ops are counted: a MoE or MLA block of
    those frameworks is counted fused, as before the setting)."""
    if setting.compile is not None:
        return not setting.compile
    return setting.framework in EAGER_DEFAULT and not setting.moe and setting.attention == "mha"


def torch_compiled(setting) -> bool:
    """Does torch.compile's partitioner decide what the checkpointed blocks keep (symcomm.training.memory.
    COMPILED_SAVED): fsdp2 (torchtitan, whose training.compile wraps each block in torch.compile) not running eager.
    Under another framework compile=1 names its own fused kernels, and its checkpointing keeps what it saves."""
    return setting.framework in EAGER_DEFAULT and not runs_eager(setting)


def compile_refusal(setting) -> str | None:
    """Why ``setting``'s compile=0 has no meaning, or None: the eager count is torchtitan's dense Llama block's
    (symcomm.training.compute.EAGER_BYTES)."""
    if setting.compile is not False:
        return None
    if setting.framework not in EAGER_DEFAULT:
        return (f"compile=0 with framework={setting.framework} is not modelled: the eager op count is torchtitan's "
                "Llama block (framework=fsdp2); give compile=1")
    if setting.moe or setting.attention == "mla":
        return ("compile=0 with moe=1 or attention=mla is not modelled: the eager op count is torchtitan's dense Llama "
                "block (RMSNorm, rotary, SwiGLU); give compile=1")
    return None




def block_refusal(setting) -> str | None:
    """Why ``setting``'s recompute=block has no meaning here, or None: its L_rc counts layers of each model chunk,
    which an even split makes alike (an uneven split's first and last chunks would recompute a different share)."""
    if setting.recompute == "block" and setting.pipeline_split != "even":
        return ("recompute=block needs pipeline_split=even: L_rc layers of each model chunk are a share of the "
                "stage's layers only when the chunks hold alike; give pipeline_split=even or recompute=full")
    return None


def router_refusal(setting) -> str | None:
    """Why ``setting``'s group-limited routing has no meaning, or None (Megatron-Core transformer_config.py asserts
    moe_router_group_topk ≤ moe_router_num_groups)."""
    if setting.router_group_topk > setting.router_groups:
        return (f"router_group_topk={setting.router_group_topk} must be at most router_groups="
                f"{setting.router_groups}: a token chooses among the groups there are")
    return None


RECOMPUTE_OPTION = Option("recompute", "none", RECOMPUTE,
                          "activation recomputation: none; selective (the attention core: no collective runs "
                          "again); full (the forward collectives run again in backward); op (torchtitan's op-level "
                          "selective checkpointing: each block keeps its odd-numbered matmuls', the SDPA's and the "
                          "reduce-scatters' outputs and recomputes the rest, its sequence all-gathers again; dense "
                          "Llama blocks with flash attention, sp=1 when t > 1); 0 = none, 1 = full",
                          RECOMPUTE_ALIASES)

#: the hybrid's recompute modes: every mode of :data:`RECOMPUTE` and block, a layer count per model chunk that only a
#: whole run's layout gives (the single strategies count one layer's collectives: none of theirs)
HYBRID_RECOMPUTE = RECOMPUTE + ("block",)
#: Megatron-Core's block recompute, where the block mode is read: transformer_config.py (recompute_granularity "full",
#: recompute_method "block": "recompute the input activations of only a set number of individual Transformer layers
#: per pipeline stage", recompute_num_layers) and transformer_block.py (_checkpointed_forward: with method block, the
#: layers of one TransformerBlock, a model chunk, with index below recompute_num_layers run under
#: tensor_parallel.checkpoint, the others plainly): NVIDIA/Megatron-LM megatron/core/transformer at f2e5db402c
MEGATRON_BLOCK_RECOMPUTE = ("NVIDIA/Megatron-LM megatron/core/transformer/transformer_config.py and "
                            "transformer_block.py (_checkpointed_forward, recompute_method 'block') at f2e5db402c")
HYBRID_RECOMPUTE_OPTION = Option("recompute", RECOMPUTE_OPTION.default, HYBRID_RECOMPUTE, RECOMPUTE_OPTION.meaning.replace(
    "; 0 = none", "; block (Megatron's --recompute-method block: the first L_rc layers of each model chunk as under "
    "full, the others as under none; pipeline_split=even); 0 = none"), RECOMPUTE_ALIASES)

#: the hybrid strategy's options (symcomm.training.strategies "hybrid"), in the order they are printed
HYBRID_OPTIONS: tuple[Option, ...] = (
    Option("zero", 1, (0, 1, 2, 3), "ZeRO stage of the data-parallel axis"),
    Option("framework", "megatron", tuple(F.FRAMEWORKS), F.option_meaning()),
    Option("grad_reduce", None, (None,) + F.GRAD_REDUCE,
           "when the data-parallel gradients are reduced: per_step (once, after the last micro-batch; no_sync) or "
           "per_micro_batch (m times); framework: as the framework does (fsdp2 with p > 1: once per pipeline schedule)"),
    Option("grad_dtype", None, (None,) + F.GRAD_DTYPES,
           "element type of the gradient reductions: fp32 (Megatron-LM's default for bf16 runs, torchtitan's "
           "FSDP2, DeepSpeed with Ulysses c ≥ 2, which eval asks to be given), same (the run's --dtype: DeepSpeed's and "
           "FSDP1's defaults); framework: as the framework does; "
           "formulas count that type's elements, bytes use its size (DeepSpeed holds its gradients in the model's "
           "type whatever type they reduce in: its grad_accum_dtype)"),
    Option("reshard_after_forward", None, (None, False, True),
           "zero=3: 1 = parameters all-gathered again in every micro-batch's backward (DeepSpeed, FSDP "
           "FULL_SHARD); 0 = kept from the forward (FSDP SHARD_GRAD_OP); framework: 1, but 0 for fsdp2 with p ≥ 2 "
           "(torchtitan's policy)"),
    flag("sp", "1 = Megatron sequence parallel on the tensor axis"),
    Option("sp_regather", None, (None, False, True),
           "sp=1: 1 = the backward all-gathers the sequence-sharded inputs again for the weight "
           "gradients (Megatron-LM, Transformer Engine); 0 = kept; framework: 1 for megatron and "
           "deepspeed, 0 for fsdp"),
    Option("sp_input", "block", SP_INPUTS,
           "sp=1: which linears all-gather the sequence-sharded input (and reduce-scatter its gradient): block (one "
           "gather per block input: Megatron-LM, torchtitan's PrepareModuleInput); linear_gated (each of q, k, v and a "
           "gated MLP's gate and up its own: ColwiseParallel(input_layouts=Shard(1)) on every projection, KempnerForge's "
           "plan, five gathers under torch.compile too); linear (q, k, v and a plain MLP's one up projection)"),
    HYBRID_RECOMPUTE_OPTION, Option("schedule", "1f1b", F.SCHEDULES, "pipeline schedule"),
    flag("ga_schedules", F.GA_SCHEDULES_MEANING), flag("hsdp", F.HSDP_MEANING),
    Option("pipeline_split", "even", ("even", "first_last"), F.PIPELINE_SPLIT_MEANING),
    flag("scatter_gather", "1 = Megatron scatter-gather: pipeline sends 1/t, re-assembled by all-gather "
                           "over t at the receiver (sp=0 only: with sp=1 the sends are already 1/t and "
                           "Megatron skipped it)"),
    Option("cp", "ring", ("ring", "ulysses", "ring_flash_attn"),
           "context-parallel algorithm: ring (minimal backward), ulysses, or ring_flash_attn (ring "
           "attention with ring-flash-attention's backward, see cp_ring)"),
    flag("gqa", "1 = K and V have width h_kv, else h"), Option("nvlink", SWITCH, NVLINK_TOPOLOGIES, NVLINK_MEANING),
    Option("attention", "mha", ATTENTION,
           "mha: multi-head attention (grouped-query with gqa=1); mla: DeepSeek's multi-head latent attention "
           "(q_lora, kv_lora, d_nope, d_rope, d_v; DeepSeek-V2 arXiv:2405.04434 §2.1, Megatron-Core "
           "multi_latent_attention.py)"),
    flag("moe", "1 = L_moe MoE layers with Phi_E expert parameters, expert-parallel over e, in the "
                "dense MLP's place; Megatron's all-to-all dispatcher, expert tensor parallel size t "
                "(its default): with t > 1 (sp=1) the routed tokens are all-gathered and the expert "
                "outputs reduce-scattered over the t ranks (token_dispatcher.py)"),
    Option("expert_tp", "tp", EXPERT_TP,
           "moe=1: the expert tensor-parallel size (Megatron-Core --expert-tensor-parallel-size): tp = t (its "
           "default: experts split over the TP group, routed tokens all-gathered and outputs reduce-scattered "
           "over it); 1 = experts whole on each GPU, sharded over e only, e | t·d·c (parallel_state.py); t_e = "
           "the typed t_e, the expert grid's own innermost axis: t_e·e | t·d·c"),
    Option("dispatcher", "alltoall", DISPATCHERS,
           "moe=1: the token dispatcher (Megatron-Core --moe-token-dispatcher-type, --moe-flex-dispatcher-backend): "
           "alltoall (dropless: pairwise all-to-alls of the k routed copies; before each MoE layer's forward the "
           "per-expert token counts are all-gathered over the expert group and copied to the host, which waits); "
           "alltoall_padded (--moe-pad-expert-input-to-capacity, capacity factor 1: constant splits, nothing waits); "
           "deepep, hybridep (the flex dispatcher: a token crosses the network once per destination node, then fans "
           "out over NVLink to each destination GPU once, however many of its k experts that GPU holds; the host "
           "waits for the received counts; expert_tp=1 when t > 1). Sent in the run's 16-bit type: Megatron-Core "
           "dispatches no FP8 (fused_a2a.py). Megatron-Core's own default, allgather (transformer_config.py), is not "
           "modelled; Megatron-Bridge's MoE model providers set alltoall (qwen_provider.py, deepseek_provider.py, "
           "gpt_oss_provider.py) and its recipes alltoall or flex"),
    Option("router_groups", 1, ROUTER_GROUPS,
           "moe=1: group-limited routing (Megatron-Core --moe-router-num-groups; DeepSeek-V3's node-limited "
           "routing, arXiv:2412.19437 §2.1.2, config n_group): the E experts cut into this many contiguous groups, "
           "router_group_topk of them chosen per token and its k experts among theirs; 1 = ungrouped (Megatron-Core's "
           "default None routes alike). Changes where the flex dispatcher's copies go (dispatcher=deepep, hybridep); "
           "the alltoall dispatchers send one row per (token, expert) pair either way, the same bytes"),
    Option("router_group_topk", 1, ROUTER_GROUP_TOPK,
           "moe=1: the groups chosen per token (Megatron-Core --moe-router-group-topk; config topk_group; "
           "DeepSeek-V3: 4 of 8), at most router_groups"),
    flag("mamba", "1 = hybrid Mamba-Transformer layers (Nemotron-H, Nemotron 3: Megatron-Core's "
                  "hybrid_layer_pattern), each of the L layers one block with its own pre-norm: L_att attention, L_ssm "
                  "Mamba-2 mixers (a_ssm heads, d_ssm wide, state n_ssm, g_ssm groups), L_moe MoE (moe=1), the rest "
                  "dense MLPs; framework megatron or megatron_fsdp, recompute none or selective, c = 1 "
                  "(megatron/core/ssm/mamba_mixer.py at d98e8a64)"),
    flag("moe_latent", "mamba=1, moe=1: 1 = LatentMoE (Nemotron 3 Super; Megatron-Core --moe-latent-size h_lat): each "
                       "MoE block projects its tokens h → h_lat before the router's dispatch and h_lat → h after the "
                       "combine (fc1_latent_proj, fc2_latent_proj: TE linears duplicated on every TP rank), the routed "
                       "experts h_lat wide, the shared experts on the h-wide tokens (megatron/core/transformer/moe/"
                       "moe_layer.py at d98e8a64)"),
    flag("embeddings", "1 = the V × h embedding (first stage) and LM head (last stage): their "
                       "tensor-parallel collectives and cross-entropy all-reduces, and the larger "
                       "data-parallel shard of the end stages; tp and dp are then the last stage's GPU "
                       "(Megatron-LM layers.py, mappings.py, cross_entropy.py)"),
    Option("tp_embedding", "vocab_parallel", TP_EMBEDDINGS, TP_EMBEDDING_MEANING),
    flag("tied", "embeddings=1: 1 = the LM head shares the embedding's weights; with p > 1 the last "
                 "stage keeps a copy and the two stages all-reduce its gradient once per step "
                 "(finalize_model_grads.py)"),
    flag("fp8_param_gather", "1 = the data-parallel parameter all-gathers move FP8 weights, 1 byte per element "
                             "(Megatron-Core --fp8-param-gather with the distributed optimizer or FSDP; torchao "
                             "float8 enable_fsdp_float8_all_gather); zero ≥ 1 and an FP8 precision only; with "
                             "precision=mxfp8 Megatron-Core gathers the weights in bf16 and re-quantizes them"),
    Option("fp8_tp_gather", None, (None, False, True),
           "sp=1, an FP8 recipe: 1 = the sequence-parallel all-gathers (the column-parallel GEMMs' inputs forward "
           "and their re-gathers, the row-parallel GEMMs' output gradients backward but under mxfp8 and fp8_block) "
           "move FP8 elements, 1 byte each, the reduce-scatters staying 16-bit (Transformer Engine quantizes before it "
           "gathers: tp_plans.TE_FP8_GATHER; torchao's float8 TP styles, which torchtitan applies under float8 "
           "tensorwise only); framework: 1 for megatron and megatron_fsdp under fp8_tensor, fp8_delayed, mxfp8 and "
           "fp8_block and for fsdp2 under fp8_tensor, with sp=1; 0 otherwise (tp_plans.fp8_tp_gather_of)"),
    Option("precision", "bf16", PRECISIONS,
           "the linear layers' and experts' matmuls: bf16; fp8_delayed (one scale per tensor from the amax history: "
           "Transformer Engine's delayed scaling, Megatron-LM's default --fp8-recipe, the amax taken in the cast); "
           "fp8_tensor (one scale per tensor: Transformer Engine "
           "current/delayed scaling, torchao float8 tensorwise); mxfp8 (one scale per 32 elements); fp8_block "
           "(1×128 activation, 128×128 weight blocks); fp8_rowwise (torchao float8 rowwise: per-row scales, its casts and "
           "the backward's rescale as torchao runs them); nvfp4 (Transformer Engine NVFP4: FP4 matmuls at peak_fp4 × "
           "eta_fp4, 16-element scales, 16×16 for weights); the attention core, norms, softmax and LM head stay bf16"),
    flag("bf16_layers", "precision other than bf16: 1 = L_bf16 of the L layers keep their linear GEMMs in bf16 "
                        "(Megatron-Core --first-last-layers-bf16 with --num-layers-at-start-in-bf16 and "
                        "--num-layers-at-end-in-bf16: transformer_config.py at d98e8a64; Megatron-Bridge's "
                        "nemotron_3_super_bf16_with_nvfp4_mixed keeps the last 14), a stage holding them in the model's "
                        "proportion; their casts not run"),
    flag("recompute_mla_up", "attention=mla, recompute none or selective: 1 = Megatron-Core's recompute module "
                             "mla_up_proj (--recompute-modules mla_up_proj): the up projections and rotary embedding "
                             "that make Q, K, V from the latents run again before the attention core's backward, so "
                             "Q, K, V are not kept (multi_latent_attention.py at d98e8a64: CheckpointWithoutOutput, "
                             "discard_output_and_register_recompute)"),
    flag("cpu_offload", "framework megatron or megatron_fsdp, p = 1, recompute=none: 1 = the activations of L_off "
                        "layers kept in host memory, not the GPU's (Megatron-Core --cpu-offloading "
                        "--cpu-offloading-num-layers L_off, Transformer Engine's CPU offload context); the copies to "
                        "and from the host are not timed (they run on their own stream) and the copy buffers in "
                        "flight are not counted"),
    Option("mtp", "0", MTP_KINDS,
           "embeddings=1, framework megatron or megatron_fsdp: multi-token prediction (Megatron-Core "
           "--mtp-num-layers D_mtp; multi_token_prediction.py at d98e8a64) on the last stage: each of the D_mtp "
           "depths normalizes the hidden state and the next token's embedding, projects their concatenation 2h → h "
           "(eh_proj), runs one layer of the model's last kind (MoE with moe=1; with mamba=1 an attention and an "
           "expert block, Nemotron 3 Super's '*E') and the shared output head and cross-entropy; 1 = each depth its "
           "own layer, shared = one layer run D_mtp times (mtp_use_repeated_layer); 0 = none"),
    flag("recompute_moe_act", "moe=1, recompute none or selective, precision not fp8_delayed: 1 = Megatron-Core's "
                              "recompute module moe_act: the routed experts' activation output is not kept and is made "
                              "again from FC1's output before FC2's backward (moe/experts.py at d98e8a64: "
                              "CheckpointWithoutOutput)"),
    flag("recompute_layernorm", "moe=1 or attention=mla, recompute none or selective, precision not fp8_delayed: 1 = "
                                "Megatron-Core's recompute module layernorm: the norms that are their own module (the "
                                "MoE layers' pre-MLP norm, MLA's input norm) keep no output and run again before the "
                                "backward (transformer_layer.py at d98e8a64: CheckpointWithoutOutput)"),
    flag("recompute_mlp", "mamba=0, recompute none or selective: 1 = Megatron-Core's recompute module mlp: each dense "
                          "layer's MLP keeps only its input and runs its forward again, GEMMs and tensor-parallel "
                          "collectives, before its backward (transformer_layer.py at d98e8a64: tensor_parallel.checkpoint)"),
    flag("recompute_moe", "moe=1, recompute none or selective: 1 = Megatron-Core's recompute module moe: each MoE layer "
                          "keeps only its input and runs its forward again, dispatch and combine included, before its "
                          "backward (moe/moe_layer.py at d98e8a64: tensor_parallel.checkpoint)"),
)

#: the step model's options beyond the hybrid strategy's (symcomm.training.steptime)
STEP_OPTIONS: tuple[Option, ...] = (
    flag("gated", "1 = a gated MLP (SwiGLU: three h × F matrices), else two"),
    Option("overlap_grad_reduce", None, (None, False, True),
           "1 = the data-parallel gradient reductions run in buckets behind the backward (Megatron-LM "
           "--overlap-grad-reduce; the last bucket stays exposed); 0 = after it, exposed; framework: as the "
           "framework does (" + F.DP_OVERLAP_SOURCE + "); dp_overlap is its older name"),
    Option("overlap_param_gather", None, (None, False, True),
           "1 = the parameter all-gathers hide behind compute: zero=1/2, the one after the optimizer step in "
           "buckets behind the next step's first forward (Megatron-LM --overlap-param-gather; the first bucket "
           "stays exposed); zero=3, each gather prefetched behind the compute before it; 0 = exposed; framework: "
           "as the framework does (" + F.PARAM_GATHER_SOURCE + ")"),
    Option("a2a_overlap", None, (None, False, True),
           "moe=1: 1 = the expert-parallel all-to-alls of one micro-batch hide behind another micro-batch's "
           "compute as far as it lasts (Megatron-Core --overlap-moe-expert-parallel-comm, DeepEP); 0 = on the "
           "critical path; framework: as the framework does (" + F.A2A_OVERLAP_SOURCE + ")"),
    Option("p2p_overlap", None, (None, False, True),
           "1 = the pipeline sends and receives hide behind the chunks' compute (Megatron-LM overlap_p2p_comm, "
           "interleaved schedule only); 0 = on the critical path; framework: as the framework does ("
           + F.P2P_OVERLAP_SOURCE + ")"),
    flag("tp_overlap", "1 = the tensor-parallel collectives run chunk by chunk behind their GEMMs (Megatron-Core "
                       "--tp-comm-overlap: Transformer Engine userbuffers; PyTorch async TP): one chunk of t "
                       "stays exposed, the rest hides behind the micro-batch's compute as far as it lasts; with "
                       "framework=fsdp2 (PyTorch's async TP) each sequence collective hides behind the GEMM it is "
                       "fused with only"),
    Option("tp_backward_overlap", None, (None, False, True),
           "tp_overlap=0: 1 = the column-parallel linears (QKV, FC1) start two collectives of their backward "
           "asynchronously, each hiding behind the one GEMM it runs beside: the input's re-all-gather behind the "
           "input-gradient GEMM, the input gradient's reduce-scatter (all-reduce without sequence parallel) behind the "
           "weight-gradient GEMM (dense blocks; Megatron-LM --async-tensor-model-parallel-allreduce, on by default "
           "since 2021-09); 0 = every tensor-parallel collective on the critical path; framework: 1 for megatron and "
           "megatron_fsdp, 0 otherwise (" + F.TP_BACKWARD_OVERLAP_SOURCE + ")"),
    flag("flash", "1 = flash attention (no s × s scores kept)", True),
    flag("dropout", "1 = dropout on (p > 0: Megatron-Core's default hidden and attention dropout 0.1, Korthikanti et "
                    "al.'s count): each layer keeps its dropout masks, 1 byte an element; 0 = trained without dropout "
                    "(p = 0: PyTorch's dropout keeps no mask), as every preset records (models.json); memory only",
         True),
    Option("attention_kernel", "fused", ATTENTION_KERNELS,
           "flash=1: the attention core's kernel: fused (the framework's own: Megatron-Core's TEDotProductAttention, "
           "cuDNN on Hopper and later, FlashAttention below, at the hardware's share eta_attn; for fsdp and fsdp2 "
           "PyTorch's scaled_dot_product_attention, cuDNN's first on compute capability 9.x and 10.x as torchtitan and "
           "PyTorch ship today, FlashAttention-2 first below, each at its published share: frameworks.framework_attention); fa2 (FlashAttention-2: PyTorch SDPA's flash backend, first in its default "
           "order where cuDNN is not asked for first) at the hardware's published share eta_fa2; triton "
           "(FlashAttention's Triton port, flash_attn_triton.py: MPT's attn_impl triton in LLM Foundry) at the "
           "hardware's published share eta_triton; cudnn (cuDNN's fused attention whichever framework calls it: "
           "Transformer Engine's DotProductAttention under a PyTorch-native trainer such as NeMo AutoModel's attn: te, "
           "or PyTorch SDPA's cuDNN backend) at the hardware's published share eta_cudnn"),
    Option("loss", None, (None,) + LOSS_KINDS,
           "embeddings=1: the cross-entropy's buffers on the stage holding the LM head (memory) and its HBM passes "
           "(symcomm.training.compute.LOSS_PASS_BYTES): vocab_parallel (Megatron-Core's vocab-parallel cross-entropy: "
           "the logits and one fp32 copy); te_fused (Megatron-Core's --cross-entropy-loss-fusion with Transformer "
           "Engine's kernel, Megatron-Bridge's: the logits and an fp32 gradient); eager (PyTorch F.cross_entropy of an "
           "fp32 copy of the logits, eager autograd, torch's loss_parallel when t > 1: torchtitan without "
           "torch.compile of the loss); compiled (the same loss under torch.compile, the upcast fused); eager_bf16 "
           "(the same eager loss on the bf16 logits, no fp32 copy: NeMo AutoModel's MaskedCrossEntropy with "
           "fp32_upcast false, which gathers a vocabulary-sharded output whole); replicated_bf16 (the same on logits "
           "the LM head returns whole on every tensor-parallel rank, kept by the caller: KempnerForge's); "
           "xentropy_cuda, xentropy_triton (flash-attn's fused CrossEntropyLoss, its CUDA extension in 1.x, its "
           "Triton kernels from 2.4: LLM Foundry MPT's default fused_crossentropy; the logits and a bf16 gradient); "
           "framework: fsdp2 compiled with compile=1 (torchtitan compiles the loss with the model: "
           "symcomm.training.memory.TORCHTITAN_LOSS_COMPILED), else eager; the others vocab_parallel "
           "(symcomm.training.memory.loss_bytes)"),
    Option("pp_outputs", PIPELINE_OUTPUTS[0], PIPELINE_OUTPUTS,
           "p > 1, framework=fsdp2: what torch.distributed.pipelining's last stage does with each micro-batch's "
           "bf16 output (the logits): freed at the micro-batch's backward (torchtitan since 2025-10-22: "
           "schedule.step(return_outputs=False), PyTorch 2.10); kept to the step's end, m of them (every earlier "
           "torchtitan and a trainer that calls step() without it); memory only (symcomm.training.memory."
           "loss_bytes_per_logit)"),
    Option("wgrad_fusion", None, (None, False, True),
           "1 = the weight-gradient GEMMs accumulate into the gradient buffer in place (Megatron-LM's gradient "
           "accumulation fusion, symcomm.training.compute.WGRAD_ACCUMULATION_FRAMEWORKS: main_grad read and written "
           "every micro-batch); 0 = written (Megatron-LM before commit 83b1e42f, 2022-02-13, or "
           "--no-gradient-accumulation-fusion); framework: 1 for megatron, 0 otherwise"),
    flag("fused_grouped_mlp", "moe=1, gated=1, precision=mxfp8, framework megatron or megatron_fsdp: 1 = Transformer "
                              "Engine's fused grouped MLP (Megatron-Core's op fuser; Megatron-Bridge's "
                              "cutedsl_fused_grouped_mlp): the experts' FC1, SwiGLU and MXFP8 quantization one kernel, "
                              "FC2's input gradient, the SwiGLU's backward and the quantization of FC1's output "
                              "gradient another, so no memory-bound pass runs over the experts' F_e-wide rows and "
                              "neither of those casts is a pass of its own (symcomm.training.compute."
                              "fused_grouped_mlp_savings; compute capability 10.x, every GEMM dimension a multiple of "
                              "256: " + FUSED_GROUPED_MLP_SOURCE + ")"),
    Option("fused_projections", None, (None, False, True),
           "1 = the attention's Q, K, V projections run as one GEMM and a gated MLP's gate and up projections as one "
           "(Megatron-Core's linear_qkv and linear_fc1); 0 = one GEMM each, as separate nn.Linear modules run them "
           "(torchtitan's Llama: wq, wk, wv and w1, w3), the same FLOPs on narrower GEMMs (the width term); "
           "framework: 0 for fsdp2, 1 otherwise (symcomm.training.compute.SEPARATE_PROJECTIONS)"),
    Option("compile", None, (None, False, True),
           "1 = the memory-bound kernels (norms, rotary, SwiGLU) run fused, as torch.compile's Inductor or the "
           "framework's fused kernels run them (what kappa counts); 0 = eager PyTorch, torchtitan's Llama block op by "
           "op, each op one more HBM pass (fsdp2 only, dense blocks); framework: 0 for fsdp2's dense blocks "
           "(torchtitan's training.compile is false by default), 1 otherwise"),
    Option("adam_dtype", "fp32", ADAM_DTYPES,
           "Adam's state per parameter: fp32 (fp32 master weight, first and second moments: 12 bytes; Megatron-Core, "
           "DeepSpeed, PyTorch's defaults); bf16_moments (fp32 master, bf16 moments: 8 bytes; Megatron-Core "
           "--use-precision-aware-optimizer --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16); bf16 (master and moments in "
           "bf16: 6 bytes; Apex DistributedFusedAdam with dtype bf16, NeMo's optim.dtype); fp32_remainders (fp32 "
           "moments, the master as the bf16 weight and an int16 remainder: 10 bytes; Apex DistributedFusedAdam's "
           "store_param_remainders, NeMo's fp32 optimizer over a bf16 model): its memory and the "
           "optimizer step's HBM bytes (symcomm.training.settings.ADAM_STATE_BYTES)"),
    Option("q_width", "h", ("h", "heads"),
           "the width of Q and of the attention output projection's input: h (heads h/a wide), or heads: a·head_dim "
           "= h_q where a model's config sets head_dim apart from h/a (Qwen3, gpt-oss; FLOPs of the Q and output "
           "projections and the attention core, and Q and the attention output kept; communication keeps h)"),
)

#: every setting of a run, by name
OPTIONS: dict[str, Option] = {option.name: option for option in HYBRID_OPTIONS + STEP_OPTIONS}
#: older names of settings still read (never written: format prints the name of OPTIONS)
KEY_ALIASES = {"dp_overlap": "overlap_grad_reduce"}


def canonical_key(key: str) -> str:
    """The setting's name for ``key``: itself, or the name an older spelling stands for."""
    return KEY_ALIASES.get(key, key)

#: the settings a planner kernel is keyed by (symcomm/planner/kerneldata): the ones the planner varies or
#: takes from the model; the others stay at their defaults in every planner kernel
KERNEL_SETTINGS = ("cp", "embeddings", "framework", "gated", "gqa", "moe", "pipeline_split", "recompute",
                   "reshard_after_forward", "schedule", "sp", "tied", "zero")
#: the settings the planner takes as given (not searched) that key a kernel only away from their defaults, so the
#: shipped kernels (all at the defaults) keep their keys: the MoE dispatcher (plan --dispatcher), the expert
#: tensor-parallel size the flex dispatchers need (symcomm.planner.kernels.option_key) and the router's groups; and
#: the attention the model's shape fixes (MLA for DeepSeek, query heads wider than h/a for Qwen3 and gpt-oss: eval
#: fills them from the preset, so the planner keys its kernels by them as well); and the precision recipe and the
#: attention core's kernel (plan --precision, --attention-kernel); and how a node's GPUs are wired (plan --nvlink);
#: and the gradient reductions' element type where the planner prices a framework's layout-dependent one
#: (symcomm.training.frameworks.Framework.cp_grad_dtype)
KERNEL_SETTINGS_AWAY_FROM_DEFAULT = ("attention", "dispatcher", "expert_tp", "q_width", "router_groups",
                                     "router_group_topk", "precision", "attention_kernel", "nvlink", "dropout",
                                     "grad_dtype")


@dataclass(frozen=True)
class RunSetting:
    """Every setting of a training run, typed (the defaults are the options' defaults)."""

    zero: int = 1
    framework: str = "megatron"
    grad_reduce: str | None = None
    grad_dtype: str | None = None
    reshard_after_forward: bool | None = None
    sp: bool = False
    sp_regather: bool | None = None
    sp_input: str = "block"
    recompute: str = "none"
    schedule: str = "1f1b"
    ga_schedules: bool = False
    hsdp: bool = False
    pipeline_split: str = "even"
    scatter_gather: bool = False
    cp: str = "ring"
    gqa: bool = False
    nvlink: str = "switch"
    attention: str = "mha"
    moe: bool = False
    mamba: bool = False
    moe_latent: bool = False
    expert_tp: str = "tp"
    dispatcher: str = "alltoall"
    router_groups: int = 1
    router_group_topk: int = 1
    embeddings: bool = False
    tied: bool = False
    tp_embedding: str = "vocab_parallel"
    fp8_param_gather: bool = False
    fp8_tp_gather: bool | None = None
    gated: bool = False
    overlap_grad_reduce: bool | None = None
    overlap_param_gather: bool | None = None
    a2a_overlap: bool | None = None
    p2p_overlap: bool | None = None
    tp_overlap: bool = False
    tp_backward_overlap: bool | None = None
    flash: bool = True
    dropout: bool = True
    attention_kernel: str = "fused"
    q_width: str = "h"
    loss: str | None = None
    pp_outputs: str = "freed"
    precision: str = "bf16"
    compile: bool | None = None
    wgrad_fusion: bool | None = None
    fused_projections: bool | None = None
    fused_grouped_mlp: bool = False
    adam_dtype: str = "fp32"
    bf16_layers: bool = False
    recompute_mla_up: bool = False
    cpu_offload: bool = False
    mtp: str = "0"
    recompute_moe_act: bool = False
    recompute_layernorm: bool = False
    recompute_mlp: bool = False
    recompute_moe: bool = False

    def __post_init__(self):
        for option in fields(self):
            OPTIONS[option.name].resolve(getattr(self, option.name))   # refuses a value not allowed
        refused = (op_refusal(self) or compile_refusal(self) or fp8_tp_gather_refusal(self) or router_refusal(self)
                   or sp_input_refusal(self) or tp_embedding_refusal(self) or block_refusal(self) or mamba_refusal(self)
                   or bf16_layers_refusal(self)
                   or mla_up_refusal(self) or mtp_refusal(self) or recompute_modules_refusal(self)
                   or te_precision_refusal(self) or F.framework_refusal(self) or cpu_offload_refusal(self)
                   or fused_grouped_mlp_refusal(self) or pp_outputs_refusal(self))
        if refused:
            raise InputError(refused)

    @property
    def eager(self) -> bool:
        """Do the memory-bound ops run eagerly, op by op (:func:`runs_eager`)?"""
        return runs_eager(self)

    @property
    def forward_reruns(self) -> bool:
        """Does the forward re-run its collectives before the backward (full recompute)?"""
        return reruns_forward(self.recompute)

    @property
    def modules(self) -> frozenset:
        """The recompute modules beside the attention core and MLA's up projections this setting runs again
        (:data:`RECOMPUTE_MODULES`)."""
        return frozenset(name for name in RECOMPUTE_MODULES if getattr(self, f"recompute_{name}"))

    @property
    def gathers_rerun(self) -> bool:
        """Do the forward's sequence all-gathers alone run again before the backward (op recompute)?"""
        return regathers_forward(self.recompute)

    @property
    def mtp_on(self) -> bool:
        """Does the last stage run multi-token prediction (mtp 1 or shared)?"""
        return self.mtp != "0"

    @property
    def framework_row(self) -> F.Framework:
        return F.FRAMEWORKS[self.framework]

    def hybrid_options(self) -> dict[str, object]:
        """The hybrid strategy's options, typed."""
        return {option.name: getattr(self, option.name) for option in HYBRID_OPTIONS}

    def texts(self) -> dict[str, str]:
        """Every setting in its text form (name → text), in :data:`OPTIONS` order."""
        return {name: Option.text(getattr(self, name)) for name in OPTIONS}

    def key(self, names: Iterable[str] = ()) -> tuple:
        """The kernel key of this setting: its sorted (name, typed value) pairs of ``names`` (default
        :data:`KERNEL_SETTINGS`): flags bool, the stage int, choices str, None for "as the framework
        does"; by default with those of :data:`KERNEL_SETTINGS_AWAY_FROM_DEFAULT` that differ from their default
        (absent: the default).  The one form both the shipped kernels' data (symcomm.tools.codegen) and the planner's
        lookup use, so the two cannot drift; :meth:`from_key` reads it back."""
        if not names:
            names = KERNEL_SETTINGS + tuple(name for name in KERNEL_SETTINGS_AWAY_FROM_DEFAULT
                                            if getattr(self, name) != OPTIONS[name].default)
        return tuple(sorted((name, getattr(self, name)) for name in names))

    @classmethod
    def from_key(cls, pairs: Iterable) -> "RunSetting":
        """The setting of a kernel key (:meth:`key`; pairs as read from JSON too), every value
        checked by its option; InputError naming the setting otherwise."""
        return parse({name: value for name, value in pairs})


def parse(texts: Mapping[str, object] | Iterable[str], *, only: Iterable[str] | None = None) -> RunSetting:
    """The run setting of KEY=VALUE texts (a mapping, or "KEY=VALUE" words), the rest at their
    defaults; ``only`` limits the keys accepted.  InputError naming the key and what is allowed."""
    if not isinstance(texts, Mapping):
        pairs = {}
        for word in texts:
            key, sep, value = str(word).partition("=")
            if not sep:
                raise InputError(f"{word!r} is not KEY=VALUE; keys: {', '.join(OPTIONS)}")
            pairs[key] = value
        texts = pairs
    known = tuple(OPTIONS) if only is None else tuple(only)
    typed = {}
    for key, value in texts.items():
        given, key = key, canonical_key(key)
        if key not in known:
            raise InputError(f"unknown setting {given!r}; settings: {', '.join(known)}")
        if key in typed:
            raise InputError(f"{given} and {key} are one setting ({given} is its older name); give it once")
        typed[key] = OPTIONS[key].resolve(value, given)
    return RunSetting(**typed)


def format(setting: RunSetting, keys: Iterable[str] | None = None) -> tuple[str, ...]:
    """The canonical KEY=VALUE words of ``setting`` (of ``keys`` only, when given), as every
    command echoes them."""
    texts = setting.texts()
    return tuple(f"{key}={texts[key]}" for key in (texts if keys is None else keys))


#: options of the step model beyond the hybrid strategy's own, by name
STEP_OPTIONS_BY_NAME = {option.name: option for option in STEP_OPTIONS}
#: the names the step model's options are given by: theirs and their older ones (KEY_ALIASES)
STEP_KEYS = frozenset(STEP_OPTIONS_BY_NAME) | {old for old, name in KEY_ALIASES.items() if name in STEP_OPTIONS_BY_NAME}


def step_options(texts: dict) -> tuple[dict, dict]:
    """Split KEY=VALUE option texts into (the hybrid strategy's, the step model's :data:`STEP_OPTIONS`),
    the step model's read by their :class:`Option` into typed values (the
    hybrid's are read by the strategy, ``recompute`` among them); InputError naming the option."""
    hybrid, own = {}, {}
    for given, text in texts.items():
        key = canonical_key(given)                  # an older name (dp_overlap) read as the setting's
        if key in STEP_OPTIONS_BY_NAME:
            own[key] = STEP_OPTIONS_BY_NAME[key].resolve(text, given)    # typed once, as the setting holds it
        else:
            hybrid[key] = text
    return hybrid, own
