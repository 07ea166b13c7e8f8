"""The step model's fitted constants (:data:`symcomm.training.compute.FITTED`) fitted to measured runs: the
one fitting core of ``symcomm calibrate-step`` and of the committed fit on published runs
(``python -m symcomm.derivations.fit_step_time``).

What it minimises: the mean absolute relative error of the predicted step time over the runs,
|predicted / measured − 1| averaged, each run evaluated through the step model's one binding
(:class:`symcomm.training.answers.StepInputs`: what ``symcomm eval hybrid --hardware`` evaluates), with the
constants as numpy arrays of candidates (one compiled evaluation per run for a whole grid).

How: every constant lives on a lattice ``low + k·step`` of its range (:data:`RESOLUTION`: the step it is
reported to); when the lattice has at most :data:`EXHAUSTIVE_POINTS` points it is searched whole, else a
coarse grid of it is, then Nelder–Mead's simplex from the grid's best (restarted once, smaller), then the
nearest lattice point is polished on the lattice (each constant's whole line in turn, then the ±1
neighbours of all at once) until nothing improves.  Ties go to the smaller value of the first
constant, then of the next (the first minimum in lattice order).  No randomness: the same numbers on every
machine.

What it reports: the constants, which were fitted and which held and why: at the base hardware's value when no
run's predicted step time depends on it (e.g. an FP8 constant without an FP8 run), or when a free fit ends at its
range's edge and the fit with it at the base's value is as good (the runs do not determine it); at that edge when
the fit with it at the base's value is worse (the runs want it past its range: the model misses something they
have; the others keep their values beside it, so one edge does not push the rest to theirs) — never written as
a fitted value (:func:`_edges_held`); the in-sample and
leave-one-out (refit without each run by the same search as the fit of all runs, predict it: a start taken from
the fit of all runs would carry what the left-out run told it) mean, max and signed mean error; one row per run.
Errors are predicted / measured − 1: positive = the model is slower than the run (pessimistic).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..base.errors import InputError
from ..presets.systems import STEP_TIME_ABSENT_AS
from ..presets.hardware_values import KERNEL_SHARES
from ..training.compute import FITTED

#: the step each constant is fitted (and reported) to; a constant not listed: its range / 200.  eta's and
#: kappa's are the committed fit's since 2022's A100 runs (eta 0.715, kappa 7.25 on that lattice): finer
#: steps change the mean error by less than the runs' own spread determines
RESOLUTION = {"eta": 0.005, "kappa": 0.25}
#: a lattice of at most this many points is searched whole (eta × kappa: 141 × 81 = 11,421)
EXHAUSTIVE_POINTS = 20_000
#: the coarse grid's size before refinement, for lattices larger than EXHAUSTIVE_POINTS
COARSE_POINTS = 4_096
#: a constant moving the predicted step time of no run by more than this (relative) is not determined
SENSITIVITY = 1e-9
#: an edge constant held at the base's value costs the fit at most this much mean |error| (a ratio: 0.5 percentage
#: point, the spread of one layout printed by two releases of one table, e.g. Megatron-Bridge's 26.04 and
#: 26.04.01 Qwen3-30B-A3B rows, 26032 and 26112 tokens/s/GPU, 0.3 %): the runs do not determine it
NOT_DETERMINED = 0.005
#: polishing sweeps at most (each strictly improves, so the search ends well before)
MAX_SWEEPS = 200


@dataclass(frozen=True)
class MeasuredRun:
    """One measured run: its id, its step-model inputs (anything with ``quantities(**constants)``, as
    :class:`symcomm.training.answers.StepInputs`), the measured seconds per step, and labels to group by."""
    id: str
    inputs: object
    measured_s: float
    source: str = ""
    framework: str = ""


@dataclass(frozen=True)
class Errors:
    """Mean and max of |error| and the signed mean (ratios), over some runs."""
    mean: float
    max: float
    signed_mean: float
    runs: int

    @staticmethod
    def of(errors) -> "Errors":
        e = np.asarray(errors, dtype=float)
        return Errors(float(np.abs(e).mean()), float(np.abs(e).max()), float(e.mean()), int(e.size))

    def as_dict(self) -> dict:
        return {"mean": self.mean, "max": self.max, "signed_mean": self.signed_mean, "runs": self.runs}

    def sentence(self) -> str:
        """The figures as the reports and the chapter's captions say them, in percent."""
        return (f"over {self.runs} runs mean |error| {100 * self.mean:.1f} %, max {100 * self.max:.1f} %, "
                f"signed mean {100 * self.signed_mean:+.1f} %")


