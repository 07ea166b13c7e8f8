"""The float code of an expression: printed once, common subexpressions once, compiled in the process.

:func:`function_source` prints plain Python on floats (``math``; Piecewise as ``a if cond else b``) for
scalars, or numpy for arrays (scalar work once, terms sharing their array part or an array denominator
merged, small formulas factored, Piecewise as ``numpy.where``); :func:`_compile` runs that source, printed
from SymPy here and never from text a user gave, with the helpers of :data:`_HELPERS` only.  The rule
the two arithmetics follow is stated once, in :mod:`symcomm.numbers.numeric`.
"""

from __future__ import annotations

import ast
import functools
import itertools
import math
import re
from typing import Callable

import numpy as np
import sympy as sp
from sympy.printing.numpy import NumPyPrinter
from sympy.printing.pycode import PythonCodePrinter

from ..core import symbols as S
from .logarithms import ones_below


# -- float code: one source per expression, CSE'd, printed for math (scalars) or numpy (arrays) ----


def _nested_cases(printer, expr, otherwise: str, case) -> str:
    """A Piecewise as nested cases, last first: ``case(value, condition, rest)`` joins one branch to
    the rest; a true condition ends the chain; no branch taken gives ``otherwise``."""
    out = otherwise
    for value, cond in reversed(expr.args):
        if cond is sp.true or cond == True:  # noqa: E712
            out = printer._print(value)
        else:
            out = case(printer._print(value), printer._print(cond), out)
    return out

class _MathPrinter(PythonCodePrinter):
    """Plain Python on floats: ``math`` functions, Piecewise as ``a if cond else b`` (only the branch taken
    runs), Max and Min as ``max``/``min``."""

    ceil_log2_function = "_ceil_log2_float"
    ones_below_function = "_ones_below_float"

    def _print_Integer(self, expr):
        # an int operand sends each float operation to the generic slot (int's method first, then float's with a
        # conversion); a float literal of the same value (exact below 2**53, as that conversion gives it) takes the
        # interpreter's float fast path: the bench case's step model 18 % faster, the same floats
        return repr(float(expr.p)) if abs(expr.p) < 2 ** 53 else str(expr.p)

    def _print_log2(self, expr):
        return f"_log2_float({self._print(expr.args[0])})"

    def _print_Piecewise(self, expr):
        return _nested_cases(self, expr, "nan", lambda value, cond, rest: f"({value} if {cond} else {rest})")


class NamedPrinting:
    """A code printer over names given in place of subexpressions (``names``: each symbol as its parameter, each
    shared subexpression as its temporary once it has one), mixed in before a SymPy code printer.  The expression
    is printed as built: renaming its symbols (``xreplace``) or rebuilding it around temporaries (SymPy's ``cse``)
    builds every Min, Max and relation again, which re-evaluates it — most of a cold ``eval hybrid``'s time went
    there."""

    names: dict

    def _print(self, expr, **kwargs):
        name = self.names.get(expr)
        return name if name is not None else super()._print(expr, **kwargs)

    def _handle_UnevaluatedExpr(self, expr):
        # CodePrinter.doprint's pass for re(UnevaluatedExpr) walks the whole tree (every shared subtree as often
        # as it is reached) on each call; the project's expressions hold neither
        return expr


def _is_denominator(factor) -> bool:
    """A factor below a product's line: a power with a negative rational exponent (x⁻¹, x⁻²)."""
    return factor.is_Pow and factor.exp.is_Rational and factor.exp.is_negative


