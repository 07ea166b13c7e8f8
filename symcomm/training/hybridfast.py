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

A Python API call answered here leaves its plan (:class:`_Plan`): what the answer read besides the numbers typed,
resolved once; the next call with the same names is answered by it (:func:`warm`), its numbers parsed, bounded,
checked and computed as here.
"""

from __future__ import annotations

import math
from fractions import Fraction

from ..base import notes
from ..base.units import bytes_per_element
from ..numbers.exactops import NotExact, plain_exact, summed_time
from ..presets.systems import TYPED_HARDWARE
from .settings import OPTIONS, step_options
from .frameworks import blackwell_head_dim_note, framework_attention, framework_zero
from .words import NEEDS_OPTION, PER_MESSAGE_NAMES, TIME_IS, TIME_NAMES, _value, _with_units, given, hardware_words, input_rows, \
    hardware_wiring, layout_notes, layout_refusal, preset_shape, units_of, value_text, with_model_shape, \
    add_hardware_report, say_unread_step


class Fallback(Exception):
    """This call is not answered here (nothing was said): the general path answers it."""


class Missing(Fallback):
    """The generated data holds no entry for this key (``what``: "subject" or "step"); the generator adds it."""

    def __init__(self, what: str, key: tuple):
        super().__init__(f"no generated {what} for {key!r}")
        self.what, self.key = what, key


#: what this path's own steps, a plan's answer included, may raise where the general path answers or refuses (then
#: that path says it in its words; the Python API's warm path catches it too)
REFUSED = (Fallback, NotExact, ValueError, KeyError, ArithmeticError, TypeError)


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
    key = None
    if data is None:
        from . import hybrid_data as data

        payload = warm(args)
        if payload is not None:
            return payload
        key = _plan_key(args)
    with notes.collected() as said:
        try:
            payload = _answer(args, data)
        except Missing:
            raise
        except REFUSED as err:
            raise Fallback(str(err)) from None
    for note in said:
        notes.add(note.text, restates_default=note.restates_default)
    if key is not None:
        _keep_plan(key, args, data, tuple(said))
    return payload


# -- the binding (binding.bound, answers._bound_words) -----------------------------------------------------------

def _bound(args, data):
    texts, option_texts = given(args, data.OPTION_WORDS)
    option_texts, step_texts = step_options(option_texts)
    option_texts = framework_zero(preset_shape(args, "hybrid", option_texts, data.OPTION_NAMES), data.OPTION_NAMES)
    option_texts = hardware_wiring(args, option_texts, data.OPTION_NAMES)
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
    if any(key in NEEDS_OPTION for key in unused):
        raise Fallback("a layer count typed without its option")      # the general path refuses it, in its words
    if unused:
        notes.add(f"{', '.join(unused)} not used by {entry['label']}", unread=tuple(unused))
    if times and not entry["time"] <= times.keys():
        raise Fallback("a time constant missing")
    return values, times


def _holds(kind: str, x, y=None) -> bool:
    """core.rules.KINDS' tests on exact Python numbers (fasteval._check's)."""
    if kind == "divides" and type(x) is int and type(y) is int:    # the common case: no Fraction built
        return x == 0 or y % x == 0
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
    (f0, f1), (c0, _), (e0, e1), (t0, t1), (a0, _) = sheet["bounds"]
    for i, number in enumerate(got):
        if type(number) is not int and type(number) is not Fraction and not (e0 <= i < e1 and type(number) is float):
            raise NotExact("not an exact number")
    result = {key: number if key in PER_MESSAGE_NAMES else number * scale
              for key, number in zip(sheet["fields"], got[f0:f1])}
    position = {name: i for i, name in enumerate(times)}
    weights = den = None
    if times:
        constants = list(times.values())
        den = math.lcm(*(1 if type(c) is int else c.denominator for c in constants))
        weights = [(c * den if type(c) is int else c.numerator * (den // c.denominator))
                   * (1 if name in PER_MESSAGE_NAMES else scale) for name, c in times.items()]
        legs_at = (position["beta"], position["beta_inter"]) if "beta" in position and "beta_inter" in position else None
        width = len(sheet["coefficients"]) + 2 * sheet["legs"]
        result["time"] = summed_time(tuple(position[name] for name in sheet["coefficients"]), got[c0:c0 + width],
                                     weights, den, legs_at)
    extras = {key: number if type(number) is float else plain_exact(number)     # a float: shown already
              for key, number in zip(sheet["extras"], got[e0:e1])}
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
    for name, coefficients, words, legs in sheet["axes"]:
        row = {"send": plain_exact(got[at] * scale), "stage": words[pick]}
        if times:
            width = len(coefficients) + 2 * legs
            time = summed_time(tuple(position[n] for n in coefficients), got[at + 1: at + 1 + width],
                               weights, den, legs_at)
            row["time"] = time if type(time) is float else plain_exact(time)
            at += width
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
    payload["time_is"] = TIME_IS
    payload.update(_step_report(args, entry, values, times, dtype, step_texts, data, typed))
    return payload


def _inputs(args, values: dict, times: dict, typed: set, derived: dict, dtype: str, data) -> dict:
    rows, dtype_row = _input_rows(args, values, times, typed, derived, dtype, data)
    out = {}
    for (name, unit, source, _), value in zip(rows, (*values.values(), *times.values())):
        out[name] = {"value": value if type(value) is int else plain_exact(value), "unit": unit, "source": source}
    out["dtype"] = dict(dtype_row)
    return out


def _input_rows(args, values: dict, times: dict, typed: set, derived: dict, dtype: str, data) -> tuple:
    key = (args.model, args.hardware, bool(args.dtype), dtype, tuple(typed), tuple(derived.items()), tuple(values),
           tuple(times))
    held = _ROWS.get(key)       # worded once per what determines them (shipped presets: fixed in a process)
    if held is None:
        held = input_rows(args.model, None, args.hardware, bool(args.dtype), dtype, frozenset(typed), derived,
                          tuple((name, data.UNITS[name]) for name in values), tuple(times))
        if len(_ROWS) >= 512:
            _ROWS.clear()
        _ROWS[key] = held
    return held


#: the inputs' rows by what determines them (usable() takes shipped presets only, never a file)
_ROWS: dict = {}


def _step_report(args, entry: dict, values: dict, times: dict, dtype: str, step_texts: dict, data,
                 typed=frozenset()) -> dict:
    """answers._step_numbers and answers._step_report, the step model's numbers from its generated code."""
    from .. import presets

    scale = bytes_per_element(dtype)
    system = presets.hardware(args.hardware)
    options = entry["options"]
    precision = str(options.get("precision", "bf16"))
    kernel = str(step_texts.get("attention_kernel", "fused"))
    typed_peaks = {name: float(values[name]) for name in TYPED_HARDWARE if name in values}
    said = presets.systems.unused_peaks(typed_peaks, precision, kernel)
    for note in said:
        notes.add(note)
    compute = system.compute_values(dtype, precision, False, kernel, typed_peaks)
    extra, said_kernel = framework_attention(str(options.get("framework", OPTIONS["framework"].default)), system, kernel, typed_peaks)
    if said_kernel:
        notes.add(said_kernel)
    compute = {**compute, **extra}
    if dtype == "fp8" and precision == "bf16":
        raise Fallback("fp8 with bf16 precision")      # not generated: its note is the general path's
    model = presets.model(args.model)
    said_heads = blackwell_head_dim_note(str(options.get("framework", OPTIONS["framework"].default)), system, model,
                                         bool(step_texts.get("flash", True)), kernel)
    if said_heads:
        notes.add(said_heads)
    numbers = {name: float(value) for name, value in values.items()}
    numbers, step_texts = with_model_shape(model, numbers, step_texts)
    if layout_refusal(step_texts, options, numbers):
        raise Fallback("a layout the step model refuses")      # the general path refuses it, in its words
    for note in layout_notes(system, options, numbers, step_texts):
        notes.add(note)
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
    say_unread_step(typed, data.STEP_NAMES, entry["needed"], step["arguments"], said)
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
    return add_hardware_report(out, system, compute, sorted(typed_peaks), options, dtype, step["arguments"],
                               args.model)


