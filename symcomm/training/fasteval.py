"""What ``symcomm eval`` and ``symcomm.evaluate`` answer, through the one function both call: :func:`eval_document`.

A collective primitive (every ``(primitive, algorithm)`` of :mod:`symcomm.collectives.algorithms`; they take no
options) is answered here without SymPy, from its generated exact code (:mod:`symcomm.training.primitive_data`,
printed from the catalog's SymPy formulas by ``python -m symcomm.tools.codegen``): the KEY=VALUE words read by
:mod:`symcomm.training.words` (the binding's own rules), each value parsed to an ``int`` or a ``Fraction`` by
:func:`symcomm.base.inputs.parse_fraction` with the binding's bounds and names, the requirements checked in
order with their own messages, the cost's fields and time summed exactly, the inputs worded by
:func:`symcomm.training.words.input_rows`.  The document is the one :func:`symcomm.training.answers.eval_payload`
builds, number for number and key for key (``tests/training/test_fasteval.py`` holds the two byte-identical).

The rule that picks the path (:func:`fast_entry`): a primitive's algorithm the generated module holds, asked
without ``--backend``, ``--model`` or ``--model-config`` (a hardware preset or file is read without SymPy, as
``presets.fill_from_presets`` reads it).  Everything else — a strategy, a backend profile, a model — and a point
the exact code cannot answer (it raises :class:`~symcomm.numbers.exactops.NotExact`: then nothing was said)
goes to :func:`symcomm.training.answers.eval_payload`, with SymPy; ``show``, ``prove`` and the formulas never
come here.  ``eval hybrid`` of a shipped model and hardware is first offered to :mod:`symcomm.training.hybridfast`
(its generated option sets, :mod:`symcomm.training.hybrid_data`), which answers the same document or steps aside.
"""

from __future__ import annotations

import functools
import math
import sys
from fractions import Fraction

from ..base import notes
from ..base.crossing import crossing_of, placed_note
from ..base.inputs import parse_whole
from ..base.units import bytes_per_element
from ..numbers.exactops import NotExact, checked, plain_exact
from . import primitive_data as data
from .primitiveplan import printed
from .words import _SPELLED, PER_MESSAGE_NAMES, TIME_NAMES, UsageError, _value, _with_units, given, input_rows, \
    note_unread_times, units_of, value_text

_ALLOWED_TIMES = tuple(sorted(TIME_NAMES))


def fast_entry(args) -> dict | None:
    """The generated entry answering ``args`` (eval's options) without SymPy, or None (then SymPy answers)."""
    if getattr(args, "backend", None) or getattr(args, "model", None) or getattr(args, "model_config", None):
        return None
    default = data.DEFAULTS.get(args.name)
    if default is None:
        return None
    return data.SUBJECTS.get((args.name, args.algorithm or default))


def eval_document(args) -> dict:
    """What ``eval`` answers for ``args`` (name, assignments, algorithm, dtype, backend, model, model_config,
    hardware), as the JSON document with its ``_result_keys`` and ``_extra_keys`` (the text's order)."""
    try:
        return _eval_document(args)
    except UsageError as err:
        raise _as_typed(err, args) from None


def _as_typed(err: UsageError, args) -> UsageError:
    """``err`` saying what was typed beside a size it names in elements: a rule reads M=1KB as the 250 fp32
    elements it is, and "M=250 is not allowed" alone names a number the user never typed."""
    texts, _ = given(args, ())
    typed = texts.get("M")
    if type(typed) is not str:
        return err
    try:
        with notes.collected():
            converted, _, derived = _with_units(texts, args.dtype)
    except UsageError:
        return err
    shown = f"M={converted['M']}"
    if "M" not in derived or shown not in str(err):
        return err
    return UsageError(str(err).replace(shown, f"{shown} (M={typed} typed: {derived['M']})", 1))


