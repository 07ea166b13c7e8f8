"""Measured wire bytes of a real collective library against the model: ``symcomm measure``
and ``symcomm validate --backend gloo``.

N ranks are N processes on 127.0.0.1 running torch.distributed with the gloo backend
(optional extra ``[measure]``: torch==2.13.0, CPU build).  Around each operation every
rank sums, over its process's TCP sockets, the kernel's own counter of payload bytes
sent (``getsockopt(TCP_INFO)``: tcpi_bytes_sent − tcpi_bytes_retrans):

    barrier · read · operation · barrier · read      →  delta − (bytes of one barrier)

The barrier after the operation makes sure every byte of it has left every sender
(each receiver has it); its own bytes are measured beforehand (barrier · read ·
barrier · read, repeated) and subtracted.  Counters include gloo's protocol preambles,
so the prediction is payload + the profile's per-message overhead (symcomm.collectives.profiles).

``struct tcp_info`` (Linux include/uapi/linux/tcp.h) byte offsets used here:
    200  __u64 tcpi_bytes_sent     (RFC 4898 tcpEStatsPerfHCDataOctetsOut, Linux ≥ 4.19)
    208  __u64 tcpi_bytes_retrans  (RFC 4898 tcpEStatsPerfOctetsRetrans, Linux ≥ 4.19)
They follow 8 one-byte fields (0–7), 24 __u32 (8–103: rto … total_retrans), then
__u64 pacing_rate 104, max_pacing_rate 112, bytes_acked 120, bytes_received 128, __u32
segs_out 136, segs_in 140, notsent_bytes 144, min_rtt 148, data_segs_in 152,
data_segs_out 156, __u64 delivery_rate 160, busy_time 168, rwnd_limited 176,
sndbuf_limited 184, __u32 delivered 192, delivered_ce 196.  A shorter answer from the
kernel (older than 4.19) is an error, not a zero.

Every run is bounded: process-group set-up and each collective have timeouts, and the
parent kills its own worker processes when the whole group overruns.

The ranks are forked from one fork server that has imported torch once (symcomm.measurement.rank_server: two
seconds of CPU per rank otherwise, 17 ranks in a default sweep); it dies with the parent, and each rank with it.
Where there is no fork server (not POSIX) each rank is spawned and imports torch itself.

Nothing listens beyond loopback: the ranks meet through a file store in a private temporary
folder (mode 0700, removed afterwards), so no rendezvous socket exists at all, and gloo's
own sockets are bound to ``lo`` (``GLOO_SOCKET_IFNAME=lo`` is forced, whatever the caller's
environment says).  The ranks ignore SIGINT and die with their parent (Linux:
``PR_SET_PDEATHSIG``); on Ctrl-C the parent kills every rank at once and lets
KeyboardInterrupt through, so the CLI prints one line.
"""

from __future__ import annotations

import os
import signal
import threading
import time

from .predict import (PHI, PRIMITIVES, STEP_INDEX, STEPS, WIDTH, Row, element_count, predict_op,
                      predict_step)
from .rank_server import PARENT_VARIABLE, PRELOAD
from .ranks import MeasureError, _worker, tcp_bytes_sent  # noqa: F401  (the rank side: SymPy-free)
from ..collectives.profiles import PROFILES, profile

DEFAULT_RANKS = (2, 3, 4, 8)
# 2**23 float32 = 32 MiB: above 2·N·1 MiB for every default N (8 included), where gloo's reduce
# runs more than two segments per rank and its ring loop over-sends (profiles.gloo_wire)
DEFAULT_SIZES = (2 ** 10, 2 ** 16, 2 ** 23)
MAX_RANKS = 8                  # N a measurement runs on this machine
MAX_SIZE = 2 ** 23             # M (float32 elements) a measurement runs: 32 MiB
MAX_TIMEOUT = 86400.0          # seconds per group of N ranks
MAX_FROM_BYTES = 64 * 1024 * 1024   # validate --from FILE
UNIX_PATH_MAX = 107            # bytes of a socket's file name (Linux sys/un.h sun_path[108], its NUL the last)


