"""Step time of a hybrid layout: compute, communication, overlap and pipeline bubble as
SymPy expressions, and the memory each GPU holds.

The model (every piece an expression of the symbols of :mod:`symcomm.core.symbols`; times in
seconds, sizes in bytes; one training step = forward + backward of the global batch b in m
micro-batches per data-parallel replica, then the optimizer step):

* **compute** of one micro-batch on the busiest pipeline stage (the last: L/p layers and the
  LM head), split over the t·c GPUs of the stage: hardware FLOPs (:mod:`symcomm.training.flops`,
  recompute included) / (peak · η), where ``peak`` is the datasheet matmul rate at the run's
  dtype and η the share of it the matmuls reach (fitted, see ``derivations/step_time.py``);
* **per micro-batch communication on the critical path**: the hybrid strategy's tp, cp, ep
  and pp terms divided by m — exposed (Megatron runs them between its GEMMs) unless
  ``tp_overlap=1``, which hides tp behind the micro-batch's compute as far as it lasts;
* **pipeline**: (m + (p − 1)/v) slots of one micro-batch each (Narayanan et al. 2021, §2.2:
  the bubble is (p − 1)/v micro-batch times of the busiest stage);
* **data parallel**: the gradient reductions overlap the backward when the framework
  overlaps them (``dp_overlap``), each reduction hiding behind one micro-batch's backward;
  ZeRO-3/FSDP parameter gathers are prefetched behind the forward and backward compute; the
  parameter all-gather after the optimizer step is exposed; exposed = max(0, comm − window);
* **optimizer**: Adam over the GPU's own parameters, memory-bound: each parameter reads and
  writes its fp32 copy and two moments, reads its gradient and writes the 16-bit weight —
  26 bytes + the gradient's bytes, at the HBM bandwidth.

Step time = pipeline + exposed data-parallel communication + optimizer.  The quantities it
reports follow from it: tokens/s = b·s / step; MFU = model FLOPs / (step · GPUs · peak);
HFU likewise with the hardware FLOPs.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import sympy as sp

from . import flops
from . import frameworks as F
from . import settings
from ..base.errors import InputError
from .axes import data_schedule
from .hybrid import end_stage_shard
from .terms import cost_in_bytes_of
from .subjects import subject
from ..core.symbols import L, L_moe, Phi, Phi_E, a, b, c, d, e, eta, h, hbm, kappa, m, p, peak, s, t, v

#: options of the step model beyond the hybrid strategy's own (symcomm.training.settings.STEP_OPTIONS), by name
STEP_OPTIONS = {option.name: option for option in settings.STEP_OPTIONS}
#: the frameworks' DP-overlap defaults and their sources: symcomm.training.frameworks (DP_OVERLAP_SOURCE)
DP_OVERLAP_SOURCE = F.DP_OVERLAP_SOURCE
ADAM_BYTES = 26       # fp32 weight, m, v read and written (24) + the 16-bit weight written (2)


def dp_overlap_of(framework_name: str, zero: int, dp_overlap: bool | None = None) -> bool:
    """Whether the data-parallel gradient reductions overlap the backward: as the framework's row
    says at this ZeRO stage (symcomm.training.frameworks: DP_OVERLAP_SOURCE), unless given explicitly."""
    return F.framework(framework_name).dp_overlap(zero) if dp_overlap is None else bool(dp_overlap)


@dataclass(frozen=True)
class StepModel:
    """The step time and its parts, each a SymPy expression (seconds; bytes for memory)."""
    options: tuple
    compute: sp.Expr                 # compute of the whole step on the busiest GPU (no bubble)
    comm: dict                       # axis → communication time of the step, alone (no overlap)
    exposed: dict                    # axis → the part of it on the critical path
    bubble: sp.Expr
    optimizer: sp.Expr
    step: sp.Expr
    model_flops: sp.Expr             # the whole step, all GPUs
    hardware_flops: sp.Expr
    memory: dict = field(default_factory=dict)   # part → bytes per GPU (the busiest: first stage)

    @property
    def memory_per_gpu(self) -> sp.Expr:
        return sp.Add(*self.memory.values())

    @property
    def comm_time(self) -> sp.Expr:
        return sp.Add(*self.comm.values())

    @property
    def exposed_comm_time(self) -> sp.Expr:
        return sp.Add(*self.exposed.values())

    def quantities(self) -> dict[str, sp.Expr]:
        """Every reported quantity, by its output name."""
        gpus = t * c * d * p
        out = {"step_time": self.step, "compute_time": self.compute, "comm_time": self.comm_time,
               "exposed_comm_time": self.exposed_comm_time, "bubble_time": self.bubble,
               "optimizer_time": self.optimizer, "tokens_per_second": b * s / self.step,
               "mfu": self.model_flops / (self.step * gpus * peak),
               "hfu": self.hardware_flops / (self.step * gpus * peak),
               "model_flops": self.model_flops, "hardware_flops": self.hardware_flops,
               "memory_per_gpu": self.memory_per_gpu}
        out.update({f"comm_time_{axis}": x for axis, x in self.comm.items()})
        out.update({f"exposed_comm_time_{axis}": x for axis, x in self.exposed.items()})
        out.update({f"memory_{part}": x for part, x in self.memory.items()})
        return out


def _max0(x):
    return sp.Max(0, x, evaluate=False)     # same value; SymPy's search for a simpler Max is slow on long x


def _stage_forward_flops(micro, gated, moe, embeddings):
    """Forward FLOPs of one micro-batch on the last stage, before the split over t·c."""
    if moe:
        layers = ((L - L_moe) * flops.layer_forward(micro, s, gated) + L_moe * flops.moe_layer_forward(micro, s, gated)) / p
    else:
        layers = L / p * flops.layer_forward(micro, s, gated)
    return layers + (flops.lm_head_forward(micro, s) if embeddings else 0)


@functools.lru_cache(maxsize=None)
def step_model(run_bytes: int = 2, **options) -> StepModel:
    """The step model of the hybrid layout with these options (the hybrid strategy's, plus
    :data:`STEP_OPTIONS`); values are text, as the command line gives them, read once into a
    :class:`symcomm.training.settings.RunSetting`.  Communication is counted in elements of ``run_bytes``
    bytes (β per element of that size), fp32 terms widened."""
    run = settings.parse(options)
    texts = run.texts()
    hybrid = subject("hybrid", **{option.name: texts[option.name] for option in settings.HYBRID_OPTIONS})
    opts = run.hybrid_options()                              # typed: flags bool, zero int
    recompute, gated, flash = run.recompute, run.gated, run.flash
    moe, embeddings, zero, framework = run.moe, run.embeddings, run.zero, run.framework
    data = data_schedule(framework, zero, run.grad_reduce, run.reshard_after_forward, run.grad_dtype)

    by_axis: dict = {}
    for term in hybrid.terms:
        by_axis.setdefault(term.axis, []).append(term)

    def time_of(terms):
        return cost_in_bytes_of(tuple(terms), run_bytes).time if terms else sp.Integer(0)

    comm = {axis: time_of(terms) for axis, terms in by_axis.items()}

    # compute of one micro-batch on the busiest stage, per GPU
    micro = b / (d * m)
    fwd = _stage_forward_flops(micro, gated, moe, embeddings) / (t * c)
    if recompute == "selective":
        again = L / p * flops.attention_core(micro, s) / (t * c)
    elif recompute == "full":
        again = (fwd - (flops.lm_head_forward(micro, s) / (t * c) if embeddings else 0))
    else:
        again = sp.Integer(0)
    rate = peak * eta
    # the memory-bound kernels (norms, activation functions, dropout, residual adds, softmax) read and
    # write the activations Korthikanti et al. count; κ HBM passes over each stored byte, forward and
    # backward together, a recomputed forward adding its third
    touched = activation_bytes(recompute="none", flash=flash, sp_on=run.sp) * L / p
    if recompute == "full":
        touched = touched * sp.Rational(4, 3)
    elif recompute == "selective" and not flash:
        touched = touched + sp.Rational(1, 3) * _scores(micro) * L / p
    memory_bound = kappa * touched / hbm
    forward_time = fwd / rate + memory_bound / 3
    backward_time = (2 * fwd + again) / rate + 2 * memory_bound / 3
    compute_micro = forward_time + backward_time

    chunks = v if run.schedule == "interleaved" else sp.Integer(1)
    on_path = {axis: comm.get(axis, sp.Integer(0)) / m for axis in ("tp", "cp", "ep", "pp")}
    if run.tp_overlap:
        hidden_tp = _max0(on_path["tp"] - compute_micro)
        on_path = {**on_path, "tp": hidden_tp}
    slot = compute_micro + sum(on_path.values())
    pipeline = (m + (p - 1) / chunks) * slot
    bubble = (p - 1) / chunks * slot

    # data parallel: reductions behind the backward, ZeRO-3 gathers behind the compute, the
    # post-step all-gather (and the tied-embedding all-reduce) exposed
    dp_terms = by_axis.get("dp", [])
    reduce_t = time_of([x for x in dp_terms if x.phase == "backward" and x.primitive != "all_gather"])
    gather_forward = time_of([x for x in dp_terms if x.phase == "forward" and x.primitive == "all_gather"])
    gather_backward = time_of([x for x in dp_terms if x.phase == "backward" and x.primitive == "all_gather"])
    rest_t = time_of([x for x in dp_terms if x.phase not in ("forward", "backward")])
    overlap = dp_overlap_of(framework, zero, run.dp_overlap)
    reductions = data.gradient_reductions(m)
    # what hides behind one window shares it (and the links): the forward gathers behind the m forwards;
    # the backward gathers and, when overlapped, the reductions behind the backwards they follow (every
    # micro-batch's when reduced per micro-batch, the last one's when reduced once per step)
    backward_window = (m if reductions == m else 1) * backward_time
    if overlap:
        exposed_backward = _max0(gather_backward + reduce_t - backward_window)
    else:
        exposed_backward = _max0(gather_backward - m * backward_time) + reduce_t
    exposed_dp = _max0(gather_forward - m * forward_time) + exposed_backward + rest_t

    # the m working slots' communication; the bubble's slots (compute and communication alike) are the bubble
    exposed = {axis: x * m for axis, x in on_path.items()}
    exposed["dp"] = exposed_dp
    exposed = {axis: x for axis, x in exposed.items() if axis in comm}
    comm = {axis: comm[axis] for axis in comm}

    memory = memory_model(data, recompute, opts, flash, moe, embeddings)
    grad_bytes = 4 if data.grad_dtype == "fp32" else 2
    own_params = memory["optimizer"] / 12
    optimizer = own_params * (ADAM_BYTES + grad_bytes) / hbm

    step = pipeline + exposed_dp + optimizer
    compute_total = m * compute_micro
    model = flops.model_flops(b, s, gated, moe)
    hardware = flops.hardware_flops(b, s, recompute, gated, moe)
    key = tuple(sorted(texts.items()))
    return StepModel(key, compute_total, comm, exposed, bubble, optimizer, step, model, hardware, memory)


def _scores(micro):
    """Bytes of the attention scores of one layer and micro-batch on one GPU: the softmax input
    and output (2 bytes each) and the dropout mask (1 byte), a·s² each, split over t heads' groups."""
    return 5 * a * (s / c) ** 2 * micro / t


