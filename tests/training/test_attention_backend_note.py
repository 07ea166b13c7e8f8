"""The note eval gives where its fused attention core rests on a Transformer Engine version: on compute capability
10.x (B200, GB200) above head dimension 128, TE runs its cuDNN fused core only from v2.5 on (71c76b6b) and takes no
FlashAttention when the query/key and value heads differ (MLA), so an older TE runs its unfused core, which flash=0
times.  The expected cases come from that rule and the models' head sizes, not from the note's code: DeepSeek-V3's
MLA heads are 128 + 64 = 192 wide for query and key and 128 for value (DeepSeek-V3 Technical Report, §4.2:
d_h = 128, d_h^R = 64); Llama 3.1 70B's 8192 / 64 = 128.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from types import SimpleNamespace

import pytest

from symcomm import presets
from symcomm.base import notes
from symcomm.training import answers, hybridfast
from symcomm.training.frameworks import blackwell_head_dim_note
from conftest import ROOT

GB200, B200, H100 = presets.hardware("gb200"), presets.hardware("b200"), presets.hardware("h100")
DEEPSEEK = presets.model("deepseek-v3")
LLAMA = presets.model("llama3.1-70b")


def test_mla_on_blackwell_under_transformer_engine_names_the_version_and_flash_0():
    said = blackwell_head_dim_note("megatron", GB200, DEEPSEEK, True, "fused")
    assert "192 (query, key) and 128 (value)" in said and "v2.5" in said and "flash=0 times" in said
    assert "FlashAttention takes no MLA" in said and "71c76b6b" in said
    assert blackwell_head_dim_note("megatron_fsdp", B200, DEEPSEEK, True, "fused")


@pytest.mark.parametrize("framework, hardware, model, flash, kernel", [
    ("megatron", GB200, DEEPSEEK, False, "fused"),     # flash=0 typed: the unfused core is what is timed
    ("megatron", H100, DEEPSEEK, True, "fused"),       # compute capability 9.0: cuDNN's fused core up to 256
    ("megatron", GB200, LLAMA, True, "fused"),         # head dimension 128: no limit
    ("fsdp2", GB200, DEEPSEEK, True, "fused"),         # PyTorch's SDPA, not Transformer Engine
    ("deepspeed", GB200, DEEPSEEK, True, "fused"),
    ("megatron", GB200, DEEPSEEK, True, "fa2"),        # a kernel named by the user
    ("megatron", GB200, None, True, "fused"),          # no model: no head size to read
])
def test_no_note_where_the_rule_does_not_reach(framework, hardware, model, flash, kernel):
    assert blackwell_head_dim_note(framework, hardware, model, flash, kernel) == ""


def test_a_wide_head_without_mla_says_one_width_and_no_flashattention_clause():
    # a 192-wide head (Nemotron-4 340B's 18432 / 96) with equal query, key and value widths: FlashAttention may run it
    wide = dataclasses.replace(LLAMA, head_dim=192)
    said = blackwell_head_dim_note("megatron", GB200, wide, True, "fused")
    assert "head dimension 192 on" in said and "FlashAttention takes no MLA" not in said


def _eval(words, hardware):
    """(the generated path's notes, None where it steps aside for a setting it holds no kernel for; the general
    path's notes)."""
    args = SimpleNamespace(name="hybrid", assignments=list(words), algorithm=None, dtype=None, backend=None,
                           model="deepseek-v3", model_config=None, hardware=hardware)
    with notes.collected() as said:
        try:
            hybridfast.answer(args)
        except hybridfast.Fallback:
            said = None
    with notes.collected() as said_general:
        answers.eval_payload(args)
    return None if said is None else [n.text for n in said], [n.text for n in said_general]


def _heads(said):
    return [n for n in said if n.startswith("flash=1 times")]


LAYOUT = ("t=1", "p=1", "d=8", "c=1", "e=8", "b=64", "m=8", "s=4096", "moe=1")


def test_eval_says_it_on_gb200_only_and_both_paths_alike():
    fast, general = _eval(LAYOUT, "gb200")
    assert fast is not None and len(_heads(fast)) == 1 and _heads(fast) == _heads(general)
    for words, hardware in ((LAYOUT + ("flash=0",), "gb200"), (LAYOUT, "h100")):
        fast, general = _eval(words, hardware)
        assert _heads(general) == [] and (fast is None or _heads(fast) == [])


def test_plan_says_it_for_its_fused_core_on_gb200_not_on_h100():
    def plan_notes(hardware, gpus):
        done = subprocess.run([sys.executable, "-m", "symcomm", "plan", "--model", "deepseek-v3", "--hardware", hardware,
                               "--gpus", str(gpus), "--batch", "4096", "--seq", "4096", "--top", "1"],
                              capture_output=True, text=True, cwd=ROOT, timeout=300)
        assert done.returncode == 0, done.stderr[-500:]
        return done.stderr
    assert "flash=1 times Transformer Engine's fused attention core at head dimension 192" in plan_notes("gb200", 576)
    assert "flash=1 times" not in plan_notes("h100", 1024)
