"""symcomm export: the generated Python, C and JSON agree with symcomm's own evaluator.

The oracle is :func:`symcomm.numbers.evaluation.exact` (SymPy's exact arithmetic), never the code
under test; a few values are also checked against hand counts and published formulas.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest
from conftest import ROOT, TESTS, absent
import sympy as sp
from hypothesis import HealthCheck, given, settings, strategies as st
from sympy.codegen.cfunctions import log2

from symcomm.core import symbols as S
from symcomm.commands.main import main
from symcomm.numbers.evaluation import exact
from symcomm.core.printing import render
from symcomm.views.export import BYTES_INFO, FORMATS, SCHEMA_PATH, export, formulas, schema, select
from symcomm.core.exprtree import from_tree

#: every argument name an exported function takes: symcomm's symbols, and B_e (the bytes per element of the run's
#: dtype) where a subject runs some terms in a width of its own
NAMES = {info.symbol: info.cli_name for info in (*S.SYMBOLS.values(), BYTES_INFO)}

FORMULAS = formulas()
BY_NAME = {f.name: f for f in FORMULAS}
HYBRID = [f for f in FORMULAS if f.owner == "hybrid"]
OTHERS = [f for f in FORMULAS if f.owner != "hybrid"]
def SETTINGS(n: int):
    return settings(max_examples=n, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    folder = tmp_path_factory.mktemp("generated")
    export("python", path=folder / "symcomm_formulas.py")
    return folder, _load(folder / "symcomm_formulas.py", "symcomm_formulas_generated")


# -- drawing admissible values -------------------------------------------------------------------

def _power_of_two_symbols(expr) -> set:
    """Symbols under a log₂ (a power-of-two algorithm): they must be powers of two.
    ⌈log₂⌉ (symbols.CeilLog2, no log₂ inside) takes any value."""
    out = set()
    for node in sp.preorder_traversal(expr):
        if isinstance(node, log2):
            out |= node.args[0].free_symbols
    return out


def _least(formula, sym) -> int:
    # a collective needs at least 2 ranks (⌈log₂(N − 1)⌉ appears in general-N trees)
    return 2 if (sym is S.N) else 1


def draw_values(draw, formula, big: bool = True) -> dict:
    """int for integer symbols (powers of two where a bare log₂ needs it), Fraction for reals."""
    pow2 = _power_of_two_symbols(formula.expr)
    values = {}
    for info in formula.parameters:
        sym = info.symbol
        if sym in pow2:
            values[sym] = 2 ** draw(st.integers(_least(formula, sym) - 1, 70 if big else 16))
        elif sym.is_integer:
            top = 2 ** 70 if big else 2 ** 16
            values[sym] = draw(st.one_of(st.integers(_least(formula, sym), 64),
                                         st.integers(_least(formula, sym), top)))
        else:
            values[sym] = draw(st.fractions(min_value=0, max_value=1000, max_denominator=10 ** 9))
    return values


def oracle(formula, values) -> sp.Expr:
    exact_values = {sym: sp.Rational(v.numerator, v.denominator) if isinstance(v, Fraction) else sp.Integer(v)
                    for sym, v in values.items()}
    result = exact(formula.expr, exact_values)
    assert result.is_Rational, f"{formula.name} did not reduce to a rational: {result}"
    return result


def _broken(formula, values) -> str | None:
    """The first requirement ``values`` break, in the command line's words (the subject's own
    rules, :meth:`symcomm.training.subjects.Subject.problems`), among the rules whose symbols the formula takes."""
    from symcomm.core.rules import problems

    taken = {info.symbol for info in formula.parameters}
    exact = {sym: sp.sympify(v, strict=True) for sym, v in values.items() if sym in taken}
    found = problems([rule for rule in _subject_rules(formula.kind, formula.owner, formula.algorithm, formula.options)
                      if rule.symbols <= taken], exact)
    return found[0] if found else None


@functools.lru_cache(maxsize=None)
def _subject_rules(kind: str, owner: str, algorithm: str | None, options: tuple) -> tuple:
    """The rules of a formula's subject, built once per subject: a strategy's subject builds all its terms
    with SymPy (a fifth of a second for the hybrid strategy), and the sweeps here ask the rules of the same
    few dozen subjects thousands of times (the subject is immutable: the same rules each time)."""
    from symcomm.training.subjects import subject

    sub = subject(owner, algorithm, **dict(options)) if kind == "strategy" else subject(owner, algorithm)
    return tuple(sub.rules)


def assert_exact(module, formula, values):
    kwargs = {NAMES[sym]: v for sym, v in values.items()}
    broken = _broken(formula, values)
    if broken is not None:
        # the exported function refuses what the command line refuses, with the same words
        with pytest.raises(ValueError) as err:
            getattr(module, formula.name)(**kwargs)
        assert str(err.value) == broken
        return
    got = getattr(module, formula.name)(**kwargs)
    want = oracle(formula, values)
    if want.is_Integer:
        assert type(got) is int, f"{formula.name}({kwargs}) = {got!r}: an integer result must be an int"
        assert got == int(want), f"{formula.name}({kwargs}) = {got}, evaluator says {want}"
    else:
        assert isinstance(got, Fraction), f"{formula.name}({kwargs}) = {got!r}: expected an exact Fraction"
        assert got == Fraction(int(want.p), int(want.q)), f"{formula.name}({kwargs}) = {got}, evaluator says {want}"


# -- names -----------------------------------------------------------------------------------------

def test_names_are_unique_identifiers_valid_in_python_and_c():
    names = [f.name for f in FORMULAS]
    assert len(names) == len(set(names))
    for name in names:
        assert name.isidentifier() and not name.startswith("_") and name.isascii()


def test_every_algorithm_and_strategy_is_exported():
    from symcomm.collectives.algorithms import ALGORITHMS
    from symcomm.training.strategies import STRATEGIES

    subjects = {f.subject for f in FORMULAS}
    for prim, alg in ALGORITHMS:
        assert f"{prim}__{alg}__send" in BY_NAME and f"{prim}__{alg}__time" in BY_NAME
    for name, strategy in STRATEGIES.items():
        assert strategy.name in subjects


def test_only_selects_by_formula_subject_and_owner():
    assert [f.name for f in select(["all_reduce__ring__send"])] == ["all_reduce__ring__send"]
    assert {f.subject for f in select(["all_reduce__ring"])} == {"all_reduce__ring"}
    assert {f.owner for f in select(["tp"])} == {"tp"}
    assert {f.subject for f in select(["tp__recompute_full"])} == {"tp__recompute_full"}
    with pytest.raises(ValueError, match="nope"):
        select(["nope"])


# -- python ----------------------------------------------------------------------------------------

@SETTINGS(150)
@given(data=st.data())
def test_python_equals_the_evaluator_exactly(generated, data):
    _, module = generated
    formula = data.draw(st.sampled_from(OTHERS), label="formula")
    assert_exact(module, formula, draw_values(data.draw, formula))


@SETTINGS(12)
@given(data=st.data())
def test_python_equals_the_evaluator_exactly_hybrid(generated, data):
    # fewer examples: the evaluator needs ~0.5 s for a hybrid time formula
    _, module = generated
    formula = data.draw(st.sampled_from(HYBRID), label="formula")
    assert_exact(module, formula, draw_values(data.draw, formula))


def test_python_hand_counts(generated):
    _, g = generated
    # ring all-reduce, N=4, M=8: 2(N−1) = 6 steps, each sends one block of M/N = 2 elements
    assert g.all_reduce__ring__send(N=4, M=8) == 12
    assert g.all_reduce__ring__alpha(N=4) == 6
    # ring data parallel, N=3, Φ=1: 2·2/3 elements, kept exact (the ring all-reduce itself refuses
    # M=1 on 3 ranks, as the command line does: M must be a multiple of N)
    assert g.dp__send(N=3, Phi=1) == Fraction(4, 3)
    with pytest.raises(ValueError, match="M=1 is not allowed: it must be a multiple of N=3"):
        g.all_reduce__ring__send(N=3, M=1)
    # Bruck all-gather, N=5: rounds at distances 1, 2, 4 → 3 rounds; N=8 → 3; N=9 → 4
    assert [g.all_gather__bruck__alpha(N=n) for n in (5, 8, 9, 2)] == [3, 3, 4, 1]
    # recursive doubling all-reduce, N = 2**40: 40 rounds, each swapping the whole buffer
    assert g.all_reduce__recursive_doubling__alpha(N=2 ** 40) == 40
    assert g.all_reduce__recursive_doubling__send(N=2 ** 40, M=3) == 120
    # ZeRO-3 (Rajbhandari et al. 2020, §7.2.2): 3Ψ(N−1)/N per GPU; N=4, Ψ=1000 → 2250
    assert g.zero3__send(N=4, Phi=1000) == 2250
    # Megatron TP (Shoeybi et al. 2019, §3): 4 all-reduces of b·s·h per layer (2 fwd + 2 bwd),
    # ring: 2(N−1)/N each → 8bsh(N−1)/N; N=8, b=1, s=2048, h=12288, L=1
    assert g.tp__send(N=8, b=1, s=2048, h=12288, L=1) == 8 * 2048 * 12288 * 7 // 8
    # pipeline bubble (Narayanan et al. 2021, §2.2): (p − 1)/m = 3/8 for 4 stages, 8 micro-batches
    assert g.pp__bubble_fraction(N=4, m=8) == Fraction(3, 8)
    # time with exact α, β: ring all-reduce N=2, M=2: 2 messages, 2 elements moved, 1 reduced
    assert g.all_reduce__ring__time(N=2, M=2, alpha=Fraction(1, 3), beta=5, gamma=7) == Fraction(2, 3) + 10 + 7


def test_python_module_is_standalone(generated):
    folder, module = generated
    tree = ast.parse((folder / "symcomm_formulas.py").read_text(encoding="utf-8"))
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert imported == {"math", "re", "reprlib", "fractions"}
    # -S: no site-packages, so no sympy and no symcomm
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import symcomm_formulas as f; "
            "print(f.all_reduce__ring__send(N=4, M=8), f.all_gather__bruck__alpha(N=6))")
    run = subprocess.run([sys.executable, "-I", "-S", "-c", code, str(folder)],
                         capture_output=True, text=True, check=True)
    assert run.stdout.split() == ["12", "3"]


def test_python_keywords_and_docstring(generated):
    _, g = generated
    formula = BY_NAME["all_reduce__ring__beta"]
    fn = g.all_reduce__ring__beta
    with pytest.raises(TypeError):
        fn(8, 16)  # keyword-only
    assert fn(N=8, M=16) == 28  # 2(N−1)M/N = 2·7·16/8
    doc = fn.__doc__
    assert render(2 * S.M * (S.N - 1) / S.N, "latex") in doc
    assert formula.source in doc and formula.convention in doc
    assert "N a power of two" in g.all_reduce__recursive_doubling__send.__doc__


def test_python_numpy_module(tmp_path):
    np = pytest.importorskip("numpy")
    names = ["all_reduce__ring__send", "all_gather__bruck__alpha", "all_reduce__recursive_doubling__beta",
             "hsdp__beta_inter", "pp__bubble_fraction"]
    path = tmp_path / "formulas_np.py"
    text = export("python", names, numpy=True, path=path)
    tree = ast.parse(text)
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    assert imported <= {"numpy", "functools"} and "numpy" in imported
    module = _load(path, "formulas_np_generated")
    Ns = np.array([2, 4, 8, 16])
    got = module.all_reduce__recursive_doubling__beta(N=Ns, M=np.full(4, 1024))
    assert got.tolist() == [1024, 2048, 3072, 4096]  # log₂N · M
    assert module.all_gather__bruck__alpha(N=np.array([5, 8, 9])).tolist() == [3, 3, 4]
    for name in names:
        formula = BY_NAME[name]
        values = {info.symbol: (8 if info.symbol.is_integer else Fraction(1, 4)) for info in formula.parameters}
        kwargs = {NAMES[sym]: float(v) for sym, v in values.items()}
        assert math.isclose(float(getattr(module, name)(**kwargs)), float(oracle(formula, values)), rel_tol=1e-12)


# -- C ---------------------------------------------------------------------------------------------

def _compiler():
    return os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")


def _breaks_a_requirement(formula, values: dict) -> bool:
    """Whether ``values`` break one of the formula's requirements between arguments (eval refuses them)."""
    from symcomm.core.rules import KINDS

    return any(not KINDS[kind].holds(*([e.subs(values) for e in exprs] + [None])[:2])
               for kind, _message, exprs in formula.checked_rules())


