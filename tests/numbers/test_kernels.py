"""symcomm.numbers.kernels, the interpreter of the planner's kernel files: it runs only its own operations, refuses
what is not a checked graph (an unknown operation, a forward reference, an oversized or too deeply nested
file) and computes what the SymPy-compiled step model computes."""

import json
import math
import subprocess
import sys

import numpy as np
import pytest
import sympy as sp

from symcomm.training.frameworks import FRAMEWORKS
from symcomm.planner import kernelbuild
from symcomm.numbers import kernels
from symcomm.base import notes
from symcomm import presets
from symcomm.training import steptime
from symcomm.base.errors import InputError
from symcomm.numbers.evaluation import fast
from symcomm.planner import Request, enumerate_layouts
from symcomm.planner.kernels import _base_values, _options


def _file(nodes, outputs=(0,), params=("x",), quantities=("q",)):
    return {"format": kernels.FORMAT, "family": {}, "params": list(params), "nodes": nodes,
            "kernels": [{"options": [["a", "b"]], "run_bytes": 2, "quantities": list(quantities),
                         "outputs": list(outputs)}]}


def _run(data, *args):
    (kernel,) = kernels.from_data(data, "test").values()
    return kernel(*args)


def test_a_small_graph_by_hand():
    # (x + 3)·x / 2, and max(x, 4): at x = 5 that is 8·5/2 = 20 and 5; at x = 1, 4·1/2 = 2 and 4
    nodes = [["arg", 0], ["num", 3], ["add", 0, 1], ["mul", 2, 0], ["num", 2], ["div", 3, 4],
             ["num", 4], ["max", 0, 6]]
    data = _file(nodes, outputs=(5, 7), quantities=("a", "b"))
    assert _run(data, 5.0) == (20.0, 5.0)
    got = _run(data, np.array([5.0, 1.0]))
    np.testing.assert_array_equal(got[0], [20.0, 2.0])
    np.testing.assert_array_equal(got[1], [5.0, 4.0])


def test_a_power_by_a_fraction_of_a_negative_number_is_nan_not_complex():
    # x^(1/2): 4 → 2 (hand), −4 → nan (numpy's float arithmetic, as the printed kernels had it)
    data = _file([["arg", 0], ["num", 0.5], ["pow", 0, 1]], outputs=(2,))
    assert _run(data, 4.0) == (2.0,)
    with np.errstate(invalid="ignore"):                  # as the planner calls its kernels
        assert math.isnan(_run(data, -4.0)[0])
    assert _run(_file([["arg", 0], ["num", 2], ["pow", 0, 1]], outputs=(2,)), -3.0) == (9.0,)


def test_piecewise_becomes_where_and_no_branch_is_nan():
    # Piecewise((1/x, x > 1), (x², x > 0)): x = 4 → 1/4; x = 0.5 → 0.25; x = −1 → no branch (nan)
    x = sp.Symbol("t", positive=False)
    builder = kernelbuild._Builder()
    builder.params = ["t"]
    out = builder.add(sp.Piecewise((1 / x, x > 1), (x ** 2, x > 0)))
    data = _file(builder.nodes, outputs=(out,), params=("t",))
    got = _run(data, np.array([4.0, 0.5, -1.0]))[0]
    assert got[0] == 0.25 and got[1] == 0.25 and math.isnan(got[2])


def test_a_parameter_exponent_is_its_value():
    # x^k with k a parameter (the places a token's k experts hit, symcomm.training.routing): 0.75^8 by hand, and
    # over an array of bases
    data = _file([["arg", 0], ["arg", 1], ["pow", 0, 1]], outputs=(2,), params=("x", "k"))
    (kernel,) = kernels.from_data(data, "test").values()
    assert kernel(0.75, 8.0) == (0.75 ** 8,)
    assert list(kernel(np.array([0.5, 0.75]), 8.0)[0]) == [0.5 ** 8, 0.75 ** 8]