def _eval_document(args) -> dict:
    entry = fast_entry(args)
    if entry is not None:
        try:
            return _answer(args, entry)
        except NotExact:
            pass     # a point the exact code cannot answer (no note said, nothing refused yet): SymPy's
    elif args.name == "hybrid":
        # the generated data answers by the plan of names met before (hybridfast._Plan: the API's warm calls, in half
        # the time of the SymPy path's own plans), and cold in a process without the SymPy path (a command, an API
        # process that never needed it); one that has it answers the names no plan takes from its compiled plans
        # (sheet.Plan, steptime._ReportPlan), faster warm than the generated data cold: the same document either way
        hybrid = _hybridfast()
        try:
            done = hybrid.warm(args)
            if done is not None:
                return done
            if hybrid.usable(args) and (_SYMPY_PATH not in sys.modules or hybrid.may_plan(args)):
                return hybrid.answer(args)
        except hybrid.Fallback:
            pass    # an option set the generated data does not hold, or a refusal (nothing said): SymPy's
    return _eval_payload()(args)


def _hybridfast():
    # imported on first use (a primitive's answer never reads the hybrid's data), then kept (_eval_payload's rule)
    global _HYBRIDFAST
    if _HYBRIDFAST is None:
        from . import hybridfast

        _HYBRIDFAST = hybridfast
    return _HYBRIDFAST


_HYBRIDFAST = None


def _eval_payload():
    # imported on first use (a primitive's answer imports no SymPy), then kept: an import statement per call
    # costs its lookups on every answer
    global _EVAL_PAYLOAD
    if _EVAL_PAYLOAD is None:
        from .answers import eval_payload

        _EVAL_PAYLOAD = eval_payload
    return _EVAL_PAYLOAD


_EVAL_PAYLOAD = None
#: the module whose presence says the SymPy path is loaded
_SYMPY_PATH = "symcomm.training.answers"


def _bind(entry: dict, texts: dict) -> tuple[dict, dict, dict, list]:
    """binding.bind for a primitive: (name → exact value, time constant name → value, → that value as the
    answer shows it, the values in the order of ``needed``), or the same refusal."""
    slots = _slots(entry, tuple(texts))
    if slots is None:
        return _bind_checking_names(entry, texts)
    return _read(entry, slots, texts.values())


def _read(entry: dict, slots, given) -> tuple[dict, dict, dict, list]:
    """The ``given`` values (texts or plain numbers, in the slots' order) read by their slots (name, a time constant?,
    its number's rule), the entry's rules checked: (name → exact value, time constant → value, → as shown, the
    values in the order of ``needed``)."""
    values, times, shown = {}, {}, {}
    for (key, is_time, how), value in zip(slots, given):
        if is_time:
            times[key], shown[key] = _value(key, value, False, 0)
        else:
            values[key] = _value(how[0], value, how[1], how[2])[0]
    point = [values[name] for name in entry["needed"]]
    if entry["rules"]:
        _check(entry, entry["checks"](*point))
    return values, times, shown, point


def _slots(entry: dict, names: tuple):
    """Per name given, in order: (name, is a time constant, (how an error names it, whole numbers only, its least
    value)), once per entry and names given; None when these names are refused (unknown, a needed one missing,
    a time constant missing once one is given): then the refusal comes in the words' order."""
    key = (entry["label"], names)
    held = _SLOTS.get(key, _NO_SLOTS)
    if held is _NO_SLOTS:
        spelled = _spelled(entry)
        given = set(names)
        timed = [name for name in names if name in TIME_NAMES]
        known = all(name in TIME_NAMES or name in spelled for name in names)
        held = tuple((name, name in TIME_NAMES, spelled.get(name)) for name in names) if (
            known and given.issuperset(entry["needed"]) and (not timed or given.issuperset(entry["time"]))) else None
        if len(_SLOTS) >= 512:
            _SLOTS.clear()
        _SLOTS[key] = held
    return held


#: (an entry's label, the names given in order) → their slots (None: refused): a function of the names alone
_SLOTS: dict = {}
_NO_SLOTS = object()