def _c_points(formula, rng: random.Random, count: int) -> list[dict]:
    """Values a double holds exactly: integers below 2**20, dyadic fractions for reals; each point drawn again (up to
    50 times) until it meets the formula's requirements, so that most are computed, not refused."""
    return [next((p for p in (_c_point(formula, rng) for _ in range(49)) if not _breaks_a_requirement(formula, p)),
                 None) or _c_point(formula, rng) for _ in range(count)]


def _c_point(formula, rng: random.Random) -> dict:
    pow2 = _power_of_two_symbols(formula.expr)
    values = {}
    for info in formula.parameters:
        sym = info.symbol
        if sym in pow2:
            values[sym] = 2 ** rng.randint(_least(formula, sym) - 1, 12)
        elif sym.is_integer:
            values[sym] = rng.choice([rng.randint(_least(formula, sym), 16), rng.randint(_least(formula, sym), 2 ** 20)])
        else:
            values[sym] = Fraction(rng.randint(0, 4096), 1024)
    return values


@pytest.mark.skipif(_compiler() is None, reason="no C compiler")
def test_c_header_compiles_and_equals_the_evaluator(tmp_path):
    header = tmp_path / "symcomm_formulas.h"
    export("c", path=header)
    rng = random.Random(20240601)
    # the whole header is compiled; a random sample of formulas (every algorithm's, some
    # strategies') is called at random points: the evaluator is slow on the hybrid forms
    chosen = [f for f in FORMULAS if f.kind == "primitive"]
    chosen += rng.sample([f for f in OTHERS if f.kind == "strategy"], 24)
    cases = [(f, values) for f in chosen for values in _c_points(f, rng, 2)]
    # the hybrid layout carries the Piecewise (intra- or inter-node) forms
    cases += [(BY_NAME[name], values) for name in ("hybrid__alpha_inter", "hybrid__beta_inter", "hybrid__send")
              for values in _c_points(BY_NAME[name], rng, 1)]
    lines = ['#include <stdio.h>', '#include "symcomm_formulas.h"', "int main(void)", "{"]
    for f, values in cases:
        args = ", ".join(repr(float(values[info.symbol])) for info in f.parameters)
        lines.append(f'    printf("%.17g\\n", {f.name}({args}));')
    lines += ["    return 0;", "}"]
    (tmp_path / "main.c").write_text("\n".join(lines) + "\n")
    exe = tmp_path / "main"
    build = subprocess.run([_compiler(), "-std=c99", "-Wall", "-Werror", "-O0", "-o", str(exe),
                            str(tmp_path / "main.c"), "-lm"], capture_output=True, text=True, cwd=tmp_path)
    assert build.returncode == 0, build.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split()
    assert len(out) == len(cases)
    for (f, values), text in zip(cases, out):
        # a point breaking a requirement between arguments (M a multiple of N, ...) is NAN, as eval refuses it
        if _breaks_a_requirement(f, values):
            assert math.isnan(float(text)), (f.name, values, text)
            continue
        want = float(oracle(f, values))
        assert math.isclose(float(text), want, rel_tol=1e-12, abs_tol=1e-12), (f.name, values, text, want)


