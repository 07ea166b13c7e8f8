"""The sheet of an answer: every formula ``eval`` reads of a subject (its cost's fields and time's counts, its
extras, its terms' rows, each parallel axis's send and counts) built once per cached subject, scale and unit,
evaluated at the bound values in one compiled exact call, and worded as the answer's rows; the exact sum of a
time (Σ count × constant).  Used by :mod:`symcomm.training.answers` (eval and compare), split from it by what
it holds.
"""

from __future__ import annotations

import math
from fractions import Fraction

import sympy as sp

from ..base import memo
from ..base.units import bytes_per_element
from ..core import symbols as S
from ..numbers.evaluation import Formulas, exact, exact_numbers, held_numbers, is_warm, plain
from ..numbers.exactcode import compiled_many
from ..numbers.exactops import NotExact, faster_legs, summed_time
from .binding import _PER_MESSAGE
from .subjects import Subject


def _numbers(values: dict) -> dict | None:
    """The bound values as Python ints and Fractions (None: not all exact), what the compiled exact code takes;
    converted once per answer (the helpers below are handed the same bound dict, never changed after binding)."""
    return held_numbers(values)


def _time(coefficients, numbers, values: dict, times: dict, scale: int, counts=None, shown: bool = False, legs=()):
    """Σ count × constant, exactly (the constants as typed are exact rationals), as the answer's time;
    ``counts``: the coefficients' values when already evaluated.  ``shown``: a sum of ints and Fractions is
    returned as the answer shows it (:func:`plain`: an int when whole, else the float nearest it — the quotient
    of the two Python ints, correctly rounded as float() of the Fraction is), without building the Fraction.
    ``legs``: the cost's pairs of legs that run at once (``Cost.overlapped``), whose values follow the coefficients'
    in ``counts``: min(a·β, b·β_inter) is taken off for each."""
    if legs:
        n = len(coefficients)
        if counts is None:
            got = [exact(coef, values) for _, coef in coefficients] + [exact(x, values) for leg in legs for x in leg]
        else:
            got = list(counts)
        linear = _time(coefficients, numbers, values, times, scale, got[:n])
        beta, inter = times[S.beta] * scale, times[S.beta_inter] * scale
        exact_times = _numbers(times) if numbers is not None else None
        if exact_times is not None:
            beta, inter = exact_times[S.beta] * scale, exact_times[S.beta_inter] * scale
        total = linear - faster_legs(got[n:], beta, inter)
        return plain(total) if shown else total
    exact_times = _numbers(times) if numbers is not None else None
    if exact_times is None:
        return sum((exact(coef, values) * (1 if sym in _PER_MESSAGE else scale) * times[sym]
                    for sym, coef in coefficients), sp.Integer(0))
    if counts is None:
        counts = exact_numbers(tuple(coef for _, coef in coefficients), numbers, values)
    # counts that are ints or Fractions (the compiled code's): Σ count × weight over the constants' one common
    # denominator, kept as one numerator over one denominator in Python ints (one reduction at the end, not a
    # gcd per term); the weights worked out once per answer's constants and scale, looked up by the symbol's
    # identity (the bound constants' own symbols: no SymPy hash per term), else by the symbol
    weights, den, by_id = _weights(times, exact_times, scale)
    num, bottom = 0, 1
    for (sym, _), count in zip(coefficients, counts):
        weight = by_id.get(id(sym))
        if weight is None:
            weight = weights[sym]
        if type(count) is int:
            num += count * weight * bottom
        elif type(count) is Fraction:
            num = num * count.denominator + count.numerator * weight * bottom
            bottom *= count.denominator
        else:
            break               # SymPy's numbers (or not a number): the sums below
    else:
        bottom *= den
        if num % bottom == 0:
            return num // bottom
        if shown:
            try:
                return num / bottom
            except OverflowError:
                return plain(Fraction(num, bottom))     # its one refusal, in its words
        return Fraction(num, bottom)
    # the sum as one numerator over one denominator, in Python ints: the same exact number Fraction's own
    # sum gives (one reduction at the end instead of a gcd per operation); a Fraction count goes that way
    if not all(type(count) is int or isinstance(count, (Fraction, sp.Rational)) for count in counts):
        return sum((count * (1 if sym in _PER_MESSAGE else scale) * exact_times[sym]     # not a number: SymPy's sum
                    for (sym, _), count in zip(coefficients, counts)), sp.Integer(0))
    num, den = 0, 1
    for (sym, _), count in zip(coefficients, counts):
        constant = exact_times[sym]
        top, bottom = (count, 1) if type(count) is int else (int(count.numerator), int(count.denominator))
        if type(constant) is not int:
            top, bottom = top * constant.numerator, bottom * constant.denominator
        else:
            top *= constant
        if sym not in _PER_MESSAGE:
            top *= scale
        num, den = (num + top * den, den) if bottom == 1 else (num * bottom + top * den, den * bottom)
    return num if den == 1 else Fraction(num, den)


