"""A plan as the command shows it: text, JSON (seconds, bytes) and CSV, and the assumptions it states."""

from __future__ import annotations

import csv
import io

from ..base.units import bytes_per_element, human_size, human_time
from ..presets import memory_band_words, model as preset_model, step_error_words
from ..presets.fit_errors import band_measures, fits_over_error, memory_error
from ..presets.hardware_values import TYPED_CONSTANTS, datasheet_moved, dtype_measured, memory_uncounted
from ..training import frameworks as _frameworks
from ..training.megatron_features import straddle_note
from .fold import Plan
from .request import COMPARE_KEYS, MICRO_BATCH_SEARCH, Request, checked_memory, expert_tp_run

ASSUMPTIONS = (
    "ranked by the step time of symcomm's step-time model (symcomm.training.steptime; one optimizer step: forward + "
    "backward of the global batch in m micro-batches per data-parallel replica, then the optimizer): the busiest "
    "stage's matmuls at peak × η and its memory-bound kernels (κ HBM passes over the stored activations, fused as "
    "Transformer Engine's, LLM Foundry's kernels or torch.compile run them, but under fsdp2, torchtitan's default "
    "compile=false, whose dense blocks run their norms, rotary and SwiGLU op by op: eval's compile=1 prices a "
    "compiled one, the fsdp rows' time); its tp, "
    "cp, ep and pp communication exposed between the GEMMs; (m + (p − 1)/v) pipeline slots (v model chunks per "
    "stage, interleaved; v = 1: 1F1B; Megatron's pipeline sends hidden behind the compute when interleaved); the "
    "data-parallel communication overlapped as each framework does by default (symcomm.training.overlap: "
    "reductions behind the backward for FSDP, FSDP2, Megatron-FSDP and DeepSpeed ZeRO-3, not for Megatron's "
    "DDP and distributed optimizer, whose post-step all-gather is exposed; FSDP2 and Megatron-FSDP per layer: "
    "the first gather, the last reduce-scatter and every collective's latency exposed); Adam memory-bound at "
    "the HBM bandwidth; η, κ and the other constants fitted per system on published runs where they determine "
    "them, held otherwise (the hardware preset says which and why); flash attention; "
    "no tensor-parallel comm-GEMM overlap (userbuffers, async TP) and no expert all-to-all overlap, but Megatron's "
    "column-parallel linears' two backward collectives each beside its GEMM (tp_backward_overlap, its default); "
    "hidden communication not free: the compute a collective runs beside runs 18.9 % slower while it does (Lee et al. "
    "2025, arXiv:2507.03114, the published mean), so 0.159 (0.189/1.189) of every hidden second is on the path",
    "columns: step; tokens/s = batch · seq / step; MFU = model FLOPs (matmuls, the attention core over the full "
    "s × s as Narayanan et al. count it, where Megatron-LM's own count takes causal attention at half "
    "(megatron/training/training.py, num_floating_point_operations); 3 × forward, whatever is recomputed) / "
    "(step · GPUs · peak), peak the bf16 dense peak under an FP8 or FP4 recipe too (with --dtype fp8, a bf16 recipe timed at the FP8 peak, that FP8 peak); causal = the same MFU with causal attention counted at half, as Megatron-LM counts it (eval's mfu_causal: the two part at long sequences, where a causal kernel runs half the full count); compute = the busiest stage's m micro-batches (recompute included); "
    "exposed = communication on the critical path (the m working slots' tp, cp, ep, pp collectives + the exposed "
    "data-parallel part: what waits, and 0.159 of what hides, the compute it slows); bubble = the (p − 1)/v idle "
    "slots (their compute and communication); compute + exposed "
    "+ bubble + the optimizer's step = step (under an uneven split each part is the largest over the stage kinds, "
    "first, middle and last, which need not be one stage's: the parts then add up to at least the step)",
    "hybrid strategy of symcomm (Megatron rank order t, c, d, p; a group uses the inter-node α, β once "
    "the ranks it spans exceed the GPUs per node); ring collectives; micro-batch of mb sequences, "
    "m = batch / (d · mb)",
    "search: t | heads, K/V heads and GPUs per node; p | GPUs; v ≥ 2 only with p ≥ 2 and m divisible by p "
    "(Megatron's interleaved schedule); framework fsdp2's 1F1B only with m ≥ p (torch.distributed.pipelining's "
    "Schedule1F1B); layers split evenly when p·v divides them, else pipeline_split=first_last "
    "(the first and the last of the p·v chunks L_first, L_last layers, the middle ones (L − L_first − L_last)/"
    "(p·v − 2) each, an end chunk within ± 2 of a middle one; v = 1, 2, 3, 4, 6 or 8), the fastest split of each "
    "layout kept and shown as 'split L_first/L_last'; c | seq (ulysses: c | heads/t and c | K/V heads/t); e | experts "
    "and e | d·c (e | t·d·c with --expert-tp 1); "
    f"micro-batch sizes dividing the per-replica batch, up to {MICRO_BATCH_SEARCH} unless --micro-batch; "
    "recompute none, selective (the attention core; not under fsdp2 unless --recompute fixes it: torchtitan runs "
    "none) or full (op, torchtitan's op-level checkpointing, only when --recompute fixes it; with t > 1 only with "
    "SP); sequence parallel needs t > 1 and t | seq/c; MoE "
    "with t > 1 only with SP (Megatron-Core refuses it otherwise)",
    "data-parallel schemes as the frameworks run them over the m micro-batches: " + _frameworks.planned() + "; "
    "settings that give one layout the same step time and memory are folded into one row",
    "embedding and LM head (V × h, vocabulary-parallel) on the first and last stages (--no-embeddings: spread "
    "evenly); attention as the model's shape fixes it, as eval takes it from the preset (DeepSeek's MLA, "
    "query heads wider than h/a: q_width=heads)",
    "bytes on the wire = elements × bytes of --dtype, except the gradient reductions "
    + _frameworks.choices([name for name, row in _frameworks.FRAMEWORKS.items() if row.grad_dtype == "fp32"]
                          + [f"{name} with c ≥ 2" for name, row in _frameworks.FRAMEWORKS.items()
                             if row.cp_grad_dtype == "fp32"], "and") + " run in fp32, "
    "the sequence all-gathers Transformer Engine moves in FP8 (1 byte; megatron, megatron_fsdp under an FP8 "
    "recipe) and its current scaling's fp32 amax all-reduces; "
    "β = 1 / per-direction bandwidth per GPU",
)
#: what a MoE plan says of its token dispatch (plan --dispatcher: given, not searched)
DISPATCH_ASSUMPTION = (
    "MoE token dispatch: dispatcher={} (--dispatcher, as eval's dispatcher=; given, not searched: which dispatcher "
    "runs is the cluster's software and network, DeepEP's RDMA buffers or HybridEP's fabric, not a layout choice); "
    "experts' tensor-parallel size expert_tp={} (--expert-tp: tp, the experts split over the t TP ranks, "
    "Megatron-Core's default, or 1, each expert whole on a GPU, which deepep and hybridep need; given, not searched: "
    "e | d·c with tp, e | t·d·c with 1, Megatron-Core's expert grid t·d·c = t_e·e·(its data-parallel part)); {}")
