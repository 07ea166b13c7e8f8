"""``python -m symcomm.codegen``: write the planner's kernels, ``symcomm/kerneldata/``, from the step model.

The planner ranks layouts by the step-time model (:mod:`symcomm.steptime`), a SymPy expression per option
combination.  Building and compiling those at run time costs seconds; instead this command turns, once,
every option combination the planner searches for the model families of the shipped presets (with the
default flags: embeddings on the end stages, ring context parallelism, 2-byte elements) into DATA: per
family one JSON file holding one graph of operations (:data:`symcomm.kernels.OPS`: add, mul, div, pow by a
number, max, min, where, comparisons...), equal subexpressions one node shared by every combination, and per
combination the nodes of every quantity the planner reports.  :mod:`symcomm.kernels` reads and runs those
files with numpy alone: nothing read is executed as code, and ``tests/test_codegen.py`` fails when the
committed files differ from a fresh generation.

The graph is built by walking the SymPy expressions in the order of their arguments (SymPy's canonical
order, not a hash order), so the files are the same whatever ``PYTHONHASHSEED`` is.  In a product or a sum
the factors or terms that hold no layout variable are grouped first (one scalar, computed once), then the
array ones; negative powers become one division.

Regenerate after any change to the step model, the strategies or the FLOP counts::

    python -m symcomm.codegen            # rewrite symcomm/kerneldata/
    python -m symcomm.codegen --check    # exit 1 if the committed files are stale

Any other combination (``--no-embeddings``, ``--cp-algorithm ulysses``, fp32 or fp8 elements, a
``--model-config`` of another family shape) gets its graph built in the process by :func:`graph_data`
(with SymPy: slower to start, the same numbers, the same interpreter), and the planner says so in a note.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

#: (gated, tied, moe) of the shipped presets' families: GPT-3 (GELU MLP, tied embeddings), Llama (SwiGLU,
#: untied), Mixtral and DeepSeek-V3 (SwiGLU, untied, MoE)
KINDS = (("0", "1", "0"), ("1", "0", "0"), ("1", "0", "1"))
#: the flags the shipped kernels cover: embeddings on the end stages, ring context parallelism, 2-byte elements
EMBEDDINGS, CP, RUN_BYTES = "1", "ring", 2
#: every layout variable is an array; the rest (model, hardware, batch, sequence) are scalars
LAYOUT = ("t", "p", "v", "c", "e", "d", "m")
#: the quantities a kernel returns, in order (then the per-axis communication, axis by axis)
QUANTITIES = ("memory_per_gpu", "compute_time", "optimizer_time", "step_time", "model_flops",
              "exposed_comm_time", "bubble_time")
AXES = ("tp", "cp", "ep", "pp", "dp")
PACKAGE = Path(__file__).resolve().parent / "kerneldata"


def family_name(kind: tuple) -> str:
    gated, tied, moe = kind
    return f"plan_g{gated}_t{tied}_m{moe}"


def combinations(kind: tuple, *, embeddings: str = EMBEDDINGS, cp: str = CP) -> list[tuple]:
    """Every option combination the planner builds for this family shape (its ``_options`` keys)."""
    from . import plan

    gated, tied, moe = kind
    out = []
    for sp_on in plan.SP_CHOICES:
        for recompute in plan.RECOMPUTE:
            for scheme in plan.SCHEMES:
                for schedule in ("1f1b", "interleaved"):
                    out.append(plan.option_key(scheme, recompute, sp_on, schedule, cp=cp, moe=moe,
                                               embeddings=embeddings, tied=tied, gated=gated))
    return out


def quantities(options: tuple, run_bytes: int) -> dict:
    """name → SymPy expression of every quantity a kernel returns, in order."""
    from .steptime import step_model

    q = step_model(run_bytes, **dict(options)).quantities()
    names = list(QUANTITIES)
    names += [f"{kind}_{axis}" for axis in AXES for kind in ("comm_time", "exposed_comm_time")
              if f"comm_time_{axis}" in q]
    return {n: q[n] for n in names}


class _Builder:
    """SymPy expressions → one node list (symcomm.kernels' format): equal subexpressions one node."""

    def __init__(self):
        self.nodes: list[list] = []
        self._index: dict = {}              # node as a tuple → its index
        self._memo: dict = {}               # SymPy expression → its index
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
        from .numeric import _cli_name

        return any(_cli_name(s) in LAYOUT for s in expr.free_symbols)

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

        from . import symbols as S
        from .numeric import _cli_name

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
                             "(symcomm.kernels.OPS); add one there and here, or leave it to symcomm.evaluate")
        return self.node(op, *[self.add(a) for a in expr.args])


