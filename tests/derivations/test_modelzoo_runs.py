"""The Megatron MoE Model Zoo's H100 figures (derivations/data/modelzoo_runs.json): each typed row against what the
source prints, its derived numbers made here by hand, Mixtral's step time recovered from the printed TFLOP/s with
Megatron-LM's FLOP count written out here from its source, and the words each row gives ``symcomm eval hybrid``.

The sources (github.com/yanring/Megatron-MoE-ModelZoo): examples/qwen3/readme.md's Performance Results table at
8017e112 (model, dispatcher, system, precision, GPUs, sequence, TP, CP, EP, PP, EDP, ETP, VPP, DP, FSDP, MBS, GBS, GA,
recompute, step time, per-GPU TF, ..., notes, code), the comments of best_practice/Mixtral/run_mixtral_8x22B.sh
at b09773a8 ('performance should be around N TFLOPS for H100'), and the Long Context table of
best_practice/Qwen3/readme.md at b0b92ff3 (sequence, nodes, TP, CP, GBS, TFLOP/s forced balance / dropless).
"""

import json
from pathlib import Path

import pytest

from symcomm import presets
from symcomm.derivations import bridge_runs, modern

FILE = "modelzoo_runs.json"
RUNS = bridge_runs.load(FILE)["runs"]
QWEN = [r for r in RUNS if "qwen3" in r["id"] and "2025-05" in r["id"]]
MIXTRAL = [r for r in RUNS if "mixtral" in r["id"]]
LONG = [r for r in RUNS if "2025-11" in r["id"]]
H100_CONFIG = next(r for r in RUNS if "2026-03" in r["id"])

#: the table's Qwen3-235B rows as printed: dispatcher, TP, CP, EP, PP, EDP, ETP, VPP, DP, FSDP, MBS, GBS, GA,
#: recompute, step time (s), per-GPU TFLOP/s (the Qwen3-Next row left out: no layer kind of the step model)
PRINTED = [
    ("DeepEP", 2, 1, 32, 8, 1, 1, 4, 16, None, 1, 2048, 128, "norm, act", 19.7, 245),
    ("DeepEP", 2, 1, 32, 8, 1, 1, 4, 16, None, 1, 2048, 128, "norm, act", 17.6, 276),
    ("DeepEP", 2, 1, 8, 1, 32, 1, 1, 128, "On", 4, 2048, 4, "full", 17.6, 276),
    ("A2A", 2, 1, 8, 32, 1, 1, 3, 4, None, 1, 2048, 512, "norm, act", 24.2, 200),
    ("DeepEP", 4, 1, 8, 8, 4, 1, 4, 8, None, 1, 2048, 256, "", 29.0, 167),
]

#: the script's comments: TFLOP/s per GPU, and what each run sets (its 445 TFLOP/s of the aux-loss router not typed:
#: the file's convention)
MIXTRAL_PRINTED = [(465, "bf16", "force"), (560, "fp8-block", "force"), (470, "bf16", "tokendrop")]

#: the Long Context table as printed: sequence, nodes, TP, CP, GBS, TFLOP/s with forced balance (the dropless figure
#: beside it not typed)
LONG_PRINTED = [(16384, 32, 4, 1, 256, 295), (32768, 32, 4, 2, 256, 335), (65536, 32, 4, 4, 256, 368),
                (131072, 32, 4, 8, 256, 389)]


def test_one_check_run_per_printed_figure():
    assert len(QWEN) == len(PRINTED) and len(MIXTRAL) == len(MIXTRAL_PRINTED) and len(LONG) == len(LONG_PRINTED)
    assert len(RUNS) == 13
    for run, (disp, tp, cp, ep, pp, edp, etp, vpp, dp, fsdp, mbs, gbs, ga, rc, step, tflops) in zip(QWEN, PRINTED):
        assert run["row"].startswith(f"235B | {disp} | H100 | BF16 | 256 | 4096 | {tp} | {cp} | {ep} | {pp} | ")
        assert (run["t"], run["c"], run["e"], run["p"], run["etp"], run["v"], run["d"]) == (tp, cp, ep, pp, etp, vpp, dp)
        assert (run["micro_batch"], run["global_batch"], run["gpus"]) == (mbs, gbs, 256)
        assert run["fsdp"] == (fsdp == "On")
        assert (run["step_time_s"], run["model_tflops_per_gpu"]) == (step, tflops)
        # the expert grid multiplies out as the table prints it: ETP·EP·EDP·PP = 256 GPUs
        assert etp * ep * edp * pp == 256
    for run, (tflops, precision, balance) in zip(MIXTRAL, MIXTRAL_PRINTED):
        assert f"{tflops}" in run["row"] and run["model_tflops_per_gpu"] == tflops
        assert run["precision"] == precision and balance in run["moe"]["balance"].replace("force-balanced", "force")
    for run, (seq, nodes, tp, cp, gbs, tflops) in zip(LONG, LONG_PRINTED):
        assert (run["seq"], run["gpus"], run["t"], run["c"], run["global_batch"]) == (seq, nodes * 8, tp, cp, gbs)
        assert run["model_tflops_per_gpu"] == tflops and "(forced balance)" in run["row"]
    assert all(r["role"] == "check" and r["hardware"] == "h100" for r in RUNS)
    # no figure of a router left to choose is typed: each row is balanced or capacity-padded
    assert all(r["moe"]["balance"].startswith(("force-balanced", "tokendrop")) for r in RUNS)


