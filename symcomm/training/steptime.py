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
from . import settings
from ..base.errors import InputError
from .axes import data_schedule
from .compute import micro_batch_compute
from .memory import memory_model
from .overlap import dp_overlap_of, exposed_data_parallel, max0
from .terms import cost_in_bytes_of
from .subjects import subject
from ..core.symbols import b, c, d, hbm, m, p, peak, s, t, v

#: options of the step model beyond the hybrid strategy's own (symcomm.training.settings.STEP_OPTIONS), by name
STEP_OPTIONS = {option.name: option for option in settings.STEP_OPTIONS}
ADAM_BYTES = 26       # fp32 weight, m, v read and written (24) + the 16-bit weight written (2)


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
    # an uneven pipeline split (symcomm.training.stagestep): the busiest stage's bytes (the parts then per stage),
    # and per stage kind its slot and memory (stage_slot_<kind>, stage_bytes_<kind>, stage_bytes_<part>_<kind>)
    memory_total: sp.Expr | None = None
    stages: dict = field(default_factory=dict)

    @property
    def memory_per_gpu(self) -> sp.Expr:
        return sp.Add(*self.memory.values()) if self.memory_total is None else self.memory_total

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
        out.update(self.stages)
        return out


@functools.lru_cache(maxsize=None)
def step_model(run_bytes: int = 2, **options) -> StepModel:
    """The step model of the hybrid layout with these options (the hybrid strategy's, plus
    :data:`STEP_OPTIONS`); values are text, as the command line gives them, read once into a
    :class:`symcomm.training.settings.RunSetting`.  Communication is counted in elements of ``run_bytes``
    bytes (β per element of that size), fp32 terms widened."""
    run = settings.parse(options)
    if run.pipeline_split != "even":
        from .stagestep import uneven_step_model

        return uneven_step_model(run, run_bytes, StepModel, ADAM_BYTES)
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

    # compute of one micro-batch on the busiest stage (the last: L/p layers and the LM head), per GPU
    compute_micro = micro_batch_compute(run)

    chunks = v if run.schedule == "interleaved" else sp.Integer(1)
    on_path = {axis: comm.get(axis, sp.Integer(0)) / m for axis in ("tp", "cp", "ep", "pp")}
    if run.tp_overlap:
        hidden_tp = max0(on_path["tp"] - compute_micro.total)
        on_path = {**on_path, "tp": hidden_tp}
    slot = compute_micro.total + sum(on_path.values())
    pipeline = (m + (p - 1) / chunks) * slot
    bubble = (p - 1) / chunks * slot

    # data parallel: reductions behind the backward, ZeRO-3 gathers behind the compute, the
    # post-step all-gather (and the tied-embedding all-reduce) exposed
    overlap = dp_overlap_of(framework, zero, run.dp_overlap)
    exposed_dp = exposed_data_parallel(by_axis.get("dp", []), time_of, data, overlap, m, compute_micro)

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
    compute_total = m * compute_micro.total
    model = flops.model_flops(b, s, gated, moe)
    hardware = flops.hardware_flops(b, s, recompute, gated, moe)
    key = tuple(sorted(texts.items()))
    return StepModel(key, compute_total, comm, exposed, bubble, optimizer, step, model, hardware, memory)


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
    "pipeline_split=first_last (the first and the last of the p·v chunks L_first, L_last layers, the middle ones "
    "the rest in equal parts): every stage kind priced (first: the embedding; middle; last: the LM head), the "
    "slowest sets the slot, memory is the stage holding the most; each reported time part is the largest over the "
    "stages",
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


#: the stage kinds (symcomm.training.stages.KINDS; a middle stage exists only when p ≥ 3)
STAGE_NAMES = ("first", "middle", "last")


def busiest_stages(number: dict, stages: int) -> dict:
    """In words, the stage that sets the slot (one micro-batch on the critical path) and the one holding the most
    memory: from the per-stage figures of an uneven split (ties: the later stage); an even split's model
    prices the last stage's slot and the first stage's memory (its L/p layers alike, the LM head on the last,
    the most micro-batches in flight on the first)."""
    if stages == 1:
        return {"slot": "the only stage", "memory": "the only stage"}
    if "stage_slot_last" not in number:
        return {"slot": "the last pipeline stage", "memory": "the first pipeline stage"}
    kinds = [kind for kind in STAGE_NAMES if kind != "middle" or stages >= 3]
    name = {"first": "the first pipeline stage", "middle": "a middle pipeline stage (rank 1)",
            "last": "the last pipeline stage"}
    return {what: name[max(reversed(kinds), key=lambda kind: number[f"stage_{key}_{kind}"])]
            for what, key in (("slot", "slot"), ("memory", "bytes"))}


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
    out["units"] = {**UNITS, "comm_time_per_axis": "s", "exposed_comm_time_per_axis": "s", "memory": "bytes",
                    "busiest_stage": "which stage sets the micro-batch slot and which holds the most memory"}
    out["busiest_stage"] = busiest_stages(number, int(values.get("p", 0)))
    if "stage_bytes_last" in number:          # an uneven split: the busiest stage's memory parts, and every stage's
        kinds = [kind for kind in STAGE_NAMES if kind != "middle" or int(values.get("p", 0)) >= 3]
        busiest = max(reversed(kinds), key=lambda kind: number[f"stage_bytes_{kind}"])
        out["memory"] = {part: number[f"stage_bytes_{part}_{busiest}"]
                         for part in ("weights", "gradients", "optimizer", "activations")}
        out["stages"] = {kind: {"slot_time": number[f"stage_slot_{kind}"], "memory": number[f"stage_bytes_{kind}"]}
                         for kind in kinds}
        out["units"]["stages"] = "slot_time s (one micro-batch: compute + tp, cp, ep, pp), memory bytes per GPU"
    out["options"] = settings.parse({**hybrid_options, **own_options}).texts()    # the setting used, canonical
    out["assumptions"] = list(ASSUMPTIONS)
    return out
