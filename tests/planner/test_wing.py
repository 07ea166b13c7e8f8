"""The planner wing's shape (issue 23, item 6): no module over ~500 lines of code, and ``symcomm.planner``'s
``__init__.py`` a public face only (its docstring, imports, ``__all__``), each name handed on being the
object of the module that holds it."""

import ast

import symcomm.planner
from conftest import ROOT

PLANNER = ROOT / "symcomm" / "planner"
#: issue 23, item 6: "No module over ~500 lines of code unless it is data" (kerneldata/ is the data: JSON)
MOST = 500


def _lines_of_code(text: str) -> int:
    # every line that is neither blank nor a comment; docstrings count (a conservative count)
    return sum(1 for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#"))


def test_the_line_count_is_not_blind():
    # counted by hand: two code lines, one docstring line; the blank and the comment lines do not count
    assert _lines_of_code('"""doc"""\n\n# a comment\n    # indented comment\nx = 1\ndef f(): pass\n') == 3


def test_no_planner_module_is_over_500_lines_of_code():
    sizes = {path.name: _lines_of_code(path.read_text(encoding="utf-8")) for path in sorted(PLANNER.glob("*.py"))}
    assert {"request.py", "layouts.py", "kernels.py", "search.py", "fold.py", "report.py"} <= set(sizes)
    assert {name: n for name, n in sizes.items() if n > MOST} == {}


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
