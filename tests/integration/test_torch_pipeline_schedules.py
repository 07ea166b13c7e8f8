"""What PyTorch itself sends when a step runs several pipeline schedules (ga_schedules=1), against the hybrid's count:
an execution check of symcomm.training.frameworks.PIPELINING_GA.

Four gloo ranks on this machine's CPU: two pipeline stages (torch.distributed.pipelining, Schedule1F1B) of two
FSDP2 ranks each, every stage two Linear layers, each its own fully_shard unit, kept gathered between the forward and
the backward (reshard_after_forward=False, as torchtitan shards under pipeline parallelism).  A step of 12
micro-batches runs as one schedule of 12, or as 3 schedules of 4 (torchtitan's and NeMo AutoModel's gradient
accumulation: one schedule.step per accumulation step).  Every call FSDP2 makes to torch.distributed's all_gather_single
and reduce_scatter_single is counted on every rank, over one step after a warm-up step.  The hybrid counts the same
layout per GPU: L = 4 layers over p = 2 stages, d = 2, m = 12, without the embedding and LM head (embeddings=0).
"""

from __future__ import annotations

import collections
import socket

import pytest

import symcomm

LAYERS_PER_STAGE, MICRO_BATCHES = 2, 12


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _rank(rank: int, world: int, port: int, schedules: int, out) -> None:
    import os

    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.pipelining import PipelineStage, Schedule1F1B

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("pp", "dp"))
        stage_index = mesh["pp"].get_local_rank()
        torch.manual_seed(0)
        stage_module = nn.Sequential(*[nn.Linear(16, 16) for _ in range(LAYERS_PER_STAGE)])
        for layer in stage_module:
            fully_shard(layer, mesh=mesh["dp"], reshard_after_forward=False)
        fully_shard(stage_module, mesh=mesh["dp"], reshard_after_forward=False)
        counts = collections.Counter()
        for name in ("all_gather_single", "reduce_scatter_single", "all_reduce"):
            def counted(*args, _call=getattr(dist, name), _name=name, **kwargs):
                counts[_name] += 1
                return _call(*args, **kwargs)
            setattr(dist, name, counted)
        stage = PipelineStage(stage_module, stage_index, 2, torch.device("cpu"), group=mesh["pp"].get_group())
        per_schedule = MICRO_BATCHES // schedules
        schedule = Schedule1F1B(stage, n_microbatches=per_schedule, loss_fn=lambda y, target: ((y - target) ** 2).mean())
        x, target = torch.randn(2 * per_schedule, 16), torch.randn(2 * per_schedule, 16)
        for step in range(2):
            counts.clear()                      # the second step is the one counted
            for _ in range(schedules):
                if stage_index == 0:
                    schedule.step(x)
                else:
                    schedule.step(target=target, losses=[])
        out.put((rank, dict(counts)))
    finally:
        dist.destroy_process_group()


def _torch_counts(schedules: int) -> list[dict]:
    import torch.multiprocessing as mp

    context = mp.get_context("spawn")
    out, port = context.Queue(), _free_port()
    ranks = [context.Process(target=_rank, args=(r, 4, port, schedules, out)) for r in range(4)]
    for process in ranks:
        process.start()
    got = dict(out.get(timeout=240) for _ in ranks)
    for process in ranks:
        process.join(timeout=60)
        assert process.exitcode == 0
    return [got[r] for r in range(4)]


def _hybrid_counts(schedules: int) -> dict:
    words = dict(Phi=1000, h=16, L=2 * LAYERS_PER_STAGE, a=2, s=8, t=1, p=2, c=1, d=2, b=2 * MICRO_BATCHES,
                 m=MICRO_BATCHES, G=4, framework="fsdp2", zero=3, reshard_after_forward=0, grad_reduce="per_step",
                 embeddings=0)
    if schedules > 1:
        words.update(ga_schedules=1, n_ga=schedules)
    answer = symcomm.evaluate("hybrid", **words)
    return {term["label"]: term["count"] for term in answer["terms"] if term["axis"] == "dp"}


@pytest.mark.torch      # skipped without torch, failed in CI (tests/conftest.py)
@pytest.mark.parametrize("schedules", [1, 3])
def test_pytorch_reduces_and_gathers_once_per_schedule(schedules):
    counted = _torch_counts(schedules)
    # every rank alike: each of its two units gathered once and reduce-scattered once per schedule, nothing else
    assert counted == [{"all_gather_single": LAYERS_PER_STAGE * schedules,
                        "reduce_scatter_single": LAYERS_PER_STAGE * schedules}] * 4
    modelled = _hybrid_counts(schedules)
    assert modelled == {"per-layer parameter all-gather (forward)": counted[0]["all_gather_single"],
                        "per-layer gradient reduce-scatter (backward)": counted[0]["reduce_scatter_single"]}
