"""The step-time model (symcomm/training/steptime.py): hand-counted cases, the pipeline bubble, the
data-parallel overlap, the published runs, the fit, and `symcomm eval hybrid --hardware`."""

import json
import math

import numpy as np
import pytest
import sympy as sp

from symcomm.training import steptime
from symcomm.presets import hardware

from conftest import SLOWDOWN_SHARE, slowed, symcomm_command

NO_COMM = {"alpha": 0.0, "beta": 0.0, "gamma": 0.0, "alpha_inter": 0.0, "beta_inter": 0.0, "G": 8}
TINY = {"h": 64, "L": 4, "a": 4, "h_kv": 64, "F": 256, "V": 1000, "s": 32, "Phi": 1000, "e": 1, "v": 1}
PLAIN = {"zero": "0", "framework": "megatron", "embeddings": "0", "gqa": "1", "gated": "0", "flash": "1",
         "overlap_grad_reduce": "0", "grad_dtype": "same"}


# the flash core's backward is 5/2 of its forward, not the papers' 2 (it recomputes the scores: five s × s GEMMs to
# the forward's two, FlashAttention-2, Algorithm 2): half a forward core more per layer, 131 072 / 2 for TINY at B = 1
FLASH_EXTRA = 131_072 // 2


def layer_forward_by_hand(B, s, h, h_kv, F, core_share=0.5):
    # Q and O: h × h, K and V: h × h_kv, QKᵀ and scores·V: s² h each, MLP h → F → h; 2 FLOPs per multiply-add.
    # Of the core, causal flash attention (flash=1, PLAIN's) runs half: FlashAttention-2 (Dao 2023) §3.1.1 skips
    # the blocks above the diagonal; without flash attention core_share = 1
    return 2 * B * s * h * (2 * h + 2 * h_kv) + core_share * 2 * 2 * B * s * s * h + 2 * 2 * B * s * h * F


def test_one_gpu_step_is_its_flops_over_the_rate_plus_adam():
    values = {**TINY, **NO_COMM, "t": 1, "p": 1, "d": 1, "c": 1, "b": 1, "m": 1,
              "peak": 1e12, "eta": 0.5, "kappa": 0.0, "hbm": 1e9}
    q = steptime.quantities(values, 2, **{**PLAIN, "embeddings": "1"})
    # hand count: 4 layers of 3 407 872 FLOPs forward less the causal half of the core (131 072) + the LM head
    # 2·32·64·1000 = 4 096 000; ×3 forward + backward
    forward = 4 * layer_forward_by_hand(1, 32, 64, 64, 256) + 2 * 32 * 64 * 1000
    assert forward == 4 * (3_407_872 - 131_072) + 4_096_000
    # Adam: 12 bytes of fp32 weight, m, v read and written (24) + the 16-bit weight written (2) + the 2-byte gradient read
    adam = 1000 * (24 + 2 + 2) / 1e9
    # Megatron-Core's gradient buffer of 1000 2-byte gradients: zeroed (a write), scaled by 1/d (a read and a write)
    # and its NaN-check norm (a read) per step (NVIDIA/Megatron-LM f2e5db402c, megatron/core/distributed/:
    # zero_grad_buffer, Bucket.start_grad_sync)
    buffer = 4 * 1000 * 2 / 1e9
    # the vocab-parallel cross-entropy over 32 tokens × 1000 logits: 38 bytes per logit forward (.float() 2 + 4, max
    # 4, subtract 4 + 4, exp 4 + 4, sum 4, div_ 4 + 4), 14 backward (mul_ 4 + 4, the cast back to bf16 4 + 2):
    # megatron/core/tensor_parallel/cross_entropy.py at f2e5db402c
    loss = 32 * 1000 * (38 + 14) / 1e9
    # Megatron's weight gradients accumulated into the 2-byte buffer in place (gradient accumulation fusion):
    # 2 + 2 bytes read and written where the GEMM's width term counts a 2-byte write, per weight element: 4 layers
    # of QKV 64·192, output 64·64, MLP 64·256 + 256·64 (49 152) and the head 64·1000: 260 608 elements, 2 bytes more
    accumulate = (4 * 49_152 + 64_000) * 2 / 1e9
    assert float(q["step_time"]) == pytest.approx((3 * forward + 4 * FLASH_EXTRA) / (1e12 * 0.5) + adam + buffer + loss
                                                  + accumulate, rel=1e-12)
    assert float(q["bubble_time"]) == 0 and float(q["exposed_comm_time"]) == 0


@pytest.mark.parametrize("schedule,v,expected_slots", [("1f1b", 1, 8 + 3), ("gpipe", 1, 8 + 3),
                                                        ("interleaved", 2, 8 + 3 / 2)])
def test_the_pipeline_takes_m_plus_bubble_slots(schedule, v, expected_slots):
    # Narayanan et al. 2021 §2.2: (p − 1) slots of bubble for GPipe and 1F1B, (p − 1)/v interleaved; p = 4, m = 8
    values = {**TINY, **NO_COMM, "t": 1, "p": 4, "d": 1, "c": 1, "b": 8, "m": 8, "v": v, "L": 8,
              "peak": 1e12, "eta": 1.0, "kappa": 0.0, "hbm": 1e30}
    # GPipe is torch.distributed.pipelining's (framework=fsdp2, its FSDP2 at zero=3, no traffic here: NO_COMM);
    # Megatron-Core runs 1F1B and the interleaved schedule only
    framework = {"framework": "fsdp2", "zero": "3", "compile": "1"} if schedule == "gpipe" else {}
    q = steptime.quantities(values, 2, **{**PLAIN, "schedule": schedule, **framework})
    # 2 layers per stage, 1 sequence
    slot = (3 * (8 / 4) * layer_forward_by_hand(1, 32, 64, 64, 256) + 2 * FLASH_EXTRA) / 1e12
    assert float(q["step_time"]) == pytest.approx(expected_slots * slot, rel=1e-9)
    assert float(q["bubble_time"]) == pytest.approx((expected_slots - 8) * slot, rel=1e-9)