def test_an_unknown_operation_is_refused():
    with pytest.raises(InputError, match="node 1: unknown operation 'exec'; allowed: arg, num"):
        kernels.from_data(_file([["arg", 0], ["exec", 0]], outputs=(1,)), "test")
    with pytest.raises(InputError, match="unknown operation '__import__'"):
        kernels.from_data(_file([["__import__", 0]]), "test")


@pytest.mark.parametrize("nodes, message", [
    ([["arg", 0], ["add", 0, 2], ["num", 1]], "arguments are indices of earlier nodes"),   # forward: a cycle
    ([["arg", 0], ["add", 0, 0], ["add", 1, 1]], None),                                      # fine (control)
    ([["arg", 0], ["add", 0]], "add takes 2 or more arguments, got 1"),
    ([["arg", 0], ["div", 0, 0, 0]], "div takes 2 arguments, got 3"),
    ([["arg", 0], ["pow", 0, 0]], None),                      # a parameter as exponent (the MoE dispatch's k)
    ([["arg", 0], ["pow", 0]], "pow takes 2 arguments, got 1"),
    ([["arg", 3]], "arg takes a parameter index below 1"),
    ([["num", "1"]], "num takes one finite number"),
    ([["arg", 0], ["add", 0, True]], "arguments are indices"),
])
def test_a_graph_that_is_not_well_formed_is_refused(nodes, message):
    data = _file(nodes, outputs=(len(nodes) - 1,))
    if message is None:
        kernels.from_data(data, "test")
    else:
        with pytest.raises(InputError, match=message):
            kernels.from_data(data, "test")


def test_a_file_is_read_with_its_schema_and_caps(tmp_path):
    good = tmp_path / "good.json"
    good.write_text(json.dumps(_file([["arg", 0], ["num", 2], ["mul", 0, 1]], outputs=(2,))), encoding="utf-8")
    (kernel,) = kernels.read(good).values()
    assert kernel(21.0) == (42.0,)
    big = tmp_path / "big.json"
    big.write_text(" " * (kernels.MAX_BYTES + 1), encoding="utf-8")
    with pytest.raises(InputError, match="too large"):
        kernels.read(big)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 40 + "]" * 40, encoding="utf-8")
    with pytest.raises(InputError, match="nested deeper than"):
        kernels.read(deep)
    extra = tmp_path / "extra.json"
    extra.write_text(json.dumps({**_file([["arg", 0]]), "code": "print(1)"}), encoding="utf-8")
    with pytest.raises(InputError, match="the top level is an object of exactly format, family, params"):
        kernels.read(extra)
    nan = tmp_path / "nan.json"
    nan.write_text(json.dumps(_file([["arg", 0]])).replace('"arg", 0', '"num", NaN'), encoding="utf-8")
    with pytest.raises(InputError, match="NaN is not allowed"):
        kernels.read(nan)


def _bad_files():
    good = _file([["arg", 0], ["num", 2], ["mul", 0, 1]], outputs=(2,))
    yield "a field too many", {**good, "code": "print(1)"}
    yield "no nodes", {k: v for k, v in good.items() if k != "nodes"}
    yield "another format", {**good, "format": "symcomm-kernels/0"}
    yield "a parameter not a name", {**good, "params": ["x-1"]}
    yield "nodes not lists", {**good, "nodes": ["arg"]}
    yield "a kernel field too many", {**good, "kernels": [{**good["kernels"][0], "source": "x"}]}
    yield "run bytes out of range", {**good, "kernels": [{**good["kernels"][0], "run_bytes": 17}]}
    yield "an option not a pair", {**good, "kernels": [{**good["kernels"][0], "options": [["a"]]}]}
    yield "a quantity not a name", {**good, "kernels": [{**good["kernels"][0], "quantities": ["Q q"]}]}
    yield "an output not an index", {**good, "kernels": [{**good["kernels"][0], "outputs": ["2"]}]}


