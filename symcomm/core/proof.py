"""Claims and their proofs: the public API for stating and checking identities.

A claim is a small immutable value: an equality (:class:`Claim`), an inequality
(:class:`AtLeast`) or a limit (:class:`Limit`).  :func:`prove` returns a :class:`Proof`
or raises :class:`ClaimFailed` whose message shows the simplified difference, so that a
user's own pytest reads::

    from symcomm import prove, Claim, AtLeast
    prove(Claim(ring_cost.beta, 2 * (N - 1) * M / N))

Proofs are symbolic, never sampled.  The domain of every claim: integer symbols are
≥ 1 and N ≥ 2; a bare log₂N marks a power-of-two formula (N = 2^j, j ≥ 1) while
⌈log₂N⌉ marks a general one.  Inequalities are proved by rewriting each integer symbol
as (its least value + a natural number), then showing the numerator is a sum of
non-negative terms, by induction on a natural number where that is needed.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

import sympy as sp

from . import symbols as S
from .rewrite import rebuilt

#: Least value of an integer symbol in every claim; others default to 1.
LEAST = {S.N: 2}
_INDUCTION_DEPTH = 5


@dataclass(frozen=True)
class Domain:
    """Where a claim is meant to hold: least values, and symbols that are powers of two."""

    least: tuple[tuple[sp.Symbol, int], ...] = tuple(LEAST.items())
    power_of_two: frozenset = frozenset()

    def least_of(self, sym: sp.Symbol) -> int:
        return dict(self.least).get(sym, 1)


DEFAULT = Domain()
POWER_OF_TWO = Domain(power_of_two=frozenset({S.N}))


@dataclass(frozen=True)
class Claim:
    """lhs = rhs for every value in the domain.

    ``definition=True`` marks an identity that holds by construction (two names of one
    object, a composed cost against the sum of its own terms): it is still checked, but it
    is evidence of nothing, so ``symcomm prove`` and the docs count and show it apart.
    """

    lhs: sp.Expr
    rhs: sp.Expr
    name: str = ""
    source: str = ""
    domain: Domain = DEFAULT
    definition: bool = False

    relation = "="


def is_definition(claim) -> bool:
    """True for a claim marked as true by construction (:attr:`Claim.definition`)."""
    return bool(getattr(claim, "definition", False))


@dataclass(frozen=True)
class AtLeast:
    """lhs ≥ rhs for every value in the domain."""

    lhs: sp.Expr
    rhs: sp.Expr
    name: str = ""
    source: str = ""
    domain: Domain = DEFAULT

    relation = "≥"


@dataclass(frozen=True)
class Limit:
    """expr → value as var → point (∞ by default)."""

    expr: sp.Expr
    value: sp.Expr
    var: sp.Symbol = S.N
    point: sp.Expr = sp.oo
    name: str = ""
    source: str = ""

    relation = "→"


@dataclass(frozen=True)
class Proof:
    """A verdict on ``claim`` and what was found (``detail``).  ``said`` is that text, or a function writing it: a
    proof that holds states its claim, and printing a step model's two sides costs more than proving them (most of
    ``symcomm prove``'s proving time went there), for a text that is read only when asked."""

    claim: object
    holds: bool
    said: object                 # str, or a function of no arguments returning it

    @property
    def detail(self) -> str:
        return self.said() if callable(self.said) else self.said

    def __bool__(self) -> bool:
        return self.holds


def _stated(claim):
    """A holding claim's detail, written when read: its sides and its relation."""
    return lambda: f"{claim.lhs} {claim.relation} {claim.rhs}"


class ClaimFailed(AssertionError):
    """A claim that symcomm could not prove; the message shows why."""


def _label(claim) -> str:
    return f"claim {claim.name!r}" if claim.name else "claim"


def check(claim) -> Proof:
    """Try to prove ``claim``; return a :class:`Proof` that says whether it holds.  A claim whose content
    (its relation, sides, domain) was checked before in this process is not proved again: the chapters state
    many claims twice under other names (a table and its chapter's text), and the verdict reads only the content."""
    content = replace(claim, name="", source="") if isinstance(claim, (Claim, AtLeast, Limit)) else claim
    try:
        hash(content)
    except TypeError:            # a side that is no SymPy value (a list): nothing to share, prove it here
        return _checked.__wrapped__(claim)
    verdict = _checked(content)
    return verdict if verdict.claim is claim else Proof(claim, verdict.holds, verdict.said)


