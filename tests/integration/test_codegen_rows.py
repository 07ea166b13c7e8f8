"""The planner's rows unchanged by its kernels (symcomm/planner/kerneldata, tests/integration/test_codegen.py), and
``symcomm plan`` without SymPy.  Its own file so that pytest-xdist's ``--dist loadfile`` can run it beside the
kernels' freshness (test_codegen.py says why).  No test here times anything."""

import json
import subprocess
import sys

import pytest

from symcomm import presets
from symcomm.planner import Request, plan

from conftest import ROOT
BEFORE = json.loads((ROOT / "tests" / "data" / "plan_rows_before.json").read_text(encoding="utf-8"))


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


@pytest.mark.parametrize("extra", [(), ("--precision", "fp8_tensor"), ("--precision", "mxfp8", "--hardware", "b200"),
                                   ("--attention-kernel", "fa2"), ("--attention-kernel", "triton", "--hardware", "a100")])
def test_symcomm_plan_loads_no_sympy(extra):
    # the default flags, and the FP8 recipes codegen ships (SHIPPED_PRECISIONS): their kernels are data; a named
    # attention kernel runs on the fused core's kernel at its own share (planner.kernels.timed_as; that its rows are
    # eval's numbers: tests/planner/test_plan.py, test_each_rows_eval_command_reproduces_it)
    # the extras' --hardware in place of h100 (an option is given once: runner.Parser)
    hardware = [] if "--hardware" in extra else ["--hardware", "h100"]
    code = ("import sys; from symcomm.__main__ import main; "
            "rc = main(['plan', '--model', 'llama3-70b', '--gpus', '64', '--batch', '64', "
            f"'--top', '3', *{hardware + list(extra)!r}]); assert rc == 0, rc; "
            "assert 'sympy' not in sys.modules, 'symcomm plan imported sympy'")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "ranked by step time" in out.stdout and "no shipped kernel" not in out.stderr


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
