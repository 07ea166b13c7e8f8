"""``symcomm calibrate-step``: the step model's fitted constants (eta, kappa, ... of
:data:`symcomm.training.compute.FITTED`) fitted to the user's own measured runs, and a hardware file with them
that ``eval hybrid --hardware FILE`` and ``plan --hardware FILE`` use.

The command layer of :mod:`symcomm.measurement.step_runs` (the runs read and bound as ``eval hybrid`` binds
them) and :mod:`symcomm.measurement.step_fit` (the fitting core the committed fit script uses too): options
checked, the output path checked before anything is computed, the file written, the text or JSON printed.
"""

from __future__ import annotations

import json
from dataclasses import replace

from ..base import notes
from ..base.crossing import SWITCH
from ..base.errors import InputError
from ..base.files import check_output, refuse_overwriting, write_file
from ..base.inputs import parse_real, parse_whole
from ..presets.hardware_values import KERNEL_SHARES, kernel_shares
from ..presets.systems import PUBLISHED_KERNELS, STEP_TIME_ABSENT_AS


#: the words of a constant held because the runs fit as well at the base's value (held_as_well)
AS_WELL = "these runs fit as well"


def _percent(x: float) -> str:
    return f"{100 * x:+.1f} %"


def report_text(payload: dict) -> str:
    """The fit as text: the constants and what fixed each, the errors in sample and left one out, one row
    per run."""
    lines = [f"calibrate-step: {len(payload['runs'])} measured runs ({payload['runs_file']}) on base hardware "
             f"{payload['base']}", "constants:"]
    spans = payload.get("spans", {})
    # the constants held where these runs fit as well: a fitted one's span is measured with them held, so the runs
    # may fit as well farther off once they move too (an outsider's synthetic runs at eta 0.55, w_half 150 fitted
    # eta 0.585 "as good from 0.58 to 0.6", w_half held at 295)
    unfixed = [name for name, why in payload["held"].items() if AS_WELL in why]
    held_too = (f", {', '.join(unfixed)} held at the base's value, which these runs do not fix either: with "
                f"{'it' if len(unfixed) == 1 else 'them'} free the span may be wider" if unfixed else "")
    for name, value in payload["constants"].items():
        why = ("fitted on these runs" if name in payload["fitted"] else "held: " + payload["held"].get(name, ""))
        if name in spans:
            why += (f"; as good from {spans[name][0]:g} to {spans[name][1]:g} (mean |error| within "
                    f"{100 * payload['spans_within']:g} points of the fit's, the other fitted constants refitted"
                    f"{held_too if name in payload['fitted'] else ''})")
        lines.append(f"  {name:<8} {value:<8g} {why}")
    for name, why in payload["held"].items():
        if name not in payload["constants"]:
            lines.append(f"  {name:<8} {'-':<8} {why}")
    for key, label in (("in_sample", "in sample"), ("leave_one_out", "leave-one-out")):
        e = payload[key]
        lines.append(f"error ({label}, predicted / measured - 1): mean |error| {100 * e['mean']:.1f} %, max "
                     f"{100 * e['max']:.1f} %, signed mean {_percent(e['signed_mean'])}")
    for key in ("by_source", "by_framework"):
        for label, e in payload.get(key, {}).items():
            inside, out = e["in_sample"], e["leave_one_out"]
            lines.append(f"  {key[3:]} {label}: {inside['runs']} runs, mean |error| {100 * inside['mean']:.1f} % in "
                         f"sample, {100 * out['mean']:.1f} % leave-one-out (signed {_percent(out['signed_mean'])})")
    width = max(len("run"), *(len(r["id"]) for r in payload["runs"]))
    lines.append(f"  {'run':<{width}}  {'measured (s)':>12}  {'predicted (s)':>13}  {'error':>8}  {'LOO error':>9}  "
                 "measured as")
    for r in payload["runs"]:
        lines.append(f"  {r['id']:<{width}}  {r['measured_s']:>12.4g}  {r['predicted_s']:>13.4g}  "
                     f"{_percent(r['error']):>8}  {_percent(r['loo_error']):>9}  {payload['read_as'][r['id']]}")
    lines.append("leave-one-out: each run predicted by the constants fitted without it, those the fit of all runs "
                 "holds held alike (what to expect of a run not fitted on); positive error: the model is slower than "
                 "the run")
    return "\n".join(lines)


