"""``eval hybrid --model M --hardware H ...`` answered without SymPy, from the generated option sets of
:mod:`symcomm.training.hybrid_data` (printed by ``python -m symcomm.tools.codegen``, through
:mod:`symcomm.tools.hybridgen`): for each option set it holds, the answer's sheet (:mod:`symcomm.training.sheet`:
the cost's fields and time counts, the extras, the terms' and axes' rows) as one exact function over ``int`` and
``Fraction``, the subject's rules as exact code, and the step model's quantities
(:mod:`symcomm.training.steptime`) as the very float code its compiled evaluator runs, with the words of the rows
and of the report.

The document is :func:`symcomm.training.answers.eval_payload`'s, key for key and number for number, notes
included (``tests/training/test_hybridfast.py`` holds the two equal over a grid of cases).  The binding is the
same one: the words split and converted by :mod:`symcomm.training.words`, the step options by
:func:`symcomm.training.settings.step_options`, the presets filled by :func:`symcomm.presets.fill_from_presets`,
each value parsed by the one grammar with its bounds.  What this path does not take — another subject, a
backend, an algorithm, a model config or file, no model or no hardware, an option set or a dtype the data does
not hold, an uneven pipeline split, and every refusal (a name unknown or missing, a rule broken, a point with no
exact answer, a step model output that is not finite) — raises :class:`Fallback` with nothing said (the notes of
this path are held until it answers): then :func:`symcomm.training.answers.eval_payload` answers, with SymPy,
the same document or the same refusal.
"""

from __future__ import annotations

import math
from fractions import Fraction

from ..base import notes
from ..base.units import bytes_per_element
from ..numbers.exactops import NotExact, plain_exact, summed_time
from .settings import step_options
from .words import PER_MESSAGE_NAMES, TIME_NAMES, _value, _with_units, given, input_rows, preset_shape, units_of, \
    value_text, with_model_shape, add_hardware_report


class Fallback(Exception):
    """This call is not answered here (nothing was said): the general path answers it."""


class Missing(Fallback):
    """The generated data holds no entry for this key (``what``: "subject" or "step"); the generator adds it."""

    def __init__(self, what: str, key: tuple):
        super().__init__(f"no generated {what} for {key!r}")
        self.what, self.key = what, key


#: what this path's own steps may raise where the general path refuses (then that path says it in its words)
_REFUSED = (Fallback, NotExact, ValueError, KeyError, ArithmeticError, TypeError)


def usable(args) -> bool:
    """Whether ``args`` (eval's options) may be answered here: eval hybrid with a shipped model and hardware preset,
    no backend, algorithm or model config."""
    if args.name != "hybrid" or getattr(args, "backend", None) or getattr(args, "algorithm", None) \
            or getattr(args, "model_config", None) or not getattr(args, "model", None) \
            or not getattr(args, "hardware", None):
        return False
    from ..presets.systems import _is_path

    return not _is_path(str(args.model)) and not _is_path(str(args.hardware))


def answer(args, data=None) -> dict:
    """eval_payload's document for ``args``, or :class:`Fallback` (nothing said).  ``data``: the generated
    module (:mod:`symcomm.training.hybrid_data`), or what the generator holds while it prints it."""
    if data is None:
        from . import hybrid_data as data
    with notes.collected() as said:
        try:
            payload = _answer(args, data)
        except Missing:
            raise
        except _REFUSED as err:
            raise Fallback(str(err)) from None
    for note in said:
        notes.add(note.text, restates_default=note.restates_default)
    return payload


# -- the binding (binding.bound, answers._bound_words) -----------------------------------------------------------

def _bound(args, data):
    texts, option_texts = given(args, data.OPTION_WORDS)
    option_texts, step_texts = step_options(option_texts)
    option_texts = preset_shape(args, "hybrid", option_texts, data.OPTION_NAMES)
    key = tuple(sorted(option_texts.items()))
    entry = data.SUBJECTS.get(key)
    if entry is None:
        raise Missing("subject", key)
    typed = set(texts)
    texts, dtype, derived = _with_units(texts, args.dtype)
    from ..presets import fill_from_presets

    texts, dtype = fill_from_presets(_target(entry), texts, model_name=args.model, hardware_name=args.hardware,
                                     dtype=dtype, gpus_per_node=_word(texts.get("G")))
    if "s" in texts and "s" not in typed:
        notes.add(f"s={texts['s']} is the preset's sequence length (its context window); give s= for "
                  "the length you train at")
    values, times = _bind(entry, texts, data)
    return entry, key, values, times, dtype, typed, derived, step_texts


def _word(value):
    # a typed value as its word, None as None (binding._word)
    return None if value is None else value_text(value)