@dataclass(frozen=True)
class RunRow:
    """A run's measured and predicted seconds per step, its in-sample error and its leave-one-out error
    (predicted by the constants fitted without it)."""
    id: str
    measured_s: float
    predicted_s: float
    error: float
    loo_error: float
    source: str = ""
    framework: str = ""

    def as_dict(self) -> dict:
        return {"id": self.id, "measured_s": self.measured_s, "predicted_s": self.predicted_s,
                "error": self.error, "loo_error": self.loo_error,
                **({"source": self.source} if self.source else {}),
                **({"framework": self.framework} if self.framework else {})}


@dataclass(frozen=True)
class StepFit:
    """The fit: every constant's value (fitted, or held at the base's), which were fitted, which held and
    why, the errors in sample and left one out, one row per run."""
    constants: dict
    fitted: tuple
    held: dict
    in_sample: Errors
    leave_one_out: Errors
    rows: tuple
    # run id → why the run was left out of the fit (a constant only its prediction depends on, which the base lacks)
    left_out: dict = field(default_factory=dict)
    #: the framework options (eval's framework=) the fitted runs ran, sorted: eval and plan say a step time of
    #: another framework, checked on no run either, is unchecked (presets.Hardware.step_time_error)
    frameworks: tuple = ()
    #: the precision recipes (eval's precision=) the fitted runs ran, sorted: one no run measured is said unchecked
    #: as a framework is (eta_fp8 fitted on per-tensor FP8 runs does not time Hopper's block-scaled GEMMs)
    precisions: tuple = ()
    #: the attention kernels (eval's attention_kernel=) the fitted runs ran, sorted: a named kernel's share no run
    #: measured is its published figure, said unchecked as a precision is
    kernels: tuple = ()
    #: fitted constant → (least, most) of the values the runs fit as well at (:func:`spans`); empty unless asked
    spans: dict = field(default_factory=dict)

    def by(self, key: str) -> dict:
        """{label: (in-sample Errors, leave-one-out Errors)} of the rows grouped by ``key`` (source,
        framework)."""
        groups: dict = {}
        for row in self.rows:
            groups.setdefault(getattr(row, key) or "(none)", []).append(row)
        return {label: (Errors.of([r.error for r in rows]), Errors.of([r.loo_error for r in rows]))
                for label, rows in sorted(groups.items())}

    def as_dict(self) -> dict:
        return {"constants": dict(self.constants), "fitted": list(self.fitted), "held": dict(self.held),
                "in_sample": self.in_sample.as_dict(), "leave_one_out": self.leave_one_out.as_dict(),
                "runs": [r.as_dict() for r in self.rows], "frameworks": list(self.frameworks),
                "precisions": list(self.precisions), "attention_kernels": list(self.kernels),
                **({"spans": {n: list(span) for n, span in self.spans.items()}, "spans_within": NOT_DETERMINED}
                   if self.spans else {}),
                **({"left_out": dict(self.left_out)} if self.left_out else {})}


def lattice(name: str) -> np.ndarray:
    """The values a constant is searched over: its range in steps of its resolution."""
    f = FITTED[name]
    step = RESOLUTION.get(name, (f.high - f.low) / 200)
    count = int(round((f.high - f.low) / step))
    return np.round(f.low + step * np.arange(count + 1), 9)


def _check_runs(runs: list) -> None:
    seen: dict = {}
    for run in runs:
        if not (isinstance(run.measured_s, (int, float)) and math.isfinite(run.measured_s) and run.measured_s > 0):
            raise InputError(f"run {run.id!r}: the measured step time {run.measured_s!r} s is not a positive finite "
                             "number")
        if run.id in seen:
            raise InputError(f"run id {run.id!r} is given twice: give each run once, with its own id")
        seen[run.id] = run
    same: dict = {}
    for run in runs:
        inputs = run.inputs
        key = repr((sorted(getattr(inputs, "values", {}).items()), sorted(getattr(inputs, "options", {}).items()),
                    getattr(inputs, "run_bytes", None)))
        if key in same:
            raise InputError(f"runs {same[key]!r} and {run.id!r} are the same run (same model, layout, settings and "
                             "hardware): give each once (the median of repeated measurements)")
        same[key] = run.id


