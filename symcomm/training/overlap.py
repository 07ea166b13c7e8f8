"""What of the data-parallel communication stays on the critical path of a step, as SymPy
expressions (seconds): the gradient reductions behind the backward when the framework overlaps
them, ZeRO-3/FSDP parameter gathers prefetched behind the compute, the post-step all-gather
exposed; exposed = max(0, communication − the window it hides behind).  Part of the step model
(:mod:`symcomm.training.steptime`); which framework overlaps what is
:mod:`symcomm.training.frameworks`.
"""

from __future__ import annotations

import sympy as sp

from . import frameworks as F



def max0(x):
    return sp.Max(0, x, evaluate=False)     # same value; SymPy's search for a simpler Max is slow on long x


def dp_overlap_of(framework_name: str, zero: int, dp_overlap: bool | None = None) -> bool:
    """Whether the data-parallel gradient reductions overlap the backward: as the framework's row
    says at this ZeRO stage (symcomm.training.frameworks: DP_OVERLAP_SOURCE), unless given explicitly."""
    return F.framework(framework_name).dp_overlap(zero) if dp_overlap is None else bool(dp_overlap)


def exposed_data_parallel(dp_terms, time_of, data, overlap: bool, m, compute) -> sp.Expr:
    """The exposed time of the data-parallel ``dp_terms`` (``time_of`` prices a list of terms) with
    ``m`` micro-batches of ``compute`` (a MicroBatchCompute) each, under the framework's ``data``
    schedule; ``overlap``: the gradient reductions hide behind the backward."""
    reduce_t = time_of([x for x in dp_terms if x.phase == "backward" and x.primitive != "all_gather"])
    gather_forward = time_of([x for x in dp_terms if x.phase == "forward" and x.primitive == "all_gather"])
    gather_backward = time_of([x for x in dp_terms if x.phase == "backward" and x.primitive == "all_gather"])
    rest_t = time_of([x for x in dp_terms if x.phase not in ("forward", "backward")])
    reductions = data.gradient_reductions(m)
    # what hides behind one window shares it (and the links): the forward gathers behind the m forwards;
    # the backward gathers and, when overlapped, the reductions behind the backwards they follow (every
    # micro-batch's when reduced per micro-batch, the last one's when reduced once per step)
    backward_window = (m if reductions == m else 1) * compute.backward
    if overlap:
        exposed_backward = max0(gather_backward + reduce_t - backward_window)
    else:
        exposed_backward = max0(gather_backward - m * compute.backward) + reduce_t
    return max0(gather_forward - m * compute.forward) + exposed_backward + rest_t
