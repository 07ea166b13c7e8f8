"""SymPy expressions → one node list: the graph form of :mod:`symcomm.numbers.kernels` (the planner's kernels)
and of the page's step model (``docs/site/formulas/hybrid__step.js``, :mod:`symcomm.views.site`).

Equal subexpressions are one node, shared by every expression added to the same builder (the option
combinations of a model family share most of their parts).  The walk follows the order of SymPy's arguments
(its canonical order, not a hash order), so the same expressions give the same data whatever
``PYTHONHASHSEED`` is.  In a product or a sum the factors or terms that read no *array* parameter are grouped
first (one scalar node, computed once), then the array ones; negative powers become one division.  The
vocabulary is :data:`symcomm.numbers.kernels.OPS`; both interpreters (numpy there, the page's JavaScript in
:func:`symcomm.views.export.javascript.graph_script`) run the same nodes.
"""

from __future__ import annotations


class GraphBuilder:
    """SymPy expressions → one node list: equal subexpressions one node.  ``arrays``: the parameter names
    that are arrays (the planner's layout variables), whose terms and factors come after the scalar ones."""

    def __init__(self, arrays: tuple = ()):
        self.nodes: list[list] = []
        self._index: dict = {}              # node as a tuple → its index
        self._memo: dict = {}               # SymPy expression → its index
        self._arrays: dict = {}             # SymPy expression → whether it reads an array parameter
        self.params: list[str] = []
        self.arrays = frozenset(arrays)

    def node(self, *node) -> int:
        key = tuple((type(x).__name__, x) if node[0] == "num" else x for x in node)
        if key not in self._index:
            self._index[key] = len(self.nodes)
            self.nodes.append(list(node))
        return self._index[key]

    def arg(self, name: str) -> int:
        """The node of a parameter, by name (one of :attr:`params`)."""
        return self.node("arg", self.params.index(name))

    def read_as(self, symbol, index: int) -> None:
        """Read ``symbol`` as node ``index`` wherever it occurs (what ``xreplace`` does to an expression,
        without rebuilding it: no SymPy re-evaluates a Max or Min whose arguments changed)."""
        self._memo[symbol] = index

    def number(self, value) -> int:
        import sympy as sp

        if value is sp.nan:
            return self.node("nan")
        if value.is_Integer:
            return self.node("num", int(value))
        if value.is_Rational:
            return self.node("num", int(value.p) / int(value.q))      # correctly rounded, as Python divides
        if value.is_Float:
            return self.node("num", float(value))
        raise ValueError(f"{value}: not a finite real number; a kernel cannot hold it")

    def is_array(self, expr) -> bool:
        """Whether expr reads an array parameter, each subtree answered once (codeprint.reads_any)."""
        from .codeprint import reads_any
        from .rational import _cli_name

        return bool(self.arrays) and reads_any(
            expr, lambda found: any(_cli_name(x) in self.arrays for x in found), self._arrays)

    def grouped(self, op: str, args: list) -> int:
        """op over args, the scalar ones first as one node (computed once), then the array ones."""
        scalars = [a for a in args if not self.is_array(a)]
        arrays = [a for a in args if self.is_array(a)]
        ids = [self.add(a) for a in scalars]
        head = [self.node(op, *ids)] if len(ids) > 1 else ids
        rest = head + [self.add(a) for a in arrays]
        return rest[0] if len(rest) == 1 else self.node(op, *rest)

    def add(self, expr) -> int:
        if expr in self._memo:
            return self._memo[expr]
        got = self._convert(expr)
        self._memo[expr] = got
        return got

    def _convert(self, expr) -> int:
        import sympy as sp
        from sympy.codegen.cfunctions import log2

        from ..core import symbols as S
        from .rational import _cli_name

        if expr.is_Symbol:
            name = _cli_name(expr)
            if name not in self.params:
                raise ValueError(f"{name}: not a parameter of this family")
            return self.node("arg", self.params.index(name))
        if expr.is_Number or expr is sp.nan:
            return self.number(expr)
        if expr.is_Add:
            return self.grouped("add", list(expr.args))
        if expr.is_Mul:
            num, den = [], []
            for f in expr.args:
                if f.is_Pow and f.exp.is_Rational and f.exp.is_negative:
                    den.append(f.base if f.exp == -1 else sp.Pow(f.base, -f.exp))
                else:
                    num.append(f)
            top = self.grouped("mul", num) if num else self.node("num", 1)
            return self.node("div", top, self.grouped("mul", den)) if den else top
        if expr.is_Pow:
            if not expr.exp.is_Rational:
                # an exponent that is a parameter (the routed experts k of the MoE dispatch's places hit,
                # symcomm.training.routing): the node of its value
                return self.node("pow", self.add(expr.base), self.add(expr.exp))
            if expr.exp.is_negative:
                base = expr.base if expr.exp == -1 else sp.Pow(expr.base, -expr.exp)
                return self.node("div", self.node("num", 1), self.add(base))
            return self.node("pow", self.add(expr.base), self.number(expr.exp))
        if isinstance(expr, sp.Piecewise):
            out = self.node("nan")
            for value, cond in reversed(expr.args):
                if cond is sp.true:
                    out = self.add(value)
                else:
                    out = self.node("where", self.add(cond), self.add(value), out)
            return out
        simple = {sp.Max: "max", sp.Min: "min", sp.And: "and", sp.Or: "or", sp.Not: "not",
                  sp.ceiling: "ceil", sp.floor: "floor", log2: "log2", S.CeilLog2: "ceil_log2",
                  sp.StrictLessThan: "lt", sp.LessThan: "le", sp.StrictGreaterThan: "gt",
                  sp.GreaterThan: "ge", sp.Equality: "eq", sp.Unequality: "ne"}
        op = simple.get(type(expr))
        if op is None:
            raise ValueError(f"{type(expr).__name__} ({expr}): no kernel operation computes it "
                             "(symcomm.numbers.kernels.OPS); add one there and here, or leave it to symcomm.numbers.evaluation")
        return self.node(op, *[self.add(a) for a in expr.args])

