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

A test that needs a tool this machine lacks is skipped on a developer's machine and FAILS in CI
(``SYMCOMM_CI=1``, set by .ci/run after installing every tool), so CI never passes by skipping.  This
file is the only place that reads SYMCOMM_CI: tests call :func:`absent` (or carry a marker).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

import pytest

IN_CI = os.environ.get("SYMCOMM_CI") == "1"
#: the source tree, and the tests' own folder (tests/data, tests/tools): one spelling for every test, in
#: whichever wing folder it stands (tests/<wing>/, tests/integration/)
ROOT = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent


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
