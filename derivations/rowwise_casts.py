"""torchao's float8 rowwise recipe on H100 against its own published table: the share of HBM bandwidth its casts reach.

The step model times an FP8 recipe's casts as the bytes they move at the HBM bandwidth
(symcomm.training.compute.cast_bytes; for torchao's rowwise recipe the bytes of torchao's own roofline).  torchao
publishes what the rowwise recipe measures on H100, a table of speedups of a compiled LayerNorm -> Linear -> Sigmoid
block's forward + backward over bfloat16 for 216 shapes (derivations/data/torchao_rowwise_h100.json, its source
there).  Timed by the model's own parts — the three GEMMs of the linear at the fitted rates and width term, the
rowwise casts' bytes, the LayerNorm's and Sigmoid's passes — the table says how fast those casts run: at the
roofline (share 1) the model's speedups over bf16 are a quarter above the table's on average (+25 % signed over the
shapes read), most of all at the narrow shapes a tensor-parallel rank's linears have, where the table shows rowwise
slower than bfloat16.

:data:`symcomm.training.compute.ROWWISE_CAST_SHARE` is the share that fits the table best: the least squared log
error over the table's shapes with M ≥ 4096 (every training micro-batch the model is checked on has at least 4096
tokens), on the lattice of hundredths.  Read on the part the table ran on (h100-gt: Meta's H100, 2.4 TB/s) at the
SXM end of its bounded peak, as the check runs on that part are typed; the shares are h100's (fitted on the named
runs, none of them rowwise), the width w_half the part's own roofline at that peak (412 at 2.4 TB/s).  No training run sets it: the torchtitan rowwise rows stay check runs.

Counted beside the GEMMs in both blocks alike, each fused kernel reading its inputs and writing its output once in
bf16: the LayerNorm's forward (read and write, 2 + 2 bytes per element of X, M × K) and backward (the gradient, X,
the input gradient: 2 + 2 + 2), the Sigmoid's forward (2 + 2 per element of the M × N output) and backward (2 + 2
+ 2): 10 (MK + MN) bytes.  torch.compile may fuse the rowwise casts of X and dY into the LayerNorm and the Sigmoid
(the script's roofline assumes it); the share absorbs whatever it fused.
"""

from __future__ import annotations

import functools
import json
from importlib import resources

import numpy as np

from symcomm.core.symbols import w_half
from symcomm.presets.systems import hardware, roofline_w_half
from symcomm.training import compute

#: the table's file in derivations/data, read size-capped
FILE = "torchao_rowwise_h100.json"
LIMIT = 100_000
#: the part the table ran on (its source says why), and the end of its bounded peak the share is read at
PART = "h100-gt"
#: the smallest M (tokens per micro-batch) of the shapes the share is read on
FIT_FROM_M = 4096
#: the shares tried: the lattice of hundredths, 0.01 … 1
LATTICE = tuple(k / 100 for k in range(1, 101))
#: bytes per element of the LayerNorm's and the Sigmoid's forward and backward together (module docstring)
NORM_AND_SIGMOID = 10


@functools.lru_cache(maxsize=None)
def table() -> dict:
    """The parsed table (a package file: the cap keeps a corrupted copy from being read whole)."""
    with resources.files(__package__).joinpath("data", FILE).open("rb") as stream:
        data = stream.read(LIMIT + 1)
    if len(data) > LIMIT:
        raise ValueError(f"{FILE}: more than {LIMIT:,} bytes")
    return json.loads(data.decode("utf-8"))


def cells() -> tuple[tuple[int, int, int, float], ...]:
    """(M, K, N, published speedup) of every printed cell, row by row."""
    doc = table()
    return tuple((row["M"], row["K"], n, speedup) for row in doc["rows"]
                 for n, speedup in zip(doc["N_columns"], row["speedup"]))


