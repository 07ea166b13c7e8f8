"""Modern published runs (Megatron-Bridge's performance tables, torchtitan's benchmarks, Megatron-LM's README table,
NeMo 24.07's performance table, LLM Foundry's MPT tables, NVIDIA's DGX Cloud benchmarking recipes, NeMo AutoModel's
table, KempnerForge's tables, the Megatron MoE Model Zoo's H100 figures, Megatron-LM's functional-test golden values;
``data/bridge_runs_*.json``, ``data/torchtitan_runs.json``, ``data/megatron_lm_runs.json``, ``data/nemo_runs.json``,
``data/llm_foundry_runs.json``, ``data/dgxc_runs.json``, ``data/dgxc_25_05_runs.json``, ``data/automodel_runs.json``,
``data/kempnerforge_runs.json``, ``data/kempnerforge_mfu_runs.json``, ``data/modelzoo_runs.json``,
``data/megatron_lm_tests_runs.json``, read by :mod:`bridge_runs`) as ``symcomm eval hybrid`` words.

Each run becomes what a user would type: ``symcomm eval hybrid --model NAME --hardware HW KEY=VALUE ...``
(:func:`command`; a dense model no preset holds, as Megatron-LM's GPTs, typed by its shape instead: h, L, a, h_kv,
F, V, gated, tied, Φ derived from them by the command), read from the table and the recipe the run records, and it
is evaluated through that
command's own binding (:func:`symcomm.training.answers.step_inputs`), so the fit, the docs' tables and the
command line give one number.  What the step model does not express is said, never guessed:

* :func:`out_of_scope` — a run the model cannot evaluate at all (hybrid Mamba layers, NVFP4 matmuls, a pipeline
  layout the source does not give): left out of every fit and table of errors, listed with the reason;
* :func:`approximations` — what a run does that the model counts another way (CUDA graphs, activation
  offloading to the CPU, the multi-token-prediction layer, recompute modules the step model has no setting for,
  sliding-window attention as full).  The MoE dispatchers are modelled (``dispatcher=``: :func:`dispatcher`);
* :func:`known_cause` — why a run in scope disagrees with the model where its sources say it (a regression its
  framework's maintainers published, kernels the model does not hold): the run stays fitted or checked as its role
  says, and the docs show the cause beside its error.
"""

from __future__ import annotations

from types import SimpleNamespace

from . import bridge_runs
from symcomm.presets import model as presets_model
from symcomm.presets.systems import low_dtype
from symcomm.training.settings import OPTIONS, RECOMPUTE_MODULES, ROWWISE_CAST_SHARE

#: the data files of modern runs, in the order the docs list them
FILES = ("bridge_runs_25.json", "bridge_runs_26.json", "torchtitan_runs.json", "megatron_lm_runs.json", "nemo_runs.json",
         "llm_foundry_runs.json", "dgxc_runs.json", "dgxc_25_05_runs.json", "automodel_runs.json",
         "kempnerforge_runs.json", "kempnerforge_mfu_runs.json", "modelzoo_runs.json", "megatron_lm_tests_runs.json")

#: a run's model name → the symcomm model preset of the same shape (Hugging Face configs; the runs' recipes
#: build these models from the same configs)
PRESETS = {"llama3-8b": "llama3-8b", "llama3.1-8b": "llama3.1-8b", "llama3-70b": "llama3-70b",
           "llama3.1-70b": "llama3.1-70b", "llama3.1-405b": "llama3.1-405b", "deepseek-v3": "deepseek-v3",
           "qwen3-30b-a3b": "qwen3-30b-a3b", "qwen3-235b-a22b": "qwen3-235b-a22b", "gpt-oss-120b": "gpt-oss-120b",
           "gpt3-175b": "gpt3-175b", "llama2-70b": "llama2-70b", "nemotron-3-nano": "nemotron-3-nano",
           "nemotron-3-super": "nemotron-3-super", "nemotron4-15b": "nemotron4-15b", "nemotron4-340b": "nemotron4-340b",
           "mixtral-8x22b": "mixtral-8x22b"}

#: the runs' precision names → the step model's precision setting (symcomm.training.settings.PRECISIONS)
PRECISION = {"bf16": "bf16", "fp8-cs": "fp8_tensor", "fp8-ds": "fp8_delayed", "fp8-mx": "mxfp8",
             "fp8-block": "fp8_block", "fp8-rowwise": "fp8_rowwise", "nvfp4": "nvfp4"}

#: the runs' overlap fields → the step model's settings
OVERLAP = {"grad_reduce": "overlap_grad_reduce", "param_gather": "overlap_param_gather", "tp_comm": "tp_overlap",
           "moe_a2a": "a2a_overlap", "p2p": "p2p_overlap"}