# -- the plan: what a call met before reads again, resolved once (the Python API's warm calls) ---------------------
#
# Everything an answer reads but the numbers typed — the option set's entry, the presets' values parsed, the rules
# that apply, the sheet's and the step model's arguments by position, the time constants' weights, the rows' words,
# the notes — depends on the model and hardware presets, the dtype, the option words and the names typed alone
# (the shipped presets never change in a process).  Held per those (a bounded table), a call with the same names
# parses, bounds and checks its numbers and computes every field again; only the resolving is not redone.

#: names whose value changes more than a number (the link rule reads N and G, a unit or a bandwidth is converted, a
#: typed peak or constant changes the hardware's constants, a typed time constant the weights): such calls are not planned
_UNPLANNED = frozenset(("N", "G", "M", "bw", "bw_inter", "gpus_per_node", *TYPED_HARDWARE)) | TIME_NAMES


def warm(args) -> dict | None:
    """:func:`answer` by the plan of a call met before with the same names (:class:`_Plan`), or None when none is
    held (:func:`answer` then answers, and plans the names it answered); :class:`Fallback` as :func:`answer`."""
    key = _plan_key(args)
    plan = _PLANS.get(key) if key is not None else None
    if plan is None or plan is _ONCE:
        return None
    try:
        payload = plan.answer(args.values)
    except Unplanned:
        return None         # answered as a first call is
    except REFUSED as err:
        raise Fallback(str(err)) from None
    if plan.notes:
        notes.extend(plan.notes)
    return payload