class _NamedMathPrinter(NamedPrinting, _MathPrinter):
    """:class:`_MathPrinter` over given names (:class:`NamedPrinting`).  With ``ranks`` (a factor → in how many
    products it stands), a product's factors are printed the most common first and a positive coefficient last, so
    that products sharing factors share their printed prefix, ``b*h*s*L`` of ``b*h*s*L*beta*6.0`` and
    ``b*h*s*L*beta_inter*4.0``, which :func:`_repeated_arithmetic` then computes once (Python multiplies left to
    right: the floats are those of that order)."""

    def __init__(self, names: dict, ranks: dict | None = None):
        super().__init__({"fully_qualified_modules": True, "inline": True, "allow_unknown_functions": False,
                          "order": "none"})
        self.names = names
        self.ranks = ranks

    def _print_Mul(self, expr):
        coefficient, rest = expr.as_coeff_Mul()
        if self.ranks is None or not rest.is_Mul:
            return super()._print_Mul(expr)
        if coefficient < 0:     # as SymPy prints it, the sign before the product (a sum prints it as a subtraction)
            positive = rest if coefficient == -1 else sp.Mul(-coefficient, *rest.args, evaluate=False)
            return "-" + self._print_Mul(positive)
        above, below = [], []
        for factor in rest.args:
            (below if _is_denominator(factor) else above).append(factor)
        above.sort(key=lambda factor: -self.ranks.get(factor, 0))       # stable: Mul's own order between equals
        if coefficient != 1:
            above.append(coefficient)
        return super()._print_Mul(sp.Mul(*above, *below, evaluate=False))


def _factor_ranks(exprs) -> dict:
    """Each factor of a product above its line (no number, no denominator) → how many distinct products of
    ``exprs`` hold it (each distinct subtree walked once)."""
    ranks: dict = {}
    seen: set = set()

    def walk(node):
        if node in seen or node.is_Atom:
            return
        seen.add(node)
        if node.is_Mul:
            for factor in node.args:
                if not factor.is_Number and not _is_denominator(factor):
                    ranks[factor] = ranks.get(factor, 0) + 1
        for arg in node.args:
            if isinstance(arg, sp.Basic):
                walk(arg)

    for expr in exprs:
        walk(expr)
    return ranks


def _shared(exprs, conditions: bool = False) -> list:
    """The distinct compound expressions reached more than once from ``exprs``, children before parents (each
    distinct subtree walked once: a step model's Max and Min repeat their arguments); with ``conditions``, the
    relations and their And/Or/Not too (plain Python: a step model tests ``G < c*d*p*t`` in a dozen branches,
    each test a product and a comparison; as a name it is one bool, the branch taken the same)."""
    seen: dict = {}
    order: list = []

    def walk(node):
        if node in seen:
            seen[node] += 1
            return
        seen[node] = 1
        for arg in node.args:
            if isinstance(arg, sp.Basic) and not arg.is_Atom:
                walk(arg)
        order.append(node)

    for expr in exprs:
        if not expr.is_Atom:
            walk(expr)
    # values, and with ``conditions`` their tests (a Piecewise's (value, condition) pair is never assigned on its
    # own; numpy's conditions stay in line: its printer groups products by the arrays they read)
    kinds = (sp.Expr, sp.core.relational.Relational, sp.logic.boolalg.BooleanFunction) if conditions else sp.Expr
    return [node for node in order if seen[node] > 1 and isinstance(node, kinds)]


def _named_source(name: str, exprs: list, params: tuple, printer, conditions: bool = False) -> str:
    """The function's source: each shared subexpression assigned once, in the order its uses need, printed by
    ``printer`` (whose ``names`` hold the symbols' parameter names) over the names given so far."""
    taken = {str(p) for p in params}
    temps = (f"x{i}" for i in itertools.count() if f"x{i}" not in taken)
    assigned = []
    for node in _shared(exprs, conditions):
        text = printer.doprint(node)        # before the node is named: its own value, over its children's names
        printer.names[node] = temp = next(temps)
        assigned.append([temp, text])
    values = [printer.doprint(e) for e in exprs]
    assigned, values = _inline_single_uses(assigned, values)
    if conditions:
        assigned, values = _shared_products(assigned, values, temps)
        assigned, values = _repeated_arithmetic(assigned, values, temps)
    lines = [f"def {name}({', '.join(params)}):"] + [f"    {temp} = {text}" for temp, text in assigned]
    lines.append(f"    return {values[0]}" if len(values) == 1 else f"    return ({', '.join(values)},)")
    return "\n".join(lines) + "\n"


