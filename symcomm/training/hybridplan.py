"""A hybrid plan's printed code (:class:`symcomm.training.hybridfast._Plan`): the answer of one call's names, its
numbers bound, bounded and checked, the sheet and the step model called, and the document filled, as one function
of the API's keyword values printed once per plan (:func:`printed`).

One function, not a runner and a fill: a warm call touches one code object and its one tuple of defaults, and reads
the bound values as the locals they are.  Its text holds positions and parameters only: every name, bound, word and
constant of the data or the call is a parameter's default, never text of the code (only the keys every answer has,
:data:`WORDS`, are printed as themselves; a whole number printed as digits is checked to be an int first).
"""

from __future__ import annotations

import functools
import math

from ..base.inputs import MAX_VALUE
from ..numbers.exactops import plain_exact, summed_time
from .printedcode import Constants as _Constants, digits as _digits, word as _program_word
from .words import PER_MESSAGE_NAMES, _value, verdict_of

#: the keys every answer has, the one text a plan's printed code holds: the program's words, never data's
WORDS = frozenset(("label", "kind", "name", "hybrid", "options", "values", "unit", "bytes", "dtype",
                   "bytes_per_element", "time", "terms", "axis", "collective", "algorithm", "group", "message", "count",
                   "send", "stage", "axes", "value", "source", "inputs", "units", "_result_keys", "_extra_keys",
                   "time_is"))

#: a rule kind's test on two ints u0 = x ≠ 0 and u1 = y in line (hybridfast._holds' own test of them)
_IN_LINE = {"divides": "u1 % u0 == 0", "equals": "u0 == u1"}


def _word(text: str) -> str:
    return _program_word(WORDS, text)


def printed(binding: tuple, fill: tuple, checks: tuple, hardware: tuple):
    """The plan's one function ``answer(given_values, keys=True)`` → the document, its hardware's words included
    (with ``keys`` false, as the Python API returns it: without eval's ``_result_keys`` and ``_extra_keys``).

    ``binding``: (slots, rules, sheet function, its arguments' positions, step function, the step point's held
    values, the positions of its typed ones) — each slot (name typed or None, its spelling, whole, least, low, the
    held value); each rule (kind, the positions of its names, its check).  ``fill``: (entry, sheet entry, values,
    times, positions by name, bytes per element, dtype, the inputs' rows, the dtype's row, the step report, the
    words of time_is).
    ``checks``: (the rules' test ``holds``, the refusal ``Fallback``, ``exact(g, whole, e0, e1)`` — whether the
    sheet's numbers are ints outside the extras and the values too, NotExact where one is not exact — and
    ``numbers(q)``, the step model's numbers as floats, a refusal when one is not finite).  ``hardware``: what
    words.with_hardware_report adds, worded once (:func:`hardware`)."""
    k = _Constants()
    holds, fallback, exact, numbers = checks
    slots, rules, sheet, sheet_at, step, step_point, step_at = binding
    held_whole = all(type(held) is int for typed, _, _, _, _, held in slots if typed is None)
    lines = [f"w = {held_whole}"]
    for i, (typed, spelled, whole, least, low, held) in enumerate(slots):
        if typed is None:
            lines.append(f"x{i} = {k(held)}")
            continue
        lines += [f"x{i} = gv[{k(typed)}]",
                  f"if type(x{i}) is not int or not {k(low)} <= x{i} <= _max:",
                  f"    x{i} = _value({k(spelled)}, x{i}, {k(whole)}, {k(least)})[0]",
                  f"    w = w and type(x{i}) is int"]
    for kind, positions, check in rules:
        got = f"{k(check)}({', '.join(f'x{j}' for j in positions)})"
        if kind in _IN_LINE:        # two ints, x not zero, tested in line; anything else by holds itself
            lines += [f"u0, u1 = {got}",
                      f"if not ({_IN_LINE[kind]} if type(u0) is int and type(u1) is int and u0 else "
                      f"_holds({k(kind)}, u0, u1)):"]
        else:
            lines.append(f"if not _holds({k(kind)}, *{got}):")
        lines.append("    raise _fallback(_broken)")
    lines.append(f"g = {k(sheet)}({', '.join(f'x{j}' for j in sheet_at)})")
    lines.append(f"q = _numbers({k(step)}(" + ", ".join(k(value) if j is None else f"float(x{j})"
                                                       for value, j in zip(step_point, step_at)) + "))")
    # each number as a local of its own (g<i>, q<i>): one unpacking, then a name read per use where g[i] is three
    # instructions (a whole answer reads some 150 of them); a count other than the data's refuses (ValueError)
    # the generated sheet's numbers and, last, its flag (0: every number an int but the extras: hybridgen)
    last = int(_digits(fill[1]["bounds"][-1][1]))
    lines.append("(" + "".join(f"g{i}, " for i in range(last + 1)) + ") = g")
    lines.append("(" + "".join(f"q{i}, " for i in range(len(fill[9][0]["names"]))) + ") = q")
    e0, e1 = fill[1]["bounds"][2]
    weights, den = _weights(fill[3], fill[5])
    lines.append(f"if _exact(g, w, {_digits(e0)}, {_digits(e1)}, w and not g{last}):")
    lines += ["    " + line for line in _document(k, *fill, hardware, weights, True)]
    lines += _document(k, *fill, hardware, weights, False)
    parameters = "".join(f", _k{i}=None" for i in range(len(k.values)))
    source = ("def _answer(gv, _keys=True, _max=None, _value=None, _holds=None, _fallback=None, _broken=None, "
              "_exact=None, _numbers=None, _w=None, _d=None, _pe=None, _st=None, _mv=None, "
              f"_cp=None{parameters}):\n    "
              + "\n    ".join(lines) + "\n")
    namespace: dict = {}
    exec(compile(source, "<symcomm.training.hybridplan>", "exec"), namespace)   # names, indices and WORDS only
    answer = namespace["_answer"]
    answer.__defaults__ = (True, MAX_VALUE, _value, holds, fallback, "a rule broken", exact, numbers, tuple(weights),
                           den, plain_exact, summed_time, hardware[0], dict.copy, *k.values)
    return answer


