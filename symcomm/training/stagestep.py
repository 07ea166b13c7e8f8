"""The step model of an uneven pipeline split (pipeline_split=first_last): every stage kind (first,
middle, last: :mod:`symcomm.training.stages`) priced as :func:`symcomm.training.steptime.step_model`
prices the last stage of an even split, and the busiest found by the model.

* **slot** (one micro-batch on the critical path) = max over the stage kinds of (compute of the stage's
  layers, the LM head on the last, + its tp, cp, ep and pp communication per micro-batch); the middle kind
  only when p ≥ 3.  In a pipeline every micro-batch passes every stage, so the slowest stage sets the pace
  of the steady state and the length of each bubble slot (Narayanan et al. 2021 §2.2, whose bubble
  (p − 1)/v slots assumes balanced stages: with unbalanced ones the slowest stage's time is the slot);
* **after the pipeline** (exposed data-parallel communication + the optimizer step) = the max over the kinds:
  the step ends when the last GPU finishes its optimizer step;
* **memory** = the stage holding the most bytes (its layers' parameters and activations, the micro-batches
  it holds in flight: stages.in_flight).

The reported parts (compute, per-axis communication, exposure, memory parts) are those of the stage that sets
each maximum (ties go to the last stage, then the middle one), ``slot_stage`` and ``memory_stage`` say which.
"""

from __future__ import annotations

import sympy as sp

from . import flops
from .axes import data_schedule
from .compute import micro_batch_compute
from .hybrid import stage_terms
from .memory import memory_model
from .overlap import dp_overlap_of, exposed_data_parallel, max0
from .stages import KINDS, chunks, stage_layers
from .terms import cost_in_bytes_of
from ..core.symbols import b, hbm, m, p, s


def _pick(values: dict, totals: dict) -> tuple[dict, sp.Expr]:
    """The entries of the kind whose total is largest (ties: last, then middle, then first) and that kind's
    number (0, 1, 2); the middle kind only when p ≥ 3."""
    first, middle, last = (totals[k] for k in KINDS)
    middle_there = sp.Ge(p, 3)
    last_wins = sp.And(sp.Ge(last, first), sp.Or(sp.Not(middle_there), sp.Ge(last, middle)))
    middle_wins = sp.And(middle_there, sp.Ge(middle, first))
    conditions = ((last_wins, "last"), (middle_wins, "middle"), (True, "first"))
    names = set().union(*(values[k] for k in KINDS))
    chosen = {name: sp.Piecewise(*((values[k].get(name, sp.Integer(0)), cond) for cond, k in conditions))
              for name in sorted(names)}
    number = sp.Piecewise(*((sp.Integer(KINDS.index(k)), cond) for cond, k in conditions))
    return chosen, number


def _largest(totals: dict) -> sp.Expr:
    """max over the kinds present (the middle kind only when p ≥ 3)."""
    middle = sp.Piecewise((totals["middle"], sp.Ge(p, 3)), (0, True))
    return sp.Max(totals["first"], middle, totals["last"], evaluate=False)


def uneven_step_model(run, run_bytes: int):
    """The :class:`symcomm.training.steptime.StepModel` of this run setting (pipeline_split=first_last)."""
    from .steptime import ADAM_BYTES, StepModel

    data = data_schedule(run.framework, run.zero, run.grad_reduce, run.reshard_after_forward, run.grad_dtype)
    overlap = dp_overlap_of(run.framework, run.zero, run.dp_overlap)
    opts = run.hybrid_options()
    n_chunks = chunks(run.schedule)

    def time_of(terms):
        return cost_in_bytes_of(tuple(terms), run_bytes).time if terms else sp.Integer(0)

    slot, tail, memory, parts_slot, parts_tail = {}, {}, {}, {}, {}
    for kind in KINDS:
        by_axis: dict = {}
        for term in stage_terms(run, kind):
            by_axis.setdefault(term.axis, []).append(term)
        comm = {axis: time_of(terms) for axis, terms in by_axis.items()}
        layers = stage_layers(run.pipeline_split, run.schedule, kind)
        micro = micro_batch_compute(run, layers=layers, lm_head=run.embeddings and kind == "last")
        on_path = {axis: comm.get(axis, sp.Integer(0)) / m for axis in ("tp", "cp", "ep", "pp")}
        if run.tp_overlap:
            on_path = {**on_path, "tp": max0(on_path["tp"] - micro.total)}
        slot[kind] = micro.total + sum(on_path.values())
        exposed_dp = exposed_data_parallel(by_axis.get("dp", []), time_of, data, overlap, m, micro)
        memory[kind] = memory_model(data, run.recompute, opts, run.flash, run.moe, run.embeddings, kind=kind)
        grad_bytes = 4 if data.grad_dtype == "fp32" else 2
        optimizer = memory[kind]["optimizer"] / 12 * (ADAM_BYTES + grad_bytes) / hbm
        tail[kind] = exposed_dp + optimizer
        parts_slot[kind] = {"compute": m * micro.total,
                            **{f"comm_{axis}": x for axis, x in comm.items() if axis != "dp"},
                            **{f"exposed_{axis}": x * m for axis, x in on_path.items() if axis in comm}}
        parts_tail[kind] = {"comm_dp": comm.get("dp", sp.Integer(0)), "exposed_dp": exposed_dp,
                            "optimizer": optimizer}

    chosen_slot, slot_stage = _pick(parts_slot, slot)
    chosen_tail, _ = _pick(parts_tail, tail)
    totals = {kind: sp.Add(*memory[kind].values()) for kind in KINDS}
    chosen_memory, memory_stage = _pick(memory, totals)
    the_slot = _largest(slot)
    pipeline = (m + (p - 1) / n_chunks) * the_slot
    bubble = (p - 1) / n_chunks * the_slot
    step = pipeline + _largest(tail)

    axes = [axis for axis in ("tp", "cp", "ep", "pp") if f"comm_{axis}" in chosen_slot] + ["dp"]
    comm = {axis: chosen_slot[f"comm_{axis}"] for axis in axes if axis != "dp"}
    comm["dp"] = chosen_tail["comm_dp"]
    exposed = {axis: chosen_slot[f"exposed_{axis}"] for axis in axes if f"exposed_{axis}" in chosen_slot}
    exposed["dp"] = chosen_tail["exposed_dp"]
    model = flops.model_flops(b, s, run.gated, run.moe)
    hardware = flops.hardware_flops(b, s, run.recompute, run.gated, run.moe)
    key = tuple(sorted(run.texts().items()))
    return StepModel(key, chosen_slot["compute"], comm, exposed, bubble, chosen_tail["optimizer"], step, model,
                     hardware, chosen_memory, slot_stage, memory_stage)
