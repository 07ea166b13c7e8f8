"""The planner: layouts ranked by the step-time model, checked by hand on a 16-GPU cluster (two
nodes of 8 A100s) and against a published layout (Korthikanti et al. 2022, 175B on 64 A100s)."""

import csv
import io
import itertools
import json
import re
import shlex
from pathlib import Path

import numpy as np
import pytest

from symcomm import presets
from symcomm.training import steptime
from symcomm.commands.main import main
from symcomm.planner import PlanError, Request, enumerate_layouts, memory_floor, plan

LLAMA8B = presets.model("llama3-8b")
A100 = presets.hardware("a100")
PHI = 8_030_261_248
ALPHA_INTER = 9.6e-6                                # NCCL's network constant (s per message)
BETA_INTER = 1 / 25e9                               # s per byte: HDR 200 Gb/s
BETA = 1 / 300e9                                    # s per byte inside a node: NVLink 3, 600 GB/s both ways / 2
HBM = 2.039e12                                      # A100 80 GB: 2,039 GB/s
GAMMA = 3 / HBM                                     # s per reduced byte (2 reads + 1 write of HBM)
PEAK = 312e12                                       # A100 BF16 dense (datasheet)


def _replaced(argv, flag: str, value: str) -> list:
    """``argv`` with ``flag``'s value replaced (an option is given once: symcomm.commands.runner.Parser)."""
    argv = list(argv)
    if flag in argv:
        argv[argv.index(flag) + 1] = value
        return argv
    return argv + [flag, value]


def small(**kw):
    args = dict(model=LLAMA8B, hardware=A100, gpus=16, batch=32, seq=2048, gpus_per_node=8)
    args.update(kw)
    return Request(**args)


def compare(**spec):
    return tuple((key, str(value)) for key, value in spec.items())


def test_every_layout_is_enumerated():
    got = enumerate_layouts(small())
    # written out with plain loops: Llama 3 8B has 32 heads, 8 K/V heads and 32 layers; 16 GPUs of 8 per node,
    # batch 32, seq 2048.  t | 8 (a node, the K/V heads), p | 32, c | 2048, d = 16/(t·p·c), micro-batch mb ∈ {1, 2,
    # 4, 8} with d·mb | 32, m = 32/(d·mb); v = 1 (1F1B), or v ≥ 2 with p ≥ 2, p·v | 32 and p | m (interleaved)
    want = set()
    for t, p, c, mb in itertools.product((1, 2, 4, 8), (1, 2, 4, 8, 16, 32), (1, 2, 4, 8, 16), (1, 2, 4, 8)):
        if 16 % (t * p * c):
            continue
        d = 16 // (t * p * c)
        if 32 % (d * mb):
            continue
        m = 32 // (d * mb)
        for v in range(1, 33):
            if v == 1 or (p >= 2 and 32 % (p * v) == 0 and m % p == 0):
                want.add((t, p, v, c, 1, d, mb, m))
    even = got["split"] == 0
    rows = set(zip(*(got[k][even].tolist() for k in ("t", "p", "v", "c", "e", "d", "mb", "m"))))
    assert rows == want
    # the other rows split the 32 layers unevenly: only where p·v does not divide them (here v = 3 or 6, the
    # chunk counts the planner tries besides the divisors), the middle chunks whole and the ends within ±2 of them
    for p, v, first, last in zip(*(got[k][~even].tolist() for k in ("p", "v", "L_first", "L_last"))):
        assert 32 % (p * v) and v in (3, 6)
        middle = (32 - first - last) // (p * v - 2)
        assert middle * (p * v - 2) == 32 - first - last and abs(first - middle) <= 2 and abs(last - middle) <= 2
    # 1F1B with micro-batches of one sequence: 34 layouts (t, p, c, d powers of two, t ≤ 8, t·p·c·d = 16:
    # exponents (i, j, k), i ≤ 3, i + j + k ≤ 4 → 15 + 10 + 6 + 3)
    assert len(enumerate_layouts(small(micro_batch=1, vp=1))["t"]) == 34


def test_step_time_by_hand():
    # Llama 3 8B, pure data parallel over 16 A100s, micro-batches of 2 sequences (m = 32/(16·2) = 1), Megatron DDP,
    # no recompute, no SP.  Forward FLOPs of one micro-batch (matmuls, 2 per multiply-add; Narayanan et al. 2021
    # appendix, with grouped-query K, V of width h_kv = 8·128 and a SwiGLU MLP of three h × F matrices):
    B, s, h, h_kv, F, V, L = 2, 2048, 4096, 1024, 14336, 128256, 32
    layer = 2 * B * s * h * (2 * h + 2 * h_kv) + 4 * B * s * s * h + 3 * 2 * B * s * h * F
    forward = L * layer + 2 * B * s * h * V                       # + the LM head
    # the A100 preset's eta and kappa with every GEMM shape-independent (w_half = 0: the width term is its own
    # test, tests/training/test_compute.py), so the compute is FLOPs over peak·η as counted here
    import dataclasses
    flat = dataclasses.replace(A100, step_time=tuple((k, 0.0 if k == "w_half" else v) for k, v in A100.step_time))
    eta, kappa = dict(flat.step_time)["eta"], dict(flat.step_time)["kappa"]
    # forward + backward = 3 × forward at peak · η; the memory-bound kernels: κ HBM passes over the 34·s·B·h bytes
    # per layer Korthikanti et al. 2022 Table 2 stores at t = 1 (flash attention: no scores)
    # causal flash attention runs half of the 4·B·s²·h core (FlashAttention-2, Dao 2023, §3.1.1): 2·B·s²·h per layer
    # fewer FLOPs executed than the convention counts (MFU below keeps the convention's count)
    # and its backward runs 5/2 of the forward's core (the scores recomputed: five s × s GEMMs to two, FlashAttention-2
    # Algorithm 2), half a forward core more than 3 × forward; the core at the A100 preset's eta_attn, FlashAttention-2's
    # share on A100 (its release chart: 182 of the 312 TFLOP/s peak at 8k, causal, head dim 128), the rest at eta
    executed_core = L * 2 * B * s * s * h
    eta_attn = dict(flat.step_time)["eta_attn"]
    assert eta_attn == pytest.approx(182 / 312, abs=5e-4)
    # Megatron's memory-bound work beside: its unfused vocab-parallel cross-entropy, 38 + 14 bytes per logit of the
    # B·s × V logits (megatron/core/tensor_parallel/cross_entropy.py at NVIDIA/Megatron-LM f2e5db402c: .float() 2 + 4,
    # max 4, subtract 4 + 4, exp 4 + 4, sum 4, div_ 4 + 4; mul_ 4 + 4, the cast back 4 + 2), and its weight
    # gradients accumulated into the fp32 buffer in place (gradient accumulation fusion, on by default there):
    # 4 + 4 bytes read and written where a GEMM's 2-byte write is counted, 6 more per weight element
    loss = (38 + 14) * B * s * V / HBM
    accumulate = 6 * (L * (h * (h + 2 * h_kv) + h * h + 3 * h * F) + h * V) / HBM
    compute = (3 * (forward - 2 * executed_core) / (PEAK * eta) + 3.5 * executed_core / (PEAK * eta_attn)
               + kappa * 34 * s * B * h * L / HBM + loss + accumulate)
    # Megatron DDP: one ring all-reduce of the fp32 gradients over 16 GPUs on two nodes, after the backward and
    # not overlapped (--overlap-grad-reduce off): 2·15 messages, 2·15/16·4Φ bytes moved, 15/16·4Φ reduced.  The
    # ring's 8 ranks on a node share its crossings over their 8 NICs (NCCL's channels, one NIC each: 1/8 of what a
    # rank sends crosses at β_inter, 7/8 stays on NVLink, the two legs at once: the slower sets the time); every
    # step waits for a crossing hop (α_inter)
    allreduce = (30 * ALPHA_INTER + 2 * 15 / 16 * 4 * PHI * max(BETA_INTER / 8, 7 * BETA / 8)
                 + 15 / 16 * 4 * PHI * GAMMA)
    # Adam over all Φ parameters, memory-bound: 26 bytes (fp32 weight, m, v read and written, bf16 weight
    # written) + the 4-byte fp32 gradient read, at the HBM bandwidth
    # and the fp32 gradient buffer (4Φ bytes) zeroed, scaled by 1/d and its NaN-check norm read per step
    # (megatron/core/distributed/ at f2e5db402c: zero_grad_buffer, Bucket.start_grad_sync): 4 passes
    optimizer = PHI * (26 + 4) / HBM + 4 * 4 * PHI / HBM
    result = plan(small(hardware=flat, compare=compare(t=1, p=1, c=1, d=16, mb=2, zero=0, framework="megatron",
                                                       recompute="none", sp=0)), top=5)
    got = result.compare
    assert got["step_time"] == pytest.approx(compute + allreduce + optimizer, rel=1e-9)
    assert got["compute_time"] == pytest.approx(compute, rel=1e-9)
    assert got["exposed_comm_time"] == pytest.approx(allreduce, rel=1e-9)
    assert got["bubble_time"] == 0 and got["bubble_fraction"] == 0            # p = 1: no pipeline
    # tokens/s = b·s / step; MFU = model FLOPs of the batch (16 micro-batches' 3 × forward) / (step · 16 · peak)
    assert got["tokens_per_second"] == pytest.approx(32 * 2048 / got["step_time"], rel=1e-12)
    assert got["mfu"] == pytest.approx(16 * 3 * forward / (got["step_time"] * 16 * PEAK), rel=1e-9)
    # 18 bytes per parameter (bf16 weight, fp32 gradient buffer, 12 bytes of Adam) + per token and layer 34h less
    # Korthikanti's 4h GeLU MLP's 16h plus the SwiGLU MLP's 6F (FC1's 2F-wide output, FC2's input; F = 14,336), less
    # the two dropout masks (2h: Llama 3 trains without dropout) and K and V at h_kv (4(h − h_kv)): 12h + 4h_kv + 6F;
    # 142 GB, more than an 80 GB A100: shown because asked for, not ranked
    # memory: 18 bytes a parameter, the activations, and the last stage's logits of one micro-batch (the bf16
    # LM-head output and its fp32 copy in Megatron-LM's cross_entropy.py: 6 bytes × B·s tokens × V)
    activations = (12 * h + 4 * h_kv + 6 * 14_336) * s * B * L
    assert got["memory_bytes"] == pytest.approx(18 * PHI + activations + 6 * B * s * V, rel=1e-12)
    assert got["fits"] is False
    assert got["axes"]["dp"]["comm_time"] == pytest.approx(allreduce, rel=1e-9)


