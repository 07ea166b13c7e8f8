"""Backend profiles: which catalog algorithm a collective library runs, and what its
messages cost on the wire beyond the payload.

A :class:`Profile` maps each primitive — and, where the library switches by message size
or rank count, each range — to a catalog algorithm (:mod:`symcomm.collectives.algorithms`), and
states the library's per-message protocol overhead in bytes.  Strategies evaluate under
a profile with :func:`strategy_terms` / :func:`strategy_cost` (``symcomm eval ...
--backend NAME``): every term's (primitive, algorithm) is replaced by the profile's
choice for that group and message size.

Profiles:

- ``textbook`` — the bandwidth-optimal catalog choice for every primitive;
- ``nccl`` — ring for all-gather / reduce-scatter / all-reduce (NCCL user guide,
  "NCCL_ALGO": Ring, Tree, CollNet, NVLS, PAT); in-network (NVLS) reduction where
  NVLink SHARP applies; all-to-all, scatter, gather as grouped point-to-point sends
  (the pairwise / flat volumes); broadcast and reduce as pipelined chains along the
  ring (the catalog's ``ring`` broadcast and reduce, in C chunks);
- ``mpich`` — MPICH's documented switch points (Thakur, Rabenseifner & Gropp 2005 §4,
  and the MPIR_CVAR_*_MSG_SIZE defaults they describe);
- ``gloo`` — torch.distributed's gloo backend (torch 2.13.0), from gloo's source files
  and from measurement (``symcomm measure``, derivations/data/gloo_measurements.json).

Message sizes in rules are bytes of the full buffer M (M × bytes per element).

gloo's wire format (gloo/transport/tcp/pair.h, pair.cc).  Every operation on an
unbound buffer carries a preamble of six ``size_t`` fields (nbytes, opcode, slot,
offset, length, roffset) = 48 bytes on LP64.  A send writes a NOTIFY_SEND_READY
preamble and then the SEND_UNBOUND_BUFFER preamble followed by the payload; the
matching receive writes a NOTIFY_RECV_READY preamble back.  So each message costs its
sender payload + 96 bytes and its receiver 48 bytes — measured exactly on loopback
(``symcomm measure``: a zero-payload barrier round is 144 bytes per rank).
"""

from __future__ import annotations

import functools

from dataclasses import dataclass, replace
from typing import Callable

import sympy as sp

from ..core import symbols as S
from ..base.crossing import ONE_NIC, crossing_of
from .algorithms import ALONE, ALONE_NAME, CHAN, GLOO, GRAHAM, THAKUR, Algorithm, algorithm
from ..core.cost import Cost
from ..base.units import bytes_per_element

NCCL_DOCS = ("NCCL user guide, Environment variables: NCCL_ALGO (Ring, Tree, CollNet, NVLS, NVLSTree, PAT) "
             "and NCCL_PROTO (Simple, LL, LL128); Jeaugey 2019, Massively scale your deep learning "
             "training with NCCL 2.4 (double binary trees)")
MPICH_CVARS = "MPICH MPIR_CVAR_*_MSG_SIZE defaults (mpich/src/mpi/coll, as documented by " + THAKUR.cite + " §4)"
ALONE_SOURCE = ("a group of one rank communicates nothing: zero messages, elements and additions "
                "(the primitive's definition at N = 1 is the identity; NCCL, src/enqueue.cc: a one-rank "
                "communicator runs a local copy, ncclLaunchOneRank, and its cost table is 0; MPICH and "
                "gloo likewise send nothing to themselves)")
KiB = 1024
MiB = 1024 * KiB


@dataclass(frozen=True)
class Overhead:
    """Protocol bytes per message beyond the payload, charged to the sender and receiver.

    ``None`` fields mean "not modelled" (the profile makes no claim about them).
    """

    per_message_sent: int | None = 0
    per_message_received: int | None = 0
    note: str = ""

    @property
    def modelled(self) -> bool:
        return self.per_message_sent is not None and self.per_message_received is not None

    @property
    def per_message(self) -> int | None:
        """Bytes on the wire per message, both directions together."""
        if not self.modelled:
            return None
        return self.per_message_sent + self.per_message_received


