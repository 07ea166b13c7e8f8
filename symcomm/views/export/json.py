"""``--format json``: plain data with a JSON Schema (``symcomm/schema/formulas.schema.json``).

**format_version 2.**  Each formula carries its expression as ``tree``: plain JSON data
(operator nodes ``{"op": "Add", "args": [...]}``, leaves ``{"symbol": "N"}``,
``{"integer": "-1"}``, ``{"rational": "1/2"}``; the format is documented in
:mod:`symcomm.core.exprtree`).  Load it with :func:`symcomm.core.exprtree.from_tree`, which rebuilds
the SymPy expression from a whitelist of node types and symbols without evaluating any
text, or walk it with any JSON parser.  ``srepr`` (SymPy source text, with the names
``srepr_namespace`` lists), ``text`` and ``latex`` are for display and for *trusted input
only*: ``eval()`` or ``sympify()`` of text runs arbitrary code, so never eval() text from
a file you did not produce yourself; load ``tree`` instead.
"""

from __future__ import annotations

import json

import sympy as sp

from . import QUANTITIES, Format, Formula
from ...core.exprtree import to_tree


def srepr_namespace(exprs) -> dict[str, str]:
    """Names the ``srepr`` of ``exprs`` uses that ``from sympy import *`` does not provide
    (``log2``, ``ExprCondPair``...), mapped to their import paths.

    For reading back a file you produced yourself (trusted input only); a formula from any
    other file is loaded from its ``tree`` with :func:`symcomm.core.exprtree.from_tree`."""
    out = {}
    for expr in exprs:
        for node in sp.preorder_traversal(expr):
            cls = type(node)
            name = cls.__name__
            if name not in out and getattr(sp, name, None) is not cls and not node.is_Atom:
                out[name] = f"{cls.__module__}.{cls.__qualname__}"
    return dict(sorted(out.items()))


def _assumptions(sym: sp.Symbol) -> dict[str, bool]:
    keys = ("integer", "real", "positive", "nonnegative")
    return {key: bool(getattr(sym, f"is_{key}")) for key in keys}


def to_data(chosen: list[Formula]) -> dict:
    """The JSON document as Python data (what ``--format json`` prints).

    ``tree`` is the expression to load (:func:`symcomm.core.exprtree.from_tree`, no code is
    evaluated); ``srepr`` is SymPy source text for trusted input only (see the module
    docstring)."""
    records = []
    for f in chosen:
        records.append({
            "name": f.name,
            "kind": f.kind,
            "subject": f.subject,
            "primitive": f.owner if f.kind == "primitive" else None,
            "strategy": f.owner if f.kind == "strategy" else None,
            "algorithm": f.algorithm,
            "options": dict(f.options),
            "quantity": f.quantity,
            "meaning": QUANTITIES.get(f.quantity, ""),
            "title": f.title,
            "parameters": [{"name": info.cli_name, "symbol": info.symbol.name, "meaning": info.meaning,
                            "unit": info.unit, "assumptions": _assumptions(info.symbol)}
                           for info in f.parameters],
            "requires": list(f.requires),
            "tree": to_tree(f.expr),
            "srepr": sp.srepr(f.expr),
            "latex": f.latex,
            "text": sp.sstr(f.expr),
            "convention": f.convention,
            "source": f.source,
        })
    return {
        "generator": __name__.split(".")[0],
        "format_version": 2,
        "srepr_namespace": srepr_namespace(f.expr for f in chosen),
        "formulas": records,
    }


def to_json(chosen: list[Formula]) -> str:
    return json.dumps(to_data(chosen), indent=2, ensure_ascii=False) + "\n"


FORMAT = Format(name="json", order=50, render=to_json,
                description="plain data with a JSON Schema; each expression as a JSON tree (symcomm.core.exprtree)")
