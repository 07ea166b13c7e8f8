"""MoE without shared experts, DeepSeek's multi-head latent attention (attention=mla) and the expert
tensor-parallel size (expert_tp): FLOPs, terms and memory against hand counts and the sources' numbers."""

import math

import sympy as sp

import symcomm
from symcomm.core import symbols as S
from symcomm.training import flops
from symcomm.training.hybrid import hybrid_terms
from symcomm.training.memory import activation_bytes

# DeepSeek-V3's attention shape (Hugging Face deepseek-ai/DeepSeek-V3 config.json; DeepSeek-V3 Technical Report §4.2):
# hidden 7168, 128 heads, q_lora_rank 1536, kv_lora_rank 512, qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128
V3 = {S.h: 7168, S.a: 128, S.q_lora: 1536, S.kv_lora: 512, S.d_nope: 128, S.d_rope: 64, S.d_v: 128}


def test_mla_projection_flops_per_token_of_deepseek_v3_by_hand():
    # multiply-adds per token, matrix by matrix (DeepSeek-V2 arXiv:2405.04434 §2.1, eqs. 9-19):
    #   W^DQ 7168 × 1536             = 11,010,048
    #   W^UQ, W^QR 1536 × 128·192    = 37,748,736
    #   W^DKV, W^KR 7168 × (512+64)  =  4,128,768
    #   W^UK, W^UV 512 × 128·256     = 16,777,216
    #   W^O 128·128 × 7168           = 117,440,512
    #                          total = 187,105,280; 2 FLOPs each
    hand = 2 * 187_105_280
    assert flops.attention_projections(1, 1, "mla").subs(V3) == hand


def test_mla_flops_agree_with_megatron_bridge_flop_utils():
    # NVIDIA-NeMo/Megatron-Bridge src/megatron/bridge/training/utils/flop_utils.py (commit 4a3f2c2e), the MLA
    # branch of num_floating_point_operations, per layer and token in multiply-adds: q_term = q_lora_rank ·
    # (h + a·(qk_head_dim + qk_pos_emb_head_dim) + 1), kv lora_rank · (h + a·(qk_head_dim + v_head_dim) + 1)
    # + h·qk_pos_emb_head_dim, o proj a·v_head_dim·h; the "+ 1"s are the two latent RMSNorms, which symcomm's
    # convention does not count as matmuls (flops.py); core attention s·a·(192)/2 + s·a·128/2, halved for the
    # causal mask, which symcomm's convention does not halve (full s × s, as Narayanan et al.)
    q_term = 1536 * (7168 + 128 * (128 + 64) + 1)
    kv_term = 512 * (7168 + 128 * (128 + 128) + 1) + 7168 * 64
    o_term = 128 * 128 * 7168
    norms = 1536 + 512
    assert flops.attention_projections(1, 1, "mla").subs(V3) == 2 * (q_term + kv_term + o_term - norms)
    seq = 4096
    bridge_core = seq * 128 * (128 + 64) // 2 + seq * 128 * 128 // 2
    assert flops.attention_core(1, seq, "mla").subs(V3) / seq == 2 * 2 * bridge_core


def test_mla_without_query_compression():
    # q_lora_rank null (DeepSeek-V2-Lite; Megatron-Core's linear_q_proj): W_Q is h × a·(d_nope + d_rope)
    no_q = {**V3, S.q_lora: 0}
    with_q = flops.attention_projections(1, 1, "mla").subs(V3)
    without = flops.attention_projections(1, 1, "mla").subs(no_q)
    assert with_q - without == 2 * (7168 * 1536 + 1536 * 128 * 192 - 7168 * 128 * 192)


def test_mla_activation_bytes_reduce_to_korthikanti_when_shaped_as_multi_head():
    # with a(d_nope + d_rope) = a·d_v = h and no latents, the MLA block keeps Korthikanti et al.'s 11sbh
    # (2 + 1 kept whole, 8 split over t); d_rope is a positive symbol, so it goes to 0 by a limit-free substitution
    mha_shape = {S.q_lora: 0, S.kv_lora: 0, S.d_rope: 0, S.d_nope: S.h / S.a, S.d_v: S.h / S.a}
    for sp_on in (False, True):
        mla = activation_bytes("none", True, sp_on, "mla").xreplace(mha_shape)
        assert sp.simplify(mla - activation_bytes("none", True, sp_on)) == 0


def _labels(terms):
    return {(term.what, term.phase): term for term in terms}