def _context():
    """The multiprocessing context the ranks start from: a fork server that preloads torch
    (:data:`rank_server.PRELOAD`) where there is one, else spawn.  The fork server is multiprocessing's one per
    process: started on the first rank's start, reused by every later group of this process."""
    import multiprocessing as mp
    import tempfile

    # the fork server listens on a socket named in a folder of TMPDIR (Python 3.11: pymp-XXXXXXXX/listener-XXXXXXXX,
    # 32 bytes more); a longer name than a socket's address holds (Linux sun_path, 108 bytes with its NUL) would
    # stop it from starting: spawn then, each rank importing torch (slower, the same measurement)
    too_long = len(os.fsencode(tempfile.gettempdir())) + len("/pymp-xxxxxxxx/listener-xxxxxxxx") > UNIX_PATH_MAX
    if "forkserver" not in mp.get_all_start_methods() or too_long:
        return mp.get_context("spawn")
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(list(PRELOAD))
    return ctx


def _start(procs: list, server: bool) -> None:
    """Start the ranks with GLOO_SOCKET_IFNAME=lo in their environment and SIGINT ignored:
    an ignored signal stays ignored across spawn's exec, and the fork server (started here
    on the first start, with this environment) hands it on to every rank it forks, so a
    Ctrl-C while a rank is still starting (before ``_worker`` runs) cannot print a traceback
    either.  Only what inherits SIGINT's disposition starts with it ignored (the fork server, once; each spawned
    rank); while the fork server forks the ranks, a Ctrl-C is held and raised once every rank has started, so the
    caller kills each by its pid (none is left half-started to meet a queue already gone) and none is lost.
    A fork server (``server``) finds its parent in :data:`rank_server.PARENT_VARIABLE` (never set
    for spawned ranks: rank_server would take such a rank for a server)."""
    names = ("GLOO_SOCKET_IFNAME", PARENT_VARIABLE)
    saved_env = {name: os.environ.get(name) for name in names}
    old = signal.getsignal(signal.SIGINT)
    ignore = threading.current_thread() is threading.main_thread() and old is not None
    held: list = []
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    if server:
        os.environ[PARENT_VARIABLE] = str(os.getpid())
    try:
        if ignore:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            if server:
                from multiprocessing import forkserver

                forkserver.ensure_running()
                if ignore:      # the ranks are forked from the server's own state: this handler is not handed on
                    signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum))
            for p in procs:
                p.start()
        finally:
            if ignore:
                signal.signal(signal.SIGINT, old)
    finally:
        for name, value in saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    if held:
        raise KeyboardInterrupt


def _stop(procs: list, finished: bool) -> None:
    """Reap the ranks: after a finished run give them 5 s to exit; otherwise (an error, a
    timeout, Ctrl-C, also Ctrl-C during that wait) kill every one still running at once."""
    started = [p for p in procs if p.pid is not None]
    try:
        if finished:
            deadline = time.monotonic() + 5
            for p in started:
                p.join(timeout=max(0.0, deadline - time.monotonic()))
    finally:
        for p in started:
            if p.exitcode is None:
                p.kill()
        for p in started:
            p.join(timeout=5)


def run_group(n: int, plan: list, timeout: float = 120.0, progress=None) -> tuple[dict, list]:
    """Run ``plan`` on N local ranks; returns ({plan item: [bytes per rank]}, barrier bytes).

    KeyboardInterrupt propagates unchanged, after every rank has been killed."""
    # found, not imported: only the ranks use torch (the server imports it once for them); a torch found that
    # fails to import is reported by the ranks, naming the error
    if not torch_installed():
        raise MeasureError("torch is not installed: pip install -e '.[measure]' (torch==2.13.0, CPU build)")
    import queue as queue_module
    import shutil
    import tempfile

    ctx = _context()
    op_timeout = max(30.0, timeout / 2)
    rows: dict = {}
    barriers: list = [None] * n
    done = 0
    procs: list = []
    q = None
    finished = False
    folder = tempfile.mkdtemp(prefix="symcomm-rendezvous-")   # mode 0700: only this user
    try:
        os.chmod(folder, 0o700)
        q = ctx.Queue()
        store = os.path.join(folder, "store")
        procs = [ctx.Process(target=_worker, args=(r, n, store, plan, q, op_timeout, os.getpid(), WIDTH, STEP_INDEX), daemon=True)
                 for r in range(n)]
        _start(procs, ctx.get_start_method() == "forkserver")
        deadline = time.monotonic() + timeout
        while done < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise MeasureError(f"N={n}: timed out after {timeout:.0f} s")
            try:
                kind, rank, payload = q.get(timeout=min(left, 1.0))
            except queue_module.Empty:
                dead = [r for r, p in enumerate(procs) if p.exitcode not in (None, 0)]
                if dead:
                    raise MeasureError(f"N={n}: rank {dead[0]} exited with status {procs[dead[0]].exitcode}")
                continue
            if kind == "error":
                raise MeasureError(f"N={n}: rank {rank}: {payload}")
            if kind == "barrier":
                barriers[rank] = payload
            elif kind == "row":
                item, got = payload
                rows.setdefault(item, [None] * n)[rank] = got
            elif kind == "tick" and progress:
                progress()
            elif kind == "done":
                done += 1
        finished = True
    finally:
        try:
            _stop(procs, finished)
        finally:  # even when a Ctrl-C interrupts the wait for the ranks
            if q is not None:
                q.close()
            shutil.rmtree(folder, ignore_errors=True)
    return rows, barriers


