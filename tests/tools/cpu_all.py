"""The CPU of a command and of every process it starts, however they end: the figure behind the suite's CPU comparisons
(tests/integration/test_site.py, test_wheel.py, tests/commands/test_fuzz_cli.py cite it).  Not part of the suite::

    python tests/tools/cpu_all.py python -m pytest -p no:cacheprovider -q -n 0 tests/integration/test_site.py
    # prints, on stderr, after the command's own output:
    # cpu_all: exit 0, wall 63.6 s, user 57.6 s, system 6.7 s, CPU 64.3 s

Why not getrusage in the test process (tests/tools/cpu_per_test.py): a process counts in RUSAGE_CHILDREN only when
its parent waits for it.  Chromium's renderers, its GPU and network processes are reparented when their launcher
exits, and the gloo ranks are forked by the rank server, which dies with its parent: their CPU (~30 s of test_site.py's
~65 s) reaches no test's figure.  This process makes itself a child subreaper (Linux prctl PR_SET_CHILD_SUBREAPER):
every orphan below it is reparented to it and reaped here, so its RUSAGE_CHILDREN is the CPU of all of them.  On a
shared machine the wall says how loaded it was; compare CPU, paired, in one sitting.
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import subprocess
import sys
import time

PR_SET_CHILD_SUBREAPER = 36     # linux/prctl.h


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python tests/tools/cpu_all.py COMMAND [ARG ...]", file=sys.stderr)
        return 2
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        print(f"cpu_all: prctl failed: {os.strerror(ctypes.get_errno())}", file=sys.stderr)
        return 2
    # a shell's background job starts with SIGINT ignored, which the command would inherit (the suite's Ctrl-C tests
    # need it as Python sets it up by default)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    start = time.perf_counter()
    command = subprocess.Popen(argv)
    code, wall = None, None
    while True:        # reap every descendant, the command's orphans too, until none is left
        try:
            pid, status, _ = os.wait3(0)
        except ChildProcessError:
            break
        if pid == command.pid:
            code, wall = os.waitstatus_to_exitcode(status), time.perf_counter() - start
            command.returncode = code
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"cpu_all: exit {code}, wall {wall:.1f} s, user {used.ru_utime:.1f} s, system {used.ru_stime:.1f} s, "
          f"CPU {used.ru_utime + used.ru_stime:.1f} s", file=sys.stderr)
    return code if code is not None else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
