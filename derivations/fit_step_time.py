"""Fit the step-time model's two constants per hardware preset on published runs.

    python -m symcomm.derivations.fit_step_time            # print the fit
    python -m symcomm.derivations.fit_step_time --write    # and store it in symcomm/presets/hardware.json

For each system with runs marked ``"role": "fit"`` in ``data/published_runs.json``, eta (the
share of the datasheet peak the matmuls reach) and kappa (HBM passes over each activation
byte) minimise the mean absolute relative error of the predicted step time, by a grid search
(eta in steps of 0.005 from 0.30 to 1.00, kappa in steps of 0.25 from 0 to 20): no optimiser,
no randomness, the same numbers on every machine.  The grid's ties are broken towards the
smaller eta, then the smaller kappa.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from . import published

ETAS = np.round(np.arange(0.30, 1.0001, 0.005), 3)
KAPPAS = np.round(np.arange(0.0, 20.0001, 0.25), 2)
HARDWARE_JSON = Path(__file__).resolve().parents[1] / "symcomm" / "presets" / "hardware.json"


def fit(system: str) -> dict:
    """{"eta", "kappa", "fitted_on", "mean_error", "max_error"} for one hardware preset."""
    runs = published.runs(system, role="fit")
    if not runs:
        raise ValueError(f"no published run marked for fitting on {system}")
    eta, kappa = np.meshgrid(ETAS, KAPPAS, indexing="ij")
    err = np.abs(published.errors(runs, {"eta": eta, "kappa": kappa}))
    score = err.mean(axis=0)
    best = np.unravel_index(np.argmin(score), score.shape)       # first minimum: smallest eta, then kappa
    return {"eta": float(eta[best]), "kappa": float(kappa[best]), "fitted_on": [r["id"] for r in runs],
            "mean_error": float(score[best]), "max_error": float(err[(slice(None),) + best].max())}


def systems() -> list[str]:
    return sorted({r["hardware"] for r in published.runs(role="fit")})


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="store the fit in symcomm/presets/hardware.json")
    args = parser.parse_args(argv)
    fits = {system: fit(system) for system in systems()}
    for system, f in fits.items():
        print(f"{system}: eta = {f['eta']}, kappa = {f['kappa']}; over {len(f['fitted_on'])} runs mean |error| "
              f"{100 * f['mean_error']:.1f} %, max {100 * f['max_error']:.1f} %")
    if args.write:
        data = json.loads(HARDWARE_JSON.read_text(encoding="utf-8"))
        for system, f in fits.items():
            data["systems"][system]["step_time"] = {
                "eta": f["eta"], "kappa": f["kappa"], "fitted_on": f["fitted_on"],
                "source": (f"fitted on {len(f['fitted_on'])} published runs (fitted_on; derivations/data/"
                           f"published_runs.json) by python -m symcomm.derivations.fit_step_time: mean |error| "
                           f"{100 * f['mean_error']:.1f} %, max {100 * f['max_error']:.1f} %")}
        HARDWARE_JSON.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
