"""One vocabulary for what a subject's values must satisfy: a power of two, divides, equals, at
least, fixed, and ``When`` (a rule that holds under some option values only).

A rule is a small frozen value: its **kind** (one of :data:`KINDS`), the expressions it reads
(``x`` and, but for a power of two, ``y``), its one-line **message** and its short **text**.  The
message names the parameter and what is allowed; ``{x}`` and ``{y}`` in it stand for the values of
``x`` and ``y``.  Three readers use the same value, so that they cannot say different things:

- :meth:`Rule.problem` checks exact values (``symcomm eval``, ``show``, the API, through
  :meth:`symcomm.training.subjects.Subject.problems`);
- :meth:`Rule.data` is what the exports read: ``(kind, message, x, y)``; the Python and
  JavaScript exports write the kind's test from :data:`KINDS` and fill the message's ``{x}``,
  ``{y}`` with the values, so the generated code carries this module's words, not a copy; the C
  header writes the test over doubles and returns NAN where it fails (C carries no message);
- :attr:`Rule.text` is how the docs and ``symcomm show`` list a requirement ("N a power of two").

The kinds and what they hold (the exports' tests are written beside the check, one place):

=============== ============================================= =====================
kind            holds when                                    x, y
=============== ============================================= =====================
power_of_two    x is 1, 2, 4, 8, ... (a whole number)         the number
divides         y / x is whole (x = 0: nothing to divide by)  the divisor, the multiple
equals          x = y                                         the value, the one allowed
at_least        x ≥ y                                         the value, the least
=============== ============================================= =====================

*fixed* is an ``equals`` whose message explains why the value is fixed (:func:`fixed`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

import sympy as sp


def is_power_of_two(n) -> bool:
    """n is 1, 2, 4, 8, ... (an integer; the one power-of-two test symcomm makes)."""
    return n >= 1 and not n & (n - 1)


@dataclass(frozen=True)
class Kind:
    """A kind of rule: its test on exact sympy numbers here, and the same test written in each
    export's language (``x``, ``y`` the exact values there: int / Fraction in Python, BigInt / the
    module's rational in JavaScript, with that module's helpers ``_whole``, ``_mul``, ``_pow``,
    ``_cmp``)."""

    name: str
    holds: Callable[[sp.Expr, sp.Expr | None], bool]     # on exact sympy numbers
    python: str
    javascript: str
    c: str          # over doubles (the C header's, whose arguments are whole where the symbol is)


def _whole(x) -> bool:
    return bool(sp.sympify(x, strict=True).is_integer)


#: name → :class:`Kind`: every kind of rule there is.
KINDS: dict[str, Kind] = {kind.name: kind for kind in (
    Kind("power_of_two", lambda x, y: _whole(x) and is_power_of_two(int(x)),
         "x == int(x) and x >= 1 and int(x) & (int(x) - 1) == 0",
         "_whole(x) && x >= 1n && (x & (x - 1n)) === 0n",
         "x >= 1.0 && x == floor(x) && symcomm_mantissa(x) == 0.5"),
    # fmod is exact in IEEE arithmetic: a whole quotient of whole doubles leaves 0
    Kind("divides", lambda x, y: x == 0 or _whole(sp.sympify(y, strict=True) / x),
         "x == 0 or (Fraction(y) / Fraction(x)).denominator == 1",
         "_cmp(x, 0n) === 0 || _whole(_mul(y, _pow(x, -1n)))",
         "x == 0.0 || fmod(y, x) == 0.0"),
    Kind("equals", lambda x, y: x == y, "x == y", "_cmp(x, y) === 0", "x == y"),
    Kind("at_least", lambda x, y: x >= y, "x >= y", "_cmp(x, y) >= 0", "x >= y"),
)}


def fill(message: str, x, y=None) -> str:
    """``message`` with ``{x}``, ``{y}`` replaced by the values as the command line prints them
    (3/4 for a rational); the exports fill it the same way."""
    return message.replace("{x}", str(x)).replace("{y}", str(y))


def _known(expr, values: Mapping):
    """``expr`` at ``values`` when that is a number, else None (the rule is not checked)."""
    value = sp.sympify(expr, strict=True).subs(values)
    return value if value.is_number else None


@dataclass(frozen=True)
class Rule:
    """``x`` (and ``y``) must satisfy ``kind``; ``message`` says what is wrong otherwise ({x}, {y}:
    the values), ``text`` what is required, in a few words."""

    kind: str
    x: sp.Expr
    y: sp.Expr | None
    message: str
    text: str

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"rule kind {self.kind!r} is not one of {', '.join(KINDS)}")

    @property
    def exprs(self) -> tuple[sp.Expr, ...]:
        return (self.x,) if self.y is None else (self.x, self.y)

    @property
    def symbols(self) -> set:
        """The symbols the rule reads."""
        return set().union(*(sp.sympify(e, strict=True).free_symbols for e in self.exprs))

    def problem(self, values: Mapping) -> str | None:
        """The message when ``values`` break the rule; None when they keep it or do not give
        every symbol it reads."""
        x = _known(self.x, values)
        y = None if self.y is None else _known(self.y, values)
        if x is None or (self.y is not None and y is None):
            return None
        return None if KINDS[self.kind].holds(x, y) else fill(self.message, x, y)

    def data(self) -> tuple:
        """What the exports read: (kind, message, x, y) — y is None for a power of two."""
        return (self.kind, self.message, self.x, self.y)

    def rules(self, settings: Mapping) -> tuple["Rule", ...]:
        """The rules in force under these option settings: this one (see :class:`When`)."""
        return (self,)


@dataclass(frozen=True)
class When:
    """``inner`` applies only when option ``option`` has one of the ``allowed`` values."""

    option: str
    allowed: tuple
    inner: "Rule | When"

    def rules(self, settings: Mapping) -> tuple[Rule, ...]:
        return self.inner.rules(settings) if settings.get(self.option) in self.allowed else ()


def in_force(rules, settings: Mapping) -> tuple[Rule, ...]:
    """The rules (and :class:`When`) resolved under ``settings``, in order."""
    return tuple(rule for item in rules for rule in item.rules(settings))


def problems(rules, values: Mapping) -> list[str]:
    """One line per rule ``values`` break, in order, each once."""
    return list(dict.fromkeys(msg for rule in rules if (msg := rule.problem(values)) is not None))


# -- the rules, spelled as the command line spells them ----------------------------------------------

def power_of_two(expr, message: str | None = None) -> Rule:
    """``expr`` a power of two; by default in an algorithm's words."""
    return Rule("power_of_two", expr, None,
                message or f"{expr}={{x}} is not allowed: this algorithm needs {expr} to be a power of two (2, 4, 8, ...)",
                f"{expr} a power of two")


