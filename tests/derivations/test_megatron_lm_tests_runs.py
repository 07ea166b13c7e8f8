"""Megatron-LM's functional-test golden values (derivations/data/megatron_lm_tests_runs.json): the printed peak
memory and iteration times of gpt3_7b_tp4_pp1_memory_speed and gpt3_7b_tp1_pp4_memory_speed, written out here as the golden-values files print them,
the derived numbers made here by hand, and the words each row gives ``symcomm eval hybrid``.

The sources (github.com/NVIDIA/Megatron-LM): tests/functional_tests/test_cases/gpt/gpt3_7b_tp4_pp1_memory_speed/
golden_values_dev_dgx_h100.json at 6e091e1b, and gpt3_7b_mr_dgx_a100_1N8G_tp4_pp1_memory_speed/
golden_values_dev_dgx_a100.json at 2795ebde (the same file, unchanged, under the test's later name up to 6e091e1b);
each test's model_config.yaml beside it and the recipes' GPU counts (tests/test_utils/recipes: nodes 1, gpus 8).
"""

import json
import statistics
import subprocess
from pathlib import Path

import pytest

from symcomm.derivations import bridge_runs, modern

FILE = "megatron_lm_tests_runs.json"
RUNS = {r["id"]: r for r in bridge_runs.load(FILE)["runs"]}
H100 = RUNS["megatron-lm-tests-2026-05-h100-gpt3-7b-tp4-pp1-memory-speed"]
A100 = RUNS["megatron-lm-tests-2025-07-a100-gpt3-7b-tp4-pp1-memory-speed"]
H100_PP4 = RUNS["megatron-lm-tests-2026-05-h100-gpt3-7b-tp1-pp4-memory-speed"]
A100_PP4 = RUNS["megatron-lm-tests-2025-07-a100-gpt3-7b-tp1-pp4-memory-speed"]

MIRROR = Path("/work/.mirror/NVIDIA+Megatron-LM/repo")
H100_AT, A100_AT = "6e091e1b68c6856c9eeea3069cc167061c0acb64", "2795ebde972a24a9f645da39c0a178572d193401"


def _golden(test: str, platform: str) -> str:
    """The golden-values file of a test case (the A100 files under the tests' earlier names, ..._mr_dgx_a100_1N8G_...)."""
    return f"tests/functional_tests/test_cases/gpt/{test}/golden_values_dev_dgx_{platform}.json"


#: each row's golden-values file: (commit, path), the peak bytes it prints from iteration 2 on, and its iteration
#: times (the steady ones: iteration 2's average holds the first iteration's warm-up)
PRINTED = {
    H100["id"]: (H100_AT, _golden("gpt3_7b_tp4_pp1_memory_speed", "h100"), 57143791616,
                 {4: 1.12221, 6: 1.11139, 8: 1.11368, 10: 1.11791, 12: 1.11551, 14: 1.11592, 16: 1.11576, 18: 1.11374,
                  20: 1.11451, 22: 1.1149, 24: 1.11493}),
    A100["id"]: (A100_AT, _golden("gpt3_7b_mr_dgx_a100_1N8G_tp4_pp1_memory_speed", "a100"), 58188115968,
                 {10: 2.57769, 20: 2.596}),
    # gpt3_7b_tp1_pp4_memory_speed: the peak of rank 7, on the last of the 4 pipeline stages
    H100_PP4["id"]: (H100_AT, _golden("gpt3_7b_tp1_pp4_memory_speed", "h100"), 60720852992,
                     {4: 1.16377, 6: 1.14861, 8: 1.14912, 10: 1.15017, 12: 1.14909, 14: 1.14967, 16: 1.15077,
                      18: 1.15255, 20: 1.1501, 22: 1.15138, 24: 1.15105}),
    A100_PP4["id"]: (A100_AT, _golden("gpt3_7b_mr_dgx_a100_1N8G_tp1_pp4_memory_speed", "a100"), 60489064448,
                     {10: 2.9368, 20: 2.94791}),
}


def test_four_check_rows_each_sound():
    assert set(RUNS) == set(PRINTED)
    for run in RUNS.values():
        assert run["role"] == "check" and not bridge_runs.validate(run), run["id"]
        assert modern.out_of_scope(run) is None and not modern.approximations(run)


@pytest.mark.parametrize("run_id", sorted(PRINTED))
def test_memory_and_step_time_as_printed(run_id):
    run = RUNS[run_id]
    _, _, peak, times = PRINTED[run_id]
    assert run["memory_gib"] == round(peak / 2 ** 30, 4)
    step = statistics.median(times.values())
    assert run["step_time_s"] == float(f"{step:.4g}")
    # 8 sequences of 8192 tokens a step over 8 GPUs
    assert run["tokens_per_s_per_gpu"] == round(8 * 8192 / (step * 8), 1)
    assert all(f"{k}: {v:g}" in run["row"] for k, v in times.items()) and str(peak) in run["row"]


