"""The planner, checked by hand on a 16-GPU cluster (two nodes of 8 A100s)."""

import json

import numpy as np
import pytest

from symcomm import presets
from symcomm.cli import main
from symcomm.plan import PlanError, Request, enumerate_layouts, plan

LLAMA8B = presets.model("llama3-8b")
A100 = presets.hardware("a100")
PHI = 8_030_261_248
BYTES = 2                                           # bf16
ALPHA, ALPHA_INTER = 3.4e-6, 9.6e-6                 # NCCL's NVLink and network constants
BETA, BETA_INTER = 1 / 300e9, 1 / 25e9              # s per byte: NVLink 3, HDR 200 Gb/s
GAMMA = 3 / 2.039e12                                # s per reduced byte (2 reads + 1 write of HBM)


def small(**kw):
    args = dict(model=LLAMA8B, hardware=A100, gpus=16, batch=32, seq=2048, gpus_per_node=8)
    args.update(kw)
    return Request(**args)


def row(result, **want):
    mask = np.ones(len(result), dtype=bool)
    for key, value in want.items():
        mask &= result.layouts[key] == value
    assert mask.sum() == 1, want
    return int(np.flatnonzero(mask)[0])


def test_every_layout_is_enumerated():
    got = enumerate_layouts(small())
    # t, p, c, d powers of two with t ≤ 8, t·p·c·d = 16: exponents (i, j, k) with i ≤ 3, i + j + k ≤ 4
    # → 15 + 10 + 6 + 3 = 34 layouts (d = 16/(t·p·c) always divides the batch of 32)
    assert len(got["t"]) == 34
    assert np.all(got["t"] * got["p"] * got["c"] * got["d"] == 16)
    assert np.all(got["m"] == 32 // got["d"])
    # SP only for t > 1 (19 layouts); 6 data-parallel schemes (megatron zero 0 and 1, deepspeed zero 2 and 3,
    # fsdp FULL_SHARD and SHARD_GRAD_OP); recompute on/off: (34 + 19) · 6 · 2
    assert plan(small(memory_check=False)).considered == (34 + 19) * 6 * 2


def test_pure_data_parallel_by_hand():
    result = plan(small(memory_check=False))
    i = row(result, t=1, p=1, c=1, d=16, zero=0, sp=0, recompute=0)     # megatron DDP: m = 2, reduced once
    # ring all-reduce of Φ over 16 GPUs on two nodes: 2·15 inter-node messages, 2·15/16·Φ elements moved,
    # 15/16·Φ reduced — in fp32, 4 bytes each: Megatron-LM reduces bf16 runs' gradients in fp32
    # (megatron/training/arguments.py, accumulate_allreduce_grads_in_fp32)
    fp32 = 4
    hand = 30 * ALPHA_INTER + 2 * 15 / 16 * PHI * fp32 * BETA_INTER + 15 / 16 * PHI * fp32 * GAMMA
    assert result.layouts["time"][i] == pytest.approx(hand, rel=1e-12)
    assert result.per_axis["dp"]["send"][i] == pytest.approx(2 * 15 / 16 * PHI * fp32, rel=1e-12)
    for axis in ("tp", "pp"):
        assert result.per_axis[axis]["time"][i] == 0


def test_tensor_and_pipeline_by_hand():
    result = plan(small(memory_check=False))
    i = row(result, t=8, p=2, c=1, d=1, zero=1, sp=0, recompute=0)     # megatron distributed optimizer
    M = 2048 * 4096                                   # one micro-batch (1 sequence) of s·h elements
    # TP inside a node: 2 all-reduces forward + 2 backward per layer and micro-batch, 16 layers, 32 micro-batches
    count = 4 * 16 * 32
    tp = count * (2 * 7 * ALPHA + 2 * 7 / 8 * M * BYTES * BETA + 7 / 8 * M * BYTES * GAMMA)
    # the last stage also holds the LM head (Megatron-LM mappings.py, cross_entropy.py): per micro-batch one
    # all-reduce of its input gradient (s·h) and three of s elements (max, target logit, sum of exponentials)
    ring = lambda size: 2 * 7 * ALPHA + 2 * 7 / 8 * size * BYTES * BETA + 7 / 8 * size * BYTES * GAMMA  # noqa
    tp += 32 * (ring(M) + 3 * ring(2048))
    # PP, two stages: stage 0 sends one activation per micro-batch forward, stage 1 one gradient
    # backward; each GPU sends 32 messages, inter-node (the 16 GPUs span 2 nodes)
    pp = 32 * ALPHA_INTER + 32 * M * BYTES * BETA_INTER
    assert result.per_axis["tp"]["time"][i] == pytest.approx(tp, rel=1e-12)
    assert result.per_axis["pp"]["time"][i] == pytest.approx(pp, rel=1e-12)
    assert result.per_axis["dp"]["time"][i] == 0      # d·c = 1
    assert result.layouts["time"][i] == pytest.approx(tp + pp, rel=1e-12)
    assert result.layouts["bubble_fraction"][i] == pytest.approx(1 / 32)   # (p − 1)/m


def test_memory_estimate_by_hand():
    result = plan(small(memory_check=False))
    i = row(result, t=1, p=1, c=1, d=16, zero=3, sp=0, recompute=0, framework="deepspeed")
    # ZeRO-3: 16 bytes/parameter over 16 GPUs; activations 34·s·b·h bytes per layer (t = 1), 32 layers
    activations = 34 * 2048 * 1 * 4096 * 32
    hand = 16 * PHI / 16 + activations
    assert result.layouts["memory_bytes"][i] == pytest.approx(hand, rel=1e-12)
    # FSDP SHARD_GRAD_OP keeps the 2-byte weights whole from forward to backward: ZeRO-2's 2 + 14/16 bytes
    i = row(result, t=1, p=1, c=1, d=16, zero=3, sp=0, recompute=0, framework="fsdp", reshard_after_forward=0)
    assert result.layouts["memory_bytes"][i] == pytest.approx(2 * PHI + 14 * PHI / 16 + activations, rel=1e-12)
    # DeepSpeed ZeRO-2 reduces every micro-batch, so its gradients stay sharded: 2 + 14/16 bytes too
    i = row(result, t=1, p=1, c=1, d=16, zero=2, sp=0, recompute=0)
    assert result.layouts["memory_bytes"][i] == pytest.approx(2 * PHI + 14 * PHI / 16 + activations, rel=1e-12)
    # ZeRO-0 keeps 16Φ = 128 GB per GPU: more than an 80 GB A100, so the memory check drops it
    checked = plan(small())
    gone = (checked.layouts["t"] == 1) & (checked.layouts["p"] == 1) & (checked.layouts["zero"] == 0)
    assert not gone.any()
    assert np.all(checked.layouts["memory_bytes"] <= 80e9)


def test_zero2_reduces_every_micro_batch_llama3_70b():
    # Issue 12's worked check: Llama-3-70B on 1024 H100, t=1, p=16, d=64, m=16 (batch 1024 / d).  ZeRO-1
    # (Megatron's distributed optimizer) reduce-scatters the Φ/16 shard once per step and all-gathers it once;
    # DeepSpeed ZeRO-2 reduce-scatters after each of the 16 micro-batches (deepspeed/runtime/engine.py,
    # allreduce_gradients): 16 + 1 ring collectives instead of 1 + 1.
    result = plan(Request(model=presets.model("llama3-70b"), hardware=presets.hardware("h100"), gpus=1024,
                          batch=1024, seq=8192, memory_check=False, embeddings=False))
    zero1 = row(result, t=1, p=16, c=1, d=64, zero=1, sp=0, recompute=0)
    zero2 = row(result, t=1, p=16, c=1, d=64, zero=2, sp=0, recompute=0)
    assert result.layouts["m"][zero2] == 16
    one, two = result.per_axis["dp"]["time"][zero1], result.per_axis["dp"]["time"][zero2]
    hw = presets.hardware("h100").values(BYTES)
    shard = presets.model("llama3-70b").parameters / 16        # elements; values(BYTES) is per bf16 element
    rs = 63 * hw["alpha_inter"] + 63 / 64 * shard * (hw["beta_inter"] + hw["gamma"])
    ag = 63 * hw["alpha_inter"] + 63 / 64 * shard * hw["beta_inter"]
    # the 356 ms: one bf16 reduce-scatter and one all-gather (ZeRO-2 counted once per step)
    assert 0.35 < rs + ag < 0.36
    assert 3.0 < two < 3.2                              # "about 3.1 s"
    assert two == pytest.approx(16 * rs + ag, rel=1e-9)
    # Megatron's distributed optimizer: once per step, the reduce-scatter in fp32 (twice the bytes and γ)
    rs32 = 63 * hw["alpha_inter"] + 2 * 63 / 64 * shard * (hw["beta_inter"] + hw["gamma"])
    assert one == pytest.approx(rs32 + ag, rel=1e-9)
    # with the embedding and LM head on the end stages, the last stage's shard is the (Φ − 2Vh)/16 of its layers
    # plus the V·h LM head (untied): still 15 more reduce-scatters of that shard
    model = presets.model("llama3-70b")
    result = plan(Request(model=model, hardware=presets.hardware("h100"), gpus=1024, batch=1024, seq=8192,
                          memory_check=False))
    zero1 = row(result, t=1, p=16, c=1, d=64, zero=1, sp=0, recompute=0)
    zero2 = row(result, t=1, p=16, c=1, d=64, zero=2, sp=0, recompute=0)
    vh = model.vocab * model.hidden
    shard = (model.parameters - 2 * vh) / 16 + vh
    rs = 63 * hw["alpha_inter"] + 63 / 64 * shard * (hw["beta_inter"] + hw["gamma"])
    ag = 63 * hw["alpha_inter"] + 63 / 64 * shard * hw["beta_inter"]
    rs32 = 63 * hw["alpha_inter"] + 2 * 63 / 64 * shard * (hw["beta_inter"] + hw["gamma"])
    assert result.per_axis["dp"]["time"][zero1] == pytest.approx(rs32 + ag, rel=1e-9)
    assert result.per_axis["dp"]["time"][zero2] == pytest.approx(16 * rs + ag, rel=1e-9)


def test_moe_with_tensor_parallel_needs_sequence_parallel():
    # Megatron-Core (megatron/core/transformer/moe/moe_layer.py) refuses MoE with t > 1 and no SP
    mixtral = plan(small(model=presets.model("mixtral-8x7b"), gpus=64, batch=64, memory_check=False))
    bad = (mixtral.layouts["t"] > 1) & (mixtral.layouts["sp"] == 0)
    assert not bad.any() and (mixtral.layouts["t"] > 1).any()


def test_sorted_best_first_and_bubble_limit():
    result = plan(small())
    assert np.all(np.diff(result.layouts["time"]) >= 0)
    limited = plan(small(max_bubble=0.1))
    assert np.all(limited.layouts["bubble_fraction"] <= 0.1)


def test_no_sympy_per_layout(monkeypatch):
    plan(small())                                      # builds every evaluator once
    import sympy

    def forbidden(*a, **k):
        raise AssertionError("SymPy called while evaluating layouts")
    monkeypatch.setattr(sympy.Basic, "subs", forbidden)
    monkeypatch.setattr(sympy, "lambdify", forbidden)
    bigger = plan(small(gpus=256, batch=256))          # more layouts, same expressions
    assert bigger.considered > plan(small()).considered


def test_impossible_requests():
    with pytest.raises(PlanError, match="--gpus=12 is not allowed"):
        plan(small(gpus=12))
    with pytest.raises(PlanError, match="no layout fits in"):
        plan(small(model=presets.model("llama3-405b"), gpus=8, batch=8))
    with pytest.raises(PlanError, match="--micro-batch=3"):
        plan(small(micro_batch=3))


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_text_and_json(capsys):
    args = ("plan", "--model", "llama3-8b", "--gpus", "16", "--gpus-per-node", "8", "--hardware", "a100",
            "--batch", "32", "--seq", "2048", "--top", "3")
    code, out, err = run(capsys, *args)
    assert code == 0, err
    assert "assumptions:" in out and "no overlap" in out and "best layout, per axis" in out
    code, out, err = run(capsys, *args, "--json")
    got = json.loads(out)
    assert len(got["layouts"]) == 3 and got["gpus"] == 16 and got["parameters"] == PHI
    assert got["layouts"][0]["time"] <= got["layouts"][1]["time"]
    assert set(got["layouts"][0]["axes"]) >= {"tp", "pp", "dp"}
    assert any("memory" in a for a in got["assumptions"])


def test_cli_errors(capsys):
    code, out, err = run(capsys, "plan", "--model", "llama9", "--gpus", "8", "--hardware", "h100", "--batch", "8")
    assert code == 2 and err.count("\n") == 1 and "--model 'llama9' is not allowed" in err
    code, out, err = run(capsys, "plan", "--model", "llama3-8b", "--hardware", "h100", "--batch", "8")
    assert code == 2 and "--gpus is required" in err
    code, out, err = run(capsys, "plan", "--model", "llama3-8b", "--gpus", "8", "--batch", "8")
    assert code == 2 and "--hardware is required; choose one of" in err


def test_rows_say_which_stage_is_busiest():
    rows = plan(small(memory_check=False)).rows(50)
    for got in rows:
        if got["p"] >= 3:
            assert got["axes"]["pp"]["stage"] == "an interior pipeline stage"
            assert got["axes"]["dp"]["stage"] == "the last pipeline stage"     # it holds the LM head
        if got["p"] == 1:
            assert got["axes"]["dp"]["stage"] == "the only stage"
