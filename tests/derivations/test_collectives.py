"""The collectives chapter's own rewrites."""

import sympy as sp

from symcomm.derivations import collectives as chapter


def test_the_filled_forms_are_the_trees_sympy_evaluates():
    # _filled leaves each rebuilt Min and Max as it stands (SymPy's comparisons cost a tenth of a second there):
    # the claims' sides must still be exactly what xreplace, which evaluates every Min and Max, gives
    sides = [*chapter._by_role(chapter._segmented).values(), *chapter._by_role(chapter._EVEN).values(),
             chapter._ring_gather.others.send]
    for side in sides:
        evaluated = sp.sympify(side).xreplace({chapter._SEGMENT: chapter.S.K}).xreplace({chapter.M: chapter._filled_M})
        assert chapter._filled(side) == evaluated, side


def test_every_excess_over_a_lower_bound_reads_as_factored_after_cancel():
    # optimality_claims names each excess by sympy.factor alone: it must be the tree factor(cancel(x)) gives, so that
    # every claim's name (printed by `symcomm prove` and in the docs) is the one it was
    excluded = (chapter._FOLD, chapter._RD_FOLD, chapter._REDUCE_FOLD, chapter._SEGMENTED)
    names = {claim.name for claim in chapter.CHAPTER.claims}
    checked = 0
    for alg in chapter.ALGORITHMS.values():
        if alg.key in excluded:
            continue
        bound, _ = chapter.LOWER_BOUNDS[alg.primitive]
        for claim in chapter.optimality_claims(alg):
            assert claim.name in names
        for _, word, sym in chapter._TERMS:
            got, want = alg.cost.coefficient(sym), bound.coefficient(sym)
            if sym in chapter.S.INTER_NODE and alg.cost.coefficient(chapter.S.INTER_NODE[sym]) != 0:
                got = got + alg.cost.coefficient(chapter.S.INTER_NODE[sym])
            if chapter.POW2 in alg.requires:
                want = want.subs(chapter.S.log2_ceil(chapter.N), chapter.S.log2(chapter.N))
            if got != want:
                assert sp.srepr(sp.factor(got - want)) == sp.srepr(sp.factor(sp.cancel(got - want))), (alg.key, word)
                checked += 1
    assert checked >= 40