def test_expert_tp_1_changes_exactly_the_terms_megatron_core_changes():
    # Megatron-LM megatron/core/transformer/moe/token_dispatcher.py: the all-to-all dispatcher gathers over
    # its tp_group = the expert-tensor-parallel group only when that group has more than one rank; with
    # --expert-tensor-parallel-size 1 (parallel_state.py, expert grid tp-ep-dp-pp) the experts are whole on
    # each GPU, sharded over e only, and the expert-data-parallel group is world/(1·e·p) = t·d·c/e ranks
    common = dict(moe=True, sp=True, embeddings=True, gqa=True)
    split = _labels(hybrid_terms(**common, expert_tp="tp"))
    whole = _labels(hybrid_terms(**common, expert_tp="1"))
    gone = {key for key in split if key not in whole}
    assert {what for what, _ in gone} == {"MoE routed-token all-gather over the expert-tensor-parallel group",
                                          "MoE expert-output reduce-scatter over the expert-tensor-parallel group",
                                          # dispatch_postprocess gathers the router probabilities as the tokens
                                          "MoE router-probability all-gather over the expert-tensor-parallel group",
                                          "MoE router-probability gradient reduce-scatter over the "
                                          "expert-tensor-parallel group"}
    assert set(whole) <= set(split)
    changed = {key for key in whole if whole[key] != split[key]}
    assert {what for what, _ in changed} == {"expert gradient reduce-scatter", "expert parameter all-gather",
                                             "token dispatch all-to-all", "expert-output combine all-to-all",
                                             "combine-gradient all-to-all", "dispatch-gradient all-to-all",
                                             "router-probability all-to-all", "router-probability gradient all-to-all",
                                             # the dropless counts' all-gather runs over the TPxEP group:
                                             # t·e ranks with expert_tp = tp, e with 1 (token_dispatcher.py)
                                             "MoE per-expert token-count all-gather (the host waits for it)"}
    t, d, c, e, p = S.t, S.d, S.c, S.e, S.p
    rs = whole[("expert gradient reduce-scatter", "backward")]
    assert sp.simplify(rs.group - t * d * c / e) == 0
    # the reduce-scatter's buffer is the shard held by one expert-data rank times the group: Φ_E/(e·p) whole experts
    assert sp.simplify(rs.message - S.Phi_E / (e * p)) == 0
    # the all-to-alls keep their buffers; only the level changes (e consecutive ranks instead of t·e)
    for key in changed:
        if "all-to-all" in key[0]:
            assert whole[key].message == split[key].message and whole[key].count == split[key].count


def test_no_shared_expert_evaluates_and_equals_the_hand_count():
    # Mixtral 8x7B (its preset: E_s = 0), one sequence of 4096 tokens, FLOPs per step = 3 × forward:
    # per token and layer 2·4096·(2·4096 + 2·1024) projections, 4·4096·4096 attention core (full s × s),
    # 2 routed experts × 3 matrices 4096 × 14336 × 2 FLOPs; LM head 2·4096·32000 per token
    layout = dict(t=1, p=1, d=8, e=8, c=1, b=8, m=1, s=4096)
    got = symcomm.evaluate("hybrid", model="mixtral-8x7b", hardware="h100", **layout)
    assert got["options"]["moe"] == "1"       # filled from the preset (Model.settings)
    per_token = 32 * (2 * 4096 * (2 * 4096 + 2 * 1024) + 4 * 4096 * 4096 + 2 * 3 * 2 * 4096 * 14336) + 2 * 4096 * 32000
    assert got["model_flops"] == 3 * 8 * 4096 * per_token
    one_shared = symcomm.evaluate("hybrid", model="mixtral-8x7b", hardware="h100", E_s=1, **layout)
    # one shared expert adds one expert MLP per token in each of the 32 MoE layers
    assert one_shared["model_flops"] - got["model_flops"] == 3 * 8 * 4096 * 32 * 3 * 2 * 4096 * 14336


