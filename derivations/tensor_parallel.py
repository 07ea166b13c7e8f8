"""Chapter 4 — tensor parallel (Megatron) and sequence parallel.

Per layer (L = 1), elements, forward + backward unless a title says forward; exact
(N−1)/N forms, then the limit.  Narayanan et al. print 8bsh(t−1)/t per layer per device
per micro-batch — the exact form.
"""

import sympy as sp

from symcomm.core.chapters import Chapter, Derivation, Step
from symcomm.core.proof import Claim, Limit
from symcomm.training.strategies import KORTHIKANTI, MEGATRON_SP_REGATHER, NARAYANAN, SHOEYBI, STRATEGIES
from symcomm.training.terms import forward
from symcomm.core.symbols import L, N, b, h, s

TP_SOURCE = SHOEYBI + ", §3; " + NARAYANAN + ", §3.2"
SP_SOURCE = KORTHIKANTI + ", §4.2.2"
REGATHER_SOURCE = MEGATRON_SP_REGATHER
bsh = b * s * h

tp = STRATEGIES["tp"].cost().subs({L: 1})
tp_recompute = STRATEGIES["tp"].cost(recompute="full").subs({L: 1})
seq = STRATEGIES["sp"].cost().subs({L: 1})
seq_recompute = STRATEGIES["sp"].cost(recompute="full").subs({L: 1})
seq_regather = STRATEGIES["sp"].cost(sp_regather=1).subs({L: 1})
tp_forward = STRATEGIES["tp"].cost_where(forward).subs({L: 1})
sp_forward = STRATEGIES["sp"].cost_where(forward).subs({L: 1})

TP = Derivation(
    "Tensor parallel: elements each GPU sends per layer per step",
    (Step(tp.send, "composed: 2 ring all-reduces of b·s·h forward (attention, MLP outputs), 2 backward"),
     Step(4 * 2 * bsh * (N - 1) / N, "each ring all-reduce sends 2(N−1)/N of its b·s·h buffer"),
     Step(8 * bsh * (N - 1) / N, "the 8bsh(t−1)/t Narayanan et al. print, with t = N"),
     Step(8 * bsh, "as N → ∞", "→")),
    "elements, per layer (L = 1), forward + backward, exact then limit", TP_SOURCE, lhs="per-GPU send")

TP_RECOMPUTE = Derivation(
    "Tensor parallel with full recomputation: elements each GPU sends per layer per step",
    (Step(tp_recompute.send, "composed: the 2 forward all-reduces run again before the backward"),
     Step(6 * 2 * bsh * (N - 1) / N, "six ring all-reduces of b·s·h"),
     Step(12 * bsh * (N - 1) / N, "collect"),
     Step(12 * bsh, "as N → ∞", "→")),
    "elements, per layer, forward + recompute + backward, exact then limit", TP_SOURCE, lhs="per-GPU send")

SP = Derivation(
    "Sequence parallel: elements each GPU sends per layer per step",
    (Step(seq.send, "composed: each all-reduce replaced by an all-gather and a reduce-scatter of b·s·h"),
     Step(4 * (bsh * (N - 1) / N + bsh * (N - 1) / N), "4 (all-gather + reduce-scatter) pairs, (N−1)/N·bsh each"),
     Step(8 * bsh * (N - 1) / N, "the same as tensor parallel alone")),
    "elements, per layer, forward + backward, exact; sp_regather=0: the all-gathered input is kept for the "
    "weight gradient (Korthikanti et al.'s count; torch's DTensor tensor parallel)", SP_SOURCE, lhs="per-GPU send")

SP_REGATHER = Derivation(
    "Sequence parallel as Megatron-LM runs it: elements each GPU sends per layer per step",
    (Step(seq_regather.send, "composed: the 4 all-gather + reduce-scatter pairs, and in the backward the "
                             "sequence-sharded inputs of the QKV and FC1 GEMMs all-gathered again for their weight "
                             "gradients"),
     Step(5 * (bsh * (N - 1) / N + bsh * (N - 1) / N), "6 all-gathers and 4 reduce-scatters, (N−1)/N·bsh each"),
     Step(10 * bsh * (N - 1) / N, "collect: 10bsh(t−1)/t, not TP's 8")),
    "elements, per layer, forward + backward, exact; sp_regather=1 (Megatron-LM, Transformer Engine)",
    REGATHER_SOURCE, lhs="per-GPU send")

NARAYANAN_EXAMPLE = {N: 8, b: 1, s: 2048, h: 12288}

CLAIMS = (
    Claim(seq.send, tp.send, name="SP keeping the gathered input (sp_regather=0) = TP volume (per GPU)",
          source=SP_SOURCE),
    Claim(seq.total, tp.total, name="SP keeping the gathered input (sp_regather=0) = TP volume (all GPUs)",
          source=SP_SOURCE),
    Claim(seq_recompute.send, tp_recompute.send,
          name="with full recompute, SP keeping the gathered input = TP volume", source=SP_SOURCE),
    Claim(seq_regather.send / tp.send, sp.Rational(5, 4),
          name="SP with Megatron-LM's backward re-all-gather (sp_regather=1) sends 10/8 = 5/4 of TP's volume",
          source=REGATHER_SOURCE),
    Claim(seq_regather.send - seq.send, 2 * bsh * (N - 1) / N,
          name="the re-all-gather adds 2 all-gathers of b·s·h per layer (QKV and FC1 inputs)", source=REGATHER_SOURCE),
    Claim(tp_recompute.send / tp.send, sp.Rational(3, 2), name="full recompute multiplies TP volume by 3/2",
          source="derived here: the recomputed forward reruns the forward's two all-reduces a layer beside the "
                 "forward's two and the backward's two, which " + SHOEYBI + ", §3, counts"),
    Claim(tp_forward.send, 4 * bsh * (N - 1) / N, name="TP forward only: 4bsh(N−1)/N per layer", source=SHOEYBI + ", §3"),
    Claim(sp_forward.send, tp_forward.send, name="SP forward volume = TP forward volume", source=SP_SOURCE),
    Limit(tp_recompute.send, 12 * bsh, name="TP with full recompute → 12bsh", source=TP_SOURCE),
    Claim(tp.send.subs(NARAYANAN_EXAMPLE), 176160768,
          name="at GPT-3's shape (Narayanan et al.'s t=8, b=1, s=2048, h=12288) → 176,160,768 elements per layer",
          source="counted here at the shape of " + NARAYANAN + ", §3.2 (the paper prints the formula, not this "
                 "number)"),
    Claim(tp.alpha, 8 * (N - 1), name="TP: 4 ring all-reduces, 2(N−1) latency steps each, per layer",
          source=TP_SOURCE),
)

CHAPTER = Chapter(
    4, "tensor-parallel", "Tensor and sequence parallel",
    "Megatron splits each layer's weight matrices over N GPUs; the partial outputs of the "
    "attention and MLP blocks are summed by an all-reduce of the b·s·h activations, twice "
    "forward and twice backward. Sequence parallelism splits the all-reduce into its two "
    "halves and keeps the activations between them sharded along the sequence; Megatron-LM "
    "then all-gathers the sharded inputs once more in the backward, for the weight gradients "
    "(sp_regather=1), which torch's tensor parallel avoids by keeping the gathered input.",
    (TP, TP_RECOMPUTE, SP, SP_REGATHER), CLAIMS)