def activation_bytes(recompute: str, flash: bool, sp_on: bool) -> sp.Expr:
    """Bytes one layer keeps for the backward, per micro-batch and GPU (Korthikanti et al. 2022,
    Table 2), with s → s/c: sbh(10 + 24/t) + 5as²b/t; with sequence parallel 34sbh/t + 5as²b/t;
    selective recompute and flash attention drop the scores; full recompute keeps the input 2sbh
    (/t with sequence parallel)."""
    micro = b / (d * m)
    sbh = (s / c) * micro * h
    scores = 0 if flash or recompute != "none" else _scores(micro)
    if recompute == "full":
        return 2 * sbh / (t if sp_on else 1)
    if sp_on:
        return 34 * sbh / t + scores
    return sbh * (10 + 24 / t) + scores


def memory_model(data, recompute: str, opts: dict, flash: bool, moe: bool, embeddings: bool) -> dict:
    """Bytes per GPU on the first pipeline stage (embedding, most activations in flight):
    weights, gradients and Adam states as ``data`` (the framework's schedule) holds them, and
    activations per Korthikanti et al. 2022 Table 2 (sbh(10 + 24/t + 5as/(ht)) per layer; with
    SP 34sbh/t + 5as²b/t; selective recompute drops the 5as²b/t scores; full recompute keeps
    the layer input 2sbh, /t with SP; flash attention never stores the scores), s → s/c."""
    tied, sp_on = bool(opts["tied"]), bool(opts["sp"])
    dense = (Phi - Phi_E) if moe else Phi
    if embeddings:
        shard = end_stage_shard(dense, tied)
    else:
        shard = dense / (t * p)
    parts = [(shard, d * c)]
    if moe:
        parts.append((Phi_E / (e * t * p), d * c / e))
    weights = grads = optimizer = sp.Integer(0)
    grad_bytes = 4 if data.grad_dtype == "fp32" else 2
    for held, group in parts:
        weights += 2 * held if data.full_parameters else 2 * held / group
        grads += grad_bytes * held if data.full_gradients else grad_bytes * held / group
        optimizer += 12 * held if data.zero == 0 else 12 * held / group
    per_layer = activation_bytes(recompute, flash, sp_on)
    schedule = opts["schedule"]
    if schedule == "gpipe":
        in_flight = m
    else:
        in_flight = sp.Min(p, m)
    if schedule == "interleaved":
        # Korthikanti et al. 2022 §4.2.3 / Narayanan et al. 2021 §2.2.2: the first stage holds
        # (1 + (p − 1)/(p·v)) times the 1F1B activations
        in_flight = in_flight * (1 + (p - 1) / (p * v))
    activations = per_layer * (L / p) * in_flight
    return {"weights": weights, "gradients": grads, "optimizer": optimizer, "activations": activations}


