"""NeMo 24.07's DGX-H100 FP8 pre-training table (derivations/data/nemo_runs.json): each row against the table as
printed, its derived numbers made here by hand, the model FLOP rate the table prints recovered from its tokens/s and
the typed shape, and every row evaluated as ``symcomm eval hybrid`` words or left out with a reason.

The table (NVIDIA/NeMo docs/source/performance/performance_summary.md at 8e3d65dc, '24.07 perf numbers', its last
printing) prints per row: model, GPUs, GBS, MBS, sequence, TP, PP, CP, VP, tokens/s/GPU and model TFLOP/s/GPU.
"""

import pytest

from symcomm.derivations import bridge_runs, modern

FILE = "nemo_runs.json"
RUNS = bridge_runs.load(FILE)["runs"]
BY_ROW = {(r["row"]): r for r in RUNS}

#: the table as printed at 8e3d65dc: model, GPUs, GBS, MBS, sequence, TP, PP, CP, VP, tokens/s/GPU, TFLOP/s/GPU
PRINTED = [
    ("GPT3-5B", 64, 2048, 4, 2048, 1, 1, 1, 1, 23406, 765),
    ("GPT3-20B", 64, 256, 2, 2048, 2, 1, 1, 1, 5851, 750),
    ("GPT3-175B", 128, 256, 1, 2048, 4, 8, 1, 6, 716, 771),
    ("GPT3-175B", 512, 2048, 2, 2048, 4, 8, 1, 6, 825, 888),
    ("LLAMA2-7B", 8, 128, 1, 4096, 1, 1, 1, 1, 16934, 780),
    ("LLAMA2-13B", 16, 128, 1, 4096, 1, 4, 1, 10, 8715, 760),
    ("LLAMA2-70B", 64, 128, 1, 4096, 4, 4, 1, 20, 1728, 768),
    ("Nemotron-8B", 64, 256, 4, 4096, 2, 1, 1, 1, 12507, 643),
    ("Nemotron-22B", 64, 256, 2, 4096, 2, 4, 1, 10, 4312, 562),
    ("Nemotron-340B", 128, 32, 1, 4096, 8, 8, 1, 12, 326, 686),
    ("LLAMA3-8B", 8, 128, 1, 8192, 1, 1, 2, 1, 12273, 711),
    ("LLAMA3-70B", 64, 128, 1, 8192, 4, 4, 2, 5, 1524, 734),
]


def test_one_check_run_per_printed_row():
    got = [(r["row"].split(" (")[0], r["gpus"], r["global_batch"], r["micro_batch"], r["seq"], r["t"], r["p"], r["c"],
            r["v"], r["tokens_per_s_per_gpu"], r["model_tflops_per_gpu"]) for r in RUNS]
    assert got == PRINTED
    assert all(r["role"] == "check" and r["hardware"] == "h100" and r["release"] == "24.07" for r in RUNS)
    assert all(r["precision"] == "fp8-ds" for r in RUNS)     # the table's "FP8", TE's delayed scaling


@pytest.mark.parametrize("run", RUNS, ids=lambda r: r["id"])
def test_run_is_valid(run):
    assert bridge_runs.validate(run) == []


@pytest.mark.parametrize("row, step_s, d, m", [
    # by hand: GBS·seq/(tokens/s/GPU·GPUs); d = GPUs/(t·p·c); m = GBS/(d·MBS)
    ("GPT3-5B", 2.800, 64, 8),                  # 2048·2048/(23406·64) = 4194304/1497984 = 2.79998; 64/1; 2048/(64·4)
    ("GPT3-175B (512 GPUs)", 9.930, 16, 64),    # 2048·2048/(825·512) = 4194304/422400 = 9.92970; 512/(4·8); 2048/(16·2)
    ("Nemotron-340B", 3.141, 2, 16),            # 32·4096/(326·128) = 131072/41728 = 3.14110; 128/(8·8); 32/(2·1)
    ("LLAMA3-8B", 10.68, 4, 32),                # 128·8192/(12273·8) = 1048576/98184 = 10.6797; 8/(1·1·2); 128/4
    ("LLAMA3-70B", 10.75, 2, 64),               # 128·8192/(1524·64) = 1048576/97536 = 10.7506; 64/(4·4·2); 128/2
])
def test_derived_numbers_by_hand(row, step_s, d, m):
    run = BY_ROW[row]
    assert run["step_time_s"] == step_s
    assert run["d"] == d
    words = dict(w.split("=", 1) for w in modern.words(run))
    assert (words["d"], words["m"], words["b"]) == (str(d), str(m), str(run["global_batch"]))