@dataclass(frozen=True)
class Rule:
    """``primitive`` runs as the catalog's (``runs_as`` or ``primitive``, ``algorithm``)
    when N and the message size in bytes fall in the ranges given (inclusive min, exclusive max)."""

    primitive: str
    algorithm: str
    source: str
    runs_as: str | None = None
    min_bytes: int = 0
    max_bytes: int | None = None
    min_n: int = 2
    max_n: int | None = None
    note: str = ""
    #: the byte limits apply to one destination's block (bytes / N), not to the whole buffer
    per_block: bool = False

    @property
    def implementation(self) -> Algorithm:
        return algorithm(self.runs_as or self.primitive, self.algorithm)

    def applies(self, n: int | None = None, nbytes: int | None = None) -> bool:
        """Does this rule cover N = ``n`` and a message of ``nbytes`` bytes?  Unknown values
        match only rules that do not depend on them."""
        sized = self.min_bytes > 0 or self.max_bytes is not None
        counted = self.min_n > 2 or self.max_n is not None
        if nbytes is None and sized:
            return False
        if self.per_block and sized:
            if n is None:
                return False
            nbytes = -(-nbytes // n)   # one destination's block, rounded up
        if n is None and (counted or self.implementation.power_of_two):
            return False
        if nbytes is not None and (nbytes < self.min_bytes or (self.max_bytes is not None and nbytes >= self.max_bytes)):
            return False
        if n is not None:
            if n < self.min_n or (self.max_n is not None and n >= self.max_n):
                return False
            if self.implementation.violations({S.N: n}):
                return False
        return True

    def describe(self) -> str:
        impl = self.implementation
        runs = f"{impl.primitive}/{impl.name}" if self.runs_as else impl.name
        cond = []
        if self.min_bytes or self.max_bytes is not None:
            what = "bytes per block" if self.per_block else "bytes"
            cond.append(f"{self.min_bytes} ≤ {what}" + (f" < {self.max_bytes}" if self.max_bytes is not None else ""))
        if self.min_n > 2 or self.max_n is not None:
            cond.append(f"{self.min_n} ≤ N" + (f" < {self.max_n}" if self.max_n is not None else ""))
        if impl.power_of_two:
            cond.append("N a power of two")
        return runs + (f" when {', '.join(cond)}" if cond else "")


@dataclass(frozen=True)
class Profile:
    name: str
    title: str
    rules: tuple[Rule, ...]
    overhead: Overhead
    sources: tuple[str, ...]
    #: exact per-rank wire model (payload bytes, messages sent, messages received), if known
    wire: Callable[..., list] | None = None
    #: C, the chunks of its pipelined algorithms, as the library decides it from
    #: (N, bytes of M, bytes per element); None if the profile runs none
    chunking: Callable[[int, int, int], int] | None = None
    #: K, the most elements in one segment of its segmented rings, from the bytes per element;
    #: None if the profile runs none
    segment: Callable[[int], int] | None = None

    def rule(self, primitive: str, n: int | None = None, nbytes: int | None = None) -> Rule:
        """The first rule for ``primitive`` that covers (N, bytes); ValueError if none does.
        A group of one rank (N = 1) is the same under every profile: it sends nothing."""
        if n == 1 and primitive in ALONE:
            return Rule(primitive, ALONE_NAME, f"{self.name}: {ALONE_SOURCE}", min_n=1, max_n=2)
        candidates = [r for r in self.rules if r.primitive == primitive]
        if not candidates:
            raise ValueError(f"backend {self.name} has no rule for {primitive} "
                             f"(the catalog holds no algorithm it runs for it)")
        for rule in candidates:
            if rule.applies(n, nbytes):
                return rule
        where = ", ".join(x for x in (f"N={n}" if n is not None else "", f"{nbytes} bytes" if nbytes is not None else "") if x)
        raise ValueError(f"backend {self.name}: no rule for {primitive} at {where or 'unknown N and size'}; "
                         f"rules: {'; '.join(r.describe() for r in candidates)}")

    def cost(self, primitive: str, n: int | None = None, nbytes: int | None = None) -> Cost:
        """The catalog cost (elements, symbolic in N and M) of what the library runs."""
        return self.rule(primitive, n, nbytes).implementation.cost


# -- textbook ------------------------------------------------------------------------------------

_TEXTBOOK = f"bandwidth-optimal catalog choice ({CHAN.cite} lower bounds)"
TEXTBOOK = Profile(
    "textbook", "bandwidth-optimal algorithms, no protocol overhead",
    rules=(
        Rule("broadcast", "scatter_allgather", THAKUR + ", §4 (van de Geijn)"),
        Rule("scatter", "flat", _TEXTBOOK),
        Rule("gather", "flat", _TEXTBOOK),
        Rule("reduce", "rabenseifner", THAKUR + ", §4 (Reduce)"),
        Rule("reduce", "ring_gather", _TEXTBOOK + "; non-power-of-two N"),
        Rule("all_gather", "ring", _TEXTBOOK),
        Rule("reduce_scatter", "ring", _TEXTBOOK),
        Rule("all_reduce", "ring", _TEXTBOOK),
        Rule("all_to_all", "pairwise", _TEXTBOOK),
        Rule("send_recv", "direct", _TEXTBOOK),
    ),
    overhead=Overhead(0, 0, "none: the α-β model's messages carry only payload"),
    sources=(THAKUR, CHAN.cite),
)

# -- NCCL ----------------------------------------------------------------------------------------

#: NCCL's chunk for Ring/Simple broadcast and reduce: stepSize × chunkSteps with stepSize =
#: buffSizes[SIMPLE] / NCCL_STEPS = DEFAULT_BUFFSIZE (1 << 22, src/init.cc) / 8 (src/include/device.h)
#: and BROADCAST_CHUNKSTEPS = REDUCE_CHUNKSTEPS = 1 (src/include/collectives.h); src/enqueue.cc
#: (calcCollChunking) shrinks chunks only for CollNet, NVLS, Tree/LL128 and PAT, not for Ring/Simple
NCCL_CHUNK_BYTES = (1 << 22) // 8 * 1
NCCL_CHUNKS = ("NCCL (github.com/NVIDIA/nccl) src/enqueue.cc calcCollChunking: Ring/Simple chunk = "
               "DEFAULT_BUFFSIZE (4 MiB, src/init.cc) / NCCL_STEPS (8, src/include/device.h) × "
               "BROADCAST_CHUNKSTEPS = REDUCE_CHUNKSTEPS = 1 (src/include/collectives.h) = 512 KiB; "
               "src/device/broadcast.h and reduce.h loop over the buffer chunk by chunk, so C = ⌈bytes / 512 KiB⌉ "
               "(one channel: NCCL spreads the buffer over its channels, each a chain of its own, "
               "and its last chunk is the remainder where the formula has M/C each)")

NCCL = Profile(
    "nccl", "NCCL: rings (and trees, NVLS) as its documentation describes",
    rules=(
        Rule("all_reduce", "ring", NCCL_DOCS + "; Ring is the bandwidth algorithm for large messages",
             note="NCCL's tuner may pick Tree (double binary tree, not in the catalog) for small and "
                  "medium messages at scale, or NVLS on NVLink-SHARP systems: use nccl_nvls for that"),
        Rule("all_gather", "ring", NCCL_DOCS),
        Rule("reduce_scatter", "ring", NCCL_DOCS),
        Rule("all_to_all", "pairwise", NCCL_DOCS + "; all-to-all is ncclGroupStart + one send/recv per peer"),
        Rule("scatter", "flat", "NCCL examples: scatter as grouped ncclSend from the root"),
        Rule("gather", "flat", "NCCL examples: gather as grouped ncclRecv at the root"),
        Rule("send_recv", "direct", NCCL_DOCS),
        Rule("broadcast", "ring", "NCCL src/device/broadcast.h: NCCL_ALGO_RING, a pipelined chain along the ring "
             "(C = ⌈bytes / 512 KiB⌉ chunks)", note=NCCL_CHUNKS),
        Rule("reduce", "ring", "NCCL src/device/reduce.h: NCCL_ALGO_RING, a pipelined chain along the ring "
             "(C = ⌈bytes / 512 KiB⌉ chunks)", note=NCCL_CHUNKS),
    ),
    overhead=Overhead(0, 0, "Simple protocol: completion flags travel beside the data, not in it; "
                            "LL (×2) and LL128 (×128/120) inflate the payload instead (not modelled)"),
    sources=(NCCL_DOCS, NCCL_CHUNKS),
    chunking=lambda n, nbytes, item: max(1, -(-nbytes // NCCL_CHUNK_BYTES)),
)

NCCL_NVLS = Profile(
    "nccl_nvls", "NCCL with NVLink SHARP (NVLS): the switch reduces",
    rules=(Rule("all_reduce", "in_network", NCCL_DOCS + "; NVLS (NCCL ≥ 2.17, NVSwitch with SHARP)"),)
    + tuple(r for r in NCCL.rules if r.primitive != "all_reduce"),
    overhead=NCCL.overhead,
    sources=NCCL.sources + (GRAHAM.cite + " (SHArP)",),
    chunking=NCCL.chunking,
)

# -- MPICH ---------------------------------------------------------------------------------------

_T = THAKUR + ", §4"
MPICH_BCAST = ("MPICH src/mpi/coll/cvars.txt (MPIR_CVAR_BCAST_*: binomial for short messages or p < 8, "
               "scatter + recursive doubling for medium messages on powers of two, scatter + ring allgather "
               "otherwise) and src/mpi/coll/bcast/bcast_intra_binomial.c")
MPICH_ALLREDUCE = "MPICH src/mpi/coll/allreduce/allreduce_intra_reduce_scatter_allgather.c"
MPICH_REDUCE = ("MPICH src/mpi/coll/reduce/reduce_intra_reduce_scatter_gather.c (and "
                "maint/tuning/coll/mpir/generic.json: reduce_scatter_gather above 2048 B for built-in operations)")
MPICH_ALLREDUCE_NOTE = ("MPIR_CVAR_ALLREDUCE_SHORT_MSG_SIZE = 2048 (src/mpi/coll/cvars.txt, the switch Thakur et al. "
                        "describe); MPICH's current selection file maint/tuning/coll/mpir/generic.json keeps "
                        "recursive doubling only to 8 bytes, for user-defined ops or count < 2^⌊lg p⌋")
MPICH = Profile(
    "mpich", "MPICH's documented switch points",
    rules=(
        Rule("broadcast", "binomial_tree", _T + " (Broadcast): binomial tree for short messages (< 12 KiB); " + MPICH_BCAST,
             max_bytes=12 * KiB, note="MPIR_CVAR_BCAST_SHORT_MSG_SIZE = 12288"),
        Rule("broadcast", "binomial_tree", _T + " (Broadcast): binomial tree when p < 8; " + MPICH_BCAST, max_n=8,
             note="MPIR_CVAR_BCAST_MIN_PROCS = 8"),
        Rule("broadcast", "scatter_rd_allgather", _T + " (Broadcast): medium messages, p a power of two: scatter + "
             "recursive-doubling allgather; MPICH bcast_intra_scatter_recursive_doubling_allgather.c",
             max_bytes=512 * KiB, note="MPIR_CVAR_BCAST_LONG_MSG_SIZE = 524288"),
        Rule("broadcast", "scatter_allgather", _T + " (Broadcast): long messages, or medium ones on a non-power "
             "of two: scatter + ring allgather (van de Geijn); MPICH bcast_intra_scatter_ring_allgather.c"),
        Rule("scatter", "binomial_tree", _T + "; MPICH src/mpi/coll/scatter/scatter_intra_binomial.c (any p)"),
        Rule("gather", "binomial_tree", _T + "; MPICH src/mpi/coll/gather/gather_intra_binomial.c (any p)"),
        Rule("reduce", "binomial_tree", _T + " (Reduce): binomial tree for short messages (≤ 2 KiB)",
             max_bytes=2 * KiB + 1, note="MPIR_CVAR_REDUCE_SHORT_MSG_SIZE = 2048"),
        Rule("reduce", "rabenseifner", _T + " (Reduce): Rabenseifner for long messages; " + MPICH_REDUCE),
        Rule("reduce", "rabenseifner_fold", _T + " (Reduce): non-power-of-two p: the p − 2^⌊lg p⌋ extra ranks "
             "fold into their neighbours, Rabenseifner runs on 2^⌊lg p⌋; " + MPICH_REDUCE),
        Rule("all_gather", "recursive_doubling", _T + " (Allgather): recursive doubling, power of two, < 512 KiB",
             max_bytes=512 * KiB, note="MPIR_CVAR_ALLGATHER_LONG_MSG_SIZE = 524288"),
        Rule("all_gather", "bruck", _T + " (Allgather): Bruck for short messages (< 80 KiB)",
             max_bytes=80 * KiB, note="MPIR_CVAR_ALLGATHER_SHORT_MSG_SIZE = 81920"),
        Rule("all_gather", "ring", _T + " (Allgather): ring for long messages"),
        Rule("reduce_scatter", "recursive_halving", _T + " (Reduce-Scatter): recursive halving, commutative op, < 512 KiB",
             max_bytes=512 * KiB),
        Rule("reduce_scatter", "pairwise", _T + " (Reduce-Scatter): pairwise exchange for long messages"),
        Rule("all_reduce", "recursive_doubling", _T + " (Allreduce): recursive doubling for short messages (≤ 2 KiB)",
             max_bytes=2 * KiB + 1, note="MPIR_CVAR_ALLREDUCE_SHORT_MSG_SIZE = 2048"),
        Rule("all_reduce", "recursive_doubling_fold", _T + " (Allreduce): recursive doubling for short messages "
             "(≤ 2 KiB), non-power-of-two p: the extra ranks fold into their neighbours first; MPICH "
             "src/mpi/coll/allreduce/allreduce_intra_recursive_doubling.c",
             max_bytes=2 * KiB + 1, note="MPIR_CVAR_ALLREDUCE_SHORT_MSG_SIZE = 2048"),
        Rule("all_reduce", "rabenseifner", _T + " (Allreduce): Rabenseifner for long messages (built-in, "
             "hence commutative, operations); " + MPICH_ALLREDUCE,
             note=MPICH_ALLREDUCE_NOTE),
        Rule("all_reduce", "rabenseifner_fold", _T + " (Allreduce): non-power-of-two p: the p − 2^⌊lg p⌋ extra "
             "ranks fold into their neighbours, Rabenseifner runs on 2^⌊lg p⌋; " + MPICH_ALLREDUCE),
        Rule("all_to_all", "bruck", _T + " (Alltoall): Bruck for short blocks (≤ 256 B per destination) and p ≥ 8; "
             "MPICH maint/tuning/coll/mpir/generic.json (alltoall: comm_size ≥ 8, avg_msg_size ≤ 256 → brucks)",
             max_bytes=256 + 1, min_n=8, per_block=True,
             note="MPIR_CVAR_ALLTOALL_SHORT_MSG_SIZE = 256 bytes per destination block (src/mpi/coll/cvars.txt)"),
        Rule("all_to_all", "pairwise", _T + " (Alltoall): pairwise exchange (isend/irecv for medium sizes moves the same volume)"),
        Rule("send_recv", "direct", "MPI_Send / MPI_Recv"),
    ),
    overhead=Overhead(None, None, "not modelled: the ch3/ch4 packet header depends on the netmod"),
    sources=(THAKUR, MPICH_CVARS),
)

# -- gloo ----------------------------------------------------------------------------------------

#: preamble of one gloo TCP operation: 6 × size_t (gloo/transport/tcp/pair.h, struct Op)
GLOO_PREAMBLE = 6 * 8
#: gloo's ring segment cap, AllreduceOptionsImpl::kMaxSegmentSize (gloo/allreduce.h; reduce.h the same)
GLOO_MAX_SEGMENT = 1 * MiB
TORCH = "torch 2.13.0, torch/csrc/distributed/c10d/ProcessGroupGloo.cpp"


@dataclass(frozen=True)
class RankWire:
    """One rank's traffic in one operation: payload bytes it sends, messages it sends and receives."""

    payload: int
    sent: int
    received: int

    def bytes(self, overhead: Overhead) -> int:
        return self.payload + overhead.per_message_sent * self.sent + overhead.per_message_received * self.received


def _round_up(x: int, k: int) -> int:
    return -(-x // k) * k


def _ceil_div(x: int, k: int) -> int:
    return -(-x // k)


def _ring_segments(n: int, total: int, item: int, reduce_style: bool) -> tuple[int, int]:
    """(number of segments, bytes per segment) as gloo's allreduce.cc / reduce.cc compute them."""
    cap = item * max(1, GLOO_MAX_SEGMENT // item)
    if reduce_style:  # reduce.cc: segment size first, then the count
        seg = _round_up(min(_ceil_div(total, 2 * n), cap), item)
        count = _round_up(max(_ceil_div(total, seg), 2 * n), n)
    else:             # allreduce.cc: count first, then the size
        count = _round_up(max(_ceil_div(total, cap), 2 * n), n)
        seg = _round_up(_ceil_div(total, count), item)
    return count, seg


def _segment_len(index: int, count: int, seg: int, total: int) -> int:
    offset = (index * seg) % (count * seg)
    return max(0, min(seg, total - offset))


def _gloo_ring_allreduce(n, total, item) -> list[RankWire]:
    count, seg = _ring_segments(n, total, item, reduce_style=False)
    per = count // n
    out = []
    for r in range(n):
        payload = sent = received = 0
        for i in range(count - per):
            for send_start, recv_start in (((r + 1) * per, (r + 2) * per), (r * per, (r + 1) * per)):
                length = _segment_len(send_start + i, count, seg, total)
                if length:
                    payload += length
                    sent += 1
                if _segment_len(recv_start + i, count, seg, total):
                    received += 1
        out.append(RankWire(payload, sent, received))
    return out


def _gloo_ring_reduce(n, total, item, root=0) -> list[RankWire]:
    count, seg = _ring_segments(n, total, item, reduce_style=True)
    per = count // n
    out = []
    for r in range(n):
        payload = sent = received = 0
        for i in range(count - 2):  # reduce.cc issues sends/receives in all but the last two iterations
            length = _segment_len((r + 1) * per + i, count, seg, total)
            if length:
                payload, sent = payload + length, sent + 1
            if _segment_len((r + 2) * per + i, count, seg, total):
                received += 1
        chunk = lambda rank: max(0, min(per * seg, total - rank * per * seg))
        if r == root:
            received += sum(1 for q in range(n) if q != root and chunk(q) > 0)
        elif chunk(r) > 0:
            payload, sent = payload + chunk(r), sent + 1
        out.append(RankWire(payload, sent, received))
    return out


def _gloo_broadcast(n, total, item, root=0) -> list[RankWire]:
    out = [RankWire(0, 0, 0) for _ in range(n)]
    step = 1
    while step < n:
        for v in range(step):
            if v + step < n:
                a, b = (v + root) % n, (v + step + root) % n
                out[a] = RankWire(out[a].payload + total, out[a].sent + 1, out[a].received)
                out[b] = RankWire(out[b].payload, out[b].sent, out[b].received + 1)
        step *= 2
    return out


def gloo_wire(primitive: str, n: int, m: int, item: int = 4) -> list[RankWire]:
    """What gloo (as torch 2.13's ProcessGroupGloo calls it) sends, rank by rank, for a
    collective of M = ``m`` elements of ``item`` bytes on ``n`` ranks, root 0.

    From gloo's source: allreduce.cc (ring, segments of ≤ 1 MiB, at least two per rank,
    empty segments skipped), reduce.cc (ring reduce-scatter over all but two segment
    slots, then one send per rank to the root), broadcast.cc (binomial, low bit first),
    allgather.cc (ring, each block sent as two halves), gather.cc / scatter.cc (flat),
    alltoall.cc (pairwise, all posted at once), barrier.cc (dissemination, empty
    messages).  ProcessGroupGloo runs reduce_scatter_tensor as an all-reduce of the
    whole buffer followed by a local copy of the rank's block (measured: identical bytes).
    """
    total = m * item
    if n < 2:
        raise ValueError(f"N={n} is not allowed: a collective needs N ≥ 2")
    if primitive in ("all_reduce", "reduce_scatter"):
        return _gloo_ring_allreduce(n, total, item)
    if primitive == "reduce":
        return _gloo_ring_reduce(n, total, item)
    if primitive == "broadcast":
        return _gloo_broadcast(n, total, item)
    if primitive == "barrier":
        rounds = (n - 1).bit_length()
        return [RankWire(0, rounds, rounds) for _ in range(n)]
    if primitive == "send_recv":
        return [RankWire(total, 1, 0), RankWire(0, 0, 1)] + [RankWire(0, 0, 0)] * (n - 2)
    if m % n:
        raise ValueError(f"M={m} is not allowed for {primitive}: it must be a multiple of N={n}")
    block = total // n
    if primitive == "all_gather":
        return [RankWire((n - 1) * block, 2 * (n - 1), 2 * (n - 1)) for _ in range(n)]
    if primitive == "all_to_all":
        return [RankWire((n - 1) * block, n - 1, n - 1) for _ in range(n)]
    if primitive == "gather":
        return [RankWire(0, 0, n - 1)] + [RankWire(block, 1, 0) for _ in range(n - 1)]
    if primitive == "scatter":
        return [RankWire((n - 1) * block, n - 1, 0)] + [RankWire(0, 0, 1) for _ in range(n - 1)]
    raise ValueError(f"gloo_wire knows no primitive {primitive!r}")


GLOO = Profile(
    "gloo", "torch.distributed gloo backend (torch 2.13.0), TCP transport",
    rules=(
        Rule("broadcast", "binomial_any", GLOO + ", gloo/broadcast.cc; " + TORCH + " (broadcast → gloo::broadcast)"),
        Rule("scatter", "flat", GLOO + ", gloo/scatter.cc"),
        Rule("gather", "flat", GLOO + ", gloo/gather.cc"),
        Rule("reduce", "ring_gather", GLOO + ", gloo/reduce.cc: up to 2·N·1 MiB, two segments per rank, "
             "whose ring loop is exactly the ring reduce-scatter", max_bytes=2 * GLOO_MAX_SEGMENT + 1, per_block=True),
        Rule("reduce", "ring_segmented", GLOO + ", gloo/reduce.cc: above 2·N·1 MiB, numSegments segments "
             "of 1 MiB (K = 1 MiB / bytes per element; rounded up to a multiple of N), and the ring loop runs "
             "numSegments − 2 rounds where the ring needs (N − 1)·numSegments/N: each rank sends "
             "numSegments/N − 2 segments more",
             note="exact for every N and M: the closed form counts gloo's partial and empty last segments "
                  "(tested against gloo_wire and measured)"),
        Rule("all_gather", "ring", GLOO + ", gloo/allgather.cc (each block in two halves)"),
        Rule("reduce_scatter", "ring", TORCH + ": reduce_scatter_tensor runs gloo's ring all-reduce on the "
             "whole buffer and keeps the rank's block", runs_as="all_reduce",
             note="so a reduce-scatter costs what an all-reduce costs: 2(N−1)M/N per rank, not (N−1)M/N"),
        Rule("all_reduce", "ring", GLOO + ", gloo/allreduce.cc (ring, ≥ 2 segments per rank, ≤ 1 MiB each)"),
        Rule("all_to_all", "pairwise", GLOO + ", gloo/alltoall.cc"),
        Rule("send_recv", "direct", GLOO + ", gloo/transport/tcp/pair.cc"),
    ),
    overhead=Overhead(2 * GLOO_PREAMBLE, GLOO_PREAMBLE,
                      "48-byte preamble per operation (6 × size_t, gloo/transport/tcp/pair.h): the sender "
                      "writes NOTIFY_SEND_READY + SEND_UNBOUND_BUFFER (96 B), the receiver NOTIFY_RECV_READY (48 B)"),
    sources=(GLOO + ": gloo/allreduce.cc, reduce.cc, broadcast.cc, allgather.cc, gather.cc, scatter.cc, "
             "alltoall.cc, barrier.cc, transport/tcp/pair.h, pair.cc", TORCH),
    wire=gloo_wire,
    # gloo/reduce.cc: maxSegmentSize rounded down to whole elements (AllreduceOptionsImpl::kMaxSegmentSize)
    segment=lambda item: max(1, GLOO_MAX_SEGMENT // item),
)

PROFILES: dict[str, Profile] = {p.name: p for p in (TEXTBOOK, NCCL, NCCL_NVLS, MPICH, GLOO)}


def profile(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown backend {name!r}; choose one of: {', '.join(PROFILES)}") from None


# -- strategies under a profile ------------------------------------------------------------------

def _number(expr, values):
    expr = sp.sympify(expr, strict=True)
    # a bare symbol (a group N, a message M: most terms) is looked up, not substituted: subs sorts and sympifies
    # the whole mapping on every call (a tenth of symcomm prove's model-vs-reality chapter)
    value = values.get(expr) if expr.is_Symbol and isinstance(values, dict) else None
    if isinstance(value, int) and not isinstance(value, bool):
        value = sp.Integer(value)
    if not (isinstance(value, sp.Basic) and value.is_number):   # anything but a number for the symbol: subs, as before
        value = expr.subs(values)
    return int(value) if value.is_number and value.is_integer else None


def strategy_terms(strategy, backend: str | Profile, values: dict | None = None, itemsize: int = 4,
                   **options) -> tuple:
    """The strategy's terms with each collective replaced by what ``backend`` runs for it.

    A rule's byte thresholds see each term's own bytes: its elements times the size of its
    own element type (``Term.dtype``), or ``itemsize`` (the run's ``--dtype``) when it has none."""
    prof = backend if isinstance(backend, Profile) else profile(backend)
    values = values or {}
    out = []
    for term in strategy.terms(**options):
        n = _number(term.group, values)
        size = _number(term.message, values)
        # a term whose buffer has its own element type (Term.dtype: Megatron's fp32 gradient
        # reduction in a bf16 run) is as many bytes as its own elements make
        item = bytes_per_element(term.dtype) if term.dtype else itemsize
        rule = prof.rule(term.primitive, n, None if size is None else size * item)
        impl = rule.implementation
        # what the backend runs keeps the term's crossing split (a ring's spread over the NICs, a pairwise
        # all-to-all's peers on its node) only if it crosses by the same rule (base.crossing); any other
        # algorithm crosses through one rank's NIC (k = 1: the one-NIC pricing, an upper bound)
        rule = crossing_of(impl.primitive, impl.name)
        same = rule != ONE_NIC and rule == crossing_of(term.primitive, term.algorithm)
        out.append(replace(term, primitive=impl.primitive, algorithm=impl.name,
                           ranks_per_node=term.ranks_per_node if same else 1,
                           most_per_node=term.most_per_node if same else None))
    return tuple(out)


def strategy_cost(strategy, backend: str | Profile, values: dict | None = None, itemsize: int = 4,
                  **options) -> Cost:
    """Σ of the terms' costs, each under ``backend``'s choice."""
    return Cost.sum(term.cost for term in strategy_terms(strategy, backend, values, itemsize, **options))


def algorithm_under(prof: Profile, primitive: str, values: dict, itemsize: int = 4) -> tuple[Algorithm, Rule]:
    """(what ``prof`` runs for ``primitive`` at these values, the rule that chose it)."""
    n = _number(S.N, values)
    size = _number(S.M, values)
    rule = prof.rule(primitive, n, None if size is None else size * itemsize)
    impl = rule.implementation
    needed = impl.cost.free_symbols
    if S.C in needed and S.C not in values:
        impl, rule = chunked(prof, impl, rule, size, itemsize, n)
    if S.K in needed and S.K not in values:
        impl, rule = segmented(prof, impl, rule, itemsize)
    return impl, rule


def chunks(prof: Profile, size: int | None, itemsize: int = 4, n: int | None = None) -> int:
    """C, the chunks (NCCL's chains) ``prof`` splits M = ``size`` elements into on ``n`` ranks;
    ValueError naming C when it cannot be decided."""
    if prof.chunking is None:
        raise ValueError(f"C: backend {prof.name} states no chunk size for its pipelined algorithms; give C=")
    if size is None or n is None:
        raise ValueError(f"C: backend {prof.name} decides the chunk count C from N and the message size: give N= and M=")
    return prof.chunking(n, size * itemsize, itemsize)


def chunked(prof: Profile, impl: Algorithm, rule: Rule, size: int | None, itemsize: int = 4,
            n: int | None = None) -> tuple[Algorithm, Rule]:
    """``impl`` (pipelined in C pieces) with C decided as ``prof`` decides it, and the rule saying so."""
    c = chunks(prof, size, itemsize, n)
    fixed = replace(impl, closed_form=impl.cost.subs({S.C: c}),
                    requires=tuple(r for r in impl.requires if S.C not in r.symbols))
    return fixed, replace(rule, source=f"{rule.source}; here C = {c} for {size * itemsize} B on N = {n}")


@functools.lru_cache(maxsize=64)
def _with_segment(cost, k: int):
    # substituting K into the segmented ring's Min/ceiling form takes SymPy ~0.4 s; one K per element size
    return cost.subs({S.K: k})


def segmented(prof: Profile, impl: Algorithm, rule: Rule, itemsize: int = 4) -> tuple[Algorithm, Rule]:
    """``impl`` (a segmented ring, segments of at most K elements) with K as ``prof`` decides it."""
    if prof.segment is None:
        raise ValueError(f"K: backend {prof.name} states no segment size for its segmented rings; give K=")
    k = prof.segment(itemsize)
    return (replace(impl, closed_form=_with_segment(impl.cost, k)),
            replace(rule, source=f"{rule.source}; here K = {k} elements ({k * itemsize} B) per segment at most"))
