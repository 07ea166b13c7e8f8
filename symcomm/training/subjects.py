"""What symcomm can cost: one notion, one registry.

A :class:`Subject` is a catalog algorithm of a primitive, or a strategy with its options,
optionally re-costed under a backend profile (what NCCL, MPICH or gloo really run).  It
carries everything a front end shows or checks — name, cost, extras, terms,
requirements, source, convention — so that the command line, the export, the docs, the
backend profiles and the planner never ask "which kind is this?" again.

The registry is :func:`subject` (one subject by name), :func:`every` (all of them, in
catalog order, optionally with each strategy's option variants), and :data:`ALIASES`
(another name for a strategy, kept apart: ``fsdp`` is ``zero3``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from fractions import Fraction
from functools import cached_property
from typing import Callable, Iterator, Mapping

import sympy as sp

from ..core import symbols as S
from ..base.crossing import ONE_NIC, RING, crossing_of
from ..collectives.algorithms import ALGORITHMS, DEFAULT_ALGORITHM, Algorithm, algorithm
from ..core.cost import Cost
from ..base import memo
from ..base.errors import InputError
from ..collectives.primitives import PRIMITIVES
from ..core.rules import problems
from ..numbers.evaluation import (Formulas, bound_numbers, exact_numbers, held_numbers, is_warm, positional,
                                  python_numbers)
from .frameworks import framework_zero

#: how a collective's numbers are counted (the CLI, the docs and the export state it)
COLLECTIVE_CONVENTION = ("elements; M = the full unsharded buffer (nccl-tests); exact (N−1)/N form; "
                         "send/recv = busiest rank, total = all ranks")
#: the same, with the time model spelt out (the export's tables and docstrings)
COLLECTIVE_TIME_CONVENTION = (COLLECTIVE_CONVENTION + "; T = α·messages + β·elements moved "
                              "+ γ·elements reduced on the critical path")


@functools.lru_cache(maxsize=1024)
def _rule_symbols(rule) -> frozenset:
    return frozenset(rule.symbols)


def _python(value):
    # SymPy's exact number (a formula's first use) as the compiled code gives it: an int or a Fraction
    if isinstance(value, sp.Integer):
        return int(value)
    if isinstance(value, sp.Rational):
        return Fraction(int(value.p), int(value.q))
    return value


def _kept(rule, x, y) -> bool:
    """True when the rule's x and y (its formulas at the values, by the compiled exact arithmetic) surely
    keep ``rule``; False when they break it or it cannot tell (then the rule's own SymPy check decides)."""
    if not isinstance(x, (int, Fraction)) or not (y is None or isinstance(y, (int, Fraction))):
        return False
    if rule.kind == "power_of_two":
        return type(x) is int and x >= 1 and x & (x - 1) == 0
    if rule.kind == "divides":
        if type(x) is int and type(y) is int:
            return x == 0 or y % x == 0
        return x == 0 or (Fraction(y) / x).denominator == 1
    if rule.kind == "equals":
        return x == y
    if rule.kind == "at_least":
        return x >= y
    return False


def _strategies():
    # imported on first use: a command about collectives needs no strategy
    from .strategies import STRATEGIES

    return STRATEGIES


def aliases() -> dict[str, str]:
    """Other names of strategies: alias → the strategy's own name."""
    from .strategies import ALIASES

    return dict(ALIASES)


@dataclass(frozen=True)
class Subject:
    """An algorithm, or a strategy with typed options, ready to evaluate.

    ``kind`` ("primitive" or "strategy") is data for the outputs; behaviour that differs
    between the two lives in the fields (``least``, ``open_symbols``, ``rules``) and in
    :meth:`under`, not in switches on ``kind``.
    """

    kind: str
    name: str                                   # the primitive or the strategy
    base_cost: Cost | None                      # an algorithm's own cost; None: the sum of the terms
    algorithm: str = ""                         # the algorithm (a primitive), or a strategy's algorithm option
    options: Mapping[str, str] = field(default_factory=dict)     # text form, every option
    changed: Mapping[str, str] = field(default_factory=dict)     # the options that differ from the defaults
    terms: tuple = ()
    extras: Mapping[str, sp.Expr] = field(default_factory=dict)
    title: str = ""
    summary: str = ""
    source: str = ""
    convention: str = ""
    requires: tuple[str, ...] = ()
    power_of_two: bool = False                  # its formulas use log₂N, exact for N a power of two only
    backend: str = ""
    #: smallest value a symbol may take (a collective needs N ≥ 2)
    least: Mapping[sp.Symbol, int] = field(default_factory=dict)
    #: True: symcomm symbols the formulas do not use are accepted (and noted), e.g. N to cross-check d·t·p·c
    open_symbols: bool = False
    #: what its values must satisfy (symcomm.core.rules), options resolved: :meth:`problems` checks them,
    #: the exports carry them
    rules: tuple = ()
    recost: Callable[..., "Subject"] | None = field(default=None, repr=False, compare=False)

    @cached_property
    def cost(self) -> Cost:
        """The algorithm's cost, or the role-wise sum of the terms' costs (built on first use)."""
        return self.base_cost if self.base_cost is not None else Cost.sum(term.cost for term in self.terms)

    @cached_property
    def crossing(self) -> str:
        """How the subject's cost splits between a node's links and the network once its group spans nodes
        (``base.crossing``, read by ``presets.link_values``): its algorithm's rule, or for a strategy the rule
        all its collectives share; collectives of mixed rules take ONE_NIC, the upper bound."""
        if self.kind == "primitive":
            return crossing_of(self.name, self.algorithm)
        rules_of = {crossing_of(term.primitive, term.algorithm) for term in self.terms}
        return rules_of.pop() if len(rules_of) == 1 else ONE_NIC

    @cached_property
    def spreads_over_nics(self) -> bool:
        """True when every collective of the subject is a ring (``SPREADS_OVER_NICS``): spanning nodes, its
        crossings spread over the NICs of a node's ranks (``presets.link_values``)."""
        return self.crossing == RING

    def cost_in(self, run_bytes) -> Cost:
        """The cost counted in elements of ``run_bytes`` bytes (the run's --dtype, or a symbol for it):
        terms whose buffers have their own element type (fp32 gradients) are widened to it, so
        × ``run_bytes`` = bytes."""
        if not any(getattr(term, "dtype", "") for term in self.terms):
            return self.cost
        from .terms import cost_in_bytes_of

        return cost_in_bytes_of(self.terms, run_bytes)

    @property
    def label(self) -> str:
        if self.kind == "primitive":
            return f"{self.name} / {self.algorithm}"
        opts = " ".join(f"{k}={v}" for k, v in self.options.items())
        return self.name + (f" ({opts})" if opts else "")

    @property
    def ident(self) -> str:
        """The identifier the export uses: all_reduce__ring, tp, tp__recompute_full."""
        if self.kind == "primitive":
            return f"{self.name}__{self.algorithm}"
        return self.name + "".join(f"__{k}_{v}" for k, v in self.changed.items())

    @property
    def option_names(self) -> tuple[str, ...]:
        return tuple(self.options)

    def problems(self, values: Mapping[sp.Symbol, object]) -> list[str]:
        """One line per value this subject cannot take (a power-of-two group, divisibility...), in
        the order of :attr:`rules`; a rule whose symbols are not all given is not checked."""
        # the binding's own conversion of the values it bound (SymPy's numbers), shared with the answer
        numbers = bound_numbers(values)
        if numbers is None:
            if all(isinstance(val, sp.Basic) for val in values.values()):
                numbers = held_numbers(values)
            else:
                values = {sym: val if isinstance(val, sp.Basic) else sp.sympify(val, strict=True)
                          for sym, val in values.items()}
                numbers = python_numbers(values)
            if numbers is None:
                return problems(self.rules, values)
        # found by the identities of the names given (the binding's symbols, held in the entry: no id reused), not
        # by hashing each symbol into a frozenset on every call
        by_ids = memo.table(self, "_rule_exprs_by_ids")
        held = by_ids.get(ids := tuple(map(id, numbers)))
        if held is None:
            if len(by_ids) >= 256:
                by_ids.clear()
            held = by_ids[ids] = [tuple(numbers), *self._rule_exprs(frozenset(numbers)), None]
        _, checked, exprs, call = held
        if call is None and exprs and is_warm(exprs):
            # from the rules' second use (the compiled code's own rule): their compiled exact code with its
            # arguments as positions among the names given, so a call hashes no symbol
            call = held[3] = positional(exprs, held[0]) or False
        got = ()
        if call:
            point = list(numbers.values())
            try:
                got = call[0](*[point[i] for i in call[1]])
            except (ArithmeticError, TypeError, ValueError, NameError):
                got = None      # no exact value here: exact_numbers' own path (SymPy's where it must)
        if got is None or (exprs and not call):
            got = exact_numbers(exprs, numbers)
        got = iter(got)
        out: list[str] = []
        for rule in checked:      # a rule whose symbols are not all given is not checked
            x = next(got)
            x = x if type(x) is int else _python(x)       # the compiled code's ints (the common case) as they are
            y = None if rule.y is None else next(got)
            y = y if y is None or type(y) is int else _python(y)
            # the compiled exact check passes the rules kept; a rule it cannot vouch for is SymPy's to word
            if not _kept(rule, x, y) and (message := rule.problem(values)) is not None and message not in out:
                out.append(message)
        return out

    def _rule_exprs(self, given: frozenset) -> tuple:
        """(the rules checked when the symbols ``given`` have values, in the order of :attr:`rules`; their x and
        y formulas in that order): one compiled exact call checks them all; found once per subject and set of
        names given (the rules kept as a tuple to walk: a rule hashes its formulas, a membership test costs)."""
        cache = memo.table(self, "_rule_exprs_by_given")
        held = cache.get(given)
        if held is None:
            checked = tuple(rule for rule in self.rules if _rule_symbols(rule) <= given)
            exprs = Formulas(sp.sympify(e, strict=True) for rule in checked
                          for e in ((rule.x,) if rule.y is None else (rule.x, rule.y)))
            held = cache[given] = (checked, exprs)
        return held

    def quantities(self, run_bytes=None) -> dict[str, sp.Expr]:
        """Every reported formula: the cost's fields, the time, the extras; with ``run_bytes`` (a number or a symbol
        for the run's bytes per element) the cost counted in elements of it (:meth:`cost_in`)."""
        cost = self.cost if run_bytes is None else self.cost_in(run_bytes)
        out = {key: sp.sympify(expr, strict=True) for key, expr in cost.fields().items()}
        out["time"] = sp.sympify(cost.time, strict=True)
        out.update({key: sp.sympify(expr, strict=True) for key, expr in self.extras.items()})
        return out

    def symbols(self) -> set[sp.Symbol]:
        """The symbols its traffic and extras need (the time symbols apart)."""
        return set(self._symbols)

    @cached_property
    def _symbols(self) -> frozenset:
        # found once per subject: a bound subject is reused across calls (symcomm.training.answers)
        needed: set = set()
        for expr in list(self.cost.fields().values()) + list(self.extras.values()):
            needed |= {x for x in sp.sympify(expr, strict=True).free_symbols if x not in S.TIME_SYMBOLS}
        return frozenset(needed)

    def under(self, backend: str, values: Mapping[sp.Symbol, object], itemsize: int = 4) -> "Subject":
        """This subject as ``backend`` runs it, at these values (the choice may depend on N and
        the message size in bytes)."""
        from ..collectives.profiles import profile

        try:
            return self.recost(profile(backend), values, itemsize)
        except ValueError as err:
            raise InputError(f"--backend: {err}") from None


# -- building subjects ------------------------------------------------------------------------------

def of_algorithm(alg: Algorithm) -> Subject:
    prim = PRIMITIVES[alg.primitive]

    def recost(prof, values, itemsize):
        from ..collectives.profiles import algorithm_under

        impl, rule = algorithm_under(prof, alg.primitive, values, itemsize)
        label = impl.name if impl.primitive == alg.primitive else f"{impl.primitive}/{impl.name}"
        return replace(of_algorithm(impl), name=alg.primitive, algorithm=f"{label} [{prof.name}]",
                       source=rule.source, backend=prof.name)

    return Subject(
        "primitive", alg.primitive, alg.cost, alg.name,
        title=f"{prim.title}, {alg.name.replace('_', ' ')}", summary=alg.summary, source=alg.source,
        convention=COLLECTIVE_CONVENTION, requires=tuple(r.text for r in alg.requires),
        power_of_two=alg.power_of_two, least={S.N: 2}, rules=alg.requires, recost=recost)


def of_strategy(strategy, **options) -> Subject:
    """A strategy with ``options`` (typed or text); ValueError naming a bad option."""
    settings = strategy.settings(**options)
    text = strategy.resolve(**options)
    defaults = strategy.resolve()
    changed = {k: v for k, v in text.items() if v != defaults[k]}
    terms = strategy.terms(**settings)

    def recost(prof, values, itemsize):
        from ..collectives.profiles import strategy_terms

        moved = strategy_terms(strategy, prof, values, itemsize, **settings)
        return replace(subject_of, terms=moved, backend=prof.name,
                       options={**text, "backend": prof.name})

    subject_of = Subject(
        "strategy", strategy.name, None, text.get("algorithm", ""),
        options=text, changed=changed, terms=terms, extras=strategy.extras(**settings),
        title=strategy.title + "".join(f" ({k}={v})" for k, v in changed.items()), summary=strategy.summary,
        source=strategy.source, convention=strategy.convention, open_symbols=True, rules=strategy.rules(**settings),
        recost=recost)
    return subject_of


# -- the registry ---------------------------------------------------------------------------------------

def names() -> list[str]:
    """Every primitive and strategy name (aliases apart)."""
    return list(PRIMITIVES) + list(_strategies())


@functools.lru_cache(maxsize=256)
def option_names(name: str) -> tuple[str, ...]:
    """The options a subject of this name takes (none for a primitive)."""
    strategy = _strategies().get(aliases().get(name, name))
    return tuple(strategy.options) if strategy is not None else ()


def subject(name: str, algorithm_name: str | None = None, **options) -> Subject:
    """The subject ``name`` (a primitive, a strategy or an alias) with ``algorithm_name`` and
    ``options``; InputError naming what is wrong, with what is allowed."""
    if name in PRIMITIVES:
        if options:
            key = next(iter(options))
            times = ", ".join(sorted(S.BY_SYMBOL[sym].cli_name for sym in S.TIME_SYMBOLS))
            raise InputError(f"unknown parameter {key!r} for {name}; allowed: N, M, G (hierarchical), {times}")
        try:
            return of_algorithm(algorithm(name, algorithm_name or DEFAULT_ALGORITHM[name]))
        except ValueError as err:
            raise InputError(f"--algorithm: {err}") from None
    strategies = _strategies()
    own = aliases().get(name, name)
    if own in strategies:
        strategy = strategies[own]
        if algorithm_name is not None:
            if "algorithm" not in strategy.options:
                raise InputError(f"--algorithm is not an option of {name}; its options: "
                                 f"{', '.join(strategy.options) or 'none'}")
            options = {**options, "algorithm": algorithm_name}
        options = framework_zero(options, strategy.options)      # fsdp2 alone: its one ZeRO stage
        try:
            return of_strategy(strategy, **options)
        except ValueError as err:
            raise InputError(str(err)) from None
    raise InputError(f"unknown primitive or strategy {name!r}; choose one of: "
                     f"{', '.join(names() + list(aliases()))}")


def variants(strategy) -> list[dict[str, object]]:
    """The defaults, then each option's other values one at a time — leaving out a value the
    other defaults do not allow (``framework=fsdp`` with the default ``zero=1``)."""
    out: list[dict[str, object]] = [{}]
    for name, option in strategy.options.items():
        for value in option.allowed:
            if value != option.default:
                try:
                    strategy.terms(**{name: value})
                except ValueError:
                    continue
                out.append({name: value})
    return out


def every(with_variants: bool = False) -> Iterator[Subject]:
    """Every catalog algorithm (catalog order), then every strategy at its defaults (and, with
    ``with_variants``, once per non-default value of each option, one option at a time)."""
    for alg in ALGORITHMS.values():
        yield of_algorithm(alg)
    for strategy in _strategies().values():
        for changed in (variants(strategy) if with_variants else [{}]):
            yield of_strategy(strategy, **changed)
