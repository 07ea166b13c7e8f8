"""How far the step time of a hardware's constants was measured off, as its ``step_time`` block records it (the fit's
leave-one-out errors, the check runs' per framework option) and as eval and plan word it (:func:`step_error_words`).
The rule of what a setting reads that no run measured is :meth:`symcomm.presets.systems.Hardware.unchecked`."""

from __future__ import annotations

from ..base.units import human_size
from .hardware_values import PUBLISHED_KERNELS


def leave_one_out_of(fitted: dict) -> tuple:
    """The leave-one-out errors a ``step_time`` block records, as (name, value) pairs; () when it records none."""
    out = fitted.get("errors", {}).get("leave_one_out", {})
    return tuple((k, float(out[k])) for k in ("mean", "max", "signed_mean", "runs") if k in out)


def checks_of(fitted: dict) -> tuple:
    """The check errors a ``step_time`` block records per framework option (``checks``, written by the fit script
    from its check runs), as :attr:`Hardware.step_checks` tuples; () when it records none."""
    return tuple((name, float(e["mean"]), float(e["max"]), float(e["signed_mean"]), int(e["runs"]),
                  tuple(e.get("hardware", ()))) for name, e in sorted(fitted.get("checks", {}).items()))



#: how the step fit words a constant it held because its runs do not read it (symcomm.measurement.step_fit): no run's
#: predicted step time moves with it, or one run's alone
UNREAD_BY_THE_FIT = ("no run's predicted step time depends on it", "one run's predicted step time depends on it")


def unread_of(fitted: dict) -> tuple:
    """The constants a ``step_time`` block holds because none of its fit's runs reads them (``held`` reasons of
    :data:`UNREAD_BY_THE_FIT`: at the base hardware's value, or left out), as (name, reason) pairs: what its fit's
    leave-one-out error says nothing of; () when it holds none so."""
    return tuple((name, str(why)) for name, why in sorted(fitted.get("held", {}).items())
                 if str(why).startswith(UNREAD_BY_THE_FIT))


def models_of(fitted: dict) -> tuple:
    """The errors a ``step_time`` block records on each model preset's published runs per framework option
    (``models``, written by the fit script: the fitted runs left out one at a time and the check runs), as
    :attr:`Hardware.step_models` tuples (model, framework, lowest, highest, signed_mean, runs, fitted, (hardware));
    () when it records none."""
    return tuple((model, name, float(e["lowest"]), float(e["highest"]), float(e["signed_mean"]), int(e["runs"]),
                  int(e.get("fitted", 0)), tuple(e.get("hardware", ())))
                 for model, by_framework in sorted(fitted.get("models", {}).items())
                 for name, e in sorted(by_framework.items()))


def model_errors(step_models: tuple, model: str | None, framework: str | None) -> dict:
    """The errors of :func:`models_of` on ``model``'s own runs, per framework option (``framework``: that one alone;
    None: every one), as an answer holds them; {} where none ran (or no model preset is named)."""
    return {name: {"lowest": low, "highest": high, "signed_mean": signed, "runs": runs, "fitted": fitted,
                   "hardware": list(on)}
            for of, name, low, high, signed, runs, fitted, on in step_models
            if of == model and (framework is None or name == framework)}


def memory_checks_of(document: dict) -> tuple:
    """The memory checks a presets document records (``memory_checks``, written by the fit script from the runs
    that print their peak memory) per framework option, as (framework, mean, max, signed_mean, lowest, highest,
    runs, (the hardware presets the runs ran on)) tuples; () when it records none."""
    return tuple((name, float(e["mean"]), float(e["max"]), float(e["signed_mean"]), float(e["lowest"]),
                  float(e["highest"]), int(e["runs"]), tuple(e.get("hardware", ())))
                 for name, e in sorted(document.get("memory_checks", {}).items()))


def precisions_of(fitted: dict) -> tuple:
    """The precision recipes a step-time block's runs measured: its fitted runs' (``precisions``) and its check runs'
    (``checked_precisions``), sorted; () where the block records none (a file written before it did)."""
    if "precisions" not in fitted:
        return ()
    return tuple(sorted({*fitted["precisions"], *fitted.get("checked_precisions", ())}))


