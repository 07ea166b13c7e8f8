"""A primitive's plan as printed code (:class:`symcomm.training.fasteval._Resolved`): the answer of one Python API
call's names and ``--dtype`` — its numbers bound, bounded and checked, the generated cost called once, the document
filled — as one function of the keyword values, printed once per plan (:func:`printed`), as
:mod:`symcomm.training.hybridplan` prints the hybrid's.

The printed function answers the common point, where every value and every count is an ``int``; at any other
(a ``Fraction``, a count the exact code cannot give) it hands its bound values to the general fill
(``fasteval._document``), which answers, refuses or steps aside (``NotExact``) as it does for every other call.
Its text holds positions and parameters only: every name, bound, word and constant of the data or the call is a
parameter's default, never text of the code (only the document's own keys, :data:`WORDS`, are printed as
themselves; a whole number printed as digits is checked to be an int first).
"""

from __future__ import annotations

from ..base.inputs import MAX_VALUE
from ..numbers.exactops import shown_quotient
from .printedcode import Constants as _Constants, digits as _digits, word as _program_word
from .words import PER_MESSAGE_NAMES, _parsed_float, _value

#: the keys every primitive's answer has, the one text the printed code holds: the program's words, never data's
WORDS = frozenset(("label", "kind", "name", "algorithm", "values", "unit", "dtype", "bytes_per_element", "time",
                   "inputs", "value", "source", "units", "_result_keys", "_extra_keys"))

#: the primitives' rule kinds tested on ints in line (fasteval._check's own test of them); any other kind, or a value
#: that is not an int, goes to _check itself, which refuses in the rule's words
_IN_LINE = {"power_of_two": "{x} >= 1 and not {x} & ({x} - 1)", "divides": "({x} == 0 or {y} % {x} == 0)"}


def _word(text: str) -> str:
    return _program_word(WORDS, text)


