"""Expression trees: a formula as plain JSON data, loaded back without evaluating any code.

``symcomm export --format json`` gives every formula a ``tree`` field in this format.
It is the way to read a formula from a file: :func:`from_tree` (or any JSON parser and
a few lines of code in any language) rebuilds it from a whitelist of node types and
symbol names.  The ``srepr`` and ``text`` fields of the same file are SymPy source text
for display and for trusted input only: ``eval()`` / ``sympify()`` of text runs code, so
never evaluate text from a file you did not produce yourself.

**Format** (a node is a JSON object; the whole tree is one node)::

    {"op": "<Name>", "args": [node, ...]}    an operation, its operands in order
    {"symbol": "N"}                          a symbol, by its CLI name (symcomm.core.symbols.SYMBOLS)
    {"integer": "-12"}                       an integer, as an exact decimal string
    {"rational": "1/3"}                      a fraction p/q in lowest terms, q > 1, exact strings

Numbers are always strings of ASCII digits (never JSON numbers, never floats), so no
precision is lost in any JSON parser.  The operations, with their number of operands:

==========================================  ======  ====================================
``op``                                      args    meaning
==========================================  ======  ====================================
``Add``, ``Mul``                            ≥ 2     sum, product
``Pow``                                     2       base ** exponent (a quotient is
                                                    ``Mul`` by ``Pow(x, -1)``)
``Max``, ``Min``                            ≥ 2     largest, smallest operand
``ceiling``, ``floor``, ``Abs``             1       ⌈x⌉, ⌊x⌋, ``|x|``
``log2``                                    1       log₂ x (``sympy.codegen.cfunctions.log2``)
``CeilLog2``                                1       ⌈log₂ x⌉ (``symcomm.core.symbols.CeilLog2``)
``OnesBelow``                               1       Σ popcount(b), b < x (``symcomm.core.symbols.OnesBelow``)
``log``                                     1       natural logarithm
``Piecewise``                               ≥ 1     ``ExprCondPair`` operands, tried in order:
                                                    the value of the first whose condition
                                                    holds
``ExprCondPair``                            2       [value, condition]; only in a Piecewise
``Equality``, ``Unequality``                2       a = b, a ≠ b (a condition)
``StrictLessThan``, ``LessThan``            2       a < b, a ≤ b
``StrictGreaterThan``, ``GreaterThan``      2       a > b, a ≥ b
``And``, ``Or``                             ≥ 2     conjunction, disjunction of conditions
``Not``                                     1       negation of a condition
``true``, ``false``                         0       the constant conditions
==========================================  ======  ====================================

Operands of arithmetic operations, relationals and a Piecewise value are expressions
(numbers, symbols, arithmetic); operands of ``And``, ``Or``, ``Not`` and the condition of
an ``ExprCondPair`` are conditions (relationals, ``And``, ``Or``, ``Not``, ``true``,
``false``).  A tree is an expression.

**Determinism.**  :func:`to_tree` writes the operands in SymPy's canonical order, so the
same expression always gives the same tree (and the same text under
``json.dumps(..., sort_keys=True)``).  Floats never appear: symcomm's formulas are exact,
and :func:`to_tree` refuses a Float rather than write an inexact number.

**Loading.**  :func:`from_tree` accepts only the nodes above and the symbols of
:data:`symcomm.core.symbols.EXPORTED` (symcomm's symbols and B_e; each becomes the very symbol object, with its
assumptions: ``N`` is a positive integer, ``alpha`` a nonnegative real...).  It never
calls ``eval``, ``exec``, ``sympify`` or a parser on any string of the tree; integer
strings must match ``0|-?[1-9][0-9]*`` in ASCII with at most :data:`MAX_DIGITS` digits;
the tree may be at most :data:`MAX_DEPTH` nodes deep and hold at most :data:`MAX_NODES`
nodes (checked iteratively, so a deep tree is refused, not a ``RecursionError``).  The
loader does no arithmetic: the expression is rebuilt exactly as written (SymPy's
``evaluate=False``), so a hostile ``Pow`` of huge numbers costs nothing to load, and a
tree written by :func:`to_tree` gives back an expression identical to the original
(``==``).  Substituting values (:func:`symcomm.numbers.evaluation.exact`) or ``.doit()`` evaluates
it.  Anything else raises :class:`symcomm.base.errors.InputError`, one line naming the place
in the tree (``tree.args[0].args[1]``) and what is allowed there.
"""

