"""The rank side of ``symcomm measure``: what each of the N rank processes runs (symcomm.measurement.measure
starts them, collects their rows and explains the method: the kernel's TCP counters around each operation).

Standard library only at import (torch inside the worker): the rank server imports this module (and torch) once
before forking the ranks (symcomm.measurement.rank_server), and a spawned rank imports it to find its
function, and a rank of a sweep is one of up to 17 processes, each of which paid a second of CPU for SymPy and the
algorithm catalog when the worker stood beside the predictions.  The model's width and the measured step come from
the parent (symcomm.measurement.predict), which predicts what these ranks measure.
"""

from __future__ import annotations

import os
import signal
import socket
import struct

TCPI_BYTES_SENT = 200
TCPI_BYTES_RETRANS = 208
TCP_INFO_MIN = 216


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


def _model(torch, width):
    nn = torch.nn
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(width, width, bias=False), nn.ReLU(), nn.Linear(width, width, bias=False))


def _train_step(torch, model, optimizer, batch):
    optimizer.zero_grad()
    model(batch).sum().backward()
    optimizer.step()


def _worker(rank, n, store_path, plan, queue, timeout, parent, width, step_index):
    # Ctrl-C goes to the whole process group: the parent alone handles it (it kills the ranks)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # die with the process that forked this rank: the rank server (its pid inherited from the server's import of
    # rank_server), itself dying with ``parent``; or, spawned (rank_server.SERVER None here), ``parent`` itself
    from .rank_server import SERVER, die_with_parent
    die_with_parent(SERVER if SERVER is not None else parent)
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
                model = _model(torch, width)
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
                batch = torch.randn(8, width)
                for _ in range(step_index - 1):
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
