"""The printed peak memory of torchtitan's benchmarks (derivations/data/torchtitan_runs.json, memory_gib), the
Trainy/WhiteFiber H200 check runs, `python -m symcomm.derivations.fit_step_time --checks-only` (the check and
memory rows of derivations/data/step_fit.json recomputed with the stored constants, nothing refitted) and the
step-time chapter's tables that read those rows."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from symcomm import presets
from symcomm.derivations import bridge_runs, fit_step_time, modern, step_time

#: source lines copied from pytorch/torchtitan at b5bcd76c66d0acb1a08b176d9639425bc55e0b2a, with the run each is
SOURCE_LINES = {
    # benchmarks/llama3_h100_202412_torchtitan.md, Table 1 (8B, 8 GPUs): Techniques | TPS/GPU | Memory(GiB)
    "torchtitan-2024-12-h100-llama3.1-8b-fsdp-compile-fp8-cs-t1": "| FSDP + torch.compile + Float8 | 8,532 | 76.8 |",
    # the same file, Table 5 (405B, 512 GPUs): Schedule | TPS/GPU | Memory(GiB)
    "torchtitan-2024-12-h100-llama3.1-405b-fsdp8-tp8-pp8-interleaved-fp8-cs-t5": "| Interleaved 1F1B | 128 | 72.7 |",
    # benchmarks/llama3-8b_h200_202506_trainy-whitefiber.md, Results: NUM_NODES | TPS/GPU | Memory(GiB)
    "torchtitan-2025-06-h200-llama3.1-8b-fsdp32-compile-fp8-cs-trainy-4n": "| 4 | 10938 | 47.96 |",
}

MIRROR = Path("/work/.mirror/pytorch+torchtitan/repo")
COMMIT = "b5bcd76c66d0acb1a08b176d9639425bc55e0b2a"


def _runs() -> dict:
    return {r["id"]: r for r in bridge_runs.runs("torchtitan_runs.json")}


def _printed(line: str) -> tuple[float, float]:
    """(TPS/GPU, Memory(GiB)) of a table line: its last two cells, thousands separators dropped."""
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    return float(cells[-2].replace(",", "")), float(cells[-1])


@pytest.mark.parametrize("run_id", sorted(SOURCE_LINES))
def test_the_printed_memory_is_the_sources(run_id):
    tps, memory = _printed(SOURCE_LINES[run_id])
    run = _runs()[run_id]
    assert run["memory_gib"] == memory
    assert run["tokens_per_s_per_gpu"] == tps


def test_the_h200_runs_as_the_source_gives_them():
    # Trainy/WhiteFiber: NUM_NODES hosts of 8 H200, FSDP over every GPU (llama3_8b.toml at e7c0cae9:
    # data_parallel_shard_degree = -1, seq_len = 8192, activation_checkpoint mode = "selective" with
    # selective_ac_option = "op": recompute=op), local batch 2: 4 nodes = 32 GPUs, global batch 64,
    # step = 64·8192/(10938·32) = 1.4979 s; 8 nodes = 64 GPUs, 128·8192/(10753·64) = 1.5237 s
    runs = [r for r in _runs().values() if r["hardware"] == "h200"]
    assert {(r["gpus"], r["d"], r["global_batch"], r["seq"], r["t"], r["p"], r["c"]) for r in runs} == {
        (32, 32, 64, 8192, 1, 1, 1), (64, 64, 128, 8192, 1, 1, 1)}
    by_gpus = {r["gpus"]: r for r in runs}
    assert by_gpus[32]["step_time_s"] == pytest.approx(1.4979, rel=1e-3)
    assert by_gpus[64]["step_time_s"] == pytest.approx(1.5237, rel=1e-3)
    assert all(r["role"] == "check" and r["precision"] == "fp8-cs" and r["fp8_param_gather"] is True
               and r["recompute"] == "op" for r in runs)
    assert not any(bridge_runs.validate(r) for r in runs)


def test_a_table_without_a_memory_column_has_none():
    # benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md prints tokens/sec only: nothing is made up
    assert all(r["memory_gib"] is None for r in _runs().values() if r["id"].startswith("torchtitan-2025-06-h100"))


def test_validate_refuses_a_memory_that_is_not_a_number():
    run = dict(_runs()["torchtitan-2024-12-h100-llama3.1-8b-fsdp-bf16-t1"], memory_gib="82.4")
    assert any("memory_gib must be a positive number or null" in p for p in bridge_runs.validate(run))


@pytest.mark.skipif(not MIRROR.is_dir(), reason="no local mirror of pytorch/torchtitan")
def test_every_printed_memory_is_in_the_source():
    # every 2024-12 row read from the source file itself: its table (Table N) and its first cell name the row
    text = subprocess.run(["git", f"--git-dir={MIRROR}", "show", f"{COMMIT}:benchmarks/llama3_h100_202412_torchtitan.md"],
                          capture_output=True, text=True, check=True).stdout
    printed, table = {}, None
    for line in text.splitlines():
        heading = re.match(r"\*\*(Table \d)\*\*", line)
        if heading:
            table = heading.group(1)
        elif line.startswith("#"):        # a new section (### Versions and Dates): no table of runs
            table = None
        elif table and line.startswith("| ") and not line.startswith(("| -", "| Techniques", "| Schedule", "| Parallelism")):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            printed[(table, cells[0])] = float(cells[-1])
    runs = [r for r in _runs().values() if r["release"] == "2024-12"]
    assert len(runs) == len(printed) == 18
    for r in runs:
        table = r["section"].split(": ")[1].split(" (")[0]
        row = r["row"].split(", sequence length")[0]
        assert r["memory_gib"] == printed[(table, row)], r["id"]


@pytest.fixture
def stored_copy(tmp_path, monkeypatch):
    """step_fit.json copied to a temporary file the fit script writes instead, and the check runs of h200 alone
    (twelve runs: seconds, not the minute of every preset)."""
    copy = tmp_path / "step_fit.json"
    copy.write_text(fit_step_time.RESULTS_JSON.read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.setattr(fit_step_time, "RESULTS_JSON", copy)
    # --checks-only writes the presets' check errors too: into a copy, never the shipped presets
    presets = tmp_path / "hardware.json"
    presets.write_text(fit_step_time.HARDWARE_JSON.read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.setattr(fit_step_time, "HARDWARE_JSON", presets)
    monkeypatch.setattr(fit_step_time, "check_systems", lambda: ["h200"])
    monkeypatch.setattr(fit_step_time, "fit_systems", lambda: [])
    return copy


def test_checks_only_leaves_the_fit_as_it_is(stored_copy, capsys):
    before = json.loads(stored_copy.read_text(encoding="utf-8"))
    assert fit_step_time.main(["--checks-only"]) == 0
    after = json.loads(stored_copy.read_text(encoding="utf-8"))
    # the constants, the fitted runs' rows, the errors, the scope: untouched
    written = ("checks", "memory", "known_causes", "regressions", "ran_over")
    assert {k: v for k, v in after.items() if k not in written} == \
           {k: v for k, v in before.items() if k not in written}
    # the runs with a known cause of disagreement: data, written afresh (the 25.11 H100 Qwen3-30B-A3B row: issue 1998)
    assert after["known_causes"] == fit_step_time.known_causes()
    assert "report #1998" in after["known_causes"]["bridge-25.11-h100-qwen3-30b-a3b-fp8cs"]["cause"]
    # the rows published as regressions: predicted with their hardware's constants, never among the checks or fits
    regressions = {r["id"]: r for rows in after["regressions"].values() for r in rows}
    assert set(regressions) == {"bridge-25.11-h100-qwen3-30b-a3b-fp8cs", "bridge-25.11-b200-qwen3-30b-a3b-fp8mx",
                                "bridge-25.11-b200-qwen3-235b-a22b-fp8mx", "bridge-26.06.01-gb200-gpt-oss-120b-fp8-mx",
                                "kempnerforge-2026-06-h200-70b-tp4-fsdp2"}
    # 25.11 H100 Qwen3-30B-A3B: GBS 512 · seq 4096 / (5275 tokens/s/GPU · 16 GPUs), the table's own numbers
    assert regressions["bridge-25.11-h100-qwen3-30b-a3b-fp8cs"]["measured_s"] == pytest.approx(
        512 * 4096 / (5275 * 16), rel=1e-3)
    checked = {i for rows in after["checks"].values() for r in rows["runs"] for i in r["id"].split("+")}
    assert not checked & set(regressions)
    found = after["checks"]["h200"]
    # h200 has no fitted run: it borrows h100's constants (symcomm/presets/hardware.json, borrowed_from), all but the
    # widths h100 holds at its datasheet's roofline (w_half, w_half_expert), which each run takes from H200's own
    lent = {k: v for k, v in before["systems"]["h100"]["constants"].items() if k not in ("w_half", "w_half_expert")}
    assert found["constants_from"] == "h100"
    assert found["constants"] == pytest.approx(lent)
    rows = {r["id"]: r for r in found["runs"]}
    assert rows["torchtitan-2025-06-h200-llama3.1-8b-fsdp32-compile-fp8-cs-trainy-4n"]["measured_s"] == 1.498
    for r in found["runs"]:
        assert r["error"] == pytest.approx(r["predicted_s"] / r["measured_s"] - 1, abs=1e-5)
    # the memory rows: each H200 row's printed GiB (Trainy's 47.96 and 46.97, the source's Results table; KempnerForge's
    # ten weak-scaling check rows as its README's Results table prints them, and its fourteen MFU-scaling rows as
    # benchmarks/mfu_scaling/mfu_scaling.md's Full Results Table prints them)
    assert sorted(r["published_gib"] for r in after["memory"]) == sorted(
        [46.97, 47.96, 45.0, 36.2, 34.8, 34.0, 33.9, 93.2, 86.8, 84.6, 83.6, 82.9,
         80.7, 62.4, 57.8, 61.1, 39.4, 45.9, 32.7, 88.5, 45.1, 29.4, 39.2, 27.6, 36.3, 93.2])
    for r in after["memory"]:
        assert r["error"] == pytest.approx(r["predicted_gib"] / r["published_gib"] - 1, abs=1e-5)
    # 2 Trainy rows, 10 KempnerForge weak-scaling check rows and 14 MFU-scaling rows, 3 of which are typed to the same
    # words as a weak-scaling row (13B at 8 and 32 GPUs, 70B at 32) and stored with it: 23 rows
    assert "h200 (constants of h100): over 23 runs mean |error|" in capsys.readouterr().out
    # the presets' copy: h100's check errors now those of the 23 h200 rows alone (the only system checked here)
    presets = json.loads(fit_step_time.HARDWARE_JSON.read_text(encoding="utf-8"))["systems"]
    fsdp2 = presets["h100"]["step_time"]["checks"]["fsdp2"]
    assert fsdp2["runs"] == 23 and fsdp2["hardware"] == ["h200"]
    assert fsdp2["mean"] == pytest.approx(sum(abs(r["error"]) for r in found["runs"]) / 23, abs=1e-5)


def test_checks_only_and_write_are_refused_together(stored_copy):
    with pytest.raises(SystemExit) as stop:
        fit_step_time.main(["--checks-only", "--write"])
    assert stop.value.code == 2


FAKE = {"checks": {"h200": {"constants": {"eta": 0.5}, "constants_from": "h100",
                            "runs": [{"id": "run-a", "source": "torchtitan", "framework": "torchtitan (FSDP2)",
                                      "measured_s": 2.0, "predicted_s": 1.5, "error": -0.25}]}},
        "memory": [{"id": "run-a", "hardware": "h200", "framework": "torchtitan (FSDP2)", "published_gib": 40.0,
                    "predicted_gib": 50.0, "error": 0.25},
                   {"id": "run-b", "hardware": "h100", "framework": "torchtitan (FSDP2)", "published_gib": 80.0,
                    "predicted_gib": 60.0, "error": -0.25}]}


def test_the_tables_read_the_stored_rows(monkeypatch):
    monkeypatch.setattr(step_time, "_results", lambda: FAKE)
    memory = step_time._printed_memory_table()
    assert [row[:5] for row in memory.rows] == [("run-a", "h200", "40", "50.0", "+25.0 %"),
                                                ("run-b", "h100", "80", "60.0", "-25.0 %")]
    # |+25 %| and |-25 %|: mean 25 %, max 25 %, signed mean 0
    assert "over 2 runs mean |error| 25.0 %, max 25.0 %, signed mean +0.0 %" in memory.caption
    checks = step_time._check_table()
    assert checks.rows == (("run-a", "h200", "torchtitan (FSDP2)", "2.000", "1.500", "-25.0 %"),)
    assert "h200 with h100's: over 1 runs mean |error| 25.0 %" in checks.caption


def test_the_committed_tables_are_the_committed_rows():
    stored = json.loads(fit_step_time.RESULTS_JSON.read_text(encoding="utf-8"))
    assert [row[0] for row in step_time._printed_memory_table().rows] == [r["id"] for r in stored["memory"]]
    # every check run that prints its memory: torchtitan's (reserved peaks), KempnerForge's and Megatron-LM's
    # functional tests' (allocated peaks)
    printed = [r for r in [*_runs().values(), *bridge_runs.runs("kempnerforge_runs.json", "check"),
                           *bridge_runs.runs("kempnerforge_mfu_runs.json", "check"),
                           *bridge_runs.runs("megatron_lm_tests_runs.json", "check")]
               if r["memory_gib"] is not None]
    assert sorted(r["id"] for r in stored["memory"]) == sorted(r["id"] for r in printed)
    # h200: Trainy's two torchtitan rows, KempnerForge's ten weak-scaling check rows and its fourteen MFU-scaling rows,
    # three of them stored with the weak-scaling row of the same words
    assert "h200" in stored["checks"] and len(stored["checks"]["h200"]["runs"]) == 23


def test_a_run_on_a_bounded_peak_is_checked_at_both_ends(monkeypatch):
    # torchtitan's Grand Teton H100s (h100-gt): typed at the SXM end (peak=989.4e12), predicted at the NVL end too
    one = "torchtitan-2025-06-h100-llama3.1-70b-fsdp32-tp8-bf16-vanilla"
    every = modern.measured_runs

    def only(system, role="fit"):
        runs, why = every(system, role)
        return [r for r in runs if r.id == one], why
    monkeypatch.setattr(modern, "measured_runs", only)
    monkeypatch.setattr(fit_step_time.published, "measured_runs", lambda system, role="fit": [])
    assert "--hardware h100-gt " in modern.command(next(r for r in modern.runs("check") if r["id"] == one))
    assert "peak=9.894e+14" in modern.command(next(r for r in modern.runs("check") if r["id"] == one))
    constants = dict(presets.hardware("h100").step_time)
    (row,), _ = fit_step_time.check_rows("h100-gt", constants)
    # a bf16 run: its matmuls at 835.5 instead of 989.4 TFLOP/s take longer, everything else the same
    assert row["predicted_low_peak_s"] > row["predicted_s"]
    assert row["predicted_low_peak_s"] < row["predicted_s"] * 989.4 / 835.5      # not all of the step is matmuls
    assert row["error_low_peak"] == pytest.approx(row["predicted_low_peak_s"] / row["measured_s"] - 1, abs=1e-5)


def test_a_run_counted_over_its_gpu_is_evals_count():
    """The stored 'ran_over' rows (the model's count over the GPU's memory of a run that ran) are eval's own:
    Megatron-Bridge 25.09's Llama 3 70B FP8-CS under Megatron-FSDP on GB200, its words run through symcomm eval hybrid,
    counted above the 186 GB (173.2 GiB) its datasheet gives (26.06's Llama 3.1 405B FP8-CS was too, until the memory
    model kept K and V at Llama's 8 query groups, no dropout mask and one row-wise FP8 copy of the gathered inputs).  LLM Foundry's MPT-350M on A100 40GB at micro-batch 18, counted at
    39.4 GiB with Megatron's loss buffers (6 bytes a logit), was over the 40 GB read as 10^9 bytes and fits the
    40,960 MiB NVML reports for the part (hardware.json's source); with the loss it ran, flash-attn's (4 bytes a
    logit: loss=xentropy_cuda), below both: not among them."""
    stored = {r["id"]: r for r in json.loads(fit_step_time.RESULTS_JSON.read_text(encoding="utf-8"))["ran_over"]}
    run_id = "bridge-25.09-gb200-llama3-70b-fp8cs"
    words = modern.command(_any_run(run_id)).split()[1:]
    out = subprocess.run([sys.executable, "-m", "symcomm", *words, "--json"], capture_output=True, text=True, check=True)
    counted = json.loads(out.stdout)["memory_per_gpu"]
    assert stored[run_id]["predicted_gib"] == pytest.approx(counted / 2 ** 30, rel=1e-5)
    assert counted > 186e9 and stored[run_id]["gpu_gib"] == pytest.approx(186e9 / 2 ** 30, rel=1e-5)
    assert stored[run_id]["over"] == pytest.approx(counted / 186e9 - 1, abs=1e-5)
    assert not stored[run_id]["layout_in_doubt"]
    mpt = "llm-foundry-2023-05-a100-40gb-mpt-350m-s2048-g16-mb18-bf16"
    words = modern.command(_any_run(mpt)).split()[1:]
    out = subprocess.run([sys.executable, "-m", "symcomm", *words, "--json"], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout)["memory_per_gpu"] <= 40_960 * 2**20 and mpt not in stored
    megatron_loss = [w for w in words if not w.startswith("loss=")] + ["loss=vocab_parallel"]
    out = subprocess.run([sys.executable, "-m", "symcomm", *megatron_loss, "--json"], capture_output=True, text=True,
                         check=True)
    assert 40e9 < json.loads(out.stdout)["memory_per_gpu"] <= 40_960 * 2**20
    # the 25.11 GB200 Llama 3 70B FP8-CS row's data says its table differs from its recipe: its layout is in doubt
    assert stored["bridge-25.11-gb200-llama3-70b-fp8cs+bridge-26.04.01-gb200-llama3-70b-fp8-cs"]["layout_in_doubt"]


def _any_run(run_id):
    return next(r for r in modern.runs() if r["id"] == run_id)