class _ArrayPrinter(NumPyPrinter):
    """numpy code for arrays.  Piecewise is nested ``numpy.where``, Max/Min nested ``numpy.maximum``/
    ``numpy.minimum``.  When ``arrays`` (the symbols that hold arrays) is known, every product puts its
    scalar factors first (one scalar, computed once) and every sum merges the terms that share their array
    part: (2β + γ)·M/N costs two array operations, not four."""

    ones_below_function = "_ones_below"

    def __init__(self, arrays=None):
        super().__init__({"fully_qualified_modules": True, "inline": True, "allow_unknown_functions": False,
                          "order": "none"})
        self._arrays = arrays

    def _print_CeilLog2(self, expr):
        arg = self._print(expr.args[0])
        return f"numpy.ceil(numpy.log2({arg}))"

    def _print_log2(self, expr):
        return f"numpy.log2({self._print(expr.args[0])})"

    def _print_Piecewise(self, expr):
        return _nested_cases(self, expr, "numpy.nan", lambda value, cond, rest: f"numpy.where({cond}, {value}, {rest})")

    def _fold(self, name, args):
        out = self._print(args[0])
        for arg in args[1:]:
            out = f"numpy.{name}({out}, {self._print(arg)})"
        return out

    def _print_Max(self, expr):
        return self._fold("maximum", expr.args)

    def _print_Min(self, expr):
        return self._fold("minimum", expr.args)

    # pairwise, so that a scalar condition beside an array one broadcasts (NumPyPrinter's
    # ``logical_and.reduce((a, b))`` stacks its arguments and fails when one is a scalar and one an array)
    def _print_And(self, expr):
        return self._fold("logical_and", expr.args)

    def _print_Or(self, expr):
        return self._fold("logical_or", expr.args)

    def _is_array(self, expr) -> bool:
        return self._arrays is None or bool(expr.free_symbols & self._arrays)

    def _is_named(self, expr) -> bool:
        """Printed as a name (an input or a temporary): multiplied in place after the compound factors."""
        return expr.is_Symbol

    def _split(self, mul):
        scalars, arrays = [], []
        for arg in mul.args:
            (arrays if self._is_array(arg) else scalars).append(arg)
        return scalars, arrays

    def _array_product(self, factors, coef=sp.Integer(1)) -> str:
        """coef · Π factors, ordered so that numpy reuses its temporaries: the compound factors first (each
        makes a new array, which the scalar and the named arrays then multiply in place), the divisions last."""
        num, den = [], []
        # an unevaluated product may hold another (1/(p·t) is p⁻¹·t⁻¹): its factors ordered with the rest
        for f in (g for factor in factors for g in sp.Mul.make_args(factor)):
            if _is_denominator(f):
                den.append(f.base if f.exp == -1 else sp.Pow(f.base, -f.exp, evaluate=False))
            else:
                num.append(f)
        compound = [f for f in num if not self._is_named(f)]
        named = [f for f in num if self._is_named(f)]
        pieces = [self.parenthesize(f, 50) for f in compound]
        if coef == -1:
            pieces.insert(0, "(-1)")
        elif coef != 1:
            pieces.append(f"({self._print(coef)})")
        pieces += [self._print(f) for f in named]
        text = "*".join(pieces) if pieces else "1.0"
        for f in den:
            text += "/" + self.parenthesize(f, 51)
        return text

    def _print_Mul(self, expr):
        if self._arrays is None or not self._is_array(expr):
            return super()._print_Mul(expr)
        scalars, arrays = self._split(expr)
        if not scalars and len(arrays) == 1:
            return super()._print_Mul(expr)
        return self._array_product(arrays, sp.Mul(*scalars))

    def _print_Add(self, expr, order=None):
        if self._arrays is None or not self._is_array(expr):
            return super()._print_Add(expr, order="none")
        scalar_terms, groups = [], {}
        for term in expr.args:
            if not self._is_array(term):
                scalar_terms.append(term)
                continue
            coef, parts = self._split(term) if term.is_Mul else ([], [term])
            groups.setdefault(tuple(parts), []).append(sp.Mul(*coef))
        pieces = []
        if scalar_terms:
            pieces.append(f"({self._print(sp.Add(*scalar_terms))})")
        for parts, coefs in groups.items():
            text = self._array_product(parts, sp.Add(*coefs))
            pieces.append(text if len(parts) == 1 and parts[0].is_Symbol and text == str(parts[0]) else f"({text})")
        return " + ".join(pieces)


