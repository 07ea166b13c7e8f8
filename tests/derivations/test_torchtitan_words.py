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


CP_RUNS = [r for r in RUNS if r["c"] > 1]


@pytest.mark.parametrize("run", CP_RUNS, ids=[r["id"] for r in CP_RUNS])
def test_torchtitans_context_parallel_rows_move_k_v_at_full_width(run):
    # torchtitan/models/llama/model.py at 9dec370a: keys = repeat_kv(xk, n_rep), values = repeat_kv(xv, n_rep), then
    # F.scaled_dot_product_attention, the call context parallel replaces: its ring moves K, V of every query head
    assert "9dec370a" in run["recipe"]
    assert dict(w.split("=", 1) for w in modern.words(run))["gqa"] == "0"


def test_the_repeated_k_v_multiply_the_ring_by_the_heads_per_kv_head():
    # Llama 3.1 8B: 32 query heads, 8 K, V heads (its config.json: num_attention_heads 32, num_key_value_heads 8),
    # so K, V repeated to every head are 32/8 = 4 times the grouped ones: every context-parallel byte 4 times
    import symcomm

    run = next(r for r in CP_RUNS if r["id"] == "torchtitan-2024-12-h100-llama3.1-8b-fsdp2-cp4-fp8-cs-t2")
    words = dict(w.split("=", 1) for w in modern.words(run))
    full = symcomm.evaluate("hybrid", model="llama3.1-8b", hardware=run["hardware"], **words)
    grouped = symcomm.evaluate("hybrid", model="llama3.1-8b", hardware=run["hardware"], **{**words, "gqa": "1"})
    cp = [{t["label"]: t["send"] for t in r["terms"] if t["axis"] == "cp"} for r in (full, grouped)]
    assert cp[0] and cp[0].keys() == cp[1].keys()
    assert all(cp[0][label] == 4 * cp[1][label] for label in cp[0])