def wiring_note(wirings: list[str], output: str, declared: str) -> str | None:
    """What a written file's user must type again where some runs priced their nodes wired otherwise than the file
    declares (its ``nvlink``, which eval's nvlink= and plan's --nvlink default to): None when every run agrees."""
    other = [wiring for wiring in wirings if wiring != declared]
    if not other:
        return None
    kind = other[0]          # the one wiring of NVLINK_TOPOLOGIES the file does not declare
    return (f"{len(other)} of the {len(wirings)} runs were priced with nvlink={kind}: {output} holds the constants "
            f"fitted with it but declares nvlink={declared}; give nvlink={kind} (plan: --nvlink {kind}) with "
            f"--hardware {output} for those nodes")


def hardware_kept(typed: list[tuple[str, dict]], base) -> dict:
    """What the written file keeps of the hardware the runs' words retype (``typed``: each run's id and its hardware
    words, step_runs.typed_hardware), as document fields: a peak the base gives only bounds for (H100 Grand Teton's),
    typed alike by every run, as its peak_flops; the GPUs per node typed alike by every run.  InputError for the
    rest: a link or the HBM bandwidth (the file keeps the base's), a peak the base's datasheet gives, a value some runs
    type and others do not or type otherwise, since the file would then price the runs as no fit did."""
    from ..measurement.step_runs import LINK_WORDS, NODE_WORDS, PEAK_WORDS

    datasheet = dict(base.peak_flops)
    bounded = {dtype for dtype, _, _ in base.peak_bounds}
    kept: dict = {}
    for name in PEAK_WORDS + LINK_WORDS + NODE_WORDS:
        given = {rid: words[name] for rid, words in typed if name in words}
        if not given:
            continue
        rid = next(iter(given))
        dtype = {"peak": "bf16", "peak_fp8": "fp8", "peak_fp4": "fp4"}.get(name)
        if name in LINK_WORDS or (dtype is not None and (dtype in datasheet or dtype not in bounded)):
            raise InputError(f"run {rid!r}: its words type {name}={given[rid]}, a value of the hardware that the written "
                             f"file keeps from --hardware {base.name}: it would price the run otherwise than the fit "
                             "did; give it in the base instead (a hardware file)")
        if len(given) < len(typed) or len(set(given.values())) > 1:
            other = next((r for r, _ in typed if given.get(r) != given[rid]), rid)
            raise InputError(f"run {rid!r} types {name}={given[rid]}, run {other!r} "
                             f"{name + '=' + given[other] if other in given else 'none'}: the written file keeps one "
                             f"value; give every run the same {name}, or calibrate the runs of each apart")
        if dtype is not None:
            value = parse_real(name, given[rid])
            kept.setdefault("peak_flops", dict(datasheet))[dtype] = value
            if dtype == "bf16":
                kept["peak_flops"]["fp16"] = value
            kept["peak_source"] = (f"{base.peak_source}; {name}={given[rid]} typed by every run calibrate-step fitted "
                                   "the file on")
        else:
            kept["gpus_per_node"] = parse_whole(name, given[rid])
    return kept


def file_wiring(wirings: list[str], base: str) -> str:
    """The wiring a written file declares: the runs' own when every run was priced alike (a team's nodes are one
    kind), else the base hardware's."""
    return wirings[0] if wirings and len(set(wirings)) == 1 else base


#: a run whose leave-one-out prediction is this many times off its measurement (either way) is said (cmd_calibrate_step)
FAR_OFF = 3.0


#: the attention core's shares of the peak: each named kernel's and the framework's own core's (eta_attn)
ATTENTION_SHARES = KERNEL_SHARES + ("eta_attn",)


def _standing(spans: dict, constants: dict, standing: dict) -> dict:
    """The fitted constants ``spans`` show the runs do not determine, each with why it is held (beyond ``standing``,
    those already held so): an attention core's share the base gives (:data:`ATTENTION_SHARES`: published, or a
    calibration's; an outsider's short-sequence runs fitted eta_attn at 0.253 on a span of 0.118 to 1 and eval then
    priced a 32k-token layout 23 % slow, saying "up to 14 %") stands where the runs fit
    as well at it (they do not say otherwise, and the file keeps the figure rather than one point of a span it lies
    in); a constant the runs fit as well at every value of its range (runs of one layout scaled, say) stays at the
    base's value, its fitted value being one point of the whole range; failing those, the one constant whose span
    holds the base's value widest for its range (two trading along a valley: the first held, the other refitted)."""
    from ..training.compute import FITTED

    out = {name: (f"held at the base hardware's value: {AS_WELL} anywhere in its range "
                  f"({FITTED[name].low:g} to {FITTED[name].high:g}), so they do not determine it")
           for name, (low, high) in spans.items()
           if name in constants and name not in standing and low <= FITTED[name].low and high >= FITTED[name].high}
    out.update({name: (f"held at the base hardware's share: {AS_WELL} at it (its span {low:g} to "
                       f"{high:g}), so they do not move it")
                for name, (low, high) in spans.items()
                if name in ATTENTION_SHARES and name not in standing and name not in out
                and low <= constants[name] <= high})
    if out:
        return out
    # any other constant whose span holds the base's value: the runs do not move it from there either (an outsider's
    # seven runs of one layout, b and m scaled, fitted eta 0.94 on a span of 0.605 to 1 and w_half 1208 on 0 to 1495,
    # trading along their valley: the file then priced another layout 9.6 % off, saying 1.6 %).  One a round, the
    # widest span for its range first: holding it can narrow the others' (eta held, w_half is then determined)
    inside = {name: (high - low) / (FITTED[name].high - FITTED[name].low) for name, (low, high) in spans.items()
              if name in constants and name not in standing and low <= constants[name] <= high}
    if inside:
        name = max(sorted(inside), key=inside.get)
        low, high = spans[name]
        out[name] = (f"held at the base hardware's value: {AS_WELL} at it (its span {low:g} to {high:g}), "
                     "so they do not move it")
    return out


