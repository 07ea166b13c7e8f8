"""One tree rewrite for the symbolic core: ``xreplace`` with each distinct subtree rebuilt once.

A cost's substitution (:mod:`symcomm.core.cost`) and the prover's rewrite of a claim's integer symbols
(:mod:`symcomm.core.proof`) walk the same way; the prover only builds a changed Min or Max its own way.
"""

from __future__ import annotations

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