@pytest.mark.parametrize("run", RUNS, ids=lambda r: r["id"])
def test_run_is_valid(run):
    assert bridge_runs.validate(run) == []


@pytest.mark.parametrize("index, d, m", [
    # by hand: d = GPUs/(t·p·c), the table's DP; m = GBS/(d·MBS), the table's GA
    (0, 16, 128),       # 256/(2·8) = 16; 2048/16 = 128
    (2, 128, 4),        # 256/2 = 128; 2048/(128·4) = 4
    (3, 4, 512),        # 256/(2·32) = 4; 2048/4 = 512
    (4, 8, 256),        # 256/(4·8) = 8; 2048/8 = 256
])
def test_derived_numbers_by_hand(index, d, m):
    words = dict(w.split("=", 1) for w in modern.words(QWEN[index]))
    assert (words["d"], words["m"]) == (str(d), str(m))


def test_the_pipeline_split_counts_the_embedding_and_the_loss_as_layers():
    # 94 layers + embedding + loss = 96 slots: 3 per chunk over 8·4 chunks (the first and last chunk 2 layers each),
    # 1 per chunk over 32·3 chunks (the first chunk the embedding alone, the last the loss alone)
    eight = dict(w.split("=", 1) for w in modern.words(QWEN[0]))
    assert (eight["pipeline_split"], eight["L_first"], eight["L_last"], eight["v"]) == ("first_last", "2", "2", "4")
    thirty_two = dict(w.split("=", 1) for w in modern.words(QWEN[3]))
    assert (thirty_two["L_first"], thirty_two["L_last"], thirty_two["v"]) == ("0", "0", "3")
    mixtral = dict(w.split("=", 1) for w in modern.words(MIXTRAL[0]))
    assert "pipeline_split" not in mixtral and mixtral["v"] == "7"     # 56 layers over 8·7 chunks, one each


def _megatron_flops(batch: int) -> float:
    """Megatron-LM's num_floating_point_operations for Mixtral 8x22B (megatron/training/training.py at 32b9ee421c,
    transformer_flops), written out: 12 = 3 passes · 2 GEMMs per block · 2 FLOPs per multiply-add; the routed
    experts' MLP h·F_e·k·3/2 (swiglu), attention h²·(1 + groups/heads + s/(2h)) (projections and the causal half of
    the core; kv_channels·heads/h = 128·48/6144 = 1), the logits 6·h·V; no router, no shared expert."""
    s, layers, h, f_e, k, groups, heads, vocab = 4096, 56, 6144, 16384, 2, 8, 48, 32000
    per_token = (12 * layers * h * f_e * k * 3 / 2 + 12 * layers * h * h * (1 + groups / heads + s / (2 * h))
                 + 6 * h * vocab)
    return batch * s * per_token


@pytest.mark.parametrize("run", MIXTRAL, ids=lambda r: r["id"])
def test_mixtral_step_time_follows_from_the_printed_rate(run):
    # 128 GPUs (16 nodes of 8); step = FLOPs per step / (TFLOP/s · 10^12 · GPUs), to the 4 digits stored
    step = _megatron_flops(256) / (run["model_tflops_per_gpu"] * 1e12 * 128)
    assert run["step_time_s"] == pytest.approx(step, rel=5e-4)
    assert 4.2 < step < 4.5 or (run["precision"] == "fp8-block" and 3.5 < step < 3.6)


def _megatron_qwen_flops(seq: int) -> float:
    """Megatron-LM's num_floating_point_operations for Qwen3-235B-A22B at GBS 256 (training.py at 08c377198b,
    transformer_flops), written out: the routed experts' h·F_e·k·3/2, attention h²·(1 + 4/64 + s/(2h)) times the query
    projection over h, kv_channels·heads/h = 128·64/4096 = 2, the logits 6·h·V with V = 151936."""
    h = 4096
    return 256 * seq * (12 * 94 * h * 1536 * 8 * 3 / 2 + 12 * 94 * h * h * (1 + 4 / 64 + seq / (2 * h)) * 2
                        + 6 * h * 151936)


