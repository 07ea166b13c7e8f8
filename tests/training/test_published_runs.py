"""derivations/data/published_runs.json: the schema, and the consistency the papers themselves impose.

Every check here uses only numbers printed in the papers and the papers' own formulas:
gpus = t·p·d·c; Narayanan et al. 2021 eq. (2) (parameters) and the printed percentage of the
312 TFLOP/s peak; Korthikanti et al. 2022 Appendix A (MFU/HFU from the iteration time) and §4
(per-GPU memory of Figure 1); Llama 3 Table 4 (tokens per batch, MFU); the check runs of BLOOM
(training log), OPT, GPT-NeoX-20B, MT-NLG and the Megatron-LM README (printed TFLOP/s against printed
times, tokens per batch, percentage of peak).
"""

import json

import pytest

from symcomm import presets
from symcomm.base.errors import InputError
from symcomm.base.inputs import check, loads
from conftest import ROOT

DATA = ROOT / "derivations" / "data" / "published_runs.json"
GIB = 2 ** 30


@pytest.fixture(scope="module")
def data():
    return check(loads(DATA.read_text(encoding="utf-8"), "published_runs.json"), "published-runs", "published_runs.json")


@pytest.fixture(scope="module")
def runs(data):
    return {run["id"]: run for run in data["runs"]}


def paper_runs(runs, arxiv):
    return [run for run in runs.values() if run["paper"]["arxiv"] == arxiv]


def table_1(runs):
    """Narayanan et al. 2021 Table 1 (the Megatron-LM README run cites the same arXiv number)."""
    return [run for run in paper_runs(runs, "2104.04473") if run["id"].startswith("narayanan2021-t1-")]


def test_the_file_satisfies_the_schema(data):
    assert data["runs"] and data["memory"] and data["_convention"]


def test_the_schema_rejects_a_run_with_two_measurements_or_none(data):
    run = dict(data["runs"][0])
    two = dict(run, iteration_time_s=1.0)
    with pytest.raises(InputError):
        check({**data, "runs": [two]}, "published-runs", "data")
    none = {k: v for k, v in run.items() if k not in ("tflops_per_gpu", "flops_count")}
    with pytest.raises(InputError):
        check({**data, "runs": [none]}, "published-runs", "data")
    # TFLOP/s per GPU needs the FLOP count it was computed with, and nothing else carries one
    uncounted = {k: v for k, v in run.items() if k != "flops_count"}
    with pytest.raises(InputError):
        check({**data, "runs": [uncounted]}, "published-runs", "data")
    with pytest.raises(InputError):
        check({**data, "runs": [dict(run, flops_count="6N")]}, "published-runs", "data")
    with pytest.raises(InputError):
        check({**data, "runs": [dict(run, v=2, schedule="1f1b")]}, "published-runs", "data")


def test_ids_are_unique_and_memory_points_at_runs(data, runs):
    assert len(runs) == len(data["runs"])
    ids = [m["id"] for m in data["memory"]]
    assert len(set(ids)) == len(ids) and not set(ids) & set(runs)
    for entry in data["memory"]:
        assert all(r in runs for r in entry["runs"])


def test_every_run_uses_a_shipped_preset_and_a_consistent_layout(runs):
    for run in runs.values():
        assert run["hardware"] in presets.hardware_names(), run["id"]
        assert run["gpus_per_node"] == presets.hardware(run["hardware"]).gpus_per_node
        assert run["gpus"] == run["t"] * run["p"] * run["d"] * run["c"], run["id"]
        assert run["heads"] % run["kv_heads"] == 0 and run["hidden"] % run["heads"] == 0
        slots = run["layers"] + run.get("pipeline_extra_slots", 0)     # BLOOM: the embeddings take 2 slots
        assert slots % run["p"] == 0 or run["paper"]["arxiv"] == "2407.21783", run["id"]  # Llama: uneven first/last stage
        # the global batch splits evenly over data-parallel replicas and micro-batches
        assert run["global_batch"] % (run["d"] * run["micro_batch"]) == 0, run["id"]
        assert run["seq"] % run["c"] == 0
        assert run["assumed"], run["id"]          # every run leans on at least one unprinted value
        if run["v"] > 1:
            assert run["schedule"] == "interleaved" and run["p"] > 1
        if "model_preset" in run:
            model = presets.model(run["model_preset"])
            assert (model.hidden, model.layers, model.heads, model.kv_heads, model.ffn, model.vocab) == \
                (run["hidden"], run["layers"], run["heads"], run["kv_heads"], run["ffn"], run["vocab"])


