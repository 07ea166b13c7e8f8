"""symcomm: the communication cost of distributed training, derived, proved and evaluated.

The public names below are imported on first use (PEP 562), so ``import symcomm`` is
cheap and a command pays only for the modules it needs.
"""

import importlib
import types

#: public name → the submodule that defines it
_PUBLIC = {
    "SYMBOLS": "symbols", "symbol": "symbols",
    "Cost": "cost", "Traffic": "cost",
    "AtLeast": "proof", "Claim": "proof", "ClaimFailed": "proof", "Domain": "proof", "Limit": "proof",
    "Proof": "proof", "check": "proof", "prove": "proof", "POWER_OF_TWO": "proof",
    "PRIMITIVES": "primitives", "primitive": "primitives",
    "ALGORITHMS": "algorithms", "Algorithm": "algorithms", "algorithm": "algorithms",
    "algorithms_of": "algorithms",
    "export": "export",
    "evaluator": "numeric",
}

__all__ = list(_PUBLIC)


def __getattr__(name):
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'symcomm' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_PUBLIC))


class _Package(types.ModuleType):
    """Keeps a public function that shares its submodule's name (``symcomm.export``) from
    being replaced by the submodule when the submodule is imported."""

    def __setattr__(self, name, value):
        if isinstance(value, types.ModuleType) and _PUBLIC.get(name) == name:
            return
        super().__setattr__(name, value)


import sys as _sys  # noqa: E402

_sys.modules[__name__].__class__ = _Package
