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

γ is folded into β: at one N the reduction term c·γ is a multiple of M like b·β, so no fit
can tell them apart (and NCCL reduces in the same pass as it moves the data); γ = 0.

A log that spans nodes fits the flat algorithm at the network's α, β (a flat ring is as fast
as its slowest link; ``symcomm eval`` uses the inter-node values for such a group too).  The
intra-node α, β come from a single-node log.  With both, the two-level form
(``hierarchical``) is fitted for α_inter, β_inter with the intra-node values held.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass, field

import numpy as np

from . import ncclt
from .algorithms import DEFAULT_ALGORITHM, algorithms_of
from .errors import InputError
from .files import check_output, write_file
from .inputs import parse_whole
from .ncclt import Collective, Log, Model

#: the band of rows the α-β fit uses: latency rows within this factor of the smallest time,
#: bandwidth rows within this share of the largest busbw
LATENCY_BAND = 1.2
BANDWIDTH_BAND = 0.95
#: the sizes the report calls small and large (the held-out checks of chapter 12)
SMALL = 64 * 1024
LARGE = 64 * 1024 * 1024


@dataclass
class Fit:
    log: Log
    model: Model
    rows: list[dict]
    fitted_rows: tuple[int, ...]                  # indices of the rows the α-β fit used
    rms: float                                    # relative RMS of the α-β core over the fitted rows
    notes: list[str] = field(default_factory=list)
    level: str = "intra"                          # which link the fit describes: intra or inter
    alternatives: list[tuple[str, float]] = field(default_factory=list)
    held_out: list[float] = field(default_factory=list)   # leave-one-out relative error per row

    @property
    def alpha(self) -> float:
        return self.model.times.get("alpha", 0.0)

    @property
    def beta(self) -> float:
        return self.model.times.get("beta", 0.0)

    @property
    def bandwidth(self) -> float:
        """1/β: bytes/s per direction."""
        return 1.0 / self.beta if self.beta > 0 else math.inf

    def as_dict(self) -> dict:
        return {"collective": self.model.collective.name, "algorithm": self.model.algorithm,
                "ranks": self.model.ranks, "gpus_per_node": self.model.gpus_per_node, "level": self.level,
                "alpha": self.alpha, "beta": self.beta, "gamma": 0.0, "bandwidth": self.bandwidth,
                "fit_rms_relative": self.rms, "log": self.log.path, "device": self.log.device,
                "rows": self.rows, "notes": list(self.log.notes) + self.notes}


def _series(log: Log) -> tuple[np.ndarray, np.ndarray, list[int]]:
    keep = [i for i, r in enumerate(log.rows) if r.size > 0 and r.measured is not None]
    sizes = np.array([log.rows[i].size for i in keep], dtype=float)
    times = np.array([log.rows[i].measured.time_s for i in keep], dtype=float)
    return sizes, times, keep


