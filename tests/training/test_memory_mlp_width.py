"""A dense MLP keeps its tensors at the model's own width F (memory.dense_mlp_width_bytes), not at Korthikanti et al.'s
4h GeLU MLP for every model: an outsider's test found gated and ungated Llama 2 13B keeping the same activation bytes.
Expected values by hand from Korthikanti et al. 2022, Table 2 (34·s·b·h per layer at t = 1 with the scores not kept)
and from what the MLP's modules save (the activation's input, FC2's input)."""

import json

import pytest

from symcomm.commands.main import main

# Llama 2 13B (h 5120, F 13824, 40 layers) on 64 A100 under DeepSpeed ZeRO-3: micro-batch b/(d·m) = 256/(64·2) = 2
# sequences of 4096 tokens, one in flight, no recompute, t = 1 (no sequence parallelism), flash attention
LAYOUT = ["eval", "hybrid", "--model", "llama2-13b", "--hardware", "a100", "t=1", "p=1", "c=1", "d=64", "m=2", "b=256",
          "s=4096", "framework=deepspeed", "zero=3", "--json"]
TOKENS, H, F, L = 2 * 4096, 5120, 13824, 40


def _activations(capsys, *words):
    assert main([*LAYOUT, *words]) == 0
    return json.loads(capsys.readouterr().out)["memory"]["activations"]


def test_an_mlp_of_width_4h_keeps_korthikantis_34_sbh(capsys):
    # F = 4h ungated is Korthikanti's GPT MLP: its Table 2, 34 bytes per token and hidden element, every layer, with
    # its two dropout masks (dropout=1; Llama 2 13B itself trains without: its config's attention_dropout 0.0, 32)
    assert _activations(capsys, "gated=0", f"F={4 * H}", "dropout=1") == pytest.approx(34 * TOKENS * H * L, rel=1e-12)
    assert _activations(capsys, "gated=0", f"F={4 * H}") == pytest.approx(32 * TOKENS * H * L, rel=1e-12)


def test_a_gated_mlp_keeps_fc1s_2f_wide_output_and_fc2s_f_wide_input(capsys):
    # Korthikanti's MLP share of the 34 is the GeLU's input (4h at 2 bytes, 8h) and FC2's input (4h at 2, 8h); an MLP
    # of width F keeps its activation's input at 2 bytes (2F ungated; gated, SwiGLU's input is FC1's gate and up
    # halves, 2F wide: 4F) and FC2's input (2F): 34h - 16h + 6F gated, + 4F ungated, per token and layer; less the two
    # dropout masks (h each at 1 byte), which Llama 2 13B, trained without dropout, does not keep
    gated = _activations(capsys, "gated=1")
    ungated = _activations(capsys, "gated=0")
    assert gated == pytest.approx((32 * H - 16 * H + 6 * F) * TOKENS * L, rel=1e-12)
    assert ungated == pytest.approx((32 * H - 16 * H + 4 * F) * TOKENS * L, rel=1e-12)


def test_a_full_recompute_keeps_the_layer_input_whatever_the_mlp(capsys):
    # full recompute keeps each layer's input alone (2sbh, Korthikanti et al. §4.1): the MLP's width does not enter
    for word in ("gated=0", "gated=1"):
        assert _activations(capsys, word, "recompute=full") == pytest.approx(2 * TOKENS * H * L, rel=1e-12)