class _NamedArrayPrinter(NamedPrinting, _ArrayPrinter):
    """:class:`_ArrayPrinter` over given names (:class:`NamedPrinting`); whether a part holds an array read off
    the inputs it reads, each shared subtree asked once."""

    def __init__(self, arrays, names: dict):
        super().__init__(arrays)
        self.names = names
        self._reads: dict = {}

    def _is_array(self, expr) -> bool:
        return self._arrays is None or _reads_arrays(expr, self._arrays, self._reads)

    def _is_named(self, expr) -> bool:
        return expr.is_Symbol or expr in self.names


_HELPERS = {"_ceil_log2_float": lambda x: float(math.ceil(math.log2(x))),
            "_log2_float": math.log2,
            "_ones_below_float": lambda x: float(S.ones_below_int(int(round(x)))),
            "_ones_below": ones_below, "math": math, "numpy": np, "nan": math.nan}


#: expressions of more nodes than this are not factored (sympy.factor_terms costs seconds on a step model;
#: the gain is in the small formulas swept over millions of points)
ARRANGE_NODES = 400


def _arrange(expr: sp.Expr) -> sp.Expr:
    """The same value with common factors pulled out of sums ((N−1)·(2α + …)): fewer operations."""
    if not isinstance(expr, sp.Basic) or expr.is_Atom:
        return expr
    nodes = 0
    for _ in sp.preorder_traversal(expr):
        nodes += 1
        if nodes > ARRANGE_NODES:
            return expr
    return sp.factor_terms(expr)


@functools.lru_cache(maxsize=None)
def _free_symbols_of_args(kind: type) -> bool:
    """Whether this class's free symbols are its arguments' (Basic's rule: no bound variables).  Looked up in the
    class's own MRO: a SymPy function class's metaclass has a free_symbols of its own, which type(x).free_symbols
    would find instead."""
    owner = next(k for k in kind.__mro__ if "free_symbols" in vars(k))
    return owner is sp.Basic


def reads_any(expr, hit, memo: dict) -> bool:
    """Whether ``hit`` holds of the free symbols of some leaf of ``expr`` (``hit(set) -> bool``), each subtree
    answered once in ``memo``: SymPy's free_symbols is a union over the whole subtree on every call, so asking
    it at every node of a step model cost half of the model's compilation (and a quarter of a kernel build)."""
    known = memo.get(expr)
    if known is None:
        if expr.args and _free_symbols_of_args(type(expr)):
            known = any(reads_any(a, hit, memo) for a in expr.args)
        else:
            known = hit(expr.free_symbols)
        memo[expr] = known
    return known


def _reads_arrays(expr, arrays: set, memo: dict) -> bool:
    """``bool(expr.free_symbols & arrays)``, each subtree answered once (:func:`reads_any`)."""
    return reads_any(expr, lambda found: bool(found & arrays), memo)


def _over_denominators(expr, arrays: set, seen: dict | None = None, reads: dict | None = None):
    """The same value with the terms of a sum that share an array denominator over it once:
    a/(p·t) + b/(p·t) → (a + b)/(p·t), one array division instead of one per term."""
    seen = {} if seen is None else seen
    reads = {} if reads is None else reads
    if expr.is_Atom or not _reads_arrays(expr, arrays, reads):
        return expr
    if expr in seen:
        return seen[expr]
    args = tuple(_over_denominators(a, arrays, seen, reads) for a in expr.args)
    if args == expr.args:
        out = expr
    elif isinstance(expr, (sp.Max, sp.Min)):
        out = expr.func(*args, evaluate=False)     # the same value; Max's own simplification is slow on long args
    else:
        out = expr.func(*args)
    if out.is_Add:
        groups: dict = {}
        for term in out.args:
            den = sp.Mul(*[f.base ** -f.exp for f in sp.Mul.make_args(term)
                           if _is_denominator(f) and _reads_arrays(f, arrays, reads)])
            groups.setdefault(den, []).append(term)
        if any(den != 1 and len(terms) > 1 for den, terms in groups.items()):
            parts = []
            for den, terms in groups.items():
                if den == 1 or len(terms) == 1:
                    parts += terms
                else:
                    parts.append(sp.Mul(sp.Add(*[t * den for t in terms]),
                                        sp.Pow(den, -1), evaluate=False))
            out = sp.Add(*parts)
    seen[expr] = out
    return out


