"""The warm answer (issue 25): an option set met before is answered by its plan (training.sheet.Plan, the
binding's plan), and every such answer is the general path's, number for number and type for type; the
requirement checks and refusals still happen on every call, in the words' order."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

import symcomm
from symcomm.base import notes
from symcomm.base.errors import InputError
from symcomm.numbers.evaluation import plain
from symcomm.training import answers, sheet

LLAMA = dict(model="llama3-8b", hardware="h100")
#: layouts whose numbers the two paths must give alike: the step time's hybrid, options, a primitive, a strategy
LAYOUTS = [
    ("hybrid", dict(LLAMA, t=8, p=1, d=8, c=1, b=64, m=8, s=4096)),
    ("hybrid", dict(LLAMA, t=2, p=4, d=4, c=2, b=32, m=8, s=4096, recompute="selective")),
    ("hybrid", dict(LLAMA, t=8, p=4, d=2, c=1, b=64, m=16, s=4096, schedule="interleaved", v=2)),
    ("hybrid", dict(model="deepseek-v3", hardware="h100", t=1, p=1, d=64, c=1, e=64, b=1024, m=16, s=4096)),
    ("hybrid", dict(model="llama3-8b", t=8, p=1, d=8, c=1, b=64, m=8, s=4096, G=8)),      # no step time
    ("dp", dict(N=64, Phi=8 * 10 ** 9, alpha=5e-6, beta=1e-11, gamma=1e-12)),
    ("zero3", dict(N=8, Phi=1000)),
    ("hsdp", dict(N=64, G=8, Phi=10 ** 9)),
]


def _bound(name: str, given: dict):
    keys = ("algorithm", "dtype", "backend", "model", "model_config", "hardware")
    args = SimpleNamespace(name=name, values={k: v for k, v in given.items() if k not in keys},
                           **{k: given.get(k) for k in keys})
    target, values, times, dtype, *_ = answers._bound_words(args)
    return target, values, times, dtype


def _typed(document):
    # a document with each number's type beside it: 3 and 3.0 told apart
    if isinstance(document, dict):
        return {k: _typed(v) for k, v in document.items()}
    if isinstance(document, list):
        return [_typed(v) for v in document]
    return (type(document).__name__, document)


@pytest.mark.parametrize("name, given", LAYOUTS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(LAYOUTS)])
def test_the_plan_gives_the_general_paths_numbers(name, given):
    with notes.collected():
        target, values, times, dtype = _bound(name, given)
        scale = 2 if dtype == "bf16" else 1 if dtype is None else {"fp8": 1, "fp32": 4}[dtype]
        general = answers._numbers_at(target, values, times, scale, bool(dtype))
        answers._numbers_at(target, values, times, scale, bool(dtype))      # the sheet's second use: it is warm
        plan = sheet.plan_of(target, scale, bool(dtype), values, times)
        assert plan is not None
        got = sheet.planned(plan, target, values, times, scale, bool(dtype))
        assert _typed(_shown(got)) == _typed(_shown(general))


def _shown(numbers: dict) -> dict:
    # the cost's fields and time as eval_payload words them (exact counts held either way: shown by plain)
    return {**numbers, "result": {k: v if type(v) is float else plain(v) for k, v in numbers["result"].items()}}


def test_a_warm_answer_counts_as_by_hand():
    # dp's all-reduce of Φ gradients over N ranks, a ring: 2·(N − 1)/N·Φ elements sent (Patarasuk & Yuan 2009)
    for _ in range(3):
        got = symcomm.evaluate("dp", N=64, Phi=8 * 10 ** 9)
        assert got["send"] == 2 * 63 * 8 * 10 ** 9 // 64


@pytest.mark.parametrize("name, given, words", [
    # a requirement the values break: b/d/m whole (hybrid's micro-batches)
    ("hybrid", dict(LLAMA, t=8, p=1, d=8, c=1, b=63, m=8, s=4096), "b=63 must be divisible by d=8"),
    # a value that is not a number, before a name that is unknown: the words' order decides
    ("dp", dict(N="eight", foo=1, Phi=100), "N='eight' is not a number"),
    ("dp", dict(foo=1, N="eight", Phi=100), "unknown parameter 'foo'"),
    # one time constant given, the others missing
    ("dp", dict(N=4, Phi=100, alpha=1e-6), "missing beta, gamma: the time of"),
])
def test_refusals_on_every_call_warm_or_cold(name, given, words):
    symcomm.evaluate("hybrid", **dict(LLAMA, t=8, p=1, d=8, c=1, b=64, m=8, s=4096))     # plans made
    symcomm.evaluate("dp", N=4, Phi=100)
    symcomm.evaluate("dp", N=4, Phi=100, alpha=1e-6, beta=1e-11, gamma=0)
    said = set()
    for _ in range(3):
        with pytest.raises(InputError) as err:
            symcomm.evaluate(name, **given)
        said.add(str(err.value))
    assert len(said) == 1 and words in said.pop()