def _weights(times: dict, exact_times: dict, scale: int) -> tuple[dict, int, dict]:
    """(time symbol → its constant × the lcm of the constants' denominators (× ``scale`` but for the
    per-message α), that lcm, the same weights by the symbol's id): the sum Σ count × constant is then
    Σ count × weight / lcm, exactly.  ``times``: the bound constants (symbol → SymPy number), ``exact_times``
    the same as Python numbers.  Worked out once per process for the same constants: the binding hands out
    one immutable number per word (binding.parse_value), so the next answer at the same hardware finds them
    by the identity of its symbols and numbers, which the entry holds (no id is reused while it is kept)."""
    key = (scale, *map(id, times), *map(id, times.values()))
    held = _WEIGHTS.get(key)
    if held is None:
        if len(_WEIGHTS) >= 64:
            _WEIGHTS.clear()
        den = math.lcm(*(1 if type(c) is int else c.denominator for c in exact_times.values()))
        weights = {sym: (c * den if type(c) is int else c.numerator * (den // c.denominator))
                   * (1 if sym in _PER_MESSAGE else scale) for sym, c in exact_times.items()}
        by_id = {id(sym): weight for sym, weight in weights.items()}     # its symbols held: their ids unique
        held = _WEIGHTS[key] = (tuple(times.items()), (weights, den, by_id))     # held: their ids stay unique
    return held[1]


#: (scale, ids of the bound constants' symbols and numbers) → (those held, their weights and common denominator)
_WEIGHTS: dict = {}


def _cost_parts(target: Subject, in_bytes_of):
    """The cost's (field, formula) pairs, (time symbol, count) pairs and pairs of legs that run at once
    (``Cost.overlapped``), built once per cached subject."""
    cache = memo.table(target, "_answers_cost_parts")
    if in_bytes_of not in cache:
        cost = target.cost_in(in_bytes_of) if in_bytes_of is not None else target.cost
        cache[in_bytes_of] = (tuple(cost.fields().items()), tuple(cost.coefficients), cost.overlapped())
    return cache[in_bytes_of]


def _term_exprs(target: Subject) -> tuple:
    # each term's group, message, count and send (per cached subject)
    return memo.once(target, "_answers_term_exprs", lambda: tuple(
        sp.sympify(e, strict=True) for term in target.terms for e in (term.group, term.message, term.count,
                                                                       term.cost.send)))


def _term_rows(target: Subject, got: tuple, scale: int, in_bytes: bool = False) -> list[dict]:
    """Each term's row; ``got``: its group, message, count and send at the values (:func:`_term_exprs`)."""
    rows = []
    for i, (label, axis, primitive, algorithm, own, dtype) in enumerate(_term_words(target, scale, in_bytes)):
        group, message, count, send = got[4 * i: 4 * i + 4]
        rows.append({
            "label": label,
            "axis": axis,
            "collective": primitive,
            "algorithm": algorithm,
            # whole counts (the common case) as they are; plain() words a Fraction (or SymPy's number)
            "group": group if type(group) is int else plain(group),
            "message": message * own if type(message) is int else plain(message * own),
            "count": count if type(count) is int else plain(count),
            "send": send * own if type(send) is int else plain(send * own),
            **dtype,
        })
    return rows


def _term_words(target: Subject, scale: int, in_bytes: bool) -> tuple:
    """Each term's label, axis, collective, algorithm, bytes per element and dtype entry: what its row says
    at any values, worded once per cached subject and unit (a term's label is composed on every read)."""
    cache = memo.table(target, "_answers_term_words")
    held = cache.get((scale, in_bytes))
    if held is None:
        held = cache[scale, in_bytes] = tuple(
            (term.label, getattr(term, "axis", ""), term.primitive, term.algorithm,
             bytes_per_element(term.dtype) if in_bytes and getattr(term, "dtype", "") else scale,
             {"dtype": term.dtype} if getattr(term, "dtype", "") else {})
            for term in target.terms)
    return held


def _axis_parts(target: Subject, scale: int, in_bytes: bool) -> tuple:
    """Per parallel axis: (its name, its terms, its summed cost), built once per cached subject."""
    costs = memo.table(target, "_answers_axis_parts")
    if (scale, in_bytes) not in costs:
        from .terms import cost_in_bytes_of     # here: an import statement costs its lookups on every call

        by_axis: dict = {}
        for term in target.terms:
            by_axis.setdefault(getattr(term, "axis", ""), []).append(term)
        costs[scale, in_bytes] = tuple(
            (axis, tuple(terms), cost_in_bytes_of(terms, scale) if in_bytes else _summed(terms))
            for axis, terms in by_axis.items())
    return costs[scale, in_bytes]


def _axis_rows(target: Subject, got: tuple, values: dict, times: dict, scale: int, in_bytes: bool) -> dict:
    """Per parallel axis: what its busiest GPU sends (and its time), and which pipeline stage that GPU is on;
    ``got``: each axis's send and (with times) its time's counts at the values (:func:`_sheet`)."""
    stages = values.get(S.p)
    stages = int(stages) if isinstance(stages, sp.Integer) else None   # parsed numbers, never text
    out = {}
    numbers = _numbers(values)
    at = 0
    where = _stages_at(target, scale, in_bytes, stages)
    for (axis, terms, cost), stage in zip(_axis_parts(target, scale, in_bytes), where):
        row = {"send": plain(got[at] * scale), "stage": stage}
        at += 1
        if times:
            legs = cost.overlapped()
            width = len(cost.coefficients) + 2 * len(legs)
            counts = got[at: at + width]
            at += width
            time = _time(cost.coefficients, numbers, values, times, scale, counts, shown=True, legs=legs)
            row["time"] = time if type(time) is float else plain(time)
        out[axis or "all"] = row
    return out


def _stages_at(target: Subject, scale: int, in_bytes: bool, stages: int | None) -> tuple:
    """Which stage each axis's busiest GPU is on: a function of its terms and p alone, worded once per p."""
    words = memo.table(target, "_answers_axis_stages")
    where = words.get((scale, in_bytes, stages))
    if where is None:
        from .terms import busiest_stage

        where = words[scale, in_bytes, stages] = tuple(busiest_stage(terms, stages)
                                                       for _, terms, _ in _axis_parts(target, scale, in_bytes))
    return where


def _label(target: Subject) -> str:
    # worded once per cached subject (a strategy's label spells every option)
    return memo.once(target, "_answers_label", lambda: target.label)


def _sheet(target: Subject, scale: int, in_bytes: bool, timed: bool) -> tuple:
    """Every formula ``eval`` reads at the values, in one tuple (one compiled exact call: the cost's fields,
    its time's counts and legs, the extras, the terms' rows, each axis's send, counts and legs) and the slices of
    it, with the fields, coefficients, extras and legs they hold: built once per cached subject, scale and unit."""
    cache = memo.table(target, "_answers_sheet")
    key = (scale, in_bytes, timed)
    if key not in cache:
        fields, coefficients, legs = _cost_parts(target, scale if in_bytes else None)
        extras = tuple((k, sp.sympify(e, strict=True)) for k, e in target.extras.items())
        # a time's counts, then the elements of its legs that run at once (summed_time's order)
        parts = [tuple(e for _, e in fields), tuple(c for _, c in coefficients) + tuple(x for leg in legs for x in leg)
                 if timed else (), tuple(e for _, e in extras)]
        if target.terms:
            parts.append(_term_exprs(target))
            parts.append(tuple(e for _, _, cost in _axis_parts(target, scale, in_bytes)
                               for e in (cost.send, *((c for _, c in cost.coefficients) if timed else ()),
                                         *((x for leg in cost.overlapped() for x in leg) if timed else ()))))
        exprs = Formulas(sp.sympify(e, strict=True) for part in parts for e in part)
        bounds, at = [], 0
        for part in parts:
            bounds.append((at, at + len(part)))
            at += len(part)
        cache[key] = (exprs, tuple(bounds), fields, coefficients, extras, legs)
    return cache[key]


def _summed(terms):
    from ..core.cost import Cost

    return Cost.sum(term.cost for term in terms)


# -- the plan: what an answer reads of its sheet at any numbers, resolved once per option set ---------------------

class Plan:
    """An answer's sheet for one option set (a cached subject, scale, unit, the names given and the time
    constants given): the compiled exact function of every formula and, as positions rather than SymPy
    symbols, where each of its arguments, fields, time counts and axis rows sits.  A warm answer is then its
    numbers bound, one compiled call and rows filled by position (:func:`planned`): no formula or symbol
    hashed per call.  Built at a sheet's second use (the compiled code's own rule,
    :func:`symcomm.numbers.evaluation.exact_numbers`: a one-shot command pays no compilation)."""

    __slots__ = ("held", "function", "arguments", "bounds", "fields", "time_counts", "extras", "axes", "stage_at",
                 "value_names", "legs_at")

    def __init__(self, **parts):
        for key, value in parts.items():
            setattr(self, key, value)


def plan_of(target: Subject, scale: int, in_bytes: bool, values: dict, times: dict) -> Plan | None:
    """The :class:`Plan` of ``target`` at this scale and unit for values and times given under these names (the
    bound dicts' keys, in their order), or None where the planned path does not apply (the sheet's first use,
    a formula without exact code, a count whose constant is not given): then the general path answers."""
    key = (scale, in_bytes, tuple(map(id, values)), tuple(map(id, times)))
    cache = memo.table(target, "_sheet_plans")
    held = cache.get(key, _NONE)
    if held is not _NONE:
        return held
    exprs, bounds, fields, coefficients, extras, legs = _sheet(target, scale, in_bytes, bool(times))
    if not is_warm(exprs):
        return None                       # the first use: the general path (which counts the use) answers
    made = compiled_many(exprs)
    plan = None
    if made is not None:
        function, symbols = made
        position = {sym: i for i, sym in enumerate(values)}
        timed = {sym: i for i, sym in enumerate(times)}
        counted = [sym for sym, _ in coefficients] if times else []
        axes = []
        for axis, _, cost in (_axis_parts(target, scale, in_bytes) if target.terms else ()):
            # each count's constant by its position among the times given (summed_time's weights), then its legs'
            # elements (two a pair)
            axes.append((axis or "all", (len(cost.coefficients) + 2 * len(cost.overlapped())) if times else 0,
                         tuple(timed.get(sym) for sym, _ in cost.coefficients)))
            counted += [sym for sym, _ in cost.coefficients] if times else []
        if all(sym in position for sym in symbols) and all(sym in timed for sym in counted):
            # β's and β_inter's places among the times given (every cost with legs counts both)
            legs_at = (timed[S.beta], timed[S.beta_inter]) if times and S.beta in timed and S.beta_inter in timed \
                else None
            plan = Plan(held=(tuple(values), tuple(times)), function=function,
                        arguments=tuple(position[sym] for sym in symbols), bounds=bounds,
                        fields=tuple((k, k in ("alpha", "alpha_inter")) for k, _ in fields),
                        time_counts=tuple(timed[sym] for sym, _ in coefficients) if times else (),
                        extras=tuple(k for k, _ in extras), axes=tuple(axes), stage_at=position.get(S.p),
                        value_names=tuple(_CLI_NAME[sym] for sym in values), legs_at=legs_at)
    if len(cache) >= 64:
        cache.clear()
    cache[key] = plan                     # None too: this option set is answered by the general path
    return plan


_NONE = object()
#: what the compiled exact code's results are (exactops: an int, else a Fraction)
_EXACT_TYPES = frozenset((int, Fraction))
#: symbol → its CLI name (answers._CLI_NAME's rule)
_CLI_NAME = {info.symbol: name for name, info in S.SYMBOLS.items()}


def planned(plan: Plan, target: Subject, values: dict, times: dict, scale: int, in_bytes: bool) -> dict:
    """The numbers of an answer by its :class:`Plan` — the values as shown, the cost's fields and time, the
    extras, the terms' and axes' rows — each the number the general path gives (the same exact values, the
    same rounding); :class:`NotExact` where the compiled code has no exact answer (then nothing was said, and
    the general path answers)."""
    numbers = held_numbers(values)
    exact_times = held_numbers(times) if times else {}
    if numbers is None or exact_times is None:
        raise NotExact("a value that is not exact")
    point = list(numbers.values())
    try:
        got = plan.function(*[point[i] for i in plan.arguments])
    except (ArithmeticError, TypeError, ValueError, NameError) as err:
        raise NotExact(str(err)) from None
    if not _EXACT_TYPES.issuperset(map(type, got)):     # a truth value or a float: no exact answer here
        raise NotExact("not an exact number")
    # (a whole Fraction is left as it is: every reader below words it as the int it equals, as plain does)
    (f0, f1), (c0, c1), (e0, e1), *rest = plan.bounds
    # the cost's fields as the general path holds them (counts × bytes per element but α), then the time
    out = {key: number if per_message else number * scale for (key, per_message), number in zip(plan.fields, got[f0:f1])}
    weights = den = None
    if times:
        weights, den = _weights_of(times, list(exact_times.values()), scale)
        out["time"] = summed_time(plan.time_counts, got[c0:c1], weights, den, plan.legs_at)
    extras = {key: plain(number) for key, number in zip(plan.extras, got[e0:e1])}
    rows = {}
    if target.terms:
        (t0, t1), (a0, _) = rest
        rows["terms"] = _term_rows(target, got[t0:t1], scale, in_bytes)
        stage = point[plan.stage_at] if plan.stage_at is not None else None
        where = _stages_at(target, scale, in_bytes, stage if type(stage) is int else None)
        axes, at = {}, a0
        for (name, counts, constants), stage_word in zip(plan.axes, where):
            send = got[at] * scale
            row = {"send": send if type(send) is int else plain(send), "stage": stage_word}
            if times:       # summed_time gives the time as shown: an int or a float
                row["time"] = summed_time(constants, got[at + 1: at + 1 + counts], weights, den, plan.legs_at)
            at += 1 + counts
            axes[name] = row
        rows["axes"] = axes
    values_shown = {name: value if type(value) is int else plain(value)
                    for name, value in zip(plan.value_names, point)}
    return {"values": values_shown, "result": out, "extras": extras, **rows}


def _weights_of(times: dict, exact: list, scale: int) -> tuple[list, int]:
    """(each time constant × the lcm of their denominators × bytes per element but for α, in the order of
    ``times``; that lcm), once per bound constants (the binding hands out one number per word: found by the
    identities of the symbols and numbers, which the entry holds, so no id is reused while it is kept)."""
    key = (scale, *map(id, times), *map(id, times.values()))
    held = _PLAN_WEIGHTS.get(key)
    if held is None:
        den = math.lcm(*(1 if type(c) is int else c.denominator for c in exact))
        weights = [(c * den if type(c) is int else c.numerator * (den // c.denominator))
                   * (1 if sym in _PER_MESSAGE else scale) for sym, c in zip(times, exact)]
        if len(_PLAN_WEIGHTS) >= 64:
            _PLAN_WEIGHTS.clear()
        held = _PLAN_WEIGHTS[key] = (tuple(times.items()), weights, den)
    return held[1], held[2]


#: (scale, ids of the bound constants' symbols and numbers) → (those held, their weights, their common denominator)
_PLAN_WEIGHTS: dict = {}