def test_the_gradient_all_reduce_hides_behind_the_backward_only_when_overlapped():
    # d = 4 replicas, one stage, fp16 gradients: ring all-reduce 2·(d−1)/d·Φ elements at β per element
    values = {**TINY, **NO_COMM, "beta": 1e-9, "t": 1, "p": 1, "d": 4, "c": 1, "b": 4, "m": 1, "Phi": 10**6,
              "peak": 1e12, "eta": 1.0, "kappa": 0.0, "hbm": 1e30}
    reduce = 2 * 3 / 4 * 10**6 * 1e-9
    backward = (2 * 4 * layer_forward_by_hand(1, 32, 64, 64, 256) + 4 * FLASH_EXTRA) / 1e12
    assert reduce > backward                          # so that part of it shows
    # FSDP (NO_SHARD) reduces as the gradients come: all of it hides behind the backward as far as it lasts
    fsdp = {**PLAIN, "framework": "fsdp"}
    hidden = steptime.quantities(values, 2, **{**fsdp, "overlap_grad_reduce": "1"})
    exposed = steptime.quantities(values, 2, **{**fsdp, "overlap_grad_reduce": "0"})
    assert float(exposed["exposed_comm_time_dp"]) == pytest.approx(reduce, rel=1e-12)
    # what waits, and the compute the hidden rest slows (conftest.slowed)
    assert float(hidden["exposed_comm_time_dp"]) == pytest.approx(slowed(reduce - backward, reduce), rel=1e-12)
    # Megatron-LM buckets of max(40M, 1M·d) = 40M parameters (distributed_data_parallel.py): Φ = 10⁶ is one
    # bucket, whose reduce starts when the backward ends — overlapping hides nothing
    one_bucket = steptime.quantities(values, 2, **{**PLAIN, "overlap_grad_reduce": "1"})
    assert float(one_bucket["exposed_comm_time_dp"]) == pytest.approx(reduce, rel=1e-12)


def test_megatron_sizes_its_buckets_by_the_data_parallel_group_without_context_parallelism():
    # Megatron-LM's bucket_size = max(40000000, 1000000·dp_group.size()), that group without the context-parallel
    # ranks (distributed_data_parallel.py, process_groups_config.py's dp_group at d98e8a64): d = 64, c = 2 buckets
    # 64M parameters, not 128M; d = 32, c = 4 stays at the 40M floor
    from symcomm.core.symbols import c, d
    from symcomm.training.overlap import BUCKETS
    assert BUCKETS["megatron"]().subs({d: 64, c: 2}) == 64_000_000
    assert BUCKETS["megatron"]().subs({d: 32, c: 4}) == 40_000_000


def test_megatron_keeps_its_last_bucket_exposed():
    # Φ = 4·10⁸ on one stage, d = 4: buckets of 40M parameters, 10 of them; the last one's all-reduce
    # 2·(3/4)·4·10⁷·β stays exposed however long the backward (distributed_data_parallel.py, bucket_size)
    values = {**TINY, **NO_COMM, "beta": 1e-9, "t": 1, "p": 1, "d": 4, "c": 1, "b": 4, "m": 1, "Phi": 4 * 10**8,
              "peak": 1e12, "eta": 1.0, "kappa": 0.0, "hbm": 1e30}
    reduce, last = 2 * 3 / 4 * 4e8 * 1e-9, 2 * 3 / 4 * 4e7 * 1e-9
    flops_backward = 2 * 4 * layer_forward_by_hand(1, 32, 64, 64, 256) + 4 * FLASH_EXTRA
    on = {**PLAIN, "overlap_grad_reduce": "1"}
    short = steptime.quantities(values, 2, **on)                               # backward ≈ 27 µs: reduce − backward
    assert float(short["exposed_comm_time_dp"]) == pytest.approx(slowed(reduce - flops_backward / 1e12, reduce),
                                                                 rel=1e-12)
    slow = {**values, "peak": flops_backward / (0.95 * reduce)}                 # backward = 0.95 × reduce
    assert float(steptime.quantities(slow, 2, **on)["exposed_comm_time_dp"]) == pytest.approx(slowed(last, reduce),
                                                                                              rel=1e-12)
    off = steptime.quantities(slow, 2, **{**PLAIN, "overlap_grad_reduce": "0"})
    assert float(off["exposed_comm_time_dp"]) == pytest.approx(reduce, rel=1e-12)


@pytest.mark.parametrize("V, last_bucket", [(1000, 4 * 10**7), (1_562_500, 10**8)])
def test_megatrons_last_bucket_holds_the_word_embedding_whole(V, last_bucket):
    # Megatron-LM never splits a parameter across buckets (param_and_grad_buffer.py at NVIDIA/Megatron-LM
    # f2e5db402c), and the word embedding, the model's first parameter, is in the bucket the backward ends on: with
    # V·h = 1 562 500 · 64 = 10⁸ > the 40M bucket that bucket is the embedding's 10⁸; with V·h = 64 000 it is the
    # 40M bucket.  A slow GPU (peak 10⁶) gives a backward longer than the whole reduction: only the last bucket's
    # all-reduce 2·(3/4)·bucket·β stays exposed
    values = {**TINY, **NO_COMM, "V": V, "beta": 1e-9, "t": 1, "p": 1, "d": 4, "c": 1, "b": 4, "m": 1,
              "Phi": 4 * 10**8, "peak": 1e6, "eta": 1.0, "kappa": 0.0, "hbm": 1e30}
    on = {**PLAIN, "overlap_grad_reduce": "1", "embeddings": "1"}
    exposed = steptime.quantities(values, 2, **on)["exposed_comm_time_dp"]
    # the whole reduction 2·(3/4)·Φ·β hides but that bucket, and slows the backward beside it (conftest.slowed)
    assert float(exposed) == pytest.approx(slowed(2 * 3 / 4 * last_bucket * 1e-9, 2 * 3 / 4 * 4e8 * 1e-9), rel=1e-12)


