"""Adding a strategy stays one entry of one registry (ARCHITECTURE.md, "Where to add things"), now that the
strategies' terms are built in several modules of the training wing (terms, axes, single, hybrid)."""

from __future__ import annotations

import ast

from conftest import ROOT

WING = ROOT / "symcomm" / "training"


def test_the_registry_is_the_one_place_that_lists_strategies():
    # every strategy the registry holds is one Strategy value written in _ENTRIES of strategies.py, and no
    # other module of the wing builds a Strategy (a second list would be a second place to add one)
    from symcomm.training.strategies import _ENTRIES, STRATEGIES

    assert [entry.name for entry in _ENTRIES] == list(STRATEGIES)
    builders = {path.name for path in WING.glob("*.py")
                if any(isinstance(node, ast.Call) and getattr(node.func, "id", "") in ("Strategy", "_strategy")
                       for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))))}
    assert builders == {"strategies.py"}
