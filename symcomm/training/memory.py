"""Memory per GPU of a hybrid layout, in bytes, as SymPy expressions: the weights, gradients and
optimizer states the framework's data-parallel schedule holds, and the activations kept for the
backward (Korthikanti et al. 2022, Table 2, with s → s/c).  Part of the step model
(:mod:`symcomm.training.steptime`); the busiest GPU for memory is on the first pipeline stage.
"""

from __future__ import annotations

import sympy as sp

from .hybrid import end_stage_shard, expert_shard
from ..core.symbols import L, Phi, Phi_E, a, b, c, d, d_nope, d_rope, d_v, e, h, kv_lora, m, p, q_lora, s, t, v


def scores(micro):
    """Bytes of the attention scores of one layer and micro-batch on one GPU: the softmax input
    and output (2 bytes each) and the dropout mask (1 byte), a·s² each, split over t heads' groups."""
    return 5 * a * (s / c) ** 2 * micro / t


def mla_attention_widths():
    """Bytes per token an MLA attention block keeps for the backward, as (kept whole on each TP rank
    without sequence parallel, split over the t heads' groups): derived here with Korthikanti et al.
    2022 §4.1's accounting (2 bytes per bf16 element, 1 per dropout-mask element) over the tensors
    Megatron-Core's multi_latent_attention.py saves: the down projections' input 2h, the output
    dropout mask h, the query latent's RMSNorm input and up-projection input 4·q_lora (0 without query
    compression: the h-wide input serves), the K, V latent's 4·kv_lora and the rotary key 2·d_rope
    (the down projections are duplicated on every TP rank); and split over t: Q and K of QKᵀ
    4a(d_nope + d_rope), V 2a·d_v, the output projection's input 2a·d_v.  With a(d_nope + d_rope) =
    a·d_v = h and no latents this is Korthikanti's 3sbh + 8sbh/t."""
    whole = 3 * h + 4 * q_lora + 4 * kv_lora + 2 * d_rope
    split = 4 * a * (d_nope + d_rope) + 4 * a * d_v
    return whole, split


def activation_bytes(recompute: str, flash: bool, sp_on: bool, attention: str = "mha") -> sp.Expr:
    """Bytes one layer keeps for the backward, per micro-batch and GPU (Korthikanti et al. 2022,
    Table 2), with s → s/c: sbh(10 + 24/t) + 5as²b/t; with sequence parallel 34sbh/t + 5as²b/t;
    selective recompute and flash attention drop the scores; full recompute keeps the input 2sbh
    (/t with sequence parallel).  ``attention="mla"``: the attention block's 3sbh + 8sbh/t of those
    (11sbh of the 34) replaced by :func:`mla_attention_widths`."""
    micro = b / (d * m)
    sbh = (s / c) * micro * h
    kept_scores = 0 if flash or recompute != "none" else scores(micro)
    if recompute == "full":
        return 2 * sbh / (t if sp_on else 1)
    if attention == "mla":
        whole, split = mla_attention_widths()
        sb = (s / c) * micro
        rest = 23 * sbh / t if sp_on else sbh * (7 + 16 / t)      # the MLP and the norms, as Korthikanti
        return sb * (whole / (t if sp_on else 1) + split / t) + rest + kept_scores
    if sp_on:
        return 34 * sbh / t + kept_scores
    return sbh * (10 + 24 / t) + kept_scores


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
        parts.append(expert_shard(opts.get("expert_tp", "tp")))
    weights = grads = optimizer = sp.Integer(0)
    grad_bytes = 4 if data.grad_dtype == "fp32" else 2
    for held, group in parts:
        weights += 2 * held if data.full_parameters else 2 * held / group
        grads += grad_bytes * held if data.full_gradients else grad_bytes * held / group
        optimizer += 12 * held if data.zero == 0 else 12 * held / group
    per_layer = activation_bytes(recompute, flash, sp_on, opts.get("attention", "mha"))
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
