"""What of Megatron-Core's own features a run setting may combine: the hybrid Mamba models (mamba, moe_latent),
the first/last layers in bf16, multi-token prediction (mtp) and the selective recompute modules (recompute_mla_up,
recompute_<module>), each with the one-line refusal :class:`symcomm.training.settings.RunSetting` raises for a
combination that has no meaning or is not modelled.  Each function reads a setting's typed fields only, so this
module imports nothing of the package but tp_plans, which imports nothing (settings.py re-exports its names).  SymPy-free: the planner imports it.
"""

from __future__ import annotations

from .tp_plans import TE_FRAMEWORKS


#: the frameworks that run Megatron-Core's own modules (its TE layer spec, hybrid model, MTP block): Megatron-LM's
#: distributed optimizer and Megatron-FSDP (symcomm.training.frameworks)
MEGATRON_CORE = TE_FRAMEWORKS

#: what mamba=1 counts: Megatron-Core's hybrid model (MambaMixer, its attention and MoE layers) with the recompute
#: modes whose saved bytes are counted per block kind; a full or block recompute's working set, MLA, PyTorch's fsdp2
#: (torchtitan has no Mamba layers) and DeepSpeed are not
MAMBA_FRAMEWORKS = MEGATRON_CORE
MAMBA_RECOMPUTE = ("none", "selective")


def bf16_layers_refusal(setting) -> str | None:
    """Why ``setting``'s bf16_layers=1 has no meaning, or None: under bf16 every layer is bf16 already."""
    if setting.bf16_layers and setting.precision == "bf16":
        return "bf16_layers=1 needs a low precision (precision other than bf16): under bf16 every layer is bf16"
    return None


def mla_up_refusal(setting) -> str | None:
    """Why ``setting``'s recompute_mla_up=1 has no meaning, or None: it needs MLA, and a recompute that does not rerun
    the whole layer."""
    if setting.recompute_mla_up and (setting.attention != "mla" or setting.recompute not in ("none", "selective")):
        return ("recompute_mla_up=1 needs attention=mla and recompute=none or selective (Megatron-Core's mla_up_proj "
                "module; full recompute reruns the whole layer)")
    return None


#: Megatron-Core's CPU offloading of activations (--cpu-offloading, --cpu-offloading-num-layers): Transformer Engine's
#: get_cpu_offload_context around each layer; refused with pipeline parallelism and with any activation recompute
CPU_OFFLOAD_SOURCE = ("Megatron-LM megatron/core/transformer/transformer_config.py at d98e8a64 (cpu_offloading: "
                      "'no support for Pipeline parallelism with CPU offloading', 'CPU offloading does not work when "
                      "activation recomputation is enabled', cpu_offloading_num_layers < num_layers), "
                      "transformer_block.py (get_cpu_offload_context)")


def cpu_offload_refusal(setting) -> str | None:
    """Why ``setting``'s cpu_offload=1 has no meaning here, or None (:data:`CPU_OFFLOAD_SOURCE`; p = 1 and L_off < L
    are rules on the numbers: symcomm.training.hybrid)."""
    if not setting.cpu_offload:
        return None
    if setting.framework not in MEGATRON_CORE:
        return (f"cpu_offload=1 with framework={setting.framework} is not modelled: it is Megatron-Core's activation "
                f"offloading; choose framework={' or '.join(MEGATRON_CORE)}")
    if setting.recompute != "none" or setting.modules or setting.recompute_mla_up:
        return ("cpu_offload=1 needs recompute=none and no recompute module: Megatron-Core refuses CPU offloading "
                "with activation recomputation (transformer_config.py)")
    return None


#: the MTP settings: none; 1, each of the D_mtp depths its own layer (Megatron-Core's default); shared, one layer run
#: D_mtp times (mtp_use_repeated_layer, Megatron-Bridge's Nemotron 3 Super recipe)
MTP_KINDS = ("0", "1", "shared")
#: the frameworks whose multi-token prediction the step model counts: Megatron-Core's MultiTokenPredictionBlock
MTP_FRAMEWORKS = MEGATRON_CORE


