"""Render expressions for people and for code: one function per output format.

SymPy's printers do the work; this module only chooses the printer by format name so
that the CLI, the templates and the exporters agree.
"""

from __future__ import annotations

import sympy as sp

FORMATS = ("text", "latex", "markdown", "python")


def render(expr, fmt: str = "text") -> str:
    expr = sp.sympify(expr)
    if fmt == "text":
        return sp.sstr(expr)
    if fmt == "latex":
        return sp.latex(expr)
    if fmt == "markdown":
        return f"${sp.latex(expr)}$"
    if fmt == "python":
        return sp.pycode(expr)
    raise ValueError(f"--format {fmt!r} is not allowed; choose one of {', '.join(FORMATS)}")