# -- the sweep ---------------------------------------------------------------------------------

class Progress:
    """A one-line progress bar, drawn on the stream the command gives it (``symcomm measure`` gives stderr).

    :func:`sweep` draws nothing itself: it calls ``progress(done, total, label)`` if a command passed one."""

    def __init__(self, stream):
        self.stream = stream
        self.started = time.monotonic()
        self.drawn = False

    def __call__(self, done: int, total: int, label: str) -> None:
        width = 30
        filled = int(width * done / max(1, total))
        self.stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} "
                          f"{label:<24} {time.monotonic() - self.started:5.1f} s")
        self.stream.flush()
        self.drawn = True

    def close(self) -> None:
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()


def sweep(ranks=DEFAULT_RANKS, sizes=DEFAULT_SIZES, primitives=PRIMITIVES, steps=STEPS,
          backend: str = "gloo", timeout: float = 180.0, progress=None) -> list[Row]:
    """Measure every (ranks, primitive, size) and step of the plan.  ``progress``, if given, is called as
    ``progress(done, total, label)`` when a group starts and after each measured operation (the library
    prints nothing: the command draws the bar)."""
    prof = profile(backend)
    plans = {}
    for n in ranks:
        plan = [("op", p, element_count(p, n, m)) for p in primitives for m in sizes]
        plan += [("step", s, PHI) for s in steps]
        plans[n] = plan
    total, done, label = sum(len(p) for p in plans.values()), 0, ""

    def tick(new_label: str | None = None) -> None:
        nonlocal done, label
        if new_label is not None:
            label = new_label
        else:
            done += 1
        if progress is not None:
            progress(done, total, label)

    rows = []
    for n, plan in plans.items():
        tick(f"N={n}")
        measured, barriers = run_group(n, plan, timeout, progress=tick)
        for kind, name, m in plan:
            pred = predict_op(prof, name, n, m) if kind == "op" else predict_step(prof, name, n)
            rows.append(Row(kind, name, n, m, measured[(kind, name, m)], pred, barriers))
    return rows


def report(rows: list[Row], backend: str) -> dict:
    import importlib.metadata
    import platform

    # the installed distribution's version, which torch.__version__ is built from ("2.13.0+cpu" both), read
    # without importing torch into this process: the ranks alone import it (seconds of CPU)
    try:
        torch_version = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        torch_version = None
    return {
        "backend": backend,
        "library": "torch.distributed gloo on 127.0.0.1",
        "torch": torch_version,
        "kernel": platform.release(),
        "counter": "TCP_INFO tcpi_bytes_sent − tcpi_bytes_retrans, summed over the process's TCP sockets",
        "unit": "bytes sent by each rank during one operation (barrier subtracted)",
        "overhead": {"per_message_sent": PROFILES[backend].overhead.per_message_sent,
                     "per_message_received": PROFILES[backend].overhead.per_message_received,
                     "note": PROFILES[backend].overhead.note},
        "model": {"width": WIDTH, "Phi": PHI, "layers": 2, "measured_step": STEP_INDEX},
        "rows": [r.as_dict() for r in rows],
        "matched": sum(r.matched for r in rows),
        "count": len(rows),
    }


def torch_installed() -> bool:
    """Whether torch can be imported here (found, not imported: its import takes seconds)."""
    import importlib.util

    return importlib.util.find_spec("torch") is not None