@pytest.mark.parametrize("case", list(_bad_files()), ids=lambda c: c[0])
def test_the_hand_check_refuses_what_the_schema_refuses(case):
    # the interpreter checks the fields by hand (no jsonschema import at the planner's start); the shipped
    # schema is the documented format: both refuse the same files
    from symcomm.base.inputs import check

    _, data = case
    with pytest.raises(InputError):
        check(data, "kernels", "test")
    with pytest.raises(InputError):
        kernels.from_data(data, "test")


def test_the_committed_files_satisfy_their_schemas():
    from importlib import resources

    from symcomm.base.inputs import check, loads

    folder = resources.files("symcomm.planner").joinpath("kerneldata")
    names = sorted(p.name for p in folder.iterdir())
    assert "index.json" in names and len(names) >= 2
    for name in names:
        data = loads(folder.joinpath(name).read_text(encoding="utf-8"), name)
        check(data, "kernel-index" if name == "index.json" else "kernels", name)
        if name != "index.json":
            assert kernels.from_data(data, name)


@pytest.mark.parametrize("name, run_bytes, cp, embeddings", [
    ("llama3-70b", 4, "ulysses", "0"), ("mixtral-8x7b", 1, "ring", "0"), ("gpt3-175b", 2, "ulysses", "1")])
def test_a_built_graph_equals_the_sympy_compiled_model_on_random_layouts(name, run_bytes, cp, embeddings):
    # combinations no file ships; the reference is symcomm.evaluate.fast (SymPy's printer, lambdify, cse):
    # another compilation of the same expressions
    req = Request(presets.model(name), presets.hardware("h100"), gpus=256, batch=512, seq=4096)
    rng = np.random.default_rng(23)
    n = 64
    values = {**_base_values(req), **{k: rng.integers(1, 17, n).astype(np.float64) for k in kernelbuild.LAYOUT}}
    from symcomm.planner import SCHEMES
    for scheme, recompute, sp_on, schedule in ((SCHEMES[0], "full", 0, "1f1b"), (SCHEMES[4], "selective", 1,
                                                                                     "interleaved")):
        options = _options(req, scheme, recompute, sp_on, schedule)
        options = tuple(sorted({**dict(options), "cp": cp, "embeddings": embeddings}.items()))
        kernel = kernels.from_data(kernelbuild.graph_data({}, [(options, run_bytes)]), "test")[(options, run_bytes)]
        got = dict(zip(kernel.quantities, kernel(*[values[p] for p in kernel.params])))
        model = steptime.step_model(run_bytes, **dict(options))
        # model_flops_causal: what eval's mfu_causal divides (flops.causal_half counted by hand in
        # tests/training/test_mfu_causal.py)
        q = {**model.quantities(), "model_flops_causal": model.model_flops_causal}
        assert set(got) >= set(kernelbuild.QUANTITIES)
        for quantity, value in got.items():
            want = np.broadcast_to(fast(q[quantity])(**values), (n,))
            # 1e-11: an exposed time is a difference (communication − the window hiding it), whose relative rounding
        # exceeds its terms' when they nearly cancel
        np.testing.assert_allclose(np.broadcast_to(value, (n,)), want, rtol=1e-11, atol=0, err_msg=quantity)