def mtp_refusal(setting) -> str | None:
    """Why ``setting``'s mtp (multi-token prediction) has no meaning here, or None: it is Megatron-Core's, its depths
    share the model's output head (embeddings=1), the hybrid's MTP block is counted as Nemotron 3 Super's '*E'
    (an attention and an expert block: moe=1), and op recompute is torchtitan's."""
    if setting.mtp == "0":
        return None
    if setting.framework not in MTP_FRAMEWORKS:
        return (f"mtp={setting.mtp} with framework={setting.framework} is not modelled: multi-token prediction is "
                f"Megatron-Core's; choose framework={' or '.join(MTP_FRAMEWORKS)} or mtp=0")
    if not setting.embeddings:
        return (f"mtp={setting.mtp} needs embeddings=1: each depth reads the embedding and the shared output head; "
                "give embeddings=1 or mtp=0")
    if setting.mamba and not setting.moe:
        return (f"mtp={setting.mtp} with mamba=1 needs moe=1: the hybrid's MTP block is counted as Nemotron 3 Super's "
                "'*E' (an attention block and an expert block); give moe=1 or mtp=0")
    return None


#: Megatron-Core's selective recompute modules beside core_attn and mla_up_proj, each a flag recompute_<module> (its
#: name in --recompute-modules): what each needs of the setting, in its refusal's words.  Only layers whose module
#: exists run it (transformer_layer.py at d98e8a64: "mlp" only where the layer is not an MoE layer; "layernorm" only a
#: norm that is not an IdentityOp, i.e. not fused into the next linear by the TE spec: the MoE layers' pre_mlp_layernorm
#: and MLA's input_layernorm, gpt_layer_specs.py and models/hybrid/hybrid_layer_specs.py)
RECOMPUTE_MODULES = {"moe_act": "moe=1",
                     "layernorm": "moe=1 or attention=mla (the TE spec fuses every other norm into its linear)",
                     "mlp": "mamba=0 (a hybrid Mamba model's dense MLP blocks are not counted)",
                     "moe": "moe=1"}


def _module_runs(setting, module: str) -> bool:
    """Does ``setting`` hold layers that run ``module`` (:data:`RECOMPUTE_MODULES`' needs)?"""
    if module == "layernorm":
        return setting.moe or setting.attention == "mla"
    if module == "mlp":
        return not setting.mamba
    return setting.moe


def recompute_modules_refusal(setting) -> str | None:
    """Why one of ``setting``'s recompute_<module> flags (:data:`RECOMPUTE_MODULES`) has no meaning, or None: each
    needs its layers and a recompute that does not rerun the whole layer (Megatron-Core reads the modules only under
    selective granularity; recompute=none here is that granularity without core_attn), and moe_act and layernorm a
    recipe other than delayed scaling, which Megatron-Core refuses for them."""
    for module, needs in RECOMPUTE_MODULES.items():
        if not getattr(setting, f"recompute_{module}"):
            continue
        if setting.recompute not in ("none", "selective"):
            return (f"recompute_{module}=1 needs recompute=none or selective (Megatron-Core's {module} module; "
                    f"recompute={setting.recompute} reruns the whole layer)")
        if not _module_runs(setting, module):
            return f"recompute_{module}=1 needs {needs}: Megatron-Core's {module} module"
        if module in ("moe_act", "layernorm") and setting.precision == "fp8_delayed":
            # transformer_config.py at d98e8a64: "Delayed scaling does not support moe_act and layernorm recompute"
            return (f"recompute_{module}=1 needs a precision other than fp8_delayed: Megatron-Core refuses the {module} "
                    "module under delayed scaling")
    return None