def printed(entry: dict, name: str, typed: tuple, slots: tuple, dtype, scale: int, rows: tuple, units: tuple,
            general: tuple):
    """The plan's one function ``answer(given_values)`` → the document (with its ``_result_keys`` and
    ``_extra_keys``), or the general fill's answer or refusal.

    ``entry``: the generated entry (primitive_data.SUBJECTS); ``name``: the primitive as asked; ``typed``: the
    keyword names as given, in order, and ``slots`` their slots (fasteval._slots: name, a time constant?, (how an
    error names it, whole numbers only, its least value)); ``dtype``, ``scale``: the dtype taken and its bytes per
    element (1 without); ``rows``: the inputs' rows and the dtype's row (fasteval._rows); ``units``: the (key, unit)
    pairs.  ``general``: (``check(entry, got)``, fasteval._check; ``weights(names, words, values, scale)``,
    fasteval._weights; ``fill(values, times, shown, point, given_values)``, the general fill)."""
    check, weights, fill = general
    k = _Constants()
    lines, at, times, shown = [], {}, {}, {}
    for i, ((key, is_time, how), word) in enumerate(zip(slots, typed)):
        lines.append(f"x{i} = gv[{k(word)}]")
        if is_time:     # a time constant: (its exact value, as the answer shows it), words._value's dispatch
            lines += [f"if type(x{i}) is float:", f"    x{i}, s{i} = _pf({k(key)}, x{i}, False, 0)",
                      f"elif type(x{i}) is int and 0 <= x{i} <= _max:", f"    s{i} = x{i}",
                      "else:", f"    x{i}, s{i} = _value({k(key)}, x{i}, False, 0)"]
            times[key], shown[key] = f"x{i}", f"s{i}"
        else:
            spelled, whole, least = how
            low = least if whole else 0
            lines += [f"if type(x{i}) is not int or not {k(low)} <= x{i} <= _max:",
                      f"    x{i} = _value({k(spelled)}, x{i}, {k(whole)}, {k(least)})[0]"]
            at[key] = f"x{i}"
    point = ", ".join(at[key] for key in entry["needed"])
    if entry["rules"]:
        lines.append(f"r = {k(entry['checks'])}({point})")
        tests, j = [], 0
        for kind, _, has_y in entry["rules"]:
            x, y = f"r[{j}]", f"r[{j + 1}]"
            tests += [f"type({x}) is int"] + ([f"type({y}) is int"] if has_y else [])
            tests.append(_IN_LINE.get(kind, "False").format(x=x, y=y))     # a kind of its own: _check tests it
            j += 2 if has_y else 1
        lines += [f"if not ({' and '.join(tests)}):", f"    _check({k(entry)}, r)"]
    fields, names = entry["fields"], entry["coefficients"]
    counts = len(fields) + (len(names) if times else 0)
    lines.append(f"g = {k(entry['cost'])}({point})")
    whole = [f"type({x}) is int" for x in at.values()] + [f"type(g[{i}]) is int" for i in range(counts)]
    lines.append(f"if not ({' and '.join(whole)}):")
    lines.append(f"    return _fill({{{', '.join(f'{k(key)}: {x}' for key, x in at.items())}}}, "
                 f"{{{', '.join(f'{k(key)}: {x}' for key, x in times.items())}}}, "
                 f"{{{', '.join(f'{k(key)}: {x}' for key, x in shown.items())}}}, [{point}], gv)")
    # the document, key for key in fasteval._document's order, every number an int here
    w = _word
    doc = [(w("label"), k(entry["label"])), (w("kind"), k("primitive")), (w("name"), k(name)),
           (w("algorithm"), k(entry["algorithm"])),
           (w("values"), "{" + ", ".join(f"{k(key)}: {x}" for key, x in at.items()) + "}"),
           (w("unit"), k("bytes" if dtype else "elements"))]
    if dtype:
        doc += [(w("dtype"), k(dtype)), (w("bytes_per_element"), _digits(scale))]
    for i, key in enumerate(fields):
        doc.append((k(key), f"g[{i}]" if scale == 1 or key in PER_MESSAGE_NAMES else f"g[{i}] * {_digits(scale)}"))
    keys = fields
    if times:
        words = ", ".join(f"gv[{k(typed[_position(slots, key)])}]" for key in names)
        lines.append(f"c, d = _weights({k(names)}, ({words},), ({', '.join(times[key] for key in names)},), "
                     f"{_digits(scale)})")
        total = " + ".join(f"g[{len(fields) + i}] * c[{i}]" for i in range(len(names))) or "0"
        doc.append((w("time"), f"_sq({total}, d)"))
        keys = fields + ("time",)
    row, dtype_row = rows
    inputs = [f"{k(key)}: {{{w('value')}: {shown[key] if is_time else at[key]}, {w('unit')}: {k(unit)}, "
              f"{w('source')}: {k(source)}}}" for key, unit, source, is_time in row]
    if dtype:
        inputs.append(f"{w('dtype')}: _cp({k(dtype_row)})")
    doc += [(w("inputs"), "{" + ", ".join(inputs) + "}"), (w("units"), f"_cp({k(dict(units))})"),
            (w("_result_keys"), f"list({k(tuple(keys))})"), (w("_extra_keys"), "[]")]
    lines.append("return {" + ", ".join(f"{key}: {code}" for key, code in doc) + "}")
    parameters = "".join(f", _k{i}=None" for i in range(len(k.values)))
    source = ("def _answer(gv, _max=None, _value=None, _pf=None, _check=None, _fill=None, _weights=None, _sq=None, "
              f"_cp=None{parameters}):\n    " + "\n    ".join(lines) + "\n")
    namespace: dict = {}
    exec(compile(source, "<symcomm.training.primitiveplan>", "exec"), namespace)   # names, indices and WORDS only
    answer = namespace["_answer"]
    answer.__defaults__ = (MAX_VALUE, _value, _parsed_float, check, fill, weights, shown_quotient, dict.copy,
                           *k.values)
    return answer


def _position(slots: tuple, key: str) -> int:
    # where the time constant ``key`` was given
    return next(i for i, (name, _, _) in enumerate(slots) if name == key)