def _bind_checking_names(entry: dict, texts: dict) -> tuple[dict, dict, dict, list]:
    # _bind with each name checked as it comes (the refusals in the words' order)
    needed, spelled = entry["needed"], _spelled(entry)
    values, times, shown = {}, {}, {}
    for key, text in texts.items():
        if key in TIME_NAMES:
            times[key], shown[key] = _value(key, text, False, 0)
        else:
            how = spelled.get(key)
            if how is None:
                raise UsageError(f"unknown parameter {key!r} for {entry['label']}; allowed: "
                                 f"{', '.join(needed + _ALLOWED_TIMES)}")
            values[key] = _value(how[0], text, how[1], how[2])[0]
    if len(values) < len(needed):
        missing = [name for name in needed if name not in texts]
        raise UsageError(f"missing {', '.join(missing)}: {entry['label']} needs {', '.join(needed)} (as KEY=VALUE)")
    point = [values[name] for name in needed]
    if entry["rules"]:
        _check(entry, entry["checks"](*point))
    if times:
        absent = [name for name in entry["time"] if name not in times]
        if absent:
            raise UsageError(f"missing {', '.join(absent)}: the time of {entry['label']} needs "
                             f"{', '.join(entry['time'])} once any of them is given")
    return values, times, shown, point


def _spelled(entry: dict) -> dict:
    """name → (how an error names it, whole numbers only, its least value), once per entry."""
    held = _SPELLINGS.get(entry["label"])
    if held is None:
        held = _SPELLINGS[entry["label"]] = {name: (_SPELLED.get(name, name), data.WHOLE[name], entry["least"][name])
                                            for name in entry["needed"]}
    return held


_SPELLINGS: dict = {}


def _check(entry: dict, got: tuple) -> None:
    """The first requirement the values break, refused in its own words (core.rules: Rule.problem, fill)."""
    at = 0
    for kind, message, has_y in entry["rules"]:
        x = checked(got[at])
        y = checked(got[at + 1]) if has_y else None
        at += 2 if has_y else 1
        if kind == "power_of_two":
            holds = type(x) is int and x >= 1 and not x & (x - 1)
        elif kind == "divides":
            holds = x == 0 or (y % x == 0 if type(x) is int and type(y) is int else (Fraction(y) / x).denominator == 1)
        elif kind == "equals":
            holds = x == y
        else:                               # at_least
            holds = x >= y
        if not holds:
            raise UsageError(message.replace("{x}", str(x)).replace("{y}", str(y)))


def _time(entry: dict, counts, times: dict, scale: int, texts: dict):
    """Σ count × constant (× bytes per element but for α), exactly, as the answer shows it (answers._time, then
    plain): Σ count × weight over the constants' common denominator — an int when whole, else the float nearest
    the exact sum (a quotient of Python ints is correctly rounded, as float() of the Fraction is)."""
    names = entry["coefficients"]
    weights, den = _weights(names, tuple([texts[name] for name in names]), tuple([times[name] for name in names]),
                            scale)
    num = 0
    for count, weight in zip(counts, weights):
        if type(count) is not int:
            count = checked(count)
            if type(count) is not int:         # a count that is not whole: the sum in Fractions
                return plain_exact(sum((checked(c) * (1 if n in PER_MESSAGE_NAMES else scale) * times[n]
                                        for n, c in zip(names, counts)), Fraction(0)))
        num += count * weight
    if num % den == 0:
        return num // den
    try:
        return num / den
    except OverflowError:
        return plain_exact(Fraction(num, den))     # its one refusal, in its words


def _weights(names: tuple, texts: tuple, values: tuple, scale: int) -> tuple:
    """(each constant × the lcm of their denominators × bytes per element but for α, that lcm), once per the
    constants' words and scale (the same words are the same exact numbers: ``_parsed``); ``values``: those exact
    numbers, in the order of ``names``."""
    key = (names, texts, scale)
    held = _WEIGHTS.get(key)
    if held is None:
        den = math.lcm(*(1 if type(value) is int else value.denominator for value in values))
        held = (tuple(int(value * den) * (1 if name in PER_MESSAGE_NAMES else scale)
                      for name, value in zip(names, values)), den)
        if len(_WEIGHTS) >= 256:
            _WEIGHTS.clear()
        _WEIGHTS[key] = held
    return held


#: (time constants' names, their words, scale) → their weights and common denominator
_WEIGHTS: dict = {}