#: Megatron-Core recompute modules whose recompute is the attention core (what recompute=selective counts)
ATTENTION_CORE = {"core_attn"}
#: Megatron-Core recompute modules the step model counts beside the core, each by its flag recompute_<module> (MLA's
#: up projections: recompute_mla_up; the rest symcomm.training.settings.RECOMPUTE_MODULES)
MODULE_FLAGS = {"mla_up_proj": "recompute_mla_up", **{name: f"recompute_{name}" for name in RECOMPUTE_MODULES}}
COUNTED_MODULES = ATTENTION_CORE | set(MODULE_FLAGS)


def runs(role: str | None = None) -> list[dict]:
    """Every modern run of the data files, of ``role`` ("fit", "check") or all."""
    return [r for name in FILES for r in bridge_runs.runs(name, role)]


def out_of_scope(run: dict) -> str | None:
    """Why the step model cannot evaluate ``run`` at all, or None."""
    name, model = run["model"]["name"], run["model"]
    if name not in PRESETS:
        # by the layers, not the name: NeMo's dense Nemotron-3/4 transformers are typed by shape
        if "hybrid" in model and ("experts" in model or model["gated_mlp"]):
            return (f"{name}: hybrid Mamba-Transformer layers with MoE or gated MLPs without a model preset: only a "
                    "dense hybrid (Nemotron-H: squared-ReLU MLPs) is typed by shape")
        if "kv_lora_rank" in model or model["head_dim"] * model["heads"] != model["hidden"] or (
                "experts" in model and not model["gated_mlp"]):
            return (f"{name}: no model preset of this shape, and only a model with heads h/a wide (dense, or MoE of "
                    "SwiGLU experts) is typed by shape")
    if run["precision"] not in PRECISION:
        return f"precision {run['precision']}: not a recipe the step model holds ({', '.join(PRECISION)})"
    etp = run.get("etp")
    if etp not in (None, 1, run["t"]):
        return f"expert tensor parallel size {etp}: the model holds 1 or t = {run['t']}"
    if run["e"] > 1 and (run["t"] * run["d"] * run["c"]) % run["e"]:
        return (f"EP {run['e']} does not divide t·d·c = {run['t'] * run['d'] * run['c']}: the printed layout cannot run "
                "as written (Megatron-Core parallel_state.py), so one of its numbers is not what ran")
    if _split(run) is None:
        return (f"L = {run['model']['layers']} layers over p·v = {run['p'] * run['v']} chunks with no layout in "
                "the source: the split cannot be read")
    if _block_layers(run) and _split(run):
        return (f"full recompute of {run['recompute_layers']} layers per model chunk (Megatron-Core's recompute_method "
                "block) over an uneven pipeline split: recompute=block counts a share of evenly split chunks")
    return None


def _block_layers(run: dict) -> int | None:
    """The layers per model chunk a run recomputes under Megatron-Core's block method (recompute_num_layers) when
    fewer than the chunk holds (recompute=block, L_rc), else None (all of them: recompute=full)."""
    partial = run.get("recompute_layers")
    if run["recompute"] == "full" and partial is not None and partial * run["p"] * run["v"] < run["model"]["layers"]:
        return partial
    return None


def known_cause(run: dict) -> str | None:
    """Why ``run``'s step time disagrees with the step model, as its data file records it from the sources it
    names (``known_cause``), or None.  Said, never corrected for: the run keeps its role."""
    return run.get("known_cause")


