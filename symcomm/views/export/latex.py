"""``--format latex``: a standalone LaTeX document, one table per subject (pdflatex).

Formulas go through :func:`symcomm.core.printing.render` like every other view; prose is
escaped with :func:`symcomm.core.printing.tex_text`.  The page is the template
``formulas.tex.j2`` of :data:`symcomm.views.export.TEMPLATES`.
"""

from __future__ import annotations

from . import Format, Formula, grouped, template
from ...core.printing import latex_lines, tex_text

#: the widest line of a formula, in visible characters: TeX refuses a box wider than 16,384 pt, about 3,000 such
#: characters of display math, so a longer sum is set as several lines, each scaled to the page on its own
#: (the hybrid's MoE step time is 19,000 characters of LaTeX)
LINE = 1500


def to_latex(chosen: list[Formula]) -> str:
    groups = grouped(chosen)
    lines = {(f.subject, f.name): latex_lines(f.expr, LINE) if len(f.latex) > LINE else [f.latex] for f in chosen}
    for g in groups:
        for row in g["rows"]:
            row["lines"] = lines[g["subject"], row["name"]]
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
