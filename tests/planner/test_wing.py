"""The planner wing's shape (issue 23, item 6): ``symcomm.planner``'s ``__init__.py`` a public face only (its
docstring, imports, ``__all__``), each name handed on being the object of the module that holds it.  The size
of its modules is held with every module's by tests/test_architecture.py."""

import ast

import symcomm.planner
from conftest import ROOT

PLANNER = ROOT / "symcomm" / "planner"


def test_the_face_only_hands_names_on():
    tree = ast.parse((PLANNER / "__init__.py").read_text(encoding="utf-8"))
    kinds = {type(node).__name__ for node in tree.body[1:]}       # after the docstring
    assert isinstance(tree.body[0], ast.Expr) and isinstance(tree.body[0].value, ast.Constant)
    assert kinds <= {"ImportFrom", "Assign"}, kinds
    assigned = [target.id for node in tree.body if isinstance(node, ast.Assign) for target in node.targets]
    assert assigned == ["__all__"]
    homes = {alias.asname or alias.name: node.module for node in tree.body if isinstance(node, ast.ImportFrom)
             for alias in node.names if node.module != "__future__"}
    assert sorted(symcomm.planner.__all__) == sorted(homes)
    for name, home in homes.items():
        module = __import__(f"symcomm.planner.{home}", fromlist=[name])
        assert getattr(symcomm.planner, name) is getattr(module, name), name