def held(model, hardware, dtype, backend, algorithm, model_config, given_values: dict):
    """The :class:`_Plan` held for an API call of ``eval hybrid`` with these options and keyword values, or None:
    the Python API answers by it at once (its ``answer`` raises what :func:`warm` turns into :class:`Fallback`)."""
    plan = _PLANS.get(_key(model, hardware, dtype, backend, algorithm, model_config, given_values))
    return None if plan is _ONCE else plan


def may_plan(args) -> bool:
    """Whether an answer here may yet plan ``args``' names (the API's values, answered at most once so far)."""
    key = _plan_key(args)
    return key is not None and _PLANS.get(key, _UNSEEN) in (_UNSEEN, _ONCE)


def _plan_key(args):
    """What the plan of ``args`` depends on (the API's keyword values: the option words with their text, the
    other names alone), or None for a call that is not planned (words from the command line: one call a process)."""
    given_values = getattr(args, "values", None)
    if given_values is None or args.name != "hybrid":
        return None
    return _key(args.model, args.hardware, args.dtype, getattr(args, "backend", None),
                getattr(args, "algorithm", None), getattr(args, "model_config", None), given_values)


def _key(model, hardware, dtype, backend, algorithm, model_config, given_values: dict) -> tuple:
    # the names in order, then each option word's text by its name: which names are option words is looked up once
    # per the names given (no set built, sorted and walked per call)
    names = tuple(given_values)
    options = _OPTIONS_OF.get(names)
    if options is None:
        options = tuple(sorted((_OPTION_WORDS or _option_words()).intersection(names)))
        if len(_OPTIONS_OF) >= 256:
            _OPTIONS_OF.clear()
        _OPTIONS_OF[names] = options
    if not options:
        return model, hardware, dtype, backend, algorithm, model_config, names
    if len(options) == 1:
        return model, hardware, dtype, backend, algorithm, model_config, names, value_text(given_values[options[0]])
    return (model, hardware, dtype, backend, algorithm, model_config, names,
            *[value_text(given_values[name]) for name in options])


#: the names given, in order → the option words among them, sorted
_OPTIONS_OF: dict = {}


def _option_words() -> frozenset:
    global _OPTION_WORDS
    if _OPTION_WORDS is None:
        from . import hybrid_data

        _OPTION_WORDS = hybrid_data.OPTION_WORDS
    return _OPTION_WORDS


#: the generated module's option words, kept once read (an import statement per call costs its lookups)
_OPTION_WORDS = None


class _Plan:
    """One call's answer resolved but for its numbers (see above): ``answer(given_values)``, the plan's one printed
    function (:mod:`symcomm.training.hybridplan`), gives eval_payload's document for the API's keyword values under
    the plan's names, each parsed and bounded, the rules checked, the sheet and the step model computed; read by
    :func:`warm`."""

    __slots__ = ("answer", "notes", "texts")

    def __init__(self, **parts):
        for name, value in parts.items():
            setattr(self, name, value)


