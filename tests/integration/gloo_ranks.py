"""Gloo ranks on this machine's CPU for the execution checks that count what PyTorch itself sends
(test_torch_fsdp2_counts.py, test_torch_tp_counts.py): each rank a spawned process that joins one gloo group, runs
the test's ``body`` and sends back what it returns."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path


def _rank(rank: int, world: int, store: str, out, body, args) -> None:
    import os

    import torch.distributed as dist

    # a file store: a port probed free and bound later by rank 0 could be taken in between (a CI run failed with
    # EADDRINUSE under two test workers); gloo's own connections take ports the system gives
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
    try:
        out.put((rank, body(rank, world, *args)))
    except BaseException as error:             # said to the test, which compares it with what it expects
        out.put((rank, f"rank {rank} failed: {error!r}"))
    finally:
        dist.destroy_process_group()
        # leave without the interpreter's teardown: gloo's threads, torn down with it, may abort the process after
        # its answer was sent (seen under load: 'terminate called without an active exception')
        out.close()
        out.join_thread()
        os._exit(0)


def run_ranks(world: int, body, *args) -> list:
    """What ``body(rank, world, *args)`` returns on each of ``world`` gloo ranks, by rank (a module-level function of
    an importable module: the ranks are spawned, not forked)."""
    import torch.multiprocessing as mp

    context = mp.get_context("spawn")
    folder = tempfile.mkdtemp(prefix="gloo-ranks-")
    try:
        out, store = context.Queue(), str(Path(folder) / "store")
        ranks = [context.Process(target=_rank, args=(r, world, store, out, body, args)) for r in range(world)]
        for process in ranks:
            process.start()
        got = dict(out.get(timeout=240) for _ in ranks)
        for process in ranks:
            process.join(timeout=60)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return [got[r] for r in range(world)]


def dispatched_per_pass(forward, key) -> dict:
    """On one rank: the ops one step dispatches, counted by pass ("forward", "backward") and ``key(name, args)`` (the
    op's name, as ``_c10d_functional.all_to_all_single.default``, and its arguments: a text, or None for an op not
    counted); ``forward()`` runs the forward and returns what the backward sums.  The second of two steps is counted."""
    import collections

    from torch.utils._python_dispatch import TorchDispatchMode

    counts, phase = collections.Counter(), ["forward"]

    class Counted(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            said = key(str(func), args)
            if said is not None:
                counts[f"{phase[0]} {said}".strip()] += 1
            return func(*args, **(kwargs or {}))

    for _ in range(2):
        counts.clear()
        phase[0] = "forward"
        with Counted():
            y = forward()
            phase[0] = "backward"
            y.sum().backward()
    return dict(counts)
