"""How many examples a Hypothesis test needs: the symcomm lines its examples reach, and the example that first
reaches each one (coverage.py's contexts, one per example).  The evidence behind each property test's
``max_examples`` (the counts' comments cite it).  Not part of the suite: a pytest plugin run by hand, one process::

    pip install coverage
    PYTHONPATH=tests/tools python -m pytest -o addopts="" -p no:cacheprovider -p hypothesis_reach tests/<wing>/test_x.py
    # writes hypothesis_reach.json (HYPOTHESIS_REACH_OUT to change) and prints one line per Hypothesis test:
    # examples run, lines reached, the lines reached by example 25, 50, 100, ... and the last example that found one

The figures are one run's: a test that is not derandomized draws other examples the next time, so read an
example index as an order of magnitude.
Lines, not branches: a new line is a new code path for every property these tests hold (a refusal's message, a
case of a formula, a kernel's branch).  The time limits of tests/commands/test_fuzz_cli.py are lifted here (the
tracer slows every call), which the fuzz's property does not depend on.
"""

from __future__ import annotations

import json
import os

import coverage
import pytest

OUT = os.environ.get("HYPOTHESIS_REACH_OUT", "hypothesis_reach.json")
_COV = coverage.Coverage(data_file=None, source_pkgs=["symcomm"])
_NOW = {"id": None, "n": 0}
_COUNTS: dict = {}


def pytest_collection_modifyitems(items):
    for item in items:
        module = getattr(item, "module", None)
        if module is not None and hasattr(module, "LIMIT_S"):
            module.LIMIT_S = 600
        found = getattr(getattr(item, "obj", None), "hypothesis", None)
        if found is None or getattr(found, "_reach_wrapped", False):
            continue
        inner = found.inner_test

        def each_example(*args, __inner=inner, **kwargs):     # one coverage context per example
            _COV.switch_context(f"{_NOW['id']}#{_NOW['n']}")
            _NOW["n"] += 1
            return __inner(*args, **kwargs)
        found.inner_test = each_example
        found._reach_wrapped = True


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    if getattr(getattr(item, "obj", None), "hypothesis", None) is None:
        yield
        return
    _NOW["id"], _NOW["n"] = item.nodeid, 0
    _COV.start()
    try:
        yield
    finally:
        _COV.switch_context("")
        _COV.stop()
        _COUNTS[item.nodeid] = _NOW["n"]


def pytest_terminal_summary(terminalreporter):
    data = _COV.get_data()
    first: dict = {test: {} for test in _COUNTS}
    for path in data.measured_files():
        for line, contexts in data.contexts_by_lineno(path).items():
            for context in contexts:
                test, _, n = context.rpartition("#")
                if test in first:
                    first[test][(path, line)] = min(int(n), first[test].get((path, line), int(n)))
    report = {test: {"examples": _COUNTS[test], "first": sorted(first[test].values())} for test in _COUNTS}
    with open(OUT, "w", encoding="utf-8") as handle:
        json.dump(report, handle)
    for test, row in report.items():
        reached = row["first"]
        marks = [k for k in (25, 50, 100, 200, 400, 800, 1600) if k < row["examples"]]
        by = ", ".join(f"{sum(x < k for x in reached)} by {k}" for k in marks)
        last = reached[-1] if reached else None
        terminalreporter.write_line(f"{test}: {row['examples']} examples, {len(reached)} lines ({by}); "
                                    f"last new line at example {last}")
