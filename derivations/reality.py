"""Model vs reality: the committed gloo measurements (derivations/data/gloo_measurements.json,
written by ``symcomm validate --output``), loaded without torch, for the "Model vs reality"
chapter.

Each row is one collective (or one DDP / FSDP training step) on N ranks of
torch.distributed + gloo on 127.0.0.1: the bytes each rank sent (kernel TCP counters,
barrier subtracted), the catalog's payload prediction under the gloo profile, and gloo's
per-message overhead (96 bytes per message sent, 48 per message received).

``CHAPTER`` (number 10) shows the measurements as a table and proves, rank by rank, measured
bytes = predicted bytes as exact integers; its derivation shows how a strategy's real
traffic differs between backends.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import sympy as sp

from symcomm.core.chapters import Chapter, Derivation, Step, Table
from symcomm.measurement.predict import rows_from
from symcomm.collectives.profiles import strategy_cost
from symcomm.core.proof import Claim
from symcomm.training.strategies import STRATEGIES
from symcomm.core.symbols import N, Phi

DATA = Path(__file__).resolve().parent / "data" / "gloo_measurements.json"
SOURCE = "symcomm validate --backend gloo on this project's machine (torch 2.13.0+cpu, gloo, loopback)"


@lru_cache(maxsize=1)
def load() -> dict:
    """The measurement file as saved (rows, torch version, kernel, overhead model)."""
    return json.loads(DATA.read_text())


@lru_cache(maxsize=None)
def rows(backend: str = "gloo") -> tuple:
    """The measured rows, predicted afresh by the current engine (symcomm.measurement.predict.Row).  The file is
    this package's own, held to its schema by tests/integration/test_measure.py
    (test_the_committed_measurement_file_satisfies_the_schema): not checked again on every ``symcomm prove``, which
    would import jsonschema for it (a tenth of the command); rows_from still checks it row by row."""
    return tuple(rows_from(load(), backend, checked=True))


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


# -- what the measurements teach, as derivations the engine proves ---------------------------

_zero3 = STRATEGIES["zero3"]
_fsdp_textbook = strategy_cost(_zero3, "textbook")
_fsdp_gloo = strategy_cost(_zero3, "gloo")
GLOO_SOURCE = ("torch 2.13.0 ProcessGroupGloo: reduce_scatter runs gloo's all-reduce and keeps one block; "
               "measured in derivations/data/gloo_measurements.json")

FSDP_UNDER_GLOO = Derivation(
    "FSDP / ZeRO-3 under gloo: the reduce-scatter is an all-reduce",
    (Step(_fsdp_gloo.send, "composed: the zero3 terms, each collective replaced by what gloo runs"),
     Step(Phi * (N - 1) / N + Phi * (N - 1) / N + 2 * Phi * (N - 1) / N,
          "two ring all-gathers of Φ, and a ring all-reduce of Φ where a reduce-scatter was asked"),
     Step(4 * Phi * (N - 1) / N, "4/3 of the textbook 3Φ(N−1)/N"),
     Step(4 * Phi, "as N → ∞", "→")),
    "elements per GPU per step, exact; gloo's 96 bytes per message are left out here and counted in the table",
    GLOO_SOURCE, lhs="per-GPU send",
    claims=(Claim(_fsdp_gloo.send / _fsdp_textbook.send, sp.Rational(4, 3),
                  name="FSDP sends 4/3 as much under gloo as under a real reduce-scatter", source=GLOO_SOURCE),
            Claim(strategy_cost(STRATEGIES["dp"], "gloo").send, strategy_cost(STRATEGIES["dp"], "textbook").send,
                  name="DDP sends the same under gloo as the textbook ring", source=GLOO_SOURCE)),
)


_BACKENDS = ("textbook", "nccl", "gloo")
_COMPARED = ("dp", "zero1", "zero3", "hsdp", "tp", "sp", "ep", "cp_ulysses")


def _backend_table() -> Table:
    """Per-GPU send of each strategy under each backend's choice of algorithms (symbolic)."""
    rows = tuple((name,) + tuple(strategy_cost(STRATEGIES[name], backend).send for backend in _BACKENDS)
                 for name in _COMPARED)
    return Table("Per-GPU send per step under each backend", ("strategy",) + _BACKENDS, rows,
                 caption=("Elements, exact. The strategies' terms are the same; each backend's profile "
                          "(symcomm/collectives/profiles.py) chooses the algorithm for each collective. Gloo's reduce-scatter "
                          "is an all-reduce that keeps one block, so every strategy built on reduce-scatter "
                          "(ZeRO, HSDP, sequence parallel) sends more under gloo."),
                 source="symcomm/collectives/profiles.py; " + GLOO_SOURCE)