def test_the_micro_batch_of_chapter_11_is_where_the_reduce_disappears():
    # the closed form B* of chapter 11 (α = 0) against the step model's exposed data-parallel time
    from symcomm.derivations.step_time import B_HIDDEN
    from symcomm.core import symbols as S

    shape = {"h": 256, "L": 8, "a": 8, "h_kv": 256, "F": 1024, "V": 1000, "s": 128, "e": 1, "v": 1}
    layout = {"t": 2, "p": 2, "d": 8, "c": 1}
    constants = {"beta": 4e-10, "peak": 1e13, "eta": 0.5}
    subs = {S.symbol(k): x for k, x in {**shape, **layout, **constants}.items() if k in S.SYMBOLS}
    b_star = float(B_HIDDEN.subs(S.alpha, 0).subs(subs))
    assert 1 < b_star < 10**4
    phi = 12 * shape["L"] * shape["h"] ** 2
    for micro in (math.floor(b_star * 0.9), math.ceil(b_star * 1.1)):
        # the data-parallel group in one node of 16 (t·c·d = 16): every element at β, as the closed form has it (a
        # ring across nodes of 8 would run its NVLink and network legs at once, (k − 1)/k·β at β_inter = β)
        values = {**shape, **layout, **NO_COMM, **constants, "beta_inter": constants["beta"], "Phi": phi,
                  "b": 8 * micro, "m": 1, "G": 16,
                  "kappa": 0.0, "hbm": 1e30}
        # FSDP's reduction (no bucket floor) hides entirely once the micro-batch passes B*; Megatron's would
        # keep its last bucket exposed (test_megatron_keeps_its_last_bucket_exposed)
        q = steptime.quantities(values, 2, **{**PLAIN, "framework": "fsdp", "overlap_grad_reduce": "1"})
        # what waits: the exposed time less the slowdown its hidden rest causes (conftest.slowed, inverted)
        alone, exposed = float(q["comm_time_dp"]), float(q["exposed_comm_time_dp"])
        waiting = (exposed - SLOWDOWN_SHARE * alone) / (1 - SLOWDOWN_SHARE)
        assert (waiting > 1e-12 * alone) == (micro < b_star)


def test_the_model_meets_the_published_tables():
    # Narayanan et al. 2021 Table 1 and Korthikanti et al. 2022 Table 5 (expected: the papers' numbers)
    from symcomm.derivations.step_time import run_rows

    rows = [r for r in run_rows() if r["hardware"] == "a100" and r["role"] == "fit"]
    assert len(rows) == 18
    errors = np.array([abs(r["error"]) for r in rows])
    assert errors.mean() <= 0.05 and errors.max() <= 0.10, [(r["id"], round(r["error"], 3)) for r in rows]


def test_memory_meets_korthikanti_figure_1():
    from symcomm.derivations.step_time import memory_rows

    for row in memory_rows():
        for published, ours in (row["states"], row["baseline"], row["present"]):
            assert ours == pytest.approx(published, rel=0.05), row


@pytest.mark.slow
def test_the_committed_a100_constants_are_what_the_fit_finds():
    # the papers' A100 set refits in seconds (few option sets to compile); the modern sets take minutes
    # (python -m symcomm.derivations.fit_step_time): their stored results are checked below on a sample
    from symcomm.derivations.fit_step_time import fit

    found = fit("a100")
    assert dict(hardware("a100").step_time) == found["fit"].constants
    # and the stored spans (what the runs determine: step_fit.spans, the docs' table) are this fit's, each holding
    # its fitted value
    from symcomm.derivations.fit_step_time import RESULTS_JSON

    stored = json.loads(RESULTS_JSON.read_text(encoding="utf-8"))["systems"]["a100"]["spans"]
    assert set(stored) == set(found["fit"].fitted) == set(found["fit"].spans)
    for name, (low, high) in found["fit"].spans.items():
        assert stored[name] == pytest.approx([low, high], rel=1e-5)
        assert low <= found["fit"].constants[name] <= high


def test_the_stored_fit_results_match_the_presets():
    # derivations/data/step_fit.json and symcomm/presets/hardware.json are written by one --write: the same
    # constants, and every fitted run's in-sample error is its predicted / measured - 1
    from symcomm.derivations.fit_step_time import RESULTS_JSON

    stored = json.loads(RESULTS_JSON.read_text(encoding="utf-8"))["systems"]
    assert stored
    for system, found in stored.items():
        if "not_refitted" in found:
            continue
        constants = {k: float(v) for k, v in dict(hardware(system).step_time).items()}
        assert constants == pytest.approx(found["constants"], rel=1e-5), system
        for row in found["runs"]:
            assert row["error"] == pytest.approx(row["predicted_s"] / row["measured_s"] - 1, abs=1e-5), row["id"]


@pytest.mark.slow
def test_the_stored_predictions_are_the_models():
    # one modern run per preset, predicted again by today's step model with the stored constants: the stored
    # results are fresh (rerun the --write when the model changes)
    from symcomm.derivations import modern
    from symcomm.derivations.fit_step_time import RESULTS_JSON

    stored = json.loads(RESULTS_JSON.read_text(encoding="utf-8"))["systems"]
    for system, found in stored.items():
        if "not_refitted" in found or system not in ("h100", "b200", "gb200"):
            continue
        runs, _ = modern.measured_runs(system, "fit")
        row = next(r for r in found["runs"] if r["id"] == runs[0].id)
        predicted = float(runs[0].inputs.quantities(**found["constants"])["step_time"])
        assert predicted == pytest.approx(row["predicted_s"], rel=1e-5), row["id"]


def test_selective_recompute_adds_the_attention_core_and_full_a_forward():
    from symcomm.training import flops
    from symcomm.core.symbols import L, s

    B = sp.Symbol("B", positive=True)
    model = flops.model_flops(B, s)
    assert sp.expand(flops.hardware_flops(B, s, "selective") - model) == sp.expand(L * 4 * B * s ** 2 * flops.h)
    assert sp.expand(flops.hardware_flops(B, s, "full") - model) == sp.expand(
        flops.forward(B, s) - flops.lm_head_forward(B, s))


def _cli(*args):
    return symcomm_command(*args, entry="symcomm.commands.main")


def test_eval_hybrid_reports_the_step_in_seconds_and_bytes():
    run = _cli("eval", "hybrid", "--model", "llama3-70b", "--hardware", "h100", "t=8", "p=4", "d=4", "c=1", "m=8",
               "b=64", "sp=1", "recompute=selective", "--json")
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    for key in ("step_time", "compute_time", "comm_time", "exposed_comm_time", "bubble_time", "tokens_per_second",
                "mfu", "hfu", "memory_per_gpu"):
        assert isinstance(out[key], float) and out[key] > 0, key
    assert out["units"]["step_time"] == "s" and out["units"]["memory_per_gpu"] == "bytes"
    assert set(out["comm_time_per_axis"]) >= {"tp", "pp", "dp"}
    assert out["options"]["recompute"] == "selective"
    # tokens/s is b·s over the step: 64 sequences of 8192 tokens
    assert out["tokens_per_second"] == pytest.approx(64 * 8192 / out["step_time"], rel=1e-12)
    assert out["step_time"] >= out["compute_time"]
    # the parts add up to the step: compute, exposed communication, bubble, optimizer, nothing counted twice
    parts = out["compute_time"] + out["exposed_comm_time"] + out["bubble_time"] + out["optimizer_time"]
    assert parts == pytest.approx(out["step_time"], rel=1e-9)


