"""What PyTorch's tensor parallelism itself sends under sequence parallelism, against the hybrid's tensor-parallel terms
for framework=fsdp2: an execution check of the two plans the hybrid's sp_input names.

Two gloo ranks on this machine's CPU run two Llama blocks (RMSNorm, separate q, k, v projections, SwiGLU) laid out as
torch.distributed.tensor.parallel lays them out, the sequence sharded between the blocks:

* ``block`` (torchtitan's plan: torchtitan/models/llama3/infra/parallelize.py, apply_tp): the norms SequenceParallel,
  each of the attention and the feed-forward a PrepareModuleInput that gathers its one input (Shard(1) → Replicate),
  q, k, v, w1, w3 ColwiseParallel, wo and w2 RowwiseParallel back to the sequence shards (output_layouts=Shard(1));
* ``linear_gated`` (KempnerForge's plan: each of q, k, v, w1 and w3 a ColwiseParallel(input_layouts=Shard(1)) that
  gathers its own input, wo and w2 as above).

Every functional collective the forward and the backward of one step dispatch is counted on every rank (a
TorchDispatchMode over the c10d functional ops: all_gather_into_tensor, reduce_scatter_tensor, all_reduce), with the
full buffer it moves in elements: the gathered output (its input shard times t) or the reduced input.  The hybrid
counts the same layout: t = 2, sp = 1, L = 2, one sequence of s = 16 tokens of h = 32, b·s·h = 512 elements a buffer.
"""

from __future__ import annotations

import collections

import pytest

import symcomm
from gloo_ranks import dispatched_per_pass, run_ranks

H, HEADS, FFN, TOKENS, LAYERS, T = 32, 4, 64, 16, 2, 2


