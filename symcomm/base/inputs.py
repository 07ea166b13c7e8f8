"""Parsing what a user types or hands over: numbers and JSON files.

Input is hostile until parsed.  No text given to symcomm ever reaches ``sympify``,
``eval``, ``exec`` or ``lambdify``: a number is read by the small grammar below, and a
JSON file is read with a size cap, without non-finite constants, and checked against a
schema shipped with the package (``symcomm/schema``).  Every number is bounded *before*
it is computed (the digits of a power are estimated from its exponent), so no input can
make symcomm hang or fill the memory.

The grammar of a number (ASCII only; spaces around the operators allowed)::

    number  := ["-"] product ["/" factor]
    product := factor ("*" factor)*            at most 4 factors
    factor  := INT ("**" | "^") INT            a power: 2**30
             | DECIMAL                          8, 0.5, 5e-6, 1.5E+3

The divisor is one factor: ``a/b*c`` is refused, since Python and C read it as (a/b)·c and a reader of
``a/b·c`` as a/(b·c); ``a*c/b`` says the one thing.  It gives an exact :class:`sympy.Rational` (``5e-6`` is
exactly 5/10⁶).  Magnitudes are
bounded: at most :data:`MAX_VALUE` (2¹⁰⁰ ≈ 1.3·10³⁰), and a nonzero value at least
:data:`MIN_VALUE` (10⁻³⁰); a parameter may set tighter bounds.
"""

from __future__ import annotations

import json
import math
import re
from fractions import Fraction
from typing import Any

from .errors import InputError

#: the largest magnitude any number may have, and the smallest nonzero one
MAX_VALUE = 2 ** 100
MIN_VALUE = Fraction(1, 10 ** 30)
MAX_TEXT = 200          # characters of one number as typed
MAX_FACTORS = 4

#: the spaces a number may have around it and around its operators: ASCII only (str.strip() alone
#: would also take Unicode spaces, which the grammar refuses everywhere else)
_SPACE = " \t\n\r\f\v"
_SP = r"[ \t\n\r\f\v]*"
_INT = r"[0-9]+"
_DECIMAL = r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?"
_FACTOR = re.compile(rf"{_SP}(?:(?P<base>{_INT}){_SP}(?:\*\*|\^){_SP}(?P<exp>{_INT})|(?P<dec>{_DECIMAL})){_SP}")
_DEC_PARTS = re.compile(r"(?P<int>[0-9]*)(?:\.(?P<frac>[0-9]*))?(?:[eE](?P<exp>[-+]?[0-9]+))?")
#: a product's "*", not the "**" of a power
_TIMES = r"(?<!\*)\*(?!\*)"

_LOG10_MAX = math.log10(MAX_VALUE)
_EXAMPLES = "e.g. 8, 2**30, 3*2**30, 1073741824"


def _bound_text(integer: bool, least, most) -> str:
    low = "" if least is None else f"{_show(least)}"
    high = _show(most)
    kind = "a whole number" if integer else "a number"
    if low != "":
        return f"{kind} from {low} to {high}"
    return f"{kind} up to {high}"


def _show(value) -> str:
    if value == MAX_VALUE:
        return "2**100"
    value = Fraction(value)
    if value.denominator == 1:
        return f"{value.numerator:,}"
    return f"{float(value):g}"