def options_unmeasured(of: str, frameworks: tuple, precision: str | None, measured: tuple) -> list[str]:
    """The words for the options of a setting no measured run measured with ``of``'s constants: each framework option
    of ``frameworks`` (those no fitted or checked run ran), and ``precision`` where it is not among the ``measured``
    recipes (nothing said where the block records none)."""
    return ([f"framework={name} (no measured run of it was fitted or checked with {of}'s constants)"
             for name in frameworks]
            + ([f"precision={precision} (no measured run of it was fitted or checked with {of}'s constants, which "
                f"were measured under precision={', '.join(measured)})"]
               if measured and precision and precision not in measured else []))


def step_fields(fitted: dict) -> dict:
    """The Hardware fields a step-time block gives about its own measurement (symcomm.presets.systems.Hardware): its
    leave-one-out errors, checks, models, the precisions, attention kernels and frameworks its runs ran, and the
    constants no run of its fit reads."""
    return {"step_errors": leave_one_out_of(fitted), "step_checks": checks_of(fitted), "step_models": models_of(fitted),
            "step_precisions": precisions_of(fitted), "step_kernels": tuple(fitted.get("attention_kernels", ())),
            "step_frameworks": tuple(fitted.get("frameworks", ())), "step_unread": unread_of(fitted)}


def kernels_unmeasured(of: str, reads: tuple, measured: tuple) -> list[str]:
    """The words for a named attention kernel's share among ``reads`` (the constants the step model reads) that no run
    of ``of``'s fit ran (``measured``: the kernels its fitted runs ran; nothing said where the block records none, as
    a preset's does not: its check runs time the named kernels): its value is the published figure, not these runs'."""
    return [f"eta_{kernel} (the published share of {PUBLISHED_KERNELS[kernel]}: no run of {of}'s fit ran "
            f"attention_kernel={kernel})" for kernel in PUBLISHED_KERNELS
            if measured and f"eta_{kernel}" in reads and kernel not in measured]


def memory_ran_of(document: dict) -> tuple | None:
    """(the largest excess, runs, their framework options) of the published runs that ran though the model counts them
    over their GPU's memory (``memory_ran_over``, written by the fit script: each over-counts by at least its excess),
    None where it records none."""
    ran = document.get("memory_ran_over")
    return (float(ran["highest"]), int(ran["runs"]), tuple(ran.get("frameworks", ()))) if ran else None


def memory_band(checks: tuple, ran: tuple | None = None) -> tuple | None:
    """(lowest, highest signed error, runs, frameworks, ran) over ``checks`` (:func:`memory_checks_of`) and the runs
    that ran counted over their GPU's memory (``ran``: :func:`memory_ran_of`), None without any check."""
    if not checks:
        return None
    return (min(c[4] for c in checks), max(c[5] for c in checks), sum(c[6] for c in checks),
            tuple(c[0] for c in checks), ran)


def highest_error(band: tuple) -> float:
    """The band's highest error: the printed peaks' and the runs that ran over their GPU's memory, whichever is higher
    (a run that ran over-counted by at least its excess)."""
    ran = band[4] if len(band) > 4 else None
    return max(band[1], ran[0]) if ran else band[1]


def band_measures(band: tuple | None, framework: str | None) -> bool:
    """Whether the memory checks of ``band`` (:func:`memory_band`) measured the count of ``framework`` (a framework
    option; None: any): a published run of it printed its peak.  Each framework counts its own buffers (Megatron's
    gradient buckets, FSDP's gathered layers, PyTorch's caching allocator), so one framework's checks say nothing of
    another's count."""
    return band is not None and (framework is None or framework in band[3])


#: why a verdict is unknown when the hardware gives no memory figure
NO_MEMORY_FIGURE = "the hardware gives no memory_bytes per GPU"


def memory_verdict(fits, need: float, have: float | None, band: tuple | None, framework: str | None = None,
                   uncounted: str | None = None) -> dict:
    """The answer's memory verdict: ``fits`` (True, False or None: unknown, as Hardware.fits says it), the GPU's memory
    and the excess, in bytes (None when unknown; 0 when it fits), the verdict over the memory model's measured error
    (:func:`fits_over_error`) and that error (:func:`memory_error`).  Where no check measured ``framework``'s count
    (:func:`band_measures`) the band of those measured is its margin, as plan's --within-memory-error takes it, and
    the error names the framework it did not measure.  ``uncounted``: why the count is not the run's
    (hardware_values.memory_uncounted), which makes the verdict unknown too; ``fits_unknown`` says why it is unknown
    (None where it is known)."""
    error = memory_error(band, None if band_measures(band, framework) else framework)
    if fits is None or uncounted:
        return {"fits": None, "gpu_memory_bytes": None, "memory_excess_bytes": None, "fits_over_error": None,
                "memory_error": error, "fits_unknown": uncounted or NO_MEMORY_FIGURE}
    return {"fits": bool(fits), "gpu_memory_bytes": have, "memory_excess_bytes": max(0.0, float(need) - have),
            "fits_over_error": fits_over_error(band, float(need), have), "memory_error": error, "fits_unknown": None}


