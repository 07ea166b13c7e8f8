"""Chapter 9 — how many parameters: Φ from the architecture.

The strategies take Φ as given; the presets compute it from the published architecture
with :func:`symcomm.presets.parameter_formula`.  This chapter derives that formula weight
matrix by weight matrix, proves that the GPT form equals Narayanan et al.'s
12Lh²(1 + 13/(12h) + (V+s)/(12Lh)) (plus the final LayerNorm they leave out), that its
leading term is Kaplan et al.'s 12Lh², and checks each preset against its published count:
the exact integer is written out by hand here, and it lies within 2% of the published
figure (the names round: "70B" is 68.98·10⁹ for Llama 2).

Counts are elements (parameters), not bytes.
"""

import sympy as sp

from symcomm.core.chapters import Chapter, Derivation, Step
from symcomm.presets import (E_s, F, F_e, V, attention_gqa, attention_mla, d_nope, d_rope, d_v, kv_r,
                             model, n_kv, parameter_formula, phi_deepseek, phi_experts, phi_gpt, phi_llama,
                             q_r)
from symcomm.presets.formula import (L_att, L_ssm, a_ssm, d_head, d_ssm, g_ssm, mamba_mixer, n_ssm, phi_nemotron4,
                                    phi_nemotron_h)
from symcomm.core.proof import AtLeast, Claim, Limit
from symcomm.core.rewrite import at
from symcomm.training.strategies import NARAYANAN as _NARAYANAN
from symcomm.core.symbols import E, L, L_moe, a, h, s

KAPLAN = "Kaplan et al. 2020, Scaling Laws for Neural Language Models, §2.1 (N ≈ 2·d_model·n_layer·(2·d_attn + d_ff) = 12·n_layer·d_model²)"
NARAYANAN = _NARAYANAN + ", §5.1 (P = 12lh²(1 + 13/(12h) + (V+s)/(12lh)))"
TOLERANCE = sp.Rational(2, 100)

GPT = Derivation(
    "GPT-style transformer: parameters",
    (Step(phi_gpt().subs({F: 4 * h, n_kv: a}), "per layer: W_Q, W_K, W_V, W_O and biases (multi-head: n_kv = a), "
                                               "MLP h→4h→h with biases, 2 LayerNorms; token embedding (tied), "
                                               "positions, final LayerNorm"),
     Step(12 * L * h ** 2 + 13 * L * h + (V + s) * h + 2 * h, "collect: 4h² + 8h² per layer, 13h of biases and norms"),
     Step(12 * L * h ** 2 * (1 + sp.Rational(13, 12) / h + (V + s) / (12 * L * h)) + 2 * h,
          "Narayanan et al.'s form, plus the final LayerNorm (2h) they omit")),
    "parameters (elements); learned positions s·h; embeddings tied", NARAYANAN, lhs="Φ, GPT")

LLAMA_ATTENTION = Derivation(
    "Grouped-query attention: parameters of one layer",
    (Step(attention_gqa(), "W_Q and W_O are h × h; W_K and W_V are h × (n_kv · h/a)"),
     Step(2 * h ** 2 + 2 * h ** 2 * n_kv / a, "collect"),
     Step(4 * h ** 2 - 2 * h ** 2 * (a - n_kv) / a, "multi-head attention's 4h², less the K, V heads GQA drops")),
    "parameters (elements); no biases", "Ainslie et al. 2023, GQA; Touvron et al. 2023, Llama 2, §2.2", lhs="attention")

LLAMA = Derivation(
    "Llama-style transformer (dense and MoE layers): parameters",
    (Step(phi_llama(), "dense layers: attention + SwiGLU (3 matrices h × F) + 2 RMSNorms; MoE layers: E routed "
                       "and E_s shared experts of 3h·F_e and a router h × E; embeddings in and out (untied), final "
                       "RMSNorm"),
     Step(L * (attention_gqa() + 2 * h) + (L - L_moe) * 3 * h * F + L_moe * (3 * h * F_e * (E + E_s) + h * E)
          + 2 * V * h + h, "attention and norms in every layer; MLP or experts"),),
    "parameters (elements); dense model: L_moe = 0; Mixtral: E_s = 0; Llama 4: E_s = 1",
    "Touvron et al. 2023, Llama 2, §2; Jiang et al. 2024, Mixtral of Experts, §2; Meta, Llama 4 model card (Maverick: "
    "17B active, 400B total parameters)",
    lhs="Φ, Llama")