def _with_branches(term):
    """``(k, pw)`` for a term that is a Piecewise ``pw`` times factors ``k`` holding no other Piecewise of their own
    (``k = 1`` for the Piecewise alone), else None."""
    if isinstance(term, sp.Piecewise):
        return sp.S.One, term
    if term.is_Mul:
        found = [f for f in term.args if isinstance(f, sp.Piecewise)]
        if len(found) == 1:
            return sp.Mul(*[f for f in term.args if f is not found[0]]), found[0]
    return None


def _conditions(pw: sp.Piecewise) -> tuple:
    return tuple(cond for _, cond in pw.args)


def _over_a_sum(term):
    """``(k, terms)`` for a product ``k·(t₁ + t₂ + …)`` whose one sum holds a Piecewise term, else None."""
    if term.is_Mul:
        sums = [f for f in term.args if f.is_Add]
        if len(sums) == 1 and any(_with_branches(t) for t in sums[0].args):
            return sp.Mul(*[f for f in term.args if f is not sums[0]]), sums[0].args
    return None


def _merged_terms(terms) -> list:
    """The terms of a sum with every group of Piecewise terms on the same conditions one Piecewise, its branches the
    groups' branches added: k₁·(a₁ if c else b₁) + k₂·(a₂ if c else b₂) = (k₁a₁ + k₂a₂ if c else k₁b₁ + k₂b₂).  A
    product k·(t₁ + …) whose sum holds a Piecewise that another term shares is spread (k·t₁ + …) to join it."""
    def conditions_of(term):
        found = _with_branches(term)
        return None if found is None else _conditions(found[1])

    counts: dict = {}
    for term in terms:
        spread = _over_a_sum(term)
        for t in (term,) if spread is None else (term, *spread[1]):
            key = conditions_of(t)
            if key is not None:
                counts[key] = counts.get(key, 0) + 1
    flat = []
    for term in terms:
        spread = _over_a_sum(term)
        if spread is not None and any(counts.get(conditions_of(t), 0) > 1 for t in spread[1]):
            flat += [spread[0] * t for t in spread[1]]
        else:
            flat.append(term)
    groups: dict = {}       # conditions → [(k, pw)], in the order met (the file must not depend on PYTHONHASHSEED)
    out = []
    for term in flat:
        found = _with_branches(term)
        if found is not None and counts.get(_conditions(found[1]), 0) > 1:
            groups.setdefault(_conditions(found[1]), []).append(found)
        else:
            out.append(term)
    for conditions, members in groups.items():
        if len(members) == 1:
            out.append(members[0][0] * members[0][1])
            continue
        branches = []
        for j, cond in enumerate(conditions):
            value = sp.Add(*[k * pw.args[j].expr for k, pw in members])
            branches.append((sp.Add(*_merged_terms(value.args)) if value.is_Add else value, cond))
        out.append(sp.Piecewise(*branches, evaluate=False))
    return out


def _content_out(expr):
    """A sum whose terms' coefficients share a rational factor k ≠ 1 as k·(the sum over k), unevaluated: SymPy
    spreads a number over a sum (the backward's 2·(forward) is 2a + 2b + 4c), so the step model's forward and backward
    compute were two sums printed in full; as 2·(a + b + 2c) and (a + b + 2c) the sum is one, computed once."""
    if not expr.is_Add:
        return expr
    coefficients = [term.as_coeff_Mul()[0] for term in expr.args]
    if not all(c.is_Rational for c in coefficients):
        return expr
    content = sp.gcd_list([abs(c) for c in coefficients]) if len(coefficients) > 1 else abs(coefficients[0])
    if content == 1 or content == 0:
        return expr
    inner = sp.Add(*[sp.Mul(c / content, term.as_coeff_Mul()[1]) for c, term in zip(coefficients, expr.args)])
    return sp.Mul(content, inner, evaluate=False)


