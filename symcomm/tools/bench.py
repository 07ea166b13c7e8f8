"""``python -m symcomm.tools.bench``: how fast symcomm is, measured honestly, as one JSON document on stdout,
written too (a whole run, from a source tree) to ``derivations/data/bench.json`` and rendered to docs/speed.md.

Every goal is judged on the thing it names, against a baseline written as a careful person would:

* **vector** — the float evaluator over 10⁷ points against the same formula factored by hand in numpy
  (ring all-reduce time; the hybrid strategy's bytes sent per GPU, Piecewise included), float arrays;
  integer arrays (which take the float path unless ``exact=True`` is asked for) shown beside;
* **scalar, large** — one call of the hybrid strategy's time at one point against one SymPy
  ``subs(...).evalf()`` of it;
* **scalar, small** — one call of the ring all-reduce time (argument checks included);
* **one configuration** — the step model of one layout, in-process: one scalar evaluation of every quantity,
  a configuration's share of a ``plan()`` call, and of one vectorised kernel call; against llm-analysis's
  ``training()`` when it is installed (skipped with a note otherwise);
* **API** — ``symcomm.evaluate`` as users call it (the whole answer), ring all-reduce against SymPy
  ``subs().evalf()`` of the same formula and the core evaluator, one hybrid layout with its step time against
  the step model's core, SymPy ``subs().evalf()`` of its step-time formula and llm-analysis ``training()`` (skipped
  when it is not installed); figures are the medians of the paired rounds' CPU ratios (``--only api`` runs these
  alone);
* **cold** — whole fresh processes: ``symcomm plan`` at 16,384 GPUs against ``python -c "import sympy"``,
  ``symcomm prove`` (imports included) and ``python build_docs.py`` (from a source tree); ``symcomm eval all_reduce`` against ``python -c "import numpy"``, and
  ``symcomm eval hybrid`` against the llm-analysis CLI on the same configuration (``--only eval`` runs these alone);
* **scaling** (no goal) — ``plan`` from 64 to 131,072 GPUs, and with a search space cut by fixed options.

Pairs run interleaved (A B B A …) in one process, or one fresh process at a time, after a warm-up; each
figure keeps its minimum and median, with the CPU time beside the wall time.  The goals are for a 2-core
machine that may be shared: read the medians and the spread, and run it twice.  Progress goes to stderr.
Nothing here is a test: the test suite never times anything.
"""

from __future__ import annotations

import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

POINTS = 10 ** 7
PLAN_ARGS = ("--model", "llama3-405b", "--gpus", "16384", "--gpus-per-node", "8", "--hardware", "h100",
             "--batch", "2048", "--seq", "8192")


def _progress(text: str) -> None:
    print(f"bench: {text}", file=sys.stderr, flush=True)


def _once(fn, inner: int) -> tuple[float, float]:
    """(wall, CPU) seconds of one call of ``fn``, as the mean over ``inner`` calls."""
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(inner):
        fn()
    return (time.perf_counter() - wall) / inner, (time.process_time() - cpu) / inner


def _summary(walls: list, cpus: list) -> dict:
    return {"wall_min_s": min(walls), "wall_median_s": statistics.median(walls),
            "cpu_min_s": min(cpus), "cpu_median_s": statistics.median(cpus), "runs": len(walls)}


def paired(a, b, rounds: int, inner_a: int = 1, inner_b: int = 1) -> dict:
    """A and B interleaved (A B, B A, A B …) after one warm-up each: per-call times of each and the
    ratio A/B (of the minimums, and the median of the rounds' ratios)."""
    a(), b()
    wa, ca, wb, cb = [], [], [], []
    for i in range(rounds):
        order = ((a, inner_a, wa, ca), (b, inner_b, wb, cb))
        for fn, inner, walls, cpus in (order if i % 2 == 0 else order[::-1]):
            wall, cpu = _once(fn, inner)
            walls.append(wall)
            cpus.append(cpu)
    return {"a": _summary(wa, ca), "b": _summary(wb, cb),
            "ratio_wall_min": min(wa) / min(wb), "ratio_cpu_min": min(ca) / min(cb),
            "ratio_wall_median_of_rounds": statistics.median(x / y for x, y in zip(wa, wb)),
            "ratio_cpu_median_of_rounds": statistics.median(x / y for x, y in zip(ca, cb))}