def _weights(times: dict, scale: int) -> tuple[list, int]:
    # each time constant × the constants' common denominator (× bytes per element but per message): summed_time's
    den = 1
    weights = []
    if times:
        den = math.lcm(*(1 if type(c) is int else c.denominator for c in times.values()))
        weights = [(c * den if type(c) is int else c.numerator * (den // c.denominator))
                   * (1 if name in PER_MESSAGE_NAMES else scale) for name, c in times.items()]
    return weights, den


def _document(k, entry: dict, sheet: dict, values: dict, times: dict, at: dict, scale: int, dtype: str, rows,
              dtype_row, report: tuple, time_is: str, hardware: tuple, weights: list, whole: bool) -> list[str]:
    """The lines returning hybridfast._answer's payload, key for key, from the bound values ``x<i>``, the sheet's
    numbers ``g`` and the step model's ``q`` (``report``: the step entry, its quantities' positions by name, the
    report's quantities, and the busiest stage's row when no p is typed).  ``whole``: for values and numbers that are
    all ints (but the extras, always shown by plain_exact): shown as they are, without a test each."""
    w, n = _word, _digits

    def shown(item: str) -> str:        # an exact number as the answer shows it (plain_exact, ints as they are)
        return item if whole else f"(_x if type(_x := {item}) is int else _pe(_x))"

    def times_own(item: str, own: int) -> str:      # a count of elements of the term's own type, shown
        own = n(own)
        return f"{item} * {own}" if whole else f"(_x * {own} if type(_x := {item}) is int else _pe(_x * {own}))"

    position = {name: i for i, name in enumerate(times)}
    legs_at = (position["beta"], position["beta_inter"]) if "beta" in times and "beta_inter" in times else None

    def time(positions: tuple, start: int, end: int | None, legs: int = 0) -> str:     # Σ count × constant
        # (summed_time), shown; legs that run at once (their elements after the counts, two a pair): summed_time's
        # exact min, called, not in line
        if legs:
            return f"(_x if type(_x := _st({k(positions)}, g[{start}:{start + len(positions) + 2 * legs}], _w, _d, " \
                   f"{k(legs_at)})) is float else _pe(_x))"
        if whole:       # whole counts: summed_time's one numerator over the constants' denominator, in line, and
            # shown_quotient's rule in line (an int when whole, else the correctly rounded float; a quotient beyond
            # the float range raises OverflowError, a refusal, so the general path refuses it in its words).  The
            # float first: one not whole says the quotient is not (a whole quotient rounds to a whole float), so the
            # remainder, a second long division, is asked only of a whole float
            total = " + ".join(f"g{start + i} * {k(weights[at])}" for i, at in enumerate(positions)) or "0"
            return f"(_q if (_q := (_s := {total}) / _d) % 1.0 else _s // _d if not _s % _d else _q)"
        return f"(_x if type(_x := _st({k(positions)}, g[{start}:{'' if end is None else end}], _w, _d)) is float " \
               "else _pe(_x))"

    (f0, _), (c0, _), (e0, _), (t0, _), (a0, _) = sheet["bounds"]
    # (key, its text, its value's code) in the document's order; a key met again takes its first place (dict.update)
    # the same for every call, and immutable: held by the document's template (a word or a whole number)
    fixed = {"label": entry["label"], "kind": entry["kind"], "name": "hybrid", "unit": "bytes", "dtype": dtype,
             "bytes_per_element": scale, "time_is": time_is}
    lines = [("label", w("label"), k(entry["label"])), ("kind", w("kind"), k(entry["kind"])),
             ("name", w("name"), w("hybrid")), ("options", w("options"), "None"),
             ("values", w("values"),
              "{" + ", ".join(f"{k(name)}: {shown(f'x{at[name]}')}" for name in values) + "}"),
             ("unit", w("unit"), w("bytes")), ("dtype", w("dtype"), k(dtype)),
             ("bytes_per_element", w("bytes_per_element"), n(scale))]
    for i, name in enumerate(sheet["fields"]):
        number = f"g{f0 + i}" if name in PER_MESSAGE_NAMES else f"g{f0 + i} * {n(scale)}"
        lines.append((name, k(name), shown(number)))
    if times:
        lines.append(("time", w("time"), time(tuple(position[n] for n in sheet["coefficients"]), c0, None,
                                              sheet["legs"])))
    # an extra is shown by plain_exact, or is a float the generated code showed already (a quotient not whole)
    lines += [(name, k(name), f"(_x if type(_x := g{e0 + i}) is float else _pe(_x))")
              for i, name in enumerate(sheet["extras"])]
    # each term's row made from its words (a copy of one mapping, its four numbers set in their places): half its
    # keys are words, and a copy is one pass where a display inserts key by key
    terms, made = [], []
    for i, (label, axis, primitive, algorithm, own, dtype_entry) in enumerate(sheet["terms"]):
        g = t0 + 4 * i
        words = {"label": label, "axis": axis, "collective": primitive, "algorithm": algorithm, "group": 0,
                 "message": 0, "count": 0, "send": 0, **dtype_entry}
        made += [f"r{i} = _cp({k(words)})", f"r{i}[{w('group')}] = {shown(f'g{g}')}",
                 f"r{i}[{w('message')}] = {times_own(f'g{g + 1}', own)}",
                 f"r{i}[{w('count')}] = {shown(f'g{g + 2}')}", f"r{i}[{w('send')}] = {times_own(f'g{g + 3}', own)}"]
        terms.append(f"r{i}")
    lines.append(("terms", w("terms"), "[" + ", ".join(terms) + "]"))
    axes, a = [], a0
    pick = f"(0 if x{at['p']} == 1 else 1 if x{at['p']} == 2 else 2)" if "p" in at else "2"
    for name, coefficients, words, legs in sheet["axes"]:
        row = [f"{w('send')}: {shown(f'g{a} * {n(scale)}')}", f"{w('stage')}: {k(tuple(words))}[{pick}]"]
        if times:
            counts = tuple(position[n] for n in coefficients)
            row.append(f"{w('time')}: {time(counts, a + 1, a + 1 + len(coefficients), legs)}")
            a += len(coefficients) + 2 * legs
        a += 1
        axes.append(f"{k(name)}: {{" + ", ".join(row) + "}")
    axes_text = "{" + ", ".join(axes) + "}"
    if len(axes) > 1:
        lines.append(("axes", w("axes"), axes_text))
    inputs = [f"{k(name)}: {{{w('value')}: {shown(f'x{at[name]}')}, {w('unit')}: {k(unit)}, "
              f"{w('source')}: {k(source)}}}" for name, unit, source, _ in rows[:len(values)]]
    inputs += [f"{k(name)}: {{{w('value')}: {k(value if type(value) is int else plain_exact(value))}, "
               f"{w('unit')}: {k(unit)}, {w('source')}: {k(source)}}}"
               for (name, unit, source, _), value in zip(rows[len(values):], times.values())]
    inputs.append(f"{w('dtype')}: dict({k(dtype_row)})")
    lines.append(("inputs", w("inputs"), "{" + ", ".join(inputs) + "}"))
    result_keys = tuple(sheet["fields"]) + (("time",) if times else ())
    lines += [("units", w("units"), "None"), ("_result_keys", w("_result_keys"), f"list({k(result_keys)})"),
              ("_extra_keys", w("_extra_keys"), f"list({k(tuple(sheet['extras']))})"),
              ("time_is", w("time_is"), k(time_is))]
    # the step report (hybridfast._step_report's, by position in the step model's numbers ``q``), added as
    # payload.update adds it: a key the document has already (options, units) keeps its place and takes the report's
    step, where, unit_keys, busiest = report
    pick = f"(0 if int(float(x{at['p']})) == 1 else 1)" if busiest is None else str(busiest)
    reported = [(key, k(key), f"q{where[key]}") for key in unit_keys]
    reported += [(part, k(part), "{" + ", ".join(f"{k(short)}: q{where[name]}" for short, name in step[of]) + "}")
                 for part, of in (("comm_time_per_axis", "comm"), ("exposed_comm_time_per_axis", "exposed"),
                                  ("memory", "memory"))]
    reported += [("memory_stage", k("memory_stage"), f"dict({k(step['memory_stage'])})"),
                 ("bubble_fraction_of_step", k("bubble_fraction_of_step"),
                  f"q{where['bubble_time']} / q{where['step_time']}"),
                 ("units", w("units"), f"dict({k(step['units'])})"),
                 ("busiest_stage", k("busiest_stage"), f"dict({k(step['busiest'])}[{pick}])"),
                 ("options", w("options"), f"dict({k(step['options'])})"),
                 ("assumptions", k("assumptions"), f"list({k(step['assumptions'])})")]
    # the hardware's words (words.with_hardware_report's, worded once by _hardware): the constants, the memory
    # verdict of this call's memory per GPU, the fit's error, the units and the defaults taken
    _, constants, verdict, error, units, defaults = hardware
    reported += [("constants", k("constants"), f"dict({k(constants)})"),
                 *((key, k(key), f"_v[{k(key)}]") for key in verdict),
                 ("step_time_error", k("step_time_error"), _anew(k, error)),
                 ("units", w("units"), f"dict({k({**step['units'], **units})})"),
                 ("assumptions", k("assumptions"), f"list({k((*step['assumptions'], *defaults))})")]
    place = {key: i for i, (key, _, _) in enumerate(lines)}
    for key, text, code in reported:
        fixed.pop(key, None)
        if key in place:
            lines[place[key]] = (key, lines[place[key]][1], code)
        else:
            place[key] = len(lines)
            lines.append((key, text, code))
    body = made + ([] if len(axes) > 1 else [axes_text])     # computed all the same: its refusals are the answer's
    body.append(f"_v = _mv(q{where['memory_per_gpu']})")
    # the document a copy of its template, its keys in order and its fixed words in place, each other value set in
    # that order (the values' code runs in the order a display would run it): a copy keeps the template's table,
    # where a display of ~50 keys inserts key by key and grows its table four times.  The Python API's template
    # (``_keys`` false) lacks the two lists of keys only eval's printer reads, which the API would delete
    if any(type(value) not in (str, int) for value in fixed.values()):
        raise ValueError("a fixed value that is not a word or a whole number")
    template = {key: fixed.get(key) for key, _, _ in lines}
    keys_only = ("_result_keys", "_extra_keys")
    api = {key: value for key, value in template.items() if key not in keys_only}
    body.append(f"_r = _cp({k(template)} if _keys else {k(api)})")
    body += [f"_r[{text}] = {code}" for key, text, code in lines if key not in fixed and key not in keys_only]
    body.append("if _keys:")
    body += [f"    _r[{text}] = {code}" for key, text, code in lines if key in keys_only]
    return body + ["return _r"]


def _anew(k, value) -> str:
    """Code making ``value`` (the fit's error: mappings, lists and plain words or numbers) anew on each call: the
    answer's own mappings, never shared with the next."""
    if type(value) is dict:
        return "{" + ", ".join(f"{k(key)}: {_anew(k, item)}" for key, item in value.items()) + "}"
    if type(value) is list:
        return "[" + ", ".join(_anew(k, item) for item in value) + "]"
    if value is None or type(value) in (str, int, float, bool):
        return k(value)
    raise ValueError(f"not a plain value: {type(value).__name__}")


def hardware(system, words: tuple) -> tuple:
    """words.with_hardware_report's additions worded once for a plan: (the memory verdict's function, the constants,
    the verdict's keys, the fit's error, the units added, the defaults taken), by the calls that rule makes; the
    verdict, of each call's memory per GPU, is made per call.  Printed as that rule adds them: each key at its place
    (one the document has already keeps it, as dict assignment and update keep it)."""
    constants, asked, units, defaults, framework, uncounted = words
    return (verdict_of(system, framework, uncounted), constants, tuple(system.memory_verdict(0.0)),
            None if asked is None else system.step_time_error(*asked), units, defaults)
