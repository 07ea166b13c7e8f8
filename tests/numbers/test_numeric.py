"""Lambdified evaluators: exact integers, no silent int64 overflow, vectorised Piecewise.

Expected values are hand counts from the formulas' definitions (ARCHITECTURE.md conventions),
not outputs of the code under test.
"""

from fractions import Fraction

import numpy as np
import pytest

from symcomm.collectives.algorithms import algorithm
from symcomm.numbers.logarithms import ceil_log2
from symcomm.numbers.numeric import evaluator, value_of
from symcomm.training.strategies import STRATEGIES
from symcomm.core.symbols import CeilLog2, beta_inter, log2_ceil, M, N


def test_ring_all_reduce_exact_and_broadcast():
    ring = algorithm("all_reduce", "ring").cost
    # ring all-reduce of M = 2^30 over 8 ranks: each rank sends 2·(7/8)·M = 7·2^28·... elements
    got = value_of(ring.beta, N=8, M=2 ** 30)
    assert got == 7 * 2 ** 30 // 4 and isinstance(got, int)
    arr = value_of(ring.beta, N=np.array([2, 4, 8]), M=2 ** 30, exact=True)
    assert arr.dtype == np.int64
    assert arr.tolist() == [2 ** 30, 3 * 2 ** 29, 7 * 2 ** 28]
    # not a whole number: the correctly rounded float, as `symcomm eval` does
    assert value_of(ring.beta, N=3, M=10) == pytest.approx(40 / 3, rel=1e-15)


def test_floats_select_float_arithmetic():
    ring = algorithm("all_reduce", "ring").cost
    N_ = np.array([2.0, 4.0, 8.0])
    got = value_of(ring.time, N=N_, M=1e9, alpha=5e-6, beta=1e-11, gamma=1e-12)
    hand = 2 * (N_ - 1) * 5e-6 + 2 * (N_ - 1) / N_ * 1e9 * 1e-11 + (N_ - 1) / N_ * 1e9 * 1e-12
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, hand, rtol=1e-14)


