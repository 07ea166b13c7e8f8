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
import re

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
    return _document(chosen, to_tree)


def _document(chosen: list[Formula], tree_of) -> dict:
    """The document, each record's ``tree`` given by ``tree_of(expr)``.

    Each distinct expression is printed once: the formulas repeat expressions (the full export's
    formulas hold about a third as many distinct ones; a strategy's variants share most quantities), and SymPy's
    ``srepr`` and ``sstr`` of the same expression are the same text."""
    printed: dict[sp.Expr, tuple[str, str]] = {}
    records = []
    for f in chosen:
        if f.expr not in printed:
            printed[f.expr] = sp.srepr(f.expr), sp.sstr(f.expr)
        srepr, text = printed[f.expr]
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
                            "unit": info.unit, "assumptions": _assumptions(info.symbol), "least": f.least_of(info)}
                           for info in f.parameters],
            "requires": list(f.requires),
            "tree": tree_of(f.expr),
            "srepr": srepr,
            "latex": f.latex,
            "text": text,
            "convention": f.convention,
            "source": f.source,
        })
    return {
        "generator": __name__.split(".")[0],
        "format_version": 2,
        "arguments": ARGUMENT_RULE,
        "srepr_namespace": srepr_namespace(f.expr for f in chosen),
        "formulas": records,
    }


#: the rule every argument follows (symcomm.base.inputs, as eval bounds a value), said in the document: a reader of the
#: data refuses what eval refuses (each parameter's own least is its record's ``least``)
ARGUMENT_RULE = ("every argument finite, at least its parameter's least (N >= 2 for a collective), at most 2**100, whole "
                 "for an integer symbol, and zero or at least 1e-30; and the formula's requires met (its rules between "
                 "arguments, in symcomm eval's words)")

#: where a record's tree sits in the indented document: document → "formulas" → record → "tree"
_TREE_INDENT = "\n" + " " * 6
_SLOT = re.compile(r'"\\u0000tree (\d+)"')


def to_json(chosen: list[Formula]) -> str:
    """``json.dumps(to_data(chosen), indent=2, ensure_ascii=False)``, byte for byte, faster.

    The indenting encoder is json's pure-Python one (its C encoder indents nothing), and most of
    the document is trees, a repeated expression's tree the same text each time: each record holds
    a slot string (``"\\u0000tree <n>"``, NUL never appears in a formula's text) and each distinct
    tree is encoded once, indented to its depth, and put in its slots."""
    slots: dict[sp.Expr, str] = {}
    trees: list[str] = []

    def slot(expr) -> str:
        if expr not in slots:
            slots[expr] = f"\0tree {len(trees)}"
            trees.append(json.dumps(to_tree(expr), indent=2, ensure_ascii=False).replace("\n", _TREE_INDENT))
        return slots[expr]

    skeleton = json.dumps(_document(chosen, slot), indent=2, ensure_ascii=False)
    text, filled = _SLOT.subn(lambda match: trees[int(match.group(1))], skeleton)
    if filled != len(chosen):   # a text field that looked like a slot: never silently wrong bytes
        raise RuntimeError(f"the JSON export filled {filled} tree slots for {len(chosen)} formulas")
    return text + "\n"


FORMAT = Format(name="json", order=50, render=to_json,
                description="plain data with a JSON Schema; each expression as a JSON tree (symcomm.core.exprtree)")