#: what the exact code's numbers are (an int, else a Fraction)
_EXACT = frozenset((int, Fraction))
#: what the generated code's extras are (an exact number, or a quotient that is not whole as the float it shows)
_SHOWN = _EXACT | {float}
_INT = frozenset((int,))
#: plan key → its _Plan (None: a call of these names that is not planned; _ONCE: answered once, not yet planned)
_PLANS: dict = {}
_UNSEEN, _ONCE = object(), object()


def _keep_plan(key: tuple, args, data, said: tuple) -> None:
    """Plan ``key`` at its second answer (sheet.Plan's rule: a call made once pays for no printing)."""
    held = _PLANS.get(key, _UNSEEN)
    if held is not _UNSEEN and held is not _ONCE:
        return      # planned, or not to be planned
    if len(_PLANS) >= 256:
        _PLANS.clear()
    if held is _UNSEEN:
        _PLANS[key] = _ONCE
        return
    try:
        _PLANS[key] = _plan(args, data, said)
    except REFUSED:
        _PLANS[key] = None


def _plan(args, data, said: tuple):
    """The :class:`_Plan` of a call just answered (``said``: the notes it said), or None where it is not planned."""
    from .. import presets

    with notes.collected():
        entry, _, values, times, dtype, typed, derived, step_texts = _bound(args, data)
    if derived or not typed.isdisjoint(_UNPLANNED) or not typed <= values.keys() or not typed <= args.values.keys():
        return None
    at = {name: i for i, name in enumerate(values)}      # each value by its place in the bound values' order
    slots = []
    for name, value in values.items():
        if name not in typed:
            slots.append((None, None, None, None, None, value))
        else:
            whole, least = data.WHOLE[name], entry["least"].get(name, data.LEAST[name])
            slots.append((name, data.SPELLED.get(name, name), whole, least, least if whole else 0, None))
    rules = tuple((kind, [at[name] for name in names], check) for kind, _, names, check in entry["rules"]
                  if all(name in values for name in names))
    scale = bytes_per_element(dtype)
    sheet = entry["sheets"][(scale, bool(times))]
    rows, dtype_row = _input_rows(args, values, times, typed, derived, dtype, data)
    # the step model: its point with the numbers typed left open (filled per call by position)
    system = presets.hardware(args.hardware)
    options = entry["options"]
    precision = str(options.get("precision", "bf16"))
    kernel = str(step_texts.get("attention_kernel", "fused"))
    compute = {**system.compute_values(dtype, precision, False, kernel, {}),
               **framework_attention(str(options.get("framework", OPTIONS["framework"].default)), system, kernel, typed)[0]}
    if dtype == "fp8" and precision == "bf16":
        return None
    # what the first call said of its layout and values (the model's shape, the layout's refusals and notes), which a
    # later call's numbers may change: each call's words held against these (_Worded)
    worded = (system, presets.model(args.model), options, dict(step_texts))
    words_of = _layout_words(worded, values)
    if words_of is None:
        return None
    numbers = {name: float(value) for name, value in values.items()}
    numbers, step_texts = with_model_shape(presets.model(args.model), numbers, step_texts)
    if "F" not in numbers or (step_texts.get("q_width", "h") == "heads" and "h_q" not in numbers):
        return None
    for name, value in times.items():
        numbers[name] = float(value) * (1 if name in PER_MESSAGE_NAMES else scale)
    numbers.update(compute)
    stepping = {**{k: v for k, v in options.items() if k != "backend"}, **step_texts}
    step = data.STEPS.get((scale, tuple(sorted(stepping.items()))))
    point = presets.systems.absent_filled(numbers)
    if step is None or not data.SYMBOL_NAMES.issuperset(point) or not typed.isdisjoint(compute):
        return None
    names = step["names"]
    if len(set(names)) != len(names):
        return None     # the report reads its quantities by name: each once
    report = (step, {name: i for i, name in enumerate(names)}, data.STEP_UNITS,
              None if "p" in typed else (0 if int(numbers.get("p", 0)) == 1 else 1))
    step_at = [at[name] if name in typed else None for name in step["arguments"]]
    from .hybridplan import hardware, printed

    binding = (slots, rules, sheet["function"], [at[name] for name in sheet["arguments"]], step["function"],
               [point[name] for name in step["arguments"]], step_at)
    fill = (entry, sheet, values, times, at, scale, dtype, rows, dtype_row, report, TIME_IS)
    words = hardware(system, hardware_words(system, compute, (), stepping, dtype, step["arguments"], args.model))
    answer = _Worded(printed(binding, fill, (_holds, Fallback, _exact_whole, _step_numbers), words), worded, words_of)
    return _Plan(answer=answer, notes=said, texts=tuple([note.text for note in said]))


