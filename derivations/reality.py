"""Model vs reality: the committed gloo measurements (derivations/data/gloo_measurements.json,
written by ``symcomm validate --output``), loaded without torch, for the "Model vs reality"
chapter.

Each row is one collective (or one DDP / FSDP training step) on N ranks of
torch.distributed + gloo on 127.0.0.1: the bytes each rank sent (kernel TCP counters,
barrier subtracted), the catalog's payload prediction under the gloo profile, and gloo's
per-message overhead (96 bytes per message sent, 48 per message received).

``CHAPTER`` is ready for derivations.CHAPTERS but not registered there: the docs chapter
decides its number and place.  Its claims are the measurements themselves: measured bytes
= predicted bytes, rank by rank, as exact integers.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from symcomm.derivation import Chapter
from symcomm.measure import rows_from
from symcomm.proof import Claim

DATA = Path(__file__).resolve().parent / "data" / "gloo_measurements.json"
SOURCE = "symcomm validate --backend gloo on this project's machine (torch 2.13.0+cpu, gloo, loopback)"


@lru_cache(maxsize=1)
def load() -> dict:
    """The measurement file as saved (rows, torch version, kernel, overhead model)."""
    return json.loads(DATA.read_text())


def rows(backend: str = "gloo") -> list:
    """The measured rows, predicted afresh by the current engine (symcomm.measure.Row)."""
    return rows_from(load(), backend)


def table() -> list[dict]:
    """One plain dict per row: what a template needs, no arithmetic left to do."""
    out = []
    for row in rows():
        d = row.as_dict()
        pred = d.get("predicted") or [0]
        model = {k: v for k, v in d["model_payload"].items() if k != "total"}
        out.append({
            "name": d["name"], "N": d["N"], "size": d.get("M", d.get("Phi")),
            "size_symbol": "M" if d["kind"] == "op" else "Φ",
            "runs": d.get("algorithm") or d.get("strategy"),
            "measured_busiest": max(d["measured"]), "predicted_busiest": max(pred),
            "model_payload_busiest": max(model.values()),
            "overhead_busiest": max(pred) - max(model.values()),
            "ratio_to_payload": max(d["measured"]) / max(model.values()) if max(model.values()) else None,
            "matched": d["matched"],
        })
    return out


def _claims() -> tuple:
    if not DATA.exists():
        return ()
    out = []
    for row in rows():
        size = f"M={row.m}" if row.kind == "op" else f"Φ={row.m}"
        for rank, (got, want) in enumerate(zip(row.measured, row.prediction.get("predicted", []))):
            out.append(Claim(got, want, name=f"gloo {row.name} N={row.n} {size}: rank {rank} sends the predicted bytes",
                             source=SOURCE))
    return tuple(out)


CHAPTER = Chapter(
    number=0,  # set by the docs chapter that registers it
    slug="reality",
    title="Model vs reality",
    intro=("The catalog's formulas, under the gloo profile, against the bytes torch.distributed + gloo "
           "actually sends on loopback, counted by the kernel (TCP_INFO)."),
    claims=_claims(),
)