@functools.lru_cache(maxsize=None)
def _evaluators(run_bytes: int, options: tuple):
    from ..numbers.numeric import bundle

    return bundle(step_model(run_bytes, **dict(options)).quantities())


def quantities(values: dict, run_bytes: int = 2, **options) -> dict[str, float]:
    """Every quantity of the step model with these options, at these values (by CLI symbol
    name; floats or numpy arrays), as floats: seconds, bytes, FLOPs, ratios (one compiled function of
    them all, common parts computed once)."""
    return _evaluators(run_bytes, tuple(sorted(options.items())))(**values)


#: what every reported number is in
UNITS = {"step_time": "s", "compute_time": "s", "comm_time": "s", "exposed_comm_time": "s", "bubble_time": "s",
         "optimizer_time": "s", "tokens_per_second": "tokens/s", "mfu": "ratio", "hfu": "ratio",
         "memory_per_gpu": "bytes", "model_flops": "FLOP per step, all GPUs",
         "hardware_flops": "FLOP per step, all GPUs"}

ASSUMPTIONS = (
    "one step = forward + backward of the global batch b, m micro-batches per data-parallel replica, then the "
    "optimizer; the busiest GPU is on the last pipeline stage (its L/p layers and the LM head)",
    "compute = hardware FLOPs (matmuls, 2 per multiply-add, full s×s attention as Narayanan et al. and "
    "Korthikanti et al. count it) / (peak × eta), plus kappa HBM passes over the activation bytes of "
    "Korthikanti et al. Table 2 (the memory-bound kernels)",
    "tensor, context, expert and pipeline communication on the critical path of every micro-batch "
    "(tp_overlap=1 hides tp behind the micro-batch's compute); bubble = (p − 1)/v micro-batch slots",
    "data-parallel gradient reductions hidden behind one micro-batch's backward each when the framework "
    "overlaps them (dp_overlap), ZeRO-3 gathers prefetched behind the compute, the post-step parameter "
    "all-gather exposed; Adam memory-bound at the HBM bandwidth",
)


