"""Chapter 5 — pipeline parallel: GPipe, 1F1B and interleaved schedules.

Elements per training step, forward (activations) + backward (their gradients).  ``send``
is an interior stage (N ≥ 3).  The bubble fraction is bubble time / ideal compute time
(Narayanan et al. 2021, §2.2): (N−1)/m, and (N−1)/(v·m) interleaved.
"""

from symcomm.core.chapters import Chapter, Derivation, Step
from symcomm.core.proof import Claim, Domain, Limit
from symcomm.training.strategies import HUANG, NARAYANAN, STRATEGIES
from symcomm.core.symbols import N, b, h, m, s, v

PP_SOURCE = HUANG + "; " + NARAYANAN + ", §2.2"
INTERIOR = Domain(least=((N, 3),))   # a stage with a neighbour on each side exists
bsh = b * s * h
PP = STRATEGIES["pp"]

one_f_one_b = PP.cost(schedule="1f1b")
gpipe = PP.cost(schedule="gpipe")
interleaved = PP.cost(schedule="interleaved")

PER_GPU = Derivation(
    "Pipeline: elements an interior stage sends per step",
    (Step(one_f_one_b.send, "composed: m sends of b·s·h/m forward, m sends of their gradients backward"),
     Step(m * (bsh / m) + m * (bsh / m), "m micro-batches each way"),
     Step(2 * bsh, "micro-batching changes the number of messages, not the volume")),
    "elements, per step, forward + backward, interior stage (N ≥ 3)", PP_SOURCE, lhs="per-GPU send",
    domain=INTERIOR)

TWO_STAGES = Derivation(
    "Pipeline of two stages: elements the busier stage sends per step",
    (Step(interleaved.send.subs(N, 2), "composed, N = 2: no stage has a neighbour on both sides"),
     Step((2 * v - 1) * bsh, "the v chunks of a stage have 2v − 1 boundaries with the other stage's chunks")),
    "elements, per step, forward + backward, busier of the two stages",
    NARAYANAN + ", §2.2", lhs="per-GPU send",
    claims=(Claim(one_f_one_b.send.subs(N, 2), bsh,
                  name="two stages, 1F1B: stage 0 sends the activations, stage 1 their gradients: bsh each",
                  source=PP_SOURCE),))

TOTAL = Derivation(
    "Pipeline: elements sent over the whole pipeline per step",
    (Step(one_f_one_b.total, "composed: N−1 boundaries, each crossed by b·s·h forward and b·s·h backward"),
     Step((N - 1) * 2 * bsh, "2bsh per boundary"),
     Step(2 * (N - 1) * bsh, "the 2(N−1)bsh of the design table")),
    "elements, per step, all GPUs", PP_SOURCE, lhs="total")

INTERLEAVED = Derivation(
    "Interleaved pipeline: elements sent over the whole pipeline per step",
    (Step(interleaved.total, "composed: N·v model chunks, N·v − 1 chunk boundaries"),
     Step(2 * (N * v - 1) * bsh, "2bsh per chunk boundary")),
    "elements, per step, all GPUs; exact (v× only in the per-GPU volume, approximately v× in total)",
    NARAYANAN + ", §2.2.2", lhs="total")

BUBBLE = Derivation(
    "Interleaved pipeline: bubble fraction",
    (Step(PP.extras(schedule="interleaved")["bubble_fraction"], "Narayanan et al.: bubble time / ideal time"),
     Step(PP.extras(schedule="1f1b")["bubble_fraction"] / v, "1F1B's (N−1)/m divided by v")),
    "bubble time / ideal compute time", NARAYANAN + ", §2.2.2", lhs="bubble fraction")

CLAIMS = (
    Claim(gpipe.send, one_f_one_b.send, name="GPipe and 1F1B send the same volume", source=PP_SOURCE),
    Claim(interleaved.send, v * one_f_one_b.send, name="interleaving multiplies the per-GPU volume by v (N ≥ 3)",
          source=NARAYANAN + ", §2.2.2", domain=INTERIOR),
    Claim(interleaved.alpha, v * one_f_one_b.alpha, name="interleaving multiplies the messages by v (N ≥ 3)",
          source=NARAYANAN + ", §2.2.2", domain=INTERIOR),
    Claim(one_f_one_b.alpha, 2 * m, name="an interior stage sends 2m messages per step (N ≥ 3)", source=PP_SOURCE,
          domain=INTERIOR),
    Claim(one_f_one_b.send.subs(N, 1), 0, name="one stage: no pipeline traffic", source=PP_SOURCE),
    Claim(PP.extras(schedule="1f1b")["bubble_fraction"], (N - 1) / m, name="1F1B bubble fraction (N−1)/m",
          source=NARAYANAN + ", §2.2.1"),
    Claim(PP.extras(schedule="gpipe")["bubble_fraction"], (N - 1) / m,
          name="GPipe bubble fraction (N−1)/m of the ideal compute time", source=NARAYANAN + ", §2.2.1"),
    Claim(PP.extras(schedule="gpipe")["bubble_fraction"] / (1 + PP.extras(schedule="gpipe")["bubble_fraction"]),
          (N - 1) / (m + N - 1), name="as a share of the whole step, GPipe's (N−1)/(m+N−1)", source=HUANG + ", §2.2"),
    Limit(PP.extras(schedule="1f1b")["bubble_fraction"], 0, var=m, name="bubble → 0 as m → ∞", source=PP_SOURCE),
    Claim(interleaved.total - one_f_one_b.total, 2 * N * (v - 1) * bsh,
          name="interleaving adds 2N(v−1)bsh to the pipeline total", source=NARAYANAN + ", §2.2.2"),
)

CHAPTER = Chapter(
    5, "pipeline", "Pipeline parallel",
    "Pipeline parallelism cuts the layers into N stages; each boundary carries the b·s·h "
    "activations forward and their gradients backward, in m micro-batches. The schedule "
    "(GPipe, 1F1B, interleaved) changes the bubble and the number of messages; only "
    "interleaving changes the volume.",
    (PER_GPU, TWO_STAGES, TOTAL, INTERLEAVED, BUBBLE), CLAIMS)
