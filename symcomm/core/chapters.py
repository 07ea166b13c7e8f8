"""Derivations as data: titled chains of steps that end in claims.

The content lives in the top-level ``derivations`` package (one module per chapter);
this module only gives it a shape the engine can check and the templates can render.
A step holds a SymPy expression and a one-line reason; consecutive ``=`` steps are
proved equal, a ``→`` step is proved to be the limit N → ∞ of the step before it.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from . import symbols as S
from .proof import Claim, Domain, DEFAULT, Limit, check


@dataclass(frozen=True)
class Step:
    expr: sp.Expr
    reason: str
    relation: str = "="          # "=" equal to the step before, "→" its limit as N → ∞


@dataclass(frozen=True)
class Derivation:
    """A titled chain of steps, its convention and source, and the claims it ends in."""

    title: str
    steps: tuple[Step, ...]
    convention: str
    source: str
    claims: tuple = ()
    domain: Domain = DEFAULT
    lhs: str = ""                # what the chain computes, in words (e.g. "per-GPU send")

    def step_claims(self) -> tuple:
        """The claims implied by the chain itself: each step follows from the one before."""
        out = []
        for i in range(1, len(self.steps)):
            before, step = self.steps[i - 1], self.steps[i]
            name = f"{self.title}: step {i + 1}"
            if step.relation == "=":
                out.append(Claim(before.expr, step.expr, name=name, source=self.source,
                                 domain=self.domain))
            elif step.relation == "→":
                out.append(Limit(before.expr, step.expr, S.N, sp.oo, name=name, source=self.source))
            else:
                raise ValueError(f"step relation must be '=' or '→', got {step.relation!r}")
        return tuple(out)

    def all_claims(self) -> tuple:
        return self.step_claims() + tuple(self.claims)


@dataclass(frozen=True)
class Table:
    """Data a chapter shows as a table (measurements, worked examples): cells are plain
    values or SymPy expressions; the templates print them, they compute nothing."""

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple, ...]
    caption: str = ""
    source: str = ""


@dataclass(frozen=True)
class Chapter:
    number: int
    slug: str
    title: str
    intro: str
    derivations: tuple[Derivation, ...] = ()
    claims: tuple = ()           # claims outside any chain (e.g. one per algorithm)
    tables: tuple = ()           # Table values shown after the introduction
    # tables whose numbers take seconds to compute (the published runs through the step model):
    # a function returning Tables, called only when the docs are rendered, never by `symcomm prove`
    late_tables: object = None

    def all_tables(self) -> tuple:
        return tuple(self.tables) + (tuple(self.late_tables()) if self.late_tables is not None else ())

    def all_claims(self) -> tuple:
        out = []
        for derivation in self.derivations:
            out.extend(derivation.all_claims())
        out.extend(self.claims)
        return tuple(out)


def check_chapters(chapters) -> list:
    """Check every claim of every chapter; returns (chapter, proof) pairs in order."""
    return [(chapter, check(claim)) for chapter in chapters for claim in chapter.all_claims()]
