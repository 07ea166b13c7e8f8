"""The layouts a request allows: every (t, p, v, c, e, d) and micro-batch size satisfying the divisibility
rules and the fixed choices, as integer arrays, and the memory floor no setting of a layout can go below."""

from __future__ import annotations

import numpy as np

from ..training import settings
from ..training.megatron_features import group_spans, straddles
from .request import (MICRO_BATCH_SEARCH, Request, _divisors, _pipelines, _tensor_sizes, context_sizes,
                      expert_tp_run)

#: the layout columns, and the pipeline split's: split 0 = even, 1 = first_last with L_first, L_last layers in
#: the first and the last of the p·v chunks (symcomm.training.stages)
COLUMNS = ("t", "p", "v", "c", "e", "d", "mb", "m", "split", "L_first", "L_last")




def enumerate_layouts(req: Request) -> dict[str, np.ndarray]:
    """Every (t, p, v, c, e, d, mb) satisfying the divisibility rules and the fixed choices, as
    integer arrays (with m = batch / (d · mb)); before any memory check.  A (p, v) whose p·v does not
    divide the layers comes once per uneven split the planner tries (:func:`uneven_splits`)."""
    model, n = req.model, req.gpus
    fixed = lambda values, x: values if x is None else values[values == x]  # noqa: E731
    ts = fixed(np.array(_tensor_sizes(req), dtype=np.int64), req.tp)
    pairs = [(x, v, split) for x, v, split in _pipelines(model.layers, n)
             if (req.pp is None or x == req.pp) and (req.vp is None or v == req.vp)]
    cs = fixed(context_sizes(req), req.cp)
    es = fixed(_divisors(model.experts) if model.moe else np.array([1], dtype=np.int64), req.ep)
    if req.router_groups > 1:                       # grouped routing counts its places with e a power of two
        es = es[(es & (es - 1)) == 0]               # (symcomm.training.hybrid, _GROUPS_NEED_POWER_OF_TWO_E)
    if model.moe and req.dispatcher in settings.FLEX_DISPATCHERS:   # the flex dispatcher counts whole nodes: e ≤ G
        es = es[(es <= req.G) | (es % req.G == 0)]                # or G | e (hybrid, _FLEX_NEEDS_WHOLE_NODES)
        es = es[es > 1]         # and asserts TPxEP > 1, its expert TP 1 (megatron_features.flex_dispatch_refusal)
    if req.micro_batch is not None:
        mbs = np.array([req.micro_batch], dtype=np.int64)
    elif req.micro_batches is not None:             # m fixed: the micro-batch size follows from d, any divisor
        mbs = _divisors(req.batch)
    else:
        mbs = _divisors(req.batch)[: MICRO_BATCH_SEARCH]
        mbs = mbs[mbs <= MICRO_BATCH_SEARCH]
    pv = np.array([(x, v, *split) for x, v, split in pairs], dtype=np.int64).reshape(-1, 5)
    if not (ts.size and pv.size and cs.size and es.size and mbs.size):
        return {k: np.zeros(0, dtype=np.int64) for k in COLUMNS}
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
    # the expert grid (the hybrid's rule, symcomm.training.hybrid): e | d·c with the experts split over the t TP
    # ranks (expert_tp=tp); each expert whole (expert_tp=1), Megatron-Core's etp × e × (t·d·c/(etp·e)) grid:
    # e | t·d·c
    ok &= ((D * C) % E == 0) if expert_tp_run(req.dispatcher, req.expert_tp) == "tp" else ((T * D * C) % E == 0)
    if req.cp_algorithm == "ulysses":
        ok &= (model.heads // T) % C == 0                         # Ulysses: c | a/t
        ok &= (model.kv_heads // T) % C == 0                      # and c | K/V heads/t (megatron_features)
    M = np.where(ok, req.batch // (D * MB), 0)
    if req.micro_batches is not None:
        ok &= M == req.micro_batches
    ok &= (V == 1) | ((M % np.maximum(P, 1)) == 0)                # interleaved: m | p (and p·v | L above)
    SPLIT, FIRST, LAST = pv[PVi, 2], pv[PVi, 3], pv[PVi, 4]
    return {"t": T[ok], "p": P[ok], "v": V[ok], "c": C[ok], "e": E[ok], "d": D[ok], "mb": MB[ok], "m": M[ok],
            "split": SPLIT[ok], "L_first": FIRST[ok], "L_last": LAST[ok]}


def tiles_domains(req: Request, layouts: dict) -> np.ndarray:
    """True where every parallel group of a layout tiles the NVLink domains of G GPUs in Megatron's rank order, eval's
    rule (symcomm.training.megatron_features.straddle_note): a group of S ranks, 1 < S ≤ G < GPUs, with G not a multiple
    of S straddles two domains somewhere, and the step model prices it inside one, not its traffic over the network."""
    t, c, d, e = (layouts[k] for k in ("t", "c", "d", "e"))
    etp = 1 if expert_tp_run(req.dispatcher, req.expert_tp) == "1" else t
    ok = np.ones(t.size, dtype=bool)
    for _, _, span in group_spans(t, c, d, e, np.where(e > 1, e * etp, 1)):
        ok &= ~straddles(span, req.G, req.gpus)
    return ok


def memory_floor(req: Request, layouts: dict) -> np.ndarray:
    """Bytes no setting can go below: 14 bytes per parameter sharded over all the GPUs (fp32 master
    weights and Adam states, 16-bit gradients, every one sharded, and no 16-bit weight shard: FSDP2,
    whose sharded parameter is the fp32 master), and the activations of
    full recomputation with sequence parallel, 2·(s/c)·mb·h/t bytes per layer, of min(p, m)
    micro-batches of L/p layers (symcomm.training.memory.memory_model holds at least these on the first stage).
    Under an uneven split the busiest stage holds at least the most states of any stage (≥ their mean, 14Φ/GPUs)
    plus the fewest activations of any: one micro-batch of the lightest stage's layers (the last stage of 1F1B
    holds one in flight)."""
    t, p, v, c, d, m, mb = (layouts[k].astype(np.float64) for k in ("t", "p", "v", "c", "d", "m", "mb"))
    states = 14.0 * req.model.parameters / req.gpus
    middle = (req.model.layers - layouts["L_first"] - layouts["L_last"]) / np.maximum(p * v - 2, 1)
    lightest = np.minimum(np.minimum(layouts["L_first"], layouts["L_last"]) + (v - 1) * middle,
                          np.where(p >= 3, v * middle, np.inf))
    held = np.where(layouts["split"] == 1, lightest, req.model.layers / p * np.minimum(p, m))
    activations = 2 * (req.seq / c) * mb * req.model.hidden / t * held
    return states + activations