def step_options(texts: dict) -> tuple[dict, dict]:
    """Split KEY=VALUE option texts into (the hybrid strategy's, the step model's :data:`STEP_OPTIONS`),
    the step model's read by their :class:`symcomm.training.settings.Option` into typed values (the
    hybrid's are read by the strategy, ``recompute`` among them); InputError naming the option."""
    hybrid, own = {}, {}
    for key, text in texts.items():
        if key in STEP_OPTIONS:
            own[key] = STEP_OPTIONS[key].resolve(text)       # typed once, as the setting holds it
        else:
            hybrid[key] = text
    return hybrid, own


def check_finite(numbers: dict) -> None:
    """The last line of defence (eval hybrid and plan): a step-model output that is inf or nan (a zero
    bandwidth, peak or eta reaching a division) is refused, naming it, never printed as a number."""
    import math

    bad = [name for name, x in numbers.items() if not math.isfinite(x)]
    if bad:
        raise InputError(f"the step model gives {bad[0]} = {numbers[bad[0]]} (not a finite number) with these "
                         "values: check the hardware's bandwidths, peak_flops, hbm_bytes_per_second and step_time")


def report(values: dict, run_bytes: int, hybrid_options: dict, own_options: dict) -> dict:
    """The step model's numbers at ``values`` (CLI names → numbers; β, γ per element of ``run_bytes``
    bytes): the reported quantities, per-axis times, memory parts, the units and the assumptions."""
    q = quantities({k: float(x) for k, x in values.items()}, run_bytes, **hybrid_options, **own_options)
    number = {k: float(x) for k, x in q.items()}
    check_finite(number)
    out = {key: number[key] for key in UNITS}
    out["comm_time_per_axis"] = {k[len("comm_time_"):]: x for k, x in number.items() if k.startswith("comm_time_")}
    out["exposed_comm_time_per_axis"] = {k[len("exposed_comm_time_"):]: x for k, x in number.items()
                                         if k.startswith("exposed_comm_time_")}
    out["memory"] = {k[len("memory_"):]: x for k, x in number.items()
                     if k.startswith("memory_") and k != "memory_per_gpu"}
    out["bubble_fraction_of_step"] = number["bubble_time"] / number["step_time"]
    out["units"] = {**UNITS, "comm_time_per_axis": "s", "exposed_comm_time_per_axis": "s", "memory": "bytes"}
    out["options"] = settings.parse({**hybrid_options, **own_options}).texts()    # the setting used, canonical
    out["assumptions"] = list(ASSUMPTIONS)
    return out
