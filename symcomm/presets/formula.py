"""The parameter-count formula Φ(architecture) in SymPy: the reference that ``derivations/parameters.py``
derives and checks against the published counts.  :meth:`symcomm.presets.Model.parameters` computes the same
number in plain integer arithmetic (no SymPy at start); ``tests/presets/test_presets.py`` holds the two equal for
every preset."""

from __future__ import annotations

import sympy as sp

from ..core import symbols as S

def _int(name: str) -> sp.Symbol:
    return sp.Symbol(name, integer=True, positive=True)


#: architecture symbols beside symcomm's own (h, L, a, s, E, L_moe)
F = S.F                  # FFN (MLP intermediate) width of a dense layer
F_e = S.F_e              # FFN width of one expert
V = S.V                  # vocabulary (symcomm's own symbol: the hybrid strategy's embeddings use it too)
n_kv = _int("n_kv")      # key/value heads (GQA); = a for multi-head attention
E_s = S.E_s              # shared (always active) experts of a MoE layer
q_r, kv_r = S.q_lora, S.kv_lora                              # MLA low-rank widths (q_r = 0: no query compression)
d_nope, d_rope, d_v = S.d_nope, S.d_rope, S.d_v               # MLA head widths
d_head = _int("d_head")  # width of one attention head where a·d_head ≠ h (Qwen3-MoE, GPT-OSS: head_dim in config.json)

h, L, a, s, E, L_moe = S.h, S.L, S.a, S.s, S.E, S.L_moe
# hybrid Mamba models (nemotron_h): attention and Mamba-2 layers, the Mamba mixer's heads, inner width, state, groups
L_att, L_ssm, a_ssm, d_ssm, n_ssm, g_ssm = S.L_att, S.L_ssm, S.a_ssm, S.d_ssm, S.n_ssm, S.g_ssm
h_lat = S.h_lat          # LatentMoE: the routed experts' width (moe_latent_size)
#: the causal convolution's kernel width of a Mamba-2 mixer (MambaMixer d_conv, 4; megatron/core/ssm/mamba_mixer.py);
#: models.MAMBA_CONV is the same for the SymPy-free count (this module may not be imported there: tests/presets hold
#: the two counts equal)
MAMBA_CONV = 4


def attention_mha_biased() -> sp.Expr:
    """GPT: W_Q, W_O (h × h), W_K, W_V (h × n_kv·h/a: grouped-query attention where n_kv < a, Nemotron-4's; h × h
    for multi-head attention, n_kv = a, GPT-2/3's) and their biases: 4h² + 4h at n_kv = a."""
    kv = n_kv * h / a
    return 2 * h ** 2 + 2 * h * kv + 2 * h + 2 * kv


def attention_gqa(head=None) -> sp.Expr:
    """Llama: W_Q, W_O of h × h; W_K, W_V of h × (n_kv·h/a); no biases.  ``head`` (e.g. :data:`d_head`)
    for models whose heads are not h/a wide: W_Q is h × a·head, W_O a·head × h."""
    head = h / a if head is None else head
    return h * (a * head) + 2 * h * (n_kv * head) + (a * head) * h


def attention_mla(q_compressed: bool = True) -> sp.Expr:
    """DeepSeek multi-head latent attention: low-rank Q (h→r_q→a·(d_nope+d_rope)), joint
    low-rank K,V (h→r_kv+d_rope, r_kv→a·(d_nope+d_v)), two RMSNorms on the ranks, W_O.
    ``q_compressed=False`` (q_lora_rank null, r_q = 0: DeepSeek-V2-Lite): W_Q is h × a·(d_nope+d_rope), no
    query norm."""
    query = (h * q_r + q_r + q_r * a * (d_nope + d_rope)) if q_compressed else h * a * (d_nope + d_rope)
    return query + h * (kv_r + d_rope) + kv_r + kv_r * a * (d_nope + d_v) + a * d_v * h


def phi_gpt() -> sp.Expr:
    """GPT-2/3: per layer attention + MLP (2hF + F + h with biases) + 2 LayerNorms (4h);
    token embedding V·h (tied with the output), learned positions s·h, final LayerNorm 2h.  n_kv = a (multi-head
    attention) gives GPT-3's count; n_kv < a its grouped-query form."""
    return L * (attention_mha_biased() + 2 * h * F + F + h + 4 * h) + V * h + s * h + 2 * h


def phi_llama(tied: bool = False, head_dim: bool = False) -> sp.Expr:
    """Llama/Mixtral: dense layers attention + SwiGLU MLP (3hF) + 2 RMSNorms (2h); MoE layers
    E routed and E_s shared experts of 3h·F_e each (Llama 4's one shared expert as wide as a routed one; 0 in
    Mixtral, Qwen3-MoE, GPT-OSS) and a router h·E; embeddings V·h in and (untied) V·h out; final norm h.
    ``head_dim``: heads of width d_head, not h/a (Qwen3-MoE, GPT-OSS)."""
    head = d_head if head_dim else None
    dense = attention_gqa(head) + 3 * h * F + 2 * h
    moe = attention_gqa(head) + (E + E_s) * 3 * h * F_e + h * E + 2 * h
    return (L - L_moe) * dense + L_moe * moe + (1 if tied else 2) * V * h + h