@pytest.mark.skipif(_compiler() is None, reason="no C compiler")
def test_c_log2_helpers_are_exact(tmp_path):
    header = tmp_path / "h.h"
    export("c", ["all_gather__bruck__alpha", "all_reduce__recursive_doubling__alpha"], path=header)
    ns = [1, 2, 3, 4, 5, 7, 8, 9, 1023, 1024, 1025, 2 ** 40, 2 ** 40 + 1]
    # the helpers themselves: a collective's function refuses N = 1 (NAN), as symcomm eval does
    body = "\n".join(f'    printf("%.17g %.17g\\n", symcomm_ceil_log2({n}.0), symcomm_log2({n}.0));' for n in ns)
    body += "\n" + "\n".join(f'    printf("%.17g %.17g\\n", all_gather__bruck__alpha({n}.0), '
                              f'all_reduce__recursive_doubling__alpha({n}.0));' for n in ns)
    (tmp_path / "m.c").write_text(f'#include <stdio.h>\n#include "h.h"\nint main(void)\n{{\n{body}\n    return 0;\n}}\n')
    subprocess.run([_compiler(), "-std=c99", "-Wall", "-Werror", "-o", str(tmp_path / "m"), str(tmp_path / "m.c"),
                    "-lm"], check=True, cwd=tmp_path)
    rows = subprocess.run([str(tmp_path / "m")], capture_output=True, text=True, check=True).stdout.splitlines()
    assert len(rows) == 2 * len(ns)
    for n, helpers, formulas_row in zip(ns, rows, rows[len(ns):]):
        for row in (helpers, formulas_row) if n >= 2 else (helpers,):
            ceil_log2, log2n = map(float, row.split())
            assert ceil_log2 == min(k for k in range(64) if 2 ** k >= n)  # ⌈log₂n⌉ by its definition
            if n & (n - 1) == 0:
                assert log2n == n.bit_length() - 1
        if n == 1:
            assert all(math.isnan(float(x)) for x in formulas_row.split())


#: N values as C doubles (their C spelling, their value): in range, out of range, not finite
C_VALUES = [("0.0", 0), ("-1.0", -1), ("1.0", 1), ("1.5", 1.5), ("2.0", 2), ("8.0", 8), ("0x1p100", 2 ** 100),
            ("0x1p101", 2 ** 101), ("1e-45", 1e-45), ("NAN", float("nan")), ("INFINITY", float("inf")),
            ("-INFINITY", float("-inf"))]


