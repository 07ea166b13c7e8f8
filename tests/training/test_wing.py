"""The training wing's modules stay small (issue 23, item 6: "no module over ~500 lines of code unless
it is data"), and adding a strategy stays one entry of one registry (ARCHITECTURE.md, "Where to add things")."""

from __future__ import annotations

import ast

import pytest

from conftest import ROOT

WING = ROOT / "symcomm" / "training"


def _code_lines(path) -> int:
    """Lines that are neither blank nor only a comment (docstrings count: they are read with the code)."""
    return sum(1 for line in path.read_text(encoding="utf-8").splitlines()
               if line.strip() and not line.lstrip().startswith("#"))


@pytest.mark.parametrize("path", sorted(WING.glob("*.py")), ids=lambda path: path.name)
def test_no_training_module_over_500_lines_of_code(path):
    assert _code_lines(path) <= 500, f"{path.name}: {_code_lines(path)} lines of code; split it by what it holds"


def test_the_registry_is_the_one_place_that_lists_strategies():
    # every strategy the registry holds is one Strategy value written in _ENTRIES of strategies.py, and no
    # other module of the wing builds a Strategy (a second list would be a second place to add one)
    from symcomm.training.strategies import _ENTRIES, STRATEGIES

    assert [entry.name for entry in _ENTRIES] == list(STRATEGIES)
    builders = {path.name for path in WING.glob("*.py")
                if any(isinstance(node, ast.Call) and getattr(node.func, "id", "") in ("Strategy", "_strategy")
                       for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))))}
    assert builders == {"strategies.py"}