def test_memory_by_hand_and_floor():
    result = plan(small(memory_check=False, compare=compare(t=1, p=1, c=1, d=16, mb=1, zero=3, framework="deepspeed",
                                                             recompute="none", sp=0)), top=1)
    # ZeRO-3: 16 bytes/parameter over 16 GPUs; activations per token and layer (t = 1) Korthikanti et al.'s 34h with
    # their 4h GeLU MLP's tensors (16h) given way to Llama 3 8B's SwiGLU at F = 14,336: FC1's 2F-wide output and FC2's
    # input, 6F bytes, less the two dropout masks (2h: Llama 3 trains without dropout; K and V h wide: the models
    # DeepSpeed trains repeat them to the query heads); 32 layers, one micro-batch of one sequence in flight (p = 1);
    # its logits: 6 bytes (bf16 output + fp32 cross-entropy copy, Megatron-LM cross_entropy.py) × 2048 tokens × V =
    # 128,256
    activations = (16 * 4096 + 6 * 14_336) * 2048 * 32
    # DeepSpeed's per-submodule fetches held at a layer's grain: the layer computing and the one prefetched (2 bytes a
    # parameter each) and the gradients of the one computing and the one being reduced (2 bytes each), 8 bytes over
    # one layer's parameters, (Φ − 2·V·h)/L of the untied model
    gathered = 8 * (PHI - 2 * 128_256 * 4096) / 32
    # and its reduction bucket, 5·10⁸ bf16 elements (stage3.py: the IPG buffer, contiguous_gradients on by default)
    assert result.compare["memory_bytes"] == pytest.approx(16 * PHI / 16 + activations + 6 * 2048 * 128_256 + gathered
                                                           + 2 * 500_000_000, rel=1e-12)
    # ZeRO-0 keeps 18Φ = 144 GB per GPU at t = p = 1: more than an 80 GB A100 (81,920 MiB as NVML reports it), so
    # the memory check drops it
    checked = plan(small())
    for row in checked.rows():
        assert row["memory_bytes"] <= 81_920 * 2**20
        if row["t"] == row["p"] == 1:
            assert all(s["zero"] != 0 for s in row["settings"])
    # the floor the planner prunes with is below the step model's memory wherever the model was evaluated
    everything = plan(small(memory_check=False))
    layouts = everything._layouts
    for block in everything._blocks:
        floor = memory_floor(small(), {k: v[block.rows] for k, v in layouts.items()})
        assert np.all(floor <= block.memory * (1 + 1e-12))


def test_ranked_by_step_time_and_pruning_changes_nothing():
    full = plan(small(), top=None)
    steps = full.layouts["step_time"]
    assert len(full) > 100 and np.all(np.diff(steps) >= 0)
    # the step time of every shown row is the step model's, whatever the planner pruned: top = 10 compiles fewer
    # option combinations and gives the same first 10 rows
    pruned = plan(small(), top=10)
    assert pruned.combinations[0] < full.combinations[0]
    assert [(r["t"], r["p"], r["v"], r["c"], r["d"], r["mb"], r["labels"]) for r in pruned.rows(10)] == \
           [(r["t"], r["p"], r["v"], r["c"], r["d"], r["mb"], r["labels"]) for r in full.rows(10)]
    first = full.rows(1)[0]
    # evaluated again, alone, by steptime.quantities at that layout
    setting = first["settings"][0]
    options = {"zero": str(setting["zero"]), "framework": setting["framework"], "sp": str(setting["sp"]),
               "recompute": setting["recompute"], "schedule": first["schedule"], "gated": "1", "gqa": "1",
               "embeddings": "1", "tied": "0", "moe": "0", "cp": "ring",
               "reshard_after_forward": "framework" if setting["framework"] != "fsdp"
               else str(setting["reshard_after_forward"])}
    values = {**LLAMA8B.values(), "F": 14336, "s": 2048, "b": 32, **A100.values(2), "G": 8,
              **A100.compute_values("bf16"), **{k: first[k] for k in ("t", "p", "v", "c", "e", "d", "m")}}
    assert steptime.quantities(values, 2, **options)["step_time"] == pytest.approx(first["step_time"], rel=1e-12)


def test_settings_that_change_nothing_are_folded():
    result = plan(small(gpus=8, tp=8, pp=1, micro_batch=1, vp=1, sp=0, recompute="none"), top=None)
    # t = 8 on 8 GPUs leaves d = 1 (p = 1: DeepSpeed's pipeline engine runs no ZeRO-2 or -3, frameworks.py): every data-parallel collective runs over one rank ((N − 1)/N = 0:
    # nothing sent) and ZeRO shards over one rank (each GPU keeps everything), so Megatron's zero 0 and 1 fold into
    # one row (fp32 gradient buffer: 4 bytes a parameter, and the optimizer reads 4); DeepSpeed zero 2 (bf16
    # gradients and its 5·10⁸-element bf16 gradient bucket, stage_1_and_2.py) apart; DeepSpeed zero 3 (the same
    # bucket, stage3.py) and FSDP full-shard (its root unit, the embedding and LM head, kept gathered from the forward
    # through the backward: _runtime_utils.py _post_forward_reshard) apart, both per-layer units otherwise alike
    # (DeepSpeed's per-submodule fetches counted at a layer's grain) holding two gathered layers and their gradients
    # besides (one FSDP unit per transformer block, frameworks.FSDP_UNITS); grad-op its layers gathered from the
    # forward to the backward, Megatron-FSDP, and FSDP2 as torchtitan runs it (its sharded parameter is the fp32
    # master, no 16-bit shard: _fsdp_param.py; the eager loss's 12 bytes per logit; eager norms, rotary and SwiGLU by
    # default: torchtitan training.compile false) apart
    assert len(result) == 7
    labels = [sorted(r["labels"]) for r in result.rows()]
    assert sorted(labels) == sorted([["megatron zero 0 rc=none", "megatron zero 1 rc=none"],
                                     ["deepspeed zero 2 rc=none"], ["deepspeed zero 3 rc=none"],
                                     ["fsdp full-shard rc=none"], ["fsdp grad-op rc=none"], ["megatron-fsdp rc=none"],
                                     ["fsdp2 rc=none"]])
    by_label = {label: r for r in result.rows() for label in r["labels"]}
    megatron, zero2 = by_label["megatron zero 0 rc=none"], by_label["deepspeed zero 2 rc=none"]
    others, full_shard = by_label["deepspeed zero 3 rc=none"], by_label["fsdp full-shard rc=none"]
    assert megatron["memory_bytes"] > others["memory_bytes"]
    # zero 2 and zero 3 both hold the 5·10⁸-element bf16 bucket; zero 3 besides its two gathered layers and their two
    # bf16 gradients: 8 bytes over one layer's parameters on a GPU, (Φ − 2·V·h)/(L·t) at t = 8
    layer = (PHI - 2 * 128_256 * 4096) / (32 * 8)
    assert zero2["memory_bytes"] - others["memory_bytes"] == pytest.approx(-8 * layer, rel=1e-9)
    # FSDP full-shard: no bucket, but the gathered root's bf16 embedding and LM head, 2·2·V·h/t bytes
    assert full_shard["memory_bytes"] - others["memory_bytes"] == pytest.approx(2 * 2 * 128_256 * 4096 / 8
                                                                                - 2 * 500_000_000, rel=1e-9)
    # no two rows of a full ranking share layout, step time and memory
    full = plan(small(), top=None)
    seen = set()
    for r in full.rows():
        key = (r["t"], r["p"], r["v"], r["c"], r["d"], r["mb"], round(r["step_time"], 12), round(r["memory_bytes"]))
        assert key not in seen
        seen.add(key)


CASES = [
    (LLAMA8B, A100, 16, 32, 2048),
    (presets.model("gpt3-175b"), A100, 64, 64, 2048),
    (presets.model("llama3-70b"), presets.hardware("h100"), 256, 256, 8192),
]


@pytest.mark.parametrize("model, hardware, gpus, batch, seq", CASES)
def test_first_row_is_no_bubble_heavy_layout_when_a_leaner_one_is_close(model, hardware, gpus, batch, seq):
    # the step model counts the (p − 1)/v idle pipeline slots in the step time (Narayanan et al. 2021 §2.2), so a
    # layout idling more than a quarter of its compute cannot lead while one with a smaller bubble is within 5 %
    result = plan(Request(model=model, hardware=hardware, gpus=gpus, batch=batch, seq=seq), top=None)
    rows = result.layouts
    first_step = rows["step_time"][0]
    first_bubble = (rows["p"][0] - 1) / (rows["v"][0] * rows["m"][0])
    bubbles = (rows["p"] - 1) / (rows["v"] * rows["m"])
    close = rows["step_time"] <= 1.05 * first_step
    assert not (first_bubble > 0.25 and np.any(close & (bubbles < first_bubble)))


def published(run_id: str) -> dict:
    from symcomm.derivations import published as runs

    (run,) = [r for r in runs.runs() if r["id"] == run_id]
    return run


def test_korthikanti_175b_is_found_and_ranked():
    # Korthikanti et al. 2022, Table 5: GPT-3 175B on 64 A100s, batch 64, t = 8, p = 8, interleaved with v = 3,
    # micro-batch 1, sequence parallel + selective recompute, Megatron DDP (d = 1)
    run = published("korthikanti2022-t5-175b-sp-selective")
    assert (run["t"], run["p"], run["v"], run["d"], run["gpus"], run["global_batch"]) == (8, 8, 3, 1, 64, 64)
    spec = compare(t=run["t"], p=run["p"], v=run["v"], d=run["d"], c=1, mb=run["micro_batch"],
                   recompute=run["recompute"], sp=int(run["sp"]), framework="megatron", zero=0)
    req = Request(model=presets.model("gpt3-175b"), hardware=A100, gpus=64, batch=64, seq=2048, compare=spec)
    result = plan(req, top=10)
    got = result.compare
    assert (got["t"], got["p"], got["v"], got["d"], got["mb"], got["m"]) == (8, 8, 3, 1, 1, 64)
    assert got["matching"] == 1 and got["fits"]
    # the planner's first row is at least as fast, by the model, as the published layout
    assert result.rows(1)[0]["step_time"] <= got["step_time"]
    # its rank is 1 + the rows faster than it in the complete ranking (every layout timed)
    full = plan(req, top=None)
    assert got["rank"] == 1 + int(np.sum(full.layouts["step_time"] < got["step_time"] * (1 - 1e-9)))
    assert got["rank"] > 1
    # the same step time as the step model gives that layout alone (GPT: GELU MLP, 2 matrices; tied as GPT-3's
    # embedding and LM head are, Radford et al. 2019 / Brown et al. 2020)
    model = presets.model("gpt3-175b")
    values = {**model.values(), "F": model.ffn, "s": 2048, "b": 64, **A100.values(2), "G": 8,
              **A100.compute_values("bf16"), "t": 8, "p": 8, "v": 3, "c": 1, "e": 1, "d": 1, "m": 64}
    alone = steptime.quantities(values, 2, zero="0", framework="megatron", reshard_after_forward="framework",
                              sp="1", recompute="selective", schedule="interleaved", gated="0", gqa="1",
                              embeddings="1", tied="1", moe="0", cp="ring")
    assert got["step_time"] == pytest.approx(alone["step_time"], rel=1e-12)