@pytest.mark.skipif(_compiler() is None, reason="no C compiler")
def test_c_gives_nan_exactly_where_eval_refuses_the_value(tmp_path):
    # C has no exceptions: an argument the command line refuses gives NAN, not a number computed
    # from it (N = 0 divided by zero; ⌈log₂0⌉ came out as 0)
    import symcomm

    export("c", ["all_reduce__ring__send", "all_reduce__recursive_doubling__alpha", "zero3__send"],
           path=tmp_path / "h.h")
    calls = [("all_reduce__ring__send", "all_reduce", "ring", {"N": n, "M": "0x1p100"}, {"M": 2 ** 100})
             for n in C_VALUES]
    calls += [("all_reduce__recursive_doubling__alpha", "all_reduce", "recursive_doubling", {"N": n}, {"M": 2 ** 100})
              for n in C_VALUES]
    calls += [("zero3__send", "zero3", None, {"Phi": "1e9", "N": n}, {"Phi": 10 ** 9}) for n in C_VALUES]
    lines = [f'    printf("%.17g\\n", {fn}({", ".join(v if isinstance(v, str) else v[0] for v in args.values())}));'
             for fn, _, _, args, _ in calls]
    (tmp_path / "m.c").write_text('#include <stdio.h>\n#include "h.h"\nint main(void)\n{\n' + "\n".join(lines)
                                  + "\n    return 0;\n}\n")
    subprocess.run([_compiler(), "-std=c99", "-Wall", "-Werror", "-o", str(tmp_path / "m"), str(tmp_path / "m.c"),
                    "-lm"], check=True, cwd=tmp_path)
    rows = subprocess.run([str(tmp_path / "m")], capture_output=True, text=True, check=True).stdout.split()
    assert len(rows) == len(calls)
    for (fn, name, algorithm, args, others), row in zip(calls, rows):
        n = args["N"][1]
        given = {**others, "N": repr(n) if isinstance(n, float) else n}
        try:
            symcomm.evaluate(name, algorithm=algorithm, **given)
            refused = False
        except ValueError:
            refused = True
        assert math.isnan(float(row)) == refused, (fn, args["N"][0], row)


@pytest.mark.skipif(_compiler() is None, reason="no C compiler")
def test_c_gives_nan_where_a_requirement_between_arguments_fails(tmp_path):
    # the requirements eval checks (a power of two, a multiple of N, m divisible by N) give NAN in C too: recursive
    # doubling on 6 ranks gave 2.585 messages, the interleaved bubble at m = 8 on 16 stages 1.875 (an outsider's test)
    export("c", ["all_reduce__recursive_doubling__alpha", "all_reduce__ring__send",
                 "pp__schedule_interleaved__bubble_fraction"], path=tmp_path / "h.h")
    calls = ["all_reduce__recursive_doubling__alpha(6)", "all_reduce__recursive_doubling__alpha(8)",
             "all_reduce__ring__send(8, 12)", "all_reduce__ring__send(8, 16)",
             "pp__schedule_interleaved__bubble_fraction(16, 8, 1)", "pp__schedule_interleaved__bubble_fraction(4, 8, 2)"]
    (tmp_path / "m.c").write_text('#include <stdio.h>\n#include "h.h"\nint main(void)\n{\n'
                                  + "".join(f'    printf("%.17g\\n", {call});\n' for call in calls)
                                  + "    return 0;\n}\n")
    subprocess.run([_compiler(), "-std=c99", "-Wall", "-Werror", "-o", str(tmp_path / "m"), str(tmp_path / "m.c"),
                    "-lm"], check=True, cwd=tmp_path)
    rows = [float(x) for x in subprocess.run([str(tmp_path / "m")], capture_output=True, text=True,
                                             check=True).stdout.split()]
    # by hand: log₂8 = 3 messages; a ring all-reduce sends 2·(N − 1)/N·M = 2·7/8·16 = 28; (N − 1)/(m·v) = 3/16
    assert math.isnan(rows[0]) and rows[1] == 3
    assert math.isnan(rows[2]) and rows[3] == 28
    assert math.isnan(rows[4]) and rows[5] == 3 / 16


def test_the_numpy_module_of_the_whole_catalog_counts_set_bits_as_the_exact_one(tmp_path):
    # the whole catalog under --numpy raised a traceback (no vectorised Σ popcount below n, which the binomial
    # trees' totals read): the module now carries one, equal to the bit count by hand on 0 … 300
    np = pytest.importorskip("numpy")
    path = tmp_path / "all_np.py"
    export("python", None, numpy=True, path=path)
    module = _load(path, "all_np_generated")
    n = np.arange(301)
    assert module._ones_below(n).tolist() == [sum(bin(i).count("1") for i in range(k)) for k in range(301)]
    # a binomial scatter's total: ones_below(N)·M/N, 12·1024/8 at N = 8 (0+1+1+2+1+2+2+3 set bits below 8)
    assert module.scatter__binomial_tree__total(N=np.array([8.0]), M=np.array([1024.0])).tolist() == [1536.0]


# -- JSON ------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def document():
    return json.loads(export("json"))


def test_json_validates_against_the_shipped_schema(document):
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.Draft202012Validator.check_schema(schema())
    validator = jsonschema.Draft202012Validator(schema())
    # every formula record, every tree node: a node's validity at #/$defs/node is a function of its value alone (the
    # schema gives a node no context), so a subtree equal to one met earlier stands validated there and a one-symbol
    # leaf takes its place here (the 1082 trees hold 129,357 nodes, 1,334 distinct subtrees; jsonschema walks ~10^4
    # nodes a second).  The first of each is kept whole, its own repeated subtrees replaced the same way.
    ids: dict = {}

    def once(node):
        """(node with every subtree met before replaced by a leaf, the node's identity)"""
        if not (isinstance(node, dict) and set(node) == {"op", "args"} and isinstance(node["args"], list)):
            key = json.dumps(node, sort_keys=True)     # a leaf, or anything odd: whole, for the schema to judge
            return node, ids.setdefault(("leaf", key), len(ids))
        args = [once(arg) for arg in node["args"]]
        key = (json.dumps(node["op"]), *(ident for _, ident in args))
        if key in ids:
            return {"symbol": "N"}, ids[key]
        ids[key] = len(ids)
        return {"op": node["op"], "args": [arg for arg, _ in args]}, ids[key]

    validator.validate({**document, "formulas": [{**record, "tree": once(record["tree"])[0]}
                                                 for record in document["formulas"]]})
    assert len(document["formulas"]) == len(FORMULAS)
    assert document["format_version"] == 2
    one = {**document, "formulas": document["formulas"][:1]}  # small documents: validation is slow
    for field in ("srepr", "tree"):
        broken = json.loads(json.dumps(one))
        del broken["formulas"][0][field]
        with pytest.raises(jsonschema.ValidationError):
            validator.validate(broken)
    # numbers in a tree are exact strings: a JSON number, or an unknown op, is not a valid tree
    for bad in ({"integer": 3}, {"integer": "3.0"}, {"integer": "٣"}, {"rational": 0.5}, {"float": "0.5"},
                {"op": "eval", "args": []}, {"symbol": "N", "integer": "1"}, {"symbol": "N + 1"}, "N"):
        broken = json.loads(json.dumps(one))
        broken["formulas"][0]["tree"] = {"op": "Add", "args": [{"symbol": "N"}, bad]}
        with pytest.raises(jsonschema.ValidationError):
            validator.validate(broken)
        validator.validate({**broken, "formulas": document["formulas"][1:2]})  # the rest is valid