@pytest.mark.parametrize("bad", ["recompute=some", "dp_overlap=2", "overlap_param_gather=2", "flash=yes"])
def test_a_bad_step_option_is_one_line_and_exit_2(bad):
    run = _cli("eval", "hybrid", "--model", "llama3-70b", "--hardware", "h100", "t=8", "p=4", "d=4", "c=1", "m=8",
               "b=64", bad)
    assert run.returncode == 2
    assert len(run.stderr.strip().splitlines()) == 1 and bad.split("=")[0] in run.stderr
    assert "Traceback" not in run.stderr


# -- a layout that cannot run says so (issue 22, item 5) ---------------------------------------------

OVERSIZED = ("t=1", "p=1", "d=8", "c=1", "b=64", "m=8")


def test_eval_hybrid_says_a_layout_does_not_fit_and_by_how_much():
    run = _cli("eval", "hybrid", "--model", "llama3-70b", "--hardware", "h100", *OVERSIZED, "--json")
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    # by hand, Llama 3 70B (Φ = 70,553,706,496) with no model split on 8 GPUs, Megatron's defaults (zero=1, fp32
    # gradient buffer): bf16 weights 2Φ, fp32 gradients 4Φ, Adam states 12Φ/8 (ZeRO-1 over d = 8), and the
    # activations of Korthikanti et al. 2022 Table 2 with flash attention, 34·s·b·h per layer (t = 1, micro-batch
    # b/(d·m) = 1 sequence of s = 8192, h = 8192), their 4h GeLU MLP's 16h given way to the SwiGLU MLP's 6F (FC1's
    # 2F-wide output and FC2's input, F = 28,672), less the two dropout masks (2h: Llama 3 trains without dropout) and
    # 4(h − h_kv) for K and V at its 8 query groups (h_kv = 1024), of 80 layers, one micro-batch in flight (min(p, m) = 1)
    # and (Megatron-LM cross_entropy.py) the last stage's logits of one micro-batch: the bf16 LM-head output and
    # its fp32 copy, 6 bytes × 8192 tokens × V = 128,256 (Llama 3's vocabulary)
    phi = 70_553_706_496
    need = (2 * phi + 4 * phi + 12 * phi // 8 + (12 * 8192 + 4 * 1024 + 6 * 28_672) * 8192 * 1 * 80
            + 6 * 8192 * 128_256)
    assert out["memory_per_gpu"] == need == 715_308_593_152
    # the H100 SXM's 80 GB as NVML reports it (Modal's table of nvidia-smi totals: 81,559 MiB)
    gpu = 81_559 * 2**20
    assert gpu == 85_520_809_984
    assert out["fits"] is False and out["gpu_memory_bytes"] == gpu
    assert out["memory_excess_bytes"] == need - gpu
    assert out["units"]["memory_excess_bytes"] == "bytes"
    text = _cli("eval", "hybrid", "--model", "llama3-70b", "--hardware", "h100", *OVERSIZED)
    lines = text.stdout.splitlines()
    memory = next(i for i, x in enumerate(lines) if x.strip().startswith("memory/GPU"))
    # the verdict is the line right under the memory figure, with both byte counts and the excess
    assert lines[memory + 1].split()[:2] == ["fits", "NO:"]
    assert f"{need:,}" in lines[memory + 1] and "85,520,809,984" in lines[memory + 1]
    assert f"{need - gpu:,}" in lines[memory + 1]
    assert "NOT fit" in next(x for x in lines if x.strip().startswith("step time"))


def test_the_python_api_and_the_planner_share_the_fit_verdict():
    import symcomm
    from symcomm.presets import hardware as preset

    gpu = 81_559 * 2**20         # the H100 SXM's 80 GB as NVML reports it (hardware.json's source)
    got = symcomm.evaluate("hybrid", model="llama3-70b", hardware="h100", t=1, p=1, d=8, c=1, b=64, m=8)
    assert got["fits"] is False and got["memory_excess_bytes"] == got["memory_per_gpu"] - gpu
    # t=8 p=4 d=2 with sequence parallel and selective recompute: a few tens of GB, within 80 GB
    small = symcomm.evaluate("hybrid", model="llama3-70b", hardware="h100", t=8, p=4, d=2, c=1, b=64, m=32, sp=1,
                             recompute="selective")
    assert small["memory_per_gpu"] < gpu and small["fits"] is True and small["memory_excess_bytes"] == 0
    # the same function decides for the planner: an array in, the same verdicts out; the capacity itself fits, a
    # byte more does not
    verdict = preset("h100").fits(np.array([got["memory_per_gpu"], small["memory_per_gpu"], gpu, gpu + 1]))
    assert verdict.tolist() == [False, True, True, False]


def test_a_fit_within_the_memory_models_measured_error_is_uncertain_not_a_plain_yes():
    from symcomm.presets.fit_errors import fits_over_error, memory_band, memory_error

    # checks whose printed peaks were 0 % to 25 % above the model's count (error = count / printed - 1: from 0 down
    # to 1/1.25 - 1 = -0.2): 60 of 80 is 75 at the high end, still within 80; 70 of 80 is 87.5 there, over; 85 is
    # over at the low end too
    checks = (("fsdp2", 0.1, 0.2, -0.1, -0.2, 0.0, 4, ("h100",)),)
    over = [fits_over_error(memory_band(checks), need, 80.0) for need in (60.0, 70.0, 85.0)]
    assert over == ["yes", "uncertain", "no"]
    assert fits_over_error(memory_band(()), 70.0, 80.0) is None and memory_error(memory_band(())) is None
    assert memory_error(memory_band(checks))["lowest"] == -0.2


# Llama 3 70B, t = 2, c = 2, d = 16 under FSDP2 with sequence parallel, no recompute, 6,144-token sequences: about
# 84 GB of the H100's 85.5 GB (80 GB as NVML reports it) by the model's count, less than the 29 % the printed peaks of
# its memory check runs were above it (PyTorch's FSDP1, framework=fsdp, runs no context parallel)
WITHIN_ERROR = ("t=2", "p=1", "c=2", "d=16", "m=4", "b=64", "s=6144", "framework=fsdp2", "zero=3", "sp=1",
                "embeddings=1")