def _wls(design: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Non-negative least squares of design·x ≈ target for two unknowns, in relative error
    (each row already divided by its measured time)."""
    x, *_ = np.linalg.lstsq(design, target, rcond=None)
    if np.all(x >= 0):
        return x
    best, best_err = np.zeros(design.shape[1]), math.inf
    for j in range(design.shape[1]):
        col = design[:, j]
        denominator = float(col @ col)
        if denominator <= 0:
            continue
        xj = max(0.0, float(col @ target) / denominator)
        trial = np.zeros(design.shape[1])
        trial[j] = xj
        err = float(np.sum((design @ trial - target) ** 2))
        if err < best_err:
            best, best_err = trial, err
    return best


def select_rows(sizes: np.ndarray, times: np.ndarray, factor: float) -> np.ndarray:
    """Indices of the latency rows and the bandwidth rows (see the module's docstring)."""
    busbw = factor * sizes / times
    top = busbw.max()
    bandwidth = busbw >= BANDWIDTH_BAND * top
    # latency rows: near the smallest time, and moving little data at the top bandwidth
    latency = (times <= LATENCY_BAND * times.min()) & (factor * sizes / top < 0.5 * times)
    return np.flatnonzero(bandwidth | latency)


def fit_core(coefs: dict, sizes, times, chosen, fixed: dict | None = None,
             unknowns: tuple[str, str] = ("alpha", "beta")) -> dict:
    """α, β (or the two ``unknowns``) by relative weighted least squares on the ``chosen`` rows;
    ``fixed`` values (the intra-node α, β of a two-level fit) are held."""
    fixed = fixed or {}
    t = times[chosen]
    offset = sum(coefs.get(name, 0) * value for name, value in fixed.items())
    offset = offset[chosen] if isinstance(offset, np.ndarray) else np.zeros_like(t)
    design = np.column_stack([coefs.get(name, np.zeros_like(times))[chosen] / t for name in unknowns])
    x = _wls(design, 1.0 - offset / t)
    return {**fixed, **dict(zip(unknowns, map(float, x)))}


def _efficiency(core: np.ndarray, times: np.ndarray) -> np.ndarray:
    return np.clip(core / times, 1e-6, 1e6)


def fit_log(log: Log, algorithm: str | None = None, fixed: dict | None = None) -> Fit:
    """Calibrate one test of a log (its ranks settled by :func:`ncclt.with_ranks`)."""
    coll: Collective = log.collective
    primitive = coll.primitive
    n, g = log.ranks, log.gpus_per_node
    sizes, times, keep = _series(log)
    if len(sizes) < 2:
        raise InputError(f"log {log.path!r}: {len(sizes)} usable row(s); a fit needs at least 2 sizes")
    notes: list[str] = []
    spans = n > g
    two_level = fixed is not None
    if algorithm is None or algorithm == "best":
        name = "hierarchical" if two_level else DEFAULT_ALGORITHM[primitive]
        if primitive in ("broadcast", "reduce"):
            name = "ring"
    else:
        name = algorithm
    problems = ncclt.problems(primitive, name, n, g)
    if problems:
        raise InputError(f"--algorithm {name} cannot run on this log's {n} ranks: {problems[0]}")
    chosen = select_rows(sizes, times, coll.factor(n))
    alternatives = []

    def one(alg_name: str):
        coefs = ncclt.coefficients(primitive, alg_name, n, sizes, g)
        if two_level:
            values = fit_core(coefs, sizes, times, chosen, fixed=fixed, unknowns=("alpha_inter", "beta_inter"))
        else:
            values = fit_core(coefs, sizes, times, chosen)
        core = sum(coefs.get(k, 0) * v for k, v in values.items())
        rel = (core[chosen] - times[chosen]) / times[chosen]
        return values, core, float(np.sqrt(np.mean(rel ** 2)))

    values, core, rms = one(name)
    if algorithm == "best":
        for alg in algorithms_of(primitive):
            if alg.name in ("in_network",) or (alg.name == "hierarchical") != two_level:
                continue
            if ncclt.problems(primitive, alg.name, n, g):
                continue
            v, c, r = one(alg.name)
            alternatives.append((alg.name, r))
        alternatives.sort(key=lambda pair: pair[1])
        best_rms = alternatives[0][1]
        ties = [a for a, r in alternatives if r <= best_rms * 1.001 + 1e-12]
        pick = name if name in ties else alternatives[0][0]
        if pick != name:
            name = pick
            values, core, rms = one(name)
        notes.append(f"--algorithm best: {name} (relative RMS {100 * rms:.2f} %)"
                     + (f"; tied with {', '.join(a for a in ties if a != name)}: at one N each is a + b·M, "
                        "only α and β differ by their coefficients" if len(ties) > 1 else ""))
    eff = _efficiency(core, times)
    model = Model(coll, name, n, g, values, tuple(int(s) for s in sizes), tuple(float(e) for e in eff),
                  source=f"calibrated from {log.path}")
    factor = coll.factor(n)
    rows = []
    for i, (s, t, c) in enumerate(zip(sizes, times, core)):
        predicted = float(model.time([s])[0])
        rows.append({"bytes": int(s), "measured_time": float(t), "predicted_time": predicted,
                     "alpha_beta_time": float(c), "efficiency": float(eff[i]),
                     "measured_busbw": factor * s / t, "predicted_busbw": factor * s / predicted,
                     "line": log.rows[keep[i]].line, "in_fit": bool(i in set(chosen.tolist()))})
    if not np.any(times[chosen] <= LATENCY_BAND * times.min()) or len(chosen) == 0:
        notes.append("no latency-bound rows (the log starts at large sizes): α is poorly determined")
    if spans and not two_level:
        notes.append(f"the run spans {log.nodes} nodes of {g} GPUs: one log at one (N, G) cannot separate the "
                     "intra- from the inter-node α, β (both are a constant plus a multiple of M); fitted as one "
                     "flat algorithm at the network's α, β (the inter-node link); give a single-node log too to "
                     "separate them")
    fit = Fit(log, model, rows, tuple(int(i) for i in chosen), rms, notes,
              level="inter" if spans else "intra", alternatives=alternatives)
    fit.held_out = leave_one_out(log, name, sizes, times, fixed)
    return fit


def leave_one_out(log: Log, name: str, sizes, times, fixed) -> list[float]:
    """Relative error of each row predicted by the calibration made without it."""
    coll, n, g = log.collective, log.ranks, log.gpus_per_node
    out = []
    coefs_all = ncclt.coefficients(coll.primitive, name, n, sizes, g)
    for j in range(len(sizes)):
        mask = np.arange(len(sizes)) != j
        s, t = sizes[mask], times[mask]
        coefs = {k: v[mask] for k, v in coefs_all.items()}
        if len(s) < 2:
            out.append(float("nan"))
            continue
        chosen = select_rows(s, t, coll.factor(n))
        if fixed is not None:
            values = fit_core(coefs, s, t, chosen, fixed=fixed, unknowns=("alpha_inter", "beta_inter"))
        else:
            values = fit_core(coefs, s, t, chosen)
        core = sum(coefs.get(k, 0) * v for k, v in values.items())
        model = Model(coll, name, n, g, values, tuple(int(x) for x in s), tuple(float(e) for e in _efficiency(core, t)))
        out.append(float(model.time([sizes[j]])[0] / times[j] - 1))
    return out


# -- the hardware file ------------------------------------------------------------------------------

def _base_preset(logs: list[Log], base: str | None):
    from . import presets

    if base:
        return presets.hardware(base)
    device = " ".join(log.device for log in logs).upper()
    for key, name in (("H200", "h200"), ("H100", "h100"), ("A100", "a100"), ("B200", "b200")):
        if key in device:
            if "PCIE" in device and name in ("a100", "h100"):
                name += "-pcie"
            return presets.hardware(name)
    return None


def hardware_document(fits: list[Fit], base=None, name: str = "calibrated") -> dict:
    """The hardware file (schema ``hardware``) of these fits: links from the fits (all-reduce's
    when there is one), the rest from ``base`` (a preset), and every fit's curve."""
    def pick(level):
        mine = [f for f in fits if f.level == level and not f.model.algorithm == "hierarchical"]
        mine.sort(key=lambda f: (f.model.collective.name != "all_reduce", -f.model.ranks))
        return mine[0] if mine else None

    document: dict = {"name": name, "title": f"calibrated from nccl-tests ({', '.join(sorted({f.log.path for f in fits}))})"}
    links = {}
    for level in ("intra", "inter"):
        f = pick(level)
        if f is not None:
            links[level] = {"bytes_per_second": f.bandwidth if math.isfinite(f.bandwidth) else 1e15,
                            "latency_s": f.alpha,
                            "source": f"fitted by symcomm calibrate: {f.model.collective.name}/{f.model.algorithm} "
                                      f"on {f.model.ranks} ranks, {f.log.path}"}
    two = [f for f in fits if f.model.algorithm == "hierarchical"]
    if two:
        t = two[0].model.times
        links["inter"] = {"bytes_per_second": 1 / t["beta_inter"] if t.get("beta_inter", 0) > 0 else 1e15,
                          "latency_s": t.get("alpha_inter", 0.0),
                          "source": f"fitted by symcomm calibrate: two-level {two[0].model.collective.name} on "
                                    f"{two[0].model.ranks} ranks with the intra-node α, β held, {two[0].log.path}"}
    for level, other in (("intra", "inter"), ("inter", "intra")):
        if level in links:
            continue
        if base is not None:
            link = getattr(base, level)
            links[level] = {"bytes_per_second": link.bytes_per_second, "latency_s": link.latency_s,
                            "source": f"not measured: preset {base.name}'s {link.name} ({link.source})"}
        else:
            links[level] = {**links[other], "source": f"not measured (no {'single-node' if level == 'intra' else 'multi-node'} "
                                                      f"log): the {other}-node fit copied"}
    document.update(links)
    gpn = max((f.model.gpus_per_node or 1) for f in fits)
    document["gpus_per_node"] = int(base.gpus_per_node if base is not None and all(
        f.model.gpus_per_node >= f.model.ranks for f in fits) else gpn)
    if base is not None:
        document["memory_bytes"] = base.memory_bytes
        document["hbm_bytes_per_second"] = base.hbm_bytes_per_second
        if base.peak_flops:
            document["peak_flops"] = dict(base.peak_flops)
            document["peak_source"] = base.peak_source
        if base.step_time:
            document["step_time"] = {**dict(base.step_time), "source": base.step_time_source}
        document["source"] = (f"links fitted by symcomm calibrate from nccl-tests logs; memory, HBM, peak FLOP/s and "
                              f"step-time constants from preset {base.name} ({base.source})")
    else:
        document["source"] = "links fitted by symcomm calibrate from nccl-tests logs"
    document["calibration"] = [{
        "collective": f.model.collective.name, "algorithm": f.model.algorithm, "ranks": f.model.ranks,
        "gpus_per_node": f.model.gpus_per_node,
        **{k: float(v) for k, v in f.model.times.items()},
        "sizes_bytes": list(f.model.sizes), "efficiency": [round(e, 6) for e in f.model.efficiency],
        "source": f"{f.log.path} ({f.log.device or 'device not named'})",
    } for f in fits]
    return document


def model_from(hardware, coll: Collective, ranks: int, gpus_per_node: int | None,
               algorithm: str | None = None) -> Model:
    """The model ``symcomm nccl-tests`` predicts with: the hardware's calibration of this
    collective (same ranks, else the nearest, said in a note), else the catalog formula at the
    hardware's links."""
    entries = [e for e in getattr(hardware, "calibration", ()) if e["collective"] == coll.name
               and (algorithm is None or e["algorithm"] == algorithm)]
    g = gpus_per_node or hardware.gpus_per_node
    if entries:
        entries.sort(key=lambda e: (abs(math.log(e["ranks"] / ranks)), e["ranks"] != ranks))
        e = entries[0]
        notes = []
        if e["ranks"] != ranks:
            notes.append(f"calibrated on {e['ranks']} ranks, predicting {ranks}: the α-β formula at N={ranks} "
                         f"with that calibration's α, β and efficiency curve")
        times = {k: float(e[k]) for k in ("alpha", "beta", "gamma", "alpha_inter", "beta_inter") if k in e}
        problems = ncclt.problems(coll.primitive, e["algorithm"], ranks, e.get("gpus_per_node") or g)
        if problems:
            raise InputError(f"--ranks {ranks}: the calibrated algorithm {e['algorithm']} cannot run: {problems[0]}")
        return Model(coll, e["algorithm"], ranks, e.get("gpus_per_node") if e["ranks"] == ranks else min(g, ranks),
                     times, tuple(e["sizes_bytes"]), tuple(e["efficiency"]), e.get("source", ""), tuple(notes))
    name = algorithm or ("ring" if coll.primitive in ("broadcast", "reduce") else DEFAULT_ALGORITHM[coll.primitive])
    if algorithm is None and ranks > g and ranks % g == 0 and any(
            a.name == "hierarchical" for a in algorithms_of(coll.primitive)):
        name = "hierarchical"       # a group over nodes pays each level its own α, β
    problems = ncclt.problems(coll.primitive, name, ranks, g)
    if problems:
        raise InputError(f"--algorithm {name} cannot run on {ranks} ranks: {problems[0]}")
    values = hardware.values(1)
    notes = [f"no calibration of {coll.name} in --hardware {hardware.name}: the catalog's {name} formula at its links"]
    if name == "hierarchical":
        notes.append(f"{ranks} ranks span nodes of {g} GPUs: the two-level form, each level at its own α, β")
    elif ranks > g:
        values["alpha"], values["beta"] = values["alpha_inter"], values["beta_inter"]
        notes.append(f"{ranks} ranks span nodes of {g} GPUs: α, β are the inter-node values")
    times = {k: float(values[k]) for k in ("alpha", "beta", "gamma", "alpha_inter", "beta_inter")}
    return Model(coll, name, ranks, min(g, ranks), times, source=f"--hardware {hardware.name}", notes=tuple(notes))


# -- the command line -------------------------------------------------------------------------------

def _us(seconds: float) -> str:
    from .units import human_time

    return human_time(seconds)


def report_text(fits: list[Fit]) -> str:
    out = []
    for f in fits:
        m = f.model
        log = f.log
        out.append(f"{m.collective.name} on {m.ranks} ranks ({log.nodes} node{'s' if log.nodes > 1 else ''} × "
                   f"{m.gpus_per_node} GPUs{', ' + log.device if log.device else ''}) from {log.path}")
        out.append(f"  algorithm      {m.algorithm} (catalog formula; γ folded into β: at one N c·γ and b·β are "
                   "both multiples of M)")
        if m.algorithm == "hierarchical":
            t = m.times
            out.append(f"  alpha_inter    {_us(t['alpha_inter'])} per message   (intra α {_us(t['alpha'])} held)")
            out.append(f"  beta_inter     {t['beta_inter']:.4g} s/byte = {1 / t['beta_inter'] / 1e9:.2f} GB/s per "
                       f"direction   (intra {1 / t['beta'] / 1e9:.2f} GB/s held)")
        else:
            out.append(f"  alpha          {_us(f.alpha)} per message ({'inter' if f.level == 'inter' else 'intra'}-node "
                       "link)")
            out.append(f"  beta           {f.beta:.4g} s/byte = {f.bandwidth / 1e9:.2f} GB/s per direction "
                       f"(= the asymptotic busbw)")
        largest = max(f.rows, key=lambda r: r["bytes"])
        out.append(f"  log's busbw    {largest['measured_busbw'] / 1e9:.2f} GB/s at {largest['bytes']:,} bytes")
        out.append(f"  fit            relative RMS {100 * f.rms:.2f} % over the {len(f.fitted_rows)} latency and "
                   f"bandwidth rows the α-β fit uses")
        held = [(r["bytes"], e) for r, e in zip(f.rows, f.held_out) if math.isfinite(e)]
        for label, keep in (("≥ 64 MiB", lambda b: b >= LARGE), ("1 MiB–64 MiB", lambda b: 2 ** 20 <= b < LARGE),
                            ("≤ 64 KiB", lambda b: b <= SMALL)):
            errs = [abs(e) for b, e in held if keep(b)]
            if errs:
                out.append(f"  leave-one-out  {label}: mean {100 * sum(errs) / len(errs):.1f} %, max "
                           f"{100 * max(errs):.1f} % (each row predicted by the calibration made without it)")
        out.append(f"  {'bytes':>12} {'measured':>11} {'α-β':>11} {'calibrated':>11} {'efficiency':>10} "
                   f"{'busbw meas.':>11} {'busbw α-β':>10}")
        factor = m.collective.factor(m.ranks)
        for r in f.rows:
            core_bw = factor * r["bytes"] / r["alpha_beta_time"] / 1e9 if r["alpha_beta_time"] > 0 else 0
            out.append(f"  {r['bytes']:>12,} {_us(r['measured_time']):>11} {_us(r['alpha_beta_time']):>11} "
                       f"{_us(r['predicted_time']):>11} {r['efficiency']:>10.3f} {r['measured_busbw'] / 1e9:>9.2f} G "
                       f"{core_bw:>8.2f} G" + (" *" if r["in_fit"] else ""))
        out.append("  (* rows of the α-β fit; efficiency = α-β time / measured time; calibrated = α-β / efficiency, "
                   "the model symcomm nccl-tests predicts with)")
        for note in list(log.notes) + f.notes:
            out.append(f"  note: {note}")
        out.append("")
    return "\n".join(out).rstrip()


def calibrate(paths: list[str], ranks: int | None = None, gpus_per_node: int | None = None,
              algorithm: str | None = None, collective_name: str | None = None) -> list[Fit]:
    logs = []
    for path in paths:
        for log in ncclt.read(path, collective_name=collective_name):
            logs.append(ncclt.with_ranks(log, ranks, gpus_per_node))
    fits = [fit_log(log, algorithm) for log in logs]
    # two levels: a single-node fit and a multi-node log of the same collective
    for log, f in list(zip(logs, fits)):
        if log.ranks <= log.gpus_per_node:
            continue
        intra = [g for g in fits if g.level == "intra" and g.model.collective.name == log.collective.name]
        if not intra or (algorithm not in (None, "best", "hierarchical")):
            continue
        if ncclt.problems(log.collective.primitive, "hierarchical", log.ranks, log.gpus_per_node) or not any(
                a.name == "hierarchical" for a in algorithms_of(log.collective.primitive)):
            continue
        held = {"alpha": intra[0].alpha, "beta": intra[0].beta}
        fits.append(fit_log(log, "hierarchical", fixed=held))
    return fits


def cmd_calibrate(args) -> int:
    ranks = parse_whole("--ranks", args.ranks, least=1, most=1 << 20) if args.ranks else None
    gpn = parse_whole("--gpus-per-node", args.gpus_per_node, least=1, most=1024) if args.gpus_per_node else None
    if args.output is not None:
        check_output(args.output, "-o")
    if args.plot is not None:
        check_output(args.plot, "--plot")
    fits = calibrate(args.logs, ranks, gpn, args.algorithm, args.collective)
    if args.output is not None:
        from . import presets

        base = None
        if args.base:
            base = presets.hardware(args.base)
        else:
            base = _base_preset([f.log for f in fits], None)
        document = hardware_document(fits, base, name=args.name)
        presets.check_hardware_document(document, "-o")
        write_file(args.output, json.dumps(document, indent=2, ensure_ascii=False) + "\n", "-o")
    if args.plot is not None:
        from .plots import calibration_vs_measured

        import matplotlib

        matplotlib.use("Agg")
        fig, _, _ = calibration_vs_measured([f.as_dict() for f in fits])
        import io

        buffer = io.BytesIO()
        fig.savefig(buffer, format="svg" if str(args.plot).endswith(".svg") else "png", bbox_inches="tight",
                    **({"metadata": {"Date": None}} if str(args.plot).endswith(".svg") else {}))
        write_file(args.plot, buffer.getvalue(), "--plot")
    if args.json:
        payload = {"collectives": [f.as_dict() for f in fits]}
        if args.output is not None:
            payload["hardware_file"] = str(args.output)
        print(json.dumps(payload, indent=2, ensure_ascii=False))
    else:
        print(report_text(fits))
        if args.output is not None:
            print(f"\nwrote {args.output} (use it as --hardware {args.output})")
    return 0


def parse_size(key: str, text: str) -> int:
    """An nccl-tests size: a whole number with an optional K, M or G (powers of 1024, as its parsesize)."""
    text = str(text).strip()
    unit = 1
    if text and text[-1] in "kKmMgG":
        unit = {"k": 1024, "m": 1024 ** 2, "g": 1024 ** 3}[text[-1].lower()]
        text = text[:-1]
    return parse_whole(key, text, least=0, most=ncclt.MAX_BYTES // unit) * unit


def cmd_nccl_tests(args) -> int:
    from . import presets

    coll = ncclt.collective(args.collective)
    ranks = parse_whole("--ranks", args.ranks, least=2 if coll.name == "sendrecv" else 1, most=1 << 20)
    gpn = parse_whole("--gpus-per-node", args.gpus_per_node, least=1, most=1024) if args.gpus_per_node else None
    if not args.hardware:
        raise InputError(f"--hardware is required: a preset ({', '.join(presets.hardware_names())}) or a "
                         "hardware file (calibrate -o writes one)")
    hardware = presets.hardware(args.hardware)
    lo, hi = parse_size("-b", args.minbytes), parse_size("-e", args.maxbytes)
    if lo < 1 or hi < lo:
        raise InputError(f"-b {args.minbytes} and -e {args.maxbytes}: need 1 ≤ -b ≤ -e")
    factor = parse_whole("-f", args.stepfactor, least=1, most=1024) if args.stepfactor else 1
    step = parse_size("-i", args.stepbytes) if args.stepbytes else 0
    if factor <= 1 and step <= 0:
        factor = 2
    if args.datatype not in ncclt.DTYPE_BYTES:
        raise InputError(f"-d {args.datatype!r} is not allowed; choose one of {', '.join(ncclt.DTYPE_BYTES)}")
    sizes = ncclt.sizes_between(lo, hi, factor if factor > 1 else 1, step)
    model = model_from(hardware, coll, ranks, gpn, args.algorithm)
    header = (f"predicted by symcomm: {coll.name}_perf on {ranks} ranks, --hardware {hardware.name}",
              f"model: catalog {coll.primitive}/{model.algorithm}, alpha {model.times.get('alpha', 0) * 1e6:.4g} us, "
              f"beta {model.times.get('beta', 0):.4g} s/byte"
              + (", efficiency curve of " + model.source if model.sizes else ", no efficiency curve (alpha-beta alone)"),)
    text, rows = ncclt.table(model, sizes, args.datatype, header)
    for note in model.notes:
        print(f"symcomm: note: {note}", file=sys.stderr)
    if args.json:
        print(json.dumps({"collective": coll.name, "algorithm": model.algorithm, "ranks": ranks,
                          "hardware": hardware.name, "times": model.times, "rows": rows}, indent=2))
    else:
        print(text)
    return 0


def register_cli(subparsers) -> None:
    p = subparsers.add_parser("calibrate", help="fit alpha, beta (and a per-size efficiency curve) to nccl-tests logs")
    p.add_argument("logs", nargs="+", metavar="LOG", help="nccl-tests output (all_reduce_perf ... as printed)")
    p.add_argument("--ranks", help="ranks of a log whose header is cut off")
    p.add_argument("--gpus-per-node", help="GPUs per node of a log without header that spans nodes")
    p.add_argument("--collective", help="the test, when the log does not name it (all_reduce, all_gather, ...)")
    p.add_argument("--algorithm", help="catalog algorithm to fit (default ring; 'best' lets symcomm pick)")
    p.add_argument("--base", help="hardware preset (or file) for what a log cannot measure (memory, HBM, peaks); "
                                  "default: the preset of the log's GPU")
    p.add_argument("--name", default="calibrated", help="name of the written hardware")
    p.add_argument("-o", "--output", help="write a hardware file (JSON) usable as --hardware FILE")
    p.add_argument("--plot", help="draw measured vs fitted time and busbw (an .svg or .png file)")
    p.add_argument("--json", action="store_true", help="one JSON document on stdout instead of the text")
    p.set_defaults(run=cmd_calibrate)

    p = subparsers.add_parser("nccl-tests", help="predict an nccl-tests table (its own layout) from a hardware preset or file")
    p.add_argument("collective", help=f"one of {', '.join(ncclt.COLLECTIVES)}")
    p.add_argument("--hardware", help="preset name or hardware file (calibrate -o)")
    p.add_argument("--ranks", required=True, help="ranks N")
    p.add_argument("--gpus-per-node", help="GPUs per node (default: the hardware's)")
    p.add_argument("--algorithm", help="catalog algorithm (default: the calibrated one, else ring)")
    p.add_argument("-b", "--minbytes", default="8", help="smallest size (K, M, G: powers of 1024)")
    p.add_argument("-e", "--maxbytes", default="8G", help="largest size")
    p.add_argument("-f", "--stepfactor", default="2", help="multiply the size by this")
    p.add_argument("-i", "--stepbytes", help="add this to the size instead (with -f 1)")
    p.add_argument("-d", "--datatype", default="float", help="nccl-tests type name (float, half, bfloat16...)")
    p.add_argument("--json", action="store_true", help="one JSON document on stdout instead of the text")
    p.set_defaults(run=cmd_nccl_tests)
