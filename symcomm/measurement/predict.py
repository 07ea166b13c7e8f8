"""What the model predicts for a measurement: pure functions, no torch.

The measurement harness (:mod:`symcomm.measurement.measure`) runs torch.distributed on loopback and
counts wire bytes; this module says what those bytes should be under a backend profile —
the catalog's payload by role and, where the profile has an exact wire model (gloo), the
bytes per rank — and reads saved measurement files back as rows to compare.  The chapter
"Model vs reality" imports this module, never the harness.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core import symbols as S
from ..base.errors import InputError
from ..numbers.evaluation import exact, plain
from ..collectives.profiles import Profile, profile

PRIMITIVES = ("broadcast", "scatter", "gather", "reduce", "all_gather", "reduce_scatter",
              "all_reduce", "all_to_all")
ROOTED = {"broadcast", "scatter", "gather", "reduce"}
STEPS = ("ddp", "fsdp")
ITEM = 4                       # float32
WIDTH = 384                    # the small model: two bias-free Linear(384, 384) layers
PHI = 2 * WIDTH * WIDTH        # Φ = 294912 parameters; 384 is a multiple of 2, 3, 4, 8
STEP_INDEX = 3                 # measure the 3rd step: DDP rebuilds buckets after step 1
                               # and broadcasts the new order during step 2

#: ring segments the gloo predictions of one --from file may loop over (≈ 1.5 µs each):
#: a measurement (M ≤ 2**23) needs at most 32·N per row
MAX_PREDICTION_WORK = 2 ** 22

def element_count(primitive: str, n: int, m: int) -> int:
    """M rounded down to a multiple of N (blocks must be whole for every primitive)."""
    return max(n, m - m % n)


# -- predictions -------------------------------------------------------------------------------

def _roles(values: list, rooted: bool) -> dict:
    if rooted:
        return {"root": values[0], "busiest_other": max(values[1:]), "total": sum(values)}
    return {"busiest": max(values), "total": sum(values)}


def predict_op(prof: Profile, primitive: str, n: int, m: int, item: int = ITEM) -> dict:
    """The model's prediction for one collective: catalog payload by role and wire bytes per rank."""
    from ..collectives.profiles import algorithm_under

    values = {S.N: n, S.M: m}
    if prof.segment is not None:
        # K as the profile decides it, a number beside N and M: a segmented ring's Min and ceilings evaluated once
        # at the point, the same numbers as after algorithm_under's symbolic K (a tenth of a second of SymPy for
        # the chapter "Model vs reality", for a form no one reads here)
        values[S.K] = prof.segment(item)
    impl, _ = algorithm_under(prof, primitive, values, item)
    cost = impl.cost
    rooted = primitive in ROOTED
    if rooted and cost.root is not None:
        model = {"root": exact(cost.root.send, values) * item,
                 "busiest_other": exact(cost.others.send, values) * item}
    else:
        model = {"busiest": exact(cost.send, values) * item}
    model["total"] = exact(cost.total, values) * item
    out = {"algorithm": f"{impl.primitive}/{impl.name}",
           "model_payload": {k: plain(v) for k, v in model.items()}}
    if prof.wire is not None and prof.overhead.modelled:
        wire = prof.wire(primitive, n, m, item)
        out["payload"] = [w.payload for w in wire]
        out["messages_sent"] = [w.sent for w in wire]
        out["messages_received"] = [w.received for w in wire]
        out["predicted"] = [w.bytes(prof.overhead) for w in wire]
        # what the catalog formula misses, beyond rounding a block to whole elements per message
        exact_roles = _roles(out["payload"], rooted)
        slack = _roles([item * max(1, w.sent) for w in wire], rooted)
        out["surplus"] = {k: plain(exact_roles[k] - model[k]) for k in model}
        out["rounding_slack"] = slack
    return out