def mamba_refusal(setting) -> str | None:
    """Why ``setting``'s mamba=1 has no meaning here, or None (:data:`MAMBA_FRAMEWORKS`, :data:`MAMBA_RECOMPUTE`)."""
    if setting.moe_latent and not (setting.mamba and setting.moe):
        return ("moe_latent=1 needs mamba=1 and moe=1: LatentMoE is counted on the hybrid Mamba models' MoE blocks "
                "(Nemotron 3 Super); give moe_latent=0")
    if not setting.mamba:
        return None
    if setting.framework not in MAMBA_FRAMEWORKS:
        return (f"mamba=1 with framework={setting.framework} is not modelled: the hybrid Mamba layers are Megatron-Core's; "
                f"choose framework={' or '.join(MAMBA_FRAMEWORKS)}")
    if setting.recompute not in MAMBA_RECOMPUTE:
        return (f"recompute={setting.recompute} with mamba=1 is not modelled (the hybrid's recompute working set per "
                f"block kind is not counted); choose recompute={' or '.join(MAMBA_RECOMPUTE)}")
    if setting.attention == "mla":
        return "attention=mla with mamba=1 is not modelled: the hybrid's attention layers are multi-/grouped-query; give attention=mha"
    return None


#: the precision recipes Megatron-Core runs through Transformer Engine (transformer_engine/common/recipe/__init__.py at
#: d0067d0d: DelayedScaling, Float8CurrentScaling, Float8BlockScaling, MXFP8BlockScaling, NVFP4BlockScaling); TE has
#: no row-wise FP8 recipe, so fp8_rowwise, torchao's float8 rowwise, is not one of them
TE_PRECISIONS = ("bf16", "fp8_delayed", "fp8_tensor", "fp8_block", "mxfp8", "nvfp4")


def te_precision_refusal(setting) -> str | None:
    """Why ``setting``'s precision has no meaning under a Megatron-Core framework, or None (:data:`TE_PRECISIONS`)."""
    if setting.framework in MEGATRON_CORE and setting.precision not in TE_PRECISIONS:
        return (f"precision={setting.precision} with framework={setting.framework} is not run: it is torchao's float8 "
                "row-wise recipe (framework=fsdp2), and Megatron-Core's Transformer Engine has no row-wise FP8 recipe; "
                f"choose precision={', '.join(p for p in TE_PRECISIONS if p != 'bf16')} or bf16")
    return None


#: Transformer Engine's fused MoE grouped MLP, which Megatron-Core runs through its op fuser
#: (use_transformer_engine_op_fuser, moe_mlp_glu_interleave_size 32) and Megatron-Bridge's performance recipes switch
#: on as cutedsl_fused_grouped_mlp (scripts/performance/utils/overrides.py and perf_plugins.py at fcbb6031:
#: NVTE_CUTEDSL_FUSED_GROUPED_MLP=1): the experts' FC1 grouped GEMM, the SwiGLU and the MXFP8 quantization of its
#: output in one kernel, and in the backward FC2's input-gradient grouped GEMM, the SwiGLU's backward and the
#: quantization of FC1's output gradient in one (NVIDIA/TransformerEngine transformer_engine/pytorch/ops/fused/
#: forward_grouped_mlp.py and backward_grouped_mlp.py at 29a8c2fe); fused only on compute capability 10.x, under the
#: MXFP8 recipe, for GroupedLinear + ScaledSwiGLU + GroupedLinear whose four dimensions are multiples of 256
#: (ops/_common.py, fuse_grouped_mlp_ops)
FUSED_GROUPED_MLP_SOURCE = ("Transformer Engine transformer_engine/pytorch/ops/fused/forward_grouped_mlp.py, "
                            "backward_grouped_mlp.py and ops/_common.py (fuse_grouped_mlp_ops) at 29a8c2fe; "
                            "Megatron-Bridge scripts/performance/utils/overrides.py at fcbb6031 "
                            "(cutedsl_fused_grouped_mlp)")
#: the multiple every dimension of the two grouped GEMMs must be for Transformer Engine to fuse them
FUSED_GROUPED_MLP_ALIGN = 256


