"""The step model of an uneven pipeline split (pipeline_split=first_last): every stage kind (first,
middle, last: :mod:`symcomm.training.stages`) priced as :func:`symcomm.training.steptime.step_model`
prices the last stage of an even split, and the busiest found by the model.

* **slot** (one micro-batch on the critical path) = max over the stage kinds of (compute of the stage's
  layers, the LM head on the last, + its tp, cp, ep and pp communication per micro-batch); the middle kind
  only when p ≥ 3.  In a pipeline every micro-batch passes every stage, so the slowest stage sets the pace
  of the steady state and the length of each bubble slot (Narayanan et al. 2021 §2.2, whose bubble
  (p − 1)/v slots assumes balanced stages: with unbalanced ones the slowest stage's time is the slot);
* **after the pipeline** (exposed data-parallel communication + the optimizer step) = the max over the kinds:
  the step ends when the last GPU finishes its optimizer step; where the pipeline reduces a stage's gradients
  after its last backward (symcomm.training.overlap.PIPELINED_POST_BACKWARD), the first stage's are exposed in
  full (its last backward is the step's last work) and the other kinds' hide as before;
* **memory** = the stage holding the most bytes (its layers' parameters and activations, the micro-batches
  it holds in flight: stages.in_flight).

The reported time parts (compute, per-axis communication and exposure, optimizer) are each the largest over the
stage kinds (so compute·(1 + bubble fraction) + optimizer stays a lower bound of the step, as the planner's pruning
needs); each kind's slot and memory (and the memory's parts) are reported too (``stage_slot_<kind>``,
``stage_bytes_<kind>``), from which the report names the busiest stage and shows its memory parts.
"""

from __future__ import annotations

import functools

import sympy as sp

from . import flops
from .axes import bubble_slots, run_data_schedule
from .compute import attention_kind, micro_batch_compute
from .hybrid import stage_terms
from .memory import memory_model, memory_options, stage_total
from .overlap import dp_overlap_of, exposed_data_parallel, micro_batch_on_path, param_gather_overlap_of
from .stages import KINDS, chunks, stage_layers
from .terms import time_in_bytes_of
from ..core.symbols import b, m, p, s


def _largest(totals: dict) -> sp.Expr:
    """max over the kinds present (the middle kind only when p ≥ 3)."""
    return _largest_of(totals["first"], totals["middle"], totals["last"])


@functools.lru_cache(maxsize=None)
def _largest_of(first: sp.Expr, middle: sp.Expr, last: sp.Expr) -> sp.Expr:
    # once per distinct three: SymPy orders a Max's arguments by counting every node of each (no memory of shared
    # subtrees), and the option combinations of a kernel family share three in four (python -m symcomm.tools.codegen:
    # 370 distinct of 1440 in the MoE family, 2.6 s of its 26 s build before)
    middle = sp.Piecewise((middle, sp.Ge(p, 3, evaluate=False)), (0, sp.true), evaluate=False)
    return sp.Max(first, middle, last, evaluate=False)


def uneven_step_model(run, run_bytes: int, step_model_class, after_backward, check_overlap):
    """The :class:`symcomm.training.steptime.StepModel` of this run setting (pipeline_split=first_last): each stage
    kind priced as steptime.step_model prices the last stage of an even split (its layers, its terms, the same
    overlaps); the step model's class, its optimizer's seconds (steptime.after_backward_seconds) and its check of Megatron's overlap
    flags are handed in by symcomm.training.steptime (which imports this module), so the two share them without
    an import cycle."""
    StepModel = step_model_class
    framework, zero = run.framework, run.zero
    data = run_data_schedule(run)
    grad_overlap = dp_overlap_of(framework, zero, run.overlap_grad_reduce)
    param_overlap = param_gather_overlap_of(framework, zero, run.overlap_param_gather)
    check_overlap(framework, zero, grad_overlap, param_overlap)
    opts = memory_options(run)
    n_chunks = chunks(run.schedule)

    def time_of(terms):
        return time_in_bytes_of(tuple(terms), run_bytes)

    slot, tail, memory, compute, optimizer, comm, exposed = {}, {}, {}, {}, {}, {}, {}
    for kind in KINDS:
        by_axis: dict = {}
        for term in stage_terms(run, kind):
            by_axis.setdefault(term.axis, []).append(term)
        comm[kind] = {axis: time_of(terms) for axis, terms in by_axis.items()}
        layers = stage_layers(run.pipeline_split, run.schedule, kind)
        micro = micro_batch_compute(run, layers=layers, lm_head=run.embeddings and kind == "last")
        on_path = micro_batch_on_path(run, by_axis, comm[kind], time_of, m, micro)
        slot[kind] = micro.total + sum(on_path.values())
        compute[kind] = m * micro.total
        exposed[kind] = {axis: x * m for axis, x in on_path.items() if axis in comm[kind]}
        exposed[kind]["dp"] = exposed_data_parallel(by_axis.get("dp", []), time_of, data, m, micro,
                                                    grad_overlap=grad_overlap, param_overlap=param_overlap,
                                                    pipeline_chunks=n_chunks if kind == "first" else None,
                                                    embeddings=run.embeddings and kind == "first",
                                                    interleaved_chunks=n_chunks)
        memory[kind] = data.one_schedule(memory_model(data, run.recompute, opts, run.flash, run.moe, run.embeddings,
                                                      run.gated, kind=kind))      # what one schedule holds at once
        optimizer[kind] = after_backward(memory[kind], data, run.adam_dtype)
        tail[kind] = exposed[kind]["dp"] + optimizer[kind]

    the_slot = _largest(slot)
    idle = bubble_slots(p, run.schedule, data.schedules)      # each schedule fills and drains
    pipeline = (m + idle) * the_slot
    bubble = idle * the_slot
    step = pipeline + _largest(tail)
    axes = [axis for axis in ("tp", "cp", "ep", "pp", "dp") if axis in comm["last"]]
    largest_comm = {axis: _largest({k: comm[k].get(axis, sp.Integer(0)) for k in KINDS}) for axis in axes}
    largest_exposed = {axis: _largest({k: exposed[k].get(axis, sp.Integer(0)) for k in KINDS}) for axis in axes}
    totals = {kind: stage_total(memory[kind]) for kind in KINDS}      # logits and recompute never at once
    # per stage kind: its slot, its memory and the memory's parts (the report names the busiest and shows its parts)
    per_stage = {}
    for kind in KINDS:
        per_stage[f"stage_slot_{kind}"] = slot[kind]
        per_stage[f"stage_bytes_{kind}"] = totals[kind]
        per_stage.update({f"stage_bytes_{part}_{kind}": x for part, x in memory[kind].items()})
    model = flops.model_flops(b, s, run.gated, run.moe, attention_kind(run), run.mamba, run.moe_latent, run.mtp_on)
    hardware = flops.hardware_flops(b, s, run.recompute, run.gated, run.moe, attention_kind(run), mamba=run.mamba,
                                    latent=run.moe_latent, mla_up=run.recompute_mla_up, mtp=run.mtp_on,
                                    modules=run.modules)
    key = tuple(sorted(run.texts().items()))
    return StepModel(key, _largest(compute), largest_comm, largest_exposed, bubble, _largest(optimizer), step, model,
                     hardware, {}, memory_total=_largest(totals), stages=per_stage,
                     causal_flops=flops.causal_half(b, s, attention_kind(run), run.mamba, run.mtp_on),
                     hardware_causal_flops=flops.causal_half_executed(b, s, run.recompute, attention_kind(run),
                                                                      run.schedule, run.mamba, run.mtp_on))
