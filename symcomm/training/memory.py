"""Memory per GPU of a hybrid layout, in bytes, as SymPy expressions: the weights, gradients and
optimizer states the framework's data-parallel schedule holds, and the activations kept for the
backward (Korthikanti et al. 2022, Table 2, with s → s/c).  Part of the step model
(:mod:`symcomm.training.steptime`); the busiest GPU for memory is on the first pipeline stage.
"""

from __future__ import annotations

import sympy as sp

from .hybrid import end_stage_shard
from ..core.symbols import L, Phi, Phi_E, a, b, c, d, e, h, m, p, s, t, v


def scores(micro):
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
    kept_scores = 0 if flash or recompute != "none" else scores(micro)
    if recompute == "full":
        return 2 * sbh / (t if sp_on else 1)
    if sp_on:
        return 34 * sbh / t + kept_scores
    return sbh * (10 + 24 / t) + kept_scores


def memory_model(data, recompute: str, opts: dict, flash: bool, moe: bool, embeddings: bool,
                 kind: str | None = None) -> dict:
    """Bytes per GPU on the first pipeline stage (embedding, most activations in flight):
    weights, gradients and Adam states as ``data`` (the framework's schedule) holds them, and
    activations per Korthikanti et al. 2022 Table 2 (sbh(10 + 24/t + 5as/(ht)) per layer; with
    SP 34sbh/t + 5as²b/t; selective recompute drops the 5as²b/t scores; full recompute keeps
    the layer input 2sbh, /t with SP; flash attention never stores the scores), s → s/c.

    ``kind`` (first, middle, last; pipeline_split=first_last only): one GPU of a stage of that kind, with its
    layers (symcomm.training.stages.stage_layers), its share of the parameters (hybrid.stage_shard) and the
    micro-batches it holds in flight (stages.in_flight)."""
    tied, sp_on = bool(opts["tied"]), bool(opts["sp"])
    dense = (Phi - Phi_E) if moe else Phi
    if kind is not None:
        return _stage_memory(data, recompute, opts, flash, moe, embeddings, kind)
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


def _states(data, parts) -> dict:
    """Weights, gradients and Adam states of (parameters held, replicas sharding them) pairs."""
    weights = grads = optimizer = sp.Integer(0)
    grad_bytes = 4 if data.grad_dtype == "fp32" else 2
    for held, group in parts:
        weights += 2 * held if data.full_parameters else 2 * held / group
        grads += grad_bytes * held if data.full_gradients else grad_bytes * held / group
        optimizer += 12 * held if data.zero == 0 else 12 * held / group
    return {"weights": weights, "gradients": grads, "optimizer": optimizer}


def _stage_memory(data, recompute, opts, flash, moe, embeddings, kind) -> dict:
    """:func:`memory_model` for one stage kind of an uneven split (its layers, parameters, micro-batches
    in flight)."""
    from .hybrid import stage_shard
    from .stages import in_flight, stage_layers

    tied, sp_on, schedule = bool(opts["tied"]), bool(opts["sp"]), opts["schedule"]
    layers = stage_layers(opts["pipeline_split"], schedule, kind)
    dense = (Phi - Phi_E) if moe else Phi
    shard = stage_shard(dense, tied, layers, kind) if embeddings else dense * layers / (L * t)
    parts = [(shard, d * c)]
    if moe:
        parts.append((Phi_E * layers / (L * e * t), d * c / e))
    activations = activation_bytes(recompute, flash, sp_on) * layers * in_flight(schedule, kind)
    return {**_states(data, parts), "activations": activations}
