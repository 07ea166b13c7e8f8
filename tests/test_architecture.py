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
    "symcomm.cli": 7, "symcomm.api": 7, "symcomm.codegen": 7, "symcomm.plan": 7, "build_docs": 7, "symcomm.bench": 7,
    "symcomm.subjects": 6, "symcomm.steptime": 6, "symcomm.export": 6, "symcomm.docs": 6, "symcomm.measure": 6, "symcomm.plots": 6, "symcomm.site": 6,
    "symcomm.calibrate": 6, "symcomm.ncclt": 5,
    "symcomm.derivations": 6,
    "symcomm.strategies": 5, "symcomm.profiles": 5,
    "symcomm.algorithms": 4, "symcomm.bounds": 4, "symcomm.presets": 4,
    "symcomm.cost": 3, "symcomm.simulate": 3, "symcomm.derivation": 3, "symcomm.evaluate": 3, "symcomm.inputs": 3,
    "symcomm.predict": 5,
    "symcomm.proof": 2, "symcomm.numeric": 2, "symcomm.primitives": 2, "symcomm.exprtree": 2, "symcomm.files": 2,
    "symcomm.units": 2, "symcomm.flops": 2, "symcomm._generated": 2, "symcomm.settings": 2, "symcomm.frameworks": 2,
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