def test_eval_the_api_and_plan_say_a_fit_within_the_memory_error_may_not_be_one():
    import symcomm

    run = _cli("eval", "hybrid", "--model", "llama3-70b", "--hardware", "h100", *WITHIN_ERROR, "--json")
    out = json.loads(run.stdout)
    from pathlib import Path

    import symcomm.presets

    stored = json.loads((Path(symcomm.presets.__file__).parent / "hardware.json").read_text(encoding="utf-8"))
    lowest = min(e["lowest"] for e in stored["memory_checks"].values())
    # the definition: fits by the count, not once the count is raised to the highest printed peak measured
    need = out["memory_per_gpu"]
    assert need <= 81_559 * 2**20 < need / (1 + lowest)     # the H100's capacity as NVML reports it
    assert out["fits"] is True and out["fits_over_error"] == "uncertain"
    assert out["memory_error"]["lowest"] == lowest and out["memory_error"]["frameworks"] == ["fsdp2", "megatron"]
    api = symcomm.evaluate("hybrid", model="llama3-70b", hardware="h100", t=2, p=1, c=2, d=16, m=4, b=64, s=6144,
                           framework="fsdp2", zero=3, sp=1, embeddings=1)
    assert api["fits_over_error"] == "uncertain" and api["memory_error"] == out["memory_error"]
    text = _cli("eval", "hybrid", "--model", "llama3-70b", "--hardware", "h100", *WITHIN_ERROR).stdout.splitlines()
    assert "may not fit" in next(x for x in text if x.strip().startswith("step time"))
    verdict = next(x for x in text if x.strip().startswith("fits"))
    # the highest printed peak above the count, in either of the band's phrasings (all above, or a signed range)
    assert "uncertain within its measured error" in verdict and f"{100 * (1 / (1 + lowest) - 1):.1f} %" in verdict
    assert "above its count" in verdict or "of its count (+: above)" in verdict
    # plan marks such a row's memory and says why, by the same verdict
    plan = _cli("plan", "--model", "llama3-70b", "--hardware", "h100", "--gpus", "64", "--batch", "64", "--seq",
                "6144", "--tp", "2", "--cp", "2", "--framework", "fsdp2", "--recompute", "none", "--sp", "1",
                "--micro-batch", "1", "--top", "1", "--json")
    row = json.loads(plan.stdout)["layouts"][0]
    again = json.loads(_cli("eval", *row["eval_command"].split()[2:], "--json").stdout)
    assert row["fits_over_error"] == again["fits_over_error"] == "uncertain"
    shown = _cli("plan", "--model", "llama3-70b", "--hardware", "h100", "--gpus", "64", "--batch", "64", "--seq",
                 "6144", "--tp", "2", "--cp", "2", "--framework", "fsdp2", "--recompute", "none", "--sp", "1",
                 "--micro-batch", "1", "--top", "1").stdout
    assert "GiB ‡" in shown and "memory ‡: fits by the model's count" in shown


def test_plan_within_memory_error_keeps_only_layouts_that_fit_at_its_high_end():
    import symcomm

    ask = ("--model", "llama3-70b", "--hardware", "h100", "--gpus", "64", "--batch", "64", "--seq", "8192", "--top", "3")
    loose = json.loads(_cli("plan", *ask, "--json").stdout)["layouts"]
    assert "uncertain" in [row["fits_over_error"] for row in loose]        # the plain plan ranks ‡ rows first here
    strict = json.loads(_cli("plan", *ask, "--within-memory-error", "--json").stdout)
    assert strict["within_memory_error"] is True and strict["layouts"]
    for row in strict["layouts"]:
        # eval's own verdict of each kept row: it fits at the high end of the measured error too
        again = json.loads(_cli("eval", *row["eval_command"].split()[2:], "--json").stdout)
        assert again["fits_over_error"] == "yes"
    text = _cli("plan", *ask, "--within-memory-error").stdout
    assert "fit in memory at the high end of its measured error" in text and " ‡" not in text
    api = symcomm.plan("llama3-70b", gpus=64, batch=64, seq=8192, hardware="h100", top=3, within_memory_error=True)
    assert [r["eval_command"] for r in api["layouts"]] == [r["eval_command"] for r in strict["layouts"]]
    both = _cli("plan", *ask, "--within-memory-error", "--no-memory-check")
    assert both.returncode == 2 and "Traceback" not in both.stderr
    assert "--within-memory-error is not allowed with --no-memory-check" in both.stderr


def test_without_memory_bytes_the_fit_is_unknown_not_guessed(tmp_path):
    from symcomm.presets import hardware as preset

    h = preset("h100")
    link = lambda x: {"bytes_per_second": x.bytes_per_second, "latency_s": x.latency_s}   # noqa: E731
    path = tmp_path / "nomem.json"
    path.write_text(json.dumps({"intra": link(h.intra), "inter": link(h.inter), "gpus_per_node": 8,
                                "hbm_bytes_per_second": 3.35e12, "peak_flops": {"bf16": 989.4e12},
                                "step_time": {"eta": 0.68, "kappa": 0.75}}))
    run = _cli("eval", "hybrid", "--model", "llama3-70b", "--hardware", str(path), *OVERSIZED, "--json")
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert out["fits"] is None and out["gpu_memory_bytes"] is None and out["memory_excess_bytes"] is None
    text = _cli("eval", "hybrid", "--model", "llama3-70b", "--hardware", str(path), *OVERSIZED).stdout
    assert "fits         unknown" in text and "NOT fit" not in text


def test_a_non_finite_step_output_is_refused_not_printed():
    # a zero HBM bandwidth (no file can give it: the schema says > 0) reaches a division: the last guard refuses
    values = {**TINY, **NO_COMM, "t": 1, "p": 1, "d": 1, "c": 1, "b": 1, "m": 1, "peak": 1e12, "eta": 0.5,
              "kappa": 0.75, "hbm": 0.0}
    with pytest.raises(ValueError, match="not a finite number"):
        steptime.report(values, 2, {k: v for k, v in PLAIN.items() if k not in steptime.STEP_OPTIONS},
                        {k: v for k, v in PLAIN.items() if k in steptime.STEP_OPTIONS})


