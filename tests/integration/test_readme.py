"""README.md opens with the two commands a fresh machine runs; CI runs the second one; every command
of its "Use" block runs as written."""

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, symcomm_command


def _commands() -> list[str]:
    block = re.search(r"```sh\n(.*?)```", (ROOT / "README.md").read_text(), re.S).group(1)
    return [line.split("#")[0].strip() for line in block.strip().splitlines()]


def test_readme_opens_with_main_job_and_tests():
    main_job, tests = _commands()[:2]
    assert "build_docs.py" in main_job
    assert tests.endswith("python -m pytest")


def test_ci_runs_the_readme_test_command_verbatim():
    _, tests = _commands()[:2]
    assert tests in (ROOT / ".ci" / "run").read_text().splitlines()


# -- every command of the "Use" block runs as written (issue 22, the newcomer's path) -----------------

#: Use-block lines this file does not run, and why (each is checked elsewhere)
LEFT_OUT = {
    # rewrites symcomm/planner/kerneldata/, committed data of the checkout it is installed from (an editable
    # install); tests/integration/test_codegen.py and test_codegen_moe.py run the same generation and compare it with the
    # committed files
    "python -m symcomm.tools.codegen": "rewrites committed files",
    # measures every evaluator for minutes on a shared machine; docs/speed.md holds the committed run
    "python -m symcomm.tools.bench": "slow",
}
#: lines that measure with torch (the [measure] extra): run only where torch is installed (always in CI)
NEEDS_TORCH = ("symcomm validate", "symcomm measure")
#: the step model's refit: run as written by :func:`test_the_readme_refit_runs_as_written_on_fewer_presets`, on a part
#: of the presets a user's run refits
REFIT = "python -m symcomm.derivations.fit_step_time"


def _use_block() -> list[str]:
    """The commands of the README's "Use" block, comments and comment-only lines left out."""
    text = (ROOT / "README.md").read_text()
    block = re.search(r"^## Use\n+```sh\n(.*?)```", text, re.S | re.M).group(1)
    lines = [line.split("#")[0].strip() for line in block.splitlines()]
    return [line for line in lines if line]


def _argv(line: str) -> list[str]:
    # the installed command's entry point, the same main() as the `symcomm` script, run by this
    # interpreter (PATH may not lead to this environment's script)
    words = shlex.split(line)
    if words[0] == "symcomm":
        return [sys.executable, "-m", "symcomm", *words[1:]]
    assert words[0] == "python", line
    return [sys.executable, *words[1:]]


def _run_in(folder: Path, lines: list[str], in_process: bool = False) -> list[str]:
    """Run lines in order in folder (later lines read what earlier ones write, as a reader's shell
    would); the repository's files they name by a relative path (the sample nccl-tests log) are copied
    in first, so nothing is written into the checkout. Returns one complaint per failing line.

    ``in_process``: each ``symcomm`` line answered by the command's main in this process
    (conftest.symcomm_command: an exception escaping it fails the test), not a Python each (~0.8 s of CPU a line
    for starting Python and importing the package, nothing the line's answer depends on); the console script's own
    process, its exit status and no traceback, is tested in tests/commands/test_cli.py."""
    for line in lines:
        for word in shlex.split(line):
            if "/" in word and not word.startswith(("/", "-")) and (ROOT / word).is_file():
                (folder / word).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(ROOT / word, folder / word)
    problems = []
    for line in lines:
        if in_process:
            words = shlex.split(line)
            assert words[0] == "symcomm", line
            done = symcomm_command(*words[1:], cwd=folder)
        else:
            # the timeout only stops a hung command; it asserts nothing about speed
            done = subprocess.run(_argv(line), cwd=folder, capture_output=True, text=True, timeout=1800)
        if done.returncode != 0 or "Traceback" in done.stderr:
            problems.append(f"{line}\n  exit {done.returncode}\n  {done.stderr.strip()[-600:]}")
    return problems


def test_every_use_line_is_run_or_left_out_with_a_reason():
    lines = _use_block()
    assert len(lines) >= 20, lines   # the block was found and read
    assert set(LEFT_OUT) <= set(lines), "LEFT_OUT names a line the README no longer has"
    assert REFIT in lines, "the README no longer shows the refit: drop its test below"
    # only these two kinds of command: anything else would need its own way of running here
    assert all(line.startswith(("symcomm ", "python -m ")) for line in lines), lines


#: the flags after which a Use line names a file it writes
WRITES = ("-o", "--output", "--plot")


def _chains(lines: list[str]) -> list[list[str]]:
    """The lines in runs of their own, in order: a line that names a file an earlier line writes joins that
    line's run (and its folder); any other starts one: each run a test of its own, that names what failed."""
    chains, writer = [], {}
    for line in lines:
        words = shlex.split(line)
        chain = next((writer[word] for word in words if word in writer), None)
        if chain is None:
            chain = []
            chains.append(chain)
        chain.append(line)
        for flag in WRITES:
            if flag in words:
                writer[words[words.index(flag) + 1]] = chain
    return chains


