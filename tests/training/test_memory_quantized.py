"""Transformer Engine's low-precision recipes keep a linear's quantized input for its weight gradient, not the 16-bit
one (symcomm/training/memory.py: saved_input_bytes; the activation count takes it).

The source, NVIDIA/TransformerEngine at d0067d0d: module/linear.py (_Linear.forward: ``saved_inputmat = inputmat``,
the quantized tensor with its row-wise data discarded), module/layernorm_linear.py (``ln_out_to_save = ln_out``,
whose row-wise data is kept too when the backward all-gathers it, i.e. under sequence parallelism, unless the format
is MXFP8 or blockwise FP8), module/grouped_linear.py (the column-wise data only).  Element and scale bytes per
format from the same recipes' docs: FP8 1 byte, MXFP8 1 + 1/32, blockwise FP8 1 + 4/128, NVFP4 1/2 + 1/16.
Expected values below are those readings multiplied out by hand; none is taken from the code under test.
"""

import pytest
import sympy as sp

from symcomm.core import symbols as S
from symcomm.numbers.evaluation import exact
from symcomm.training.memory import activation_bytes, expert_activation_bytes, saved_input_bytes

TINY = {"h": 4, "s": 2, "b": 1, "d": 1, "m": 1, "c": 1, "t": 2, "k": 2, "F_e": 8}


def at(expr):
    return exact(expr, {S.SYMBOLS[k].symbol: v for k, v in TINY.items()})


# the third: the attention output, 2 bytes, kept once by the attention core and the projection (its original input:
# Megatron-Core 0.15's save_original_input), but under delayed scaling, which keeps a 1-byte FP8 copy beside it
@pytest.mark.parametrize("framework, precision, sp_on, fused, plain, out", [
    ("megatron", "bf16", True, 2, 2, 2),                       # nothing quantized
    ("fsdp2", "fp8_tensor", True, 2, 2, 2),                    # torchao's Float8Linear: not Transformer Engine
    ("megatron", "fp8_rowwise", True, 2, 2, 2),                # torchao's recipe
    ("megatron", "fp8_tensor", True, 1, 1, 2),                 # norm-fused input under SP: row-wise only (gathered)
    ("megatron", "fp8_tensor", False, 1, 1, 2),                # no gather in the backward: one copy
    ("megatron", "fp8_delayed", True, 1, 1, 3),                # delayed scaling: the same per-tensor FP8 tensors
    ("megatron", "mxfp8", True, 1 + sp.Rational(1, 32), 1 + sp.Rational(1, 32), 2),
    ("megatron_fsdp", "fp8_block", True, 1 + sp.Rational(4, 128), 1 + sp.Rational(4, 128), 2),
    ("megatron", "nvfp4", True, 2 * (sp.Rational(1, 2) + sp.Rational(1, 16)), sp.Rational(1, 2) + sp.Rational(1, 16),
     2),
])
def test_the_bytes_a_linear_keeps_of_its_input(framework, precision, sp_on, fused, plain, out):
    assert saved_input_bytes(framework, precision, sp_on) == (fused, plain, out)


def test_korthikantis_count_with_fp8_inputs_by_hand():
    """Korthikanti et al. 2022 Table 2 with sequence parallelism, 34 sbh/t: s·b·h = 8, t = 2, so 136 bytes in 16 bits.
    Of the 34, the linears' inputs: QKV's 2, FC1's 2 (norm-fused), the attention output's 2 and FC2's 8 (plain).
    Per-tensor FP8 keeps the plain ones at 1 byte: 34 − 1 − 4 = 29, 116 bytes; MXFP8 every one at 1 + 1/32:
    20 + 7·(1 + 1/32) = 27 + 7/32 sbh/t."""
    assert at(activation_bytes("none", True, True)) == 136
    assert at(activation_bytes("none", True, True, saved=(2, 1))) == 116
    mx = 1 + sp.Rational(1, 32)
    assert at(activation_bytes("none", True, True, saved=(mx, mx))) == (27 + sp.Rational(7, 32)) * 4
    # without sequence parallelism, sbh(10 + 24/t) = 8·22 = 176 bytes: QKV's and FC1's inputs whole (2 + 2 of the 10),
    # the attention output's and FC2's split (2 + 8 of the 24); all at 1 byte: 8·(8 + 19/2) = 140
    assert at(activation_bytes("none", True, False)) == 176
    assert at(activation_bytes("none", True, False, saved=(1, 1))) == 140
    # full recompute keeps the layer's 16-bit input only: unchanged
    assert at(activation_bytes("full", True, True, saved=(1, 1))) == at(activation_bytes("full", True, True))


def test_an_experts_grouped_inputs_by_hand():
    """Each of the T·k = 2·2 = 4 routed rows keeps its permuted input (h = 4), FC1's output (F_e = 8, split over
    t = 2: 4) and the activation's output (4), 16 bits each: 4 rows · 12 elements · 2 = 96 bytes; FC2's output is
    not kept (Megatron-Core moe/experts.py at d98e8a64: the probabilities multiply the activation's output, so the
    un-permutation after FC2 saves nothing); with the two GEMMs' inputs (the permuted input, the activation's
    output) at 1 byte: 4 · (4 + 8 + 4) = 64."""
    assert at(expert_activation_bytes(False)) == 96
    assert at(expert_activation_bytes(False, saved=(1, 1))) == 64


def test_a_megatron_fp8_run_keeps_less_than_its_bf16_twin():
    """The same layout in bf16 and in per-tensor FP8: the first stage's activations differ by a byte per element of the
    QKV's and FC1's inputs (h each, one row-wise FP8 copy kept under sequence parallelism) and of FC2's (F),
    (2h + F)·s·b/t per layer per micro-batch in flight (Llama 3 70B's h = 8192, F = 28,672); the attention output stays
    16-bit (the attention core keeps it, and the projection keeps it as its original input)."""
    import symcomm

    layout = dict(model="llama3-70b", hardware="h100", t=8, p=1, d=8, c=1, b=64, m=8, s=8192, sp=1,
                  framework="megatron", zero=1, recompute="none")
    bf16 = symcomm.evaluate("hybrid", **layout)["memory"]["activations"]
    fp8 = symcomm.evaluate("hybrid", **layout, precision="fp8_tensor")["memory"]["activations"]
    # L = 80 layers, one micro-batch of 1 sequence in flight (p = 1), h = 8192, s = 8192, t = 8
    assert bf16 - fp8 == pytest.approx(80 * (2 * 8192 + 28_672) * 8192 / 8, rel=1e-12)