def test_zero2_reduces_every_micro_batch_llama3_70b():
    # Issue 12's worked check, on one pipeline stage (DeepSpeed's pipeline engine runs no ZeRO-2:
    # deepspeed/runtime/pipe/engine.py): Llama-3-70B on 64 H100, t=1, p=1, d=64, m=16 (batch 1024 / d).  ZeRO-1
    # (Megatron's distributed optimizer) reduce-scatters the shard once per step and all-gathers it once;
    # DeepSpeed ZeRO-2 reduces after each of the 16 micro-batches (deepspeed/runtime/engine.py, allreduce_gradients),
    # each time an all-reduce of the whole bucket of which every rank keeps its partition (stage_1_and_2.py,
    # allreduce_and_scatter, v0.12.4 on): a ring all-reduce is a reduce-scatter then an all-gather, so 16 of each
    # and the parameter all-gather, where ZeRO-1 runs 1 + 1.  The one stage's shard is all Φ.
    model, h100 = presets.model("llama3-70b"), presets.hardware("h100")
    hw = h100.values(2)
    shard = model.parameters
    # t = 1: the data-parallel group holds 8 ranks on each node, sharing its crossings over their 8 NICs (1/8 of
    # each rank's elements at β_inter, 7/8 on NVLink at β, the two legs at once: the slower sets the time; every
    # step at α_inter)
    link = max(hw["beta_inter"] / 8, 7 * hw["beta"] / 8)
    rs = 63 * hw["alpha_inter"] + 63 / 64 * shard * (link + hw["gamma"])
    ag = 63 * hw["alpha_inter"] + 63 / 64 * shard * link
    rs32 = 63 * hw["alpha_inter"] + 2 * 63 / 64 * shard * (link + hw["gamma"])   # fp32: twice
    layout = dict(t=1, p=1, v=1, c=1, d=64, mb=1, recompute="none", sp=0)
    for scheme, dp in (({"zero": 2, "framework": "deepspeed"}, 16 * (rs + ag) + ag), ({"zero": 1, "framework": "megatron"},
                                                                              rs32 + ag)):
        req = Request(model=model, hardware=h100, gpus=64, batch=1024, seq=8192, memory_check=False,
                      compare=compare(**layout, **scheme))
        got = plan(req, top=1).compare
        assert got["m"] == 16
        assert got["axes"]["dp"]["comm_time"] == pytest.approx(dp, rel=1e-9)
        if scheme["zero"] == 2:
            # DeepSpeed does not overlap ZeRO-2's reductions (overlap_comm off below stage 3): all exposed
            assert got["axes"]["dp"]["exposed_comm_time"] == pytest.approx(dp, rel=1e-9)


def test_moe_with_tensor_parallel_needs_sequence_parallel():
    # Megatron-Core (megatron/core/transformer/moe/moe_layer.py) refuses MoE with t > 1 and no SP
    mixtral = plan(small(model=presets.model("mixtral-8x7b"), gpus=64, batch=64, memory_check=False), top=None)
    rows = mixtral.rows()
    assert any(r["t"] > 1 for r in rows)
    assert all(s["sp"] == 1 for r in rows if r["t"] > 1 for s in r["settings"])


def test_fixed_options_and_bubble_limit():
    result = plan(small(tp=2, pp=2, recompute="full", zero=1), top=None)
    assert len(result) > 0
    for r in result.rows():
        assert (r["t"], r["p"]) == (2, 2)
        assert all(s["recompute"] == "full" and s["zero"] == 1 and s["framework"] == "megatron"
                   for s in r["settings"])
    limited = plan(small(max_bubble=0.1), top=None)
    assert np.all((limited.layouts["p"] - 1) / (limited.layouts["v"] * limited.layouts["m"]) <= 0.1)


def test_no_sympy_per_layout(monkeypatch):
    plan(small(), top=None)                            # builds every evaluator once
    import sympy

    def forbidden(*a, **k):
        raise AssertionError("SymPy called while evaluating layouts")
    monkeypatch.setattr(sympy.Basic, "subs", forbidden)
    monkeypatch.setattr(sympy, "lambdify", forbidden)
    bigger = plan(small(gpus=64, batch=64), top=None)  # more layouts, same expressions
    assert bigger.considered > plan(small(), top=None).considered


def test_impossible_requests():
    with pytest.raises(PlanError, match="--gpus=12 is not allowed"):
        plan(small(gpus=12))
    with pytest.raises(PlanError, match="no layout fits in"):
        plan(small(model=presets.model("llama3-405b"), gpus=8, batch=8))
    with pytest.raises(PlanError, match="--micro-batch=3 is not allowed .*choose 1, 2, 4, 8, 16, 32"):
        plan(small(micro_batch=3))


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


ARGS = ("plan", "--model", "llama3-8b", "--gpus", "16", "--gpus-per-node", "8", "--hardware", "a100",
        "--batch", "32", "--seq", "2048")


def test_cli_text_json_and_csv(capsys):
    code, out, err = run(capsys, *ARGS, "--top", "3", "--compare", "t=8,p=2,d=1,mb=1")
    assert code == 0, err
    assert "ranked by step time" in out and "assumptions:" in out and "best layout, per axis" in out
    assert "--compare (" in out and "rank" in out
    code, out, err = run(capsys, *ARGS, "--top", "3", "--json", "--compare", "t=8,p=2,d=1,mb=1")
    got = json.loads(out)
    assert len(got["layouts"]) == 3 and got["gpus"] == 16 and got["parameters"] == PHI
    assert got["units"]["step_time"] == "s" and got["units"]["memory_bytes"] == "bytes"
    steps = [row["step_time"] for row in got["layouts"]]
    assert steps == sorted(steps)
    assert got["compare"]["rank"] >= 1 and (got["compare"]["t"], got["compare"]["d"]) == (8, 1)
    for row in got["layouts"]:
        assert row["tokens_per_second"] == pytest.approx(32 * 2048 / row["step_time"], rel=1e-12)
        assert 0 < row["mfu"] < 1 and row["memory_bytes"] <= 80e9
    assert set(got["layouts"][0]["axes"]) >= {"tp", "pp", "dp"}
    code, out, err = run(capsys, *ARGS, "--top", "3", "--csv", "--compare", "t=8,p=2,d=1,mb=1")
    table = list(csv.DictReader(io.StringIO(out)))
    assert len(table) == 4 and [r["rank"] for r in table[:3]] == ["1", "2", "3"]
    assert float(table[0]["step_time_s"]) == pytest.approx(got["layouts"][0]["step_time"], rel=1e-12)
    assert table[3]["rank"] == str(got["compare"]["rank"])


BAD = [
    (("--tp", "3"), "--tp=3", "choose 1, 2, 4, 8"),
    (("--pp", "5"), "--pp=5", "choose 1, 2, 4, 8, 16"),
    (("--vp", "7"), "--vp=7", "choose 1, 2, 3, 4, 6, 8, 16"),
    (("--vp", "0"), "--vp", "from 1 to"),
    (("--dp", "3"), "--dp=3", "choose 1, 2, 4, 8, 16"),
    (("--cp", "3"), "--cp=3", "choose 1, 2, 4, 8, 16"),
    (("--cp", "ulysses"), "--cp=ulysses", "--cp-algorithm ring or ulysses"),
    # Ulysses splits the heads: c | the model's 8 K/V heads (and 64 heads), so the choices stop at 8 (an outsider was
    # offered 16 and 32, which the search then refused)
    (("--cp-algorithm", "ulysses", "--cp", "3"), "--cp=3", "choose 1, 2, 4, 8\n"),
    (("--ep", "2"), "--ep=2", "choose 1"),
    (("--micro-batch", "3"), "--micro-batch=3", "choose 1, 2, 4, 8, 16, 32"),
    (("--micro-batch", "x"), "--micro-batch", "takes a number"),
    (("--zero", "4"), "--zero=4", "choose 0, 1, 2 or 3"),
    (("--zero", "2", "--framework", "megatron"), "--zero=2", "it runs zero 0, 1"),
    (("--framework", "torch"), "--framework=torch", "choose megatron, deepspeed, fsdp, fsdp2 or megatron_fsdp"),
    (("--recompute", "yes"), "--recompute=yes", "choose none, selective, full or op (0 = none, 1 = full)"),
    (("--sp", "2"), "--sp=2", "choose 0 or 1"),
    (("--cp-algorithm", "tree"), "--cp-algorithm=tree", "choose ring, ulysses"),
    (("--compare", "x=1"), "--compare key 'x'", "choose t, p, v, c, e, d, mb"),
    (("--compare", "t"), "--compare 't'", "KEY=VALUE"),
    (("--compare", "t=3"), "--compare t=3", "choose 1, 2, 4, 8"),
    (("--compare", "recompute=some"), "--compare recompute=some", "choose none, selective, full or op (0 = none, 1 = full)"),
    (("--top", "0"), "--top", "from 1 to"),
    (("--max-bubble", "-1"), "--max-bubble", ""),
]


@pytest.mark.parametrize("extra, names, allowed", BAD)
def test_cli_bad_option_values(capsys, extra, names, allowed):
    code, out, err = run(capsys, *ARGS, *extra)
    assert code == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("symcomm: error: ") and names in err and allowed in err


def test_cli_errors(capsys):
    code, out, err = run(capsys, "plan", "--model", "llama9", "--gpus", "8", "--hardware", "h100", "--batch", "8")
    assert code == 2 and err.count("\n") == 1 and "--model 'llama9' is not allowed" in err
    code, out, err = run(capsys, "plan", "--model", "llama3-8b", "--hardware", "h100", "--batch", "8")
    assert code == 2 and "--gpus is required" in err
    code, out, err = run(capsys, "plan", "--model", "llama3-8b", "--gpus", "8", "--batch", "8")
    assert code == 2 and "--hardware is required; choose one of" in err


def test_rows_say_which_stage_is_busiest():
    result = plan(small(memory_check=False, pp=4, compare=compare(p=4)), top=1)
    axes = result.rows(1, axes=True)[0]["axes"]
    assert axes["pp"]["stage"] == "an interior pipeline stage"
    assert axes["dp"]["stage"] == "the last pipeline stage"                 # it holds the LM head
    assert plan(small(pp=1), top=1).rows(1, axes=True)[0]["axes"]["dp"]["stage"] == "the only stage"


# -- every optional field of a hardware file: a stated default, or a refusal naming it (issue 22, item 6) ---

SCHEMA = json.loads((Path(presets.__file__).parents[1] / "schema" / "hardware.schema.json").read_text())
OPTIONAL = sorted(set(SCHEMA["properties"]) - set(SCHEMA["required"]))
#: which commands cannot answer without the field (the step time has no default for its constants; the
#: planner's memory check none for the GPU's memory); every other command answers, with the stated default
NEEDED_BY = {"memory_bytes": {"plan"}, "hbm_bytes_per_second": {"plan", "eval hybrid"},
             "peak_flops": {"plan", "eval hybrid"}, "step_time": {"plan", "eval hybrid"}}


def _full_file(system) -> dict:
    """A hardware file with every field the schema allows, from a preset (as symcomm calibrate --base writes)."""
    def link(x):
        return {"bytes_per_second": x.bytes_per_second, "latency_s": x.latency_s, "title": x.title,
                "published": x.published, "conversion": x.conversion, "source": x.source,
                "latency_source": x.latency_source}

    return {"name": system.name, "title": system.title, "source": system.source, "intra": link(system.intra),
            "inter": link(system.inter), "inter_two_level": {**link(system.inter), "fitted_as": "two_level"},
            "gpus_per_node": system.gpus_per_node, "memory_bytes": system.memory_bytes,
            "hbm_bytes_per_second": system.hbm_bytes_per_second, "peak_flops": dict(system.peak_flops),
            "peak_source": system.peak_source, "step_time": {**dict(system.step_time), "source": "preset"},
            "compute_capability": list(system.compute_capability), "compute_capability_source": "preset",
            "nvlink": system.nvlink,
            # bounds for a type the step model never reads (fp32): present, and changing no answer
            "peak_flops_bounds": {"fp32": [1e12, 2e12]},
            "attention_shares": dict(system.attention_shares), "attention_source": system.attention_source,
            "calibration": [{"collective": "all_reduce", "algorithm": "ring", "ranks": 8, "alpha": 3.4e-6,
                             "beta": 1 / 450e9, "sizes_bytes": [1024, 2 ** 30], "efficiency": [0.5, 0.9],
                             # the γ its fit held: read two operands, write one, at the HBM bandwidth
                             "gamma_held": 3 / system.hbm_bytes_per_second}]}


