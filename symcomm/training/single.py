"""The single strategies (dp, zero1/2/3, hsdp, tp, sp, pp, ep, cp_ulysses, cp_ring): each one axis on
all N GPUs, its terms built by the axis builders of :mod:`symcomm.training.axes`.  Their options,
checks and sources are their entries in the registry, ``_ENTRIES`` of :mod:`symcomm.training.strategies`.
"""

from __future__ import annotations

import functools
from dataclasses import replace

import sympy as sp

from ..core import symbols as S
from .axes import (DataSchedule, ep_terms, kv_width, partition_reduction, pp_terms, ring_terms, tp_terms,
                   ulysses_terms, zero3_on, bubble_fraction)
from .settings import regathers_forward, reruns_forward
from .stages import in_flight as stage_in_flight
from .terms import Term

Phi, b, s, h, N, G = S.Phi, S.b, S.s, S.h, S.N, S.G
L, m, v, k, f, E, h_kv, a = S.L, S.m, S.v, S.k, S.f, S.E, S.h_kv, S.a
d, t, p, c, e, L_moe, Phi_E, V = S.d, S.t, S.p, S.c, S.e, S.L_moe, S.Phi_E, S.V


# -- data parallel ------------------------------------------------------------------------------

def build_dp(algorithm: str) -> tuple[Term, ...]:
    # "naive" is the source article's parameter-server form: the catalog's flat reduce + flat broadcast
    name = "flat" if algorithm == "naive" else algorithm
    return (Term("all_reduce", name, N, Phi, 1, "gradient all-reduce", axis="dp", phase="after backward"),)


def build_zero12(micro_batches: str = "1", grad_reduce: str = "per_micro_batch",
                 partition_reduce: str = "reduce_scatter") -> tuple[Term, ...]:
    micro = m if micro_batches == "m" else sp.Integer(1)
    count = micro if grad_reduce == "per_micro_batch" else sp.Integer(1)
    reduction = partition_reduction(partition_reduce, N, Phi, count)
    return (
        replace(reduction, phase="after backward"),
        Term("all_gather", "ring", N, Phi, 1, "updated-parameter all-gather", axis="dp",
             phase="after the optimizer step"),
    )


def build_zero1(partition_reduce: str = "reduce_scatter") -> tuple[Term, ...]:
    return build_zero12(partition_reduce=partition_reduce)


def build_zero3(micro_batches: str = "1", grad_reduce: str = "per_micro_batch",
                reshard_after_forward: bool = True) -> tuple[Term, ...]:
    micro = m if micro_batches == "m" else sp.Integer(1)
    return zero3_on(N, Phi, schedule=DataSchedule("fsdp", 3, grad_reduce, reshard_after_forward), micro=micro)


def build_hsdp() -> tuple[Term, ...]:
    # shard groups are the G ranks of a node; the N/G copies of each shard sit on N/G nodes
    inside = zero3_on(G, Phi, groups=N / G, across=False)
    across = Term("all_reduce", "ring", N / G, Phi / G, 1, "shard-gradient all-reduce across replicas",
                  G, True, "dp", phase="backward")
    return inside + (across,)


# -- tensor and sequence parallel ----------------------------------------------------------------

def build_tp(algorithm: str, recompute: str) -> tuple[Term, ...]:
    return tp_terms(N, b * s * h, L, algorithm, reruns_forward(recompute))


def build_sp(recompute: str, sp_regather: bool) -> tuple[Term, ...]:
    return tp_terms(N, b * s * h, L, recompute=reruns_forward(recompute), sp_on=True, regather=sp_regather,
                    recompute_gathers=regathers_forward(recompute))


# -- pipeline parallel -------------------------------------------------------------------------------

def build_pp(schedule: str) -> tuple[Term, ...]:
    return pp_terms(N, b * s * h, schedule)


def pp_extras(schedule: str) -> dict:
    return {"bubble_fraction": bubble_fraction(N, schedule), "micro_batches_in_flight": _pp_in_flight(schedule)}


@functools.cache
def _pp_in_flight(schedule: str) -> sp.Expr:
    # the first stage's, as the hybrid counts it (stages.in_flight at rank 0: its docstring cites the schedules),
    # over this strategy's N stages; once per schedule (SymPy compares a Min's arguments each time one is built)
    if schedule not in ("gpipe", "1f1b", "interleaved"):
        raise KeyError(schedule)
    return stage_in_flight(schedule, "first").xreplace({p: N})


# -- expert parallel ------------------------------------------------------------------------------------

def build_ep(algorithm: str, capacity: str) -> tuple[Term, ...]:
    return ep_terms(N, b * s * h, L_moe, capacity, algorithm)


# -- context parallel ------------------------------------------------------------------------------------

def build_cp_ulysses(gqa: str) -> tuple[Term, ...]:
    return ulysses_terms(N, b, s, h, kv_width(gqa), L)


def build_cp_ring(gqa: str, backward: str) -> tuple[Term, ...]:
    return ring_terms(N, b, s, kv_width(gqa), L, backward=backward)
