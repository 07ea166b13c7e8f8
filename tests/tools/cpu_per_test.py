"""CPU and wall seconds per test, the figures behind tests/conftest.py's LONGEST_FIRST (its order: the wall each
file holds a worker).  Not part of the suite: a pytest plugin run by hand, in the project's own mode (xdist workers too: each appends its own lines)::

    PYTHONPATH=tests/tools SYMCOMM_CI=1 python -m pytest -p no:cacheprovider -p cpu_per_test
    # appends one JSON line per test to cpu_per_test.jsonl (CPU_PER_TEST_OUT to change): its id, the worker,
    # the CPU of the worker process and of the processes it started and reaped (getrusage), and the wall

CPU, not wall: on a shared machine the wall of a test says how loaded the machine was; the CPU is what the test
costs.  A process reaped after its test ended (a multiprocessing rank joined later) counts in the test that
reaps it, and a browser's renderers count when the browser quits: sum per file.
"""

from __future__ import annotations

import json
import os
import resource
import time

import pytest

OUT = os.environ.get("CPU_PER_TEST_OUT", "cpu_per_test.jsonl")


def _cpu() -> tuple[float, float]:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    own, children = _cpu()
    start = time.perf_counter()
    yield
    own_after, children_after = _cpu()
    row = {"id": item.nodeid, "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"), "self": own_after - own,
           "children": children_after - children, "wall": time.perf_counter() - start}
    with open(OUT, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(row) + "\n")