def test_the_interpreter_loads_neither_sympy_nor_eval():
    # a first plan (Llama's family) imports what the planner needs; then any exec, eval or compile (an
    # audit event of each) fails, and Mixtral's file is read, checked and run
    code = ("import sys; from symcomm import planner as plan, presets; "
            "ask = lambda m: plan.plan(plan.Request(presets.model(m), presets.hardware('h100'), gpus=64, batch=64, "
            "seq=4096), 3); "
            "assert len(ask('llama3-8b')) > 0\n"
            "def hook(event, args):\n"
            "    if event in ('exec', 'compile'):\n"
            "        raise RuntimeError(f'{event} ran while the planner computed')\n"
            "sys.addaudithook(hook)\n"
            "assert len(ask('mixtral-8x7b')) > 0\n"
            "assert 'sympy' not in sys.modules")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_a_combination_compiled_in_the_process_says_so():
    from symcomm.planner import plan

    # the run settings fixed (the planner's own options): 3 combinations built with SymPy in the process (1F1B, and
    # interleaved with an even and an uneven split) instead of the 144 of a free search (17 s); which
    # combinations the planner searches is tests/integration/test_codegen.py's (the same graph_data builds them)
    req = Request(presets.model("llama3-8b"), presets.hardware("a100"), gpus=16, batch=32, seq=2048,
                  cp_algorithm="ulysses", recompute="selective", sp=True, zero=1, framework="megatron")
    with notes.collected() as bucket:
        plan(req, 3)
    assert any("no shipped kernel" in n.text and "cp=ulysses" in n.text and "SymPy" in n.text for n in bucket)
    shipped = Request(presets.model("llama3-8b"), presets.hardware("a100"), gpus=16, batch=32, seq=2048)
    with notes.collected() as bucket:
        plan(shipped, 3)
    assert not any("no shipped kernel" in n.text for n in bucket)


def test_integers_past_two_to_the_63_do_not_wrap():
    # max(x, y)·z at x = y = 2**40, z = 2**30 is 2**70 (by hand: exponents add), ~1.18e21.  numpy's maximum of two
    # ints is an int64, and an int64 product wraps past 2**63 - 1 without a word (the planner once printed a
    # negative MFU for DeepSeek-V3 at 8192 sequences of 4096 tokens: its ~1e19 FLOPs wrapped): the interpreter
    # computes in float64, called alone or run together, and with the numbers of the file as floats too
    data = _file([["arg", 0], ["arg", 1], ["max", 0, 1], ["arg", 2], ["mul", 2, 3], ["num", 2 ** 30], ["mul", 2, 5]],
                 outputs=(4, 6), params=("x", "y", "z"), quantities=("q", "r"))
    q, r = _run(data, 2 ** 40, 2 ** 40, 2 ** 30)
    assert q == r == 2.0 ** 70
    (kernel,) = kernels.from_data(data, "test").values()
    rows = np.arange(2)
    ((q, r),) = kernels.run_together([(kernel, rows)], {"x": np.array([2 ** 40, 1]), "y": 2 ** 40,
                                                        "z": np.array([2 ** 30, 2 ** 30])})
    assert q.tolist() == r.tolist() == [2.0 ** 70, 2.0 ** 70]


def test_kernels_run_together_give_each_its_own_rows():
    # two kernels of one graph share x + 3: a = (x + 3)·x (array), b = (x + 3)·y, c = y·2 (scalar).  At
    # x = [1, 2, 5], y = 4: x + 3 = [4, 5, 8], a = [4, 10, 40], b = [16, 20, 32], c = 8 (by hand); the first
    # kernel takes rows [2, 0], the second row [1]
    nodes = [["arg", 0], ["num", 3], ["add", 0, 1], ["mul", 2, 0], ["arg", 1], ["mul", 2, 4], ["num", 2],
             ["mul", 4, 6]]
    data = _file(nodes, outputs=(3, 7), params=("x", "y"), quantities=("a", "c"))
    data["kernels"].append({"options": [["a", "c"]], "run_bytes": 2, "quantities": ["b", "a"], "outputs": [5, 3]})
    first, second = kernels.from_data(data, "test").values()
    got = kernels.run_together([(first, np.array([2, 0])), (second, np.array([1]))],
                               {"x": np.array([1.0, 2.0, 5.0]), "y": 4.0})
    np.testing.assert_array_equal(got[0][0], [40.0, 4.0])
    assert got[0][1] == 8.0
    np.testing.assert_array_equal(got[1][0], [20.0])
    np.testing.assert_array_equal(got[1][1], [10.0])