def _sums_of_sums(exprs) -> dict:
    """Each of ``exprs`` that is a sum holding all the terms of others (a total over the axes and the axes' own sums)
    → the same terms as those sums and the rest, unevaluated: the sums already computed are added, not their terms
    again.  Greedy, the longest sum first, then in the order given."""
    sums = sorted({e: None for e in exprs if e.is_Add}, key=lambda e: -len(e.args))
    out = {}
    for expr in sums:
        left, parts = list(expr.args), []
        for part in sums:
            if len(part.args) < len(expr.args) and len(part.args) <= len(left):
                rest = list(left)
                try:
                    for term in part.args:
                        rest.remove(term)
                except ValueError:
                    continue
                left = rest
                parts.append(part)
        if parts:
            out[expr] = sp.Add(*parts, *left, evaluate=False)
    return out


def merged_branches(exprs) -> list:
    """The same values as ``exprs`` (a bundle's: the step model's quantities), in fewer operations of plain Python.

    The step model prices every collective on both links, ``α·(0 if crosses else n) + α_inter·(n if crosses else
    0)``, its totals add the axes' terms again and its backward is its forward's sum spread over by 2.  Here each
    sum's Piecewise terms on the same conditions become one (:func:`_merged_terms`: the branch taken is computed,
    the zeros are not multiplied nor added), a quantity that is other quantities added reads them
    (:func:`_sums_of_sums`) and a sum's common rational factor is taken out (:func:`_content_out`).  Per call of the
    API's bench case (CPython 3.11) that ran 1,779 bytecode instructions as printed before, 1,336 merged and summed,
    1,284 with the factors ordered (:class:`_NamedMathPrinter`), 1,208 with the factor out (1,812 and 1,463 since
    the step model prices the overlap slowdown, whose terms these regroup less).  All regroup the same
    terms, so the value is the same number; the floats may differ in the last bits (a sum added in another order),
    well inside the 1e-12 the kernel tests allow (tests/numbers/test_numeric.py compares both, exactly and as
    floats).  A branch still runs only when its condition holds, so no division is made that was not made before."""
    exprs = list(exprs)
    regrouped = _sums_of_sums(exprs)
    memo: dict = {}

    def walk(node):
        if node.is_Atom:
            return node
        done = memo.get(node)
        if done is not None:
            return done
        grouped = regrouped.get(node)
        source = node if grouped is None else grouped
        args = [walk(a) if isinstance(a, sp.Basic) else a for a in source.args]
        if grouped is not None:
            out = sp.Add(*args, evaluate=False)
        elif node.is_Add:
            terms = _merged_terms(args)
            out = node if terms == list(node.args) else sp.Add(*terms)    # a condition's sum: left as built
            out = _content_out(out)
        elif args == list(node.args):
            out = node
        elif isinstance(node, (sp.Max, sp.Min, sp.Piecewise)):
            out = node.func(*args, evaluate=False)     # the same value; their own simplification is slow
        else:
            out = node.func(*args)
        memo[node] = out
        return out

    return [walk(e) for e in exprs]