#: how many times slower than the step model's slowest price of its layout a measured run may be before it is
#: refused as a slip of its unit: a run past the constants' ranges by less is fitted at their edges (and said so),
#: one a thousand times slower is milliseconds typed as seconds
SLOWEST_FACTOR = 10


def _check_attainable(runs: list) -> None:
    """Refuse a run measured faster than the step model prices its layout at every constant's fastest end (every
    share of peak at 1, no width term, no memory-bound pass): no fit can reach it; or more than
    :data:`SLOWEST_FACTOR` times slower than it prices it at every constant's slowest end (every share at the bottom
    of its range, the widest width term, the most memory-bound passes).  Such a time is a slip in its unit or its
    words (seconds given as milliseconds or milliseconds as seconds, tokens per second per GPU given as the whole
    job's, a layout that does less or more than it says), not a measurement of this model's work."""
    fastest = {n: np.array([f.high if n.startswith("eta") else f.low]) for n, f in FITTED.items()}
    slowest = {n: np.array([f.low if n.startswith("eta") else f.high]) for n, f in FITTED.items()}
    floor = _predict(runs, fastest, 1)[:, 0]
    ceiling = _predict(runs, slowest, 1)[:, 0]
    for run, least, most in zip(runs, floor, ceiling):
        if run.measured_s < least:
            raise InputError(f"run {run.id!r}: the measured step time {run.measured_s:g} s is faster than the step "
                             f"model prices its layout with every matmul and kernel at the datasheet peak and no "
                             f"memory-bound work ({least:.4g} s): check its unit (seconds per step) and its words")
        if run.measured_s > SLOWEST_FACTOR * most:
            raise InputError(f"run {run.id!r}: the measured step time {run.measured_s:g} s is more than "
                             f"{SLOWEST_FACTOR} times slower than the step model prices its layout with every "
                             f"constant at the slow end of its range ({most:.4g} s): check its unit (seconds per "
                             "step, not milliseconds) and its words")


def _predict(runs: list, points: dict, count: int) -> np.ndarray:
    """Predicted step seconds, (runs, candidates)."""
    # every constant given as an array of the candidates (a held one repeated): the evaluator compiles one numpy
    # variant per set of array arguments (seconds each, symcomm.numbers.numeric), so one set for every call
    # (the probes of _determined move one constant at a time, the searches some) compiles each option set once
    # where it compiled it once per moved constant
    points = {k: np.full(count, v, dtype=float) if np.ndim(v) == 0 else np.asarray(v, dtype=float)
              for k, v in points.items()}
    out = np.empty((len(runs), count))
    for i, run in enumerate(runs):
        out[i] = np.broadcast_to(np.asarray(run.inputs.quantities(**points)["step_time"], dtype=float), (count,))
    return out


def _relative_errors(runs: list, points: dict, count: int) -> np.ndarray:
    measured = np.array([run.measured_s for run in runs])[:, None]
    return _predict(runs, points, count) / measured - 1


def _relative_errors_at(runs: list, point: dict) -> np.ndarray:
    """(runs,) relative errors at one candidate of Python floats: the evaluator's plain-float code, about 16 times
    faster than numpy's on one-element arrays (Nelder–Mead's single steps, most of a search's calls).  The same
    float64 arithmetic to the last bit or two, not to the bit: the lattice columns a search keeps
    (:meth:`_Search.errors`) are all computed by :func:`_predict`, so the fit's choice among lattice points is
    made on one arithmetic."""
    return np.array([float(run.inputs.quantities(**point)["step_time"]) / run.measured_s - 1 for run in runs])


