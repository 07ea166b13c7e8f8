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
so the prediction is payload + the profile's per-message overhead (symcomm.profiles).

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

Nothing listens beyond loopback: the ranks meet through a file store in a private temporary
folder (mode 0700, removed afterwards), so no rendezvous socket exists at all, and gloo's
own sockets are bound to ``lo`` (``GLOO_SOCKET_IFNAME=lo`` is forced, whatever the caller's
environment says).  The ranks ignore SIGINT and die with their parent (Linux:
``PR_SET_PDEATHSIG``); on Ctrl-C the parent kills every rank at once and lets
KeyboardInterrupt through, so the CLI prints one line.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import sys
import threading
import time

from .errors import InputError
from .predict import (PHI, PRIMITIVES, STEP_INDEX, STEPS, WIDTH, Row, element_count, predict_op,
                      predict_step, rows_from)
from .profiles import PROFILES, profile

TCPI_BYTES_SENT = 200
TCPI_BYTES_RETRANS = 208
TCP_INFO_MIN = 216

DEFAULT_RANKS = (2, 3, 4, 8)
# 2**23 float32 = 32 MiB: above 2·N·1 MiB for every default N (8 included), where gloo's reduce
# runs more than two segments per rank and its ring loop over-sends (profiles.gloo_wire)
DEFAULT_SIZES = (2 ** 10, 2 ** 16, 2 ** 23)
MAX_RANKS = 8                  # N a measurement runs on this machine
MAX_SIZE = 2 ** 23             # M (float32 elements) a measurement runs: 32 MiB
MAX_TIMEOUT = 86400.0          # seconds per group of N ranks
MAX_FROM_BYTES = 64 * 1024 * 1024   # validate --from FILE
PR_SET_PDEATHSIG = 1           # linux/prctl.h


class MeasureError(RuntimeError):
    """The measurement could not be made (missing torch, a timeout, a dead rank)."""


# -- the kernel's counters ---------------------------------------------------------------------

def tcp_bytes_sent() -> tuple[int, int]:
    """(payload bytes sent minus retransmitted, summed over this process's TCP sockets; sockets)."""
    total = count = 0
    for name in os.listdir("/proc/self/fd"):
        try:
            if not os.readlink(f"/proc/self/fd/{name}").startswith("socket:"):
                continue
            sock = socket.socket(fileno=os.dup(int(name)))
        except OSError:
            continue
        try:
            if sock.type != socket.SOCK_STREAM or sock.family not in (socket.AF_INET, socket.AF_INET6):
                continue
            raw = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
            if len(raw) < TCP_INFO_MIN:
                raise MeasureError(f"TCP_INFO is {len(raw)} bytes: this kernel has no tcpi_bytes_sent (Linux ≥ 4.19)")
            sent, retrans = struct.unpack_from("<QQ", raw, TCPI_BYTES_SENT)
            total += sent - retrans
            count += 1
        except OSError:
            continue  # a listening or unconnected socket
        finally:
            sock.close()
    return total, count


# -- the worker: one process per rank -----------------------------------------------------------




def _operation(dist, torch, primitive, n, m, rank):
    """A zero-argument callable running ``primitive`` on M = m float32 elements (root 0)."""
    block = m // n
    x = torch.ones(m)
    if primitive == "broadcast":
        return lambda: dist.broadcast(x, 0)
    if primitive == "reduce":
        return lambda: dist.reduce(x, 0)
    if primitive == "all_reduce":
        return lambda: dist.all_reduce(x)
    if primitive == "all_gather":
        out, mine = torch.empty(m), torch.ones(block)
        fn = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
        return lambda: fn(out, mine)
    if primitive == "reduce_scatter":
        out = torch.empty(block)
        fn = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
        return lambda: fn(out, x)
    if primitive == "all_to_all":
        out = torch.empty(m)
        return lambda: dist.all_to_all_single(out, x)
    if primitive == "gather":
        mine = torch.ones(block)
        outs = [torch.empty(block) for _ in range(n)] if rank == 0 else None
        return lambda: dist.gather(mine, outs, 0)
    if primitive == "scatter":
        out = torch.empty(block)
        ins = list(torch.ones(m).chunk(n)) if rank == 0 else None
        return lambda: dist.scatter(out, ins, 0)
    raise ValueError(f"cannot measure {primitive!r}")


