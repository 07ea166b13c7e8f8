"""Transformer Engine under FP8 as Megatron-Core runs it (stop 69; NVIDIA/TransformerEngine at d0067d0d read by an
outsider's helper): the sequence-parallel all-gathers move quantized data, current scaling all-reduces each quantize's
amax over the tensor-parallel group, and each linear's quantized weight is cached for the step's micro-batches."""

import pytest

import symcomm
from symcomm import presets

LAYOUT = dict(model="llama3-70b", hardware="h100", t=8, p=4, d=8, c=1, b=256, m=32, s=8192, sp=1)


def _terms(answer):
    return {row["label"]: row for row in answer["terms"]}


def test_current_scaling_all_reduces_an_amax_beside_each_gather():
    # Llama 3 70B: 80 layers over p = 4 stages, 20 a stage; each layer's QKV and FC1 inputs quantized before their
    # forward gathers and the attention output's and FC2's output gradients before the backward's: 2 a layer and
    # pass, over m = 32 micro-batches = 1280 each; one fp32 amax per all-reduce (4 bytes)
    rows = _terms(symcomm.evaluate("hybrid", **LAYOUT, precision="fp8_tensor"))
    for phase in ("forward", "backward"):
        amax = rows[f"FP8 amax all-reduce (current scaling) ({phase})"]
        assert amax["count"] == 20 * 2 * 32 and amax["message"] == 4 and amax["collective"] == "all_reduce"
        assert rows[f"sequence all-gather ({phase})"]["count"] == amax["count"]
    # delayed scaling takes its amax from the history (one reduction at the autocast's exit, not counted): none here
    delayed = _terms(symcomm.evaluate("hybrid", **LAYOUT, precision="fp8_delayed"))
    assert not any("amax" in label for label in delayed)


def test_fp8_gathers_move_one_byte_an_element():
    # micro-batch of b/(d·m) = 1 sequence of 8192 tokens × h = 8192: 64 Mi elements, 1 byte each in FP8, 2 in bf16;
    # the reduce-scatters stay 16-bit
    fp8 = _terms(symcomm.evaluate("hybrid", **LAYOUT, precision="fp8_tensor"))
    bf16 = _terms(symcomm.evaluate("hybrid", **LAYOUT))
    elements = 8192 * 8192
    assert fp8["sequence all-gather (forward)"]["message"] == elements
    assert fp8["input re-all-gather for the weight gradient (backward)"]["message"] == elements
    assert bf16["sequence all-gather (forward)"]["message"] == 2 * elements
    assert fp8["sequence reduce-scatter (forward)"]["message"] == 2 * elements


def test_the_cached_fp8_weights_are_counted_where_transformer_engine_keeps_them():
    # the quantized weight and its transpose, 1 byte each per parameter of the linear layers (not the V·h embedding
    # and LM head): Llama 3 70B's layers over t·p = 32 GPUs
    model = presets.model("llama3-70b")
    layers = model.parameters - 2 * model.vocab * model.hidden
    cached = symcomm.evaluate("hybrid", **LAYOUT, precision="fp8_tensor")["memory"]
    assert cached["fp8_weights"] == pytest.approx(2 * layers / 32, rel=1e-12)
    # none where the parameter is the quantized tensor itself (--fp8-param-gather), under bf16, or outside TE
    for words in (dict(precision="fp8_tensor", fp8_param_gather=1), dict()):
        assert "fp8_weights" not in symcomm.evaluate("hybrid", **LAYOUT, **words)["memory"]
    torch = symcomm.evaluate("hybrid", **{**LAYOUT, "p": 1, "d": 32, "m": 8}, framework="fsdp2", zero=3,
                             precision="fp8_tensor")
    assert "fp8_weights" not in torch["memory"]
