"""The core's tree walks that visit each distinct subtree once (symcomm.core.rewrite)."""

from __future__ import annotations

import pytest
import sympy as sp

from symcomm.core.rewrite import at, free_symbols


def test_free_symbols_of_a_shared_tree_are_sympys():
    # e_k = Max(e_{k-1} + a, e_{k-1}·b): 2^k leaves of x reached through k distinct Max nodes; by construction its
    # free symbols are x, a and b (each is used), the same set SymPy's own walk of the whole tree finds
    x, a, b = sp.symbols("x a b", positive=True)
    e = x
    for _ in range(12):
        e = sp.Max(e + a, e * b, evaluate=False)
    assert free_symbols(e) == {x, a, b} == e.free_symbols
    # a Piecewise's conditions count too: y appears only in one
    y = sp.Symbol("y")
    assert free_symbols(sp.Piecewise((x, y > 1), (a, True))) == {x, y, a}


def test_free_symbols_share_subtrees_across_expressions_and_stay_right_when_the_memo_empties(monkeypatch):
    # expressions sharing a subtree (as the step model's quantities share the step time) are walked through one memo;
    # with the memo's bound at 3 entries it is emptied between walks.  Each answer must still be SymPy's own set:
    # s = Max(x + a, y·b) is shared; s/z and s + w and s alone have {x, a, y, b} plus z, w, nothing (by hand)
    from symcomm.core import rewrite

    x, a, y, b, z, w = sp.symbols("x a y b z w", positive=True)
    shared = sp.Max(x + a, y * b)
    for bound in (3, 10**6):
        monkeypatch.setattr(rewrite, "_SUBTREES_MAX", bound)
        rewrite._SUBTREES.clear()
        rewrite.free_symbols.cache_clear()
        for expr, want in ((shared / z, {x, a, y, b, z}), (shared + w, {x, a, y, b, w}), (shared, {x, a, y, b})):
            assert free_symbols(expr) == want == expr.free_symbols


def test_a_bound_variable_is_not_free():
    # a class that defines free_symbols itself answers it: x is bound in the integral and the lambda, y is free
    x, y = sp.symbols("x y")
    assert free_symbols(sp.Integral(x * y, (x, 0, 1)) + 1) == {y}
    assert free_symbols(sp.Lambda(x, x + y)) == {y}
    assert free_symbols(sp.Integer(3)) == frozenset()


def test_at_is_subs_with_numbers_and_refuses_anything_else():
    # gloo's segment min(⌈M/(2N)⌉, K) and the segments per rank ⌈max(⌈M/segment⌉, 2N)/N⌉ (gloo/reduce.cc), by hand
    # at M = 1000, N = 4, K = 50: segment min(125, 50) = 50, ⌈max(20, 8)/4⌉ = 5, and 5·50 = 250
    n, m, k = sp.symbols("N M K", integer=True, positive=True)
    segment = sp.Min(sp.ceiling(m / (2 * n)), k)
    per_rank = sp.ceiling(sp.Max(sp.ceiling(m / segment), 2 * n) / n)
    values = {n: 4, m: 1000, k: 50}
    assert at(per_rank * segment, values) == 250 == (per_rank * segment).subs(values)
    # part of the symbols: what is left is SymPy's own subs result, tree for tree
    partial = {n: 4, k: 50}
    assert sp.srepr(at(per_rank * segment, partial)) == sp.srepr((per_rank * segment).subs(partial))
    with pytest.raises(TypeError):
        at(segment, {n: k})              # a symbol for a symbol: sequential and simultaneous may differ
    with pytest.raises(TypeError):
        at(segment, {m / n: 3})          # not a symbol