def _model(torch):
    nn = torch.nn
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(WIDTH, WIDTH, bias=False), nn.ReLU(), nn.Linear(WIDTH, WIDTH, bias=False))


def _train_step(torch, model, optimizer, batch):
    optimizer.zero_grad()
    model(batch).sum().backward()
    optimizer.step()


def _die_with_parent(parent: int) -> None:
    """Have the kernel SIGKILL this process when its parent exits (Linux ``PR_SET_PDEATHSIG``;
    a no-op where there is no prctl), and exit now if the parent is already gone."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(ctypes.c_int(PR_SET_PDEATHSIG), ctypes.c_ulong(signal.SIGKILL),
                       ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0))
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:  # the parent died before the request took hold
        os._exit(1)


def _worker(rank, n, store_path, plan, queue, timeout, parent):
    # Ctrl-C goes to the whole process group: the parent alone handles it (it kills the ranks)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with_parent(parent)
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"   # gloo binds its sockets to loopback, never elsewhere
    import warnings
    warnings.filterwarnings("ignore")
    try:
        import datetime
        import torch
        import torch.distributed as dist

        torch.set_num_threads(1)
        limit = datetime.timedelta(seconds=timeout)
        # a file store (what init_method="file://<path>" builds, without parsing the path as a
        # URL): the ranks meet through a file in the parent's private folder, no socket listens
        store = dist.FileStore(store_path, n)
        store.set_timeout(limit)
        dist.init_process_group("gloo", store=store, rank=rank, world_size=n, timeout=limit)

        def window(fn) -> int:
            dist.barrier()
            before = tcp_bytes_sent()[0]
            fn()
            dist.barrier()
            return tcp_bytes_sent()[0] - before

        barriers = [window(lambda: None) for _ in range(3)]
        barrier = barriers[-1]
        queue.put(("barrier", rank, barriers))
        for kind, name, m in plan:
            if kind == "op":
                fn = _operation(dist, torch, name, n, m, rank)
                queue.put(("row", rank, ((kind, name, m), window(fn) - barrier)))
            else:
                model = _model(torch)
                if name == "ddp":
                    from torch.nn.parallel import DistributedDataParallel
                    model = DistributedDataParallel(model)
                else:
                    from torch.distributed.device_mesh import init_device_mesh
                    from torch.distributed.fsdp import fully_shard
                    mesh = init_device_mesh("cpu", (n,))
                    for layer in (model[0], model[2]):
                        fully_shard(layer, mesh=mesh)
                    fully_shard(model, mesh=mesh)
                optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
                batch = torch.randn(8, WIDTH)
                for _ in range(STEP_INDEX - 1):
                    _train_step(torch, model, optimizer, batch)
                got = window(lambda: _train_step(torch, model, optimizer, batch)) - barrier
                queue.put(("row", rank, ((kind, name, m), got)))
            if rank == 0:
                queue.put(("tick", rank, None))
        dist.barrier()
        dist.destroy_process_group()
        queue.put(("done", rank, None))
    except Exception as err:  # reported to the parent, which names the rank
        queue.put(("error", rank, f"{type(err).__name__}: {err}"))


def _start(procs: list) -> None:
    """Start the ranks with GLOO_SOCKET_IFNAME=lo in their environment and SIGINT ignored:
    an ignored signal stays ignored across spawn's exec, so a Ctrl-C while a rank is still
    importing (before ``_worker`` runs) cannot print a traceback either."""
    saved_env = os.environ.get("GLOO_SOCKET_IFNAME")
    old = signal.getsignal(signal.SIGINT)
    ignore = threading.current_thread() is threading.main_thread() and old is not None
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    if ignore:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        for p in procs:
            p.start()
    finally:
        if ignore:
            signal.signal(signal.SIGINT, old)
        if saved_env is None:
            os.environ.pop("GLOO_SOCKET_IFNAME", None)
        else:
            os.environ["GLOO_SOCKET_IFNAME"] = saved_env


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
    try:
        import torch  # noqa: F401
    except ImportError:
        raise MeasureError("torch is not installed: pip install -e '.[measure]' (torch==2.13.0, CPU build)") from None
    import multiprocessing as mp
    import queue as queue_module
    import shutil
    import tempfile

    ctx = mp.get_context("spawn")
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
        procs = [ctx.Process(target=_worker, args=(r, n, store, plan, q, op_timeout, os.getpid()), daemon=True)
                 for r in range(n)]
        _start(procs)
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
    import platform

    try:
        import torch
        torch_version = torch.__version__
    except ImportError:
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


# -- CLI ----------------------------------------------------------------------------------------

def _ints(text: str, what: str, least: int, most: int, too_few: str, too_many: str) -> tuple[int, ...]:
    """A comma-separated list of whole numbers in [least, most], each once, in the order given."""
    from .inputs import MAX_VALUE, parse_list

    values = parse_list(what, text, least=0, most=MAX_VALUE)   # the grammar, the count, the magnitude
    for value in values:
        if value < least:
            raise InputError(f"--{what} {value} is not allowed: {too_few}")
        if value > most:
            raise InputError(f"--{what} {value} is not allowed: {too_many}")
    return tuple(dict.fromkeys(values))


def _names(text: str, allowed, what: str) -> tuple[str, ...]:
    if text in ("", "none"):
        return ()
    names = tuple(w.strip() for w in text.split(","))
    for name in names:
        if name not in allowed:
            shown = name if len(name) <= 40 else name[:37] + "..."
            raise InputError(f"--{what} {shown!r} is not allowed; choose from {', '.join(allowed)}")
    return tuple(dict.fromkeys(names))


def _options(args):
    from .inputs import parse_real

    ranks = _ints(args.ranks, "ranks", 2, MAX_RANKS, "a group needs at least 2 ranks",
                  f"at most {MAX_RANKS} ranks on this machine")
    sizes = _ints(args.sizes, "sizes", 1, MAX_SIZE, "give at least 1 element",
                  "at most 2**23 elements (32 MiB of float32)")
    timeout = parse_real("--timeout", args.timeout, least=0, most=MAX_TIMEOUT, strictly_above=True)
    return dict(ranks=ranks, sizes=sizes, primitives=_names(args.primitives, PRIMITIVES, "primitives"),
                steps=_names(args.steps, STEPS, "steps"), timeout=timeout)


def _print_table(result: dict) -> None:
    print(f"{result['library']}, torch {result['torch']}, backend profile {result['backend']}: "
          f"bytes sent per rank (measured / predicted)")
    for row in result["rows"]:
        size = f"M={row['M']}" if row["kind"] == "op" else f"Φ={row['Phi']}"
        pred = row.get("predicted")
        status = "ok  " if row["matched"] else "MISS"
        busiest = max(row["measured"])
        line = f"{status} {row['name']:<15} N={row['N']:<2} {size:<11} busiest {busiest:>11,}"
        if pred:
            ratio = busiest / max(pred) if max(pred) else float("nan")
            line += f" / {max(pred):>11,}  ratio {ratio:.6f}"
        model = row["model_payload"]
        line += f"  model payload {max(v for k, v in model.items() if k != 'total'):,}"
        print(line + f"  [{row.get('algorithm', row.get('strategy'))}]")
        for problem in row.get("problems", []):
            print(f"       {problem}")
    print(f"{result['matched']} of {result['count']} matched")


def _emit(result: dict, args) -> None:
    """Save (--output: a regular file, replaced atomically), then print as JSON (--json) or as a table."""
    if args.output is not None:
        from .files import write_file
        write_file(args.output, json.dumps(result, indent=1, ensure_ascii=False) + "\n", "-o/--output")
    if args.json:
        print(json.dumps(result, indent=1, ensure_ascii=False))
    else:
        _print_table(result)


def torch_installed() -> bool:
    """Whether torch can be imported here (found, not imported: its import takes seconds)."""
    import importlib.util

    return importlib.util.find_spec("torch") is not None


def cmd_measure(args) -> int:
    _emit(_run(args), args)
    return 0


def _run(args) -> dict:
    """The result of the command: every option and the --output path checked first, so that
    no bad path or value costs a finished measurement."""
    from .files import check_output
    from .inputs import read_json

    if args.backend not in PROFILES:
        shown = args.backend if len(args.backend) <= 40 else args.backend[:37] + "..."
        raise InputError(f"--backend {shown!r} is not allowed; choose one of: {', '.join(PROFILES)}")
    if args.backend != "gloo":
        raise InputError(f"--backend {args.backend}: only gloo can be measured here (torch.distributed on loopback)")
    if args.output is not None:
        check_output(args.output, "-o/--output")
    if getattr(args, "input", None):
        saved = read_json(args.input, "--from", "measurement", limit=MAX_FROM_BYTES)
        rows = rows_from(saved, args.backend, what=f"--from {str(args.input)!r}", checked=True)
        return report(rows, args.backend)
    opts = _options(args)
    # said before any progress bar is drawn: without torch nothing can be measured
    if not torch_installed():
        raise InputError("torch is not installed, so nothing can be measured: pip install -e '.[measure]' "
                         "(torch==2.13.0, CPU build), or give --from a saved measurement")
    bar = None if args.no_progress else Progress(sys.stderr)     # the command's bar, on stderr
    try:
        rows = sweep(backend=args.backend, progress=bar, **opts)
    except MeasureError as err:
        raise InputError(str(err)) from None
    finally:
        if bar is not None:
            bar.close()
    return report(rows, args.backend)


def cmd_validate(args) -> int:
    result = _run(args)
    _emit(result, args)
    misses = [r for r in result["rows"] if not r["matched"]]
    for row in misses:
        size = f"M={row['M']}" if row["kind"] == "op" else f"Φ={row['Phi']}"
        print(f"symcomm: validate: {row['name']} N={row['N']} {size} misses the {result['backend']} "
              f"profile: {'; '.join(row.get('problems', []))}", file=sys.stderr)
    return 1 if misses else 0


def register_cli(subparsers) -> None:
    for name, fn, text in (("measure", cmd_measure, "measure wire bytes of torch.distributed/gloo on loopback"),
                           ("validate", cmd_validate, "measure and compare with a backend profile; exit 1 on a miss")):
        p = subparsers.add_parser(name, help=text)
        p.add_argument("--backend", default="gloo", help=f"profile: {', '.join(PROFILES)} (only gloo is measurable)")
        p.add_argument("--ranks", default=",".join(map(str, DEFAULT_RANKS)), help="N values, e.g. 2,3,4,8 (≤ 8)")
        p.add_argument("--sizes", default=",".join(f"2**{m.bit_length() - 1}" for m in DEFAULT_SIZES),
                       help="M values in float32 elements, e.g. 2**10,2**16,2**23 (≤ 2**23; rounded down to a multiple of N)")
        p.add_argument("--primitives", default=",".join(PRIMITIVES),
                       help="comma-separated primitives to measure (default: all nine)")
        p.add_argument("--steps", default=",".join(STEPS), help="training steps to measure: ddp,fsdp or none")
        p.add_argument("--timeout", type=str, default="180",
                       help="seconds allowed per group of N ranks (> 0, ≤ 86400)")
        p.add_argument("--json", action="store_true", help="one JSON document on stdout instead of the text")
        p.add_argument("-o", "--output", help="also write the JSON result to this file")
        p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
        if name == "validate":
            p.add_argument("--from", dest="input", metavar="FILE",
                           help="validate a measurement file instead of measuring (JSON, ≤ 64 MiB)")
        p.set_defaults(run=fn)