def test_every_optional_field_is_listed_and_states_its_default():
    assert set(OPTIONAL) == {"name", "title", "source", "memory_bytes", "hbm_bytes_per_second", "peak_flops",
                             "peak_source", "step_time", "calibration", "inter_two_level", "attention_shares",
                             "attention_source", "peak_flops_bounds", "compute_capability",
                             "compute_capability_source", "nvlink"}
    for name in OPTIONAL:
        text = SCHEMA["properties"][name].get("description", "")
        assert "default" in text or "Absent" in text, name
    for name in set(SCHEMA["$defs"]["link"]["properties"]) - set(SCHEMA["$defs"]["link"]["required"]):
        assert "default" in SCHEMA["$defs"]["link"]["properties"][name].get("description", ""), name


COMMANDS = {
    "eval hybrid": ("eval", "hybrid", "--model", "llama3-8b", "t=1", "p=1", "d=8", "c=1", "b=64", "m=8", "--json"),
    "plan": ("plan", "--model", "llama3-8b", "--gpus", "8", "--batch", "64", "--seq", "4096", "--top", "2", "--json"),
    "eval dp": ("eval", "dp", "N=8", "Phi=1e9", "--json"),
    "compare": ("compare", "all_reduce", "N=8", "M=1GiB", "--json"),
    "nccl-tests": ("nccl-tests", "all_reduce", "--ranks", "8", "-b", "1M", "-e", "1G"),
}


@pytest.mark.parametrize("field", OPTIONAL + ["intra/title", "inter/source", "inter/latency_source"])
def test_a_hardware_file_without_an_optional_field(field, tmp_path, capsys):
    from symcomm.__main__ import main as symcomm_main

    document = _full_file(presets.hardware("h100"))
    if "/" in field:
        level, key = field.split("/")
        del document[level][key]
    else:
        del document[field]
    if field == "hbm_bytes_per_second":
        document["calibration"][0]["gamma_held"] = 0.0     # what calibrate writes for a GPU without one
    path = tmp_path / "hw.json"
    path.write_text(json.dumps(document))
    for command, argv in COMMANDS.items():
        code = symcomm_main([*argv, "--hardware", str(path)])
        out, err = capsys.readouterr()
        if command in NEEDED_BY.get(field, ()):
            # refused: one error line naming the field and the file, exit 2, nothing printed (notes may precede)
            errors = [line for line in err.splitlines() if not line.startswith("symcomm: note: ")]
            assert code == 2 and out == "", (command, out)
            assert len(errors) == 1 and errors[0].startswith("symcomm: error: "), err
            assert field in errors[0] and str(path) in errors[0] and "Traceback" not in err, err
            continue
        assert code == 0, (command, err)
        assert not re.search(r"\b(inf|infinity|nan)\b", out, re.IGNORECASE), (command, out)
        # the default taken is said by every command that takes it (nccl-tests here predicts from the file's
        # calibration of all_reduce, whose own gamma it uses, not the HBM's)
        if field == "hbm_bytes_per_second" and command != "nccl-tests":
            assert "no hbm_bytes_per_second: gamma = 0" in err, (command, err)
        if "--json" in argv:
            json.loads(out, parse_constant=lambda x: pytest.fail(f"{command} printed {x}"))


def test_a_non_finite_step_model_output_is_refused_by_the_planner():
    import dataclasses

    # a zero HBM bandwidth (no preset or file gives it: the schema says > 0) reaches a division in the kernels
    broken = dataclasses.replace(A100, hbm_bytes_per_second=0.0)
    with pytest.raises(PlanError, match="not a finite number"):
        plan(small(hardware=broken), top=1)


# -- from a plan row to eval (issue 22, item 9) -------------------------------------------------------

#: what the flex-dispatcher plans below fix (why: beside them)
FLEX_FIXED = ("--zero", "3", "--recompute", "none")
PLANS = [
    # dense, one node and two; the interleaved schedule (v ≥ 2) is asked for so that its rows appear
    ("--model", "llama3-8b", "--gpus", "16", "--gpus-per-node", "8", "--hardware", "a100", "--batch", "32",
     "--seq", "2048", "--top", "3"),
    ("--model", "llama3-8b", "--gpus", "16", "--hardware", "h100", "--batch", "64", "--seq", "4096", "--vp", "2",
     "--top", "2", "--no-embeddings", "--cp-algorithm", "ulysses"),
    # GPT's family (GELU MLP, tied embeddings), fp8 elements: a combination without a generated kernel
    ("--model", "gpt3-175b", "--gpus", "64", "--hardware", "h100", "--batch", "64", "--seq", "2048", "--top", "2",
     "--dtype", "fp8", "--recompute", "selective", "--tp", "8"),
    # MoE: expert parallelism and its sequence-parallel rule
    ("--model", "mixtral-8x7b", "--gpus", "32", "--hardware", "h100", "--batch", "64", "--seq", "4096", "--top", "2",
     "--compare", "t=1,e=8"),
    # MoE with the flex dispatcher (plan --dispatcher, eval's dispatcher=): DeepEP over two 4-GPU nodes (e = 8 spans
    # them: the network leg), HybridEP with t = 2 (expert_tp=1, as the flex dispatcher needs).  No shipped kernel holds
    # a flex dispatcher: each option set the plan searches is compiled with SymPy here (~0.14 s CPU each), so these
    # three fix ZeRO-3 and no recompute, the options of their top rows when nothing is fixed (the same rows, checked:
    # 20, 15 and 20 option sets compiled instead of 96, 72 and 96; 14 s of CPU each before, 3.4 s after)
    ("--model", "mixtral-8x7b", "--gpus", "16", "--gpus-per-node", "4", "--hardware", "h100", "--batch", "64", "--seq",
     "4096", "--top", "2", "--dispatcher", "deepep", "--ep", "8", *FLEX_FIXED),
    ("--model", "mixtral-8x7b", "--gpus", "16", "--hardware", "h100", "--batch", "64", "--seq", "4096", "--top", "2",
     "dispatcher=hybridep", "--tp", "2", *FLEX_FIXED),
    # and group-limited routing (2 of 4 groups of 2 experts; the 8 experts on two nodes of 4 GPUs)
    ("--model", "mixtral-8x7b", "--gpus", "16", "--gpus-per-node", "4", "--hardware", "h100", "--batch", "64", "--seq",
     "4096", "--top", "1", "--dispatcher", "deepep", "--ep", "8", "router_groups=4", "--router-group-topk", "2",
     *FLEX_FIXED),
    # attention as the model's shape fixes it, as eval fills it from the preset: DeepSeek-V3's MLA, Qwen3's query
    # heads wider than h/a (q_width=heads; the plan once counted them h wide and its rows' commands gave 9 % more)
    ("--model", "qwen3-30b-a3b", "--gpus", "16", "--gpus-per-node", "8", "--hardware", "h100", "--batch", "512",
     "--seq", "4096", "--top", "2"),
    ("--model", "deepseek-v3", "--gpus", "256", "--hardware", "h100", "--batch", "1024", "--seq", "4096", "--top",
     "2", "--tp", "1"),
    # an FP8 recipe, given (not searched): every row's eval command carries precision= (its option sets compiled here,
    # so the framework, ZeRO stage and recompute are fixed)
    ("--model", "llama3-8b", "--gpus", "16", "--hardware", "h100", "--batch", "32", "--seq", "4096", "--top", "2",
     "--precision", "fp8_tensor", "--framework", "megatron", "--zero", "1", "--recompute", "selective"),
    # an attention kernel at its published share (MPT's Triton port on A100), given: in every row's eval command
    ("--model", "llama3-8b", "--gpus", "16", "--hardware", "a100", "--batch", "32", "--seq", "4096", "--top", "2",
     "--attention-kernel", "triton", "--framework", "megatron", "--zero", "1", "--recompute", "selective"),
    # FlashAttention-2 named, searched free (every framework, recompute and schedule): the plan times it on the fused
    # core's shipped kernels at eta_fa2 (planner.kernels.timed_as), eval through its own step model
    ("--model", "llama3-8b", "--gpus", "16", "--hardware", "h100", "--batch", "32", "--seq", "8192", "--top", "3",
     "--attention-kernel", "fa2"),
    # a squared-ReLU MLP (Nemotron-4: two matrices, not gated), as eval reads it from the preset (Model.gated; the plan
    # once read it from the family, gpt or not)
    ("--model", "nemotron4-15b", "--gpus", "16", "--hardware", "h100", "--batch", "64", "--seq", "4096", "--top", "2",
     "--framework", "megatron", "--zero", "1"),
    # a GPU whose peak is only bounded (h100-gt): the typed peak goes into every row's eval command
    ("--model", "llama3-8b", "--gpus", "16", "--hardware", "h100-gt", "--batch", "32", "--seq", "4096", "--top", "2",
     "--peak", "835.5e12"),
    # dropout given (Llama 3 trains without; its preset says dropout=0): the masks in every row's memory and dropout=1
    # in its eval command (its option sets compiled here, so the framework, ZeRO stage and recompute are fixed)
    ("--model", "llama3-8b", "--gpus", "16", "--hardware", "h100", "--batch", "32", "--seq", "4096", "--top", "2",
     "--dropout", "1", "--framework", "megatron", "--zero", "1", "--recompute", "selective", "--sp", "1"),
]


@pytest.mark.parametrize("argv", PLANS)
def test_each_rows_eval_command_reproduces_it(argv, capsys):
    code, out, err = run(capsys, "plan", *argv, "--json")
    assert code == 0, err
    got = json.loads(out)
    rows = got["layouts"] + ([got["compare"]] if got["compare"] else [])
    assert rows
    for row in rows:
        words = shlex.split(row["eval_command"])
        assert words[:3] == ["symcomm", "eval", "hybrid"]
        code, out, err = run(capsys, *words[1:], "--json")
        assert code == 0, (row["eval_command"], err)
        evaluated = json.loads(out)
        # the same step model at the same values: equal up to float rounding of the two evaluation orders
        assert evaluated["step_time"] == pytest.approx(row["step_time"], rel=1e-9), row["eval_command"]
        assert evaluated["memory_per_gpu"] == pytest.approx(row["memory_bytes"], rel=1e-9), row["eval_command"]
        # the MFU at both counts of attention (eval's mfu and mfu_causal: symcomm.training.flops.causal_half)
        assert evaluated["mfu"] == pytest.approx(row["mfu"], rel=1e-9), row["eval_command"]
        assert evaluated["mfu_causal"] == pytest.approx(row["mfu_causal"], rel=1e-9), row["eval_command"]
        assert evaluated["fits"] is (row["memory_bytes"] <= got["memory_bytes_per_gpu"])
    code, text, _ = run(capsys, "plan", *argv)
    for row in got["layouts"]:
        assert f"{row['rank']:>5}  {row['eval_command']}" in text.splitlines()
    code, table, _ = run(capsys, "plan", *argv, "--csv")
    assert [r["eval_command"] for r in csv.DictReader(io.StringIO(table))] == [r["eval_command"] for r in rows]


# -- one-line usage errors (issue 22, item 8) ---------------------------------------------------------

@pytest.mark.parametrize("entry", ["symcomm.__main__", "symcomm.commands.main"])      # `symcomm plan` and python -m symcomm.commands.main
@pytest.mark.parametrize("extra, names", [(("--json", "--csv"), ("--json", "--csv")), (("--gpus",), ("--gpus",)),
                                          (("--top",), ("--top",))])
