"""The printers' process-wide memos (issue 25, the docs build): each subexpression printed once per process and
settings, in LaTeX and in MathML, must print exactly what SymPy's printer prints without it, in every context a
part is printed in (a power of log₂ passes ``exp`` to the part it raises); each sum factor_terms gathers, gathered
once, must leave factor_terms' form as it is."""

from __future__ import annotations

import re

import sympy as sp
from sympy.printing.latex import LatexPrinter
from sympy.printing.mathml import MathMLPresentationPrinter

from symcomm.core import symbols as S
from symcomm.core.printing import SymcommLatexPrinter, SymcommMathMLPrinter, latex, pulled


class _Unremembered(SymcommLatexPrinter):
    """The same printer with the memo bypassed: every part printed by SymPy again."""

    def _print(self, expr, **kwargs):
        return LatexPrinter._print(self, expr, **kwargs)


def test_log2_alone_then_raised_prints_each_form():
    # log₂N printed first alone, then squared: the squared form is \left(\log_2 N\right)^{2} (the exponent is
    # the printer's keyword argument, so a memo keyed on the expression alone would print \log_2 N^{2} or the like)
    assert latex(S.log2(S.N) + S.M) == r"M + \log_2 N"
    assert latex(S.log2(S.N) ** 2) == r"\left(\log_2 N\right)^{2}"
    assert latex(S.alpha * S.log2(S.N) ** 2) == r"\alpha \left(\log_2 N\right)^{2}"


def test_ring_all_reduce_send_in_the_papers_form():
    # 2(N−1)/N·M elements from the busiest rank (Patarasuk & Yuan 2009, §2), numeric factor pulled out
    assert latex(2 * S.M * (S.N - 1) / S.N) == r"\frac{2 M \left(N - 1\right)}{N}"


def test_memoized_printer_equals_sympys_on_the_catalog_and_the_step_model():
    from symcomm.views.export import formulas

    chosen = [f for f in formulas() if f.subject in ("all_reduce__ring", "all_reduce__rabenseifner_fold",
                                                       "broadcast__binomial_tree", "reduce__ring_segmented")
              or f.subject.startswith("hybrid")][:60]
    assert len(chosen) >= 20
    for settings in ({"mul_symbol": None}, {"mul_symbol": None, "order": "rev-lex"}):
        for f in chosen:
            expr = f.expr if settings.get("order") else pulled(f.expr)
            # printed twice through the memo (the second time every part is remembered), once without it
            once = SymcommLatexPrinter(dict(settings)).doprint(expr)
            again = SymcommLatexPrinter(dict(settings)).doprint(expr)
            plain = _Unremembered(dict(settings)).doprint(expr)
            assert once == again == plain, (f.name, settings)


class _UnrememberedMathML(SymcommMathMLPrinter):
    """The MathML printer with its memo bypassed: every part printed by SymPy again, as DOM nodes."""

    def _print(self, expr, **kwargs):
        return MathMLPresentationPrinter._print(self, expr, **kwargs)


def test_memoized_mathml_equals_sympys_on_the_catalog_and_the_step_model():
    # the memo hands a remembered part to its parent as its text: the page's MathML must stay what SymPy's printer
    # writes, for cases (Piecewise, relations), fractions, powers and ⌈log₂N⌉ alike
    from symcomm.views.export import formulas

    chosen = [f for f in formulas() if f.quantity in ("time", "send") and (
        f.subject in ("all_reduce__ring", "all_reduce__rabenseifner_fold", "broadcast__binomial_tree",
                      "reduce__ring_segmented") or f.subject.startswith("hybrid"))][:40]
    assert len(chosen) >= 10 and any(f.expr.has(sp.Piecewise) for f in chosen)
    for f in chosen:
        expr = f.expr if f.expr.has(sp.Piecewise) else pulled(f.expr)
        once = SymcommMathMLPrinter({"mul_symbol": None}).doprint(expr)
        again = SymcommMathMLPrinter({"mul_symbol": None}).doprint(expr)
        plain = _UnrememberedMathML({"mul_symbol": None}).doprint(expr)
        assert once == again == plain, f.name
    # a part printed first inside one formula, then alone and inside another: the same text each time
    part = sp.Piecewise((S.M, S.N < 4), (2 * S.M, True))
    for expr in (S.alpha * part + S.beta, part, S.log2_ceil(S.N) * part / S.N):
        assert (SymcommMathMLPrinter({"mul_symbol": None}).doprint(expr)
                == _UnrememberedMathML({"mul_symbol": None}).doprint(expr))