def at_high_end(need, band: tuple):
    """``need`` bytes (a number or an array) raised to the highest peak the checks printed above the model's count:
    ``need / (1 + lowest)`` (error = count / printed - 1)."""
    return need / (1 + band[0])


def fits_over_error(band: tuple | None, need: float | None, have: float | None) -> str | None:
    """Whether ``need`` bytes per GPU fit in ``have`` over the whole band of the memory model's measured errors
    (``band``: :func:`memory_band`; error = the model's bytes / the printed peak - 1): "yes" (at the lowest error
    too, the printed peak furthest above the count), "no" (at the highest too), "uncertain" (between), None when no
    check or no memory is known."""
    if band is None or need is None or have is None:
        return None
    return "yes" if at_high_end(need, band) <= have else "no" if need / (1 + highest_error(band)) > have else "uncertain"


def memory_error(band: tuple | None, unmeasured: str | None = None) -> dict | None:
    """The band as the answer's ``memory_error`` (made anew on each call: the API's user may change it), or None;
    ``unmeasured``: the framework option asked of, where no check measured its count (:func:`band_measures`)."""
    if band is None:
        return None
    out = {"lowest": band[0], "highest": band[1], "runs": band[2], "frameworks": list(band[3]), "what": _BAND_WHAT}
    if unmeasured is not None:
        out["unmeasured_framework"] = unmeasured
    ran = band[4] if len(band) > 4 else None
    if ran:
        out["ran_over"] = {"highest": ran[0], "runs": ran[1], "frameworks": list(ran[2] if len(ran) > 2 else ()),
                           "what": _RAN_WHAT}
    return out


_BAND_WHAT = ("the memory model's bytes per GPU against the peak the published runs print (predicted / printed - 1): "
              "torchtitan prints the caching allocator's reserved peak, which holds its own blocks beyond the live "
              "bytes the model counts")


_RAN_WHAT = ("published runs that ran though the model counts them over their GPU's memory (counted / the GPU's memory "
             "- 1): each over-counts by at least that, so a count that far over a GPU's memory may still fit")


def memory_band_words(band: dict) -> str:
    """The memory model's measured error (:func:`memory_error`) in words: how far
    the printed peaks were above (or below) the model's count."""
    def above(error: float) -> float:
        return 100 * (1 / (1 + error) - 1)

    low, high = above(band["highest"]), above(band["lowest"])
    spread = (f"{low:.1f} % to {high:.1f} % above its count" if low >= 0 else
              f"{low:+.1f} % to {high:+.1f} % of its count (+: above)")
    words = (f"no published run of framework={band['unmeasured_framework']} prints its peak memory, so its count's "
             "error is unmeasured and another framework's band is its margin: " if band.get("unmeasured_framework")
             else "")
    words += (f"the printed peaks of the {band['runs']} published runs it was checked on "
              f"(framework={', '.join(band['frameworks'])}) were {spread}")
    ran = band.get("ran_over")
    if ran:
        of = f" (framework={', '.join(ran['frameworks'])})" if ran.get("frameworks") else ""
        runs = (f"1 published run{of} that ran was", "its") if ran["runs"] == 1 else (
            f"{ran['runs']} published runs{of} that ran were", "their")
        words += f", and {runs[0]} counted up to {100 * ran['highest']:.1f} % over {runs[1]} GPU's memory"
    return words