MEMORY_ASSUMPTION = (
    "memory per GPU = the step model's (symcomm.training.memory.memory_model, the same as eval's), compared with "
    "the preset's: weights, gradients and Adam states as the framework holds them (ZeRO sharding over d·c; "
    "Megatron's fp32 gradient buffer; FSDP2's and Megatron-FSDP's gathered layers), the activations of the stage "
    "holding the most (uneven splits: every stage kind priced) per Korthikanti et al. 2022 Table 2 (flash "
    "attention: no scores; full recompute: the layer input) with the MLP at its own width, K and V at their "
    "grouped-query width under Megatron-Core and the dropout masks only for a model trained with dropout (every "
    "preset trains without; --dropout) × the micro-batches it holds in flight, the larger of "
    "the loss's buffers (bytes per logit as the loss setting runs it) and the recompute working set; live bytes, no "
    "allowance for the allocator's cached or fragmented blocks.  Dropped before any evaluation: layouts whose floor "
    "(14Φ/GPUs + the activations of full recompute with SP) exceeds it")
MARGIN_ASSUMPTION = (
    "--within-memory-error: a layout is kept only if its memory, raised to the highest peak the published runs "
    "printed above the model's count (hardware.json memory_checks: memory / (1 + the lowest error)), fits: the "
    "rows eval calls 'uncertain within its measured error' are left out")