def _answer(args, entry: dict) -> dict:
    """eval_payload's document for a primitive, without SymPy."""
    given_values = getattr(args, "values", None)
    if given_values is None or args.hardware or not _NUMBERS.issuperset(map(type, given_values.values())):
        return _cold(args, entry)
    # the Python API's plain numbers: the names' plan (_Resolved) once per entry, names and dtype
    key = (entry["label"], tuple(given_values), args.dtype)
    resolved = _RESOLVED.get(key)
    if resolved is None:
        with notes.collected() as said:
            payload = _cold(args, entry)
        notes.extend(said)
        if len(_RESOLVED) >= 512:
            _RESOLVED.clear()
        _RESOLVED[key] = _resolved(args, entry, payload, tuple(said))
        return payload
    if resolved is _UNPLANNED:
        return _cold(args, entry)
    payload = resolved.answer(given_values)
    notes.extend(resolved.notes)
    return payload


#: the API's values that carry no unit and no word (a str may hold a unit, a bool is its own word): a plain number
_NUMBERS = frozenset((int, float))


class _Resolved:
    """What a primitive's answer reads besides the numbers given, for the API's plain numbers under the same names
    (aliases included, in order) and --dtype, without a hardware preset: the plan's one printed function
    (primitiveplan.printed: each name's slot, the dtype taken, the inputs' rows and the units held as its
    constants) and the notes said; the numbers are parsed, bounded, checked and computed per call."""

    __slots__ = ("answer", "notes")

    def __init__(self, answer, said):
        self.answer, self.notes = answer, said


def _resolved(args, entry: dict, payload: dict, said: tuple):
    # resolved from the words alone (as _cold reads them; what it says, said already), held beside the answer
    texts, _ = given(args, ())
    typed = tuple(texts)
    if "bw" in texts or "bw_inter" in texts:
        # a bandwidth's β and its inputs' row are worded from its value (words._with_units): answered cold each call
        return _UNPLANNED
    with notes.collected():
        texts, dtype, derived = _with_units(texts, args.dtype)
    values = [name for name in texts if name not in TIME_NAMES]
    times = [name for name in texts if name in TIME_NAMES]
    rows = _rows(None, bool(args.dtype), dtype, typed, tuple(derived.items()), tuple(values), tuple(times))
    slots = _slots(entry, tuple(texts))
    if slots is None:
        return _UNPLANNED
    units = tuple(payload["units"].items())
    name = args.name

    def fill(bound, constants, shown, point, given_values):
        # the general fill, for a point whose values or counts are not all ints
        return _document(name, entry, bound, constants, shown, point, dtype, given_values, rows, units)

    scale = bytes_per_element(dtype) if dtype else 1
    return _Resolved(printed(entry, name, tuple(args.values), slots, dtype, scale, rows, units,
                             (_check, _weights, fill)), said)


#: (an entry's label, the names given in order, --dtype) → their _Resolved, or _UNPLANNED: answered cold each call
_RESOLVED: dict = {}
_UNPLANNED = object()


def _cold(args, entry: dict) -> dict:
    texts, _ = given(args, ())
    typed = tuple(texts)       # the names typed, in their order: a key for the inputs' rows without a frozenset built
    texts, dtype, derived = _with_units(texts, args.dtype)
    if args.hardware:
        from ..presets import fill_from_presets

        flat_g = "G" in texts and "G" not in entry["needed"]
        if flat_g:      # read before the presets take it as the node size (an empty G would leave the preset's)
            parse_whole("G (gpus_per_node)", texts["G"], least=1)     # spelled as presets.fill_from_presets does
        texts, dtype = fill_from_presets(_preset(entry), texts, hardware_name=args.hardware, dtype=dtype,
                                         gpus_per_node=_word(texts.get("G")))
        if flat_g:
            # a flat algorithm's G places its ranks on nodes of G GPUs (which link each step uses), as compare's
            # does: read by the link's rule above, no formula of it to bind
            notes.add(placed_note(texts["G"]))
            texts = {key: text for key, text in texts.items() if key != "G"}
    values, times, shown, point = _bind(entry, texts)
    note_unread_times([name for name in typed if name in TIME_NAMES and name not in entry["time"]], entry["label"])
    rows = _rows(args.hardware, bool(args.dtype), dtype, typed, tuple(derived.items()), tuple(values), tuple(shown))
    return _document(args.name, entry, values, times, shown, point, dtype, texts, rows, None)


