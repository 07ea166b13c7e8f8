"""K and V kept at their grouped-query width, and dropout masks kept only with dropout (memory.KeptWidths), as
Megatron-Core keeps them; and the FP8 attention output kept at 16 bits (memory.TE_ATTENTION_OUTPUT).  Expected values
by hand from the tensors the modules save (an outsider's count of Llama 3 70B: 33.5 s·b·h/t where symcomm said 39),
never from the code under test."""

import json

import pytest

import symcomm
from symcomm import presets
from symcomm.base.errors import InputError
from symcomm.tools import codegen

# Llama 3 70B (h 8192, 8 query groups of 128: h_kv 1024, F 28672, 80 layers) on 4 stages of 20 layers, t = 8 with
# sequence parallelism, 1F1B: the first stage holds p = 4 micro-batches of b/(d·m) = 1 sequence of 8192 tokens
H, HKV, F, S = 8192, 1024, 28672, 8192
RUN = dict(model="llama3-70b", hardware="h100", t=8, p=4, c=1, d=8, b=128, m=16, s=S, sp=1)


def _activations(**words):
    return symcomm.evaluate("hybrid", **{**RUN, **words})["memory"]["activations"]


def test_llama3_70b_keeps_33_and_a_half_sbh_over_t_a_layer():
    # per token and layer, over t: the two norms' inputs (2h each) and the norm-fused QKV's and FC1's inputs (2h each),
    # Q 2h, K and V 2·h_kv each, the attention output 2h, SwiGLU's input (FC1's 2F-wide output, 4F) and FC2's input
    # (2F); no dropout mask (Llama 3 trains without): 8h + 2h + 4h_kv + 2h + 6F = 12·8192 + 4·1024 + 6·28672
    per_token = 12 * H + 4 * HKV + 6 * F
    assert per_token == 33.5 * H
    assert _activations() == pytest.approx(per_token * S / 8 * 20 * 4, rel=1e-12)


def test_dropout_keeps_two_masks_of_a_byte():
    # dropout=1: a mask after the attention and after the MLP, h each at 1 byte, over t with sequence parallelism
    assert _activations(dropout=1) - _activations() == pytest.approx(2 * H * S / 8 * 20 * 4, rel=1e-12)


def test_pytorch_models_keep_k_and_v_repeated_to_the_query_heads():
    # framework fsdp2 at t = 1, eager (torchtitan's Llama repeats K and V before the attention core: h wide) and
    # megatron at t = 1 differ by what each keeps; here the one difference this module adds: fsdp2's count does not
    # change with h_kv, Megatron's does by 4·(h − h_kv) a token and layer
    run = dict(RUN, t=1, p=1, d=64, b=64, m=1, sp=0, framework="fsdp2", zero=3)
    wide = symcomm.evaluate("hybrid", **run)["memory"]["activations"]
    narrow = symcomm.evaluate("hybrid", **{**run, "h_kv": 2048})["memory"]["activations"]
    assert wide == narrow
    mega = dict(RUN, t=1, p=1, d=64, b=64, m=1, sp=0)
    got = (symcomm.evaluate("hybrid", **{**mega, "h_kv": 2048})["memory"]["activations"]
           - symcomm.evaluate("hybrid", **mega)["memory"]["activations"])
    assert got == pytest.approx(4 * (2048 - HKV) * S * 80, rel=1e-12)


def test_fp8_keeps_the_attention_output_at_16_bits_but_delayed_scaling_twice():
    # per-tensor current scaling (fp8_tensor): the projection keeps the core's 16-bit output as its original input
    # (Megatron-Core 0.15, save_original_input); delayed scaling keeps a 1-byte quantized copy beside it: h/t a token
    current = _activations(precision="fp8_tensor")
    delayed = _activations(precision="fp8_delayed")
    assert delayed - current == pytest.approx(H * S / 8 * 20 * 4, rel=1e-12)