DEEPSEEK = Derivation(
    "DeepSeek-V3 (MLA + MoE): parameters",
    (Step(phi_deepseek(), "MLA attention; first L − L_moe layers dense, then E routed + E_s shared experts, "
                          "router h·E with E bias terms"),
     Step(L * (attention_mla() + 2 * h) + (L - L_moe) * 3 * h * F + L_moe * (3 * h * F_e * (E + E_s) + h * E + E)
          + 2 * V * h + h, "attention and norms in every layer; MLP or experts"),
     Step(L * (attention_mla() + 2 * h) + (L - L_moe) * 3 * h * F + L_moe * (3 * h * F_e * E_s + h * E + E)
          + 2 * V * h + h + phi_experts(), "the routed experts Φ_E = 3h·F_e·E·L_moe, the part EP shards")),
    "parameters (elements); the multi-token-prediction module (14B) is not part of the 671B",
    "DeepSeek-AI 2024, DeepSeek-V3 Technical Report, §2.1 and §4.2", lhs="Φ, DeepSeek-V3")

MLA = Derivation(
    "Multi-head latent attention: parameters of one layer",
    (Step(attention_mla(), "W_DQ (h × r_q), its RMSNorm, W_UQ/W_QR (r_q × a(d_nope + d_rope)); W_DKV and W_KR "
                           "(h × (r_kv + d_rope)), its RMSNorm, W_UK/W_UV (r_kv × a(d_nope + d_v)); W_O (a·d_v × h)"),
     Step(h * (q_r + kv_r + d_rope + a * d_v) + q_r * (1 + a * (d_nope + d_rope)) + kv_r * (1 + a * (d_nope + d_v)),
          "collect by input width")),
    "parameters (elements)", "DeepSeek-AI 2024, DeepSeek-V2 §2.1 and DeepSeek-V3 §2.1.1", lhs="attention, MLA")

NEMOTRON_H = Derivation(
    "Hybrid Mamba-Transformer (Nemotron-H, Nemotron 3): parameters",
    (Step(phi_nemotron_h(), "each layer one block with its pre-norm: attention (grouped-query, heads d_head wide), a "
                            "Mamba-2 mixer, MoE (E routed and E_s shared squared-ReLU experts of 2h·F_e, a router "
                            "h·E) or a dense MLP (2hF); embeddings in and out (untied), final norm"),
     Step(L_att * (2 * h * a * d_head + 2 * h * n_kv * d_head + h) + L_ssm * mamba_mixer()
          + L_moe * (2 * h * F_e * (E + E_s) + h * E + h) + (L - L_att - L_ssm - L_moe) * (2 * h * F + h)
          + 2 * V * h + h, "Q and O h × a·d_head, K and V h × n_kv·d_head"),
     Step(L_att * (2 * h * a * d_head + 2 * h * n_kv * d_head + h)
          + L_ssm * (h * (3 * d_ssm + 2 * g_ssm * n_ssm + a_ssm + 1) + 5 * (d_ssm + 2 * g_ssm * n_ssm) + 3 * a_ssm + d_ssm)
          + L_moe * (2 * h * F_e * (E + E_s) + h * E + h) + (L - L_att - L_ssm - L_moe) * (2 * h * F + h)
          + 2 * V * h + h,
          "the Mamba mixer: in_proj h × (2d_ssm + 2g_ssm·n_ssm + a_ssm) and out_proj d_ssm × h, the conv1d's 4 taps "
          "and a bias over d_ssm + 2g_ssm·n_ssm channels, dt_bias, A_log, D (a_ssm each), the gated norm (d_ssm)")),
    "parameters (elements); the router's expert bias is a buffer, not counted",
    "Megatron-LM megatron/core/ssm/mamba_mixer.py (d98e8a6); NVIDIA 2025, Nemotron-H, arXiv:2504.03624, §2",
    lhs="Φ, Nemotron-H")

NEMOTRON_4 = Derivation(
    "Nemotron-4 (dense, squared-ReLU MLP): parameters",
    (Step(phi_nemotron4(), "every layer grouped-query attention, a squared-ReLU MLP (two matrices h × F, no gate) and "
                           "two LayerNorms with weight and bias; no linear biases, rotary positions; embeddings in and "
                           "out (untied), final LayerNorm"),
     Step(L * (2 * h ** 2 + 2 * h ** 2 * n_kv / a + 2 * h * F + 4 * h) + 2 * V * h + 2 * h,
          "W_Q, W_O h × h and W_K, W_V h × n_kv·h/a"),
     Step(phi_llama().subs(L_moe, 0) - L * (h * F - 2 * h) + h, "Llama's dense count less one MLP matrix per layer, "
                                                                 "plus the LayerNorms' biases (h per norm, the final "
                                                                 "one's too)")),
    "parameters (elements)",
    "Parmar et al. 2024, Nemotron-4 15B Technical Report, §2; NVIDIA/NeMo nemo/collections/llm/gpt/model/nemotron.py "
    "(NemotronConfig: LayerNorm, squared ReLU, no linear bias, untied)", lhs="Φ, Nemotron-4")

