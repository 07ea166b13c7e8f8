"""The fork server the gloo ranks of ``symcomm measure``/``validate`` are forked from (symcomm.measurement.measure).

Each rank needs torch, whose import costs about two seconds of CPU: a default sweep runs 17 ranks (N = 2, 3, 4, 8).
The ranks are therefore forked from one multiprocessing fork server that has imported torch once
(``set_forkserver_preload``, :data:`PRELOAD`), instead of each spawned rank importing it again.

This module is the last name of that preload list, and the one with an effect: imported by the server that
``measure._start`` starts (the server's parent named in :data:`PARENT_VARIABLE` of its environment), it asks the
kernel to SIGKILL the server when that parent dies (Linux ``PR_SET_PDEATHSIG``), and records the server's pid in
:data:`SERVER`.  A rank forked from the server asks the same of the server (``ranks._die_with_parent``), so a killed
``symcomm`` takes its server and so its ranks with it, as when each rank was the parent's own child.  Imported in
any other process (the parent itself, a test, a spawned rank) it does nothing: no variable names that process's
parent.  Standard library only, like symcomm.measurement.ranks.
"""

from __future__ import annotations

import os
import signal
import sys

#: what the server imports before it forks any rank: torch and what a rank's operations and steps import
#: (symcomm.measurement.ranks._worker), then this module
PRELOAD = ("torch", "torch.distributed", "torch.nn.parallel", "torch.distributed.device_mesh",
           "torch.distributed.fsdp", "symcomm.measurement.ranks", "symcomm.measurement.rank_server")
#: the environment variable through which the parent names itself to the server it starts
PARENT_VARIABLE = "SYMCOMM_RANK_SERVER_PARENT"
PR_SET_PDEATHSIG = 1           # linux/prctl.h

#: this process's pid if it is a rank server (then it dies with its parent), else None
SERVER: int | None = None


def die_with_parent(parent: int) -> None:
    """Have the kernel SIGKILL this process when its parent exits (Linux ``PR_SET_PDEATHSIG``;
    a no-op where there is no prctl), and exit now if ``parent`` is no longer its parent (it died before the
    request took hold)."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(ctypes.c_int(PR_SET_PDEATHSIG), ctypes.c_ulong(signal.SIGKILL),
                       ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0))
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:
        os._exit(1)


if os.environ.get(PARENT_VARIABLE) == str(os.getppid()):
    die_with_parent(os.getppid())
    SERVER = os.getpid()
