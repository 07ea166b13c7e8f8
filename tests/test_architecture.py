"""The wings of ARCHITECTURE.md, held against the code's own imports (lazy ones included).

Every import of a symcomm module, at the top of a file or inside a function, goes to its own wing or
to a wing of a lower floor (the table below is ARCHITECTURE.md's "who may import whom"); the modules
form no cycle; nothing but the entry imports the command layer; the ground floor (``symcomm.base``), the
planner and its kernel interpreter load no SymPy; only the command layer prints or parses argv.
"""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

#: wing → floor, as ARCHITECTURE.md's table gives them: a wing imports its own wing and lower floors only.
#: A wing is a subpackage of symcomm (each of its modules counts as the wing); the top-level modules
#: (api, __main__), the content (derivations) and build_docs.py are units of their own.
FLOORS = {
    "symcomm.__main__": 10,
    "symcomm.commands": 9, "symcomm.tools": 9, "build_docs": 9,
    "symcomm.api": 8,
    "symcomm.derivations": 7,
    "symcomm.measurement": 6,
    "symcomm.planner": 5, "symcomm.views": 5,
    "symcomm.training": 4,
    "symcomm.collectives": 3, "symcomm.numbers": 3, "symcomm.presets": 3,
    "symcomm.core": 2,
    "symcomm.base": 1, "symcomm.templates": 1,
    "symcomm": 0,    # the package's face: its public names are imported on first use (PEP 562)
}


def _module_of(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[0] == "derivations":
        parts = ["symcomm", "derivations"] + parts[1:]
    if parts[0] == "templates":
        parts = ["symcomm", "templates"] + parts[1:]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _unit(module: str) -> str:
    """The wing (or top-level unit) a module belongs to."""
    for name in sorted(FLOORS, key=len, reverse=True):
        if module == name or module.startswith(name + "."):
            return name
    raise AssertionError(f"{module} is in no wing of ARCHITECTURE.md")


@functools.lru_cache(maxsize=None)
def _tree(path: Path) -> ast.Module:
    """One file's syntax tree, parsed once for all the checks below (five of them read every file; the generated
    modules are megabytes of Python)."""
    return ast.parse(path.read_text(encoding="utf-8"))


def _imports(path: Path, module: str) -> set[str]:
    tree = _tree(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names if alias.name.split(".")[0] in ("symcomm", "derivations")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] not in ("symcomm", "derivations"):
                continue
            for alias in node.names:
                candidate = f"{target}.{alias.name}"
                out.add(candidate if _is_module(candidate) else target)
    return out


def _is_module(name: str) -> bool:
    parts = name.split(".")
    if parts[:2] == ["symcomm", "derivations"]:
        base = ROOT / "derivations" / Path(*parts[2:]) if parts[2:] else ROOT / "derivations"
    elif parts[:2] == ["symcomm", "templates"]:
        base = ROOT / "templates" / Path(*parts[2:]) if parts[2:] else ROOT / "templates"
    else:
        base = ROOT / Path(*parts)
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


@functools.lru_cache(maxsize=None)
def _module_graph() -> dict[str, set[str]]:
    """module → the symcomm modules it imports (a package's own face counts as a module); built once, read by four
    checks (none changes it)."""
    files = list((ROOT / "symcomm").rglob("*.py")) + list((ROOT / "derivations").rglob("*.py"))
    files += [ROOT / "templates" / "__init__.py", ROOT / "build_docs.py"]
    graph: dict[str, set[str]] = {}
    for path in files:
        module = _module_of(path)
        graph.setdefault(module, set()).update(target for target in _imports(path, module) if target != module)
    return graph


def _graph() -> dict[str, set[str]]:
    """wing → the wings it imports."""
    graph: dict[str, set[str]] = {}
    for module, targets in _module_graph().items():
        graph.setdefault(_unit(module), set()).update(
            _unit(target) for target in targets if _unit(target) != _unit(module))
    return graph


def test_every_import_goes_down_or_stays_in_its_wing():
    upward = [(a, b) for a, targets in _graph().items() for b in targets
              if b != "symcomm" and FLOORS[b] >= FLOORS[a]]
    assert not upward, f"imports to a wing of the same or a higher floor: {sorted(upward)}"


def test_every_wing_in_the_table_exists():
    # a stale row (a wing renamed or removed) is noticed
    for name in FLOORS:
        if name in ("symcomm", "build_docs"):
            continue
        parts = name.split(".")
        folder = {"derivations": ROOT / "derivations", "templates": ROOT / "templates"}.get(parts[-1], ROOT / Path(*parts))
        assert folder.with_suffix(".py").is_file() or (folder / "__init__.py").is_file(), name


def test_no_cycle():
    # between modules, inside a wing too (the floors above already exclude cycles between wings)
    graph = _module_graph()
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt == "symcomm" or nxt not in graph:
                continue
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt):] + [nxt]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)


