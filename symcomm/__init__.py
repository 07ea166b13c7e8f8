"""symcomm: the communication cost of distributed training, derived, proved and evaluated.

The public names below are imported on first use (PEP 562), so ``import symcomm`` is
cheap and a command pays only for the modules it needs.  ``symcomm.export`` is the
export package (``from symcomm.export import export`` for the function).
"""

import importlib

#: public name → the submodule that defines it
_PUBLIC = {
    "SYMBOLS": "symbols", "symbol": "symbols",
    "Cost": "cost", "Traffic": "cost",
    "AtLeast": "proof", "Claim": "proof", "ClaimFailed": "proof", "Domain": "proof", "Limit": "proof",
    "Proof": "proof", "check": "proof", "prove": "proof", "POWER_OF_TWO": "proof",
    "PRIMITIVES": "primitives", "primitive": "primitives",
    "ALGORITHMS": "algorithms", "Algorithm": "algorithms", "algorithm": "algorithms",
    "algorithms_of": "algorithms",
    "evaluator": "numeric",
    "evaluate": "api", "compare": "api", "plan": "api", "formula": "api", "Result": "api", "Formula": "api",
}

#: subpackages reachable as attributes before they are imported (``symcomm.export.export(...)``)
_SUBPACKAGES = ("export",)

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

