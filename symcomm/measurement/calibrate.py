"""Calibration from nccl-tests logs: α and β fitted to measured times, a per-size efficiency
curve for what the α-β line does not follow, a hardware file written from them.

The fit.  For one collective of a log (N ranks), the catalog algorithm's time is
T(M) = a(N)·α + b(N, M)·β (+ c·γ; + α_inter, β_inter for the two-level forms) with M the
full buffer in bytes.  α and β are fitted by weighted least squares in *relative* error,
min Σ ((T(Sᵢ) − tᵢ)/tᵢ)², on the rows where one term dominates: the latency rows (time
within 20 % of the smallest) and the bandwidth rows (busbw within 5 % of the largest).  α-β
is a two-asymptote model: α is what a message costs when it carries nothing, β what a byte
costs when the message is long.  Between them NCCL switches protocols (LL, LL128, Simple)
and channel counts, which no α-β line follows; that is what the efficiency curve holds:
e(S) = T_αβ(S) / t(S), the share of the α-β model's speed reached at size S (at sizes where
α is negligible, busbw(S) / busbw(∞)).  The calibrated prediction is T_αβ(S) / e(S), e
interpolated linearly in log S between the measured sizes and constant beyond them.

What a log cannot determine is refused, never fitted: one rank (no data moves), too few sizes,
a repeated size, a span too narrow for a latency- and a bandwidth-bound row, times that never
double (β unmeasured), busbw already half its top at the smallest size (α unmeasured), a fitted
constant that is not positive, rows that do not lie on an α-β line, a constant whose standard error
exceeds half of it (the thresholds and their reasons are beside their names below).  A fit that
passes reports its standard errors (s²(XᵀX)⁻¹ of the least squares), the size range it measured
(outside it ``symcomm nccl-tests`` says the prediction is extrapolated), the α-β line's error over
its fitted rows and over all rows, and each row's error when left out.  Nothing is written
(``-o``, ``--plot``) before all of it is computed and checked.

γ is held, not fitted: at one N the reduction term c·γ is a multiple of M like b·β, so no fit
can tell them apart.  A fit with γ = 0 would fold the reduction into β, and the hardware file
written from it, which carries its base preset's γ (3 / HBM bandwidth) for ``eval`` and
``compare``, would then count the reduction twice (once inside β, once as c·γ).  So the fit holds
γ at the value the written file carries — the base preset's, per byte — and subtracts c·γ as
known: the fitted β is the link's own, and every command that adds c·γ (eval, compare, nccl-tests
through the entry's ``gamma_held``) gives one answer.  Without a base preset (a device symcomm has
no preset for, or a --base without HBM bandwidth) the file's γ is 0 and the reduction is folded
into β, as the report and the file say.  (Chapter 12: busbw → 1/(β + γ/2) for the ring
all-reduce, so a busbw alone gives β + γ/2.)

A log that spans nodes fits the flat algorithm at the network's α, β (a flat ring is as fast
as its slowest link; ``symcomm eval`` uses the inter-node values for such a group too).  The
intra-node α, β come from a single-node log.  With both, the two-level form
(``hierarchical``) is fitted for α_inter, β_inter with the intra-node values held.

These are two meanings of "the inter-node link", and they differ by the formula they were fitted
through: a flat ring of N ranks over nodes pays 2(N−1)/N·M·β per rank (its β is the per-step cost
of the slowest hop), while the two-level form pays 2(N/G−1)/(N/G)·(M/G)·β_inter across nodes, with
every rank of a node crossing at once (its β_inter is each rank's share of the network).  The same
16-rank A100 log gives 74.7 GB/s for the first and 6.6 GB/s for the second; pricing a flat ring at
the second was 10× slow.  So the hardware file keeps both: ``inter`` from the flat fit (marked
``fitted_as: flat``), ``inter_two_level`` from the two-level fit, and ``presets.link_values`` gives
each algorithm the one its formula was fitted through.

The hardware file written from the fits (and the model ``symcomm nccl-tests`` reads back from one) is
:mod:`symcomm.measurement.calibration_file`; the text report, :mod:`symcomm.measurement.calibration_report`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from . import nccl_prediction, nccl_tests
from ..core import symbols as S
from ..collectives.algorithms import DEFAULT_ALGORITHM, algorithms_of
from ..collectives.algorithms import algorithm as catalog_algorithm
from ..base.errors import InputError
from ..base.files import same_path
from ..base.notes import add as add_note
from .nccl_prediction import Prediction
from .nccl_tests import Collective, Log
from ..presets import spans_nodes

#: the band of rows the α-β fit uses: latency rows within this factor of the smallest time,
#: bandwidth rows within this share of the largest busbw
LATENCY_BAND = 1.2
BANDWIDTH_BAND = 0.95
#: the sizes the report calls small and large (the held-out checks of chapter 12)
SMALL = 64 * 1024
LARGE = 64 * 1024 * 1024

# -- what a log must hold for α and β to be determined ---------------------------------------------
# Each threshold is a property of the model T(S) = A + B·S (A = a·α, B = b·β at the log's N), not a
# tuning to the shipped logs; each refusal names its log, what failed, and the threshold.

#: a latency-bound row for α, a bandwidth-bound row for β, and one fitted row more than the two
#: unknowns, so that the fit's own scatter (its standard errors) can be measured at all
MIN_GROUP_ROWS = 1
MIN_FIT_ROWS = 3
#: sizes a log must have: the fitted rows, and two between the latency and the bandwidth rows (a
#: curve through the crossover needs two points; one is a guess of its shape)
MIN_SIZES = MIN_FIT_ROWS + 2
#: the time at the largest size at least twice the smallest's: as t_min ≥ A, then B·S_max ≥ t_max/2,
#: the bandwidth term is at least half the time somewhere in the log (β is measured, not guessed)
MIN_GROWTH = 2.0
#: busbw at the smallest size at most half the log's largest: busbw(S)/busbw(∞) = B·S/(A + B·S) is
#: the bandwidth term's share, so the latency term is at least half the time somewhere (α is measured)
MAX_SMALLEST_SHARE = 0.5
#: together the two above need sizes spanning at least 2 × 2 = 4× (busbw = S/t up 2× while t up 2×);
#: a log inside a narrower span is refused with that reason first
MIN_SPAN = MIN_GROWTH / MAX_SMALLEST_SHARE
#: the α-β line through its own latency and bandwidth rows: these rows were chosen within 20 % of
#: the smallest time (and 5 % of the largest busbw), so a line through them misses each by at most
#: about half that band; more than 10 % RMS means they do not lie on an α-β line at all
MAX_FIT_RMS = (LATENCY_BAND - 1) / 2
#: a fitted constant whose standard error exceeds half its value: its ±2σ interval (about 95 %)
#: contains 0, so the log does not tell it from nothing
MAX_RELATIVE_ERROR = 0.5
#: log files one calibrate reads (each capped at nccl_tests.MAX_LOG_BYTES), and tests they may hold in
#: all (a hardware file keeps one calibration entry per test; its schema allows 256)
MAX_LOG_FILES = 16
MAX_TESTS = 64

#: how the unknowns are named in messages
_GREEK = {"alpha": "α", "beta": "β", "alpha_inter": "α_inter", "beta_inter": "β_inter"}
#: the symbols a log binds (N, G from its header, M its sizes, C NCCL's chain depth) besides the times
_BOUND = frozenset({"N", "M", "G", "C", "alpha", "beta", "gamma", "alpha_inter", "beta_inter"})


@dataclass
class Fit:
    log: Log
    model: Prediction
    rows: list[dict]
    fitted_rows: tuple[int, ...]                  # indices of the rows the α-β fit used
    rms: float                                    # relative RMS of the α-β core over the fitted rows
    notes: list[str] = field(default_factory=list)
    level: str = "intra"                          # which link the fit describes: intra or inter
    alternatives: list[tuple[str, float]] = field(default_factory=list)
    held_out: list[float] = field(default_factory=list)   # leave-one-out relative error per row
    stderr: dict = field(default_factory=dict)    # standard error of each fitted constant (s, s/byte)
    rms_all: float = 0.0                          # relative RMS of the α-β core over every row
    gamma: float = 0.0                            # γ (s per reduced byte) the fit held, not fitted
    gamma_source: str = ""                        # where that γ comes from (or why it is 0)

    @property
    def alpha(self) -> float:
        return self.model.times.get("alpha", 0.0)

    @property
    def beta(self) -> float:
        return self.model.times.get("beta", 0.0)

    @property
    def bandwidth(self) -> float:
        """1/β: bytes/s per direction (β > 0: a fit without it is refused)."""
        return 1.0 / self.beta

    @property
    def size_range(self) -> tuple[int, int]:
        """The smallest and largest size of the log: where the calibrated model interpolates;
        beyond them its efficiency is held at the end value (an extrapolation)."""
        return self.model.sizes[0], self.model.sizes[-1]

    @property
    def held_out_rms(self) -> float | None:
        errs = [e for e in self.held_out if math.isfinite(e)]
        return float(np.sqrt(np.mean(np.square(errs)))) if errs else None

    def as_dict(self) -> dict:
        return {"collective": self.model.collective.name, "algorithm": self.model.algorithm,
                "ranks": self.model.ranks, "gpus_per_node": self.model.gpus_per_node, "level": self.level,
                **{k: float(v) for k, v in self.model.times.items()},
                "gamma": self.gamma, "gamma_held": self.gamma, "gamma_source": self.gamma_source,
                "bandwidth": self.bandwidth,
                "stderr": dict(self.stderr), "size_range_bytes": list(self.size_range),
                "fit_rms_relative": self.rms, "fit_rows": len(self.fitted_rows),
                "all_rows_rms_relative": self.rms_all, "all_rows": len(self.rows),
                "held_out_rms_relative": self.held_out_rms, "log": self.log.path, "device": self.log.device,
                "rows": self.rows, "notes": list(self.log.notes) + self.notes}


def _series(log: Log) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """Sizes and times of the rows with a size and a measurement, in increasing size; a size
    printed twice is refused (one nccl-tests run prints each size once)."""
    keep = sorted((i for i, r in enumerate(log.rows) if r.size > 0 and r.measured is not None),
                  key=lambda i: log.rows[i].size)
    for i, j in zip(keep, keep[1:]):
        if log.rows[i].size == log.rows[j].size:
            first, second = sorted((log.rows[i].line, log.rows[j].line))
            raise InputError(f"log {log.path!r} line {second}: size {log.rows[i].size} bytes again (first on line "
                             f"{first}); one nccl-tests run prints each size once: give concatenated runs as "
                             "separate logs")
    sizes = np.array([log.rows[i].size for i in keep], dtype=float)
    times = np.array([log.rows[i].measured.time_s for i in keep], dtype=float)
    return sizes, times, keep


def _check_series(log: Log, sizes: np.ndarray, times: np.ndarray) -> None:
    """Refuse a log whose sizes and times cannot determine α and β (the thresholds above)."""
    where = f"log {log.path!r}"
    if len(sizes) < MIN_SIZES:
        raise InputError(f"{where}: {len(sizes)} usable row(s) (size > 0, measured); an α-β fit needs at least "
                         f"{MIN_SIZES} sizes: {MIN_FIT_ROWS} latency- or bandwidth-bound rows to fit two constants "
                         "and measure their scatter, and 2 between them for the efficiency curve")
    lo, hi = sizes[0], sizes[-1]
    if hi < MIN_SPAN * lo:
        raise InputError(f"{where}: its sizes span only {hi / lo:.3g}× ({int(lo)} to {int(hi)} bytes); α and β need "
                         f"a latency-bound and a bandwidth-bound size, at least {MIN_SPAN:g}× apart (nccl-tests -b 8 "
                         "-e 8G spans 2^30×)")
    if times[-1] < MIN_GROWTH * times[0]:
        raise InputError(f"{where}: the time does not grow with size ({_us(times[0])} at {int(lo)} B, "
                         f"{_us(times[-1])} at {int(hi)} B: less than {MIN_GROWTH:g}×), so the bandwidth term is "
                         "never half the time and β is not measured; run up to larger sizes (-e)")
    speed = sizes / times               # busbw up to the collective's constant factor
    if speed[0] > MAX_SMALLEST_SHARE * speed.max():
        raise InputError(f"{where}: at its smallest size ({int(lo)} B) busbw is already "
                         f"{100 * speed[0] / speed.max():.0f} % of its largest (more than "
                         f"{100 * MAX_SMALLEST_SHARE:.0f} %), so the latency term is never half the time and α is "
                         "not measured; run from smaller sizes (-b 8)")


def _check_algorithm(log: Log, name: str, two_level: bool) -> None:
    """Refuse an algorithm the log cannot calibrate: one that cannot run on its ranks, one with a
    symbol no log gives (gloo's segment size K), a two-level form without the intra-node fit."""
    primitive, n, g = log.collective.primitive, log.ranks, log.gpus_per_node
    known = [alg.name for alg in algorithms_of(primitive)]
    if name not in known:       # the flag named, as every other refusal here names it
        raise InputError(f"--algorithm {name}: not an algorithm of {primitive}; choose {', '.join(known)}")
    problems = nccl_prediction.problems(primitive, name, n, g)
    if problems:
        raise InputError(f"--algorithm {name} cannot run on log {log.path!r}'s {n} ranks: {problems[0]}")
    unbound = _unbound(primitive, name)
    if unbound:
        raise InputError(f"--algorithm {name}: its formula needs {', '.join(unbound)}, which an nccl-tests log does "
                         f"not give; choose another {primitive} algorithm (symcomm list)")
    if _two_level(primitive, name) and not two_level:
        raise InputError(f"--algorithm {name} fits α_inter, β_inter with the intra-node α, β held: give a "
                         f"single-node log and a multi-node log of {log.collective.name} (log {log.path!r} alone "
                         f"is {log.nodes} node(s) of {g} GPUs)")


def _unbound(primitive: str, name: str) -> list[str]:
    """The symbols of the algorithm's time that no log binds (gloo's segment size K)."""
    alg = catalog_algorithm(primitive, name)
    names = (S.BY_SYMBOL[s].cli_name if s in S.BY_SYMBOL else str(s) for s in alg.cost.time.free_symbols)
    return sorted(n for n in names if n not in _BOUND)


def _two_level(primitive: str, name: str) -> bool:
    alg = catalog_algorithm(primitive, name)
    return bool({S.alpha_inter, S.beta_inter} & alg.cost.time.free_symbols)


def select_rows(sizes: np.ndarray, times: np.ndarray, factor: float) -> tuple[np.ndarray, np.ndarray]:
    """Boolean masks of the latency rows and the bandwidth rows (see the module's docstring)."""
    busbw = factor * sizes / times
    top = busbw.max()
    bandwidth = busbw >= BANDWIDTH_BAND * top
    # latency rows: near the smallest time, and moving little data at the top bandwidth
    latency = (times <= LATENCY_BAND * times.min()) & (factor * sizes / top < 0.5 * times)
    return latency, bandwidth


@dataclass(frozen=True)
class Line:
    """The weighted least-squares fit of two unknowns in relative error, with what its uncertainty
    and leave-one-out need: the design X (rows already divided by their measured time), the
    target y, the solution, (XᵀX)⁻¹ and the hat diagonal h."""

    unknowns: tuple[str, str]
    values: dict                                  # fitted unknowns and the held ones
    stderr: dict                                  # standard error of each fitted unknown
    rms: float                                    # relative RMS over the fitted rows
    chosen: np.ndarray                            # indices of the fitted rows
    design: np.ndarray
    residual: np.ndarray                          # y − X·x on the fitted rows
    inverse: np.ndarray                           # (XᵀX)⁻¹
    hat: np.ndarray                               # hᵢ = xᵢ (XᵀX)⁻¹ xᵢᵀ


def fit_core(coefs: dict, times, chosen, fixed: dict | None = None,
             unknowns: tuple[str, str] = ("alpha", "beta")) -> Line:
    """α, β (or the two ``unknowns``) by least squares in relative error, min Σ ((T(Sᵢ) − tᵢ)/tᵢ)²,
    on the ``chosen`` rows; ``fixed`` values (the intra-node α, β of a two-level fit) are held.

    Standard errors: cov = s²·(XᵀX)⁻¹ with s² = RSS/(k − 2), the textbook estimate for k rows and
    two unknowns (the fit's own scatter taken as its noise).  The columns are scaled to unit
    length before inverting, so that α's and β's very different magnitudes do not ruin it."""
    fixed = fixed or {}
    t = times[chosen]
    offset = sum((coefs[name] * value for name, value in fixed.items() if name in coefs), np.zeros_like(times))
    design = np.column_stack([coefs.get(name, np.zeros_like(times))[chosen] / t for name in unknowns])
    target = 1.0 - offset[chosen] / t
    scale = np.linalg.norm(design, axis=0)
    if np.any(scale == 0):
        missing = [_GREEK[u] for u, s in zip(unknowns, scale) if s == 0]
        raise InputError(f"the fitted rows carry no {' or '.join(missing)} term")
    scaled = design / scale
    gram = scaled.T @ scaled
    if np.linalg.cond(gram) > 1e12:
        raise InputError(f"the fitted rows cannot separate {_GREEK[unknowns[0]]} from {_GREEK[unknowns[1]]} "
                         "(their coefficients are proportional)")
    inverse_scaled = np.linalg.inv(gram)
    x = (inverse_scaled @ scaled.T @ target) / scale
    residual = target - design @ x
    k = len(t)
    dof = k - len(unknowns)
    s2 = float(residual @ residual) / dof if dof > 0 else math.inf
    inverse = inverse_scaled / np.outer(scale, scale)
    stderr = {u: float(math.sqrt(s2 * inverse[j, j])) if math.isfinite(s2) else math.inf
              for j, u in enumerate(unknowns)}
    hat = np.einsum("ij,jk,ik->i", scaled, inverse_scaled, scaled)
    return Line(unknowns, {**fixed, **dict(zip(unknowns, map(float, x)))}, stderr,
                float(np.sqrt(np.mean(residual ** 2))), np.asarray(chosen), design, residual, inverse, hat)


def _check_line(log: Log, name: str, line: Line) -> None:
    """Refuse a fit whose constants are not positive, finite and determined, or whose rows do not
    lie on an α-β line (the thresholds above)."""
    where = f"log {log.path!r} ({name})"
    two_level = "alpha_inter" in line.unknowns
    for u in line.unknowns:
        v = line.values[u]
        if not math.isfinite(v) or v <= 0:
            why = ("with the single-node fit's α, β held, the intra-node part alone already takes (nearly) all of "
                   "these times: are both logs from one machine?" if two_level else
                   "its latency- and bandwidth-bound rows do not follow T = a·α + b·β·S")
            if line.values.get("gamma", 0) > 0 and not two_level and u == "beta":
                why = (f"with γ held at {line.values['gamma']:.4g} s/byte (the base preset's 3 / HBM bandwidth), the "
                       "reduction alone already takes these times: is the log from that GPU? (--base names another; one "
                       "without hbm_bytes_per_second folds the reduction into β)")
            raise InputError(f"{where}: the fitted {_GREEK[u]} is {v:.3g}, not a positive number: {why}")
    if line.rms > MAX_FIT_RMS:
        raise InputError(f"{where}: the α-β line misses the {len(line.chosen)} rows it was fitted to by "
                         f"{100 * line.rms:.1f} % RMS (more than {100 * MAX_FIT_RMS:.0f} %, half the latency band): "
                         "these times are not an α-β line")
    for u in line.unknowns:
        v, e = line.values[u], line.stderr[u]
        if not e <= MAX_RELATIVE_ERROR * v:
            raise InputError(f"{where}: {_GREEK[u]} = {v:.3g} ± {e:.2g} (standard error): more than "
                             f"{100 * MAX_RELATIVE_ERROR:.0f} % of it, so its ±2σ interval contains 0 and the log "
                             f"does not determine {_GREEK[u]}")


def _efficiency(core: np.ndarray, times: np.ndarray) -> np.ndarray:
    return np.clip(core / times, 1e-6, 1e6)


def held_gamma(base) -> tuple[float, str]:
    """(γ per byte the fits hold, why): the γ the hardware file written with ``base`` carries (the
    module's docstring says why a fit holds it rather than folding it into β)."""
    if base is None:
        return 0.0, "γ = 0: no base preset gives this GPU's HBM bandwidth, so the reduction is folded into β"
    gamma = base.gamma_per_byte
    if gamma <= 0:
        return 0.0, f"γ = 0: {base.name} gives no HBM bandwidth, so the reduction is folded into β"
    return gamma, (f"γ = 3 / HBM bandwidth of {base.name} ({base.hbm_bytes_per_second / 1e12:.4g} TB/s), held: its "
                   "c·γ is subtracted as known, so β is the link's own")


def fit_log(log: Log, algorithm: str | None = None, fixed: dict | None = None,
            held: tuple[float, str] | None = None) -> Fit:
    """Calibrate one test of a log (its ranks settled by :func:`nccl_tests.with_ranks`); InputError
    naming the log when it cannot determine α and β (or α_inter, β_inter with ``fixed``).
    ``held`` is (γ per byte, why) from :func:`held_gamma`; by default that of the preset of the
    log's GPU, as ``symcomm calibrate`` without --base holds it."""
    gamma, gamma_source = held if held is not None else held_gamma(_base_preset([log], None))
    coll: Collective = log.collective
    primitive = coll.primitive
    n, g = log.ranks, log.gpus_per_node
    if n < 2:
        raise InputError(f"log {log.path!r}: {coll.name} on {n} rank moves no data between ranks (busbw factor "
                         f"{coll.factor(n):g}), so its time measures no link and α, β cannot be fitted; give a log "
                         "of 2 or more ranks")
    sizes, times, keep = _series(log)
    _check_series(log, sizes, times)
    notes: list[str] = []
    spans = spans_nodes(n, g)          # the level rule eval, compare and nccl-tests use
    two_level = fixed is not None
    if algorithm is None or algorithm == "best":
        name = "hierarchical" if two_level else DEFAULT_ALGORITHM[primitive]
        if primitive in ("broadcast", "reduce"):
            name = "ring"
    else:
        name = algorithm
    _check_algorithm(log, name, two_level)
    factor = coll.factor(n)
    latency, bandwidth = select_rows(sizes, times, factor)
    for mask, what in ((latency, f"latency-bound (time within {100 * (LATENCY_BAND - 1):.0f} % of the smallest)"),
                       (bandwidth, f"bandwidth-bound (busbw within {100 * (1 - BANDWIDTH_BAND):.0f} % of the "
                                   "largest)")):
        if mask.sum() < MIN_GROUP_ROWS:
            raise InputError(f"log {log.path!r}: no {what} row; α needs a latency-bound row and β a "
                             "bandwidth-bound one (are the times an α-β line at all?)")
    chosen = np.flatnonzero(latency | bandwidth)
    if len(chosen) < MIN_FIT_ROWS:
        raise InputError(f"log {log.path!r}: {len(chosen)} latency- or bandwidth-bound rows (time within "
                         f"{100 * (LATENCY_BAND - 1):.0f} % of the smallest, busbw within "
                         f"{100 * (1 - BANDWIDTH_BAND):.0f} % of the largest); fitting α and β and measuring their "
                         f"scatter needs at least {MIN_FIT_ROWS} (are the times an α-β line at all?)")
    unknowns = ("alpha_inter", "beta_inter") if two_level else ("alpha", "beta")
    alternatives = []

    def one(alg_name: str):
        coefs = nccl_prediction.coefficients(primitive, alg_name, n, sizes, g)
        try:
            line = fit_core(coefs, times, chosen, fixed={**(fixed or {}), "gamma": gamma}, unknowns=unknowns)
        except InputError as err:
            raise InputError(f"log {log.path!r} ({alg_name}): {err}") from None
        core = sum(coefs.get(k, 0) * v for k, v in line.values.items())
        return line, coefs, core

    line, coefs, core = one(name)
    if algorithm == "best":
        left_out = []
        for alg in algorithms_of(primitive):
            if alg.name in ("in_network",) or _two_level(primitive, alg.name) != two_level:
                continue
            if nccl_prediction.problems(primitive, alg.name, n, g):
                continue
            if _unbound(primitive, alg.name):
                left_out.append(f"{alg.name} (needs {', '.join(_unbound(primitive, alg.name))})")
                continue
            try:
                other, _, _ = one(alg.name)
            except InputError:
                continue
            if all(other.values[u] > 0 for u in unknowns):
                alternatives.append((alg.name, other.rms))
        alternatives.sort(key=lambda pair: pair[1])
        if alternatives:
            best_rms = alternatives[0][1]
            ties = [a for a, r in alternatives if r <= best_rms * 1.001 + 1e-12]
            pick = name if name in ties else alternatives[0][0]
            if pick != name:
                name = pick
                line, coefs, core = one(name)
        else:
            ties = [name]
        notes.append(f"--algorithm best: {name} (relative RMS {100 * line.rms:.2f} %)"
                     + (f"; tied with {', '.join(a for a in ties if a != name)}: at one N each is a + b·M, "
                        "only α and β differ by their coefficients" if len(ties) > 1 else "")
                     + (f"; left out: {', '.join(left_out)}, which no log gives" if left_out else ""))
    _check_line(log, name, line)
    eff = _efficiency(core, times)
    model = Prediction(coll, name, n, g, line.values, tuple(int(s) for s in sizes), tuple(float(e) for e in eff),
                  source=f"calibrated from {log.path}")
    predicted = model.time(sizes)
    in_fit = np.zeros(len(sizes), dtype=bool)
    in_fit[chosen] = True
    held = leave_one_out(line, coefs, sizes, times)
    rows = []
    for i, (s, t, c, p) in enumerate(zip(sizes, times, core, predicted)):
        rows.append({"bytes": int(s), "measured_time": float(t), "predicted_time": float(p),
                     "alpha_beta_time": float(c), "efficiency": float(eff[i]),
                     "measured_busbw": float(factor * s / t), "predicted_busbw": float(factor * s / p),
                     "held_out_error": held[i] if math.isfinite(held[i]) else None,
                     "line": log.rows[keep[i]].line, "in_fit": bool(in_fit[i])})
    if spans and not two_level:
        notes.append(f"the run spans {log.nodes} nodes of {g} GPUs: one log at one (N, G) cannot separate the "
                     "intra- from the inter-node α, β (both are a constant plus a multiple of M); fitted as one "
                     "flat algorithm at the network's α, β (the inter-node link); give a single-node log too to "
                     "separate them (without it the written file has no inter_two_level and refuses the two-level "
                     "forms across nodes)")
    rel_all = (core - times) / times
    return Fit(log, model, rows, tuple(int(i) for i in chosen), line.rms, notes,
               level="inter" if spans else "intra", alternatives=alternatives, held_out=held,
               stderr=dict(line.stderr), rms_all=float(np.sqrt(np.mean(rel_all ** 2))), gamma=gamma,
               gamma_source=gamma_source)


def leave_one_out(line: Line, coefs: dict, sizes, times) -> list[float]:
    """Relative error of each row predicted by the calibration made without it, in time linear in
    the rows.  Without row j the fit's constants are x − (XᵀX)⁻¹ xⱼ eⱼ/(1 − hⱼⱼ) (the closed form of
    deleting one row from least squares; rows outside the fit leave them unchanged), the efficiency
    curve loses its point at Sⱼ, and row j is predicted from its neighbours' efficiencies, as
    :meth:`nccl_prediction.Prediction.curve` interpolates (linear in log S, constant beyond the ends).  The rows
    the fit uses are those chosen from the whole log."""
    count = len(sizes)
    x = np.array([line.values[u] for u in line.unknowns])
    params = np.tile(x, (count, 1))
    h = line.hat
    undefined = np.zeros(count, dtype=bool)
    safe = h < 1 - 1e-9
    shift = (line.design * (line.residual / np.where(safe, 1 - h, 1))[:, None]) @ line.inverse.T
    params[line.chosen] = x - shift
    undefined[line.chosen[~safe]] = True
    fixed_part = sum((coefs[k] * v for k, v in line.values.items() if k in coefs and k not in line.unknowns),
                     np.zeros_like(times))
    cols = np.column_stack([coefs.get(u, np.zeros_like(times)) for u in line.unknowns])

    def core_at(i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """The α-β time at row i with the constants fitted without row j."""
        return fixed_part[i] + np.sum(cols[i] * params[j], axis=1)

    rows = np.arange(count)
    prev, nxt = np.clip(rows - 1, 0, count - 1), np.clip(rows + 1, 0, count - 1)
    e_prev = np.clip(core_at(prev, rows) / times[prev], 1e-6, 1e6)
    e_next = np.clip(core_at(nxt, rows) / times[nxt], 1e-6, 1e6)
    logs = np.log(sizes)
    with np.errstate(divide="ignore", invalid="ignore"):
        w = np.where(nxt > prev, (logs - logs[prev]) / (logs[nxt] - logs[prev]), 0.0)
    w = np.where(rows == 0, 1.0, np.where(rows == count - 1, 0.0, w))
    e = np.exp((1 - w) * np.log(e_prev) + w * np.log(e_next))
    out = core_at(rows, rows) / e / times - 1
    return [float("nan") if bad else float(v) for v, bad in zip(out, undefined)]


# -- the hardware file ------------------------------------------------------------------------------

#: (the name nccl-tests prints for a GPU, its preset's family), GB200 before B200 (its name holds the other's)
GPU_PRESETS = (("H200", "h200"), ("H100", "h100"), ("A100", "a100"), ("GB200", "gb200"), ("B200", "b200"))


def _base_preset(logs: list[Log], base: str | None):
    """The hardware for what a log cannot measure: ``--base``, else the preset of the logs' GPU,
    else None.  A --base file whose fitted β already holds the reduction (no gamma_held) is
    refused: its links and its γ are not one decomposition a new file could carry on."""
    from .. import presets

    if base:
        chosen = presets.hardware(base)
        if chosen.reduction_folded:
            raise InputError(f"--base {base!r}: its calibration entries do not say which γ their fits held, so its "
                             "links include the reduction and its γ is read as 0; give a preset (symcomm presets) "
                             "or a file recalibrated by this symcomm")
        return chosen
    device = " ".join(log.device for log in logs).upper()
    # the 40 GB A100 SXM is its own preset (half the memory, 1.555 TB/s of HBM): a PCIe card of 40 GB has none, so no
    # base is guessed for it
    for key, name in GPU_PRESETS:
        if key in device:
            if "PCIE" in device and name in ("a100", "h100"):
                name += "-pcie"
            if name.startswith("a100") and "40GB" in device:
                if name != "a100":
                    return None
                name = "a100-40gb"
            add_note(f"--base {name}: the preset of the logs' GPU ({' '.join(dict.fromkeys(log.device for log in logs))}) "
                      "for what a log cannot measure (memory, HBM bandwidth, peaks); give --base to choose another")
            return presets.hardware(name)
    return None


def _us(seconds: float) -> str:
    from ..base.units import human_time

    return human_time(seconds)


#: how far above the base hardware's datasheet link a fitted intra-node link may come before it is said: a ring's
#: busbw stays under the datasheet NVLink bandwidth (an in-switch NVLS all-reduce passes it by a few percent)
FASTER_THAN_DATASHEET = 1.10


def _beside_the_base(fits: list, base) -> None:
    """Notes on the fits of one node that a base preset contradicts: a link faster than the base's datasheet
    NVLink (a log of other hardware, a wrong rank count, a doctored log), and a base named for another GPU than
    the log prints."""
    if base is None:
        return
    for f in fits:
        device = f.log.device.upper()
        family = next((name for key, name in GPU_PRESETS if key in device), None)
        if family is not None and family not in base.name.lower():
            f.notes.append(f"the log's GPU is {f.log.device}, but the base hardware is {base.name}: its γ (held in "
                           "the fit) and everything a log cannot measure come from another GPU")
        if f.level == "intra" and f.bandwidth > FASTER_THAN_DATASHEET * base.intra.bytes_per_second:
            f.notes.append(f"the fitted link, {f.bandwidth / 1e9:.4g} GB/s per direction, is more than "
                           f"{100 * (FASTER_THAN_DATASHEET - 1):.0f} % above {base.name}'s NVLink datasheet "
                           f"({base.intra.bytes_per_second / 1e9:.4g} GB/s per direction), which a ring's busbw does not "
                           "pass: check the log's rank count (its busbw factor), its GPU and --base before using the "
                           "file")


def calibrate(paths: list[str], ranks: int | None = None, gpus_per_node: int | None = None,
              algorithm: str | None = None, collective_name: str | None = None,
              base: str | None = None) -> list[Fit]:
    """One fit per test of the logs, and a two-level fit of each multi-node log that has a
    single-node fit of the same collective beside it; InputError for what cannot be fitted.
    Every fit holds the γ of ``base`` (a preset or file; default the preset of the logs' GPU),
    the γ the hardware file written from them carries (:func:`held_gamma`)."""
    if len(paths) > MAX_LOG_FILES:
        raise InputError(f"{len(paths)} log files: calibrate reads at most {MAX_LOG_FILES} (one per collective and "
                         "node count is what a hardware file keeps)")
    # one log given twice (its path again, a link to it) or one test's rows under two names (a copied log): fitted
    # twice, it would weigh twice in the file (calibrate-step refuses one log read by two runs likewise)
    for i, path in enumerate(paths):
        if any(same_path(path, other) for other in paths[:i]):
            raise InputError(f"the log {path} is given twice: give each nccl-tests log once")
    logs = []
    for path in paths:
        for log in nccl_tests.read(path, collective_name=collective_name):
            if len(logs) >= MAX_TESTS:
                raise InputError(f"log {str(path)!r}: more than {MAX_TESTS} tests in the logs given (a hardware file "
                                 "keeps one calibration per test)")
            logs.append(nccl_tests.with_ranks(log, ranks, gpus_per_node))
    seen: dict = {}
    for log in logs:
        key = (log.collective.name if log.collective else None, log.ranks, log.rows)
        if key in seen and seen[key] != log.path:
            raise InputError(f"logs {seen[key]!r} and {log.path!r} hold the same test, row for row: one measurement "
                             "given twice; give it once")
        seen.setdefault(key, log.path)
    base_hardware = _base_preset(logs, base)
    held = held_gamma(base_hardware)
    # --algorithm hierarchical: each log's own fit is the flat default, the two-level fit is added below
    flat = None if algorithm == "hierarchical" else algorithm
    fits = [fit_log(log, flat, held=held) for log in logs]
    _beside_the_base(fits, base_hardware)
    # two levels: a single-node fit and a multi-node log of the same collective
    for log in logs:
        if not spans_nodes(log.ranks, log.gpus_per_node):
            continue
        intra = [g for g in fits if g.level == "intra" and g.model.collective.name == log.collective.name]
        if not intra or (algorithm not in (None, "best", "hierarchical")):
            continue
        if nccl_prediction.problems(log.collective.primitive, "hierarchical", log.ranks, log.gpus_per_node) or not any(
                a.name == "hierarchical" for a in algorithms_of(log.collective.primitive)):
            continue
        intra_values = {"alpha": intra[0].alpha, "beta": intra[0].beta}
        fits.append(fit_log(log, "hierarchical", fixed=intra_values, held=held))
    if algorithm == "hierarchical" and not any(f.model.algorithm == "hierarchical" for f in fits):
        raise InputError("--algorithm hierarchical fits α_inter, β_inter with the intra-node α, β held: give a "
                         "single-node log and a multi-node log of the same collective (one with a two-level form: "
                         + ", ".join(c.name for c in nccl_tests.COLLECTIVES.values()
                                     if any(_two_level(c.primitive, a.name) for a in algorithms_of(c.primitive)))
                         + ")")
    return fits