def _document(name: str, entry: dict, values: dict, times: dict, shown: dict, point: list, dtype, texts: dict, rows,
              units) -> dict:
    """The document of a primitive at its bound values (``rows``: the inputs' rows; ``units``: their (key, unit)
    pairs, or None to word them)."""
    got = entry["cost"](*point)
    fields = entry["fields"]
    scale, unit = (bytes_per_element(dtype), "bytes") if dtype else (1, "elements")
    payload = {"label": entry["label"], "kind": "primitive", "name": name, "algorithm": entry["algorithm"],
               "values": {key: value if type(value) is int else plain_exact(value) for key, value in values.items()},
               "unit": unit}
    if dtype:
        payload["dtype"], payload["bytes_per_element"] = dtype, scale
    for key, number in zip(fields, got):      # the cost's fields: counts in elements, × bytes per element but α
        if type(number) is not int:
            number = checked(number)
        if scale != 1 and key not in PER_MESSAGE_NAMES:
            number *= scale
        payload[key] = number if type(number) is int else plain_exact(number)
    keys = fields
    if times:
        payload["time"] = _time(entry, got[len(fields):], times, scale, texts)
        keys = fields + ("time",)
    payload["inputs"] = _inputs(rows, values, shown, dtype)
    payload["units"] = dict(units_of(keys, (), unit) if units is None else units)
    payload["_result_keys"] = list(keys)
    payload["_extra_keys"] = []
    return payload


def _word(value):
    # a typed value as its word, None as None (G=0 given as a Python int is typed, and refused, as "0" is)
    return None if value is None else value_text(value)


def _inputs(rows: tuple, values: dict, shown_times: dict, dtype) -> dict:
    rows, dtype_row = rows
    out = {}
    for name, unit, source, is_time in rows:
        value = shown_times[name] if is_time else values[name]     # a time constant: shown already
        out[name] = {"value": value if is_time or type(value) is int else plain_exact(value), "unit": unit,
                     "source": source}
    if dtype:
        out["dtype"] = dict(dtype_row)
    return out


def _rows(hardware, dtype_typed: bool, dtype, typed: tuple, derived: tuple, names: tuple, time_names: tuple):
    """The inputs' rows (words.input_rows), worded once per process for a shipped preset (a file is read again)."""
    key = (hardware, dtype_typed, dtype, typed, derived, names, time_names)
    held = _ROWS.get(key)
    if held is None:
        held = input_rows(None, None, hardware, dtype_typed, dtype, frozenset(typed), dict(derived),
                          tuple((name, data.UNITS[name]) for name in names), time_names)
        from ..presets.systems import _is_path

        if not (hardware and _is_path(str(hardware))):
            if len(_ROWS) >= 512:
                _ROWS.clear()
            _ROWS[key] = held
    return held


#: the inputs' rows by what determines them (the shipped presets never change in a process)
_ROWS: dict = {}


def _preset(entry: dict) -> "_Preset":
    # one per entry, so that what fill_from_presets keeps on it (its fills by preset, N and G) lasts the process
    held = _PRESETS.get(entry["label"])
    if held is None:
        held = _PRESETS[entry["label"]] = _Preset(entry)
    return held


_PRESETS: dict = {}


class _Preset:
    """What :func:`symcomm.presets.fill_from_presets` reads of a subject, for a generated entry: the names its
    formulas need and whether its time has an inter-node pair (a two-level algorithm)."""

    def __init__(self, entry: dict):
        self.preset_names = frozenset(entry["needed"])
        self.two_level = "alpha_inter" in entry["coefficients"] or "beta_inter" in entry["coefficients"]
        # whether its crossings spread over a node's NICs (Subject.spreads_over_nics, once the catalog has it)
        self.spreads_over_nics = entry.get("spreads_over_nics", False)
        # its crossing rule (Subject.crossing: base.crossing's one table, read by presets.link_values)
        self.crossing = crossing_of(entry["label"].split(" / ")[0], entry["algorithm"])
        self.label = entry["label"]        # Subject.label: "primitive / algorithm" (presets' notes read it)