@pytest.mark.parametrize("per_node", [0, None, 10 ** 9],
                         ids=["a-pass-per-row-class", "classes-joined-by-cost", "one-pass-over-every-row"])
@pytest.mark.parametrize("name", ["llama3-405b", "deepseek-v3", "qwen3-235b-a22b", "gpt3-175b"])
def test_a_family_run_together_is_each_kernel_called_alone_bit_for_bit(name, per_node, monkeypatch):
    # the planner's path (every kernel of a request at once, each node once per class of rows, once per join of
    # classes, or once over every row: PER_NODE picks; 0 never joins, 10⁹ joins all) against each kernel called
    # over its own rows alone: the same floats, nan where nan, for every quantity of every combination
    from symcomm.planner import SCHEMES

    if per_node is not None:
        monkeypatch.setattr(kernels, "PER_NODE", per_node)

    req = Request(presets.model(name), presets.hardware("h100"), gpus=512, batch=1024, seq=4096)
    layouts = enumerate_layouts(req)
    values = {**_base_values(req), **{k: layouts[k].astype(np.float64) for k in kernelbuild.LAYOUT}}
    rng = np.random.default_rng(5)
    color = rng.integers(0, 6, layouts["t"].size)       # each kernel reads three of six random parts of the rows
    calls = []
    for scheme in SCHEMES:
        for recompute, sp_on, schedule in (("full", 0, "1f1b"), ("selective", 1, "interleaved")):
            if (req.model.moe and not sp_on) or schedule not in FRAMEWORKS[scheme.framework].schedules:
                continue
            kernel = kernels.shipped(_options(req, scheme, recompute, sp_on, schedule), 2)
            calls.append((kernel, np.flatnonzero(np.isin(color, rng.choice(6, 3, replace=False)))))
    assert len(calls) >= 6        # MoE families: the interleaved case only, of the six schemes that run it
    with np.errstate(divide="ignore", invalid="ignore"):
        together = kernels.run_together(calls, values)
        for (kernel, rows), got in zip(calls, together):
            alone = kernel(*[values[p][rows] if isinstance(values[p], np.ndarray) else values[p]
                             for p in kernel.params])
            for quantity, x, y in zip(kernel.quantities, got, alone):
                np.testing.assert_array_equal(np.broadcast_to(x, (rows.size,)), np.broadcast_to(y, (rows.size,)),
                                              err_msg=f"{name} {quantity}")


@pytest.mark.parametrize("text, deepest", [
    ('[[1], {"a": [2]}]', 3),                       # hand-counted: [ { [ open at once
    ('["[[[", {"b": "]]"}]', 2),                     # brackets inside strings do not count
    ('["a \\" [[[", [1]]', 2),                       # nor after an escaped quote inside a string
    ('["a\\\\", [[1]]]', 3),                         # an escaped backslash ends before the closing quote
    ('[1, "open [[[[', 1),                           # a string left open: nothing after it counts
    ('"\\', 0),
])
def test_the_json_reader_counts_nesting_outside_strings(text, deepest):
    from symcomm.base import inputs

    assert inputs._depth(text) == deepest


def test_the_json_reader_bounds_integers_with_or_without_a_long_digit_run():
    # 40 digits is the most an integer may have (base.inputs.MAX_INT_DIGITS); 41 is refused, also when a longer
    # run of digits sits only inside a string beside it; digits in a string alone are no integer
    from symcomm.base.inputs import loads

    forty, forty_one = "9" * 40, "9" * 41
    assert loads(f"[{forty}]", "t") == [int(forty)]
    assert loads(f'["{forty_one}"]', "t") == [forty_one]
    for text in (f"[{forty_one}]", f'["{"1" * 50}", -{forty_one}]'):
        with pytest.raises(InputError, match="41 digits|42 digits"):
            loads(text, "t")
