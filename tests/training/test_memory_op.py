"""recompute=op (torchtitan's op-level selective activation checkpointing) counted by hand from its op list.

The source: pytorch/torchtitan torchtitan/parallelisms/parallelize_llama.py at 9dec370a — ``_save_list`` holds
aten.mm, the flash/efficient SDPA, _c10d_functional.reduce_scatter_tensor (and the amax ops); the policy counts
aten.mm per checkpointed block and saves an mm unless its count is even.  The block's matmuls in forward order
(torchtitan/models/llama/model.py at 9dec370a): wq, wk, wv, (SDPA), wo, w1, w3, w2 — so the 1st, 3rd, 5th, 7th
(wq, wv, w1, w2) are saved, the 2nd, 4th, 6th (wk, wo, w3) recomputed.  Expected values below are that reading,
multiplied out by hand for a tiny layer; none is taken from the code under test.
"""

import pytest
import sympy as sp

from symcomm.core import symbols as S
from symcomm.numbers.evaluation import exact
from symcomm.training import flops
from symcomm.training.memory import activation_bytes, layer_activation_bytes, op_kept_widths, recompute_working_set

# one layer, 2 tokens (b = 1 sequence of s = 2), h = 4, K and V 2 wide (grouped-query), 2 heads, F = 8
TINY = {"h": 4, "h_kv": 2, "a": 2, "F": 8, "s": 2, "b": 1, "d": 1, "m": 1, "c": 1, "t": 1}


def at(expr, **more):
    return exact(expr, {S.SYMBOLS[k].symbol: v for k, v in {**TINY, **more}.items()})


def test_tiny_gated_layer_keeps_its_input_and_the_saved_outputs():
    # per token, 2 bytes per bf16 element: input 4 → 8, wq out 4 → 8, wv out 2 → 4, SDPA out 4 → 8, its logsumexp
    # 2 heads × 4 bytes (fp32) → 8, w1 out 8 → 16, w2 out 4 → 8: 60 bytes; 2 tokens: 120
    assert at(activation_bytes("op", True, False, gated=True)) == 120


def test_tiny_plain_mlp_layer_does_not_keep_the_sixth_matmul():
    # without a gated unit the matmuls are wq, wk, wv, wo, w1, w2: w2 is the 6th (even), not saved: 60 − 8 = 52
    # bytes per token, 104 for 2 tokens
    assert at(activation_bytes("op", True, False, gated=False)) == 104


def test_tiny_gated_layer_under_tensor_and_sequence_parallelism():
    # t = 2, sp = 1, per token on one GPU: the sequence-sharded input 8/2 = 4; column-parallel wq 8/2 = 4, wv 4/2
    # = 2, w1 16/2 = 8; the SDPA's 2/2 heads: out 8/2 = 4, logsumexp 8/2 = 4; row-parallel w2's mm output is the
    # whole partial sum, 8; the two reduce-scatters' sequence-sharded outputs 8/2 each = 8: 42 bytes, 84 for 2
    # tokens (all per token of the whole sequence: T = b·s/c tokens, the sharded ones counted as 1/t of each)
    assert at(activation_bytes("op", True, True, gated=True), t=2) == 84


def test_the_kept_parts_are_named_and_sum_to_the_layer():
    parts = dict(op_kept_widths(False, True))
    assert list(parts) == ["block input", "wq output", "wv output", "w1 output", "w2 output", "SDPA output",
                           "SDPA logsumexp"]
    assert at(sp.Add(*parts.values()) * 2) == 120


def test_layer_bytes_take_the_op_count_and_moe_is_never_reached():
    assert at(layer_activation_bytes("op", True, False, gated=True)) == 120


def test_the_working_set_is_one_layer_as_no_recompute_keeps_it():
    # what the recompute rebuilds for one layer's backward, counted as recompute=full counts it
    assert recompute_working_set("op", True, False) == recompute_working_set("full", True, False) \
        == activation_bytes("none", True, False)


def test_recomputed_matmuls_are_the_even_numbered_but_the_last():
    assert [mm[0] for mm in flops.op_saved_matmuls(True)] == ["wq", "wv", "w1", "w2"]
    assert [mm[0] for mm in flops.op_recomputed_matmuls(True)] == ["wk", "wo", "w3"]
    # plain MLP: w2 is the 6th, even, but the last: the recompute stops before it (torch.utils.checkpoint's early
    # stop: every tensor the backward saved is rebuilt once w2's input is)
    assert [mm[0] for mm in flops.op_recomputed_matmuls(False)] == ["wk", "wo"]


def test_recomputed_flops_of_llama_3_1_8b_by_hand():
    # Llama 3.1 8B: h 4096, K and V 1024 wide (8 of 32 heads), F 14336, 32 layers; one sequence of 8192 tokens.
    # wk 4096 · 1024 + wo 4096 · 4096 + w3 4096 · 14336 = 4,194,304 + 16,777,216 + 58,720,256 = 79,691,776
    # multiply-adds per token and layer; × 2 FLOPs × 8192 tokens × 32 layers
    shape = {S.h: 4096, S.h_kv: 1024, S.F: 14336, S.L: 32}
    assert exact(flops.recomputed(1, 8192, "op", gated=True), shape) == 2 * 79_691_776 * 8192 * 32


def test_op_recompute_refuses_mixtures_of_experts_and_mla_in_the_flop_count():
    with pytest.raises(ValueError, match="dense Llama block"):
        flops.recomputed(1, 1, "op", gated=True, moe=True)
