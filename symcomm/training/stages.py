"""Pipeline stages: how the L transformer layers split over the p·v model chunks, which chunks each
physical stage holds, and the rules a split must satisfy.

The p·v model chunks are numbered 0 … p·v − 1 in the order the layers run; stage i (of p) holds
chunks i, i + p, …, i + (v − 1)·p (v = 1 unless the schedule is interleaved).  Megatron-LM orders a
``--pipeline-model-parallel-layout`` the same way: its list of p·v chunks is read as
``layout[vpp_rank · p + pp_rank]`` (megatron/core/transformer/pipeline_parallel_layer_layout.py,
``PipelineParallelLayerLayout.__init__``, NVIDIA/Megatron-LM at d98e8a64ddf34856e74b24714e3bedb2f5a39553).

``pipeline_split`` (:mod:`symcomm.training.settings`):

* ``even``: every chunk L/(p·v) layers (Megatron-LM's default: ``get_num_layers_to_build`` in
  megatron/core/transformer/transformer_block.py at the commit above asserts num_layers % p == 0, and
  the stage's layers % v == 0 when interleaved);
* ``first_last``: the first chunk holds L_first layers, the last chunk L_last, and the p·v − 2 middle
  chunks (L − L_first − L_last)/(p·v − 2) each.  With v = 1 this is Megatron-LM's
  ``--decoder-first-pipeline-num-layers`` / ``--decoder-last-pipeline-num-layers`` (the same
  ``get_num_layers_to_build``: the middle stages share what is left, which must divide evenly; with
  p ≤ 2 nothing is left to share).  Interleaved, a chunk-by-chunk split is what a layout string
  states (``Et*3|(tt|)*29m|L``-style strings; ``--account-for-embedding-in-pipeline-split`` and
  ``--account-for-loss-in-pipeline-split`` are the case L_first = L_last = L/(p·v) − 1 in slots of
  L + 2), whereas Megatron's first/last flags size a whole stage (all v of its chunks alike).

Stage kinds: the **first** stage (chunk 0: the embedding, L_first layers, and v − 1 middle chunks),
the **last** (chunk p·v − 1: the LM head and loss, L_last layers, and v − 1 middle chunks) and a
**middle** one (v middle chunks), which exists only when p ≥ 3.  ``first_last`` needs p ≥ 2: with p = 1
the one stage (its one chunk, first and last at once) is the whole model, which is ``even``.
"""

from __future__ import annotations

import functools

import sympy as sp

from ..core import rules
from ..core.rules import Rule
from ..core.symbols import L, L_first, L_last, L_rc, m, p, v

#: the stage kinds the step model compares (symcomm.training.steptime), in the order ties go to the later
KINDS = ("first", "middle", "last")
#: the pipeline rank of each kind whose activations the memory model counts: the first, the busiest middle
#: stage (rank 1: the most micro-batches in flight of the middle ones), the last
RANK = {"first": sp.Integer(0), "middle": sp.Integer(1), "last": p - 1}


def chunks(schedule: str) -> sp.Expr:
    """Model chunks per stage: v interleaved, else 1."""
    return v if schedule == "interleaved" else sp.Integer(1)


# these three are functions of their words alone, built once per process: SymPy re-derives a Max's or a Min's order
# and its local zeros on every call, and every option combination of a kernel family asks again (python -m
# symcomm.tools.codegen: 864 calls in the MoE family, 6 % of its build under cProfile)
@functools.lru_cache(maxsize=None)
def middle_chunk_layers(schedule: str) -> sp.Expr:
    """Layers of each of the p·v − 2 middle chunks under ``first_last``: (L − L_first − L_last)/(p·v − 2).
    Written over max(p·v − 2, 1) so that it stays finite where no middle chunk exists (p·v ≤ 2, where
    the rules make the numerator 0; p = 1 is refused)."""
    return (L - L_first - L_last) / sp.Max(p * chunks(schedule) - 2, 1)


@functools.lru_cache(maxsize=None)
def stage_layers(split: str, schedule: str, kind: str) -> sp.Expr:
    """Transformer layers on one GPU of a stage of this kind: L/p for ``even`` (today's rule); for
    ``first_last`` the first stage L_first + (v − 1)·mid, the last L_last + (v − 1)·mid, a middle one
    v·mid, mid = :func:`middle_chunk_layers`."""
    if kind not in KINDS:
        raise ValueError(f"unknown stage kind {kind!r}; choose {', '.join(KINDS)}")
    if split == "even":
        return L / p
    n, mid = chunks(schedule), middle_chunk_layers(schedule)
    end = {"first": L_first, "last": L_last}.get(kind)
    return n * mid if end is None else end + (n - 1) * mid