def fits_words(answer: dict) -> str:
    """eval's memory verdict in words, from the answer's ``fits``, ``fits_over_error``, ``memory_error``, bytes per
    GPU and the GPU's memory: the verdict by the model's count, then whether the measured error can turn it."""
    if answer["fits"] is None:
        return f"unknown: {answer.get('fits_unknown') or NO_MEMORY_FIGURE}"
    need, have, over, band = (answer["memory_per_gpu"], answer["gpu_memory_bytes"], answer["fits_over_error"],
                              answer["memory_error"])
    count = "by the model's count of live bytes (the caching allocator's own blocks come on top)"
    measured = "" if band is None else "; " + memory_band_words(band)
    if answer["fits"]:
        verdict = "yes by the model's count, uncertain within its measured error" if over == "uncertain" else "yes"
        head = f"{verdict}: {need:,.0f} bytes ≤ the GPU's {have:,.0f} bytes ({human_size(have, 'bytes')})"
        if over is None:
            return head
        return (f"{head}, {100 * (1 - need / have):.1f} % of the GPU's memory free {count}{measured}: "
                + ("at the high end it would not fit" if over == "uncertain" else "it fits at the high end too"))
    head = (f"NO: {need:,.0f} bytes ({human_size(need, 'bytes')}) > the GPU's {have:,.0f} bytes "
            f"({human_size(have, 'bytes')}), {answer['memory_excess_bytes']:,.0f} bytes "
            f"({human_size(answer['memory_excess_bytes'], 'bytes')}, {100 * (need / have - 1):.1f} %) too many, {count}")
    parts, stages = answer.get("memory") or {}, (answer.get("values") or {}).get("p", 1)
    if parts and stages not in (1, "1") and max(parts, key=parts.get) == "activations":
        # most of it is the micro-batches a stage holds in flight, a count the schedule sets (training.stages.in_flight)
        head += ("; most of it is the activations of the micro-batches the pipeline schedule holds in flight on that "
                 "stage, counted as Megatron's schedules hold them (1F1B: up to p on the first stage; interleaved: "
                 "more): a schedule holding fewer, or recompute, needs less")
    if over == "uncertain":
        return head + measured + ": at the low end it would fit"
    return head + (measured + ": it does not fit at the low end either" if over == "no" else "")


def _percent(x: float) -> str:
    """A relative error in percent: whole above 1 %, one decimal below (a 0.3 % fit is not said as "0 %")."""
    return f"{100 * x:.1f}" if abs(100 * x) < 0.95 else f"{100 * x:.0f}"


def _signed_percent(x: float) -> str:
    """:func:`_percent` with its sign (a −0.3 % signed mean is not said as "+0 %")."""
    return f"{100 * x:+.1f}" if abs(100 * x) < 0.95 else f"{round(100 * x) + 0:+d}"


def step_error_words(error: dict | None) -> str:
    """:meth:`Hardware.step_time_error` in words, as eval and plan print it: the fit's leave-one-out error, then
    what the checks measured per framework (the model is faster than measured where the signed mean is
    negative)."""
    if error is None:
        return ("unknown: no fit error is recorded for these constants (typed over the hardware's, a --dtype no fit "
                "measured, or a hardware file without step_time.errors)")
    unchecked = error.get("unchecked", ())
    words = ("unknown where it was checked on no measured run: " + ", ".join(unchecked) + "; what was checked: "
             if unchecked else "")
    words += (f"typically {_percent(error['mean'])} %, up to {_percent(error['max'])} % (signed mean "
             f"{_signed_percent(error['signed_mean'])} %): {error['of']}'s fit, leave-one-out over its "
             f"{error['runs']} runs; unlike runs (another model, layout, framework, release or GPU) can be off by more")
    for name, e in error.get("checks", {}).items():
        runs = f"{e['runs']} published run{'s' if e['runs'] != 1 else ''}"
        words += (f"; framework={name} on {runs} never fitted on ({', '.join(e['hardware'])}): "
                  f"typically {_percent(e['mean'])} %, up to {_percent(e['max'])} % (signed mean "
                  f"{_signed_percent(e['signed_mean'])} %)")
    for name, e in error.get("model", {}).items():
        runs = f"{e['runs']} published run{'s' if e['runs'] != 1 else ''}"
        fitted = (f", {e['fitted']} of them fitted on, each predicted by the fit without it" if e["fitted"] else
                  ", none fitted on")
        spread = (f"{100 * e['lowest']:+.0f} %" if round(100 * e["lowest"]) == round(100 * e["highest"]) else
                  f"{100 * e['lowest']:+.0f} % to {100 * e['highest']:+.0f} %")
        words += (f"; {error['model_name']} with framework={name}, on its own {runs} ({', '.join(e['hardware'])}"
                  f"{fitted}): {spread} (signed mean {_signed_percent(e['signed_mean'])} %"
                  + (": predicted too fast)" if e["signed_mean"] < 0 else ": predicted too slow)"
                     if e["signed_mean"] > 0 else ")"))
    return words