def predict_step(prof: Profile, step: str, n: int, item: int = ITEM) -> dict:
    """DDP (strategy dp) or FSDP (strategy zero3, one unit per Linear) under ``prof``."""
    from ..collectives.profiles import strategy_cost, strategy_terms
    from ..training.strategies import STRATEGIES

    strategy = STRATEGIES["dp" if step == "ddp" else "zero3"]
    options = {"algorithm": "ring"} if step == "ddp" else {}
    values = {S.N: n, S.Phi: PHI}
    cost = strategy_cost(strategy, prof, values, item, **options)
    units = 1 if step == "ddp" else 2  # FSDP wraps each Linear: every collective runs per unit
    out = {"strategy": strategy.name, "Phi": PHI, "units": units,
           "model_payload": {"busiest": plain(exact(cost.send, values) * item),
                             "total": plain(exact(cost.total, values) * item)},
           "terms": []}
    if prof.wire is not None and prof.overhead.modelled:
        per_rank = [0] * n
        payload = [0] * n
        for term in strategy_terms(strategy, prof, values, item, **options):
            group, message = int(exact(term.group, values)), int(exact(term.message, values))
            count = int(exact(term.count, values))
            out["terms"].append({"label": term.label, "runs": f"{term.primitive}/{term.algorithm}",
                                 "message": message, "count": count * units})
            for _ in range(count * units):
                for r, w in enumerate(prof.wire(term.primitive, group, message // units, item)):
                    per_rank[r] += w.bytes(prof.overhead)
                    payload[r] += w.payload
        out["predicted"] = per_rank
        out["payload"] = payload
    return out


@dataclass
class Row:
    kind: str            # "op" | "step"
    name: str            # primitive or ddp/fsdp
    n: int
    m: int               # elements (ops) or Φ (steps)
    measured: list
    prediction: dict
    barrier: list = field(default_factory=list)

    @property
    def matched(self) -> bool:
        return not self.problems()

    def problems(self) -> list[str]:
        pred = self.prediction.get("predicted")
        if pred is None:
            return []
        out = []
        if list(self.measured) != list(pred):
            diff = [a - b for a, b in zip(self.measured, pred)]
            out.append(f"wire bytes per rank measured {self.measured}, predicted {pred} (difference {diff})")
        if self.kind == "op":
            for role, surplus in self.prediction["surplus"].items():
                if abs(surplus) > self.prediction["rounding_slack"][role]:
                    out.append(f"{role} payload differs from the catalog formula by {surplus} bytes")
        else:
            busiest = max(self.prediction["payload"])
            if busiest != self.prediction["model_payload"]["busiest"]:
                out.append(f"busiest payload {busiest} ≠ strategy prediction {self.prediction['model_payload']['busiest']}")
        return out

    def as_dict(self) -> dict:
        out = {"kind": self.kind, "name": self.name, "N": self.n,
               ("M" if self.kind == "op" else "Phi"): self.m, "bytes_per_element": ITEM,
               "measured": self.measured, **self.prediction, "matched": self.matched}
        problems = self.problems()
        if problems:
            out["problems"] = problems
        pred = self.prediction.get("predicted")
        if pred:
            out["ratio"] = [round(a / b, 6) if b else None for a, b in zip(self.measured, pred)]
        return out


def _prediction_work(name: str, n: int, m: int) -> int:
    """About how many ring segments the gloo prediction of one collective loops over."""
    if name in ("all_reduce", "reduce_scatter", "reduce"):
        from ..collectives.profiles import GLOO_MAX_SEGMENT
        return n * max(-(-m * ITEM // GLOO_MAX_SEGMENT), 2 * n)
    return n


def rows_from(saved: dict, backend: str = "gloo", what: str = "measurement", checked: bool = False) -> list[Row]:
    """Rows of a saved measurement file, predicted afresh under ``backend``.

    ``saved`` is checked against ``symcomm/schema/measurement.schema.json`` (unless the caller
    did it: ``checked``) and then row by row; a bad row is an InputError naming ``what``,
    the field and what is allowed.
    """
    from ..base.inputs import check

    prof = profile(backend)
    if not checked:
        check(saved, "measurement", what)

    def bad(i: int, key: str, message: str) -> InputError:
        return InputError(f"{what}: field 'rows/{i}/{key}': {message}")

    rows, predictions, work = [], {}, 0
    for i, r in enumerate(saved["rows"]):
        kind, name, size_key = r["kind"], r["name"], ("M" if r["kind"] == "op" else "Phi")
        allowed = PRIMITIVES if kind == "op" else STEPS
        if name not in allowed:  # the schema says so too; this guards a caller that skipped it
            raise bad(i, "name", f"{name!r} is not a {'primitive' if kind == 'op' else 'step'} measured here; "
                                 f"choose one of {', '.join(allowed)}")
        # JSON Schema counts 2.0 as an integer: the schema bounded them, int() makes them whole
        n, m = int(r["N"]), int(r[size_key])
        measured = [int(v) for v in r["measured"]]
        if len(measured) != n:
            raise bad(i, "measured", f"{len(measured)} values for N={n} ranks; give one per rank")
        if kind == "step" and m != PHI:
            raise bad(i, "Phi", f"Phi={m} is not the model a step is measured on; it has Phi={PHI}")
        key = (kind, name, n, m)
        if key not in predictions:
            if kind == "op":
                work += _prediction_work(name, n, m)
                if work > MAX_PREDICTION_WORK:
                    raise bad(i, "M", f"M={m}: predicting this file's rows would loop over more than "
                                      f"{MAX_PREDICTION_WORK:,} ring segments (a measurement has M ≤ 2**23)")
            try:
                predictions[key] = predict_op(prof, name, n, m) if kind == "op" else predict_step(prof, name, n)
            except ValueError as err:
                raise bad(i, size_key if kind == "op" else "N", str(err)) from None
        rows.append(Row(kind, name, n, m, measured, predictions[key]))
    return rows