@functools.lru_cache(maxsize=None)
def in_flight(schedule: str, kind: str) -> sp.Expr:
    """Micro-batches whose activations a stage of this kind holds at once (in units of the stage's whole
    v chunks), at pipeline rank r = :data:`RANK`: GPipe m; 1F1B min(p − r, m) (the p − r − 1 warm-up
    forwards and one in the steady state: Megatron-LM megatron/core/pipeline_parallel/schedules.py,
    forward_backward_pipelining_without_interleaving, num_warmup_microbatches); interleaved
    min(p, m)·(1 + (p − 2r − 1)/(p·v)) — for m ≥ p the (p − r − 1)·2 + (v − 1)·p warm-up chunks plus one
    of forward_backward_pipelining_with_interleaving, over v; r = 0 is Korthikanti et al. 2022 §4.2.3's
    first-stage factor 1 + (p − 1)/(p·v), the one :func:`symcomm.training.memory.memory_model` uses — and never
    more than all m: both schedules cap the warm-up at the m·v chunk-micro-batches there are (Megatron-LM
    schedules.py: num_warmup_microbatches = min(num_warmup_microbatches, total_num_microbatches); torch
    torch/distributed/pipelining/schedules.py, ScheduleInterleaved1F1B get_rank_warmup_ops:
    min(warmup_ops, n_microbatches · n_local_stages)), which m = p reaches on the first stage."""
    r = RANK[kind]
    if schedule == "gpipe":
        return m
    if schedule == "interleaved":
        return sp.Min(m, sp.Min(p, m) * (1 + (p - 2 * r - 1) / (p * v)))
    return sp.Min(p - r, m)


def block_share(schedule: str) -> sp.Expr:
    """recompute=block: the share of a stage's layers that recompute, L_rc of each model chunk's L/(p·v) layers
    (an even split: symcomm.training.settings.block_refusal), L_rc·p·v/L (v = 1 but interleaved)."""
    return L_rc * p * chunks(schedule) / L


def block_checks() -> tuple:
    """recompute=block's rule: L_rc at most a model chunk's layers, L ≥ L_rc·p (L_rc·p·v interleaved), as
    Megatron-Core's recompute_num_layers counts layers of one chunk (settings.MEGATRON_BLOCK_RECOMPUTE)."""
    return tuple(rules.when("recompute", ("block",), rules.when("schedule", (schedule,), Rule(
        "at_least", L, L_rc * pv,
        f"recompute=block: L_rc·{words} = {{y}} must not exceed L = {{x}} (L_rc counts the layers of one model chunk "
        f"of L/{words}): give at most a chunk's layers (all of them: recompute=full)", f"L_rc·{words} ≤ L")))
        for schedule, pv, words in (("1f1b", p, "p"), ("gpipe", p, "p"), ("interleaved", p * v, "p·v")))


def split_checks() -> tuple:
    """The rules of each split (symcomm.core.rules; the hybrid strategy's checks): ``even`` keeps today's
    (L divisible by p, by p·v interleaved); ``first_last`` needs p ≥ 2 (with one stage the one chunk is the whole
    model: that is pipeline_split=even), L_first + L_last ≤ L, the middle chunks whole ((p·v − 2) | L − L_first −
    L_last) and, with p·v = 2, no middle layers.  The last is written as a polynomial every export checks
    exactly: (p·v − 3)·(L − L_first − L_last)² ≥ 0, which fails only at p·v ≤ 2 with layers left over."""
    rest = L - L_first - L_last
    first_last = ("first_last",)
    out = [rules.when("pipeline_split", first_last, Rule(
               "at_least", p, sp.Integer(2),
               "pipeline_split=first_last needs p ≥ 2 stages, not p={x}: with one stage its one chunk is the whole "
               "model (use pipeline_split=even)", "p ≥ 2")),
           rules.when("pipeline_split", first_last, Rule(
               "at_least", L, L_first + L_last,
               "pipeline_split=first_last: L_first + L_last = {y} must not exceed L = {x} (the middle chunks cannot "
               "hold fewer than 0 layers)", "L_first + L_last ≤ L"))]
    for schedule, pv in (("1f1b", p), ("gpipe", p), ("interleaved", p * v)):
        words = "p" if pv is p else "p·v"
        out += [
            rules.when("schedule", (schedule,), rules.when("pipeline_split", first_last, Rule(
                "divides", pv - 2, rest,
                f"L − L_first − L_last = {{y}} must be divisible by {words} − 2 = {{x}} (the middle chunks hold "
                f"equal whole numbers of layers): choose L_first + L_last = L − k·({words} − 2) for a whole k ≥ 0",
                f"L − L_first − L_last divisible by {words} − 2"))),
            rules.when("schedule", (schedule,), rules.when("pipeline_split", first_last, Rule(
                "at_least", (pv - 3) * rest ** 2, sp.Integer(0),
                f"pipeline_split=first_last with {words} = 2 model chunks has no middle chunk: L_first + L_last "
                "must equal L", f"L_first + L_last = L when {words} = 2"))),
        ]
    uneven = " (pipeline_split=first_last with L_first, L_last splits the layers unevenly)"
    out += [rules.when("pipeline_split", ("even",), Rule("divides", p, L, "L={y} must be divisible by p={x}" + uneven,
                                                         "L divisible by p")),
            rules.when("pipeline_split", ("even",), rules.when("schedule", ("interleaved",), Rule(
                "divides", p * v, L, "L={y} must be divisible by p*v={x}" + uneven, "L divisible by p*v")))]
    return tuple(out)
