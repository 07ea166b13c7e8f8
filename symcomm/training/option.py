"""One setting that is not a symbol, typed at the edge (:class:`Option`): its typed values, their text forms and the
aliases it accepts, and the one-line error naming the setting and what it allows.  :mod:`symcomm.training.settings`
holds every setting of a run as Options and re-exports these names.  SymPy-free: the planner imports it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from ..base.errors import InputError

#: the text of None: the framework decides the value (symcomm.training.frameworks)
BY_FRAMEWORK = "framework"


def choices(allowed) -> str:
    allowed = list(allowed)
    return allowed[0] if len(allowed) == 1 else ", ".join(allowed[:-1]) + " or " + allowed[-1]


@dataclass(frozen=True)
class Option:
    """A setting that is not a symbol: a flag (False/True, written 0/1), a stage (0..3), a
    choice among names, or None (written ``framework``: as the framework does).  ``allowed``
    holds the typed values; the text form (``text``) is what the command line takes and every
    output prints; ``aliases`` maps other accepted texts to the typed value they stand for."""

    name: str
    default: object
    allowed: tuple
    meaning: str
    aliases: Mapping[str, object] = field(default_factory=dict)

    @staticmethod
    def text(value) -> str:
        """0/1 for a flag, the number for a stage, the name for a choice, framework for None."""
        if value is None:
            return BY_FRAMEWORK
        if isinstance(value, bool):
            return "1" if value else "0"
        return str(value)

    @property
    def texts(self) -> tuple[str, ...]:
        return tuple(self.text(value) for value in self.allowed)

    def resolve(self, value, label: str | None = None):
        """The typed value of ``value`` (typed, its text form, or an alias); InputError naming
        the option (as ``label`` when given, e.g. ``--recompute``) and what it allows."""
        given = self.text(value)
        if given in self.aliases:
            given = self.text(self.aliases[given])
        for candidate in self.allowed:
            if self.text(candidate) == given:
                return candidate
        also = "".join(f", {alias} = {self.text(typed)}" for alias, typed in self.aliases.items())
        raise InputError(f"{label or self.name}={self.text(value)} is not allowed; choose {choices(self.texts)}"
                         + (f" ({also[2:]})" if also else ""))


def flag(name: str, meaning: str, default: bool = False) -> Option:
    return Option(name, default, (False, True), meaning)
