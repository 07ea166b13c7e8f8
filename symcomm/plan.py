"""The layout planner: every valid (d, t, p, c, e, ZeRO stage, SP, recompute) layout, ranked
by the hybrid strategy's communication time.

    symcomm plan --model llama3-70b --gpus 1024 --gpus-per-node 8 --hardware h100 \\
                 --batch 1024 --seq 8192 [--top 10] [--json]

The layouts are enumerated as numpy arrays and every option combination's per-axis time
is one call of a float evaluator (:func:`symcomm.evaluate.fast`) over all layouts;
no SymPy runs per layout.  The time is the α-β-γ communication time per training step of
the busiest GPU, summed over the axes (no overlap with computation or between axes).

Memory (a simple check, on by default): mixed-precision Adam keeps 16 bytes per parameter
(2 weights + 2 gradients + 12 optimizer states), of which ZeRO stage 1/2/3 shards 12, 14,
16 over the data-parallel group (Rajbhandari et al. 2020, §3.1 and Fig. 1) — following the
data-parallel schedule: gradients reduced once per step are held whole (ZeRO-1's 2 bytes; 4 in
Megatron's fp32 gradient buffer), parameters kept from the forward to the backward
(SHARD_GRAD_OP) are held whole; activations per
layer and micro-batch are s·b·h·(10 + 24/t) bytes, or 34·s·b·h/t with sequence parallel
(Korthikanti et al. 2022, Table 2, with the 5·a·s²·b attention-score term dropped as flash
attention does), 2·s·b·h (÷ t with SP) with full recomputation, with s → s/c under context
parallelism; the first 1F1B stage holds min(p, m) micro-batches of its L/p layers.
"""

from __future__ import annotations

import functools
import json
import time as _time
from dataclasses import dataclass, field

import numpy as np

from .errors import InputError
from .evaluate import fast
from .inputs import parse_real, parse_whole
from .strategies import busiest_stage, cost_in_bytes_of, data_schedule
from .subjects import subject
from .units import bytes_per_element, human_size, human_time

#: in display order
AXES = ("tp", "cp", "ep", "pp", "dp")
#: the data-parallel schemes searched, as (framework, ZeRO stage, reshard_after_forward) — each run the way
#: that framework runs it (symcomm.strategies.data_schedule): Megatron's DDP and distributed optimizer reduce
#: once per step; DeepSpeed ZeRO-2 reduces every micro-batch, ZeRO-3 also gathers in every forward and
#: backward; FSDP FULL_SHARD and SHARD_GRAD_OP (reshard_after_forward=0) reduce every micro-batch
SCHEMES = (("megatron", "0", "framework"), ("megatron", "1", "framework"), ("deepspeed", "2", "framework"),
           ("deepspeed", "3", "framework"), ("fsdp", "3", "1"), ("fsdp", "3", "0"))

