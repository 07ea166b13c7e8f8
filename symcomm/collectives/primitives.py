"""The eight collective primitives and send/recv: what every rank holds before and after.

Each definition is executable on numpy buffers.  Message size M follows nccl-tests: the
full, unsharded buffer (ARCHITECTURE.md, "Conventions").  ``inputs[r]`` is what rank r holds before the
operation (``None`` where it holds nothing); the definition returns what every rank
holds after (``None`` where the primitive leaves nothing defined).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import sympy as sp

from ..core import symbols as S

Buffers = Sequence[np.ndarray | None]

ROOT = 0  # the root rank of rooted primitives; algorithms are written for root 0


def _blocks(buffer: np.ndarray, n: int) -> list[np.ndarray]:
    if buffer.size % n:
        raise ValueError(f"M={buffer.size} must be a multiple of N={n} for this primitive")
    return np.split(buffer, n)


def _broadcast(inputs: Buffers) -> list:
    return [inputs[ROOT].copy() for _ in inputs]


def _scatter(inputs: Buffers) -> list:
    return [block.copy() for block in _blocks(inputs[ROOT], len(inputs))]


def _gather(inputs: Buffers) -> list:
    out = [None] * len(inputs)
    out[ROOT] = np.concatenate(list(inputs))
    return out


def _reduce(inputs: Buffers) -> list:
    out = [None] * len(inputs)
    out[ROOT] = np.sum(np.stack(list(inputs)), axis=0)
    return out


def _all_gather(inputs: Buffers) -> list:
    whole = np.concatenate(list(inputs))
    return [whole.copy() for _ in inputs]


def _reduce_scatter(inputs: Buffers) -> list:
    total = np.sum(np.stack(list(inputs)), axis=0)
    return [block.copy() for block in _blocks(total, len(inputs))]


def _all_reduce(inputs: Buffers) -> list:
    total = np.sum(np.stack(list(inputs)), axis=0)
    return [total.copy() for _ in inputs]


def _all_to_all(inputs: Buffers) -> list:
    n = len(inputs)
    blocks = [_blocks(buffer, n) for buffer in inputs]
    return [np.concatenate([blocks[src][dst] for src in range(n)]) for dst in range(n)]


def _send_recv(inputs: Buffers) -> list:
    if len(inputs) != 2:
        raise ValueError(f"send_recv is between two ranks: N must be 2, got N={len(inputs)}")
    return [inputs[0].copy(), inputs[0].copy()]


@dataclass(frozen=True)
class Primitive:
    """A collective operation, independent of how it is carried out.

    ``input_elements``/``output_elements`` say what one rank holds before/after, in
    elements, as expressions in N and M (root values for rooted primitives).
    """

    name: str
    title: str
    pattern: str            # 1→N, N→1, N→N, 1→1
    reduces: bool
    rooted: bool
    summary: str
    use: str
    define: Callable[[Buffers], list]
    input_elements: sp.Expr
    output_elements: sp.Expr

    def inputs_for(self, n: int, message: int, rng: np.random.Generator) -> list:
        """Random integer inputs of the right shape (integers, so sums are exact)."""
        each = int(sp.sympify(self.input_elements, strict=True).subs({S.N: n, S.M: message}))
        data = [rng.integers(-1000, 1000, size=each, dtype=np.int64) for _ in range(n)]
        if self.rooted and self.name in ("broadcast", "scatter"):
            data = [data[0]] + [None] * (n - 1)
        if self.name == "send_recv":
            data = [data[0], None]
        return data


_M, _N = S.M, S.N

PRIMITIVES: dict[str, Primitive] = {
    p.name: p
    for p in (
        Primitive("broadcast", "Broadcast", "1→N", False, True,
                  "the root's M elements are copied to every rank",
                  "initial parameters from one rank to all", _broadcast, _M, _M),
        Primitive("scatter", "Scatter", "1→N", False, True,
                  "the root's M elements are split in N blocks; rank r gets block r",
                  "sharding data", _scatter, _M, _M / _N),
        Primitive("gather", "Gather", "N→1", False, True,
                  "every rank's M/N elements are concatenated at the root",
                  "collecting results", _gather, _M / _N, _M),
        Primitive("reduce", "Reduce", "N→1", True, True,
                  "every rank's M elements are summed element-wise at the root",
                  "gradients to a parameter server", _reduce, _M, _M),
        Primitive("all_gather", "All-Gather", "N→N", False, False,
                  "every rank's M/N elements are concatenated on every rank (= gather + broadcast)",
                  "ZeRO-3/FSDP parameter gathering", _all_gather, _M / _N, _M),
        Primitive("reduce_scatter", "Reduce-Scatter", "N→N", True, False,
                  "the element-wise sum of every rank's M elements, block r on rank r",
                  "ZeRO gradient sharding", _reduce_scatter, _M, _M / _N),
        Primitive("all_reduce", "All-Reduce", "N→N", True, False,
                  "the element-wise sum of every rank's M elements, on every rank "
                  "(= reduce + broadcast = reduce-scatter + all-gather)",
                  "data-parallel gradient synchronisation", _all_reduce, _M, _M),
        Primitive("all_to_all", "All-to-All", "N→N", False, False,
                  "rank r's block j goes to rank j, placed at position r",
                  "expert-parallel token dispatch", _all_to_all, _M, _M),
        Primitive("send_recv", "Send/Recv", "1→1", False, False,
                  "rank 0's M elements are copied to rank 1",
                  "pipeline activations between stages", _send_recv, _M, _M),
    )
}


def primitive(name: str) -> Primitive:
    try:
        return PRIMITIVES[name]
    except KeyError:
        raise ValueError(
            f"unknown primitive {name!r}; choose one of: {', '.join(PRIMITIVES)}"
        ) from None