def test_schema_ships_as_package_data():
    from importlib.resources import files

    shipped = files("symcomm") / "schema" / "formulas.schema.json"
    assert shipped.is_file() and Path(str(shipped)) == SCHEMA_PATH


def _srepr_namespace(document) -> dict:
    # srepr is trusted input only: this test produced the file itself (a consumer of
    # anyone else's file loads ``tree`` with symcomm.core.exprtree.from_tree, never eval)
    namespace: dict = {}
    exec("from sympy import *", namespace)
    for name, where in document["srepr_namespace"].items():
        module, _, attr = where.rpartition(".")
        namespace[name] = getattr(importlib.import_module(module), attr)
    return namespace


def test_json_srepr_round_trips_to_an_equal_expression(document):
    # trusted input: the file was written by this very test session
    namespace = _srepr_namespace(document)
    loaded: dict[str, sp.Expr] = {}     # the same text evaluates to the same expression: each distinct srepr once
    for record in document["formulas"]:
        if record["srepr"] not in loaded:
            loaded[record["srepr"]] = eval(record["srepr"], dict(namespace))
        expr = loaded[record["srepr"]]
        original = BY_NAME[record["name"]].expr
        # identical, or equal once SymPy's automatic evaluation (2*(N - 1) → 2*N - 2) is undone
        assert expr == original or sp.expand(expr - original) == 0, record["name"]
        names = {p["name"] for p in record["parameters"]}
        assert {NAMES[sym] for sym in expr.free_symbols} == names


def test_json_record_fields(document):
    records = {r["name"]: r for r in document["formulas"]}
    ring = records["all_reduce__ring__send"]
    assert (ring["kind"], ring["primitive"], ring["algorithm"], ring["strategy"]) == \
        ("primitive", "all_reduce", "ring", None)
    assert [p["name"] for p in ring["parameters"]] == ["N", "M"]
    assert ring["parameters"][0]["assumptions"] == {"integer": True, "real": True, "positive": True,
                                                    "nonnegative": True}
    assert ring["latex"] == render(2 * S.M * (S.N - 1) / S.N, "latex")
    assert "Patarasuk" in ring["source"] and "M = the full unsharded buffer" in ring["convention"]
    time = records["all_reduce__ring__time"]
    alpha = next(p for p in time["parameters"] if p["name"] == "alpha")
    assert alpha["assumptions"]["integer"] is False and alpha["assumptions"]["nonnegative"] is True
    naive = records["dp__algorithm_naive__send"]
    assert (naive["kind"], naive["strategy"], naive["algorithm"], naive["options"]) == \
        ("strategy", "dp", "naive", {"algorithm": "naive"})


@SETTINGS(40)
@given(data=st.data())
def test_json_tree_evaluates_like_the_formula(document, data):
    # the expression loaded from the tree (no eval), evaluated, equals the evaluator on the original
    record = data.draw(st.sampled_from([r for r in document["formulas"] if not r["name"].startswith("hybrid")]))
    formula = BY_NAME[record["name"]]
    values = draw_values(data.draw, formula, big=False)
    expr = from_tree(record["tree"])
    exact_values = {sym: sp.Rational(v.numerator, v.denominator) if isinstance(v, Fraction) else sp.Integer(v)
                    for sym, v in values.items()}
    assert exact(expr, exact_values) == oracle(formula, values)


# -- latex and markdown ----------------------------------------------------------------------------

def test_markdown_table_for_a_subset():
    text = export("markdown", ["all_reduce__ring", "pp__bubble_fraction"])
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert len(rows) == len(select(["all_reduce__ring"])) + 1
    ring_send = next(r for r in rows if r.startswith("| `all_reduce__ring__send`"))
    assert "$" + render(2 * S.M * (S.N - 1) / S.N, "latex") + "$" in ring_send
    assert "all_gather" not in text and "Patarasuk" in text
    assert "$" + render((S.N - 1) / S.m, "latex") + "$" in text


def test_latex_and_markdown_say_the_time_constants_are_per_element():
    # an outsider read both without a word of β's unit, where the Python, C, JavaScript and JSON exports say it; a
    # β from eval (seconds per byte) put in as it is times a bf16 formula at half its length
    for kind in ("latex", "markdown"):
        text = export(kind, ["all_reduce__ring"])
        head = text.split("all_reduce__ring")[0]
        assert "seconds per element moved" in head and "seconds per byte" in head and "B_e" in head, kind


def test_latex_table_for_a_subset():
    text = export("latex", ["all_reduce__ring", "hsdp"])
    assert text.startswith(r"\documentclass") and text.rstrip().endswith(r"\end{document}")
    assert text.count(r"\begin{longtable}") == text.count(r"\end{longtable}") == 2
    assert r"\texttt{all\_reduce\_\_ring\_\_send}" in text
    assert render(2 * S.M * (S.N - 1) / S.N, "latex") in text
    # prose is escaped for LaTeX: no bare non-ASCII, & and § spelled out
    prose = [line for line in text.splitlines() if line.startswith(("Source:", r"\noindent Convention:"))]
    assert prose and all(line.isascii() for line in prose)
    assert r"Rabenseifner \& Gropp" not in text or r"\&" in text
    # each formula's row: its name and quantity, then the formula on a line of the table's whole width
    body = text.split(r"\midrule")[1].split(r"\bottomrule")[0].strip().splitlines()
    assert len(body) % 2 == 0
    for named, formula in zip(body[::2], body[1::2]):
        assert named.count(" & ") == 1 and named.endswith(r"\\*")
        assert formula.startswith(r"\multicolumn{2}") and r"\formula{" in formula and formula.endswith(r"\\[3pt]")


