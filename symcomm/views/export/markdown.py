"""``--format markdown``: one Markdown table per subject, formulas as ``$...$`` LaTeX.

Table cells are escaped with :func:`symcomm.core.printing.markdown_cell`.  The page is the
template ``formulas.md.j2`` of :data:`symcomm.views.export.TEMPLATES`.
"""

from __future__ import annotations

from . import Format, Formula, grouped, template
from ...core.printing import markdown_cell


def to_markdown(chosen: list[Formula]) -> str:
    groups = grouped(chosen)
    for g in groups:
        for key in ("title", "summary", "source", "convention"):
            g[key] = markdown_cell(g[key])
        for row in g["rows"]:
            row["latex"] = markdown_cell(row["latex"])
            row["meaning"] = markdown_cell(row["meaning"])
    return template("formulas.md.j2").render(groups=groups)


FORMAT = Format(name="markdown", order=20, render=to_markdown,
                description="Markdown tables, one per subject, formulas as $LaTeX$")
