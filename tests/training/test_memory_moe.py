"""An MoE layer's kept activations, counted by hand from the tensors Megatron-Core saves for the backward
(megatron/core/transformer/moe/moe_layer.py, moe/experts.py, moe/shared_experts.py at d98e8a64), against
symcomm.training.memory's count.

An MoE layer runs no dense MLP: beside the attention block it keeps the pre-MLP norm's input and output, each shared
expert's FC1 output and activation output, and for each routed row its permuted input, FC1's output and the
activation's output; FC2's output is not kept (the router's probabilities multiply the activation's output, so the
un-permutation after FC2 saves nothing).  Expected values are those tensors multiplied out by hand, 2 bytes an
element; none is taken from the code under test.
"""

import sympy as sp

from symcomm.core import symbols as S
from symcomm.numbers.evaluation import exact
from symcomm.training.memory import KeptWidths, layer_activation_bytes

# one token (s = b = 1), one GPU (t = d = m = c = 1), every layer MoE
TINY = {"h": 4, "s": 1, "b": 1, "d": 1, "m": 1, "c": 1, "t": 1, "k": 2, "F_e": 2, "E_s": 1, "L": 3, "L_moe": 3}


def at(expr, **over):
    return exact(expr, {S.SYMBOLS[k].symbol: v for k, v in {**TINY, **over}.items()})


def test_an_moe_layer_by_hand():
    """Attention block (Korthikanti et al. 2022, Table 2, flash attention): the input norm's input 2h, QKV's input
    2h, Q and K 4h, V 2h, the output projection's input 2h, the dropout mask h: 13h = 52 bytes.  MoE block: the
    pre-MLP norm's input 2h and output 2h: 16, and the dropout mask after the block h (Megatron-Core's bias-dropout-add
    after the MLP, whichever MLP; the defaults count dropout): 4; the shared expert (E_s = 1), FC1's gated output
    2·F_e·2 = 8 and the activation's output F_e·2 = 4: 12; each of the k = 2 routed rows its permuted input 2h = 8,
    FC1's output 8, the activation's output 4: 2·20 = 40.  52 + 20 + 12 + 40 = 124 bytes; without dropout the two
    masks less, 116."""
    assert at(layer_activation_bytes("none", True, False, moe=True, gated=True)) == 124
    assert at(layer_activation_bytes("none", True, False, moe=True, gated=True,
                                     widths=KeptWidths(dropout=False))) == 116


def test_half_the_layers_moe_by_hand():
    """L = 2, L_moe = 1: the dense layer keeps Korthikanti et al.'s attention block 13h = 52 bytes (t = 1) and a gated
    MLP block of width F = 16: the norm's input 2h, FC1's input 2h, the dropout mask h (20), SwiGLU's input, FC1's
    2F-wide output, 2·2F = 64, and FC2's input 2F = 32: 168; the MoE layer 124 (above); the average layer
    (168 + 124)/2 = 146."""
    assert at(layer_activation_bytes("none", True, False, moe=True, gated=True), L=2, L_moe=1, F=16) == 146


def test_moe_with_no_shared_expert_and_the_experts_whole_on_a_gpu():
    """E_s = 0 (Qwen3-MoE, gpt-oss), t = 2 with expert_tp = 1 and sequence parallelism: the attention block's 13h
    all over t, 26 bytes; the norm's input and output and the dropout mask after the block over t, 10; the T·k = 2
    rows split over the t = 2 ranks, each rank one row of 2h + 4F_e + 2F_e = 8 + 8 + 4 = 20 bytes.  26 + 10 + 20 = 56
    bytes."""
    assert at(layer_activation_bytes("none", True, True, moe=True, gated=True, expert_tp="1"), E_s=0, t=2) == 56


def test_full_recompute_keeps_the_input_only():
    """Full recompute keeps each layer's 16-bit input, 2h = 8 bytes, MoE or not."""
    assert at(layer_activation_bytes("full", True, False, moe=True, gated=True)) == 8
    assert sp.simplify(layer_activation_bytes("full", True, False, moe=True, gated=True)
                       - layer_activation_bytes("full", True, False, gated=True)) == 0