def _factor(key: str, text: str, piece: str) -> tuple[Fraction, float]:
    """One factor: (exact value, estimated log10 of its magnitude), bounded before computing."""
    match = _FACTOR.fullmatch(piece)
    if match is None:
        raise _not_a_number(key, text)
    if match["base"] is not None:
        base_digits, exp_digits = match["base"].lstrip("0"), match["exp"].lstrip("0")
        if len(base_digits) > 40 or len(exp_digits) > 6:
            return Fraction(0), math.inf
        base, exp = int(match["base"]), int(match["exp"])
        if base in (0, 1) or exp == 0:
            return Fraction(base ** exp if base in (0, 1) else 1), 0.0
        size = exp * math.log10(base)
        if size > _LOG10_MAX + 1:
            return Fraction(0), math.inf
        return Fraction(base ** exp), size
    parts = _DEC_PARTS.fullmatch(match["dec"])
    whole, frac, exp = parts["int"] or "", parts["frac"] or "", parts["exp"] or "0"
    digits = (whole + frac).lstrip("0")
    if not digits:
        return Fraction(0), -math.inf
    tiny = InputError(f"{key}={_short(text)} is not allowed: a nonzero number below {float(MIN_VALUE):g} is "
                      "too small to compute with (write 0 for nothing)")
    if len(digits) > 60 or len(exp.lstrip("+-").lstrip("0")) > 6:
        if exp.startswith("-") and len(digits) <= 60:
            raise tiny          # a nonzero value is never read as 0
        return Fraction(0), math.inf
    power = int(exp) - len(frac)
    size = len(digits) - 1 + power
    if size > _LOG10_MAX + 1:
        return Fraction(0), math.inf
    if size < -40:
        raise tiny
    value = Fraction(int(digits)) * (Fraction(10) ** power)
    return value, size


def _not_a_number(key: str, text: str) -> InputError:
    shown = text if len(text) <= 40 else text[:37] + "..."
    return InputError(f"{key}={shown!r} is not a number; {key} takes a number written in ASCII ({_EXAMPLES}, 5e-6)")


def parse_fraction(key: str, text: str, *, integer: bool = False, least=0, most=MAX_VALUE) -> Fraction:
    """``text`` as an exact fraction within [least, most], or InputError naming ``key``.

    ``least=None`` allows any sign.  A nonzero magnitude below :data:`MIN_VALUE` is refused too.
    """
    if not isinstance(text, str):
        raise InputError(f"{key} takes a number given as text; got {type(text).__name__}")
    if len(text) > MAX_TEXT:
        raise InputError(f"{key}: a number of {len(text)} characters is not allowed: at most {MAX_TEXT}")
    body = text.strip(_SPACE)
    sign = 1
    if body.startswith("-"):
        sign, body = -1, body[1:]
    elif body.startswith("+"):
        body = body[1:]
    if not body:
        raise _not_a_number(key, text)
    if body.isdigit() and body.isascii():
        # plain digits (the common case, and every Python int the API is given): the whole number they write,
        # read without the grammar's pieces; the same bounds and refusals below
        return _bounded(key, text, Fraction(sign * int(body)), integer, least, most)
    halves = body.split("/")
    if len(halves) > 2:
        raise _not_a_number(key, text)
    if "(" in body or ")" in body:
        raise InputError(f"{key}={_short(text)} is not allowed: the grammar has no parentheses; give the value, or "
                         "one factor after '/' (a*c/b)")
    if len(halves) == 2 and len(re.split(_TIMES, halves[1])) > 1:
        raise InputError(f"{key}={_short(text)} is not allowed: a product after '/' reads as (a/b)·c in Python and C "
                         f"and as a/(b·c) elsewhere; put the divisor last, one factor (a*c/b), or give the value")
    sizes, values = [], []
    for half in halves:
        factors = re.split(_TIMES, half)   # '*' but not '**'
        if len(factors) > MAX_FACTORS:
            raise InputError(f"{key}={text!r} is not allowed: at most {MAX_FACTORS} factors")
        value, size = Fraction(1), 0.0
        for piece in factors:
            v, s = _factor(key, text, piece)
            if s == math.inf or size + s > _LOG10_MAX + 1:
                raise InputError(f"{key}={_short(text)} is not allowed: {key} takes {_bound_text(integer, least, most)}")
            value *= v
            size = -math.inf if s == -math.inf or size == -math.inf else size + s
        values.append(value)
        sizes.append(size)
    if len(values) == 2:
        if values[1] == 0:
            raise InputError(f"{key}={_short(text)} is not allowed: division by zero")
        if sizes[1] > _LOG10_MAX + 1:
            raise InputError(f"{key}={_short(text)} is not allowed: {key} takes {_bound_text(integer, least, most)}")
        value = values[0] / values[1]
    else:
        value = values[0]
    return _bounded(key, text, value * sign, integer, least, most)