def test_a_report_held_per_option_set_answers_each_call_at_its_own_values():
    # report keeps what its option set decides (issue 25: keys, units, option texts, assumptions), never a number:
    # the same options at two peaks give each its own step time, the refusal of a non-finite output comes on every
    # call, and a report's dicts and lists are its own
    hybrid = {k: v for k, v in PLAIN.items() if k not in steptime.STEP_OPTIONS} | {"embeddings": "1"}
    own = {k: v for k, v in PLAIN.items() if k in steptime.STEP_OPTIONS}
    values = {**TINY, **NO_COMM, "t": 1, "p": 1, "d": 1, "c": 1, "b": 1, "m": 1, "eta": 0.5, "kappa": 0.0, "hbm": 1e9}
    slow = steptime.report({**values, "peak": 1e12}, 2, hybrid, own)
    slow["units"]["step_time"] = "changed"
    slow["assumptions"].append("changed")
    slow["options"]["zero"] = "changed"
    fast = steptime.report({**values, "peak": 2e12}, 2, hybrid, own)
    # only the compute uses the peak: the one-GPU test's hand count of FLOPs, 3 × forward (+ the flash backward's
    # extra core), at 0.5 × 1e12 and at 0.5 × 2e12 differ by FLOPs / 1e12 seconds (Adam, buffer, loss: HBM-bound)
    flops = 3 * (4 * layer_forward_by_hand(1, 32, 64, 64, 256) + 2 * 32 * 64 * 1000) + 4 * FLASH_EXTRA
    assert slow["step_time"] - fast["step_time"] == pytest.approx(flops / 1e12, rel=1e-12)
    assert fast["units"]["step_time"] == "s" and "changed" not in fast["assumptions"]
    assert fast["options"]["zero"] == "0"
    with pytest.raises(ValueError, match="not a finite number"):
        steptime.report({**values, "peak": 1e12, "hbm": 0.0}, 2, hybrid, own)


def test_op_recompute_on_torchtitans_llama_3_1_8b_table_1_by_hand():
    """torchtitan benchmarks/llama3_h100_202412_torchtitan.md Table 1: Llama 3.1 8B, FSDP over 8 GPUs, local batch 2
    of 8192 tokens, selective_ac_option = 'op' (train_configs/llama3_8b.toml at 9dec370a).  Per token and layer the
    op mode keeps (2 bytes per element): the block input h = 4096 → 8192, wq's 4096 → 8192, wv's 1024 → 2048, the
    SDPA output 4096 → 8192 and its fp32 logsumexp 32 heads → 128, w1's 14336 → 28672, w2's 4096 → 8192: 63,616
    bytes; × 2 · 8192 tokens × 32 layers.  It runs again wk, wo, w3: (4096·1024 + 4096·4096 + 4096·14336) multiply-adds
    = 79,691,776 per token and layer, 2 FLOPs each, over the 16 · 8192 tokens of the step and 32 layers."""
    run = _cli("eval", "hybrid", "--model", "llama3.1-8b", "--hardware", "h100", "t=1", "p=1", "d=8", "c=1", "b=16",
               "m=1", "s=8192", "embeddings=1", "recompute=op", "framework=fsdp2", "zero=3", "--json")
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert out["memory"]["activations"] == 63_616 * 2 * 8192 * 32
    assert out["hardware_flops"] - out["model_flops"] == 2 * 79_691_776 * 16 * 8192 * 32


@pytest.mark.parametrize("words, what", [(("moe=1",), "moe=1"), (("flash=0",), "flash=1")])
def test_op_recompute_refusals_reach_eval_in_one_line(words, what):
    run = _cli("eval", "hybrid", "--model", "llama3-70b", "--hardware", "h100", "t=8", "p=4", "d=4", "c=1", "m=8",
               "b=64", "sp=1", "recompute=op", *words)
    assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1 and "Traceback" not in run.stderr
    assert "recompute=op" in run.stderr and what in run.stderr


def test_op_recompute_says_what_it_counts():
    out = json.loads(_cli("eval", "hybrid", "--model", "llama3-8b", "--hardware", "h100", "t=1", "p=1", "d=8", "c=1",
                          "b=16", "m=1", "s=4096", "recompute=op", "--json").stdout)
    assert any(a.startswith("recompute=op") and "eager" in a for a in out["assumptions"])


@pytest.mark.parametrize("options", [
    {"gated": "0"},                                                   # the hybrid's defaults, an even split
    {"gated": "1", "recompute": "full", "tp_overlap": "1", "sp": "1"},    # Megatron overlaps under SP only
    {"gated": "1", "schedule": "interleaved", "pipeline_split": "first_last"},     # the uneven step model
])
def test_the_step_ratios_are_the_expressions_sympy_divides_to(options):
    # steptime.quotient builds x / y without SymPy's question about a sum's terms: the expression must be the one
    # SymPy's own division builds (the reference), argument for argument, for the page's bytes-per-element models
    from symcomm.core.symbols import b, c, d, p, peak, s, t
    from symcomm.views.site import BYTES

    model = steptime.step_model(BYTES, **options)
    got = model.quantities()
    by_sympy = {"tokens_per_second": b * s / model.step,
                "mfu": model.model_flops / (model.step * t * c * d * p * peak),
                "hfu": model.hardware_flops / (model.step * t * c * d * p * peak)}
    for name, expected in by_sympy.items():
        assert sp.srepr(got[name]) == sp.srepr(expected), name
    assert sp.srepr(steptime.quotient(model.bubble, model.step)) == sp.srepr(model.bubble / model.step)


@pytest.mark.parametrize("x, y", [
    ("2*x*y", "x + z"),                 # a base on both sides: the general path, which cancels nothing here
    ("x**2", "x"),                      # x**2 / x = x: SymPy's path
    ("3", "x + 1"),                     # a number over a sum
    ("x", "2*y"),                       # a number below: the coefficient 1/2
    ("x*(y + 1)", "I + y"),             # an imaginary term below
    ("-x*y", "y*z + x"),
    ("3*x*(y + 2)", "z*w*(x*y + 1)"),    # symbols and sums below, every base once: quotient's own product
])
def test_quotient_is_sympys_division_on_any_product(x, y):
    x, y = sp.sympify(x), sp.sympify(y)
    assert sp.srepr(steptime.quotient(x, y)) == sp.srepr(x / y)


@pytest.mark.parametrize("adam_dtype, state_bytes", [("fp32", 12), ("bf16_moments", 8), ("bf16", 6),
                                                     ("fp32_remainders", 10)])
