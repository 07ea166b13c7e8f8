"""KempnerForge's H200 MFU-scaling table (derivations/data/kempnerforge_mfu_runs.json): each typed row against the table
as printed and the script that ran it, the shapes against the trainer's own parameter and FLOP counts, the words the
trainer's code gives, and the printed peak allocated memory against the model's count.

The table (KempnerInstitute/KempnerForge benchmarks/mfu_scaling/mfu_scaling.md, run at 01b461a on 1 to 8 nodes of 4
H200) prints per row: GPUs, nodes, model, parallelism, tok/s (the whole job's), MFU, Mem/GPU GB
(torch.cuda.max_memory_allocated of rank 0, GiB) and the step time; benchmarks/mfu_scaling/mfu_bench.sh gives each
experiment's batch_size, grad_accum_steps, tp, dp_shard and compile_model.
"""

import json
import math
from pathlib import Path

import pytest

from symcomm.derivations import bridge_runs, modern

FILE = "kempnerforge_mfu_runs.json"
RUNS = bridge_runs.load(FILE)["runs"]

#: the rows as printed (model, GPUs, nodes, tok/s, MFU %, Mem/GPU GB, step s) and the script's experiment (batch_size,
#: grad_accum_steps, tp, dp_shard, compile_model), in the table's order
PRINTED = [
    ("7b", 1, 1, 10471, 57.8, 80.7, 3.13, 2, 4, 1, 1, True),
    ("7b", 2, 1, 18728, 51.7, 62.4, 3.50, 2, 4, 1, 2, True),
    ("7b", 2, 1, 13163, 36.4, 57.8, 2.49, 4, 2, 2, 1, True),
    ("7b", 4, 1, 38983, 53.8, 61.1, 3.36, 4, 2, 1, 4, True),
    ("7b", 4, 1, 25135, 34.7, 39.4, 1.30, 4, 2, 4, 1, True),
    ("7b", 4, 1, 25980, 35.9, 45.9, 2.52, 4, 2, 2, 2, True),
    ("7b", 8, 2, 44299, 30.6, 32.7, 1.48, 4, 2, 4, 2, True),
    ("13b", 8, 2, 35405, 44.4, 88.5, 14.81, 4, 4, 1, 8, False),
    ("13b", 8, 2, 27345, 34.3, 45.1, 4.79, 4, 4, 4, 2, True),
    ("7b", 16, 4, 82988, 28.6, 29.4, 1.58, 4, 2, 4, 4, True),
    ("13b", 16, 4, 53814, 33.7, 39.2, 4.87, 4, 4, 4, 4, True),
    ("7b", 32, 8, 155917, 26.9, 27.6, 1.68, 4, 2, 4, 8, True),
    ("13b", 32, 8, 104309, 32.7, 36.3, 5.03, 4, 4, 4, 8, True),
    ("70b", 32, 8, 17657, 25.4, 93.2, 14.85, 2, 4, 4, 8, True),
]


def _parameters(model):
    # by hand from the typed shape: the embedding and the untied head V·h each, per layer q and o h·(heads·128), k and v
    # h·(kv_heads·128), the gated MLP 3·h·F and two RMSNorm weights of h; the final norm h
    h, layers, vocab, ffn = model["hidden"], model["layers"], model["vocab"], model["ffn"]
    q = model["heads"] * model["head_dim"]
    kv = model["kv_heads"] * model["head_dim"]
    return 2 * vocab * h + layers * (2 * h * q + 2 * h * kv + 3 * h * ffn + 2 * h) + h


def test_one_run_per_printed_row():
    assert len(RUNS) == len(PRINTED)
    for run, (size, gpus, nodes, tokens, _, memory, step, batch, accum, t, d, compiled) in zip(RUNS, PRINTED):
        assert run["model"]["name"] == f"kempnerforge-{size}"
        assert (run["gpus"], run["t"], run["d"], run["p"], run["c"]) == (gpus, t, d, 1, 1) and t * d == gpus
        assert run["row"].split(" | ")[1:3] == [str(gpus), str(nodes)]
        assert run["tokens_per_s_per_gpu"] * gpus == pytest.approx(tokens, abs=1e-3)
        assert run["memory_gib"] == memory
        # the tokens a step: d · batch_size · grad_accum_steps sequences of 4096, over the printed tok/s, is the
        # printed step time (printed to 0.01 s)
        assert run["global_batch"] == d * batch * accum and run["micro_batch"] == batch
        assert run["step_time_s"] == pytest.approx(step, abs=0.006)
        assert run["compile"] is compiled
        assert run["hardware"] == "h200" and run["nvlink_domain"] == 4 and run["precision"] == "bf16"


@pytest.mark.parametrize("run", RUNS, ids=lambda r: r["id"])
def test_run_is_valid(run):
    assert bridge_runs.validate(run) == []