def _id(chain: list[str]) -> str:
    return " ".join(shlex.split(chain[0])[:3]) + (f" (+{len(chain) - 1})" if len(chain) > 1 else "")


def _run_here() -> list[str]:
    """The Use lines this file runs each in a process of its own: all but those left out, the measuring ones
    (tests/integration/test_readme_measure.py) and the refit (its own test below)."""
    return [line for line in _use_block()
            if line not in LEFT_OUT and line != REFIT and not line.startswith(NEEDS_TORCH)]


RUN_HERE = _chains(_run_here())


def test_the_runs_hold_every_line_in_order():
    lines = _run_here()
    assert sorted(sum(RUN_HERE, [])) == sorted(lines)
    assert all([line for line in lines if line in chain] == chain for chain in RUN_HERE)
    # the calibration's file is read in the run that writes it
    assert any(len(chain) > 1 and "mine.json" in chain[0] for chain in RUN_HERE)


@pytest.mark.slow
@pytest.mark.parametrize("lines", RUN_HERE, ids=_id)
def test_every_readme_command_runs_as_written(tmp_path, lines):
    problems = _run_in(tmp_path, lines, in_process=True)
    assert not problems, "\n".join(problems)
    # what the commands say they write is there, in the folder they ran in
    for line in lines:
        words = shlex.split(line)
        for flag in WRITES:
            if flag in words:
                assert (tmp_path / words[words.index(flag) + 1]).is_file(), line


#: the presets the refit's test fits: the papers' A100 runs, one preset of modern runs (H100: Megatron-Bridge's and
#: torchtitan's) and one with no fitting run (h100-roce, which borrows h100's: its stored constants stay, said)
REFIT_PRESETS = ("a100", "h100", "h100-roce")


@pytest.mark.slow
def test_the_readme_refit_runs_as_written_on_fewer_presets(monkeypatch, capsys):
    """The README's refit line, its module's main on the line's own arguments, as ``python -m`` runs it, on three of
    the presets a user's run refits: one of each kind the report prints.  All of them took ~35 s of CPU, three modern
    presets at ~11 s each (their runs' step models compiled with SymPy) that run the same code on other data; the
    modern fit's own branches are tested with stand-in runs in tests/derivations/test_fit_step_time.py, and the
    stored predictions against today's model on a run of each modern preset in tests/training/test_step_time.py."""
    import importlib

    words = shlex.split(REFIT)
    assert words[:2] == ["python", "-m"]
    module = importlib.import_module(words[2])
    everything = module.systems()
    assert set(REFIT_PRESETS) - {"h100-roce"} < set(everything) and "h100-roce" not in everything, everything
    monkeypatch.setattr(module, "systems", lambda: list(REFIT_PRESETS))
    assert module.main(words[3:]) == 0
    printed = capsys.readouterr().out.splitlines()
    # each preset's report: the fitted ones their constants (those the presets hold: the committed fit is fresh) and
    # leave-one-out errors, the other its stored constants' errors
    from symcomm import presets

    for preset in ("a100", "h100"):
        line = next((line for line in printed if line.startswith(f"{preset}: eta = ")), None)
        assert line, printed
        shown = dict(pair.split(" = ") for pair in line.split(": ", 1)[1].split(" (fitted")[0].split(", "))
        assert shown == {k: f"{v:g}" for k, v in dict(presets.hardware(preset).step_time).items()}, line
    assert sum("all runs" in line and "leave-one-out" in line for line in printed) == 2, printed
    assert any(line.startswith("h100-roce: not fitted (") for line in printed), printed


def test_the_readme_python_example_runs(tmp_path):
    block = re.search(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S).group(1)
    script = tmp_path / "example.py"
    script.write_text(block)
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr


def test_pytest_prints_its_summary_line(tmp_path):
    """The README's test command ends with pytest's summary line ("1 passed, 1 skipped in 0.01s"):
    the project's pytest options plus the command's (and a -q a reader adds) must not reach -qq,
    which hides it. Checked on a two-test folder under this project's pyproject.toml."""
    _, tests = _commands()[:2]
    command = shlex.split(tests.split("&&")[-1])
    assert command[:3] == ["python", "-m", "pytest"], tests
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_two.py").write_text(
        "import pytest\n\ndef test_one():\n    pass\n\ndef test_two():\n    pytest.skip('shown as skipped')\n")
    # the project's options and the one plugin they name (-n: pytest-xdist), not every pytest plugin this machine
    # has installed: those are no part of the project, and loading them in the two runs and their four workers
    # took two thirds of this test's CPU (4.6 s of 6.3 s a run, measured alone)
    env = {**{k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    for extra in ([], ["-q"]):
        done = subprocess.run([sys.executable, *command[1:], "-p", "no:cacheprovider", "-p", "xdist", *extra],
                              cwd=tmp_path, capture_output=True, text=True, env=env, timeout=600)
        last = done.stdout.strip().splitlines()[-1]
        assert done.returncode == 0 and re.search(r"\b1 passed, 1 skipped in \d", last), (extra, done.stdout)