ASSUMPTIONS = (
    "time = α-β-γ communication time of the busiest GPU per training step (forward + backward), "
    "each axis on its own group, axes summed: no overlap with computation or between axes",
    "hybrid strategy of symcomm (Megatron rank order t, c, d, p; a group uses the inter-node α, β once "
    "the ranks it spans exceed the GPUs per node; the busiest pipeline stage sends forward across nodes once "
    "the pipeline spans nodes, backward too when t·c·d ≥ GPUs per node); ring collectives; 1F1B schedule; micro-batch of "
    "--micro-batch sequences, m = batch / (d · micro-batch)",
    "data-parallel schemes as the frameworks run them over the m micro-batches: megatron zero 0/1 (DDP, "
    "distributed optimizer: gradients reduced once per step), deepspeed zero 2 (reduce-scatter every micro-batch) "
    "and 3 (also all-gather in every forward and backward: the same traffic as FSDP FULL_SHARD, fsdp raf=1), "
    "fsdp zero 3 raf=0 (SHARD_GRAD_OP: gathered once per micro-batch, kept for the backward); no no_sync; "
    "sequence parallel re-all-gathers its inputs in the backward except under fsdp (torch tensor parallel)",
    "MoE with t > 1 only with sequence parallel (Megatron-Core refuses it otherwise)",
    "embedding and LM head (V × h, vocabulary-parallel) on the first and last stages: tp and dp are the last "
    "stage's GPU (LM head, cross-entropy, larger shard), pp an interior stage's (--no-embeddings: spread evenly)",
    "pipeline bubble not added to the time (shown as a fraction); no compute time modelled",
    "bytes on the wire = elements × bytes of --dtype, except the gradient reductions megatron runs in fp32 "
    "(4 bytes; Megatron-LM arguments.py for bf16); β = 1 / per-direction bandwidth per GPU",
)
MEMORY_ASSUMPTION = ("memory check: 16 bytes/parameter mixed-precision Adam (18 under megatron: an fp32 gradient "
                     "buffer), ZeRO sharding over the "
                     "data-parallel group; activations per Korthikanti et al. 2022 Table 2 without the "
                     "attention-score term (flash attention); no allowance for logits, buffers, fragmentation")


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
    micro_batch: int = 1
    dtype: str = "bf16"
    cp: str = "ring"
    memory_check: bool = True
    recompute: tuple[str, ...] = ("0", "1")
    max_bubble: float = 1.0        # drop layouts whose 1F1B bubble fraction (p − 1)/m exceeds this
    embeddings: bool = True        # the embedding and LM head (V × h) on the end stages: hybrid embeddings=1

    @property
    def G(self) -> int:
        return self.hardware.gpus_per_node if self.gpus_per_node is None else self.gpus_per_node


@dataclass
class Plan:
    request: Request
    layouts: dict                 # column name → numpy array, sorted best first
    per_axis: dict                # axis → {"time": array, "send": array (bytes)}
    considered: int
    seconds: float
    assumptions: tuple[str, ...] = field(default_factory=tuple)

    def __len__(self) -> int:
        return len(self.layouts["time"])

    def rows(self, top: int | None = None) -> list[dict]:
        n = len(self) if top is None else min(top, len(self))
        out = []
        for i in range(n):
            row = {key: _py(col[i]) for key, col in self.layouts.items()}
            row["axes"] = {axis: {"time": float(v["time"][i]), "send_bytes": float(v["send"][i]),
                                  "stage": _stage(axis, row["p"], self.request.embeddings)}
                           for axis, v in self.per_axis.items()}
            out.append(row)
        return out


def _py(value):
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return float(value)
    if isinstance(value, np.bool_):
        return bool(value)
    return value