def fused_grouped_mlp_refusal(setting) -> str | None:
    """Why ``setting``'s fused_grouped_mlp=1 has no meaning here, or None (:data:`FUSED_GROUPED_MLP_SOURCE`): it is a
    Megatron-Core feature for gated (SwiGLU) routed experts under the MXFP8 recipe; LatentMoE's experts, layers kept in
    bf16 (bf16_layers) and the moe_act recompute (which checkpoints the separate activation the kernel replaces) are not modelled with it.  The
    compute capability is the recipe's own rule (mxfp8 runs on 10.x only here); the shape rule
    (:func:`fused_grouped_mlp_shape_refusal`) needs the model."""
    if not setting.fused_grouped_mlp:
        return None
    if setting.framework not in MEGATRON_CORE:
        return (f"fused_grouped_mlp=1 with framework={setting.framework} is not run: it is Transformer Engine's fused "
                f"grouped MLP as Megatron-Core's op fuser runs it; choose framework={' or '.join(MEGATRON_CORE)}")
    if not setting.moe or not setting.gated or setting.moe_latent:
        return ("fused_grouped_mlp=1 needs moe=1 and gated=1 (SwiGLU experts) without moe_latent: Transformer Engine "
                "fuses GroupedLinear + ScaledSwiGLU + GroupedLinear only; give fused_grouped_mlp=0")
    if setting.precision != "mxfp8":
        return (f"fused_grouped_mlp=1 needs precision=mxfp8 (Transformer Engine fuses the grouped MLP under the MXFP8 "
                f"recipe only), not {setting.precision}; give fused_grouped_mlp=0")
    if setting.bf16_layers:
        return ("fused_grouped_mlp=1 with bf16_layers=1 is not modelled: the layers kept in bf16 run their experts "
                "unfused (Transformer Engine fuses under the MXFP8 recipe only); give one of them")
    if setting.recompute_moe_act:
        return ("fused_grouped_mlp=1 with recompute_moe_act=1 is not modelled: the fused kernel makes the activation "
                "the moe_act checkpoint reruns; give one of them")
    return None


#: Megatron-Core's flex token dispatcher (MoEFlexTokenDispatcher, token_dispatcher.py) by its backends, fused_a2a.py's
#: DeepEP and HybridEP: a token crosses the network once per destination node, and with t > 1 only at expert_tp=1
FLEX_DISPATCHERS = ("deepep", "hybridep")
#: the expert tensor-parallel size each ``expert_tp`` setting names, by its symbol's name (None: one rank): tp the TP
#: size t (Megatron-Core's default), t_e its own (symcomm.training.hybrid.expert_tp_size, MEGATRON_EXPERT_GRID)
EXPERT_TP_SIZE = {"tp": "t", "1": None, "t_e": "t_e"}