@functools.lru_cache(maxsize=4096)
def _checked(claim) -> Proof:
    if isinstance(claim, Limit):
        expr = sp.sympify(claim.expr, strict=True)
        got = _rational_limit(expr, claim.var, claim.point)
        if got is None:
            got = sp.limit(expr.rewrite(sp.log), claim.var, claim.point)
        want = sp.sympify(claim.value, strict=True)
        # the limit (read off the leading terms, or as SymPy returns it), equal to the value outright or once
        # cancelled (a rational function of the rest: cancel's 0 is a proof); simplify (and the sympy.physics.units
        # it imports, a third of a second) only for what neither settles
        ok = got == want or (got.is_finite is not False and _cancels(got - want))
        if not ok:
            got = sp.simplify(got)
            ok = got == want or (got.is_finite is not False and sp.simplify(got - want) == 0)
        return Proof(claim, ok, lambda: (f"lim {claim.var}→{claim.point} of {claim.expr} = {got}"
                                         + ("" if ok else f", not {claim.value}")))
    diff = sp.sympify(claim.lhs, strict=True) - sp.sympify(claim.rhs, strict=True)
    if isinstance(claim, Claim):
        if diff.is_Number:  # a measured or worked-out figure: nothing to rewrite
            if diff == 0:
                return Proof(claim, True, _stated(claim))
            return Proof(claim, False, f"lhs − rhs = {diff}, not 0")
        # most identities: the terms cancel outright once expanded.  Expanding rebuilds each Min and Max on its
        # expanded arguments, which SymPy compares pairwise again (a tenth of a second for a fold's Max): a
        # difference holding one is tried in the domain first, where the prover decides them, and expanded after
        minmax = diff.has(sp.Min, sp.Max)
        if (not minmax and (sp.expand(diff) == 0 or _rational_zero(diff))) \
                or _zero_in_domain(diff, claim.domain, expand=minmax):
            return Proof(claim, True, _stated(claim))
        return Proof(claim, False, f"lhs − rhs simplifies to {sp.factor(sp.simplify(diff))}, not 0"
                     + _namesakes(diff))
    if isinstance(claim, AtLeast):
        # over one denominator first: a difference of fractions over the same factors (a step model's 1/(c·d·m))
        # otherwise becomes a numerator over their product, squares and all, eight times the terms to expand; the
        # difference as stated after, so no claim the prover decided before goes unproved
        if is_nonnegative(sp.together(diff), claim.domain) or is_nonnegative(diff, claim.domain):
            return Proof(claim, True, _stated(claim))
        witness = counterexample(diff, claim.domain)
        where = f"; it is negative at {witness}" if witness else " (no counterexample found)"
        return Proof(claim, False,
                     f"could not prove lhs − rhs = {sp.factor(sp.simplify(diff))} ≥ 0{where}")
    raise TypeError(f"prove() takes Claim, AtLeast or Limit, not {type(claim).__name__}")


def _rational_zero(diff: sp.Expr) -> bool:
    """True when ``diff`` is a rational function of its symbols (no logarithm, ceiling, power with a symbol in its
    exponent, Min, Max) that cancels to 0: an identity everywhere, so in every domain.  The domain's rewrite
    (:func:`_in_domain`) cannot help such a difference: a rational function vanishing at every point of a domain
    (infinitely many values of each symbol) vanishes everywhere; so it is cancelled as it is, without rewriting
    each symbol as least value + natural number first (a third of the time)."""
    return diff.is_rational_function() and _cancels(diff)


def _cancels(expr: sp.Expr) -> bool:
    """True when ``expr`` is 0 as a rational function of its atoms: its numerator over the product of its
    denominators (``as_numer_denom``, an identity) expands to 0 or, for what that leaves, ``cancel`` gives 0.  The
    numerator first: it needs no polynomial gcd, a third of cancel's time on the chapters' identities."""
    num, _ = expr.as_numer_denom()
    return sp.expand(num) == 0 or sp.cancel(expr) == 0


