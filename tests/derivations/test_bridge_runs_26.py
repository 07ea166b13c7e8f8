"""The Megatron-Bridge 26.04.01 / 26.06 / 26.06.01 rows (derivations/data/bridge_runs_26.json) and torchtitan's
published rows (derivations/data/torchtitan_runs.json): schema, layout and FLOP count.

The FLOP check is the independent evidence that each row's model shape, sequence length and
tensor-parallel size are the ones the table measured: the printed model TFLOP/s per GPU divided by
the printed tokens/s per GPU is the table's model FLOPs per token, and it must match a count made here
from the shape alone. The count follows the convention of Megatron-Bridge's
src/megatron/bridge/training/utils/flop_utils.py (NVIDIA-NeMo/Megatron-Bridge
@ c810129341a84e58f4cbed3093f70668a088c028, tag v0.4.2, the 26.04.01 rows; and
@ fcbb6031103d0ca845c1a54d4fee55ecfcca17b6, tag v0.5.0, the same file at v0.5.1, the 26.06 and 26.06.01 rows):
fwd + wgrad + dgrad = 3 x forward, 2 FLOPs per multiply-add, causal attention counted as half the score matrix,
the vocabulary padded to a multiple of 128·TP, MTP depths counted as extra layers and extra logits, no recompute.
The two versions differ in two places: v0.4.2 counts a gated MLP's third GEMM only for a SiLU gate (GPT-OSS's
quick_gelu gate is counted as two GEMMs) and ignores sliding windows; v0.5.0 counts every gated MLP as three GEMMs
and a sliding-window layer's attention over its exact average causal context W - W(W-1)/(2s).
"""

import pytest

from symcomm.base.errors import InputError
from symcomm.derivations import bridge_runs

FILE = "bridge_runs_26.json"
RUNS = bridge_runs.load(FILE)["runs"]
#: torchtitan's published rows (same schema; they print no TFLOP/s, so only the schema and layout checks apply)
TITAN_RUNS = bridge_runs.load("torchtitan_runs.json")["runs"]
#: rows whose printed TFLOP/s ÷ tokens/s differs from the count by more than TOLERANCE, with the reason
KNOWN_DISAGREEMENTS: dict[str, str] = {}
TOLERANCE = 0.03
#: releases whose Bridge tag (v0.4.2) counts FLOPs with the older rules (see the module docstring)
OLD_RULES = ("26.04.01",)


