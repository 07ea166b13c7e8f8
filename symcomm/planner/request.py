"""What ``symcomm plan`` is asked: the :class:`Request`, its checks (every option bounded, every fixed choice
one that can occur, ``--compare``), and the options table the command's parser and the Python API
(``symcomm.plan``) both fill, read by :func:`request_from_args` for both."""

from __future__ import annotations

import math
import types
from dataclasses import dataclass

import numpy as np

from ..base import notes
from ..base.errors import InputError
from ..base.inputs import parse_real, parse_whole
from ..base.units import bytes_per_element
from ..presets.fit_errors import at_high_end
from ..presets.hardware_values import declared_wiring_note, low_dtype_note, mesh_board_note, uncounted_plan_refusal
from ..training import frameworks as _frameworks
from ..training import settings
from ..training.megatron_features import op_framework_refusal, router_capacity_refusal, routing_note
from ..training.words import api_word

#: the data-parallel schemes searched (symcomm.training.frameworks.Scheme: framework, ZeRO stage, reshard_after_forward,
#: name), each framework's own in its row of symcomm.training.frameworks.FRAMEWORKS and run the way that framework
#: runs it (symcomm.training.axes.data_schedule): Megatron's DDP and distributed optimizer reduce once per step;
#: DeepSpeed ZeRO-2 reduces every micro-batch, ZeRO-3 also gathers in every forward and backward; FSDP
#: FULL_SHARD and SHARD_GRAD_OP (reshard_after_forward=0) reduce every micro-batch
SCHEMES = _frameworks.SCHEMES
FRAMEWORKS = tuple(_frameworks.FRAMEWORKS)
ZERO_STAGES = (0, 1, 2, 3)
#: the recompute modes searched unless --recompute fixes one (0 and 1: aliases of none and full): op (torchtitan's
#: op-level selective checkpointing) is searched only when asked for, so the kernels a plan builds (and
#: tools.codegen ships) stay three per combination and a cold plan builds none more (settings.RECOMPUTE has all)
RECOMPUTE = tuple(mode for mode in settings.RECOMPUTE if mode != "op")
SP_CHOICES = (False, True)
CP_ALGORITHMS = ("ring", "ulysses")
#: micro-batch sizes searched unless --micro-batch: the divisors of the per-replica batch up to this
MICRO_BATCH_SEARCH = 8
#: the keys of --compare
COMPARE_KEYS = ("t", "p", "v", "c", "e", "d", "mb", "zero", "framework", "raf", "recompute", "sp")


class PlanError(InputError):
    """An impossible request: one line naming the parameter."""


#: the run settings (symcomm.training.settings.OPTIONS) a request may fix; None = searched
FIXED_SETTINGS = ("zero", "framework", "recompute", "sp")
#: the run settings plan is given and never searches, each read by the one Option eval reads it with
GIVEN_SETTINGS = ("dispatcher", "router_groups", "router_group_topk", "precision", "attention_kernel", "nvlink")


def _resolve(name: str, value, label: str):
    """The typed value of one run setting, by its Option (the one parse); PlanError naming ``label`` otherwise."""
    # recompute by the modes the search knows: block's L_rc is a layer count of a layout, not a setting to search
    option = settings.RECOMPUTE_OPTION if name == "recompute" else settings.OPTIONS[name]
    try:
        return option.resolve(value, label)
    except InputError as err:
        raise PlanError(str(err)) from None


#: the expert tensor-parallel sizes plan takes: t_e, a size of its own, is a layout column plan does not enumerate
PLANNED_EXPERT_TP = ("tp", "1")


def expert_tp_refusal(expert_tp: str, dispatcher: str) -> str | None:
    """Why plan cannot run ``expert_tp`` with ``dispatcher``, in one line, or None."""
    if expert_tp not in PLANNED_EXPERT_TP:
        return (f"--expert-tp={expert_tp} is not allowed; choose tp or 1 (plan enumerates no expert tensor-parallel "
                "size of its own: eval hybrid takes expert_tp=t_e with t_e=)")
    if expert_tp == "tp" and dispatcher in settings.FLEX_DISPATCHERS:
        return (f"--expert-tp tp is not run with --dispatcher {dispatcher}: the flex dispatcher needs expert_tp=1 "
                "where t > 1 (Megatron-Core's MoEFlexTokenDispatcher); leave --expert-tp out or give 1")
    return None


def expert_tp_run(dispatcher: str, expert_tp: str | None) -> str:
    """The expert tensor-parallel size a MoE plan runs: 1 under the flex dispatchers (they need it), else as given
    (--expert-tp), else the Option's default, tp."""
    if dispatcher in settings.FLEX_DISPATCHERS:
        return "1"
    return expert_tp or settings.OPTIONS["expert_tp"].default


