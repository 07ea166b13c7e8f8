"""Chapter 7 — context parallel: DeepSpeed-Ulysses and ring attention.

Per layer (L = 1), elements; each rank holds s/N tokens of every sequence.  Both papers
count the forward pass; the strategies also carry the backward.  gqa=1 gives K and V the
width h_kv (grouped-query attention).
"""

import sympy as sp

from symcomm.core.chapters import Chapter, Derivation, Step
from symcomm.core.proof import Claim
from symcomm.training.strategies import JACOBS, LIU, RING_FLASH_ATTN, STRATEGIES
from symcomm.training.terms import forward
from symcomm.core.symbols import L, N, b, h, h_kv, s

bsh = b * s * h
ULYSSES = STRATEGIES["cp_ulysses"]
RING = STRATEGIES["cp_ring"]

ulysses_fwd = ULYSSES.cost_where(forward).subs({L: 1})
ulysses = ULYSSES.cost().subs({L: 1})
ulysses_gqa_fwd = ULYSSES.cost_where(forward, gqa=1).subs({L: 1})
ring_fwd = RING.cost_where(forward).subs({L: 1})
ring_gqa_fwd = RING.cost_where(forward, gqa=1).subs({L: 1})
ring = RING.cost().subs({L: 1})
# the chapter's rings have N ≥ 2 ranks (the claims' domain): a group of one runs no ring and its
# cost is 0 (claimed below), so the forms shown here drop the N = 1 branch
_ring_flash_any_n = RING.cost(backward="ring_flash_attn").subs({L: 1})
ring_flash_send = _ring_flash_any_n.send.xreplace({sp.Eq(N, 1): sp.false})
megatron_sp_fwd = STRATEGIES["sp"].cost_where(forward).subs({L: 1})

ULYSSES_FWD = Derivation(
    "Ulysses: elements each GPU sends per layer, forward",
    (Step(ulysses_fwd.send, "composed: all-to-all of Q, K, V and O, each rank's buffer b·(s/N)·h"),
     Step(4 * (b * s * h / N) * (N - 1) / N, "(N−1)/N of each buffer leaves the rank"),
     Step(4 * bsh * (N - 1) / N**2, "collect"),
     Step(sp.Integer(0), "as N → ∞: the per-GPU volume falls like 4bsh/N", "→")),
    "elements, per layer, forward only (as the paper), exact", JACOBS + ", §3.2", lhs="per-GPU send")

RING_FWD = Derivation(
    "Ring attention: elements each GPU sends per layer, forward",
    (Step(ring_fwd.send, "composed: K and V each pass once round the ring (a ring all-gather of b·s·h)"),
     Step(2 * bsh * (N - 1) / N, "N−1 blocks of b·(s/N)·h, for K and for V"),
     Step(2 * bsh, "as N → ∞", "→")),
    "elements, per layer, forward only, K and V of full width h (MHA), exact then limit", LIU + ", §3",
    lhs="per-GPU send")

RING_FLASH = Derivation(
    "Ring attention as ring-flash-attention runs its backward: elements each GPU sends per layer",
    (Step(ring_flash_send, "composed: K, V ring passes forward and backward, dK, dV reduced round the ring, "
                           "and one more send of each that brings it home"),
     Step(4 * bsh * (N - 1) / N + 2 * N * (b * (s / N) * h),
          "K, V: N−1 blocks of b·(s/N)·h each, twice; dK, dV: N blocks each (one per step)"),
     Step(2 * bsh * (3 * N - 2) / N, "collect")),
    "elements, per layer, forward + backward, MHA; dK, dV travel in fp32 there (2× the bytes of bf16)",
    RING_FLASH_ATTN, lhs="per-GPU send")

CLAIMS = (
    Claim(ulysses_fwd.send / megatron_sp_fwd.send, 1 / N,
          name="Ulysses / Megatron-SP forward volume per GPU = 1/N exactly",
          source=JACOBS + ", §3.2 (prints 4Nh/P vs 4Nh, the limits, per sequence)"),
    Claim(ulysses.send, 2 * ulysses_fwd.send, name="Ulysses backward repeats the forward all-to-alls (built so)",
          source=JACOBS + ", §3.1", definition=True),
    Claim(ulysses_gqa_fwd.send, 2 * b * s * (h + h_kv) * (N - 1) / N**2,
          name="Ulysses with GQA, forward: Q and O of width h, K and V of width h_kv", source=JACOBS),
    Claim(ring_gqa_fwd.send, 2 * b * s * h_kv * (N - 1) / N, name="ring attention with GQA, forward: 2b·s·h_kv(N−1)/N",
          source=LIU + ", §3"),
    Claim(ring.send, 3 * ring_fwd.send,
          name="ring attention, forward + backward: K, V again and dK, dV back = 3 × forward",
          source="derived here (the least backward a ring can run: K, V round again, dK, dV reduced round it); "
                 + LIU + " counts the forward only"),
    Claim(ring_flash_send - ring.send, 2 * bsh / N,
          name="ring-flash-attention's backward sends one block of dK and of dV more than the minimum",
          source=RING_FLASH_ATTN),
    Claim(_ring_flash_any_n.send.subs(N, 1) + _ring_flash_any_n.total.subs(N, 1), 0,
          name="ring attention on a group of one (N = 1) sends nothing, ring-flash-attention's return sends "
               "included (no peer: the definition)", source=RING_FLASH_ATTN),
    Claim(ring_fwd.send / ulysses_fwd.send, N / 2, name="ring / Ulysses forward volume = N/2",
          source=LIU + "; " + JACOBS),
)

CHAPTER = Chapter(
    7, "context-parallel", "Context parallel: Ulysses and ring attention",
    "Long sequences are split over N GPUs. Ulysses switches the split from the sequence to "
    "the heads with all-to-alls around attention; ring attention keeps the split and passes "
    "the K and V blocks round a ring.",
    (ULYSSES_FWD, RING_FWD, RING_FLASH), CLAIMS)
