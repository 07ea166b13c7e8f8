"""The planner's kernels (symcomm/planner/kerneldata, graphs written by ``python -m symcomm.tools.codegen``, run by
symcomm.numbers.kernels): never stale, the same whatever PYTHONHASHSEED is, equal to the step model they were built
from, and the planner's rows unchanged by them.  No test here times anything."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from symcomm.tools import codegen
from symcomm.planner import kernelbuild
from symcomm.numbers import kernels
from symcomm import presets
from symcomm.training import steptime
from symcomm.numbers.numeric import bundle
from symcomm.planner import RECOMPUTE, Request, enumerate_layouts, plan
from symcomm.planner.kernels import _base_values, _options, model_attention

from conftest import ROOT
BEFORE = json.loads((ROOT / "tests" / "data" / "plan_rows_before.json").read_text(encoding="utf-8"))
KERNELDATA = ROOT / "symcomm" / "planner" / "kerneldata"


# -- never stale (these four came in with the kernels as data and were lost in a later merge) -------------------

def test_the_committed_files_are_the_families_and_the_index():
    committed = sorted(p.name for p in KERNELDATA.iterdir() if p.name != "__pycache__")
    assert committed == sorted(["index.json"] + [codegen.family_name(k) + ".json" for k in codegen.KINDS]), \
        "run: python -m symcomm.tools.codegen"


def test_the_committed_index_equals_a_fresh_one():
    committed = (KERNELDATA / "index.json").read_text(encoding="utf-8")
    assert committed == codegen.dumps(codegen.index_data()), "run: python -m symcomm.tools.codegen"


@pytest.mark.slow
@pytest.mark.parametrize("kind", codegen.KINDS, ids=codegen.family_name)
def test_committed_kernels_equal_a_fresh_generation(kind):
    # one family per test: its step models built with SymPy (cached in the process: test_kernels_equal_the_step_model
    # below reads a fifth of them again) and walked into a graph, compared as text
    name = codegen.family_name(kind) + ".json"
    committed = (KERNELDATA / name).read_text(encoding="utf-8")
    assert committed == codegen.dumps(codegen.family_data(kind)), \
        f"symcomm/planner/kerneldata/{name} is stale: run python -m symcomm.tools.codegen"


#: a sample of the MoE family's combinations, as graph text: in this process and, by this code, in a fresh one
_SAMPLE = ("kind = (True, False, True, 'mha', 'h'); combos = codegen.combinations(kind)[::17]; "
           "family = {'run_bytes': 2, **dict(codegen.kernel_setting(kind).key(codegen.FAMILY_SETTINGS))}; "
           "text = codegen.dumps(kernelbuild.graph_data(family, [(o, 2) for o in combos]))")


def _sample_text() -> str:
    kind = (True, False, True, "mha", "h")
    combos = codegen.combinations(kind)[::17]
    family = {"run_bytes": 2, **dict(codegen.kernel_setting(kind).key(codegen.FAMILY_SETTINGS))}
    return codegen.dumps(kernelbuild.graph_data(family, [(o, 2) for o in combos]))


@pytest.mark.slow
def test_the_graphs_do_not_depend_on_the_hash_seed():
    # SymPy's own cse iterated over sets (its output followed PYTHONHASHSEED); the graph walk follows SymPy's
    # canonical argument order, so two seeds give the same text.  One seed is this process's own (its step models
    # are already built: the freshness test above read them), the other a fixed one that differs from it, in a
    # fresh process: one SymPy build of the sample instead of two (two fresh processes, seeds 1 and 2)
    code = ("import sys; from symcomm.tools import codegen; from symcomm.planner import kernelbuild; "
            + _SAMPLE + "; sys.stdout.write(text)")
    mine = os.environ.get("PYTHONHASHSEED", "random")            # unset: a random seed, drawn at start-up
    other = "2" if mine == "1" else "1"
    here = _sample_text()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONHASHSEED": other})
    assert out.returncode == 0, out.stderr
    assert out.stdout == here and here.count("\n") > 100, f"PYTHONHASHSEED {mine} and {other} differ"


def test_the_planner_searches_what_the_step_model_offers():
    # one recompute vocabulary: the planner searches the values the hybrid strategy (and so the step model built on
    # it) takes, but op (torchtitan's op-level checkpointing), searched only when --recompute fixes it, so the kernels
    # a cold plan builds and codegen ships stay three recompute modes per combination
    from symcomm.training.strategies import STRATEGIES

    assert RECOMPUTE == ("none", "selective", "full")
    # and block, whose L_rc (layers of each model chunk) is a number of one layout, never searched
    assert STRATEGIES["hybrid"].options["recompute"].allowed == RECOMPUTE + ("op", "block")


# slow: a fifth of a family's step models built with SymPy and compiled together, 3.5-6 s of CPU each beside the
# freshness tests' step models (paired runs, 2026-12-02: 6.2-13.7 s with one compiled function per combination)
@pytest.mark.slow
@pytest.mark.parametrize("name", ["gpt3-175b", "llama3-70b", "mixtral-8x7b", "deepseek-v3"])
def test_kernels_equal_the_step_model(name):
    # every generated combination of this family, every quantity, on every layout of a request
    req = Request(presets.model(name), presets.hardware("h100"), gpus=256, batch=512, seq=4096)
    layouts = enumerate_layouts(req)
    values = {**_base_values(req), **{k: layouts[k].astype(np.float64) for k in kernelbuild.LAYOUT}}
    # the first/last-split combinations read L_first, L_last: the even split's (L/(p·v) layers in every chunk)
    chunks = values["p"] * values["v"]
    values.update(L_first=values["L"] / chunks, L_last=values["L"] / chunks)
    # (gated, tied, moe, attention, q_width)
    kind = (req.model.family != "gpt", bool(req.model.tied), bool(req.model.moe), *model_attention(req.model))
    sample = codegen.combinations(kind)[::5]
    kernel = {options: kernels.shipped(options, 2).as_tuple() for options in sample}
    # the same quantities of the SymPy step models, every combination's compiled in one numpy function (the
    # combinations share most of their parts, compiled once: one function per combination cost 2-3 times the CPU)
    models = [steptime.step_model(2, **dict(o)).quantities(ratios=False) for o in sample]   # no kernel reads ratios
    wanted = bundle({(i, quantity): q[quantity] for i, (options, q) in enumerate(zip(sample, models))
                     for quantity in kernel[options][1]})(**values)
    checked = 0
    for i, options in enumerate(sample):
        params, names, function = kernel[options]
        got = function(*[values[p] for p in params])
        for quantity, value in zip(names, got):
            want = np.broadcast_to(wanted[i, quantity], layouts["t"].shape)
            # a quantity that is the remainder of larger terms (an exposed share: a max(0, x − y)) carries their
            # rounding, so equal within 1e-12 of the array's largest value as well as relatively
            scale = float(np.max(np.abs(want))) if want.size else 0.0
            np.testing.assert_allclose(np.broadcast_to(value, want.shape), want, rtol=1e-12, atol=1e-12 * scale)
            checked += 1
    assert checked > 50


def test_combinations_are_the_planners():
    req = Request(presets.model("llama3-8b"), presets.hardware("a100"), gpus=16, batch=32, seq=2048)
    from symcomm.planner import SCHEMES
    key = _options(req, SCHEMES[3], "selective", 1, "interleaved")
    assert key in codegen.combinations(("1", "0", "0", "mha", "h"))
    assert kernels.shipped(key, 2) is not None
    assert kernels.shipped(key, 4) is None                       # fp32 elements: compiled in the process


@pytest.mark.parametrize("case", BEFORE["cases"], ids=lambda c: f"{c['request']['model']}-{c['request']['gpus']}")
def test_plan_rows_unchanged(case):
    r = dict(case["request"])
    model, hardware = presets.model(r.pop("model")), presets.hardware(r.pop("hardware"))
    if "compare" in r:
        r["compare"] = tuple(tuple(x) for x in r["compare"])
    got = plan(Request(model, hardware, **r), 20)
    rows = got.rows(10) + ([got.compare] if got.compare else [])
    want = case["rows"] + ([case["compare"]] if "compare" in case else [])
    assert len(rows) == len(want)
    for row, before in zip(rows, want):
        for key, value in before.items():
            if isinstance(value, float):
                assert row[key] == pytest.approx(value, rel=1e-12, abs=0), key
            else:
                assert row[key] == value, key
        # the parts of the shown setting add up to its step
        parts = row["compute_time"] + row["exposed_comm_time"] + row["bubble_time"] + row["optimizer_time"]
        assert parts == pytest.approx(row["step_time"], rel=1e-12)


def test_symcomm_plan_loads_no_sympy():
    code = ("import sys; from symcomm.__main__ import main; "
            "rc = main(['plan', '--model', 'llama3-70b', '--gpus', '64', '--hardware', 'h100', '--batch', '64', "
            "'--top', '3']); assert rc == 0, rc; "
            "assert 'sympy' not in sys.modules, 'symcomm plan imported sympy'")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "ranked by step time" in out.stdout


def test_symcomm_plan_errors_like_the_cli(capsys):
    from symcomm.__main__ import main
    from symcomm.commands.main import main as cli_main

    argv = ["plan", "--model", "llama3-70b", "--gpus", "64", "--hardware", "h100", "--batch", "64", "--tp", "3"]
    assert main(argv) == 2
    light = capsys.readouterr().err
    assert cli_main(argv) == 2
    assert light == capsys.readouterr().err and light.startswith("symcomm: error: --tp=3 is not allowed")
    assert main(argv[:-2] + ["--bogus"]) == 2
    light = capsys.readouterr().err
    assert cli_main(argv[:-2] + ["--bogus"]) == 2
    assert light == capsys.readouterr().err