def _determined(runs: list, base: dict) -> tuple[list, dict, dict]:
    """(the constants two or more runs' predictions depend on, {held name: why}, {held name: the index of the one run
    that depends on it}): each moved by ten of its lattice steps from the base value (inward at the top of its
    range)."""
    fitted, held, sole = [], {}, {}
    # every constant at a value while one is moved: the base's, else its lattice's middle (a constant the base
    # lacks, as eta_fp8 before a first FP8 fit, is still probed)
    probe = {n: base.get(n, float(lattice(n)[len(lattice(n)) // 2])) for n in FITTED}
    for name in FITTED:
        if name in KERNEL_SHARES and name not in base:
            continue        # a kernel no run names (the base starts each named one at its share): no constant of theirs
        values = lattice(name)
        step = values[1] - values[0]
        at = probe[name]
        moved = at + 10 * step if at + 10 * step <= values[-1] else at - 10 * step
        before = _predict(runs, {**probe, name: np.array([at])}, 1)[:, 0]
        after = _predict(runs, {**probe, name: np.array([moved])}, 1)[:, 0]
        moves = np.abs(after / before - 1) > SENSITIVITY
        moving = int(np.sum(moves))
        if moving == 1:
            sole[name] = int(np.argmax(moves))
            # one run alone would set it to whatever that run's other errors leave over, and its leave-one-out fold
            # would have no run for it at all: not determined
            held[name] = ("one run's predicted step time depends on it: not determined by one run"
                          + (", held at the base hardware's value" if name in base else ", left out")
                          + (f", read as {STEP_TIME_ABSENT_AS[name]}" if name in STEP_TIME_ABSENT_AS and name not in base
                             else ""))
        elif moving == 0:
            held[name] = ("no run's predicted step time depends on it: held at the base hardware's value"
                          if name in base else "no run's predicted step time depends on it, and the base "
                          "hardware gives none: left out"
                          + (f", read as {STEP_TIME_ABSENT_AS[name]}" if name in STEP_TIME_ABSENT_AS else ""))
        else:
            fitted.append(name)
    return fitted, held, sole


class _Search:
    """The lattice search of some constants (the others at fixed values), on the relative errors of all
    runs, averaged over the rows a mask keeps."""

    def __init__(self, runs: list, names: list, fixed: dict, seed: dict | None = None):
        self.runs, self.names, self.fixed = runs, names, fixed
        self.lattices = [lattice(n) for n in names]
        # the base hardware's values, one more start for the search (their lattice points; a constant the base
        # lacks at its lattice's middle): a set the base already fits well starts there too
        seed = seed or {}
        self.seed = np.array([int(np.argmin(np.abs(x - seed[n]))) if n in seed else len(x) // 2
                              for n, x in zip(names, self.lattices)], dtype=np.int64)
        self.size = int(np.prod([len(x) for x in self.lattices]))
        self._whole = None
        self._columns: dict = {}     # lattice point (its indices' bytes) → its (runs,) relative errors

    def errors(self, index: np.ndarray) -> np.ndarray:
        """(runs, candidates) relative errors at lattice indices ``index`` (candidates, constants).

        Each lattice point's column is computed once per search and kept: every run's error is in it, so the
        leave-one-out folds, which ask for the same points (each fold's polish starts from the fit of all runs:
        its first lines are that fit's; a whole lattice, a coarse grid), only mask its rows.  A candidate's
        prediction is elementwise in the candidates, so the column is the same number whichever batch computed it."""
        index = np.ascontiguousarray(index, dtype=np.int64)
        keys = [row.tobytes() for row in index]
        missing = {key: row for key, row in zip(keys, index) if key not in self._columns}
        if missing:
            fresh = np.array(list(missing.values()))
            points = {**self.fixed, **{n: self.lattices[j][fresh[:, j]] for j, n in enumerate(self.names)}}
            computed = _relative_errors(self.runs, points, len(fresh))
            self._columns.update(zip(missing, computed.T))
        return np.stack([self._columns[key] for key in keys], axis=1)

    def whole(self) -> tuple[np.ndarray, np.ndarray]:
        if self._whole is None:
            grids = np.meshgrid(*[np.arange(len(x)) for x in self.lattices], indexing="ij")
            index = np.stack([g.ravel() for g in grids], axis=1)
            self._whole = (index, np.abs(self.errors(index)))
        return self._whole

    def best(self, keep: np.ndarray) -> np.ndarray:
        """Lattice indices of the least mean |error| over the rows ``keep`` (boolean, one per run)."""
        if self.size <= EXHAUSTIVE_POINTS:
            index, err = self.whole()
            return index[int(np.argmin(err[keep].mean(axis=0)))]
        per_axis = max(2, int(COARSE_POINTS ** (1 / len(self.names))))
        axes = [np.unique(np.round(np.linspace(0, len(x) - 1, per_axis)).astype(int)) for x in self.lattices]
        grids = np.meshgrid(*axes, indexing="ij")
        index = np.stack([g.ravel() for g in grids], axis=1)
        score = np.abs(self.errors(index))[keep].mean(axis=0)
        # between the grid's points: Nelder–Mead on the ranges scaled to [0, 1], from the grid's best cell and from
        # the base's values (a valley shared by eta, w_half and kappa holds local
        # minima a single start stops in: an outsider's synthetic runs, whose true constants fit exactly, were
        # fitted 1.4 % off from the grid's best alone) with a simplex of the grid's spacing, restarted at a quarter
        # of it; then the nearest lattice point, polished; the least of them
        sizes = np.array([len(x) - 1 for x in self.lattices], dtype=float)
        ends = []
        for point in (index[int(np.argmin(score))], self.seed):
            u = point / sizes
            for spacing in (1.0 / (per_axis - 1), 0.25 / (per_axis - 1)):
                u = _nelder_mead(lambda points: self._score(points * sizes, keep), u, spacing, 1.0 / sizes.max())
            end = self._polish(np.round(u * sizes).astype(int), keep)
            ends.append((float(np.abs(self.errors(end[None, :]))[keep].mean()), len(ends), end))
        return min(ends, key=lambda e: (e[0], e[1]))[2]

    def _score(self, index: np.ndarray, keep: np.ndarray) -> np.ndarray:
        """Mean |error| over the rows ``keep`` at fractional lattice indices (candidates, constants)."""
        index = np.clip(index, 0, [len(x) - 1 for x in self.lattices])
        points = {**self.fixed, **{n: np.interp(index[:, j], np.arange(len(self.lattices[j])), self.lattices[j])
                                   for j, n in enumerate(self.names)}}
        if len(index) == 1:
            one = {n: float(np.asarray(v, dtype=float).reshape(-1)[0]) for n, v in points.items()}
            return np.array([np.abs(_relative_errors_at(self.runs, one))[keep].mean()])
        return np.abs(_relative_errors(self.runs, points, len(index)))[keep].mean(axis=0)

    def _polish(self, at: np.ndarray, keep: np.ndarray) -> np.ndarray:
        """From lattice point ``at``: each constant's whole line in turn, then the ±1 neighbours of all at once,
        until nothing improves."""
        best = float(np.abs(self.errors(at[None, :]))[keep].mean())
        shifts = np.array(np.meshgrid(*[[-1, 0, 1]] * len(self.names), indexing="ij")).reshape(len(self.names), -1).T
        for _ in range(MAX_SWEEPS):
            improved = False
            for j, values in enumerate(self.lattices):     # each constant's whole line, the others fixed
                line = np.repeat(at[None, :], len(values), axis=0)
                line[:, j] = np.arange(len(values))
                score = np.abs(self.errors(line))[keep].mean(axis=0)
                k = int(np.argmin(score))
                if score[k] < best:
                    at, best, improved = line[k].copy(), float(score[k]), True
            near = at[None, :] + shifts                      # all at once: a valley across the axes
            inside = np.all((near >= 0) & (near < np.array([len(x) for x in self.lattices])), axis=1)
            near = near[inside]
            score = np.abs(self.errors(near))[keep].mean(axis=0)
            k = int(np.argmin(score))
            if score[k] < best:
                at, best, improved = near[k].copy(), float(score[k]), True
            if not improved:
                break
        return at

    def values(self, index: np.ndarray) -> dict:
        return {n: float(self.lattices[j][index[j]]) for j, n in enumerate(self.names)}


def _nelder_mead(score, start: np.ndarray, step: float, tolerance: float, iterations: int = 2000) -> np.ndarray:
    """The least of ``score`` (points (n, k) in [0, 1]^k → values) by Nelder and Mead's simplex (Nelder & Mead
    1965, The Computer Journal 7(4); the standard coefficients 1, 2, 1/2, 1/2), from ``start`` and a simplex
    of ``step`` along each axis (inward at the top of the range), until the simplex is smaller than
    ``tolerance``.  Written out, no randomness: the same path on every machine."""
    k = len(start)
    simplex = np.repeat(start[None, :], k + 1, axis=0).astype(float)
    for j in range(k):
        simplex[j + 1, j] += step if start[j] + step <= 1 else -step
    values = score(np.clip(simplex, 0, 1))
    for _ in range(iterations):
        order = np.argsort(values, kind="stable")
        simplex, values = simplex[order], values[order]
        if np.max(np.abs(simplex[1:] - simplex[0])) < tolerance:
            break
        centre = simplex[:-1].mean(axis=0)
        reflected = np.clip(2 * centre - simplex[-1], 0, 1)
        r = score(reflected[None, :])[0]
        if r < values[0]:
            expanded = np.clip(3 * centre - 2 * simplex[-1], 0, 1)
            e = score(expanded[None, :])[0]
            simplex[-1], values[-1] = (expanded, e) if e < r else (reflected, r)
        elif r < values[-2]:
            simplex[-1], values[-1] = reflected, r
        else:
            contracted = np.clip((centre + (reflected if r < values[-1] else simplex[-1])) / 2, 0, 1)
            c = score(contracted[None, :])[0]
            if c < min(r, values[-1]):
                simplex[-1], values[-1] = contracted, c
            else:                                            # shrink towards the best
                simplex[1:] = (simplex[1:] + simplex[0]) / 2
                values[1:] = score(simplex[1:])
    return simplex[int(np.argmin(values))]


def _span(name: str, value: float) -> str:
    return f"{value:g} of [{FITTED[name].low:g}, {FITTED[name].high:g}]"


def _mean_error(search: "_Search", index: np.ndarray) -> float:
    return float(np.abs(search.errors(index[None, :]))[:, 0].mean())


#: whose value an edge constant the runs do not determine is held at, unless fit's base_said names another
BASE_HARDWARE = "the base hardware's value"


def _edges_held(runs: list, names: list, base: dict, fixed: dict, held: dict, base_said: dict) -> tuple:
    """The free fit of ``names`` (the others at ``fixed``), with the rule for a constant it leaves at its range's
    edge; ``names``, ``fixed`` and ``held`` are updated in place.  Returns the last (search, lattice index).

    An edge says the runs' optimum lies at or past the range, for one of two reasons, told apart by refitting
    the others with that constant at the base hardware's value (the profile of the fit along it):
    - the fit barely moves (its mean |error| rises by at most :data:`NOT_DETERMINED`): the runs do not
      determine it (it trades with another constant along a valley, or nothing prices it enough); it is held at
      the base's value and said so, and the rest refitted.  One such constant per round, the one whose hold costs
      least: of a degenerate pair, holding one determines the other, which is then fitted, not held too;
    - the fit worsens: the runs do determine it, past its range (the model misses something they have); it is
      held at that edge, where the free fit put it, and said so.  The others keep the values they had beside it,
      so holding it cannot push them to edges in turn (holding it at the base's value would: the cascade).
    """
    search = best = None
    while names:
        search = _Search(runs, names, dict(fixed), base)
        best = search.best(np.ones(len(runs), dtype=bool))
        found = search.values(best)
        edge = [n for n in names if found[n] in (lattice(n)[0], lattice(n)[-1])]
        if not edge:
            return search, best
        free = _mean_error(search, best)
        costs = {}
        for n in edge:
            if n not in base and n not in STEP_TIME_ABSENT_AS:
                continue        # no base value to hold it at: only its edge
            rest = [m for m in names if m != n]
            at_base = {**fixed, **({n: base[n]} if n in base else {})}
            if rest:
                profile = _Search(runs, rest, at_base, base)
                costs[n] = _mean_error(profile, profile.best(np.ones(len(runs), dtype=bool))) - free
            else:
                costs[n] = float(np.abs(_relative_errors(runs, at_base, 1))[:, 0].mean()) - free
        cheapest = min(costs, key=lambda n: (costs[n], list(FITTED).index(n))) if costs else None
        if cheapest is not None and costs[cheapest] <= NOT_DETERMINED:
            n = cheapest
            if n in base:
                fixed[n] = base[n]
            whose = base_said.get(n, "the base's value")
            kept = (f"held at {base_said.get(n, BASE_HARDWARE)}" if n in base
                    else f"left out, read as {STEP_TIME_ABSENT_AS[n]}")
            held[n] = (f"a free fit ends at its range's edge ({_span(n, found[n])}), and the fit with it at "
                       f"{whose} is as good (mean |error| {100 * costs[n]:+.2f} points): these runs do not "
                       f"determine it; {kept}")
            names.remove(n)
            continue
        for n in edge:          # determined past the range: held where the free fit put it
            fixed[n] = found[n]
            whose = base_said.get(n, "the base's value")
            worse = (f"; at {whose} the fit's mean |error| would rise by {100 * costs[n]:.2f} points"
                     if n in costs else "; the base hardware gives no value to hold it at instead")
            held[n] = (f"a free fit ends at its range's edge ({_span(n, found[n])}): these runs want it past its "
                       f"range (the model misses something they have), so it is held at that edge, not "
                       f"fitted{worse}")
            names.remove(n)
    return search, best


def sole_reason(name: str) -> str:
    """Why :func:`fit` leaves out a run whose prediction alone depends on ``name``, a constant the base lacks."""
    return f"only its prediction depends on {name}, which one run cannot determine"


def fit(runs: list, base: dict, hold: tuple | dict = (), base_said: dict | None = None) -> StepFit:
    """Fit :data:`FITTED`'s constants to ``runs`` (:class:`MeasuredRun`), starting from ``base`` (the base
    hardware's values by name: the held constants keep them); the constants named in ``hold`` are held at
    their base values whatever the runs determine (a mapping gives each the reason it is held, said in
    ``held`` in place of "as asked").  InputError for fewer runs than fitted constants + 2, a
    run given twice, a measurement that is not a positive finite number, a held constant the base lacks.
    ``base_said``: constant → whose its base value is, where not the base hardware's (a part of the same GPU's)."""
    runs = list(runs)
    _check_runs(runs)
    _check_attainable(runs)
    base = {k: float(v) for k, v in base.items() if k in FITTED}
    if not runs:
        raise InputError("no runs to fit: give at least 3 measured runs")
    for name in hold:
        if name not in FITTED or (name not in base and STEP_TIME_ABSENT_AS.get(name) not in base):
            raise InputError(f"hold {name!r}: a constant of {', '.join(FITTED)} the base hardware gives a value "
                             "(or one read from such a constant when absent: eta_attn as eta)")
    names, held, sole = _determined(runs, base)
    # a run whose prediction alone needs a constant the base lacks cannot be predicted by any fit: left out, said
    left_out = {runs[i].id: sole_reason(name) for name, i in sole.items() if name not in base}
    runs = [r for r in runs if r.id not in left_out]
    for name in hold:
        if name in names:
            names.remove(name)
            held[name] = ("held at the base hardware's value, as asked" if name in base else
                          f"left out, read as {STEP_TIME_ABSENT_AS[name]}, as asked")
    if isinstance(hold, dict):
        held.update({name: why for name, why in hold.items() if name in held})
    if len(runs) < max(3, len(names) + 2):
        # the constants a set determines grow with it (each needs two runs that read it): the count asked is the
        # least for these, and --hold takes a constant out of the count
        given = f"{len(runs)} run{'s' if len(runs) != 1 else ''}"
        what = (f"cannot fit {len(names)} constants ({', '.join(names)})" if names else
                f"determine{'s' if len(runs) == 1 else ''} no constant (each needs two runs whose step time depends on it)")
        raise InputError(f"{given} {what}: give at least {max(3, len(names) + 2)} runs (fitted constants + 2, so "
                         "that each left-out run is predicted by a fit that is still determined; more runs may "
                         "read more constants), or keep some at the base hardware's values with --hold NAME")
    everyone = np.ones(len(runs), dtype=bool)
    fixed = {k: v for k, v in base.items() if k not in names}
    search, best = _edges_held(runs, names, base, fixed, held, base_said or {})
    constants = dict(fixed)
    if names:
        constants.update(search.values(best))
        in_sample = search.errors(best[None, :])[:, 0]
        loo = np.empty(len(runs))
        for i in range(len(runs)):
            keep = everyone.copy()
            keep[i] = False
            # the whole search again without the run (a whole lattice, or the coarse grid, Nelder–Mead and polish,
            # from the same starts): what fit() without it gives.  Polishing the fit of all runs instead keeps it near
            # constants the left-out run chose, and reads the error optimistic (an outsider's refits without each run
            # found it a quarter higher)
            again = search.best(keep)
            loo[i] = search.errors(again[None, :])[i, 0]
    else:       # nothing to fit: the base's constants predict, and leaving a run out changes nothing
        in_sample = _relative_errors(runs, dict(constants), 1)[:, 0]
        loo = in_sample.copy()
    measured = np.array([r.measured_s for r in runs])
    rows = tuple(RunRow(r.id, r.measured_s, float(measured[i] * (1 + in_sample[i])), float(in_sample[i]),
                        float(loo[i]), r.source, r.framework) for i, r in enumerate(runs))
    ordered = {n: constants[n] for n in FITTED if n in constants}
    return StepFit(ordered, tuple(names), {n: held[n] for n in FITTED if n in held},
                   Errors.of(in_sample), Errors.of(loo), rows, left_out, _options_run(runs, "framework"),
                   _options_run(runs, "precision"), _options_run(runs, "attention_kernel"))


#: a span's scan moves its constant by 1/SPAN_STEPS of its lattice at a time
SPAN_STEPS = 40


def spans(runs: list, found: StepFit) -> dict:
    """Each fitted constant's span: the values at which the runs fit as well as at ``found`` (mean |error| at most
    :data:`NOT_DETERMINED` above the fit's, the other fitted constants refitted at each value, the held ones where
    the fit held them), the ends of the profile of the fit along it.  Scanned outward from the fitted value in
    steps of 1/:data:`SPAN_STEPS` of its lattice, each refit polished on the lattice from the last, until the fit
    worsens by more or the range ends, the last step then halved down to one lattice step (the band taken as one
    piece, as a valley's is).  A narrow span says the runs determine the
    constant; a wide one that they do not (it trades with another along a valley, eta with w_half), its fitted
    value one point of the span, not a measurement."""
    fitted_on = {row.id for row in found.rows}
    runs = [r for r in runs if r.id in fitted_on]         # the runs the fit was made on, no other
    if not runs:
        return {}
    names = list(found.fitted)
    keep = np.ones(len(runs), dtype=bool)
    limit = found.in_sample.mean + NOT_DETERMINED
    out = {}
    for name in names:
        others = [n for n in names if n != name]
        fixed = {k: v for k, v in found.constants.items() if k not in others}
        values = lattice(name)
        fitted_at = int(np.argmin(np.abs(values - found.constants[name])))
        stride = max(1, (len(values) - 1) // SPAN_STEPS)
        start = np.array([int(np.argmin(np.abs(lattice(n) - found.constants[n]))) for n in others], dtype=np.int64)

        def as_good(j: int, at: np.ndarray) -> tuple[bool, np.ndarray]:
            """Does the fit with ``name`` at its j-th value, the others refitted from ``at``, stay within the
            limit; and where the refit ended."""
            point = {**fixed, name: float(values[j])}
            if not others:
                return float(np.abs(_relative_errors(runs, point, 1))[:, 0].mean()) <= limit, at
            search = _Search(runs, others, point)
            at = search._polish(at, keep)
            return _mean_error(search, at) <= limit, at

        ends = []
        for direction in (-1, 1):
            at, last, bad = start, fitted_at, None
            while last not in (0, len(values) - 1):
                j = min(max(last + direction * stride, 0), len(values) - 1)
                good, moved = as_good(j, at)
                if not good:
                    bad = j
                    break
                at, last = moved, j
            while bad is not None and abs(bad - last) > 1:        # the last step halved down to the lattice's
                j = (bad + last) // 2
                good, moved = as_good(j, at)
                if good:
                    at, last = moved, j
                else:
                    bad = j
            ends.append(float(values[last]))
        out[name] = (ends[0], ends[1])
    return out


def _options_run(runs, name: str) -> tuple:
    """The values of eval's setting ``name`` (its default where a run's options leave it out) ``runs`` ran, sorted and
    each once."""
    from ..training.settings import OPTIONS

    return tuple(sorted({str(r.inputs.options.get(name, OPTIONS[name].text(OPTIONS[name].default))) for r in runs}))


def errors_at(runs: list, constants: dict) -> Errors:
    """The in-sample errors of ``runs`` at given constants (nothing fitted): what a set too small to fit
    still says of constants fitted elsewhere."""
    runs = list(runs)
    _check_runs(runs)
    return Errors.of(_relative_errors(runs, {k: float(v) for k, v in constants.items()}, 1)[:, 0])
