"""Refusals and notes an outsider's test asked for (stop 69): each a setting a framework does not run, or a value the
model cannot read, that eval priced as a confident number."""

import subprocess
import sys

import pytest

import symcomm
from symcomm.base.errors import InputError

LAYOUT = ["--model", "llama3-70b", "--hardware", "h100", "t=8", "p=4", "d=8", "c=1", "b=256", "m=32", "s=8192", "sp=1"]


def _eval(*words):
    return subprocess.run([sys.executable, "-m", "symcomm", "eval", "hybrid", *LAYOUT, *words],
                          capture_output=True, text=True)


def _refused(answer, *phrases):
    assert answer.returncode == 2, answer.stdout[-300:]
    line = answer.stderr.strip()
    assert "\n" not in line and "Traceback" not in line, line
    for phrase in phrases:
        assert phrase in line, line


def test_an_interleaved_schedule_of_one_chunk_is_refused():
    # Megatron-LM takes a virtual pipeline size of 1 as none and runs 1F1B (arguments.py); priced as interleaved it
    # held 2p - 1 micro-batches in flight on the first stage where 1F1B holds p (42.7 GiB of activations, not 24.4)
    _refused(_eval("schedule=interleaved", "v=1"), "v=1", "1F1B", "schedule=1f1b")


def test_more_bf16_layers_than_layers_is_refused():
    # L_bf16 = 1000 of L = 80 made the FP8 layers' share (L - L_bf16)/L negative: a 36 s step where bf16 gives 9 s
    _refused(_eval("precision=fp8_tensor", "bf16_layers=1", "L_bf16=1000"), "L_bf16=1000", "L=80")
    assert _eval("precision=fp8_tensor", "bf16_layers=1", "L_bf16=80").returncode == 0


@pytest.mark.parametrize("framework,zero", [("deepspeed", 2), ("deepspeed", 3), ("fsdp", 3)])
def test_an_fp8_parameter_gather_is_refused_where_the_framework_has_none(framework, zero):
    # DeepSpeed's ZeRO gathers 16-bit partitions (ZeRO++ quantizes to int8), PyTorch FSDP its flat parameters in
    # their dtype: the gather was halved to "[fp8]"
    answer = subprocess.run([sys.executable, "-m", "symcomm", "eval", "hybrid", "--model", "llama3-8b", "--hardware",
                             "h100", f"framework={framework}", f"zero={zero}", "precision=fp8_tensor",
                             "fp8_param_gather=1", "d=8", "t=1", "p=1", "c=1", "b=64", "m=8", "s=4096"],
                            capture_output=True, text=True)
    _refused(answer, "fp8_param_gather=1", f"framework={framework}")


def test_the_interleaved_first_last_split_says_what_it_counts():
    # L_first, L_last are chunk counts under interleaving; Megatron's --decoder-first-pipeline-num-layers sizes a
    # stage: an outsider typed the flags' 16 as L_first=16 with v = 2
    answer = _eval("schedule=interleaved", "v=2", "pipeline_split=first_last", "L_first=16", "L_last=16")
    assert answer.returncode == 0, answer.stderr
    assert "--decoder-first-pipeline-num-layers" in answer.stderr and "model chunks" in answer.stderr


def test_a_bool_is_refused_where_the_command_line_has_no_word_for_it():
    layout = dict(model="llama3-8b", hardware="h100", d=8, t=1, p=1, c=1, b=64, m=8)
    with pytest.raises(InputError, match="zero=True"):
        symcomm.evaluate("hybrid", **layout, zero=True)        # ran as zero=1 (True == 1)
    with pytest.raises(InputError, match="d=True"):
        symcomm.evaluate("hybrid", **{**layout, "d": True})    # ran one GPU
    # a switch takes a bool: sp=True is sp=1
    assert symcomm.evaluate("hybrid", **layout, sp=True)["step_time"] == symcomm.evaluate("hybrid", **layout, sp=1)["step_time"]


def test_a_step_that_leaves_a_floats_range_names_the_sizes():
    answer = subprocess.run([sys.executable, "-m", "symcomm", "eval", "hybrid", "--model", "llama3-8b", "--hardware",
                             "h100", "framework=fsdp2", "zero=3", "d=2**60", "b=2**60", "t=1", "p=1", "c=1", "m=1"],
                            capture_output=True, text=True)
    _refused(answer, "d=1.15e+18", "b=1.15e+18")


def test_the_flex_dispatcher_needs_an_expert_parallel_group():
    # Megatron-Core's MoEFlexTokenDispatcher asserts TPxEP > 1 (token_dispatcher.py), its expert TP 1 here: e = 1
    # was priced as a DeepEP dispatch no run makes; plan leaves e = 1 out of its search
    answer = subprocess.run([sys.executable, "-m", "symcomm", "eval", "hybrid", "--model", "mixtral-8x7b", "--hardware",
                             "h100", "dispatcher=deepep", "expert_tp=1", "t=1", "p=1", "c=1", "d=16", "e=1", "b=64",
                             "m=4", "s=4096"], capture_output=True, text=True)
    _refused(answer, "dispatcher=deepep with e=1", "e ≥ 2")
    from symcomm import presets
    from symcomm.planner.layouts import enumerate_layouts
    from symcomm.planner.request import Request

    req = Request(model=presets.model("mixtral-8x7b"), hardware=presets.hardware("h100"), gpus=16, batch=64, seq=4096,
                  gpus_per_node=8, dispatcher="deepep")
    es = set(enumerate_layouts(req)["e"].tolist())
    assert es and 1 not in es, es


def _plan(*words):
    return subprocess.run([sys.executable, "-m", "symcomm", "plan", "--model", "llama3.1-8b", "--gpus", "64",
                           "--batch", "256", "--seq", "8192", "--top", "1", "--json", *words],
                          capture_output=True, text=True)


def test_plan_takes_the_fp8_peak_its_refusal_asks_for():
    # h100-gt's source only bounds its peaks: plan asked for peak_fp8= and then refused the word
    asked = _plan("--hardware", "h100-gt", "--peak", "900e12", "--precision", "fp8_tensor")
    _refused(asked, "peak_fp8")
    given = _plan("--hardware", "h100-gt", "--peak", "900e12", "--precision", "fp8_tensor", "peak_fp8=1800e12")
    assert given.returncode == 0, given.stderr[-400:]


def test_a_compare_that_matches_nothing_names_its_keys():
    # sp=1 needs t > 1: the message named --sp, --recompute, --zero and --framework whatever was typed
    _refused(_plan("--hardware", "h100", "--compare", "sp=1,t=1"), "leaving out sp=1 or t=1")