def _bind(entry: dict, texts: dict, data) -> tuple[dict, dict]:
    """binding.bind: name → exact value (int or Fraction), time constant → value, in the words' order."""
    needed = entry["needed"]
    values, times, unused = {}, {}, []
    for key, text in texts.items():
        if key in TIME_NAMES:
            times[key] = _value(key, text, False, 0)[0]
        elif key in data.WHOLE:                     # a known symbol: a strategy is open to every one
            least = entry["least"].get(key, data.LEAST[key])
            values[key] = _value(data.SPELLED.get(key, key), text, data.WHOLE[key], least)[0]
            if key not in needed and key not in data.STEP_NAMES:
                unused.append(key)
        else:
            raise Fallback(f"unknown parameter {key!r}")
    if not needed <= values.keys():
        raise Fallback("a needed name missing")
    for kind, message, names, check in entry["rules"]:
        if all(name in values for name in names):
            got = check(*[values[name] for name in names])
            if not _holds(kind, *got):
                raise Fallback(message)
    if unused:
        notes.add(f"{', '.join(unused)} not used by {entry['label']}")
    if times and not entry["time"] <= times.keys():
        raise Fallback("a time constant missing")
    return values, times


def _holds(kind: str, x, y=None) -> bool:
    """core.rules.KINDS' tests on exact Python numbers (fasteval._check's)."""
    if type(x) not in (int, Fraction) or (y is not None and type(y) not in (int, Fraction)):
        raise NotExact("a rule's value that is not exact")
    if kind == "power_of_two":
        return type(x) is int and x >= 1 and not x & (x - 1) or (type(x) is Fraction and x.denominator == 1
                                                                 and _holds(kind, x.numerator))
    if kind == "divides":
        return x == 0 or (Fraction(y) / x).denominator == 1
    if kind == "equals":
        return x == y
    return x >= y


def _target(entry: dict) -> "_Target":
    # one per entry, so that what fill_from_presets keeps on it (its fills by preset, N and G) lasts the process
    held = _TARGETS.get(entry["label"])
    if held is None:
        held = _TARGETS[entry["label"]] = _Target(entry)
    return held


_TARGETS: dict = {}


class _Target:
    """What :func:`symcomm.presets.fill_from_presets` reads of a subject, for a generated one."""

    def __init__(self, entry: dict):
        self.preset_names = entry["needed"]
        self.two_level = entry["two_level"]
        self.spreads_over_nics = entry["spreads_over_nics"]
        self.crossing = entry["crossing"]


# -- the sheet (sheet.planned) ---------------------------------------------------------------------------------