def _rational_limit(expr: sp.Expr, var: sp.Symbol, point) -> sp.Expr | None:
    """The limit of ``expr`` as ``var`` → ∞ when ``expr`` is a rational function of ``var``, read off its leading
    terms: the ratio of the leading coefficients when numerator and denominator have one degree, 0 when the
    numerator's is lower.  The other symbols are constants, generic as ``sympy.limit`` takes them: the coefficients
    are polynomials over the integers in them (a ring without zero divisors, so a leading coefficient is a nonzero
    polynomial).  None for anything else (another point, a higher numerator degree, coefficients outside such a
    ring), left to ``sympy.limit``, which takes five to ten times as long on these."""
    if point != sp.oo or not expr.is_rational_function(var):
        return None
    # what is free of var (a log₂N as M → ∞) is a constant: a symbol of its own, the coefficients stay polynomials
    constants = {part: sp.Dummy() for part in expr.atoms(sp.Function) if not part.has(var)}
    num, den = sp.together(expr.xreplace(constants)).as_numer_denom()
    try:
        top, bottom = sp.Poly(num, var), sp.Poly(den, var)
    except sp.PolynomialError:
        return None
    if top.domain.is_EX or bottom.domain.is_EX or bottom.is_zero:
        return None
    if top.degree() < bottom.degree():
        return sp.Integer(0)
    if top.degree() == bottom.degree():
        return (top.LC() / bottom.LC()).xreplace({dummy: part for part, dummy in constants.items()})
    return None


def _zero_in_domain(diff: sp.Expr, domain: Domain, expand: bool) -> bool:
    """True when ``diff``, its integer symbols rewritten over the domain (:func:`_in_domain`), cancels to 0 (a
    rational identity), or (``expand``) ``diff`` expands to 0, or the rewritten one simplifies to 0: the same
    three tests as ever, the costliest last."""
    try:
        reduced, _ = _in_domain(diff, domain)
    except ValueError:           # a domain the rewrite refuses: an expansion to 0 still proves it, as it did first
        if expand and sp.expand(diff) == 0:
            return True
        raise
    if _cancels(reduced):
        return True
    if expand and sp.expand(diff) == 0:
        return True
    return sp.simplify(reduced) == 0


def _namesakes(expr: sp.Expr) -> str:
    """What a failed claim says where two of its symbols share a name (the library's N is an integer ≥ 1, a
    sp.Symbol("N") typed beside it another symbol, which never cancels it): "" where none do."""
    names: dict = {}
    for x in expr.free_symbols:
        names.setdefault(x.name, []).append(x)
    shared = sorted(name for name, found in names.items() if len(found) > 1)
    if not shared:
        return ""
    return (f" (two different symbols are named {', '.join(shared)}: use the library's, "
            f"symcomm.symbol({shared[0]!r}), not sympy.Symbol({shared[0]!r}))")


def prove(claim) -> Proof:
    """Prove ``claim`` or raise :class:`ClaimFailed` with the simplified difference."""
    proof = check(claim)
    if not proof:
        source = f" [{claim.source}]" if claim.source else ""
        raise ClaimFailed(f"{_label(claim)}{source} does not hold: {proof.detail}")
    return proof


# -- inequality reasoning --------------------------------------------------------------

def _natural(name: str) -> sp.Symbol:
    return sp.Symbol(name, integer=True, nonnegative=True)


def _integer_symbols(expr: sp.Expr):
    return sorted((x for x in expr.free_symbols if x.is_integer), key=lambda x: x.name)


def _in_domain(expr: sp.Expr, domain: Domain):
    """Rewrite every integer symbol as least value + natural number.

    Returns the rewritten expression and the natural-number variables introduced.  The
    symbols are independent, so their rewrites are made at once: one pass (two when a
    log₂ is renamed first), so that SymPy re-evaluates each Min, Max and ceiling once.
    """
    expr = sp.sympify(expr, strict=True)
    naturals = []
    logs, values = {}, {}
    for sym in _integer_symbols(expr):
        least = domain.least_of(sym)
        ceil_log2 = S.log2_ceil(sym)
        nat = _natural(f"i_{sym.name}")
        if sym in domain.power_of_two or (expr.has(S.log2(sym)) and not expr.has(ceil_log2)):
            # sym = 2^j with 2^j ≥ least
            j0 = max(0, (least - 1).bit_length())
            j = nat + j0
            logs[S.log2(sym)] = j
            values[sym] = 2 ** j
        elif expr.has(ceil_log2):
            # sym in (2^(ℓ−1), 2^ℓ] with ℓ = ⌈log₂ sym⌉ ≥ 1 (sym ≥ 2): sym = 2^(ℓ−1) + 1 + i
            if least < 2:
                raise ValueError(f"⌈log₂{sym}⌉ needs {sym} ≥ 2 in the claim's domain")
            ell_nat = _natural(f"l_{sym.name}")
            logs[ceil_log2] = ell_nat + 1
            values[sym] = 2 ** ell_nat + 1 + nat
            naturals.append(ell_nat)
        else:
            values[sym] = nat + least
        naturals.append(nat)
    if logs:
        expr = _replace(expr, logs, naturals)
    return _replace(expr, values, naturals), naturals