def test_every_preset_trains_without_dropout_as_the_shipped_kernels_count():
    # the planner's shipped kernels are built at codegen.DROPOUT; a preset trained with dropout would need its own
    assert {presets.model(name).dropout for name in presets.model_names()} == {codegen.DROPOUT}
    assert presets.model("llama3-70b").settings()["dropout"] == "0"


def test_a_config_with_dropout_is_read_and_a_bad_one_refused(tmp_path):
    base = {"model_type": "llama", "hidden_size": 512, "intermediate_size": 1024, "num_hidden_layers": 2,
            "num_attention_heads": 8, "num_key_value_heads": 8, "vocab_size": 1000, "max_position_embeddings": 512}
    config = tmp_path / "config.json"
    config.write_text(json.dumps({**base, "hidden_dropout": 0.1}))
    assert presets.model_from_config(config).dropout
    assert "dropout" not in presets.model_from_config(config).settings()
    # a Llama config's attention_dropout acts inside the attention kernel, which keeps no h-wide mask (transformers'
    # Llama has no residual dropout)
    config.write_text(json.dumps({**base, "attention_dropout": 0.1}))
    assert not presets.model_from_config(config).dropout
    # GPT-2 leaving resid_pdrop out trains with transformers' default 0.1 (GPT2Config)
    gpt2 = {"model_type": "gpt2", "n_embd": 512, "n_layer": 2, "n_head": 8, "vocab_size": 1000, "n_positions": 512}
    config.write_text(json.dumps(gpt2))
    assert presets.model_from_config(config).dropout
    config.write_text(json.dumps({**gpt2, "resid_pdrop": 0.0}))
    assert not presets.model_from_config(config).dropout
    config.write_text(json.dumps({**base, "attention_dropout": "0.1"}))
    with pytest.raises(InputError, match="attention_dropout must be a dropout probability"):
        presets.model_from_config(config)


def test_gqa_0_over_a_preset_counts_k_and_v_h_wide_in_the_flops_too():
    # Llama 3 8B (h 4096, h_kv 1024, 32 layers) typed gqa=0: its K and V projections h × h, not h × h_kv, in the FLOPs
    # as in the memory and the communication: 2·h·(h − h_kv) multiply-adds a token and layer more, 2 FLOPs each, three
    # passes (forward + backward), 64 sequences of 8192 tokens
    run = dict(model="llama3-8b", hardware="h100", t=1, p=1, c=1, d=8, b=64, m=8, s=8192, framework="megatron")
    wide, narrow = (symcomm.evaluate("hybrid", **run, gqa=g)["model_flops"] for g in (0, 1))
    assert wide - narrow == pytest.approx(2 * 2 * 4096 * (4096 - 1024) * 3 * 64 * 8192 * 32, rel=1e-12)


def test_query_heads_wider_than_h_over_a_keep_q_and_the_attention_output_h_q_wide():
    # Qwen3-30B-A3B: 32 query heads of 128, h_q = 4096 where h = 2048 (config.json head_dim 128).  Megatron-Core's
    # query is [s, b, np, hn] with hn = kv_channels = head_dim and linear_proj's input np·hn wide (attention.py), so Q
    # (2 bytes an element) and the attention output (2 bytes; 3 under delayed scaling, its FP8 copy beside it) are h_q
    # wide, split over t: (2 + its bytes)·(h_q − h)/t a token and layer more than counted h wide.  t = 2, one sequence of 4096
    # tokens a micro-batch, 48 layers on one stage, one micro-batch in flight
    run = dict(model="qwen3-30b-a3b", hardware="h100", t=2, p=1, c=1, d=8, e=8, b=512, m=64, s=4096, sp=1,
               framework="megatron")
    for precision, output_bytes in (("bf16", 2), ("fp8_delayed", 3)):
        heads, h = (symcomm.evaluate("hybrid", **run, precision=precision, q_width=q)["memory"]["activations"]
                    for q in ("heads", "h"))
        assert heads - h == pytest.approx((2 + output_bytes) * (4096 - 2048) / 2 * 4096 * 48, rel=1e-12)