def cmd_calibrate_step(args) -> int:
    from .. import presets
    from ..measurement.calibration_file import step_time_document
    from ..measurement.step_fit import fit, spans
    from ..training.compute import FITTED
    from ..measurement.step_runs import files_read, read_runs, typed_hardware

    if not args.hardware:
        raise InputError(f"--hardware is required: the base preset ({', '.join(presets.hardware_names())}) or "
                         "hardware file whose links, peaks and HBM the runs ran on")
    if args.output is not None:
        if not str(args.output).strip():
            raise InputError("-o '': an empty file name; give a path (-o hw.json) or leave -o out")
        check_output(args.output, "-o")
    if args.name is not None and not (0 < len(args.name) <= 200 and args.name.isprintable()):
        raise InputError("--name: give 1 to 200 printable characters")
    try:
        base = presets.hardware(args.hardware)
    except ValueError as err:
        raise InputError(str(err)) from None
    if args.output is not None:
        refuse_overwriting(args.output, [*files_read(args.runs), ("--hardware", args.hardware)], "-o")
    runs, read_as = read_runs(args.runs, args.hardware, args.dtype)
    kept = hardware_kept(typed_hardware(args.runs), base)
    # the shares of the attention kernels the runs name start where the base times them (published, or a calibration's)
    named = sorted({run.inputs.options.get("attention_kernel") for run in runs} & set(PUBLISHED_KERNELS))
    # a bounded peak every run typed (kept in the file): the part's widths are the roofline at that peak, as eval prices
    # the file (an outsider's h100-gt file held w_half_expert at H100 SXM's 295 where eval read 375)
    constants = {**kernel_shares(dict(base.step_time), dict(base.attention_shares), base.compute_capability, named),
                 **base.own_step_constants(kept.get("peak_flops", {}).get("bf16"))}
    hold = tuple(args.hold or ())
    holdable = sorted(set(constants) | {n for n, like in STEP_TIME_ABSENT_AS.items() if like in constants})
    for name in hold:
        if name not in holdable:
            raise InputError(f"--hold {name}: choose a constant the base hardware gives, or one read from it when "
                             f"absent ({', '.join(holdable) or 'none'})")
    found = fit(runs, constants, hold=hold)
    # what the runs determine of each fitted constant: the values they fit as well at (step_fit.spans)
    found = replace(found, spans=spans(runs, found))
    # constants the spans show these runs do not determine are held and the rest refitted, until none is left: holding
    # one can free another's span (runs of one layout scaled: eta_attn held, kappa then fits as well anywhere)
    asked = {name: "held at the base hardware's value, as asked" for name in hold}
    standing: dict = {}
    while True:
        more = _standing(found.spans, constants, standing)
        if not more:
            break
        standing.update(more)
        found = fit(runs, constants, hold={**asked, **standing})
        found = replace(found, spans=spans(runs, found))
    # a run the others' fit prices several times off its measurement: a slip of its units is likelier than a model that
    # far off one run while the others fit, and it is fitted as given, so said (its id, the ratio, the usual slips)
    for row in found.rows:
        ratio = 1 + row.loo_error
        if not 1 / FAR_OFF <= ratio <= FAR_OFF:
            notes.add(f"run {row.id}: the fit without it prices it {max(ratio, 1 / ratio):.3g}× "
                      f"{'slower' if ratio > 1 else 'faster'} than measured (leave-one-out error "
                      f"{100 * row.loo_error:+.0f} %), where a model off by that much on one run of a set is rarer than "
                      "a slip of its figure: tokens/s of the whole job given per GPU (or per GPU as the job's) is off "
                      "by its GPU count, milliseconds as seconds by 1000; it is fitted as given")
    # a run that ran, counted over its GPU's memory: its layout as typed may not be the one that ran, said (the memory
    # count reads no fitted constant)
    # runs of one layout, only the batch and its micro-batches told apart: their error is that layout's alone
    shapes = {repr((sorted((k, v) for k, v in run.inputs.values.items() if k not in ("b", "m")),
                    sorted(run.inputs.options.items()))) for run in runs}
    if len(shapes) == 1:
        notes.add(f"the {len(runs)} runs are one layout (one model, degrees, sequence and settings; only b and m "
                  "differ): the fit's errors say how it times that layout, not another, which may be off by more")
    over = [run.id for run in runs if base.fits(float(run.inputs.quantities()["memory_per_gpu"])) is False]
    if over:
        notes.add(f"{len(over)} of the {len(runs)} runs ({', '.join(over[:5])}{', ...' if len(over) > 5 else ''}) are "
                  f"counted over the GPU's memory by the step model, though they ran: a layout typed otherwise than it "
                  f"ran (its micro-batch, recompute) is fitted as typed; eval hybrid of a run says by how much")
    payload = {"runs_file": str(args.runs), "base": base.name, **found.as_dict(), "read_as": read_as}
    for key in ("source", "framework"):           # the runs' own labels, when they give them
        if any(getattr(run, key) for run in runs):
            payload[f"by_{key}"] = {label: {"in_sample": inside.as_dict(), "leave_one_out": out.as_dict()}
                                    for label, (inside, out) in found.by(key).items()}
    document_text = None
    if args.output is not None:
        wirings = [str(run.inputs.options.get("nvlink", SWITCH)) for run in runs]
        declared = file_wiring(wirings, base.nvlink)
        said = wiring_note(wirings, str(args.output), declared)
        if said:
            notes.add(said)
        document = {**step_time_document(base, found, str(args.runs), name=args.name), **kept}
        if declared != SWITCH:
            document["nvlink"] = declared
            notes.add(f"{args.output} declares nvlink={declared}, the wiring its runs were priced with: eval hybrid and "
                      "plan price its nodes so unless given nvlink=switch")
        else:
            document.pop("nvlink", None)
        presets.check_hardware_document(document, "the hardware file calibrate-step would write")
        document_text = json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
        payload["hardware_file"] = str(args.output)
    text = json.dumps(payload, indent=2, ensure_ascii=False, allow_nan=False) if args.json else report_text(payload)
    if document_text is not None:
        write_file(args.output, document_text, "-o")
    print(text)
    if not args.json and args.output is not None:
        print(f"\nwrote {args.output} (use it as --hardware {args.output} with eval hybrid and plan)")
    return 0


