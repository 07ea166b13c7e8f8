"""The core's tree walks that visit each distinct subtree once (symcomm.core.rewrite)."""

from __future__ import annotations

import sympy as sp

from symcomm.core.rewrite import free_symbols


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


def test_a_bound_variable_is_not_free():
    # a class that defines free_symbols itself answers it: x is bound in the integral and the lambda, y is free
    x, y = sp.symbols("x y")
    assert free_symbols(sp.Integral(x * y, (x, 0, 1)) + 1) == {y}
    assert free_symbols(sp.Lambda(x, x + y)) == {y}
    assert free_symbols(sp.Integer(3)) == frozenset()
