"""What is worked out once from an immutable object and kept beside it, for the hot paths of eval and the API.

A subject (symcomm.training.subjects.Subject) is a frozen value, cached per option set; what the answers derive
from it alone (its names, its compiled sheets, its labels) is kept in its instance dict, which a frozen
dataclass still has: its fields never change, and nothing kept here is part of its value (equality and hash
read the fields only).  One place, so the convention (names start with "_", one per module's use) stays one.
"""

from __future__ import annotations


def once(owner, name: str, build):
    """``build()``, computed the first time ``name`` is asked of ``owner`` and kept on it."""
    found = owner.__dict__.get(name)
    if found is None:
        found = owner.__dict__[name] = build()
    return found


def table(owner, name: str) -> dict:
    """The dict ``name`` kept on ``owner`` (empty at first): values derived from it, by a key of the caller's."""
    return owner.__dict__.setdefault(name, {})