def _process(argv) -> tuple[float, float]:
    """(wall, CPU of the child) seconds of one fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def paired_processes(a: list, b: list | None, rounds: int) -> dict:
    """Fresh processes, A and B interleaved after one warm-up each (the files in the page cache)."""
    _process(a)
    if b is not None:
        _process(b)
    wa, ca, wb, cb = [], [], [], []
    for i in range(rounds):
        order = [(a, wa, ca)] + ([(b, wb, cb)] if b is not None else [])
        for argv, walls, cpus in (order if i % 2 == 0 else order[::-1]):
            wall, cpu = _process(argv)
            walls.append(wall)
            cpus.append(cpu)
    out = {"a": _summary(wa, ca)}
    if b is not None:
        out.update({"b": _summary(wb, cb), "ratio_wall_min": min(wa) / min(wb), "ratio_cpu_min": min(ca) / min(cb),
                    "ratio_wall_median_of_rounds": statistics.median(x / y for x, y in zip(wa, wb)),
                    "ratio_cpu_median_of_rounds": statistics.median(x / y for x, y in zip(ca, cb))})
    return out


#: the units a goal's figure is in: a ratio, seconds, or microseconds (the speed page prints each as such)
FIGURE_UNITS = ("×", "s", "µs")


def _goal(name: str, target: str, figure: float, met: bool | None, what: str, measured: dict, unit: str = "×",
          **more) -> dict:
    """One goal's result; ``unit``: what ``figure`` is in (:data:`FIGURE_UNITS`).  A goal with a per-call bound
    beside its ratio passes ``per_call_s`` (the CPU median of one call, seconds): the page prints both."""
    if unit not in FIGURE_UNITS:
        raise ValueError(f"unit={unit!r}: one of {', '.join(FIGURE_UNITS)}")
    return {"goal": name, "target": target, "figure": figure, "unit": unit, "met": met, "what": what,
            "measured": measured, **more}


# -- the goals ---------------------------------------------------------------------------------------

def bench_vector() -> list[dict]:
    from ..collectives.algorithms import algorithm
    from ..numbers.numeric import evaluator
    from ..training.subjects import subject

    rng = np.random.default_rng(0)
    out = []

    # ring all-reduce time, N and M arrays
    ring = evaluator(algorithm("all_reduce", "ring").cost.time)
    Ni = rng.integers(2, 4097, POINTS)
    Mi = rng.integers(1, 2 ** 34, POINTS)
    N, M = Ni.astype(np.float64), Mi.astype(np.float64)
    alpha, beta, gamma = 5e-6, 1 / 450e9, 1 / 1.1e12

    def hand_ring():
        return (N - 1) * (2 * alpha + (2 * beta + gamma) * M / N)

    def ours_ring():
        return ring.float(N=N, M=M, alpha=alpha, beta=beta, gamma=gamma)

    def ours_ring_int():
        return ring(N=Ni, M=Mi, alpha=alpha, beta=beta, gamma=gamma)

    def hand_ring_int():
        return (Ni - 1) * (2 * alpha + (2 * beta + gamma) * Mi / Ni)

    np.testing.assert_allclose(ours_ring(), hand_ring(), rtol=1e-12)
    np.testing.assert_allclose(ours_ring_int(), hand_ring(), rtol=1e-12)
    _progress("vector: ring all-reduce time, 10^7 points")
    got = paired(ours_ring, hand_ring, rounds=7)
    ints = paired(ours_ring_int, hand_ring_int, rounds=5)
    out.append(_goal("vector evaluator, ring all-reduce time, 10^7 points", "≤ 1.1× factored numpy by hand",
                     got["ratio_wall_min"], got["ratio_wall_min"] <= 1.1,
                     "fast(ring time) over float arrays N, M vs (N − 1)·(2α + (2β + γ)·M/N) in numpy", got,
                     integer_arrays={"ratio_wall_min": ints["ratio_wall_min"],
                                     "note": "int64 arrays N, M through the evaluator's default call (the float "
                                             "path: converted to float64 once, never the exact path unless "
                                             "exact=True) vs the hand formula on the same int64 arrays"},
                     generated_source=ring.source_for(N=N, M=M, alpha=alpha, beta=beta, gamma=gamma).strip()))
    del Ni, Mi, N, M

    # the hybrid strategy's bytes sent per GPU (bf16), t, p, c, d arrays
    send = subject("hybrid").cost.send
    hybrid = evaluator(2 * send)
    layouts = {k: rng.integers(1, 65, POINTS).astype(np.float64) for k in ("t", "p", "c", "d")}
    scalars = {"L": 80, "b": 1024, "h": 8192, "s": 4096, "Phi": 70_000_000_000}
    t, p, c, d = (layouts[k] for k in ("t", "p", "c", "d"))
    L, b, h, s, Phi = (float(scalars[k]) for k in ("L", "b", "h", "s", "Phi"))

    def hand_hybrid():
        cd = c * d
        bhs = b * h * s
        stage = np.where(p == 1, 0.0, np.where(p == 2, 0.5, 1.0))
        return 2 * ((L * bhs * (6 * (c - 1) + 8 * (t - 1)) + 2 * Phi * (cd - 1)) / (cd * p * t) + 2 * bhs * stage / cd)

    def ours_hybrid():
        return hybrid.float(**layouts, **scalars)

    np.testing.assert_allclose(ours_hybrid(), hand_hybrid(), rtol=1e-12)
    _progress("vector: hybrid bytes sent per GPU, 10^7 points")
    got = paired(ours_hybrid, hand_hybrid, rounds=7)
    out.append(_goal("vector evaluator, hybrid bytes per GPU, 10^7 points", "≤ 1.1× factored numpy by hand",
                     got["ratio_wall_min"], got["ratio_wall_min"] <= 1.1,
                     "fast(2 · hybrid send) over float arrays t, p, c, d (L, b, h, s, Φ scalars) vs the same "
                     "sum factored by hand in numpy (Piecewise as numpy.where)", got,
                     formula=str(send), generated_source=hybrid.source_for(**layouts, **scalars).strip()))
    return out


def bench_scalar() -> list[dict]:
    import sympy as sp

    from ..collectives.algorithms import algorithm
    from ..numbers.numeric import evaluator
    from ..training.subjects import subject
    from ..core.symbols import SYMBOLS

    out = []
    expr = subject("hybrid").cost.time
    ev = evaluator(expr)
    point = {"G": 8, "L": 80, "Phi": 70_000_000_000, "alpha": 5e-6, "alpha_inter": 1e-5, "b": 1024,
             "beta": 1 / 450e9, "beta_inter": 1 / 50e9, "c": 1, "d": 32, "gamma": 1 / 1.1e12, "h": 8192, "m": 32,
             "p": 4, "s": 4096, "t": 8}
    floats = {k: float(v) for k, v in point.items()}
    subs = {SYMBOLS[k].symbol: sp.Float(v) if isinstance(v, float) else sp.Integer(v) for k, v in point.items()}
    want = float(expr.subs(subs).evalf())
    assert abs(ev.float(**floats) - want) <= 1e-12 * abs(want)
    _progress("scalar: hybrid time, one call vs one SymPy subs().evalf()")
    got = paired(lambda: ev.float(**floats), lambda: expr.subs(subs).evalf(), rounds=5, inner_a=2000, inner_b=1)
    speedup = 1 / got["ratio_wall_min"]
    out.append(_goal("one scalar call, large expression (hybrid time)", "≥ 10^4× SymPy subs().evalf()", speedup,
                     speedup >= 1e4, "evaluator(hybrid time).float(**point), 16 scalars, 28 Piecewise, vs "
                     "expr.subs(point).evalf(), each one call", got, scalar_source_lines=ev.scalar_source.count("\n")))

    ring = evaluator(algorithm("all_reduce", "ring").cost.time)
    values = {"N": 8, "M": 2 ** 30, "alpha": 5e-6, "beta": 1e-11, "gamma": 1e-12}

    def call():
        return ring.float(**values)

    def nothing():
        return None

    _progress("scalar: ring time, one call")
    got = paired(call, nothing, rounds=7, inner_a=100_000, inner_b=100_000)
    per_call = got["a"]["wall_min_s"]
    out.append(_goal("one scalar call, small expression (ring time)", "≤ 2 µs", per_call * 1e6, per_call <= 2e-6,
                     "evaluator(ring time).float(N=8, M=2**30, alpha=…, beta=…, gamma=…) with its argument "
                     "checks, µs per call (b: an empty call, for scale)", got, unit="µs"))
    return out


_LLM_ANALYSIS = dict(model_name="megatron-lm-175b", gpu_name="a100-sxm-80gb", dtype_name="w16a16e16",
                     log_level="ERROR", global_batch_size=64, seq_len=2048, tp_size=8, pp_size=8, total_num_gpus=64,
                     batch_size_per_gpu=1, activation_recomputation=1, flops_efficiency=0.5)


def bench_configuration() -> list[dict]:
    import importlib.util
    import logging

    from .. import presets
    from ..training import steptime
    from ..planner import Request, SCHEMES, enumerate_layouts, plan
    from ..planner.kernels import _base_values, _kernel, _options

    model, hardware = presets.model("gpt3-175b"), presets.hardware("a100")
    req = Request(model, hardware, gpus=64, batch=64, seq=2048, gpus_per_node=8)
    options = dict(_options(req, SCHEMES[1], "selective", 1, "interleaved"))
    layout = {"t": 8, "p": 8, "v": 3, "c": 1, "e": 1, "d": 1, "m": 64}
    values = {k: float(v) for k, v in {**_base_values(req), **layout}.items()}
    steptime.quantities(values, 2, **options)

    def scalar():
        return steptime.quantities(values, 2, **options)

    _progress("one configuration: scalar, inside plan, vectorised")
    ours = {"scalar": paired(scalar, lambda: None, rounds=5, inner_a=200, inner_b=200)["a"]}
    result = plan(req, 10)
    ours["inside_plan"] = {"per_configuration_s": result.seconds / result.considered, "plan_s": result.seconds,
                           "configurations": result.considered}
    big = Request(presets.model("llama3-405b"), hardware, gpus=16384, batch=2048, seq=8192, gpus_per_node=8)
    lay = enumerate_layouts(big)
    vals = {**_base_values(big), **{k: lay[k].astype(np.float64) for k in ("t", "p", "v", "c", "e", "d", "m")}}
    params, _names, kernel = _kernel(_options(big, SCHEMES[1], "selective", 1, "1f1b"), 2)
    args = [vals[x] for x in params]
    n = lay["t"].size
    ours["vectorised"] = {**paired(lambda: kernel(*args), lambda: None, rounds=5)["a"], "configurations": n}
    per = {"scalar": ours["scalar"]["wall_min_s"], "inside_plan": ours["inside_plan"]["per_configuration_s"],
           "vectorised": ours["vectorised"]["wall_min_s"] / n}
    if importlib.util.find_spec("llm_analysis") is None:
        return [_goal("one configuration, in-process, vs llm-analysis training()", "faster than llm-analysis",
                      None, None, "llm-analysis is not installed: skipped (pip install -e \".[bench]\" to compare)",
                      {"ours_per_configuration_s": per, "ours": ours})]
    import io
    from contextlib import redirect_stderr, redirect_stdout

    _progress("one configuration: llm-analysis training()")
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        from llm_analysis.analysis import train
        logging.getLogger().setLevel(logging.ERROR)

        def theirs():
            return train(**_LLM_ANALYSIS)

        got = paired(scalar, theirs, rounds=5, inner_a=50, inner_b=50)
    them = got["b"]["wall_min_s"]
    speedups = {k: them / v for k, v in per.items()}
    return [_goal("one configuration, in-process, vs llm-analysis training()", "faster than llm-analysis (> 1×) in "
                  "each mode", min(speedups.values()), min(speedups.values()) > 1,
                  "GPT-3 175B on 64 A100s (t = 8, p = 8, v = 3): our step model's every quantity for one layout "
                  "(scalar), a layout's share of plan() and of one generated kernel over the 16,384-GPU search, "
                  "vs llm-analysis training() of megatron-lm-175b (tp 8, pp 8); figure = the smallest speed-up",
                  {"llm_analysis_s": them, "ours_per_configuration_s": per, "speedup": speedups, "paired_scalar": got,
                   "ours": ours})]


#: the layout the API goal evaluates (eval hybrid --hardware: one layout with its step time)
#: the configuration llm-analysis runs (_LLM_ANALYSIS; the cold CLIs' too): GPT-3 175B on 64 A100s, t = 8, p = 8,
#: global batch 64 of 2,048 tokens, selective recomputation: both tools answer the same question
_API_HYBRID = dict(model="gpt3-175b", hardware="a100", t=8, p=8, d=1, c=1, b=64, m=64, s=2048, recompute="selective")
_API_RING_GOAL = "≥ 5× SymPy subs().evalf(), and ≤ ~15 microseconds a call"
_API_HYBRID_GOAL = "≥ 3× llm-analysis training(), and ≤ ~50 microseconds a call"
_API_RING = dict(algorithm="ring", N=8, M=2 ** 30, alpha=5e-6, beta=1e-11, gamma=1e-12, dtype="bf16")


def bench_api() -> list[dict]:
    """What users call: ``symcomm.evaluate`` (the whole answer: binding, checks, terms, units, notes), paired
    with the core evaluator of the same formula and with SymPy's ``subs().evalf()`` of it, and (hybrid) with
    the step model's core and llm-analysis ``training()``.  Figures: medians of the paired rounds' CPU ratios."""
    import importlib.util

    import sympy as sp

    import symcomm
    from ..core.symbols import SYMBOLS
    from ..numbers.numeric import evaluator
    from ..training.answers import step_inputs
    from ..training.subjects import subject

    out = []
    # ring all-reduce: the API's time, in seconds, of 1 GiB of bf16 over 8 ranks
    expr = subject("all_reduce", "ring").cost.time
    ring = evaluator(expr)
    api = {key: value for key, value in _API_RING.items() if key not in ("algorithm", "dtype")}
    per_element = {**api, "beta": api["beta"] * 2, "gamma": api["gamma"] * 2}     # bf16: 2 bytes per element
    # a careful SymPy user: the symbols' values substituted once per call, evaluated to a float
    subs = {SYMBOLS[k].symbol: sp.Integer(v) if isinstance(v, int) else sp.Float(v) for k, v in per_element.items()}

    def ours():
        return symcomm.evaluate("all_reduce", **_API_RING)["time"]

    def core():
        return ring.float(**per_element)

    def sympy_evalf():
        return float(expr.subs(subs).evalf())

    assert abs(ours() - core()) <= 1e-12 * core() and abs(sympy_evalf() - core()) <= 1e-12 * core()
    _progress("api: symcomm.evaluate ring all-reduce vs SymPy subs().evalf() and the core evaluator")
    vs_sympy = paired(ours, sympy_evalf, rounds=9, inner_a=200, inner_b=200)
    vs_core = paired(ours, core, rounds=9, inner_a=200, inner_b=20_000)
    speedup = 1 / vs_sympy["ratio_cpu_median_of_rounds"]
    out.append(_goal("symcomm.evaluate, ring all-reduce (the whole answer)", _API_RING_GOAL,
                     speedup, speedup >= 5 and vs_sympy["a"]["cpu_median_s"] <= 15e-6,
                     "symcomm.evaluate('all_reduce', algorithm='ring', N=8, M=2**30, alpha, beta, gamma, dtype='bf16') "
                     "(binding, requirement checks, counts, units, inputs, notes) vs float(time.subs(point).evalf()) "
                     "of the same formula; figure = the median of the paired rounds' CPU ratios",
                     vs_sympy, per_call_s=vs_sympy["a"]["cpu_median_s"], api_over_core=vs_core))

    # hybrid: one layout with its step time
    def ours_hybrid():
        return symcomm.evaluate("hybrid", **_API_HYBRID)["step_time"]

    args = SimpleNamespace(name="hybrid", assignments=[f"{k}={v}" for k, v in _API_HYBRID.items()
                                                       if k not in ("model", "hardware")],
                           algorithm=None, dtype=None, backend=None, model=_API_HYBRID["model"], model_config=None,
                           hardware=_API_HYBRID["hardware"])
    inputs = step_inputs(args)

    def core_hybrid():
        return inputs.quantities()

    # a careful SymPy user: the step model's step-time formula built once, the layout's values substituted and
    # evaluated to a float per call (the one number; the API answers every quantity beside it)
    from ..training import steptime

    step_expr = steptime.step_model(inputs.run_bytes, **inputs.options).quantities()["step_time"]
    by_name = {str(sym): sym for sym in step_expr.free_symbols}
    step_subs = {by_name[k]: sp.Float(v) for k, v in steptime.with_absent_constants(inputs.values).items()
                 if k in by_name}

    def sympy_step():
        return float(step_expr.subs(step_subs).evalf())

    assert abs(sympy_step() - ours_hybrid()) <= 1e-9 * ours_hybrid()
    _progress("api: symcomm.evaluate hybrid step time vs the step model's core and SymPy subs().evalf()")
    vs_core = paired(ours_hybrid, core_hybrid, rounds=7, inner_a=20, inner_b=200)
    vs_sympy = paired(ours_hybrid, sympy_step, rounds=5, inner_a=20, inner_b=1)     # SymPy: ~1 s a call
    measured = {"api_over_core": vs_core, "api_over_sympy_subs_evalf": vs_sympy}
    if importlib.util.find_spec("llm_analysis") is None:
        out.append(_goal("symcomm.evaluate, hybrid with its step time", _API_HYBRID_GOAL,
                         None, None, "llm-analysis is not installed: skipped (pip install -e \".[bench]\" to compare); "
                         "the API beside the step model's core in 'measured'", measured))
        return out
    import io
    import logging
    from contextlib import redirect_stderr, redirect_stdout

    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        from llm_analysis.analysis import train
        logging.getLogger().setLevel(logging.ERROR)
        _progress("api: symcomm.evaluate hybrid step time vs llm-analysis training()")
        got = paired(ours_hybrid, lambda: train(**_LLM_ANALYSIS), rounds=7, inner_a=20, inner_b=20)
    speedup = 1 / got["ratio_cpu_median_of_rounds"]
    out.append(_goal("symcomm.evaluate, hybrid with its step time", _API_HYBRID_GOAL,
                     speedup, speedup >= 3 and got["a"]["cpu_median_s"] <= 50e-6,
                     "symcomm.evaluate('hybrid', " + ", ".join(f"{k}={v!r}" for k, v in _API_HYBRID.items())
                     + "): the whole answer (communication, terms, axes, step time, memory) vs llm-analysis "
                     "training() of megatron-lm-175b (tp 8, pp 8, 64 GPUs, global batch 64, seq 2048, selective "
                     "recomputation: the same configuration); figure = the median of the paired rounds' CPU ratios; "
                     "the per-call bound judged on the CPU median",
                     got, per_call_s=got["a"]["cpu_median_s"], **measured))
    return out


def bench_cold() -> list[dict]:
    py = sys.executable
    out = []
    _progress("cold: symcomm plan at 16,384 GPUs vs python -c 'import sympy' (fresh processes)")
    got = paired_processes([py, "-m", "symcomm", "plan", *PLAN_ARGS], [py, "-c", "import sympy"], rounds=7)
    out.append(_goal("symcomm plan at 16,384 GPUs, fresh process", "≤ 1.5× python -c 'import sympy' (wall)",
                     got["ratio_wall_min"], got["ratio_wall_min"] <= 1.5,
                     "python -m symcomm plan " + " ".join(PLAN_ARGS) + ", whole process, no cache", got))
    _progress("cold: symcomm prove (fresh processes)")
    got = paired_processes([py, "-m", "symcomm", "prove", "--quiet"], None, rounds=3)
    cpu = got["a"]["cpu_median_s"]
    out.append(_goal("symcomm prove, imports included", "≤ 3 s CPU", cpu, cpu <= 3.0,
                     "python -m symcomm prove --quiet, whole process; figure = the median CPU of 3 runs", got,
                     unit="s"))
    root = Path(__file__).resolve().parents[2]
    if not (root / "build_docs.py").is_file():
        out.append(_goal("python build_docs.py", "≤ 6 s CPU", None, None,
                         "not a source tree (no build_docs.py): skipped", {}))
        return out
    _progress("cold: python build_docs.py into a temporary directory (fresh processes)")
    with tempfile.TemporaryDirectory() as scratch:
        got = paired_processes([py, str(root / "build_docs.py"), "--out", scratch], None, rounds=3)
    cpu = got["a"]["cpu_median_s"]
    out.append(_goal("python build_docs.py", "≤ 6 s CPU", cpu, cpu <= 6.0,
                     "python build_docs.py --out <a temporary directory>: every claim proved, every page, plot and "
                     "the interactive page written; figure = the median CPU of 3 runs", got, unit="s"))
    return out


#: the configuration both cold CLIs run: GPT-3 175B on 64 A100s, t = 8, p = 8, global batch 64 of 2,048 tokens
_COLD_HYBRID = ("--model", "gpt3-175b", "--hardware", "a100", "t=8", "p=8", "d=1", "c=1", "b=64", "m=64", "s=2048",
                "recompute=selective")
_LLM_ANALYSIS_CLI = ("-m", "llm_analysis.analysis", "train", *(f"--{k}={v}" for k, v in _LLM_ANALYSIS.items()))


def bench_cold_eval() -> list[dict]:
    """``symcomm eval`` as a fresh process (numbers only, no formula asked), imports included: all_reduce against
    ``python -c 'import numpy'``, hybrid with its step time against the llm-analysis CLI on the same configuration
    (skipped when it is not installed).  Figures: the medians of the paired rounds' CPU ratios."""
    import importlib.util

    py = sys.executable
    out = []
    ring = [py, "-m", "symcomm", "eval", "all_reduce", "--algorithm", "ring", "N=8", "M=1GiB", "alpha=5e-6",
            "bw=50GB/s", "gamma=0"]
    _progress("cold: symcomm eval all_reduce vs python -c 'import numpy' (fresh processes)")
    got = paired_processes(ring, [py, "-c", "import numpy"], rounds=7)
    ratio = got["ratio_cpu_median_of_rounds"]
    out.append(_goal("symcomm eval all_reduce, fresh process", "≤ 1.5× python -c 'import numpy' (CPU)", ratio,
                     ratio <= 1.5, " ".join(["python", *ring[1:]]) + ", whole process; figure = the median of the "
                     "paired rounds' CPU ratios", got))
    hybrid = [py, "-m", "symcomm", "eval", "hybrid", *_COLD_HYBRID]
    if importlib.util.find_spec("llm_analysis") is None:
        _progress("cold: symcomm eval hybrid (fresh processes; llm-analysis not installed)")
        got = paired_processes(hybrid, None, rounds=5)
        out.append(_goal("symcomm eval hybrid, fresh process", "≤ the llm-analysis CLI (CPU)", None, None,
                         "llm-analysis is not installed: its CLI skipped (pip install -e \".[bench]\" to compare); "
                         "ours alone in 'measured'", got))
        return out
    _progress("cold: symcomm eval hybrid vs the llm-analysis CLI (fresh processes)")
    got = paired_processes(hybrid, [py, *_LLM_ANALYSIS_CLI], rounds=5)
    ratio = got["ratio_cpu_median_of_rounds"]
    out.append(_goal("symcomm eval hybrid, fresh process", "≤ the llm-analysis CLI (CPU)", ratio, ratio <= 1,
                     " ".join(["python", *hybrid[1:]]) + " vs python " + " ".join(_LLM_ANALYSIS_CLI) + " (the same "
                     "model, GPUs and layout); Calculon is not run (its PyPI name, calculon, is another package); figure = the median of "
                     "the paired rounds' CPU ratios", got))
    return out