def _bounded(key: str, text: str, value: Fraction, integer: bool, least, most) -> Fraction:
    """``value`` (read from ``text``) within parse_fraction's bounds, or its refusal naming ``key``."""
    if integer and value.denominator != 1:
        raise InputError(f"{key}={_short(text)} is not allowed: {key} takes a whole number")
    if value != 0 and abs(value) < MIN_VALUE and (least is None or value >= least) and value <= most:
        # within the parameter's range but below what is computed with: said as such, not as the range
        raise InputError(f"{key}={_short(text)} is not allowed: a nonzero number below {float(MIN_VALUE):g} is too "
                         "small to compute with (write 0 for nothing)")
    if (least is not None and value < least) or value > most or abs(value) > MAX_VALUE:
        raise InputError(f"{key}={_short(text)} is not allowed: {key} takes {_bound_text(integer, least, most)}")
    return value


def _short(text: str) -> str:
    text = text.strip(_SPACE)
    return text if len(text) <= 40 else text[:37] + "..."


def parse_number(key: str, text: str, integer: bool, least: int = 1, most=MAX_VALUE) -> sp.Rational:
    """A symbol's value as an exact SymPy number: whole numbers ≥ ``least`` when ``integer``,
    otherwise any number ≥ 0; at most ``most``."""
    import sympy as sp    # here, not at the top: the planner parses its options without SymPy

    value = parse_fraction(key, text, integer=integer, least=least if integer else 0, most=most)
    return sp.Integer(value.numerator) if value.denominator == 1 else sp.Rational(value.numerator, value.denominator)


def parse_whole(key: str, text: str, least: int = 1, most: int = MAX_VALUE) -> int:
    """A whole number in [least, most] (a CLI option such as ``--gpus``)."""
    return int(parse_fraction(key, str(text), integer=True, least=least, most=most))


def parse_real(key: str, text: str, least: float = 0.0, most: float = float(MAX_VALUE),
               strictly_above: bool = False) -> float:
    """A finite float in [least, most] (``> least`` when ``strictly_above``)."""
    value = parse_fraction(key, str(text), integer=False, least=Fraction(least), most=Fraction(most))
    if strictly_above and value <= least:
        raise InputError(f"{key}={_short(str(text))} is not allowed: {key} takes a number above {least:g}")
    return float(value)


def parse_list(key: str, text: str, least: int, most: int, max_items: int = 64) -> tuple[int, ...]:
    """A comma-separated list of whole numbers (``--ranks 2,3,4,8``)."""
    words = [w for w in str(text).split(",")]
    if len(words) > max_items:
        raise InputError(f"--{key} takes at most {max_items} values; got {len(words)}")
    out = tuple(parse_whole(f"--{key}", w, least, most) for w in words)
    if not out:
        raise InputError(f"--{key} takes a comma-separated list, e.g. 2,3,4,8")
    return out


# -- JSON files ------------------------------------------------------------------------------------

#: caps on what a JSON file may hold
MAX_JSON_DEPTH = 32
MAX_INT_DIGITS = 40


def _reject_constant(name: str):
    raise ValueError(f"{name} is not allowed (only finite numbers)")


def _parse_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise ValueError(f"an integer of {len(text)} digits is not allowed (at most {MAX_INT_DIGITS})")
    return int(text)


def _parse_float(text: str) -> float:
    if len(text) > 64:
        raise ValueError(f"a number of {len(text)} characters is not allowed")
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is not a finite number")
    return value


#: a string as JSON spells it, or one left open to the end of the text (whose brackets then never count)
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)', re.S)
#: what is not a bracket
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
#: a run of digits longer than any integer allowed
_LONG_DIGITS = re.compile(r"[0-9]{%d}" % (MAX_INT_DIGITS + 1))


