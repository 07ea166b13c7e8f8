"""nccl-tests' table predicted: the model a calibration keeps and the table it prints.

:class:`Prediction` is what a calibration keeps (the catalog's α-β-γ formula with fitted α, β,
and the per-size efficiency curve); :func:`coefficients` and :func:`problems` read the catalog
algorithm at a log's ranks; :func:`table` prints the predicted table in nccl-tests' own layout
(its conventions, and the log reader, are :mod:`symcomm.measurement.nccl_tests`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..base.errors import InputError
from ..core import rules
from ..core import symbols as S
from ..collectives.algorithms import algorithm as catalog_algorithm
from ..numbers.evaluation import fast
from .nccl_tests import DTYPE_BYTES, Collective


# -- the model a calibration keeps ------------------------------------------------------------------

#: pipeline depth C of NCCL's chained broadcast / reduce (catalog algorithm "ring"): chunks of M/C
CHAIN_CHUNKS = 64


def coefficients(primitive: str, algorithm_name: str, n: int, sizes, g: int | None = None) -> dict:
    """The catalog formula's coefficients of α, β, γ, α_inter, β_inter at N = n, M = sizes
    (bytes, so β and γ are per byte), as float arrays."""
    alg = catalog_algorithm(primitive, algorithm_name)
    m = np.asarray(sizes, dtype=float)
    values = {"N": 2 if primitive == "send_recv" else n, "M": m, "G": g or n, "C": CHAIN_CHUNKS}
    out = {}
    for sym, coef in alg.cost.coefficients:
        out[S.BY_SYMBOL[sym].cli_name] = np.asarray(fast(coef)(**values), dtype=float) * np.ones_like(m)
    return out


def problems(primitive: str, algorithm_name: str, n: int, g: int | None) -> list[str]:
    """Why the algorithm cannot run on n ranks (power of two, G dividing N), ignoring M."""
    alg = catalog_algorithm(primitive, algorithm_name)
    values = {S.N: 2 if primitive == "send_recv" else n, S.G: g or n}
    # a rule on the ranks alone (a power of two, a pair); G dividing N is said below in the log's words
    return rules.problems([rule for rule in alg.requires if rule.kind != "divides" and rule.symbols <= {S.N, S.G}],
                          values) + (
        [f"G={g} does not divide N={n}"] if S.G in alg.cost.time.free_symbols and g and n % g else [])


@dataclass(frozen=True)
class Prediction:
    """T(S) = (catalog formula at the fitted α, β, γ) / e(S): the α-β(-γ) core, divided by the
    efficiency e interpolated in log-size between the calibrated sizes (constant beyond them);
    without a curve the core alone."""

    collective: Collective
    algorithm: str
    ranks: int
    gpus_per_node: int | None
    times: dict                                   # alpha, beta, gamma, alpha_inter, beta_inter (s, s/byte)
    sizes: tuple[int, ...] = ()
    efficiency: tuple[float, ...] = ()
    source: str = ""
    notes: tuple[str, ...] = field(default=())
    #: how far the prediction may be off, as far as it was measured, in words (calibration_file.model_from)
    error: str = ""

    def core(self, sizes) -> np.ndarray:
        coefs = coefficients(self.collective.primitive, self.algorithm, self.ranks, sizes, self.gpus_per_node)
        m = np.asarray(sizes, dtype=float)
        total = np.zeros_like(m)
        for name, coef in coefs.items():
            total = total + coef * float(self.times.get(name, 0.0))
        return total

    def curve(self, sizes) -> np.ndarray:
        m = np.maximum(np.asarray(sizes, dtype=float), 1.0)
        if not self.sizes:
            return np.ones_like(m)
        x = np.log(np.maximum(np.asarray(self.sizes, dtype=float), 1.0))
        y = np.log(np.asarray(self.efficiency, dtype=float))
        return np.exp(np.interp(np.log(m), x, y))

    def time(self, sizes) -> np.ndarray:
        return self.core(sizes) / self.curve(sizes)


# -- the predicted table ----------------------------------------------------------------------------

def _float_str(value: float, width: int) -> str:
    """nccl-tests' getFloatStr: %.2f, then %.1f, %.0f, then an exponent, to fit ``width``."""
    for fmt in (f"%{width}.2f", f"%{width}.1f", f"%{width}.0f"):
        text = fmt % value
        if len(text) <= width:
            return text
    return (f"%{width}.1e" if width >= 7 else f"%{width}.0e") % value


#: the most sizes one predicted table prints (nccl-tests' own runs stop at -e; a table this long is a typo's)
MAX_SIZES = 4096


def sizes_between(minbytes: int, maxbytes: int, factor: int = 2, step: int = 0) -> list[int]:
    """The sizes nccl-tests runs for -b, -e and -f (or -i): minbytes, ×factor (or +step), ≤ maxbytes; refused
    past :data:`MAX_SIZES` of them, not cut short."""
    out, size = [], minbytes
    while size <= maxbytes:
        if len(out) == MAX_SIZES:
            raise InputError(f"-b {minbytes} to -e {maxbytes} by {f'-f {factor}' if factor > 1 else f'-i {step}'} "
                             f"gives more than {MAX_SIZES:,} sizes: give a larger -i (or -f 2) or a narrower -b to -e")
        out.append(size)
        size = size * factor if factor > 1 else size + step
        if size <= 0 or (factor <= 1 and step <= 0):
            break
    return out


def table(model: Prediction, sizes: list[int], dtype: str = "float", header: tuple[str, ...] = ()) -> tuple[str, list[dict]]:
    """The predicted output of ``<collective>_perf`` (text in nccl-tests' layout, and the rows)."""
    coll, n = model.collective, model.ranks
    elt = DTYPE_BYTES[dtype]
    redop = "none" if coll.name in ("all_gather", "alltoall", "broadcast") else "sum"
    root = 0 if coll.name in ("broadcast", "reduce") else -1
    printed = [coll.buffers(size, elt, n) for size in sizes]
    times = model.time([max(s, 1) for s, _ in printed]) if printed else []
    lines = [f"# {line}" for line in header]
    lines += ["#",
              "#                                                              out-of-place                       in-place          ",
              "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
              "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       "]
    rows, busbws = [], []
    for (size, count), t in zip(printed, times):
        t = float(t) if size else 0.0
        algbw = size / t / 1e9 if t > 0 else 0.0
        busbw = algbw * coll.factor(n)
        busbws.append(busbw)
        body = f"  {_float_str(t * 1e6, 7)}  {_float_str(algbw, 6)}  {_float_str(busbw, 6)}    N/A"
        lines.append(f"{size:12d}  {count:12d}  {dtype:>8s}  {redop:>6s}  {root:6d}" + body + body)
        rows.append({"bytes": size, "count": count, "time": t, "algbw": algbw * 1e9, "busbw": busbw * 1e9})
    average = sum(busbws) / len(busbws) if busbws else 0.0
    # nccl-tests' "Out of bounds values : 0 OK" reports a check of computed results, which a prediction never ran
    lines += ["# Out of bounds values : not checked (predicted, not run)", f"# {'Avg bus bandwidth':<20s} : {average:g} ",
              "#"]
    return "\n".join(lines), rows