def test_fit_runs_are_the_ones_the_presets_name(runs):
    # the hardware presets list the runs their step-time constants were fitted on: exactly the
    # runs marked "fit" here (Narayanan 2021 Table 1 and Korthikanti 2022 Table 5 on A100: the papers' runs the issue
    # names for fitting; Llama 3's Table 4 runs are checks, never fitted on)
    import json
    from importlib import resources

    systems = json.loads(resources.files("symcomm.presets").joinpath("hardware.json").read_text())["systems"]
    # (a layout measured in two releases is one fitted run, its ids joined by "+")
    named = {one for system in systems.values() for run_id in system.get("step_time", {}).get("fitted_on", ())
             for one in run_id.split("+")}
    assert named & set(runs) == {run["id"] for run in runs.values() if run["role"] == "fit"}
    from symcomm.derivations import modern
    assert named - set(runs) <= {run["id"] for run in modern.runs("fit")}
    assert {run["paper"]["arxiv"] for run in runs.values() if run["role"] == "fit"} == {
        "2104.04473", "2205.05198"}
    assert {run["role"] for run in runs.values() if run["paper"]["arxiv"] == "2407.21783"} == {"check"}


# ---------------------------------------------------------------- Narayanan et al. 2021, Table 1

def narayanan_parameters(run):
    """Eq. (2): P = 12·L·h²·(1 + 13/(12h) + (V+s)/(12·L·h))."""
    L, h, V, s = run["layers"], run["hidden"], run["vocab"], run["seq"]
    return 12 * L * h * h * (1 + 13 / (12 * h) + (V + s) / (12 * L * h))


def narayanan_flops(run):
    """Eq. (3): F = 96·B·s·L·h²·(1 + s/(6h) + V/(16·L·h)) per iteration, with recompute."""
    B, L, h, V, s = run["global_batch"], run["layers"], run["hidden"], run["vocab"], run["seq"]
    return 96 * B * s * L * h * h * (1 + s / (6 * h) + V / (16 * L * h))


def test_narayanan_table_1_has_ten_rows(runs):
    rows = table_1(runs)
    assert len(rows) == 10
    assert [r["gpus"] for r in rows] == [32, 64, 128, 256, 512, 1024, 1536, 1920, 2520, 3072]
    assert all(r["role"] == "fit" and r["hardware"] == "a100" and r["recompute"] == "full" for r in rows)


def test_narayanan_parameters_match_eq_2(runs):
    for run in table_1(runs):
        computed, printed = narayanan_parameters(run), run["parameters"]
        # within 1 %, or within the printed rounding (one decimal in billions: the 1.7 B row is 1.652 B)
        assert abs(computed - printed) <= max(0.01 * printed, 0.05e9), (run["id"], computed)


def test_narayanan_percent_of_peak_matches_tflops(runs):
    for run in table_1(runs):
        printed = run["also_printed"]["percent_of_peak"]
        # both are rounded to a whole number: X ± 0.5 TFLOP/s, percentage ± 0.5
        assert abs(100 * run["tflops_per_gpu"] / 312 - printed) <= 0.5 + 100 * 0.5 / 312, run["id"]


def test_narayanan_aggregate_matches_tflops_times_gpus(runs):
    for run in table_1(runs):
        aggregate = run["also_printed"]["aggregate_pflops"] * 1e3
        assert abs(run["tflops_per_gpu"] * run["gpus"] - aggregate) <= 0.5 * run["gpus"] + 50, run["id"]


def test_narayanan_interleaving_divides_the_layers(runs):
    for run in table_1(runs):
        assert run["layers"] % (run["p"] * run["v"]) == 0, run["id"]
        implied = narayanan_flops(run) / (run["gpus"] * run["tflops_per_gpu"] * 1e12)
        assert 1 < implied < 200            # seconds per iteration implied by the row


# ---------------------------------------------------------------- Korthikanti et al. 2022, Tables 3 and 5

def korthikanti_flops(run, hardware=False):
    """Appendix A: model FLOPs 72·B·L·s·h²·(1 + s/(6h) + V/(12·h·L)); hardware FLOPs with
    selective recompute replace s/(6h) by s/(3h)."""
    B, L, h, V, s = run["global_batch"], run["layers"], run["hidden"], run["vocab"], run["seq"]
    return 72 * B * L * s * h * h * (1 + s / ((3 if hardware else 6) * h) + V / (12 * h * L))