from __future__ import annotations

import math
import re

import sympy as sp
from sympy.codegen.cfunctions import log2
from sympy.functions.elementary.piecewise import ExprCondPair

from . import symbols as S
from ..base.errors import InputError

#: Longest integer (digits, sign not counted) an ``integer`` or ``rational`` leaf may hold.
MAX_DIGITS = 400
#: Deepest nesting accepted (the exported formulas are a dozen levels deep).
MAX_DEPTH = 200
#: Most nodes accepted in one tree (the exported formulas hold under a thousand).
MAX_NODES = 100_000

_INTEGER = re.compile(r"0|-?[1-9][0-9]*", re.ASCII)
_RATIONAL = re.compile(r"(-?[1-9][0-9]*)/([1-9][0-9]*)", re.ASCII)

# kinds of node: an expression, a condition, or a Piecewise (value, condition) pair
_EXPR, _BOOL, _PAIR = "expression", "condition", "ExprCondPair"

_RELATIONALS = {
    "Equality": sp.Eq, "Unequality": sp.Ne,
    "StrictLessThan": sp.StrictLessThan, "LessThan": sp.LessThan,
    "StrictGreaterThan": sp.StrictGreaterThan, "GreaterThan": sp.GreaterThan,
}

#: op -> (kind of the node, kind of its operands, least operands, most operands or None)
_OPS: dict[str, tuple[str, str, int, int | None]] = {
    "Add": (_EXPR, _EXPR, 2, None),
    "Mul": (_EXPR, _EXPR, 2, None),
    "Pow": (_EXPR, _EXPR, 2, 2),
    "Max": (_EXPR, _EXPR, 2, None),
    "Min": (_EXPR, _EXPR, 2, None),
    "ceiling": (_EXPR, _EXPR, 1, 1),
    "floor": (_EXPR, _EXPR, 1, 1),
    "Abs": (_EXPR, _EXPR, 1, 1),
    "log2": (_EXPR, _EXPR, 1, 1),
    "CeilLog2": (_EXPR, _EXPR, 1, 1),
    "OnesBelow": (_EXPR, _EXPR, 1, 1),
    "log": (_EXPR, _EXPR, 1, 1),
    "Piecewise": (_EXPR, _PAIR, 1, None),
    "ExprCondPair": (_PAIR, "", 2, 2),       # operands: [expression, condition]
    **{name: (_BOOL, _EXPR, 2, 2) for name in _RELATIONALS},
    "And": (_BOOL, _BOOL, 2, None),
    "Or": (_BOOL, _BOOL, 2, None),
    "Not": (_BOOL, _BOOL, 1, 1),
    "true": (_BOOL, "", 0, 0),
    "false": (_BOOL, "", 0, 0),
}

# the SymPy class of each op (to_tree), and how to build it without evaluating (from_tree)
_CLASSES: dict[type, str] = {
    sp.Add: "Add", sp.Mul: "Mul", sp.Pow: "Pow", sp.Max: "Max", sp.Min: "Min",
    sp.ceiling: "ceiling", sp.floor: "floor", sp.Abs: "Abs", log2: "log2", S.CeilLog2: "CeilLog2", S.OnesBelow: "OnesBelow",
    sp.log: "log",
    sp.Piecewise: "Piecewise", ExprCondPair: "ExprCondPair",
    sp.Eq: "Equality", sp.Ne: "Unequality", sp.StrictLessThan: "StrictLessThan", sp.LessThan: "LessThan",
    sp.StrictGreaterThan: "StrictGreaterThan", sp.GreaterThan: "GreaterThan",
    sp.And: "And", sp.Or: "Or", sp.Not: "Not",
}

