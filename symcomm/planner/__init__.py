"""The layout planner: every valid layout — (t, p, v, c, e, d), micro-batch size,
data-parallel scheme, recomputation, sequence parallel — that fits in memory, ranked by the
step time of the step-time model (:mod:`symcomm.training.steptime`).

    symcomm plan --model llama3-70b --gpus 1024 --gpus-per-node 8 --hardware h100 \\
                 --batch 1024 --seq 8192 [--top 10] [--json | --csv] [--tp 8 --pp 4 ...] \\
                 [--compare t=8,p=8,v=3,d=1,mb=1,recompute=selective,sp=1]

The layouts are enumerated as numpy arrays; each option combination (data-parallel scheme ×
recompute × SP × 1F1B or interleaved) is one kernel called once over all its layouts, giving every
quantity the planner reports.  The kernels are data shipped in the package (``symcomm/planner/kerneldata``,
graphs of numpy operations written by ``python -m symcomm.tools.codegen`` from the step model of
:func:`symcomm.training.steptime.step_model`, common subexpressions once, the options' branches resolved) and run
by :mod:`symcomm.numbers.kernels`: ``symcomm plan`` never loads SymPy for them.  A combination without a shipped
kernel (``--no-embeddings``, ``--cp-algorithm ulysses``, fp32 or fp8 elements, another family shape from
``--model-config``) builds its step model with SymPy and its graph in the process (a note says so), run
by the same interpreter.  Layout sizes (t, p, v, c, e, d, m, the micro-batch) are values, not options, so they never
add a kernel.

Pruning, cheapest first: divisibility; a memory floor no setting can go below (16 bytes per
parameter fully sharded, 16Φ/GPUs, plus the activations of full recompute with SP); then the
step model's own memory per GPU; then the step time only where it can matter: the step is at
least compute · (1 + bubble fraction) + optimizer (the step model's pipeline is (m + (p − 1)/v)
slots of at least one micro-batch's compute each), so an option combination whose every
fitting layout is bounded below by more than the rows asked for (``top``) and the
``--compare`` layout is not timed.  The bound is checked wherever
the step is evaluated.
"""

from __future__ import annotations

import types

import csv
import functools
import io
import math
import shlex
import time as _time
from dataclasses import dataclass, field

import numpy as np

from ..base import notes
from ..base.errors import InputError
from ..base.inputs import parse_real, parse_whole
from ..base.units import bytes_per_element, human_size, human_time
from ..training import frameworks as _frameworks
from ..training import settings

#: in display order
AXES = ("tp", "cp", "ep", "pp", "dp")
#: the data-parallel schemes searched (symcomm.training.frameworks.Scheme: framework, ZeRO stage, reshard_after_forward,
#: name), each framework's own in its row of symcomm.training.frameworks.FRAMEWORKS and run the way that framework
#: runs it (symcomm.training.axes.data_schedule): Megatron's DDP and distributed optimizer reduce once per step;
#: DeepSpeed ZeRO-2 reduces every micro-batch, ZeRO-3 also gathers in every forward and backward; FSDP
#: FULL_SHARD and SHARD_GRAD_OP (reshard_after_forward=0) reduce every micro-batch
SCHEMES = _frameworks.SCHEMES
FRAMEWORKS = tuple(_frameworks.FRAMEWORKS)
ZERO_STAGES = (0, 1, 2, 3)
RECOMPUTE = settings.RECOMPUTE             # none, selective, full (0 and 1: aliases of none and full)
SP_CHOICES = (0, 1)
CP_ALGORITHMS = ("ring", "ulysses")
#: micro-batch sizes searched unless --micro-batch: the divisors of the per-replica batch up to this
MICRO_BATCH_SEARCH = 8
#: step times (and memories) of one layout this close, relatively, are the same number: their rows fold
TOLERANCE = 1e-9
#: the keys of --compare
COMPARE_KEYS = ("t", "p", "v", "c", "e", "d", "mb", "zero", "framework", "raf", "recompute", "sp")

ASSUMPTIONS = (
    "ranked by the step time of symcomm's step-time model (symcomm.training.steptime; one optimizer step: forward + "
    "backward of the global batch in m micro-batches per data-parallel replica, then the optimizer): the busiest "
    "stage's matmuls at peak × η and its memory-bound kernels (κ HBM passes over the stored activations); its tp, "
    "cp, ep and pp communication exposed between the GEMMs; (m + (p − 1)/v) pipeline slots (v model chunks per "
    "stage, interleaved; v = 1: 1F1B); the data-parallel reductions hidden behind the backward only where the "
    "framework overlaps them (FSDP; DeepSpeed ZeRO-3), ZeRO-3 gathers behind the compute, the post-step "
    "all-gather exposed; Adam memory-bound at the HBM bandwidth; η and κ fitted per system on published runs "
    "(see the hardware preset); flash attention; no tensor-parallel overlap",
    "columns: step; tokens/s = batch · seq / step; MFU = model FLOPs (matmuls, 3 × forward, whatever is "
    "recomputed) / (step · GPUs · peak); compute = the busiest stage's m micro-batches (recompute included); "
    "exposed = communication on the critical path (the m working slots' tp, cp, ep, pp collectives + the exposed "
    "data-parallel part); bubble = the (p − 1)/v idle slots (their compute and communication); compute + exposed "
    "+ bubble + the optimizer's step = step",
    "hybrid strategy of symcomm (Megatron rank order t, c, d, p; a group uses the inter-node α, β once "
    "the ranks it spans exceed the GPUs per node); ring collectives; micro-batch of mb sequences, "
    "m = batch / (d · mb)",
    "search: t | heads, K/V heads and GPUs per node; p | layers; v ≥ 2 only with p ≥ 2, layers divisible by "
    "p·v and m by p (Megatron's interleaved schedule); c | seq (ulysses: c | heads/t); e | experts and e | d·c; "
    f"micro-batch sizes dividing the per-replica batch, up to {MICRO_BATCH_SEARCH} unless --micro-batch; "
    "recompute none, selective (the attention core) or full; sequence parallel needs t > 1 and t | seq/c; MoE "
    "with t > 1 only with SP (Megatron-Core refuses it otherwise)",
    "data-parallel schemes as the frameworks run them over the m micro-batches: " + _frameworks.planned() + "; "
    "settings that give one layout the same step time and memory are folded into one row",
    "embedding and LM head (V × h, vocabulary-parallel) on the first and last stages (--no-embeddings: spread "
    "evenly); MLA (DeepSeek) attention counted as multi-head attention of its heads",
    "bytes on the wire = elements × bytes of --dtype, except the gradient reductions megatron runs in fp32; "
    "β = 1 / per-direction bandwidth per GPU",
)
MEMORY_ASSUMPTION = (
    "memory per GPU = the step model's (symcomm.training.steptime.memory_model), compared with the preset's: weights, "
    "gradients and Adam states as the framework holds them (ZeRO sharding over d·c; Megatron's fp32 gradient "
    "buffer), activations of the first stage per Korthikanti et al. 2022 Table 2 (flash attention: no scores; "
    "full recompute: the layer input) × min(p, m) micro-batches in flight (× (1 + (p − 1)/(p·v)) interleaved); no "
    "allowance for logits, buffers, fragmentation.  Dropped before any evaluation: layouts whose floor "
    "(16Φ/GPUs + the activations of full recompute with SP) exceeds it")