def test_the_cycle_check_is_not_blind(monkeypatch):
    import test_architecture as me

    monkeypatch.setattr(me, "_module_graph", lambda: {"a": {"b"}, "b": {"c"}, "c": {"a"}})
    with pytest.raises(AssertionError, match="a -> b -> c -> a"):
        me.test_no_cycle()


def test_nothing_imports_the_command_layer():
    importers = sorted(a for a, targets in _graph().items()
                       if "symcomm.commands" in targets and a not in ("symcomm.commands", "symcomm.__main__"))
    assert not importers, importers


#: modules that must start without SymPy: the ground floor (anything may import it), and `symcomm plan`
#: (the planner and the interpreter of its kernels run the shipped kernels with numpy alone; the run setting
#: and the frameworks' rows, which the planner reads)
SYMPY_FREE = ("symcomm.base.errors", "symcomm.base.bits", "symcomm.base.crossing", "symcomm.base.notes", "symcomm.base.units", "symcomm.base.memo",
              "symcomm.base.inputs", "symcomm.base.files", "symcomm.commands.runner", "symcomm.numbers", "symcomm.numbers.kernels",
              "symcomm.planner", "symcomm.planner.request", "symcomm.planner.layouts", "symcomm.planner.kernels",
              "symcomm.planner.search", "symcomm.planner.fold", "symcomm.planner.report",
              "symcomm.commands.plan", "symcomm.training.settings", "symcomm.training.megatron_features",
              "symcomm.training.frameworks",
              # `symcomm eval` of a primitive (training.fasteval, its generated exact code, the words' rules)
              "symcomm.commands.evaluate", "symcomm.training.fasteval", "symcomm.training.primitive_data",
              "symcomm.training.primitiveplan", "symcomm.training.printedcode",
              "symcomm.training.words", "symcomm.numbers.exactops", "symcomm.presets",
              # `symcomm eval hybrid` of a generated option set (training.hybridfast, its generated module)
              "symcomm.training.hybridfast", "symcomm.training.hybridplan", "symcomm.training.hybrid_data")