def _split(run: dict) -> dict | None:
    """The pipeline split as settings: {} for an even split, first_last with L_first, L_last, or None when
    the layout is not known (or not of the first/last/uniform-middle form)."""
    layers, chunks = run["model"]["layers"], run["p"] * run["v"]
    layout = run["pipeline_layout"]
    if layout is None:
        return {} if layers % chunks == 0 else None
    if "layers_per_chunk" in layout:
        per = layout["layers_per_chunk"]
        first, last, middle = per[0], per[-1], per[1:-1]
    elif "first" in layout and "last" in layout:
        first, last = layout["first"], layout["last"]
        middle = [(layers - first - last) // (chunks - 2)] * (chunks - 2) if chunks > 2 else []
        if chunks > 2 and (layers - first - last) % (chunks - 2):
            return None
    else:
        return None
    if len(set(middle)) > 1:
        return None
    if chunks > 1 and middle and first == last == middle[0]:
        return {}
    return {"pipeline_split": "first_last", "L_first": str(first), "L_last": str(last)}


def _etp_one_by_layout(run: dict) -> bool:
    """An expert-TP size the source leaves unset that only 1 fits: EP·ETP ranks of each expert group must divide
    the GPUs (Megatron-Core parallel_state.py), so e ∤ d·c with ETP = t leaves ETP = 1."""
    return run.get("etp") is None and (run["d"] * run["c"]) % run["e"] != 0


def _recompute(run: dict) -> str:
    if _block_layers(run):
        return "block"
    if run["recompute"] != "selective":
        return run["recompute"]
    modules = set(run["recompute_modules"] or [])
    return "selective" if modules & ATTENTION_CORE or not modules else "none"


def dispatcher(run: dict) -> str:
    """The step model's dispatcher setting of an MoE run: its recipe's moe_token_dispatcher_type, or its flex
    backend (deepep, hybridep), as the data records it; alltoall padded to capacity (the 25.09 tokendrop recipes:
    moe_pad_expert_input_to_capacity, capacity factor 1.0) is alltoall_padded."""
    moe = run.get("moe") or {}
    name = moe.get("dispatcher") or "alltoall"
    if name == "alltoall" and "tokendrop" in (moe.get("balance") or ""):
        return "alltoall_padded"
    return name


def preset_of(run: dict) -> str | None:
    """The symcomm model preset of ``run``'s model, or None for a model typed by its shape (:func:`shape_words`)."""
    return PRESETS.get(run["model"]["name"])


def shape_words(model: dict) -> dict:
    """A model no preset holds as the shape words ``eval hybrid`` takes (it derives Φ from them: GPT's count,
    Llama's with gated=1, the embedding as tied= says; for a MoE model Llama's count of its MoE layers and Φ_E, from
    E, k, F_e, L_moe and the shared experts E_s)."""
    gqa = model["kv_heads"] != model["heads"]
    experts = ({"E": model["experts"], "k": model["top_k"], "F_e": model["moe_ffn"], "L_moe": model["moe_layers"],
                "E_s": model.get("shared_experts", 0)} if "experts" in model else {})
    if "hybrid" in model:
        # a dense hybrid's layer kinds by the pattern's counts (M Mamba-2 mixers, * attention, - MLP) and its mixers'
        # heads, state and groups (eval counts Φ as Nemotron-H's: presets.formula.phi_nemotron_h)
        mixer = model["hybrid"]
        experts.update(mamba=1, L_att=mixer["counts"]["*"], L_ssm=mixer["counts"]["M"], a_ssm=mixer["mamba_heads"],
                       d_ssm=mixer["mamba_heads"] * mixer["mamba_head_dim"], n_ssm=mixer["mamba_state"],
                       g_ssm=mixer["mamba_groups"])
    return {"h": model["hidden"], "L": model["layers"], "a": model["heads"],
            "h_kv": model["kv_heads"] * model["head_dim"], "F": model["ffn"], "V": model["vocab"],
            "gated": int(bool(model["gated_mlp"])), "tied": int(bool(model["tied"])), **({"gqa": 1} if gqa else {}),
            **experts}


#: the runs trained with dropout (hidden and attention dropout 0.1, each layer keeping its masks), by id prefix: NeMo
#: 24.07's GPT-3 rows (NVIDIA/NeMo-Framework-Launcher launcher_scripts/conf/training/gpt3/{5b,20b,175b}.yaml at
#: 8325688d: hidden_dropout 0.1, attention_dropout 0.1) and the Megatron-LM README's 2024-07 rows (no configuration
#: published: Megatron-LM's argument defaults, 0.1 and 0.1, megatron/training/arguments.py at f2e5db40); and the
#: Megatron-LM functional test gpt3_7b_tp4_pp1_memory_speed's golden-value rows, whose model_config.yaml sets neither
#: --hidden-dropout nor --attention-dropout (tests/functional_tests/test_cases/gpt/gpt3_7b_tp4_pp1_memory_speed/
#: model_config.yaml at 6e091e1b, and under its earlier name gpt3_7b_mr_dgx_a100_1N8G_tp4_pp1_memory_speed at
#: 2795ebde): the defaults 0.1 and 0.1 (megatron/core/transformer/transformer_config.py at 6e091e1b,
#: megatron/training/arguments.py at 2795ebde)
DROPOUT_RUNS = ("nemo-24.07-h100-gpt3-", "megatron-lm-")        # megatron-lm-tests- among the latter
#: the sources whose other runs train without (hidden_dropout 0.0, attention_dropout 0.0), each family as its recipe
#: sets it: NeMo 24.07's Llama and Nemotron YAMLs (the launcher at 8325688d); Megatron-Bridge's model providers
#: (25.09 at 6725f704: llama_provider.py, deepseek_provider.py, qwen_provider.py; 25.11 at 7af9601c, and gpt_oss_
#: provider.py) and from 26.04 the bridges from the Hugging Face configs (llama_bridge.py, deepseek_v3_bridge.py,
#: qwen3_moe_bridge.py, gpt_oss_bridge.py; Nemotron 3's MambaModelProvider); dgxc-benchmarking's YAMLs (25.01 at
#: 143b90dd) and NeMo 2's configs (25.05.04: Llama3Config, MixtralConfig8x7B for Grok-1, NemotronConfig, DeepSeek's,
#: SSMConfig); the Megatron-MoE-ModelZoo's model_configs/benchmarking YAMLs
NO_DROPOUT_SOURCES = ("nemo-", "bridge-", "dgxc-", "modelzoo-")


def dropout(run: dict) -> bool | None:
    """Does ``run`` train with dropout (:data:`DROPOUT_RUNS`, :data:`NO_DROPOUT_SOURCES`); None where no source says
    (torchtitan's, AutoModel's and KempnerForge's models, LLM Foundry's MPT: eval's fill, the preset's or the option's
    default)."""
    if run["id"].startswith(DROPOUT_RUNS):
        return True
    return False if run["id"].startswith(NO_DROPOUT_SOURCES) else None


def words(run: dict) -> list[str]:
    """The KEY=VALUE words of ``symcomm eval hybrid`` for ``run`` (its model and hardware go as --model,
    --hardware: :func:`command`; a model without a preset as its shape)."""
    moe = "experts" in run["model"]
    d, mbs, gbs = run["d"], run["micro_batch"], run["global_batch"]
    w = {} if preset_of(run) else shape_words(run["model"])
    w.update({"t": run["t"], "p": run["p"], "d": d, "c": run["c"], "e": run["e"], "b": gbs, "m": gbs // (d * mbs),
         "s": run["seq"], "G": run["nvlink_domain"], "embeddings": 1, "sp": int(bool(run["sp"])),
         "recompute": _recompute(run), "precision": PRECISION[run["precision"]],
         "fp8_param_gather": int(bool(run["fp8_param_gather"]))})
    if run.get("nvlink", "switch") != "switch":
        # how the node's GPUs are wired, where the row's hardware says (the row's assumed lines; symcomm.base.crossing)
        w["nvlink"] = run["nvlink"]
    if _block_layers(run):
        w["L_rc"] = _block_layers(run)
    if run.get("cpu_offload_layers"):
        # Megatron-Core's --cpu-offloading-num-layers (the recipe's cpu_offloading_num_layers)
        w.update(cpu_offload=1, L_off=run["cpu_offload_layers"])
    if run.get("layers_in_bf16"):
        # Megatron-Core's first/last layers in bf16 under the low-precision recipe (the row's derived line)
        w.update(bf16_layers=1, L_bf16=run["layers_in_bf16"])
    if "mla_up_proj" in (run["recompute_modules"] or []) and run["recompute"] == "selective":
        w["recompute_mla_up"] = 1
    if run.get("fused_grouped_mlp"):
        # Transformer Engine's fused grouped MLP, where the recipe asks for it and the experts' shape lets it fuse
        w["fused_grouped_mlp"] = 1
    if run["model"].get("mtp_layers"):
        # Megatron-Core's multi-token prediction as the recipe sets it (the row's model: mtp_num_layers; one layer
        # run at every depth where the recipe sets mtp_use_repeated_layer)
        w.update(mtp="shared" if run["model"].get("mtp_repeated") else 1, D_mtp=run["model"]["mtp_layers"])
    if run["recompute"] == "selective":
        w.update({MODULE_FLAGS[name]: 1 for name in sorted(set(run["recompute_modules"] or []) & set(MODULE_FLAGS))})
    if run.get("schedules_per_step", 1) > 1:
        # gradient accumulation over whole pipeline schedules, as the trainer runs them (the row's derived line;
        # symcomm.training.frameworks.PIPELINING_GA)
        w.update(ga_schedules=1, n_ga=run["schedules_per_step"])
    if run["v"] > 1:
        w.update(schedule="interleaved", v=run["v"])
    split = _split(run) or {}
    if not split and run.get("memory_stage") in ("first", "last") and run["p"] > 1:
        # a peak printed of one stage's GPU (memory_stage), which the step model counts apart only on a split it is
        # given: the even split written out, L/(p·v) layers in every chunk, the same layout
        per = str(run["model"]["layers"] // (run["p"] * run["v"]))
        split = {"pipeline_split": "first_last", "L_first": per, "L_last": per}
    w.update(split)
    if moe:
        w["moe"] = 1
        w["dispatcher"] = dispatcher(run)
        if run["model"].get("router_groups", 1) > 1:
            # group-limited routing as the model sets it (symcomm.training.routing.GROUP_LIMITED_ROUTING; the row's model source)
            w.update(router_groups=run["model"]["router_groups"], router_group_topk=run["model"]["router_group_topk"])
        if run["t"] > 1 and (run.get("etp") == 1 or _etp_one_by_layout(run)):
            w["expert_tp"] = "1"
    if run["id"].startswith("torchtitan"):
        # the attention core: F.scaled_dot_product_attention with the flash backend first on H100, i.e.
        # FlashAttention-2 (torchtitan torchtitan/models/llama/model.py at 9dec370a: SDPA in PyTorch's default
        # order, flash first (aten/src/ATen/native/transformers/cuda/sdp_utils.cpp, priority_order);
        # torchtitan/models/attention.py at 820504e2 and e7c0cae9: FLASH_ATTENTION first, cuDNN first only on compute
        # capability 10.0 (B200), so on H100 and H200 too)
        w.update(framework="fsdp2", zero=3, grad_dtype="fp32", attention_kernel="fa2")
        # eager or torch.compile, as the run's recipe says (the benchmark tables name "torch.compile" where it ran)
        w.update(compile=int("torch.compile" in run.get("recipe", "")))
        if run["c"] > 1:
            # PyTorch's context parallel (pytorch/pytorch torch/distributed/tensor/experimental/_attention.py as read at
            # 0123248a, _templated_ring_attention_backward; the benchmark ran torch 1963fc8, not read): dK, dV accumulated in fp32 (_cp_options.convert_to_f32, True) and
            # passed on at every one of the c steps (all-to-all rotater), the last pass bringing them home: the
            # communication of cp=ring_flash_attn (axes.ring_terms); the forward's K, V all-gathered once per layer
            w["cp"] = "ring_flash_attn"
            if "9dec370a" in run.get("recipe", ""):
                # K, V at the full width h: torchtitan's Attention repeats the K, V heads to every query head
                # (repeat_kv) before F.scaled_dot_product_attention (torchtitan/models/llama/model.py at 9dec370a),
                # and context parallel replaces that SDPA call, so its ring moves the repeated K, V and returns
                # their fp32 gradients at that width (pytorch/pytorch _attention.py _templated_ring_attention:
                # torch.cat of key and value, the rotater's buffer)
                w["gqa"] = 0
        if run["p"] > 1:
            # under pipeline parallelism torchtitan keeps each stage's parameters gathered after the forward
            # (parallelize_llama.py: reshard_after_forward False when PP is on, the runs' recipe), and PyTorch's
            # pipelining runs every micro-batch's backward but the last without gradient sync, the unsharded
            # gradients accumulating, reduce-scattered once after the last (torch/distributed/pipelining/stage.py,
            # backward_maybe_with_nosync: set_requires_gradient_sync(False), set_reshard_after_backward(False))
            w.update(reshard_after_forward=0, grad_reduce="per_step", **kept_pipeline_outputs(run))
        if _loss_compiled(run):
            w["loss"] = "compiled"
        elif "torch.compile" in run["recipe"]:
            # compiled blocks, an eager loss (LOSS_COMPILED_AT): not fsdp2's default under compile=1
            w["loss"] = "eager"
    elif run["id"].startswith("llm-foundry"):
        # Composer's PyTorch FSDP (FSDP1): FULL_SHARD gathers each wrapped block for the forward and again for the
        # backward, SHARD_GRAD_OP once per micro-batch (reshard_after_forward); its DEFAULT mixed precision reduces
        # the gradients in fp32, PURE in bf16 (composer/distributed/mosaic_fsdp.py's mixed-precision modes, the
        # run's mixed_precision); MPT's attention a FlashAttention kernel at its published share (attn_impl flash:
        # FlashAttention-2; triton: FlashAttention's Triton port, llmfoundry/models/layers/flash_attn_triton.py)
        w.update(framework="fsdp", zero=3, reshard_after_forward=int(run["sharding"] == "FULL_SHARD"),
                 grad_dtype="fp32" if run["mixed_precision"] == "DEFAULT" else "same",
                 attention_kernel={"flash": "fa2", "triton": "triton"}[run["attn_impl"]])
    elif run["id"].startswith(("automodel-", "kempnerforge-")):
        # the PyTorch-native trainers (NeMo AutoModel's, KempnerForge): FSDP2 over every block, its mixed precision,
        # resharding, compile and gradient sync as the row's recipe sets them (the row's 'assumed' cites each),
        # PyTorch's ring attention for context parallelism (as torchtitan's rows)
        w.update(framework="fsdp2", zero=3, grad_dtype="fp32" if run["grad_reduce_dtype"] == "fp32" else "same",
                 compile=int(run["compile"]), grad_reduce=run["grad_reduce"])
        if "reshard_after_forward" in run:
            w["reshard_after_forward"] = int(run["reshard_after_forward"])
        if "sp_input" in run:
            w["sp_input"] = run["sp_input"]
        if "tp_embedding" in run:
            w["tp_embedding"] = run["tp_embedding"]
        if run["c"] > 1:
            w["cp"] = "ring_flash_attn"
        w.update(kept_pipeline_outputs(run))
    elif run["fsdp"]:
        # Megatron-FSDP reduces in the gradient buffer's type: the Bridge's perf recipes' grad_reduce_in_fp32 False,
        # fp32 where the row says its trainer forces it (Megatron-LM's --bf16 rule: the row's 'assumed')
        w.update(framework="megatron_fsdp", zero=3, grad_dtype="fp32" if run.get("grad_reduce_dtype") == "fp32" else "same")
    else:
        # Megatron-LM with --bf16 forces accumulate_allreduce_grads_in_fp32 (megatron/training/arguments.py at
        # f2e5db402c, validate_args), which training.py passes on as DistributedDataParallelConfig's
        # grad_reduce_in_fp32; the Bridge's perf recipes set ddp.grad_reduce_in_fp32 False
        grads = "fp32" if run["id"].startswith("megatron-lm") and run["precision"] == "bf16" else "same"
        if "grad_reduce_dtype" in run:
            # the recipe's optimizer names it (NeMo 24.07: Apex's DistributedFusedAdam reduces in its grad_sync_dtype,
            # fp32 unless set: the run's 'assumed')
            grads = "fp32" if run["grad_reduce_dtype"] == "fp32" else "same"
        w.update(framework="megatron", zero=1 if run["distributed_optimizer"] else 0, grad_dtype=grads)
    if run.get("adam_dtype", "fp32") != "fp32":
        w["adam_dtype"] = run["adam_dtype"]
    if "attention_kernel" in run:
        w["attention_kernel"] = run["attention_kernel"]
    if "loss" in run:
        # the cross-entropy the row's recipe names where it is not its framework's (the step model's loss setting)
        w["loss"] = run["loss"]
    if run.get("flash") is False:
        # an attention core that is no flash kernel (Transformer Engine's unfused core where its backend selection
        # refuses the fused and flash ones, the run's 'assumed'): the s x s scores through HBM, the whole masked matrix
        w["flash"] = 0
    if run["id"].startswith("bridge-"):
        # Megatron-Bridge's models fuse the cross-entropy (GPTModelProvider's cross_entropy_loss_fusion = True,
        # src/megatron/bridge/models/gpt_provider.py at NVIDIA-NeMo/Megatron-Bridge 067f987d) and its performance
        # scripts pick Transformer Engine's kernel (scripts/performance/utils/overrides.py there:
        # cross_entropy_fusion_impl = "te")
        w["loss"] = "te_fused"
    w.update(typed_peaks(run, "high"))
    for field, setting in OVERLAP.items():
        value = run["overlap"].get(field)
        if value is not None and not (setting == "a2a_overlap" and not moe):
            w[setting] = int(bool(value))
    if w["zero"] == 3:
        w.pop("overlap_param_gather", None)      # the per-layer gathers of FSDP: no post-step all-gather
    said = dropout(run)
    # as eval fills it: the preset's, else the setting's default
    filled = presets_model(preset_of(run)).dropout if preset_of(run) else OPTIONS["dropout"].default
    if said is not None and said != filled:
        w["dropout"] = int(said)
    return [f"{key}={value}" for key, value in w.items()]


def kept_pipeline_outputs(run: dict) -> dict:
    """pp_outputs=kept for a run under torch.distributed.pipelining (p > 1) whose trainer calls schedule.step()
    without return_outputs=False, so the last stage keeps every micro-batch's output to the step's end
    (settings.PIPELINE_OUTPUTS): every such run here predates the argument, PyTorch 2.10's (pytorch/pytorch pull
    request 165822; PyTorch 2.9, released 2025-10, has none): torchtitan's 2024-12 benchmarks (PyTorch 1963fc8,
    2024-12-23; torchtitan passes return_outputs=False from e5ef99aa, 2025-10-22) and NeMo AutoModel's rows of
    2025-10 (89e3a9fdd, 2025-10-06); {} for p = 1."""
    return {"pp_outputs": "kept"} if run["p"] > 1 else {}


#: torchtitan commits whose loss is compiled when the model is (torchtitan/components/loss.py,
#: build_cross_entropy_loss: torch.compile(loss_fn) when training.compile); at 9dec370a (the 2024-12 benchmarks)
#: train.py's loss_fn stays eager, its torch.compile commented out
LOSS_COMPILED_AT = ("820504e20d1149fbf0b98c567af24c4b0433b22d", "e7c0cae934df78d6e9c2835f42ff1f757dc3fddc")


def _loss_compiled(run: dict) -> bool:
    """Does a torchtitan run compile its loss: torch.compile in its recipe, at a commit of :data:`LOSS_COMPILED_AT`."""
    commit = run["recipe"].split(":", 1)[0].removeprefix("torchtitan@")
    return commit in LOSS_COMPILED_AT and "torch.compile" in run["recipe"]


def typed_peaks(run: dict, end: str) -> dict:
    """peak (and peak_fp8 under an FP8 precision) at the ``end`` ("low" or "high") of the bounds of a run's hardware
    whose peak no datasheet gives (torchtitan's Grand Teton H100s, ``h100-gt``), {} for any other.  A run's words
    take the high end, the H100 SXM peak, as torchtitan's own MFU figures do (its footnote 2); the checks evaluate
    the low end too (:func:`fit_step_time.check_rows`)."""
    from symcomm.presets import hardware

    bounds = {dtype: (lo, hi) for dtype, lo, hi in hardware(run["hardware"]).peak_bounds}
    if not bounds:
        return {}
    pick = 0 if end == "low" else 1
    out = {"peak": f"{bounds['bf16'][pick]:g}"}
    low = low_dtype(PRECISION[run["precision"]])
    if low is not None:
        out[f"peak_{low}"] = f"{bounds[low][pick]:g}"
    return out


def command(run: dict) -> str:
    """The command line a user types for ``run``."""
    model = f"--model {preset_of(run)} " if preset_of(run) else ""
    return f"symcomm eval hybrid {model}--hardware {run['hardware']} " + " ".join(words(run))


def approximations(run: dict) -> list[str]:
    """What ``run`` does that the step model counts another way (empty when nothing)."""
    out, model = [], run["model"]
    if run.get("cuda_graphs") not in (None, "none", ""):
        out.append(f"CUDA graphs ({run['cuda_graphs']}): kernel-launch time is not modelled")
    text = " ".join([run.get("recipe", "")] + list(run.get("assumed", [])))
    if run.get("cpu_offload_layers"):
        out.append(f"activation offloading to the CPU ({run['cpu_offload_layers']} layers): their activations counted "
                   "in host memory, the copies not timed (cpu_offload, L_off)")
    elif "offload" in text.lower():
        out.append("activation offloading to the CPU: not modelled")
    if model.get("mtp_layers"):
        how = "depths through one shared layer" if model.get("mtp_repeated") else "depth(s), each its own layer"
        out.append(f"multi-token prediction ({model['mtp_layers']} {how}) counted on the last stage; its norms, the "
                   "label shifts and the MTP loss's logging not timed")
    if run.get("layers_in_bf16"):
        out.append(f"the {run['layers_in_bf16']} layers the recipe keeps in bf16 are the model's last: counted in the "
                   "model's proportion of each block kind (bf16_layers, L_bf16)")
    modules = set(run["recompute_modules"] or []) - COUNTED_MODULES
    if run["recompute"] == "selective" and modules:
        out.append(f"recompute of {', '.join(sorted(modules))} is not counted")
    if "experts" in model and run["t"] > 1 and _etp_one_by_layout(run):
        out.append("expert_tp=1 inferred: the source leaves it unset and e ∤ d·c admits no other")
    if run["recompute"] == "op" and run["overlap"].get("tp_comm"):
        out.append("op-level checkpointing with async TP: the fused all-gather-matmul and matmul-reduce-scatter ops "
                   "are not on the op list, counted as the plain matmuls and reduce-scatters")
    if run.get("attn_impl") == "triton" and run["hardware"] not in ("a100", "a100-40gb"):
        out.append("MPT's Triton flash attention (attn_impl triton) at a share transferred from A100's chart (no "
                   "chart times it on H100: hardware.json attention_source)")
    if run["precision"] == "fp8-rowwise":
        out.append(f"torchao float8 rowwise: its casts and rescale counted at {float(ROWWISE_CAST_SHARE):g} of the HBM "
                   "bandwidth (compute.ROWWISE_CAST_SHARE), the share torchao's own per-shape table of the rowwise linear "
                   "against bf16 shows (pytorch/ao docs/static/fp8-rowwise-perf.png at fdddb2cf, Meta's H100: "
                   "symcomm.derivations.rowwise_casts; at these runs' TP 8 shapes, M 32768, K or N 1024-4096, the table "
                   "has the linear at 0.59-0.91 of bf16's speed); its GEMMs at the tensorwise FP8 rate (PyTorch's "
                   "rowwise CUTLASS kernel runs most shapes at 90-100 % of the tensorwise cuBLAS one, a tail down to "
                   "50 %: pytorch/pytorch issue 147971; what of it the table holds, the share holds)")
    if run["precision"] == "nvfp4" and "fp4_param_gather True" in run.get("recipe", ""):
        out.append("NVFP4 parameter all-gathers (fp4_param_gather): counted at the run's bf16, twice and more the "
                   "bytes they move (an FP4 gather is not modelled; they overlap the compute)")
    moe = run.get("moe") or {}
    if "experts" in model and dispatcher(run) != "alltoall_padded":
        out.append("the dropless dispatcher's host wait before every MoE layer's dispatch counted as the latency of "
                   "its token-count all-gather; the GPU's idle time while the host reads the counts and launches the "
                   "dispatch is not (no published figure)")
    if moe.get("dispatcher") == "hybridep" and "capacity factor" in (moe.get("balance") or ""):
        # moe_expert_rank_capacity_factor: HybridEP's buffers sized in advance, no host wait (token_dispatcher.py,
        # _HybridEPManager.setup_metadata)
        out.append("HybridEP with a per-rank capacity (for full-iteration CUDA graphs): its buffers sized in advance, "
                   "no host wait, counted with the dropless token-count exchange; the padding's extra rows not counted")
    if model.get("window"):
        out.append("sliding-window layers' attention counted over the full sequence")
    if (run["pipeline_layout"] or {}).get("approximated"):
        out.append(run["pipeline_layout"]["approximated"])
    return out


def inputs(run: dict, fitting: bool = True):
    """The step model's inputs for ``run`` through ``eval hybrid``'s own binding (``fitting``: the fit supplies
    the constants a preset may not have yet, as eta_fp8 before the first FP8 fit)."""
    from symcomm.training.answers import step_inputs

    args = SimpleNamespace(name="hybrid", assignments=words(run), dtype=None, backend=None,
                           model=preset_of(run), model_config=None, hardware=run["hardware"],
                           algorithm=None)
    return step_inputs(args, fitting)


def source_of(run: dict) -> str:
    if run["id"].startswith("llm-foundry"):
        return f"llm-foundry {run['release']}"
    if run["id"].startswith("dgxc-"):
        return f"dgxc-benchmarking {run['release']}"
    if run["id"].startswith("megatron-lm-tests-"):
        return "megatron-lm tests"
    if run["id"].startswith("megatron-lm"):
        return "megatron-lm README"
    if run["id"].startswith("nemo-"):
        return f"nemo {run['release']}"
    if run["id"].startswith("automodel-"):
        return f"nemo-automodel {run['release']}"
    if run["id"].startswith("kempnerforge-"):
        return f"kempnerforge {run['release']}"
    if run["id"].startswith("modelzoo-"):
        return f"megatron-moe-modelzoo {run['release']}"
    return "torchtitan" if run["id"].startswith("torchtitan") else f"megatron-bridge {run['release']}"


def framework_of(run: dict) -> str:
    if run["id"].startswith("torchtitan"):
        return "torchtitan (FSDP2)"
    if run["id"].startswith("llm-foundry"):
        return "LLM Foundry (FSDP)"
    if run["id"].startswith("automodel-"):
        return "AutoModel (FSDP2)"
    if run["id"].startswith("kempnerforge-"):
        return "KempnerForge (FSDP2)"
    return "Megatron-FSDP" if run["fsdp"] else "Megatron-Core"


def measured_runs(hardware: str, role: str = "fit") -> tuple[list, dict]:
    """(the in-scope runs of one hardware preset as the fitting core reads them, run id → why one in scope does
    not evaluate).  The same layout measured in several releases (the same command) is one run: the median of
    its measurements (the fitting core refuses a run given twice), its id the ids joined by "+"."""
    from statistics import median

    from symcomm.base.errors import InputError
    from symcomm.measurement.step_fit import MeasuredRun
    from symcomm.training import steptime

    groups: dict = {}
    for r in runs(role):
        if r["hardware"] == hardware and out_of_scope(r) is None:
            groups.setdefault(command(r), []).append(r)
    out, not_evaluated = [], {}
    for same in groups.values():
        first = same[0]
        try:
            bound = inputs(first)
            steptime.step_model(bound.run_bytes, **bound.options)    # a rule only the model checks refuses here
        except InputError as err:
            not_evaluated.update({r["id"]: str(err) for r in same})
            continue
        out.append(MeasuredRun("+".join(r["id"] for r in same), bound,
                               float(median(r["step_time_s"] for r in same)), source_of(first), framework_of(first)))
    return out, not_evaluated