class PlanError(InputError):
    """An impossible request: one line naming the parameter."""


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
    max_bubble: float = 1.0        # drop layouts whose bubble fraction (p − 1)/(v·m) exceeds this
    embeddings: bool = True        # the embedding and LM head (V × h) on the end stages: hybrid embeddings=1
    # fixed choices; None = searched
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
    sp: int | None = None
    compare: tuple = ()            # (key, value) pairs of --compare, values as text

    def __post_init__(self):
        # recompute read once, by the one Option every command uses: 0 and 1 stand for none and full
        if self.recompute is not None:
            try:
                object.__setattr__(self, "recompute", settings.RECOMPUTE_OPTION.resolve(self.recompute, "--recompute"))
            except InputError as err:
                raise PlanError(str(err)) from None

    @property
    def G(self) -> int:
        return self.hardware.gpus_per_node if self.gpus_per_node is None else self.gpus_per_node


def _divisors(n: int) -> np.ndarray:
    n = int(n)
    small = [i for i in range(1, math.isqrt(n) + 1) if n % i == 0]
    return np.array(sorted(set(small + [n // i for i in small])), dtype=np.int64)


def _listed(values) -> str:
    values = [str(int(x)) if not isinstance(x, str) else x for x in values]
    if not values:
        return "none"
    return ", ".join(values) if len(values) <= 40 else ", ".join(values[:40]) + f", … ({len(values)} in all)"


def _gated(model) -> str:
    """SwiGLU (three MLP matrices) in the llama and deepseek families, GELU (two) in gpt."""
    return "0" if model.family == "gpt" else "1"


# -- checks: every option bounded, every fixed choice one that can occur -----------------------------

def _tensor_sizes(req: Request) -> list[int]:
    model = req.model
    return [int(x) for x in _divisors(math.gcd(model.heads, req.G))
            if model.kv_heads % x == 0 and req.gpus % x == 0]


def _allowed(req: Request) -> dict[str, list]:
    """The values each fixed layout option can take for this model and request."""
    model, n = req.model, req.gpus
    pipeline = [int(x) for x in _divisors(model.layers) if n % x == 0]
    stages = [req.pp] if req.pp is not None else pipeline
    chunks = sorted({1} | {int(v) for x in stages if x >= 2 for v in _divisors(model.layers // x) if v >= 2})
    experts = [int(x) for x in _divisors(model.experts) if n % x == 0] if model.moe else [1]
    return {"tp": _tensor_sizes(req), "pp": pipeline, "vp": chunks,
            "cp": [int(x) for x in _divisors(req.seq) if n % x == 0], "ep": experts,
            "dp": [int(x) for x in _divisors(n) if req.batch % x == 0],
            "micro-batch": [int(x) for x in _divisors(req.batch)],
            "micro-batches": [int(x) for x in _divisors(req.batch)]}


_WHY = {"tp": "t divides the heads, the K/V heads, the GPUs per node and --gpus", "pp": "p divides the layers and --gpus",
        "vp": "v = 1 (1F1B) or v ≥ 2 dividing layers/p for a p ≥ 2", "cp": "c divides --seq and --gpus",
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
    if req.cp_algorithm not in CP_ALGORITHMS:
        raise PlanError(f"--cp-algorithm={req.cp_algorithm} is not allowed; choose {', '.join(CP_ALGORITHMS)}")
    if not 0 <= req.max_bubble < float("inf"):
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
    if req.zero is not None and req.zero not in ZERO_STAGES:
        raise PlanError(f"--zero={req.zero} is not allowed; choose {_listed(ZERO_STAGES)}")
    if req.framework is not None and req.framework not in FRAMEWORKS:
        raise PlanError(f"--framework={req.framework} is not allowed; choose {', '.join(FRAMEWORKS)}")
    if not _schemes(req):
        runs = {fw: sorted({s.zero for s in SCHEMES if s.framework == fw}) for fw in FRAMEWORKS}
        raise PlanError(f"--zero={req.zero} is not allowed with --framework={req.framework}: it runs zero "
                        f"{_listed(runs[req.framework])}")
    if req.sp is not None and req.sp not in SP_CHOICES:
        raise PlanError(f"--sp={req.sp} is not allowed; choose 0 or 1")
    bytes_per_element(req.dtype)
    try:
        req.hardware.compute_values(req.dtype)
    except ValueError as err:
        raise PlanError(str(err)) from None
    if req.memory_check and req.hardware.fits(0.0) is None:
        raise req.hardware.lacks("memory_bytes", "plan needs to keep only the layouts that fit (or give "
                                 "--no-memory-check)")
    _compare_spec(req)


def _schemes(req: Request) -> tuple:
    return tuple(s for s in SCHEMES if (req.framework is None or s.framework == req.framework)
                 and (req.zero is None or s.zero == req.zero))


def _compare_spec(req: Request) -> dict:
    """--compare as {key: value}, each checked: one-line errors naming --compare and the allowed keys and values."""
    spec: dict = {}
    for key, text in req.compare:
        if key not in COMPARE_KEYS:
            raise PlanError(f"--compare key {key!r} is not allowed; choose {', '.join(COMPARE_KEYS)}")
        if key in spec:
            raise PlanError(f"--compare gives {key} twice")
        if key == "framework":
            if text not in FRAMEWORKS:
                raise PlanError(f"--compare framework={text} is not allowed; choose {', '.join(FRAMEWORKS)}")
            spec[key] = text
        elif key == "recompute":
            try:
                spec[key] = settings.RECOMPUTE_OPTION.resolve(text, "--compare recompute")
            except InputError as err:
                raise PlanError(str(err)) from None
        elif key == "zero":
            spec[key] = parse_whole("--compare zero", text, least=0, most=3)
        elif key in ("sp", "raf"):
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


# -- the layouts -------------------------------------------------------------------------------------

def enumerate_layouts(req: Request) -> dict[str, np.ndarray]:
    """Every (t, p, v, c, e, d, mb) satisfying the divisibility rules and the fixed choices, as
    integer arrays (with m = batch / (d · mb)); before any memory check."""
    model, n = req.model, req.gpus
    fixed = lambda values, x: values if x is None else values[values == x]  # noqa: E731
    ts = fixed(np.array(_tensor_sizes(req), dtype=np.int64), req.tp)
    ps = fixed(_divisors(model.layers), req.pp)
    ps = ps[n % ps == 0]
    pairs = [(int(x), int(v)) for x in ps for v in _divisors(model.layers // x) if v == 1 or x >= 2]
    pairs = [(x, v) for x, v in pairs if req.vp is None or v == req.vp]
    cs = fixed(_divisors(req.seq), req.cp)
    cs = cs[n % cs == 0]
    es = fixed(_divisors(model.experts) if model.moe else np.array([1], dtype=np.int64), req.ep)
    if req.micro_batch is not None:
        mbs = np.array([req.micro_batch], dtype=np.int64)
    elif req.micro_batches is not None:             # m fixed: the micro-batch size follows from d, any divisor
        mbs = _divisors(req.batch)
    else:
        mbs = _divisors(req.batch)[: MICRO_BATCH_SEARCH]
        mbs = mbs[mbs <= MICRO_BATCH_SEARCH]
    pv = np.array(pairs, dtype=np.int64).reshape(-1, 2)
    if not (ts.size and pv.size and cs.size and es.size and mbs.size):
        return {k: np.zeros(0, dtype=np.int64) for k in ("t", "p", "v", "c", "e", "d", "mb", "m")}
    Ti, PVi, Ci, Ei, MBi = (x.ravel() for x in np.meshgrid(np.arange(ts.size), np.arange(len(pv)),
                                                          np.arange(cs.size), np.arange(es.size),
                                                          np.arange(mbs.size), indexing="ij"))
    T, P, V, C, E, MB = ts[Ti], pv[PVi, 0], pv[PVi, 1], cs[Ci], es[Ei], mbs[MBi]
    tpc = T * P * C
    ok = n % tpc == 0
    D = np.where(ok, n // tpc, 1)
    if req.dp is not None:
        ok &= D == req.dp
    ok &= req.batch % (D * MB) == 0                               # d · mb | global batch
    ok &= (D * C) % E == 0                                        # e inside d·c
    if req.cp_algorithm == "ulysses":
        ok &= (model.heads // T) % C == 0                         # Ulysses: c | a/t
    M = np.where(ok, req.batch // (D * MB), 0)
    if req.micro_batches is not None:
        ok &= M == req.micro_batches
    ok &= (V == 1) | ((M % np.maximum(P, 1)) == 0)                # interleaved: m | p (and p·v | L above)
    return {"t": T[ok], "p": P[ok], "v": V[ok], "c": C[ok], "e": E[ok], "d": D[ok], "mb": MB[ok], "m": M[ok]}


def memory_floor(req: Request, layouts: dict) -> np.ndarray:
    """Bytes no setting can go below: 16 bytes per parameter sharded over all the GPUs (fp16
    weights and gradients, fp32 Adam states, every one sharded: ZeRO-3), and the activations of
    full recomputation with sequence parallel, 2·(s/c)·mb·h/t bytes per layer, of min(p, m)
    micro-batches of L/p layers (symcomm.training.steptime.memory_model holds at least these)."""
    t, p, c, d, m, mb = (layouts[k].astype(np.float64) for k in ("t", "p", "c", "d", "m", "mb"))
    states = 16.0 * req.model.parameters / req.gpus
    activations = 2 * (req.seq / c) * mb * req.model.hidden / t * (req.model.layers / p) * np.minimum(p, m)
    return states + activations


def _base_values(req: Request) -> dict:
    model = req.model
    scale = bytes_per_element(req.dtype)
    out = {**model.values(), "F": model.ffn, "s": req.seq, "b": req.batch,
           **req.hardware.values(scale), **req.hardware.compute_values(req.dtype)}
    out["G"] = req.G
    if model.moe:
        out.update({"F_e": model.moe_ffn or model.ffn, "E_s": model.shared_experts})
    return out


def _options(req: Request, scheme: tuple, recompute: str, sp_on: int, schedule: str) -> tuple:
    return option_key(scheme, recompute, sp_on, schedule, cp=req.cp_algorithm, moe="1" if req.model.moe else "0",
                      embeddings="1" if req.embeddings else "0", tied="1" if req.model.tied else "0",
                      gated=_gated(req.model))


#: the settings a kernel is keyed by (symcomm/_generated): the ones the planner varies or takes from the model
KERNEL_SETTINGS = ("cp", "embeddings", "framework", "gated", "gqa", "moe", "recompute", "reshard_after_forward",
                   "schedule", "sp", "tied", "zero")


def option_key(scheme, recompute, sp_on, schedule, *, cp, moe, embeddings, tied, gated) -> tuple:
    """One option combination of the step model: the run setting (symcomm.training.settings.RunSetting) of this
    scheme and these choices, as its sorted canonical (setting, text) pairs — the key of its kernel."""
    run = settings.RunSetting(
        zero=scheme.zero, framework=scheme.framework, reshard_after_forward=scheme.reshard_after_forward,
        **{name: settings.OPTIONS[name].resolve(value) for name, value in (
            ("sp", sp_on), ("recompute", recompute), ("schedule", schedule), ("cp", cp), ("gqa", 1), ("moe", moe),
            ("embeddings", embeddings), ("tied", tied), ("gated", gated))})
    texts = run.texts()
    return tuple(sorted((name, texts[name]) for name in KERNEL_SETTINGS))


def _kernel(options: tuple, run_bytes: int):
    """(parameters, quantities, function) of this option combination's kernel (symcomm.numbers.kernels): the shipped
    graph (symcomm/planner/kerneldata, read as data, no SymPy), else one built in the process (below)."""
    from ..numbers import kernels

    found = kernels.shipped(options, run_bytes)
    if found is None:
        o = dict(options)
        notes.add(f"no shipped kernel for {run_bytes}-byte elements, cp={o.get('cp')}, embeddings={o.get('embeddings')}, "
                  f"gated={o.get('gated')}, tied={o.get('tied')}, moe={o.get('moe')}: the step model was compiled with "
                  "SymPy in this process (the same numbers, slower to start)")
        found = _built_kernel(options, run_bytes)
    return found.as_tuple()


@functools.lru_cache(maxsize=None)
def _built_kernel(options: tuple, run_bytes: int):
    """A combination no shipped file holds (--no-embeddings, --cp-algorithm ulysses, fp32 or fp8 elements,
    another family shape): its step model built with SymPy and turned into a graph in the process, once,
    then run by the same interpreter as the shipped ones."""
    from . import kernelbuild
    from ..numbers import kernels

    data = kernelbuild.graph_data({}, [(options, run_bytes)])
    return kernels.from_data(data, "the step model")[(options, run_bytes)]


def _all_quantities(options: tuple, run_bytes: int, values: dict, n: int) -> dict:
    """Every quantity the planner reports over n layouts, from the option combination's kernel: one call."""
    params, names, function = _kernel(options, run_bytes)
    with np.errstate(divide="ignore", invalid="ignore"):
        try:
            got = function(*[values[p] for p in params])
        except (ZeroDivisionError, OverflowError) as err:  # scalar parts in plain Python floats
            raise _not_finite("the step model", err) from None
    return {name: np.broadcast_to(np.asarray(x, dtype=np.float64), (n,)) for name, x in zip(names, got)}


@dataclass
class _Block:
    """One option combination and the layouts it applies to."""
    options: tuple
    scheme: tuple
    recompute: str
    sp: int
    rows: np.ndarray              # indices into the layouts
    memory: np.ndarray
    fits: np.ndarray              # memory (when checked) and bubble within bounds
    bound: np.ndarray             # a lower bound on the step time
    compare: np.ndarray           # rows the --compare spec matches
    step: np.ndarray | None = None
    q: dict | None = None         # every quantity over the rows, from the kernel

    def setting(self) -> dict:
        scheme = self.scheme
        reshard = (_frameworks.FRAMEWORKS[scheme.framework].reshard_after_forward
                   if scheme.reshard_after_forward is None else scheme.reshard_after_forward)
        return {"framework": scheme.framework, "zero": scheme.zero,
                "reshard_after_forward": int(scheme.zero == 3 and reshard),
                "recompute": self.recompute, "sp": self.sp}

    def label(self) -> str:
        return f"{self.scheme.name} rc={self.recompute}" + (" sp" if self.sp else "")


@dataclass
class Plan:
    request: Request
    layouts: dict                 # folded rows, best first: column → numpy array
    considered: int               # layouts × option combinations after divisibility
    fitting: int                  # of them within memory (and --max-bubble)
    evaluated: int                # whose step time was computed
    combinations: tuple           # (option combinations timed, option combinations in all)
    seconds: float
    assumptions: tuple[str, ...] = field(default_factory=tuple)
    compare: dict | None = None   # the --compare row, with its rank
    _blocks: list = field(default_factory=list, repr=False)
    _values: dict = field(default_factory=dict, repr=False)
    _layouts: dict = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.layouts["step_time"])

    def rows(self, top: int | None = None, axes: bool = False) -> list[dict]:
        """The first ``top`` rows (all: None) with every column; ``axes``: the first row's per-axis figures."""
        n = len(self) if top is None else min(top, len(self))
        return self._rows(self.layouts["block"][:n], self.layouts["row"][:n], self.layouts["settings"][:n],
                          list(range(1, n + 1)), axes)

    def _rows(self, blocks, rows, settings, ranks, axes: bool = False) -> list[dict]:
        """Rows (each: the option combination ``blocks[i]`` at layout ``rows[i]``), every quantity evaluated
        once per option combination over its rows."""
        run_bytes = bytes_per_element(self.request.dtype)
        req = self.request
        out: list = [None] * len(rows)
        names = ("step_time", "model_flops", "compute_time", "exposed_comm_time", "bubble_time", "optimizer_time",
                 "memory_per_gpu")
        for block_index in np.unique(np.asarray(blocks, dtype=np.int64)):
            chosen = np.flatnonzero(np.asarray(blocks) == block_index)
            at = np.asarray(rows, dtype=np.int64)[chosen]
            values = {k: (v[at] if isinstance(v, np.ndarray) else v) for k, v in self._values.items()}
            block = self._blocks[block_index]
            where = np.searchsorted(block.rows, at)
            got = {name: block.q[name][where] for name in names}
            for j, i in enumerate(chosen):
                layout = {k: int(self._layouts[k][at[j]]) for k in ("t", "p", "v", "c", "e", "d", "mb", "m")}
                step = float(got["step_time"][j])
                out[i] = {"rank": ranks[i], **layout, "schedule": "interleaved" if layout["v"] > 1 else "1f1b",
                          "settings": [self._blocks[k].setting() for k in settings[i]],
                          "labels": [self._blocks[k].label() for k in settings[i]], "step_time": step,
                          "tokens_per_second": req.batch * req.seq / step,
                          "mfu": float(got["model_flops"][j]) / (step * req.gpus * self._values["peak"]),
                          **{name: float(got[name][j]) for name in ("compute_time", "exposed_comm_time",
                                                                      "bubble_time", "optimizer_time")},
                          "memory_bytes": float(got["memory_per_gpu"][j]),
                          "bubble_fraction": (layout["p"] - 1) / (layout["v"] * layout["m"]),
                          "eval_command": shlex.join(eval_words(req, layout, self._blocks[settings[i][0]]))}
        if axes and out:
            first, block = out[0], self._blocks[int(blocks[0])]
            where = int(np.searchsorted(block.rows, int(rows[0])))
            got = {name: float(x[where]) for name, x in block.q.items()}
            first["axes"] = {axis: {"comm_time": got[f"comm_time_{axis}"],
                                    "exposed_comm_time": got[f"exposed_comm_time_{axis}"],
                                    "stage": _stage(axis, first["p"], req.embeddings)}
                             for axis in AXES if f"comm_time_{axis}" in got}
        return out


def eval_words(req: Request, layout: dict, block: _Block) -> list[str]:
    """The ``symcomm eval hybrid`` command that reproduces a row (its step time and memory): the same model,
    hardware, GPUs per node, dtype, batch, seq, layout and every option of its step model, spelled as eval
    spells them (the row's first setting: the others it lists give the same numbers)."""
    from .. import presets

    model = (["--model", req.model.name] if req.model.name in presets.model_names()
             else ["--model-config", req.model.name])
    words = ["symcomm", "eval", "hybrid", *model, "--hardware", req.hardware.name, "--dtype", req.dtype]
    sizes = ("t", "p", "v", "c", "e", "d", "m") if req.model.moe else ("t", "p", "v", "c", "d", "m")
    words += [f"{k}={layout[k]}" for k in sizes if k != "v" or layout["v"] > 1]
    words += [f"b={req.batch}", f"s={req.seq}", f"G={req.G}"]
    words += [f"{k}={v}" for k, v in block.options]
    return words


@functools.lru_cache(maxsize=None)
def _stage(axis: str, stages: int, embeddings: bool) -> str:
    """Which pipeline stage the axis's busiest GPU is on (symcomm.training.terms.busiest_stage)."""
    from ..numbers import kernels

    known = kernels.stage(axis, stages, embeddings)
    if known is not None:
        return known
    from ..training.terms import busiest_stage
    from ..training.subjects import subject

    terms = [term for term in subject("hybrid", embeddings="1" if embeddings else "0", moe="1").terms
             if term.axis == axis]
    return busiest_stage(terms, int(stages))


def _matches(spec: dict, layouts: dict, rows: np.ndarray, block: _Block) -> np.ndarray:
    keep = np.ones(rows.size, dtype=bool)
    for key, value in spec.items():
        if key in ("t", "p", "v", "c", "e", "d", "mb"):
            keep &= layouts[key][rows] == value
    setting = block.setting()
    for key, name in (("zero", "zero"), ("framework", "framework"), ("raf", "reshard_after_forward"),
                      ("recompute", "recompute"), ("sp", "sp")):
        if key in spec and setting[name] != spec[key]:
            keep[:] = False
    return keep


def _not_finite(name: str, err: Exception) -> PlanError:
    return PlanError(f"{name} is not a finite number with these values ({err}): check the hardware's bandwidths, "
                     "peak_flops, hbm_bytes_per_second and step_time")


def _check_finite(name: str, values: np.ndarray) -> None:
    """The last line of defence (as symcomm.training.steptime.check_finite for eval hybrid): a step-model output
    that is inf or nan (a zero bandwidth, peak or eta reaching a division) is refused, never ranked."""
    bad = ~np.isfinite(values)
    if bad.any():
        raise PlanError(f"the step model gives {name} = {values[bad][0]} (not a finite number) with these values: "
                        "check the hardware's bandwidths, peak_flops, hbm_bytes_per_second and step_time")


def _top_steps(best: np.ndarray, new: np.ndarray, top: int) -> np.ndarray:
    """The ``top`` smallest distinct step times (values within TOLERANCE count once) of both."""
    s = np.sort(np.concatenate([best, new]))
    if s.size:
        s = s[np.r_[True, np.diff(s) > TOLERANCE * s[1:]]]
    return s[:top]


def plan(req: Request, top: int | None = None) -> Plan:
    """The layouts that fit, folded and sorted by step time (then memory).  With ``top``, the
    step time is computed only where it can reach the ``top`` best rows or the --compare
    layout; ``None``: everywhere."""
    started = _time.perf_counter()
    check_request(req)
    spec = _compare_spec(req)
    layouts = enumerate_layouts(req)
    model = req.model
    if layouts["t"].size == 0:
        raise PlanError(
            f"no layout fits: need t | heads ({model.heads}) and t | G ({req.G}), p | layers ({model.layers}), "
            f"c | seq ({req.seq}), d = gpus/(t·p·c) and micro-batches dividing batch ({req.batch})"
            + (f", e | experts ({model.experts}) and e | d·c" if model.moe else "")
            + f"; --gpus={req.gpus} with the fixed options leaves none")
    floor_ok = (req.hardware.fits(memory_floor(req, layouts)) if req.memory_check
                else np.ones(layouts["t"].size, dtype=bool))
    if spec:                                                  # the compared layout is shown whatever it holds
        wanted = np.ones(layouts["t"].size, dtype=bool)
        for key in ("t", "p", "v", "c", "e", "d", "mb"):
            if key in spec:
                wanted &= layouts[key] == spec[key]
        if not wanted.any():
            raise PlanError(f"--compare {','.join(f'{k}={v}' for k, v in req.compare)} is not a layout of this "
                            f"request: t·p·c·d must be --gpus={req.gpus} and every divisibility rule hold")
        floor_ok = floor_ok | wanted
    layouts = {k: v[floor_ok] for k, v in layouts.items()}
    run_bytes = bytes_per_element(req.dtype)
    base = _base_values(req)
    values = {**base, **{k: layouts[k].astype(np.float64) for k in ("t", "p", "v", "c", "e", "d", "m")}}
    T, S = layouts["t"], layouts["c"]
    bubble_fraction = (layouts["p"] - 1) / (layouts["v"] * layouts["m"])

    blocks: list[_Block] = []
    for sp_on in (SP_CHOICES if req.sp is None else (req.sp,)):
        if sp_on:
            sp_ok = (T > 1) & ((req.seq // S) % T == 0)          # SP splits the local sequence over t
        else:
            sp_ok = (T == 1) if model.moe else np.ones(T.size, dtype=bool)   # Megatron-Core: MoE with t > 1 needs SP
        for recompute in (RECOMPUTE if req.recompute is None else (req.recompute,)):
            for scheme in _schemes(req):
                for schedule in ("1f1b", "interleaved"):
                    rows = np.flatnonzero(sp_ok & ((layouts["v"] == 1) if schedule == "1f1b" else (layouts["v"] > 1)))
                    if not rows.size:
                        continue
                    options = _options(req, scheme, recompute, sp_on, schedule)
                    sub = {k: (v[rows] if isinstance(v, np.ndarray) else v) for k, v in values.items()}
                    q = _all_quantities(options, run_bytes, sub, rows.size)
                    memory = q["memory_per_gpu"]
                    fits = bubble_fraction[rows] <= req.max_bubble
                    if req.memory_check:                  # eval hybrid's rule too (one function)
                        fits &= req.hardware.fits(memory)
                    compute, optimizer = q["compute_time"], q["optimizer_time"]
                    for name, got in (("memory_per_gpu", memory), ("compute_time", compute),
                                      ("optimizer_time", optimizer)):
                        _check_finite(name, got)
                    block = _Block(options, scheme, recompute, sp_on, rows, memory, fits,
                                   compute * (1 + bubble_fraction[rows]) + optimizer,
                                   np.zeros(rows.size, dtype=bool), q=q)
                    if spec:
                        block.compare = _matches(spec, layouts, rows, block)
                    blocks.append(block)

    def time_block(block: _Block) -> None:
        block.step = block.q["step_time"]
        _check_finite("step_time", block.step)
        if np.any(block.step < block.bound * (1 - 1e-9)):
            raise RuntimeError("the step model's step time fell below compute · (1 + bubble fraction) + optimizer: "
                               "symcomm.planner's pruning bound no longer holds for it")

    # the compared layout first: its step time bounds what must be evaluated for its rank
    compare_step = -np.inf
    for block in blocks:
        if block.compare.any():
            time_block(block)
            compare_step = max(compare_step, float(np.min(block.step[block.compare])))
    if spec and compare_step == -np.inf:
        raise PlanError(f"--compare {','.join(f'{k}={v}' for k, v in req.compare)} matches no layout of this "
                        "request (its settings are not searched: check --sp, --recompute, --zero, --framework)")
    best = np.zeros(0)
    lowest = [float(np.min(b.bound[b.fits])) if b.fits.any() else np.inf for b in blocks]
    for i in np.argsort(lowest, kind="stable"):
        block = blocks[i]
        if lowest[i] == np.inf:
            break
        threshold = np.inf if top is None or best.size < top else best[top - 1]
        if lowest[i] > max(threshold, compare_step) * (1 + 1e-6):
            break                                             # sorted: every later block is slower still
        if block.step is None:
            time_block(block)
        if top is not None:
            best = _top_steps(best, block.step[block.fits], top)
    done = [(i, b) for i, b in enumerate(blocks) if b.step is not None]
    if not any(b.fits.any() for b in blocks):
        raise PlanError(
            "no layout fits"
            + (f" in {human_size(req.hardware.memory_bytes)} per GPU ({req.hardware.name})" if req.memory_check else "")
            + (f" with a bubble ≤ {req.max_bubble}" if req.max_bubble < 1 else "")
            + "; try more --gpus, a smaller --micro-batch, a larger --max-bubble, or --no-memory-check")
    folded = _fold(layouts, [(i, b) for i, b in done])
    result = Plan(req, folded, sum(b.rows.size for b in blocks), int(sum(b.fits.sum() for b in blocks)),
                  sum(b.rows.size for _, b in done), (len(done), len(blocks)), 0.0,
                  ASSUMPTIONS + ((MEMORY_ASSUMPTION,) if req.memory_check else ("memory not checked",)),
                  None, blocks, values, layouts)
    if spec:
        result.compare = _compared(result, spec, done)
    result.seconds = _time.perf_counter() - started
    return result


def _fold(layouts: dict, done: list) -> dict:
    """Rows of one layout whose step times and memories agree (within TOLERANCE) become one row
    listing every setting that gives them; the rows sorted by step time, then memory."""
    keys = ("t", "p", "v", "c", "e", "d", "mb")
    parts = [(i, b.rows[b.fits], b.step[b.fits], b.memory[b.fits]) for i, b in done if b.fits.any()]
    if not parts:
        return {k: np.zeros(0) for k in (*keys, "m", "step_time", "memory_bytes", "block", "row")} | {"settings": []}
    block = np.concatenate([np.full(r.size, i) for i, r, _, _ in parts])
    row = np.concatenate([r for _, r, _, _ in parts])
    step = np.concatenate([s for _, _, s, _ in parts])
    memory = np.concatenate([m for _, _, _, m in parts])
    cols = [layouts[k][row] for k in keys]
    # by layout, then memory: equal memories adjacent
    order = np.lexsort((step, memory, *cols[::-1]))
    cols_o = [c[order] for c in cols]
    same_layout = np.r_[False, np.all([c[1:] == c[:-1] for c in cols_o], axis=0)]
    mem_o = memory[order]
    new_memory = ~same_layout | np.r_[True, np.abs(np.diff(mem_o)) > TOLERANCE * mem_o[1:]]
    memory_group = np.empty(row.size, dtype=np.int64)
    memory_group[order] = np.cumsum(new_memory)
    # within a (layout, memory) group, by step time
    order = np.lexsort((step, memory_group))
    grp_o, step_o = memory_group[order], step[order]
    new = np.r_[True, (grp_o[1:] != grp_o[:-1]) | (np.abs(np.diff(step_o)) > TOLERANCE * step_o[1:])]
    group = np.cumsum(new) - 1
    # each folded row shows one member: their step times and memories are the same number (within TOLERANCE),
    # so the first setting in search order, not the one rounding happens to make faster by 1e-16
    first = np.lexsort((block[order], group))
    heads = order[first[np.r_[True, group[first][1:] != group[first][:-1]]]]
    ranked = np.lexsort((memory[heads], step[heads]))
    heads = heads[ranked]
    out = {k: layouts[k][row[heads]] for k in (*keys, "m")}
    out.update({"step_time": step[heads], "memory_bytes": memory[heads], "block": block[heads], "row": row[heads]})
    out["settings"] = _Settings(group, block[order], ranked)
    return out


class _Settings:
    """The settings (block indices, sorted, each once) of every folded row, in rank order: a sequence
    whose items are built when read (the planner shows a few of maybe 10⁵ rows)."""

    def __init__(self, groups: np.ndarray, blocks: np.ndarray, ranked: np.ndarray):
        width = int(blocks.max()) + 1 if blocks.size else 1
        pairs = np.unique(groups.astype(np.int64) * width + blocks.astype(np.int64))
        self._groups, self._blocks, self._ranked = pairs // width, pairs % width, ranked

    def __len__(self) -> int:
        return int(self._ranked.size)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        g = int(self._ranked[index])
        low, high = np.searchsorted(self._groups, (g, g + 1))
        return [int(b) for b in self._blocks[low:high]]

    def __iter__(self):
        return (self[i] for i in range(len(self)))


def _compared(result: Plan, spec: dict, done: list) -> dict:
    """The best layout matching --compare (fitting ones first), with its rank among the folded rows:
    1 + the rows strictly faster."""
    candidates = []
    for i, block in done:
        for j in np.flatnonzero(block.compare):
            candidates.append((not bool(block.fits[j]), float(block.step[j]), float(block.memory[j]), i, int(j)))
    fits_not, step, _, i, j = min(candidates)
    block = result._blocks[i]
    row = int(block.rows[j])
    same = [k for k, b in done if b.compare.any() and _same_row(b, row) is not None
            and abs(b.step[_same_row(b, row)] - step) <= TOLERANCE * step
            and abs(b.memory[_same_row(b, row)] - block.memory[j]) <= TOLERANCE * block.memory[j]]
    faster = int(np.sum(result.layouts["step_time"] < step * (1 - TOLERANCE)))
    out = result._rows([i], [row], [sorted(set(same))], [faster + 1], axes=True)[0]
    out["fits"] = not fits_not
    out["matching"] = len(candidates)
    return out


def _same_row(block: _Block, row: int):
    hit = np.flatnonzero(block.rows == row)
    return int(hit[0]) if hit.size else None


# -- output ------------------------------------------------------------------------------------------

UNITS = {"step_time": "s", "compute_time": "s", "exposed_comm_time": "s", "bubble_time": "s",
         "optimizer_time": "s", "comm_time": "s", "memory_bytes": "bytes", "memory_bytes_per_gpu": "bytes",
         "tokens_per_second": "tokens/s", "mfu": "fraction of peak", "bubble_fraction": "fraction", "seconds": "s"}


def to_json(p: Plan, top: int) -> dict:
    req = p.request
    return {
        "model": req.model.name, "model_title": req.model.title, "parameters": req.model.parameters,
        "hardware": req.hardware.name, "hardware_title": req.hardware.title,
        "gpus": req.gpus, "gpus_per_node": req.G, "batch": req.batch, "seq": req.seq,
        "dtype": req.dtype, "bytes_per_element": bytes_per_element(req.dtype), "cp_algorithm": req.cp_algorithm,
        "fixed": {k: getattr(req, k) for k in ("tp", "pp", "vp", "dp", "cp", "ep", "micro_batch", "micro_batches", "zero",
                                               "framework", "recompute", "sp") if getattr(req, k) is not None},
        "memory_check": req.memory_check, "embeddings": req.embeddings, "max_bubble": req.max_bubble,
        "memory_bytes_per_gpu": req.hardware.memory_bytes,
        "layouts_considered": p.considered, "layouts_fitting": p.fitting, "layouts_evaluated": p.evaluated,
        "option_combinations": {"compiled": p.combinations[0], "in_all": p.combinations[1]},
        "rows": len(p), "seconds": p.seconds,
        "assumptions": list(p.assumptions),
        "units": UNITS,
        "layouts": p.rows(top, axes=True),
        "compare": p.compare,
    }


CSV_COLUMNS = ("rank", "t", "p", "v", "c", "e", "d", "mb", "m", "schedule", "step_time_s", "tokens_per_second",
               "mfu", "compute_time_s", "exposed_comm_time_s", "bubble_time_s", "memory_bytes", "bubble_fraction",
               "fits", "settings", "eval_command")


def to_csv(p: Plan, top: int) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    rows = [(row, True) for row in p.rows(top)] + ([(p.compare, p.compare["fits"])] if p.compare else [])
    for row, fits in rows:
        writer.writerow([row["rank"], row["t"], row["p"], row["v"], row["c"], row["e"], row["d"], row["mb"],
                         row["m"], row["schedule"], repr(row["step_time"]), repr(row["tokens_per_second"]),
                         repr(row["mfu"]), repr(row["compute_time"]), repr(row["exposed_comm_time"]),
                         repr(row["bubble_time"]), repr(row["memory_bytes"]), repr(row["bubble_fraction"]),
                         int(fits), "; ".join(row["labels"]), row["eval_command"]])
    return buffer.getvalue()


def _line(p: Plan, row: dict, mark) -> str:
    labels = row["labels"]
    shown = " | ".join(labels)
    if len(shown) > 80:
        shown = " | ".join(labels[:2]) + f" | … (+{len(labels) - 2})"
    return (f"{mark:>5} {row['t']:>3} {row['p']:>3} {row['v']:>2} {row['c']:>3} {row['e']:>3} {row['d']:>5} "
            f"{row['mb']:>3} {row['m']:>5} {human_time(row['step_time']):>9} {row['tokens_per_second']:>10,.0f} "
            f"{100 * row['mfu']:>5.1f}% {human_time(row['compute_time']):>9} "
            f"{human_time(row['exposed_comm_time']):>9} {human_time(row['bubble_time']):>9} "
            f"{human_size(row['memory_bytes']):>10}  {shown}")


def _why_out(req: Request, row: dict) -> str:
    """Why the --compare row is not among the rows: its memory (the one rule, Hardware.fits), or its bubble."""
    if req.memory_check and req.hardware.fits(row["memory_bytes"]) is False:
        return (f" — does not fit: {row['memory_bytes']:,.0f} bytes ({human_size(row['memory_bytes'])}) > the GPU's "
                f"{req.hardware.memory_bytes:,.0f} bytes ({human_size(req.hardware.memory_bytes)})")
    return f" — its bubble fraction {row['bubble_fraction']:.3g} exceeds --max-bubble {req.max_bubble:g}"


def to_text(p: Plan, top: int) -> str:
    req = p.request
    lines = [
        f"{req.model.title} (Φ = {req.model.parameters:,}) on {req.gpus} × {req.hardware.name} "
        f"({req.G} per node), batch {req.batch}, seq {req.seq}, {req.dtype}: ranked by step time",
        f"{p.considered:,} layouts × settings considered, {p.fitting:,} fit"
        + (" in memory" if req.memory_check else "") + f", {p.evaluated:,} timed "
        f"({p.combinations[0]} of {p.combinations[1]} option combinations timed: in the others compute · (1 + "
        f"bubble) + optimizer alone is slower than row {top}" + (" and the compared layout" if p.compare else "")
        + f"), in {human_time(p.seconds)}",
        "",
        f"{'#':>5} {'t':>3} {'p':>3} {'v':>2} {'c':>3} {'e':>3} {'d':>5} {'mb':>3} {'m':>5} {'step':>9} "
        f"{'tokens/s':>10} {'MFU':>6} {'compute':>9} {'exposed':>9} {'bubble':>9} {'memory':>10}  settings",
    ]
    rows = p.rows(top, axes=True)
    for row in rows:
        lines.append(_line(p, row, row["rank"]))
    if p.compare:
        row = p.compare
        lines += ["", f"--compare ({row['matching']:,} matching layouts × settings, the fastest shown): rank "
                  f"{row['rank']:,} by step time (1 + the rows faster than it)"
                  + ("" if row["fits"] else _why_out(req, row) + "; the rank is where its step time would place it"),
                  _line(p, row, row["rank"])]
        if rows:
            lines.append(f"      the first row is {row['step_time'] / rows[0]['step_time']:.3f}× faster by the model"
                         if row["step_time"] >= rows[0]["step_time"] else
                         "      it is faster than the first row (it does not fit or is outside --max-bubble)")
    if rows or p.compare:
        lines += ["", "each row as an eval command (the same step time and memory; its first setting):"]
        lines += [f"{row['rank']:>5}  {row['eval_command']}" for row in rows]
        if p.compare:
            lines.append(f"{'cmp':>5}  {p.compare['eval_command']}")
    if rows:
        best = rows[0]
        lines += ["", "best layout, per axis (communication alone; the part on the critical path; which stage its "
                      "busiest GPU is on):"]
        for axis, got in best["axes"].items():
            lines.append(f"  {axis}: {human_time(got['comm_time'])}; {human_time(got['exposed_comm_time'])}; "
                         f"{got['stage']}")
    lines += ["", "assumptions:"] + [f"  - {a}" for a in p.assumptions]
    return "\n".join(lines)


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
    ("--recompute", None, f"fix activation recomputation: {', '.join(RECOMPUTE)} (0 = none, 1 = full); recompute=..."),
    ("--sp", None, "fix sequence parallel: 0 or 1; sp=..."),
    ("--cp-algorithm", None, "context-parallel algorithm: ring (default) or ulysses; cp=..."),
    ("--compare", None, f"show this layout with its rank: KEY=VALUE,... with keys {', '.join(COMPARE_KEYS)} "
                        "(mb = micro-batch, raf = reshard after forward); keys left out: the best matching"),
    ("--no-memory-check", False, "keep layouts that do not fit in the hardware's memory per GPU"),
    ("--no-embeddings", False, "spread the embedding and LM head over the stages (Φ/(t·p) everywhere) instead of "
                               "the end stages; embeddings=0"),
    ("--max-bubble", None, "drop layouts whose pipeline bubble fraction (p−1)/(v·m) exceeds this (default 1: keep "
                           "all)"),
    ("--top", None, "rows to show (default 10)"),
    ("--json", False, "JSON (seconds, bytes)"),
    ("--csv", False, "CSV (seconds, bytes)"),
)
#: what a flag left out means (the parser's defaults are None, so a KEY=VALUE word can tell it was not given)
DEFAULTS = {"dtype": "bf16", "cp_algorithm": "ring", "max_bubble": "1", "top": "10"}
#: eval's KEY=VALUE spellings (``symcomm eval hybrid t=8 p=4 ...``) of plan's options: plan takes them as words
KEYS = {"t": "tp", "p": "pp", "v": "vp", "d": "dp", "c": "cp", "e": "ep", "mb": "micro_batch", "m": "micro_batches",
        "zero": "zero", "framework": "framework", "recompute": "recompute", "sp": "sp", "b": "batch", "s": "seq",
        "N": "gpus", "G": "gpus_per_node", "gpus_per_node": "gpus_per_node", "cp": "cp_algorithm",
        "embeddings": "no_embeddings"}


def _dest(flag: str) -> str:
    return flag[2:].replace("-", "_")


#: bounds on every number the planner takes, named in its errors (the enumeration loops over
#: divisors of these: they keep it finite)
LIMITS = {"gpus": 2 ** 21, "gpus-per-node": 1024, "batch": 2 ** 24, "seq": 2 ** 24, "micro-batch": 2 ** 16,
          "micro-batches": 2 ** 24, "top": 10 ** 6, "tp": 1024, "pp": 2 ** 21, "vp": 2 ** 21, "dp": 2 ** 21,
          "cp": 2 ** 21, "ep": 2 ** 21}


def namespace(**values) -> types.SimpleNamespace:
    """The command's options from Python values (``symcomm.plan``): each as the text the command line would
    carry (int → '8', float → repr: 8.0 → '8.0', as ``--top 8.0``; text as given; True/False only for the
    on/off flags), a KEY=VALUE name (t=8) as a word; what is left out takes the parser's default.  Nothing is
    checked here but the names and types: :func:`request_from_args` checks the values, for both."""
    flags = {_dest(flag): default for flag, default, _ in FLAGS}
    args = dict(flags, assignments=[])
    for name, value in values.items():
        if value is None:
            continue
        if name not in flags and name not in KEYS:
            raise InputError(f"plan has no option {name!r}; choose {', '.join(sorted(flags))} or "
                             f"{', '.join(KEYS)} (as eval spells them)")
        switch = name in flags and flags[name] is False
        shown = f"--{name.replace('_', '-')}" if name in flags else name
        if switch != isinstance(value, bool):
            raise InputError(f"{shown}={value!r} is not allowed: {shown} takes " +
                             ("True or False" if switch else "a number or text, as on the command line"))
        if switch:
            args[name] = value
            continue
        if not isinstance(value, (int, float, str)):
            raise InputError(f"{shown}={value!r} is not allowed: {shown} takes a number or text, as on the command "
                             "line")
        text = repr(value) if isinstance(value, float) else str(value)
        if name in KEYS and name not in flags:
            args["assignments"].append(f"{name}={text}")
        else:
            args[name] = text
    return types.SimpleNamespace(**args)


def _merge_assignments(args) -> None:
    """KEY=VALUE words (eval's spellings) into the flags they stand for; a flag given too with another value is
    refused naming both."""
    seen: dict = {}
    for word in getattr(args, "assignments", None) or ():
        key, eq, text = str(word).partition("=")
        if not eq or not key or not text:
            raise PlanError(f"{word!r} is not KEY=VALUE; write for example t=8 p=4 d=32")
        if key not in KEYS:
            raise PlanError(f"plan takes no {key}=...; the KEY=VALUE words it takes: {', '.join(KEYS)}")
        dest = KEYS[key]
        if dest in seen:
            raise PlanError(f"{seen[dest]} and {word} give the same option twice; give it once")
        seen[dest] = word
        flag = "--" + dest.replace("_", "-")
        if dest == "no_embeddings":
            if text not in ("0", "1"):
                raise PlanError(f"embeddings={text} is not allowed; choose 0 or 1")
            if args.no_embeddings and text == "1":
                raise PlanError("--no-embeddings and embeddings=1 differ: give one of them")
            args.no_embeddings = text == "0"
            continue
        given = getattr(args, dest)
        if given is not None and not _same(dest, str(given), text):
            raise PlanError(f"{flag} {given} and {word} differ: give one of them")
        setattr(args, dest, text)


def _same(dest: str, a: str, b: str) -> bool:
    name = dest.replace("_", "-")
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


def _setting(args, name: str):
    """A run setting given as a flag (--zero, --framework, --sp), read by its one Option (symcomm.training.settings,
    as eval reads zero=, framework=, sp=); None when not given."""
    text = getattr(args, name)
    if text is None:
        return None
    try:
        value = settings.OPTIONS[name].resolve(str(text), f"--{name}")
    except InputError as err:
        raise PlanError(str(err)) from None
    return int(value) if name == "sp" else value


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
    if seq > LIMITS["seq"]:
        raise InputError(f"the model's sequence {seq:,} is above the planner's limit {LIMITS['seq']:,}; give --seq")
    if args.cp is not None and str(args.cp) in CP_ALGORITHMS:
        raise PlanError(f"--cp={args.cp} is not allowed: --cp is the context-parallel size (a whole number); "
                        f"the algorithm is --cp-algorithm {' or '.join(CP_ALGORITHMS)}")
    dtype = args.dtype if args.dtype is not None else DEFAULTS["dtype"]
    bytes_per_element(dtype)
    max_bubble = args.max_bubble if args.max_bubble is not None else DEFAULTS["max_bubble"]
    return Request(model=model, hardware=hardware, gpus=_whole(args, "gpus"), batch=_whole(args, "batch"),
                   seq=seq, gpus_per_node=_whole(args, "gpus-per-node"), dtype=dtype,
                   cp_algorithm=args.cp_algorithm if args.cp_algorithm is not None else DEFAULTS["cp_algorithm"],
                   memory_check=not args.no_memory_check, embeddings=not args.no_embeddings,
                   max_bubble=parse_real("--max-bubble", str(max_bubble), least=0, most=10 ** 6),
                   tp=_whole(args, "tp"), pp=_whole(args, "pp"), vp=_whole(args, "vp"), dp=_whole(args, "dp"),
                   cp=_whole(args, "cp"), ep=_whole(args, "ep"), micro_batch=_whole(args, "micro-batch"),
                   micro_batches=_whole(args, "micro-batches"),
                   zero=_setting(args, "zero"), framework=_setting(args, "framework"),
                   recompute=args.recompute, sp=_setting(args, "sp"),
                   compare=parse_compare(args.compare) if args.compare is not None else ())


def top_from_args(args) -> int:
    """--top, checked as every other number (1 to LIMITS['top'])."""
    return _whole(args, "top")