def test_pulled_is_factor_terms():
    expr = 2 * S.M * S.N - 2 * S.M + 4 * sp.Max(S.N, 2) * S.M
    assert pulled(expr) == sp.factor_terms(expr)
    assert pulled(expr) is pulled(expr)           # computed once, the same object handed back


def test_pulled_with_sums_gathered_once_is_factor_terms_on_the_catalog():
    # pulled gathers each sum once per process (a memo of SymPy's gcd_terms while factor_terms runs): on formulas
    # sharing their sums (the hybrid variants, a time holding its send), the same form as factor_terms alone
    from sympy.core import exprtools

    from symcomm.core import printing
    from symcomm.views.export import formulas

    chosen = [f.expr for f in formulas() if not f.expr.has(sp.Piecewise) and (
        f.subject.startswith(("hybrid", "zero3", "all_reduce__")))][:60]
    assert len(chosen) >= 20
    for expr in chosen:
        assert pulled(expr) == sp.factor_terms(expr)
    assert exprtools.gcd_terms is printing._GCD_TERMS          # SymPy's own again once pulled returns
    assert printing._GATHERED                                   # and the sums were gathered through the memo


def test_a_script_on_shared_helpers_takes_exactly_the_helpers_its_code_names():
    from symcomm.views.export import select
    from symcomm.views.export.javascript import HELPER_NAMES, to_script

    chosen = select(["all_reduce__ring", "all_reduce__recursive_doubling", "broadcast__binomial_tree"])
    script = to_script(chosen, helpers="H")
    taken = re.search(r"^const \{([^}]*)\} = globalThis\[\"H\"\];$", script, re.M)
    assert taken is not None
    body = script[taken.end():]
    # the definition: a helper is used when its name stands in the functions' code as a whole identifier
    # (no identifier character, letter, digit, _ or $, on either side)
    wanted = [name for name in HELPER_NAMES if re.search(rf"(?<![\w$]){re.escape(name)}(?![\w$])", body)]
    assert taken.group(1).split(", ") == wanted
    assert "_need" in wanted and len(wanted) < len(HELPER_NAMES)


# -- SymPy's is_constant, answered at once for plainly varying exponents while the LaTeX printer prints ----------

def test_plainly_varying_exponents_are_the_ones_sympy_finds_not_constant():
    from symcomm.core import printing

    x = sp.Symbol("x")                       # no assumptions: is_constant still False (x = 0 and x = 1 differ)
    varying = [-S.N, S.N, 3 * S.M + 2, sp.Rational(-1, 2) * x, -S.CeilLog2(S.N + 1), -S.CeilLog2(S.N),
               -2 * S.CeilLog2(S.N + 3) + 1]
    for expr in varying:
        assert printing._plainly_varying(expr), expr
        assert printing._IS_CONSTANT(expr) is False, expr       # SymPy's own answer, the long way
    # not known so cheaply (constant ones among them): left to SymPy
    unknown = [sp.Integer(3), S.N * S.M, S.CeilLog2(x), sp.cos(x) ** 2 + sp.sin(x) ** 2, S.log2(S.N), 0 * S.N]
    assert not [expr for expr in unknown if printing._plainly_varying(expr)]


def test_latex_with_the_constancy_shortcut_is_sympys():
    from sympy.core.expr import Expr

    from symcomm.core import printing

    asked = []
    shortcut = printing._is_constant_shortcut

    def counting(self, *wrt, **flags):
        asked.append(self)
        return shortcut(self, *wrt, **flags)

    # negative exponents other than −1: SymPy's _print_Mul asks is_constant of each (fraction(term, exact=True))
    ell = sp.Symbol("ell", integer=True, positive=True)
    exprs = [S.M * 2 ** (-S.CeilLog2(S.N + 1)), S.M * S.N ** (-ell) + S.alpha, S.M / S.N ** 2 * 2 ** (-S.N)]
    for settings in ({"mul_symbol": None}, {"mul_symbol": None, "order": "rev-lex"}):
        for expr in exprs:
            plain = _Unremembered(dict(settings)).doprint(expr)
            try:
                printing._is_constant_shortcut = counting
                with printing._constancy_shortcut():
                    assert Expr.is_constant is counting
                    short = _Unremembered(dict(settings)).doprint(expr)
            finally:
                printing._is_constant_shortcut = shortcut
            assert short == plain, expr
            assert Expr.is_constant is printing._IS_CONSTANT      # undone after the print
    assert asked and all(printing._plainly_varying(e) for e in asked)
