"""Megatron-LM's H100 weak-scaling table (derivations/data/megatron_lm_runs.json): each row checked against the
table's own printed columns by arithmetic made here, and evaluated as the ``symcomm eval hybrid`` words a user types.

The table (NVIDIA/Megatron-LM README.md and images/model_table.png at f2e5db402c, 2024-07-15) prints, per row: model
size, heads, hidden size, layers, TP, PP, DP, GPUs, global batch, per-GPU teraFLOP/s, MFU and aggregate petaFLOP/s;
the README's text gives vocabulary 131,072 and sequence 4,096.  No step time is printed: it follows from the
teraFLOP/s and the model FLOPs per step, counted here from the shape alone as 3 passes (forward, and a backward of
twice its FLOPs) of a GPT forward at 2 FLOPs per multiply-add, no recompute, the full s × s score matrix (Narayanan
et al. 2021, arXiv:2104.04473, §5.1, eq. 3 without its recompute pass; Megatron-LM counts the same in
megatron/training/training.py, num_floating_point_operations, at f2e5db402c).
"""

import copy

import pytest

from symcomm.derivations import bridge_runs, modern

FILE = "megatron_lm_runs.json"
RUNS = bridge_runs.load(FILE)["runs"]
ROUNDING_4_DIGITS = 5e-4     # step_time_s carries 4 significant digits


def forward_flops_per_token(h: int, layers: int, seq: int, vocab: int) -> int:
    # per layer: Q, K, V (3·h·h) and the output projection (h·h), the 4h MLP (2·h·4h): 12·h² multiply-adds;
    # Q·Kᵀ and scores·V over s keys: 2·s·h multiply-adds; the LM head h·V; 2 FLOPs per multiply-add
    return 2 * (layers * (12 * h * h + 2 * seq * h) + h * vocab)


def gpt_parameters(h: int, layers: int, seq: int, vocab: int, tied: bool) -> int:
    # per layer: QKV 3h² + 3h, projection h² + h, MLP 8h² + 4h + h, two LayerNorms 4h; token embedding V·h (a
    # second for an untied LM head), learned positions s·h, final LayerNorm 2h (Megatron-LM's GPT defaults)
    return layers * (12 * h * h + 13 * h) + (1 if tied else 2) * vocab * h + seq * h + 2 * h


def test_nine_rows_of_the_table():
    # model_table.png: 1.7B on 48 GPUs … 462B on 6,144
    assert [r["row"] for r in RUNS] == ["1.7B", "7.1B", "16B", "32B", "70B", "119B", "177B", "314B", "462B"]
    assert [r["gpus"] for r in RUNS] == [48, 96, 192, 384, 768, 1536, 2304, 3072, 6144]
    assert all(r["role"] == "check" and r["hardware"] == "h100" for r in RUNS)


@pytest.mark.parametrize("run", RUNS, ids=lambda r: r["id"])
def test_run_is_valid(run):
    assert bridge_runs.validate(run) == []


@pytest.mark.parametrize("run", RUNS, ids=lambda r: r["id"])
def test_step_time_follows_from_the_printed_flop_rate(run):
    m = run["model"]
    flops = 3 * forward_flops_per_token(m["hidden"], m["layers"], run["seq"], m["vocab"]) * run["global_batch"] * run["seq"]
    step = flops / (run["model_tflops_per_gpu"] * 1e12 * run["gpus"])
    assert run["step_time_s"] == pytest.approx(step, rel=ROUNDING_4_DIGITS)


@pytest.mark.parametrize("run", RUNS, ids=lambda r: r["id"])
def test_printed_mfu_is_the_flop_rate_over_the_h100_peak(run):
    # MFU = per-GPU TFLOP/s / 989 (the H100 SXM dense bf16 peak, rounded as NVIDIA's datasheet prints it), rounded
    # to a whole percent: exact on every row.  The preset's 989.4 puts the 462B row at 46.48 %, printed 47 %: within
    # the MFU's rounding (0.5 points) plus the 0.4 TFLOP/s between the two peaks (under 0.02 points) and the
    # TFLOP/s's own rounding (0.05 of ~460, 0.005 points)
    assert int(100 * run["model_tflops_per_gpu"] / 989 + 0.5) == run["mfu_percent_printed"]
    assert abs(100 * run["model_tflops_per_gpu"] / 989.4 - run["mfu_percent_printed"]) < 0.5 + 0.02 + 0.005


@pytest.mark.parametrize("run", RUNS, ids=lambda r: r["id"])
def test_printed_aggregate_is_per_gpu_times_gpus(run):
    # aggregate petaFLOP/s printed to 0.1; per-GPU teraFLOP/s to 0.1 (±0.05 each, times the GPUs)
    aggregate = run["model_tflops_per_gpu"] * run["gpus"] / 1000
    assert abs(aggregate - run["aggregate_pflops_printed"]) <= 0.05 + 0.05 * run["gpus"] / 1000


@pytest.mark.parametrize("run", RUNS, ids=lambda r: r["id"])
def test_printed_size_is_the_untied_count(run):
    # the printed model size (e.g. "462B") is nearer the count with an untied LM head on every row, within 3.5 %
    m = run["model"]
    printed = float(run["row"].rstrip("B")) * 1e9
    untied = gpt_parameters(m["hidden"], m["layers"], run["seq"], m["vocab"], tied=False)
    tied = gpt_parameters(m["hidden"], m["layers"], run["seq"], m["vocab"], tied=True)
    assert abs(untied - printed) < abs(tied - printed)
    assert abs(untied / printed - 1) < 0.035
    assert m["tied"] is False


