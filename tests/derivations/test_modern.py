"""The modern published runs as eval words (derivations/modern.py): every run is either evaluated through
`symcomm eval hybrid`'s own binding or left out with its reason; the words a user would type give the same
step time on the command line."""

import json
import subprocess
import sys

import pytest

from symcomm.derivations import modern


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
    # Nemotron 3's layers are mostly Mamba-2 blocks (no attention, no MLP of the kind counted here), NVFP4 has
    # no peak or recipe in the model: both refused, never guessed
    assert all("Mamba" in why for rid, why in reasons.items() if "nemotron" in rid)
    assert all("FP4" in reasons[r["id"]] for r in modern.runs() if r["precision"] == "nvfp4" and
               not r["model"]["name"].startswith("nemotron"))
    # every transformer run with bf16 or FP8 and a known layout is in scope
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
    out = subprocess.run([sys.executable, "-m", "symcomm", *words, "--json"], capture_output=True, text=True,
                         check=True, cwd=tmp_path)
    typed = json.loads(out.stdout)["step_time"]
    bound = float(modern.inputs(run, fitting=False).quantities()["step_time"])
    assert typed == pytest.approx(bound, rel=1e-12)
