"""Chapter 2 — data parallel: the source article's naive (parameter-server) all-reduce vs the ring.

Every expression starts from the strategy's composed cost (``STRATEGIES['dp']``): the
catalog's flat reduce + flat broadcast for the naive form, ring reduce-scatter + ring
all-gather for the ring.  Elements, one training step, exact (N−1)/N forms.
"""

from symcomm.collectives.algorithms import PATARASUK, SOURCE_ARTICLE
from symcomm.core.chapters import Chapter, Derivation, Step
from symcomm.core.proof import AtLeast, Claim
from symcomm.training.strategies import STRATEGIES
from symcomm.core.symbols import N, Phi

# the article names no author, date or address a paper can cite: the published source beside it
ARTICLE = (SOURCE_ARTICLE + ", ch. 2: ring all-reduce 2Φ(N−1)/N; published: " + PATARASUK
           + " (the ring all-reduce's 2(N − 1)M/N per rank); the naive root's counts are counted here")
SOURCE = ARTICLE + "; " + PATARASUK.short + ", §3"

DP = STRATEGIES["dp"]
ring = DP.cost(algorithm="ring")
naive = DP.cost(algorithm="naive")

RING_SEND = Derivation(
    "Ring all-reduce: elements each GPU sends per step",
    (Step(ring.send, "composed: ring reduce-scatter of Φ, then ring all-gather of Φ"),
     Step(Phi * (N - 1) / N + Phi * (N - 1) / N, "each phase sends N−1 blocks of Φ/N"),
     Step(2 * Phi * (N - 1) / N, "add the two phases"),
     Step(2 * Phi, "as N → ∞", "→")),
    "elements, per step (one gradient all-reduce after the backward), exact (N−1)/N then its limit",
    SOURCE, lhs="per-GPU send")

NAIVE_ROOT = Derivation(
    "Naive all-reduce: what the root sends",
    (Step(naive.root.send, "composed: flat reduce (root sends nothing), then flat broadcast"),
     Step((N - 1) * Phi, "the root sends Φ to each of the other N−1 GPUs")),
    "elements, per step; the root is the busiest GPU", ARTICLE, lhs="root send")

NAIVE_ROOT_RECV = Derivation(
    "Naive all-reduce: what the root receives",
    (Step(naive.root.recv, "composed: flat reduce, then flat broadcast (root receives nothing)"),
     Step((N - 1) * Phi, "each of the other N−1 GPUs sends its Φ gradients to the root")),
    "elements, per step", ARTICLE, lhs="root recv")

CLAIMS = (
    Claim(naive.total, ring.total, name="naive and ring all-reduce move the same total: 2(N−1)Φ",
          source=ARTICLE),
    Claim(ring.total, 2 * (N - 1) * Phi, name="total elements sent over all GPUs = 2(N−1)Φ", source=ARTICLE),
    Claim(naive.beta, N * ring.beta, name="naive bandwidth term is N × the ring's", source=ARTICLE),
    Claim(naive.send, (N - 1) * Phi, name="naive: the busiest GPU (the root) sends (N−1)Φ", source=ARTICLE),
    AtLeast(naive.send, ring.send, name="naive busiest-GPU send ≥ ring's for N ≥ 2", source=ARTICLE),
    Claim(naive.send / ring.send, N / 2, name="naive/ring busiest-GPU send = N/2 (unbounded in N)",
          source=ARTICLE),
    Claim(ring.alpha, 2 * (N - 1), name="ring all-reduce: 2(N−1) latency steps", source=SOURCE),
)

CHAPTER = Chapter(
    2, "data-parallel", "Data parallel: naive vs ring all-reduce",
    "Every GPU holds the whole model and a slice of the batch; after the backward pass the "
    "Φ gradients are summed across the N GPUs. The naive form gathers them at one root and "
    "broadcasts the sum; the ring splits them into N blocks and passes them round.",
    (RING_SEND, NAIVE_ROOT, NAIVE_ROOT_RECV), CLAIMS)