def _depth(text: str) -> int:
    """Deepest nesting of [ and { outside strings (checked before parsing): the strings dropped, then only the
    brackets walked (a kernel file is mostly numbers; walking its every character was a tenth of a plan)."""
    depth = deepest = 0
    for ch in _NOT_BRACKET.sub("", _STRING.sub("", text)):
        if ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def _unique_keys(pairs: list) -> dict:
    """An object's pairs as a dict, refused where a key is given twice (json keeps the last silently: a hardware
    file's second "eta" would win unseen, as an option given twice is refused)."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set = set()
        twice = next(key for key, _ in pairs if key in seen or seen.add(key))
        raise ValueError(f"the key {twice[:64]!r} is given twice in one object; give each key once")
    return out


def loads(text: str, what: str) -> Any:
    """JSON text as data: no NaN/Infinity, bounded integers, nesting ≤ :data:`MAX_JSON_DEPTH`, no key given twice in
    one object."""
    if _depth(text) > MAX_JSON_DEPTH:
        raise InputError(f"{what}: JSON nested deeper than {MAX_JSON_DEPTH} levels is not allowed")
    try:
        # an integer is a run of digits: with none longer than allowed anywhere, json's own int needs no check
        return json.loads(text, parse_constant=_reject_constant, parse_float=_parse_float,
                          parse_int=_parse_int if _LONG_DIGITS.search(text) else int, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as err:
        raise InputError(f"{what}: not valid JSON (line {err.lineno}, column {err.colno}: {err.msg})") from None
    except (ValueError, RecursionError) as err:
        raise InputError(f"{what}: {err}") from None


def schema(name: str) -> dict:
    """A schema shipped in ``symcomm/schema`` (``model-config``, ``measurement``, ``hardware``...)."""
    from importlib import resources

    text = resources.files("symcomm").joinpath("schema", f"{name}.schema.json").read_text(encoding="utf-8")
    return json.loads(text)


def check(data: Any, schema_name: str, what: str) -> Any:
    """``data`` if it satisfies the schema, else InputError naming ``what``, the field and the rule."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema(schema_name))
    errors = sorted(validator.iter_errors(data), key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))))
    if errors:
        error = errors[0]
        field = "/".join(str(part) for part in error.absolute_path)
        where = f"field {field!r}" if field else "the top level"
        message = error.message
        if error.validator in ("oneOf", "anyOf") and error.context:
            # "is not valid under any of the given schemas" names no rule: the failed alternatives' own words
            # (a whole number's bounds or type), null said once where null is allowed
            said = [e.message for e in error.context if e.validator_value != "null"]
            message = "; ".join(dict.fromkeys(said)) + (" (or null)" if len(said) < len(error.context) else "")
        if len(message) > 160 and repr(error.instance) in message:
            # the value's own repr cut short, the rule after it kept (a list given for an object: "[{...}, ...] is not
            # of type 'object'")
            message = message.replace(repr(error.instance), _short(repr(error.instance)))
        message = message if len(message) <= 160 else message[:157] + "..."
        raise InputError(f"{what}: {where}: {message}")
    return data


def read_json(path, option: str, schema_name: str, limit: int) -> Any:
    """A JSON file read with a size cap, parsed safely and checked against a schema; errors
    name ``option`` (``--model-config``) and the file."""
    from .files import read_capped

    raw = read_capped(path, limit, option)
    what = f"{option} {str(path)!r}"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{what}: not UTF-8 text") from None
    return check(loads(text, what), schema_name, what)


# -- quantities with units ----------------------------------------------------------------------

#: byte units a size may carry (M=1GiB): decimal and binary prefixes
SIZE_UNITS = {"B": 1, "kB": 10 ** 3, "KB": 10 ** 3, "MB": 10 ** 6, "GB": 10 ** 9, "TB": 10 ** 12,
              "KiB": 2 ** 10, "MiB": 2 ** 20, "GiB": 2 ** 30, "TiB": 2 ** 40}
#: rate units a bandwidth may carry (bw=50GB/s, bw=400Gb/s): bytes per second each
RATE_UNITS = {"B/s": 1, "KB/s": 10 ** 3, "MB/s": 10 ** 6, "GB/s": 10 ** 9, "TB/s": 10 ** 12,
              "GiB/s": 2 ** 30, "MiB/s": 2 ** 20, "Gb/s": 10 ** 9 / 8, "Mb/s": 10 ** 6 / 8, "Tb/s": 10 ** 12 / 8,
              "Gbps": 10 ** 9 / 8}


#: id of a units table → (the table, its units longest first, their last characters): once, not per number read
_LONGEST_FIRST: dict = {}