def _divisors(n: int) -> np.ndarray:
    small = [i for i in range(1, int(n ** 0.5) + 1) if n % i == 0]
    return np.array(sorted(set(small + [n // i for i in small])), dtype=np.int64)


# -- the symbolic side: per-axis expressions of each option combination, built once -------------

@functools.lru_cache(maxsize=None)
def _axis_evaluators(options: tuple[tuple[str, str], ...], run_bytes: int = 2) -> dict:
    """axis → (float evaluator of its time, of its send), the hybrid subject with these options,
    counted in elements of ``run_bytes`` bytes (fp32 gradient terms widened), built once per option
    combination in this process.  Nothing is kept on disk: no code is ever loaded from a cache."""
    by_axis: dict = {}
    for term in subject("hybrid", **dict(options)).terms:
        by_axis.setdefault(term.axis, []).append(term)
    return {axis: (fast(cost.time), fast(cost.send))
            for axis, cost in ((axis, cost_in_bytes_of(terms, run_bytes)) for axis, terms in by_axis.items())}


@functools.lru_cache(maxsize=None)
def _stage(axis: str, stages: int, embeddings: bool) -> str:
    """Which pipeline stage the axis's busiest GPU is on (symcomm.strategies.busiest_stage)."""
    terms = [term for term in subject("hybrid", embeddings="1" if embeddings else "0", moe="1").terms
             if term.axis == axis]
    return busiest_stage(terms, int(stages))


def _bubble(schedule: str = "1f1b"):
    return fast(subject("hybrid", schedule=schedule).extras["bubble_fraction"])


# -- the plan ------------------------------------------------------------------------------------

def check_request(req: Request) -> None:
    for name, value in (("--gpus", req.gpus), ("--batch", req.batch), ("--seq", req.seq),
                        ("--gpus-per-node", req.G), ("--micro-batch", req.micro_batch)):
        most = LIMITS[name[2:]]
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or not 1 <= value <= most:
            raise PlanError(f"{name}={value} is not allowed: {name} takes a whole number from 1 to {most:,}")
    if req.gpus > req.G and req.gpus % req.G:
        raise PlanError(f"--gpus={req.gpus} is not allowed: with --gpus-per-node={req.G} it must be a multiple "
                        f"of {req.G} (whole nodes) or at most {req.G}")
    if req.cp not in ("ring", "ulysses"):
        raise PlanError(f"--cp={req.cp} is not allowed; choose ring or ulysses")
    if not 0 <= req.max_bubble < float("inf"):
        raise PlanError(f"--max-bubble={req.max_bubble} is not allowed: it takes a fraction ≥ 0")
    if req.batch % req.micro_batch:
        raise PlanError(f"--batch={req.batch} is not allowed: it must be a multiple of --micro-batch={req.micro_batch}")
    bytes_per_element(req.dtype)


def enumerate_layouts(req: Request) -> dict[str, np.ndarray]:
    """Every (t, p, c, e, d) satisfying the divisibility rules, as integer arrays."""
    model, n, G = req.model, req.gpus, req.G
    ts = _divisors(np.gcd(model.heads, G))                        # t | heads and t | G: a TP group in a node
    ts = ts[(model.kv_heads % ts == 0) | (ts <= 1)]               # K, V heads split evenly too
    ps = _divisors(model.layers)                                  # p | L
    cs = _divisors(req.seq)                                       # c | s
    es = _divisors(model.experts) if model.moe else np.array([1], dtype=np.int64)
    T, P, C, E = (x.ravel() for x in np.meshgrid(ts, ps, cs, es, indexing="ij"))
    tpc = T * P * C
    ok = (n % tpc == 0)
    D = np.where(ok, n // np.maximum(tpc, 1), 0)
    ok &= D >= 1
    ok &= (req.batch % np.maximum(D, 1) == 0)                     # d | global batch
    ok &= ((req.batch // np.maximum(D, 1)) % req.micro_batch == 0)
    ok &= ((D * C) % E == 0)                                      # e inside d·c
    if req.cp == "ulysses":
        ok &= (model.heads // T) % C == 0                         # Ulysses: c | a/t
    ok &= P <= model.layers
    M = np.where(ok, req.batch // np.maximum(D * req.micro_batch, 1), 0)
    return {"t": T[ok], "p": P[ok], "c": C[ok], "e": E[ok], "d": D[ok], "m": M[ok]}


def _memory(req: Request, L: dict, zero: str, sp_on: str, recompute: str, schedule=None) -> np.ndarray:
    """Bytes per GPU: model states under ZeRO + activations of the first pipeline stage.

    ``schedule`` (a :class:`symcomm.strategies.DataSchedule`; default: the stage as DeepSpeed
    runs it) decides what is held whole: 2 bytes of weights unless ZeRO-3 reshards them after
    the forward, 2 bytes of gradients unless they are sharded *and* reduced every micro-batch,
    12 bytes of optimizer states unless ZeRO ≥ 1."""
    model = req.model
    schedule = schedule or data_schedule("deepspeed", int(zero))
    t, p, c, d, e, m = (L[k].astype(np.float64) for k in ("t", "p", "c", "d", "e", "m"))
    phi_e = float(model.expert_parameters)
    dense = (float(model.parameters) - phi_e) / (t * p)
    if req.embeddings:
        # the end stages hold their L/p layers' share and a V·h embedding (or LM head, or tied copy)
        vh = float(model.vocab) * model.hidden
        in_phi = vh * (1 if model.tied else 2)
        whole = float(model.parameters) - phi_e
        dense = np.where(p == 1, whole / t, ((whole - in_phi) / p + vh) / t)
    experts = phi_e / (e * t * p)
    states = 0.0
    for shard, group in ((dense, d * c), (experts, d * c / e)):
        weights = 2 * shard if schedule.full_parameters else 2 * shard / group
        grad = 4 if schedule.grad_dtype == "fp32" else 2          # Megatron's fp32 gradient buffer: 4 bytes
        gradients = grad * shard if schedule.full_gradients else grad * shard / group
        optimizer = 12 * shard if schedule.zero == 0 else 12 * shard / group
        states = states + weights + gradients + optimizer
    sbh = (req.seq / c) * req.micro_batch * model.hidden
    if recompute == "1":
        per_layer = 2 * sbh / (t if sp_on == "1" else 1)
    elif sp_on == "1":
        per_layer = 34 * sbh / t
    else:
        per_layer = sbh * (10 + 24 / t)
    activations = per_layer * (model.layers / p) * np.minimum(p, m)
    return states + activations


def plan(req: Request) -> Plan:
    """Every valid layout, evaluated and sorted by communication time (then memory)."""
    started = _time.perf_counter()
    check_request(req)
    layouts = enumerate_layouts(req)
    if layouts["t"].size == 0:
        raise PlanError(
            f"no layout fits: need t | heads ({req.model.heads}) and t | G ({req.G}), p | layers ({req.model.layers}), "
            f"c | seq ({req.seq}), d = gpus/(t·p·c) dividing batch ({req.batch}) in micro-batches of {req.micro_batch}"
            + (f", e | experts ({req.model.experts}) and e | d·c" if req.model.moe else "")
            + f"; --gpus={req.gpus} leaves none")
    scale = bytes_per_element(req.dtype)
    hw = req.hardware.values(scale)
    base = {**req.model.values(), "s": req.seq, "b": req.batch, "G": req.G, **hw}
    base["G"] = req.G
    moe = "1" if req.model.moe else "0"
    bubble_of = _bubble("1f1b")

    columns: dict[str, list] = {k: [] for k in ("t", "p", "c", "e", "d", "m", "framework", "zero",
                                                "reshard_after_forward", "sp", "recompute",
                                                "time", "memory_bytes", "bubble_fraction")}
    axes: dict[str, dict[str, list]] = {axis: {"time": [], "send": []} for axis in AXES}
    considered = 0
    for sp_on in ("0", "1"):
        keep_sp = layouts["t"] > 1 if sp_on == "1" else np.ones_like(layouts["t"], dtype=bool)
        if sp_on == "1":
            keep_sp &= ((req.seq // layouts["c"]) % layouts["t"] == 0)   # SP splits the local sequence over t
        elif req.model.moe:
            keep_sp &= layouts["t"] == 1                 # Megatron-Core: MoE with t > 1 needs SP
        sub = {k: v[keep_sp] for k, v in layouts.items()}
        if sub["t"].size == 0:
            continue
        values = {**base, **{k: sub[k].astype(np.float64) for k in ("t", "p", "c", "e", "d", "m")}}
        bubble = np.broadcast_to(bubble_of(**values), sub["t"].shape)
        for recompute in req.recompute:
            for framework, zero, reshard in SCHEMES:
                options = (("zero", zero), ("framework", framework), ("reshard_after_forward", reshard),
                           ("sp", sp_on), ("recompute", recompute), ("schedule", "1f1b"),
                           ("cp", req.cp), ("gqa", "1"), ("moe", moe),
                           ("embeddings", "1" if req.embeddings else "0"), ("tied", "1" if req.model.tied else "0"))
                schedule = data_schedule(framework, int(zero), reshard_after_forward=(
                    "framework" if reshard == "framework" else reshard == "1"))
                n = sub["t"].size
                considered += n
                total = np.zeros(n)
                per = {}
                for axis in AXES:
                    if axis == "ep" and moe == "0":
                        per[axis] = (np.zeros(n), np.zeros(n))
                        continue
                    time_of, send_of = _axis_evaluators(options, scale)[axis]
                    t_axis = np.broadcast_to(time_of(**values), (n,))
                    s_axis = np.broadcast_to(send_of(**values), (n,)) * scale
                    per[axis] = (t_axis, s_axis)
                    total = total + t_axis
                memory = _memory(req, sub, zero, sp_on, recompute, schedule)
                keep = memory <= req.hardware.memory_bytes if req.memory_check else np.ones(n, dtype=bool)
                keep &= bubble <= req.max_bubble
                for k in ("t", "p", "c", "e", "d", "m"):
                    columns[k].append(sub[k][keep])
                columns["framework"].append(np.full(int(keep.sum()), framework, dtype=object))
                columns["zero"].append(np.full(int(keep.sum()), int(zero)))
                columns["reshard_after_forward"].append(
                    np.full(int(keep.sum()), int(schedule.zero == 3 and schedule.reshard_after_forward)))
                columns["sp"].append(np.full(int(keep.sum()), int(sp_on)))
                columns["recompute"].append(np.full(int(keep.sum()), int(recompute)))
                columns["time"].append(total[keep])
                columns["memory_bytes"].append(memory[keep])
                columns["bubble_fraction"].append(bubble[keep])
                for axis in AXES:
                    axes[axis]["time"].append(per[axis][0][keep])
                    axes[axis]["send"].append(per[axis][1][keep])
    merged = {k: np.concatenate(v) if v else np.array([]) for k, v in columns.items()}
    if merged["time"].size == 0:
        raise PlanError(
            f"no layout fits in {human_size(req.hardware.memory_bytes)} per GPU ({req.hardware.name})"
            + (f" with a bubble ≤ {req.max_bubble}" if req.max_bubble < 1 else "")
            + "; try more --gpus, a smaller --micro-batch, a larger --max-bubble, or --no-memory-check")
    order = np.lexsort((merged["memory_bytes"], merged["time"]))
    merged = {k: v[order] for k, v in merged.items()}
    per_axis = {axis: {q: np.concatenate(v[q])[order] for q in ("time", "send")} for axis, v in axes.items()
                if axis != "ep" or req.model.moe}
    if req.cp and not np.any(merged["c"] > 1):
        per_axis.pop("cp", None)
    assumptions = ASSUMPTIONS + ((MEMORY_ASSUMPTION,) if req.memory_check else ("memory not checked",))
    return Plan(req, merged, per_axis, considered, _time.perf_counter() - started, assumptions)


# -- output ------------------------------------------------------------------------------------------

def to_json(p: Plan, top: int) -> dict:
    req = p.request
    return {
        "model": req.model.name, "model_title": req.model.title, "parameters": req.model.parameters,
        "hardware": req.hardware.name, "hardware_title": req.hardware.title,
        "gpus": req.gpus, "gpus_per_node": req.G, "batch": req.batch, "seq": req.seq,
        "micro_batch": req.micro_batch, "dtype": req.dtype, "bytes_per_element": bytes_per_element(req.dtype),
        "cp": req.cp, "memory_check": req.memory_check, "embeddings": req.embeddings, "max_bubble": req.max_bubble,
        "memory_bytes_per_gpu": req.hardware.memory_bytes,
        "layouts_considered": p.considered, "layouts_kept": len(p), "seconds": p.seconds,
        "assumptions": list(p.assumptions),
        "units": {"time": "s", "send_bytes": "bytes", "memory_bytes": "bytes"},
        "layouts": p.rows(top),
    }


def to_text(p: Plan, top: int) -> str:
    req = p.request
    lines = [
        f"{req.model.title} (Φ = {req.model.parameters:,}) on {req.gpus} × {req.hardware.name} "
        f"({req.G} per node), batch {req.batch}, seq {req.seq}, micro-batch {req.micro_batch}, {req.dtype}",
        f"{p.considered:,} layouts evaluated, {len(p):,} kept" + (" (fit in memory)" if req.memory_check else "")
        + f", in {human_time(p.seconds)}",
        "",
    ]
    axes = list(p.per_axis)
    header = f"{'#':>3} {'t':>3} {'p':>3} {'c':>3} {'e':>3} {'d':>5} {'m':>5} {'framework':>9} {'zero':>4} " \
             f"{'raf':>3} {'sp':>2} {'rc':>2} " \
             f"{'time':>10} " + " ".join(f"{a:>10}" for a in axes) + f" {'memory':>10} {'bubble':>6}"
    lines.append(header)
    for i, row in enumerate(p.rows(top), 1):
        lines.append(
            f"{i:>3} {row['t']:>3} {row['p']:>3} {row['c']:>3} {row['e']:>3} {row['d']:>5} {row['m']:>5} "
            f"{row['framework']:>9} {row['zero']:>4} {row['reshard_after_forward']:>3} {row['sp']:>2} "
            f"{row['recompute']:>2} {human_time(row['time']):>10} "
            + " ".join(f"{human_time(row['axes'][a]['time']):>10}" for a in axes)
            + f" {human_size(row['memory_bytes']):>10} {row['bubble_fraction']:>6.3f}")
    if len(p):
        best = p.rows(1)[0]
        lines += ["", "best layout, per axis (time; bytes its busiest GPU sends per step; which stage that GPU is on):"]
        for axis in axes:
            lines.append(f"  {axis}: {human_time(best['axes'][axis]['time'])}; "
                         f"{human_size(best['axes'][axis]['send_bytes'])}; {best['axes'][axis]['stage']}")
    lines += ["", "assumptions:"] + [f"  - {a}" for a in p.assumptions]
    return "\n".join(lines)


# -- CLI -------------------------------------------------------------------------------------------

def register_cli(subparsers) -> None:
    p = subparsers.add_parser("plan", help="rank every valid (d, t, p, c, e, ZeRO, SP) layout by communication time")
    p.add_argument("--model", help="a model preset (see --list)")
    p.add_argument("--model-config", help="path to a Hugging Face config.json")
    p.add_argument("--hardware", default=None, help="a hardware preset")
    p.add_argument("--gpus", help=f"GPUs in the job (1 to {LIMITS['gpus']:,})")
    p.add_argument("--gpus-per-node", default=None, help="GPUs per node (default: the hardware preset's)")
    p.add_argument("--batch", help="global batch (sequences per optimizer step)")
    p.add_argument("--seq", default=None, help="sequence length (default: the model's)")
    p.add_argument("--micro-batch", default="1")
    p.add_argument("--dtype", default="bf16")
    p.add_argument("--cp", default="ring", help="context-parallel algorithm: ring or ulysses")
    p.add_argument("--no-recompute", action="store_true", help="do not consider full activation recomputation")
    p.add_argument("--no-memory-check", action="store_true")
    p.add_argument("--no-embeddings", action="store_true",
                   help="spread the embedding and LM head over the stages (Φ/(t·p) everywhere) instead of the end stages")
    p.add_argument("--max-bubble", default="1",
                   help="drop layouts whose pipeline bubble fraction (p−1)/m exceeds this (default 1: keep all)")
    p.add_argument("--top", default="10", help="rows to show")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=cmd_plan)


#: bounds on every number the planner takes, named in its errors (the enumeration loops over
#: divisors of these: they keep it finite)
LIMITS = {"gpus": 2 ** 21, "gpus-per-node": 1024, "batch": 2 ** 24, "seq": 2 ** 24, "micro-batch": 2 ** 16,
          "top": 10 ** 6}


def _whole(args, name: str, default=None):
    text = getattr(args, name.replace("-", "_"))
    if text is None:
        return default
    return parse_whole(f"--{name}", str(text), least=1, most=LIMITS[name])


def request_from_args(args) -> Request:
    from . import presets

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
    return Request(model=model, hardware=hardware, gpus=_whole(args, "gpus"), batch=_whole(args, "batch"),
                   seq=seq, gpus_per_node=_whole(args, "gpus-per-node"),
                   micro_batch=_whole(args, "micro-batch"), dtype=args.dtype, cp=args.cp,
                   memory_check=not args.no_memory_check, embeddings=not args.no_embeddings, recompute=("0",) if args.no_recompute else ("0", "1"),
                   max_bubble=parse_real("--max-bubble", str(args.max_bubble), least=0, most=10 ** 6))


def cmd_plan(args) -> int:
    req = request_from_args(args)
    top = _whole(args, "top")
    result = plan(req)
    if args.json:
        print(json.dumps(to_json(result, top), indent=2, ensure_ascii=False))
    else:
        print(to_text(result, top))
    return 0
