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