def test_phi_1e13_over_2_20_ranks_does_not_overflow():
    total = STRATEGIES["dp"].cost().total          # 2Φ(N−1) summed over all ranks
    want = 2 * 10 ** 13 * (2 ** 20 - 1)             # 20,971,500,000,000,000,000 > 2^63
    assert want > 2 ** 63
    assert value_of(total, Phi=10 ** 13, N=2 ** 20) == want
    arr = value_of(total, Phi=np.array([10 ** 13, 10 ** 12], dtype=np.int64), N=2 ** 20, exact=True)
    assert arr.dtype == object
    assert [int(x) for x in arr] == [want, want // 10]
    # per-rank send 2Φ(N−1)/N is not whole here: exact rational, rounded once
    send = value_of(STRATEGIES["dp"].cost().send, Phi=10 ** 13, N=2 ** 20)
    assert send == float(Fraction(2 * 10 ** 13 * (2 ** 20 - 1), 2 ** 20))


def test_bshL_near_1e18_exact_although_intermediates_exceed_int64():
    tp = STRATEGIES["tp"].cost().send               # 8·b·s·h·L·(N−1)/N
    values = dict(b=10 ** 3, s=10 ** 5, h=10 ** 5, L=10 ** 5, N=2 ** 20)   # b·s·h·L = 10^18
    # 8·10^18·(2^20 − 1)/2^20 = 8·10^18 − 8·10^18/2^20 = 8·10^18 − 7,629,394,531,250
    want = 8 * 10 ** 18 - 7_629_394_531_250
    assert value_of(tp, **values) == want
    arr = value_of(tp, exact=True, **{**values, "b": np.array([10 ** 3, 10 ** 3])})
    assert [int(x) for x in arr] == [want, want]
    assert arr.dtype == np.int64                     # the result fits even if 8·b·s·h·L·(N−1) does not
    assert value_of(tp, exact=False, **values) == pytest.approx(want, rel=1e-15)


def test_int64_path_when_safe():
    total = STRATEGIES["dp"].cost().total
    got = value_of(total, Phi=np.array([10 ** 9, 7]), N=np.array([8, 3]), exact=True)
    assert got.dtype == np.int64 and got.tolist() == [2 * 10 ** 9 * 7, 2 * 7 * 2]


def test_ceil_log2_exact_for_integers():
    n = np.array([2, 3, 4, 5, 2 ** 40, 2 ** 40 + 1, 2 ** 53 + 1, 2 ** 62 + 1], dtype=np.int64)
    # hand: the smallest k with 2^k ≥ n; 2^53 + 1 rounds to 2^53 in float64
    want = [1, 2, 2, 3, 40, 41, 54, 63]
    assert ceil_log2(n).tolist() == want
    ev = evaluator(log2_ceil(N))
    assert ev(N=n, exact=True).tolist() == want
    assert ev(N=2 ** 53 + 1) == 54
    assert ceil_log2(np.array([2 ** 70 + 1], dtype=object)).tolist() == [71]


def test_piecewise_is_vectorised_and_exact():
    # Megatron TP on the inter-node β only when t > G: 2·(4·L·b·h·s·(t−1)/(c·d·p·t)) β_inter
    coef = STRATEGIES["hybrid"].by_axis(zero=1)["tp"].coefficient(beta_inter)
    ev = evaluator(coef)
    assert "select" in ev.source or "where" in ev.source
    values = dict(L=1, b=8, s=16, h=32, c=1, d=1, p=1, G=8, m=1)
    tt = np.array([4, 8, 16])
    # t = 16 > G = 8: the group moves 8·1·8·32·16·15/16 = 30720 elements a rank, of which its 8 ranks on a node
    # send 1/8 across nodes through their 8 NICs (NCCL's channels): 3840; t = 4, 8 stay in the node: 0
    assert ev(t=tt, exact=True, **{k: v for k, v in values.items() if k in ev.names}).tolist() == [0, 0, 3840]
    got = ev(t=tt.astype(float), **{k: v for k, v in values.items() if k in ev.names})
    assert got.tolist() == [0.0, 0.0, 3840.0]


def test_exact_time_with_fractions():
    ring = algorithm("all_reduce", "ring").cost
    got = value_of(ring.time, N=8, M=2 ** 30, alpha=Fraction(1, 10 ** 6), beta=Fraction(1, 10 ** 11), gamma=0)
    want = Fraction(14, 10 ** 6) + Fraction(7 * 2 ** 28, 10 ** 11)
    assert got == float(want)


def test_arguments_by_cli_name_and_errors():
    ring = algorithm("all_reduce", "ring").cost
    ev = evaluator(ring.beta)
    assert ev.names == ("M", "N")
    assert evaluator(ring.beta) is ev                # cached
    with pytest.raises(ValueError, match="missing N"):
        ev(M=8)
    with pytest.raises(ValueError, match="unknown symbol 'Q'"):
        ev(M=8, N=2, Q=1)
    assert ev(M=8, N=2, Phi=99) == 8                 # other symcomm symbols are ignored


def test_ceil_log2_is_one_function_on_every_path():
    import math

    import sympy as sp
    from sympy.codegen.cfunctions import log2

    from symcomm.numbers.evaluation import exact
    from symcomm.core.printing import render

    def least_k(n):  # hand: the smallest k with 2^k ≥ n
        return next(k for k in range(-80, 200) if Fraction(2) ** k >= n)

    expr = log2_ceil(N)
    assert isinstance(expr, CeilLog2) and not expr.has(sp.ceiling, log2)
    ev = evaluator(M * expr)
    for n in [1, 2, 3, 4, 5, 7, 8, 9, 1023, 1024, 1025, 2 ** 62 + 1, 2 ** 80 - 1, 2 ** 80 + 1]:
        want = least_k(n)
        assert CeilLog2(n) == want and exact(expr, {N: n}) == want
        assert ev(N=n, M=3) == 3 * want and isinstance(ev(N=n, M=3), int)
        if n < 2 ** 53:
            assert ev(N=float(n), M=3.0) == 3 * want
    for q in [Fraction(1, 3), Fraction(5, 2), Fraction(1, 4), Fraction(7, 8)]:
        assert CeilLog2(sp.Rational(q.numerator, q.denominator)) == least_k(q)
    k = sp.Symbol("k", integer=True, nonnegative=True)
    assert CeilLog2(2 ** k) == k and CeilLog2(2 ** (k + 3)) == k + 3     # N = 2^k (proofs)
    assert expr.is_integer and expr.is_nonnegative and CeilLog2(N + 1).is_positive
    assert expr.rewrite(sp.ceiling) == sp.ceiling(log2(N))
    assert math.isclose(float(CeilLog2(sp.Float(5.5))), 3)
    # printed as ceiling(log2(.)) everywhere a person reads it
    assert str(M * expr) == "M*ceiling(log2(N))" and sp.sstr(CeilLog2(N - 1)) == "ceiling(log2(N - 1))"
    assert render(expr, "latex") == r"\left\lceil{\log_2 N}\right\rceil"
    assert render(CeilLog2(N - 1) ** 2, "latex") == r"\left\lceil{\log_2\left(N - 1\right)}\right\rceil^{2}"
    assert render(expr, "python") == "math.ceil(math.log2(N))" and sp.ccode(expr) == "ceil(log2(N))"


# -- the float path against the exact one (hypothesis), scalars against arrays -----------------------

from hypothesis import given, settings, strategies as st  # noqa: E402


def _expressions():
    from symcomm.collectives.algorithms import ALGORITHMS
    from symcomm.training.subjects import subject

    hybrid = subject("hybrid")
    out = {"ring time": algorithm("all_reduce", "ring").cost.time, "hybrid time": hybrid.cost.time,
           "hybrid send": hybrid.cost.send,
           "hybrid zero3 sp time": subject("hybrid", zero="3", framework="fsdp", sp="1", embeddings="1").cost.time}
    for alg in list(ALGORITHMS.values())[::3]:
        out[f"{alg.primitive} {alg.name} time"] = alg.cost.time
    return out


EXPRESSIONS = _expressions()
_WHOLE = {"N": (2, 4096), "M": (1, 2 ** 34), "t": (1, 64), "p": (1, 64), "c": (1, 16), "d": (1, 512), "m": (1, 64),
          "G": (1, 16), "L": (1, 128), "b": (1, 4096), "s": (1, 2 ** 17), "h": (1, 2 ** 15), "Phi": (1, 10 ** 12),
          "V": (1, 2 ** 18), "e": (1, 64), "a": (1, 128), "h_kv": (1, 2 ** 15)}


def _point(draw, names):
    values = {}
    for name in names:
        if name in _WHOLE:
            low, high = _WHOLE[name]
            values[name] = draw(st.integers(low, high))
        elif name == "N" or name.startswith("N"):
            values[name] = draw(st.integers(2, 4096))
        else:                      # α, β, γ: exact fractions, so that the exact path takes them
            values[name] = Fraction(draw(st.integers(1, 10 ** 6)), 10 ** draw(st.integers(6, 16)))
    return values


def _summands_size(expr, values) -> float:
    """Σ |summand| of ``expr``'s outermost sum at ``values``, each summand by the exact path."""
    import sympy as sp

    total = 0.0
    for term in sp.Add.make_args(expr):
        term_ev = evaluator(term)
        total += abs(float(term_ev(exact=True, **{name: values[name] for name in term_ev.names})))
    return total


def _power_of_two_needed(ev, values):
    try:
        ev(exact=True, **values)
        return False
    except ValueError:
        return True


# 60: symcomm's lines are all reached by example 10 (tests/tools/hypothesis_reach.py, 2026-12-02); the compiled
# float and exact code is generated (outside that count): 60 points over the expressions, powers of two and not, α β
# γ across ten decades
@settings(max_examples=60, deadline=None)
@given(data=st.data(), key=st.sampled_from(sorted(EXPRESSIONS)))
def test_float_path_equals_exact_path(data, key):
    ev = evaluator(EXPRESSIONS[key])
    values = _point(data.draw, ev.names)
    if _power_of_two_needed(ev, values):
        values = {k: (1 << (int(v).bit_length() - 1) if isinstance(v, int) else v) for k, v in values.items()}
        if _power_of_two_needed(ev, values):
            return
    exact_value = float(ev(exact=True, **values))
    scalar = ev.float(**values)
    assert isinstance(scalar, float)
    # floats round each summand to ~1e-16 of itself: where the summands cancel (a hierarchical all-reduce whose nodes
    # hold all of its ranks, G ≥ N: the inter-node terms each other's negatives) the float sum is exact only to that
    # much of the summands' own size, not of the sum's
    assert scalar == pytest.approx(exact_value, rel=1e-12, abs=1e-12 * _summands_size(EXPRESSIONS[key], values))
    # the array path, one array argument at a time and all at once, agrees with the scalar path
    for array_names in ([ev.names[0]], list(ev.names)):
        arrays = {k: (np.array([v, v]) if k in array_names and isinstance(v, int) else
                      np.array([float(v)] * 2) if k in array_names else v) for k, v in values.items()}
        got = np.broadcast_to(ev.float(**arrays), (2,))
        np.testing.assert_allclose(got, exact_value, rtol=1e-12, atol=1e-300)


def test_integer_arrays_take_the_float_path_unless_exact():
    ring = algorithm("all_reduce", "ring").cost
    ev = evaluator(ring.beta)
    n, m = np.arange(2, 1002), np.full(1000, 2 ** 30 + 1)
    got = ev(N=n, M=m)                                    # no exact=True: float64
    assert got.dtype == np.float64
    want = ev(N=n, M=m, exact=True)                       # asked for: exact (int or correctly rounded)
    np.testing.assert_array_equal(got, np.asarray(want, dtype=np.float64))
    assert ev.float(N=n, M=m).dtype == np.float64
    # one exact scalar point still stays exact (the CLI's eval)
    assert ev(N=8, M=2 ** 30) == 7 * 2 ** 28 and isinstance(ev(N=8, M=2 ** 30), int)


def test_scalar_code_is_plain_python_and_branches_are_taken_not_selected():
    from symcomm.training.subjects import subject

    ev = evaluator(subject("hybrid").cost.time)
    assert "numpy" not in ev.scalar_source and "select" not in ev.scalar_source
    assert " if " in ev.scalar_source                      # Piecewise: only the branch taken runs
    assert "select" not in ev.source and "numpy.where" in ev.source
    # the ring time as a careful person factors it: (N − 1)·(2α + (2β + γ)·M/N)
    ring = evaluator(algorithm("all_reduce", "ring").cost.time)
    assert ring.source.count("N") <= 3


def test_scalar_edge_cases_fall_back_to_numpy_semantics():
    ring = algorithm("all_reduce", "ring").cost
    with np.errstate(divide="ignore", invalid="ignore"):
        got = evaluator(ring.beta).float(N=0, M=8)        # 1/0: numpy's inf or nan, not ZeroDivisionError
    assert not np.isfinite(got)


def test_scalar_code_tests_each_condition_and_denominator_once_with_the_same_floats():
    # a step model's Piecewise tests G < c·d·p·t in many branches and divides by c·d·t many times: the plain-Python
    # code names each once; the floats must be those of the code that repeats them (bit for bit, every branch)
    import re
    import random

    from symcomm.numbers import codeprint
    from symcomm.training.subjects import subject

    ev = evaluator(subject("hybrid").cost.time)
    exprs, symbols, params = ev._exprs, ev._symbols, ev._params
    source = codeprint.function_source("scalar", exprs, symbols, params, target="math")
    repeated = codeprint._named_source("scalar", exprs, params, codeprint._NamedMathPrinter(
        {sym: str(param) for sym, param in zip(symbols, params)}))
    conditions = re.findall(r"\((G < [^()]*?)\)", repeated)
    assert conditions and any(conditions.count(c) > 1 for c in conditions)     # the old code repeats one
    assert all(source.count(f"({c})") <= 1 for c in set(conditions))
    products = [g for g in codeprint._PRODUCT.findall(repeated) if repeated.count(g) > 1]
    assert products and all(source.count(g) == 0 for g in products)
    new, old = codeprint._compile(source, "scalar"), codeprint._compile(repeated, "scalar")
    rng = random.Random(7)
    for _ in range(300):
        point = [float(rng.choice([1, 2, 3, 4, 8, 16, 64])) if str(p) in "GNtpdce" else rng.uniform(1e-12, 1e3)
                 for p in params]
        assert new(*point) == old(*point)


def test_scalar_code_prints_whole_coefficients_as_floats_with_the_same_floats():
    # an int literal beside a float sends each operation to the generic slot; the code prints it as the float it is
    # converted to (exact below 2**53): the floats must be those of the same code with int literals, bit for bit
    import io
    import random
    import struct
    import tokenize

    import sympy as sp

    from symcomm.numbers import codeprint
    from symcomm.training.subjects import subject

    hybrid = subject("hybrid")
    ev = evaluator(hybrid.cost.time)
    source = codeprint.function_source("scalar", ev._exprs, ev._symbols, ev._params, target="math")
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    floats = [t.string for t in tokens if t.type == tokenize.NUMBER and t.string.endswith(".0")]
    # ints left: a rational's two parts (1/2, folded to its float when compiled) and a zero the printer writes itself
    ints = [i for i, t in enumerate(tokens) if t.type == tokenize.NUMBER and t.string.isdigit() and t.string != "0"]
    assert floats and all(tokens[i + 1].string == "/" or tokens[i - 1].string == "/" for i in ints)
    as_ints = tokenize.untokenize(t._replace(string=t.string[:-2]) if t.string in floats else t for t in tokens)
    new, old = codeprint._compile(source, "scalar"), codeprint._compile(as_ints, "scalar")
    rng = random.Random(11)
    for _ in range(500):
        point = [float(rng.choice([1, 2, 3, 4, 8, 16, 64, 0])) if str(p) in "GNtpdcem" else
                 rng.choice([rng.uniform(1e-12, 1e3), 0.0, 1e300, 2.0 ** 60]) for p in ev._params]
        try:
            want = ("value", struct.pack("d", old(*point)))
        except ArithmeticError as err:
            want = ("refused", type(err))
        try:
            got = ("value", struct.pack("d", new(*point)))
        except ArithmeticError as err:
            got = ("refused", type(err))
        assert got == want, point
    # a whole number no float holds exactly is printed as the int it is
    x = sp.Symbol("x")
    assert str(2 ** 53 + 1) in codeprint.function_source("f", [x * (2 ** 53 + 1)], [x], ("x",), target="math")


def test_scalar_code_computes_a_repeated_sum_or_product_once_where_it_runs_whatever_the_branches():
    # a + - * part met in two places, one of them outside any branch, is computed once before its first line (by
    # hand: a*b is met in x0's first branch and, whatever the branches, in the returned a*b*c); one met only inside
    # branches (u*v) stays where it is, computed only when its branch is taken; the floats are the same bit for bit
    import random
    import struct

    from symcomm.numbers import codeprint

    assigned = [["x0", "(a*b + 1.0 if c > 0.0 else 2.0)"]]
    values = ["a*b*c + (u*v if c > 1.0 else 0.0) + (u*v if c > 2.0 else 1.0)"]
    out, got = codeprint._repeated_arithmetic([list(a) for a in assigned], list(values), iter(["x1", "x2"]))
    assert out[0] == ["x1", "a * b"] and out[1][0] == "x0" and "x1" in out[1][1] and "a * b" not in out[1][1]
    assert "x1" in got[0] and "a * b" not in got[0] and got[0].count("u * v") == 2

    def compiled(lines, returned):
        body = "".join(f"    {temp} = {text}\n" for temp, text in lines)
        return codeprint._compile(f"def f(a, b, c, u, v):\n{body}    return ({returned[0]}, x0)\n", "f")

    new, old = compiled(out, got), compiled(assigned, values)
    rng = random.Random(3)
    for _ in range(200):
        point = [rng.choice([rng.uniform(-1e3, 1e3), 1e300, 3.0, 0.0]) for _ in range(5)]
        assert [struct.pack("d", x) for x in new(*point)] == [struct.pack("d", x) for x in old(*point)]


def test_the_step_models_code_runs_fewer_operations_with_the_same_floats():
    # the step model of the API's bench case (gpt3-175b, selective recomputation): its printed code, and the same
    # printed without computing repeated parts once; bit for bit the same floats or the same refusal, fewer operations
    import ast
    import random
    import struct

    from symcomm.numbers import codeprint
    from symcomm.training import steptime

    ev = steptime._evaluators(2, (("recompute", "selective"),)).evaluator
    source = ev.scalar_source
    keep = codeprint._repeated_arithmetic
    try:
        codeprint._repeated_arithmetic = lambda assigned, values, temps: (assigned, values)
        # the bundle's sums regrouped as its own code has them (merged_branches): only the repeated parts differ
        plain = codeprint.function_source("scalar", ev._exprs, ev._symbols, ev._params, target="math", merge=True)
    finally:
        codeprint._repeated_arithmetic = keep
    operations = [sum(isinstance(n, ast.BinOp) for n in ast.walk(ast.parse(s))) for s in (source, plain)]
    assert operations[0] < operations[1]
    new, old = codeprint._compile(source, "scalar"), codeprint._compile(plain, "scalar")
    rng = random.Random(5)
    for _ in range(300):
        point = [float(rng.choice([1, 2, 3, 4, 8, 16, 64])) if str(p) in ("G", "t", "p", "d", "c", "m", "e") else
                 rng.choice([rng.uniform(1e-12, 1e4), 1e300, 2.0 ** 60]) for p in ev._params]
        outcome = []
        for f in (new, old):
            try:
                outcome.append([struct.pack("d", x) for x in f(*point)])
            except ArithmeticError as err:
                outcome.append(type(err))
        assert outcome[0] == outcome[1], point


def test_a_sums_piecewise_terms_on_the_same_conditions_are_merged_by_hand():
    # by hand: a collective priced on both links is α·(0 if G < t else x) + α_inter·(x if G < t else 0) (the node's
    # link when its group fits on the node): one Piecewise (α_inter·x if G < t else α·x); a sum of such pairs on two
    # conditions spread over α and α_inter (α·(a₁ + a₂) + α_inter·(b₁ + b₂)) merges per condition; a sum that is two
    # other quantities added reads them
    import sympy as sp

    from symcomm.numbers.codeprint import merged_branches

    x, y, G, t, c = sp.symbols("x y G t c", positive=True)
    alpha, alpha_inter, beta = sp.symbols("alpha alpha_inter beta", positive=True)
    pair = alpha * sp.Piecewise((0, G < t), (x, True)) + alpha_inter * sp.Piecewise((x, G < t), (0, True)) + beta * y
    got = merged_branches([pair])[0]
    assert got == sp.Piecewise((alpha_inter * x, G < t), (alpha * x, True)) + beta * y
    assert sp.simplify(sp.piecewise_fold(got - pair)) == 0
    near, far = G < t, G < c * t
    spread = (alpha * (sp.Piecewise((0, near), (x, True)) + sp.Piecewise((0, far), (y, True)))
              + alpha_inter * (sp.Piecewise((x, near), (0, True)) + sp.Piecewise((y, far), (0, True))))
    got = merged_branches([spread])[0]
    assert got == (sp.Piecewise((alpha_inter * x, near), (alpha * x, True))
                   + sp.Piecewise((alpha_inter * y, far), (alpha * y, True)))
    assert sp.simplify(sp.piecewise_fold(got - spread)) == 0
    # a Piecewise no other term shares is left as it is (nothing spread)
    alone = alpha * (sp.Piecewise((0, near), (x, True)) + y) + beta * x
    assert merged_branches([alone])[0] == alone
    # totals: x + y + c·t is (x + y) + c·t, the sum x + y read, not added again
    total, part = x + y + c * t, x + y
    got = merged_branches([total, part, c * t])
    assert got[1] == part and got[0].args == (part, c * t)


def _step_models():
    """The API bench case's step model (gpt3-175b, selective recomputation) and the first MoE one of the generated
    module (by its key's text): (key, evaluator)."""
    from symcomm.training import hybrid_data, steptime

    moe = min((key for key in hybrid_data.STEPS if ("moe", "1") in key[1]), key=repr)
    return [(key, steptime._evaluators(*key).evaluator) for key in ((2, (("recompute", "selective"),)), moe)]


def test_the_step_models_regrouped_sums_are_the_same_numbers_exactly_and_as_floats():
    # merged_branches regroups terms; the value must be the same number: every quantity of the step model at exact
    # points (whole numbers for the integer symbols, fractions for the rest; each branch of G < c·d·t, p = 1 ... met
    # across them), SymPy's own arithmetic on both forms; and the printed floats within the 1e-12 the kernel tests
    # allow (tests/integration/test_codegen.py), the regrouped sums only added in another order
    import random

    import sympy as sp

    from symcomm.core.rewrite import at
    from symcomm.numbers import codeprint

    rng = random.Random(13)
    for key, ev in _step_models():
        regrouped = codeprint.merged_branches(ev._exprs)
        assert len(regrouped) == len(ev._exprs)
        for _ in range(12):
            point = {sym: sp.Integer(rng.choice([1, 2, 3, 4, 8, 16])) if sym.is_integer else
                     sp.Rational(rng.randint(1, 10 ** 6), rng.randint(1, 10 ** 3)) for sym in ev._symbols}
            for before, after in zip(ev._exprs, regrouped):
                want, got = at(before, point), at(after, point)
                assert want.is_Rational and got == want, key
        new = codeprint._compile(codeprint.function_source("scalar", ev._exprs, ev._symbols, ev._params,
                                                           target="math", merge=True), "scalar")
        old = codeprint._compile(codeprint.function_source("scalar", ev._exprs, ev._symbols, ev._params,
                                                           target="math"), "scalar")
        for _ in range(300):
            point = [float(rng.choice([1, 2, 3, 4, 8, 16, 64])) if sym.is_integer else rng.uniform(1e-12, 1e4)
                     for sym in ev._symbols]
            for want, got in zip(old(*point), new(*point)):
                assert got == pytest.approx(want, rel=1e-12, abs=0), (key, point)


def _bench_step() -> tuple:
    """The API bench case's step model key and the point its generated function is called at, as
    :func:`symcomm.training.hybridfast.answer` finds them (recorded on the way, so no key is spelled here)."""
    import types

    from symcomm.base import notes
    from symcomm.tools import bench
    from symcomm.training import hybrid_data, hybridfast

    calls = []

    class Steps(dict):
        def get(self, key, default=None):
            entry = super().get(key, default)
            if entry is None:
                return entry

            def function(*point):
                calls.append((key, point))
                return entry["function"](*point)
            return {**entry, "function": function}

    data = types.SimpleNamespace(**{**vars(hybrid_data), "STEPS": Steps(hybrid_data.STEPS)})
    words = dict(bench._API_HYBRID)
    args = types.SimpleNamespace(name="hybrid", assignments=[f"{k}={v}" for k, v in words.items()
                                                             if k not in ("model", "hardware")],
                                 algorithm=None, dtype=None, backend=None, model=words["model"], model_config=None,
                                 hardware=words["hardware"], json=True)
    with notes.collected():
        hybridfast.answer(args, data)
    (key, point), = calls
    return key, point


def test_the_bench_cases_step_model_runs_a_sixth_fewer_instructions():
    # what merged_branches is for: fewer bytecode instructions run per call of the API's bench case (counted by the
    # interpreter's own opcode trace, not timed); before it, 1,779 on CPython 3.11, after it 1,208.  The overlap
    # slowdown (symcomm.training.overlap.with_slowdown) adds terms it cannot merge to both: 1,812 as printed, 1,463
    # merged
    import sys

    from symcomm.numbers import codeprint
    from symcomm.training import steptime

    key, point = _bench_step()
    ev = steptime._evaluators(*key).evaluator

    def instructions(merge: bool) -> int:
        function = codeprint._compile(codeprint.function_source("scalar", ev._exprs, ev._symbols, ev._params,
                                                                target="math", merge=merge), "scalar")
        count = 0

        def trace(frame, event, arg):
            nonlocal count
            if frame.f_code is function.__code__:
                frame.f_trace_opcodes = True
                count += event == "opcode"
            return trace

        before = sys.gettrace()
        sys.settrace(trace)
        try:
            function(*point)
        finally:
            sys.settrace(before)
        return count

    assert instructions(True) <= 0.85 * instructions(False)


def test_a_bundles_products_print_their_common_factors_first_and_share_them():
    # by hand: 6·β·L·b·h·s and 4·β_inter·L·b·h·s share L·b·h·s; printed most common factors first, the coefficient
    # last, the prefix L*b*h*s is one part computed once (3 multiplications), then ×β×6 and ×β_inter×4 (2 each): 7
    # multiplications where each product alone takes 5; the values are the products (Python multiplies left to right)
    import ast

    import sympy as sp

    from symcomm.numbers import codeprint

    L, b, h, s, beta, beta_inter = sp.symbols("L b h s beta beta_inter", positive=True)
    exprs = [6 * beta * L * b * h * s, 4 * beta_inter * L * b * h * s]
    symbols = (L, b, beta, beta_inter, h, s)
    params = tuple(str(x) for x in symbols)
    merged = codeprint.function_source("f", exprs, symbols, params, target="math", merge=True)
    plain = codeprint.function_source("f", exprs, symbols, params, target="math")
    products = [sum(isinstance(n, ast.BinOp) for n in ast.walk(ast.parse(x))) for x in (merged, plain)]
    assert products == [7, 10], merged
    point = (96.0, 64.0, 1e-11 / 3, 8e-11, 12288.0, 2048.0)
    got = codeprint._compile(merged, "f")(*point)
    want = (96.0 * 64.0 * 12288.0 * 2048.0 * (1e-11 / 3) * 6.0, 96.0 * 64.0 * 12288.0 * 2048.0 * 8e-11 * 4.0)
    assert got == want


def test_a_sums_common_factor_is_taken_out_and_the_sum_shared_by_hand():
    # by hand: 4a + 4b + 8c and 2a + 2b + 4c are 4·(a + b + 2c) and 2·(a + b + 2c) (the step model's backward and
    # forward): the sum a + b + 2c once (2 additions, 1 multiplication), then ×4 and ×2: 5 operations where each
    # sum alone takes 5; a power of two scales exactly, so the floats are those of the sums as written
    import ast

    import sympy as sp

    from symcomm.numbers import codeprint

    a, b, c = sp.symbols("a b c", positive=True)
    exprs = [4 * a + 4 * b + 8 * c, 2 * a + 2 * b + 4 * c]
    got = codeprint.merged_branches(exprs)
    assert [sp.expand(g - e) for g, e in zip(got, exprs)] == [0, 0]
    merged = codeprint.function_source("f", exprs, (a, b, c), ("a", "b", "c"), target="math", merge=True)
    plain = codeprint.function_source("f", exprs, (a, b, c), ("a", "b", "c"), target="math")
    assert [sum(isinstance(n, ast.BinOp) for n in ast.walk(ast.parse(x))) for x in (merged, plain)] == [5, 10], merged
    point = (0.1, 0.7, 1e-3)
    assert codeprint._compile(merged, "f")(*point) == (4 * 0.1 + 4 * 0.7 + 8 * 1e-3, 2 * 0.1 + 2 * 0.7 + 4 * 1e-3)