def test_usage_errors_are_one_line(entry, extra, names, capsys):
    import importlib

    code = importlib.import_module(entry).main([*ARGS, *extra])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1 and err.startswith("symcomm: error: ")
    assert "usage:" not in err and all(name in err for name in names)


# -- eval's KEY=VALUE spellings (issue 22, item 10) ---------------------------------------------------

def _layouts(capsys, *argv):
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    got = json.loads(out)
    return got["fixed"], [{k: v for k, v in row.items() if k != "seconds"} for row in got["layouts"]]


def test_key_value_words_are_the_flags(capsys):
    base = ("plan", "--model", "llama3-8b", "--hardware", "a100", "--top", "4")
    flags = _layouts(capsys, *base, "--gpus", "16", "--batch", "32", "--seq", "2048", "--gpus-per-node", "8",
                     "--tp", "2", "--dp", "8", "--zero", "3", "--sp", "1", "--recompute", "selective")
    words = _layouts(capsys, *base, "N=16", "b=32", "s=2048", "G=8", "t=2", "d=8", "zero=3", "sp=1",
                     "recompute=selective")
    assert flags == words and flags[1]
    # both, agreeing: the same request
    assert _layouts(capsys, *base, "--gpus", "16", "N=16", "b=32", "s=2048", "G=8", "t=2", "--tp", "2") \
        == _layouts(capsys, *base, "--gpus", "16", "--batch", "32", "--seq", "2048", "--gpus-per-node", "8", "--tp", "2")


def test_micro_batches_m_is_eval_s_m(capsys):
    # m = batch / (d · mb): with 16 GPUs, batch 32, m = 2 leaves d · mb = 16
    fixed, rows = _layouts(capsys, "plan", "--model", "llama3-8b", "--hardware", "a100", "--gpus", "16", "b=32",
                           "s=2048", "G=8", "m=2", "--top", "50")
    assert fixed["micro_batches"] == 2 and rows
    assert all(row["m"] == 2 and row["d"] * row["mb"] == 16 for row in rows)


@pytest.mark.parametrize("extra, names", [
    (("--tp", "2", "t=4"), ("--tp 2", "t=4")),
    (("--recompute", "full", "recompute=selective"), ("--recompute full", "recompute=selective")),
    (("--no-embeddings", "embeddings=1"), ("--no-embeddings", "embeddings=1")),
    (("t=2", "t=4"), ("t=2", "t=4")),
    (("b=64",), ("--batch 32", "b=64")),               # ARGS give --batch 32
])
def test_a_flag_and_its_key_value_that_differ_are_refused_naming_both(extra, names, capsys):
    code, out, err = run(capsys, *ARGS, *extra)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert all(name in err for name in names), err


def test_an_unknown_key_value_word_is_refused_with_the_ones_allowed(capsys):
    code, out, err = run(capsys, *ARGS, "tp=2")
    assert code == 2 and err.count("\n") == 1 and "tp=..." in err and "t, p, v, d, c, e, mb, m" in err


def test_the_compared_layout_says_by_the_one_rule_why_it_is_out(capsys, tmp_path):
    argv = ("plan", "--model", "llama3-70b", "--gpus", "16", "--batch", "32", "--seq", "2048", "--hardware", "h100",
            "--top", "2", "--compare", "t=1,p=1,d=16,zero=0")
    code, out, _ = run(capsys, *argv, "--json")
    row = json.loads(out)["compare"]
    # 70B with no model split and no ZeRO: at least 2 bytes of weights per parameter, 141 GB > the H100 SXM's 80 GB
    # (81,559 MiB = 85,520,809,984 bytes as NVML reports it: hardware.json's source)
    assert code == 0 and row["fits"] is False and row["memory_bytes"] > 2 * 70e9 > 81_559 * 2**20
    code, out, _ = run(capsys, *argv)
    assert f"does not fit: {row['memory_bytes']:,.0f} bytes" in out and "the GPU's 85,520,809,984 bytes" in out
    # no memory figure and no memory check: the refusal names the bubble only, in one line
    document = _full_file(presets.hardware("h100"))
    del document["memory_bytes"]
    path = tmp_path / "hw.json"
    path.write_text(json.dumps(document))
    code, out, err = run(capsys, *_replaced(argv[:-4], "--hardware", str(path)), "--no-memory-check", "--pp", "2",
                         "--max-bubble", "0")
    assert code == 2 and err.count("\n") == 1 and "no layout fits with a bubble ≤ 0" in err


def test_symcomm_plan_returns_the_notes_the_command_prints(tmp_path, capsys):
    # issue 23, item 4: the API's Result holds, as data, every note `symcomm plan --verbose` prints after its
    # answer.  A hardware file whose calibration entries predate gamma_held gets one (presets.calibrated_gamma).
    import symcomm
    from symcomm.__main__ import main as symcomm_main

    document = _full_file(presets.hardware("h100"))
    del document["calibration"][0]["gamma_held"]         # as calibrate wrote before it recorded it
    path = tmp_path / "hw.json"
    path.write_text(json.dumps(document))
    argv = ["plan", "--model", "llama3-8b", "--gpus", "8", "--batch", "64", "--seq", "4096", "--top", "1",
            "--hardware", str(path), "--verbose"]
    assert symcomm_main(argv) == 0
    printed = [line.removeprefix("symcomm: note: ") for line in capsys.readouterr().err.splitlines()]
    got = symcomm.plan("llama3-8b", gpus=8, batch=64, seq=4096, top=1, hardware=str(path))
    assert printed and any("gamma_held" in line for line in printed)
    assert list(got.notes) == printed
    assert capsys.readouterr() == ("", "")      # the API printed nothing


def test_a_bounded_peak_is_refused_untyped_and_a_typed_one_slows_the_plan_as_it_should(capsys):
    base = ("plan", "--model", "llama3-8b", "--gpus", "16", "--hardware", "h100-gt", "--batch", "32", "--seq", "4096",
            "--top", "1", "--json", "--tp", "1", "--pp", "1", "--cp", "1", "--micro-batch", "1", "--recompute", "none",
            "--framework", "fsdp2")
    code, out, err = run(capsys, *base)
    assert code == 2 and err.count("\n") == 1 and "give peak=" in err and "8.355e+14" in err
    code, low, err = run(capsys, *base, "peak=835.5e12")
    assert code == 0, err
    code, high, err = run(capsys, *base, "--peak", "989.4e12")
    assert code == 0, err
    low, high = json.loads(low), json.loads(high)
    assert low["peak"] == 835.5e12 and "peak" not in json.loads(run(capsys, *base[:6], "h100", *base[7:])[1])
    # one layout fixed (t = p = c = mb = 1, FSDP2, no recompute): the lower peak only slows its matmuls, and its
    # MFU is counted against its own (typed) peak
    one, two = low["layouts"][0], high["layouts"][0]
    assert (one["t"], one["d"]) == (two["t"], two["d"]) == (1, 16)
    assert two["compute_time"] < one["compute_time"] < two["compute_time"] * 989.4 / 835.5
    assert one["memory_bytes"] == two["memory_bytes"]


def test_typed_constants_are_planned_as_eval_prices_them_and_their_error_is_unknown(capsys):
    # eval hybrid takes eta=, kappa=, ... in place of the hardware's (presets.hardware_values.with_typed_constants);
    # plan takes the ones a bf16 plan reads by the same rule: each row's eval command carries them and gives the
    # row's step time, and the fit's error, which describes the hardware's own constants only, is unknown
    base = ("plan", "--model", "llama3-8b", "--gpus", "16", "--hardware", "h100", "--batch", "32", "--seq", "4096",
            "--top", "1", "--json", "--tp", "1", "--pp", "1", "--cp", "1", "--micro-batch", "1", "--recompute", "none",
            "--framework", "fsdp2")
    code, fitted, err = run(capsys, *base)
    assert code == 0, err
    code, typed, err = run(capsys, *base, "eta=0.4", "w_half_expert=100")
    assert code == 0, err
    # w_half_expert: the grouped expert GEMMs' width; a dense model reads none (said, as eval says it); and fsdp2's
    # attention core, PyTorch SDPA's cuDNN attention on H100 (frameworks.framework_attention), said as eval says it
    assert err.splitlines() == [
        "symcomm: note: framework=fsdp2 runs PyTorch's scaled_dot_product_attention with cuDNN's fused attention "
        "first on --hardware h100 (compute capability 9.0), as PyTorch's own order does from 2.11 on (its wheels' "
        "cuDNN above 9.15.0) and torchtitan asks from October 2025 on: the attention core at cuDNN's share; an older "
        "stack runs FlashAttention-2 first, which attention_kernel=fa2 times",
        "symcomm: note: w_half_expert not used by the step model of this setting"]
    fitted, typed = json.loads(fitted), json.loads(typed)
    assert fitted["step_time_error"] is not None and typed["step_time_error"] is None
    assert typed["typed"] == {"eta": 0.4, "w_half_expert": 100.0}
    row, before = typed["layouts"][0], fitted["layouts"][0]
    # the same layout (everything fixed but d): a smaller share of the peak only slows its matmuls
    assert (row["t"], row["d"]) == (before["t"], before["d"]) and row["compute_time"] > before["compute_time"]
    assert "eta=0.4" in row["eval_command"]
    evaluated = json.loads(run(capsys, *shlex.split(row["eval_command"])[1:], "--json")[1])
    assert evaluated["step_time"] == pytest.approx(row["step_time"], rel=1e-9)
    # refused as eval refuses them: a share outside (0, 1], a constant given twice, one plan never reads
    for words, said in ((("eta=1.5",), "a share of the peak lies in (0, 1]"), (("eta=0.5", "eta=0.6"), "twice"),
                        (("eta_fa2=0.5",), "plan takes no eta_fa2=")):
        code, _, err = run(capsys, *base, *words)
        assert code == 2 and err.count("\n") == 1 and said in err, err
    # the Python API: the same words as keywords
    import symcomm

    assert symcomm.plan("llama3-8b", gpus=16, batch=32, seq=4096, hardware="h100", top=1, tp=1, pp=1, cp=1,
                        micro_batch=1, recompute="none", framework="fsdp2", eta=0.4)["layouts"][0]["step_time"] == \
        pytest.approx(row["step_time"], rel=1e-12)


def test_op_recompute_is_searched_only_when_fixed_and_never_with_tensor_parallelism_without_sp():
    # the default search leaves recompute=op out (its kernels would add a third to every cold plan); fixed, it is
    # searched, and t > 1 only with sequence parallelism (torchtitan's TP plan always shards the norms' sequence)
    from symcomm.planner import RECOMPUTE

    assert "op" not in RECOMPUTE
    result = plan(small(pp=1, vp=1, micro_batch=4, framework="fsdp2", recompute="op"), top=None)
    rows = list(result.rows())
    settings = [(r["t"], s) for r in rows for s in r["settings"]]
    assert settings and all(s["recompute"] == "op" for _, s in settings)
    assert all(s["sp"] == 1 for t, s in settings if t > 1) and any(t > 1 for t, _ in settings)