def test_korthikanti_has_both_columns_for_four_models(runs):
    rows = paper_runs(runs, "2205.05198")
    assert len(rows) == 8 and all(r["d"] == 1 and r["t"] == 8 for r in rows)
    for name in ("22b", "175b", "530b", "1t"):
        full = runs[f"korthikanti2022-t5-{name}-full"]
        present = runs[f"korthikanti2022-t5-{name}-sp-selective"]
        assert (full["recompute"], full["sp"], present["recompute"], present["sp"]) == ("full", False, "selective", True)
        assert present["iteration_time_s"] < full["iteration_time_s"]
        shape = ("hidden", "layers", "heads", "gpus", "p", "v", "global_batch", "micro_batch")
        assert [full[k] for k in shape] == [present[k] for k in shape]


def test_korthikanti_times_reproduce_the_printed_mfu_and_hfu(runs):
    for run in paper_runs(runs, "2205.05198"):
        if "also_printed" not in run:
            continue
        seconds = run["iteration_time_s"] * run["gpus"] * run["peak_tflops"] * 1e12
        # the time is printed to 3-4 significant digits, MFU/HFU to 0.1 point
        assert korthikanti_flops(run) / seconds * 100 == pytest.approx(run["also_printed"]["mfu_percent"], abs=0.3)
        assert korthikanti_flops(run, True) / seconds * 100 == pytest.approx(run["also_printed"]["hfu_percent"], abs=0.3)


def test_korthikanti_figure_1_memory_follows_the_papers_formulas(data, runs):
    for entry in data["memory"]:
        run = runs[entry["runs"][0]]
        a, b, h, L, s, t, p, v = (run[k] for k in ("heads", "micro_batch", "hidden", "layers", "seq", "t", "p", "v"))
        # 18 bytes per parameter (e.g. 16-bit weights 2 + fp32 gradients 4 + fp32 master weights and Adam
        # moments 12) over the 12·L·h² transformer parameters split over t·p GPUs reproduces the figure
        # (our reading: the figure's byte count per parameter is not restated here from the paper)
        assert 18 * 12 * L * h * h / (t * p) / GIB == pytest.approx(entry["weights_grads_optimizer_gib"], abs=0.01)
        # §4 activations per layer: sbh(10 + 24/t + 5as/(ht)) with tensor parallelism only, 34·sbh/t with
        # sequence parallelism and selective recompute; the first stage holds L layers' worth (p in-flight
        # micro-batches of L/p layers), times 1 + (p−1)/(p·v) for the interleaved schedule
        interleave = 1 + (p - 1) / (p * v) if v > 1 else 1
        tp_only = s * b * h * L * (10 + 24 / t + 5 * a * s / (h * t)) * interleave
        sp_selective = s * b * h * L * 34 / t * interleave
        assert tp_only / GIB == pytest.approx(entry["activations_tp_only_gib"], abs=0.01)
        assert sp_selective / GIB == pytest.approx(entry["activations_sp_selective_gib"], abs=0.01)


# ---------------------------------------------------------------- Dubey et al. 2024 (Llama 3), Table 4

def test_llama3_table_4(runs):
    rows = paper_runs(runs, "2407.21783")
    assert len(rows) == 3 and all(r["role"] == "check" and r["gated_mlp"] for r in rows)
    for run in rows:
        assert run["global_batch"] * run["seq"] == 2 ** 24                 # Tokens/Batch 16M
        assert run["global_batch"] == run["d"] * run["also_printed"]["batch_size_per_dp"]
        # TFLOPs/GPU printed to two significant digits (± 5), MFU to a whole percent (± 0.5)
        assert abs(100 * run["tflops_per_gpu"] / run["peak_tflops"] - run["also_printed"]["mfu_percent"]) \
            <= 0.5 + 100 * 5 / run["peak_tflops"], run["id"]


# ---------------------------------------------------------------- check runs (never fitted on)

CHECK_IDS = {"bigscience2022-tr11-176b-iter85376", "zhang2022-opt-175b", "black2022-gpt-neox-20b",
             "smith2022-mtnlg-530b-280n", "smith2022-mtnlg-530b-350n", "smith2022-mtnlg-530b-420n",
             "megatron-readme-gpt3-175b-1024gpu"}


def test_the_added_runs_are_checks_with_their_flop_count(runs):
    assert CHECK_IDS <= set(runs)
    for run_id in CHECK_IDS:
        run = runs[run_id]
        assert run["role"] == "check" and run["source"] and run["checked_against"] and run["assumed"]
    # the existing TFLOP/s rows: Table 1 counts eq. (3), Llama 3 model FLOPs
    assert all(r["flops_count"] == "narayanan-eq3" for r in table_1(runs))
    assert all(r["flops_count"] == "model" for r in paper_runs(runs, "2407.21783"))
    # a run whose source states no convention says so in words too
    for run in runs.values():
        if run.get("flops_count") == "unstated":
            assert run["tflops_convention"].startswith("NOT STATED"), run["id"]