def _values(peak_end: str) -> dict:
    part = hardware(PART)
    bounds = {dtype: (low, high) for dtype, low, high in part.peak_bounds}
    pick = 1 if peak_end == "high" else 0
    constants = dict(part.step_time)
    peak = bounds["bf16"][pick]
    # h100's fitted shares; the width at the part's own roofline at that peak, as its check runs are timed
    # (Hardware.own_roofline)
    return {"peak": peak, "peak_fp8": bounds["fp8"][pick], "hbm": part.hbm_bytes_per_second,
            "eta": constants["eta"], "eta_fp8": constants["eta_fp8"],
            "w_half": roofline_w_half(peak, part.hbm_bytes_per_second)}


def parts(m: int, k: int, n: int, peak_end: str = "high") -> tuple[float, float, float, float]:
    """Seconds of one cell's blocks by the model: (the bf16 block, the FP8 GEMMs, the rowwise casts at the roofline,
    the LayerNorm's and Sigmoid's passes).  The linear's forward and its two backward GEMMs have the same three
    dimensions (compute.Gemm), each timed as the step model times a GEMM: its FLOPs at the peak times the share
    compute.efficiency gives its width."""
    v = _values(peak_end)
    gemm = compute.Gemm("the block's linear", m, k, n)

    def gemms(peak, large):
        return float(3 * gemm.flops / (peak * compute.efficiency(gemm.width, large).subs(w_half, v["w_half"])))

    x, w, back = compute.cast_bytes([(gemm, 1)], compute.ROWWISE)
    passes = NORM_AND_SIGMOID * (m * k + m * n) / v["hbm"]
    return (gemms(v["peak"], v["eta"]) + passes, gemms(v["peak_fp8"], v["eta_fp8"]), float(x + w + back) / v["hbm"],
            passes)


def _speedup(bf16, gemms, casts, passes, share):
    """The rowwise block's speedup over the bf16 one from a cell's parts, its casts at ``share`` of the HBM bandwidth
    (numbers or numpy arrays alike)."""
    return bf16 / (gemms + casts / share + passes)


def predicted_speedup(m: int, k: int, n: int, share: float, peak_end: str = "high") -> float:
    """The model's speedup of the rowwise block over the bf16 one, its casts at ``share`` of the HBM bandwidth."""
    return _speedup(*parts(m, k, n, peak_end), share)


def _log_errors(chosen, peak_end: str) -> np.ndarray:
    """log(predicted / published) per lattice share (rows) and chosen cell (columns)."""
    found = np.array([parts(m, k, n, peak_end) for m, k, n, _ in chosen])
    published = np.array([s for *_, s in chosen])
    return np.log(_speedup(*found.T, np.array(LATTICE)[:, None]) / published)


def fitted(peak_end: str = "high") -> dict:
    """The share on the lattice with the least squared log error over the cells with M ≥ FIT_FROM_M, its errors
    there (in-sample, and each cell predicted by the share fitted without it: leave-one-out), and the errors at the
    roofline (share 1).  Errors are predicted speedup / published − 1."""
    chosen = [c for c in cells() if c[0] >= FIT_FROM_M]
    logs = _log_errors(chosen, peak_end)
    sse = (logs ** 2).sum(axis=1)
    best = int(np.argmin(sse))
    left_out = np.array([logs[int(np.argmin(sse - logs[:, i] ** 2)), i] for i in range(len(chosen))])
    return {"share": LATTICE[best], "cells": len(chosen), "in_sample": _summary(np.expm1(logs[best])),
            "leave_one_out": _summary(np.expm1(left_out)), "roofline": _summary(np.expm1(logs[-1]))}


def _summary(errors: np.ndarray) -> dict:
    return {"mean": float(np.abs(errors).mean()), "max": float(np.abs(errors).max()),
            "signed_mean": float(errors.mean())}


def by_m(share: float, peak_end: str = "high") -> list[dict]:
    """The errors at ``share`` and at the roofline, row block by row block of the table (one M each)."""
    out = []
    for m in sorted({c[0] for c in cells()}):
        chosen = [c for c in cells() if c[0] == m]
        errors = [predicted_speedup(*c[:3], share, peak_end) / c[3] - 1 for c in chosen]
        roof = [predicted_speedup(*c[:3], 1.0, peak_end) / c[3] - 1 for c in chosen]
        out.append({"M": m, "cells": len(chosen), "at_share": _summary(np.array(errors)),
                    "roofline": _summary(np.array(roof))})
    return out