#: induction depth when a Min or Max of the rewritten expression is decided (kept small: an
#: undecided one is left to SymPy, as before)
_ORDER_DEPTH = 1


def _replace(expr: sp.Expr, rule: dict, naturals) -> sp.Expr:
    """``expr.xreplace(rule)``, each distinct subtree rebuilt once, and a Min or Max whose
    arguments are ordered over the natural numbers (their difference proved ≥ 0 by
    :func:`_nonnegative_sum`, as an inequality claim is) replaced by the least or greatest.
    Anything not decided so is rebuilt and evaluated by SymPy as ``xreplace`` would."""

    def combine(func, args):
        return _extreme(func, args, naturals) if func in (sp.Min, sp.Max) else func(*args)

    return rebuilt(sp.sympify(expr, strict=True), rule, {}, combine)


def _extreme(func, args, naturals) -> sp.Expr:
    """Min(*args) or Max(*args): of two arguments, one proved ≤ (Min) or ≥ (Max) the other
    for every value of the naturals is the value; otherwise SymPy's own evaluation."""
    if len(args) == 2 and not any(arg.has(sp.Min, sp.Max) for arg in args):
        first, second = args
        if func is sp.Min:
            first, second = second, first
        # Max: first ≥ second gives first; Min (swapped): second ≤ first gives second
        try:
            if _nonnegative_sum(first - second, naturals, _ORDER_DEPTH):
                return args[0]
            if _nonnegative_sum(second - first, naturals, _ORDER_DEPTH):
                return args[1]
        except (TypeError, ValueError, sp.PolynomialError):
            pass
    return func(*args)


def _nonnegative_sum(expr: sp.Expr, naturals, depth: int) -> bool:
    # expr = num/den, numerator and denominator as SymPy writes them (no common-denominator search)
    num, den = sp.sympify(expr, strict=True).as_numer_denom()
    if not den.is_positive:
        if den.is_negative:
            num = -num
        else:
            return False
    if num.is_Mul:
        # a positive factor leaves the sign as it is: the rest is tried alone first (a claim's common b·h·s, each
        # (i + 1) once rewritten, multiplies the terms to expand and to step through); the whole after, as before
        rest = [factor for factor in num.args if not factor.is_positive]
        if len(rest) < len(num.args) and _nonnegative_sum(sp.Mul(*rest), naturals, depth):
            return True
    num = sp.expand(num, power_exp=True)
    # term by term first: the whole sum's sign is SymPy's costliest question, asked only where a term is not
    if all(term.is_nonnegative for term in sp.Add.make_args(num)) or num.is_nonnegative:
        return True
    if depth == 0:
        return False
    for var in naturals:
        if not num.has(var):
            continue
        # var is a symbol: xreplace is subs without its search for patterns
        base = num.xreplace({var: 0})
        step = num.xreplace({var: var + 1}) - num
        if (_nonnegative_sum(base, naturals, depth - 1)
                and _nonnegative_sum(step, naturals, depth - 1)):
            return True
    return False


def is_nonnegative(expr, domain: Domain = DEFAULT) -> bool:
    """True when expr ≥ 0 is proved for every value of its symbols in ``domain``."""
    expr = sp.sympify(expr, strict=True)
    if expr.has(sp.Max, sp.Min):
        return False
    rewritten, naturals = _in_domain(expr, domain)
    return _nonnegative_sum(rewritten, naturals, _INDUCTION_DEPTH)


def counterexample(expr, domain: Domain = DEFAULT, tries: int = 6):
    """A small assignment making expr negative, to tell 'false' from 'not proved'."""
    expr = sp.sympify(expr, strict=True)
    syms = _integer_symbols(expr)
    reals = [x for x in expr.free_symbols if x not in syms]
    for n in range(tries):
        point = {}
        for sym in syms:
            value = domain.least_of(sym) + n
            if sym in domain.power_of_two or expr.has(S.log2(sym)):
                value = 2 ** (max(1, (domain.least_of(sym) - 1).bit_length()) + n)
            point[sym] = value
        point.update({x: 1 for x in reals})
        value = expr.subs(point)
        if value.is_number and value.is_negative:
            return ", ".join(f"{k}={v}" for k, v in sorted(point.items(), key=lambda kv: kv[0].name))
    return None
