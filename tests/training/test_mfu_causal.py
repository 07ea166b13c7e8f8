"""MFU at two counts of the attention core: symcomm's own (the full s × s, as Narayanan et al. and Korthikanti et al.
count it: ``mfu``) and Megatron-LM's (causal attention at half: ``mfu_causal``), side by side in every step report."""

import pytest

import symcomm

PEAK = 989.4e12     # H100 SXM bf16 dense (the h100 preset's datasheet peak)


def test_the_two_counts_differ_by_half_of_every_attention_core_by_hand():
    # Llama 3.1 8B (32 layers, h 4096), 64 sequences of 8192 tokens: each layer's core is QKᵀ and A·V, 4·b·s²·h
    # forward FLOPs; training runs it 3 times (forward + backward); the causal half of it over all layers:
    # 3 · 32 · 4 · 64 · 8192² · 4096 / 2 = 3.3777e18 FLOPs
    r = symcomm.evaluate("hybrid", model="llama3.1-8b", hardware="h100", t=1, p=1, c=1, d=8, b=64, m=8, s=8192, G=8)
    gpus = 8
    half = 3 * 32 * 4 * 64 * 8192 ** 2 * 4096 // 2
    assert (r["mfu"] - r["mfu_causal"]) * r["step_time"] * gpus * PEAK == pytest.approx(half, rel=1e-12)
    assert 0 < r["mfu_causal"] < r["mfu"]
    assert r["units"]["mfu_causal"] == "ratio"


def test_megatron_s_count_is_megatron_bridge_s_printed_flops_per_token():
    # Megatron-Bridge's performance summary, 25.11, DGX-H100, LLAMA3_70B (64 GPUs, FP8-CS, GBS 128, seq 8192, TP 4,
    # PP 8, VP 5): 719 model TFLOP/s per GPU at 1602 tokens/s per GPU, so 719e12/1602 = 4.4881e11 FLOPs per token as
    # Megatron counts them; the two printed numbers are whole (±0.5 each: ±0.07 % and ±0.03 %).  symcomm's count
    # is 7 % more (the full s × s); its causal one is Megatron's
    r = symcomm.evaluate("hybrid", model="llama3-70b", hardware="h100", t=4, p=8, c=1, d=2, b=128, m=64, s=8192,
                         G=8, v=5, schedule="interleaved", sp=1)
    tokens = 128 * 8192
    megatron = r["model_flops"] * r["mfu_causal"] / r["mfu"] / tokens
    assert megatron == pytest.approx(719e12 / 1602, rel=1.5e-3)
    assert r["model_flops"] / tokens > 1.05 * megatron


def test_eval_prints_both():
    from symcomm.__main__ import main
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main(["eval", "hybrid", "--model", "llama3.1-8b", "--hardware", "h100", "t=1", "p=1", "c=1", "d=8",
                     "b=64", "m=8", "s=8192", "G=8"]) == 0
    line = next(x for x in out.getvalue().splitlines() if x.strip().startswith("throughput"))
    assert "with causal attention counted at half, as Megatron-LM counts it" in line
    # the rate is the whole job's, 8 GPUs here, and a GPU's beside it (what torchtitan's tps and most tables print)
    import re
    whole, each = re.search(r"throughput +([\d,]+) tokens/s \(all 8 GPUs; ([\d,]+) a GPU\)", line).groups()
    assert int(each.replace(",", "")) == pytest.approx(int(whole.replace(",", "")) / 8, abs=1)


def _throughput_line(*words):
    from symcomm.__main__ import main
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main(["eval", "hybrid", "--model", "llama3.1-405b", "--hardware", "h200", "t=1", "p=1", "c=1", "d=4",
                     "b=256", "m=32", "s=4096", "framework=deepspeed", "zero=1", "recompute=selective", *words]) == 0
    return next(x for x in out.getvalue().splitlines() if x.strip().startswith("throughput"))


def test_an_fp8_run_s_mfu_names_the_bf16_peak_it_divides_by():
    # a 405B layer's GEMMs on one GPU (t = 1) are wide enough to run near eta_fp8 of the FP8 peak, which is twice the
    # bf16 one (H200 datasheet: 1,978.9 and 989.4 TFLOP/s dense), so the model FLOPs over the bf16 peak may pass 1:
    # the line says which peak it divides by, where a bare "118 %" reads as a share of what the GPU can do
    line = _throughput_line("precision=fp8_tensor")
    assert line.count("of the bf16 peak") == 2, line
    bf16 = _throughput_line("precision=bf16")
    assert "of the bf16 peak" not in bf16, bf16


def _hfu_pair(**words):
    r = symcomm.evaluate("hybrid", model="llama3.1-8b", hardware="h100", t=1, p=1, c=1, d=8, b=64, m=8, s=8192, G=8,
                         **words)
    return r, (r["hfu"] - r["hfu_causal"]) * r["step_time"] * 8 * PEAK


def test_hfu_at_half_leaves_out_every_executed_core_s_masked_half_by_hand():
    # the same 8B step: each layer's core is 4·b·s²·h forward FLOPs (QKᵀ and A·V), run in the forward, twice in the
    # backward and, recomputed, once more; a causal kernel runs half of each.  32 layers, 64 sequences of 8192 tokens
    core = 32 * 4 * 64 * 8192 ** 2 * 4096
    for recompute, runs in (("none", 3), ("selective", 4), ("full", 4)):
        r, half = _hfu_pair(recompute=recompute)
        assert half == pytest.approx(runs * core / 2, rel=1e-12), recompute
        assert 0 < r["hfu_causal"] < r["hfu"]
        assert r["units"]["hfu_causal"] == "ratio"
    # without recompute the hardware FLOPs are the model's: the two halves coincide
    r, _ = _hfu_pair(recompute="none")
    assert r["hfu"] - r["hfu_causal"] == pytest.approx(r["mfu"] - r["mfu_causal"], rel=1e-12)


def test_hfu_at_half_stays_below_the_share_any_kernel_reaches_where_the_full_count_passes_it():
    # at 2^20 tokens a sequence the attention core is nearly the whole step; the full s × s count credits it with
    # twice the FLOPs a causal flash kernel runs, so HFU passes eta (0.8009) though no kernel runs faster than eta
    # (the GEMMs) or eta_attn (0.545, the fused core): counted as executed it stays below both
    r = symcomm.evaluate("hybrid", model="llama3-8b", hardware="h100", t=1, p=1, c=1, d=1, b=1, m=1, s=2 ** 20, G=8,
                         recompute="full")
    assert r["hfu"] > 0.8009
    assert r["hfu_causal"] < 0.545


def test_an_uneven_pipeline_reports_the_hfu_at_half_too():
    # Llama 3.1 405B's 126 layers on 8 stages, 15 on the first and the last: the same count as an even split's
    # (it is a count of the whole model's FLOPs, whatever the split): 3 passes of 126 cores, full recompute one more
    r = symcomm.evaluate("hybrid", model="llama3.1-405b", hardware="h100", t=8, p=8, c=1, d=8, b=256, m=32, s=8192,
                         G=8, sp=1, recompute="full", pipeline_split="first_last", L_first=15, L_last=15)
    core = 126 * 4 * 256 * 8192 ** 2 * 16384
    half = (r["hfu"] - r["hfu_causal"]) * r["step_time"] * 512 * PEAK
    assert half == pytest.approx(4 * core / 2, rel=1e-12)
