"""How far the step time of a hardware's constants was measured off, as its ``step_time`` block records it (the fit's
leave-one-out errors, the check runs' per framework option) and as eval and plan word it (:func:`step_error_words`).
The rule of what a setting reads that no run measured is :meth:`symcomm.presets.systems.Hardware.unchecked`."""

from __future__ import annotations


def leave_one_out_of(fitted: dict) -> tuple:
    """The leave-one-out errors a ``step_time`` block records, as (name, value) pairs; () when it records none."""
    out = fitted.get("errors", {}).get("leave_one_out", {})
    return tuple((k, float(out[k])) for k in ("mean", "max", "signed_mean", "runs") if k in out)


def checks_of(fitted: dict) -> tuple:
    """The check errors a ``step_time`` block records per framework option (``checks``, written by the fit script
    from its check runs), as :attr:`Hardware.step_checks` tuples; () when it records none."""
    return tuple((name, float(e["mean"]), float(e["max"]), float(e["signed_mean"]), int(e["runs"]),
                  tuple(e.get("hardware", ()))) for name, e in sorted(fitted.get("checks", {}).items()))



def step_error_words(error: dict | None) -> str:
    """:meth:`Hardware.step_time_error` in words, as eval and plan print it: the fit's leave-one-out error, then
    what the checks measured per framework (the model is faster than measured where the signed mean is
    negative)."""
    if error is None:
        return ("unknown: no fit error is recorded for these constants (typed over the hardware's, or a hardware file "
                "without step_time.errors)")
    unchecked = error.get("unchecked", ())
    words = ("checked on no published run: " + ", ".join(unchecked) + "; what was checked: " if unchecked else "")
    words += (f"typically {100 * error['mean']:.0f} %, up to {100 * error['max']:.0f} % (signed mean "
             f"{round(100 * error['signed_mean']) + 0:+d} %): {error['of']}'s fit, leave-one-out over its "
             f"{error['runs']} runs; unlike runs (another framework, release or GPU) can be off by more")
    for name, e in error.get("checks", {}).items():
        runs = f"{e['runs']} published run{'s' if e['runs'] != 1 else ''}"
        words += (f"; framework={name} on {runs} never fitted on ({', '.join(e['hardware'])}): "
                  f"typically {100 * e['mean']:.0f} %, up to {100 * e['max']:.0f} % (signed mean "
                  f"{round(100 * e['signed_mean']) + 0:+d} %)")
    return words
