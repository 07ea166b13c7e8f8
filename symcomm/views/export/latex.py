"""``--format latex``: a standalone LaTeX document, one table per subject (pdflatex).

Formulas go through :func:`symcomm.core.printing.render` like every other view; prose is
escaped with :func:`symcomm.core.printing.tex_text`.  The page is the template
``formulas.tex.j2`` of :data:`symcomm.views.export.TEMPLATES`.
"""

from __future__ import annotations

from . import Format, Formula, grouped, template
from ...core.printing import tex_text


def to_latex(chosen: list[Formula]) -> str:
    groups = grouped(chosen)
    for g in groups:
        for key in ("title", "summary", "source", "convention"):
            g[key] = tex_text(g[key])
        g["requires"] = [tex_text(r) for r in g["requires"]]
        g["options"] = [tex_text(o) for o in g["options"]]
        g["subject"] = tex_text(g["subject"])
        for row in g["rows"]:
            row["name"] = tex_text(row["name"])
            row["quantity"] = tex_text(row["quantity"])
            row["meaning"] = tex_text(row["meaning"])
    return template("formulas.tex.j2").render(groups=groups)


FORMAT = Format(name="latex", order=10, render=to_latex, description="a LaTeX document, one table per subject")
