"""The torchtitan check runs as eval hybrid words (derivations/modern.py): the settings this branch added, read from
each run's own record (its recipe text and table fields in derivations/data/torchtitan_runs.json)."""

import pytest

from symcomm.derivations import modern

RUNS = [r for r in modern.runs("check") if r["id"].startswith("torchtitan")]


@pytest.mark.parametrize("run", RUNS, ids=[r["id"] for r in RUNS])
def test_torchtitan_words_follow_the_record(run):
    words = dict(w.split("=", 1) for w in modern.words(run))
    # torchao float8 rowwise is its own recipe (torchao Float8LinearRecipeName.ROWWISE), not blockwise FP8
    assert (words["precision"] == "fp8_rowwise") == (run["precision"] == "fp8-rowwise")
    # the benchmark tables say where torch.compile ran; torchtitan runs eager otherwise (training.compile false)
    assert words["compile"] == ("1" if "torch.compile" in run["recipe"] else "0")
    # PyTorch's context parallel: fp32 dK, dV passed on every ring step (ring_flash_attn's communication)
    assert (words.get("cp") == "ring_flash_attn") == (run["c"] > 1)


def test_the_eager_and_compiled_rows_of_one_layout_are_two_commands():
    # 2024-12 Table 1: FSDP eager and FSDP + torch.compile, the same layout measured 2.843 s and 2.457 s
    eager, compiled = (next(r for r in RUNS if r["id"] == name) for name in (
        "torchtitan-2024-12-h100-llama3.1-8b-fsdp-bf16-t1", "torchtitan-2024-12-h100-llama3.1-8b-fsdp-compile-bf16-t1"))
    assert modern.command(eager) != modern.command(compiled)
