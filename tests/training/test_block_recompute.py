"""recompute=block (Megatron's --recompute-method block --recompute-num-layers L_rc): the first L_rc layers of each
model chunk recompute fully, the others none.  Expected values by hand from the definition: Llama 3 8B (h = 4096,
L = 32, V = 128256: its Hugging Face config.json), b = 128 sequences of s = 8192 tokens."""

import pytest

import symcomm
from symcomm.base.errors import InputError

H, LAYERS, VOCAB, B, S = 4096, 32, 128256, 128, 8192
RUN = dict(model="llama3-8b", hardware="h100", c=1, b=B, m=16, s=S)


def _eval(**words):
    return symcomm.evaluate("hybrid", **{**RUN, **words})


def test_block_recomputes_the_forward_of_its_share_of_the_layers():
    # hardware − model FLOPs = the recomputed forward: full's is the forward without the LM head, model/3 − 2·b·s·h·V;
    # block with L_rc = 8 of the one chunk's 32 layers (p = 1): a quarter of it
    r = _eval(t=1, p=1, d=8, recompute="block", L_rc=8)
    full_again = r["model_flops"] / 3 - 2 * B * S * H * VOCAB
    assert r["hardware_flops"] - r["model_flops"] == pytest.approx(full_again * 8 / LAYERS, rel=1e-12)


def test_block_reruns_the_forward_collectives_of_its_layers_only():
    # t = 2, sp = 1: per layer and micro-batch two sequence all-gathers and two reduce-scatters in each pass; the
    # forward recompute runs them for the 8 recomputing layers: 2 · 8 · 16 = 256 each (full: 2 · 32 · 16 = 1024)
    counts = {}
    for mode, extra in (("block", {"L_rc": 8}), ("full", {})):
        r = _eval(t=2, p=1, d=4, sp=1, recompute=mode, **extra)
        counts[mode] = {x["label"]: x["count"] for x in r["terms"] if "(forward recompute)" in x["label"]}
    assert counts["block"]["sequence all-gather (forward recompute)"] == 2 * 8 * 16
    assert counts["full"]["sequence all-gather (forward recompute)"] == 2 * 32 * 16
    assert counts["block"]["sequence reduce-scatter (forward recompute)"] == 2 * 8 * 16


def test_block_keeps_full_activations_for_its_layers_and_none_for_the_rest():
    # t = 1, no sequence parallel, flash attention, one micro-batch of b/(d·m) = 1 sequence in flight (p = 1): a layer
    # under none keeps sbh(10 + 24/t) = 34·sbh bytes with Korthikanti's 4h GeLU MLP, 18·sbh + 6·sbF with Llama 3 8B's
    # SwiGLU of F = 14,336 (FC1's 2F-wide output, FC2's input), less the two dropout masks (2·sbh: Llama 3 8B trains
    # without dropout) and less 4·sb(h − 1024) for K and V at its 8 query groups of 128: 12·sbh + 4·1024·sb + 6·sbF;
    # under full its input 2·sbh (Korthikanti et al. 2022, Table 2); L_rc = 5: (5·2·h + 27·(12·h + 4096 + 6·F))·s bytes
    r = _eval(t=1, p=1, d=8, recompute="block", L_rc=5)
    assert r["memory"]["activations"] == (5 * 2 * H + 27 * (12 * H + 4 * 1024 + 6 * 14_336)) * S


def test_block_compute_is_full_and_none_in_its_share():
    # every layer's work adds: compute(block) − compute(none) = (L_rc/L)·(compute(full) − compute(none)), and
    # L_rc = L/p is full recompute itself
    time = {mode: _eval(t=1, p=1, d=8, recompute=mode, **extra)["compute_time"]
            for mode, extra in (("none", {}), ("full", {}), ("block", {"L_rc": 5}))}
    assert time["block"] - time["none"] == pytest.approx(5 / LAYERS * (time["full"] - time["none"]), rel=1e-9)
    whole = _eval(t=1, p=2, d=4, recompute="block", L_rc=LAYERS // 2)
    full = _eval(t=1, p=2, d=4, recompute="full")
    assert whole["step_time"] == pytest.approx(full["step_time"], rel=1e-12)
    assert whole["memory_per_gpu"] == pytest.approx(full["memory_per_gpu"], rel=1e-12)


def test_interleaved_chunks_each_recompute_their_first_layers():
    # p = 2, v = 2: four chunks of 8 layers, L_rc = 2 of each: a quarter of the layers, as L_rc = 8 of one chunk of 32
    r = _eval(t=1, p=2, d=4, schedule="interleaved", v=2, recompute="block", L_rc=2)
    full_again = r["model_flops"] / 3 - 2 * B * S * H * VOCAB
    assert r["hardware_flops"] - r["model_flops"] == pytest.approx(full_again / 4, rel=1e-12)


@pytest.mark.parametrize("words, said", [
    (dict(t=1, p=2, d=4, recompute="block", L_rc=17), "L_rc·p = 34 must not exceed L = 32"),
    (dict(t=1, p=2, d=4, recompute="block", L_rc=3, pipeline_split="first_last", L_first=15, L_last=17),
     "recompute=block needs pipeline_split=even"),
    (dict(t=1, p=2, d=4, recompute="block"), "missing L_rc"),
])
def test_what_block_cannot_mean_is_refused_in_one_line(words, said):
    with pytest.raises(InputError, match=said.replace("(", r"\(").replace(")", r"\)")) as err:
        _eval(**words)
    assert "\n" not in str(err.value)


def test_the_planner_does_not_search_block():
    # L_rc is a layer count of one layout: the search takes the modes without one
    with pytest.raises(InputError, match="recompute=block is not allowed; choose none, selective, full or op"):
        symcomm.plan(model="llama3-8b", hardware="h100", gpus=16, batch=64, seq=4096, recompute="block")
