"""KempnerForge's H200 weak-scaling table (derivations/data/kempnerforge_runs.json): each typed row against the table
as printed, the shape against the parameter count its log prints, the words the trainer's code gives, and the
printed peak allocated memory against the model's count.

The table (KempnerInstitute/KempnerForge benchmarks/weak_scaling_160gpu/README.md, run at 3ad9d9a) prints per row:
model, GPUs, parallelism, tok/s (the whole job's), MFU, Mem/GPU GB (torch.cuda.max_memory_allocated of rank 0, GiB)
and the median step time.
"""

import json
from pathlib import Path

import pytest

from symcomm.derivations import bridge_runs, modern

FILE = "kempnerforge_runs.json"
RUNS = bridge_runs.load(FILE)["runs"]

#: the rows as printed: model, GPUs, parallelism, tok/s, Mem/GPU GB, step s
PRINTED = [
    ("13b", 8, "tp4_fsdp2", 29860, 45.0, 4.39), ("13b", 32, "tp4_fsdp8", 110373, 36.2, 4.75),
    ("13b", 64, "tp4_fsdp16", 216507, 34.8, 4.84), ("13b", 128, "tp4_fsdp32", 423306, 34.0, 4.95),
    ("13b", 160, "tp4_fsdp40", 534644, 33.9, 4.91),
    ("70b", 8, "tp4_fsdp2", 3623, 128.5, 18.09), ("70b", 32, "tp4_fsdp8", 18688, 93.2, 14.03),
    ("70b", 64, "tp4_fsdp16", 35824, 86.8, 14.63), ("70b", 96, "tp4_fsdp24", 52190, 84.6, 15.07),
    ("70b", 128, "tp4_fsdp32", 69985, 83.6, 14.98), ("70b", 160, "tp4_fsdp40", 85571, 82.9, 15.32),
]


def test_one_run_per_printed_row():
    assert len(RUNS) == len(PRINTED)
    for run, (size, gpus, layout, tokens, memory, step) in zip(RUNS, PRINTED):
        assert run["row"].startswith(f"{size} | {gpus} | {layout} | ")
        assert (run["gpus"], run["t"], run["d"], run["p"], run["c"]) == (gpus, 4, int(layout.split("fsdp")[1]), 1, 1)
        assert run["tokens_per_s_per_gpu"] * gpus == pytest.approx(tokens, abs=1e-3)
        assert run["memory_gib"] == memory
        # the weak-scaling batch (weak_scaling_160gpu_bench.sh): batch_size 4 (13B) or 2 (70B), grad_accum_steps 4,
        # seq 4096 per data-parallel rank, so tokens a step = (GPUs/4)·batch·4·4096, over the printed tok/s
        batch, accumulation = (4 if size == "13b" else 2), 4
        if (size, gpus) == ("70b", 8):
            # but its own log (results/preflight_70b_008gpu_tp4_fsdp2.log at 17248f8) prints TrainConfig(batch_size=1,
            # ..., grad_accum_steps=8, compile_model=False): the same 16 sequences a step, one a micro-batch, eager
            batch, accumulation = 1, 8
            assert run["compile"] is False
        assert run["global_batch"] == gpus // 4 * batch * accumulation and run["micro_batch"] == batch
        # the table's step is the median step; the step from its tok/s is within 0.3 % of it
        assert run["step_time_s"] == pytest.approx(step, rel=3e-3)
        assert run["hardware"] == "h200" and run["nvlink_domain"] == 4 and run["precision"] == "bf16"


@pytest.mark.parametrize("run", RUNS, ids=lambda r: r["id"])
def test_run_is_valid(run):
    assert bridge_runs.validate(run) == []


def test_the_13b_shape_gives_the_parameters_its_log_prints():
    # preflight_13b_008gpu_tp4_fsdp2.log: 'Model: 14,840,386,560 parameters'.  By hand from the typed shape: the
    # embedding and the untied head V·h each, per layer q and o h·h, k and v h·(8·128), the gated MLP 3·h·F and two
    # RMSNorm weights of h; the final norm h
    model = RUNS[0]["model"]
    h, layers, vocab, ffn = model["hidden"], model["layers"], model["vocab"], model["ffn"]
    kv = model["kv_heads"] * model["head_dim"]
    layer = 2 * h * h + 2 * h * kv + 3 * h * ffn + 2 * h
    assert 2 * vocab * h + layers * layer + h == 14_840_386_560


def test_the_words_follow_the_trainers_code():
    words = dict(w.split("=", 1) for w in modern.words(RUNS[1]))
    # FSDP2 with fp32 reduction, compiled, full recompute, SP over TP 4 in 4-GPU nodes
    assert (words["framework"], words["zero"], words["grad_dtype"], words["compile"]) == ("fsdp2", "3", "fp32", "1")
    assert (words["t"], words["G"], words["sp"], words["recompute"]) == ("4", "4", "1", "full")
    # gradients synced in the last micro-batch only (maybe_no_sync), bf16 parameters and moments, the whole logits
    # on every rank
    assert (words["grad_reduce"], words["adam_dtype"], words["loss"]) == ("per_step", "bf16", "replicated_bf16")
    # q, k, v, gate and up each ColwiseParallel(input_layouts=Shard(1)) (_build_block_tp_plan): five input gathers
    assert words["sp_input"] == "linear_gated"
    # 32 sequences a data-parallel rank... m = GBS/(d·MBS) = 128/(8·4) = 4, the benchmark's grad_accum_steps
    assert (words["d"], words["b"], words["m"], words["s"]) == ("8", "128", "4", "4096")


def test_the_printed_allocated_peaks_are_what_the_model_counts():
    # the README's Mem/GPU GB is max_memory_allocated (kempnerforge/metrics/memory.py): live bytes, what the model
    # counts; every printed peak within 6 % of the count (the evidence that the trainer's words are typed as it runs)
    for run in RUNS:
        counted = float(modern.inputs(run, fitting=False).quantities()["memory_per_gpu"]) / 2 ** 30
        assert counted == pytest.approx(run["memory_gib"], rel=0.06), run["id"]


def test_the_8_gpu_70b_point_its_authors_set_apart():
    run = RUNS[5]
    assert run["role"] == "regression" and "misleadingly low baseline" in modern.known_cause(run)
    assert all(r["role"] == "check" for r in RUNS if r is not run)


def test_each_check_row_is_stored_at_what_its_command_gives():
    stored = json.loads((Path(modern.__file__).parent / "data" / "step_fit.json").read_text(encoding="utf-8"))
    # a row typed to the same words as another source's is stored once, its ids joined by '+' (the MFU-scaling table's
    # 13B and 70B layouts at 8 and 32 GPUs: kempnerforge_mfu_runs.json)
    checked = {i: r for r in stored["checks"]["h200"]["runs"] for i in r["id"].split("+")}
    for run in (r for r in RUNS if r["role"] == "check"):
        step = float(modern.inputs(run, fitting=False).quantities()["step_time"])
        row = checked[run["id"]]
        assert row["predicted_s"] == pytest.approx(step, rel=1e-5)
        assert (row["framework"], row["source"]) == ("KempnerForge (FSDP2)", "kempnerforge 2026-06")
