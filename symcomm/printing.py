"""Render expressions for people and for code: one function per output format.

SymPy's printers do the work.  The LaTeX printer is SymPy's, taught two things that
its default gets wrong for this subject: log₂N prints as \\log_2 N, and symbols print
in the seed's notation (Φ, α_inter...).  Everything that shows a formula — the CLI,
the templates, the exporters — goes through :func:`render`.
"""

from __future__ import annotations

import sympy as sp
from sympy.printing.latex import LatexPrinter

FORMATS = ("text", "latex", "markdown", "python")


class SymcommLatexPrinter(LatexPrinter):
    """SymPy's LaTeX printer with log₂ written the way papers write it."""

    def _print_Integer(self, expr):
        # 300647710720 → 300\,647\,710\,720: digits grouped in threes, as tables print them
        text = str(abs(int(expr)))
        if len(text) <= 5:
            return str(expr)
        groups = [text[max(0, i - 3):i] for i in range(len(text), 0, -3)][::-1]
        return ("-" if expr < 0 else "") + r"\,".join(groups)

    def _print_log2(self, expr, exp=None):
        arg = expr.args[0]
        inner = self._print(arg)
        body = rf"\log_2 {inner}" if arg.is_Symbol else rf"\log_2\left({inner}\right)"
        return rf"\left({body}\right)^{{{exp}}}" if exp else body


def latex(expr, pull_factors: bool = True) -> str:
    """LaTeX in the papers' shape: numeric factors pulled out, 2M(N−1)/N not M(2N−2)/N
    (``pull_factors=False`` prints a sum as it stands, leading term first: 2N/G − 2)."""
    expr = sp.sympify(expr)
    if pull_factors and not expr.has(sp.Piecewise):
        expr = sp.factor_terms(expr)
        return SymcommLatexPrinter({"mul_symbol": None}).doprint(expr)
    return SymcommLatexPrinter({"mul_symbol": None, "order": "rev-lex"}).doprint(expr)


def render(expr, fmt: str = "text") -> str:
    expr = sp.sympify(expr)
    if fmt == "text":
        return sp.sstr(expr)
    if fmt == "latex":
        return latex(expr)
    if fmt == "markdown":
        return f"${latex(expr)}$"
    if fmt == "python":
        return sp.pycode(expr)
    raise ValueError(f"--format {fmt!r} is not allowed; choose one of {', '.join(FORMATS)}")