def multiple_of(divisor, multiple, divisor_name: str | None = None) -> Rule:
    """An algorithm's buffer ``multiple`` must be a multiple of ``divisor`` (its words: the
    multiple is the value not allowed)."""
    name = divisor_name or str(divisor)
    return Rule("divides", divisor, multiple,
                f"{multiple}={{y}} is not allowed: it must be a multiple of {name}={{x}}",
                f"{multiple} a multiple of {name}")


def divisible(numerator, divisor, names: str = "") -> Rule:
    """A layout's ``numerator`` must be divisible by ``divisor``; ``names`` = "num|div" spells them."""
    top, bottom = names.split("|") if names else (str(numerator), str(divisor))
    return Rule("divides", divisor, numerator, f"{top}={{y}} must be divisible by {bottom}={{x}}",
                f"{top} divisible by {bottom}")


def needs(expr, value) -> Rule:
    """An algorithm that runs only at ``expr`` = ``value`` (a pair: N = 2)."""
    return Rule("equals", expr, sp.Integer(value),
                f"{expr}={{x}} is not allowed: this algorithm needs {expr}={value}", f"{expr} = {value}")


def equal(lhs, rhs, name: str = "") -> Rule:
    """A layout whose ``lhs`` (spelled ``name``) must equal ``rhs``."""
    name = name or str(lhs)
    return Rule("equals", lhs, rhs, f"{name}={{x}} must equal {rhs}={{y}}", f"{name} = {rhs}")


def at_least(expr, least: int) -> Rule:
    return Rule("at_least", expr, sp.Integer(least), f"{expr}={{x}} must be at least {{y}}", f"{expr} ≥ {least}")


def fixed(expr, value: int, message: str) -> Rule:
    """``expr`` must be ``value``; ``message`` ({x} = its value) says why otherwise."""
    return Rule("equals", expr, sp.Integer(value), message, f"{expr} = {value}")


def when(option: str, allowed, inner) -> When:
    return When(option, tuple(allowed), inner)
