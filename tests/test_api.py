"""The Python API (symcomm.api): the same answers as the commands, plain values, Jupyter reprs."""

import doctest
import json

import pytest
import sympy as sp

import symcomm
from symcomm import api
from symcomm.base.errors import InputError

from conftest import ROOT


def test_the_api_examples_run():
    failed, attempted = doctest.testmod(api, optionflags=doctest.ELLIPSIS)
    assert attempted >= 5 and failed == 0


def test_the_docs_page_examples_run():
    page = ROOT / "docs" / "api.md"
    failed, attempted = doctest.testfile(str(page), module_relative=False, optionflags=doctest.ELLIPSIS)
    assert attempted >= 5 and failed == 0


def test_evaluate_answers_what_eval_json_answers(capsys):
    from symcomm.commands.main import main

    assert main(["eval", "zero3", "N=8", "Phi=1000", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    got = symcomm.evaluate("zero3", N=8, Phi=1000).to_dict()
    assert got == printed
    # ZeRO-3: all-gather twice and reduce-scatter once, 7/8·Φ each (Rajbhandari et al. 2020, §7.2.2)
    assert got["send"] == 3 * 7 * 1000 // 8


def test_results_render_in_a_notebook():
    r = symcomm.evaluate("all_reduce", algorithm="ring", N=8, M=2 ** 20, alpha=1e-6, beta=1e-10, gamma=0,
                         dtype="fp32")
    assert "| send |" in r._repr_markdown_() and "<table>" in r._repr_html_()
    assert r.to_dict()["units"]["time"] == "s"
    f = symcomm.formula("all_reduce", "ring")
    assert f._repr_latex_().startswith("$\\begin{aligned}") and "send" in f.to_dict()["formulas"]


def test_bad_input_raises_a_value_error_naming_the_parameter():
    with pytest.raises(InputError, match="N=3") as err:
        symcomm.evaluate("all_reduce", algorithm="recursive_doubling", N=3, M=8)
    assert isinstance(err.value, ValueError)
    with pytest.raises(ValueError, match="--tp"):
        symcomm.plan("llama3-8b", gpus=16, batch=64, seq=4096, hardware="h100", tp="x")


def test_symcomm_plan_and_evaluate_are_plain_functions_beside_their_modules():
    # issue 23, item 4: the modules are symcomm.numbers.evaluation and symcomm.planner, so the public names are
    # plain functions of the package (no module made callable by swapping its class)
    import inspect
    import types

    import symcomm.numbers.evaluation
    import symcomm.planner

    for name in ("evaluate", "plan"):
        assert inspect.isfunction(getattr(symcomm, name)), name
        assert getattr(symcomm, name) is getattr(api, name)
    for module in (symcomm.numbers.evaluation, symcomm.planner):
        assert type(module) is types.ModuleType and not callable(module)
    assert not hasattr(symcomm, "_call_api")
    assert symcomm.evaluate("dp", N=4, Phi=100)["send"] == 150          # 2·3/4·100
    assert symcomm.plan("llama3-8b", gpus=8, batch=16, seq=2048, hardware="h100", top=1)["layouts"]


# -- symcomm.plan checks its arguments as the command does (issue 22, item 7) -------------------------

PLAN = dict(gpus=8, batch=16, seq=2048, top=1)


def _cli_error(capsys, name, text):
    """What `symcomm plan ... --NAME TEXT` says (the command's own words, computed, not copied)."""
    from symcomm.__main__ import main

    words = {f"--{k}": str(v) for k, v in PLAN.items()}
    words[f"--{name}"] = text
    code = main(["plan", "--model", "llama3-8b", "--hardware", "h100", *[w for kv in words.items() for w in kv]])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    return err.removeprefix("symcomm: error: ").strip()


@pytest.mark.parametrize("name", ["top", "gpus", "batch", "seq"])
@pytest.mark.parametrize("value", [0, -8, float("nan"), float("inf"), 8.5, "x", "-1", 2 ** 40])
def test_plan_refuses_what_the_command_refuses_in_its_words(name, value, capsys):
    with pytest.raises(InputError) as err:
        symcomm.plan("llama3-8b", hardware="h100", **{**PLAN, name: value})
    text = repr(value) if isinstance(value, float) else str(value)
    assert str(err.value) == _cli_error(capsys, name, text)
    assert f"--{name}" in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("name", ["top", "gpus", "batch", "seq"])
@pytest.mark.parametrize("value", [True, False, [8], {"x": 8}])
def test_plan_refuses_values_no_command_line_can_carry(name, value):
    with pytest.raises(InputError, match=f"--{name}=") as err:
        symcomm.plan("llama3-8b", hardware="h100", **{**PLAN, name: value})
    assert "\n" not in str(err.value)


def test_plan_takes_text_and_whole_floats_as_the_command_line_does():
    # `--top 8`, `--top 8.0` and `--top '8'` are one request on the command line; so here
    want = symcomm.plan("llama3-8b", hardware="h100", **{**PLAN, "top": 3})["layouts"]
    assert len(want) == 3
    for top in ("3", 3.0):
        assert symcomm.plan("llama3-8b", hardware="h100", **{**PLAN, "top": top})["layouts"] == want
    with pytest.raises(InputError, match="plan has no option 'tpp'"):
        symcomm.plan("llama3-8b", hardware="h100", tpp=2, **PLAN)
    with pytest.raises(InputError, match="--no-memory-check=1 is not allowed"):
        symcomm.plan("llama3-8b", hardware="h100", no_memory_check=1, **PLAN)


# -- issue 25: the API on the compiled path answers what the commands and SymPy answer -------------------

def _primitive_cases():
    from symcomm.collectives.algorithms import algorithms_of
    from symcomm.collectives.primitives import PRIMITIVES
    from symcomm.core import symbols as S
    from symcomm.training.subjects import subject

    shape = {"N": 8, "M": 3 * 2 ** 20 + 8, "G": 4, "C": 4, "K": 4096}
    # the time constants as typed: exact decimals, so the time is an exact rational before it is rounded
    constants = {"alpha": 5e-6, "alpha_inter": 1.25e-5, "beta": 1e-11, "beta_inter": 4e-11, "gamma": 2.5e-12}
    cases = []
    for primitive in PRIMITIVES:
        for alg in algorithms_of(primitive):
            target = subject(primitive, alg.name)
            names = sorted(S.BY_SYMBOL[x].cli_name for x in target.symbols())
            times = sorted({S.BY_SYMBOL[sym].cli_name for sym, coef in target.cost.coefficients if coef != 0})
            values = {**{n: shape[n] for n in names}, **{n: constants[n] for n in times}}
            cases.append(pytest.param(primitive, {"algorithm": alg.name, "dtype": "bf16"}, values,
                                      id=f"{primitive}-{alg.name}"))
            if "N" in values:      # N = 6: ⌈log₂⌉, folds and refusals of a power-of-two algorithm
                cases.append(pytest.param(primitive, {"algorithm": alg.name}, {**values, "N": 6, "G": 3},
                                          id=f"{primitive}-{alg.name}-N6"))
    return cases


_HYBRID_CASES = [
    pytest.param("hybrid", {"model": "llama3-8b", "hardware": "h100"},
                 {"t": 8, "p": 1, "d": 8, "c": 1, "b": 64, "m": 8, "s": 4096}, id="hybrid-llama3-8b-tp8-dp8"),
    pytest.param("hybrid", {"model": "llama3-70b", "hardware": "h100"},
                 {"t": 8, "p": 4, "d": 2, "c": 1, "b": 64, "m": 32, "sp": 1}, id="hybrid-llama3-70b-pp4"),
    pytest.param("hybrid", {"model": "mixtral-8x7b", "hardware": "h100"},
                 {"t": 2, "p": 1, "d": 8, "c": 1, "b": 64, "m": 8, "e": 8}, id="hybrid-mixtral-ep8"),
    pytest.param("hybrid", {"model": "llama3-8b", "hardware": "h100", "dtype": "fp32"},
                 {"t": 4, "p": 2, "d": 2, "c": 2, "b": 32, "m": 4, "recompute": "selective"}, id="hybrid-cp2-fp32"),
    pytest.param("hybrid", {}, {"t": 2, "p": 2, "d": 3, "c": 1, "b": 12, "m": 4, "L": 6, "h": 1536, "s": 2048,
                                "Phi": 10 ** 9 + 7}, id="hybrid-key-values"),
    # refused by a divisibility rule (b/d = 4 is no multiple of m = 5): the compiled check words it as SymPy's
    pytest.param("hybrid", {}, {"t": 2, "p": 2, "d": 3, "c": 1, "b": 12, "m": 5, "L": 6, "h": 1536, "s": 2048, "G": 2,
                                "Phi": 10 ** 9 + 7}, id="hybrid-refused-m"),
    # a hardware preset's links chosen by N (16 ranks span two 8-GPU nodes: a note says which) and a backend
    pytest.param("all_reduce", {"hardware": "h100", "backend": "nccl"}, {"N": 16, "M": "64MiB"},
                 id="all_reduce-h100-nccl"),
    pytest.param("all_reduce", {"algorithm": "ring", "hardware": "h100"}, {"N": 16, "M": "1GiB"},
                 id="all_reduce-ring-h100-two-nodes"),
    pytest.param("dp", {}, {"N": 7, "Phi": 999}, id="dp-fraction"),
    pytest.param("zero3", {"dtype": "fp16"}, {"N": 12, "Phi": 10 ** 10, "alpha": 1e-5, "bw": "50GB/s"}, id="zero3-bw"),
]


def _cli_words(name, options, values):
    words = ["eval", name]
    for key, value in options.items():
        words += [f"--{key.replace('_', '-')}", str(value)]
    return words + api._words(values) + ["--json"]


@pytest.mark.parametrize("name, options, values", _primitive_cases() + _HYBRID_CASES)
def test_evaluate_on_the_compiled_path_answers_what_eval_json_and_sympy_answer(name, options, values, capsys,
                                                                                monkeypatch):
    """The compiled exact code (symcomm.numbers.exactcode) and the caches change no number, note or refusal:
    the API's document equals the command's --json and the one SymPy's own substitution gives (the reference:
    exactcode's compiler switched off, so every number goes through sympy xreplace/subs as before issue 25)."""
    from symcomm.commands.main import main
    from symcomm.numbers import exactcode

    def answer():
        try:
            got = symcomm.evaluate(name, **options, **values)
        except InputError as err:
            return ("refused", str(err))
        return (got.to_dict(), got.notes)

    first = answer()        # a formula's first use in the process goes through SymPy, later ones compiled
    fast = answer()
    assert fast == first
    code = main(_cli_words(name, options, values))
    out = capsys.readouterr()
    if fast[0] == "refused":
        assert code == 2 and fast[1] in out.err
    else:
        assert code == 0 and json.loads(out.out) == fast[0]
    monkeypatch.setattr(exactcode, "compiled", lambda expr: None)
    assert answer() == fast


def test_evaluate_sweeps_arrays_point_by_point():
    import numpy as np

    n, m = np.array([[2, 4], [8, 16]]), np.array([[2 ** 20, 12], [2 ** 40, 2 ** 70]])
    got = symcomm.evaluate("all_reduce", algorithm="ring", N=n, M=m, alpha=1e-6, beta=1e-11, gamma=0)
    # ring all-reduce sends 2·(N−1)/N·M elements (Patarasuk & Yuan 2009, JPDC 69(2), the ring algorithm),
    # × 2 bytes of bf16 (the default once a time is asked): by hand at each point
    hand = [[2 ** 21, 36], [7 * 2 ** 39, 15 * 2 ** 68]]
    assert got["send"].shape == (2, 2) and got["send"].tolist() == hand
    assert got["send"].dtype == object                  # 15·2⁶⁷ > 2⁶³: Python ints, never a rounded float
    for index in np.ndindex(2, 2):
        one = symcomm.evaluate("all_reduce", algorithm="ring", N=int(n[index]), M=int(m[index]), alpha=1e-6,
                               beta=1e-11, gamma=0)
        assert got["time"][index] == one["time"] and got["values"]["M"][index] == one["values"]["M"]
    assert got["algorithm"] == "ring" and got.to_dict()["send"] == hand


def test_a_sweep_of_mixed_shapes_or_with_a_refused_point_is_refused_in_one_line():
    import numpy as np

    with pytest.raises(InputError, match=r"^arrays of different shapes \(N: \(3,\), M: \(2,\)\)") as err:
        symcomm.evaluate("all_reduce", algorithm="ring", N=np.array([2, 4, 8]), M=np.array([8, 16]))
    assert "\n" not in str(err.value)
    with pytest.raises(InputError, match=r"^N\[1\]=6: N=6 is not allowed"):
        symcomm.evaluate("all_reduce", algorithm="recursive_doubling", N=np.array([4, 6]), M=2 ** 10)


# -- keyword values bound as they are (issue 25: no KEY=VALUE text joined and split again) -----------------------

def test_a_float_keyword_is_the_number_its_repr_writes_as_on_the_command_line():
    # ring all-reduce: 2·(N − 1) = 14 messages on the critical path (Patarasuk & Yuan 2009, the ring algorithm);
    # α = 3e-6 read as the decimal 3/10⁶, as the command line reads "alpha=3e-6": 14 · 3/10⁶ = 4.2e-05 exactly,
    # rounded once — not the float product 14 * 3e-6 = 4.2000000000000004e-05
    got = symcomm.evaluate("all_reduce", algorithm="ring", N=8, M=8, alpha=3e-6, beta=0, gamma=0)
    assert got["alpha"] == 14 and got["time"] == 4.2e-05 and 14 * 3e-6 != 4.2e-05
    assert got["inputs"]["alpha"]["value"] == 3e-6 and got["inputs"]["alpha"]["source"] == "typed"


@pytest.mark.parametrize("values, refusal", [
    # ring needs N ≥ 2 ranks; the grammar's bounds: whole numbers up to 2**100 (symcomm.base.inputs.MAX_VALUE)
    ({"N": 1, "M": 8}, "N=1 is not allowed: N takes a whole number from 2 to 2**100"),
    ({"N": 2 ** 100 + 1, "M": 8}, "N=1267650600228229401496703205377 is not allowed: N takes a whole number"),
    ({"N": 8, "M": 2.5}, "M=2.5 is not allowed: M takes a whole number"),
    # a bool (N=True) has no word on the command line: the API refuses it on its own
    # (tests/training/test_outsider_refusals.py); it had run as N=1
    ({"N": 8, "M": 8, "alpha": float("nan"), "beta": 0, "gamma": 0}, "alpha='nan' is not a number"),
    ({"N": 8, "M": 8, "G": 4, "gpus_per_node": 4}, "gpus_per_node is given twice"),
    ({"N": 8, "M": 8, "bw": 5e10, "beta": 1e-11, "alpha": 0, "gamma": 0}, "give bw or beta, not both"),
])
def test_keyword_values_are_refused_as_their_words_are_on_the_command_line(values, refusal, capsys):
    from symcomm.commands.main import main

    with pytest.raises(InputError) as err:
        symcomm.evaluate("all_reduce", algorithm="ring", **values)
    assert str(err.value).startswith(refusal) and "\n" not in str(err.value)
    assert main(["eval", "all_reduce", "--algorithm", "ring", *api._words(values)]) == 2
    assert str(err.value) in capsys.readouterr().err


def test_keyword_values_of_every_kind_answer_as_their_words_do(capsys):
    from fractions import Fraction

    from symcomm.commands.main import main

    # whole numbers as ints, floats, text and Fractions; a size with its unit; a bandwidth; options as bools
    for name, options, values in [
        ("all_reduce", {"algorithm": "ring"}, {"N": 8.0, "M": "1KiB", "alpha": Fraction(1, 3), "bw": "50GB/s",
                                               "gamma": 0}),
        ("all_reduce", {"algorithm": "ring", "hardware": "h100"}, {"N": 16, "M": 2 ** 30}),
        ("zero3", {}, {"N": "12", "Phi": 10 ** 10, "alpha": 1e-5, "bw": 5e10, "gamma": 0.0}),
        ("hybrid", {"model": "llama3-8b", "hardware": "h100"},
         {"t": 8, "p": 1, "d": 8, "c": 1, "b": 64, "m": 8, "s": 4096.0, "sp": True, "recompute": "selective"}),
    ]:
        got = symcomm.evaluate(name, **options, **values)
        code = main(["eval", name, *(w for k, v in options.items() for w in (f"--{k}", str(v))),
                     *api._words(values), "--json"])
        assert code == 0 and json.loads(capsys.readouterr().out) == got.to_dict()


def test_a_zero_given_as_an_int_is_refused_as_its_word_is():
    # G=0 GPUs per node (the int 0, falsy in Python) is typed: refused as "G=0" is, never read as "not given"
    for call in (lambda: symcomm.compare("all_reduce", N=16, M=1024, G=0, hardware="h100"),
                 lambda: symcomm.evaluate("all_reduce", algorithm="ring", N=16, M=1024, G=0, hardware="h100")):
        with pytest.raises(InputError, match=r"^G \(gpus_per_node\)=0 is not allowed: G \(gpus_per_node\) takes a "
                                             r"whole number from 1"):
            call()


def test_a_shape_typed_without_h_kv_under_gqa_0_is_full_width_attention(capsys):
    # gqa=0 means K and V are h wide (the hybrid strategy's option text), so leaving h_kv out must answer as
    # typing h_kv = h does; it used to raise the compiled evaluator's ValueError listing internal constants
    shape = dict(L=24, h=2048, s=2048, b=64, m=8, t=2, p=2, d=2, c=1, a=16, V=50000, F=8192, G=8, Phi=1.3e9,
                 hardware="a100")
    implied = symcomm.evaluate("hybrid", **shape)
    typed = symcomm.evaluate("hybrid", **shape, h_kv=2048)
    assert implied["step_time"] == typed["step_time"]
    assert any("h_kv = h" in note for note in implied.notes)
    grouped = symcomm.evaluate("hybrid", **shape, gqa=1, h_kv=512)     # 4 K, V heads of 16: less attention work
    assert grouped["step_time"] < typed["step_time"]
    from symcomm.__main__ import main
    words = [f"{key}={value}" for key, value in shape.items() if key != "hardware"]
    assert main(["eval", "hybrid", *words, "--hardware", "a100"]) in (0, None)
    said = capsys.readouterr()
    assert "h_kv = h" in said.out + said.err


def test_an_moe_shape_typed_without_its_expert_widths_is_refused_naming_them():
    # moe=1's step time reads each expert's FFN width and the shared-expert count; leaving them out used to
    # raise the compiled evaluator's ValueError listing internal constants (eta, kappa, w_half, ...)
    shape = dict(L=24, h=2048, s=2048, b=64, m=8, t=2, p=2, d=2, c=1, a=16, V=50000, F=8192, G=8, Phi=1.3e9,
                 sp=1, moe=1, E=8, k=2, e=2, Phi_E=1e9, L_moe=24, hardware="h100")
    # the shared-expert count first: the communication terms read it too (a shared expert's MLP runs on the TP group)
    with pytest.raises(InputError, match=r"^missing E_s: "):
        symcomm.evaluate("hybrid", **shape)
    with pytest.raises(InputError, match=r"^missing E_s: "):
        symcomm.evaluate("hybrid", **shape, F_e=1024)
    with pytest.raises(InputError, match=r"^missing F_e: .*F_e=\.\.\.\)$"):
        symcomm.evaluate("hybrid", **shape, E_s=0)
    # E_s = 0 (no shared expert, Qwen3-MoE style) is a shape, not a missing value
    assert symcomm.evaluate("hybrid", **shape, F_e=1024, E_s=0)["step_time"] > 0


def test_a_shape_typed_without_the_vocabulary_is_refused_naming_it():
    # the LM head's GEMM reads V; without it the evaluator's ValueError used to escape (found by a random search
    # over the words left out)
    shape = dict(L=24, h=2048, s=2048, b=64, m=8, t=2, p=2, d=2, c=1, a=16, F=8192, G=8, Phi=1.3e9, hardware="b200")
    with pytest.raises(InputError, match=r"^missing V: the step time needs V, the vocabulary size"):
        symcomm.evaluate("hybrid", **shape)


def test_a_plans_result_changed_by_its_caller_leaves_the_next_plan_as_it_was():
    # an outsider set p["units"]["step_time"] = "hours" and the next plan, of another model, said hours: every
    # container of a result is the caller's own (the seconds a plan took aside, which change from call to call)
    def answer():
        got = symcomm.plan("llama3-8b", gpus=16, batch=64, seq=4096, hardware="h100", top=2).to_dict()
        got.pop("seconds")
        return json.dumps(got, sort_keys=True)

    def smash(x):
        for key in (list(x) if isinstance(x, dict) else range(len(x)) if isinstance(x, list) else ()):
            smash(x[key])
            x[key] = "X"

    before = answer()
    mine = symcomm.plan("llama3-8b", gpus=16, batch=64, seq=4096, hardware="h100", top=2)
    smash(mine.to_dict())
    for key in list(mine.data):
        smash(mine.data[key])
    assert answer() == before


def test_a_formula_copies_pickles_and_says_a_value_is_not_an_option():
    import copy
    import pickle

    # copy.copy and deepcopy recursed without end (__getattr__ read the subject before it was set); pickle met a
    # function made in place; formula("all_reduce", "ring", N=8) said "unknown parameter 'N' ... allowed: N, M"
    for made in (symcomm.formula("all_reduce", "ring"), symcomm.formula("dp"),
                 symcomm.formula("hybrid", sp=1, recompute="selective"), symcomm.formula("tp", algorithm="ring")):
        for again in (copy.copy(made), copy.deepcopy(made), pickle.loads(pickle.dumps(made))):
            assert again.subject.label == made.subject.label and again.send == made.send
    with pytest.raises(InputError, match=r"formula\(\) takes a subject's options, and N is a value: "
                                         r"symcomm.evaluate\('all_reduce', N=...\)"):
        symcomm.formula("all_reduce", "ring", N=8)
    # the way it names: the library's own symbol (integer, positive), 2·(N − 1)/N·M at N = 8 is 7M/4
    ring = symcomm.formula("all_reduce", "ring")
    assert ring.send.subs(symcomm.symbol("N"), 8) == sp.Rational(7, 4) * symcomm.symbol("M")


def test_bytes_per_element_given_as_a_number_is_its_text():
    # dtype=2 was refused saying "or a whole number of bytes per element from 1 to 64", where dtype="2" answers
    assert symcomm.evaluate("dp", N=8, Phi=16, dtype=2)["send"] == symcomm.evaluate("dp", N=8, Phi=16, dtype="2")["send"]
    assert symcomm.compare("all_reduce", N=8, M=1024, alpha=1e-6, beta=1e-9, gamma=0, dtype=2).to_dict() == \
        symcomm.compare("all_reduce", N=8, M=1024, alpha=1e-6, beta=1e-9, gamma=0, dtype="2").to_dict()
    # plan offers the element types the part has a peak for: tf32 (fp32 matmuls in TF32 mode) is no --dtype
    with pytest.raises(InputError, match=r"--dtype int8 has no peak for --hardware h100; choose bf16, fp16, fp32, fp8$"):
        symcomm.plan("llama3-8b", gpus=8, batch=64, seq=4096, hardware="h100", top=1, dtype="int8")


@pytest.mark.parametrize("call, message", [
    (lambda: symcomm.plan("llama3-8b", gpus=8, batch=64, seq=4096, hardware="h999"), "--hardware 'h999' is not allowed"),
    (lambda: symcomm.plan(3, gpus=8, batch=64, seq=4096, hardware="h100"), "model takes a name (text or a path), not int 3"),
    (lambda: symcomm.evaluate("hybrid", model=["llama3-8b"], hardware="h100", t=1, p=1, d=8, c=1, b=8, m=1, s=4096),
     "model takes a name (text or a path), not list"),
    (lambda: symcomm.evaluate("hybrid", model_config={"a": 1}, hardware="h100", t=1, p=1, d=8, c=1, b=8, m=1, s=4096),
     "model_config takes a name (text or a path), not dict"),
    (lambda: symcomm.formula(["dp"]), "name takes a name (text), not list"),
    (lambda: symcomm.compare(["all_reduce"], N=2, M=16), "primitive takes a name (text), not list"),
    (lambda: symcomm.evaluate("all_reduce", algorithm=["ring"], N=2, M=16), "algorithm takes a name (text), not list"),
    # a list has no word on the command line ('[8]' is not a number there): the API says what a sweep is
    (lambda: symcomm.evaluate("dp", N=[2, 4, 8], Phi=16), "N: a list; a sweep is a numpy array"),
    (lambda: symcomm.evaluate("all_reduce", algorithm="ring", N=8, M=[8]), "M: a list; a sweep is a numpy array"),
])
def test_a_name_of_another_type_is_refused_as_bad_input_naming_it(call, message):
    # an outsider met ValueError (not InputError), AttributeError and TypeError ("unhashable type: 'list'") here
    with pytest.raises(InputError) as raised:
        call()
    assert message in str(raised.value)


def test_a_result_is_a_read_only_mapping():
    from collections.abc import Mapping

    got = symcomm.evaluate("dp", N=8, Phi=16)
    # dp's ring all-reduce of Φ = 16 elements on 8 ranks: 2·7/8·16 = 28 elements sent by each
    assert isinstance(got, Mapping) and got.get("send") == 28 and dict(got.items())["send"] == 28
    assert list(got) == list(got.data) and len(got) == len(got.data)
    with pytest.raises(TypeError):
        got["send"] = 0


def test_numpys_scalars_are_read_as_the_numbers_they_hold():
    # an outsider's find: numpy 2 writes a float64 as "np.float64(1048576.0)", which the grammar refused ("no
    # parentheses"), and plan refused np.int64 outright; the ring all-reduce of M elements sends 2(N − 1)/N · M
    import numpy as np

    import symcomm

    got = symcomm.evaluate("all_reduce", algorithm="ring", N=np.int64(8), M=np.float64(2 ** 20))
    assert got["send"] == 2 * 7 * 2 ** 20 // 8
    plain = symcomm.plan("llama3-8b", gpus=8, batch=8, seq=4096, hardware="h100", top=1)["layouts"][0]
    typed = symcomm.plan("llama3-8b", gpus=np.int64(8), batch=np.int32(8), seq=np.int64(4096), hardware="h100",
                         top=1)["layouts"][0]
    assert typed["step_time"] == plain["step_time"]
    # numpy's bool, no numbers.Integral, as the bool it holds: sp=np.bool_(True) was refused as "sp=True"
    layout = dict(model="llama3-8b", hardware="h100", t=2, p=1, c=1, d=4, b=8, m=1, s=4096)
    assert (symcomm.evaluate("hybrid", **layout, sp=np.bool_(True))["step_time"]
            == symcomm.evaluate("hybrid", **layout, sp=True)["step_time"])
