"""The planner's step model as a kernel graph (:mod:`symcomm.numbers.kernels`' format), built from SymPy.

:func:`graph_data` walks the SymPy expressions of :func:`symcomm.training.steptime.step_model`, for some option
combinations, into one node list: equal subexpressions one node, shared by every combination.  The walk
follows the order of SymPy's arguments (:class:`symcomm.numbers.graphs.GraphBuilder`, with the layout variables
as its arrays: in a product or a sum the factors or terms that hold none are grouped first, one scalar computed
once).  ``python -m symcomm.tools.codegen`` ships the result for the presets' families; the planner builds
any other combination here, in the process.
"""

from __future__ import annotations

from ..numbers.graphs import GraphBuilder     # the one SymPy → graph walk (the page's step model uses it too)

#: every layout variable is an array; the rest (model, hardware, batch, sequence) are scalars
LAYOUT = ("t", "p", "v", "c", "e", "d", "m")
#: the quantities a kernel returns, in order (then the per-axis communication, axis by axis)
QUANTITIES = ("memory_per_gpu", "compute_time", "optimizer_time", "step_time", "model_flops",
              "exposed_comm_time", "bubble_time", "model_flops_causal")
AXES = ("tp", "cp", "ep", "pp", "dp")


def quantities(options: tuple, run_bytes: int) -> dict:
    """name → SymPy expression of every quantity a kernel returns, in order."""
    from ..training.steptime import step_model

    model = step_model(run_bytes, **dict(options))
    # no kernel reads the ratios; the plan's mfu_causal divides model_flops_causal as eval's does
    q = {**model.quantities(ratios=False), "model_flops_causal": model.model_flops_causal}
    names = list(QUANTITIES)
    names += [f"{kind}_{axis}" for axis in AXES for kind in ("comm_time", "exposed_comm_time")
              if f"comm_time_{axis}" in q]
    return {n: q[n] for n in names}


class _Builder(GraphBuilder):
    """The planner's builder: the layout variables are its arrays (:data:`LAYOUT`)."""

    def __init__(self):
        super().__init__(arrays=LAYOUT)


def graph_data(family: dict, kernels: list[tuple]) -> dict:
    """A kernel file's data (:mod:`symcomm.numbers.kernels`' format) for these (options, run bytes) combinations."""
    from ..core.rewrite import free_symbols
    from ..numbers.kernels import FORMAT
    from ..numbers.rational import _cli_name

    built = [(options, run_bytes, quantities(options, run_bytes)) for options, run_bytes in kernels]
    builder = _Builder()
    # each shared subtree's symbols found once (SymPy's own free_symbols walks a Max's repeated arguments again
    # every time they are reached: a fifth of a family's build)
    builder.params = sorted({_cli_name(s) for _, _, q in built for e in q.values() for s in free_symbols(e)})
    entries = []
    for options, run_bytes, q in built:
        outputs = [builder.add(e) for e in q.values()]
        entries.append({"options": [list(o) for o in options], "run_bytes": run_bytes,
                        "quantities": list(q), "outputs": outputs})
    return {"format": FORMAT, "family": family, "params": builder.params, "nodes": builder.nodes,
            "kernels": entries}
