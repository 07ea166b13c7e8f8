"""The modern published runs as eval words (derivations/modern.py): every run is either evaluated through
`symcomm eval hybrid`'s own binding or left out with its reason; the words a user would type give the same
step time on the command line."""

import json

import pytest

from symcomm.derivations import modern

from conftest import symcomm_command


def test_every_run_is_in_scope_and_binds_or_says_why():
    for run in modern.runs():
        why = modern.out_of_scope(run)
        if why is not None:
            assert why.strip(), run["id"]
            continue
        inputs = modern.inputs(run)               # raises InputError, naming the word, if the words do not bind
        assert inputs.options["pipeline_split"] in ("even", "first_last"), run["id"]


def test_what_is_out_of_scope():
    reasons = {run["id"]: modern.out_of_scope(run) for run in modern.runs()}
    # Nemotron 3's hybrid Mamba layers (mamba=1) and Super's LatentMoE (moe_latent=1) are held: all 14 rows in scope;
    # NVFP4 is a recipe the model holds (precision=nvfp4); Nemotron-H 56B (dgxc-benchmarking 25.05.04: 7 rows), a
    # dense hybrid no preset holds, is typed by its shape (tests/derivations/test_dgxc_2505_runs.py)
    hybrid = {r["id"] for r in modern.runs() if "hybrid" in r["model"]}
    assert len(hybrid) == 14 + 7 and all(reasons[rid] is None for rid in hybrid)
    nvfp4 = [r["id"] for r in modern.runs() if r["precision"] == "nvfp4" and "hybrid" not in r["model"]]
    assert len(nvfp4) == 3 and all(reasons[rid] is None for rid in nvfp4)
    # every transformer run with bf16, FP8 or NVFP4 and a known layout is in scope
    assert sum(why is None for why in reasons.values()) >= 100


def test_a_layout_string_becomes_a_first_last_split():
    # DeepSeek-V3 on p = 4, v = 4 (Megatron-Bridge's layout Et*4|(t*4|)*14tmL): 16 chunks of 4 layers but the last,
    # which holds 1 layer, the MTP block and the loss; 4 + 14·4 + 1 = 61 layers
    run = next(r for r in modern.runs() if r["id"] == "bridge-26.04.01-gb200-deepseek-v3-fp8-mx")
    assert run["pipeline_layout"]["layers_per_chunk"] == [4] * 15 + [1]
    words = dict(w.split("=") for w in modern.words(run))
    assert (words["pipeline_split"], words["L_first"], words["L_last"]) == ("first_last", "4", "1")
    assert (words["schedule"], words["v"], words["p"]) == ("interleaved", "4", "4")


def test_an_even_split_needs_no_split_words():
    # Llama 3 8B on one stage: nothing to split
    run = next(r for r in modern.runs() if r["model"]["name"] == "llama3-8b" and r["p"] == 1)
    assert not any(w.startswith(("pipeline_split", "L_first")) for w in modern.words(run))


@pytest.mark.slow
@pytest.mark.parametrize("run_id", ["bridge-26.04.01-gb200-deepseek-v3-fp8-mx",
                                    "bridge-25.11-h100-llama3-70b-fp8cs",
                                    # a model no preset holds, typed by its shape (no --model): Φ derived by the command
                                    "megatron-lm-2024-07-h100-gpt-70b-t8-p2-d48"])
