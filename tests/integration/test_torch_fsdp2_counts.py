"""What PyTorch itself sends under FSDP2, against the hybrid's data-parallel count for framework=fsdp2: an execution
check of the schedule symcomm.training.axes.DataSchedule gives FSDP2 (how many all-gathers and reduce-scatters a
step runs) and of symcomm.training.frameworks.PIPELINING_GA and FSDP2_RESHARD_AFTER_BACKWARD.

Gloo ranks on this machine's CPU, every unit a Linear layer of its own fully_shard, over one step after a warm-up
step.  Every call FSDP2 makes to torch.distributed's all_gather_single, reduce_scatter_single and all_reduce is
counted on every rank.  The hybrid counts the same layout per GPU, without the embedding and LM head (embeddings=0):

* without a pipeline, 2 ranks, 2 units, 3 micro-batches: resharded after the forward or kept, the gradients reduced
  every micro-batch or once a step (set_requires_gradient_sync(False) on all but the last, as KempnerForge and NeMo
  AutoModel accumulate);
* under torch.distributed.pipelining (Schedule1F1B), two stages of two ranks, 2 units a stage kept gathered
  (reshard_after_forward=False, as torchtitan shards under pipeline parallelism): a step of 12 micro-batches as one
  schedule of 12, or 3 schedules of 4 (torchtitan's and AutoModel's gradient accumulation, ga_schedules=1);
* under torchtitan's mixed precision (bfloat16 parameters, float32 reduction): the element type each moves.
"""

from __future__ import annotations

import collections

import pytest

import symcomm
from gloo_ranks import run_ranks

UNITS, COLLECTIVES = 2, ("all_gather_single", "reduce_scatter_single", "all_reduce")