def _counted_step(rank: int, world: int, plan: str, recompute: str) -> dict:
    """On one rank: two blocks under ``plan`` and ``recompute``, one step after a warm-up one, its collectives counted."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import (ColwiseParallel, PrepareModuleInput, RowwiseParallel,
                                                   SequenceParallel, parallelize_module)

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.wq, self.wk, self.wv, self.wo = (nn.Linear(H, H, bias=False) for _ in range(4))

        def forward(self, x):
            b, s, _ = x.shape
            q, k, v = (y.view(b, s, -1, H // HEADS).transpose(1, 2) for y in (self.wq(x), self.wk(x), self.wv(x)))
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.wo(o.transpose(1, 2).reshape(b, s, -1))

    class FeedForward(nn.Module):
        def __init__(self):
            super().__init__()
            self.w1, self.w3 = nn.Linear(H, FFN, bias=False), nn.Linear(H, FFN, bias=False)
            self.w2 = nn.Linear(FFN, H, bias=False)

        def forward(self, x):
            return self.w2(F.silu(self.w1(x)) * self.w3(x))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.attention_norm, self.ffn_norm = nn.RMSNorm(H), nn.RMSNorm(H)
            self.attention, self.feed_forward = Attention(), FeedForward()

        def forward(self, x):
            x = x + self.attention(self.attention_norm(x))
            return x + self.feed_forward(self.ffn_norm(x))

    mesh = init_device_mesh("cpu", (T,), mesh_dim_names=("tp",))
    torch.manual_seed(0)
    blocks = nn.Sequential(*[Block() for _ in range(LAYERS)])
    if plan == "block":
        gathering = {"attention": PrepareModuleInput(input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),)),
                     "feed_forward": PrepareModuleInput(input_layouts=(Shard(1),),
                                                        desired_input_layouts=(Replicate(),)),
                     **{name: ColwiseParallel() for name in ("attention.wq", "attention.wk", "attention.wv",
                                                              "feed_forward.w1", "feed_forward.w3")}}
    else:
        gathering = {name: ColwiseParallel(input_layouts=Shard(1))
                     for name in ("attention.wq", "attention.wk", "attention.wv", "feed_forward.w1",
                                  "feed_forward.w3")}
    for block in blocks:
        parallelize_module(block, mesh, {"attention_norm": SequenceParallel(), "ffn_norm": SequenceParallel(),
                                         "attention.wo": RowwiseParallel(output_layouts=Shard(1)),
                                         "feed_forward.w2": RowwiseParallel(output_layouts=Shard(1)), **gathering})
    if recompute != "none":
        blocks = nn.Sequential(*[_checkpointed(block, recompute) for block in blocks])
    x = torch.randn(1, TOKENS, H).chunk(T, dim=1)[rank].clone().requires_grad_()

    def key(name, args):
        op = name.split(".")[1] if "_c10d_functional" in name else ""
        if op not in ("all_gather_into_tensor", "reduce_scatter_tensor", "all_reduce"):
            return None
        return f"{op} {args[0].numel() * (T if op == 'all_gather_into_tensor' else 1)}"    # the buffer in all

    return dispatched_per_pass(lambda: blocks(x), key)


#: torchtitan's op-level policy (torchtitan/parallelisms/parallelize_llama.py at 9dec370a, _save_list and
#: _custom_policy): keep the outputs of the matmuls but every second one, of the attention kernels and of the
#: reduce-scatters; recompute the rest (the all-gathers among them)
def _checkpointed(block, recompute: str):
    from collections import defaultdict

    import torch
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
    from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts

    if recompute == "full":
        return checkpoint_wrapper(block, preserve_rng_state=False)
    save = {torch.ops.aten.mm.default, torch.ops.aten._scaled_dot_product_efficient_attention.default,
            torch.ops.aten._scaled_dot_product_flash_attention.default,
            torch.ops._c10d_functional.reduce_scatter_tensor.default, torch.ops.aten.abs.default,
            torch.ops.aten.max.default}

    def context():
        meta = defaultdict(int)

        def policy(ctx, func, *args, **kwargs):
            key = f"{'recompute' if ctx.is_recompute else 'forward'}_mm_count"
            if func == torch.ops.aten.mm.default:
                meta[key] += 1
            keep = func in save and not (func == torch.ops.aten.mm.default and meta[key] % 2 == 0)
            return CheckpointPolicy.MUST_SAVE if keep else CheckpointPolicy.PREFER_RECOMPUTE
        return create_selective_checkpoint_contexts(policy)

    return checkpoint_wrapper(block, context_fn=context, preserve_rng_state=False)


def _torch_counts(plan: str, recompute: str = "none") -> list[dict]:
    return run_ranks(T, _counted_step, plan, recompute)


def _hybrid_counts(plan: str, recompute: str = "none") -> dict:
    answer = symcomm.evaluate("hybrid", Phi=1000, h=H, L=LAYERS, a=HEADS, s=TOKENS, t=T, p=1, c=1, d=1, b=1, m=1,
                              G=T, framework="fsdp2", zero=3, sp=1, embeddings=0, gated=1, sp_input=plan,
                              recompute=recompute)
    name = {"all_gather": "all_gather_into_tensor", "reduce_scatter": "reduce_scatter_tensor", "all_reduce": "all_reduce"}
    counted = collections.Counter()
    for term in answer["terms"]:
        if term["axis"] == "tp" and term["count"]:
            # a recompute's forward collectives run inside the backward
            phase = "backward" if "(backward)" in term["label"] or "recompute)" in term["label"] else "forward"
            counted[f"{phase} {name[term['collective']]} {term['message']}"] += term["count"]
    return dict(counted)


# by hand, per rank and step of the 2 layers: each layer's forward gathers the sequence for its attention and its
# feed-forward (block: 2) or for each of q, k, v, w1, w3 (linear_gated: 5) and reduce-scatters wo's and w2's outputs
# (2); the backward runs each one's gradient, the other way round (torch keeps the gathered inputs: no re-gather);
# every buffer 16 tokens × 32 = 512 elements in all, 256 a rank
BY_HAND = {"block": {"forward all_gather_into_tensor 512": 4, "forward reduce_scatter_tensor 512": 4,
                     "backward all_gather_into_tensor 512": 4, "backward reduce_scatter_tensor 512": 4},
           "linear_gated": {"forward all_gather_into_tensor 512": 10, "forward reduce_scatter_tensor 512": 4,
                            "backward all_gather_into_tensor 512": 4, "backward reduce_scatter_tensor 512": 10}}


# recompute, torchtitan's plan: a full recompute runs each block's forward again inside the backward, but PyTorch's
# non-reentrant checkpoint stops once the tensors the backward saved are made again (frameworks.RECOMPUTE_EARLY_STOP):
# the feed-forward's reduce-scatter, whose output only the residual add reads, is not run again: 2 gathers and 1
# reduce-scatter a layer more (8 and 6 there); the op policy keeps the reduce-scatters' outputs and reruns the rest,
# the gathers among them (8 gathers, 4 reduce-scatters there)
RECOMPUTED = {"full": {"forward all_gather_into_tensor 512": 4, "forward reduce_scatter_tensor 512": 4,
                       "backward all_gather_into_tensor 512": 8, "backward reduce_scatter_tensor 512": 6},
              "op": {"forward all_gather_into_tensor 512": 4, "forward reduce_scatter_tensor 512": 4,
                     "backward all_gather_into_tensor 512": 8, "backward reduce_scatter_tensor 512": 4}}


@pytest.mark.torch      # skipped without torch, failed in CI (tests/conftest.py)
@pytest.mark.parametrize("plan", ["block", "linear_gated"])
def test_torch_tensor_parallel_sends_what_the_hybrid_counts(plan):
    assert _torch_counts(plan) == [BY_HAND[plan]] * T
    assert _hybrid_counts(plan) == BY_HAND[plan]


@pytest.mark.torch
@pytest.mark.parametrize("recompute", ["full", "op"])
def test_torchtitans_recompute_reruns_what_the_hybrid_counts(recompute):
    assert _torch_counts("block", recompute) == [RECOMPUTED[recompute]] * T
    assert _hybrid_counts("block", recompute) == RECOMPUTED[recompute]