def bench_page() -> list[dict]:
    """The interactive page's first render from a cold cache in headless Chromium and the bytes loaded before it
    (:mod:`symcomm.tools.pagespeed`, each load a new browser), for each view it measures by default; the goal
    judged on the slowest view's median and the heaviest view's bytes.  Skipped without Chromium or selenium."""
    from . import pagespeed
    from ..views import site

    name, target = "the page's first render, cold cache", "≤ 1 s and ≤ 1 MB loaded before it"
    page = Path(__file__).resolve().parents[2] / "docs" / "site" / "index.html"
    lacking = pagespeed.missing() + ([] if page.is_file() else ["docs/site (python build_docs.py)"])
    if lacking:
        return [_goal(name, target, None, None, f"needs {'; '.join(lacking)}: skipped", {}, unit="s")]
    views = {}
    for ident in pagespeed.VIEWS:
        _progress(f"page: {ident}'s first render, 5 cold loads")
        times, seen = pagespeed.cold_loads(page, ident, 5)
        views[ident] = {"first_render_ms": times, "bytes_before": sum(seen.values()), "files_before": sorted(seen)}
    slowest = max(statistics.median(v["first_render_ms"]) for v in views.values()) / 1e3
    heaviest = max(v["bytes_before"] for v in views.values())
    return [_goal(name, target, slowest, slowest <= 1.0 and heaviest <= site.FIRST_VIEW_BUDGET,
                  f"python -m symcomm.tools.pagespeed's measure: each of the views {', '.join(pagespeed.VIEWS)} "
                  "opened 5 times from the file system, each time in a new headless Chromium (a fresh profile: no "
                  "HTTP or script cache), the page's own first-render mark; figure = the slowest view's median "
                  f"(the heaviest view loaded {heaviest:,} bytes before it, budget {site.FIRST_VIEW_BUDGET:,})",
                  views, unit="s", bytes_before=heaviest)]