def test_templates_hold_no_formulas():
    folder = ROOT / "templates" / "export"
    for template in folder.glob("*.j2"):
        text = template.read_text(encoding="utf-8")
        assert r"\frac" not in text and "N - 1" not in text and "(N" not in text


# -- CLI and files ---------------------------------------------------------------------------------

def _cli(capsys, *argv):
    code = main(["export", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("argv, word", [
    (["--format", "yaml"], "--format"),
    (["--format", "c", "--only", "all_reduce__nope"], "all_reduce__nope"),
    (["--format", "json", "--numpy"], "--numpy"),
    ([], "--format"),
])
def test_cli_bad_input_is_one_line_exit_2(capsys, argv, word):
    code, out, err = _cli(capsys, *argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and word in err and "Traceback" not in err


def test_cli_missing_directory_writes_nothing(capsys, tmp_path):
    target = tmp_path / "missing" / "f.h"
    code, out, err = _cli(capsys, "--format", "c", "-o", str(target))
    assert code == 2 and "does not exist" in err and err.count("\n") == 1
    assert not target.parent.exists() and list(tmp_path.iterdir()) == []


def test_cli_writes_atomically(capsys, tmp_path):
    target = tmp_path / "ring.md"
    code, out, err = _cli(capsys, "--format", "markdown", "--only", "all_reduce__ring", "-o", str(target))
    assert code == 0 and out == "" and err == ""
    assert target.read_text(encoding="utf-8") == export("markdown", ["all_reduce__ring"])
    assert [p.name for p in tmp_path.iterdir()] == ["ring.md"]  # no temporary file left


def test_failed_write_keeps_the_old_file(monkeypatch, tmp_path):
    target = tmp_path / "f.json"
    target.write_text("old")

    def boom(src, dst):
        raise OSError("disk full")
    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        export("json", ["pp__send"], path=target)
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["f.json"]


def test_cli_stdout_and_list(capsys):
    code, out, err = _cli(capsys, "--format", "python", "--only", "zero3__send")
    assert code == 0 and "def zero3__send(*, Phi, N):" in out
    code, out, err = _cli(capsys, "--list", "--only", "all_reduce__ring")
    assert out.split() == [f.name for f in select(["all_reduce__ring"])]


def test_every_format_is_exported():
    for fmt in FORMATS:
        assert export(fmt, ["send_recv__direct"]).strip()


def test_exported_latex_compiles_and_markdown_math_parses(tmp_path):
    # the real renderers, as for the docs (tests/integration/test_docs.py): pdflatex and KaTeX
    import shutil
    import subprocess

    tex, md = tmp_path / "all.tex", tmp_path / "all.md"
    assert main(["export", "--format", "latex", "-o", str(tex)]) == 0
    assert main(["export", "--format", "markdown", "-o", str(md)]) == 0
    missing = []
    if shutil.which("pdflatex"):
        proc = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "all.tex"],
                              cwd=tmp_path, capture_output=True, text=True, errors="replace", timeout=300)
        assert proc.returncode == 0, proc.stdout[-2000:]
        # no formula runs off the page: the hybrid's MoE send (11,314 pt wide) was cut at the margin (an outsider's
        # test); one wider than the line is scaled to it, whole.  What overflows is prose (a long unbroken file path)
        log = (tmp_path / "all.log").read_text(errors="replace")
        widths = [float(w) for w in re.findall(r"Overfull \\hbox \(([0-9.]+)pt too wide\)", log)]
        assert max(widths, default=0) < 72, sorted(widths)[-5:]       # an inch, the prose's worst at 32 pt
    else:
        missing.append("pdflatex")
    node = shutil.which("node")
    script = TESTS / "tools" / "katex_check.js"
    if node and subprocess.run([node, "-e", "require('katex')"], capture_output=True).returncode == 0:
        proc = subprocess.run([node, str(script), str(md)], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stdout[-2000:]
    else:
        missing.append("KaTeX (node with the katex package)")
    if missing:
        # each renderer present was checked above; skipped here, failed in CI (tests/conftest.py)
        absent(f"{' and '.join(missing)} not installed")


# -- the format registry ---------------------------------------------------------------------------

def test_formats_are_discovered_modules_in_their_order():
    import importlib

    import symcomm
    import symcomm.views.export as package
    from symcomm.views.export import REGISTRY, Format

    assert FORMATS == ("latex", "markdown", "python", "c", "javascript", "json")
    assert tuple(REGISTRY) == FORMATS
    for name, fmt in REGISTRY.items():
        module = importlib.import_module(f"symcomm.views.export.{name}")
        assert module.FORMAT is fmt and isinstance(fmt, Format) and fmt.name == name
    # symcomm.views.export is the package (no function shadows it); the function is export.export
    assert symcomm.views.export is package and package.export is export and callable(export)


def test_a_new_format_is_one_module(tmp_path, monkeypatch):
    import symcomm.views.export as package

    (tmp_path / "names.py").write_text(
        "from symcomm.views.export import Format\n\n"
        "def to_names(chosen):\n    return ''.join(f.name + '\\n' for f in chosen)\n\n"
        "FORMAT = Format(name='names', order=35, render=to_names, description='one name a line')\n")
    monkeypatch.setattr(package, "__path__", [*package.__path__, str(tmp_path)])
    registry = package._discover()
    assert tuple(registry) == ("latex", "markdown", "python", "names", "c", "javascript", "json")
    monkeypatch.setattr(package, "REGISTRY", registry)
    assert export("names", ["all_reduce__ring"]) == "".join(f.name + "\n" for f in select(["all_reduce__ring"]))
    monkeypatch.delitem(sys.modules, "symcomm.views.export.names")   # imported by _discover: forgotten again
    monkeypatch.delattr(package, "names")


def test_format_options_belong_to_their_format():
    with pytest.raises(ValueError, match=r"^--numpy applies to --format python only, not c$"):
        export("c", ["all_reduce__ring__send"], numpy=True)
    with pytest.raises(ValueError, match=r"^--format 'yaml' is not allowed; choose one of latex, markdown, python, c, javascript, json$"):
        export("yaml")


def test_variant_titles_print_options_as_typed():
    # the CLI takes recompute=full and gqa=1; the export's titles and option lists say the same
    text = export("markdown", ["tp__recompute_full", "cp_ulysses__gqa_1"])
    assert "(recompute=full)" in text and "(gqa=1)" in text
    assert "True" not in text and "False" not in text


def test_exported_functions_check_what_the_command_line_checks(tmp_path):
    # the same requirement, the same words: the exported module raises ValueError with the message
    # `symcomm eval` gives for the same values (power of two, a multiple of N, a divisible layout)
    import importlib.util

    import symcomm

    path = tmp_path / "formulas.py"
    path.write_text(export("python", ["all_reduce__recursive_doubling", "all_reduce__ring", "hybrid"]))
    spec = importlib.util.spec_from_file_location("formulas", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    cases = [
        (module.all_reduce__recursive_doubling__send, dict(N=6, M=16), ("all_reduce", "recursive_doubling")),
        (module.all_reduce__ring__send, dict(N=3, M=16), ("all_reduce", "ring")),
    ]
    for function, values, (name, algorithm) in cases:
        with pytest.raises(ValueError) as exported:
            function(**values)
        with pytest.raises(ValueError) as cli:
            symcomm.evaluate(name, algorithm=algorithm, **values)
        assert str(exported.value) == str(cli.value)
    layout = dict(Phi=10**9, h=64, L=80, s=128, G=8, t=1, p=3, d=2, c=1, m=2, b=8)
    with pytest.raises(ValueError, match=r"L=80 must be divisible by p=3"):
        # B_e: the hybrid's fp32 gradient reductions are counted in elements of the run's dtype (2 bytes: bf16)
        module.hybrid__send(**{k: v for k, v in {**layout, "B_e": 2}.items()
                               if k in module.hybrid__send.__code__.co_varnames})
    with pytest.raises(ValueError, match=r"L=80 must be divisible by p=3"):
        symcomm.evaluate("hybrid", **layout)
    # valid exact input passes
    assert module.all_reduce__recursive_doubling__send(N=8, M=16) == 48          # M·log₂N
    assert module.all_reduce__ring__send(N=4, M=16) == 24                        # 2·3/4·M
    # a float is checked by its exact value: N=6.0 is refused as N=6 is (it gave 2.585 messages to an outsider), and
    # a float that meets the requirements gives a float
    with pytest.raises(ValueError, match="power of two"):
        module.all_reduce__recursive_doubling__send(N=6.0, M=16.0)
    got = module.all_reduce__recursive_doubling__send(N=8.0, M=16.0)
    assert isinstance(got, float) and got == 48.0


# -- bad arguments: the command line's words ------------------------------------------------------

def _typed(value) -> str:
    """How the value is written on the command line (``symcomm eval N=...``): text as it is, a float as
    Python prints it, a Fraction as p/q, anything else as str() (True, None, [1])."""
    if isinstance(value, str):
        return value
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, Fraction):
        return f"{value.numerator}/{value.denominator}"
    return str(value)


def _cli_error(capsys, *argv) -> str:
    """The one line `symcomm eval ...` prints for bad input, without its "symcomm: error: " prefix."""
    code = main(["eval", *argv])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 2, err
    return err.split("error: ", 1)[1]


#: values no function may take, each one way a caller gets it wrong (the issue's list); the long
#: text and the long int would fill the memory if they reached the formula ("9" * 10**6 * ...)
BAD_VALUES = [
    pytest.param("9" * 10 ** 6, id="str-of-a-million-digits"),
    pytest.param("abc", id="str-not-a-number"),
    pytest.param([1], id="list"),
    pytest.param(True, id="bool"),
    pytest.param(None, id="None"),
    pytest.param(float("nan"), id="nan"),
    pytest.param(float("inf"), id="inf"),
    pytest.param(0, id="zero"),
    pytest.param(-1, id="minus-one"),
    pytest.param(1, id="one-rank-of-a-collective"),        # a collective needs N >= 2 (Subject.least)
    pytest.param(2 ** 101, id="2**101"),
    pytest.param(1.5, id="float-for-an-integer"),
    pytest.param(Fraction(3, 2), id="Fraction-for-an-integer"),
    pytest.param(1e-45, id="tiny-float"),
    pytest.param(10 ** 300, id="int-of-301-digits"),
]


@pytest.fixture(scope="module")
def checked_module(tmp_path_factory):
    folder = tmp_path_factory.mktemp("checked")
    export("python", ["all_reduce__ring", "zero3"], path=folder / "checked_formulas.py")
    return _load(folder / "checked_formulas.py", "checked_formulas")


@pytest.mark.parametrize("value", BAD_VALUES)
def test_exported_python_refuses_a_bad_argument_as_eval_does(capsys, checked_module, value):
    want = _cli_error(capsys, "all_reduce", "--algorithm", "ring", f"N={_typed(value)}", "M=8")
    with pytest.raises(checked_module.InputError) as got:
        checked_module.all_reduce__ring__send(N=value, M=8)
    assert isinstance(got.value, ValueError) and str(got.value) == want
    assert "\n" not in str(got.value)


@pytest.mark.parametrize("name, value", [("N", 0), ("N", 1.5), ("Phi", -1), ("Phi", "2**101"), ("N", True)])
def test_exported_strategy_refuses_a_bad_argument_as_eval_does(capsys, checked_module, name, value):
    # a strategy's N may be 1 (one GPU): the bound is the subject's, not the collective's 2
    values = {"Phi": 10 ** 9, "N": 8, name: value}
    want = _cli_error(capsys, "zero3", *(f"{k}={_typed(v)}" for k, v in values.items()))
    with pytest.raises(checked_module.InputError) as got:
        checked_module.zero3__send(**values)
    assert str(got.value) == want


@pytest.mark.parametrize("value", [-1.0, 2.0 ** 101, 1e-31, "x", None])
def test_exported_time_refuses_a_bad_alpha_as_eval_does(capsys, checked_module, value):
    want = _cli_error(capsys, "all_reduce", "--algorithm", "ring", "N=8", "M=8", f"alpha={_typed(value)}",
                      "beta=0", "gamma=0")
    with pytest.raises(checked_module.InputError) as got:
        checked_module.all_reduce__ring__time(N=8, M=8, alpha=value, beta=0, gamma=0)
    assert str(got.value) == want


def test_exported_python_reads_text_and_numbers_as_eval_does(checked_module):
    f = checked_module.all_reduce__ring__send
    # 2·(N−1)/N·M at N=4, M=8: 12, whichever way the numbers are written
    assert f(N=4, M=8) == f(N="4", M="2**3") == f(N=Fraction(4), M=8) == 12
    assert f(N=4.0, M=8.0) == 12.0 and isinstance(f(N=4.0, M=8.0), float)   # floats stay floats
    assert checked_module.zero3__send(Phi=10 ** 9, N=1) == 0                 # one GPU sends nothing
    numpy = pytest.importorskip("numpy")
    # numpy scalars: an integer is the int it holds, a float64 the float (its repr is np.float64(4.0))
    assert f(N=numpy.int64(4), M=8) == 12 and f(N=numpy.float64(4.0), M=8) == 12.0
    with pytest.raises(checked_module.InputError, match=r"^N='np.True_' is not a number"):
        f(N=numpy.True_, M=8)


def test_a_strategy_term_needs_its_power_of_two_group_in_the_export_too(generated):
    # dp with algorithm=recursive_doubling all-reduces over N ranks by recursive doubling, which
    # needs N = 2^k: N = 6 (no power of two) was refused by eval but computed by the export (a
    # float log₂6); now the rule travels with the strategy's other rules.  N = 8 = 2³ is computed:
    # recursive doubling sends Φ in each of log₂8 = 3 rounds (Thakur et al. 2005, §4), 3·Φ = 12 for Φ = 4.
    _, module = generated
    with pytest.raises(ValueError) as err:
        module.dp__algorithm_recursive_doubling__send(N=6, Phi=4)
    assert str(err.value) == ("N=6 is not allowed: recursive_doubling all_reduce needs a power-of-two group "
                              "(2, 4, 8, ...)")
    assert module.dp__algorithm_recursive_doubling__send(N=8, Phi=4) == 12


def test_exported_time_prices_each_terms_own_bytes(tmp_path):
    # Megatron's distributed optimizer in a bf16 run (grad_dtype=framework): the gradient reduce-scatter runs in fp32,
    # the parameter all-gather in bf16.  By hand, d = 8 ranks on one node, Φ = 10⁹, t = p = c = 1, m = 1: each ring
    # moves Φ(d − 1)/d = 0.875·10⁹ elements in 7 messages: 0.875e9·4 B + 0.875e9·2 B = 5.25e9 B moved, the
    # reduce-scatter's 0.875e9·4 B = 3.5e9 B reduced, 14 messages; at α = 5 µs, 1e-11 s/B, 2e-12 s/B:
    # 14·5e-6 + 5.25e9·1e-11 + 3.5e9·2e-12 = 0.05957 s.  The exported formula takes β, γ per element of the run's
    # dtype (B_e = 2 bytes: 2e-11, 4e-12 s) and counts the fp32 elements as 4/B_e of them.
    import symcomm

    path = tmp_path / "formulas.py"
    path.write_text(export("python", ["hybrid__time", "hybrid__beta"]))
    spec = importlib.util.spec_from_file_location("formulas", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    layout = dict(Phi=10 ** 9, b=8, s=2048, h=4096, L=32, G=8, m=1, d=8, t=1, p=1, c=1)
    per_element = dict(alpha=5e-6, beta=2e-11, gamma=4e-12, alpha_inter=5e-6, beta_inter=2e-11, B_e=2)
    assert math.isclose(module.hybrid__time(**layout, **per_element), 0.05957, rel_tol=1e-12)
    # the β coefficient in bf16 elements: 5.25e9 B / 2 B; as eval counts it at --dtype bf16 (its bytes / 2)
    assert module.hybrid__beta(**{k: v for k, v in {**layout, "B_e": 2}.items()
                                  if k in module.hybrid__beta.__code__.co_varnames}) == 2_625_000_000
    said = symcomm.evaluate("hybrid", dtype="bf16", alpha=5e-6, beta=1e-11, gamma=2e-12, alpha_inter=5e-6,
                            beta_inter=1e-11, **layout)
    assert math.isclose(said["time"], 0.05957, rel_tol=1e-12)


def test_a_strategy_formula_states_the_rules_its_function_checks():
    # the Python, C and JavaScript functions check a strategy's rules between their arguments as eval does (b = 63
    # sequences on d = 2 replicas is refused by both); the text of each formula says which: its requires, printed as
    # each format's "Requires:" line and the JSON's requires field, the rules whose symbols it takes
    by_name = {f.name: f for f in formulas()}
    assert "b divisible by d" in by_name["hybrid__send"].requires
    assert "b/d divisible by m" in by_name["hybrid__time"].requires and \
        "b/d divisible by m" not in by_name["hybrid__send"].requires          # send takes no m
    assert by_name["pp__time"].requires == ("b divisible by m",)
    text = export("python", ["hybrid__send"])
    assert "Requires: L divisible by p; b divisible by d" in text
    # the JSON says each parameter's least and the bounds of every argument, as eval takes them: N >= 2 for a
    # collective (a ring of one rank moves nothing), 1 for a strategy's whole numbers
    document = json.loads(export("json", ["all_reduce__ring__send", "hybrid__send"]))
    least = {r["name"]: {p["name"]: p["least"] for p in r["parameters"]} for r in document["formulas"]}
    assert least["all_reduce__ring__send"]["N"] == 2 and least["hybrid__send"]["d"] == 1
    assert "at most 2**100" in document["arguments"]