def test_adams_state_type_sets_its_bytes_and_its_step(adam_dtype, state_bytes):
    """Adam's state per parameter by hand: an fp32 master weight and two fp32 moments, 4 + 4 + 4 = 12 bytes;
    Megatron-Core's precision-aware optimizer with bf16 moments, 4 + 2 + 2 = 8; Apex DistributedFusedAdam with
    dtype bf16 (its parameter copy and both moments in bf16), 2 + 2 + 2 = 6; the same optimizer in fp32 with
    store_param_remainders (an int16 remainder beside the bf16 weight for the master, two fp32 moments: apex
    distributed_fused_adam.py StateBucket), 2 + 4 + 4 = 10; sharded over d = 8 (ZeRO-1).  The
    optimizer step reads and writes its state, writes the 16-bit weight and reads the fp32 gradient: (2·state + 2 + 4)
    bytes per parameter of the shard at the HBM bandwidth (H100 SXM 3.35 TB/s), beside the gradient buffer's passes,
    which the state type does not change."""
    phi = 70_553_706_496
    layout = ("--model", "llama3-70b", "--hardware", "h100", *OVERSIZED, "--json")
    got = json.loads(_cli("eval", "hybrid", *layout, f"adam_dtype={adam_dtype}").stdout)
    base = json.loads(_cli("eval", "hybrid", *layout).stdout)
    assert got["memory"]["optimizer"] == state_bytes * phi / 8
    assert got["optimizer_time"] - base["optimizer_time"] == pytest.approx(
        phi / 8 * ((2 * state_bytes + 6) - (2 * 12 + 6)) / 3.35e12, rel=1e-9, abs=1e-15)


def test_adam_dtype_refuses_another_type_naming_the_allowed_ones():
    run = _cli("eval", "hybrid", "--model", "llama3-70b", "--hardware", "h100", *OVERSIZED, "adam_dtype=fp16")
    assert run.returncode == 2 and "adam_dtype" in run.stderr and "bf16_moments" in run.stderr


def _h100_file(path, **constants):
    """A hardware file that is the h100 preset (links, peaks, HBM, memory, fitted constants) but for ``constants``:
    read by the general path, where the shipped preset answers by the generated one."""
    from symcomm.presets import hardware as preset

    h = preset("h100")
    link = lambda x: {"bytes_per_second": x.bytes_per_second, "latency_s": x.latency_s}   # noqa: E731
    path.write_text(json.dumps({"intra": link(h.intra), "inter": link(h.inter), "gpus_per_node": 8,
                                "hbm_bytes_per_second": h.hbm_bytes_per_second, "memory_bytes": 80e9,
                                "peak_flops": dict(h.peak_flops), "step_time": {**dict(h.step_time), **constants}}))
    return path


def test_a_typed_constant_wins_over_the_hardwares_as_a_hardware_file_holding_it_would(tmp_path):
    # a user's eta (or kappa, w_half, eta_fp8, ...) typed beside --hardware is the run's, as a typed peak is: the same
    # step time as a hardware file that is the preset but for those constants; the fit's error does not describe
    # them, so none is shown; a share of the peak outside (0, 1] is refused; one the run does not read is said
    import symcomm
    from symcomm.base.errors import InputError

    path = _h100_file(tmp_path / "h100-own-constants.json", eta=0.5, kappa=3.0)
    layout = dict(model="llama3-70b", t=8, p=4, d=2, c=1, b=64, m=16, s=8192, sp=1)
    typed = symcomm.evaluate("hybrid", hardware="h100", eta=0.5, kappa=3.0, **layout)
    filed = symcomm.evaluate("hybrid", hardware=str(path), **layout)
    base = symcomm.evaluate("hybrid", hardware="h100", **layout)
    assert typed["step_time"] == pytest.approx(filed["step_time"], rel=1e-12)
    assert typed["step_time"] > base["step_time"]               # eta 0.5 below the preset's 0.7958: slower
    assert (typed["constants"]["eta"], typed["constants"]["kappa"]) == (0.5, 3.0)
    assert typed["constants"]["source"].startswith("typed (eta, kappa); the hardware's: ")
    assert typed["step_time_error"] is None and base["step_time_error"] is not None
    assert not any("not used" in note for note in typed.notes)
    with pytest.raises(InputError, match=r"^eta=1\.5 is not allowed: a share of the peak lies in \(0, 1\]$"):
        symcomm.evaluate("hybrid", hardware="h100", eta=1.5, **layout)
    # the HBM bandwidth is the datasheet's, as a peak: typed, it is the run's; another than the hardware's own moves
    # the step onto values no fitted run measured (2.95 s to 4.58 s for Llama 2 7B at 1e12, an outsider's test), so
    # the fit's error is unknown there too; the hardware's own value typed again changes nothing
    slower_memory = symcomm.evaluate("hybrid", hardware="h100", hbm=1e12, **layout)
    assert slower_memory["step_time"] > base["step_time"] and slower_memory["constants"]["hbm"] == 1e12
    assert slower_memory["step_time_error"] is None
    same = symcomm.evaluate("hybrid", hardware="h100", hbm=3.35e12, **layout)
    assert same["step_time"] == base["step_time"] and same["step_time_error"] == base["step_time_error"]
    assert not any("not used" in note for note in slower_memory.notes)
    unread = symcomm.evaluate("hybrid", hardware="h100", eta_fp8=0.6, **layout)      # a bf16 run: no FP8 matmul
    assert unread["step_time"] == base["step_time"] and unread["step_time_error"] == base["step_time_error"]
    assert "eta_fp8 not used: precision=bf16 runs no matmul in FP8" in unread.notes
    # the command line: the same number, the error unknown, and a refusal exits 2 in one line
    run = _cli("eval", "hybrid", "--model", "llama3-70b", "--hardware", "h100", "t=8", "p=4", "d=2", "c=1", "b=64",
               "m=16", "s=8192", "sp=1", "eta=0.5", "kappa=3", "--json")
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["step_time"] == pytest.approx(typed["step_time"], rel=1e-12)
    bad = _cli("eval", "hybrid", "--model", "llama3-70b", "--hardware", "h100", "t=8", "p=4", "d=2", "c=1", "b=64",
               "m=16", "s=8192", "eta=2")
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0 and "eta=2 is not allowed" in bad.stderr