_BUILD = {
    "Add": lambda a: sp.Add(*a, evaluate=False),
    "Mul": lambda a: sp.Mul(*a, evaluate=False),
    "Pow": lambda a: sp.Pow(*a, evaluate=False),
    "Max": lambda a: sp.Max(*a, evaluate=False),
    "Min": lambda a: sp.Min(*a, evaluate=False),
    "ceiling": lambda a: sp.ceiling(*a, evaluate=False),
    "floor": lambda a: sp.floor(*a, evaluate=False),
    "Abs": lambda a: sp.Abs(*a, evaluate=False),
    "log2": lambda a: log2(*a, evaluate=False),
    "CeilLog2": lambda a: S.CeilLog2(*a, evaluate=False),
    "OnesBelow": lambda a: S.OnesBelow(*a, evaluate=False),
    "log": lambda a: sp.log(*a, evaluate=False),
    "Piecewise": lambda a: sp.Piecewise(*a, evaluate=False),
    "ExprCondPair": lambda a: ExprCondPair(*a),
    **{name: (lambda a, cls=cls: cls(*a, evaluate=False)) for name, cls in _RELATIONALS.items()},
    "And": lambda a: sp.And(*a, evaluate=False),
    "Or": lambda a: sp.Or(*a, evaluate=False),
    "Not": lambda a: sp.Not(*a, evaluate=False),
    "true": lambda a: sp.true,
    "false": lambda a: sp.false,
}

_LEAVES = ("symbol", "integer", "rational")


# -- writing ---------------------------------------------------------------------------------

def to_tree(expr) -> dict:
    """``expr`` as a JSON-serialisable tree (see the module docstring for the format).

    ``expr`` may hold only the node types of the format and the symbols of
    :data:`symcomm.core.symbols.EXPORTED`; anything else (a Float, an unknown function, a symbol
    symcomm does not define) is an InputError, since the tree could not be loaded back.
    """
    return _to_tree(sp.sympify(expr, strict=True), "tree")


def _to_tree(node, path: str) -> dict:
    if node is sp.true:
        return {"op": "true", "args": []}
    if node is sp.false:
        return {"op": "false", "args": []}
    if isinstance(node, sp.Symbol):
        info = S.EXPORTED.get(node.name)
        if info is None or info.symbol != node:
            raise InputError(f"{path}: symbol {node.name!r} (assumptions {node.assumptions0}) is not one of "
                             f"symcomm's symbols; allowed: {', '.join(S.EXPORTED)}")
        return {"symbol": info.cli_name}
    if isinstance(node, sp.Integer):
        return {"integer": str(int(node))}
    if isinstance(node, sp.Rational):
        return {"rational": f"{node.p}/{node.q}"}
    if isinstance(node, sp.Float):
        raise InputError(f"{path}: a Float ({node}) cannot be written exactly; the tree holds only "
                         "integers and rationals")
    op = _CLASSES.get(type(node))
    if op is None:
        raise InputError(f"{path}: {type(node).__name__} is not a node type of the tree format; allowed: "
                         f"{', '.join(_OPS)}, and symbol, integer and rational leaves")
    return {"op": op, "args": [_to_tree(arg, f"{path}.args[{i}]") for i, arg in enumerate(node.args)]}


# -- reading ---------------------------------------------------------------------------------

def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _kind_name(kind: str) -> str:
    if kind == _PAIR:
        return "an ExprCondPair (only as an operand of Piecewise)"
    if kind == _EXPR:
        return "an expression (a number, a symbol or an arithmetic op)"
    return "a condition (a relational, And, Or, Not, true or false)"


def _leaf(node: dict, path: str, kind: str):
    """The SymPy object of a leaf node, checked against the whitelist."""
    (key, value), = node.items()
    if kind != _EXPR:
        raise InputError(f"{path}: a {key} leaf where {_kind_name(kind)} is required")
    if not isinstance(value, str):
        raise InputError(f"{path}: {key} must be a string, not {type(value).__name__} {_short(value)} "
                         "(numbers are exact decimal strings such as \"12\" or \"1/3\", never JSON numbers)")
    if key == "symbol":
        info = S.EXPORTED.get(value)
        if info is None:
            raise InputError(f"{path}: unknown symbol {_short(value)}; allowed: {', '.join(S.EXPORTED)}")
        return info.symbol
    if key == "integer":
        if len(value) > MAX_DIGITS + 1 or not _INTEGER.fullmatch(value) or len(value.lstrip("-")) > MAX_DIGITS:
            raise InputError(f"{path}: integer {_short(value)} is not allowed; an integer is a string of ASCII "
                             f"digits 0-9 with an optional leading '-', no leading zeros, at most {MAX_DIGITS} digits")
        return sp.Integer(int(value))
    match = _RATIONAL.fullmatch(value) if len(value) <= 2 * MAX_DIGITS + 2 else None
    if match is not None:
        p, q = match.group(1), match.group(2)
        if len(p.lstrip("-")) <= MAX_DIGITS and len(q) <= MAX_DIGITS:
            num, den = int(p), int(q)
            if den > 1 and math.gcd(num, den) == 1:
                return sp.Rational(num, den)
    raise InputError(f"{path}: rational {_short(value)} is not allowed; a rational is 'p/q' in lowest terms with "
                     f"q > 1, ASCII digits (p may start with '-'), at most {MAX_DIGITS} digits each")


