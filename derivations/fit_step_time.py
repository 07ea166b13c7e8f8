"""Fit the step-time model's constants per hardware preset on published runs.

    python -m symcomm.derivations.fit_step_time            # print the fit
    python -m symcomm.derivations.fit_step_time --write    # and store it in symcomm/presets/hardware.json
                                                           # and derivations/data/step_fit.json (the docs' tables)
    python -m symcomm.derivations.fit_step_time --checks-only   # no fit: the check runs' and the printed memories'
                                                           # rows with the stored constants, into step_fit.json

For each system with runs marked ``"role": "fit"`` (the papers' runs of ``data/published_runs.json`` and the
modern runs of :mod:`modern` the step model takes: Megatron-Bridge's tables, torchtitan's benchmarks), the constants of
``symcomm.training.compute.FITTED`` that the runs determine minimise the mean absolute relative error of the
predicted step time: the fitting core of ``symcomm calibrate-step`` (:func:`symcomm.measurement.step_fit.fit`,
a lattice search: eta in steps of 0.005 over [0.30, 1.00], kappa in steps of 0.25 over [0, 20], searched
whole; ties towards the smaller eta, then the smaller kappa), on each run's step-model inputs
(:func:`published.inputs_of`).  It prints the in-sample and the leave-one-out error (each run predicted by
the constants fitted without it) per hardware preset, per source and per framework.  Constants a published figure
gives are held, not fitted (each with its reason): w_half at the additive roofline, eta where the runs leave it
undetermined at the part's maximum achievable matmul times the share of it A100's training runs sustain
(:data:`MAMF_BF16`, :func:`transferred_eta`), eta_attn where the hardware publishes its fused-attention share.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, replace
from pathlib import Path

import sympy as sp

from symcomm.base import files
from symcomm.base.errors import InputError
from symcomm.core import symbols
from symcomm.measurement import step_fit
from symcomm.presets.hardware_values import ROOFLINE_HELD, roofline_w_half, with_own_widths
from symcomm.training import compute
from symcomm.training.settings import OPTIONS

from . import modern, published

HARDWARE_JSON = Path(__file__).resolve().parents[1] / "symcomm" / "presets" / "hardware.json"
#: the fit's results as data (the docs read it instead of refitting: a fit takes minutes)
RESULTS_JSON = Path(__file__).resolve().parent / "data" / "step_fit.json"


def _rounded(x: float) -> float:
    return float(f"{x:.6g}")


def _errors(e) -> dict:
    return {k: (_rounded(v) if isinstance(v, float) else v) for k, v in e.as_dict().items()}


GIB = 2.0 ** 30


#: a run's memory_stage (the GPU whose peak its source prints) → the step model's quantity of that GPU's bytes
MEMORY_STAGE_QUANTITY = {"busiest": "memory_per_gpu", "first": "stage_bytes_first", "last": "stage_bytes_last"}


def check_rows(system: str, constants: dict, role: str = "check",
               over: list | None = None) -> tuple[list[dict], list[dict]]:
    """The runs of ``system`` never fitted on (role "check": the papers' and the modern ones the step model
    takes; "regression": the modern rows published as regressions), predicted with ``constants``: (their rows: id,
    source, framework, measured and predicted seconds, error; the memory rows: every modern run of the role whose
    source prints its peak memory (``memory_gib``), against the step model's ``memory_per_gpu`` of the same
    evaluation).  Each layout is evaluated once.  ``over``, a list: every run of these the model counts over its
    GPU's memory is appended to it (:func:`over_row`)."""
    printed = {r["id"]: r for r in modern.runs(role)}
    papers = {r["id"]: r for r in published.runs(role=role)}
    capacity = published.hardware(system).memory_bytes
    runs = ((published.measured_runs(system, role="check") if role == "check" else [])
            + modern.measured_runs(system, role)[0])
    rows, memory = [], []
    low = {r["id"]: modern.typed_peaks(r, "low") for r in printed.values()}
    for run in runs:
        q = run.inputs.quantities(**constants)
        predicted = float(q["step_time"])
        row = {"id": run.id, "source": run.source, "framework": run.framework,
               "framework_option": run.inputs.options.get("framework", OPTIONS["framework"].default),
               "precision_option": run.inputs.options.get("precision", "bf16"),
               "measured_s": _rounded(run.measured_s), "predicted_s": _rounded(predicted),
               "error": _rounded(predicted / run.measured_s - 1)}
        at_low = low.get(run.id.split("+")[0])
        if at_low:      # a GPU whose peak is only bounded: typed at the high end, predicted at the low end too
            at_low = {k: float(v) for k, v in at_low.items()}
            values = {**run.inputs.values, **constants, **at_low}
            if published.hardware(system).own_roofline:
                # its widths at its own roofline follow the peak (Hardware.own_roofline)
                values = with_own_widths(values, at_low["peak"], float(values["hbm"]))
            slower = float(run.inputs.quantities(**values)["step_time"])
            row.update(predicted_low_peak_s=_rounded(slower), error_low_peak=_rounded(slower / run.measured_s - 1))
        source = printed.get(run.id.split("+")[0]) or {}
        if len(source.get("micro_batch_open", ())) > 1:
            row["micro_batch_open"] = open_micro_batches(source, run.measured_s, constants, capacity)
        rows.append(row)
        if over is not None and capacity and float(q["memory_per_gpu"]) > capacity:
            first = run.id.split("+")[0]
            over.append(over_row(run.id, printed.get(first) or papers.get(first, {}), system, role,
                                 float(q["memory_per_gpu"]), capacity, row["framework_option"]))
        for run_id in run.id.split("+"):      # one layout measured in several rows: each row's own memory
            source = printed.get(run_id)
            if source is None or source.get("memory_gib") is None:
                continue
            # a source printing one pipeline stage's peak (memory_stage: "last", Megatron-LM's rank world_size − 1)
            # against that stage's count, not the busiest GPU's
            gib = float(q[MEMORY_STAGE_QUANTITY[source.get("memory_stage", "busiest")]]) / GIB
            memory.append({"id": run_id, "hardware": system, "framework": run.framework,
                           "framework_option": row["framework_option"], "published_gib": source["memory_gib"], "predicted_gib": _rounded(gib),
                           "error": _rounded(gib / source["memory_gib"] - 1)})
    return rows, memory