@pytest.mark.parametrize("run", RUNS, ids=lambda r: r["id"])
def test_command_types_the_shape_and_derives_phi(run):
    command = modern.command(run)
    assert modern.out_of_scope(run) is None
    assert command.startswith("symcomm eval hybrid --hardware h100 ") and "--model" not in command
    m = run["model"]
    for word in (f"h={m['hidden']}", f"L={m['layers']}", f"a={m['heads']}", f"h_kv={m['hidden']}",
                 f"F={4 * m['hidden']}", "V=131072", "gated=0", "tied=0", f"t={run['t']}", f"p={run['p']}", "d=48"):
        assert f" {word} " in f" {command} "
    # the README's overlaps and what Megatron-LM's arguments.py makes of them (see each run's 'assumed'): its
    # pipeline-parallel overlap 'enabled by default' runs only under the interleaved schedule, one layer per virtual
    # stage (the only split of the 119B's 23 and the 462B's 7 layers a stage)
    piped = run["p"] > 1
    for word in ("overlap_grad_reduce=1", "overlap_param_gather=1", f"tp_overlap={int(run['t'] > 1)}",
                 f"sp={int(run['t'] > 1)}", "zero=1", "framework=megatron", "grad_dtype=fp32",
                 f"p2p_overlap={int(piped)}", *((f"v={m['layers'] // run['p']}", "schedule=interleaved") if piped else ())):
        assert f" {word} " in f" {command} "
    inputs = modern.inputs(run)
    assert inputs.values["Phi"] == gpt_parameters(m["hidden"], m["layers"], run["seq"], m["vocab"], tied=False)


def test_a_typed_tied_embedding_counts_the_embedding_once():
    run = copy.deepcopy(RUNS[0])
    run["model"]["tied"] = True
    m = run["model"]
    assert " tied=1 " in modern.command(run)
    assert modern.inputs(run).values["Phi"] == gpt_parameters(m["hidden"], m["layers"], run["seq"], m["vocab"], tied=True)


def test_rows_are_in_the_modern_check_runs():
    ids = {r["id"] for r in modern.runs("check")}
    assert {r["id"] for r in RUNS} <= ids
    assert all(modern.source_of(r) == "megatron-lm README" and modern.framework_of(r) == "Megatron-Core" for r in RUNS)


@pytest.mark.parametrize("tied, phi", [(None, 202048), (0, 202048), (1, 138048)])
def test_a_gated_shape_counts_its_embedding_as_tied_says(tied, phi):
    # by hand, h = 64, L = 2, a = 4 (heads 16 wide), h_kv = 32 (2 K, V heads), F = 128, V = 1000: per layer
    # Q and O 2·64·64 + K and V 2·64·32 = 12288, SwiGLU 3·64·128 = 24576, two RMSNorms 128: 36992, two layers
    # 73984; final norm 64; embedding 64000, once tied, twice untied (Llama's count: untied unless tied=1)
    import symcomm

    words = dict(h=64, L=2, a=4, h_kv=32, F=128, V=1000, s=16, t=1, p=1, c=1, d=2, b=4, m=2, G=8, gated=1, gqa=1)
    if tied is not None:
        words["tied"] = tied
    assert symcomm.evaluate("hybrid", hardware="h100", **words)["values"]["Phi"] == phi


def test_ids_are_unique_across_the_modern_run_files():
    ids = [r["id"] for r in modern.runs()]
    assert len(ids) == len(set(ids))


def test_the_micro_batch_the_table_leaves_open_is_checked_at_each_size_that_fits():
    # the table prints the global batch, not the micro-batch: 4 sequences a data-parallel replica (global_batch / 48)
    # but 3,072 / 48 = 64 on the 462B row, so 1, 2 and 4 divide every row's; each is predicted as its own layout
    # (m = global_batch / (d · micro-batch)), and a size the model counts over the GPU's 80 GB is said not to fit
    import json
    from pathlib import Path

    from symcomm.derivations.fit_step_time import open_micro_batches
    from symcomm.presets import hardware

    stored = json.loads((Path(modern.__file__).parent / "data" / "step_fit.json").read_text(encoding="utf-8"))
    checked = {r["id"]: r for r in stored["checks"]["h100"]["runs"]}
    capacity = hardware("h100").memory_bytes
    assert all(r["micro_batch_open"] == [1, 2, 4] and r["micro_batch"] == 1 for r in RUNS)
    for run in RUNS:
        row = checked[run["id"]]
        assert row["micro_batch_open"] == open_micro_batches(run, run["step_time_s"], {}, capacity)
        assert row["micro_batch_open"]["1"] == row["error"]       # the typed size is the row's own error
        words = dict(w.split("=", 1) for w in modern.words({**run, "micro_batch": 4}))
        assert int(words["m"]) == run["global_batch"] // (run["d"] * 4)
    # the table's 314B and 462B rows (p = 8, 16) hold micro-batch 2 over the GPU by the model's count: not fitting
    assert checked[RUNS[-1]["id"]]["micro_batch_open"]["2"] is None
    # a list that leaves the typed size out, or a size that does not divide a replica's sequences, is refused
    assert any("micro_batch_open" in p for p in bridge_runs.validate({**RUNS[0], "micro_batch_open": [2, 4]}))
    assert any("micro_batch_open" in p for p in bridge_runs.validate({**RUNS[0], "micro_batch_open": [1, 3]}))
