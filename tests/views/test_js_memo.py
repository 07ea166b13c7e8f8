"""The JavaScript printers' process-wide memo (issue 25, the docs build's CPU time): each subexpression and each
whole expression printed once per process must print exactly what the printers print without it."""

from __future__ import annotations

import sympy as sp
from sympy.printing.jscode import JavascriptCodePrinter

from symcomm.core import symbols as S
from symcomm.views.export import formulas
from symcomm.views.export import javascript as js


class _PlainExact(js.ExactJavascriptPrinter):
    # SymPy's own doprint, with its pass unwrapping re(UnevaluatedExpr) the module's printers skip
    _handle_UnevaluatedExpr = JavascriptCodePrinter._handle_UnevaluatedExpr

    def _print(self, expr, **kwargs):
        return JavascriptCodePrinter._print(self, expr, **kwargs)

    def doprint(self, expr, assign_to=None):
        return JavascriptCodePrinter.doprint(self, expr, assign_to)


class _PlainFloat(js.FloatJavascriptPrinter):
    _handle_UnevaluatedExpr = JavascriptCodePrinter._handle_UnevaluatedExpr

    def _print(self, expr, **kwargs):
        return self._printed(expr, **kwargs)

    def doprint(self, expr, assign_to=None):
        return JavascriptCodePrinter.doprint(self, expr, assign_to)


def test_memoized_code_equals_the_printers_own():
    chosen = [f for f in formulas() if f.subject in ("all_reduce__ring", "all_reduce__rabenseifner_fold",
                                                       "broadcast__binomial_tree", "reduce__ring_segmented")
              or f.subject.startswith("hybrid")][:80]
    assert len(chosen) >= 20 and any(f.expr.has(sp.Piecewise) for f in chosen)
    plain_exact = _PlainExact()
    plain_float = _PlainFloat(plain_exact)
    for _ in range(2):            # the second pass reads every part from the memo
        exact = js.ExactJavascriptPrinter()
        floats = js.FloatJavascriptPrinter(exact)
        for f in chosen:
            assert js._function(f, exact, floats) == js._function(f, plain_exact, plain_float), f.name


def test_a_part_printed_inside_a_sum_then_alone_prints_the_same():
    part = sp.Max(S.N - 1, 2 * S.M / S.N)
    exact = js.ExactJavascriptPrinter()
    inside = exact.doprint(S.alpha + part)
    alone = exact.doprint(part)
    assert alone == _PlainExact().doprint(part) and alone in inside
    floats = js.FloatJavascriptPrinter(exact)
    assert floats.doprint(S.alpha * part) == _PlainFloat(_PlainExact()).doprint(S.alpha * part)


def test_no_exported_formula_holds_what_the_skipped_pass_rewrites():
    """The printers skip CodePrinter.doprint's pass that unwraps re(UnevaluatedExpr(x)) for a real x: no formula of
    the export (every subject, every quantity; the page prints the same costs in bytes) holds either."""
    every = formulas()
    assert len(every) > 500
    held = [f.name for f in every if f.expr.has(sp.re) or f.expr.has(sp.UnevaluatedExpr)]
    assert not held, held
    # the pass itself, on the one shape it rewrites: what the printers would print differently
    x = sp.Symbol("x", real=True)
    wrapped = sp.re(sp.UnevaluatedExpr(x))
    assert JavascriptCodePrinter()._handle_UnevaluatedExpr(wrapped) != wrapped
    assert js.ExactJavascriptPrinter()._handle_UnevaluatedExpr(wrapped) == wrapped