def open_words(rows: list) -> str:
    """The rows whose micro-batch size their source leaves open, in words: how many, and their errors over the
    sizes that fit ("" for none)."""
    opened = [r for r in rows if "micro_batch_open" in r]
    if not opened:
        return ""
    errors = [e for r in opened for e in r["micro_batch_open"].values() if e is not None]
    return (f"; {len(opened)} run(s) with the micro-batch size their source leaves open span "
            f"{100 * min(errors):+.1f} to {100 * max(errors):+.1f} % over the sizes that fit")


def open_micro_batches(source: dict, measured: float, constants: dict, capacity) -> dict:
    """A run whose source prints no micro-batch size (``micro_batch_open``: the sizes it leaves open, the typed one
    among them): each size's error (predicted / measured − 1) where the model counts that layout within the GPU's
    memory, else None (it would not have run so), by size as text (JSON's keys)."""
    out = {}
    for size in source["micro_batch_open"]:
        q = modern.inputs({**source, "micro_batch": size}).quantities(**constants)
        fits = not capacity or float(q["memory_per_gpu"]) <= capacity
        out[str(size)] = _rounded(float(q["step_time"]) / measured - 1) if fits else None
    return out


#: a paper run's assumed values (its data's "assumed" notes begin with the value's name) on which the in-flight
#: activations the memory count holds depend
IN_FLIGHT_ASSUMED = ("v = ", "micro_batch = ")


def over_row(run_id: str, source: dict, system: str, role: str, counted: float, capacity: float,
             framework: str = "") -> dict:
    """A published run the model counts over its GPU's memory: it ran, so its peak fit in ``capacity`` bytes and the
    count exceeds it by at least ``over`` (counted / capacity - 1), unless the run's layout is in doubt (its data
    says the table differs from its recipe, or a paper's run assumes the chunks per pipeline rank or the micro-batch
    its source does not print: the in-flight activations the count holds follow both) or it does what the model does
    not count.  ``source``: the run's data (its first row's, for a layout measured in several); ``framework``: its
    framework option (eval's framework=)."""
    doubt = ("TABLE DIFFERS FROM RECIPE" in source.get("recipe", "")
             or any(note.startswith(IN_FLIGHT_ASSUMED) for note in source.get("assumed", ())))
    return {"id": run_id, "hardware": system, "role": role, "framework_option": framework,
            "predicted_gib": _rounded(counted / GIB),
            "gpu_gib": _rounded(capacity / GIB), "over": _rounded(counted / capacity - 1),
            "layout_in_doubt": doubt}


def fit_systems() -> list[str]:
    """The hardware presets with modern fitting runs in the step model's scope."""
    return sorted({r["hardware"] for r in modern.runs("fit") if modern.out_of_scope(r) is None})


def check_systems() -> list[str]:
    """The hardware presets with check runs: the papers' and the modern ones in the step model's scope."""
    return sorted({r["hardware"] for r in published.runs(role="check") if published.has_step_time(r)}
                  | {r["hardware"] for r in modern.runs("check") if modern.out_of_scope(r) is None})


def known_causes() -> dict:
    """Every modern run in the step model's scope whose data records why it disagrees with the model
    (:func:`modern.known_cause`): run id → its hardware, role and cause.  Shown beside its error, never fitted
    apart: the run keeps its role."""
    return {r["id"]: {"hardware": r["hardware"], "role": r["role"], "cause": modern.known_cause(r)}
            for r in modern.runs() if modern.out_of_scope(r) is None and modern.known_cause(r)}


def checks(constants: dict) -> dict:
    """step_fit.json's check parts: per hardware preset with check runs, the constants used (``constants``:
    system → constants, the fit's where it just ran, else the stored ones of symcomm/presets/hardware.json,
    which a preset without runs of its own borrows: ``constants_from``) and its check rows; every printed
    memory against the model's (:func:`check_rows`); and the runs with a known cause of disagreement
    (:func:`known_causes`: data, so --checks-only refreshes them too)."""
    stored = json.loads(HARDWARE_JSON.read_text(encoding="utf-8"))["systems"]
    out, memory, over = {}, [], []
    for system in check_systems():
        source = stored[system].get("step_time", {}).get("borrowed_from", system)
        # a fit just run gives its own constants, and those a preset borrows from it (the process's presets still
        # hold the constants read before the fit)
        used = constants.get(system) or constants.get(source) or dict(published.hardware(system).step_time)
        if source != system:
            # the lender's widths are its datasheet's roofline: this preset's run binding gives its own (at the peak
            # each run is typed at: Hardware.own_roofline), so they are not passed over it
            used = {k: v for k, v in used.items() if k not in ROOFLINE_HELD}
        rows, mem = check_rows(system, used, over=over)
        out[system] = {"constants": {k: _rounded(v) for k, v in used.items()}, "constants_from": source, "runs": rows}
        memory += mem
    regressions = {}
    for system in sorted({r["hardware"] for r in modern.runs("regression") if modern.out_of_scope(r) is None}):
        used = constants.get(system) or dict(published.hardware(system).step_time)
        regressions[system] = check_rows(system, used, "regression", over=over)[0]
    for system in fit_systems():
        used = constants.get(system) or dict(published.hardware(system).step_time)
        check_rows(system, used, "fit", over=over)       # the fitting runs' memory: the rows are the fit's own
    over.sort(key=lambda r: (-r["over"], r["id"]))
    return {"checks": out, "memory": memory, "known_causes": known_causes(), "regressions": regressions,
            "ran_over": over}


