"""symcomm: the communication cost of distributed training, derived, proved and evaluated.

The public names below are imported on first use (PEP 562), so ``import symcomm`` is
cheap and a command pays only for the modules it needs.  ``symcomm.views.export`` is the
export package (``from symcomm.views.export import export`` for the function).
"""

import importlib

#: public name → the submodule that defines it
_PUBLIC = {
    "SYMBOLS": "core.symbols", "symbol": "core.symbols",
    "Cost": "core.cost", "Traffic": "core.cost",
    "AtLeast": "core.proof", "Claim": "core.proof", "ClaimFailed": "core.proof", "Domain": "core.proof", "Limit": "core.proof",
    "Proof": "core.proof", "check": "core.proof", "prove": "core.proof", "POWER_OF_TWO": "core.proof",
    "PRIMITIVES": "collectives.primitives", "primitive": "collectives.primitives",
    "ALGORITHMS": "collectives.algorithms", "Algorithm": "collectives.algorithms", "algorithm": "collectives.algorithms",
    "algorithms_of": "collectives.algorithms",
    "evaluator": "numbers.numeric",
    "evaluate": "api", "compare": "api", "plan": "api", "formula": "api", "Result": "api", "Formula": "api",
}

#: the wings (ARCHITECTURE.md), reachable as attributes before they are imported (``symcomm.views``); a
#: module inside one is imported as usual (``from symcomm.views.export import export``)
_SUBPACKAGES = ("base", "core", "collectives", "numbers", "training", "planner", "measurement", "views", "commands",
                "tools")

__all__ = list(_PUBLIC)


def __getattr__(name):
    if name in _SUBPACKAGES:
        return importlib.import_module(f".{name}", __name__)  # the import binds it in globals()
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'symcomm' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_PUBLIC) | set(_SUBPACKAGES))