CLAIMS = [
    Limit(phi_gpt().subs({F: 4 * h, n_kv: a}) / (12 * L * h ** 2), 1, h, sp.oo,
          name="GPT: Φ / 12Lh² → 1 as h → ∞ (Kaplan et al.'s approximation)", source=KAPLAN),
    Claim(attention_gqa().subs(n_kv, a), 4 * h ** 2, name="GQA with n_kv = a is multi-head attention: 4h²",
          source="Vaswani et al. 2017"),
    Claim(phi_gpt() - phi_gpt().subs(n_kv, a), -2 * L * (h + 1) * h * (a - n_kv) / a,
          name="GPT's count with grouped-query attention (a shape typed with gated=0 and h_kv < h, Nemotron-4's): "
               "the K and V projections and their biases of the a − n_kv heads it drops, per layer",
          source="Ainslie et al. 2023, GQA"),
]

# -- the presets against hand counts and published totals --------------------------------------

#: hand counts: (per-layer parts) × layers + embeddings + final norm, each written out
HAND = {
    # 12·96·12288² + 13·96·12288 + (50257 + 2048)·12288 + 2·12288
    "gpt3-175b": 12 * 96 * 12288 ** 2 + 13 * 96 * 12288 + (50257 + 2048) * 12288 + 2 * 12288,
    # per layer: 2·8192² + 2·8192·1024 + 3·8192·28672 + 2·8192 = 855,654,400; × 80; + 2·32000·8192 + 8192
    "llama2-70b": 855_654_400 * 80 + 2 * 32000 * 8192 + 8192,
    # per layer: 2·4096² + 2·4096·1024 + 3·4096·14336 + 2·4096 = 218,112,000; × 32; + 2·128256·4096 + 4096
    "llama3-8b": 218_112_000 * 32 + 2 * 128256 * 4096 + 4096,
    "llama3-70b": 855_654_400 * 80 + 2 * 128256 * 8192 + 8192,
    # per layer: 2·16384² + 2·16384·1024 + 3·16384·53248 + 2·16384 = 3,187,703,808; × 126
    "llama3-405b": 3_187_703_808 * 126 + 2 * 128256 * 16384 + 16384,
    # per layer: 41,943,040 attention + 8 × 176,160,768 experts + 4096·8 router + 8192 norms
    "mixtral-8x7b": (41_943_040 + 8 * 176_160_768 + 4096 * 8 + 8192) * 32 + 2 * 32000 * 4096 + 4096,
    # MLA 187,107,328 per layer; dense MLP 3·7168·18432; experts 257 × 3·7168·2048; router 256·7168 + 256
    "deepseek-v3": (187_107_328 + 3 * 7168 * 18432 + 2 * 7168) * 3
                   + (187_107_328 + 257 * 3 * 7168 * 2048 + 256 * 7168 + 256 + 2 * 7168) * 58
                   + 2 * 129280 * 7168 + 7168,
    # Llama 3.1: Llama 3's shapes
    "llama3.1-8b": 218_112_000 * 32 + 2 * 128256 * 4096 + 4096,
    "llama3.1-70b": 855_654_400 * 80 + 2 * 128256 * 8192 + 8192,
    "llama3.1-405b": 3_187_703_808 * 126 + 2 * 128256 * 16384 + 16384,
    # heads of head_dim 128, not h/a: Q, O 2048 × 4096, K, V 2048 × 512 = 18,874,368; 128 experts 3·2048·768; no shared
    "qwen3-30b-a3b": (18_874_368 + 128 * 3 * 2048 * 768 + 2048 * 128 + 2 * 2048) * 48 + 2 * 151936 * 2048 + 2048,
    # Q, O 4096 × 8192, K, V 4096 × 512 = 71,303,168; 128 experts 3·4096·1536; no shared
    "qwen3-235b-a22b": (71_303_168 + 128 * 3 * 4096 * 1536 + 4096 * 128 + 2 * 4096) * 94 + 2 * 151936 * 4096 + 4096,
    # head_dim 64: Q, O 2880 × 4096, K, V 2880 × 512 = 26,542,080; 128 experts 3·2880·2880; biases and sinks not counted
    "gpt-oss-120b": (26_542_080 + 128 * 3 * 2880 * 2880 + 2880 * 128 + 2 * 2880) * 36 + 2 * 201088 * 2880 + 2880,
    # 6 attention layers: Q, O 2688 × 4096, K, V 2688 × 256, norm 2688 = 23,399,040; 23 Mamba layers: norm 2688,
    # in_proj 2688 × 10304 = 27,697,152, conv1d 6144 × 5 = 30,720, dt_bias, A_log, D 3 × 64, gated norm 4096,
    # out_proj 4096 × 2688 = 11,010,048: 38,744,896; 23 MoE layers: norm 2688, 128 experts 2·2688·1856 =
    # 1,277,165,568, the shared expert 2·2688·3712 = 19,955,712, router 2688 × 128: 1,297,468,032
    "nemotron-3-nano": 23_399_040 * 6 + 38_744_896 * 23 + 1_297_468_032 * 23 + 2 * 131072 * 2688 + 2688,
    # 8 attention layers: Q, O 4096 × 4096, K, V 4096 × 256, norm 4096 = 35,655,680; 40 Mamba layers: norm 4096,
    # in_proj 4096 × 18560 = 76,021,760, conv1d 10240 × 5 = 51,200, 3 × 128, gated norm 8192, out_proj 8192 × 4096 =
    # 33,554,432: 109,640,064; 40 LatentMoE layers: norm 4096, 512 experts 2·1024·2688 = 2,818,572,288, the latent
    # projections 2·4096·1024 = 8,388,608, the shared expert 2·4096·5376 = 44,040,192, router 4096 × 512: 2,873,102,336
    # per layer: 4·4096² + 3·4096·11008 + 2·4096 = 202,383,360 (multi-head attention); + 2·32000·4096 + 4096
    "llama2-7b": 202_383_360 * 32 + 2 * 32000 * 4096 + 4096,
    # per layer: 4·5120² + 3·5120·13824 + 2·5120 = 317,204,480
    "llama2-13b": 317_204_480 * 40 + 2 * 32000 * 5120 + 5120,
    # per layer: 2·6144² + 2·6144·1024 = 88,080,384 attention, 8 experts 3·6144·16384 = 2,415,919,104, router 6144·8,
    # norms 2·6144: 2,504,060,928
    "mixtral-8x22b": 2_504_060_928 * 56 + 2 * 32000 * 6144 + 6144,
    # MLA 5120·1536 + 1536 + 1536·128·192 + 5120·576 + 512 + 512·128·256 + 128·128·5120 = 149,227,520; the first
    # layer's MLP 3·5120·12288; 59 MoE layers of 162 experts 3·5120·1536, router 160·5120 + 160
    "deepseek-v2": (149_227_520 + 3 * 5120 * 12288 + 2 * 5120)
                   + (149_227_520 + 162 * 3 * 5120 * 1536 + 160 * 5120 + 160 + 2 * 5120) * 59
                   + 2 * 102400 * 5120 + 5120,
    # per layer: 2·6144² + 2·6144·1024 = 88,080,384 attention, MLP 2·6144·24576 = 301,989,888, 2 LayerNorms 4·6144
    "nemotron4-15b": (88_080_384 + 301_989_888 + 4 * 6144) * 32 + 2 * 256000 * 6144 + 2 * 6144,
    # per layer: 2·18432² + 2·18432·1536 = 736,100,352 attention, MLP 2·18432·73728 = 2,717,908,992, norms 4·18432
    "nemotron4-340b": (736_100_352 + 2_717_908_992 + 4 * 18432) * 96 + 2 * 256000 * 18432 + 2 * 18432,
    "nemotron-3-super": 35_655_680 * 8 + 109_640_064 * 40 + 2_873_102_336 * 40 + 2 * 131072 * 4096 + 4096,
}

