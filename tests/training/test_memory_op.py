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
    # what the recompute rebuilds for one layer's backward, counted as recompute=full counts it: the layer as no
    # recompute keeps it (its MLP at the model's width F, not Korthikanti's 4h)
    assert recompute_working_set("op", True, False) == recompute_working_set("full", True, False) \
        == layer_activation_bytes("none", True, False)
    assert recompute_working_set("full", True, False) != activation_bytes("none", True, False)


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


# torch.compile of the block: AOTAutograd's partitioner drops every saved value its backward graph does not read
# (pytorch/pytorch torch/_functorch/partitioners.py at 00c07b93, _extract_fwd_bwd_modules).  The block's last matmul
# w2 only feeds the residual sum out = h + w2(...), whose backward passes the gradient through without reading
# either addend, so its saved output goes; every other saved output is read (the rotary recompute reads wq's, the
# repeat of K, V reads wv's, the SDPA backward its output and logsumexp, SiLU's backward w1's, the norms' recompute
# the block input), and with sequence parallel wo's reduce-scatter output rebuilds the residual the MLP's norm reads.


def test_tiny_gated_layer_under_torch_compile_drops_the_last_matmuls_output():
    # 60 bytes per token eager (above) less w2's output, 4 elements · 2 bytes = 8: 52 per token, 104 for 2 tokens
    assert at(activation_bytes("op", True, False, gated=True, compiled=True)) == 104
    names = [what for what, _ in op_kept_widths(False, True, compiled=True)]
    assert names == ["block input", "wq output", "wv output", "w1 output", "SDPA output", "SDPA logsumexp"]


def test_tiny_gated_layer_under_torch_compile_with_sequence_parallel():
    # t = 2, sp = 1: the 42 bytes per token above less w2's whole partial sum (4 elements · 2 = 8) and its
    # reduce-scatter's sequence shard (8/2 = 4): 30 per token, 60 for 2 tokens; wo's reduce-scatter output stays
    assert at(activation_bytes("op", True, True, gated=True, compiled=True), t=2) == 60
    assert "wo reduce-scatter output" in dict(op_kept_widths(True, True, compiled=True))


def test_a_plain_mlp_keeps_the_same_under_torch_compile():
    # without a gated unit w2 is the 6th matmul, never saved: nothing the backward leaves unread is kept
    assert at(activation_bytes("op", True, False, gated=False, compiled=True)) == 104


def test_llama_3_1_8b_compiled_keeps_4_gib_less_than_eager_by_hand():
    # torchtitan's 2024-12 Table 1 layout: 8 GPUs, FSDP 8, local batch 2 of 8192 tokens, op-level checkpointing.
    # Under torch.compile each of the 32 blocks drops w2's output, h = 4096 wide in bf16: 16,384 tokens ·
    # 4096 · 2 bytes · 32 layers = 4,294,967,296 bytes, the whole difference of the two peaks (the loss side is
    # the peak either way and holds no checkpointed tensor)
    from symcomm.training import steptime

    values = {"h": 4096, "L": 32, "a": 32, "h_kv": 1024, "F": 14336, "V": 128256, "s": 8192, "Phi": 8_030_261_248,
              "e": 1, "v": 1, "d": 8, "c": 1, "b": 16, "m": 1, "t": 1, "p": 1, "G": 8, "peak": 1e15, "eta": 0.5,
              "kappa": 0.5, "hbm": 3e12, "alpha": 0.0, "beta": 0.0, "gamma": 0.0, "alpha_inter": 0.0,
              "beta_inter": 0.0}
    options = {"embeddings": "1", "gqa": "1", "gated": "1", "flash": "1", "tied": "0", "framework": "fsdp2",
               "zero": "3", "grad_dtype": "fp32", "recompute": "op", "loss": "eager"}
    # the loss typed (the 2024-12 commit's eager one): under compile=1 fsdp2 would take the compiled loss otherwise
    eager, compiled = (steptime.quantities(values, 2, **options, compile=flag) for flag in ("0", "1"))
    assert float(eager["memory_activations"]) - float(compiled["memory_activations"]) == 4_294_967_296
    assert float(eager["memory_per_gpu"]) - float(compiled["memory_per_gpu"]) == 4_294_967_296


def test_torch_compile_changes_nothing_kept_outside_pytorchs_runtime():
    # compile=1 under Megatron-LM names its fused kernels, not torch.compile's partitioner: the same count
    from symcomm.training import steptime

    values = {"h": 64, "L": 4, "a": 4, "h_kv": 64, "F": 256, "V": 1000, "s": 32, "Phi": 1_128_000, "e": 1, "v": 1,
              "d": 1, "c": 1, "b": 2, "m": 1, "t": 1, "p": 1, "G": 8, "peak": 1e12, "eta": 1.0, "kappa": 0.0,
              "hbm": 1e30, "alpha": 0.0, "beta": 0.0, "gamma": 0.0, "alpha_inter": 0.0, "beta_inter": 0.0}
    options = {"embeddings": "1", "gqa": "1", "gated": "1", "flash": "1", "tied": "0", "framework": "megatron",
               "zero": "1", "grad_dtype": "same", "recompute": "op"}
    # 64 tokens (2 sequences of 32), each keeping the eager count of the block (2·64 input, 2·64 wq, 2·64 wv,
    # 2·256 w1, 2·64 w2, 2·64 SDPA, 4·4 logsumexp = 1,168 bytes), in 4 layers
    q = steptime.quantities(values, 2, **options, compile="1")
    assert float(q["memory_activations"]) == 64 * 1168 * 4
