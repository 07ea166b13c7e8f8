"""The text report of a calibration (``symcomm calibrate`` without ``--json``): per fit its constants with
their standard errors, the range it is valid for, the α-β line's and the leave-one-out errors, and its rows.
"""

from __future__ import annotations

import math

from . import nccl_prediction
from .calibrate import LARGE, SMALL, Fit, _us


def _sizes_text(sizes: list[int]) -> str:
    """Some sizes, shortened: the first three and the last when there are more."""
    shown = [_bytes(s) for s in sizes]
    return ", ".join(shown) if len(shown) <= 4 else f"{', '.join(shown[:3])}, …, {shown[-1]}"


# -- the command line -------------------------------------------------------------------------------

def _bytes(count: int) -> str:
    from ..base.units import human_size

    return human_size(int(count))


def _gbps(beta: float, stderr: float) -> str:
    """1/β in GB/s with its standard error (first order: σ(1/β) = σ_β/β²)."""
    return f"{1 / beta / 1e9:.2f} ± {stderr / beta ** 2 / 1e9:.2g} GB/s"


def report_text(fits: list[Fit]) -> str:
    out = []
    for f in fits:
        m = f.model
        log = f.log
        # a one-node reading no header gave is the fit's premise (intra- or inter-node link): said here, not only below
        assumed = (" — ASSUMED: the log names no hosts; give --gpus-per-node G if it spanned nodes"
                   if log.one_node_assumed else "")
        out.append(f"{m.collective.name} on {m.ranks} ranks ({log.nodes} node{'s' if log.nodes > 1 else ''} × "
                   f"{m.gpus_per_node} GPUs{', ' + log.device if log.device else ''}) from {log.path}{assumed}")
        out.append(f"  algorithm      {m.algorithm} (catalog formula; γ held, not fitted: at one N c·γ and b·β are "
                   "both multiples of M)")
        out.append(f"  gamma          {f.gamma:.4g} s/byte: {f.gamma_source}")
        t, se = m.times, f.stderr
        if m.algorithm == "hierarchical":
            out.append(f"  alpha_inter    {_us(t['alpha_inter'])} ± {_us(se['alpha_inter'])} per message   "
                       f"(intra α {_us(t['alpha'])} held)")
            out.append(f"  beta_inter     {t['beta_inter']:.4g} ± {se['beta_inter']:.2g} s/byte = "
                       f"{_gbps(t['beta_inter'], se['beta_inter'])} per direction   "
                       f"(intra {1 / t['beta'] / 1e9:.2f} GB/s held)")
        else:
            out.append(f"  alpha          {_us(f.alpha)} ± {_us(se['alpha'])} per message "
                       f"({'inter' if f.level == 'inter' else 'intra'}-node link)")
            top = max(r["bytes"] for r in f.rows)
            coefs = nccl_prediction.coefficients(m.collective.primitive, m.algorithm, m.ranks, [top], m.gpus_per_node)
            reduced = float(coefs.get("gamma", [0.0])[0]) * f.gamma
            if reduced > 0:
                # the busbw the α-β-γ line tends to pays the reduction too: factor·S / (b·β + c·γ)
                asymptote = m.collective.factor(m.ranks) * top / (float(coefs["beta"][0]) * f.beta + reduced)
                said = f"the link's own; with the reduction, the asymptotic busbw is {asymptote / 1e9:.2f} GB/s"
            else:
                said = "= the asymptotic busbw"
            out.append(f"  beta           {f.beta:.4g} ± {se['beta']:.2g} s/byte = {_gbps(f.beta, se['beta'])} "
                       f"per direction ({said})")
        out.append("                 (± one standard error of the least-squares fit, from its own scatter)")
        largest = max(f.rows, key=lambda r: r["bytes"])
        out.append(f"  log's busbw    {largest['measured_busbw'] / 1e9:.2f} GB/s at {largest['bytes']:,} bytes")
        lo, hi = f.size_range
        out.append(f"  valid for      {_bytes(lo)} to {_bytes(hi)} (the log's sizes; beyond them the efficiency is "
                   "held at its end value: an extrapolation, which symcomm nccl-tests flags)")
        out.append(f"  α-β line       relative RMS {100 * f.rms:.2f} % over the {len(f.fitted_rows)} rows it was "
                   f"fitted to (* below), {100 * f.rms_all:.1f} % over all {len(f.rows)} rows (the rows between latency and "
                   "bandwidth are what the efficiency curve corrects)")
        held = [(r["bytes"], e) for r, e in zip(f.rows, f.held_out) if math.isfinite(e)]
        if f.held_out_rms is not None:
            out.append(f"  leave-one-out  calibrated model, relative RMS {100 * f.held_out_rms:.1f} % over "
                       f"{len(held)} of the {len(f.rows)} rows (each row predicted by the calibration made without "
                       "it)")
        for label, keep in (("≥ 64 MiB", lambda b: b >= LARGE), ("1 MiB–64 MiB", lambda b: 2 ** 20 <= b < LARGE),
                            ("≤ 64 KiB", lambda b: b <= SMALL)):
            errs = [abs(e) for b, e in held if keep(b)]
            if errs:
                out.append(f"  leave-one-out  {label}: mean {100 * sum(errs) / len(errs):.1f} %, max "
                           f"{100 * max(errs):.1f} % over {len(errs)} rows")
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
