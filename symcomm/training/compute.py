"""Compute time of one micro-batch on a pipeline stage, per GPU, as SymPy expressions (seconds):
the matmuls at the datasheet peak of the run's dtype times the share η of it they reach, plus
the memory-bound kernels (norms, activation functions, dropout, residual adds, softmax) as κ HBM
passes over the activation bytes Korthikanti et al. count.  Part of the step model
(:mod:`symcomm.training.steptime`); the constants η and κ are fitted per hardware preset
(``derivations/fit_step_time.py``, :data:`FITTED`).
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from . import flops
from .memory import activation_bytes, scores
from ..core.symbols import L, L_moe, b, c, d, eta, hbm, kappa, m, p, peak, s, t


@dataclass(frozen=True)
class Fitted:
    """A constant of the step model fitted on measured runs: its CLI name, what it means, and the
    range a fit searches (the fit refuses a value at either end as undetermined by the runs)."""
    name: str
    meaning: str
    low: float
    high: float


#: the step model's fitted constants, by name: what a hardware preset's or file's ``step_time`` block holds
FITTED = {f.name: f for f in (
    Fitted("eta", "share of the datasheet matmul peak the matmuls reach", 0.30, 1.00),
    Fitted("kappa", "HBM passes over each activation byte by the memory-bound kernels (forward + backward)", 0.0, 20.0),
)}


@dataclass(frozen=True)
class MicroBatchCompute:
    """One micro-batch on one GPU of a stage: forward and backward seconds (recompute included in
    the backward)."""
    forward: sp.Expr
    backward: sp.Expr

    @property
    def total(self) -> sp.Expr:
        return self.forward + self.backward


def stage_forward_flops(micro, gated: bool, moe: bool, layers, lm_head: bool, attention: str = "mha") -> sp.Expr:
    """Forward FLOPs of one micro-batch of ``micro`` sequences over ``layers`` layers of a stage (MoE
    layers in the model's proportion L_moe/L: an approximation where the recipe puts the dense layers
    on one stage, as DeepSeek-V3's first 3) and, when ``lm_head``, the LM head; before the split over
    the stage's t·c GPUs.  The experts' share is the same with either expert tensor-parallel size:
    with expert_tp = t a GPU runs 1/t of each expert on the t-fold gathered tokens, with 1 the whole
    expert on its own 1/t of them (sequence parallel), under balanced routing."""
    if moe:
        body = layers * ((L - L_moe) * flops.layer_forward(micro, s, gated, attention=attention)
                         + L_moe * flops.moe_layer_forward(micro, s, gated, attention)) / L
    else:
        body = layers * flops.layer_forward(micro, s, gated, attention=attention)
    return body + (flops.lm_head_forward(micro, s) if lm_head else 0)


def micro_batch_compute(run, layers=None, lm_head: bool | None = None) -> MicroBatchCompute:
    """Compute of one micro-batch (b/(d·m) sequences) on one GPU of a stage holding ``layers``
    layers (default L/p) and, when ``lm_head`` (default: the run has embeddings), the LM head:
    matmul FLOPs / (peak · η), recompute as the run's mode runs it, and κ HBM passes over the
    stored activation bytes (forward one third, backward two; a full recompute adds a third)."""
    layers = L / p if layers is None else layers
    lm_head = run.embeddings if lm_head is None else lm_head
    micro = b / (d * m)
    fwd = stage_forward_flops(micro, run.gated, run.moe, layers, lm_head, run.attention) / (t * c)
    if run.recompute == "selective":
        again = layers * flops.attention_core(micro, s, run.attention) / (t * c)
    elif run.recompute == "full":
        again = fwd - (flops.lm_head_forward(micro, s) / (t * c) if lm_head else 0)
    else:
        again = sp.Integer(0)
    rate = peak * eta
    touched = activation_bytes(recompute="none", flash=run.flash, sp_on=run.sp, attention=run.attention) * layers
    if run.recompute == "full":
        touched = touched * sp.Rational(4, 3)
    elif run.recompute == "selective" and not run.flash:
        touched = touched + sp.Rational(1, 3) * scores(micro) * layers
    memory_bound = kappa * touched / hbm
    return MicroBatchCompute(fwd / rate + memory_bound / 3, (2 * fwd + again) / rate + 2 * memory_bound / 3)