UNITS = {"step_time": "s", "compute_time": "s", "exposed_comm_time": "s", "bubble_time": "s",
         "optimizer_time": "s", "comm_time": "s", "memory_bytes": "bytes", "memory_bytes_per_gpu": "bytes",
         "tokens_per_second": "tokens/s", "peak": "FLOP/s", "step_time_error": "ratios (predicted / measured - 1); runs, fitted: counts", "mfu": "fraction of peak", "mfu_causal": "fraction of peak", "bubble_fraction": "fraction", "seconds": "s"}


def step_time_error(p: Plan, top: int) -> dict | None:
    """The hardware's step-time error (:meth:`symcomm.presets.Hardware.step_time_error`, eval's rule) for the rows
    shown: the frameworks of their settings and the constants their step models read, so that what no published run
    measured is said beside them (the --compare row's too)."""
    from .kernels import names_read

    req = p.request
    if (any(name in TYPED_CONSTANTS for name, _ in req.constants) or datasheet_moved(req.hardware, req.typed_hardware)
            or not dtype_measured(req.dtype, req.precision)):
        return None     # the fit's error is that of its own constants on 16-bit runs (eval's rule, words.hardware_words)
    blocks = [p._blocks[k] for k in sorted({int(k) for ks in p.layouts["settings"][:min(top, len(p))] for k in ks})]
    reads = names_read(blocks, bytes_per_element(req.dtype))
    return req.hardware.step_time_error(req.framework, _frameworks_shown(p, top), tuple(sorted(reads)),
                                        _preset_name(req.model), req.precision)


def _preset_name(model) -> str | None:
    """The name of ``model`` when it is a shipped model preset (whose own published runs the hardware's fit may
    record), None for a model read from a config file under another shape."""
    try:
        return model.name if preset_model(model.name) == model else None
    except ValueError:
        return None


def _frameworks_shown(p: Plan, top: int) -> tuple:
    """The framework options of the settings of the first ``top`` rows and of the --compare row, sorted."""
    rows = p.rows(top) + ([p.compare] if p.compare else [])
    return tuple(sorted({setting["framework"] for row in rows for setting in row["settings"]}))


def to_json(p: Plan, top: int) -> dict:
    req = p.request
    return {
        "model": req.model.name, "model_title": req.model.title, "parameters": req.model.parameters,
        "hardware": req.hardware.name, "hardware_title": req.hardware.title,
        "gpus": req.gpus, "gpus_per_node": req.G, "batch": req.batch, "seq": req.seq,
        "dtype": req.dtype, "bytes_per_element": bytes_per_element(req.dtype), "cp_algorithm": req.cp_algorithm,
        "precision": req.precision, "attention_kernel": req.attention_kernel,
        "nvlink": req.nvlink,
        # a MoE model's token dispatcher and the experts' tensor-parallel size it runs with
        **({"dispatcher": req.dispatcher, "expert_tp": expert_tp_run(req.dispatcher, req.expert_tp)}
           if req.model.moe else {}),
        **({"peak": req.peak} if req.peak is not None else {}),          # typed: FLOP/s, in place of the hardware's
        **({"typed": dict(req.constants)} if req.constants else {}),       # typed constants and HBM bandwidth
        "step_time_error": step_time_error(p, top),
        "fixed": {k: int(v) if isinstance(v, bool) else v   # sp printed 0/1, as in the rows
                  for k, v in ((k, getattr(req, k)) for k in ("tp", "pp", "vp", "dp", "cp", "ep", "micro_batch",
                                                              "micro_batches", "zero", "framework", "recompute", "sp"))
                  if v is not None},
        "memory_check": req.memory_check, "within_memory_error": req.memory_margin, "embeddings": req.embeddings,
        "max_bubble": req.max_bubble,
        "memory_bytes_per_gpu": req.hardware.memory_bytes,
        "layouts_considered": p.considered, "layouts_fitting": p.fitting, "layouts_evaluated": p.evaluated,
        "layouts_straddling_left_out": p.straddling,
        "option_combinations": {"compiled": p.combinations[0], "in_all": p.combinations[1]},
        "rows": len(p), "seconds": p.seconds,
        "assumptions": list(p.assumptions),
        "units": dict(UNITS),
        "layouts": [{**row, "fits": _gpu_fits(req, row), "fits_over_error": _over_error(req, row)}
                    for row in p.rows(top, axes=True)],
        "memory_error": memory_error(req.hardware.memory_band),
        "compare": p.compare and {**p.compare, "fits_over_error": _over_error(req, p.compare)},
    }