def test_mla_with_sequence_parallel_gathers_the_latents():
    # MEGATRON_MLA_SP: per MLA layer and micro-batch the forward all-gathers the query latent (1536), the K, V
    # latent (512) and the rotary key (64) over t instead of the h-wide input (7168)
    terms = _labels(hybrid_terms(moe=True, sp=True, attention="mla", expert_tp="1"))
    widths = {what: term.message for (what, phase), term in terms.items()
              if phase == "forward" and what.startswith("MLA ")}
    tokens = S.b / S.d * S.s / S.c / S.m
    assert {what: sp.simplify(x / tokens).subs(V3) for what, x in widths.items()} == {
        "MLA query latent all-gather": 1536, "MLA K, V latent all-gather": 512, "MLA rotary key all-gather": 64}
    # the h-wide sequence all-gather of the forward is left to the dense MLP blocks, L/p − L_moe/p of them, and to
    # the MoE layers' shared experts (axes.tp_terms' shared_layers: an MLP on the TP group where E_s ≥ 1)
    ag = terms[("sequence all-gather", "forward")]
    assert sp.simplify(ag.count - (S.L - S.L_moe + S.L_moe * sp.Min(1, S.E_s)) / S.p * S.m) == 0


def test_mla_context_parallel_moves_k_and_v_at_their_widths():
    # Megatron-Core MLA with CP: K of a·(d_nope + d_rope) = 24,576 and V of a·d_v = 16,384 per token reach the
    # ring (DeepSeek-V3's shape), i.e. 40,960 elements per token for the pair, split over t
    terms = _labels(hybrid_terms(moe=True, sp=True, attention="mla"))
    ring = terms[("K, V ring pass", "forward")]
    per_token_pair = sp.simplify(ring.message * 2 / (S.b / S.d * S.s / S.m)).subs(V3)
    assert per_token_pair == (128 * (128 + 64) + 128 * 128) / S.t


def test_every_new_preset_evaluates_on_h100():
    # typical Megatron-Bridge layouts that today's even pipeline split expresses (perf_recipes/*/h100, commit 067f987)
    runs = {
        "llama3.1-8b": dict(t=1, p=1, d=8, c=1, b=128, m=128 // 8),
        "llama3.1-70b": dict(t=4, sp=1, p=4, d=4, c=1, b=128, m=32),
        "llama3.1-405b": dict(t=8, sp=1, p=9, d=2, c=1, b=64, m=32, recompute="full"),
        "qwen3-30b-a3b": dict(t=1, p=1, d=16, e=16, c=1, b=1024, m=64),
        "qwen3-235b-a22b": dict(t=2, sp=1, p=2, d=64, e=32, c=1, b=8192, m=128, recompute="full"),
        "gpt-oss-120b": dict(t=1, p=4, d=16, e=8, c=1, b=1280, m=80, recompute="selective"),
        "deepseek-v3": dict(t=2, sp=1, p=1, d=512, e=64, c=1, b=16384, m=32, expert_tp=1, recompute="full"),
    }
    for name, layout in runs.items():
        got = symcomm.evaluate("hybrid", model=name, hardware="h100", s=4096, **layout)
        assert math.isfinite(got["step_time"]) and got["step_time"] > 0, name
        assert got["options"]["attention"] == ("mla" if name == "deepseek-v3" else "mha"), name
        assert got["options"]["moe"] == ("1" if name in ("qwen3-30b-a3b", "qwen3-235b-a22b", "gpt-oss-120b",
                                                         "deepseek-v3") else "0"), name


def test_expert_tp_1_lets_e_span_the_tensor_parallel_ranks():
    # Megatron-Core parallel_state.py: the expert grid is expert_tensor × expert × expert_data × pipeline = world;
    # with an expert tensor size t, e divides d·c; with 1, e divides t·d·c (e = 16 on t=2, d=8: DeepSeek-V3's
    # Megatron-Bridge recipes run TP 2 with expert_tensor_parallel_size 1, perf_recipes/deepseek/common.py)
    layout = dict(t=2, sp=1, p=1, d=8, c=1, e=16, b=64, m=8, s=4096)
    whole = symcomm.evaluate("hybrid", model="mixtral-8x7b", hardware="h100", expert_tp=1, E=16, **layout)
    assert whole["step_time"] > 0
    try:
        symcomm.evaluate("hybrid", model="mixtral-8x7b", hardware="h100", E=16, **layout)
    except ValueError as err:
        assert "d*c" in str(err) and "e=16" in str(err)
    else:
        raise AssertionError("e = 16 > d·c = 8 with the expert tensor size t must be refused")
    try:
        symcomm.evaluate("hybrid", model="mixtral-8x7b", hardware="h100", expert_tp=1, E=32, **{**layout, "e": 32})
    except ValueError as err:
        assert "t*d*c" in str(err) and "e=32" in str(err)
    else:
        raise AssertionError("e = 32 > t·d·c = 16 must be refused")