def test_the_ground_floor_and_the_planner_load_no_sympy():
    # imported in a fresh interpreter, whose sys.modules then tells what was loaded
    every_base = sorted(p.stem for p in (ROOT / "symcomm" / "base").glob("*.py") if p.stem != "__init__")
    assert {f"symcomm.base.{name}" for name in every_base} <= set(SYMPY_FREE), "a new base module: list it above"
    code = (f"import importlib, sys\nfor name in {SYMPY_FREE!r}:\n    importlib.import_module(name)\n"
            "print(sorted(m for m in sys.modules if m == 'sympy' or m.startswith('sympy.')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert done.stdout.strip() == "[]"


def test_chapters_import_no_harness():
    # the content is pure: the torch measurement harness stays out of it (predictions live in symcomm.measurement.predict)
    importers = sorted(module for module, targets in _module_graph().items()
                       if module.startswith("symcomm.derivations") and "symcomm.measurement.measure" in targets)
    assert not importers, importers


# -- only the command layer prints or parses argv (issue 23, items 4 and 8) ---------------------------------
# The library returns values (and notes, symcomm.base.notes); a command prints them.  What counts as printing
# or parsing argv: a call of print(), any use of sys.stdout / sys.stderr (a write, a default stream, a
# `file=`), sys.argv, and argparse's parse_args / parse_known_args.

#: whole modules of the command layer, and why
COMMAND_MODULES = {
    "symcomm/__main__.py": "the `symcomm` entry: reads sys.argv and hands it to a main",
    "symcomm/commands/": "the command layer: list/show/eval/compare/presets/prove (main.py), export, measure and "
                         "validate, calibrate and nccl-tests: their options, printers and progress bars",
    "symcomm/tools/bench.py": "a developer tool (python -m symcomm.tools.bench): JSON on stdout, its progress on stderr",
    "build_docs.py": "the docs build (a script): says what it proved and wrote",
}
#: a script's `main` (python -m symcomm.tools.codegen, symcomm.tools.screenshot) may print anywhere
COMMAND_FUNCTIONS = ("main",)
#: other functions of the command layer living beside the library, and why
COMMAND_HELPERS: dict[tuple[str, str], str] = {}


def _speaks(node) -> str | None:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
        return "print()"
    if (isinstance(node, ast.Attribute) and node.attr in ("stdout", "stderr", "argv")
            and isinstance(node.value, ast.Name) and node.value.id == "sys"):
        return f"sys.{node.attr}"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
            "parse_args", "parse_known_args"):
        return node.func.attr
    return None


def _places_in(rel: str, tree: ast.Module) -> list[tuple[str, str, int, str]]:
    """(file, enclosing function or <module>, line, what) for every print / stream / argv use of one file
    outside the command layer."""
    if any(rel == place or (place.endswith("/") and rel.startswith(place)) for place in COMMAND_MODULES):
        return []
    found = []

    def visit(node, functions):
        for child in ast.iter_child_nodes(node):
            inner = functions + [child.name] if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else functions
            what = _speaks(child)
            allowed = any(name in COMMAND_FUNCTIONS or (rel, name) in COMMAND_HELPERS for name in inner)
            if what and not allowed:
                found.append((rel, ".".join(inner) or "<module>", child.lineno, what))
            visit(child, inner)

    visit(tree, [])
    return found


def test_only_the_command_layer_prints_or_parses_argv():
    files = sorted((ROOT / "symcomm").rglob("*.py")) + sorted((ROOT / "derivations").rglob("*.py"))
    files.append(ROOT / "build_docs.py")
    found = [place for path in files
             for place in _places_in(path.relative_to(ROOT).as_posix(), _tree(path))]
    assert found == [], "the library returns values; a command prints them (ARCHITECTURE.md)"


def test_the_print_check_is_not_blind():
    # a library function that prints, defaults to a stream or reads argv is found, and so is a `cmd_*` outside
    # the command layer (its place is symcomm/commands/); a script's main and the command layer are not
    source = ("import sys\ndef f():\n    print(1)\ndef g(stream=sys.stderr):\n    pass\n"
              "def h():\n    return sys.argv\ndef cmd_x():\n    def inner():\n        print(2)\n"
              "def main(argv):\n    return parser.parse_args(argv)\n")
    tree = ast.parse(source)
    assert _places_in("symcomm/x.py", tree) == [("symcomm/x.py", "f", 3, "print()"),
                                                  ("symcomm/x.py", "g", 4, "sys.stderr"),
                                                  ("symcomm/x.py", "h", 7, "sys.argv"),
                                                  ("symcomm/x.py", "cmd_x.inner", 10, "print()")]
    assert _places_in("symcomm/commands/main.py", tree) == []
    assert _places_in("symcomm/commands/calibrate.py", tree) == []
    # every exception listed names a real place, so a stale entry is noticed
    for module in COMMAND_MODULES:
        assert (ROOT / module).is_dir() if module.endswith("/") else (ROOT / module).is_file(), module
    for module, function in COMMAND_HELPERS:
        assert f"def {function}(" in (ROOT / module).read_text(encoding="utf-8"), (module, function)