def phi_deepseek(q_compressed: bool = True) -> sp.Expr:
    """DeepSeek-V3: MLA; first L − L_moe layers dense (3hF), then MoE layers with E routed
    and E_s shared experts (3h·F_e each), a router h·E plus its E bias terms; untied embeddings."""
    dense = attention_mla(q_compressed) + 3 * h * F + 2 * h
    moe = attention_mla(q_compressed) + (E + E_s) * 3 * h * F_e + h * E + E + 2 * h
    return (L - L_moe) * dense + L_moe * moe + 2 * V * h + h


def mamba_mixer() -> sp.Expr:
    """One Mamba-2 layer (megatron/core/ssm/mamba_mixer.py at d98e8a64): in_proj h × (2·d_ssm + 2·g_ssm·n_ssm +
    a_ssm) with its fused pre-norm (h), the causal conv1d over x, B, C (d_ssm + 2·g_ssm·n_ssm channels, MAMBA_CONV taps
    and a bias each), dt_bias, A_log and D (a_ssm each), the gated RMSNorm (d_ssm) and out_proj d_ssm × h."""
    conv = d_ssm + 2 * g_ssm * n_ssm
    return (h + h * (2 * d_ssm + 2 * g_ssm * n_ssm + a_ssm) + conv * (MAMBA_CONV + 1) + 3 * a_ssm + d_ssm
            + d_ssm * h)


def phi_nemotron_h(head_dim: bool = True, latent: bool = False) -> sp.Expr:
    """Nemotron-H / Nemotron 3 (hybrid Mamba-Transformer, Megatron-Core's hybrid_layer_pattern): each of the L layers
    one block with its pre-norm (h): L_att grouped-query attention blocks (heads d_head wide), L_ssm Mamba-2 mixers
    (:func:`mamba_mixer`, its norm inside), L_moe MoE blocks of E routed and E_s shared experts (2h·F_e each: a
    squared-ReLU MLP, not gated) and a router h·E, the rest dense MLPs (2hF); untied embeddings, final norm h.
    ``latent`` (LatentMoE, Nemotron 3 Super): the routed experts 2h_lat·F_e each and the projections h × h_lat and
    h_lat × h per MoE layer (megatron/core/transformer/moe/moe_layer.py: fc1_latent_proj, fc2_latent_proj)."""
    head = d_head if head_dim else None
    dense = L - L_att - L_ssm - L_moe
    routed = E * 2 * h_lat * F_e + 2 * h * h_lat if latent else E * 2 * h * F_e
    return (L_att * (attention_gqa(head) + h) + L_ssm * mamba_mixer() + L_moe * (routed + E_s * 2 * h * F_e + h * E + h)
            + dense * (2 * h * F + h) + 2 * V * h + h)


def phi_nemotron4(head_dim: bool = False) -> sp.Expr:
    """Nemotron-4 (15B, 340B): every layer grouped-query attention and a squared-ReLU MLP (two h × F matrices, not
    gated), no linear biases, two LayerNorms with weight and bias (4h); untied embeddings in and out, a final LayerNorm
    (2h); rotary positions, nothing learned per position.  ``head_dim``: heads of width d_head, not h/a (the pruned
    Minitron models' Hugging Face configs)."""
    return L * (attention_gqa(d_head if head_dim else None) + 2 * h * F + 4 * h) + 2 * V * h + 2 * h


def phi_experts(gated: bool = True, latent: bool = False) -> sp.Expr:
    """Φ_E, the routed-expert parameters that expert parallelism shards: L_moe·E·3h·F_e (2h·F_e not gated; h_lat for
    h under LatentMoE)."""
    return L_moe * E * (3 if gated else 2) * (h_lat if latent else h) * F_e


FAMILIES = ("gpt", "llama", "deepseek", "nemotron_h", "nemotron4")


def parameter_formula(family: str, tied: bool = False, head_dim: bool = False, q_compressed: bool = True,
                      latent: bool = False) -> sp.Expr:
    """Φ of a family; ``head_dim``: heads of width d_head (not h/a); ``q_compressed=False``: MLA without
    the query latent (q_lora_rank null)."""
    if family == "gpt":
        return phi_gpt()
    if family == "llama":
        return phi_llama(tied, head_dim)
    if family == "deepseek":
        return phi_deepseek(q_compressed)
    if family == "nemotron_h":
        return phi_nemotron_h(head_dim, latent)
    if family == "nemotron4":
        return phi_nemotron4(head_dim)
    raise ValueError(f"model family {family!r} is not allowed; choose {', '.join(FAMILIES)}")