CSV_COLUMNS = ("rank", "t", "p", "v", "c", "e", "d", "mb", "m", "schedule", "step_time_s", "tokens_per_second",
               "mfu", "mfu_causal", "compute_time_s", "exposed_comm_time_s", "bubble_time_s", "memory_bytes",
               "bubble_fraction", "fits", "fits_over_error", "settings", "eval_command")


def to_csv(p: Plan, top: int) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    # a ranked row fits where plan kept only those that do; under --no-memory-check it is the GPU's verdict on its
    # count ("" where the hardware gives no memory); fits_over_error: the verdict over the memory model's measured
    # error, as the JSON's rows and the text's ‡ give it (yes, no, uncertain; "" where memory is not checked)
    rows = [(row, _gpu_fits(p.request, row)) for row in p.rows(top)] + (
        [(p.compare, p.compare["fits"])] if p.compare else [])
    for row, fits in rows:
        writer.writerow([row["rank"], row["t"], row["p"], row["v"], row["c"], row["e"], row["d"], row["mb"],
                         row["m"], row["schedule"], repr(row["step_time"]), repr(row["tokens_per_second"]),
                         repr(row["mfu"]), repr(row["mfu_causal"]), repr(row["compute_time"]),
                         repr(row["exposed_comm_time"]),
                         repr(row["bubble_time"]), repr(row["memory_bytes"]), repr(row["bubble_fraction"]),
                         "" if fits is None else int(fits), _over_error(p.request, row) or "",
                         "; ".join(row["labels"]), row["eval_command"]])
    return buffer.getvalue()


def _straddles(req: Request, row: dict) -> bool:
    """Whether a row's groups straddle NVLink domains (megatron_features.straddle_note, eval's rule), under any of its
    settings' expert_tp."""
    numbers = {"t": row["t"], "c": row["c"], "d": row["d"], "p": row["p"], "e": row["e"], "G": req.G}
    return any(straddle_note({"expert_tp": str(s.get("expert_tp", "tp"))}, numbers)
               for s in row.get("settings", ()) or ({},))


def _gpu_fits(req: Request, row: dict):
    """Whether a row's memory fits its GPU by the model's count: True where plan kept only those that do, else (under
    --no-memory-check) the GPU's verdict (Hardware.fits; None where the hardware gives no memory)."""
    # a ranked row fits where plan checked memory; the --compare row (which holds "fits") is shown whatever it holds;
    # a --dtype the memory model does not count (plan keeps none by it) has no verdict, as eval says
    if memory_uncounted(req.dtype, req.precision):
        return None
    return True if req.memory_check and "fits" not in row else req.hardware.fits(row["memory_bytes"])


def _memory_mark(req: Request, row: dict) -> str:
    """The text's mark beside a row's memory: ‡ fits by the count, not at the high end of its error; ✗ over the GPU's
    memory by the count (--no-memory-check ranks those too)."""
    fits = _gpu_fits(req, row)
    return " ✗" if fits is False else " ‡" if fits and _over_error(req, row) == "uncertain" else "  "


def _over_error(req: Request, row: dict) -> str | None:
    """eval's verdict over the memory model's measured error (fit_errors.fits_over_error) for a row's memory: the
    band of the frameworks whose printed peaks measured it, taken as the margin for every row (as
    --within-memory-error keeps them; the header says which frameworks it measured), under --no-memory-check too, as
    eval gives it; None where the memory model does not count the --dtype."""
    if memory_uncounted(req.dtype, req.precision):
        return None
    return fits_over_error(req.hardware.memory_band, row["memory_bytes"], req.hardware.memory_bytes)