# -- no module over ~500 lines of code unless it is data (issue 23, item 6) ---------------------------------
# Counted: lines holding code; blank lines, comments and docstrings are not code.  Every module of the package
# and the docs build; data (JSON kernels, presets, schemas, templates) is not Python and is not counted.

MAX_CODE_LINES = 500
SPLIT_MODULES = sorted(path.relative_to(ROOT).as_posix()
                       for path in [*(ROOT / "symcomm").rglob("*.py"), ROOT / "build_docs.py"]
                       if "__pycache__" not in path.parts)


def _code_lines(source: str) -> int:
    import io
    import tokenize

    docstrings = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                docstrings |= set(range(first.lineno, first.end_lineno + 1))
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}
    lines = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in skip:
            lines |= set(range(token.start[0], token.end[0] + 1))
    return len(lines - docstrings)


#: how a module printed by the project's own generator (tools.codegen) begins: data written as Python, held fresh
#: by its tests (tests/training/test_fasteval.py, test_hybridfast.py), counted as data is
GENERATED = '"""GENERATED by ``python -m symcomm.tools.codegen``'


@pytest.mark.parametrize("module", SPLIT_MODULES)
def test_no_module_over_500_lines_of_code(module):
    source = (ROOT / module).read_text(encoding="utf-8")
    if source.startswith(GENERATED):
        pytest.skip("a generated module: data")
    count = _code_lines(source)
    assert count <= MAX_CODE_LINES, f"{module}: {count} lines of code; split it by what it holds (ARCHITECTURE.md)"


def test_the_line_count_is_not_blind():
    # counted by hand: the docstrings (lines 1-2 and 6), the comment (3) and the blank line inside the parentheses
    # (8) are not code; `import math` (4), `def f():` (5), `x = (1,` (7), `2)` (9) and `return x` (10) are: 5
    source = ('"""A module\nover two lines."""\n# a comment\nimport math\ndef f():\n    """f."""\n'
              '    x = (1,\n\n         2)\n    return x\n')
    assert _code_lines(source) == 5
    assert SPLIT_MODULES and all((ROOT / module).is_file() for module in SPLIT_MODULES)


# -- a chapter holds every claim its module writes (the hybrid chapter once built its tuple before 7 more claims) -----

def _late_additions(source: str) -> list[tuple[int, str]]:
    """(line, name) of each top-level statement after ``CHAPTER = ...`` that adds to a name the chapter was built from
    (``+=``, ``.append``, ``.extend``): what the chapter, holding a copy, never proves."""
    tree = ast.parse(source)
    chapters = [node for node in tree.body if isinstance(node, ast.Assign)
                and any(isinstance(target, ast.Name) and target.id == "CHAPTER" for target in node.targets)]
    if not chapters:
        return []
    built = chapters[-1]
    read = {node.id for node in ast.walk(built.value) if isinstance(node, ast.Name)}
    late = []
    for node in tree.body:
        if node.lineno <= built.lineno:
            continue
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and node.target.id in read:
            late.append((node.lineno, node.target.id))
        call = node.value if isinstance(node, ast.Expr) else None
        if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr in ("append", "extend")
                and isinstance(call.func.value, ast.Name) and call.func.value.id in read):
            late.append((node.lineno, call.func.value.id))
    return late


@pytest.mark.parametrize("module", sorted(path.name for path in (ROOT / "derivations").glob("*.py")))
def test_no_claim_is_added_after_its_chapter_is_built(module):
    assert _late_additions((ROOT / "derivations" / module).read_text(encoding="utf-8")) == []


def test_the_late_claim_check_is_not_blind():
    # a hand-made module: the chapter built from CLAIMS, then one more claim added and one appended: both found
    source = "CLAIMS = [1]\nCHAPTER = make(tuple(CLAIMS))\nCLAIMS += [2]\nCLAIMS.append(3)\nOTHER = [4]\n"
    assert _late_additions(source) == [(3, "CLAIMS"), (4, "CLAIMS")]