def test_bloom_log_line_reproduces_its_tflops_and_samples_per_second(runs):
    run = runs["bigscience2022-tr11-176b-iter85376"]
    printed = run["also_printed"]
    # Megatron-DeepSpeed logs eq. (3) with the padded vocabulary over the iteration time (printed to 0.01 s)
    assert narayanan_flops(run) / (run["iteration_time_s"] * run["gpus"] * 1e12) == pytest.approx(
        printed["tflops_logged"], abs=0.02)
    assert run["global_batch"] / run["iteration_time_s"] == pytest.approx(printed["samples_per_second"], abs=0.001)
    # README 'Replica setup': TP=4 PP=12 DP=8 MBS=2 on 48 nodes; 70 blocks + 2 embeddings over 12 stages
    assert (run["t"], run["p"], run["d"], run["micro_batch"], run["gpus"] // run["gpus_per_node"]) == (4, 12, 8, 2, 48)
    assert (run["layers"] + run["pipeline_extra_slots"]) // run["p"] == 6
    # consumed tokens = consumed samples × 2048
    assert printed["consumed_tokens"] == printed["consumed_samples"] * run["seq"]


def test_mtnlg_times_reproduce_the_printed_tflops(runs):
    rows = sorted(paper_runs(runs, "2201.11990"), key=lambda r: r["gpus"])
    assert [r["gpus"] for r in rows] == [2240, 2800, 3360]
    for run in rows:
        assert (run["t"], run["p"], run["global_batch"]) == (8, 35, 1920)
        assert run["gpus"] == 8 * run["also_printed"]["servers"]
        # the TFLOP/s are printed as integers (± 0.5), the times to 0.1 s
        tflops = narayanan_flops(run) / (run["iteration_time_s"] * run["gpus"] * 1e12)
        assert abs(tflops - run["also_printed"]["tflops_per_gpu"]) <= 0.5 + tflops * 0.05 / run["iteration_time_s"], \
            (run["id"], tflops)
    # more replicas, shorter iterations
    assert [r["iteration_time_s"] for r in rows] == sorted((r["iteration_time_s"] for r in rows), reverse=True)


def test_megatron_readme_gpt3_tflops_percent_and_time_agree(runs):
    run = runs["megatron-readme-gpt3-175b-1024gpu"]
    assert run["flops_count"] == "narayanan-eq3"
    assert abs(100 * run["tflops_per_gpu"] / run["peak_tflops"] - run["also_printed"]["percent_of_peak"]) <= 0.5
    # 'around 32 seconds': eq. (3) over 138 TFLOP/s on 1024 GPUs gives 31.9 s
    seconds = narayanan_flops(run) / (run["gpus"] * run["tflops_per_gpu"] * 1e12)
    assert seconds == pytest.approx(run["also_printed"]["iteration_time_s_approx"], rel=0.02)


def _tokens(printed: str) -> float:
    value, unit = float(printed[:-1]), printed[-1]
    return value * {"M": 1e6}[unit]


def test_tokens_per_batch_match_the_printed_batch(runs):
    # OPT Table 1: 2M tokens; GPT-NeoX-20B: approximately 3.15M tokens (1538 contexts, see 'assumed')
    opt, neox = runs["zhang2022-opt-175b"], runs["black2022-gpt-neox-20b"]
    assert opt["global_batch"] * opt["seq"] == pytest.approx(_tokens(opt["also_printed"]["batch_tokens"]), rel=0.05)
    assert neox["global_batch"] * neox["seq"] == pytest.approx(_tokens(neox["also_printed"]["tokens_per_batch"]),
                                                               rel=0.005)
    assert abs(neox["global_batch"] - neox["also_printed"]["contexts_per_batch"]) <= 2
    # the layouts the sources print: OPT 124 hosts × 8-way tensor parallelism; NeoX t = 2, p = 4 on 96 GPUs
    assert (opt["t"], opt["p"], opt["d"], opt["gpus"]) == (8, 1, 124, 992)
    assert (neox["t"], neox["p"], neox["d"], neox["gpus"]) == (2, 4, 12, 96)
    # 20B.yml: micro-batch 4 × gradient accumulation 32 × 12 replicas
    assert neox["global_batch"] == neox["micro_batch"] * 32 * neox["d"]
