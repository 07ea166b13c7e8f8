"""Floating-point operations of a transformer step, as SymPy expressions of its shape.

Convention (the one Narayanan et al. 2021, Appendix, and Korthikanti et al. 2022, Appendix A,
use, so that their equations can be checked term for term):

* only matrix multiplications are counted, 2 FLOPs per multiply-add; norms, softmax,
  activations and the optimizer are not FLOPs here (they are memory-bound and timed apart);
* attention is counted over the full s × s score matrix (no causal halving), as the papers do;
* the backward pass of a matmul costs twice its forward (one matmul for the input gradient,
  one for the weight gradient);
* "model FLOPs" = forward + backward, whatever is recomputed (what MFU divides);
  "hardware FLOPs" = model FLOPs + what the recompute mode runs again (what HFU divides).

Every function takes ``B`` sequences of ``seq`` tokens; the shape symbols are those of
:mod:`symcomm.core.symbols` (h, a, h_kv, F, V, L, s; L_moe, k, F_e, E_s for mixtures of experts).
Counts are FLOPs (not FLOP/s), for the whole model and batch unless a name says per layer.
"""

from __future__ import annotations

import sympy as sp

from ..core.symbols import E_s, F, F_e, L, L_moe, V, h, h_kv, k

#: the recompute modes (Korthikanti et al. 2022, §5): none; selective = the attention core
#: (QKᵀ, softmax, dropout, attention over V) is recomputed; full = the whole layer's forward
RECOMPUTE_MODES = ("none", "selective", "full")

KORTHIKANTI_FLOPS = ("Korthikanti et al. 2022, Reducing Activation Recomputation in Large Transformer Models, "
                     "Appendix A (model FLOPs 72BLsh²(1 + s/(6h) + V/(12hL)))")
NARAYANAN_FLOPS = ("Narayanan et al. 2021, Efficient Large-Scale Language Model Training on GPU Clusters Using "
                   "Megatron-LM, §5.1 eq. (3): 96BsLh²(1 + s/(6h) + V/(16Lh)) with one recomputed forward")


def attention_projections(B, seq) -> sp.Expr:
    """Q and O are h × h, K and V are h × h_kv (h_kv = h without grouped-query attention)."""
    return 2 * B * seq * h * (2 * h + 2 * h_kv)


def attention_core(B, seq) -> sp.Expr:
    """QKᵀ (B·a·s·s·(h/a) multiply-adds) and the scores times V (the same): 4·B·s²·h."""
    return 4 * B * seq ** 2 * h


def mlp(B, seq, width=F, gated: bool = False) -> sp.Expr:
    """h → width → h: two matrices, three with a gated unit (SwiGLU's gate and up projections)."""
    return (3 if gated else 2) * 2 * B * seq * h * width


def layer_forward(B, seq, gated: bool = False, width=F) -> sp.Expr:
    """One dense transformer layer's forward."""
    return attention_projections(B, seq) + attention_core(B, seq) + mlp(B, seq, width, gated)


def moe_layer_forward(B, seq, gated: bool = True) -> sp.Expr:
    """One MoE layer's forward: attention, the router (h × E: negligible, not counted), and each
    token through k routed experts and E_s shared experts of width F_e."""
    return attention_projections(B, seq) + attention_core(B, seq) + (k + E_s) * mlp(B, seq, F_e, gated)


def lm_head_forward(B, seq) -> sp.Expr:
    """The logits: h × V for every token (the embedding lookup is not a matmul)."""
    return 2 * B * seq * h * V


def forward(B, seq, gated: bool = False, moe: bool = False) -> sp.Expr:
    """The whole model's forward: L layers (L_moe of them MoE when ``moe``) and the LM head."""
    if moe:
        layers = (L - L_moe) * layer_forward(B, seq, gated) + L_moe * moe_layer_forward(B, seq, gated)
    else:
        layers = L * layer_forward(B, seq, gated)
    return layers + lm_head_forward(B, seq)


def recomputed(B, seq, recompute: str, gated: bool = False, moe: bool = False) -> sp.Expr:
    """What the recompute mode runs again before the backward (forward FLOPs): nothing; the
    attention core of every layer; or every layer's forward (the LM head is not recomputed)."""
    if recompute == "none":
        return sp.Integer(0)
    if recompute == "selective":
        return L * attention_core(B, seq)
    if recompute == "full":
        return forward(B, seq, gated, moe) - lm_head_forward(B, seq)
    raise ValueError(f"recompute={recompute} is not allowed; choose {', '.join(RECOMPUTE_MODES)}")


def model_flops(B, seq, gated: bool = False, moe: bool = False) -> sp.Expr:
    """Forward + backward (= 3 × forward) of B sequences: what MFU divides."""
    return 3 * forward(B, seq, gated, moe)


def hardware_flops(B, seq, recompute: str = "none", gated: bool = False, moe: bool = False) -> sp.Expr:
    """Model FLOPs + the recomputed forward: what the GPUs execute, what HFU divides."""
    return model_flops(B, seq, gated, moe) + recomputed(B, seq, recompute, gated, moe)