def function_source(name: str, exprs, symbols: tuple, params: tuple, *, target: str, arrays=None,
                    arrange: bool = True, merge: bool = False) -> str:
    """Python source of ``def name(params): ... return (values)``: the expressions ``exprs`` of
    ``symbols`` (passed as ``params``, in order), common subexpressions computed once.

    ``target="math"``: plain Python on floats (scalars); ``"numpy"``: numpy on arrays, where ``arrays``
    (a set of symbols, None = any) tells which inputs are arrays, so that scalar work is done once.
    The code uses ``math``, ``numpy``, ``nan`` and the helpers of :data:`_HELPERS` only.  ``merge`` (plain Python
    only): the expressions regrouped first (:func:`merged_branches`), the same values in fewer operations."""
    exprs = [sp.sympify(e, strict=True) for e in exprs]
    names = {sym: str(param) for sym, param in zip(symbols, params)}
    if target == "math":
        if merge:
            exprs = merged_branches(exprs)
        printer = _NamedMathPrinter(names, _factor_ranks(exprs) if merge else None)
        return _named_source(name, exprs, params, printer, conditions=True)
    if arrange:
        arranged: dict = {}         # a bundle's expressions repeat (the same quantity of several combinations)
        exprs = [arranged[e] if e in arranged else arranged.setdefault(e, _arrange(e)) for e in exprs]
    if arrays:
        # one memo for all the expressions: they share most of their subtrees, each rewritten once
        arrays, seen, reads = set(arrays), {}, {}
        exprs = [_over_denominators(e, arrays, seen, reads) for e in exprs]
    return _named_source(name, exprs, params, _NamedArrayPrinter(None if arrays is None else set(arrays), names))


def _inline_single_uses(assigned: list, values: list) -> tuple[list, list]:
    """Put back into its one use a temporary that the printer's grouping left with a single use: a named
    temporary array cannot be reused in place by numpy, an inline one can."""
    words = re.compile(r"\b(x\d+)\b")
    while True:
        uses: dict = {}
        for text in [t for _, t in assigned] + values:
            for word in words.findall(text):
                uses[word] = uses.get(word, 0) + 1
        unread = [i for i, (temp, _) in enumerate(assigned) if uses.get(temp, 0) == 0]
        if unread:      # a shared subexpression the printer printed through its parts (a quotient's 1/x)
            assigned = [a for i, a in enumerate(assigned) if i not in set(unread)]
            continue
        single = next((i for i, (temp, _) in enumerate(assigned) if uses.get(temp, 0) == 1), None)
        if single is None:
            return assigned, values
        temp, text = assigned.pop(single)
        pattern = re.compile(rf"\b{temp}\b")
        assigned = [[t, pattern.sub(lambda _m: f"({text})", v)] for t, v in assigned]
        values = [pattern.sub(lambda _m: f"({text})", v) for v in values]


#: a parenthesized product of names and whole numbers only (a printed denominator such as ``(c*d*p*t)``), not a call's
#: argument list (no name, ``)`` or ``]`` just before it)
_PRODUCT = re.compile(r"(?<![\w.)\]])\((?:[A-Za-z_]\w*|\d+)(?:\*(?:[A-Za-z_]\w*|\d+))+\)")


def _shared_products(assigned: list, values: list, temps) -> tuple[list, list]:
    """Each parenthesized product printed more than once (SymPy flattens 1/(c*d*t) into the product it divides, so
    the printer's denominators are no shared node) computed once, just before its first use.  The same float either
    way: a parenthesized group is evaluated on its own, left to right, and a product of numbers raises nothing."""
    lines = [text for _, text in assigned] + values
    uses: dict = {}
    for text in lines:
        for group in _PRODUCT.findall(text):
            uses[group] = uses.get(group, 0) + 1
    named = {group: next(temps) for group, count in uses.items() if count > 1}
    if not named:
        return assigned, values

    def rename(text: str) -> str:
        return _PRODUCT.sub(lambda m: named.get(m.group(0), m.group(0)), text)

    out, done = [], set()
    for temp, text in assigned + [[None, value] for value in values]:
        for group in _PRODUCT.findall(text):
            if group in named and group not in done:
                done.add(group)
                out.append([named[group], group[1:-1]])
        out.append([temp, rename(text)])
    return [a for a in out if a[0] is not None], [text for temp, text in out if temp is None]


#: the operations a repeated part may hold (on floats they raise nothing: computed earlier, no refusal moves)
_ARITHMETIC = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*"}