def fused_grouped_mlp_shape_refusal(step_options: dict, options: dict, numbers: dict) -> str | None:
    """Why Transformer Engine would not fuse the grouped MLP of a run asking for it (``step_options``
    fused_grouped_mlp=1) at its sizes (``numbers``: h, F_e, t, t_e), or None: FC1 (h → 2F_e) and FC2 (F_e → h), F_e split
    over t under ``options``' expert_tp=tp (over t_e under t_e), each dimension a multiple of :data:`FUSED_GROUPED_MLP_ALIGN` (ops/_common.py at
    29a8c2fe, fuse_grouped_mlp_ops; gpt-oss's h = 2880 is not).  Both eval paths ask it once the model's shape is
    known."""
    if not step_options.get("fused_grouped_mlp") or "F_e" not in numbers:
        return None
    size = EXPERT_TP_SIZE.get(str(options.get("expert_tp", "tp")))
    split = round(numbers.get(size, 1)) if size else 1
    hidden, expert_ffn = round(numbers["h"]), round(numbers["F_e"])
    if split < 1 or expert_ffn % split:
        return None     # the hybrid's own rules on t and F_e refuse it
    widths = {"h": hidden, "2F_e" + ("/t" if split > 1 else ""): 2 * expert_ffn // split,
              "F_e" + ("/t" if split > 1 else ""): expert_ffn // split}
    off = [f"{name} = {value}" for name, value in widths.items() if value % FUSED_GROUPED_MLP_ALIGN]
    if not off:
        return None
    return (f"fused_grouped_mlp=1: Transformer Engine fuses the grouped MLP only when every dimension of its GEMMs is a "
            f"multiple of {FUSED_GROUPED_MLP_ALIGN}, and here {', '.join(off)} {'is' if len(off) == 1 else 'are'} not "
            "(ops/_common.py, "
            "fuse_grouped_mlp_ops): it runs unfused; give fused_grouped_mlp=0")


#: the heads a layout splits: Megatron-Core refuses attention heads that t does not divide and K/V heads (query groups)
#: that t neither divides nor is a multiple of (transformer_config.py at d98e8a64, TransformerConfig.__post_init__; in
#: the latter case it replicates them, which the step model, splitting K and V over t, does not count), and Ulysses'
#: all-to-all scatters each tensor-parallel rank's a/t heads over the c ranks; the planner keeps only such layouts
#: (planner/request.py _tensor_sizes, planner/layouts.py)
HEAD_SPLIT_SOURCE = "Megatron-LM megatron/core/transformer/transformer_config.py at d98e8a64 (TransformerConfig.__post_init__)"


def head_split_refusal(options: dict, numbers: dict) -> str | None:
    """Why the model's heads cannot be split as ``numbers``' layout asks (a, h, h_kv, h_q, t, c: the model's shape
    known), or None (:data:`HEAD_SPLIT_SOURCE`); eval's two paths ask it as plan's search rules them out."""
    if "a" not in numbers or "t" not in numbers:
        return None
    heads, t = numbers["a"], numbers["t"]
    if not (float(heads).is_integer() and float(t).is_integer() and heads >= 1 and t >= 1):
        return None     # the binding's own rules refuse these
    heads, t = int(heads), int(t)
    if heads % t:
        return (f"t={t} does not divide the model's a={heads} attention heads: each tensor-parallel rank holds a/t whole "
                f"heads ({HEAD_SPLIT_SOURCE}); give t dividing {heads}")
    kv = _kv_heads(options, numbers, heads)
    if kv is not None and kv % t:
        return (f"t={t} does not divide the model's {kv} K/V heads (h_kv = {numbers['h_kv']:g} over head "
                f"dimension {_head_dim(numbers, heads):g}): the step model splits K and V over the tensor-parallel "
                f"ranks, and Megatron-Core's replication of K/V heads fewer than t is not counted; give t dividing {kv}")
    if str(options.get("cp", "ring")) == "ulysses" and "c" in numbers and float(numbers["c"]).is_integer():
        c = int(numbers["c"])
        if c >= 1 and (heads // t) % c:
            return (f"cp=ulysses with c={c}: its all-to-all scatters each tensor-parallel rank's a/t = {heads // t} "
                    f"heads over the c ranks, so c must divide {heads // t}")
        if c >= 1 and kv is not None and (kv // t) % c:
            return (f"cp=ulysses with c={c}: its all-to-all scatters each tensor-parallel rank's K/V heads, "
                    f"{kv // t} of the model's {kv}, over the c ranks, so c must divide {kv // t} ({ULYSSES_HEADS_SOURCE})")
    return None


#: Transformer Engine's all-to-all context parallelism asks every head count to divide over the CP ranks
ULYSSES_HEADS_SOURCE = ("NVIDIA/TransformerEngine transformer_engine/pytorch/attention/dot_product_attention/"
                        "context_parallel.py at d0067d0d: cp_comm_type='a2a' requires num_heads % cp_size == 0 for Q, "
                        "K, V")


def _kv_heads(options: dict, numbers: dict, heads: int) -> int | None:
    """The model's K/V heads (h_kv over its head dimension), or None where its shape does not give a whole number
    (MLA, or no h_kv)."""
    if str(options.get("attention", "mha")) == "mla" or "h_kv" not in numbers or "h" not in numbers:
        return None
    kv = numbers["h_kv"] / _head_dim(numbers, heads)
    return round(kv) if abs(kv - round(kv)) < 1e-9 and round(kv) >= 1 else None


def _head_dim(numbers: dict, heads: int) -> float:
    """One attention head's width: the query width (h_q where the heads are not h wide in all) over the heads."""
    return (numbers["h_q"] if "h_q" in numbers else numbers["h"]) / heads


def whole_numbers(numbers: dict, *names: str) -> tuple | None:
    """The values of ``names`` in ``numbers`` as ints where each is there and a whole number ≥ 1, else None: what the
    notes of a layout read (they say nothing of a layout that is not all whole numbers)."""
    try:
        values = tuple(numbers[n] for n in names)
        if all(float(x).is_integer() and x >= 1 for x in values):
            return tuple(int(x) for x in values)
    except (KeyError, TypeError, ValueError):
        pass
    return None


def group_spans(t, c, d, e, expert_span) -> tuple:
    """Each parallel group as (axis, ranks in a group, the block of consecutive ranks its groups interleave in), in
    Megatron's rank order (tp innermost, then cp, dp with ep inside it); numbers or numpy arrays alike (``expert_span``
    the expert group's block, e·etp where e > 1, else 1)."""
    return (("tensor-parallel", t, t), ("context-parallel", c, t * c), ("data-parallel", d, t * c * d),
            ("expert-parallel", e, expert_span))


def straddles(span, g, gpus):
    """Whether groups whose blocks are ``span`` consecutive ranks straddle the NVLink domains of ``g`` of ``gpus``
    GPUs: 1 < span ≤ g < gpus with g not a multiple of span (numbers or numpy arrays alike)."""
    return (span > 1) & (span <= g) & (g < gpus) & (g % span != 0)


def straddle_note(options: dict, numbers: dict) -> str | None:
    """What eval says where a parallel group's ranks, laid out in Megatron's rank order (tp innermost, then cp, dp with
    ep inside it, pp), do not tile the NVLink domains of G GPUs: a group of S ≤ G ranks with G not a multiple of S
    straddles two domains somewhere (a block of S ranks starting S·j crosses the boundary at G), so part of its
    traffic crosses the network, where the step model prices every such group inside one domain (symcomm.training.axes:
    a group spans nodes once its ranks exceed G).  None where every group tiles the domains, or the layout is not all
    whole numbers."""
    # a dense model has no e: its expert-parallel size is 1, and its other groups straddle all the same
    found = whole_numbers({"e": 1, **numbers}, "t", "c", "d", "p", "e", "G")
    if found is None:
        return None
    t, c, d, p, e, g = found
    gpus = t * c * d * p
    etp = 1 if str(options.get("expert_tp", "tp")) == "1" else t
    straddling = [(axis, size, span) for axis, size, span in group_spans(t, c, d, e, e * etp if e > 1 else 1)
                  if straddles(span, g, gpus)]
    if not straddling:
        return None
    said = ", ".join(f"the {axis} groups of {span} ranks" if size == span else
                     f"the {axis} groups of {size} ranks (interleaved in blocks of {span} consecutive ranks)"
                     for axis, size, span in straddling)
    return (f"{said} do not tile the NVLink domains of G={g} GPUs in Megatron's rank order: some straddle two domains "
            f"and send part of their traffic over the network, which the step model does not price (it prices each "
            f"such group inside one domain); where the job is placed so that each domain holds a multiple of those "
            f"ranks, type that G")


def schedule_refusal(options: dict, numbers: dict) -> str | None:
    """Why a layout's v cannot be read, or None: v > 1 is the interleaved schedule's model chunks per pipeline stage,
    which the 1f1b and gpipe schedules do not run (Megatron-Core's virtual pipeline is its interleaved schedule), so a
    recipe's v typed without schedule=interleaved would be priced as one chunk per stage."""
    schedule = str(options.get("schedule", "1f1b"))
    if "v" in numbers and float(numbers["v"]) == 1 and schedule == "interleaved":
        # one chunk a stage is no interleaving: Megatron-LM's arguments.py takes a virtual pipeline size of 1 as none
        # and runs 1F1B, raw Megatron-Core the interleaved code with one chunk (2p - 1 micro-batches in flight)
        return ("schedule=interleaved with v=1 runs one model chunk a stage, which Megatron-LM (arguments.py: a "
                "virtual pipeline size of 1 is taken as none) runs as 1F1B: give schedule=1f1b, or v of 2 or more")
    if "v" not in numbers or float(numbers["v"]) <= 1:
        return None
    if schedule == "interleaved":
        return None
    return (f"v={float(numbers['v']):g} is the interleaved schedule's model chunks per pipeline stage, but schedule="
            f"{schedule} runs one chunk a stage: give schedule=interleaved with v, or leave v out")


#: Megatron-Core's group-limited routing: each group's best k/g experts score it, and the k come from the g groups
#: kept, so a group holds at least k/g experts and the g groups at least k
GROUP_TOPK_SOURCE = "Megatron-LM megatron/core/transformer/moe/moe_utils.py (group_limited_topk: topk(k // g) in each group)"
#: what Megatron-Core asserts of --overlap-moe-expert-parallel-comm
A2A_OVERLAP_ASSERTS = "Megatron-LM megatron/core/transformer/transformer_config.py (overlap_moe_expert_parallel_comm)"


#: Megatron-Core's flex dispatcher (DeepEP, HybridEP) runs over the expert-TP × expert-parallel group and asserts it is
#: wider than one rank
FLEX_DISPATCH_ASSERTS = ("Megatron-LM megatron/core/transformer/moe/token_dispatcher.py (MoEFlexTokenDispatcher.__init__:"
                         " 'Flex token dispatcher requires TPxEP > 1')")


def flex_dispatch_refusal(options: dict, numbers: dict) -> str | None:
    """Why the flex dispatcher cannot run the layout, or None: it needs expert-TP × e > 1 (:data:`FLEX_DISPATCH_ASSERTS`),
    and symcomm runs it with an expert TP size of 1, so e ≥ 2 (e = 1 was priced as a dispatch no run makes)."""
    if options.get("moe") not in (True, "1", 1) or str(options.get("dispatcher")) not in ("deepep", "hybridep"):
        return None
    if "e" in numbers and float(numbers["e"]) == 1:
        return (f"dispatcher={options.get('dispatcher')} with e=1 is refused: Megatron-Core's flex dispatcher needs an "
                f"expert-parallel group of 2 or more ranks ({FLEX_DISPATCH_ASSERTS}); give e ≥ 2 or "
                "dispatcher=alltoall")
    return None


def bf16_count_refusal(options: dict, numbers: dict) -> str | None:
    """Why bf16_layers=1's L_bf16 cannot be read, or None: the layers kept in bf16 are among the model's L
    (Megatron-Core's --num-layers-at-start-in-bf16 and --num-layers-at-end-in-bf16, transformer_config.py at
    d98e8a64); more made the FP8 layers' share negative and the step time grow without bound."""
    if str(options.get("bf16_layers", "0")) not in ("1", "True") or "L_bf16" not in numbers or "L" not in numbers:
        return None
    if float(numbers["L_bf16"]) > float(numbers["L"]):
        return (f"L_bf16={float(numbers['L_bf16']):g} must be at most L={float(numbers['L']):g}: the layers kept in "
                "bf16 are among the model's layers")
    return None


def router_capacity_refusal(options: dict, numbers: dict) -> str | None:
    """Why group-limited routing cannot route a token to its k experts, or None: router_groups=G cuts the E experts
    into groups of E/G, of which router_group_topk=g are kept, each group scored by its best k/g experts
    (:data:`GROUP_TOPK_SOURCE`), so E/G ≥ k/g and g·E/G ≥ k (an outsider's G=128, g=1 for Qwen3-30B-A3B's 128
    experts and k = 8 was priced 13 % faster, one copy per token)."""
    if options.get("moe") not in (True, "1", 1):
        return None
    found = whole_numbers({**numbers, "G_r": float(options.get("router_groups", 1) or 1),
                           "g_r": float(options.get("router_group_topk", 1) or 1)}, "E", "k", "G_r", "g_r")
    if found is None or found[2] <= 1:
        return None
    experts, k, groups, kept = found
    if experts % groups:
        return None     # E | router_groups: the hybrid's own rule says so
    per_group = experts // groups
    if per_group < k // kept or per_group * kept < k:
        return (f"router_groups={groups} with router_group_topk={kept} keeps {kept} group(s) of E/{groups} = {per_group} "
                f"experts, {per_group * kept} in all, for k={k} experts a token, {k // kept} from each group: give "
                f"fewer groups or more kept ({GROUP_TOPK_SOURCE})")
    return None


def a2a_overlap_refusal(step_texts: dict, options: dict, numbers: dict) -> str | None:
    """Why Megatron-Core refuses a2a_overlap=1 on this layout, or None (:data:`A2A_OVERLAP_ASSERTS`): it needs expert
    parallelism (e > 1), the interleaved schedule when p > 1, no full or block recompute and no recompute of the MoE
    module, an all-to-all or flex dispatcher, and at most one MTP layer."""
    if step_texts.get("a2a_overlap") is not True or str(options.get("framework", "megatron")) != "megatron":
        return None
    said = []
    if float(numbers.get("e", 1)) <= 1:
        said.append("expert parallelism (e > 1)")
    if float(numbers.get("p", 1)) > 1 and str(options.get("schedule", "1f1b")) != "interleaved":
        said.append("the interleaved schedule when p > 1 (a virtual pipeline size)")
    if str(options.get("recompute", "none")) in ("full", "block"):
        said.append(f"no recompute={options.get('recompute')} (recompute_granularity full, a recompute method)")
    if options.get("recompute_moe") in (True, "1", 1):
        said.append("no recompute_moe (moe in recompute_modules)")
    if str(options.get("dispatcher", "alltoall")) == "allgather":
        said.append("an all-to-all or flex dispatcher, not allgather")
    if str(options.get("mtp", "0")) != "0" and float(numbers.get("D_mtp", 1)) > 1:
        said.append("at most one MTP layer (D_mtp ≤ 1)")
    if not said:
        return None
    return f"a2a_overlap=1 needs {'; '.join(said)}: Megatron-Core asserts it ({A2A_OVERLAP_ASSERTS})"


def routing_note(options: dict) -> str | None:
    """What eval says where group-limited routing is typed beside a dispatcher that sends every routed copy: the
    groups change which GPUs or nodes a token's k experts sit on (symcomm.training.routing), which only the dispatchers
    sending a token once per place count (:data:`FLEX_DISPATCHERS`); Megatron's all-to-all and all-gather dispatchers
    send each of the k copies, so the groups change nothing there.  None otherwise."""
    groups = str(options.get("router_groups", "1"))
    if options.get("moe") not in (True, "1", 1) or groups in ("1", "") or str(options.get("dispatcher", "alltoall")) in \
            FLEX_DISPATCHERS:
        return None
    return (f"router_groups={groups}: group-limited routing changes which places a token's experts sit on, which "
            f"only a dispatcher sending a token once per GPU or node counts ({', '.join(FLEX_DISPATCHERS)}); "
            f"dispatcher={options.get('dispatcher', 'alltoall')} sends each routed copy, so the groups change nothing "
            "in its step")


#: the frameworks that run recompute=op: torchtitan's (framework=fsdp2) op-level selective checkpointing
#: (activation_checkpoint.mode selective, selective_ac_option op: torchtitan/parallelisms/parallelize_llama.py at 9dec370a)
OP_FRAMEWORKS = ("fsdp2",)


def op_framework_refusal(framework: str) -> str | None:
    """Why ``framework`` does not run recompute=op, or None (:data:`OP_FRAMEWORKS`): Megatron's selective recompute is
    the attention core's (recompute=selective), DeepSpeed's and FSDP's checkpointing whole blocks (recompute=full).
    plan refuses it under a fixed framework and leaves it out of its search; eval, where framework=megatron is also
    the default beside the generic op-level count the strategies' formulas take, prices it as asked and says so."""
    if framework in OP_FRAMEWORKS:
        return None
    return (f"recompute=op with framework={framework} is not run: it is torchtitan's op-level selective "
            "checkpointing (framework=fsdp2); give recompute=selective, full or none")


def selective_framework_note(framework: str, recompute: str) -> str | None:
    """What eval says of recompute=selective under a framework whose own selective checkpointing is op-level
    (:data:`OP_FRAMEWORKS`: torchtitan's activation_checkpoint.mode selective): the setting is Megatron's, the
    attention core's scores recomputed, which keeps every other activation (with flash attention, as much as none)."""
    if recompute != "selective" or framework not in OP_FRAMEWORKS:
        return None
    return (f"recompute=selective is Megatron's selective recompute (the attention core's scores recomputed; with "
            f"flash attention it keeps every activation recompute=none keeps); torchtitan's selective activation "
            f"checkpointing (framework={framework}) is op-level: give recompute=op for it")