def _line(p: Plan, row: dict, mark, unmeasured=frozenset()) -> str:
    # a setting whose framework no published run measured with these constants is marked (the header says which)
    labels = [label + (" †" if setting["framework"] in unmeasured else "")
              for label, setting in zip(row["labels"], row["settings"])]
    shown = " | ".join(labels)
    if len(shown) > 80:
        shown = " | ".join(labels[:2]) + f" | … (+{len(labels) - 2})"
    if row.get("L_first") is not None:        # an uneven split: the first and the last chunk's layers
        shown = f"split {row['L_first']}/{row['L_last']}  " + shown
    return (f"{mark:>5} {row['t']:>3} {row['p']:>3} {row['v']:>2} {row['c']:>3} {row['e']:>3} {row['d']:>5} "
            f"{row['mb']:>3} {row['m']:>5} {human_time(row['step_time']):>9} {row['tokens_per_second']:>10,.0f} "
            f"{100 * row['mfu']:>5.1f}% {100 * row['mfu_causal']:>5.1f}% {human_time(row['compute_time']):>9} "
            f"{human_time(row['exposed_comm_time']):>9} {human_time(row['bubble_time']):>9} "
            f"{human_size(row['memory_bytes']):>10}{_memory_mark(p.request, row)}"
            f"  {shown}")


def _why_out(req: Request, row: dict) -> str:
    """Why the --compare row is not among the rows: its memory (the one rule, Hardware.fits), or its bubble."""
    if req.memory_check and req.hardware.fits(checked_memory(req, row["memory_bytes"])) is False:
        return (f" — does not fit: {row['memory_bytes']:,.0f} bytes ({human_size(row['memory_bytes'])}) > the GPU's "
                f"{req.hardware.memory_bytes:,.0f} bytes ({human_size(req.hardware.memory_bytes)})")
    if req.max_bubble is not None and row["bubble_fraction"] > req.max_bubble:
        return f" — its bubble fraction {row['bubble_fraction']:.3g} exceeds --max-bubble {req.max_bubble:g}"
    return " — it does not fit at the high end of the memory model's measured error (--within-memory-error)"