def test_op_recompute_is_planned_only_under_the_framework_that_runs_it(capsys):
    # recompute=op is torchtitan's op-level selective checkpointing (framework=fsdp2): Megatron's selective recompute
    # is the attention core's, DeepSpeed's and FSDP's checkpointing whole blocks.  plan ranked megatron and deepspeed
    # rows under it (an outsider's test); it now searches fsdp2 alone, refuses another fixed framework in one line,
    # and eval, which prices the op list as asked, says so
    rows = list(plan(small(pp=1, vp=1, micro_batch=4, recompute="op"), top=None).rows())
    assert rows and {s["framework"] for r in rows for s in r["settings"]} == {"fsdp2"}
    for framework in ("megatron", "deepspeed"):
        assert main(["plan", "--model", "llama2-7b", "--gpus", "8", "--hardware", "a100", "--batch", "64", "--seq",
                     "4096", "--recompute", "op", "--framework", framework]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and f"recompute=op with framework={framework} is not run" in err
    assert main(["eval", "hybrid", "--model", "llama2-7b", "--hardware", "a100", "t=1", "p=1", "d=8", "c=1", "b=64",
                 "m=8", "s=4096", "framework=megatron", "recompute=op"]) == 0
    assert "no mode of framework=megatron" in capsys.readouterr().err


# -- the MoE dispatcher, given to plan as to eval ------------------------------------------------------

def test_plan_with_deepep_times_its_top_layout_as_eval_does(capsys):
    # the top layout of a DeepEP plan typed by hand as eval's words (not the row's own command): the same step time
    # (mixtral: its 8 experts on e = 8 over two 4-GPU nodes, the network leg used)
    argv = ("plan", "--model", "mixtral-8x7b", "--gpus", "16", "--gpus-per-node", "4", "--hardware", "h100", "--batch",
            "64", "--seq", "4096", "--dispatcher", "deepep", "--ep", "8", "--tp", "1", "--zero", "1", "--framework",
            "megatron", "--recompute", "full", "--top", "1", "--json")
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    row = json.loads(out)["layouts"][0]
    words = ["eval", "hybrid", "--model", "mixtral-8x7b", "--hardware", "h100", "--json", "moe=1", "dispatcher=deepep",
             "expert_tp=1", "gqa=1", "gated=1", "embeddings=1", "zero=1", "framework=megatron", "recompute=full",
             "b=64", "s=4096", "G=4", f"sp={int(row['t'] > 1)}", *(f"{k}={row[k]}" for k in ("t", "p", "c", "e", "d", "m")),
             *((f"v={row['v']}", "schedule=interleaved") if row["v"] > 1 else ())]
    code, out, err = run(capsys, *words)
    assert code == 0, err
    assert json.loads(out)["step_time"] == pytest.approx(row["step_time"], rel=1e-9)
    # and the dispatcher is read: alltoall times the same layout otherwise
    code, out, _ = run(capsys, *[w for w in words if not w.startswith(("dispatcher=", "expert_tp="))])
    assert json.loads(out)["step_time"] != pytest.approx(row["step_time"], rel=1e-6)


# -- the experts' tensor-parallel size, given to plan as to eval --------------------------------------------

EXPERT_TP_FIXED = ("plan", "--model", "qwen3-30b-a3b", "--gpus", "32", "--hardware", "h100", "--batch", "256",
                   "--seq", "4096", "--tp", "2", "--zero", "1", "--framework", "megatron", "--recompute", "full",
                   "--top", "1", "--json")


def test_plan_with_expert_tp_1_times_its_top_layout_as_eval_does(capsys):
    # the top layout of a plan given --expert-tp 1, typed by hand as eval's words (not the row's own command): the
    # same step time; and the setting is read: at t = 2 the experts whole on a GPU move other bytes than experts split
    # over the two TP ranks (the all-to-all's tokens are not gathered over t: symcomm.training.hybrid, expert_tp)
    code, out, err = run(capsys, *EXPERT_TP_FIXED, "--expert-tp", "1")
    assert code == 0, err
    got = json.loads(out)
    row = got["layouts"][0]
    assert got["expert_tp"] == "1" and got["dispatcher"] == "alltoall" and got["nvlink"] == "switch"
    assert row["t"] == 2 and "expert_tp=1" in row["eval_command"]
    words = ["eval", "hybrid", "--model", "qwen3-30b-a3b", "--hardware", "h100", "--json", "moe=1", "expert_tp=1",
             "gqa=1", "gated=1", "embeddings=1", "zero=1", "framework=megatron", "recompute=full", "sp=1", "b=256",
             "s=4096", "G=8", *(f"{k}={row[k]}" for k in ("t", "p", "c", "e", "d", "m")),
             *((f"v={row['v']}", "schedule=interleaved") if row["v"] > 1 else ())]
    code, out, err = run(capsys, *words)
    assert code == 0, err
    assert json.loads(out)["step_time"] == pytest.approx(row["step_time"], rel=1e-9)
    code, out, _ = run(capsys, *[w for w in words if w != "expert_tp=1"])
    assert json.loads(out)["step_time"] != pytest.approx(row["step_time"], rel=1e-6)


def test_expert_tp_1_lets_the_experts_span_the_tensor_parallel_ranks(capsys):
    # Megatron-Bridge's Qwen3-235B-A22B H100 FP8 row (25.11, derivations/data/bridge_runs_25.json): TP 2, PP 8, VP 4,
    # EP 32, ETP 1 on 256 GPUs, d = 256/(2·8) = 16.  e = 32 does not divide d·c = 16, but each expert whole on a GPU
    # (expert_tp=1) Megatron-Core's expert grid is t_e·e·(t·d·c/(t_e·e)) = 1·32·1 over t·d·c = 32 GPUs: e | t·d·c, as
    # eval's hybrid rule has it.  With the experts split over the TP ranks (expert_tp=tp) e | d·c stands
    fixed = ("plan", "--model", "qwen3-235b-a22b", "--hardware", "h100", "--gpus", "256", "--batch", "2048",
             "--seq", "4096", "--tp", "2", "--pp", "8", "--vp", "4", "--ep", "32", "--micro-batch", "1", "--framework",
             "megatron", "--zero", "1", "--sp", "1", "--recompute", "none", "--cp", "1", "--json")
    code, out, err = run(capsys, *fixed, "--expert-tp", "1")
    assert code == 0, err
    row = json.loads(out)["layouts"][0]
    assert (row["t"], row["p"], row["e"], row["d"]) == (2, 8, 32, 16)
    code, out, err = run(capsys, *fixed, "--expert-tp", "tp")
    assert code == 2 and "e | d·c" in err


@pytest.mark.parametrize("given, message", [
    (("--expert-tp", "t_e"), "--expert-tp=t_e is not allowed; choose tp or 1"),
    (("expert_tp=4",), "--expert-tp=4 is not allowed; choose tp or 1"),
    (("--expert-tp", "tp", "--dispatcher", "deepep"), "--expert-tp tp is not run with --dispatcher deepep"),
])
def test_an_expert_tp_plan_cannot_run_is_refused_in_one_line(given, message, capsys):
    code, out, err = run(capsys, *EXPERT_TP_FIXED[:-1], *given)
    assert code == 2 and out == "" and err.count("\n") == 1 and message in err


def test_expert_tp_on_a_dense_model_is_said_unused(capsys):
    # and changes nothing: the dense plan runs on its shipped kernels (no option set compiled in the process)
    code, out, err = run(capsys, "plan", "--model", "llama3-8b", "--gpus", "8", "--hardware", "h100", "--batch", "64",
                         "--seq", "4096", "--top", "1", "--json", "--expert-tp", "1")
    assert code == 0 and "--expert-tp 1 unused: llama3-8b has no experts" in err
    assert "no shipped kernel" not in err and "expert_tp" not in json.loads(out)


def test_a_flex_dispatch_plan_says_the_expert_tp_it_runs(capsys):
    # deepep without --expert-tp runs expert_tp=1 (the flex dispatcher needs it where t > 1), and the JSON says so
    code, out, err = run(capsys, "plan", "--model", "mixtral-8x7b", "--gpus", "16", "--gpus-per-node", "4", "--hardware",
                         "h100", "--batch", "64", "--seq", "4096", "--top", "1", "--dispatcher", "deepep", "--ep", "8",
                         "--zero", "3", "--recompute", "none", "--json")
    assert code == 0, err
    assert json.loads(out)["expert_tp"] == "1"


FP8_FIXED = ("plan", "--model", "llama3-8b", "--gpus", "16", "--hardware", "h100", "--batch", "32", "--seq", "4096",
             "--framework", "megatron", "--zero", "1", "--recompute", "selective", "--tp", "1", "--pp", "1", "--top",
             "1", "--json")


def test_an_fp8_plan_runs_the_recipe_as_eval_does(capsys):
    # the top layout typed by hand as eval's words with precision=fp8_tensor (not the row's own command): the same
    # step time; and the recipe is read: its linear GEMMs at the FP8 peak, the attention core and the LM head in bf16,
    # so the step is faster than the bf16 plan's same layout but by less than the peaks' 2x (Transformer Engine's FP8
    # runs inside its linear modules only: the step-time chapter, precision)
    code, out, err = run(capsys, *FP8_FIXED, "--precision", "fp8_tensor")
    assert code == 0, err
    got = json.loads(out)
    row = got["layouts"][0]
    assert got["precision"] == "fp8_tensor"
    words = ["eval", "hybrid", "--model", "llama3-8b", "--hardware", "h100", "--json", "precision=fp8_tensor",
             "gqa=1", "gated=1", "embeddings=1", "zero=1", "framework=megatron", "recompute=selective", "b=32", "s=4096",
             "G=8", *(f"{k}={row[k]}" for k in ("t", "p", "c", "d", "m"))]
    code, out, err = run(capsys, *words)
    assert code == 0, err
    assert json.loads(out)["step_time"] == pytest.approx(row["step_time"], rel=1e-9)
    code, out, err = run(capsys, *FP8_FIXED, "--compare", ",".join(f"{k}={row[k]}" for k in ("t", "p", "c", "d", "mb")))
    assert code == 0, err
    bf16 = json.loads(out)
    same = bf16["compare"] or bf16["layouts"][0]
    assert same["step_time"] / 2 < row["step_time"] < same["step_time"]


def test_a_low_precision_plan_says_its_mfu_is_of_the_bf16_peak(capsys):
    # MFU divides by the bf16 dense peak under an FP8 or FP4 recipe too (eval says "of the bf16 peak" beside it): the
    # text table says so once, where its column can pass 100 % (an outsider's nvfp4 plan printed 102.5 % unexplained)
    said = "MFU: of the bf16 dense peak, as published runs count it: precision fp8_tensor"
    words = [w for w in FP8_FIXED if w != "--json"]
    code, out, err = run(capsys, *words, "--precision", "fp8_tensor")
    assert code == 0, err
    assert said in out
    code, out, err = run(capsys, *words)
    assert code == 0, err
    assert "MFU: of the bf16 dense peak" not in out


@pytest.mark.parametrize("given, message", [
    (("--precision", "fp8_rowwise"), "precision=fp8_rowwise with framework=megatron is not run"),
    (("precision=fp9",), "--precision=fp9 is not allowed; choose bf16, fp8_tensor"),
])
def test_a_precision_is_refused_as_eval_refuses_it(given, message, capsys):
    code, out, err = run(capsys, *FP8_FIXED[:-1], *given)
    assert code == 2 and out == "" and err.count("\n") == 1 and message in err


def test_an_fp8_recipe_on_a_part_without_fp8_matmuls_is_refused(capsys):
    code, out, err = run(capsys, *ARGS, "--precision", "fp8_tensor")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "precision=fp8_tensor is not run on --hardware a100" in err


def test_a_step_of_1e19_flops_has_eval_s_mfu(capsys):
    # DeepSeek-V3, 8192 sequences of 4096 tokens: ~1e19 model FLOPs a step, past an int64's 9.2e18; the planner
    # printed MFU -31.6 % for its first row where eval of that row's command says 33.0 % (the kernels' integers
    # wrapped: symcomm.numbers.kernels computes in float64 now).  The row's MFU is eval's, within (0, 1)
    code, out, err = run(capsys, "plan", "--model", "deepseek-v3", "--hardware", "h100", "--gpus", "1024", "--batch",
                         "8192", "--seq", "4096", "--top", "1", "--json")
    assert code == 0, err
    row = json.loads(out)["layouts"][0]
    code, out, err = run(capsys, *shlex.split(row["eval_command"])[1:], "--json")
    assert code == 0, err
    evaluated = json.loads(out)
    assert evaluated["model_flops"] > 2 ** 63
    assert 0 < row["mfu"] < 1
    assert row["mfu"] == pytest.approx(evaluated["mfu"], rel=1e-9)


def test_an_attention_kernel_is_planned_at_its_published_share(capsys):
    # on A100 the Triton port runs the core at 78 TFLOP/s and the fused core (FlashAttention-2, which Transformer
    # Engine picks there) at 182 (FlashAttention-2's release chart: hardware.json attention_shares): the same layout
    # is slower with triton, and only by its attention core's time
    fixed = ("plan", "--model", "llama3-8b", "--gpus", "16", "--hardware", "a100", "--batch", "32", "--seq", "4096",
             "--framework", "megatron", "--zero", "1", "--recompute", "none", "--tp", "1", "--pp", "1", "--top", "1",
             "--json")
    code, out, err = run(capsys, *fixed, "--attention-kernel", "triton")
    assert code == 0, err
    got = json.loads(out)
    row = got["layouts"][0]
    assert got["attention_kernel"] == "triton"
    code, out, err = run(capsys, *fixed, "--compare", ",".join(f"{k}={row[k]}" for k in ("t", "p", "c", "d", "mb")))
    assert code == 0, err
    fused = json.loads(out)
    same = fused["compare"] or fused["layouts"][0]
    assert same["step_time"] < row["step_time"]
    code, out, err = run(capsys, *_replaced(fixed[:-1], "--hardware", "b200"), "attention_kernel=triton")
    assert code == 2 and err.count("\n") == 1 and "has no attention_shares triton" in err


def test_one_byte_elements_under_a_recipe_are_refused_by_eval_and_plan(capsys):
    # an FP8 recipe keeps the weights, gradients and activations 16-bit (Transformer Engine runs FP8 inside its linear
    # modules only): --dtype fp8 beside it would halve every byte the run holds and sends; one refusal for both
    message = "--dtype fp8 with precision=fp8_tensor is not a run"
    code, out, err = run(capsys, *FP8_FIXED[:-1], "--dtype", "fp8", "--precision", "fp8_tensor")
    assert code == 2 and out == "" and err.count("\n") == 1 and message in err
    for hardware in (("--hardware", "h100"), ("G=8",)):       # the step time's bytes, or the byte counts alone
        code, out, err = run(capsys, "eval", "hybrid", "--model", "llama3-8b", *hardware, "--dtype", "fp8", "t=1", "p=1",
                             "c=1", "d=8", "b=64", "m=8", "s=8192", "zero=1", "precision=fp8_tensor")
        assert code == 2 and out == "" and err.count("\n") == 1 and message in err
    # the Python API too: the same check
    import symcomm

    with pytest.raises(ValueError, match="precision=fp8_tensor is not a run"):
        symcomm.evaluate("hybrid", model="llama3-8b", dtype="fp8", t=1, p=1, c=1, d=8, b=64, m=8, s=8192, zero=1, G=8,
                         precision="fp8_tensor")


def test_fp8_elements_without_a_recipe_are_said(capsys):
    # --dtype fp8 alone: every matmul at the FP8 peak and eta, as eval says it too (one note, hardware_values.low_dtype_note)
    code, out, err = run(capsys, *FP8_FIXED[:-1], "--dtype", "fp8")
    assert code == 0, err
    assert "--dtype fp8 with precision=bf16 runs every matmul at the FP8 peak × eta" in err
    # its MFU divides by that FP8 peak, where an FP8 recipe's divides by the bf16 one: both said (an outsider read
    # 46 % and 75 % for one layout as one basis)
    assert "(its MFU against that FP8 peak)" in err
    assert "(with --dtype fp8, a bf16 recipe timed at the FP8 peak, that FP8 peak)" in out


@pytest.mark.parametrize("given", [("--dispatcher", "allgather"), ("dispatcher=allgather",)])
def test_an_unknown_dispatcher_is_refused_as_eval_refuses_it(given, capsys):
    code, out, err = run(capsys, *ARGS, *given)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "dispatcher=allgather is not allowed; choose alltoall, alltoall_padded, deepep or hybridep" in err


@pytest.mark.parametrize("given, message", [
    (("--router-groups", "2", "--router-group-topk", "4"), "router_group_topk=4 must be at most router_groups=2"),
    (("--router-groups", "3"), "--router-groups=3 is not allowed; choose 1, 2, 4, 8"),
    (("router_groups=16",), "--router-groups=16 is not allowed for mixtral-8x7b: its 8 experts must split into whole "
                            "groups"),
])
def test_router_groups_are_refused_as_eval_refuses_them(given, message, capsys):
    code, out, err = run(capsys, "plan", "--model", "mixtral-8x7b", "--gpus", "16", "--hardware", "h100", "--batch",
                         "64", *given)
    assert code == 2 and out == "" and err.count("\n") == 1 and message in err


def test_a_flex_dispatcher_plan_keeps_only_expert_groups_filling_whole_nodes():
    # DeepSeek-V3 (256 experts) on 1152 GB200 GPUs, NVL72 domains: e = 128 divides d·c and the experts, but 72 ∤ 128
    # fills its two domains with 72 and 56 ranks, a fractional node count for DeepEP's destination nodes
    # (symcomm.training.hybrid, _FLEX_NEEDS_WHOLE_NODES): the all-to-all dispatcher may use it, deepep may not
    args = dict(model=presets.model("deepseek-v3"), hardware=presets.hardware("gb200"), gpus=1152, gpus_per_node=72,
                batch=1152, seq=4096)
    assert 128 in set(enumerate_layouts(Request(**args))["e"].tolist())
    for dispatcher in ("deepep", "hybridep"):
        es = set(enumerate_layouts(Request(**args, dispatcher=dispatcher))["e"].tolist())
        assert es and all(e <= 72 or e % 72 == 0 for e in es) and 64 in es
    # e fixed at 128: nothing is left, and the refusal names the flex dispatcher's rule
    with pytest.raises(PlanError, match=r"e at most G \(72\) or a multiple of it \(--dispatcher deepep\)"):
        plan(Request(**args, dispatcher="deepep", ep=128), top=1)
    # the same layout asked as --compare (ep not fixed): the compared e breaks the same rule, and the refusal says so
    # rather than the general "every divisibility rule" line (e = 128 over G = 72: 72 ∤ 128 and 128 > 72)
    with pytest.raises(PlanError, match=r"--dispatcher hybridep places the expert group on whole nodes: e=128 must "
                                        r"be at most G=72 or a multiple of it"):
        plan(Request(**args, dispatcher="hybridep", compare=(("t", 1), ("e", 128))), top=1)
    # under the all-to-all dispatcher e = 128 is a layout: the compared row is found
    assert plan(Request(**args, compare=(("t", 1), ("e", 128))), top=1).compare["e"] == 128


def test_of_one_layouts_uneven_splits_only_the_fastest_then_leanest_stays():
    # by hand: rows 0, 1, 3, 4 are one layout (rank 7), row 2 another (rank 3); of the first, step times 2, 1, 1, 1
    # and memories 5, 6, 4, 4: rows 3 and 4 tie on both, so the first searched (3) stays; row 2 is alone and stays
    from symcomm.planner.fold import _Block
    from symcomm.planner.search import _best_split_only

    rows = np.arange(5)
    block = _Block((), None, "full", False, rows, np.array([5.0, 6.0, 9.0, 4.0, 4.0]), np.ones(5, dtype=bool),
                   None, None, step=np.array([2.0, 1.0, 8.0, 1.0, 1.0]))
    _best_split_only(block, {"split": np.ones(5, dtype=int)}, np.array([7, 7, 3, 7, 7]))
    assert block.fits.tolist() == [False, False, True, True, False]


def test_the_header_says_the_layouts_timed_include_those_that_do_not_fit(capsys):
    # each option combination is timed over all its layouts at once (planner.search: a block's step), so on 16 H100
    # a 70B model's plan times more layouts than fit in memory; the header says so rather than look like a subset
    base = ("plan", "--model", "llama3-70b", "--hardware", "h100", "--gpus", "16", "--batch", "64", "--seq", "8192",
            "--top", "2")
    code, out, err = run(capsys, *base, "--json")
    assert code == 0, err
    got = json.loads(out)
    assert got["layouts_evaluated"] > got["layouts_fitting"]
    code, out, err = run(capsys, *base)
    assert code == 0 and f"{got['layouts_evaluated']:,} timed, fitting or not" in out


def test_the_csv_carries_the_verdict_over_the_memory_error(capsys):
    # a row that fits by the model's count but not at the high end of its measured error is marked ‡ in the text and
    # "uncertain" in the JSON; the CSV wrote fits=1 alone, an unconditional fit to a script (an outsider's test)
    argv = ("plan", "--model", "mixtral-8x7b", "--gpus", "64", "--hardware", "h100", "--batch", "256", "--seq", "4096",
            "--top", "5")
    got = json.loads(run(capsys, *argv, "--json")[1])
    table = list(csv.DictReader(io.StringIO(run(capsys, *argv, "--csv")[1])))
    assert [r["fits_over_error"] for r in table] == [r["fits_over_error"] for r in got["layouts"]]
    assert {r["fits_over_error"] for r in table} <= {"yes", "uncertain"}
    marked = [line.split()[0] for line in run(capsys, *argv)[1].splitlines() if " ‡ " in line or line.endswith(" ‡")]
    assert sorted(marked) == sorted(r["rank"] for r in table if r["fits_over_error"] == "uncertain")


def test_the_default_keeps_layouts_whose_bubble_exceeds_their_compute(capsys):
    # (p − 1)/(v·m) exceeds 1 where m < p − 1: the default (help: keep all) dropped them at 1, and with them the
    # fastest layout at a batch of 2 (an outsider's test).  Here p = 16 over one micro-batch: 15 by the definition
    argv = ("plan", "--model", "llama3-8b", "--gpus", "16", "--hardware", "h100", "--batch", "16", "--pp", "16",
            "--micro-batches", "1", "--no-memory-check", "--top", "1", "--json")
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    got = json.loads(out)
    assert got["max_bubble"] is None and got["layouts"][0]["bubble_fraction"] == 15
    code, out, err = run(capsys, *argv, "--max-bubble", "1")
    assert code == 2 and "with a bubble ≤ 1" in err and "--no-memory-check" not in err


def test_the_header_counts_what_fits_whatever_top_shows(capsys):
    # the count was taken after the timed blocks kept each layout's fastest split, and --top decides which are timed
    argv = ("plan", "--model", "llama3-8b", "--gpus", "64", "--hardware", "h100", "--batch", "256", "--json")
    counts = {json.loads(run(capsys, *argv, "--top", top)[1])["layouts_fitting"] for top in ("1", "10", "500")}
    assert len(counts) == 1
    code, out, err = run(capsys, *argv[:-1], "--no-memory-check", "--top", "1")
    assert code == 0 and "kept (memory not checked)" in out and " fit in memory" not in out.splitlines()[2]


def test_a_framework_s_own_rules_named_where_no_layout_runs_them(capsys):
    # DeepSpeed's sequence parallelism is Ulysses: with the default ring, --cp 2 leaves no layout; the error named
    # sequence parallelism, which was never asked (an outsider's test)
    code, out, err = run(capsys, "plan", "--model", "llama3-8b", "--gpus", "16", "--hardware", "h100", "--batch", "64",
                         "--framework", "deepspeed", "--cp", "2")
    assert code == 2 and "--cp-algorithm ulysses" in err and "sequence parallel" not in err
    assert run(capsys, "plan", "--model", "llama3-8b", "--gpus", "16", "--hardware", "h100", "--batch", "64",
               "--framework", "deepspeed", "--cp", "2", "--cp-algorithm", "ulysses")[0] == 0


def test_no_memory_check_marks_the_rows_over_the_gpus_memory(capsys):
    # --no-memory-check ranks every layout: the JSON's rows carried no fits and the text no mark, so a 955 GiB row on
    # an 80 GB GPU read as a plan (an outsider's test).  Llama 3 70B unsharded over t = p = 1 holds far more than 80 GB
    argv = ("plan", "--model", "llama3-70b", "--gpus", "64", "--hardware", "h100", "--batch", "256",
            "--no-memory-check", "--top", "3")
    got = json.loads(run(capsys, *argv, "--json")[1])
    capacity = got["memory_bytes_per_gpu"]
    assert [r["fits"] for r in got["layouts"]] == [r["memory_bytes"] <= capacity for r in got["layouts"]]
    assert any(r["fits"] is False for r in got["layouts"])
    text = run(capsys, *argv)[1]
    assert "memory ✗: over the GPU's memory" in text
    marked = {int(line.split()[0]) for line in text.splitlines() if " ✗ " in line}
    assert marked == {r["rank"] for r in got["layouts"] if r["fits"] is False}


def test_layouts_whose_groups_straddle_the_nvlink_domains_are_left_out_when_some_tile_them(capsys):
    # GB200 NVL72, 144 GPUs: two domains of 72.  A group of S ranks, 1 < S ≤ 72, with 72 not a multiple of S straddles
    # two domains in Megatron's rank order (ranks 0..S-1, S..2S-1, ...: the block holding rank 72 starts at 72 - 72 mod S
    # when 72 mod S ≠ 0), and the step model prices it inside one: an outsider's plan ranked first t1 p3 d48 e16 (data-
    # and expert-parallel groups of 48 and 16, 72 = 48 + 24 = 16·4 + 8), its expert traffic priced over NVLink alone
    argv = ["plan", "--model", "qwen3-235b-a22b", "--gpus", "144", "--hardware", "gb200", "--batch", "576", "--seq",
            "4096", "--top", "20", "--json"]
    assert main(argv) == 0
    planned = json.loads(capsys.readouterr().out)
    assert planned["layouts_straddling_left_out"] > 0
    for row in planned["layouts"]:
        etp = 1 if planned["expert_tp"] == "1" else row["t"]
        spans = (row["t"], row["t"] * row["c"], row["t"] * row["c"] * row["d"], row["e"] * etp if row["e"] > 1 else 1)
        assert all(span == 1 or 72 % span == 0 for span in spans), row
    text = _replaced(argv[:-1], "--top", "3")
    assert main(text) == 0
    out = capsys.readouterr().out
    assert f"NVLink domains: {planned['layouts_straddling_left_out']:,} layouts left out" in out
    assert "have parallel groups that do not tile" not in out
    # where every layout straddles (expert-parallel groups of 64 fixed), they are ranked and said: test_head_split.py


def test_a_framework_stage_plan_does_not_search_is_said_with_the_eval_that_prices_it(capsys):
    # an outsider fixed --framework deepspeed --pp 2 (DeepSpeed's pipeline engine runs ZeRO 0 and 1; plan searches it at
    # 2 and 3): the refusal named --sp, --recompute, --tp, --cp, none of them typed, and not --pp
    base = ["plan", "--model", "gpt3-175b", "--gpus", "96", "--hardware", "a100", "--batch", "1536", "--seq", "2048",
            "--framework", "deepspeed"]
    assert main(base + ["--pp", "2"]) == 2
    err = capsys.readouterr().err
    assert "plan searches it at ZeRO 2, 3: p = 1 (eval hybrid framework=deepspeed zero=1 prices" in err
    assert err.rstrip().endswith("fix fewer of --framework, --pp"), err
    assert main(base + ["--pp", "2", "--zero", "1"]) == 2
    assert "plan searches it at zero 2, 3 (eval hybrid framework=deepspeed zero=1 prices zero 0, 1" in \
        capsys.readouterr().err


def test_the_compared_row_says_its_memory_and_the_refusals_name_the_rule_broken(capsys):
    # an outsider's --compare row over the GPU's memory had no ✗ and, in JSON, no fits_over_error; a --compare t=2
    # beside --tp 4 said only "every divisibility rule"; --cp 16 with Ulysses named every rule but c | K/V heads/t
    base = ["plan", "--model", "llama3.1-70b", "--gpus", "64", "--hardware", "h100", "--batch", "512", "--seq", "8192",
            "--top", "2"]
    assert main(base + ["--compare", "t=1,p=1,c=1,mb=8"]) == 0
    out = capsys.readouterr().out
    compared = out.split("--compare (", 1)[1].splitlines()[1]
    assert " ✗ " in compared, compared
    assert main(base + ["--compare", "t=1,p=1,c=1,mb=8", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)["compare"]
    assert got["fits"] is False and got["fits_over_error"] == "no"
    assert main(base + ["--compare", "t=2", "--tp", "4"]) == 2
    assert "t=2 against --tp 4: give one of them" in capsys.readouterr().err
    # Ulysses: c = 16 does not divide the 8 K/V heads at any t, refused with the choices; c = 8 does at t = 1 but not
    # at --tp 2 (8/2 K/V heads a rank), which the search refuses naming the rule
    assert main(["plan", "--model", "llama3.1-8b", "--gpus", "16", "--hardware", "h100", "--batch", "64", "--seq",
                 "8192", "--cp", "16", "--cp-algorithm", "ulysses", "--tp", "1"]) == 2
    assert "Ulysses: c divides the heads and the K/V heads); choose 1, 2, 4, 8\n" in capsys.readouterr().err
    assert main(["plan", "--model", "llama3.1-8b", "--gpus", "16", "--hardware", "h100", "--batch", "64", "--seq",
                 "8192", "--cp", "8", "--cp-algorithm", "ulysses", "--tp", "2"]) == 2
    assert "c | heads/t and c | K/V heads/t (8 K/V heads; --cp-algorithm ulysses)" in capsys.readouterr().err


def test_plan_says_typed_router_groups_change_nothing_beside_an_all_to_all(capsys):
    # eval's note (megatron_features.routing_note) said by plan too: Megatron's alltoall dispatcher sends each of a
    # token's k routed copies, so where its experts sit in groups moves no byte (an outsider found plan silent)
    code, out, err = run(capsys, "plan", "--model", "qwen3-30b-a3b", "--gpus", "64", "--hardware", "b200", "--batch",
                         "512", "--router-groups", "8", "--router-group-topk", "4", "--top", "1")
    assert code == 0, err
    assert ("--router-groups 8: group-limited routing changes which places a token's experts sit on" in err
            and "--dispatcher alltoall sends each routed copy, so the groups change nothing in its step" in err)


def test_a_dtype_the_memory_model_does_not_count_has_no_memory_verdict(capsys):
    # an outsider's plan of Llama 3 8B at --dtype fp32 kept megatron-fsdp at 48.97 GiB as fitting, the count of a 16-bit
    # run (weights 957 MiB: 8.03e9 parameters · 2 bytes / 16 GPUs; in fp32 they are twice that, the activations too)
    from symcomm.commands.main import main
    import json

    words = ["plan", "--model", "llama3-8b", "--gpus", "16", "--hardware", "h100", "--batch", "128", "--dtype", "fp32",
             "--top", "2"]
    assert main(words) == 2
    assert "--dtype fp32: the memory model counts a 16-bit run's" in capsys.readouterr().err
    assert main(words + ["--no-memory-check", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["layouts"]
    assert all(row["fits"] is None and row["fits_over_error"] is None for row in rows)
    assert main(words + ["--no-memory-check"]) == 0
    text = capsys.readouterr().out
    assert "no row is marked as fitting or not" in text and "✗" not in text and "‡" not in text
    # eval says the same of the row's layout
    assert main(["eval", "hybrid", "--model", "llama3-8b", "--hardware", "h100", "--dtype", "fp32", "t=1", "p=1", "c=1",
                 "d=16", "m=8", "b=128", "s=8192", "framework=megatron_fsdp", "zero=3", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["fits"] is None and "not those of a --dtype fp32 run" in got["fits_unknown"]


def test_no_memory_check_gives_each_row_eval_s_verdict_over_the_error(capsys):
    # an outsider found --no-memory-check's JSON rows with fits_over_error null where eval of the row said "no"
    from symcomm.commands.main import main
    import json
    import shlex

    assert main(["plan", "--model", "llama3-70b", "--gpus", "64", "--hardware", "h100", "--batch", "64", "--seq", "8192",
                 "--no-memory-check", "--top", "3", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["layouts"]
    for row in rows:
        assert main(shlex.split(row["eval_command"])[1:] + ["--json"]) == 0
        got = json.loads(capsys.readouterr().out)
        assert (row["fits"], row["fits_over_error"]) == (got["fits"], got["fits_over_error"]), row["eval_command"]


def test_the_table_shows_the_mfu_at_megatron_s_count_beside_the_full_one(capsys):
    # an outsider read 70.7 % MFU for Llama 3 8B at 2^20 tokens a sequence, twice Megatron-LM's count of the same step
    # (the full s × s convention credits the causal core's masked half): the table shows both, as eval's line does
    from symcomm.commands.main import main
    import json

    words = ["plan", "--model", "llama3-8b", "--gpus", "64", "--hardware", "h100", "--batch", "64", "--seq", "1048576",
             "--top", "1"]
    assert main(words + ["--json"]) == 0
    row = json.loads(capsys.readouterr().out)["layouts"][0]
    assert row["mfu_causal"] < 0.6 * row["mfu"]
    assert main(words) == 0
    text = capsys.readouterr().out
    assert " MFU causal " in text
    line = next(x for x in text.splitlines() if x.split()[:1] == ["1"])
    assert f"{100 * row['mfu']:.1f}%  {100 * row['mfu_causal']:.1f}%" in line


def test_fsdp2_is_not_searched_with_megatrons_selective_recompute():
    # recompute=selective is Megatron's (the attention core's scores recomputed); torchtitan's selective activation
    # checkpointing is op-level (recompute=op), and eval says so: plan searched fsdp2 rc=selective rows anyway (an
    # outsider's llama3-70b plan ranked one third).  Asked for with --recompute selective, it is still planned
    req = dict(gpus=64, batch=64, seq=8192, framework="fsdp2")
    rows = plan(Request(presets.model("llama3-70b"), presets.hardware("h100"), **req), 30).rows(30)
    assert rows and not any("rc=selective" in label for row in rows for label in row["labels"])
    asked = plan(Request(presets.model("llama3-70b"), presets.hardware("h100"), recompute="selective", **req), 5)
    assert all("rc=selective" in label for row in asked.rows(5) for label in row["labels"])