def _counted_step(rank: int, world: int, case: dict) -> dict:
    """On one rank: the FSDP2 layout of ``case``, one step after a warm-up one, its collectives counted."""
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    stages = case["p"]
    mesh = init_device_mesh("cpu", (stages, world // stages), mesh_dim_names=("pp", "dp"))
    torch.manual_seed(0)
    module = nn.Sequential(*[nn.Linear(16, 16) for _ in range(UNITS)])
    for unit in module:
        fully_shard(unit, mesh=mesh["dp"], reshard_after_forward=case["reshard"])
    fully_shard(module, mesh=mesh["dp"], reshard_after_forward=case["reshard"])      # holds no parameter
    counts = collections.Counter()
    for name in COLLECTIVES:
        def counted(*args, _call=getattr(dist, name), _name=name, **kwargs):
            counts[_name] += 1
            return _call(*args, **kwargs)
        setattr(dist, name, counted)
    micro = case["m"] // case["schedules"]
    if stages > 1:
        from torch.distributed.pipelining import PipelineStage, Schedule1F1B

        index = mesh["pp"].get_local_rank()
        stage = PipelineStage(module, index, stages, torch.device("cpu"), group=mesh["pp"].get_group())
        schedule = Schedule1F1B(stage, n_microbatches=micro, loss_fn=lambda y, target: ((y - target) ** 2).mean())
        x, target = torch.randn(2 * micro, 16), torch.randn(2 * micro, 16)

        def step():
            for _ in range(case["schedules"]):
                schedule.step(x) if index == 0 else schedule.step(target=target, losses=[])
    else:
        def step():             # grad_reduce None: the framework's, FSDP2's sync after every backward
            for i in range(case["m"]):
                if case["grad_reduce"] == "per_step":
                    module.set_requires_gradient_sync(i == case["m"] - 1)
                module(torch.randn(2, 16)).sum().backward()
    for _ in range(2):
        counts.clear()                      # the second step is the one counted
        step()
    return dict(counts)


def _torch_counts(case: dict) -> list[dict]:
    return run_ranks(2 * case["p"], _counted_step, case)


def _hybrid_counts(case: dict) -> dict:
    words = dict(Phi=1000, h=16, L=UNITS * case["p"], a=2, s=8, t=1, p=case["p"], c=1, d=2, b=2 * case["m"],
                 m=case["m"], G=4, framework="fsdp2", zero=3, reshard_after_forward=int(case["reshard"]),
                 embeddings=0)
    if case["grad_reduce"] is not None:                  # None: the framework's own (fsdp2: every micro-batch)
        words["grad_reduce"] = case["grad_reduce"]
    if case["schedules"] > 1:
        words.update(ga_schedules=1, n_ga=case["schedules"])
    counted = collections.Counter()
    for term in symcomm.evaluate("hybrid", **words)["terms"]:
        if term["axis"] == "dp":
            counted["all_gather_single" if term["collective"] == "all_gather" else "reduce_scatter_single"] += \
                term["count"]
    return dict(counted)


CASES = [
    dict(p=1, m=3, schedules=1, reshard=True, grad_reduce="per_micro_batch"),
    dict(p=1, m=3, schedules=1, reshard=True, grad_reduce="per_step"),
    dict(p=1, m=3, schedules=1, reshard=False, grad_reduce="per_micro_batch"),
    dict(p=1, m=3, schedules=1, reshard=False, grad_reduce="per_step"),
    dict(p=2, m=12, schedules=1, reshard=False, grad_reduce="per_step"),
    dict(p=2, m=12, schedules=3, reshard=False, grad_reduce="per_step"),
    dict(p=2, m=12, schedules=1, reshard=True, grad_reduce="per_step"),
    dict(p=2, m=4, schedules=1, reshard=True, grad_reduce=None),
]
# by hand, per rank and step, of its 2 units: gathered for every forward, and again for every backward when resharded
# after the forward; FSDP2 reshards after every backward unless a pipeline stage holds it back, so a unit kept after
# its forward is gathered again by the next micro-batch's forward without a pipeline, once per schedule with one;
# reduce-scattered after every backward, or once (per schedule) when the sync waits for the last.  Resharded after
# every forward under a pipeline: the stage's backwards keep the units (all but a schedule's last), so a forward right
# after a backward finds them gathered; 1F1B's last stage alternates forward and backward, its first forward and every
# backward gather: m + 1 a unit, 13 and 5 (the pipeline's stage syncs once whatever grad_reduce says)
BY_HAND = [dict(all_gather_single=12, reduce_scatter_single=6), dict(all_gather_single=12, reduce_scatter_single=2),
           dict(all_gather_single=6, reduce_scatter_single=6), dict(all_gather_single=6, reduce_scatter_single=2),
           dict(all_gather_single=2, reduce_scatter_single=2), dict(all_gather_single=6, reduce_scatter_single=6),
           dict(all_gather_single=26, reduce_scatter_single=2), dict(all_gather_single=10, reduce_scatter_single=2)]


@pytest.mark.torch      # skipped without torch, failed in CI (tests/conftest.py)
@pytest.mark.parametrize("case, by_hand", list(zip(CASES, BY_HAND)),
                         ids=[f"p{c['p']}-m{c['m']}-n{c['schedules']}-reshard{int(c['reshard'])}-{c['grad_reduce'] or 'framework'}"
                              for c in CASES])
def test_fsdp2_sends_what_the_hybrid_counts(case, by_hand):
    counted = _torch_counts(case)
    assert counted == [by_hand] * (2 * case["p"])           # every rank alike, nothing but these
    assert _hybrid_counts(case) == by_hand


def _dtyped_step(rank: int, world: int) -> dict:
    """On one rank: 2 units under torchtitan's mixed precision (MixedPrecisionPolicy(param_dtype=bfloat16,
    reduce_dtype=float32): torchtitan/models/llama3/infra/parallelize.py, apply_fsdp, its mixed_precision_reduce
    float32), each collective counted with the element type it moves, over one step after a warm-up one."""
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    mesh = init_device_mesh("cpu", (world,))
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    torch.manual_seed(0)
    module = nn.Sequential(*[nn.Linear(16, 16) for _ in range(UNITS)])
    for unit in module:
        fully_shard(unit, mesh=mesh, mp_policy=policy)
    fully_shard(module, mesh=mesh, mp_policy=policy)
    counts = collections.Counter()
    for name in COLLECTIVES:
        def counted(*args, _call=getattr(dist, name), _name=name, **kwargs):
            moved = {str(x.dtype) for x in (*args, *kwargs.values()) if isinstance(x, torch.Tensor)}
            counts[f"{_name} {'/'.join(sorted(moved))}"] += 1
            return _call(*args, **kwargs)
        setattr(dist, name, counted)
    for _ in range(2):
        counts.clear()
        module(torch.randn(2, 16)).float().sum().backward()
    return dict(counts)


@pytest.mark.torch
def test_fsdp2_gathers_in_the_parameters_type_and_reduces_in_the_reduce_type():
    # by hand: each of the 2 units gathered for the forward and again for the backward in bfloat16, reduce-scattered
    # once in float32; the hybrid's terms for grad_dtype=fp32 at the run's 16-bit type: the gathers in the run's
    # type (no dtype of their own), the reduce-scatters widened to fp32
    assert run_ranks(2, _dtyped_step) == [{"all_gather_single torch.bfloat16": 4,
                                           "reduce_scatter_single torch.float32": 2}] * 2
    answer = symcomm.evaluate("hybrid", Phi=1000, h=16, L=UNITS, a=2, s=8, t=1, p=1, c=1, d=2, b=2, m=1, G=4,
                              framework="fsdp2", zero=3, embeddings=0, grad_dtype="fp32")
    modelled = collections.Counter()
    for term in answer["terms"]:
        if term["axis"] == "dp":
            modelled[f"{term['collective']} {term.get('dtype', 'the run')}"] += term["count"]
    assert modelled == {"all_gather the run": 4, "reduce_scatter fp32": 2}


def _hsdp_step(rank: int, world: int) -> dict:
    """On one rank of 4: 2 units fully_shard'ed on a (replicate 2, shard 2) mesh, torch's hybrid sharding, each
    collective counted with its group's size and the elements it moves in all (a gather's output, a reduction's
    input), over one step after a warm-up one."""
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh("cpu", (2, world // 2), mesh_dim_names=("replicate", "shard"))
    torch.manual_seed(0)
    module = nn.Sequential(*[nn.Linear(16, 16) for _ in range(UNITS)])
    for unit in module:
        fully_shard(unit, mesh=mesh)
    fully_shard(module, mesh=mesh)
    counts = collections.Counter()
    for name in COLLECTIVES:
        def counted(*args, _call=getattr(dist, name), _name=name, **kwargs):
            tensors = [x.numel() for x in (*args, *kwargs.values()) if isinstance(x, torch.Tensor)]
            counts[f"{_name} over {dist.get_world_size(kwargs.get('group'))} of {max(tensors)}"] += 1
            return _call(*args, **kwargs)
        setattr(dist, name, counted)
    for _ in range(2):
        counts.clear()
        module(torch.randn(2, 16)).sum().backward()
    return dict(counts)


@pytest.mark.torch
def test_hybrid_sharding_reduces_over_the_shards_then_the_replicas():
    # by hand, per rank: each of the 2 units (a 16 × 16 Linear and its bias, 272 parameters) gathered over its shard
    # group of 2 for the forward and again for the backward, its gradients reduce-scattered over that group, and the
    # reduced half, 136, all-reduced over the 2 replicas
    by_hand = {"all_gather_single over 2 of 272": 4, "reduce_scatter_single over 2 of 272": 2,
               "all_reduce over 2 of 136": 2}
    assert run_ranks(4, _hsdp_step) == [by_hand] * 4
    answer = symcomm.evaluate("hybrid", Phi=UNITS * 272, h=16, L=UNITS, a=2, s=8, t=1, p=1, c=1, d=4, b=4, m=1, G=4,
                              framework="fsdp2", zero=3, embeddings=0, hsdp=1, d_r=2)
    name = {"all_gather": "all_gather_single", "reduce_scatter": "reduce_scatter_single", "all_reduce": "all_reduce"}
    modelled = collections.Counter()
    for term in answer["terms"]:
        if term["axis"] == "dp":
            modelled[f"{name[term['collective']]} over {term['group']} of {term['message']}"] += term["count"]
    assert modelled == by_hand


def _ordered_step(rank: int, world: int) -> dict:
    """On one rank: a root that holds parameters of its own (an embedding of 50 × 16 and an LM head of 16 × 50, as
    torchtitan's 2024 root held tok_embeddings and output, KempnerForge's its embedding) around 2 Linear units of
    their own fully_shard, one step after a warm-up one; every all-gather and reduce-scatter in the order FSDP2 calls
    them, each by the elements of its whole (unsharded) unit."""
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(50, 16)
            self.layers = nn.ModuleList(nn.Linear(16, 16) for _ in range(UNITS))
            self.head = nn.Linear(16, 50, bias=False)

        def forward(self, tokens):
            x = self.embedding(tokens)
            for layer in self.layers:
                x = layer(x)
            return self.head(x)

    mesh = init_device_mesh("cpu", (world,))
    torch.manual_seed(0)
    model = Model()
    for layer in model.layers:
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    calls = []
    for name in ("all_gather_single", "reduce_scatter_single"):
        def recorded(*args, _call=getattr(dist, name), _name=name, **kwargs):
            whole = max(x.numel() for x in (*args, *kwargs.values()) if isinstance(x, torch.Tensor))
            calls.append((_name, whole))
            return _call(*args, **kwargs)
        setattr(dist, name, recorded)
    for _ in range(2):
        calls.clear()
        model(torch.randint(0, 50, (2, 8))).float().sum().backward()
    return {"calls": calls}


@pytest.mark.torch
def test_fsdp2_gathers_its_root_first_and_reduces_it_last():
    # by hand: the root's own parameters, the embedding's 50·16 and the head's 16·50, 1,600 elements; a unit's
    # Linear 16·16 + 16 = 272.  The forward gathers the root before anything runs, then each unit; the backward gathers
    # the units again (the root is kept gathered), reduces each unit after its backward and the root last
    root, unit = 2 * 50 * 16, 16 * 16 + 16
    calls = [answer["calls"] for answer in run_ranks(2, _ordered_step)]
    assert calls[0] == calls[1]
    gathers = [size for name, size in calls[0] if name == "all_gather_single"]
    scatters = [size for name, size in calls[0] if name == "reduce_scatter_single"]
    assert gathers == [root, unit, unit, unit, unit] and scatters == [unit, unit, root]
    # the hybrid's terms at the same sizes (V = 50, h = 16, untied, t = 1, L = 2 units): the root its own collective,
    # once a pass, the first of the forward and the last of the reduction (symcomm.training.axes.ROOT_UNIT_FIRST)
    terms = {row["label"]: row for row in symcomm.evaluate("hybrid", Phi=root + UNITS * unit, V=50, h=16, L=UNITS, a=2,
                                                           s=8, t=1, p=1, c=1, d=2, b=2, m=1, G=4, framework="fsdp2",
                                                           zero=3, embeddings=1, tied=0)["terms"] if row["axis"] == "dp"}
    for label in ("root-unit parameter all-gather (forward)", "root-unit gradient reduce-scatter (backward)"):
        assert (terms[label]["message"], terms[label]["count"]) == (root, 1), label
    for label, count in (("per-layer parameter all-gather (forward)", UNITS),
                         ("per-layer parameter all-gather (backward)", UNITS),
                         ("per-layer gradient reduce-scatter (backward)", UNITS)):
        assert (terms[label]["message"], terms[label]["count"]) == (unit, count), label
