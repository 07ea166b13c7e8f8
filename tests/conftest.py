"""What every test file shares: what the markers mean, and the ONE rule for a test whose tool is absent.

Markers (registered in pyproject.toml; ``-m "not slow"`` gives a quick run, the default runs them all):

* ``slow`` — minutes, not seconds: fresh docs and kernel builds, the CLI fuzz, simulated hierarchical
  collectives;
* ``torch`` — measures with torch.distributed (gloo): needs ``pip install -e '.[measure]'``;
* ``browser`` — drives the page in headless Chromium: needs selenium, chromium and chromedriver;
* ``wheel`` — builds the wheel and installs it in a fresh venv: runs with SYMCOMM_CI=1 or SYMCOMM_WHEEL=1.

The suite runs on every core (pytest-xdist, ``-n auto --dist loadfile`` in pyproject.toml).  A file's tests
run in one worker, one after the other, so what they share in the process is built once: the module fixtures
(the docs build, the browser, the wheel) and the step models compiled on first use.  A long test that shares
nothing with its file's others may stand in a file of its own, so that one file does not hold one worker
while the other idles (tests/integration/test_readme_measure.py).

The files below that take longest (:data:`LONGEST_FIRST`) are collected first and handed out first (xdist's own
order, most tests first, is turned off in pyproject.toml: ``--no-loadscope-reorder``): a one-test file of a minute
handed out last held one worker while the other idled.

A test that needs a tool this machine lacks is skipped on a developer's machine and FAILS in CI
(``SYMCOMM_CI=1``, set by .ci/run after installing every tool), so CI never passes by skipping.  This
file is the only place that reads SYMCOMM_CI: tests call :func:`absent` (or carry a marker).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import io
import os
import shutil
import subprocess
from pathlib import Path

import pytest

IN_CI = os.environ.get("SYMCOMM_CI") == "1"
#: the source tree, and the tests' own folder (tests/data, tests/tools): one spelling for every test, in
#: whichever wing folder it stands (tests/<wing>/, tests/integration/)
ROOT = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent


#: the files that hold a worker longest (tens of seconds to minutes each in CI, SYMCOMM_CI=1, on 2 cores), longest
#: first: the CPU seconds of their tests (the process and the processes it started and reaped) in one CI-mode run
#: (2026-12-02, after the gloo ranks were forked from one server: tests/tools/cpu_per_test.py; the machine shared,
#: its wall not comparable).  A rank server outlives the test's own process (it is reaped by whoever adopts it), so
#: the two measuring files are counted with every process below them (a child subreaper).  Not asserted
#: anywhere: only the order in which pytest-xdist's --dist loadfile hands whole files to the workers, so that the
#: long ones start first and the short ones fill in beside them; the rest follow in collection order.  That run's
#: 2311 tests took 720 s of CPU in all (920 s before): the wall on 2 cores is at least 360 s whatever the order
#: (the longest file, 199 s, is less than half of it).  A file named here that no longer exists stops the run
#: (pytest_collection_modifyitems below).
LONGEST_FIRST = (
    "integration/test_codegen.py",        # 199 s: three kernel families regenerated with SymPy, the kernels
                                          # against the model (2026-12-02 later, five families, under a load of
                                          # 6-10 on 2 cores, after the kernels' build skipped the step ratios:
                                          # 352 s, the five freshness tests 192 s of it)
    "integration/test_readme.py",         # 114 s: every README command, the step model's refit (66 s) among them
                                          # (the same later run: 191 s, the refit 111 s)
    "planner/test_plan.py",               # 23 s (the same later run: 135 s, so before the wheel)
    "integration/test_wheel.py",          # 47 s: a wheel, a venv, every subcommand and the docs build against it
    "integration/test_site.py",           # 28 s and Chromium's own: the page in headless Chromium
    "integration/test_readme_measure.py", # 26 s: the README's validate: 17 torch ranks (N = 2, 3, 4, 8) forked from
                                          # one server that imported torch once
    "integration/test_measure.py",        # 25 s: the gloo harness, its Ctrl-C and killed-parent runs
    "views/test_export.py",               # 23 s
    "integration/test_docs.py",           # 19 s: a fresh docs build, its plots drawn again, pdflatex, KaTeX
    "views/test_export_js.py",            # 17 s
    "training/test_step_time.py",         # 14 s
    "commands/test_fuzz_cli.py",          # 13 s: the CLI fuzz (1500 examples)
)


def pytest_collection_modifyitems(config, items):
    """The files of :data:`LONGEST_FIRST` first, in its order; every other file after them, as collected (a stable
    sort: each file's tests keep their order, and stay together, so its module fixtures are built once)."""
    missing = [name for name in LONGEST_FIRST if not (TESTS / name).is_file()]
    if missing:
        raise pytest.UsageError(f"tests/conftest.py LONGEST_FIRST names {missing[0]}, which no longer exists: "
                                "rename or drop it there")
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}

    def order(item) -> int:
        try:
            name = Path(str(item.path)).resolve().relative_to(TESTS).as_posix()
        except ValueError:
            return len(rank)
        return rank.get(name, len(rank))
    items.sort(key=order)


def absent(why: str) -> None:
    """This test cannot run here because ``why``: skip it, or fail in CI, where every tool is installed."""
    if IN_CI:
        pytest.fail(f"{why}: required in CI (SYMCOMM_CI=1; .ci/run installs it)", pytrace=False)
    pytest.skip(why)


def _torch_missing() -> str:
    return "" if importlib.util.find_spec("torch") else "torch is not installed (pip install -e '.[measure]')"


def _browser_missing() -> str:
    if importlib.util.find_spec("selenium") is None:
        return "selenium is not installed (pip install selenium)"
    for program in ("chromium", "chromedriver"):
        if not shutil.which(program):
            return f"{program} is not installed (Debian: apt-get install chromium chromium-driver)"
    return ""


#: marker → what is missing for it here ("" when nothing is)
_NEEDS = {"torch": _torch_missing, "browser": _browser_missing}


def pytest_runtest_setup(item):
    for marker, missing in _NEEDS.items():
        if item.get_closest_marker(marker) is not None:
            why = missing()
            if why:
                absent(why)
    if item.get_closest_marker("wheel") is not None and not (IN_CI or os.environ.get("SYMCOMM_WHEEL") == "1"):
        # opt-in, not a missing tool: a wheel and a venv from the registry take minutes
        pytest.skip("builds a wheel and a venv: set SYMCOMM_WHEEL=1 (CI sets SYMCOMM_CI=1)")


def symcomm_command(*argv: str, entry: str = "symcomm", cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``python -m <entry> ARGV`` answered by that module's ``main`` in this process: its exit status and what it
    printed, as the CompletedProcess a subprocess gives (an exception that escapes ``main`` fails the test).  A
    process per call paid ~1 s of CPU for importing the package and SymPy again, for nothing its test checks; the exit
    of a real process (status 2, no traceback) is tested where it is the subject:
    tests/commands/test_cli.py::test_console_script_has_no_traceback."""
    main = importlib.import_module(entry if entry != "symcomm" else "symcomm.__main__").main
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
            (contextlib.chdir(cwd) if cwd is not None else contextlib.nullcontext()):
        code = main(list(argv))
    return subprocess.CompletedProcess(["python", "-m", entry, *argv], code, out.getvalue(), err.getvalue())