def bench_scaling() -> dict:
    from .. import presets
    from ..planner import Request, plan

    py = sys.executable
    out = {"gpus": [], "search_space": []}
    for gpus in (64, 1024, 16384, 131072):
        _progress(f"scaling: plan at {gpus:,} GPUs")
        args = ("--model", "llama3-70b", "--gpus", str(gpus), "--hardware", "h100", "--batch", str(max(gpus // 8, 64)),
                "--seq", "8192")
        req = Request(presets.model("llama3-70b"), presets.hardware("h100"), gpus=gpus, batch=max(gpus // 8, 64),
                      seq=8192)
        warm = [plan(req, 10) for _ in range(3)]
        cold = paired_processes([py, "-m", "symcomm", "plan", *args], None, rounds=3)["a"]
        out["gpus"].append({"model": "llama3-70b", "gpus": gpus, "batch": req.batch,
                            "layouts_considered": warm[0].considered,
                            "plan_in_process_s": min(r.seconds for r in warm), "cold_wall_min_s": cold["wall_min_s"],
                            "cold_cpu_min_s": cold["cpu_min_s"]})
    base = dict(model=presets.model("llama3-405b"), hardware=presets.hardware("h100"), gpus=16384, batch=2048,
                seq=8192)
    for label, fixed in (("everything searched", {}), ("--micro-batch 1", {"micro_batch": 1}),
                         ("--recompute selective --sp 1", {"recompute": "selective", "sp": 1}),
                         ("--tp 8 --pp 2", {"tp": 8, "pp": 2})):
        _progress(f"scaling: plan at 16,384 GPUs, {label}")
        runs = [plan(Request(**base, **fixed), 10) for _ in range(3)]
        out["search_space"].append({"fixed": label, "layouts_considered": runs[0].considered,
                                    "plan_in_process_s": min(r.seconds for r in runs)})
    return out


def main(argv: list[str] | None = None) -> int:
    import argparse
    import platform

    import sympy

    only = {"api": bench_api, "eval": bench_cold_eval, "page": bench_page}     # one group alone (not for the docs)
    parser = argparse.ArgumentParser(
        prog="python -m symcomm.tools.bench",
        description="Measure every speed goal (minutes); a whole run writes derivations/data/bench.json and "
                    "docs/speed.md.")
    parser.add_argument("--only", choices=sorted(only),
                        help="run one group alone and print its goals (writes nothing)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    if args.only:
        goals = only[args.only]()
        print(json.dumps({"goals": goals, "seconds": time.perf_counter() - started}, indent=2, ensure_ascii=False))
        return 0
    goals = (bench_vector() + bench_scalar() + bench_api() + bench_configuration() + bench_cold() + bench_cold_eval()
             + bench_page())
    report = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "numpy": np.__version__,
                    "sympy": sympy.__version__, "load_average_at_start": list(os.getloadavg())},
        "method": "pairs interleaved in one process (A B, B A …) after a warm-up, or fresh processes one at a time; "
                  "per-call minimum and median, wall (perf_counter) and CPU (process_time; getrusage of the "
                  "children for processes); each goal judged on its figure (the median of the paired rounds' CPU ratios, or the median CPU, as its "
                  "'what' says)",
        "peers": "llm-analysis 0.2.2 (the bench extra: pip install -e \".[bench]\"), in the same process where it can "
                 "be; Calculon is not run: the PyPI package named calculon is another project (a producer-consumer "
                 "library), not the performance model of Isaev et al.",
        "goals": goals,
        "scaling": bench_scaling(),
    }
    report["machine"]["load_average_at_end"] = list(os.getloadavg())
    report["seconds"] = time.perf_counter() - started
    _progress(f"done in {report['seconds']:.0f} s: " + ", ".join(
        f"{g['goal'].split(',')[0]}: {'met' if g['met'] else 'skipped' if g['met'] is None else 'MISSED'}"
        for g in goals))
    text = json.dumps(report, indent=2, ensure_ascii=False)
    _write(report, text + "\n")
    print(text)
    return 0


def _write(report: dict, text: str) -> None:
    """The whole run written where the docs build reads it (``derivations/data/bench.json``, as it reads it:
    ``importlib.resources``) and docs/speed.md rendered from it by the docs build's own renderer
    (``views.docs.speed_page``), when this runs from a source tree (one with ``build_docs.py``)."""
    from importlib import resources
    from pathlib import Path

    from ..base.files import write_file
    from ..views.docs import speed_page

    data = Path(str(resources.files("symcomm.derivations"))) / "data" / "bench.json"
    root = data.parents[2]
    if not (root / "build_docs.py").is_file():
        _progress(f"not a source tree ({root} has no build_docs.py): the report goes to stdout only")
        return
    write_file(data, text, what="derivations/data/bench.json")
    write_file(root / "docs" / "speed.md", speed_page(report), what="docs/speed.md")
    _progress(f"wrote {data} and {root / 'docs' / 'speed.md'}")


if __name__ == "__main__":
    sys.exit(main())