BACKEND_CLAIMS = (
    Claim(strategy_cost(STRATEGIES["sp"], "gloo").send / strategy_cost(STRATEGIES["sp"], "textbook").send,
          sp.Rational(3, 2), name="sequence parallel sends 3/2 as much under gloo (its reduce-scatters are all-reduces)",
          source=GLOO_SOURCE),
    Claim(strategy_cost(STRATEGIES["zero1"], "gloo").send / strategy_cost(STRATEGIES["zero1"], "textbook").send,
          sp.Rational(3, 2), name="ZeRO-1 sends 3/2 as much under gloo", source=GLOO_SOURCE),
    Claim(strategy_cost(STRATEGIES["tp"], "gloo").send, strategy_cost(STRATEGIES["tp"], "nccl").send,
          name="Megatron TP (all-reduces only) sends the same under gloo and NCCL", source=GLOO_SOURCE),
)


def _table() -> tuple:
    if not DATA.exists():
        return ()
    rows = tuple(
        (r["name"], r["runs"], r["N"], f"{r['size_symbol']}={r['size']:,}", r["measured_busiest"],
         r["predicted_busiest"], r["model_payload_busiest"], r["overhead_busiest"],
         r["ratio_to_payload"] if r["ratio_to_payload"] is not None else "—", r["matched"])
        for r in table())
    meta = load()
    return (Table(
        "Measured vs predicted bytes, busiest rank",
        ("operation", "gloo runs", "N", "size (elements, fp32)", "measured bytes", "predicted bytes",
         "catalog payload bytes", "predicted − payload", "measured / payload", "matched"),
        rows,
        caption=("Bytes the busiest rank sent, counted by the kernel (TCP_INFO bytes sent minus retransmitted, "
                 "the barrier around each operation subtracted), against the catalog formula under the gloo "
                 "profile plus what gloo adds: 96 bytes per message sent (two 48-byte headers the sender writes; the "
                 "receiver writes a third, 48 bytes, back). "
                 "Above 2·N MiB gloo's reduce loop sends C/N − 2 more 1 MiB segments than the ring needs "
                 "(reduce/ring_segmented); its catalog payload is exact, partial and empty last segments "
                 "included (see symcomm/collectives/profiles.py). "
                 "Recorded with: " + str(meta.get("command", "symcomm validate --backend gloo")) + "."),
        source=SOURCE),)


CHAPTER = Chapter(
    number=10,
    slug="reality",
    title="Model vs reality",
    intro=("The catalog's formulas, under the gloo profile, against the bytes torch.distributed + gloo "
           "actually sends on loopback, counted by the kernel (TCP_INFO). What it teaches: the payload "
           "formulas hold to the byte once the library's own choices are known. Gloo runs reduce-scatter "
           "as a full all-reduce, so FSDP sends 4Φ(N−1)/N per GPU under gloo, not the textbook 3Φ(N−1)/N; "
           "its broadcast is a binomial tree for any N and its reduce a ring reduce-scatter followed by a "
           "gather, whose ring loop over-sends above 2·N MiB; each message adds 48-byte headers, two from its sender and one from its receiver. The chapter is rendered from "
           "the committed measurement file, so the docs build without torch."),
    derivations=(FSDP_UNDER_GLOO,),
    claims=BACKEND_CLAIMS + _claims(),
    # tables only the docs read: `symcomm prove` never builds the backends' costs nor the rows' table
    late_tables=lambda: (_backend_table(),) + _table(),
)
