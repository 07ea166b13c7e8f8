"""Tree walks for the symbolic core, each distinct subtree visited once: ``xreplace`` (:func:`rebuilt`) and the
free symbols (:func:`free_symbols`).

A cost's substitution (:mod:`symcomm.core.cost`), the prover's rewrite of a claim's integer symbols
(:mod:`symcomm.core.proof`) and a formula at numbers (:func:`at`, the chapters' worked examples) walk the same way;
the prover only builds a changed Min or Max its own way.
"""

from __future__ import annotations

import functools

import sympy as sp


def rebuilt(expr: sp.Basic, rule: dict, memo: dict, combine=None) -> sp.Expr:
    """``expr.xreplace(rule)`` with each distinct subtree rebuilt once: ``memo`` (one per
    substitution, shared by a cost's fields) holds what every subtree became.  A cost's
    fields repeat subtrees (a segment's Min and ceilings), and re-evaluating a Min is slow.
    ``combine(func, args)`` builds a node whose arguments changed (default ``func(*args)``;
    the prover decides a Min or Max there)."""

    def walk(node):
        if node in rule:
            return rule[node], True
        done = memo.get(node)
        if done is not None:
            return done
        args, changed = [], False
        for arg in node.args:
            if isinstance(arg, sp.Basic):
                new, moved = walk(arg)
                args.append(new)
                changed |= moved
            else:
                args.append(arg)
        if not changed:
            out = (node, False)
        else:
            out = (combine(node.func, args) if combine else node.func(*args), True)
        memo[node] = out
        return out

    return walk(expr)[0]


def at(expr, values) -> sp.Expr:
    """``expr.subs(values)`` for ``values`` mapping symbols to numbers: one simultaneous :func:`rebuilt`, each distinct
    subtree rebuilt once (SymPy's ``subs`` substitutes one symbol after another, re-evaluating every Min, Max and
    ceiling on the way to a number as often as the symbols).  Numbers only: then sequential and simultaneous
    substitution agree, and so do their results."""
    rule = {sp.sympify(key, strict=True): sp.sympify(value, strict=True) for key, value in dict(values).items()}
    if not all(key.is_Symbol and value.is_number for key, value in rule.items()):
        raise TypeError("at() substitutes numbers for symbols; use subs for anything else")
    return rebuilt(sp.sympify(expr, strict=True), rule, {})


@functools.lru_cache(maxsize=None)
def _answers_free_symbols(cls) -> bool:
    """True when ``cls`` (or a class between it and Basic) defines ``free_symbols`` itself.  Read off the MRO's own
    dicts: ``cls.free_symbols`` of a Function class is its metaclass's property, not the instances'."""
    return next(k for k in cls.__mro__ if "free_symbols" in k.__dict__) is not sp.Basic


#: every subtree's free symbols, shared by the walks of all expressions: the step model's quantities (the step time,
#: tokens per second, MFU, ...) share their large subtrees, and a memo per expression walked each of them once per
#: quantity (half a second of the docs build).  Bounded for a long-lived process: emptied when full, never stale
#: (a node's free symbols are a function of the node).
_SUBTREES: dict = {}
_SUBTREES_MAX = 200_000


# kept per expression (a formula's printers ask of each of its subexpressions); bounded, for a long-lived process
@functools.lru_cache(maxsize=16384)
def free_symbols(expr: sp.Basic) -> frozenset:
    """``expr.free_symbols`` with each distinct subtree walked once.  SymPy's own walks the tree, every shared
    subtree as often as it is reached: a step model's Max and Min repeat their arguments, so its tree is many times
    its distinct nodes (most of the docs build's JavaScript export went there).  A node whose class defines
    ``free_symbols`` itself (a Symbol; a Lambda, an Integral, whose bound variables are not free) answers it."""
    if len(_SUBTREES) > _SUBTREES_MAX:
        _SUBTREES.clear()
    memo = _SUBTREES

    def walk(node):
        found = memo.get(node)
        if found is None:
            if _answers_free_symbols(type(node)):
                found = frozenset(node.free_symbols)
            else:
                found = frozenset().union(*(walk(arg) for arg in node.args))
            memo[node] = found
        return found

    return walk(expr)