def register_cli(subparsers) -> None:
    p = subparsers.add_parser("calibrate-step", help="fit the step model's constants (eta, kappa, ...) to your own "
                                                     "measured runs and write a hardware file with them")
    p.add_argument("runs", metavar="RUNS", help="JSON ({\"runs\": [...]}) or CSV of measured runs: id, model, words "
                                                "(eval hybrid's KEY=VALUE), and step_time_s, tokens_per_s, "
                                                "tokens_per_s_per_gpu or log (Megatron-LM's and NeMo/Megatron-Bridge's "
                                                "'iteration N/ M | ... elapsed time per iteration (ms)' lines, "
                                                "NeMo 2.0's '... iteration N/M | ... | train_step_timing in s: X' "
                                                "lines, torchtitan's 'step: N ... tps: T' lines)")
    p.add_argument("--hardware", help="base hardware preset or file: the links, peaks and HBM the runs ran on")
    p.add_argument("--dtype", help="--dtype of runs that do not name theirs (default bf16; bf16 or fp16: a run of an "
                                   "FP8 or FP4 recipe gives its precision= in its words)")
    p.add_argument("--name", help="name of the written hardware (default: BASE-calibrated)")
    p.add_argument("-o", "--output", help="write a hardware file (JSON) usable as --hardware FILE")
    p.add_argument("--json", action="store_true", help="one JSON document on stdout instead of the text")
    p.add_argument("--hold", action="append", metavar="CONSTANT",
                   help="keep this fitted constant at the base hardware's value (repeatable): for runs too few or too "
                        "alike to determine it, e.g. --hold w_half; --hold eta_attn without a base value keeps it "
                        "read as eta")
    p.set_defaults(run=cmd_calibrate_step)