def test_a_name_only_another_setting_reads_is_said_not_used(tmp_path):
    # an expert count for a dense model: a name the binding takes for the step model, which this setting's step model
    # does not read (its arguments): said, never silently taken (the generated path of a shipped preset and the
    # general path of a hardware file alike), and the step time the same as without it (v under 1F1B is refused:
    # test_head_split.py)
    import symcomm

    path = _h100_file(tmp_path / "h100-copy.json")
    layout = dict(model="llama3-70b", t=8, p=4, d=2, c=1, b=64, m=16, s=8192, sp=1)
    for hardware in ("h100", str(path)):
        base = symcomm.evaluate("hybrid", hardware=hardware, **layout)
        for _ in range(2):          # the second call: the plan of these names, its notes held
            got = symcomm.evaluate("hybrid", hardware=hardware, k=3, **layout)
            assert "k not used by the step model of this setting" in got.notes, hardware
            assert got["step_time"] == base["step_time"]
        assert not any("not used" in note for note in base.notes)
    run = _cli("eval", "hybrid", "--model", "llama3-70b", "--hardware", "h100", "t=8", "p=4", "d=2", "c=1", "b=64",
               "m=16", "s=8192", "sp=1", "F_e=1024")
    assert run.returncode == 0 and "note: F_e not used by the step model of this setting" in run.stderr


def test_a_dtype_no_fit_measured_leaves_the_error_unknown_and_says_what_was_counted():
    # every fitted and checked run trained in 16 bits: --dtype fp32 times the matmuls at the fp32 peak and sends 4-byte
    # elements while the memory model counts a 16-bit run's bytes, so the fits' errors describe none of it
    import symcomm

    layout = dict(model="llama3.1-8b", t=1, p=1, c=1, d=8, m=8, b=64, s=8192)
    sixteen = symcomm.evaluate("hybrid", hardware="h100", **layout)
    wide = symcomm.evaluate("hybrid", hardware="h100", dtype="fp32", **layout)
    assert sixteen["step_time_error"] is not None and wide["step_time_error"] is None
    assert any(note.startswith("--dtype fp32: the matmuls at the fp32 peak") for note in wide.notes)
    assert symcomm.evaluate("hybrid", hardware="h100", dtype="fp16", **layout)["step_time_error"] is not None
    run = _cli("eval", "hybrid", "--model", "llama3.1-8b", "--hardware", "h100", "--dtype", "fp32", "t=1", "p=1",
               "c=1", "d=8", "m=8", "b=64", "s=8192")
    assert run.returncode == 0 and "a --dtype no fit measured" in run.stdout
    # the memory it counts is no fp32 run's either: plan keeps no layout by it unless asked to rank them all
    with pytest.raises(ValueError, match="--dtype fp32: the memory model counts a 16-bit run.s"):
        symcomm.plan("llama3.1-8b", gpus=8, batch=64, seq=4096, hardware="h100", top=1, dtype="fp32")
    planned = symcomm.plan("llama3.1-8b", gpus=8, batch=64, seq=4096, hardware="h100", top=1, dtype="fp32",
                           no_memory_check=True)
    assert planned["step_time_error"] is None


def test_a_shape_typed_over_a_preset_says_its_parameter_count_stays_the_presets():
    # Llama 3.1 70B at L = 40 instead of its 80: the layers' compute follows the typed L, but Φ (the weights, gradients,
    # optimizer, data-parallel bytes) is the preset's count of its own shape unless Phi= is given; said, on both paths
    import symcomm

    layout = dict(model="llama3.1-70b", hardware="h100", t=8, p=1, d=8, c=1, b=64, m=8, s=8192, sp=1)
    halved = symcomm.evaluate("hybrid", L=40, **layout)
    said = [note for note in halved.notes if note.startswith("L=40 typed over llama3.1-70b's L=80")]
    assert said and "Φ = 70,553,706,496 is still the preset's count" in said[0]
    assert not any("typed over" in note for note in symcomm.evaluate("hybrid", L=40, Phi=35e9, **layout).notes)
    assert not any("typed over" in note for note in symcomm.evaluate("hybrid", **{**layout, "s": 4096}).notes)
    run = _cli("eval", "hybrid", "--model", "llama3.1-70b", "--hardware", "h100", "t=8", "p=1", "d=8", "c=1", "b=64",
               "m=8", "s=8192", "sp=1", "L=40")
    assert run.returncode == 0 and "note: L=40 typed over llama3.1-70b's L=80" in run.stderr


def test_a_framework_no_printed_peak_measured_is_said_to_take_another_s_band():
    # the memory checks are torchtitan's and KempnerForge's (framework=fsdp2) and Megatron-LM's functional tests'
    # (framework=megatron, hardware.json memory_checks): Megatron-FSDP's count (its own buffers, no printed peak among
    # them) was measured by none, so eval says so beside the band it takes as the margin; the run that ran though
    # counted over its GPU's memory is named by its framework (Megatron-FSDP's run on GB200, hardware.json
    # memory_ran_over; NeMo's Megatron-Core rows were over while their gradients were typed fp32, until NVIDIA's
    # 24.07 example scripts were read: bf16)
    layout = ("--model", "llama3-8b", "--hardware", "h100", "t=2", "p=1", "d=4", "c=1", "b=64", "m=16", "s=4096", "sp=1")
    unmeasured = json.loads(_cli("eval", "hybrid", *layout, "framework=megatron_fsdp", "zero=3", "--json").stdout)
    megatron = json.loads(_cli("eval", "hybrid", *layout, "framework=megatron", "--json").stdout)
    fsdp2 = json.loads(_cli("eval", "hybrid", *layout, "framework=fsdp2", "zero=3", "--json").stdout)
    assert unmeasured["memory_error"]["unmeasured_framework"] == "megatron_fsdp"
    assert "unmeasured_framework" not in fsdp2["memory_error"] and "unmeasured_framework" not in megatron["memory_error"]
    assert unmeasured["memory_error"]["ran_over"]["frameworks"] == ["megatron_fsdp"]
    # the same band, the same verdict over it: one rule, the margin for the unmeasured
    assert unmeasured["fits_over_error"] == megatron["fits_over_error"] == fsdp2["fits_over_error"] == "yes"
    text = _cli("eval", "hybrid", *layout, "framework=megatron_fsdp", "zero=3").stdout
    verdict = next(x for x in text.splitlines() if x.strip().startswith("fits"))
    assert "no published run of framework=megatron_fsdp prints its peak memory" in verdict
    assert "published run (framework=megatron_fsdp) that ran was counted up to" in verdict
    text = _cli("eval", "hybrid", *layout, "framework=megatron").stdout
    verdict = next(x for x in text.splitlines() if x.strip().startswith("fits"))
    assert "prints its peak memory" not in verdict and "(framework=fsdp2, megatron)" in verdict
