"""The planner's step model as a kernel graph (:mod:`symcomm.numbers.kernels`' format), built from SymPy.

:func:`graph_data` walks the SymPy expressions of :func:`symcomm.training.steptime.step_model`, for some option
combinations, into one node list: equal subexpressions one node, shared by every combination.  The walk
follows the order of SymPy's arguments (its canonical order, not a hash order), so the same expressions
give the same data whatever ``PYTHONHASHSEED`` is.  In a product or a sum the factors or terms that hold no
layout variable are grouped first (one scalar, computed once), then the array ones; negative powers become
one division.  ``python -m symcomm.tools.codegen`` ships the result for the presets' families; the planner builds
any other combination here, in the process.
"""

from __future__ import annotations

#: every layout variable is an array; the rest (model, hardware, batch, sequence) are scalars
LAYOUT = ("t", "p", "v", "c", "e", "d", "m")
#: the quantities a kernel returns, in order (then the per-axis communication, axis by axis)
QUANTITIES = ("memory_per_gpu", "compute_time", "optimizer_time", "step_time", "model_flops",
              "exposed_comm_time", "bubble_time")
AXES = ("tp", "cp", "ep", "pp", "dp")


def quantities(options: tuple, run_bytes: int) -> dict:
    """name → SymPy expression of every quantity a kernel returns, in order."""
    from ..training.steptime import step_model

    q = step_model(run_bytes, **dict(options)).quantities()
    names = list(QUANTITIES)
    names += [f"{kind}_{axis}" for axis in AXES for kind in ("comm_time", "exposed_comm_time")
              if f"comm_time_{axis}" in q]
    return {n: q[n] for n in names}


class _Builder:
    """SymPy expressions → one node list (symcomm.numbers.kernels' format): equal subexpressions one node."""

    def __init__(self):
        self.nodes: list[list] = []
        self._index: dict = {}              # node as a tuple → its index
        self._memo: dict = {}               # SymPy expression → its index
        self._arrays: dict = {}             # SymPy expression → whether it reads a layout variable
        self.params: list[str] = []

    def node(self, *node) -> int:
        key = tuple((type(x).__name__, x) if node[0] == "num" else x for x in node)
        if key not in self._index:
            self._index[key] = len(self.nodes)
            self.nodes.append(list(node))
        return self._index[key]

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
        """Whether expr reads a layout variable; each subtree answered once (free_symbols walks the whole
        subtree on every call: asked of every argument of every sum and product, it was a quarter of a build)."""
        from ..numbers.codeprint import _free_symbols_of_args
        from ..numbers.rational import _cli_name

        known = self._arrays.get(expr)
        if known is None:
            if expr.args and _free_symbols_of_args(type(expr)):
                known = any(self.is_array(a) for a in expr.args)
            else:
                known = any(_cli_name(s) in LAYOUT for s in expr.free_symbols)
            self._arrays[expr] = known
        return known

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
        from ..numbers.rational import _cli_name

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
                raise ValueError(f"{expr}: a power with exponent {expr.exp}; kernels take rational exponents only")
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


def graph_data(family: dict, kernels: list[tuple]) -> dict:
    """A kernel file's data (:mod:`symcomm.numbers.kernels`' format) for these (options, run bytes) combinations."""
    from ..numbers.kernels import FORMAT
    from ..numbers.rational import _cli_name

    built = [(options, run_bytes, quantities(options, run_bytes)) for options, run_bytes in kernels]
    builder = _Builder()
    builder.params = sorted({_cli_name(s) for _, _, q in built for e in q.values() for s in e.free_symbols})
    entries = []
    for options, run_bytes, q in built:
        outputs = [builder.add(e) for e in q.values()]
        entries.append({"options": [list(o) for o in options], "run_bytes": run_bytes,
                        "quantities": list(q), "outputs": outputs})
    return {"format": FORMAT, "family": family, "params": builder.params, "nodes": builder.nodes,
            "kernels": entries}