def test_the_typed_command_gives_the_fits_number(run_id, tmp_path):
    run = next(r for r in modern.runs() if r["id"] == run_id)
    words = modern.command(run).split()[1:]            # symcomm eval hybrid --model ... --hardware ... KEY=VALUE
    out = symcomm_command(*words, "--json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    typed = json.loads(out.stdout)["step_time"]
    bound = float(modern.inputs(run, fitting=False).quantities()["step_time"])
    assert typed == pytest.approx(bound, rel=1e-12)


#: every Qwen3-30B-A3B row as NVIDIA-NeMo/Megatron-Bridge docs/performance-summary-archive.md@067f987df prints it
#: (line: GPUs, GBS, MBS, tokens/s/GPU, model TFLOP/s/GPU), read from the table, not from the data files: the rows
#: whose fit errors swing by release (-57 % for 25.11, +82 % for 26.04.01 on H100) are typed as printed; 26.02's table
#: (v0.3.0) prints 9691 and 5113 for B200 and H100 at MBS 1, so 25.11's halved rates are no misprint either
QWEN3_30B_PRINTED = {
    "bridge-25.09-gb200-qwen3-30b-a3b-fp8cs": (611, 8, 512, 4, 22775, 524),
    "bridge-25.09-gb200-qwen3-30b-a3b-fp8mx": (611, 8, 512, 4, 23723, 546),
    "bridge-25.09-b200-qwen3-30b-a3b-fp8cs": (621, 8, 512, 1, 18066, 416),
    "bridge-25.09-h100-qwen3-30b-a3b-fp8cs": (632, 16, 512, 2, 10494, 241),
    "bridge-25.11-gb200-qwen3-30b-a3b-fp8mx": (571, 8, 512, 4, 23766, 547),
    "bridge-25.11-b200-qwen3-30b-a3b-fp8mx": (582, 8, 512, 1, 9299, 214),
    "bridge-25.11-h100-qwen3-30b-a3b-fp8cs": (593, 16, 512, 2, 5275, 121),
    "bridge-26.04.01-gb200-qwen3-30b-a3b-fp8-mx": (245, 8, 512, 4, 26112, 599),
    "bridge-26.04.01-b200-qwen3-30b-a3b-fp8-mx": (247, 8, 512, 4, 27136, 619),
    "bridge-26.04.01-h100-qwen3-30b-a3b-fp8-cs": (248, 16, 1024, 1, 8960, 206),
    "bridge-26.06-gb200-qwen3-30b-a3b-fp8-mx": (130, 8, 512, 4, 40706, 936),
    "bridge-26.06-h100-qwen3-30b-a3b-fp8-cs": (132, 16, 1024, 1, 8826, 203),
    "bridge-26.06.01-gb200-qwen3-30b-a3b-fp8-mx": (65, 8, 512, 4, 40960, 937),
}


def test_the_qwen3_30b_rows_are_typed_as_printed():
    runs = {r["id"]: r for r in modern.runs() if r["model"]["name"] == "qwen3-30b-a3b" and r["id"].startswith("bridge-")}
    assert set(runs) == set(QWEN3_30B_PRINTED)
    for run_id, (_, gpus, gbs, mbs, tokens, tflops) in QWEN3_30B_PRINTED.items():
        run = runs[run_id]
        assert (run["gpus"], run["global_batch"], run["micro_batch"], run["seq"]) == (gpus, gbs, mbs, 4096), run_id
        assert (run["tokens_per_s_per_gpu"], run["model_tflops_per_gpu"]) == (tokens, tflops), run_id
        # step time = GBS · seq / (tokens/s/GPU · GPUs), 4 significant digits (the data's convention)
        assert run["step_time_s"] == float(f"{gbs * 4096 / (tokens * gpus):.4g}"), run_id


def test_each_moe_run_is_typed_with_the_dispatcher_its_recipe_runs():
    runs = {r["id"]: r for r in modern.runs()}
    # 25.11 H100: alltoall, force-balanced dropless (the host waits for the counts in every MoE layer)
    assert "dispatcher=alltoall" in modern.words(runs["bridge-25.11-h100-qwen3-30b-a3b-fp8cs"])
    # 25.09 H100, same layout: tokendrop padded to capacity (moe_pad_expert_input_to_capacity), constant splits
    assert "dispatcher=alltoall_padded" in modern.words(runs["bridge-25.09-h100-qwen3-30b-a3b-fp8cs"])
    # 26.04.01 H100: flex dispatcher, hybridep backend over EP 16 on two 8-GPU nodes; 25.09 H100 DeepSeek-V3: deepep
    assert "dispatcher=hybridep" in modern.words(runs["bridge-26.04.01-h100-qwen3-30b-a3b-fp8-cs"])
    assert "dispatcher=deepep" in modern.words(runs["bridge-25.09-h100-deepseek-v3-fp8cs-dropless"])
    # what stays unmodelled is said: the host's idle time beyond the count exchange, dropless runs only
    idle = "host wait before every MoE layer's dispatch"
    assert any(idle in a for a in modern.approximations(runs["bridge-25.11-h100-qwen3-30b-a3b-fp8cs"]))
    assert not any(idle in a for a in modern.approximations(runs["bridge-25.09-h100-qwen3-30b-a3b-fp8cs"]))


#: the rows whose disagreement with the model has a cause their sources name (the data's known_cause), by hand from
#: NVIDIA-NeMo/Megatron-Bridge: issue 1998 (Qwen3-30B-A3B's 25.11 dropless regression on H100 and B200), PR 1760
#: (Qwen3-235B-A22B's 25.11 B200 regression, a2a overlap's CPU overhead), and the 26.06 GB200 MXFP8 MoE recipes'
#: fused grouped MLP and full-iteration CUDA graphs (scripts/performance/configs at v0.5.0 against v0.4.2); and
#: torchtitan's 2025-06 float8 rowwise rows, whose table notes their low baseline (pytorch/torchtitan issue 1207)
KNOWN_CAUSES = {
    **{f"torchtitan-2025-06-h100-llama3.1-{size}-{layout}-fp8-rowwise-{tp}": ("check", "report #1207")
       for size, layout in (("8b", "fsdp8-tp8"), ("70b", "fsdp32-tp8")) for tp in ("vanilla", "asynctp")},
    "bridge-25.11-h100-qwen3-30b-a3b-fp8cs": ("regression", "report #1998"),
    "bridge-25.11-b200-qwen3-30b-a3b-fp8mx": ("regression", "report #1998"),
    "bridge-25.11-b200-qwen3-235b-a22b-fp8mx": ("regression", "PR 1760"),
    **{f"bridge-{release}-gb200-{model}-fp8-mx": ("regression" if (release, model) == ("26.06.01", "gpt-oss-120b")
                                                  else "check", "cutedsl_fused_grouped_mlp")
       for release in ("26.06", "26.06.01")
       for model in ("qwen3-30b-a3b", "qwen3-235b-a22b", "deepseek-v3", "gpt-oss-120b")},
    # the Megatron-MoE-ModelZoo's table and its launch script disagree on the 235B FSDP layout (TP 2 against TP=1)
    "modelzoo-2025-05-h100-qwen3-235b-a22b-tp2-ep8-fsdp128-deepep": ("check", "run_235b.sh"),
    # KempnerForge's README sets its 8-GPU 70B point apart (memory-bound, 'a misleadingly low baseline')
    "kempnerforge-2026-06-h200-70b-tp4-fsdp2": ("regression", "misleadingly low baseline"),
}


def test_the_rows_with_a_known_cause_say_it_and_keep_their_role():
    from symcomm.derivations import fit_step_time

    runs = {r["id"]: r for r in modern.runs()}
    found = fit_step_time.known_causes()
    assert set(found) == set(KNOWN_CAUSES)
    for run_id, (role, source) in KNOWN_CAUSES.items():
        # said, never corrected for: the run stays in scope, in its role, with the source its cause names
        assert modern.out_of_scope(runs[run_id]) is None, run_id
        assert runs[run_id]["role"] == found[run_id]["role"] == role, run_id
        assert source in found[run_id]["cause"], run_id
    # 26.06.01's GPT-OSS row also carries its table's footnote: NVIDIA/cudnn-frontend issue 256
    assert "cudnn-frontend GitHub report #256" in found["bridge-26.06.01-gb200-gpt-oss-120b-fp8-mx"]["cause"]
    assert "cudnn-frontend" not in found["bridge-26.06-gb200-gpt-oss-120b-fp8-mx"]["cause"]


def test_the_published_regressions_meet_the_printed_rows():
    runs = {r["id"]: r for r in modern.runs()}
    # issue 1998: "the perf in 25.11 is 2X slower than 25.09" for Qwen3-30B-A3B on H100 and B200, same layouts
    for system, old, new in (("h100", "fp8cs", "fp8cs"), ("b200", "fp8cs", "fp8mx")):
        before = runs[f"bridge-25.09-{system}-qwen3-30b-a3b-{old}"]
        after = runs[f"bridge-25.11-{system}-qwen3-30b-a3b-{new}"]
        assert (before["t"], before["p"], before["v"], before["e"], before["micro_batch"]) == \
               (after["t"], after["p"], after["v"], after["e"], after["micro_batch"]), system
        assert 1.9 < before["tokens_per_s_per_gpu"] / after["tokens_per_s_per_gpu"] < 2.1, system
    # PR 1760: the 25.11 B200 Qwen3-235B-A22B MXFP8 recipe's step time "20.1s" (3 significant digits)
    assert abs(runs["bridge-25.11-b200-qwen3-235b-a22b-fp8mx"]["step_time_s"] - 20.1) <= 0.05 + 1e-9
    # the 26.06.01 GPT-OSS row (the footnoted regression) against 26.06's, the same recipe: 18304 against 28947
    slow, fast = runs["bridge-26.06.01-gb200-gpt-oss-120b-fp8-mx"], runs["bridge-26.06-gb200-gpt-oss-120b-fp8-mx"]
    assert modern.command(slow) == modern.command(fast)
    assert (slow["tokens_per_s_per_gpu"], fast["tokens_per_s_per_gpu"]) == (18304, 28947)


def test_a_known_cause_is_shown_with_its_rows_error():
    from symcomm.derivations import step_time

    results = {"systems": {"h100": {"runs": [{"id": "a+b", "error": 0.25, "loo_error": 0.5}]}},
               "checks": {"gb200": {"runs": [{"id": "c", "error": -0.125}]}}}
    # a fitted run merged with another release's (one command, the median of their times): in sample and left out
    assert step_time._row_error(results, "b", "h100", "fit") == "+25.0 % (LOO +50.0 %), median of 2 published rows of one command"
    assert step_time._row_error(results, "c", "gb200", "check") == "-12.5 %"
    assert step_time._row_error(results, "c", "h100", "fit") == "—"