@pytest.mark.parametrize("run", RUNS, ids=lambda r: r["id"])
def test_printed_flop_rate_follows_from_the_tokens_and_the_typed_shape(run):
    # per token, a forward of 2 FLOPs per multiply-add: Q and O (2h²), K and V (2·h·h_kv), the MLP (3·h·F gated,
    # 2·h·F not), the full s × s scores and their product with V (2·s·h), per layer; the LM head h·V; training 3
    # forwards (the backward twice the forward), no recompute.  The printed TFLOP/s is a whole number (±0.5) of ~700,
    # so the shape typed here, vocabulary and K, V width included, is the one NeMo counted to within 0.2 %
    m = run["model"]
    h, layers, ffn, seq = m["hidden"], m["layers"], m["ffn"], run["seq"]
    h_kv = m["kv_heads"] * m["head_dim"]
    per_layer = 2 * h * h + 2 * h * h_kv + (3 if m["gated_mlp"] else 2) * h * ffn + 2 * seq * h
    forward = 2 * (layers * per_layer + h * m["vocab"])
    tflops = 3 * forward * run["tokens_per_s_per_gpu"] / 1e12
    assert tflops == pytest.approx(run["model_tflops_per_gpu"], rel=2e-3)


def test_nemotron_340b_is_the_grouped_query_transformer_of_its_yaml():
    # nemotron_340b.yaml at the launcher's 24.07 tag: 96 heads of 18432/96 = 192, 8 query groups: K, V 8·192 wide
    words = dict(w.split("=", 1) for w in modern.words(BY_ROW["Nemotron-340B"]))
    assert (words["h"], words["a"], words["h_kv"], words["gqa"], words["gated"]) == ("18432", "96", "1536", "1", "0")
    # its optim sets grad_sync_dtype bf16, as NVIDIA's 24.07 example scripts of the GPT and Llama recipes pass it
    # (NeMo-Framework-Launcher examples/training/gpt/h100/*_fp8_*.sh and llama/h100/*_fp8.sh at the 24.07 tag:
    # +training.model.optim.grad_sync_dtype=bf16); the Nemotron 8B and 22B scripts pass none: Apex's default, the
    # optimizer's fp32
    assert words["grad_dtype"] == "same" and words["recompute"] == "selective"
    fp32 = {r["row"] for r in RUNS if " grad_dtype=fp32 " in f" {modern.command(r)} "}
    assert fp32 == {"Nemotron-8B", "Nemotron-22B"}


@pytest.mark.parametrize("run", RUNS, ids=lambda r: r["id"])
def test_every_row_evaluates_or_says_why_not(run):
    why = modern.out_of_scope(run)
    if why is not None:
        assert why.strip() and "\n" not in why
        return
    inputs = modern.inputs(run, fitting=False)        # raises InputError, naming the word, when a word does not bind
    assert float(inputs.quantities()["step_time"]) > 0
    assert modern.source_of(run) == "nemo 24.07" and modern.framework_of(run) == "Megatron-Core"


def test_dense_nemotron_is_not_refused_as_the_hybrid_one():
    # NeMo's Nemotron-8B/22B/340B are dense transformers (the launcher's nemotron YAMLs); only a model with Mamba
    # layers (the Bridge's Nemotron 3, model "hybrid") is out of scope
    assert all(modern.out_of_scope(r) is None for r in RUNS if r["model"]["name"].startswith("nemotron"))


def test_rows_are_in_the_modern_check_runs():
    ids = {r["id"] for r in modern.runs("check")}
    assert {r["id"] for r in RUNS} <= ids
    assert FILE in modern.FILES


def test_a_grad_reduce_dtype_outside_the_allowed_is_named():
    run = dict(RUNS[0], grad_reduce_dtype="fp16")
    assert bridge_runs.validate(run) == [f"{run['id']}: grad_reduce_dtype 'fp16' is not one of fp32, bf16"]


def test_the_340b_row_keeps_adams_state_in_bf16_and_fits_the_gpu_it_ran_on():
    """NeMo-Framework-Launcher conf/training/nemotron/nemotron_340b.yaml at the 24.07 tag sets optim.dtype bf16 (Apex
    DistributedFusedAdam's optimizer-state type): typed as adam_dtype=bf16.  The row ran on 80 GB H100s (DGX-H100),
    so the model's count of its live bytes must fit them; with fp32 Adam states it did not (80.0 GiB)."""
    import symcomm

    run = next(r for r in RUNS if r["row"].startswith("Nemotron-340B"))
    words = dict(w.split("=", 1) for w in modern.words(run))
    assert words["adam_dtype"] == "bf16"
    got = symcomm.evaluate("hybrid", hardware=run["hardware"], **words)
    assert got["fits"] is True and got["memory_per_gpu"] <= 80e9