def test_the_shapes_give_the_parameters_the_report_prints():
    # the report's Models table: 7B 8.03B, 13B 14.84B, 70B 70.55B parameters
    shapes = {r["model"]["name"]: r["model"] for r in RUNS}
    assert round(_parameters(shapes["kempnerforge-7b"]) / 1e9, 2) == 8.03
    assert round(_parameters(shapes["kempnerforge-13b"]) / 1e9, 2) == 14.84
    assert round(_parameters(shapes["kempnerforge-70b"]) / 1e9, 2) == 70.55
    # the FFN width of ffn_dim_multiplier 1.3 by the trainer's rule (kempnerforge/config/schema.py at 01b461a,
    # computed_ffn_hidden_dim: int(4·dim·2/3·1.3) rounded up to a multiple of 256)
    for model in (shapes["kempnerforge-7b"], shapes["kempnerforge-13b"]):
        assert model["ffn"] == 256 * math.ceil(int(4 * model["hidden"] * (2 / 3) * 1.3) / 256)


def test_the_printed_mfu_is_the_trainers_count_of_the_typed_rows():
    # kempnerforge/metrics/mfu.py at 01b461a: FLOPs a token 6·P + 12·L·h·s (P every parameter, the embedding and head
    # among them: num_params_estimate), against 989 TFLOP/s on H200; the typed shape and tokens a GPU give the
    # printed MFU to its last digit
    for run, row in zip(RUNS, PRINTED):
        model = run["model"]
        flops = 6 * _parameters(model) + 12 * model["layers"] * model["hidden"] * run["seq"]
        assert 100 * run["tokens_per_s_per_gpu"] * flops / 989e12 == pytest.approx(row[4], abs=0.051), run["id"]


def test_the_words_follow_the_trainers_code():
    by_id = {r["id"]: dict(w.split("=", 1) for w in modern.words(r)) for r in RUNS}
    alone = by_id["kempnerforge-2026-04-h200-7b-1gpu"]
    # no data-parallel dimension, no FSDP (apply_fsdp2 returns): the bf16 parameters' own bf16 gradients; the head
    # whole on the one GPU, F.cross_entropy of its bf16 logits
    assert (alone["d"], alone["t"], alone["grad_dtype"], alone["loss"]) == ("1", "1", "same", "eager_bf16")
    sharded = by_id["kempnerforge-2026-04-h200-7b-tp4-fsdp8"]
    assert (sharded["framework"], sharded["zero"], sharded["grad_dtype"], sharded["grad_reduce"]) == \
           ("fsdp2", "3", "fp32", "per_step")
    assert (sharded["sp"], sharded["sp_input"], sharded["loss"]) == ("1", "linear_gated", "replicated_bf16")
    # experiment 08 alone runs eagerly (--train.compile_model=false)
    assert by_id["kempnerforge-2026-04-h200-13b-fsdp8"]["compile"] == "0"
    assert all(w["compile"] == "1" for i, w in by_id.items() if i != "kempnerforge-2026-04-h200-13b-fsdp8")
    # cuDNN's attention (PyTorch 2.11's default order on SM 9.0) and bf16 parameters and moments everywhere
    assert all((w["attention_kernel"], w["adam_dtype"]) == ("cudnn", "bf16") for w in by_id.values())


def test_the_printed_allocated_peaks_of_the_fsdp_rows_are_what_the_model_counts():
    # Mem/GPU is max_memory_allocated (kempnerforge/metrics/memory.py at 01b461a): live bytes, what the model counts;
    # every FSDP row within 6 % of the count.  The rows without FSDP (one GPU, TP alone) are counted 10 to 17 % below
    # their peaks: the printed-memory table shows them
    for run in (r for r in RUNS if r["d"] > 1):
        counted = float(modern.inputs(run, fitting=False).quantities()["memory_per_gpu"]) / 2 ** 30
        assert counted == pytest.approx(run["memory_gib"], rel=0.06), run["id"]


def test_each_row_is_stored_at_what_its_command_gives():
    stored = json.loads((Path(modern.__file__).parent / "data" / "step_fit.json").read_text(encoding="utf-8"))
    # a row typed to the same words as a weak-scaling row (kempnerforge_runs.json: 13B at 8 and 32 GPUs, 70B at 32)
    # is stored with it, the ids joined by '+'
    checked = {i: r for r in stored["checks"]["h200"]["runs"] for i in r["id"].split("+")}
    joined = [r["id"] for r in stored["checks"]["h200"]["runs"] if "kempnerforge-2026-04" in r["id"] and "+" in r["id"]]
    assert len(joined) == 3
    for run in RUNS:
        step = float(modern.inputs(run, fitting=False).quantities()["step_time"])
        row = checked[run["id"]]
        assert row["predicted_s"] == pytest.approx(step, rel=1e-5)
        assert row["framework"] == "KempnerForge (FSDP2)"
    memory = {r["id"]: r for r in stored["memory"]}
    assert all(memory[r["id"]]["published_gib"] == r["memory_gib"] for r in RUNS)