def from_tree(tree, where: str = "tree") -> sp.Expr:
    """The SymPy expression a tree describes (the format of the module docstring).

    Only whitelisted node types and symbol names are accepted, no string is ever
    evaluated, and the size of the tree is bounded; anything else raises
    :class:`symcomm.base.errors.InputError` naming the place (``where`` is the name of the
    root in messages, e.g. ``formulas[3].tree``).
    """
    # iterative post-order: no recursion, so depth is checked before it can matter
    count = 1
    root: list = []
    # (node, path, depth, required kind, operands built so far or None before they are pushed)
    stack: list = [(tree, where, 1, _EXPR, root)]
    pending: list = []   # frames of op nodes whose operands are being built
    while stack:
        node, path, depth, kind, out = stack.pop()
        if node is None and path is None:      # marker: all operands of pending[-1] are built
            op, op_path, args, parent_out = pending.pop()
            try:
                built = _BUILD[op](args)
            except (TypeError, ValueError, AttributeError) as err:
                raise InputError(f"{op_path}: {op} cannot be built from these operands "
                                 f"({str(err).splitlines()[0] if str(err) else type(err).__name__})") from None
            if op == "Piecewise" and not built.args:
                raise InputError(f"{op_path}: every condition of this Piecewise is false; allowed: a Piecewise "
                                 "with at least one pair whose condition is not the constant false")
            parent_out.append(built)
            continue
        if not isinstance(node, dict):
            raise InputError(f"{path}: a node must be a JSON object, not {type(node).__name__} {_short(node)}")
        keys = set(node)
        if len(keys) == 1 and next(iter(keys)) in _LEAVES:
            out.append(_leaf(node, path, kind))
            continue
        if keys != {"op", "args"}:
            raise InputError(f"{path}: a node has the keys op and args (an operation) or exactly one of "
                             f"{', '.join(_LEAVES)} (a leaf), not {_short(sorted(map(str, keys)))}")
        op, args = node["op"], node["args"]
        if not isinstance(op, str) or op not in _OPS:
            raise InputError(f"{path}: unknown op {_short(op)}; allowed: {', '.join(_OPS)}")
        own, operand, least, most = _OPS[op]
        if own != kind:
            raise InputError(f"{path}: {op} is not {_kind_name(kind)}")
        if not isinstance(args, list):
            raise InputError(f"{path}.args: must be a JSON array, not {type(args).__name__}")
        if len(args) < least or (most is not None and len(args) > most):
            arity = f"exactly {least}" if least == most else f"at least {least}"
            raise InputError(f"{path}: {op} takes {arity} operand{'s' if most != 1 else ''}, not {len(args)}")
        if args and depth >= MAX_DEPTH:
            raise InputError(f"{path}: the tree is nested deeper than {MAX_DEPTH} levels; allowed: at most {MAX_DEPTH}")
        count += len(args)
        if count > MAX_NODES:
            raise InputError(f"{path}: the tree holds more than {MAX_NODES} nodes; allowed: at most {MAX_NODES}")
        built: list = []
        pending.append((op, path, built, out))
        stack.append((None, None, 0, "", None))
        kinds = [_EXPR, _BOOL] if op == "ExprCondPair" else [operand] * len(args)
        # pushed in reverse so that operands are built in order
        for i in reversed(range(len(args))):
            stack.append((args[i], f"{path}.args[{i}]", depth + 1, kinds[i], built))
    (expr,) = root
    return expr
