"""The catalog's closed forms as SymPy holds them (symcomm.collectives.algorithms)."""

from __future__ import annotations

import sympy as sp

from symcomm.collectives.algorithms import ALGORITHMS


def _parts(cost):
    parts = [cost.others.send, cost.others.recv, cost.total] + [coef for _, coef in cost.coefficients]
    if cost.root is not None:
        parts += [cost.root.send, cost.root.recv]
    return parts


def test_every_min_and_max_of_the_catalog_is_its_own_evaluation():
    # some are built without SymPy's evaluation (algorithms._kept: it compares every pair of arguments again, to
    # change nothing); each must be exactly what SymPy's evaluation makes of its arguments, tree for tree, so that
    # every formula, claim and page is the one an evaluated construction gives
    seen = {}
    for alg in ALGORITHMS.values():
        if alg.closed_form is None:
            continue
        for part in _parts(alg.closed_form):
            for node in sp.preorder_traversal(sp.sympify(part)):
                if isinstance(node, (sp.Min, sp.Max)):
                    seen.setdefault(node, alg.key)
    # gloo's segmented ring reduce alone has its segment's Min, the per-rank Max and the chunks' Min and Max
    assert sum(key == ("reduce", "ring_segmented") for key in seen.values()) >= 5
    for node, key in seen.items():
        evaluated = node.func(*node.args)
        assert sp.srepr(evaluated) == sp.srepr(node), f"{key}: {node} evaluates to {evaluated}"


def test_every_composed_field_is_factored_as_cancelled_first():
    # a composition's fields are tidied by sympy.factor alone (core.cost._tidied); factoring after cancel, as before,
    # must give the same tree for every composition of the catalog, so every formula, claim and page is unchanged
    from symcomm.core.cost import Cost, _tidied

    composed = [alg for alg in ALGORITHMS.values() if alg.closed_form is None]
    assert len(composed) >= 10
    for alg in composed:
        for part in _parts(Cost.sum(phase.cost for phase in alg.phases)):
            part = sp.sympify(part)
            assert sp.srepr(_tidied(part)) == sp.srepr(sp.factor(sp.cancel(part))), f"{alg.key}: {part}"