def to_text(p: Plan, top: int) -> str:
    req = p.request
    error = step_time_error(p, top)
    rows = p.rows(top, axes=True)
    unmeasured = frozenset(req.hardware.frameworks_unmeasured(_frameworks_shown(p, top))) if error else frozenset()
    lines = [
        f"{req.model.title} (Φ = {req.model.parameters:,}) on {req.gpus} × {req.hardware.name} "
        f"({req.G} per node), batch {req.batch}, seq {req.seq}, {req.dtype}"
        + (f", precision {req.precision}" if req.precision != "bf16" else "")
        + (f", attention_kernel {req.attention_kernel}" if req.attention_kernel != "fused" else "")
        + (f", peak {req.peak / 1e12:g} TFLOP/s (typed)" if req.peak is not None else "")
        + "".join(f", {name} {value:g} (typed)" for name, value in req.constants) + ": ranked by step time",
        "step times off by " + step_error_words(error)
        + (f" († in the rows: {', '.join(sorted(unmeasured))}, checked on no measured run)" if unmeasured else ""),
        f"{p.considered:,} layouts × settings considered (each uneven split apiece), {p.fitting:,} "
        + ("fit in memory" if req.memory_check else "kept (memory not checked)")
        + (" at the high end of its measured error" if req.memory_margin else "") + f", {p.evaluated:,} timed, "
        f"fitting or not ({p.combinations[0]} of {p.combinations[1]} option combinations timed, each over all its "
        "layouts at once: in the others compute · (1 + "
        f"bubble) + optimizer alone is slower than row {top}" + (" and the compared layout" if p.compare else "")
        + f"), in {human_time(p.seconds)}",
        "",
        f"{'#':>5} {'t':>3} {'p':>3} {'v':>2} {'c':>3} {'e':>3} {'d':>5} {'mb':>3} {'m':>5} {'step':>9} "
        f"{'tokens/s':>10} {'MFU':>6} {'causal':>6} {'compute':>9} {'exposed':>9} {'bubble':>9} {'memory':>10}    "
        "settings",
    ]
    if not req.memory_check and any(_gpu_fits(req, row) is False for row in rows):
        lines.insert(3, "memory ✗: over the GPU's memory by the model's count of live bytes (--no-memory-check ranks "
                        "every layout, whatever its memory)")
    if req.precision != "bf16":
        # eval says "of the bf16 peak" beside its MFU; a column says it here, once
        lines.insert(3, f"MFU: of the bf16 dense peak, as published runs count it: precision {req.precision} runs "
                        "its linear GEMMs against its own higher peak, so the column can pass 100 %")
    uncounted = memory_uncounted(req.dtype, req.precision)
    if uncounted:
        lines.insert(3, f"memory: {uncounted}; the column shows that count, and no row is marked as fitting or not")
    band = memory_error(req.hardware.memory_band)
    if band is not None and any(_gpu_fits(req, row) and _over_error(req, row) == "uncertain" for row in rows):
        # a framework no printed peak measured takes the measured ones' band as its margin, said (fit_errors.band_measures)
        others = sorted({s["framework"] for row in rows for s in row["settings"]
                         if not band_measures(req.hardware.memory_band, s["framework"])})
        margin = (f"; framework={', '.join(others)}: no published run prints its peak memory, the band taken as its "
                  "margin" if others else "")
        lines.insert(3, "memory ‡: fits by the model's count of live bytes, not at the high end of its measured "
                        "error (" + memory_band_words(band) + margin + ")")
    if p.straddling:
        lines.insert(3, f"NVLink domains: {p.straddling:,} layouts left out, whose parallel groups do not tile the domains "
                        f"of {req.G} GPUs in Megatron's rank order: the step model would price each group inside one "
                        "domain, not the network traffic of those that straddle two (eval of such a layout says which)")
    straddling = [row["rank"] for row in rows if _straddles(req, row)]
    if straddling:
        # eval says it of each such row's command (megatron_features.straddle_note): the rows are not re-priced
        lines.insert(3, f"NVLink domains: rows {', '.join(map(str, straddling))} have parallel groups that do not tile "
                        f"the domains of {req.G} GPUs in Megatron's rank order; the step model prices each group inside "
                        "one domain, not the network traffic of those that straddle two (eval of a row says which)")
    for row in rows:
        lines.append(_line(p, row, row["rank"], unmeasured))
    if p.compare:
        row = p.compare
        # what --compare leaves out is searched, not eval's default (v = 1, ...): said, so that its row is read as
        # the best of those (an outsider compared a layout with v left out and got the interleaved schedule)
        given = {key for key, _ in req.compare}
        searched = ", ".join(key for key in COMPARE_KEYS if key not in given)
        lines += ["", f"--compare ({row['matching']:,} matching layouts × settings, the fastest shown"
                  + (f"; not given, so searched: {searched}" if searched else "") + "): rank "
                  f"{row['rank']:,} by step time (1 + the rows faster than it)"
                  + ("" if row["fits"] else _why_out(req, row) + "; the rank is where its step time would place it"),
                  _line(p, row, row["rank"], unmeasured)]
        if rows:
            lines.append(f"      the first row is {row['step_time'] / rows[0]['step_time']:.3f}× faster by the model"
                         if row["step_time"] >= rows[0]["step_time"] else
                         "      it is faster than the first row (it does not fit or is outside --max-bubble)")
    if rows or p.compare:
        lines += ["", "each row as an eval command (the same step time and memory; its first setting):"]
        lines += [f"{row['rank']:>5}  {row['eval_command']}" for row in rows]
        if p.compare:
            lines.append(f"{'cmp':>5}  {p.compare['eval_command']}")
    if rows:
        best = rows[0]
        lines += ["", "best layout, per axis (communication alone; the part on the critical path; which stage its "
                      "busiest GPU is on):"]
        for axis, got in best["axes"].items():
            lines.append(f"  {axis}: {human_time(got['comm_time'])}; {human_time(got['exposed_comm_time'])}; "
                         f"{got['stage']}")
    lines += ["", "assumptions:"] + [f"  - {a}" for a in p.assumptions]
    return "\n".join(lines)