class Unplanned(Fallback):
    """A held plan's numbers for which eval says other words of the layout than the call it was planned from (a
    refusal, or a note of the model's shape or the layout): answered as a first call is."""


def _layout_words(worded: tuple, values: dict) -> tuple | None:
    """What eval says of ``values`` that the numbers alone decide (the notes of the model's shape and of the layout,
    :func:`with_model_shape` and :func:`layout_notes`), or None where it refuses the layout (:func:`layout_refusal`):
    a plan's answer is its first call's only where these are its first call's."""
    system, model, options, step_texts = worded
    numbers = {name: float(value) for name, value in values.items()}
    with notes.collected() as said:
        numbers, texts = with_model_shape(model, numbers, dict(step_texts))
    if layout_refusal(texts, options, numbers):
        return None
    return tuple([note.text for note in said]) + layout_notes(system, options, numbers, texts)


class _Worded:
    """A plan's printed answer, held to its first call's words: another call's numbers whose words differ (a layout
    refused or said otherwise: heads t does not divide, groups that straddle the NVLink domains, GPUs that do not fill
    a node) raise :class:`Unplanned`, each distinct set of typed values worded once."""

    __slots__ = ("printed", "worded", "words", "seen")

    def __init__(self, printed_answer, worded: tuple, words: tuple):
        self.printed, self.worded, self.words, self.seen = printed_answer, worded, words, {}

    def __call__(self, given_values: dict, keys: bool = True) -> dict:
        payload = self.printed(given_values, keys)
        try:
            key = tuple(given_values.values())
            same = self.seen.get(key)
        except TypeError:           # a value that does not hash: worded every call
            key, same = None, None
        if same is None:
            same = _layout_words(self.worded, payload["values"]) == self.words
            if key is not None:
                if len(self.seen) >= 1024:
                    self.seen.clear()
                self.seen[key] = same
        if not same:
            raise Unplanned("a layout worded otherwise than the plan's first call")
        return payload


def _exact_whole(got: tuple, whole: bool, e0: int, e1: int, ints: bool = False) -> bool:
    """Whether a plan's values (``whole``) and its sheet's numbers ``got`` but the extras (``got[e0:e1]``, shown by
    plain_exact either way, or floats the generated code showed already) are all ints, so shown as they are without
    a test each; NotExact where a number of the exact code is not exact.  ``ints``: the values are ints and the
    generated sheet's last number says it made no Fraction and met no value without an exact answer (its numbers
    are then ints, the extras ints or floats): whole, nothing tested."""
    if ints and int in _INT:
        return True
    # ints throughout, the common case, found by summing each side of the extras: a sum of ints is an int, and a
    # Fraction makes it one (a term with no exact value raises NotExact), where a test of each number's type costs
    # a call each; the exact code makes ints and Fractions only, but what is not an int is tested by type as before
    if not _SHOWN.issuperset(map(type, got[e0:e1])):
        raise NotExact("not an exact number")
    if whole and int in _INT and type(sum(got[:e0])) is int and type(sum(got[e1:])) is int:
        return True
    if not (_EXACT.issuperset(map(type, got[:e0])) and _EXACT.issuperset(map(type, got[e1:]))):
        raise NotExact("not an exact number")
    return False


def _step_numbers(number) -> tuple:
    """The step model's quantities (_step_report's) as floats, read by position in a plan's document."""
    number = tuple(map(float, number))
    if not math.isfinite(sum(number)):
        raise Fallback("a step model output that is not finite")     # steptime.check_finite refuses it
    return number