@dataclass(frozen=True)
class Request:
    model: object                 # symcomm.presets.Model
    hardware: object              # symcomm.presets.Hardware
    gpus: int
    batch: int
    seq: int
    gpus_per_node: int | None = None
    dtype: str = "bf16"
    cp_algorithm: str = "ring"
    memory_check: bool = True
    memory_margin: bool = False    # keep a layout only if it fits at the high end of the memory model's measured error
    #: drop layouts whose bubble fraction (p − 1)/(v·m) exceeds this; None keeps all (m < p − 1 gives one above 1)
    max_bubble: float | None = None
    embeddings: bool = True        # the embedding and LM head (V × h) on the end stages: hybrid embeddings=1
    # fixed choices; None = searched.  The run settings among them (zero, framework, recompute, sp) are typed as
    # symcomm.training.settings.RunSetting types them (int, str, str, bool), read once by their Options below
    tp: int | None = None
    pp: int | None = None
    vp: int | None = None
    dp: int | None = None
    cp: int | None = None
    ep: int | None = None
    micro_batch: int | None = None
    micro_batches: int | None = None   # m, micro-batches per data-parallel replica (eval's m=)
    zero: int | None = None
    framework: str | None = None
    recompute: str | None = None
    sp: bool | None = None
    compare: tuple = ()            # (key, value) pairs of --compare, values as text
    peak: float | None = None      # a typed dense peak FLOP/s at --dtype, in place of the hardware's (Hardware.peak)
    # the step-time constants and HBM bandwidth typed in place of the hardware's (eval's eta=, kappa=, ...: TYPED),
    # as sorted (name, value) pairs
    constants: tuple = ()
    # the MoE token dispatcher, given, not searched (eval's dispatcher=, the same Option): which one a cluster runs is
    # a property of its software and network (DeepEP needs its RDMA/NVSHMEM buffers, HybridEP its fabric), not a
    # layout choice; searching it would also build four kernels per combination
    dispatcher: str = "alltoall"
    # group-limited routing (eval's router_groups=, router_group_topk=; symcomm.training.routing): given, as the
    # model's router is; 1, 1 = ungrouped
    router_groups: int = 1
    router_group_topk: int = 1
    # the matmul precision recipe (eval's precision=, the same Option), given, not searched: which recipes a cluster
    # runs is a property of its software and of the model's numerics, not a layout choice
    precision: str = "bf16"
    # the attention core's kernel (eval's attention_kernel=): fused, the framework's own; or one at a published share
    attention_kernel: str = "fused"
    # how a node's GPUs are wired (eval's nvlink=): switch, or mesh (a 4-GPU HGX board), given: a property of the nodes
    nvlink: str = "switch"
    # a MoE model's expert tensor-parallel size (eval's expert_tp=, the same Option): tp or 1, given, not searched;
    # None: the dispatcher's own (tp with alltoall and alltoall_padded, Megatron-Core's default; 1 with the flex
    # dispatchers, which need it)
    expert_tp: str | None = None
    # trained with dropout (eval's dropout=, the same Option: the memory model's dropout masks), given; None: the
    # model's own (Model.dropout, as eval fills it from the preset or config)
    dropout: bool | None = None

    @property
    def typed_hardware(self) -> dict:
        """The hardware values typed in place of the hardware's (the peak, the constants), as
        Hardware.compute_values takes them ({} when none)."""
        return {**({} if self.peak is None else {"peak": self.peak}), **dict(self.constants)}

    def __post_init__(self):
        # the fixed run settings read once, text or typed, by the one Option every command uses (eval's zero=,
        # framework=, recompute=, sp=): recompute's 0 and 1 stand for none and full, sp's 0 and 1 for False, True
        for name in FIXED_SETTINGS:
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, _resolve(name, value, f"--{name}"))
        for name in GIVEN_SETTINGS:
            object.__setattr__(self, name, _resolve(name, getattr(self, name), "--" + name.replace("_", "-")))
        if self.expert_tp is not None:
            if refused := expert_tp_refusal(str(self.expert_tp), self.dispatcher):
                raise PlanError(refused)
            object.__setattr__(self, "expert_tp", _resolve("expert_tp", self.expert_tp, "--expert-tp"))
        if self.dropout is not None:
            object.__setattr__(self, "dropout", _resolve("dropout", self.dropout, "--dropout"))
        if refused := settings.router_refusal(self):
            raise PlanError(refused)

    @property
    def G(self) -> int:
        return self.hardware.gpus_per_node if self.gpus_per_node is None else self.gpus_per_node


def context_sizes(req) -> np.ndarray:
    """The context-parallel sizes c a request allows: c | --seq and --gpus, and for ring attention 2c | --seq from
    c = 2 (its causal split: symcomm.training.hybrid._CAUSAL_SPLIT), for Ulysses c | the heads and the K/V heads
    (c | a/t and K/V heads/t at t = 1, symcomm.planner.layouts); the search's grid and plan's --cp choices."""
    cs = _divisors(req.seq)
    cs = cs[req.gpus % cs == 0]
    if req.cp_algorithm == "ulysses":
        return cs[(req.model.heads % cs == 0) & (req.model.kv_heads % cs == 0)]
    return cs[(cs == 1) | (req.seq % (2 * cs) == 0)]


