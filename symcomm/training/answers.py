"""What ``symcomm eval`` and ``symcomm compare`` answer, as their JSON documents: a subject bound
(:mod:`symcomm.training.binding`) and evaluated exactly, its terms and axes, the step model beside it
(``eval hybrid --hardware``), every input echoed with its unit and source, and the unit of every number.
The commands print these documents; the Python API (:mod:`symcomm.api`) returns them.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from types import SimpleNamespace

from ..core import symbols as S
from ..collectives.algorithms import algorithms_of
from ..base import memo, notes
from ..base.errors import InputError
from ..numbers.evaluation import exact, exact_numbers, plain
from ..collectives.primitives import PRIMITIVES
from ..base.units import bytes_per_element
from .binding import (_PER_MESSAGE, _SPELLED, _TIME_NAMES, _TIME_UNITS, TIME_RULE, UsageError, _phi_from_shape,
                      _needed_of, _preset_shape, _presets, _with_units, _word, bound, floats_of, given, parse_value)
from ..numbers.exactops import NotExact
from ..presets.systems import TYPED_HARDWARE
from .sheet import _axis_rows, _cost_parts, _label, _numbers, _sheet, _term_rows, _time, plan_of, planned
from .settings import OPTIONS
from ..presets.hardware_values import low_dtype_note
from .frameworks import blackwell_head_dim_note, framework_attention, framework_zero
from .megatron_features import head_split_refusal
from .subjects import Subject, option_names, subject
from .words import (PER_MESSAGE_NAMES, input_rows, units_of as _units_of, with_model_shape, add_hardware_report,
                    layout_notes, layout_refusal, model_of, say_unread_step, TIME_IS)


def _costs_at(target: Subject, values: dict, times: dict, scale: int, in_bytes: bool = False) -> dict:
    """The cost's fields at ``values`` (× ``scale``); ``in_bytes``: terms with their own element type
    (fp32 gradients) count their own size, so the figures are bytes on the wire."""
    out: dict = {}
    numbers = _numbers(values)
    fields, coefficients, legs = _cost_parts(target, scale if in_bytes else None)
    exprs = tuple(expr for _, expr in fields) + (tuple(coef for _, coef in coefficients)
                                                 + tuple(x for leg in legs for x in leg) if times else ())
    got = [exact(e, values) for e in exprs] if numbers is None else exact_numbers(exprs, numbers, values)
    for (key, _), number in zip(fields, got):
        out[key] = number if key in ("alpha", "alpha_inter") else number * scale
    if times:
        out["time"] = _time(coefficients, numbers, values, times, scale, got[len(fields):], legs=legs)
    return out


def _inputs(args, values: dict, times: dict, typed: set, derived: dict, dtype: str | None) -> dict:
    """Every value the answer used, with its unit and where it came from."""
    # the rows found by the identities of the bound symbols (module constants), not by hashing each symbol
    key = (args.model, args.model_config, args.hardware, bool(args.dtype), dtype, frozenset(typed),
           tuple(derived.items()), tuple(map(id, values)), tuple(map(id, times)))
    rows = _ROWS_BY_ID.get(key)
    if rows is None:
        rows = _input_rows(args.model, args.model_config, args.hardware, bool(args.dtype), dtype,
                           frozenset(typed), tuple(derived.items()), tuple(values), tuple(times))
        if any(held is rows for held in _INPUT_ROWS.values()):      # a shipped preset's (a file is read again)
            if len(_ROWS_BY_ID) >= 512:
                _ROWS_BY_ID.clear()
            _ROWS_BY_ID[key] = rows
    # the rows are the values' then the time constants', in the bound dicts' order; a time constant that is not
    # whole is shown as its float, which the binding converted with its parse (floats_of: float() of the same
    # exact number, as plain() rounds it)
    point = [*(_numbers(values) or values).values(), *_times_shown(times)]
    out = {name: {"value": value if type(value) in _SHOWN else plain(value), "unit": unit, "source": source}
           for (name, _, unit, source, _), value in zip(rows, point)}
    if dtype:
        out["dtype"] = dict(rows.dtype_row)
    return out


#: _input_rows by what determines them, the bound symbols by identity (the rows hold them: no id reused)
_ROWS_BY_ID: dict = {}


#: numbers an input shows as they are
_SHOWN = frozenset((int, float))


def _times_shown(times: dict):
    """The bound time constants as the inputs show them: an int when whole, else the float of the exact number."""
    if not times:
        return ()
    exact, floats = _numbers(times), floats_of(times)
    if exact is None or floats is None:
        return (_numbers(times) or times).values()
    return [value if type(value) is int else shown for value, shown in zip(exact.values(), floats.values())]


class _Rows(tuple):
    """The inputs' (name, symbol, unit, source, is a time constant) rows, with the dtype's row."""
    dtype_row: dict


def _input_rows(model, model_config, hardware, dtype_typed: bool, dtype, typed: frozenset, derived: tuple,
                value_symbols: tuple, time_symbols: tuple) -> _Rows:
    """Each input's name, unit and source: a function of the names given and the presets alone, worded once
    per process for the shipped presets (a file is read again each time: it may have changed)."""
    key = (model, model_config, hardware, dtype_typed, dtype, typed, derived, value_symbols, time_symbols)
    held = _INPUT_ROWS.get(key)
    if held is not None:
        return held
    from ..presets.systems import _is_path

    rows = _input_rows_built(model, model_config, hardware, dtype_typed, dtype, typed, dict(derived),
                             value_symbols, time_symbols)
    if not model_config and not (hardware and _is_path(str(hardware))) and not (model and _is_path(str(model))):
        if len(_INPUT_ROWS) >= 512:
            _INPUT_ROWS.clear()
        _INPUT_ROWS[key] = rows
    return rows


#: the inputs' rows by what determines them (the shipped presets never change in a process)
_INPUT_ROWS: dict = {}


def _input_rows_built(model, model_config, hardware, dtype_typed, dtype, typed, derived, value_symbols,
                      time_symbols) -> _Rows:
    # worded by words.input_rows (SymPy-free: the primitives' fast path words its inputs with it too)
    found, dtype_row = input_rows(model, model_config, hardware, dtype_typed, dtype, typed, derived,
                                  tuple((S.BY_SYMBOL[sym].cli_name, S.BY_SYMBOL[sym].unit) for sym in value_symbols),
                                  tuple(S.BY_SYMBOL[sym].cli_name for sym in time_symbols))
    out = _Rows((name, sym, unit, source, is_time)
                for sym, (name, unit, source, is_time) in zip((*value_symbols, *time_symbols), found))
    if dtype_row is not None:
        out.dtype_row = dtype_row
    return out


def _units(result: dict, extras: dict, unit: str) -> dict:
    """The unit of every number in the answer (alpha and beta there are counts, not the inputs α, β)."""
    return dict(_units_of(tuple(result), tuple(extras), unit))


def _steptime():
    # imported on first use: only `eval hybrid` needs the step model (then kept: an import statement per call
    # costs its lookups on every answer)
    global _STEPTIME
    if _STEPTIME is None:
        from . import steptime

        _STEPTIME = steptime
    return _STEPTIME


_STEPTIME = None


def _step_numbers(args, target: Subject, values: dict, times: dict, dtype: str, step_texts: dict,
                  fitting: bool = False):
    """(the step model's values by CLI name, its options, the hardware, its compute values) at the bound
    values: the model's shape (F, gated) from the preset or config, the hardware's peak at --dtype and its
    fitted constants, β and γ per element of --dtype."""
    presets = _presets()
    scale = bytes_per_element(dtype)
    try:
        system = presets.hardware(args.hardware)
        precision = str(target.options.get("precision", "bf16"))      # a hybrid option (its gathers)
        kernel = str(step_texts.get("attention_kernel", "fused"))       # a step option (its core's share)
        typed_peaks = {_CLI_NAME[sym]: float(values[sym]) for sym in _PEAKS_IN_ORDER if sym in values}
        said = presets.systems.unused_peaks(typed_peaks, precision, kernel)
        for note in said:
            notes.add(note)
        compute = _compute_values(system, args.hardware, dtype, precision, fitting, kernel, typed_peaks)
        if not fitting:
            extra, said_kernel = framework_attention(str(target.options.get("framework", OPTIONS["framework"].default)), system,
                                                     kernel, typed_peaks)
            if said_kernel:
                notes.add(said_kernel)
            compute = {**compute, **extra}
        if low_dtype_note(dtype, precision):
            notes.add(low_dtype_note(dtype, precision))
        model = model_of(args)
        said_heads = blackwell_head_dim_note(str(target.options.get("framework", OPTIONS["framework"].default)),
                                             system, model, bool(step_texts.get("flash", True)), kernel)
        if said_heads:
            notes.add(said_heads)
    except ValueError as err:
        raise UsageError(str(err)) from None
    # floats of the exact Python numbers (float() of an int or a Fraction rounds as SymPy's does, cheaper)
    floats = floats_of(values)       # the binding's floats of the same numbers, by name (converted with the parse)
    numbers = dict(floats) if floats is not None else \
        {_CLI_NAME[sym]: float(val) for sym, val in (_numbers(values) or values).items()}
    typed_kv = "h_kv" in numbers and model is None      # an h_kv of the words, not of a model's shape
    if model is not None:
        numbers, step_texts = with_model_shape(model, numbers, step_texts)
    refused = layout_refusal(step_texts, target.options, numbers)
    if refused:
        raise UsageError(refused)
    for note in layout_notes(system, target.options, numbers, step_texts):
        notes.add(note)
    grouped = _set(target, "gqa")
    if "h_kv" not in numbers and not grouped:
        # gqa=0: K and V are h wide (the strategy's own reading of it), so there is no h_kv to ask for
        numbers["h_kv"] = numbers["h"]
        notes.add("h_kv = h: with gqa=0 the step model counts K and V as wide as h (give gqa=1 and h_kv for "
                  "grouped-query attention)")
    elif model is not None and not typed_kv and not grouped and "h_kv" in numbers and numbers["h_kv"] != numbers["h"]:
        # gqa=0 typed over a model's grouped K, V: their FLOPs as wide as the communication and memory count them (an
        # h_kv typed beside gqa=0, as the page's views type it, stays the FLOPs' own: the page's step model reads it)
        notes.add(f"gqa=0: K and V counted as wide as h = {numbers['h']:g} in the FLOPs too, not h_kv = "
                  f"{numbers['h_kv']:g} (give gqa=1 to count them h_kv wide)")
        numbers["h_kv"] = numbers["h"]
    if _set(target, "cpu_offload"):
        notes.add("cpu_offload=1: the activations of L_off layers are counted in host memory, not the GPU's; the copies "
                  "to and from the host are not timed (Megatron-Core runs them on their own stream) and their buffers "
                  "in flight on the GPU are not counted")
    missing = [name for name in (*_STEP_SHAPE, *(_EXPERT_SHAPE if _set(target, "moe") else ())) if name not in numbers]
    if missing:
        wanted = "; ".join(f"{name}, {_SHAPE_WORDS[name]}" for name in missing)
        raise UsageError(f"missing {', '.join(missing)}: the step time needs {wanted} (give --model, --model-config "
                         "or " + ", ".join(f"{name}=..." for name in missing) + ")")
    if step_texts.get("q_width", "h") == "heads" and "h_q" not in numbers:
        raise UsageError("missing h_q: q_width=heads needs the query width h_q = a·head_dim (give --model, "
                         "--model-config or h_q=...)")
    floats = floats_of(times) if times else None
    if floats is not None:
        for name, value in floats.items():
            numbers[name] = value * (1 if name in PER_MESSAGE_NAMES else scale)    # per element of --dtype
    else:
        for sym, value in ((_numbers(times) or times) if times else times).items():
            numbers[_CLI_NAME[sym]] = float(value) * (1 if sym in _PER_MESSAGE else scale)
    numbers.update(compute)
    # the strategy's options the step model reads: a function of the (cached, immutable) subject alone
    options = memo.once(target, "_answers_step_options",
                        lambda: {key: value for key, value in target.options.items() if key != "backend"})
    return numbers, {**options, **step_texts}, system, compute, said


def _set(target: Subject, name: str):
    """The typed value of the subject's option ``name`` (its text read by the settings' own table)."""
    option = OPTIONS[name]
    return option.resolve(target.options.get(name, option.default))


#: the shape the step model reads beyond what the communication binds, and the words that ask for it
_STEP_SHAPE = ("F", "V")
_EXPERT_SHAPE = ("F_e", "E_s")
_SHAPE_WORDS = {"F": "the FFN width", "V": "the vocabulary size (the LM head)",
                "F_e": "each expert's FFN width (moe=1)", "E_s": "the count of shared experts (moe=1; 0 for none)"}


def _compute_values(system, hardware: str, dtype: str, precision: str, fitting: bool, kernel: str,
                    typed_peaks: dict) -> dict:
    """system.compute_values, worked out once per process for a shipped preset (immutable; a hardware file is
    read again each time: it may change); the dict is read, never changed, by its callers."""
    key = (hardware, dtype, precision, fitting, kernel, tuple(typed_peaks.items()))
    held = _COMPUTE_VALUES.get(key)      # only a shipped preset's are kept: a hit is one (no path test per call)
    if held is None:
        if _presets().systems._is_path(str(hardware)):
            return system.compute_values(dtype, precision, fitting, kernel, typed_peaks)
        held = system.compute_values(dtype, precision, fitting, kernel, typed_peaks)    # a refusal is not kept
        if len(_COMPUTE_VALUES) >= 256:
            _COMPUTE_VALUES.clear()
        _COMPUTE_VALUES[key] = held
    return held


#: (shipped hardware, dtype, precision, fitting, attention kernel, typed peaks) → its compute values
_COMPUTE_VALUES: dict = {}


#: the hardware values a user may type in place of the hardware's (Hardware.compute_values): the peaks and constants
_PEAKS = frozenset(S.SYMBOLS[name].symbol for name in TYPED_HARDWARE)
#: the same as a tuple to walk: each looked up in the bound values (two lookups; where worded, sorted), rather
#: than every bound value hashed against them
_PEAKS_IN_ORDER = tuple(S.SYMBOLS[name].symbol for name in TYPED_HARDWARE)
#: symbol → its CLI name (symbols.BY_SYMBOL[sym].cli_name without the record between)
_CLI_NAME = {info.symbol: name for name, info in S.SYMBOLS.items()}


def _step_report(args, target: Subject, values: dict, times: dict, dtype: str, step_texts: dict,
                 typed: frozenset = frozenset()) -> dict:
    """The step model at the bound values (:func:`_step_numbers`): its report, the constants and their
    sources, the memory verdict."""
    numbers, options, system, compute, said = _step_numbers(args, target, values, times, dtype, step_texts)
    out = _steptime().report(numbers, bytes_per_element(dtype), options, {})
    reads = _steptime().names_read(bytes_per_element(dtype), options, {})
    say_unread_step(typed, _STEP_NAMES, _needed_of(target)[0], reads, said)
    if args.backend:
        out["assumptions"].append(f"the step time counts ring collectives (the hybrid strategy's own), not what "
                                  f"--backend {args.backend} runs; the communication figures above do")
    typed_peaks = sorted(_CLI_NAME[sym] for sym in _PEAKS_IN_ORDER if sym in values)
    return add_hardware_report(out, system, compute, typed_peaks, options, dtype, reads, args.model or None)


@functools.lru_cache(maxsize=512)
def _subject_of(name: str, algorithm: str | None, options: tuple) -> Subject:
    # a subject depends only on its name and option words: built (and its formulas compiled) once per
    # process, so a second call pays for its numbers only.  Subjects are immutable; errors are not cached
    return subject(name, algorithm, **dict(options))


def _bound_words(args):
    """``args.assignments`` (KEY=VALUE words) bound to ``args.name`` as ``eval`` binds them: (subject,
    symbol values, time values, dtype, the names typed, how converted values were derived, the step
    model's own options)."""
    stepping = args.name == "hybrid"
    texts, option_texts = given(args, _option_words(args.name, stepping))
    step_texts: dict = {}
    if stepping:   # the step model's options (recompute=none|selective|full, gated, ...) apart
        try:
            option_texts, step_texts = _steptime().step_options(option_texts)
        except ValueError as err:
            raise UsageError(str(err)) from None
    option_texts = framework_zero(_preset_shape(args, args.name, option_texts), _option_words(args.name, stepping))
    if stepping and not (args.model or args.model_config):
        texts = _phi_from_shape(texts, step_texts.get("gated", False), option_texts.get("tied"),
                                *(OPTIONS[name].resolve(option_texts[name]) if name in option_texts else False
                                  for name in ("moe", "mamba")), gated_typed="gated" in step_texts)
    target = _subject_of(args.name, args.algorithm, tuple(sorted(option_texts.items())))
    typed = set(texts)
    texts, dtype, derived = _with_units(texts, args.dtype)
    # the step model (eval hybrid --hardware) uses the shape beyond what the communication needs
    # (and a typed peak, peak_fp8, peak_fp4: they win over the hardware's, as every typed value does; Hardware.peak)
    step_names = _STEP_NAMES if stepping and args.hardware else frozenset()
    values, times, dtype = bound(target, texts, dtype, args, typed=typed, check=not args.backend,
                                 also_used=step_names)
    if stepping and not args.hardware and (args.model or args.model_config):
        _refuse_head_split(args, target, values)
    return target, values, times, dtype, typed, derived, step_texts


def _refuse_head_split(args, target: Subject, values: dict) -> None:
    """The communication alone of a model's layout (eval hybrid --model, no --hardware) refused where t cannot split
    its heads, as the step model's path refuses it (megatron_features.head_split_refusal): the model's heads, not
    bound here, read from the preset or config beside the bound layout."""
    model = model_of(args)
    numbers = {**{name: float(x) for name, x in model.values().items()},
               **{_CLI_NAME[sym]: float(val) for sym, val in (_numbers(values) or values).items()}}
    refused = head_split_refusal(target.options, numbers)
    if refused:
        raise UsageError(refused)


#: the shape names only the step model reads (eval hybrid --hardware): used, though the communication needs none
_STEP_NAMES = frozenset(("a", "h_kv", "F", "V", "F_e", "E_s", "k", "v", "q_lora", "kv_lora", "d_nope", "d_rope", "d_v",
                         "h_q", "L_bf16", "L_off", "d_ssm", "n_ssm", "g_ssm", "a_ssm", *TYPED_HARDWARE))


@functools.lru_cache(maxsize=64)
def _option_words(name: str, stepping: bool) -> frozenset:
    # the option words a subject takes (and the step model's, for hybrid): a function of its name alone
    return frozenset(option_names(name)) | (frozenset(_steptime().STEP_KEYS) if stepping else frozenset())


@dataclass(frozen=True)
class StepInputs:
    """One run as the step model reads it, bound exactly as ``eval hybrid --hardware`` binds its words:
    ``values`` by CLI name (β, γ per element of ``run_bytes`` bytes; the hardware's peak, hbm and fitted
    constants among them), ``options`` the hybrid strategy's and the step model's."""
    values: dict
    run_bytes: int
    options: dict
    dtype: str

    def quantities(self, **constants) -> dict:
        """Every quantity of the step model, with ``constants`` (fitted constants by name, numbers or numpy
        arrays of candidates) in place of the hardware's."""
        return _steptime().quantities({**self.values, **constants}, self.run_bytes, **self.options)


def step_inputs(args, fitting: bool = False) -> StepInputs:
    """The step model's inputs for ``args`` (as ``eval``'s: name ``hybrid``, assignments, dtype, model,
    model_config, hardware; no backend): the one binding ``eval hybrid`` and ``calibrate-step`` share.
    ``fitting``: for a fit, which supplies the fitted constants (a hardware lacking one is not refused)."""
    if args.name != "hybrid" or not args.hardware or getattr(args, "backend", None):
        raise UsageError("the step model needs the hybrid strategy and a --hardware, without --backend")
    target, values, times, dtype, _, _, step_texts = _bound_words(args)
    numbers, options, _, _, _ = _step_numbers(args, target, values, times, dtype, step_texts, fitting)
    return StepInputs(numbers, bytes_per_element(dtype), options, dtype)


def _numbers_at(target: Subject, values: dict, times: dict, scale: int, in_bytes: bool) -> dict:
    """The numbers of an answer (what :func:`symcomm.training.sheet.planned` gives by a plan): the values as
    shown, the cost's fields and time, the extras as shown, the terms' and axes' rows; every formula of the
    sheet in one compiled exact call where it has exact code, else SymPy's exact numbers."""
    exprs, bounds, fields, coefficients, extra_exprs, legs = _sheet(target, scale, in_bytes, bool(times))
    numbers = _numbers(values)
    got = [exact(e, values) for e in exprs] if numbers is None else exact_numbers(exprs, numbers, values)
    part = [got[start:end] for start, end in bounds]
    result = {key: number if key in ("alpha", "alpha_inter") else number * scale
              for (key, _), number in zip(fields, part[0])}
    if times:
        result["time"] = _time(coefficients, numbers, values, times, scale, part[1], shown=True, legs=legs)
    out = {"values": {_CLI_NAME[sym]: val if type(val) is int else plain(val)
                      for sym, val in (numbers or values).items()},
           "result": result, "extras": {key: plain(number) for (key, _), number in zip(extra_exprs, part[2])}}
    if target.terms:
        out["terms"] = _term_rows(target, part[3], scale, in_bytes=in_bytes)
        out["axes"] = _axis_rows(target, part[4], values, times, scale, in_bytes=in_bytes)
    return out


def _say_undivided(rows: list, scale: int) -> None:
    """A strategy's collective whose message its ranks do not divide, where eval of that collective alone refuses
    such a message (its algorithm's rule: a ring's M a multiple of N), said where its counts come out fractional:
    they are the exact (N−1)/N form's, each rank's mean share.  Said, not refused: a framework pads or splits it unevenly.
    (The hybrid strategy's layer-sized messages are left unsaid: FSDP pads its shards to the ranks.)"""
    for row in rows:
        algorithm = next((a for a in algorithms_of(row["collective"]) if a.name == row["algorithm"]), None)
        message = row["message"] / scale
        if algorithm is None or not isinstance(row["group"], int) or not float(message).is_integer() \
                or float(row["send"]).is_integer():
            continue
        if any(rule.kind == "divides" and rule.symbols == {S.N, S.M} for rule in algorithm.requires) \
                and int(message) % row["group"]:
            notes.add(f"{row['label']}: its message of {int(message):,} elements is not a multiple of its "
                      f"{row['group']} ranks, so the counts are each rank's mean share in the exact (N−1)/N form, "
                      f"not whole (eval {row['collective']} alone refuses such an M; a framework pads it or splits "
                      "it unevenly)")
            return


def _mixed_elements(rows: list) -> str | None:
    """The terms of their own element type (fp32 gradients) that send beside terms of the run's type, in words
    ("the fp32 terms (gradient reduce-scatter (backward))"), or None where the element totals are of one type."""
    own = [row for row in rows if row.get("dtype") and row["send"]]
    if not own or not any(not row.get("dtype") and row["send"] for row in rows):
        return None
    kinds = sorted({row["dtype"] for row in own})
    return f"the {'/'.join(kinds)} terms ({'; '.join(row['label'] for row in own)})"


def eval_payload(args) -> dict:
    """What ``symcomm eval`` answers, as the JSON document (``args``: the command's options:
    name, assignments, algorithm, dtype, backend, model, model_config, hardware)."""
    stepping = args.name == "hybrid"
    target, values, times, dtype, typed, derived, step_texts = _bound_words(args)
    if args.backend:  # what that library runs for each collective (symcomm.collectives.profiles)
        target = target.under(args.backend, values, bytes_per_element(dtype) if dtype else 4)
        problems = target.problems(values)   # the requirements of what the backend runs
        if problems:
            raise UsageError(problems[0])
    scale = bytes_per_element(dtype) if dtype else 1
    unit = "bytes" if dtype else "elements"
    at = None
    # a warm answer of an option set met before: its numbers by the set's plan (sheet.Plan), the same numbers
    plan = None if args.backend else plan_of(target, scale, bool(dtype), values, times)
    if plan is not None:
        try:
            at = planned(plan, target, values, times, scale, bool(dtype))
        except NotExact:
            pass            # a point the compiled code cannot answer exactly (nothing said yet): the general path
    if at is None:
        at = _numbers_at(target, values, times, scale, bool(dtype))
    if target.terms and target.name != "hybrid":
        _say_undivided(at["terms"], scale)
    mixed = not dtype and _mixed_elements(at["terms"]) if target.terms else None
    if mixed:
        unit = f"elements of mixed types ({mixed}: its own elements, the rest the run's; --dtype gives bytes)"
        notes.add(f"the totals add elements of different types: {mixed} counts its own elements, every other term "
                  "the run's; give --dtype for bytes on the wire, each term at its own size")
    result, extras = at["result"], at["extras"]
    payload = {
        "label": _label(target),
        "kind": target.kind,
        "name": target.name,
        **({"algorithm": target.algorithm} if target.kind == "primitive" else {"options": dict(target.options)}),
        "values": at["values"],
        "unit": unit,
        **({"dtype": dtype, "bytes_per_element": scale} if dtype else {}),
        **{key: val if type(val) is float else plain(val) for key, val in result.items()},
        **extras,
    }
    if target.terms:
        payload["terms"] = at["terms"]
        if len(at["axes"]) > 1:
            payload["axes"] = at["axes"]
    payload["inputs"] = _inputs(args, values, times, typed, derived, dtype)
    payload["units"] = _units(result, extras, unit)
    payload["_result_keys"] = list(result)
    payload["_extra_keys"] = list(extras)
    if stepping and args.hardware:
        payload["time_is"] = TIME_IS
        payload.update(_step_report(args, target, values, times, dtype, step_texts, typed))
    return payload


def compare_payload(args) -> dict:
    """What ``symcomm compare`` answers, as the JSON document: every algorithm of a primitive side
    by side at N and M — counts, time, the best — and which algorithm is fastest over which range
    of message sizes (where they cross).

    Each algorithm is bound and evaluated exactly as ``eval --algorithm A`` evaluates it
    (:func:`bound`, :func:`_costs_at`): the same hardware fill (each level of a two-level
    algorithm at its own link, G the preset's GPUs per node), the same symbols (C, K, G where
    the algorithm needs them), the same refusals — an algorithm ``eval`` would refuse with
    these values (a power of two, a missing C or α_inter) is listed in ``skipped`` with eval's
    words.  The curves over M use the same bound values with M varied."""
    import numpy as np

    from ..numbers.evaluation import fast

    if args.name not in PRIMITIVES:
        raise UsageError(f"compare takes a primitive; choose one of {', '.join(PRIMITIVES)}")
    targets = [subject(args.name, alg.name) for alg in algorithms_of(args.name)]
    texts, _ = given(args, ())
    typed = set(texts)
    # what some algorithm of the primitive takes; a name none takes is a typo, refused at once
    takes = {S.BY_SYMBOL[x].cli_name for t in targets for x in t.symbols() if x in S.BY_SYMBOL}
    allowed = sorted(takes) + sorted(_TIME_NAMES) + ["bw", "bw_inter"]
    for key in texts:
        if key not in allowed:
            raise UsageError(f"unknown parameter {_SPELLED.get(key, key)!r} for compare {args.name}; allowed: "
                             f"{', '.join(allowed)}")
    texts, dtype, derived = _with_units(texts, args.dtype)
    least = {sym: n for t in targets for sym, n in t.least.items()}
    for key, text in texts.items():   # a value that is not a number is refused, not skipped per algorithm
        parse_value(key, text, least=least.get(S.symbol(key)) if key in S.SYMBOLS else 1)
    # the single-level time constants some algorithm uses are needed (as eval needs them); the
    # inter-node pair only by the two-level algorithms, which are skipped (eval's words) without it
    single = [S.BY_SYMBOL[sym].cli_name for sym in (S.alpha, S.beta, S.gamma)
              if any(coef != 0 for t in targets for x, coef in t.cost.coefficients if x == sym)]
    shape = [key for key in ("N", "M") if key in takes]       # send_recv has no N: two ranks
    missing = [key for key in (*shape, *single) if key not in texts and not (args.hardware and key in single)]
    if missing:
        raise UsageError(f"missing {', '.join(missing)}: compare {args.name} needs {', '.join(shape)} and "
                         f"{', '.join(single)} (or --hardware); " + TIME_RULE)
    dtype = dtype or "bf16"
    rows, curves, skipped, points = [], {}, [], {}
    sizes = np.unique(np.round(2.0 ** np.arange(0, 41, 0.25)))          # 1 to 2**40 elements
    scale = bytes_per_element(dtype)
    for target in targets:
        own = {key: text for key, text in texts.items() if key in _TIME_NAMES or S.symbol(key) in target.symbols()}
        try:
            # a typed G places every algorithm's ranks on nodes of G GPUs, not only the two-level ones
            values, times, _ = bound(target, own, dtype, args, typed=frozenset(typed),
                                     gpus_per_node=_word(texts.get("G")))     # G=0 as its word "0": refused
        except InputError as err:
            skipped.append(f"{target.algorithm}: {err}")
            continue
        result = _costs_at(target, values, times, scale, in_bytes=True)     # what eval prints
        rows.append({"algorithm": target.algorithm, **{key: plain(val) for key, val in result.items()},
                     "values": {S.BY_SYMBOL[sym].cli_name: plain(val) for sym, val in values.items()},
                     "inputs": _inputs(SimpleNamespace(model=None, model_config=None, hardware=args.hardware,
                                                       dtype=args.dtype), values, times, typed, derived, dtype)})
        # the same point as floats for the curves over M: β, γ per element of dtype, as in eval's sum
        point = {S.BY_SYMBOL[sym].cli_name: float(val) for sym, val in values.items()}
        point.update({S.BY_SYMBOL[sym].cli_name: float(val) * (1 if sym in _PER_MESSAGE else scale)
                      for sym, val in times.items()})
        points[target.algorithm] = (fast(target.cost.time), point)
        timer = points[target.algorithm][0]
        curves[target.algorithm] = np.asarray(timer(**{**point, "M": sizes}), dtype=float) * np.ones_like(sizes)
    if not rows:
        raise UsageError(f"no algorithm of {args.name} runs with these values: " + "; ".join(skipped))
    best = min(rows, key=lambda r: r["time"])
    # in-network reduction needs a switch that adds (NVLink SHARP, IB SHARP): the ranges are drawn
    # among the algorithms any cluster runs, with it named apart
    names = [n for n in curves if n != "in_network"] or list(curves)
    table = np.vstack([curves[n] for n in names])
    # equal times (rabenseifner_fold is rabenseifner on a power of two) go to the first listed, so the
    # ranges change only where one algorithm really overtakes another
    winner = np.argmax(table <= table.min(axis=0) * (1 + 1e-9), axis=0)
    ranges, start = [], 0
    for i in range(1, len(sizes) + 1):
        if i == len(sizes) or winner[i] != winner[start]:
            ranges.append({"algorithm": names[winner[start]], "from_elements": int(sizes[start]),
                           "to_elements": int(sizes[i - 1])})
            start = i

    def at(name: str, size: float) -> float:
        timer, point = points[name]
        return float(timer(**{**point, "M": size}))

    for before, after in zip(ranges, ranges[1:]):
        # where the two lines cross, by bisection on M between the grid points that bracket it
        low, high = float(before["to_elements"]), float(after["from_elements"])
        for _ in range(80):
            middle = (low * high) ** 0.5
            gap = at(before["algorithm"], middle) - at(after["algorithm"], middle)
            low, high = (middle, high) if gap < 0 else (low, middle)
        after["crossover_elements"] = high
        # the ranges meet at the crossing, not at the grid points that bracket it: every whole M in one range
        after["from_elements"] = math.floor(high) + 1
        before["to_elements"] = after["from_elements"] - 1
    n, m = (int(parse_value(key, texts[key], least=least.get(S.symbol(key), 1))) if key in shape else None
            for key in ("N", "M"))
    unit = "bytes"
    counts = _units({key: None for row in rows for key in row}, {}, unit)
    out = {"primitive": args.name, "N": n, "M": m, "dtype": dtype, "bytes_per_element": scale, "unit": unit,
           "units": {**counts, "M": "elements", "N": "ranks",
                     "values": "each row's symbol values (N ranks, M elements, G ranks per node, C chunks, "
                               "K elements), as eval --json gives them",
                     "inputs": "each row's inputs with unit and source, as eval --json gives them",
                     "from_elements": "elements", "to_elements": "elements (the last range's: the largest size "
                                                                  "searched, 2**40.75 rounded)",
                     "crossover_elements": "elements"},
           "best": best["algorithm"], "algorithms": rows, "fastest_by_message_size": ranges,
           "ranges_leave_out": [n for n in curves if n not in names], "skipped": skipped}
    return out
