"""What each training framework runs on the data-parallel axis, as data: one frozen row per framework.

A row says which ZeRO stages the framework runs (and what to say when asked for another), when
it reduces the gradients over the m micro-batches, whether ZeRO-3 re-gathers the parameters in
the backward, the gradients' element type, whether sequence parallelism re-gathers its inputs in
the backward, whether the gradient reductions overlap the backward, whether the parameter
all-gathers hide behind compute, under which pipeline schedules the sends hide, whether the expert
all-to-alls hide behind another micro-batch, whether ZeRO-3 runs one collective per layer or for the
whole model, the data-parallel schemes the planner searches, and the framework files each of these
follows (each default beside its file: DP_OVERLAP_SOURCE, PARAM_GATHER_SOURCE, P2P_OVERLAP_SOURCE,
A2A_OVERLAP_SOURCE, FSDP2_RUNTIME, FSDP_UNITS, MEGATRON_FSDP_RUNTIME, SDPA_SOURCE).  The strategy
(:func:`symcomm.training.axes.data_schedule`, :func:`symcomm.training.axes.sp_regather_of`), the step
model (:func:`symcomm.training.overlap.dp_overlap_of`) and the planner (:data:`symcomm.planner.SCHEMES`)
read this table and nothing else about a framework.

Adding a framework: one row in :data:`FRAMEWORKS` (plus its oracle in the step simulator,
``tests/training/test_step.py``, when the row changes what is sent).  SymPy-free: the planner imports it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..base import notes
from ..base.errors import InputError
from ..presets.hardware_values import kernel_share

#: what the frameworks execute, by file (read at github.com/NVIDIA/Megatron-LM, microsoft/DeepSpeed, pytorch/pytorch)
DEEPSPEED_ENGINE = ("DeepSpeed deepspeed/runtime/engine.py, DeepSpeedEngine.allreduce_gradients (ZeRO stage ≥ 2 "
                    "reduces at every micro-batch, stages 0/1 only at the gradient-accumulation boundary) and "
                    "deepspeed/runtime/zero/stage_1_and_2.py (gradients partitioned in backward hooks)")
#: DeepSpeed ZeRO-1/2's gradient reduction: an all-reduce of each bucket, every rank keeping its own partition's slices
DEEPSPEED_BUCKET_ALLREDUCE = ("DeepSpeed deepspeed/runtime/zero/stage_1_and_2.py at edaa7221 (v0.19.6; from v0.12.4, "
                              "commit 2afa1c7f2): average_tensor → allreduce_and_scatter → allreduce_bucket runs "
                              "dist.all_reduce on the whole bucket and each rank copies back the slices of its "
                              "partition, under reduce_scatter=True and use_multi_rank_bucket_allreduce=True, the "
                              "defaults of deepspeed/runtime/zero/config.py; no ZeRO-1/2 path runs a reduce-scatter "
                              "(before v0.12.4: one reduce to each slice's owner)")
DEEPSPEED_STAGE3 = ("DeepSpeed deepspeed/runtime/zero/stage3.py and partitioned_param_coordinator.py (parameters "
                    "fetched before each submodule's forward and backward, the next ones prefetched, released after: "
                    "counted at a transformer layer's grain, as FSDP's units, so the step's first gather and last "
                    "reduction are exposed and a gathered layer is held; stage3_max_reuse_distance keeps those re-used "
                    "soon — not modelled)")
FSDP_RUNTIME = ("PyTorch torch/distributed/fsdp/_runtime_utils.py (_pre_forward_unshard, _pre_backward_hook, "
                "_should_free_in_backward: with no_sync a non-resharding unit stays gathered) and "
                "fully_sharded_data_parallel.py (no_sync)")
#: PyTorch FSDP (FSDP1) as it is run on transformers: one FSDP unit per transformer block (an auto-wrap policy on the
#: block class), so one all-gather and one reduce-scatter per layer, as FSDP2's fully_shard per block
FSDP_UNITS = ("mosaicml/llm-foundry llmfoundry/models/mpt/modeling_mpt.py at b2a43a14 (fsdp_wrap_fn: each MPTBlock its "
              "own FSDP unit, which Composer's FSDP wrapping honours); PyTorch torch/distributed/fsdp/wrap.py "
              "(transformer_auto_wrap_policy)")
MEGATRON_DDP = ("Megatron-LM megatron/core/distributed/distributed_data_parallel.py and param_and_grad_buffer.py "
                "(finish_grad_sync: one reduce-scatter or all-reduce per step), "
                "megatron/core/pipeline_parallel/schedules.py (no_sync for all but the last micro-batch)")
MEGATRON_SP_REGATHER = ("Megatron-LM megatron/core/tensor_parallel/layers.py, "
                        "LinearWithGradAccumulationAndAsyncCommunication.backward: with sequence_parallel the "
                        "sequence-sharded input is all-gathered again for the weight gradient (Transformer Engine's "
                        "Linear/LayerNormLinear do the same); torch's DTensor tensor parallel "
                        "(torch/distributed/tensor/parallel/style.py) keeps the gathered input saved by autograd")
MEGATRON_FP32_GRADS = ("Megatron-LM megatron/training/arguments.py (bf16: accumulate_allreduce_grads_in_fp32 is set "
                       "unless --grad-reduce-in-bf16) and megatron/core/distributed/param_and_grad_buffer.py (the "
                       "gradient buffer, reduced as it is, in fp32); DeepSpeed reduces in communication_data_type "
                       "(default: the run's half type), FSDP in MixedPrecision.reduce_dtype (default: param_dtype; "
                       "torchtitan sets float32 for FSDP2: TORCHTITAN_FSDP_DEFAULTS)")
#: Megatron-LM overlaps the gradient reduce only with --overlap-grad-reduce (default off,
#: megatron/training/arguments.py), in buckets of max(40M, 1M × the data-parallel size) parameters
#: (distributed_data_parallel.py); DeepSpeed's ZeRO config overlap_comm (deepspeed/runtime/zero/config.py)
#: is on for stage 3 and off below; FSDP always issues its reduce-scatters asynchronously during the
#: backward (torch/distributed/fsdp/_runtime_utils.py, _post_backward_hook), FSDP2 and Megatron-FSDP too
DP_OVERLAP_SOURCE = ("Megatron-LM megatron/training/arguments.py (--overlap-grad-reduce, default off), "
                     "megatron/core/distributed/distributed_data_parallel_config.py (overlap_grad_reduce: False) and "
                     "distributed_data_parallel.py (bucket_size: max(40000000, 1000000 × data-parallel size) "
                     "parameters when overlapped, one bucket otherwise); DeepSpeed "
                     "deepspeed/runtime/zero/config.py (overlap_comm: on for stage 3); PyTorch "
                     "torch/distributed/fsdp/_runtime_utils.py (reduce-scatter issued in the post-backward hook)")

#: the parameter all-gathers: Megatron's distributed optimizer gathers after the step, exposed unless
#: --overlap-param-gather (default off; it also needs --overlap-grad-reduce); ZeRO-3 / FSDP prefetch the next
#: unit's gather behind the current one's compute (DeepSpeed's prefetch_bucket_size, FSDP's backward_prefetch
#: and forward hooks, FSDP2's implicit prefetch, Megatron-FSDP's forward prefetch)
PARAM_GATHER_SOURCE = ("Megatron-LM megatron/training/arguments.py (--overlap-param-gather, default off; refused "
                       "without --overlap-grad-reduce) and megatron/core/distributed/distributed_data_parallel_config.py "
                       "(overlap_param_gather: False); DeepSpeed deepspeed/runtime/zero/partitioned_param_coordinator.py "
                       "(prefetch); PyTorch torch/distributed/fsdp/_fully_shard/_fsdp_state.py and _fsdp_param_group.py "
                       "(the next group's all-gather issued before the current one's compute); Megatron-LM "
                       "megatron/core/distributed/fsdp/src/megatron_fsdp/megatron_fsdp.py (_pre_forward_param_unshard: "
                       "forward prefetch)")
#: Megatron-LM: overlap_p2p_comm is on unless --no-overlap-p2p-communication, and arguments.py turns it off
#: for every schedule but the interleaved one; DeepSpeed's pipeline engine and torch.distributed.pipelining
#: send and receive between the stages' compute
P2P_OVERLAP_SOURCE = ("Megatron-LM megatron/training/arguments.py (--no-overlap-p2p-communication: overlap_p2p_comm "
                      "defaults on; set off unless the interleaved schedule runs) and "
                      "megatron/core/pipeline_parallel/schedules.py (forward_backward_pipelining_with_interleaving)")
#: Megatron's and Transformer Engine's column-parallel linears (QKV, FC1, the LM head) start two tensor-parallel
#: collectives of their backward asynchronously, without tp_overlap: under sequence parallel the re-all-gather of
#: the input (for the weight gradient) runs while the input-gradient GEMM computes, and the input gradient's
#: reduce-scatter (its all-reduce without sequence parallel) while the weight-gradient GEMM computes; the row-parallel
#: linears' gradient all-gather and every forward collective stay synchronous.  Added to Megatron-LM as
#: --async-tensor-model-parallel-allreduce in commit cf7efd4f (2021-08-30), on by default from 3f652469 (2021-09-02),
#: the sequence-parallel pair with sequence parallelism (02bb1f5c, 2022-03-02)
TP_BACKWARD_OVERLAP_SOURCE = ("Megatron-LM megatron/core/tensor_parallel/layers.py at d98e8a64 "
                              "(LinearWithGradAccumulationAndAsyncCommunication.backward: all_gather_into_tensor and "
                              "all_reduce / reduce_scatter_tensor with async_op=True, waited on after the GEMM each "
                              "precedes); Transformer Engine transformer_engine/pytorch/module/linear.py and "
                              "layernorm_linear.py at d0067d0d (_Linear / _LayerNormLinear backward: "
                              "gather_along_first_dim and reduce_scatter_along_first_dim / allreduce with "
                              "async_op=True)")
#: which kernel a framework's attention core runs when the run names none (attention_kernel=fused, the default):
#: Megatron's, Transformer Engine's DotProductAttention (cuDNN on Hopper and later, FlashAttention below: the
#: hardware's fused share, eta_attn); PyTorch FSDP's and torchtitan's, PyTorch's scaled_dot_product_attention, which
#: runs cuDNN's fused attention first on compute capability 9.x and 10.x as they ship today (torchtitan asks for it
#: first on every GPU, and PyTorch's own order puts it first there once its cuDNN is newer than 9.15.0, as the one its
#: PyPI wheels bundle from 2.11 on), and its flash backend (FlashAttention-2) first below
SDPA_SOURCE = ("pytorch/pytorch aten/src/ATen/native/transformers/cuda/sdp_utils.cpp at 001f694a "
               "(check_prefer_cudnn_attention: cuDNN attention first when the runtime cuDNN is above 9.15.0 on compute "
               "capability 9.x and 10.x; priority_order: flash attention first otherwise); PyPI torch 2.11.0's wheel "
               "requires nvidia-cudnn-cu13==9.19.0.56 (2.10.0's nvidia-cudnn-cu12==9.10.2.21); pytorch/torchtitan "
               "torchtitan/models/attention.py from 6a3a9da9 (2025-10-09, #1776) on: sdpa_kernel([CUDNN_ATTENTION, "
               "FLASH_ATTENTION, ...], set_priority=True), cuDNN first on compute capability 10.0 only before it; "
               "NVIDIA/TransformerEngine transformer_engine/pytorch/attention/dot_product_attention/utils.py at "
               "d0067d0d (get_attention_backend: FusedAttention preferred on Hopper and later)")
#: the compute capabilities (major) on which PyTorch SDPA as shipped today runs cuDNN's attention first (SDPA_SOURCE)
SDPA_CUDNN_FIRST = (9, 10)


def framework_attention(framework_name: str, hardware, kernel: str, typed) -> tuple[dict, str]:
    """({"eta_attn": share}, the note saying it) where the run's attention core is the framework's default
    (``kernel`` "fused") and that default is PyTorch SDPA's (:data:`SDPA_SOURCE`): on compute capability 9.x and
    10.x cuDNN's fused attention (the hardware's published cuDNN share, or its fused core's, which is cuDNN's there),
    said, as an older PyTorch or torchtitan runs FlashAttention-2 first; below, FlashAttention-2's published share
    where the hardware's fused share is another kernel's.  ({}, "") otherwise: another framework, a named kernel,
    eta_attn typed (``typed``: the names the user gave), a hardware file (its constants are its own cluster's,
    eta_attn among them), or no published share to put in."""
    shares = dict(hardware.attention_shares)
    if kernel != "fused" or not FRAMEWORKS[framework_name].sdpa or "eta_attn" in typed or hardware.from_file:
        return {}, ""
    capability = tuple(hardware.compute_capability)
    if capability[:1] and capability[0] in SDPA_CUDNN_FIRST:
        cudnn = kernel_share(shares, capability, "cudnn")
        return ({} if cudnn is None else {"eta_attn": cudnn}), (
            f"framework={framework_name} runs PyTorch's scaled_dot_product_attention with cuDNN's fused attention "
            f"first on --hardware {hardware.name} (compute capability {'.'.join(map(str, capability))}), as PyTorch's "
            "own order does from 2.11 on (its wheels' cuDNN above 9.15.0)"
            + (" and torchtitan asks from October 2025 on" if framework_name == "fsdp2" else "") + ": the "
            "attention core at cuDNN's share; an older stack runs FlashAttention-2 first, which attention_kernel=fa2 "
            "times")
    if "fa2" not in shares or shares["fa2"] == shares.get("fused"):
        return {}, ""
    return {"eta_attn": shares["fa2"]}, (
        f"framework={framework_name} runs PyTorch's scaled_dot_product_attention, whose flash backend "
        f"(FlashAttention-2) runs first on --hardware {hardware.name}: the attention core at FlashAttention-2's "
        f"published share {shares['fa2']:g} as eta_attn, not the fused core's (attention_kernel=fused is the "
        "framework's own kernel; attention_kernel=cudnn times cuDNN's at its published share, eta_attn= another)")


#: Transformer Engine's attention backends on compute capability 10.x (B200, GB200) above head dimension 128: its
#: cuDNN fused core only from 71c76b6b on, and FlashAttention never where the query/key and value heads differ
TE_SM100_HEAD_DIM = ("NVIDIA/TransformerEngine transformer_engine/common/fused_attn/fused_attn.cpp "
                     "(nvte_get_fused_attn_backend: !(sm_arch_ >= 100 && (head_dim_qk > 128 || head_dim_v > 128)) "
                     "at v2.2 to v2.4, lifted by 71c76b6b, #1797, 2025-06-13, first released in v2.5); "
                     "transformer_engine/pytorch/dot_product_attention/utils.py at v2.2 (get_attention_backend: "
                     "FlashAttention off when head_dim_qk != head_dim_v)")


def blackwell_head_dim_note(framework_name: str, hardware, model, flash: bool, kernel: str) -> str:
    """The note a run gets whose fused attention core (``flash`` on, ``kernel`` "fused") runs in Transformer Engine
    (:attr:`Framework.te_attention`) on compute capability 10.x at a head dimension above 128 (``model``'s: MLA's
    query/key and value heads, else its one head width): that fused core exists there only in Transformer Engine
    2.5 and later (:data:`TE_SM100_HEAD_DIM`), an older one runs its unfused core, which flash=0 times (the DGX Cloud
    25.05.04 GB200 DeepSeek-V3 rows ran so).  "" otherwise, and without a model preset or config."""
    if (model is None or not flash or kernel != "fused" or not FRAMEWORKS[framework_name].te_attention
            or tuple(hardware.compute_capability[:1]) < (10,)):
        return ""
    qk, v = model.head_widths
    if max(qk, v) <= 128:
        return ""
    heads = f"{qk} (query, key) and {v} (value)" if qk != v else f"{qk}"
    return (f"flash=1 times Transformer Engine's fused attention core at head dimension {heads} on --hardware "
            f"{hardware.name} (compute capability {'.'.join(map(str, hardware.compute_capability))}), which it runs "
            "only from v2.5 on; an older Transformer Engine runs its unfused core there"
            + (" (FlashAttention takes no MLA)" if model.mla else "") + ", which eval hybrid's flash=0 times "
            f"({TE_SM100_HEAD_DIM})")


#: Megatron-Core overlaps the expert all-to-all of one micro-batch with another's compute only when asked
A2A_OVERLAP_SOURCE = ("Megatron-LM megatron/core/model_parallel_config.py (overlap_moe_expert_parallel_comm: False; "
                      "--overlap-moe-expert-parallel-comm, the 1F1B schedule of two micro-batches' forward and "
                      "backward interleaved, megatron/core/pipeline_parallel/combined_1f1b.py)")
#: PyTorch FSDP2 (fully_shard): one all-gather and one reduce-scatter per fully_shard'ed module; torchtitan
#: applies it to every transformer block (and the root: embeddings, final norm, output)
FSDP2_RUNTIME = ("PyTorch torch/distributed/fsdp/_fully_shard/_fully_shard.py (reshard_after_forward=None: True "
                 "for every module but the root), _fsdp_param_group.py (one all-gather and one reduce-scatter per "
                 "group, in the post-backward of every backward unless set_requires_gradient_sync(False)), "
                 "_fsdp_api.py (MixedPrecisionPolicy.reduce_dtype=None: the parameters' type); torchtitan "
                 "torchtitan/models/llama3/infra/parallelize.py (apply_fsdp: fully_shard on tok_embeddings, each "
                 "transformer block and [norm, output]; reshard_after_forward = not pp_enabled by default and "
                 "mixed_precision_reduce float32, which framework=fsdp2 follows: TORCHTITAN_FSDP_DEFAULTS)")
#: what torchtitan asks of FSDP2 by default, which framework=fsdp2 follows
TORCHTITAN_FSDP_DEFAULTS = ("pytorch/torchtitan at b5bcd76c: torchtitan/config/configs.py (TrainingConfig."
                            "mixed_precision_reduce: Literal['float32'], the one value: gradients reduced in fp32); "
                            "torchtitan/distributed/fsdp.py (get_fsdp_reshard_after_forward_policy: the default policy "
                            "is not pp_enabled, so no unit is resharded after its forward under pipeline parallelism)")
MEGATRON_FSDP_RUNTIME = ("Megatron-LM megatron/training/arguments.py (--use-megatron-fsdp, "
                         "--data-parallel-sharding-strategy default optim_grads_params: ZeRO-3) and "
                         "megatron/core/distributed/fsdp/src/megatron_fsdp/megatron_fsdp.py (per module: parameters "
                         "unsharded in a forward pre-hook with prefetch, gradients reduce-scattered after every "
                         "backward when the gradients are sharded, grad_reduce_every_bprop; "
                         "--megatron-fsdp-main-grads-dtype and --megatron-fsdp-grad-comm-dtype default auto: the "
                         "model's gradient type)")

#: PyTorch's pipelining ends every schedule with the stage's gradient reduction: a trainer that accumulates gradients
#: over n_ga steps runs n_ga schedules a step (ga_schedules=1), each with its fill and drain, its reduce-scatters and,
#: since the stage reshards after it, its own parameter all-gathers; Megatron's and DeepSpeed's pipeline engines run
#: the step's m micro-batches as one schedule
PIPELINING_GA = ("pytorch/pytorch torch/distributed/pipelining/schedules.py as torch 2.13.0 ships it (Schedule1F1B "
                 "and ScheduleGPipe end _step_microbatches with self._stage.perform_reduce_grad; the multi-stage "
                 "schedules run a REDUCE_GRAD action after each stage's last backward) and stage.py "
                 "(perform_reduce_grad: set_requires_gradient_sync(True), set_reshard_after_backward(True), "
                 "post_backward of every FSDP parameter group; backward_maybe_with_nosync: the schedule's other "
                 "backwards without sync or resharding); pytorch/torchtitan torchtitan/trainer.py at b5bcd76c "
                 "(train_step: one forward_backward_step, one pp_schedule.step of num_pp_microbatches, per "
                 "gradient-accumulation step); NVIDIA-NeMo/Automodel nemo_automodel/recipes/llm/benchmark.py at "
                 "89e3a9fd (ga_steps calls of _forward_backward_step, each a schedule.step: recipes/llm/train_ft.py)")

#: a unit kept gathered after its forward (reshard_after_forward=False) while gradients are not synced: FSDP1 keeps it
#: gathered through no_sync's micro-batches (_should_free_in_backward); FSDP2 reshards after every backward whatever
#: the gradient sync, unless told not to (set_reshard_after_backward), which torch.distributed.pipelining does for
#: every backward of a schedule but its last
FSDP2_RESHARD_AFTER_BACKWARD = ("torch 2.13.0 torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py "
                                "(reshard_after_backward: True unless set; post_backward reshards then) and "
                                "_fully_shard.py (set_reshard_after_backward, apart from set_requires_gradient_sync); "
                                "torch/distributed/pipelining/stage.py (backward_maybe_with_nosync: "
                                "set_reshard_after_backward(False) but in a schedule's last backward)")
#: the frameworks whose root unit (the embedding and LM head beside the per-block units) stays gathered from its forward
#: through the backward, never gathered again there: PyTorch's FSDP1 frees no root parameters after the forward
#: (torch/distributed/fsdp/_runtime_utils.py, _post_forward_reshard: "Do not free the root's parameters in the
#: post-forward for FULL_SHARD"), FSDP2 sets the root's post_forward_mesh_info None (_fsdp_state.py, _lazy_init), and
#: torchtitan, whose root owns no parameters from 83e69410 (2025-07), shards [norm, output] with
#: reshard_after_forward False by default (torchtitan/distributed/fsdp.py at b5bcd76c, apply_fsdp_to_decoder)
ROOT_KEPT_GATHERED = frozenset(("fsdp", "fsdp2"))
ROOT_KEPT_SOURCE = ("PyTorch torch/distributed/fsdp/_runtime_utils.py (_post_forward_reshard), "
                    "_fully_shard/_fsdp_state.py (_lazy_init); torchtitan torchtitan/distributed/fsdp.py at b5bcd76c")

#: where a unit kept gathered stays so between micro-batches when the gradients are reduced once per step: "no_sync"
#: (FSDP1, FSDP_RUNTIME), "pipeline" (FSDP2: only under pipeline parallelism, FSDP2_RESHARD_AFTER_BACKWARD)
KEPT_GATHERED = ("no_sync", "pipeline")

#: PyTorch's activation checkpointing as its trainers wrap a block (checkpoint_wrapper, non-reentrant) stops the
#: recompute once every tensor the backward saved is made again: a layer's last collective, whose output only a residual
#: add reads, is not run again (the reentrant checkpoint of Megatron-LM and DeepSpeed reruns the whole forward)
RECOMPUTE_EARLY_STOP = ("torch 2.13.0 torch/utils/checkpoint.py (checkpoint's early_stop, True by default: the "
                        "recomputation ends once every tensor the backward needs is made again) and "
                        "torch/distributed/algorithms/_checkpoint/checkpoint_wrapper.py (CheckpointImpl.NO_REENTRANT "
                        "by default); torchtitan parallelize_llama.py at 9dec370a, KempnerForge "
                        "kempnerforge/distributed/parallel.py, NeMo AutoModel components/moe/parallelizer.py at "
                        "89e3a9fd: checkpoint_wrapper around each block")

#: hybrid sharding: ZeRO-3 over d/d_r of the data-parallel ranks, replicated d_r times; each unit's gradients
#: reduce-scattered over its shard group, then its shard all-reduced over the replicas
HSDP_SOURCE = ("torch 2.13.0 torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py (foreach_reduce: "
               "reduce_scatter_single over the shard group, then all_reduce of the shard over the replicate group when "
               "the mesh is 2-D) and _fully_shard.py (fully_shard(mesh) of a (replicate, shard) mesh: HSDP); "
               "pytorch/torchtitan parallel_dims (dp_replicate x dp_shard); allenai/OLMo-core DataParallelType.hsdp")
#: what the hybrid's hsdp option says
HSDP_MEANING = ("framework fsdp2, moe=0: 1 = hybrid sharding, d_r replicas of the model each sharded over d/d_r of the "
                "d data-parallel ranks (with c, d·c/d_r): gathers and reduce-scatters over the shard group, every "
                "reduced shard all-reduced over the replicas (frameworks.HSDP_SOURCE)")

#: what the hybrid's ga_schedules option says
PIPELINE_SPLIT_MEANING = ("how the L layers split over the p·v model chunks: even (L/(p·v) each; L divisible by p, by p·v "
                          "interleaved) or first_last (the first chunk L_first layers, the last L_last, the p·v − 2 "
                          "middle chunks (L − L_first − L_last)/(p·v − 2) each: with v = 1 Megatron-LM's "
                          "--decoder-first-pipeline-num-layers, --decoder-last-pipeline-num-layers; interleaved, the "
                          "first and last model chunks as a pipeline layout string places them, not those flags, which "
                          "size a whole stage's v chunks alike)")
GA_SCHEDULES_MEANING = ("p ≥ 2, framework fsdp2: 1 = each of the step's n_ga gradient-accumulation steps runs its own "
                        "pipeline schedule of m/n_ga micro-batches, with its fill and drain, and ends in the stage's "
                        "gradient reduce-scatter, after which the stage reshards (torch.distributed.pipelining under "
                        "torchtitan and NeMo AutoModel: frameworks.PIPELINING_GA); 0 = the step's m micro-batches are "
                        "one schedule (Megatron-LM, DeepSpeed)")

#: DeepSpeed's pipeline engine (Megatron-DeepSpeed, GPT-NeoX): ZeRO stage below 2 only, and one schedule, its 1F1B
#: TrainSchedule, no interleaved (virtual) stages; its sequence parallelism is DeepSpeed-Ulysses, an all-to-all over
#: the heads, not a ring
DEEPSPEED_PIPE_LIMITS = ("deepspeedai/DeepSpeed deepspeed/runtime/pipe/engine.py at 03f6f75c (PipelineEngine.__init__: "
                         "'ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism'; train_batch runs "
                         "schedule.TrainSchedule); deepspeed/runtime/pipe/schedule.py (TrainSchedule, "
                         "InferenceSchedule: no interleaved schedule); docs/_tutorials/ds-sequence.md "
                         "(DeepSpeed-Ulysses: sequence parallelism by all-to-all)")
#: DeepSpeed reduces the gradients in seq_parallel_communication_data_type, fp32 unless the config says otherwise,
#: wherever DeepSpeed-Ulysses runs (sequence_parallel_size > 1), in place of the run's own half type
DEEPSPEED_ULYSSES_GRADS = ("deepspeedai/DeepSpeed deepspeed/runtime/engine.py at edaa7221 (DeepSpeedEngine.__init__: "
                           "with sequence_parallel_size > 1, communication_data_type = the config's "
                           "seq_parallel_communication_data_type) and deepspeed/runtime/constants.py "
                           "(SEQ_PARALLEL_COMMUNICATION_DATA_TYPE_DEFAULT = 'fp32')")
#: PyTorch's context parallel is ring attention (its rotation by all-gather or all-to-all of K and V shards), no
#: Ulysses head split; torchtitan composes it with FSDP2 over a device mesh
TORCH_CONTEXT_PARALLEL = ("ring attention only: PyTorch's context parallel, torch/distributed/tensor/experimental/"
                          "_context_parallel/_attention.py as torch 2.13.0 ships it (its rotate methods all-gather "
                          "and all-to-all both pass K and V shards round a ring), as torchtitan composes it with FSDP2; "
                          "no Ulysses")
#: what the fsdp row (PyTorch FSDP1, as LLM Foundry's Composer runs it) does not compose with: PyTorch's pipelining
#: reduces a stage's gradients once per step only for DDP and FSDP2 modules, and its context parallel is composed
#: with FSDP2 (torchtitan); no FSDP1 trainer the row follows runs either
FSDP1_NO_PIPELINE = ("PyTorch's torch/distributed/pipelining/stage.py as torch 2.13.0 ships it: "
                     "backward_maybe_with_nosync knows DistributedDataParallel and FSDP2's FSDPModule, no FSDP1 module; "
                     "LLM Foundry's Composer FSDP1, which this row follows, runs none; choose framework=fsdp2")
FSDP1_NO_CP = ("PyTorch's context parallel is composed with FSDP2, by torchtitan; LLM Foundry's Composer FSDP1, which "
               "this row follows, runs none; choose framework=fsdp2")
#: DeepSpeed holds the gradients in grad_accum_dtype, the model's own type unless the config names another, whatever
#: type it reduces them in: a reduction in fp32 casts each bucket to it for the collective only
DEEPSPEED_GRADS_HELD = ("deepspeedai/DeepSpeed deepspeed/runtime/engine.py at edaa7221 (get_data_types: grad_accum_dtype "
                        "= model_dtype when the config's grad_accum_dtype is None) and deepspeed/runtime/zero/"
                        "stage_1_and_2.py (the ipg buckets in the optimizer's 16-bit dtype; "
                        "gradient_reduction_w_predivide: tensor.to(communication_data_type) for the all-reduce)")
#: DeepSpeed's engine refuses ZeRO-3 with its native MoE layers (the MoE the moe=1 terms price: deepspeed.moe's
#: expert-parallel all-to-alls); from v0.19.3 (02663d6e5) its AutoEP layers run under ZeRO-3, not modelled here
DEEPSPEED_MOE_ZERO3 = ("deepspeedai/DeepSpeed deepspeed/runtime/engine.py (_configure_zero_optimizer: 'MoE not supported "
                       "with Stage 3'; from v0.19.3 _validate_zero3_moe_compatibility: 'Native DeepSpeed MoE is not "
                       "supported with ZeRO Stage 3', its AutoEP layers allowed, not modelled)")
#: Megatron-Core's pipeline schedules: no pipelining, 1F1B or the interleaved one, no GPipe (GPipe is
#: torch.distributed.pipelining's ScheduleGPipe, framework=fsdp2)
MEGATRON_SCHEDULES = ("NVIDIA/Megatron-LM megatron/core/pipeline_parallel/schedules.py at d98e8a64 "
                      "(get_forward_backward_func: forward_backward_no_pipelining, "
                      "forward_backward_pipelining_without_interleaving (1F1B) or "
                      "forward_backward_pipelining_with_interleaving)")
#: the frameworks that run Megatron-Core's layers and its launcher's checks (megatron/training/arguments.py): its token
#: dispatchers, its tensor-parallel comm overlap
MEGATRON_CORE = ("megatron", "megatron_fsdp")
#: every context-parallel algorithm of the hybrid's cp option, and every pipeline schedule of its schedule option
CP_ALGORITHMS = ("ring", "ulysses", "ring_flash_attn")
SCHEDULES = ("gpipe", "1f1b", "interleaved")

#: when the data-parallel gradients are reduced: once after the last micro-batch, or after every one
GRAD_REDUCE = ("per_step", "per_micro_batch")
#: the gradient collectives' element type: fp32, or the run's own (--dtype)
GRAD_DTYPES = ("fp32", "same")
#: a ZeRO stage above every real one: "never" for :attr:`Framework.per_micro_batch_from`
NEVER = 4


@dataclass(frozen=True)
class Scheme:
    """One data-parallel scheme the planner searches: a framework at a ZeRO stage, with its
    reshard_after_forward (None: as the framework does), under a short name for its tables."""

    framework: str
    zero: int
    reshard_after_forward: bool | None
    name: str


@dataclass(frozen=True)
class Framework:
    """What one framework runs on the data-parallel axis (each default overridable by its option)."""

    name: str
    summary: str                 # the words the hybrid's ``framework`` option says of it
    zero_stages: tuple[int, ...]
    refusal: str                 # said after "zero=Z is not run by framework=NAME " for another stage
    per_micro_batch_from: int    # the lowest ZeRO stage reducing gradients after every micro-batch (NEVER: none)
    reshard_after_forward: bool  # ZeRO-3: parameters freed after the forward, gathered again in the backward
    grad_dtype: str              # one of GRAD_DTYPES
    sp_regather: bool            # sequence parallel re-gathers its inputs in the backward
    dp_overlap_stages: tuple[int, ...]   # ZeRO stages whose gradient reductions overlap the backward
    schemes: tuple[Scheme, ...]
    sources: tuple[str, ...]     # the framework files the row follows
    planned: str = ""            # the planner's assumptions on its schemes, after its name
    param_gather_overlap_stages: tuple[int, ...] = ()   # ZeRO stages whose parameter all-gathers hide (PARAM_GATHER_SOURCE)
    p2p_overlap_schedules: tuple[str, ...] = ()         # pipeline schedules whose sends hide (P2P_OVERLAP_SOURCE)
    a2a_overlap: bool = False    # the expert all-to-alls hide behind another micro-batch (A2A_OVERLAP_SOURCE)
    shard_unit: str = "model"    # ZeRO-3: one gather/reduce-scatter per "layer" (FSDP unit) or for the whole "model"
    tp_backward_overlap: bool = False   # the column-parallel backward collectives async (TP_BACKWARD_OVERLAP_SOURCE)
    sdpa: bool = False           # the attention core is PyTorch's scaled_dot_product_attention (SDPA_SOURCE)
    te_attention: bool = False   # the attention core is Transformer Engine's DotProductAttention (TE_SM100_HEAD_DIM)
    schedules: tuple[str, ...] = SCHEDULES                  # the pipeline schedules it runs
    pipeline_zero: tuple[int, ...] = (0, 1, 2, 3)           # the ZeRO stages it runs with p > 1
    cp_algorithms: tuple[str, ...] = CP_ALGORITHMS          # the context-parallel algorithms it runs with c > 1
    moe_zero: tuple[int, ...] = (0, 1, 2, 3)                # the ZeRO stages it runs with MoE layers
    limits_where: str = ""       # the file that sets the schedule and ZeRO limits above, for the refusals
    cp_where: str = ""           # and the context-parallel one
    moe_where: str = ""          # and the MoE one
    ga_schedules: bool = False   # its gradient-accumulation steps each run a whole pipeline schedule (PIPELINING_GA)
    kept_gathered: str = "no_sync"   # when a unit not resharded after its forward stays gathered (KEPT_GATHERED)
    recompute_stops_early: bool = False  # its full recompute skips a layer's last collective (RECOMPUTE_EARLY_STOP)
    replicates: bool = False     # its ZeRO-3 shards can be replicated: hybrid sharding, hsdp=1 (HSDP_SOURCE)
    expert_parallel: bool = True   # it places a MoE layer's experts on e ranks apart (e > 1), or only replicates them
    ep_where: str = ""           # the file that says it runs none, for the refusal
    # ZeRO-1/2: the gradient reduction's collective, "reduce_scatter" (each rank receives its partition) or
    # "all_reduce" (the whole buffer reduced everywhere, each rank keeping its partition: DEEPSPEED_BUCKET_ALLREDUCE)
    partition_reduce: str = "reduce_scatter"
    # ZeRO-3 with p ≥ 2: whether the parameters are freed after the forward there (None: as reshard_after_forward);
    # torchtitan's default policy keeps them under a pipeline (TORCHTITAN_FSDP_DEFAULTS)
    reshard_when_piped: bool | None = None
    # the gradient reductions' element type with context parallelism (c ≥ 2) where the framework switches to another
    # there (None: grad_dtype for every c), and the file that says so (DEEPSPEED_ULYSSES_GRADS)
    cp_grad_dtype: str | None = None
    cp_grad_where: str = ""
    # the element type its gradients are held in where that is not the reductions' (None: the reductions'; "same":
    # the run's 16-bit type, whatever type they reduce in: DEEPSPEED_GRADS_HELD)
    grad_held_dtype: str | None = None

    def grad_reduce(self, zero: int) -> str:
        return "per_micro_batch" if zero >= self.per_micro_batch_from else "per_step"

    def dp_overlap(self, zero: int) -> bool:
        return zero in self.dp_overlap_stages

    def param_gather_overlap(self, zero: int) -> bool:
        return zero in self.param_gather_overlap_stages

    def p2p_overlap(self, schedule: str) -> bool:
        return schedule in self.p2p_overlap_schedules


_ROWS = (
    Framework("megatron",
              "DDP zero=0 or the distributed optimizer zero=1, gradients reduced once per step; sp_regather=1",
              (0, 1), "(DDP: zero=0, distributed optimizer: zero=1); choose framework=deepspeed or fsdp for zero=2 or 3",
              NEVER, True, "fp32", True, (),
              (Scheme("megatron", 0, None, "megatron zero 0"), Scheme("megatron", 1, None, "megatron zero 1")),
              (MEGATRON_DDP, MEGATRON_FP32_GRADS, MEGATRON_SP_REGATHER, DP_OVERLAP_SOURCE, TP_BACKWARD_OVERLAP_SOURCE),
              "zero 0/1 (DDP, distributed optimizer: gradients reduced once per step, in fp32)",
              p2p_overlap_schedules=("interleaved",), tp_backward_overlap=True, te_attention=True,
              schedules=("1f1b", "interleaved"), limits_where=MEGATRON_SCHEDULES),
    Framework("deepspeed",
              "ZeRO-1/2 all-reduce the gradient buckets, each rank keeping its partition, ZeRO ≥ 2 every "
              "micro-batch, ZeRO-3 re-gathers in the backward; sp_regather=1 as Megatron-DeepSpeed",
              (0, 1, 2, 3), "", 2, True, "same", True, (3,),
              (Scheme("deepspeed", 2, None, "deepspeed zero 2"), Scheme("deepspeed", 3, None, "deepspeed zero 3")),
              (DEEPSPEED_ENGINE, DEEPSPEED_BUCKET_ALLREDUCE, DEEPSPEED_STAGE3, MEGATRON_FP32_GRADS, DP_OVERLAP_SOURCE,
               DEEPSPEED_PIPE_LIMITS, DEEPSPEED_MOE_ZERO3, DEEPSPEED_ULYSSES_GRADS, DEEPSPEED_GRADS_HELD),
              "zero 2 (the gradient buckets all-reduced every micro-batch, each rank keeping its partition) and 3 (also all-gather in every forward and backward), "
              "both with p = 1 (its pipeline engine runs ZeRO 0 and 1, 1F1B only), context parallel by Ulysses only",
              param_gather_overlap_stages=(3,), schedules=("1f1b",), pipeline_zero=(0, 1),
              cp_algorithms=("ulysses",), moe_zero=(0, 1, 2), shard_unit="layer", partition_reduce="all_reduce",
              moe_where=("DeepSpeed's deepspeed/runtime/engine.py: 'Native DeepSpeed MoE is not supported with ZeRO "
                         "Stage 3' (its AutoEP layers, v0.19.3 on, run under ZeRO-3: not modelled)"),
              limits_where="DeepSpeed's deepspeed/runtime/pipe/engine.py",
              cp_where="DeepSpeed-Ulysses, an all-to-all over the heads: DeepSpeed's docs/_tutorials/ds-sequence.md",
              cp_grad_dtype="fp32", grad_held_dtype="same",
              cp_grad_where=("DeepSpeed's deepspeed/runtime/engine.py: with Ulysses the gradients are reduced in "
                             "seq_parallel_communication_data_type, 'fp32' by default (runtime/constants.py)")),
    Framework("fsdp",
              "zero=0 NO_SHARD or 3; reduce every micro-batch, no no_sync; sp_regather=0 as torch's tensor parallel",
              (0, 3), "(NO_SHARD: zero=0, FULL_SHARD: zero=3, SHARD_GRAD_OP: zero=3 with reshard_after_forward=0)",
              0, True, "same", False, (0, 1, 2, 3),
              (Scheme("fsdp", 3, True, "fsdp full-shard"), Scheme("fsdp", 3, False, "fsdp grad-op")),
              (FSDP_RUNTIME, FSDP_UNITS, MEGATRON_FP32_GRADS, MEGATRON_SP_REGATHER, DP_OVERLAP_SOURCE,
               RECOMPUTE_EARLY_STOP),
              "full-shard (deepspeed zero 3's traffic, one FSDP unit per transformer layer) and grad-op "
              "(SHARD_GRAD_OP: gathered once per micro-batch, kept for the backward), both with p = 1 and c = 1 "
              "(FSDP1 runs under no pipeline or context parallel)",
              param_gather_overlap_stages=(3,), sdpa=True, shard_unit="layer", recompute_stops_early=True,
              expert_parallel=False, pipeline_zero=(), cp_algorithms=(), limits_where=FSDP1_NO_PIPELINE,
              cp_where=FSDP1_NO_CP,
              ep_where="PyTorch's torch/distributed/fsdp/fully_sharded_data_parallel.py: an FSDP unit shards its "
                       "parameters over one process group (a pair under HYBRID_SHARD), experts alike; no expert "
                       "placement of its own"),
    Framework("fsdp2",
              "PyTorch FSDP2 as torchtitan runs it, zero=3: one all-gather and reduce-scatter per transformer layer, "
              "prefetched and overlapped, reduced every micro-batch (once per schedule under a pipeline) in fp32, "
              "resharded after the forward only without a pipeline; sp_regather=0 as torch's tensor parallel",
              (3,), "(fully_shard is ZeRO-3: zero=3; reshard_after_forward=0 keeps the gathered layers)",
              0, True, "fp32", False, (3,), (Scheme("fsdp2", 3, None, "fsdp2"),),
              (FSDP2_RUNTIME, TORCHTITAN_FSDP_DEFAULTS, MEGATRON_FP32_GRADS, MEGATRON_SP_REGATHER, DP_OVERLAP_SOURCE,
               PARAM_GATHER_SOURCE, FSDP2_RESHARD_AFTER_BACKWARD, RECOMPUTE_EARLY_STOP),
              "zero 3 per layer (one all-gather and reduce-scatter per layer, resharded after the forward only without "
              "a pipeline, reduced every micro-batch in fp32, as torchtitan runs it; context parallel by ring attention "
              "only)", param_gather_overlap_stages=(3,), shard_unit="layer", sdpa=True,
              ga_schedules=True, kept_gathered="pipeline", recompute_stops_early=True, replicates=True,
              reshard_when_piped=False, cp_algorithms=("ring", "ring_flash_attn"), cp_where=TORCH_CONTEXT_PARALLEL),
    Framework("megatron_fsdp",
              "Megatron-FSDP, zero=3 (optim_grads_params): one all-gather and reduce-scatter per layer, "
              "prefetched and overlapped, reduced every micro-batch; sp_regather=1",
              (3,), "(--data-parallel-sharding-strategy optim_grads_params: zero=3)",
              0, True, "same", True, (3,), (Scheme("megatron_fsdp", 3, None, "megatron-fsdp"),),
              (MEGATRON_FSDP_RUNTIME, MEGATRON_FP32_GRADS, MEGATRON_SP_REGATHER, DP_OVERLAP_SOURCE,
               PARAM_GATHER_SOURCE, P2P_OVERLAP_SOURCE, TP_BACKWARD_OVERLAP_SOURCE),
              "zero 3 per layer (as fsdp2, with Megatron's layers: sp_regather=1)",
              param_gather_overlap_stages=(3,), p2p_overlap_schedules=("interleaved",), shard_unit="layer",
              tp_backward_overlap=True, te_attention=True, schedules=("1f1b", "interleaved"),
              limits_where=MEGATRON_SCHEDULES),
)

#: name → Framework, in the order the options and the planner list them
FRAMEWORKS: dict[str, Framework] = {row.name: row for row in _ROWS}

#: every scheme the planner searches, framework by framework
SCHEMES: tuple[Scheme, ...] = tuple(scheme for row in _ROWS for scheme in row.schemes)


def framework_refusal(setting) -> str | None:
    """Why ``setting`` is not what its framework runs, or None: a pipeline schedule not among its
    :attr:`Framework.schedules`, a schedule per gradient-accumulation step where it runs one a step
    (:attr:`Framework.ga_schedules`), a ZeRO stage not among its :attr:`Framework.moe_zero` with MoE layers."""
    row = FRAMEWORKS[setting.framework]
    if setting.framework == "fsdp2" and setting.tp_overlap and setting.compile is not True:
        return ("tp_overlap=1 with framework=fsdp2 needs compile=1: torchtitan's async TP is a torch.compile pass "
                "(torchtitan/config/configs.py at b5bcd76c: 'Async TP requires 'model' in --compile.components and "
                "--compile.enable'); give compile=1 or tp_overlap=0")
    if setting.framework in MEGATRON_CORE and setting.tp_overlap and not setting.sp:
        return (f"tp_overlap=1 with framework={setting.framework} needs sp=1: Megatron-LM overlaps the tensor-parallel "
                "collectives with the GEMMs only under sequence parallelism (megatron/training/arguments.py at d98e8a64: "
                "'Tensor parallel communication/GEMM overlap can happen only when sequence parallelism is enabled'); "
                "give sp=1 or tp_overlap=0")
    if setting.schedule not in row.schedules:
        return (f"schedule={setting.schedule} with framework={setting.framework} is refused: its pipeline engine runs "
                f"{choices(row.schedules)} only ({row.limits_where}); choose schedule={choices(row.schedules)}")
    if setting.hsdp and (not row.replicates or setting.moe):
        return (f"hsdp=1 with framework={setting.framework}{' and moe=1' if setting.moe else ''} is refused: hybrid "
                f"sharding is modelled for framework={choices(n for n, r in FRAMEWORKS.items() if r.replicates)} "
                "without MoE layers; give hsdp=0")
    if setting.ga_schedules and not row.ga_schedules:
        return (f"ga_schedules=1 with framework={setting.framework} is refused: its pipeline runs the step's m "
                f"micro-batches as one schedule; a schedule per gradient-accumulation step is "
                f"torch.distributed.pipelining's: choose framework="
                f"{choices(name for name, r in FRAMEWORKS.items() if r.ga_schedules)} or ga_schedules=0")
    if setting.moe and setting.zero not in row.moe_zero:
        return (f"moe=1 with framework={setting.framework} zero={setting.zero} is refused: its engine runs MoE layers "
                f"with ZeRO stage {choices(map(str, row.moe_zero))} only ({row.moe_where}); choose "
                f"zero={max(row.moe_zero)} or another framework")
    return None


def planned_schedules(scheme: Scheme, moe: bool) -> tuple[str, ...]:
    """The pipeline schedules the planner builds ``scheme`` with (of 1f1b and interleaved): those its framework runs,
    none where it runs no MoE layers at the scheme's ZeRO stage (:func:`framework_refusal`'s rules; the search and
    the shipped kernels, symcomm.tools.codegen, read this one list)."""
    row = FRAMEWORKS[scheme.framework]
    if moe and scheme.zero not in row.moe_zero:
        return ()
    return tuple(schedule for schedule in ("1f1b", "interleaved") if schedule in row.schedules)


def choices(names, last: str = "or") -> str:
    """``names`` in words: "a", "a or b", "a, b or c" (``last`` "and": "a, b and c")."""
    names = list(names)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + f" {last} " + names[-1]


def framework(name: str) -> Framework:
    """The row of ``name``; InputError naming the option and the frameworks there are."""
    try:
        return FRAMEWORKS[name]
    except KeyError:
        raise InputError(f"framework={name} is not allowed; choose {choices(FRAMEWORKS)}") from None


def framework_zero(options: dict, takes) -> dict:
    """zero= at the one ZeRO stage a given framework runs where zero is not given (fsdp2 and megatron_fsdp: 3), in
    place of the hybrid's default 1, which they refuse; said in a note.  A framework of several stages keeps the
    default (and :func:`check_stage` names them).  ``options``: the option words; ``takes``: the options the
    subject takes."""
    row = FRAMEWORKS.get(str(options.get("framework")))
    if "zero" not in takes or "zero" in options or row is None or len(row.zero_stages) != 1:
        return options
    stage = row.zero_stages[0]
    notes.add(f"zero={stage}: framework={row.name} runs ZeRO stage {stage} only", restates_default=True)
    return {**options, "zero": str(stage)}


def check_stage(row: Framework, zero: int) -> None:
    """InputError naming the stage when ``row``'s framework does not run ZeRO stage ``zero``."""
    if zero not in row.zero_stages:
        # zero=1 is the hybrid's default where a framework runs several stages (one alone is taken for it:
        # framework_zero): refused for a word it may not have typed
        default = " (zero=1 is the default where zero is not given)" if zero == 1 and len(row.zero_stages) > 1 else ""
        raise InputError(f"zero={zero} is not run by framework={row.name} {row.refusal}".rstrip() + default)


def planned() -> str:
    """The planner's schemes in words, one clause per row that has schemes."""
    return ", ".join(f"{row.name} {row.planned}" for row in _ROWS if row.schemes)


def option_meaning() -> str:
    """The hybrid strategy's ``framework`` option in words, one clause per row."""
    return ("what runs the step, deciding the switches left at 'framework': "
            + ", ".join(f"{row.name} ({row.summary})" for row in _ROWS))
