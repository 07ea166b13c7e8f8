"""The layers of ARCHITECTURE.md, held against the code's own imports (lazy ones included).

Every import of a symcomm module, at the top of a file or inside a function, must go to
its own layer or a lower one; the imports form no cycle; nothing but the CLI's own entry
imports the CLI.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: module → layer, as ARCHITECTURE.md's table gives them (a package counts as one module)
LAYERS = {
    "symcomm.__main__": 8,
    "symcomm.cli": 7, "symcomm.api": 7, "symcomm.codegen": 7, "symcomm.planner": 7, "build_docs": 7, "symcomm.bench": 7,
    "symcomm.subjects": 6, "symcomm.steptime": 6, "symcomm.export": 6, "symcomm.docs": 6, "symcomm.measure": 6, "symcomm.plots": 6, "symcomm.site": 6, "symcomm.kernelbuild": 6,
    "symcomm.calibrate": 6, "symcomm.ncclt": 5,
    "symcomm.derivations": 6,
    "symcomm.strategies": 5, "symcomm.profiles": 5,
    "symcomm.algorithms": 4, "symcomm.bounds": 4, "symcomm.presets": 4,
    "symcomm.cost": 3, "symcomm.simulate": 3, "symcomm.derivation": 3, "symcomm.evaluation": 3, "symcomm.inputs": 3,
    "symcomm.predict": 5,
    "symcomm.proof": 2, "symcomm.numeric": 2, "symcomm.primitives": 2, "symcomm.exprtree": 2, "symcomm.files": 2,
    "symcomm.units": 2, "symcomm.flops": 2, "symcomm.command": 2, "symcomm.kernels": 3, "symcomm.rules": 2,
    "symcomm.settings": 2, "symcomm.frameworks": 2,
    "symcomm.symbols": 1, "symcomm.printing": 1, "symcomm.errors": 1, "symcomm.notes": 1, "symcomm.templates": 1,
    "symcomm": 0,
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
    """The module as the table names it: a package's submodules count as the package."""
    for name in sorted(LAYERS, key=len, reverse=True):
        if module == name or module.startswith(name + "."):
            return name
    raise AssertionError(f"{module} is in no layer of ARCHITECTURE.md")


def _imports(path: Path, module: str) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
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


def _graph() -> dict[str, set[str]]:
    files = list((ROOT / "symcomm").rglob("*.py")) + list((ROOT / "derivations").rglob("*.py"))
    files += [ROOT / "templates" / "__init__.py", ROOT / "build_docs.py"]
    graph: dict[str, set[str]] = {}
    for path in files:
        module = _module_of(path)
        graph.setdefault(_unit(module), set()).update(
            _unit(target) for target in _imports(path, module) if _unit(target) != _unit(module))
    return graph


def test_every_import_goes_down_or_sideways():
    upward = [(a, b) for a, targets in _graph().items() for b in targets
              if b != "symcomm" and LAYERS[b] > LAYERS[a]]
    assert not upward, f"imports that run upward (layer of importer < layer of imported): {sorted(upward)}"


def test_no_cycle():
    graph = _graph()
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt == "symcomm":
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


def test_nothing_imports_the_cli():
    importers = sorted(a for a, targets in _graph().items()
                       if "symcomm.cli" in targets and a not in ("symcomm.cli", "symcomm.__main__"))
    assert not importers, importers


def test_chapters_import_no_harness():
    # the content is pure: the torch measurement harness stays out of it (predictions live in symcomm.predict)
    assert "symcomm.measure" not in _graph()["symcomm.derivations"]


# -- only the command layer prints or parses argv (issue 23, items 4 and 8) ---------------------------------
# The library returns values (and notes, symcomm.notes); a command prints them.  What counts as printing
# or parsing argv: a call of print(), any use of sys.stdout / sys.stderr (a write, a default stream, a
# `file=`), sys.argv, and argparse's parse_args / parse_known_args.

#: whole modules of the command layer, and why
COMMAND_MODULES = {
    "symcomm/__main__.py": "the `symcomm` entry: reads sys.argv and hands it to a main",
    "symcomm/cli.py": "the subcommands list/show/eval/compare/presets/prove: their printers and progress line",
    "symcomm/command.py": "the one parser and error-to-exit mapping: prints the error line and the notes",
    "symcomm/bench.py": "a developer tool (python -m symcomm.bench): JSON on stdout, its progress on stderr",
    "build_docs.py": "the docs build (a script): says what it proved and wrote",
}
#: functions that belong to a command anywhere: a subcommand's `cmd_*` and a script's `main`
COMMAND_FUNCTIONS = ("cmd_", "main")
#: other functions of the command layer living beside the library, and why
COMMAND_HELPERS = {
    ("symcomm/measure.py", "_print_table"): "cmd_measure and cmd_validate's table",
    ("symcomm/measure.py", "_emit"): "cmd_measure and cmd_validate's output (JSON, table, -o)",
    ("symcomm/measure.py", "_run"): "the two commands' shared body: gives its progress bar stderr",
}


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


def _places_in(rel: str, source: str) -> list[tuple[str, str, int, str]]:
    """(file, enclosing function or <module>, line, what) for every print / stream / argv use of one file
    outside the command layer."""
    if rel in COMMAND_MODULES:
        return []
    found = []

    def visit(node, functions):
        for child in ast.iter_child_nodes(node):
            inner = functions + [child.name] if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else functions
            what = _speaks(child)
            allowed = any(name.startswith("cmd_") or name == "main" or (rel, name) in COMMAND_HELPERS
                          for name in inner)
            if what and not allowed:
                found.append((rel, ".".join(inner) or "<module>", child.lineno, what))
            visit(child, inner)

    visit(ast.parse(source), [])
    return found


def test_only_the_command_layer_prints_or_parses_argv():
    files = sorted((ROOT / "symcomm").rglob("*.py")) + sorted((ROOT / "derivations").rglob("*.py"))
    files.append(ROOT / "build_docs.py")
    found = [place for path in files
             for place in _places_in(path.relative_to(ROOT).as_posix(), path.read_text(encoding="utf-8"))]
    assert found == [], "the library returns values; a command prints them (ARCHITECTURE.md)"


def test_the_print_check_is_not_blind():
    # a library function that prints, defaults to a stream or reads argv is found; a command is not
    source = ("import sys\ndef f():\n    print(1)\ndef g(stream=sys.stderr):\n    pass\n"
              "def h():\n    return sys.argv\ndef cmd_x():\n    def inner():\n        print(2)\n"
              "def main(argv):\n    return parser.parse_args(argv)\n")
    assert _places_in("symcomm/x.py", source) == [("symcomm/x.py", "f", 3, "print()"),
                                                  ("symcomm/x.py", "g", 4, "sys.stderr"),
                                                  ("symcomm/x.py", "h", 7, "sys.argv")]
    assert _places_in("symcomm/cli.py", source) == []
    # every exception listed names a real place, so a stale entry is noticed
    for module in COMMAND_MODULES:
        assert (ROOT / module).is_file(), module
    for module, function in COMMAND_HELPERS:
        assert f"def {function}(" in (ROOT / module).read_text(encoding="utf-8"), (module, function)