def test_the_layout_as_the_yaml_sets_it():
    # tp4_pp1: --tensor-model-parallel-size 4, --pipeline-model-parallel-size 1 on 1 node of 8 GPUs: d = 2;
    # micro-batch 2, global batch 8: 2 micro-batches per data-parallel rank; no --sequence-parallel, no recompute
    for run in (H100, A100):
        assert (run["t"], run["p"], run["v"], run["c"], run["e"], run["d"], run["gpus"]) == (4, 1, 1, 1, 1, 2, 8)
        assert (run["micro_batch"], run["global_batch"], run["seq"]) == (2, 8, 8192)
        # NullTokenizer's 131073 tokens (131072 + its end-of-document token at 2795ebde, 131073 as given at
        # 6e091e1b) padded to a multiple of 128·t = 512
        assert run["model"]["vocab"] == -(-131073 // 512) * 512 == 131584
    # tp1_pp4: t = 1, p = 4 (d = 2), --num-layers-per-virtual-pipeline-stage 1: v = 32/4 = 8; micro-batch 1, global
    # batch 8: 4 micro-batches per data-parallel rank; the vocabulary padded to a multiple of 128·1
    for run in (H100_PP4, A100_PP4):
        assert (run["t"], run["p"], run["v"], run["c"], run["e"], run["d"], run["gpus"]) == (1, 4, 8, 1, 1, 2, 8)
        assert (run["micro_batch"], run["global_batch"], run["seq"]) == (1, 8, 8192)
        assert run["model"]["vocab"] == -(-131073 // 128) * 128 == 131200
        # rank world_size - 1 prints the peak: the last pipeline stage (the pipeline rank varies slowest)
        assert run["memory_stage"] == "last" and run["overlap"]["p2p"] is True
    for run in RUNS.values():
        assert run["sp"] is False and run["recompute"] == "none" and run["distributed_optimizer"] is True


def test_the_words_say_megatron_with_dropout_and_fp32_gradients():
    for run in RUNS.values():
        words = dict(w.split("=") for w in modern.words(run))
        assert (words["framework"], words["zero"], words["grad_dtype"], words["sp"]) == ("megatron", "1", "fp32", "0")
        assert (words["F"], words["gated"], words["tied"], words["h_kv"]) == ("16384", "0", "0", "1024")
        # the yaml sets no dropout: Megatron-LM's 0.1 and 0.1, which eval fills for a model typed by its shape
        assert modern.dropout(run) is True and "dropout" not in words
        assert modern.source_of(run) == "megatron-lm tests" and modern.framework_of(run) == "Megatron-Core"


def test_each_printed_memory_is_checked():
    # step_fit.json's memory rows (python -m symcomm.derivations.fit_step_time --checks-only) hold both rows at the
    # memory their words evaluate to now
    stored = json.loads((Path(modern.__file__).parent / "data" / "step_fit.json").read_text(encoding="utf-8"))
    memory = {r["id"]: r for r in stored["memory"]}
    for run in RUNS.values():
        quantity = "stage_bytes_last" if run.get("memory_stage") == "last" else "memory_per_gpu"
        counted = float(modern.inputs(run, fitting=False).quantities()[quantity]) / 2 ** 30
        row = memory[run["id"]]
        assert row["published_gib"] == run["memory_gib"] and row["framework_option"] == "megatron"
        assert row["predicted_gib"] == pytest.approx(counted, rel=1e-5)


@pytest.mark.skipif(not MIRROR.is_dir(), reason="no local mirror of NVIDIA/Megatron-LM")
@pytest.mark.parametrize("run_id", sorted(PRINTED))
def test_the_printed_values_are_in_the_source(run_id):
    commit, path, peak, times = PRINTED[run_id]
    text = subprocess.run(["git", f"--git-dir={MIRROR}", "show", f"{commit}:{path}"],
                          capture_output=True, text=True, check=True).stdout
    golden = json.loads(text)
    printed = {int(k): v for k, v in golden["mem-max-allocated-bytes"]["values"].items() if k != "1"}
    assert set(printed.values()) == {peak}
    it = {int(k): v for k, v in golden["iteration-time"]["values"].items() if v != "nan"}
    assert {k: v for k, v in it.items() if k in times} == times


@pytest.mark.parametrize("run", [H100_PP4, A100_PP4], ids=lambda r: r["id"])
def test_the_even_split_written_out_is_the_same_layout(run):
    # a row printing the last stage's peak is typed with its even split written out (pipeline_split=first_last,
    # one layer in every one of the p·v = 32 chunks) so that the step model counts that stage apart: the same step
    # time and busiest GPU as the even split it is
    words = modern.words(run)
    assert {"pipeline_split=first_last", "L_first=1", "L_last=1"} <= set(words)
    even = {k: v for k, v in run.items() if k != "memory_stage"}
    assert not any(w.startswith("pipeline_split") for w in modern.words(even))
    split_q, even_q = (modern.inputs(r, fitting=False).quantities() for r in (run, even))
    for name in ("step_time", "memory_per_gpu"):
        assert float(split_q[name]) == pytest.approx(float(even_q[name]), rel=1e-12)