def _sheet_numbers(entry: dict, values: dict, times: dict, scale: int) -> dict:
    sheet = entry["sheets"].get((scale, bool(times)))
    if sheet is None:
        raise Fallback("no generated sheet at this scale")
    got = sheet["function"](*[values[name] for name in sheet["arguments"]])
    for number in got:
        if type(number) is not int and type(number) is not Fraction:
            raise NotExact("not an exact number")
    (f0, f1), (c0, _), (e0, e1), (t0, t1), (a0, _) = sheet["bounds"]
    result = {key: number if key in PER_MESSAGE_NAMES else number * scale
              for key, number in zip(sheet["fields"], got[f0:f1])}
    position = {name: i for i, name in enumerate(times)}
    weights = den = None
    if times:
        constants = list(times.values())
        den = math.lcm(*(1 if type(c) is int else c.denominator for c in constants))
        weights = [(c * den if type(c) is int else c.numerator * (den // c.denominator))
                   * (1 if name in PER_MESSAGE_NAMES else scale) for name, c in times.items()]
        result["time"] = summed_time(tuple(position[name] for name in sheet["coefficients"]), got[c0:], weights, den)
    extras = {key: plain_exact(number) for key, number in zip(sheet["extras"], got[e0:e1])}
    terms = []
    for i, (label, axis, primitive, algorithm, own, dtype) in enumerate(sheet["terms"]):
        group, message, count, send = got[t0 + 4 * i: t0 + 4 * i + 4]
        terms.append({"label": label, "axis": axis, "collective": primitive, "algorithm": algorithm,
                      "group": group if type(group) is int else plain_exact(group),
                      "message": message * own if type(message) is int else plain_exact(message * own),
                      "count": count if type(count) is int else plain_exact(count),
                      "send": send * own if type(send) is int else plain_exact(send * own), **dtype})
    stages = values.get("p")
    pick = 0 if stages == 1 else 1 if stages == 2 else 2
    axes, at = {}, a0
    for name, coefficients, words in sheet["axes"]:
        row = {"send": plain_exact(got[at] * scale), "stage": words[pick]}
        if times:
            time = summed_time(tuple(position[n] for n in coefficients), got[at + 1: at + 1 + len(coefficients)],
                                weights, den)
            row["time"] = time if type(time) is float else plain_exact(time)
            at += len(coefficients)
        at += 1
        axes[name] = row
    return {"result": result, "extras": extras, "terms": terms, "axes": axes}


# -- the answer (answers.eval_payload) ---------------------------------------------------------------------------

def _answer(args, data) -> dict:
    entry, key, values, times, dtype, typed, derived, step_texts = _bound(args, data)
    scale = bytes_per_element(dtype)          # a hardware preset: a dtype always (bf16 when not typed)
    unit = "bytes"
    at = _sheet_numbers(entry, values, times, scale)
    result, extras = at["result"], at["extras"]
    payload = {"label": entry["label"], "kind": entry["kind"], "name": "hybrid", "options": dict(entry["options"]),
               "values": {name: value if type(value) is int else plain_exact(value) for name, value in values.items()},
               "unit": unit, "dtype": dtype, "bytes_per_element": scale,
               **{k: val if type(val) is float else plain_exact(val) for k, val in result.items()}, **extras}
    payload["terms"] = at["terms"]
    if len(at["axes"]) > 1:
        payload["axes"] = at["axes"]
    payload["inputs"] = _inputs(args, values, times, typed, derived, dtype, data)
    payload["units"] = dict(units_of(tuple(result), tuple(extras), unit))
    payload["_result_keys"] = list(result)
    payload["_extra_keys"] = list(extras)
    payload["time_is"] = "communication alone (no compute, overlap or bubble); step_time is the whole step"
    payload.update(_step_report(args, entry, values, times, dtype, step_texts, data))
    return payload


def _inputs(args, values: dict, times: dict, typed: set, derived: dict, dtype: str, data) -> dict:
    key = (args.model, args.hardware, bool(args.dtype), dtype, tuple(typed), tuple(derived.items()), tuple(values),
           tuple(times))
    held = _ROWS.get(key)       # worded once per what determines them (shipped presets: fixed in a process)
    if held is None:
        held = input_rows(args.model, None, args.hardware, bool(args.dtype), dtype, frozenset(typed), derived,
                          tuple((name, data.UNITS[name]) for name in values), tuple(times))
        if len(_ROWS) >= 512:
            _ROWS.clear()
        _ROWS[key] = held
    rows, dtype_row = held
    out = {}
    for (name, unit, source, _), value in zip(rows, (*values.values(), *times.values())):
        out[name] = {"value": value if type(value) is int else plain_exact(value), "unit": unit, "source": source}
    out["dtype"] = dict(dtype_row)
    return out


#: the inputs' rows by what determines them (usable() takes shipped presets only, never a file)
_ROWS: dict = {}


def _step_report(args, entry: dict, values: dict, times: dict, dtype: str, step_texts: dict, data) -> dict:
    """answers._step_numbers and answers._step_report, the step model's numbers from its generated code."""
    from .. import presets

    scale = bytes_per_element(dtype)
    system = presets.hardware(args.hardware)
    options = entry["options"]
    precision = str(options.get("precision", "bf16"))
    kernel = str(step_texts.get("attention_kernel", "fused"))
    typed_peaks = {name: float(values[name]) for name in ("peak", "peak_fp8") if name in values}
    if "peak_fp8" in typed_peaks and precision == "bf16":
        notes.add("peak_fp8 not used: precision=bf16 runs no matmul in FP8")
    compute = system.compute_values(dtype, precision, False, kernel, typed_peaks)
    if dtype == "fp8" and precision == "bf16":
        raise Fallback("fp8 with bf16 precision")      # not generated: its note is the general path's
    model = presets.model(args.model)
    numbers = {name: float(value) for name, value in values.items()}
    numbers, step_texts = with_model_shape(model, numbers, step_texts)
    if "F" not in numbers or (step_texts.get("q_width", "h") == "heads" and "h_q" not in numbers):
        raise Fallback("the step model's shape missing")
    for name, value in times.items():
        numbers[name] = float(value) * (1 if name in PER_MESSAGE_NAMES else scale)
    numbers.update(compute)
    options = {**{k: v for k, v in options.items() if k != "backend"}, **step_texts}
    key = (scale, tuple(sorted(options.items())))
    step = data.STEPS.get(key)
    if step is None:
        raise Missing("step", key)
    point = presets.systems.absent_filled({name: float(value) for name, value in numbers.items()})
    if not data.SYMBOL_NAMES.issuperset(point):
        raise Fallback("a name the step model does not know")
    got = step["function"](*[point[name] for name in step["arguments"]])   # ArithmeticError: numpy's inf, nan
    number = dict(zip(step["names"], map(float, got)))
    if not math.isfinite(sum(number.values())):
        raise Fallback("a step model output that is not finite")     # steptime.check_finite refuses it
    out = {k: number[k] for k in data.STEP_UNITS}
    out["comm_time_per_axis"] = {short: number[k] for short, k in step["comm"]}
    out["exposed_comm_time_per_axis"] = {short: number[k] for short, k in step["exposed"]}
    out["memory"] = {short: number[k] for short, k in step["memory"]}
    out["memory_stage"] = dict(step["memory_stage"])
    out["bubble_fraction_of_step"] = number["bubble_time"] / number["step_time"]
    out["units"] = dict(step["units"])
    out["busiest_stage"] = dict(step["busiest"][0 if int(numbers.get("p", 0)) == 1 else 1])
    out["options"] = dict(step["options"])
    out["assumptions"] = list(step["assumptions"])
    return add_hardware_report(out, system, compute, sorted(typed_peaks), options, dtype)