def _divisors(n: int) -> np.ndarray:
    n = int(n)
    small = [i for i in range(1, math.isqrt(n) + 1) if n % i == 0]
    return np.array(sorted(set(small + [n // i for i in small])), dtype=np.int64)


#: the end chunks' layers the planner tries around the middle chunks' (symcomm.training.stages): within ±2
UNEVEN_SPREAD = 2
#: the interleaved chunks per stage the planner tries when p·v does not divide the layers
UNEVEN_CHUNKS = (2, 3, 4, 6, 8)


def uneven_splits(layers: int, stages: int, chunks: int) -> list[tuple[int, int]]:
    """The (L_first, L_last) the planner tries when stages·chunks does not divide ``layers``: every split whose
    p·v − 2 middle chunks hold a whole number mid ≥ 1 of layers (mid from ⌊L/(p·v)⌋ − 1 to ⌈L/(p·v)⌉ + 1) and
    whose end chunks each hold mid ± 2 (at least 0: an end chunk may hold only the embedding or the loss, as
    Megatron-LM's --account-for-embedding-in-pipeline-split / --account-for-loss-in-pipeline-split make it);
    p·v = 2: the two chunks L/2 ± 2 each; p = 1: none (the one stage holds every layer)."""
    n = stages * chunks
    if stages < 2 or n > layers:
        return []
    if n == 2:
        return [(first, layers - first) for first in range(layers // 2 - UNEVEN_SPREAD, -(-layers // 2) + UNEVEN_SPREAD + 1)
                if 0 <= first <= layers and abs(2 * first - layers) <= 2 * UNEVEN_SPREAD]
    out = []
    for mid in range(max(1, layers // n - 1), -(-layers // n) + 2):
        ends = layers - (n - 2) * mid
        for first in range(max(0, mid - UNEVEN_SPREAD), mid + UNEVEN_SPREAD + 1):
            last = ends - first
            if max(0, mid - UNEVEN_SPREAD) <= last <= mid + UNEVEN_SPREAD:
                out.append((first, last))
    return out


def _pipelines(layers: int, gpus: int) -> list[tuple[int, int, tuple[int, int, int]]]:
    """Every (p, v, (split, L_first, L_last)) the planner searches: p dividing --gpus (p ≤ layers); v = 1, or
    v ≥ 2 with p ≥ 2; split 0 (even) when p·v divides the layers (v among the divisors of L/p), else split 1
    (first_last) once per :func:`uneven_splits` candidate (v = 1 or among UNEVEN_CHUNKS)."""
    out = []
    for p in (int(x) for x in _divisors(gpus) if x <= layers):
        for v in sorted({1} | ({int(x) for x in _divisors(layers // p)} | set(UNEVEN_CHUNKS) if p >= 2 else set())):
            if layers % (p * v) == 0:
                out.append((p, v, (0, 0, 0)))
            elif v == 1 or v in UNEVEN_CHUNKS:
                out += [(p, v, (1, first, last)) for first, last in uneven_splits(layers, p, v)]
    return out


def _listed(values) -> str:
    values = [str(int(x)) if not isinstance(x, str) else x for x in values]
    if not values:
        return "none"
    return ", ".join(values) if len(values) <= 40 else ", ".join(values[:40]) + f", … ({len(values)} in all)"


# -- checks: every option bounded, every fixed choice one that can occur -----------------------------

def _tensor_sizes(req: Request) -> list[int]:
    model = req.model
    return [int(x) for x in _divisors(math.gcd(model.heads, req.G))
            if model.kv_heads % x == 0 and req.gpus % x == 0]


def _allowed(req: Request) -> dict[str, list]:
    """The values each fixed layout option can take for this model and request."""
    model, n = req.model, req.gpus
    searched = _pipelines(model.layers, n)
    pipeline = sorted({x for x, _, _ in searched})
    chunks = sorted({v for x, v, _ in searched if req.pp is None or x == req.pp})
    experts = [int(x) for x in _divisors(model.experts) if n % x == 0] if model.moe else [1]
    return {"tp": _tensor_sizes(req), "pp": pipeline, "vp": chunks, "cp": [int(x) for x in context_sizes(req)],
            "ep": experts, "dp": [int(x) for x in _divisors(n) if req.batch % x == 0],
            "micro-batch": [int(x) for x in _divisors(req.batch)],
            "micro-batches": [int(x) for x in _divisors(req.batch)]}


_WHY = {"tp": "t divides the heads, the K/V heads, the GPUs per node and --gpus", "pp": "p divides --gpus and is at most the layers (an even split "
        "when p·v divides the layers, else first/last splits)", "vp": "v = 1 (1F1B) or, for a p ≥ 2, v ≥ 2 dividing "
        "layers/p or one of " + ", ".join(map(str, UNEVEN_CHUNKS)) + " with an uneven split", "cp": "c divides --seq and --gpus (2c divides --seq for ring attention from c = 2: its causal split; "
        "Ulysses: c divides the heads and the K/V heads)",
        "ep": "e divides the experts and --gpus (1 without experts)", "dp": "d divides --gpus and --batch",
        "micro-batch": "it divides --batch", "micro-batches": "m = batch / (d · micro-batch) divides --batch"}


def check_request(req: Request) -> None:
    for name, value in (("--gpus", req.gpus), ("--batch", req.batch), ("--seq", req.seq),
                        ("--gpus-per-node", req.G)):
        most = LIMITS[name[2:]]
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or not 1 <= value <= most:
            raise PlanError(f"{name}={value} is not allowed: {name} takes a whole number from 1 to {most:,}")
    if req.gpus > req.G and req.gpus % req.G:
        raise PlanError(f"--gpus={req.gpus} is not allowed: with --gpus-per-node={req.G} it must be a multiple "
                        f"of {req.G} (whole nodes) or at most {req.G}")
    if getattr(req.model, "hybrid", ()):
        # its layers are one block each (mamba=1), with frameworks, recompute modes and context parallelism of their
        # own: not the transformer layers the planner's kernels count, so no ranking is given rather than a wrong one
        raise PlanError(f"--model={req.model.name} is not allowed: it is a hybrid Mamba-Transformer (mamba=1), which "
                        f"plan does not search; evaluate its layouts with symcomm eval hybrid --model {req.model.name}")
    if req.model.moe and req.model.experts % req.router_groups:
        raise PlanError(f"--router-groups={req.router_groups} is not allowed for {req.model.name}: its "
                        f"{req.model.experts} experts must split into whole groups (Megatron-Core asserts it)")
    if req.model.moe:           # each kept group scored by its best k/g experts, the k from the g kept (eval's rule)
        refused = router_capacity_refusal({"moe": True, "router_groups": req.router_groups,
                                           "router_group_topk": req.router_group_topk},
                                          {"E": req.model.experts, "k": req.model.top_k})
        if refused:
            raise PlanError(refused.replace("router_groups=", "--router-groups ", 1)
                            .replace("router_group_topk=", "--router-group-topk ", 1))
    if req.cp_algorithm not in CP_ALGORITHMS:
        raise PlanError(f"--cp-algorithm={req.cp_algorithm} is not allowed; choose {', '.join(CP_ALGORITHMS)}")
    if req.max_bubble is not None and not 0 <= req.max_bubble < float("inf"):
        raise PlanError(f"--max-bubble={req.max_bubble} is not allowed: it takes a fraction ≥ 0")
    allowed = _allowed(req)
    for name in ("tp", "pp", "vp", "cp", "ep", "dp", "micro-batch", "micro-batches"):
        value = getattr(req, name.replace("-", "_"))
        if value is None:
            continue
        most = LIMITS[name]
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or not 1 <= value <= most:
            raise PlanError(f"--{name}={value} is not allowed: --{name} takes a whole number from 1 to {most:,}")
        if value not in allowed[name]:
            raise PlanError(f"--{name}={value} is not allowed for {req.model.name} on --gpus={req.gpus}: "
                            f"{_WHY[name]}; choose {_listed(allowed[name])}")
    refused = req.framework is not None and framework_precision_refusal(req.framework, req.precision)
    if refused:
        raise PlanError(refused)
    refused = req.recompute == "op" and req.framework is not None and op_framework_refusal(req.framework)
    if refused:
        raise PlanError(refused)
    if not _schemes(req):
        runs = {fw: sorted({s.zero for s in SCHEMES if s.framework == fw}) for fw in FRAMEWORKS}
        planned = runs[req.framework]
        runs_also = [z for z in _frameworks.FRAMEWORKS[req.framework].zero_stages if z not in planned]
        if req.zero not in runs_also:
            raise PlanError(f"--zero={req.zero} is not allowed with --framework={req.framework}: it runs zero "
                            f"{_listed(planned)}")
        raise PlanError(f"--zero={req.zero} is not allowed with --framework={req.framework}: plan searches it at zero "
                        f"{_listed(planned)} (eval hybrid framework={req.framework} zero={req.zero} prices zero "
                        f"{_listed(runs_also)} on a layout you give)")
    bytes_per_element(req.dtype)
    said = low_dtype_note(req.dtype, req.precision)
    if said:
        notes.add(said)
    try:
        req.hardware.compute_values(req.dtype, precision=req.precision, attention_kernel=req.attention_kernel,
                                    typed=req.typed_hardware)
    except ValueError as err:
        raise PlanError(str(err)) from None
    if req.memory_check and uncounted_plan_refusal(req.dtype, req.precision):     # eval's verdict unknown: none by it
        raise PlanError(uncounted_plan_refusal(req.dtype, req.precision))
    if req.memory_check and req.hardware.fits(0.0) is None:
        raise req.hardware.lacks("memory_bytes", "plan needs to keep only the layouts that fit (or give "
                                 "--no-memory-check)")
    if req.memory_margin and not req.memory_check:
        raise PlanError("--within-memory-error is not allowed with --no-memory-check: it keeps the layouts that fit "
                        "at the high end of the memory model's error; give one of them")
    if req.memory_margin and req.hardware.memory_band is None:
        raise PlanError("--within-memory-error: no measured memory error is recorded (symcomm/presets/hardware.json "
                        "memory_checks, written by python -m symcomm.derivations.fit_step_time); drop the flag")
    _compare_spec(req)


def _schemes(req: Request) -> tuple:
    return tuple(s for s in SCHEMES if (req.framework is None or s.framework == req.framework)
                 and (req.zero is None or s.zero == req.zero) and framework_precision_refusal(s.framework, req.precision) is None
                 and (req.recompute != "op" or op_framework_refusal(s.framework) is None))


def framework_precision_refusal(framework: str, precision: str) -> str | None:
    """Why ``framework`` does not run ``precision`` (the run setting's own refusal, eval's), or None."""
    try:
        settings.RunSetting(framework=framework, precision=precision)
    except InputError as err:
        return str(err)
    return None


def _compare_spec(req: Request) -> dict:
    """--compare as {key: value}, each checked: one-line errors naming --compare and the allowed keys and values."""
    spec: dict = {}
    for key, text in req.compare:
        if key not in COMPARE_KEYS:
            raise PlanError(f"--compare key {key!r} is not allowed; choose {', '.join(COMPARE_KEYS)}")
        if key in spec:
            raise PlanError(f"--compare gives {key} twice")
        if key in FIXED_SETTINGS:                # the run settings: the same Options as --zero, --sp, ... and eval
            spec[key] = _resolve(key, text, f"--compare {key}")
        elif key == "raf":
            spec[key] = parse_whole(f"--compare {key}", text, least=0, most=1)
        else:
            spec[key] = parse_whole(f"--compare {key}", text, least=1, most=LIMITS["gpus"])
    allowed = _allowed(req) if spec else {}
    for key, name in (("t", "tp"), ("p", "pp"), ("v", "vp"), ("c", "cp"), ("e", "ep"), ("d", "dp"),
                      ("mb", "micro-batch")):
        if key in spec and spec[key] not in allowed[name]:
            raise PlanError(f"--compare {key}={spec[key]} is not allowed for {req.model.name} on --gpus={req.gpus}: "
                            f"{_WHY[name].replace('it divides', 'mb divides')}; choose {_listed(allowed[name])}")
    return spec


def parse_compare(text: str) -> tuple:
    """'t=8,p=8,d=1' → (('t', '8'), ('p', '8'), ('d', '1'))."""
    pairs = []
    words = [w.strip() for w in str(text).split(",")]
    if len(words) > len(COMPARE_KEYS) or not any(words):
        raise PlanError(f"--compare takes KEY=VALUE pairs separated by commas (keys {', '.join(COMPARE_KEYS)}), "
                        "e.g. t=8,p=8,d=1")
    for word in words:
        key, eq, value = word.partition("=")
        if not eq or not key or not value:
            raise PlanError(f"--compare {word!r} is not allowed: it takes KEY=VALUE (keys {', '.join(COMPARE_KEYS)})")
        pairs.append((key.strip(), value.strip()))
    return tuple(pairs)


# -- the options of symcomm plan and of symcomm.plan (the command's parser: symcomm.commands.plan) --------

#: every option of ``symcomm plan``: (flag, default, help).  The parser is built from it, and the Python API
#: (``symcomm.plan``) fills what a caller leaves out from it: both then go through :func:`request_from_args`
FLAGS = (
    ("--model", None, "a model preset (symcomm presets lists them)"),
    ("--model-config", None, "path to a Hugging Face config.json"),
    ("--hardware", None, "a hardware preset or file (path/to/hardware.json)"),
    ("--gpus", None, "GPUs in the job (1 to 2,097,152); N=..."),
    ("--gpus-per-node", None, "GPUs per node (default: the hardware preset's); G=..."),
    ("--batch", None, "global batch (sequences per optimizer step); b=..."),
    ("--seq", None, "sequence length (default: the model's); s=..."),
    ("--dtype", None, "element type of the run: fp32, bf16 (default), fp16, fp8, int8"),
    ("--tp", None, "fix the tensor-parallel size t (default: search); t=..."),
    ("--pp", None, "fix the pipeline stages p (default: search); p=..."),
    ("--vp", None, "fix the model chunks per stage v (1: 1F1B; ≥ 2: interleaved) (default: search); v=..."),
    ("--dp", None, "fix the data-parallel size d (default: search); d=..."),
    ("--cp", None, "fix the context-parallel size c (default: search); c=..."),
    ("--ep", None, "fix the expert-parallel size e (default: search); e=..."),
    ("--micro-batch", None, f"fix the sequences per micro-batch (default: search the divisors up to "
                            f"{MICRO_BATCH_SEARCH}); mb=..."),
    ("--micro-batches", None, "fix the micro-batches per data-parallel replica m = batch / (d · micro-batch) "
                              "(default: search); m=..."),
    ("--zero", None, "fix the ZeRO stage: 0, 1, 2 or 3; zero=..."),
    ("--framework", None, f"fix the framework: {', '.join(FRAMEWORKS)}; framework=..."),
    ("--recompute", None, f"fix activation recomputation: {', '.join(settings.RECOMPUTE)} (0 = none, 1 = full; op, "
                          "torchtitan's op-level checkpointing, is searched only when fixed here); recompute=..."),
    ("--sp", None, "fix sequence parallel: 0 or 1; sp=..."),
    ("--cp-algorithm", None, "context-parallel algorithm: ring (default) or ulysses; cp=..."),
    ("--dispatcher", None, f"MoE models: the token dispatcher, {settings.choices(settings.DISPATCHERS)} (default "
                           "alltoall; as eval's dispatcher=, given, not searched); dispatcher=..."),
    ("--router-groups", None, "MoE models: group-limited routing, the expert groups G (1 = ungrouped, the default; "
                              "DeepSeek-V3: 8), as eval's router_groups=; router_groups=..."),
    ("--router-group-topk", None, "MoE models: the groups chosen per token (DeepSeek-V3: 4), as eval's "
                                  "router_group_topk=; router_group_topk=..."),
    ("--precision", None, f"the matmul precision recipe: {settings.choices(settings.PRECISIONS)} (default bf16; as "
                          "eval's precision=, given, not searched; an FP8 recipe runs the linear GEMMs at the "
                          "hardware's FP8 peak and eta_fp8, the attention core and LM head in bf16); precision=..."),
    ("--attention-kernel", None, f"the attention core's kernel: {settings.choices(settings.ATTENTION_KERNELS)} "
                                 "(default fused: the framework's own; fa2, triton, cudnn at the hardware's published share; "
                                 "as eval's attention_kernel=, given, not searched); attention_kernel=..."),
    ("--nvlink", None, f"how a node's GPUs are wired: {settings.choices(settings.NVLINK_TOPOLOGIES)} (default the "
                       "hardware file's nvlink, else switch; mesh: GPUs wired point to point, a 4-GPU HGX H100/H200 board; as eval's nvlink=, given, not "
                       "searched); nvlink=..."),
    ("--expert-tp", None, "MoE models: the experts' tensor-parallel size, tp (Megatron-Core's default) or 1 (each "
                          "expert whole on a GPU); default: tp, and 1 with the flex dispatchers, which need it; as "
                          "eval's expert_tp=, given, not searched; expert_tp=..."),
    ("--dropout", None, "0 or 1: trained without or with dropout (the memory model's dropout masks; as eval's "
                        "dropout=, given, not searched; default the model's: 0 for every preset); dropout=..."),
    ("--compare", None, f"show this layout with its rank: KEY=VALUE,... with keys {', '.join(COMPARE_KEYS)} "
                        "(mb = micro-batch, raf = reshard after forward); keys left out: the best matching"),
    ("--no-memory-check", False, "keep layouts that do not fit in the hardware's memory per GPU"),
    ("--within-memory-error", False, "keep only layouts that fit at the high end of the memory model's measured "
                                     "error (those plan marks ‡ left out)"),
    ("--no-embeddings", False, "spread the embedding and LM head over the stages (Φ/(t·p) everywhere) instead of "
                               "the end stages; embeddings=0"),
    ("--peak", None, "the dense matmul FLOP/s of one GPU at --dtype, in place of the hardware's (needed where its "
                     "source only bounds it: symcomm presets); peak=..."),
    ("--max-bubble", None, "drop layouts whose pipeline bubble fraction (p−1)/(v·m) exceeds this (default: keep "
                           "all; the fraction exceeds 1 where m < p − 1)"),
    ("--top", None, "rows to show (default 10)"),
    ("--json", False, "JSON (seconds, bytes)"), ("--csv", False, "CSV (seconds, bytes)"),
)
#: what a flag left out means (the parser's defaults are None, so a KEY=VALUE word can tell it was not given)
DEFAULTS = {"dtype": "bf16", "cp_algorithm": "ring", "max_bubble": None, "top": "10", "dispatcher": "alltoall",
            "router_groups": "1", "router_group_topk": "1", "precision": "bf16", "attention_kernel": "fused",
            "nvlink": "switch"}
#: eval's KEY=VALUE spellings (``symcomm eval hybrid t=8 p=4 ...``) of plan's options: plan takes them as words
KEYS = {"t": "tp", "p": "pp", "v": "vp", "d": "dp", "c": "cp", "e": "ep", "mb": "micro_batch", "m": "micro_batches",
        "zero": "zero", "framework": "framework", "recompute": "recompute", "sp": "sp", "b": "batch", "s": "seq",
        "N": "gpus", "G": "gpus_per_node", "gpus_per_node": "gpus_per_node", "cp": "cp_algorithm",
        "embeddings": "no_embeddings", "peak": "peak", "dispatcher": "dispatcher",
        "router_groups": "router_groups", "router_group_topk": "router_group_topk", "precision": "precision",
        "attention_kernel": "attention_kernel", "nvlink": "nvlink", "expert_tp": "expert_tp", "dropout": "dropout"}


#: the hardware values plan takes typed in place of the hardware's, as eval hybrid does (presets TYPED_HARDWARE):
#: those a bf16 plan reads, and the FP8 and FP4 recipes' shares and peaks (--precision); each a number as eval bounds it, a share
#: of the peak in (0, 1]
#: (presets.hardware_values.with_typed_constants, the one rule)
TYPED = ("eta", "kappa", "w_half", "eta_attn", "w_half_expert", "kappa_moe", "hbm", "eta_fp8", "eta_fp4", "peak_fp8",
         "peak_fp4")


def _dest(flag: str) -> str:
    return flag[2:].replace("-", "_")


#: bounds on every number the planner takes, named in its errors (the enumeration loops over
#: divisors of these: they keep it finite)
LIMITS = {"gpus": 2 ** 21, "gpus-per-node": 1024, "batch": 2 ** 24, "seq": 2 ** 24, "micro-batch": 2 ** 16,
          "micro-batches": 2 ** 24, "top": 10 ** 6, "tp": 1024, "pp": 2 ** 21, "vp": 2 ** 21, "dp": 2 ** 21,
          "cp": 2 ** 21, "ep": 2 ** 21}


def namespace(**values) -> types.SimpleNamespace:
    """The command's options from Python values (``symcomm.plan``): each as the text the command line would
    carry (int → '8', float → repr: 8.0 → '8.0', as ``--top 8.0``; text as given; True/False for the
    on/off flags and for a run setting's flag, sp=True or embeddings=False, written 1/0), a KEY=VALUE name (t=8) as a word; what is left out takes the parser's default.  Nothing is
    checked here but the names and types: :func:`request_from_args` checks the values, for both."""
    flags = {_dest(flag): default for flag, default, _ in FLAGS}
    args = dict(flags, assignments=[])
    for name, value in values.items():
        if value is None:
            continue
        if name not in flags and name not in KEYS and name not in TYPED:
            raise InputError(f"plan has no option {name!r}; choose {', '.join(sorted(flags))} or "
                             f"{', '.join(KEYS)} (as eval spells them)")
        if isinstance(value, bool) and name in settings.OPTIONS and \
                any(isinstance(allowed, bool) for allowed in settings.OPTIONS[name].allowed):
            value = settings.Option.text(value)   # a typed flag of the run setting (sp=True): its one text form
        switch = name in flags and flags[name] is False
        shown = f"--{name.replace('_', '-')}" if name in flags else name
        if switch != isinstance(value, bool):
            raise InputError(f"{shown}={value!r} is not allowed: {shown} takes " +
                             ("True or False" if switch else "a number or text, as on the command line"))
        if switch:
            args[name] = value
            continue
        text = api_word(value)            # eval's words for the API's values (numpy's scalars as their numbers)
        if text is None:
            raise InputError(f"{shown}={value!r} is not allowed: {shown} takes a number or text, as on the command "
                             "line")
        if (name in KEYS or name in TYPED) and name not in flags:
            args["assignments"].append(f"{name}={text}")
        else:
            args[name] = text
    return types.SimpleNamespace(**args)


def _merge_assignments(args) -> None:
    """KEY=VALUE words (eval's spellings) into the flags they stand for; a flag given too with another value is
    refused naming both."""
    seen: dict = {}
    args.constants = {}
    for word in getattr(args, "assignments", None) or ():
        key, eq, text = str(word).partition("=")
        if not eq or not key or not text:
            raise PlanError(f"{word!r} is not KEY=VALUE; write for example t=8 p=4 d=32")
        if key in TYPED:
            if key in args.constants:
                raise PlanError(f"{key}= is given twice; give it once")
            args.constants[key] = parse_real(key, text)
            continue
        if key not in KEYS:
            raise PlanError(f"plan takes no {key}=...; the KEY=VALUE words it takes: {', '.join((*KEYS, *TYPED))}")
        dest = KEYS[key]
        if dest in seen:
            raise PlanError(f"{seen[dest]} and {word} give the same option twice; give it once")
        seen[dest] = word
        flag = "--" + dest.replace("_", "-")
        if dest == "no_embeddings":
            embeddings = _resolve("embeddings", text, "embeddings")
            if args.no_embeddings and embeddings:
                raise PlanError("--no-embeddings and embeddings=1 differ: give one of them")
            args.no_embeddings = not embeddings
            continue
        given = getattr(args, dest)
        if given is not None and not _same(dest, str(given), text):
            raise PlanError(f"{flag} {given} and {word} differ: give one of them")
        setattr(args, dest, text)


def _same(dest: str, a: str, b: str) -> bool:
    name = dest.replace("_", "-")
    if dest in FIXED_SETTINGS:           # typed by its Option: --recompute 1 and recompute=full are the same value
        try:
            return _resolve(dest, a, f"--{name}") == _resolve(dest, b, f"--{name}")
        except InputError:
            return a == b            # a bad value is refused, with its own words, when it is read
    if name in LIMITS:
        try:
            return parse_whole(f"--{name}", a, least=1, most=LIMITS[name]) == \
                parse_whole(f"--{name}", b, least=1, most=LIMITS[name])
        except InputError:
            return a == b            # a bad value is refused, with its own words, when it is read
    return a == b


def _whole(args, name: str, default=None):
    text = getattr(args, name.replace("-", "_"))
    if text is None:
        text = DEFAULTS.get(name)
    if text is None:
        return default
    return parse_whole(f"--{name}", str(text), least=1, most=LIMITS[name])


def request_from_args(args) -> Request:
    """THE check of plan's arguments, for the command (argparse's text) and the API (:func:`namespace`)."""
    from .. import presets

    if args.json and args.csv:
        raise PlanError("--json and --csv: choose one")
    _merge_assignments(args)
    if args.model and args.model_config:
        raise InputError("give --model or --model-config, not both")
    if args.model_config:
        model = presets.model_from_config(args.model_config)
    elif args.model:
        model = presets.model(args.model)
    else:
        raise InputError(f"--model is required; choose one of {', '.join(presets.model_names())} "
                         "(or --model-config path/config.json)")
    if not args.hardware:
        raise InputError(f"--hardware is required; choose one of {', '.join(presets.hardware_names())}")
    hardware = presets.hardware(args.hardware)
    for name in ("gpus", "batch"):
        if getattr(args, name) is None:
            raise InputError(f"--{name} is required (a whole number from 1 to {LIMITS[name]:,})")
    seq = _whole(args, "seq", model.seq)
    if args.seq is None and model.context_seq_note():       # eval says it of any preset (training.binding)
        notes.add(model.context_seq_note())
    if seq > LIMITS["seq"]:
        raise InputError(f"the model's sequence {seq:,} is above the planner's limit {LIMITS['seq']:,}; give --seq")
    if args.cp is not None and str(args.cp) in CP_ALGORITHMS:
        raise PlanError(f"--cp={args.cp} is not allowed: --cp is the context-parallel size (a whole number); "
                        f"the algorithm is --cp-algorithm {' or '.join(CP_ALGORITHMS)}")
    for name in ("dispatcher", "router_groups", "router_group_topk", "expert_tp"):
        if getattr(args, name) is not None and not model.moe:
            notes.add(f"--{name.replace('_', '-')} {getattr(args, name)} unused: {model.name} has no experts")
    # typed groups beside a dispatcher that sends every routed copy change nothing: said as eval says it
    unrouted = routing_note({"moe": model.moe, "router_groups": args.router_groups or 1,
                             "dispatcher": args.dispatcher or DEFAULTS["dispatcher"]})
    if unrouted:
        notes.add(unrouted.replace("router_groups=", "--router-groups ", 1).replace("dispatcher=", "--dispatcher ", 1))
    declared = declared_wiring_note(hardware, "--nvlink ") if args.nvlink is None else None
    if declared:
        # the nodes' wiring a hardware file declares (eval's rule: training.words.hardware_wiring)
        args.nvlink = hardware.nvlink
        notes.add(declared)
    said_board = mesh_board_note(hardware, args.gpus_per_node or hardware.gpus_per_node,
                                 args.nvlink or DEFAULTS["nvlink"])
    if said_board:
        notes.add(said_board)
    dtype = args.dtype if args.dtype is not None else DEFAULTS["dtype"]
    bytes_per_element(dtype)
    max_bubble = args.max_bubble if args.max_bubble is not None else DEFAULTS["max_bubble"]
    return Request(model=model, hardware=hardware, gpus=_whole(args, "gpus"), batch=_whole(args, "batch"),
                   seq=seq, gpus_per_node=_whole(args, "gpus-per-node"), dtype=dtype,
                   cp_algorithm=args.cp_algorithm if args.cp_algorithm is not None else DEFAULTS["cp_algorithm"],
                   memory_check=not args.no_memory_check, memory_margin=args.within_memory_error,
                   embeddings=not args.no_embeddings,
                   max_bubble=None if max_bubble is None else parse_real("--max-bubble", str(max_bubble), least=0,
                                                                         most=10 ** 6),
                   tp=_whole(args, "tp"), pp=_whole(args, "pp"), vp=_whole(args, "vp"), dp=_whole(args, "dp"),
                   cp=_whole(args, "cp"), ep=_whole(args, "ep"), micro_batch=_whole(args, "micro-batch"),
                   micro_batches=_whole(args, "micro-batches"),
                   zero=args.zero, framework=args.framework, recompute=args.recompute, sp=args.sp,
                   compare=parse_compare(args.compare) if args.compare is not None else (),
                   **{name: getattr(args, name) if getattr(args, name) is not None else DEFAULTS[name]
                      for name in GIVEN_SETTINGS},
                   peak=parse_real("--peak", str(args.peak), least=1, most=1e18) if args.peak is not None else None,
                   expert_tp=args.expert_tp, dropout=args.dropout, constants=tuple(sorted(args.constants.items())))


def checked_memory(req: Request, memory):
    """The bytes per GPU a layout is kept by (Hardware.fits of them): its memory, raised to the high end of the memory
    model's measured error under --within-memory-error (fit_errors.at_high_end, the ‡ rule of eval's verdict)."""
    return at_high_end(memory, req.hardware.memory_band) if req.memory_margin else memory


def top_from_args(args) -> int:
    """--top, checked as every other number (1 to LIMITS['top'])."""
    return _whole(args, "top")
