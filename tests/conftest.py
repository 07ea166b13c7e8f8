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
import gc
import importlib
import importlib.util
import io
import os
import shutil
import signal
import subprocess
import threading
from pathlib import Path

import pytest

# SymPy keeps the last 1000 expressions it built and the answers about them (SYMPY_CACHE_SIZE, read when sympy is
# first imported: after this file, before any test module); the suite builds the step models of every option
# combination again and again, as build_docs.py and python -m symcomm.tools.codegen do, and sets what they set.
# Paired runs (SymPy 1.14, 2026-12-03, -n 0, load 5-7): test_codegen, planner/test_plan, training/test_step_time and
# test_hybridfast 167.6 s of CPU with 1000, 141.8 s with 20000.  The processes the tests start inherit it; a value in
# the environment wins.
os.environ.setdefault("SYMPY_CACHE_SIZE", "20000")

IN_CI = os.environ.get("SYMCOMM_CI") == "1"
#: the source tree, and the tests' own folder (tests/data, tests/tools): one spelling for every test, in
#: whichever wing folder it stands (tests/<wing>/, tests/integration/)
ROOT = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent


#: the files that hold a worker longest (tens of seconds to a minute each in CI, SYMCOMM_CI=1, on 2 cores), longest
#: first: the wall seconds their tests held a worker in one quiet CI-mode run (2026-12-02 18:24 UTC, the merged tree of
#: that hour, load average under 1 before it: tests/tools/cpu_per_test.py's "wall", summed per file; the whole run 282 s
#: on 2 workers, 450 s of CPU, the workers held 266 and 260 s).  Wall, not CPU: what the order balances is how long a
#: worker is held, and a browser's or a rank server's processes (Chromium under chromedriver, the torch ranks forked
#: from one server) hold it without counting in the worker's CPU (test_site: 35 s CPU, 69 s held).  The three codegen
#: files (test_codegen.py split in three, 2026-12-03: it held one worker 95 s, a third of the run) are placed by their
#: CPU in a CI-mode run of that day (cpu_per_test.py, self + children: 24.3, 22.9 and 18.8 s; the machine was shared,
#: load 7-9, so its walls were three times the quiet ones and are not used) times the unsplit file's quiet wall per
#: CPU second (95 / 78).  Not asserted anywhere: only the order in which pytest-xdist's --dist loadfile hands whole
#: files to the workers, so that the long ones start first and the short ones fill in beside them; the rest follow in
#: collection order.  A file named here that no longer exists stops the run (pytest_collection_modifyitems below).
LONGEST_FIRST = (
    "integration/test_site.py",           # 69 s (35 s CPU, the rest Chromium's): the page in headless Chromium
    "planner/test_plan.py",               # 43 s: the rows' eval commands among them
    "commands/test_fuzz_cli.py",          # 37 s: the CLI fuzz
    "integration/test_wheel.py",          # 34 s: a wheel, a venv, every subcommand and the docs build against it
    "integration/test_codegen_moe.py",    # ~30 s: the MoE kernel families of width h regenerated with SymPy, their
                                          # kernels against the model, the hash seed
    "integration/test_codegen.py",        # ~28 s: the other three families, their kernels against the model
    "integration/test_readme_measure.py", # 24 s (1 s CPU here): the README's validate, torch ranks forked from one
                                          # server that imported torch once
    "integration/test_codegen_rows.py",   # ~23 s: the planner's rows, two of them compiled with SymPy in the process
    "integration/test_torch_fsdp2_counts.py",  # ~25 s here: gloo ranks spawned eight times, torch imported in each
    "integration/test_torch_tp_counts.py",     # ~14 s here: two gloo ranks spawned four times
    "views/test_export.py",               # 23 s
    "integration/test_measure.py",        # 22 s: the gloo harness, its Ctrl-C and killed-parent runs
    "views/test_export_js.py",            # 20 s
    "integration/test_readme.py",         # 17 s: every README command, the step model's refit on three presets
    "collectives/test_simulation.py",     # 16 s
    "integration/test_docs.py",           # 16 s: a fresh docs build, its plots drawn again, pdflatex, KaTeX
    "training/test_hybridfast.py",        # 15 s
    "training/test_step_time.py",         # 9 s
    "training/test_step.py",              # 9 s
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


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    """Every test has run: leave this process so that its end cannot be interrupted.

    Last of the hooks (the fixtures are torn down before it).  An xdist worker reports its results when this hook
    returns (xdist's own wraps it), and the main process then asks it to end; execnet gives the worker 5 s to finish
    and then sends it a SIGINT (execnet's gateway_base.py, ``_terminate_execution``: "execution ongoing after 5
    secs").  What the worker still does then is pytest's own clean-up, five full garbage collections
    (_pytest/unraisableexception.py) over every SymPy expression and compiled step model the worker still holds: on a
    loaded 2-core machine more than 5 s, so the KeyboardInterrupt landed in whatever ran, seen as "Exception ignored
    in ... gc_callback" (Hypothesis's) at the end of green runs, and the main process waited for the worker
    meanwhile.  So: one collection here, while pytest's unraisable hook still reports what it finds, then that heap
    frozen (gc.freeze: the later collections walk only what is made after it), and SIGINT ignored in a worker, whose
    tests are all done (a hung worker is still ended: execnet exits it 10 s later)."""
    gc.collect()
    gc.freeze()
    if os.environ.get("PYTEST_XDIST_WORKER") and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


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


#: the compute slowdown beside a collective: Lee et al. 2025 (arXiv:2507.03114, abstract) measured compute kernels
#: 18.9 % slower on average while communication overlapped them, so in X seconds beside a collective the compute does
#: X/1.189 of its work and finishes 0.189/1.189 · X later than alone
SLOWDOWN_SHARE = 0.189 / 1.189


def slowed(waiting: float, alone: float) -> float:
    """Critical-path seconds of communication taking ``alone`` seconds by itself of which ``waiting`` is exposed: the
    exposed part plus the hidden part's slowdown of the compute beside it."""
    return waiting + SLOWDOWN_SHARE * (alone - waiting)
