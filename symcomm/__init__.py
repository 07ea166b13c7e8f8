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

#: API functions named like a submodule: once that module is imported it is the attribute, and
#: it is callable (it calls the function), so the function is never cached over it
_ALSO_MODULES = ("evaluate", "plan")

#: subpackages reachable as attributes before they are imported (``symcomm.export.export(...)``)
_SUBPACKAGES = ("export",)

__all__ = list(_PUBLIC)


def __getattr__(name):
    if name in _SUBPACKAGES:
        return importlib.import_module(f".{name}", __name__)  # the import binds it in globals()
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'symcomm' has no attribute {name!r}")
    if name in _ALSO_MODULES:
        # the module of that name, callable (it forwards to the API function): `from . import plan`
        # inside the package and `symcomm.plan(...)` outside both get what they expect
        return importlib.import_module(f".{name}", __name__)
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def _call_api(name, *args, **kwargs):
    """``symcomm.evaluate(...)`` and ``symcomm.plan(...)`` once their modules of the same name are imported."""
    return getattr(importlib.import_module(".api", __name__), name)(*args, **kwargs)


def __dir__():
    return sorted(set(globals()) | set(_PUBLIC) | set(_SUBPACKAGES))

