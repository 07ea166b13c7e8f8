"""The hybrid strategy's SymPy-free eval (symcomm.training.hybridfast, from the generated
symcomm/training/hybrid_data.py) against the SymPy path it stands in for.

The evidence is the SymPy path itself (symcomm.training.answers.eval_payload, kept callable): over every model
preset with every generated option variant, at layouts and hardware presets of a grid and of a hypothesis sweep,
both give the same JSON text (same keys in the same order, ints as ints, the same floats), the same notes and the
same printed text — or the fast path steps aside (nothing said) and the one dispatcher (fasteval.eval_document)
refuses as SymPy does.  Then: what the data does not hold goes to SymPy with the same answer, the generated module
is what a fresh generation writes (a cheap sample always, the whole file in the slow run), and a cold
`symcomm eval hybrid` loads no SymPy.
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from symcomm.base import notes
from symcomm.base.errors import InputError
from symcomm.commands import evaluate as command
from symcomm.presets import model_names
from symcomm.tools import hybridgen
from symcomm.training import answers, fasteval, hybridfast
from conftest import ROOT

MODELS = model_names()
VARIANTS = hybridgen.VARIANTS
#: layouts every model binds at (MoE with t > 1 needs sp=1: those refuse without it, in both paths alike)
LAYOUTS = (("t=1", "p=1", "d=8", "c=1", "e=1", "b=64", "m=8"),
           ("t=2", "p=2", "d=2", "c=1", "e=2", "b=32", "m=8", "s=4096"),
           ("t=8", "p=4", "d=4", "c=2", "e=4", "b=256", "m=32", "G=8"))


def _args(words, model, hardware="a100", dtype=None, **extra):
    return SimpleNamespace(**{"name": "hybrid", "assignments": list(words), "algorithm": None, "dtype": dtype,
                              "backend": None, "model": model, "model_config": None, "hardware": hardware, **extra})


def _run(path, args):
    """(the document as JSON text, the notes, the printed text) or (the refusal's line, None, None)."""
    with notes.collected() as said:
        try:
            doc = path(args)
        except InputError as err:
            return f"refused: {err}", None, None
    keys = {k: doc.pop(k) for k in ("_result_keys", "_extra_keys")}
    text = json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        held = command.eval_document
        command.eval_document = lambda _: {**json.loads(text), **keys}
        try:
            command.cmd_eval(SimpleNamespace(**vars(args), json=False))
        finally:
            command.eval_document = held
    return text, [(n.text, n.restates_default) for n in said], out.getvalue()


def _fast(args):
    try:
        return hybridfast.answer(args)
    except hybridfast.Fallback as err:
        raise _SteppedAside(str(err)) from None


class _SteppedAside(Exception):
    pass


def same(words, model, hardware="a100", dtype=None, held=True):
    """The fast path's answer equals the SymPy path's; ``held``: it must answer (the option set is generated and
    the SymPy path answers), else it may step aside, saying nothing, and the dispatcher then answers as SymPy."""
    slow = _run(answers.eval_payload, _args(words, model, hardware, dtype))
    try:
        with notes.collected() as said:
            fast = _run(_fast, _args(words, model, hardware, dtype))
    except _SteppedAside as err:
        assert not said, "a path that steps aside says nothing"
        assert not (held and slow[1] is not None), f"stepped aside ({err}) where SymPy answers: {model} {words}"
        assert _run(fasteval.eval_document, _args(words, model, hardware, dtype)) == slow
        return None
    assert fast == slow, (model, words, hardware, dtype)
    return fast


@pytest.mark.parametrize("model", MODELS)
def test_every_model_and_variant_answers_as_the_sympy_path(model):
    answered = 0
    for variant in VARIANTS:
        for layout in LAYOUTS:
            for hardware in ("a100", "h100"):
                answered += same((*layout, *variant), model, hardware) is not None
    assert answered >= len(VARIANTS)     # same() holds it answering wherever SymPy answers; this, that it does


def test_the_bench_case_is_answered_here():
    # the bench's cold case (symcomm.tools.bench): gpt3-175b on 64 A100s, t=8 p=8, selective recompute
    words = ("t=8", "p=8", "d=1", "c=1", "b=64", "m=64", "s=2048", "recompute=selective")
    text, said, printed = same(words, "gpt3-175b")
    doc = json.loads(text)
    # Megatron's tensor parallelism all-reduces the activations twice per transformer layer in the forward (after
    # attention and after the MLP: Shoeybi et al. 2019, §3, Fig. 4): 96 layers / 8 stages = 12 layers per stage,
    # 64 micro-batches (b = 64, d = 1, one sequence each) → 12 × 64 × 2 forward all-reduces on the busiest GPU
    assert doc["terms"][0]["count"] == 12 * 64 * 2
    assert doc["options"]["recompute"] == "selective" and "step_time" in doc
    # 1F1B's bubble: (p − 1)/m of the step's micro-batch slots (Narayanan et al. 2021, §2.2): 7/64 = 0.109375, an
    # extra the generated sheet gives as the float it is shown as (no Fraction built), in the plan's answer too
    assert doc["bubble_fraction"] == 0.109375
    import symcomm

    for _ in range(3):
        got = symcomm.evaluate("hybrid", model="gpt3-175b", hardware="a100", t=8, p=8, d=1, c=1, b=64, m=64,
                               s=2048, recompute="selective")
        assert got["bubble_fraction"] == 0.109375 and type(got["bubble_fraction"]) is float


def test_refusals_step_aside_and_refuse_as_the_sympy_path():
    base = ["t=8", "p=8", "d=1", "c=1", "b=64", "m=64"]
    cases = [base + ["Q=1"], base[1:], base + ["t=3"], ["t=x"] + base[1:], ["t=6", *base[1:]],
             ["b=63" if w.startswith("b=") else w for w in base], base + ["alpha=-1"], base + ["gpus_per_node=0"],
             base + ["recompute=sometimes"], base + ["zero=1", "overlap_param_gather=1", "overlap_grad_reduce=0"],
             base + ["peak_fp8=1e15"], base + ["bw=50GB/s"]]
    for words in cases:
        same(words, "gpt3-175b", held=False)
    assert same(base + ["Q=1"], "gpt3-175b", held=False) is None


def test_what_the_data_does_not_hold_goes_to_sympy():
    words = ["t=8", "p=8", "d=1", "c=1", "b=64", "m=64"]
    # another dtype, an option set not generated, an uneven split: stepped aside, the same answer
    assert same(words, "gpt3-175b", dtype="fp32", held=False) is None
    assert same(words + ["zero=0"], "gpt3-175b", held=False) is None
    assert same(words + ["tp_overlap=1"], "llama3-70b", held=False) is None
    # what usable() leaves out: no hardware, a backend, a hardware file's path
    assert not hybridfast.usable(_args(words, "gpt3-175b", hardware=None))
    assert not hybridfast.usable(_args(words, "gpt3-175b", backend="nccl"))
    assert not hybridfast.usable(_args(words, "gpt3-175b", hardware="path/to/hardware.json"))
    assert not hybridfast.usable(_args(words, None))


# hypothesis: the layouts, batches, sequence lengths and option variants of the shipped models, typed and not
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(model=st.sampled_from(MODELS), variant=st.sampled_from(VARIANTS), t=st.sampled_from([1, 2, 4, 8, 3]),
       p=st.sampled_from([1, 2, 3, 4, 8]), d=st.integers(1, 64), c=st.sampled_from([1, 2]), e=st.sampled_from([1, 2, 8]),
       b=st.integers(1, 4096), m=st.integers(1, 64), s=st.sampled_from([None, 1024, 8192]),
       hardware=st.sampled_from(["a100", "h100", "b200", "h100-gt"]), dtype=st.sampled_from([None, "bf16"]))
def test_a_sweep_answers_as_the_sympy_path(model, variant, t, p, d, c, e, b, m, s, hardware, dtype):
    words = [f"t={t}", f"p={p}", f"d={d}", f"c={c}", f"e={e}", f"b={b}", f"m={m}", *variant]
    if s is not None:
        words.append(f"s={s}")
    same(words, model, hardware, dtype, held=False)


def test_the_api_reads_the_same_document():
    import symcomm

    got = symcomm.evaluate("hybrid", model="gpt3-175b", hardware="a100", t=8, p=8, d=1, c=1, b=64, m=64,
                           recompute="selective")
    with notes.collected():
        doc = answers.eval_payload(_args(["t=8", "p=8", "d=1", "c=1", "b=64", "m=64", "recompute=selective"],
                                         "gpt3-175b"))
    doc.pop("_result_keys"), doc.pop("_extra_keys")
    assert json.dumps(got.to_dict()) == json.dumps(doc)


def test_a_sample_of_the_generated_module_is_fresh():
    # the bench case's entries, printed again: each part is in the committed file as it is (its functions are named
    # by their keys, so a few cases print as they do in the whole); the whole file: the slow test below
    committed = ROOT.joinpath("symcomm", *hybridgen.TARGET).read_text(encoding="utf-8")
    case = _args(["t=8", "p=8", "d=1", "c=1", "b=64", "m=64", "recompute=selective"], "gpt3-175b")
    parts = hybridgen.chunks([case])
    assert len(parts) > 6
    for part in parts:
        assert part in committed, "stale: run python -m symcomm.tools.codegen --primitives"


@pytest.mark.slow
def test_the_generated_module_is_fresh():
    assert ROOT.joinpath("symcomm", *hybridgen.TARGET).read_text(encoding="utf-8") == hybridgen.generate(), \
        "stale: run python -m symcomm.tools.codegen --primitives"


def test_a_cold_eval_hybrid_loads_no_sympy():
    code = ("import sys, io, contextlib\nfrom symcomm.__main__ import main\n"
            "for extra in ([], ['--json'], ['sp=1', 'recompute=full', '--dtype', 'bf16']):\n"
            "    with contextlib.redirect_stdout(io.StringIO()):\n"
            "        assert main(['eval', 'hybrid', '--model', 'llama3-70b', '--hardware', 'h100', 't=8', 'p=4',\n"
            "                     'd=32', 'c=1', 'b=1024', 'm=32', *extra]) == 0\n"
            "print(sorted(m for m in sys.modules if m == 'sympy' or m.startswith('sympy.')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert done.stdout.strip() == "[]"


def _api_and_sympy(model, hardware, **values):
    """(symcomm.evaluate's document as JSON text and its notes, eval_payload's for the same words)."""
    import symcomm

    try:
        got = symcomm.evaluate("hybrid", model=model, hardware=hardware, **values)
        api = (json.dumps(got.to_dict()), list(got.notes))
    except InputError as err:
        api = (f"refused: {err}", None)
    words = [f"{key}={value}" for key, value in values.items()]
    with notes.collected() as said:
        try:
            doc = answers.eval_payload(_args(words, model, hardware))
        except InputError as err:
            return api, (f"refused: {err}", None)
    doc.pop("_result_keys"), doc.pop("_extra_keys")
    return api, (json.dumps(json.loads(json.dumps(doc))), [n.text for n in said])


def test_a_warm_call_is_answered_by_the_plan_of_its_names_with_its_own_numbers(monkeypatch):
    # the first call plans the names t, p, d, c, b, m, s (and recompute=selective); then the cold path is made to
    # fail, so every later answer under those names is the plan's: each must be the SymPy path's, number for number
    first = dict(t=8, p=8, d=1, c=1, b=64, m=64, s=2048, recompute="selective")
    key = hybridfast._plan_key(SimpleNamespace(name="hybrid", values=first, model="gpt3-175b", hardware="a100",
                                               dtype=None, backend=None, algorithm=None, model_config=None))
    hybridfast._PLANS.pop(key, None)
    api, sympy_path = _api_and_sympy("gpt3-175b", "a100", **first)
    assert api == sympy_path
    assert hybridfast._PLANS[key] is hybridfast._ONCE      # a call made once prints nothing (sheet.Plan's rule)
    api, sympy_path = _api_and_sympy("gpt3-175b", "a100", **first)
    assert api == sympy_path and isinstance(hybridfast._PLANS[key], hybridfast._Plan)
    monkeypatch.setattr(hybridfast, "_answer", lambda *_: pytest.fail("the cold path ran for a planned call"))
    # and the SymPy path may not answer in its place (a plan that stepped aside would leave it to answer)
    monkeypatch.setattr(fasteval, "_eval_payload", lambda: pytest.fail("the plan stepped aside"))
    for layout in (dict(t=4, p=4, d=2, c=1, b=128, m=16, s=4096), dict(t=8, p=1, d=8, c=1, b=64, m=8, s=1024),
                   dict(t=2, p=2, d=16, c=2, b=512, m=4, s=8192), dict(t=8, p=8, d=1, c=1, b=64, m=64, s=2048)):
        api, sympy_path = _api_and_sympy("gpt3-175b", "a100", **layout, recompute="selective")
        assert api == sympy_path, layout
        doc = json.loads(api[0])
        # by hand (test_the_bench_case_is_answered_here): 96 layers / p stages, two tp all-reduces per layer in the
        # forward, per micro-batch (m = b / d / micro-batch of one sequence)
        assert doc["terms"][0]["count"] == 96 // layout["p"] * layout["m"] * 2
        assert doc["values"]["t"] == layout["t"] and doc["values"]["s"] == layout["s"]
    # a value the rules refuse (b = 100 is not divisible by d = 8): refused as the SymPy path refuses it
    monkeypatch.undo()
    api, sympy_path = _api_and_sympy("gpt3-175b", "a100", t=8, p=1, d=8, c=1, b=100, m=8, s=1024,
                                     recompute="selective")
    assert api == sympy_path and api[0].startswith("refused: ")


def test_the_api_answers_a_planned_call_by_its_plan_and_falls_back_on_a_refusal(monkeypatch):
    # symcomm.evaluate answers names planned before by the plan itself (api.evaluate: hybridfast.held), without
    # eval_document's layers; what the plan refuses (a word that is no number, a value below its least, a broken
    # rule) goes the one path, which refuses it in the SymPy path's words, notes and all
    from symcomm import api as api_module

    layout = dict(t=4, p=2, d=2, c=1, b=64, m=8, s=4096, recompute="selective")
    for _ in range(2):
        _api_and_sympy("llama3-8b", "h100", **layout)      # planned at its second answer
    assert isinstance(hybridfast.held("llama3-8b", "h100", None, None, None, None, layout), hybridfast._Plan)
    with monkeypatch.context() as patch:
        patch.setattr(api_module, "eval_document", lambda *_: pytest.fail("a planned call took the general path"))
        api, sympy_path = _api_and_sympy("llama3-8b", "h100", **dict(layout, b=128, m=16))
        assert api == sympy_path and api[1] is not None
    for refused in (dict(b="many"), dict(t=0), dict(b=63), dict(p=3)):
        api, sympy_path = _api_and_sympy("llama3-8b", "h100", **dict(layout, **refused))
        assert api == sympy_path and api[0].startswith("refused: "), refused


def test_a_planned_answer_shares_nothing_with_the_next():
    import symcomm

    layout = dict(model="llama3-8b", hardware="h100", t=2, p=2, d=4, c=1, b=64, m=8, s=4096)
    symcomm.evaluate("hybrid", **layout)
    symcomm.evaluate("hybrid", **layout)                    # planned at its second answer
    first = symcomm.evaluate("hybrid", **layout).data       # by the plan
    expected = json.dumps(symcomm.evaluate("hybrid", **layout).to_dict())
    # every mapping and list of the document changed in place: the next answer is as before
    stack = [first]
    while stack:
        node = stack.pop()
        keys = list(node) if isinstance(node, dict) else range(len(node))
        for key in keys:
            if isinstance(node[key], (dict, list)):
                stack.append(node[key])
        if isinstance(node, dict):
            node["changed"] = True
        else:
            node.append("changed")
    assert json.dumps(symcomm.evaluate("hybrid", **layout).to_dict()) == expected


def test_names_that_change_more_than_a_number_are_not_planned(monkeypatch):
    # a typed time constant (the weights), N or G (the link rule), bw (a conversion): not planned, each answer the
    # SymPy path's; once that is known, a process holding the SymPy path answers them there (its own plans, warm)
    base = dict(t=8, p=2, d=4, c=1, b=64, m=8, s=4096)
    extras = (dict(alpha=1e-5), dict(G=4), dict(bw="100GB/s"))
    for extra in extras:
        for _ in range(2):
            api, sympy_path = _api_and_sympy("llama3-8b", "h100", **base, **extra)
            assert api == sympy_path, extra
        key = hybridfast._plan_key(SimpleNamespace(name="hybrid", values={**base, **extra}, model="llama3-8b",
                                                   hardware="h100", dtype=None, backend=None, algorithm=None,
                                                   model_config=None))
        assert key in hybridfast._PLANS and hybridfast._PLANS[key] is None
    monkeypatch.setattr(hybridfast, "answer", lambda *_: pytest.fail("answered cold where a plan never will"))
    for extra in extras:
        api, sympy_path = _api_and_sympy("llama3-8b", "h100", **base, **extra)
        assert api == sympy_path, extra


def test_a_plans_two_fills_answer_alike_and_hold_no_word_in_their_code(monkeypatch):
    # each plan prints its document twice (hybridplan._document): for ints throughout, and testing each number; forced
    # onto the second (no number taken as an int), every answer is still the SymPy path's
    layouts = (dict(t=4, p=2, d=2, c=1, b=64, m=8, s=4096), dict(t=8, p=1, d=8, c=1, b=64, m=8, s=1024),
               dict(t=2, p=4, d=4, c=2, b=32, m=8, s=4096))
    for layout in layouts:
        api, sympy_path = _api_and_sympy("llama3-8b", "h100", **layout)     # planned by the second
        assert api == sympy_path
    monkeypatch.setattr(hybridfast, "_INT", frozenset())
    for layout in layouts:
        api, sympy_path = _api_and_sympy("llama3-8b", "h100", **layout)
        assert api == sympy_path
    # the printed code names parameters and positions only: every word of the data or the call (a label, a source, a
    # name typed) is a parameter's default, never text of the code; its only text is the keys every answer has
    plans = [plan for key, plan in hybridfast._PLANS.items() if isinstance(plan, hybridfast._Plan)
             and key[0] == "llama3-8b"]
    assert plans
    for plan in plans:
        printed = plan.answer.printed       # held to its first call's words (hybridfast._Worded)
        code = printed.__code__
        texts = {c for c in code.co_consts if isinstance(c, str)}
        assert texts and texts <= {"label", "kind", "name", "hybrid", "options", "values", "unit", "bytes",
                                   "dtype", "bytes_per_element", "time", "terms", "axis", "collective",
                                   "algorithm", "group", "message", "count", "send", "stage", "axes", "value",
                                   "source", "inputs", "units", "_result_keys", "_extra_keys", "time_is"}
        assert "llama3-8b" in str(printed.__defaults__) and "llama3-8b" not in texts
        # the names typed are defaults too (the binding reads gv[_k…]), and the code calls no name but these
        assert {"t", "p", "d"} <= {c for c in printed.__defaults__ if isinstance(c, str)}
        assert set(code.co_names) <= {"type", "int", "float", "dict", "list"}


def test_a_plan_answers_only_numbers_its_first_call_worded_alike():
    import symcomm

    # a plan held the first call's refusals and notes: an outsider's third call with t=3 (Llama 3 8B: 32 heads, 8 K/V
    # heads; 3 divides neither) was priced where eval refuses it, and 12 GPUs on nodes of 8 (1.5 nodes) kept the
    # note-less words of a 16-GPU first call
    base = dict(model="llama3-8b", hardware="h100", t=2, p=2, d=4, c=1, b=64, m=8, s=4096)
    for _ in range(2):
        symcomm.evaluate("hybrid", **base)
    for t in (3, 16, 64):
        with pytest.raises(InputError, match=f"t={t} does not divide the model's"):
            symcomm.evaluate("hybrid", **{**base, "t": t})
    partial = {**base, "d": 3, "b": 48}         # 2·2·3 = 12 GPUs, G = 8
    said = "the job's 12 GPUs do not fill whole nodes of G=8"
    for layout, note in ((partial, True), (base, False), (partial, True), (base, False)):
        api, sympy_path = _api_and_sympy(**layout)
        assert api == sympy_path
        assert any(said in text for text in api[1]) is note