def _repeated_arithmetic(assigned: list, values: list, temps) -> tuple[list, list]:
    """Each sum, difference or product of names and numbers computed in more than one place, one of them whatever
    the branches (neither inside a branch of ``a if c else b`` nor past an and/or's first operand), computed once
    into a temporary just before the first line that holds it; the largest first.  The same floats: a part is a
    subtree of the printed code, one group evaluated left to right on its own wherever it stands (``2.0*b*h*s`` in
    ``2.0*b*h*s*x39/x123`` and in ``2.0*b*h*s/x123``), and + - * raise nothing, so computing one where it is met
    first whatever the branches moves no refusal: the step model of the API's bench case ran 571 float operations,
    of which some 90 repeated one made before."""
    trees = [ast.parse(text, mode="eval") for _, text in assigned] + [ast.parse(v, mode="eval") for v in values]
    changed = [False] * len(trees)
    extra: list = []        # (the line it goes before, temporary, text)
    while True:
        keys: dict = {}     # id(node) → its text, for every part made of the operations above only
        met: dict = {}      # text → [first line, times met, met whatever the branches, a node]

        def walk(node, line: int, always: bool):
            if isinstance(node, ast.Name):
                return node.id
            if isinstance(node, ast.Constant) and type(node.value) in (int, float):
                return repr(node.value)
            if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
                left, right = walk(node.left, line, always), walk(node.right, line, always)
                if left is None or right is None:
                    return None
                key = f"({left}{_ARITHMETIC[type(node.op)]}{right})"
                keys[id(node)] = key
                seen = met.setdefault(key, [line, 0, False, node])
                seen[1] += 1
                seen[2] = seen[2] or always
                return key
            if isinstance(node, ast.IfExp):
                walk(node.test, line, always)
                walk(node.body, line, False)
                walk(node.orelse, line, False)
            elif isinstance(node, ast.BoolOp):
                for i, value in enumerate(node.values):
                    walk(value, line, always and i == 0)
            else:
                for child in ast.iter_child_nodes(node):
                    walk(child, line, always)
            return None

        for line, tree in enumerate(trees):
            walk(tree.body, line, True)
        chosen: list = []
        for key in sorted((k for k, (_, n, always, _) in met.items() if n > 1 and always), key=len, reverse=True):
            if not any(key in other for other in chosen):     # a part of a larger one chosen: counted again after
                chosen.append(key)
        if not chosen:
            break
        names = {}
        for key in chosen:
            line, _, _, node = met[key]
            names[key] = temp = next(temps)
            extra.append((line, temp, ast.unparse(node)))

        class _Named(ast.NodeTransformer):
            hit = False

            def visit_BinOp(self, node):
                key = keys.get(id(node))
                if key in names:
                    self.hit = True
                    return ast.copy_location(ast.Name(names[key], ast.Load()), node)
                return self.generic_visit(node)

        for i, tree in enumerate(trees):
            named = _Named()
            trees[i] = named.visit(tree)
            changed[i] = changed[i] or named.hit
    if not extra:
        return assigned, values
    texts = [text for _, text in assigned] + list(values)
    texts = [ast.unparse(tree.body) if changed[i] else texts[i] for i, tree in enumerate(trees)]
    out = []
    for i, (temp, _) in enumerate(assigned):
        out += [[name, text] for line, name, text in extra if line == i]
        out.append([temp, texts[i]])
    out += [[name, text] for line, name, text in extra if line >= len(assigned)]
    # a line that was all of a part is now another name for its temporary: its uses read the temporary itself
    hoisted = {name for _, name, _ in extra}
    alias = {temp: text for temp, text in out if text in hoisted}
    if alias:
        word = re.compile(r"\b(x\d+)\b")

        def renamed(text: str) -> str:
            return word.sub(lambda m: alias.get(m.group(1), m.group(1)), text)

        out = [[temp, renamed(text)] for temp, text in out if temp not in alias]
        return out, [renamed(v) for v in texts[len(assigned):]]
    return out, texts[len(assigned):]


def _compile(source: str, name: str) -> Callable:
    namespace = dict(_HELPERS)
    exec(compile(source, f"<symcomm.numbers.codeprint {name}>", "exec"), namespace)   # source printed from SymPy above
    return namespace[name]