def check_errors(checked: dict) -> dict:
    """The check runs' errors (``checked``: :func:`checks`' "checks" part) per preset whose constants predicted
    them (``constants_from``) and per framework option (eval's ``framework=``): mean, max, signed mean, runs, and
    the hardware presets they ran on.  What a preset's ``step_time.checks`` holds, so that eval and plan say how far
    these constants were off on runs never fitted on, beside the fit's own leave-one-out error."""
    grouped: dict = {}
    for system, found in checked.items():
        for row in found["runs"]:
            by_framework = grouped.setdefault(found["constants_from"], {})
            by_framework.setdefault(row["framework_option"], []).append((system, row["error"]))
    return {source: {framework: {**_errors(step_fit.Errors.of([e for _, e in pairs])),
                                 "hardware": sorted({system for system, _ in pairs})}
                     for framework, pairs in sorted(by_framework.items())}
            for source, by_framework in sorted(grouped.items())}


def store_check_errors(presets: dict, checked: dict) -> dict:
    """``presets`` (hardware.json's document) with each fitted preset's ``step_time.checks`` set from ``checked``
    (:func:`check_errors`), and dropped where no check run used its constants; and its ``checked_precisions``, the
    precision recipes those runs ran."""
    precisions: dict = {}
    for found in checked.values():
        for row in found["runs"]:
            precisions.setdefault(found["constants_from"], set()).add(row["precision_option"])
    presets = _stored_per_preset(presets, "checked_precisions", {k: sorted(v) for k, v in precisions.items()})
    return _stored_per_preset(presets, "checks", check_errors(checked))


def _stored_per_preset(presets: dict, key: str, errors: dict) -> dict:
    """``presets`` with each preset's own fitted ``step_time`` block's ``key`` set to its entry of ``errors``
    (preset → errors), dropped where it has none; a block borrowing another's constants is left as it is."""
    for name, system in presets["systems"].items():
        block = system.get("step_time", {})
        if "borrowed_from" in block or "eta" not in block:
            continue
        block.pop(key, None)
        if name in errors:
            block[key] = errors[name]
    return presets


def model_errors(fitted: dict, checked: dict) -> dict:
    """The errors of each fitted preset's constants on the published runs of one model preset, per framework option:
    its fitted runs left out one at a time (``fitted``: step_fit.json's "systems" part, each run's ``loo_error``: the
    run predicted by the constants fitted without it) and the check runs its constants predicted (``checked``: the
    "checks" part, by ``constants_from``).  preset → model → framework → lowest, highest, signed mean, runs, how many
    of them were fitted on, the hardware presets they ran on.  What a preset's ``step_time.models`` holds, so that eval
    and plan say how far these constants were off on the model asked for, where its own runs were measured.  Runs of
    a model typed by its shape (no preset) are not counted: eval names no model for them."""
    about = {}                      # run id → (its model preset, its framework option)
    for run in modern.runs():
        preset = modern.preset_of(run)
        if preset:
            options = dict(word.split("=", 1) for word in modern.words(run))
            about[run["id"]] = (preset, options.get("framework", OPTIONS["framework"].default))
    grouped: dict = {}

    def add(source: str, run_id: str, system: str, error: float, fitted_on: bool) -> None:
        found = about.get(run_id.split("+")[0])
        if found:
            grouped.setdefault(source, {}).setdefault(found[0], {}).setdefault(found[1], []).append(
                (system, error, fitted_on))

    for system, block in fitted.items():
        for row in block.get("runs", ()):
            add(system, row["id"], system, row["loo_error"], True)
    for system, found in checked.items():
        for row in found["runs"]:
            add(found["constants_from"], row["id"], system, row["error"], False)
    return {source: {model: {framework: {"lowest": min(e for _, e, _ in rows), "highest": max(e for _, e, _ in rows),
                                         "signed_mean": _rounded(sum(e for _, e, _ in rows) / len(rows)),
                                         "runs": len(rows), "fitted": sum(f for *_, f in rows),
                                         "hardware": sorted({system for system, *_ in rows})}
                             for framework, rows in sorted(frameworks.items())}
                     for model, frameworks in sorted(models.items())}
            for source, models in sorted(grouped.items())}


def store_model_errors(presets: dict, fitted: dict, checked: dict) -> dict:
    """``presets`` (hardware.json's document) with each fitted preset's ``step_time.models`` set from its fitted and
    check runs (:func:`model_errors`), and dropped where none ran a model preset."""
    return _stored_per_preset(presets, "models", model_errors(fitted, checked))


def memory_check_errors(memory: list[dict]) -> dict:
    """The memory rows' errors (:func:`check_rows`' second part: the model's bytes per GPU against the peak a source
    prints) per framework option: mean, max, signed mean, the lowest and the highest signed error, runs, the hardware
    presets they ran on.  What hardware.json's ``memory_checks`` holds, so that eval says how far its memory verdict
    may be off (one table for every GPU: the memory model counts bytes, the same on each)."""
    grouped: dict = {}
    for row in memory:
        grouped.setdefault(row["framework_option"], []).append(row)
    return {framework: {**_errors(step_fit.Errors.of([r["error"] for r in rows])),
                        "lowest": min(r["error"] for r in rows), "highest": max(r["error"] for r in rows),
                        "hardware": sorted({r["hardware"] for r in rows})}
            for framework, rows in sorted(grouped.items())}


