"""The catalog of algorithms: one closed form (or one composition) per algorithm.

Adding an algorithm means adding one entry to ``_ENTRIES`` here; a closed form also needs
its execution in :mod:`symcomm.collectives.executions` (a composition is simulated from its phases);
the tests hold the two against each other.

Conventions (ARCHITECTURE.md, "Conventions"): elements, M = the full unsharded buffer,
exact (N−1)/N forms.
Power-of-two algorithms are written with log₂N; general ones with ⌈log₂N⌉.  Rooted
algorithms root at rank 0.  ``send``/``recv`` keyword arguments are the busiest
*non-root* rank; ``root_send``/``root_recv`` the root.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

import sympy as sp

from ..base.crossing import CROSSING, RING
from ..core import rules
from ..core import symbols as S
from ..core.cost import Cost
from .primitives import PRIMITIVES
from ..core.rules import Rule

N, M, G, C, K = S.N, S.M, S.G, S.C, S.K


def _kept(func, *args):
    """``func(*args)`` (a Min or a Max) built without SymPy's evaluation, for the forms below that it leaves as they
    are: SymPy compares every pair of arguments again (two thirds of this module's import) to change nothing.
    tests/collectives/test_algorithms.py holds every Min and Max of the catalog equal to its own evaluation."""
    return func(*args, evaluate=False)

log2N = S.log2(N)             # power-of-two algorithms only
ceil_log2N = S.log2_ceil(N)   # general N
floor_log2N = S.log2_floor(N)  # general N: the power-of-two core of a fold

class Reference(str):
    """A publication, defined once: the string is the full citation; ``cite`` is author and
    year ("Chan et al. 2007") and ``short`` adds the venue (the full citation's last part)."""

    cite: str
    short: str

    def __new__(cls, full: str, cite: str) -> "Reference":
        ref = super().__new__(cls, full)
        ref.cite = cite
        ref.short = f"{cite}, {full.rsplit(', ', 1)[1]}"
        return ref

    def __reduce__(self):
        return (Reference, (str(self), self.cite))


THAKUR = Reference("Thakur, Rabenseifner & Gropp 2005, Optimization of Collective Communication Operations in MPICH, IJHPCA 19(1)",
                   "Thakur et al. 2005")
#: the two-level all-reduce as reduce-scatter in the node, all-reduce across, all-gather in the node
HOROVOD_HIERARCHICAL = ("Horovod's hierarchical allreduce, uber/horovod pull request #411 (2018, 'Parallelize "
                        "hierarchical allreduce algorithm': NCCL reduce-scatter inside the node, MPI allreduce across "
                        "the nodes, NCCL allgather inside the node, where its first form reduced to one GPU and "
                        "broadcast)")
CHAN = Reference("Chan, Heimlich, Purkayastha & van de Geijn 2007, Collective communication: theory, practice, and experience, CCPE 19(13)",
                 "Chan et al. 2007")
BRUCK = Reference("Bruck, Ho, Kipnis, Upfal & Weathersby 1997, Efficient algorithms for all-to-all communications in multiport message-passing systems, IEEE TPDS 8(11)",
                  "Bruck et al. 1997")
PATARASUK = Reference("Patarasuk & Yuan 2009, Bandwidth optimal all-reduce algorithms for clusters of workstations, JPDC 69(2)",
                      "Patarasuk & Yuan 2009")
GRAHAM = Reference("Graham et al. 2016, Scalable Hierarchical Aggregation Protocol (SHArP), COMHPC", "Graham et al. 2016")
#: the article whose notation symcomm keeps (Φ, b, s, h, N): collective primitives, their costs,
#: and the data-parallel all-reduce
SOURCE_ARTICLE = ("the source article, “Why communication overhead matters” (in Chinese; collective primitives, "
                  "their communication costs, data-parallel all-reduce)")
GLOO = "gloo (github.com/pytorch/gloo), the collective library behind torch.distributed's gloo backend"


# -- requirements on N and M (rules: symcomm.core.rules) -------------------------------------------

POW2 = rules.power_of_two(N)
N_DIVIDES_M = rules.multiple_of(N, M)
G_DIVIDES_N = rules.multiple_of(G, N)
PAIR = rules.needs(N, 2)
ALONE_N = rules.needs(N, 1)
C_DIVIDES_M = rules.multiple_of(C, M)
# a fold to 2^⌊log₂N⌋ ranks splits M among them
CORE_DIVIDES_M = rules.multiple_of(2 ** floor_log2N, M, "2^⌊log₂N⌋")
# a chain's last rank forwards nothing: with N = 2 no non-root rank both receives and sends
_CHAIN_MIDDLE = sp.Piecewise((0, sp.Eq(N, 2)), (M, True))
# a binomial tree on any N (K = ⌈log₂N⌉ rounds, top mask 2^(K−1)): the messages of its busiest
# non-root, rank 2^(K−1) (one per mask 2^j < N − 2^(K−1)) or rank 2^(K−2) (one per mask below
# its own, K − 2); at N = 2^k both are k − 1
# a fold to the nearest lower power of two P = 2^⌊log₂N⌋: 1 when N − P extra ranks exist, else 0
_FOLDED = ceil_log2N - floor_log2N
_CORE = 2 ** floor_log2N
# 1 when at least two extra ranks fold (N − 2^⌊log₂N⌋ ≥ 2), else 0: then a core rank other than 0
# (core rank 1) also receives a folded buffer
_FOLDED_TWO = _kept(sp.Min, _kept(sp.Max, N - _CORE - 1, 0), 1)
# blocks in the largest subtree below the root of a binomial tree on any N: rank 2^(K−1) holds
# N − 2^(K−1), rank 2^(K−2) holds 2^(K−2); at N = 2^k both are N/2 or less and the first is N/2
_SUBTREE = _kept(sp.Max, N - 2 ** (ceil_log2N - 1), 2 ** (ceil_log2N - 1) / 2)
_BINOMIAL_INNER = _kept(sp.Max, ceil_log2N - 2, S.log2_ceil(N - 2 ** (ceil_log2N - 1)))


# gloo's segmented ring reduce (gloo/reduce.cc) on any N and M, segments of at most K elements:
# a segment holds S = min(⌈M/2N⌉, K) elements (the last ones partial or empty), ⌈M/S⌉ of them hold
# data, and each rank's chunk is P = ⌈max(⌈M/S⌉, 2N)/N⌉ segments (numSegments = N·P, a multiple of N,
# at least 2N), so chunk r holds x_r = min(max(M − r·P·S, 0), P·S) elements.  The ring loop sends
# every segment but the last two of the sender's own chunk: rank r sends M − t(x_r), where
# t(x) = max(x − (P − 2)S, 0) is what the last two segments of a chunk of x elements hold.
_SEG = _kept(sp.Min, sp.ceiling(M / (2 * N)), K)
_FILLED = sp.ceiling(M / _SEG)
_PER = sp.ceiling(_kept(sp.Max, _FILLED, 2 * N) / N)
_CHUNK = _PER * _SEG


def _chunk_holds(r):
    """x_r: the elements of chunk r (segments r·P … r·P + P − 1) that lie inside the buffer."""
    return sp.Min(sp.Max(M - r * _CHUNK, 0), _CHUNK)


def _last_two(x):
    """t(x): what the last two segments of a chunk holding x elements hold."""
    return _kept(sp.Max, x - (_PER - 2) * _SEG, 0)


_FULL_CHUNKS = sp.floor(M / _CHUNK)


# -- algorithms ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Phase:
    """One step of a composed algorithm: ``algorithm`` of ``primitive`` on a group."""

    primitive: str
    algorithm: str
    group: sp.Expr = N
    message: sp.Expr = M
    across_nodes: bool = False

    @property
    def implementation(self) -> "Algorithm":
        """The catalog algorithm this phase runs."""
        return algorithm(self.primitive, self.algorithm)

    @property
    def cost(self) -> Cost:
        """This phase's algorithm with N → group, M → message, on its level."""
        part = self.implementation.cost.subs({N: self.group, M: self.message})
        # N/group groups run this phase side by side, one per set of ranks
        part = replace(part, total=part.total * N / self.group)
        return part.across_nodes() if self.across_nodes else part


@dataclass(frozen=True)
class Algorithm:
    primitive: str
    name: str
    summary: str
    source: str
    requires: tuple[Rule, ...] = ()
    closed_form: Cost | None = None
    phases: tuple[Phase, ...] = ()

    @property
    def key(self) -> tuple[str, str]:
        return (self.primitive, self.name)

    @property
    def power_of_two(self) -> bool:
        return POW2 in self.requires

    @cached_property
    def cost(self) -> Cost:
        """The closed form, or the sum of the phases' costs (composition)."""
        if self.closed_form is not None:
            return self.closed_form
        return Cost.sum(phase.cost for phase in self.phases).simplified()

    def violations(self, values: dict) -> list[str]:
        return rules.problems(self.requires, values)


_ENTRIES = [
    # ---- broadcast -----------------------------------------------------------------------
    Algorithm("broadcast", "flat", "the root sends the whole buffer to each rank in turn",
              THAKUR + ", §4 (Broadcast), the linear baseline",
              closed_form=Cost.of(root_send=(N - 1) * M, root_recv=0, send=0, recv=M,
                                  total=(N - 1) * M, alpha=N - 1, beta=(N - 1) * M)),
    Algorithm("broadcast", "binomial_tree", "the set of ranks holding the data doubles each round "
              "(any N: the root sends first to 2^(⌈log₂N⌉−1), each holder r then to r + mask while that rank exists)",
              THAKUR + ", §4 (Broadcast): T = ⌈log₂p⌉(α + nβ); MPICH "
              "src/mpi/coll/bcast/bcast_intra_binomial.c (relative ranks, mask halving from the top)",
              closed_form=Cost.of(root_send=ceil_log2N * M, root_recv=0,
                                  # busiest non-root: rank 2^(K−1) (⌈log₂(N − 2^(K−1))⌉ sends) or 2^(K−2) (K − 2)
                                  send=_BINOMIAL_INNER * M, recv=M,
                                  total=(N - 1) * M, alpha=ceil_log2N, beta=ceil_log2N * M)),
    Algorithm("broadcast", "scatter_allgather",
              "binomial scatter of N blocks, then ring all-gather (van de Geijn)",
              THAKUR + ", §4 (Broadcast): T = (log p + p − 1)α + 2((p − 1)/p)nβ; MPICH "
              "src/mpi/coll/bcast/bcast_intra_scatter_ring_allgather.c (any p)", (N_DIVIDES_M,),
              phases=(Phase("scatter", "binomial_tree"), Phase("all_gather", "ring"))),
    Algorithm("broadcast", "scatter_rd_allgather",
              "binomial scatter of N blocks, then recursive-doubling all-gather (MPICH's medium-message broadcast)",
              THAKUR + ", §4 (Broadcast: scatter, then recursive-doubling allgather for medium messages); MPICH "
              "src/mpi/coll/bcast/bcast_intra_scatter_recursive_doubling_allgather.c", (POW2, N_DIVIDES_M),
              phases=(Phase("scatter", "binomial_tree"), Phase("all_gather", "recursive_doubling"))),
    # ---- scatter -------------------------------------------------------------------------
    Algorithm("scatter", "flat", "the root sends block r to rank r, one rank at a time",
              CHAN + " (scatter: linear algorithm)", (N_DIVIDES_M,),
              Cost.of(root_send=(N - 1) * M / N, root_recv=0, send=0, recv=M / N,
                      total=(N - 1) * M / N, alpha=N - 1, beta=(N - 1) * M / N)),
    Algorithm("scatter", "binomial_tree", "the root sends half of the blocks, then each holder halves again "
              "(any N: the subtree of rank r is the ranks r … min(r + lowbit(r), N) − 1; "
              "ones(N) = Σ_{b<N} popcount(b) blocks travel one link per set bit)",
              CHAN + " (scatter: minimum-spanning-tree algorithm); MPICH src/mpi/coll/scatter/scatter_intra_binomial.c",
              (N_DIVIDES_M,),
              Cost.of(root_send=(N - 1) * M / N, root_recv=0, send=(_SUBTREE - 1) * M / N, recv=_SUBTREE * M / N,
                      total=S.OnesBelow(N) * M / N, alpha=ceil_log2N, beta=(N - 1) * M / N)),
    # ---- gather --------------------------------------------------------------------------
    Algorithm("gather", "flat", "each rank sends its block to the root, one at a time",
              CHAN + " (gather: linear algorithm)", (N_DIVIDES_M,),
              Cost.of(root_send=0, root_recv=(N - 1) * M / N, send=M / N, recv=0,
                      total=(N - 1) * M / N, alpha=N - 1, beta=(N - 1) * M / N)),
    Algorithm("gather", "binomial_tree", "blocks are merged pairwise up a binomial tree "
              "(any N: rank r sends its subtree's min(lowbit(r), N − r) blocks; "
              "ones(N) = Σ_{b<N} popcount(b) blocks travel one link per set bit)",
              CHAN + " (gather: minimum-spanning-tree algorithm); MPICH src/mpi/coll/gather/gather_intra_binomial.c",
              (N_DIVIDES_M,),
              Cost.of(root_send=0, root_recv=(N - 1) * M / N, send=_SUBTREE * M / N, recv=(_SUBTREE - 1) * M / N,
                      total=S.OnesBelow(N) * M / N, alpha=ceil_log2N, beta=(N - 1) * M / N)),
    # ---- reduce --------------------------------------------------------------------------
    Algorithm("reduce", "flat", "each rank sends its buffer to the root, which adds them one by one",
              THAKUR + ", §4 (Reduce), the linear baseline",
              closed_form=Cost.of(root_send=0, root_recv=(N - 1) * M, send=M, recv=0,
                                  total=(N - 1) * M, alpha=N - 1, beta=(N - 1) * M,
                                  gamma=(N - 1) * M)),
    Algorithm("reduce", "binomial_tree", "partial sums are combined pairwise up a binomial tree "
              "(any N: in round j rank r with lowest set bit 2^j sends to r − 2^j)",
              THAKUR + ", §4 (Reduce): T = ⌈log₂p⌉(α + nβ + nγ); MPICH "
              "src/mpi/coll/reduce/reduce_intra_binomial.c (mask doubling from 1)",
              closed_form=Cost.of(root_send=0, root_recv=ceil_log2N * M, send=M, recv=_BINOMIAL_INNER * M,
                                  total=(N - 1) * M, alpha=ceil_log2N, beta=ceil_log2N * M,
                                  gamma=ceil_log2N * M)),
    Algorithm("reduce", "rabenseifner", "reduce-scatter by recursive halving, then binomial gather",
              THAKUR + ", §4 (Reduce): T = 2 log p·α + 2((p − 1)/p)nβ + ((p − 1)/p)nγ", (POW2, N_DIVIDES_M),
              phases=(Phase("reduce_scatter", "recursive_halving"), Phase("gather", "binomial_tree"))),
    Algorithm("reduce", "rabenseifner_fold",
              "any N: the r = N − 2^⌊log₂N⌋ odd ranks below 2r send their buffer to rank − 1, which adds it; "
              "the P = 2^⌊log₂N⌋ others reduce-scatter by recursive halving from distance 1, then gather the "
              "blocks to rank 0 down a binomial tree (the upper half of the core sends first, core rank 1 last, "
              "with P/2 blocks)",
              THAKUR + ", §4 (Reduce: Rabenseifner; non-power-of-two p by dropping to the nearest lower power of "
              "two); MPICH src/mpi/coll/reduce/reduce_intra_reduce_scatter_gather.c (pof2 = MPL_pof2(size), "
              "rem = size − pof2; root 0 in the core; its cost comment: (2⌊lg p⌋ + 1)α, (2(p − 1)/p + 1)nβ, "
              "(1 + (p − 1)/p)nγ with p there the core's size)", (CORE_DIVIDES_M,),
              Cost.of(root_send=(_CORE - 1) * M / _CORE, root_recv=_FOLDED * M + 2 * (_CORE - 1) * M / _CORE,
                      # core rank 1: its reduce-scatter share, then P/2 blocks to rank 0 (as much as a folded rank's M when P = 2)
                      send=(_CORE - 1) * M / _CORE + M / 2,
                      # core rank 1: the reduce-scatter, P/2 − 1 blocks of the gather, and a folded buffer when r ≥ 2
                      recv=(_CORE - 1) * M / _CORE + (_CORE / 2 - 1) * M / _CORE + _FOLDED_TWO * M,
                      total=(N - _CORE) * M + (_CORE - 1) * M + floor_log2N * M / 2,
                      alpha=2 * floor_log2N + _FOLDED,
                      beta=_FOLDED * M + 2 * (_CORE - 1) * M / _CORE,
                      gamma=_FOLDED * M + (_CORE - 1) * M / _CORE)),
    # ---- all-gather ----------------------------------------------------------------------
    Algorithm("all_gather", "ring", "each rank passes the block it last received to its right neighbour",
              THAKUR + ", §4 (Allgather): T = (p − 1)α + ((p − 1)/p)nβ", (N_DIVIDES_M,),
              Cost.of(send=(N - 1) * M / N, recv=(N - 1) * M / N, total=(N - 1) * M,
                      alpha=N - 1, beta=(N - 1) * M / N)),
    Algorithm("all_gather", "recursive_doubling", "partners at distance 1, 2, 4... swap all they hold",
              THAKUR + ", §4 (Allgather): T = lg p·α + ((p − 1)/p)nβ", (POW2, N_DIVIDES_M),
              Cost.of(send=(N - 1) * M / N, recv=(N - 1) * M / N, total=(N - 1) * M,
                      alpha=log2N, beta=(N - 1) * M / N)),
    Algorithm("all_gather", "bruck", "in round k each rank sends min(2^k, N − 2^k) blocks to rank − 2^k",
              BRUCK + "; " + THAKUR + ", §4 (Allgather): T = ⌈lg p⌉α + ((p − 1)/p)nβ", (N_DIVIDES_M,),
              Cost.of(send=(N - 1) * M / N, recv=(N - 1) * M / N, total=(N - 1) * M,
                      alpha=ceil_log2N, beta=(N - 1) * M / N)),
    Algorithm("all_gather", "gather_broadcast", "flat gather to the root, then flat broadcast (all-gather = gather + broadcast)",
              "the source article's identity All-Gather = Gather + Broadcast, composed here", (N_DIVIDES_M,),
              phases=(Phase("gather", "flat"), Phase("broadcast", "flat"))),
    # ---- reduce-scatter ------------------------------------------------------------------
    Algorithm("reduce_scatter", "ring", "each rank adds its block to the partial sum it receives and passes it on",
              PATARASUK + ", §3 (the reduce-scatter half of the ring all-reduce)", (N_DIVIDES_M,),
              Cost.of(send=(N - 1) * M / N, recv=(N - 1) * M / N, total=(N - 1) * M,
                      alpha=N - 1, beta=(N - 1) * M / N, gamma=(N - 1) * M / N)),
    Algorithm("reduce_scatter", "recursive_halving", "partners at distance N/2, N/4... exchange and add half of what they hold",
              THAKUR + ", §4 (Reduce-Scatter): T = lg p·α + ((p − 1)/p)(nβ + nγ)", (POW2, N_DIVIDES_M),
              Cost.of(send=(N - 1) * M / N, recv=(N - 1) * M / N, total=(N - 1) * M,
                      alpha=log2N, beta=(N - 1) * M / N, gamma=(N - 1) * M / N)),
    Algorithm("reduce_scatter", "pairwise", "in round i rank r sends block r + i to rank r + i and adds the block from r − i",
              THAKUR + ", §4 (Reduce-Scatter): T = (p − 1)α + ((p − 1)/p)(nβ + nγ)", (N_DIVIDES_M,),
              Cost.of(send=(N - 1) * M / N, recv=(N - 1) * M / N, total=(N - 1) * M,
                      alpha=N - 1, beta=(N - 1) * M / N, gamma=(N - 1) * M / N)),
    # ---- all-reduce ----------------------------------------------------------------------
    Algorithm("all_reduce", "ring", "ring reduce-scatter then ring all-gather (all-reduce = reduce-scatter + all-gather)",
              PATARASUK + ", §3; " + THAKUR + ", §4 (Allreduce)", (N_DIVIDES_M,),
              phases=(Phase("reduce_scatter", "ring"), Phase("all_gather", "ring"))),
    Algorithm("all_reduce", "flat", "flat reduce to the root, then flat broadcast: the naive parameter-server form",
              "the source article's naive All-Reduce = Reduce + Broadcast, composed here",
              phases=(Phase("reduce", "flat"), Phase("broadcast", "flat"))),
    Algorithm("all_reduce", "binomial_tree", "binomial reduce, then binomial broadcast",
              THAKUR + ", §4 (Allreduce), MPICH's former default", (POW2,),
              phases=(Phase("reduce", "binomial_tree"), Phase("broadcast", "binomial_tree"))),
    Algorithm("all_reduce", "recursive_doubling", "partners at distance 1, 2, 4... swap and add whole buffers",
              THAKUR + ", §4 (Allreduce): T = lg p·α + n lg p·β + n lg p·γ", (POW2,),
              Cost.of(send=log2N * M, recv=log2N * M, total=N * log2N * M,
                      alpha=log2N, beta=log2N * M, gamma=log2N * M)),
    Algorithm("all_reduce", "recursive_doubling_fold",
              "any N: the r = N − 2^⌊log₂N⌋ even ranks below 2r send their buffer to rank + 1 and wait; the "
              "2^⌊log₂N⌋ others swap and add whole buffers with partners at distance 1, 2, 4...; the odd ranks "
              "below 2r send the result back",
              THAKUR + ", §4 (Allreduce: recursive doubling for short messages; non-power-of-two p handled "
              "as for Rabenseifner's, by the nearest lower power of two); MPICH "
              "src/mpi/coll/allreduce/allreduce_intra_recursive_doubling.c (pof2 = MPL_pof2(size), rem = size − pof2)",
              closed_form=Cost.of(send=(floor_log2N + _FOLDED) * M, recv=(floor_log2N + _FOLDED) * M,
                                  total=(2 * (N - _CORE) + _CORE * floor_log2N) * M,
                                  alpha=floor_log2N + 2 * _FOLDED, beta=(floor_log2N + 2 * _FOLDED) * M,
                                  gamma=(floor_log2N + _FOLDED) * M)),
    Algorithm("all_reduce", "rabenseifner", "recursive-halving reduce-scatter, then recursive-doubling all-gather",
              THAKUR + ", §4 (Allreduce): T = 2 lg p·α + 2((p − 1)/p)nβ + ((p − 1)/p)nγ", (POW2, N_DIVIDES_M),
              phases=(Phase("reduce_scatter", "recursive_halving"), Phase("all_gather", "recursive_doubling"))),
    Algorithm("all_reduce", "rabenseifner_fold",
              "any N: the r = N − 2^⌊log₂N⌋ even ranks below 2r send their buffer to rank + 1 and wait; "
              "the 2^⌊log₂N⌋ others run Rabenseifner (recursive-halving reduce-scatter from distance 1, "
              "recursive-doubling all-gather); the odd ranks below 2r send the result back",
              THAKUR + ", §4 (Allreduce: non-power-of-two, (2⌊lg p⌋ + 2)α); MPICH "
              "src/mpi/coll/allreduce/allreduce_intra_reduce_scatter_allgather.c (pof2 = MPL_pof2(size), "
              "rem = size − pof2)", (CORE_DIVIDES_M,),
              Cost.of(send=2 * (_CORE - 1) * M / _CORE + _FOLDED * M,
                      recv=2 * (_CORE - 1) * M / _CORE + _FOLDED * M,
                      total=2 * (N - 1) * M,
                      alpha=2 * floor_log2N + 2 * _FOLDED,
                      beta=2 * (_CORE - 1) * M / _CORE + 2 * _FOLDED * M,
                      gamma=(_CORE - 1) * M / _CORE + _FOLDED * M)),
    Algorithm("all_reduce", "in_network",
              "every rank sends M up to the switch, which adds and multicasts the sum back (NVLink SHARP, IB SHARP); "
              "the down-link carries the sum while the up-link still carries inputs, so β counts M once",
              GRAHAM + " §3; NCCL NVLS",
              closed_form=Cost.of(send=M, recv=M, total=N * M, alpha=2, beta=M)),
    Algorithm("all_reduce", "hierarchical",
              "ring reduce-scatter inside each node of G ranks, ring all-reduce of the M/G shards across the N/G nodes, ring all-gather inside the node",
              HOROVOD_HIERARCHICAL + "; the two-level idea after Jia et al. 2018, Highly Scalable Deep Learning "
              "Training System with Mixed-Precision, arXiv:1807.11205, whose hierarchical all-reduce reduces to a "
              "master of each group and broadcasts from it instead",
              (G_DIVIDES_N, N_DIVIDES_M),
              phases=(Phase("reduce_scatter", "ring", group=G),
                      Phase("all_reduce", "ring", group=N / G, message=M / G, across_nodes=True),
                      Phase("all_gather", "ring", group=G))),
    Algorithm("all_gather", "hierarchical",
              "ring all-gather across the N/G nodes among ranks of the same local index (M/G each), "
              "then ring all-gather inside each node of G ranks: the network carries only M/G per rank",
              "two-level all-gather, the all-gather half of " + HOROVOD_HIERARCHICAL,
              (G_DIVIDES_N, N_DIVIDES_M),
              phases=(Phase("all_gather", "ring", group=N / G, message=M / G, across_nodes=True),
                      Phase("all_gather", "ring", group=G))),
    Algorithm("reduce_scatter", "hierarchical",
              "ring reduce-scatter inside each node of G ranks (M each), then ring reduce-scatter of the "
              "M/G partial sums across the N/G nodes",
              "two-level reduce-scatter, the reduce-scatter half of " + HOROVOD_HIERARCHICAL,
              (G_DIVIDES_N, N_DIVIDES_M),
              phases=(Phase("reduce_scatter", "ring", group=G),
                      Phase("reduce_scatter", "ring", group=N / G, message=M / G, across_nodes=True))),
    # ---- all-to-all ----------------------------------------------------------------------
    Algorithm("all_to_all", "pairwise", "in round i rank r sends its block for r + i and receives from r − i",
              THAKUR + ", §4 (Alltoall): T = (p − 1)α + nβ, n the data a process sends to all the other processes "
              "(MPICH src/mpi/coll/alltoall/alltoall_intra_pairwise.c): n = (N − 1)M/N, N − 1 blocks of M/N",
              (N_DIVIDES_M,),
              Cost.of(send=(N - 1) * M / N, recv=(N - 1) * M / N, total=(N - 1) * M,
                      alpha=N - 1, beta=(N - 1) * M / N)),
    Algorithm("all_to_all", "bruck", "in round k each rank forwards the blocks whose index has bit k set",
              BRUCK + "; " + THAKUR + ", §4 (Alltoall): T = lg p·α + (n/2) lg p·β, where n is the data a "
              "process sends to all other processes (MPICH src/mpi/coll/alltoall/alltoall_intra_brucks.c), "
              "n = (N − 1)M/N, i.e. N − 1 per-destination blocks of M/N; each of the lg p rounds moves the "
              "N/2 blocks whose index has bit k set, M/2, so the exact β = (M/2) log₂N = (N/(N − 1))·(n/2) lg p: "
              "the published (n/2) lg p is the exact form times (N − 1)/N", (POW2, N_DIVIDES_M),
              Cost.of(send=log2N * M / 2, recv=log2N * M / 2, total=N * log2N * M / 2,
                      alpha=log2N, beta=log2N * M / 2)),
    # ---- send/recv -----------------------------------------------------------------------
    Algorithm("send_recv", "direct", "rank 0 sends M elements to rank 1 in one message",
              "the α-β model itself (Hockney 1994, Parallel Computing 20(3))", (PAIR,),
              Cost.of(send=M, recv=M, total=M, alpha=1, beta=M)),
    # ---- pipelined chains (what NCCL runs for broadcast and reduce) ------------------------
    Algorithm("broadcast", "ring",
              "pipelined chain 0 → 1 → … → N−1: the buffer goes in C chunks, each rank forwards a chunk "
              "as soon as it has it; N + C − 2 rounds of M/C",
              "NCCL src/device/broadcast.h (NCCL_ALGO_RING: the root sends, each next rank receives, "
              "copies and sends on, the rank before the root only receives), chunk by chunk; the "
              "segmented-pipeline time (N + C − 2)(α + Mβ/C) of Pjesivac-Grbović et al. 2007, Cluster Computing 10(2)",
              (C_DIVIDES_M,),
              Cost.of(root_send=M, root_recv=0, send=_CHAIN_MIDDLE, recv=M, total=(N - 1) * M,
                      alpha=N + C - 2, beta=(N + C - 2) * M / C)),
    Algorithm("reduce", "ring",
              "pipelined chain N−1 → … → 1 → 0: each rank adds its own chunk to the partial sum it "
              "receives and forwards it; N + C − 2 rounds of M/C",
              "NCCL src/device/reduce.h (NCCL_ALGO_RING: partial sums travel the ring towards the root, "
              "each rank adding its own chunk), chunk by chunk; the segmented-pipeline time of "
              "Pjesivac-Grbović et al. 2007, Cluster Computing 10(2)",
              (C_DIVIDES_M,),
              Cost.of(root_send=0, root_recv=M, send=M, recv=_CHAIN_MIDDLE, total=(N - 1) * M,
                      alpha=N + C - 2, beta=(N + C - 2) * M / C, gamma=(N + C - 2) * M / C)),
    # ---- what gloo runs (facts read from gloo's source; see symcomm/collectives/profiles.py) -------------
    Algorithm("broadcast", "binomial_any",
              "binomial tree for any N, low bit first: in round i every holder v < 2^i sends the "
              "whole buffer to v + 2^i (if that rank exists)",
              GLOO + ", gloo/broadcast.cc (virtual ranks, log2ceil(N) rounds, peer = vrank ^ 2^i)",
              closed_form=Cost.of(root_send=ceil_log2N * M, root_recv=0,
                                  # the busiest non-root is vrank 1: it sends in rounds i ≥ 1 with 1 + 2^i < N
                                  send=(_kept(sp.Max, S.log2_ceil(N - 1), 1) - 1) * M, recv=M,
                                  total=(N - 1) * M, alpha=ceil_log2N, beta=ceil_log2N * M)),
    Algorithm("reduce", "ring_segmented",
              "gloo's reduce: segments of S = min(⌈M/2N⌉, K) elements (the last partial or empty), P = "
              "⌈max(⌈M/S⌉, 2N)/N⌉ per rank's chunk (chunk r = segments rP … rP + P − 1); N·P − 2 ring rounds, in "
              "each every rank passes one segment to rank − 1, which adds its own input to it (empty segments "
              "are not sent); then every rank sends the part of its chunk inside the buffer to the root. The "
              "ring needs (N − 1)P rounds: for P > 2 the loop sends P − 2 segments more",
              GLOO + ", gloo/reduce.cc (segmentBytes = roundUp(min(⌈bytes/2N⌉, maxSegmentSize), elementSize), "
              "numSegments = roundUp(max(⌈bytes/segmentBytes⌉, 2N), N); sends in all but the last two of "
              "numSegments iterations, skipping lengths ≤ 0; then a direct gather of min(chunkBytes, what "
              "remains) to the root)",
              closed_form=Cost.of(
                  root_send=M - _last_two(_chunk_holds(0)),
                  root_recv=M - _last_two(_chunk_holds(1)) + M - _chunk_holds(0),
                  # the busiest non-root is rank 1 (chunks shrink with r): M − t(x₁) + x₁
                  send=M + _kept(sp.Min, _kept(sp.Max, M - _CHUNK, 0), (_PER - 2) * _SEG),
                  # rank r receives what rank r + 1 sends; for N = 2 rank 1's sender is the root
                  recv=sp.Piecewise((M - _last_two(_chunk_holds(0)), sp.Eq(N, 2)),
                                    (M - _last_two(_chunk_holds(N - 1)), True)),
                  total=N * M - 2 * _SEG * _FULL_CHUNKS - _last_two(M - _CHUNK * _FULL_CHUNKS) + M - _chunk_holds(0),
                  # round i carries offset i mod P of every chunk, chunk 0 (the fullest) its largest; the
                  # gather is one round per non-root chunk holding data
                  alpha=N * _kept(sp.Min, _FILLED, _PER) - _kept(sp.Min, _kept(sp.Max, _FILLED - _PER + 2, 0), 2)
                  + sp.ceiling(M / _CHUNK) - 1,
                  beta=N * _chunk_holds(0) - _last_two(_chunk_holds(0)) + M - _chunk_holds(0),
                  gamma=N * _chunk_holds(0) - _last_two(_chunk_holds(0)))),
    Algorithm("reduce", "ring_gather",
              "ring reduce-scatter (block r ends on rank r), then every rank sends its reduced block to the root",
              GLOO + ", gloo/reduce.cc (ring reduce-scatter, then gather to root)", (N_DIVIDES_M,),
              phases=(Phase("reduce_scatter", "ring"), Phase("gather", "flat"))),
]

#: (primitive, algorithm) → Algorithm
ALGORITHMS: dict[tuple[str, str], Algorithm] = {alg.key: alg for alg in _ENTRIES}

#: A group of one rank: every primitive is the identity on its one buffer (the definition at
#: N = 1), so nothing is sent, received or added.  Kept out of :data:`ALGORITHMS` (no lists,
#: bounds or chapters are about a group of one); backend profiles choose it for N = 1
#: (symcomm.collectives.profiles), and :func:`algorithm` finds it by the name ``alone``.
ALONE_NAME = "alone"
ALONE: dict[str, Algorithm] = {
    name: Algorithm(name, ALONE_NAME, "a group of one rank: the result is the rank's own buffer, no message",
                    "the primitive's definition at N = 1 (output = input); NCCL does the same: "
                    "src/enqueue.cc runs a one-rank communicator as a local copy (ncclLaunchOneRank) "
                    "and costs it 0 (updateCollCostTable: nRanks == 1)",
                    (ALONE_N,),
                    Cost.of(send=0, recv=0, total=0, alpha=0, beta=0, gamma=0,
                            **({"root_send": 0, "root_recv": 0} if PRIMITIVES[name].rooted else {})))
    for name in PRIMITIVES
}


def algorithms_of(primitive_name: str) -> list[Algorithm]:
    return [alg for alg in ALGORITHMS.values() if alg.primitive == primitive_name]


def algorithm(primitive_name: str, name: str) -> Algorithm:
    """Look up an algorithm, or raise a ValueError that lists the valid names."""
    if primitive_name not in PRIMITIVES:
        raise ValueError(f"unknown primitive {primitive_name!r}; choose one of: {', '.join(PRIMITIVES)}")
    if name == ALONE_NAME:
        return ALONE[primitive_name]
    try:
        return ALGORITHMS[(primitive_name, name)]
    except KeyError:
        names = ", ".join(alg.name for alg in algorithms_of(primitive_name))
        raise ValueError(f"unknown algorithm {name!r} for {primitive_name}; choose one of: {names}") from None


#: The algorithm a user gets when they name none: bandwidth-optimal, any N.
DEFAULT_ALGORITHM = {
    "broadcast": "flat", "scatter": "flat", "gather": "flat", "reduce": "flat",
    "all_gather": "ring", "reduce_scatter": "ring", "all_reduce": "ring",
    "all_to_all": "pairwise", "send_recv": "direct",
}


#: The flat algorithms whose node crossings spread over the NICs of the ranks a group has on a node, as
#: (primitive, algorithm): NCCL runs a ring collective as several channels (rings), and its topology search
#: gives channel c the node's NIC nets[(c + i) % netCount], taking the channel's bandwidth off that NIC
#: (NVIDIA/nccl src/graph/search.cc, ncclTopoSearchRecNet at commit 5067397; a ring channel is "NET n ->
#: GPU a -> .. -> GPU x -> NET n", the GPUs beside the NIC entering and leaving the node).  With k ranks of
#: the group on a node each is the node's exit for 1/k of the crossings (``Cost.across_nodes``).  The
#: pairwise all-to-all has a rule of its own (k − 1 of its N − 1 peers on its node: ``base.crossing.PEERS``);
#: the other flat forms (trees, recursive doubling, a point-to-point send, Bruck) keep one rank's NIC for all
#: they send across nodes.  The rules' one table: ``base.crossing.CROSSING``.
SPREADS_OVER_NICS = frozenset(pair for pair, rule in CROSSING.items() if rule == RING)
