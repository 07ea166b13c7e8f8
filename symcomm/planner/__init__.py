"""The layout planner: every valid layout — (t, p, v, c, e, d), micro-batch size,
data-parallel scheme, recomputation, sequence parallel — that fits in memory, ranked by the
step time of the step-time model (:mod:`symcomm.training.steptime`).

    symcomm plan --model llama3-70b --gpus 1024 --gpus-per-node 8 --hardware h100 \\
                 --batch 1024 --seq 8192 [--top 10] [--json | --csv] [--tp 8 --pp 4 ...] \\
                 [--compare t=8,p=8,v=3,d=1,mb=1,recompute=selective,sp=1]

The layouts are enumerated as numpy arrays; each option combination (data-parallel scheme ×
recompute × SP × 1F1B or interleaved) is one kernel over all its layouts, giving every quantity the planner
reports; a request's kernels run together (:func:`symcomm.numbers.kernels.run_together`: a node their family's
graph shares computed once per class of layouts, not once per kernel).  The kernels are data shipped in the package (``symcomm/planner/kerneldata``,
graphs of numpy operations written by ``python -m symcomm.tools.codegen`` from the step model of
:func:`symcomm.training.steptime.step_model`, common subexpressions once, the options' branches resolved) and run
by :mod:`symcomm.numbers.kernels`: ``symcomm plan`` never loads SymPy for them.  A combination without a shipped
kernel (``--no-embeddings``, ``--cp-algorithm ulysses``, fp32 or fp8 elements, another family shape from
``--model-config``) builds its step model with SymPy and its graph in the process (a note says so), run
by the same interpreter.  Layout sizes (t, p, v, c, e, d, m, the micro-batch) are values, not options, so they never
add a kernel.

Pruning, cheapest first: divisibility; a memory floor no setting can go below (14 bytes per
parameter fully sharded, 14Φ/GPUs, plus the activations of full recompute with SP); then the
step model's own memory per GPU; then the step time only where it can matter: the step is at
least compute · (1 + bubble fraction) + optimizer (the step model's pipeline is (m + (p − 1)/v)
slots of at least one micro-batch's compute each), so an option combination whose every
fitting layout is bounded below by more than the rows asked for (``top``) and the
``--compare`` layout is not timed.  The bound is checked wherever
the step is evaluated.
"""

# the wing's public face: the command (symcomm.commands.plan), the API (symcomm.api), codegen and the tests take these
# from here; the modules beside it hold the rest (request, layouts, kernels, search, fold, report)
from .fold import Plan
from .kernels import option_key
from .layouts import enumerate_layouts, memory_floor
from .report import to_csv, to_json, to_text
from .request import (FLAGS, FRAMEWORKS, KEYS, RECOMPUTE, SCHEMES, SP_CHOICES, TYPED, PlanError, Request, namespace,
                      request_from_args, top_from_args)
from .search import plan

__all__ = ("FLAGS", "FRAMEWORKS", "KEYS", "RECOMPUTE", "SCHEMES", "SP_CHOICES", "TYPED", "Plan", "PlanError", "Request",
           "enumerate_layouts", "memory_floor", "namespace", "option_key", "plan", "request_from_args", "to_csv",
           "to_json", "to_text", "top_from_args")
