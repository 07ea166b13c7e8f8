"""The Python API's planned primitives (symcomm.training.primitiveplan, through fasteval._Resolved) against the SymPy
path they stand in for.

The evidence is the SymPy path itself (symcomm.training.answers.eval_payload): a call under names met before is
answered by its plan's printed function, and over a hypothesis sweep of algorithms, names in any order (the
gpus_per_node spelling included), dtypes, hardware presets and values — plain ints and floats inside and outside
every bound, points that break a requirement, points whose counts are not whole or have no exact answer — it
gives the same JSON text and notes as eval_payload of the same words, or refuses with the same line.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import symcomm
from symcomm.base.errors import InputError
from symcomm.training import answers, fasteval
from symcomm.training import primitive_data as data
from symcomm.training.words import value_text
from test_fasteval import GOOD, PAIRS, _args, _run


def _api(name, algorithm, dtype, hardware, values):
    """symcomm.evaluate's document as JSON text and its notes, or its refusal's line."""
    try:
        got = symcomm.evaluate(name, algorithm=algorithm, dtype=dtype, hardware=hardware, **values)
    except InputError as err:
        return f"refused: {err}", None
    return json.dumps(got.to_dict(), indent=2, ensure_ascii=False, allow_nan=False), list(got.notes)


def _sympy(name, algorithm, dtype, hardware, values):
    words = [f"{key}={value_text(value)}" for key, value in values.items()]
    text, said, _ = _run(answers.eval_payload, _args(name, algorithm, words, dtype, hardware))
    return text, said and [line for line, _ in said]


#: a whole-number parameter's values: small (0 and 1 below some least values), large, beyond the bound
#: (MAX_VALUE = 2**100), and floats, whole or not
_WHOLE = st.one_of(st.integers(-1, 20), st.sampled_from([2, 4, 8, 16, 32]), st.integers(1, 10 ** 13),
                   st.integers(1, 1000).map(lambda x: x * 5040), st.sampled_from([2 ** 100, 2 ** 100 + 1, 3 * 2 ** 70]),
                   st.sampled_from([8.0, 4.0, 2.5, 1e3, -2.0, 1e40, 5040.0]))
#: a time constant's values: ints and floats, 0, negative, below MIN_VALUE (1e-30), beyond the bound
_TIME = st.sampled_from([0, 1, 3, 0.0, 5e-6, 1e-11, 2 ** -30, 0.1, 7.5, -1.0, -1, 1e-300, 1e300, 2 ** 101])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pair=st.sampled_from(PAIRS), order=st.randoms(use_true_random=False), timed=st.booleans(),
       alias=st.booleans(), dtype=st.sampled_from([None, "bf16", "fp32", "fp8"]),
       hardware=st.sampled_from([None] * 5 + ["h100", "a100-pcie"]), data_=st.data())
def test_a_planned_call_answers_as_the_sympy_path(pair, order, timed, alias, dtype, hardware, data_):
    entry = data.SUBJECTS[pair]
    names = list(entry["needed"]) + (list(entry["time"]) if timed else [])
    order.shuffle(names)
    typed = ["gpus_per_node" if name == "G" and alias else name for name in names]
    good = {word: int(GOOD[name]) if name in GOOD else 1e-6 for word, name in zip(typed, names)}
    # the first call under these names plans them (answered cold); the drawn point is then the plan's
    assert _api(*pair, dtype, hardware, good) == _sympy(*pair, dtype, hardware, good)
    if hardware is None:
        held = fasteval._RESOLVED.get((entry["label"], tuple(typed), dtype))
        assert isinstance(held, fasteval._Resolved), "plain numbers under names met before are planned"
    values = {word: data_.draw(_TIME if name not in data.WHOLE else _WHOLE, label=word)
              for word, name in zip(typed, names)}
    assert _api(*pair, dtype, hardware, values) == _sympy(*pair, dtype, hardware, values), values


def test_names_refused_or_worded_from_their_values_are_not_planned():
    # a name unknown or missing is refused as the SymPy path refuses it, on every call; a bandwidth (bw: its β and
    # its row's words come from its value) is answered cold on every call, each with its own value's words
    for values in ({"N": 8, "M": 64, "Q": 1}, {"N": 8}, {"N": 8, "M": 64, "alpha": 1e-6}):
        for _ in range(2):
            assert _api("all_reduce", "ring", None, None, values)[0].startswith("refused: ")
            assert _api("all_reduce", "ring", None, None, values) == _sympy("all_reduce", "ring", None, None, values)
    for bw in (5e10, 2e11, 4e11):
        values = {"N": 8, "alpha": 1e-6, "bw": bw, "M": 2 ** 20, "gamma": 0}
        assert _api("all_reduce", "ring", "fp32", None, values) == _sympy("all_reduce", "ring", "fp32", None, values)
    held = fasteval._RESOLVED.get(("all_reduce / ring", tuple(values), "fp32"))
    assert held is fasteval._UNPLANNED


def test_the_ring_call_of_the_speed_goal_by_hand():
    # 2·(N−1)/N·M elements of 2 bytes sent; α count 2(N−1) = 14; γ count (N−1)/N·M elements; time exactly
    # Σ count × constant (β, γ per byte: × 2) correctly rounded, each constant the decimal its float's repr writes
    # (a float is read as its word, words.value_text)
    from fractions import Fraction

    values = dict(N=8, M=2 ** 30, alpha=5e-6, beta=1e-11, gamma=1e-12)
    for _ in range(3):          # the first plans, the rest are the plan's
        got = symcomm.evaluate("all_reduce", algorithm="ring", dtype="bf16", **values)
        assert (got["send"], got["recv"], got["alpha"], got["beta"], got["gamma"]) == \
            (7 * 2 ** 28 * 2, 7 * 2 ** 28 * 2, 14, 7 * 2 ** 28 * 2, 7 * 2 ** 27 * 2)
        assert got["total"] == 8 * 7 * 2 ** 28 * 2                     # summed over the 8 ranks
        exact = 14 * Fraction("5e-6") + 7 * 2 ** 28 * 2 * Fraction("1e-11") + 7 * 2 ** 27 * 2 * Fraction("1e-12")
        assert got["time"] == float(exact)
        assert got["inputs"]["alpha"] == {"value": 5e-6, "unit": "s/message", "source": "typed"}
        assert got.notes == ()


def test_counts_that_are_not_ints_go_to_the_general_fill(monkeypatch):
    # reduce by Rabenseifner with the fold to 2^⌊log₂N⌋: its generated cost gives its counts as Fractions (whole ones,
    # e.g. Fraction(2, 1) at N = M = 2), so the plan hands its bound values to the general fill (fasteval._document),
    # which answers as SymPy does; a point refused by its rule never gets there
    pair, names = ("reduce", "rabenseifner_fold"), ("M", "N", "alpha", "beta", "gamma")
    first = dict(zip(names, (1024, 16, 1e-6, 1e-9, 0)))
    assert _api(*pair, "fp32", None, first) == _sympy(*pair, "fp32", None, first)
    filled = []
    general = fasteval._document
    monkeypatch.setattr(fasteval, "_document", lambda *a: filled.append(a[0]) or general(*a))
    monkeypatch.setattr(fasteval, "_cold", lambda *_: pytest.fail("answered cold under names met before"))
    for point in ((2, 2, 1e-6, 1e-9, 0), (8, 6, 0, 3, 2 ** -30), (12, 5, 1, 0.1, 7.5), (6, 8, 1e-6, 1e-9, 0)):
        values = dict(zip(names, point))
        assert _api(*pair, "fp32", None, values) == _sympy(*pair, "fp32", None, values), values
    assert filled == ["reduce"] * 3, "the three points its rule takes (M = 6 is no multiple of 2^⌊log₂8⌋ = 8)"