@pytest.mark.parametrize("run", LONG, ids=lambda r: r["id"])
def test_long_context_step_time_follows_from_the_printed_rate(run):
    step = _megatron_qwen_flops(run["seq"]) / (run["model_tflops_per_gpu"] * 1e12 * 256)
    assert run["step_time_s"] == pytest.approx(step, rel=5e-4)
    # by hand: d = 256/(4·8·c), m = 256/d micro-batches of one sequence
    words = dict(w.split("=", 1) for w in modern.words(run))
    assert (words["d"], words["m"], words["c"]) == (str(8 // run["c"]), str(32 * run["c"]), str(run["c"]))
    assert (words["recompute_moe"], words["recompute_layernorm"], words["loss"]) == ("1", "1", "te_fused")
    assert "cp" not in words                     # Megatron-Core's default p2p ring: the step model's cp=ring


def test_the_h100_config_comment_is_its_step_through_megatrons_count():
    # best_practice/qwen3/run_h100_235b.sh at 1ed4179f: "H100 config, 320 TFLOP/s", GBS 2048 at 4096 tokens on 32 nodes
    # (Megatron-LM's count at ce66b22204 is the same arithmetic as at 08c377198b for this model: 8 of the GBS-256 steps)
    run = H100_CONFIG
    assert (run["model_tflops_per_gpu"], run["global_batch"], run["gpus"], run["seq"]) == (320, 2048, 256, 4096)
    assert run["step_time_s"] == pytest.approx(8 * _megatron_qwen_flops(4096) / (320e12 * 256), rel=5e-4)
    words = dict(w.split("=", 1) for w in modern.words(run))
    assert (words["a2a_overlap"], words["tp_overlap"], words["dispatcher"], words["d"], words["m"]) == (
        "1", "1", "deepep", "16", "128")
    assert any(text.startswith("CUDA graphs") for text in modern.approximations(run))


def test_words_follow_each_recipe():
    qwen = [dict(w.split("=", 1) for w in modern.words(r)) for r in QWEN]
    mixtral = [dict(w.split("=", 1) for w in modern.words(r)) for r in MIXTRAL]
    # Megatron-LM under --bf16 reduces gradients in fp32 (accumulate_allreduce_grads_in_fp32), Megatron-FSDP's too
    assert all(w["grad_dtype"] == "fp32" for w in qwen + mixtral)
    assert (qwen[2]["framework"], qwen[2]["zero"], qwen[2]["recompute"]) == ("megatron_fsdp", "3", "full")
    assert all((w["framework"], w["zero"]) == ("megatron", "1") for i, w in enumerate(qwen) if i != 2)
    # the dispatchers as the table prints them; the ep_a2a combined 1F1B as the expert all-to-all overlap
    assert [w["dispatcher"] for w in qwen] == ["deepep", "deepep", "deepep", "alltoall", "deepep"]
    assert [w["a2a_overlap"] for w in qwen] == ["0", "1", "0", "0", "0"]
    # selective recompute of moe_act and layernorm: no attention core, the two modules
    assert (qwen[0]["recompute"], qwen[0]["recompute_moe_act"], qwen[0]["recompute_layernorm"]) == ("none", "1", "1")
    assert all(w["expert_tp"] == "1" for w in qwen if w["t"] != "1")
    # Mixtral: --tp-comm-overlap under bf16 only; FP8 blockwise with fp8 parameter gather and bf16 Adam moments;
    # token drop at capacity factor 1.0, padded
    assert [w["tp_overlap"] for w in mixtral] == ["1", "0", "1"]
    assert (mixtral[1]["precision"], mixtral[1]["fp8_param_gather"], mixtral[1]["adam_dtype"]) == (
        "fp8_block", "1", "bf16_moments")
    assert [w["dispatcher"] for w in mixtral] == ["alltoall", "alltoall", "alltoall_padded"]
    # Mixtral 8x22B by its preset, a MoE without a shared expert (E_s = 0 is expressible)
    assert all("--model mixtral-8x22b" in modern.command(r) for r in MIXTRAL)
    assert (presets.model("mixtral-8x22b").shared_experts, presets.model("mixtral-8x22b").top_k) == (0, 2)


def test_each_row_is_checked_at_what_its_command_gives():
    # step_fit.json's h100 check rows (python -m symcomm.derivations.fit_step_time --checks-only) hold each row at the
    # step time its words evaluate to now, grouped by its framework and source
    stored = json.loads((Path(modern.__file__).parent / "data" / "step_fit.json").read_text(encoding="utf-8"))
    checked = {r["id"]: r for r in stored["checks"]["h100"]["runs"]}
    assert all(modern.out_of_scope(r) is None for r in RUNS)
    for run in RUNS:
        step = float(modern.inputs(run, fitting=False).quantities()["step_time"])
        row = next(row for key, row in checked.items() if run["id"] in key.split("+"))
        assert row["predicted_s"] == pytest.approx(step, rel=1e-5)
        assert row["source"] == modern.source_of(run) == f"megatron-moe-modelzoo {run['release']}"
        assert row["framework"] == ("Megatron-FSDP" if run["fsdp"] else "Megatron-Core")
    # one row's sources disagree on its layout (the table's TP 2 against its launch script's TP=1): said, still checked
    caused = {r["id"] for r in RUNS if modern.known_cause(r)}
    assert caused == {"modelzoo-2025-05-h100-qwen3-235b-a22b-tp2-ep8-fsdp128-deepep"}


def test_rows_are_in_the_modern_check_runs():
    assert {r["id"] for r in RUNS} <= {r["id"] for r in modern.runs("check")}
    assert FILE in modern.FILES