def store_memory_errors(presets: dict, memory: list[dict], ran_over: list[dict] = ()) -> dict:
    """``presets`` (hardware.json's document) with its ``memory_checks`` set from the memory rows
    (:func:`memory_check_errors`), and dropped where no source prints a memory; and its ``memory_ran_over`` from the
    runs that ran though the model counts them over their GPU's memory (:func:`over_row`), those whose layout is in
    doubt left out, dropped where there is none."""
    presets.pop("memory_checks", None)
    presets.pop("memory_ran_over", None)
    if memory:
        presets["memory_checks"] = memory_check_errors(memory)
    sure = [r for r in ran_over if not r["layout_in_doubt"]]
    if sure:
        # one unit of the rows' sixth significant digit up (each row's excess is rounded to it, below 1 an error of at
        # most 5e-7): the run that sets it falls inside the band it sets
        highest = _rounded(max(r["over"] for r in sure) + 1e-6)
        presets["memory_ran_over"] = {"highest": highest, "runs": len(sure),
                                      "hardware": sorted({r["hardware"] for r in sure}),
                                      "frameworks": sorted({r["framework_option"] for r in sure})}
    return presets


def _write_presets(presets: dict) -> None:
    HARDWARE_JSON.write_text(json.dumps(presets, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def write_checks_only() -> dict:
    """Recompute step_fit.json's check, memory, known-cause, regression and out-of-scope parts with the stored constants,
    without refitting; every other part of the file stays as it is, and the presets' check errors (``step_time.checks`` and
    ``step_time.models`` of symcomm/presets/hardware.json) with them.  Returns the parts written."""
    data = json.loads(RESULTS_JSON.read_text(encoding="utf-8"))
    parts = checks({})
    data.update(parts, out_of_scope=out_of_scope())
    files.write_file(RESULTS_JSON, json.dumps(data, indent=1, ensure_ascii=False, allow_nan=False) + "\n",
                     what="step_fit.json")
    presets = store_check_errors(json.loads(HARDWARE_JSON.read_text(encoding="utf-8")), parts["checks"])
    presets = store_model_errors(presets, data["systems"], parts["checks"])
    _write_presets(store_memory_errors(presets, parts["memory"], parts["ran_over"]))
    return parts


def over_summary(rows: list[dict]) -> str:
    """How many published runs that ran the model counts over their GPU's memory, and by how much, one line."""
    sure = [r for r in rows if not r["layout_in_doubt"]]
    if not sure:
        return "no published run that ran is counted over its GPU's memory"
    runs = "1 published run" if len(sure) == 1 else f"{len(sure)} published runs"
    return (f"counted over their GPU's memory, though they ran: {runs}, by up to "
            f"{100 * max(r['over'] for r in sure):.1f} % (and {len(rows) - len(sure)} whose layout is in doubt)")


def memory_summary(rows: list[dict]) -> str:
    """mean |error|, max |error| and signed mean of the memory rows, one line."""
    if not rows:
        return "no run prints its memory"
    e = [r["error"] for r in rows]
    return (f"{len(e)} runs: mean |error| {100 * sum(map(abs, e)) / len(e):.1f} %, max {100 * max(map(abs, e)):.1f} %, "
            f"signed mean {100 * sum(e) / len(e):+.1f} %")


def results(fits: dict, kept: dict) -> dict:
    """What --write stores in RESULTS_JSON: per hardware preset its constants, errors in sample and left one
    out (all runs, per source, per framework), the fitted runs' rows, the check runs' rows, the modern runs
    out of the step model's scope and those in scope that do not evaluate, with their reasons."""
    out = {"_convention": ("written by python -m symcomm.derivations.fit_step_time --write (checks and memory also "
                           "by --checks-only, with the stored constants); errors are predicted / measured - 1 "
                           "(positive: the model is slower or larger), ratios; seconds per step; memory in GiB "
                           "(2^30 B): published as printed (torchtitan: the allocator's peak reserved bytes; "
                           "KempnerForge: its peak allocated bytes), "
                           "predicted memory_per_gpu of eval hybrid; 6 significant digits; known_causes: the runs whose data "
                           "records why they disagree with the model, each in its role; regressions: per hardware, the "
                           "rows published as regressions (role regression: neither fitted nor checked), predicted "
                           "with that hardware's constants"), "systems": {}}
    for system, f in fits.items():
        found = f["fit"]
        out["systems"][system] = {
            "constants": {k: _rounded(v) for k, v in found.constants.items()}, "fitted": list(found.fitted),
            "held": dict(found.held), "in_sample": _errors(found.in_sample),
            "leave_one_out": _errors(found.leave_one_out),
            "spans": {name: [_rounded(low), _rounded(high)] for name, (low, high) in found.spans.items()},
            "groups": {f"{key} {label}": {"in_sample": _errors(i), "leave_one_out": _errors(o)}
                       for key in ("source", "framework") for label, (i, o) in found.by(key).items()},
            "runs": [{k: (_rounded(v) if isinstance(v, float) else v) for k, v in r.as_dict().items()}
                     for r in found.rows],
            "not_evaluated": dict(sorted(f["not_evaluated"].items()))}
    for system, why in kept.items():
        out["systems"][system] = {"not_refitted": why}
    out.update(checks({system: f["fit"].constants for system, f in fits.items()}))
    out["out_of_scope"] = out_of_scope()
    return out


def out_of_scope() -> dict:
    """Every modern run the step model cannot evaluate, id → why (data alone: --checks-only refreshes it too)."""
    return {r["id"]: modern.out_of_scope(r) for r in modern.runs() if modern.out_of_scope(r)}


def fitting_runs(system: str) -> tuple[list, dict]:
    """(the runs marked "fit" of one hardware preset, as the fitting core reads them: the papers' runs
    (:func:`published.measured_runs`) and the modern runs in the step model's scope (:mod:`modern`, bound by
    eval hybrid's own binding); run id → why a modern run in scope does not evaluate, e.g. a setting this
    build of the step model does not take: left out of the fit, and said)."""
    runs = published.measured_runs(system, role="fit")
    modern_runs, not_evaluated = modern.measured_runs(system, "fit")
    runs += modern_runs
    return runs, not_evaluated


#: w_half is not fitted: it is held at the additive roofline's value from the datasheet (peak and HBM bandwidth).
#: Fitted free, it pairs with eta_fp8 on the dense FP8 fitting runs (eta_fp8 ~ 1 with w_half ~ 2,000 fits them as
#: well as eta_fp8 ~ 0.6 with the roofline's 295 on H100): the runs do not determine it, and the large value
#: halves every dense bf16 GEMM of width ~1,300, 20-45 % too slow on Megatron-LM's H100 table.  The experts'
#: grouped GEMMs are held on the same curve (w_half_expert = w_half) for the same reason: fitted free (1,966 on H100)
#: it priced every expert GEMM of width ~1,500 at 43 % of eta, Grok-1's 2,048 x 6,144 x 65,536 among them (+74 % on
#: its dgxc H100 row), where what the fine-grained MoE runs spend beyond their GEMMs grows with the routed token
#: copies, not with a GEMM's width: kappa_moe's passes over them (symcomm.training.compute.routed_bytes).
# (roofline_w_half: symcomm.presets.hardware_values, where a preset borrowing these constants takes its own)


@dataclass(frozen=True)
class PublishedGemm:
    """A published throughput of one large GEMM on a preset's part (``constant``: the share it informs, eta).
    ``tflops`` as printed, for the (M × K)·(K × N) GEMM of ``m``, ``n``, ``k``, against the datasheet peak of
    ``dtype``; ``source`` says where it is printed."""
    constant: str
    dtype: str
    tflops: float
    m: int
    n: int
    k: int
    source: str


_MAMF = ("stas00/ml-engineering compute/accelerator/README.md (commit 744d01e1), section 'Maximum Achievable Matmul "
         "FLOPS comparison table', BF16 (the mean of 100 iterations after 50 warm-up ones at the best shape a search "
         "over shapes found, torch.matmul)")

#: the maximum achievable bf16 matmul throughput (MAMF) of each part, one table measured by one tool: what holds eta
#: where the named fitting runs leave it undetermined (:func:`transferred_eta`), and, on A100, where they fit it, the
#: ratio that carries a training share over.  Shapes as the table prints them (M x N x K).
MAMF_BF16 = {
    "a100": PublishedGemm("eta", "bf16", 271.2, 1024, 10240, 5120, _MAMF + ": NVIDIA A100 SXM 271.2 TFLOPS at "
                          "1024 x 10240 x 5120 (torch 2.6.0+cu126)"),
    "h100": PublishedGemm("eta", "bf16", 794.5, 2048, 2048, 13312, _MAMF + ": NVIDIA H100 SXM 794.5 TFLOPS at "
                          "2048 x 2048 x 13312 (torch 2.7.0+cu126)"),
    "b200": PublishedGemm("eta", "bf16", 1745.0, 1792, 16128, 3072, _MAMF + ": NVIDIA B200 SXM 1745.0 TFLOPS at "
                          "1792 x 16128 x 3072 (torch 2.7.1+cu128)"),
    "gb200": PublishedGemm("eta", "bf16", 1822.0, 4096, 9728, 2048, _MAMF + ": NVIDIA GB200 SXM 1822.0 TFLOPS at "
                           "4096 x 9728 x 2048 (torch 2.10.0.dev20250916+cu130)"),
}
#: the part whose named runs determine eta (bf16 dense runs: Narayanan et al. 2021 and Korthikanti et al. 2022 on
#: A100): its fitted eta over its MAMF's share, through the same curve, is the share of a lone matmul's best rate that
#: a training step's matmuls sustain (launch gaps, communication kernels beside them, a long run's clocks: what a
#: kernel benchmark leaves out and the fitted eta holds).  H100, B200 and GB200's named runs are FP8 but for
#: GPT-OSS-120B's bf16 rows (an MoE whose dense bf16 GEMMs are a small part of its step): they leave eta undetermined
#: (H100: mean |error| 16.3 % at 0.6, 14.9 % at 0.89 over its runs, the others refitted), so there it is held at that
#: part's MAMF through the curve times the same ratio.  (The fit on A100 runs first and hands its eta on.)
TRAINING_REFERENCE = "a100"


def published_eta(gemm: PublishedGemm, peak: float, half_width: float) -> float:
    """The large-shape share ``gemm.constant`` its published throughput gives through the step model's own curve
    (symcomm.training.compute.efficiency: share of peak = eta * w/(w + w_half), w = MNK/(MK + KN + MN)):
    eta = (measured/peak) * (w + w_half)/w, with w_half the held roofline value."""
    width = compute.Gemm("published", sp.Integer(gemm.m), sp.Integer(gemm.k), sp.Integer(gemm.n)).width
    curve = compute.efficiency(width, sp.Integer(1)).subs(symbols.w_half, half_width)
    return gemm.tflops * 1e12 / peak / float(curve)


def _mamf_eta(system: str) -> float:
    """eta a part's MAMF gives through the model's curve (:func:`published_eta` at its roofline w_half): a lone
    matmul's share, which may exceed 1 where the curve is harsher than the kernel on the best shape's narrow side."""
    hw = published.hardware(system)
    return published_eta(MAMF_BF16[system], hw.peak("bf16"), roofline_w_half(hw.peak("bf16"), hw.hbm_bytes_per_second))


def transferred_eta(system: str, reference_eta: float) -> tuple[float, str]:
    """(eta, why) for a part whose named runs leave eta undetermined: its MAMF through the curve times the training
    ratio of :data:`TRAINING_REFERENCE` (its fitted ``reference_eta`` over its MAMF through the curve)."""
    own, reference = _mamf_eta(system), _mamf_eta(TRAINING_REFERENCE)
    ratio = reference_eta / reference
    eta = round(own * ratio, 4)
    gemm, ref = MAMF_BF16[system], MAMF_BF16[TRAINING_REFERENCE]
    return eta, (f"held at {eta:g}, not fitted (the runs leave it undetermined): this part's maximum achievable bf16 "
                 f"matmul, {gemm.tflops:g} TFLOP/s at {gemm.m} x {gemm.n} x {gemm.k}, through the model's curve "
                 f"({own:.4f}), times the share of that a training step sustains on "
                 f"{TRAINING_REFERENCE}: its fitted eta {reference_eta:g} over its own maximum, {ref.tflops:g} TFLOP/s "
                 f"at {ref.m} x {ref.n} x {ref.k} through the curve ({reference:.4f}), "
                 f"{ratio:.4f} ({gemm.source}; {ref.source.split(': ', 1)[1]})")


#: the part whose named runs determine eta_fp4 (GB200's NVFP4 rows: Llama 3 70B, Llama 3.1 405B, Nemotron 3 Super).
#: B200 is the same Blackwell GPU (in an HGX B200 baseboard rather than beside a Grace CPU) with one NVFP4 run, which
#: alone cannot determine its eta_fp4: there the FP4 share is held at this part's FP4-over-FP8 ratio times its own
#: fitted eta_fp8 (:func:`transferred_eta_fp4`), so that eval answers NVFP4 there and the run, left out of the fit,
#: is predicted by constants it did not set.
FP4_REFERENCE = "gb200"

#: part → the part with the same GPU whose stored kappa it holds where its own runs leave kappa undetermined (a free
#: fit at its range's edge, as good at the held value): its own stored kappa would be its last fit's output, an edge
#: held again fit after fit (GB200's 20, the top of the range, timed its memory-bound work 3.3 times B200's 6 on the
#: same Blackwell GPU, whose HBM runs at 8 TB/s in both).  B200's runs determine it (fitted).
KAPPA_FROM = {"gb200": "b200"}


def transferred_eta_fp4(system: str, own_eta_fp8: float, reference: dict) -> tuple[float, str]:
    """(eta_fp4, why) for a part whose named runs leave eta_fp4 undetermined: ``own_eta_fp8`` (its fit without the
    run that alone reads eta_fp4) times :data:`FP4_REFERENCE`'s fitted eta_fp4 over its fitted eta_fp8
    (``reference``: its constants).  The ratio carries over what NVFP4's kernels (Transformer Engine's NVFP4 GEMMs,
    their 1D/2D block scaling and random Hadamard transforms) keep of their peak against MXFP8's on the same die."""
    ratio = reference["eta_fp4"] / reference["eta_fp8"]
    eta = round(own_eta_fp8 * ratio, 4)
    return eta, (f"held at {eta:g}, not fitted (one run alone reads it): this part's fitted eta_fp8 {own_eta_fp8:g} "
                 f"(fitted without that run) times {FP4_REFERENCE}'s fitted eta_fp4 over eta_fp8, "
                 f"{reference['eta_fp4']:g} / {reference['eta_fp8']:g} = {ratio:.4f} (the same Blackwell GPU, its "
                 f"NVFP4 share fitted on {FP4_REFERENCE}'s NVFP4 runs)")


def stored_fp4_reference() -> dict:
    """:data:`FP4_REFERENCE`'s stored constants (symcomm/presets/hardware.json): what :func:`fit` carries over when
    the reference is not fitted in the same run."""
    return dict(published.hardware(FP4_REFERENCE).step_time)


def stored_reference_eta() -> float:
    """The reference part's stored fitted eta (symcomm/presets/hardware.json): what :func:`fit` carries over when the
    reference is not fitted in the same run."""
    return float(dict(published.hardware(TRAINING_REFERENCE).step_time)["eta"])


def fit(system: str, reference_eta: float | None = None, fp4_reference: dict | None = None) -> dict:
    """The fit of one hardware preset: its constants by name, ``fitted_on`` (the run ids), the in-sample
    ``mean_error`` and ``max_error`` (ratios), ``fit`` (the :class:`step_fit.StepFit`) and ``not_evaluated``
    (:func:`fitting_runs`); InputError when its runs cannot fit the constants.  ``reference_eta``: the eta of
    :data:`TRAINING_REFERENCE` a part without its own carries over (default: the stored one); ``fp4_reference``:
    the constants of :data:`FP4_REFERENCE` whose FP4-over-FP8 ratio a part with one NVFP4 run carries over (default:
    the stored ones)."""
    runs, not_evaluated = fitting_runs(system)
    if not runs:
        raise InputError(f"no run marked for fitting on {system} evaluates"
                         + (f" ({len(not_evaluated)} in scope do not: {next(iter(not_evaluated.values()))[:120]})"
                            if not_evaluated else ""))
    hw = published.hardware(system)
    # constants not fitted where a published figure gives them: w_half (the additive roofline from the datasheet's
    # peak and HBM bandwidth), eta where the runs leave it undetermined (MAMF_BF16, transferred_eta) and
    # eta_attn where the hardware publishes its fused-attention share (the named runs leave it at its range's edge,
    # 1.0 of peak on H100: a kernel benchmark beats a degenerate fit)
    published_attention = hw.published_attention()
    base = {**dict(hw.step_time), **published_attention}
    if system != FP4_REFERENCE:
        # a stored eta_fp4 off the reference is the last fit's transfer (transferred_eta_fp4), not a value of the part:
        # the fit starts without it, as the first did, or it would hold its own output and take the run in
        base.pop("eta_fp4", None)
    # a stored kappa_moe is the last fit's output too, and no datasheet gives it: each fit starts without it (a part
    # with no MoE run leaves it out, read as 0 and said where a setting reads it: Hardware.unchecked)
    base.pop("kappa_moe", None)
    if system in KAPPA_FROM:
        base["kappa"] = dict(published.hardware(KAPPA_FROM[system]).step_time)["kappa"]
    hold = {}         # held constant → why
    if hw.hbm_bytes_per_second:
        base["w_half"] = roofline_w_half(hw.peak("bf16"), hw.hbm_bytes_per_second)
        hold["w_half"] = (f"held at the additive roofline's value peak x 2 bytes / (2 x HBM bandwidth) = "
                          f"{base['w_half']:g}, not fitted (the runs pair it with eta_fp8: not determined)")
        base["w_half_expert"] = base["w_half"]
        hold["w_half_expert"] = (f"held at w_half, {base['w_half']:g}: an expert's GEMM on the dense GEMMs' roofline "
                                 "curve; what an MoE layer spends beyond its GEMMs is kappa_moe's")
    if system in MAMF_BF16 and system != TRAINING_REFERENCE:
        base["eta"], hold["eta"] = transferred_eta(
            system, stored_reference_eta() if reference_eta is None else reference_eta)
    if published_attention:
        hold["eta_attn"] = (f"held at the hardware's published fused-attention share {base['eta_attn']:g} "
                            "(attention_source), not fitted")
    said = ({"kappa": f"{KAPPA_FROM[system]}'s fitted kappa {base['kappa']:g} (the same GPU; KAPPA_FROM)"}
            if system in KAPPA_FROM else {})
    found = step_fit.fit(runs, base, hold, base_said=said)
    left_out, carried = dict(found.left_out), {}
    lone_fp4 = [run for run in runs if left_out.get(run.id) == step_fit.sole_reason("eta_fp4")]
    if lone_fp4 and system != FP4_REFERENCE and "eta_fp8" in found.constants:
        # the run that alone reads eta_fp4 stays out of the fit (it would set the share it is judged by, and move
        # the others' optimum) and is predicted at the share the reference part's ratio gives: a run no constant
        # was fitted on, its error said beside why it is out
        eta_fp4, why = transferred_eta_fp4(
            system, found.constants["eta_fp8"], stored_fp4_reference() if fp4_reference is None else fp4_reference)
        found = replace(found, constants={**found.constants, "eta_fp4": eta_fp4},
                        held={**found.held, "eta_fp4": why})
        for run in lone_fp4:
            error = step_fit.errors_at([run], found.constants).signed_mean
            carried[run.id] = (f"predicted at the held eta_fp4 {eta_fp4:g}: {run.measured_s * (1 + error):.3g} s "
                               f"against {run.measured_s:.3g} s measured, {100 * error:+.1f} %")
            left_out[run.id] += "; " + carried[run.id]
        found = replace(found, left_out=left_out)
    # what the runs determine of each fitted constant (the docs' table of spans; calibrate-step's own rule)
    found = replace(found, spans=step_fit.spans(runs, found))
    return {**found.constants, "fitted_on": [row.id for row in found.rows], "mean_error": found.in_sample.mean,
            "max_error": found.in_sample.max, "fit": found, "not_evaluated": {**not_evaluated, **found.left_out},
            "carried": carried}


def systems() -> list[str]:
    """The hardware presets with runs marked "fit": the papers' and the modern ones in scope."""
    return sorted({r["hardware"] for r in published.runs(role="fit")}
                  | {r["hardware"] for r in modern.runs("fit") if modern.out_of_scope(r) is None})


def _line(label: str, inside: step_fit.Errors, out: step_fit.Errors) -> str:
    return (f"  {label:<44} {inside.runs:>3} runs  in-sample mean {100 * inside.mean:5.1f} %, max "
            f"{100 * inside.max:5.1f} %, signed {100 * inside.signed_mean:+5.1f} %;  leave-one-out mean "
            f"{100 * out.mean:5.1f} %, max {100 * out.max:5.1f} %, signed {100 * out.signed_mean:+5.1f} %")


def report(fits: dict) -> list[str]:
    """The printed fit: per hardware preset its constants (and what held the others), then its errors in
    sample and left one out, per source and per framework."""
    lines = []
    for system, f in fits.items():
        found = f["fit"]
        shown = ", ".join(f"{k} = {v:g}" for k, v in found.constants.items())
        lines.append(f"{system}: {shown} (fitted: {', '.join(found.fitted) or 'none'})")
        for name, why in found.held.items():
            lines.append(f"  {name}: {why}")
        if f["not_evaluated"]:
            first = next(iter(f["not_evaluated"].items()))
            lines.append(f"  {len(f['not_evaluated'])} modern runs marked fit are left out of the fit "
                         f"(first: {first[0]}: {first[1][:160]})")
        lines.append(_line("all runs", found.in_sample, found.leave_one_out))
        for key in ("source", "framework"):
            for label, (inside, out) in found.by(key).items():
                lines.append(_line(f"{key} {label}"[:44], inside, out))
    return lines


def _carried(found: dict) -> str:
    """What a preset's source sentence adds for an eta_fp4 carried over (:func:`transferred_eta_fp4`): that it was not
    fitted, from what, and how far off the one run that reads it is (eval prints the sentence beside the constants)."""
    if "eta_fp4" not in found["fit"].held or "eta_fp4" not in found["fit"].constants:
        return ""
    said = list(found.get("carried", {}).values())
    return (f"; eta_fp4 {found['fit'].constants['eta_fp4']:g} not fitted (one run alone reads it): this part's eta_fp8 "
            f"times {FP4_REFERENCE}'s fitted eta_fp4 over eta_fp8, the same GPU; that run, left out of the fit, "
            + ("; ".join(said) if said else "not evaluated"))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="store the fit in symcomm/presets/hardware.json")
    parser.add_argument("--checks-only", action="store_true",
                        help="no fit: recompute the check runs' and the memory rows of derivations/data/step_fit.json "
                             "with the stored constants (a few seconds per run)")
    args = parser.parse_args(argv)
    if args.checks_only:
        if args.write:
            parser.error("--checks-only writes the check parts alone; --write refits and writes everything: give one")
        parts = write_checks_only()
        for system, found in parts["checks"].items():
            if not found["runs"]:
                continue
            line = f"{system} (constants of {found['constants_from']}): " + step_fit.Errors.of(
                [r["error"] for r in found["runs"]]).sentence()
            if any("error_low_peak" in r for r in found["runs"]):   # a bounded peak: its low end too
                line += "; at the low end of its peak " + step_fit.Errors.of(
                    [r.get("error_low_peak", r["error"]) for r in found["runs"]]).sentence()
            line += open_words(found["runs"])
            print(line)
        print("memory per GPU against the printed: " + memory_summary(parts["memory"]))
        print(over_summary(parts["ran_over"]))
        return 0
    fits, kept = {}, {}
    # the references first: A100 hands its eta on, GB200 its FP4-over-FP8 ratio
    for system in sorted(systems(), key=lambda name: (name != TRAINING_REFERENCE, name != FP4_REFERENCE, name)):
        try:
            fits[system] = fit(system, fits[TRAINING_REFERENCE]["eta"] if TRAINING_REFERENCE in fits else None,
                               fits[FP4_REFERENCE] if FP4_REFERENCE in fits else None)
        except InputError as err:     # too few runs to fit and to leave one out: the stored constants stay
            kept[system] = str(err)
    fits = dict(sorted(fits.items()))
    print("\n".join(report(fits)))
    for system, why in kept.items():
        stored = dict(published.hardware(system).step_time)
        runs = fitting_runs(system)[0]
        if not runs:
            print(f"{system}: not fitted ({why}); its stored constants stay")
            continue
        runs = [r for r in runs if "eta_fp8" in stored or r.inputs.options.get("precision", "bf16") == "bf16"]
        if not runs:
            print(f"{system}: not refitted ({why}); its stored constants have no eta_fp8 for its FP8 runs")
            continue
        inside = step_fit.errors_at(runs, stored)
        shown = ", ".join(f"{k} = {v:g}" for k, v in stored.items())
        print(f"{system}: not refitted ({why}); its stored {shown} give over its {inside.runs} runs mean |error| "
              f"{100 * inside.mean:.1f} %, max {100 * inside.max:.1f} %, signed {100 * inside.signed_mean:+.1f} % "
              "(no leave-one-out)")
    if args.write:
        written = results(fits, kept)
        data = json.loads(HARDWARE_JSON.read_text(encoding="utf-8"))
        for system, f in fits.items():
            found = f["fit"]
            inside, out = found.in_sample, found.leave_one_out
            data["systems"][system]["step_time"] = {
                **found.constants, "fitted_on": f["fitted_on"], "fitted": list(found.fitted), "held": dict(found.held),
                "frameworks": list(found.frameworks), "precisions": list(found.precisions),
                "errors": {"in_sample": inside.as_dict(), "leave_one_out": out.as_dict()},
                # which constants the runs fitted and which are held (each with its why in "held"): a reader of
                # eval's constants line must not take a held eta for a fitted one
                "source": (f"fitted: {', '.join(found.fitted) or 'none'}; held: {', '.join(found.held) or 'none'} "
                           f"(step_time.held says why); on {len(f['fitted_on'])} published runs (fitted_on; derivations/data/"
                           f"published_runs.json, bridge_runs_*.json, torchtitan_runs.json) by python -m "
                           f"symcomm.derivations.fit_step_time: mean |error| "
                           f"{100 * inside.mean:.1f} %, max {100 * inside.max:.1f} %; leave-one-out mean "
                           f"{100 * out.mean:.1f} %, max {100 * out.max:.1f} %" + _carried(f))}
        data = store_model_errors(store_check_errors(data, written["checks"]), written["systems"], written["checks"])
        _write_presets(store_memory_errors(data, written["memory"], written["ran_over"]))
        RESULTS_JSON.write_text(json.dumps(written, indent=1, ensure_ascii=False, allow_nan=False) + "\n",
                                encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