def padded_vocab(vocab: int, tp: int) -> int:
    step = 128 * tp          # make_vocab_size_divisible_by = 128, times the tensor-parallel size
    return -(-vocab // step) * step


def transformer_flops_per_token(m: dict, seq: int, tp: int, old_rules: bool = True) -> float:
    h, layers, a, mtp = m["hidden"], m["layers"], m["heads"], m.get("mtp_layers", 0)
    silu_only = old_rules and m.get("activation", "silu") != "silu"
    gate = 1.5 if m["gated_mlp"] and not silu_only else 1.0
    moe_layers = m.get("moe_layers", 0)
    dense_layers = layers - moe_layers
    if m.get("experts"):
        moe_layers += mtp       # every MoE model here ends on an MoE layer, so its MTP layers are MoE layers
    else:
        dense_layers += mtp
    # each MLP: two GEMMs (three with a SiLU gate) per layer, 2 FLOPs per MAC, 3 passes
    mlp = 12 * h * gate * (m["ffn"] * dense_layers
                           + (m.get("moe_ffn", 0) * m.get("top_k", 0) + m.get("shared_expert_ffn", 0)) * moe_layers)
    depth = layers + mtp
    if m.get("kv_lora_rank"):
        nope, rope, vh = m["qk_nope_head_dim"], m["qk_rope_head_dim"], m["v_head_dim"]
        q = m["q_lora_rank"] * (h + a * (nope + rope) + 1)
        kv = m["kv_lora_rank"] * (h + a * (nope + vh) + 1) + h * rope
        scores = seq * a * (nope + rope) / 2 + seq * a * vh / 2
        attention = 6 * depth * (q + kv + a * vh * h + scores)
    else:
        q_width = m["head_dim"] * a
        kv_width = m["head_dim"] * m["kv_heads"]
        # Q and O projections (h·q_width each), K and V (h·kv_width each), QK^T and AV over half the causal matrix
        projections = 2 * h * q_width + 2 * h * kv_width
        attention = 6 * depth * (projections + seq * q_width)
        window = m.get("window")
        if window and not old_rules:
            # a sliding layer sees on average W - W(W-1)/(2s) keys, W = window_size[0] + window_size[1] + 1,
            # in QK^T and in AV
            width = window["window_size"][0] + window["window_size"][1] + 1
            context = width - width * (width - 1) / (2 * seq)
            attention = 6 * (window["full_layers"] * (projections + seq * q_width)
                             + window["sliding_layers"] * (projections + 2 * context * q_width))
    mtp_proj = 6 * mtp * (3 * h + 2 * h * h)
    logits = 6 * h * padded_vocab(m["vocab"], tp) * (mtp + 1)
    return mlp + attention + mtp_proj + logits


def hybrid_flops_per_token(m: dict, seq: int, tp: int) -> float:
    hyb = m["hybrid"]
    counts = dict(hyb["counts"])
    mtp = m.get("mtp_layers", 0)
    for kind in hyb["mtp_pattern"]:
        counts[kind] = counts.get(kind, 0) + mtp
    h, a = m["hidden"], m["heads"]
    gate = 1.5 if m["gated_mlp"] else 1.0
    q_width, kv_width = m["head_dim"] * a, m["head_dim"] * m["kv_heads"]
    attention = 2 * h * q_width + 2 * h * kv_width + seq * q_width
    latent = m.get("moe_latent")
    routed_in = latent if latent else h
    moe = 2 * routed_in * m["moe_ffn"] * m["top_k"] * gate + 2 * h * m.get("shared_expert_ffn", 0) * gate
    if latent:
        moe += 2 * h * latent                      # down to the latent width and back
    inner = 2 * h                                  # flop_utils takes the Mamba inner width as 2h
    mamba = (h * (2 * inner + 2 * hyb["mamba_groups"] * hyb["mamba_state"] + hyb["mamba_heads"])
             + 3.5 * inner * hyb["mamba_state"] + inner * h)
    forward = 2 * (counts.get("*", 0) * attention + counts.get("E", 0) * moe + counts.get("M", 0) * mamba
                   + counts.get("-", 0) * 2 * h * m["ffn"] * gate + h * padded_vocab(m["vocab"], tp) * (1 + mtp))
    return 3 * forward


def layers_per_chunk(run: dict) -> list[int] | None:
    layout = run["pipeline_layout"]
    return layout.get("layers_per_chunk") if isinstance(layout, dict) else None


def flops_per_token(run: dict) -> float:
    model = run["model"]
    if "hybrid" in model:
        return hybrid_flops_per_token(model, run["seq"], run["t"])
    return transformer_flops_per_token(model, run["seq"], run["t"], old_rules=run["release"] in OLD_RULES)


@pytest.mark.parametrize("run", RUNS + TITAN_RUNS, ids=lambda r: r["id"])
def test_run_is_valid(run):
    assert bridge_runs.validate(run) == []


def test_ids_are_unique():
    ids = [r["id"] for r in RUNS + TITAN_RUNS]
    assert len(ids) == len(set(ids))


def test_torchtitan_runs_print_no_flop_rate():
    # benchmarks/llama3_h100_202412_torchtitan.md: "We do not report Model FLOPS Utilization (MFU)";
    # none is invented here
    assert all(r["model_tflops_per_gpu"] is None and r["role"] == "check" for r in TITAN_RUNS)


@pytest.mark.parametrize("run", [r for r in RUNS + TITAN_RUNS if layers_per_chunk(r) is not None],
                         ids=lambda r: r["id"])
def test_layers_per_chunk_cover_the_model(run):
    chunks = layers_per_chunk(run)
    assert len(chunks) == run["p"] * run["v"]
    assert sum(chunks) == run["model"]["layers"]


@pytest.mark.parametrize("run", RUNS, ids=lambda r: r["id"])
def test_model_layer_kinds_add_up(run):
    m = run["model"]
    if "hybrid" in m:       # Nemotron 3: Mamba, MoE and attention layers make up the stack
        assert sum(m["hybrid"]["counts"].values()) == m["layers"]
        assert m["hybrid"]["counts"]["E"] == m["moe_layers"]
    elif m.get("experts"):  # leading dense layers, then MoE layers
        assert m["dense_layers_first"] + m["moe_layers"] == m["layers"]
    if "window" in m:       # GPT-OSS: sliding-window and full-attention layers alternate
        assert m["window"]["sliding_layers"] + m["window"]["full_layers"] == m["layers"]


def test_validate_names_a_wrong_layout():
    run = dict(RUNS[0], gpus=RUNS[0]["gpus"] + 1)
    assert any("gpus" in line for line in bridge_runs.validate(run))
    run = dict(RUNS[0], step_time_s=RUNS[0]["step_time_s"] * 1.01)
    assert any("step_time_s" in line for line in bridge_runs.validate(run))


def test_load_refuses_a_path():
    with pytest.raises(InputError):
        bridge_runs.load("../data/bridge_runs_26.json")


def test_llama3_70b_count_by_hand():
    # Llama 3 70B (h 8192, 80 layers, 64 heads of 128, 8 KV heads, SwiGLU 28672, vocab 128256), s = 8192, TP 1:
    # per layer forward MACs: QO 2·8192·8192 + KV 2·8192·1024 + SwiGLU 3·8192·28672 + causal scores 8192·8192
    # = 134217728 + 16777216 + 704643072 + 67108864 = 922746880; x80 layers, + logits 8192·128256 = 1050673152
    # -> 73819750400 + 1050673152 = 74870423552 MACs; x2 FLOPs x3 passes = 449222541312
    model = next(r["model"] for r in RUNS if r["model"]["name"] == "llama3-70b")
    assert transformer_flops_per_token(model, 8192, 1) == pytest.approx(449222541312, rel=1e-12)


@pytest.mark.parametrize("run", RUNS, ids=lambda r: r["id"])
def test_printed_tflops_match_the_model_flop_count(run):
    printed = run["model_tflops_per_gpu"] * 1e12 / run["tokens_per_s_per_gpu"]
    ratio = printed / flops_per_token(run)
    if run["id"] in KNOWN_DISAGREEMENTS:
        assert abs(ratio - 1) > TOLERANCE, f"{run['id']} now agrees: drop it from KNOWN_DISAGREEMENTS"
    else:
        assert abs(ratio - 1) <= TOLERANCE, f"{run['id']}: printed/counted = {ratio:.4f}"