for _name, _count in HAND.items():
    _m = model(_name)
    _formula = parameter_formula(_m.family, **_m.formula_options())
    _phi = at(_formula, _m.architecture())
    _published = sp.Integer(int(_m.published_parameters))
    CLAIMS.append(Claim(_phi, _count, name=f"{_m.title}: Φ = {_count:,} by the formula and by hand",
                        source=_m.source))
    CLAIMS.append(AtLeast(TOLERANCE * _published, sp.Abs(_phi - _published),
                          name=f"{_m.title}: within 2% of the published {float(_published) / 1e9:g}B",
                          source=_m.source))

CLAIMS.append(Claim(phi_experts().subs(model("deepseek-v3").architecture()), 58 * 256 * 3 * 7168 * 2048,
                    name="DeepSeek-V3: Φ_E = 58 · 256 · 3 · 7168 · 2048 routed-expert parameters",
                    source="DeepSeek-AI 2024, DeepSeek-V3 Technical Report, §4.2"))

CHAPTER = Chapter(
    9, "parameters", "Parameters: Φ from the architecture",
    "Φ enters every data-parallel formula. The presets compute it from the published architecture, "
    "weight matrix by weight matrix; this chapter derives the formulas, proves the GPT form equal to "
    "Narayanan et al.'s and its leading term Kaplan et al.'s 12Lh², and checks every preset against a "
    "hand count and its published total (within 2%).",
    (GPT, LLAMA_ATTENTION, LLAMA, MLA, DEEPSEEK, NEMOTRON_H, NEMOTRON_4), tuple(CLAIMS))