def split_unit(text: str, units: dict) -> tuple[str, str | None]:
    """(number text, unit) when ``text`` ends in one of ``units`` (longest first), else (text, None)."""
    body = str(text).strip(_SPACE)
    held = _LONGEST_FIRST.get(id(units))
    if held is None or held[0] is not units:        # holding the table keeps its id unique
        held = _LONGEST_FIRST[id(units)] = (units, sorted(units, key=len, reverse=True), {u[-1] for u in units})
    if body[-1:] not in held[2]:                     # no unit ends in its last character (a digit, say)
        return body, None
    for unit in held[1]:
        if body.endswith(unit) and body[: -len(unit)].strip(_SPACE):
            return body[: -len(unit)].strip(_SPACE), unit
    return body, None


def parse_size_bytes(key: str, text: str) -> int:
    """A size in bytes with its unit (``1GiB``, ``512MiB``, ``3*2**30B``): a whole number of bytes."""
    number, unit = split_unit(text, SIZE_UNITS)
    if unit is None:
        raise InputError(f"{key}={_short(str(text))} has no size unit; write for example {key}=1GiB or {key}=512MiB "
                         f"(units: {', '.join(SIZE_UNITS)})")
    value = parse_fraction(key, number, integer=False, least=0) * SIZE_UNITS[unit]
    if value.denominator != 1:
        raise InputError(f"{key}={_short(str(text))} is not a whole number of bytes")
    if not 1 <= value <= MAX_VALUE:
        raise InputError(f"{key}={_short(str(text))} is not allowed: a size from 1 byte to 2**100 bytes")
    return int(value)


#: the least plain number (no unit) a bandwidth is read as, bytes/s: below it a unit was more likely left out
#: (bw=50 meaning 50GB/s) than a link of under 1 MB/s meant
LEAST_PLAIN_BANDWIDTH = 1e6


def parse_bandwidth(key: str, text: str) -> float:
    """A bandwidth per direction in bytes/s: ``50GB/s``, ``400Gb/s`` (bits), or a plain number of bytes/s of at
    least :data:`LEAST_PLAIN_BANDWIDTH` (``5e10``)."""
    number, unit = split_unit(text, RATE_UNITS)
    units = f"(units: {', '.join(RATE_UNITS)})"
    try:
        value = float(parse_fraction(key, number, integer=False, least=None)) * RATE_UNITS.get(unit, 1)
    except InputError:
        raise InputError(f"{key}={_short(str(text))} is not a bandwidth: write a number and a rate unit, "
                         f"{key}=50GB/s or {key}=400Gb/s {units}") from None
    if not 1.0 <= value <= 1e18:
        # the bound in units it takes (an outsider typed the "1 EB/s" it named, a unit it does not take)
        raise InputError(f"{key}={_short(str(text))} is not allowed: a bandwidth from 1 B/s to 1000000TB/s {units}")
    if unit is None and value < LEAST_PLAIN_BANDWIDTH:
        raise InputError(f"{key}={_short(str(text))} has no rate unit, so it reads as {value:g} bytes/s: write "
                         f"{key}={_short(str(text))}GB/s (or {key}=400Gb/s, bits) {units}")
    return value


def grammar() -> dict:
    """The number grammar as data, for a second reader of numbers (the interactive page's
    ``numbers.js``, which symcomm.views.site ships with it): the regular expressions (Python syntax), the
    spaces, the bounds and the words of the errors' examples.  A test holds that reader's verdict on
    a table of strings equal to :func:`parse_number`'s."""
    return {"space": _SPACE, "factor": _FACTOR.pattern, "dec_parts": _DEC_PARTS.pattern, "times": _TIMES,
            "max_text": MAX_TEXT, "max_factors": MAX_FACTORS, "max_value": str(MAX_VALUE),
            "min_value": [str(MIN_VALUE.numerator), str(MIN_VALUE.denominator)],
            "min_value_shown": f"{float(MIN_VALUE):g}", "log10_max": _LOG10_MAX, "examples": _EXAMPLES,
            "size_units": {unit: str(size) for unit, size in SIZE_UNITS.items()}}