def graph_data(family: dict, kernels: list[tuple]) -> dict:
    """A kernel file's data (:mod:`symcomm.kernels`' format) for these (options, run bytes) combinations."""
    from .kernels import FORMAT
    from .numeric import _cli_name

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


def family_data(kind: tuple) -> dict:
    gated, tied, moe = kind
    family = {"run_bytes": RUN_BYTES, "gated": gated, "tied": tied, "moe": moe, "embeddings": EMBEDDINGS, "cp": CP}
    return graph_data(family, [(options, RUN_BYTES) for options in combinations(kind)])


def index_data() -> dict:
    """``kerneldata/index.json``: which file holds which family, and the busiest stage of each axis."""
    from .kernels import FORMAT
    from .strategies import busiest_stage
    from .subjects import subject

    stages = []
    for embeddings in ("0", "1"):
        terms = subject("hybrid", embeddings=embeddings, moe="1").terms
        for axis in AXES:
            mine = [term for term in terms if term.axis == axis]
            if mine:
                stages.append({"embeddings": embeddings == "1", "axis": axis,
                               "stages": [busiest_stage(mine, n) for n in (1, 2, 3)]})
    families = [{"key": [RUN_BYTES, *kind, EMBEDDINGS, CP], "file": family_name(kind)} for kind in KINDS]
    return {"format": FORMAT, "families": families, "stages": stages}


def dumps(data: dict) -> str:
    """Canonical text: one node per line (diffs stay readable), keys in order, no spaces."""
    if "nodes" not in data:
        return json.dumps(data, sort_keys=True, separators=(",", ":"), allow_nan=False) + "\n"
    head = {k: v for k, v in data.items() if k not in ("nodes", "kernels")}
    lines = [json.dumps(head, sort_keys=True, separators=(",", ":"), allow_nan=False)[:-1] + ',"nodes":[']
    lines += [json.dumps(n, separators=(",", ":"), allow_nan=False) + "," for n in data["nodes"]]
    lines[-1] = lines[-1][:-1]
    lines.append('],"kernels":[')
    lines += [json.dumps(k, sort_keys=True, separators=(",", ":"), allow_nan=False) + "," for k in data["kernels"]]
    lines[-1] = lines[-1][:-1]
    lines.append("]}")
    return "\n".join(lines) + "\n"


def generate(kinds=KINDS) -> dict[str, str]:
    """file name → text, every file of ``symcomm/kerneldata/`` (``kinds``: only those families)."""
    out = {"index.json": dumps(index_data())}
    for kind in kinds:
        out[family_name(kind) + ".json"] = dumps(family_data(kind))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m symcomm.codegen", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if symcomm/kerneldata/ is stale")
    args = parser.parse_args(argv)
    files = generate()
    stale = sorted(name for name, text in files.items()
                   if not (PACKAGE / name).is_file() or (PACKAGE / name).read_text(encoding="utf-8") != text)
    extra = sorted(p.name for p in PACKAGE.glob("*.json") if p.name not in files) if PACKAGE.is_dir() else []
    if args.check:
        for name in stale + extra:
            print(f"stale: symcomm/kerneldata/{name}", file=sys.stderr)
        return 1 if stale or extra else 0
    from .files import write_file

    PACKAGE.mkdir(exist_ok=True)
    for name in stale:
        write_file(PACKAGE / name, files[name], what="symcomm/kerneldata")
    for name in extra:
        (PACKAGE / name).unlink()
    print(f"symcomm/kerneldata/: {len(stale)} written, {len(files) - len(stale)} unchanged, {len(extra)} removed",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
