"""The execution of every closed-form algorithm, message by message on a :class:`Network` (or a :class:`Group`).

:data:`EXECUTIONS` maps (primitive, algorithm) to a function of the network and {rank: input buffer}
that returns {rank: output buffer}; it moves numpy buffers through ``net.exchange`` and adds them
through ``net.add``, which count.  A composition has no execution here: :func:`symcomm.collectives.simulator.run`
runs its phases.  Nothing here reads a formula.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .network import SWITCH, Message, Network, _split
from .primitives import PRIMITIVES, ROOT


# -- rooted, flat -------------------------------------------------------------------------

def flat_broadcast(net: Network, data: dict) -> dict:
    out = {ROOT: data[ROOT]}
    for r in range(1, net.n):
        (msg,) = net.exchange([Message(ROOT, r, data[ROOT])])
        out[r] = msg.data
    return out


def flat_scatter(net: Network, data: dict) -> dict:
    blocks = _split(data[ROOT], net.n)
    out = {ROOT: blocks[ROOT]}
    for r in range(1, net.n):
        (msg,) = net.exchange([Message(ROOT, r, blocks[r])])
        out[r] = msg.data
    return out


def flat_gather(net: Network, data: dict) -> dict:
    pieces = {ROOT: data[ROOT]}
    for r in range(1, net.n):
        (msg,) = net.exchange([Message(r, ROOT, data[r])])
        pieces[r] = msg.data
    return {ROOT: np.concatenate([pieces[r] for r in range(net.n)])}


def flat_reduce(net: Network, data: dict) -> dict:
    acc = data[ROOT].copy()
    for r in range(1, net.n):
        (msg,) = net.exchange([Message(r, ROOT, data[r])])
        acc = net.add(ROOT, acc, msg.data)
    return {ROOT: acc}


# -- rooted, binomial tree, any N (MPICH's orientation: the root first sends to
# 2^(⌈log₂N⌉−1), so that rank heads the largest subtree) -------------------------------

def binomial_broadcast(net: Network, data: dict) -> dict:
    """Any N (MPICH's bcast_intra_binomial): masks 2^(⌈log₂N⌉−1), ..., 1; a holder r sends to
    r + mask when that rank exists."""
    have = {ROOT: data[ROOT]}
    mask = 1 << max(0, (net.n - 1).bit_length() - 1)
    while mask:
        msgs = [Message(r, r + mask, have[r]) for r in range(0, net.n, 2 * mask) if r + mask < net.n]
        for msg in net.exchange(msgs):
            have[msg.dst] = msg.data
        mask //= 2
    return have


def binomial_scatter(net: Network, data: dict) -> dict:
    """Any N (MPICH's scatter_intra_binomial): masks from 2^(⌈log₂N⌉−1) down; a holder r sends
    the blocks r + mask … min(r + 2·mask, N) − 1 to r + mask when that rank exists."""
    blocks = _split(data[ROOT], net.n)
    held = {ROOT: {i: blocks[i] for i in range(net.n)}}   # rank → {block index: block}
    mask = 1 << max(0, (net.n - 1).bit_length() - 1)
    while mask:
        msgs = []
        for r in range(0, net.n, 2 * mask):
            if r + mask >= net.n:
                continue
            upper = [i for i in range(r + mask, min(r + 2 * mask, net.n))]
            msgs.append(Message(r, r + mask, np.concatenate([held[r][i] for i in upper]), tuple(upper)))
            for i in upper:
                del held[r][i]
        for msg in net.exchange(msgs):
            held[msg.dst] = dict(zip(msg.tag, _split(msg.data, len(msg.tag))))
        mask //= 2
    return {r: held[r][r] for r in range(net.n)}


def binomial_gather(net: Network, data: dict) -> dict:
    held = {r: {r: data[r]} for r in range(net.n)}
    mask = 1
    while mask < net.n:
        msgs = []
        for r in range(mask, net.n, 2 * mask):
            order = sorted(held[r])
            msgs.append(Message(r, r - mask, np.concatenate([held[r][i] for i in order]), tuple(order)))
        for msg in net.exchange(msgs):
            held[msg.dst].update(zip(msg.tag, _split(msg.data, len(msg.tag))))
            del held[msg.src]
        mask *= 2
    return {ROOT: np.concatenate([held[ROOT][i] for i in range(net.n)])}


def binomial_reduce(net: Network, data: dict) -> dict:
    acc = {r: data[r].copy() for r in range(net.n)}
    mask = 1
    while mask < net.n:
        msgs = [Message(r, r - mask, acc[r]) for r in range(mask, net.n, 2 * mask)]
        for msg in net.exchange(msgs):
            acc[msg.dst] = net.add(msg.dst, acc[msg.dst], msg.data)
        mask *= 2
    return {ROOT: acc[ROOT]}


# -- symmetric ---------------------------------------------------------------------------------

def ring_all_gather(net: Network, blocks: dict) -> dict:
    """blocks[rank] is that rank's own block; returns the concatenation on every rank."""
    have = {r: {r: blocks[r]} for r in range(net.n)}
    for step in range(net.n - 1):
        msgs = []
        for r in range(net.n):
            idx = (r - step) % net.n
            msgs.append(Message(r, (r + 1) % net.n, have[r][idx], idx))
        for msg in net.exchange(msgs):
            have[msg.dst][msg.tag] = msg.data
    return {r: np.concatenate([have[r][i] for i in range(net.n)]) for r in range(net.n)}


def ring_reduce_scatter(net: Network, data: dict) -> dict:
    """data[rank] is a full buffer; returns block r of the sum on rank r."""
    acc = {r: _split(data[r].copy(), net.n) for r in range(net.n)}
    for step in range(net.n - 1):
        msgs = []
        for r in range(net.n):
            idx = (r - step - 1) % net.n
            msgs.append(Message(r, (r + 1) % net.n, acc[r][idx], idx))
        for msg in net.exchange(msgs):
            acc[msg.dst][msg.tag] = net.add(msg.dst, acc[msg.dst][msg.tag], msg.data)
    return {r: acc[r][r] for r in range(net.n)}


def recursive_doubling_all_gather(net: Network, blocks: dict) -> dict:
    have = {r: {r: blocks[r]} for r in range(net.n)}
    dist = 1
    while dist < net.n:
        msgs = []
        for r in range(net.n):
            order = sorted(have[r])
            msgs.append(Message(r, r ^ dist, np.concatenate([have[r][i] for i in order]), tuple(order)))
        for msg in net.exchange(msgs):
            have[msg.dst].update(zip(msg.tag, _split(msg.data, len(msg.tag))))
        dist *= 2
    return {r: np.concatenate([have[r][i] for i in range(net.n)]) for r in range(net.n)}


def bruck_all_gather(net: Network, blocks: dict) -> dict:
    # local[r][j] holds block (r + j) mod n
    local = {r: [blocks[r]] for r in range(net.n)}
    dist = 1
    while dist < net.n:
        count = min(dist, net.n - dist)
        msgs = [Message(r, (r - dist) % net.n, np.concatenate(local[r][:count]), count)
                for r in range(net.n)]
        for msg in net.exchange(msgs):
            local[msg.dst].extend(_split(msg.data, msg.tag))
        dist *= 2
    return {r: np.concatenate([local[r][(i - r) % net.n] for i in range(net.n)])
            for r in range(net.n)}


def recursive_halving_reduce_scatter(net: Network, data: dict) -> dict:
    acc = {r: _split(data[r].copy(), net.n) for r in range(net.n)}
    low = {r: 0 for r in range(net.n)}          # each rank keeps blocks [low, low + span)
    span = net.n
    while span > 1:
        half = span // 2
        msgs = []
        for r in range(net.n):
            keep_upper = bool(r & half)
            give = range(low[r], low[r] + half) if keep_upper else range(low[r] + half, low[r] + span)
            msgs.append(Message(r, r ^ half, np.concatenate([acc[r][i] for i in give]), tuple(give)))
            if keep_upper:
                low[r] += half
        for msg in net.exchange(msgs):
            for i, piece in zip(msg.tag, _split(msg.data, len(msg.tag))):
                acc[msg.dst][i] = net.add(msg.dst, acc[msg.dst][i], piece)
        span = half
    return {r: acc[r][r] for r in range(net.n)}


def pairwise_reduce_scatter(net: Network, data: dict) -> dict:
    acc = {r: _split(data[r], net.n)[r].copy() for r in range(net.n)}
    for step in range(1, net.n):
        msgs = [Message(r, (r + step) % net.n, _split(data[r], net.n)[(r + step) % net.n])
                for r in range(net.n)]
        for msg in net.exchange(msgs):
            acc[msg.dst] = net.add(msg.dst, acc[msg.dst], msg.data)
    return acc


def recursive_doubling_all_reduce(net: Network, data: dict) -> dict:
    acc = {r: data[r].copy() for r in range(net.n)}
    dist = 1
    while dist < net.n:
        msgs = [Message(r, r ^ dist, acc[r]) for r in range(net.n)]
        for msg in net.exchange(msgs):
            acc[msg.dst] = net.add(msg.dst, acc[msg.dst], msg.data)
        dist *= 2
    return acc


def _halving_reduce_scatter(net: Network, real: list, blocks: dict) -> tuple[dict, list]:
    """Reduce-scatter by recursive halving from distance 1 over the core ranks ``real`` (core rank
    c is rank real[c]; ``blocks[c]`` its list of core-many blocks, reduced in place): the lower
    of a pair keeps the lower half.  Returns each core rank's span [lo, hi) of reduced blocks, and
    the spans before each round (the way back by recursive doubling retraces them)."""
    core = len(real)
    span = {c: (0, core) for c in range(core)}
    history = []
    mask = 1
    while mask < core:
        msgs, keep = [], {}
        for c in range(core):
            lo, hi = span[c]
            mid = (lo + hi) // 2
            mine, give = ((lo, mid), (mid, hi)) if c < c ^ mask else ((mid, hi), (lo, mid))
            msgs.append(Message(real[c], real[c ^ mask], np.concatenate(blocks[c][give[0]:give[1]]), give))
            keep[c] = mine
        history.append(dict(span))
        for msg in net.exchange(msgs):
            c = real.index(msg.dst)
            lo, hi = msg.tag
            for i, piece in zip(range(lo, hi), _split(msg.data, hi - lo)):
                blocks[c][i] = net.add(msg.dst, blocks[c][i], piece)
        span = keep
        mask <<= 1
    return span, history


def rabenseifner_fold_all_reduce(net: Network, data: dict) -> dict:
    """MPICH's allreduce_intra_reduce_scatter_allgather.c on any N: fold the r = N − P extra
    ranks (P = 2^⌊log₂N⌋) into their odd neighbours, Rabenseifner on the P core ranks
    (reduce-scatter by recursive halving from distance 1, all-gather by recursive doubling
    back), then unfold."""
    n = net.n
    core = 1 << (n.bit_length() - 1)
    extra = n - core
    acc = {r: data[r].copy() for r in range(n)}
    if extra:
        for msg in net.exchange([Message(e, e + 1, acc[e]) for e in range(0, 2 * extra, 2)]):
            acc[msg.dst] = net.add(msg.dst, acc[msg.dst], msg.data)
    real = [2 * c + 1 if c < extra else c + extra for c in range(core)]   # core rank → rank
    blocks = {c: _split(acc[real[c]], core) for c in range(core)}
    span, history = _halving_reduce_scatter(net, real, blocks)
    mask = core
    while mask > 1:                                                        # all-gather, the way back
        mask >>= 1
        msgs = []
        for c in range(core):
            lo, hi = span[c]
            msgs.append(Message(real[c], real[c ^ mask], np.concatenate(blocks[c][lo:hi]), (lo, hi)))
        for msg in net.exchange(msgs):
            c = real.index(msg.dst)
            lo, hi = msg.tag
            blocks[c][lo:hi] = _split(msg.data, hi - lo)
        span = history.pop()
    out = {real[c]: np.concatenate(blocks[c]) for c in range(core)}
    if extra:
        for msg in net.exchange([Message(o, o - 1, out[o]) for o in range(1, 2 * extra, 2)]):
            out[msg.dst] = msg.data
    return out


def _core_of(n: int, folds_to_odd: bool) -> list[int]:
    """MPICH's fold to P = 2^⌊log₂N⌋ ranks: core rank c → rank (the r = N − P extra ranks below 2r
    fold pairwise; the odd one of each pair stays for all-reduce, the even one for reduce)."""
    core = 1 << (n.bit_length() - 1)
    extra = n - core
    return [2 * c + (1 if folds_to_odd else 0) if c < extra else c + extra for c in range(core)]


def recursive_doubling_fold_all_reduce(net: Network, data: dict) -> dict:
    """MPICH's allreduce_intra_recursive_doubling.c on any N: the even ranks below 2r send to
    rank + 1 (which adds), the P core ranks swap whole buffers at distance 1, 2, ..., P/2 and add,
    then the odd ranks below 2r send the result back."""
    n = net.n
    real = _core_of(n, folds_to_odd=True)
    extra = n - len(real)
    acc = {r: data[r].copy() for r in range(n)}
    if extra:
        for msg in net.exchange([Message(e, e + 1, acc[e]) for e in range(0, 2 * extra, 2)]):
            acc[msg.dst] = net.add(msg.dst, acc[msg.dst], msg.data)
    mask = 1
    while mask < len(real):
        msgs = [Message(real[c], real[c ^ mask], acc[real[c]]) for c in range(len(real))]
        for msg in net.exchange(msgs):
            acc[msg.dst] = net.add(msg.dst, acc[msg.dst], msg.data)
        mask <<= 1
    if extra:
        for msg in net.exchange([Message(o, o - 1, acc[o]) for o in range(1, 2 * extra, 2)]):
            acc[msg.dst] = msg.data
    return acc


def rabenseifner_fold_reduce(net: Network, data: dict) -> dict:
    """MPICH's reduce_intra_reduce_scatter_gather.c on any N, root 0: the odd ranks below 2r send
    to rank − 1 (which adds); the P core ranks reduce-scatter by recursive halving from distance
    1 (the lower of a pair keeps the lower half); then, for mask = P/2, ..., 1, every core rank
    whose highest bit is mask sends all the blocks it holds to core rank − mask."""
    n = net.n
    real = _core_of(n, folds_to_odd=False)
    core, extra = len(real), n - len(real)
    acc = {r: data[r].copy() for r in range(n)}
    if extra:
        for msg in net.exchange([Message(o, o - 1, acc[o]) for o in range(1, 2 * extra, 2)]):
            acc[msg.dst] = net.add(msg.dst, acc[msg.dst], msg.data)
    blocks = {c: _split(acc[real[c]], core) for c in range(core)}
    span, _ = _halving_reduce_scatter(net, real, blocks)
    held = {c: {i: blocks[c][i] for i in range(*span[c])} for c in range(core)}
    mask = core // 2
    while mask:                                                            # gather to core rank 0
        msgs = []
        for c in range(mask, 2 * mask):
            order = sorted(held[c])
            msgs.append(Message(real[c], real[c - mask], np.concatenate([held[c][i] for i in order]), tuple(order)))
        for msg in net.exchange(msgs):
            c = real.index(msg.dst)
            held[c].update(zip(msg.tag, _split(msg.data, len(msg.tag))))
        mask //= 2
    return {ROOT: np.concatenate([held[0][i] for i in range(core)])}


def in_network_all_reduce(net: Network, data: dict) -> dict:
    up = net.exchange([Message(r, SWITCH, data[r]) for r in range(net.n)])
    total = up[0].data
    for msg in up[1:]:
        total = net.add(SWITCH, total, msg.data)
    down = net.exchange([Message(SWITCH, r, total) for r in range(net.n)], cut_through=True)
    return {msg.dst: msg.data for msg in down}


def pairwise_all_to_all(net: Network, data: dict) -> dict:
    blocks = {r: _split(data[r], net.n) for r in range(net.n)}
    out = {r: {r: blocks[r][r]} for r in range(net.n)}
    for step in range(1, net.n):
        msgs = [Message(r, (r + step) % net.n, blocks[r][(r + step) % net.n]) for r in range(net.n)]
        for msg in net.exchange(msgs):
            out[msg.dst][msg.src] = msg.data
    return {r: np.concatenate([out[r][src] for src in range(net.n)]) for r in range(net.n)}


def bruck_all_to_all(net: Network, data: dict) -> dict:
    # local[r][j] is the block travelling j ranks forward: from rank r − j (after arrival)
    local = {r: [_split(data[r], net.n)[(r + j) % net.n] for j in range(net.n)] for r in range(net.n)}
    bit = 1
    while bit < net.n:
        moving = [j for j in range(net.n) if j & bit]
        msgs = [Message(r, (r + bit) % net.n, np.concatenate([local[r][j] for j in moving]))
                for r in range(net.n)]
        for msg in net.exchange(msgs):
            for j, piece in zip(moving, _split(msg.data, len(moving))):
                local[msg.dst][j] = piece
        bit *= 2
    return {r: np.concatenate([local[r][(r - src) % net.n] for src in range(net.n)])
            for r in range(net.n)}


# -- pipelined chains: chunk k leaves rank i (i-th along the chain) in round i + k -----------

def chain_broadcast(net: Network, data: dict) -> dict:
    pieces = {ROOT: _split(data[ROOT], net.chunks)}
    held = {r: {} for r in range(net.n)}
    held[ROOT] = dict(enumerate(pieces[ROOT]))
    for rnd in range(net.n + net.chunks - 2):
        msgs = [Message(i, i + 1, held[i][rnd - i], rnd - i)
                for i in range(net.n - 1) if 0 <= rnd - i < net.chunks]
        for msg in net.exchange(msgs):
            held[msg.dst][msg.tag] = msg.data
    return {r: np.concatenate([held[r][k] for k in range(net.chunks)]) for r in range(net.n)}


def chain_reduce(net: Network, data: dict) -> dict:
    # the chain runs N−1 → … → 0; position i along it is rank N−1−i
    partial = {r: _split(data[r].copy(), net.chunks) for r in range(net.n)}
    for rnd in range(net.n + net.chunks - 2):
        msgs = []
        for i in range(net.n - 1):
            k = rnd - i
            if 0 <= k < net.chunks:
                src = net.n - 1 - i
                msgs.append(Message(src, src - 1, partial[src][k], k))
        for msg in net.exchange(msgs):
            partial[msg.dst][msg.tag] = net.add(msg.dst, partial[msg.dst][msg.tag], msg.data)
    return {ROOT: np.concatenate(partial[ROOT])}


def direct_send_recv(net: Network, data: dict) -> dict:
    (msg,) = net.exchange([Message(0, 1, data[0])])
    return {0: data[0], 1: msg.data}


# -- the registry: (primitive, algorithm) → execution on a dict rank → input -------------
# Closed forms only: a composition runs its phases (see "compositions" below).

EXECUTIONS: dict[tuple[str, str], Callable[[Network, dict], dict]] = {
    ("broadcast", "flat"): flat_broadcast,
    ("broadcast", "binomial_tree"): binomial_broadcast,
    ("broadcast", "ring"): chain_broadcast,
    ("reduce", "ring"): chain_reduce,
    ("scatter", "flat"): flat_scatter,
    ("scatter", "binomial_tree"): binomial_scatter,
    ("gather", "flat"): flat_gather,
    ("gather", "binomial_tree"): binomial_gather,
    ("reduce", "flat"): flat_reduce,
    ("reduce", "binomial_tree"): binomial_reduce,
    ("all_gather", "ring"): ring_all_gather,
    ("all_gather", "recursive_doubling"): recursive_doubling_all_gather,
    ("all_gather", "bruck"): bruck_all_gather,
    ("reduce_scatter", "ring"): ring_reduce_scatter,
    ("reduce_scatter", "recursive_halving"): recursive_halving_reduce_scatter,
    ("reduce_scatter", "pairwise"): pairwise_reduce_scatter,
    ("all_reduce", "recursive_doubling"): recursive_doubling_all_reduce,
    ("all_reduce", "in_network"): in_network_all_reduce,
    ("all_reduce", "rabenseifner_fold"): rabenseifner_fold_all_reduce,
    ("all_reduce", "recursive_doubling_fold"): recursive_doubling_fold_all_reduce,
    ("reduce", "rabenseifner_fold"): rabenseifner_fold_reduce,
    ("all_to_all", "pairwise"): pairwise_all_to_all,
    ("all_to_all", "bruck"): bruck_all_to_all,
    ("send_recv", "direct"): direct_send_recv,
}


# -- what gloo runs (gloo/broadcast.cc, gloo/reduce.cc; see symcomm/collectives/profiles.py) --------------

def binomial_any_broadcast(net: Network, data: dict) -> dict:
    """Any N, low bit first: in round i every holder v < 2^i sends to v + 2^i if it exists."""
    have = {ROOT: data[ROOT]}
    step = 1
    while step < net.n:
        msgs = [Message(v, v + step, have[v]) for v in range(step) if v + step < net.n]
        for msg in net.exchange(msgs):
            have[msg.dst] = msg.data
        step *= 2
    return have


EXECUTIONS[("broadcast", "binomial_any")] = binomial_any_broadcast


def segmented_ring_reduce(net: Network, data: dict) -> dict:
    """gloo/reduce.cc with segments of at most K = net.segment elements: the segment size is
    min(⌈M/2N⌉, K), the segment count the least multiple of N that is at least 2N and covers the
    buffer, segment k the elements [k·size, (k + 1)·size) that exist (possibly none).  In iteration
    i < count − 2 rank r sends segment (r + 1)·count/N + i (mod count) to rank r − 1 if it holds
    any element, from its input while i < count/N and from its output after; the receiver sets
    out = in + received.  Then every rank r ≠ 0 sends the elements of its chunk (segments
    r·count/N …) that exist to the root, one after the other."""
    n, m = net.n, data[ROOT].size
    size = min(-(-m // (2 * n)), net.segment)
    count = -(-max(-(-m // size), 2 * n) // n) * n
    per = count // n
    bounds = [(min(k * size, m), min((k + 1) * size, m)) for k in range(count)]
    inp = {r: [data[r][a:b] for a, b in bounds] for r in range(n)}
    out = {r: [seg.copy() for seg in inp[r]] for r in range(n)}
    for i in range(count - 2):
        msgs = []
        for r in range(n):
            k = ((r + 1) * per + i) % count
            if bounds[k][1] > bounds[k][0]:
                msgs.append(Message(r, (r - 1) % n, (inp if i < per else out)[r][k], k))
        for msg in net.exchange(msgs):
            out[msg.dst][msg.tag] = net.add(msg.dst, inp[msg.dst][msg.tag], msg.data)
    result = list(out[ROOT][:per])
    for r in range(1, n):
        mine = range(r * per, (r + 1) * per)
        held = sum(bounds[k][1] - bounds[k][0] for k in mine)
        if held:
            (msg,) = net.exchange([Message(r, ROOT, np.concatenate([out[r][k] for k in mine]))])
            result.append(msg.data)
    return {ROOT: np.concatenate(result)}


EXECUTIONS[("reduce", "ring_segmented")] = segmented_ring_reduce


# -- a group of one rank (what every backend profile runs at N = 1) ------------------------------

def alone(net: Network, data: dict) -> dict:
    """N = 1: the rank keeps its own buffer; no round, no message, no addition (a send_recv
    whose two ends are the same rank is this too)."""
    if net.n != 1:
        raise AssertionError("a group of one runs on one rank")
    return {0: data[0]}


for _name in PRIMITIVES:
    EXECUTIONS[(_name, "alone")] = alone
