"""The step model's fitting core (symcomm.measurement.step_fit), shared by calibrate-step and the committed fit.

Most tests run the core on a hand model whose step time is written here, T = w / eta + kappa · u (seconds:
w the matmul work at eta = 1, u the memory-bound work per unit of kappa), so every expected value follows
from that line by hand: exact data are recovered exactly, leave-one-out equals refitting by hand without
each run, a constant nobody's time depends on is held, one the data push out of its range is held at that edge, one
they do not determine at the base's value.
The last tests run it on the real step model (the one binding eval hybrid uses).
"""

import math
from types import SimpleNamespace

import numpy as np
import pytest

from symcomm.base.errors import InputError
from symcomm.measurement import step_fit
from symcomm.measurement.step_fit import MeasuredRun, fit
from symcomm.training import compute


class HandModel:
    """T = w / eta + kappa · u: a step model written out, with values and options to tell runs apart."""

    def __init__(self, w, u):
        self.w, self.u = w, u
        self.values, self.options, self.run_bytes = {"w": w, "u": u}, {}, 2

    def quantities(self, **c):
        return {"step_time": self.w / np.asarray(c["eta"]) + np.asarray(c["kappa"]) * self.u}


#: (w, u) of eight runs: work and memory-bound shares differ from run to run, so both constants are determined
SHAPES = [(1.0, 0.02), (2.0, 0.01), (1.5, 0.10), (0.5, 0.05), (3.0, 0.02), (1.2, 0.20), (0.8, 0.01), (2.5, 0.08)]
BASE = {"eta": 0.68, "kappa": 0.75}


def runs_at(eta, kappa, pattern=None, shapes=SHAPES):
    pattern = pattern or [0.0] * len(shapes)
    return [MeasuredRun(f"r{i}", HandModel(w, u), (w / eta + kappa * u) * (1 + pattern[i]))
            for i, (w, u) in enumerate(shapes)]


def test_exact_data_are_recovered_exactly():
    # T measured = T of the model at eta 0.6, kappa 5 (both on the lattice: 0.30 + 60·0.005, 20·0.25)
    found = fit(runs_at(0.6, 5.0), BASE)
    assert found.constants == {"eta": 0.6, "kappa": 5.0}
    # the hand model reads eta and kappa only: every other constant of FITTED is held (left out), but the attention
    # kernels' shares, constants only of runs that name a kernel (a calibration's base starts each named one at its
    # share; this base names none): not constants of these runs at all
    kernels = {f"eta_{kernel}" for kernel in ("fa2", "triton", "cudnn")}
    assert found.fitted == ("eta", "kappa")
    assert set(found.held) == set(compute.FITTED) - {"eta", "kappa"} - kernels
    assert found.in_sample.max < 1e-12 and found.leave_one_out.max < 1e-12


def test_the_refinement_path_finds_what_the_whole_lattice_finds(monkeypatch):
    # more constants than a whole lattice allows take the coarse grid + coordinate refinement path
    monkeypatch.setattr(step_fit, "EXHAUSTIVE_POINTS", 0)
    found = fit(runs_at(0.6, 5.0), BASE)
    assert found.constants == {"eta": 0.6, "kappa": 5.0}


def test_leave_one_out_is_refitting_without_each_run():
    # a ±5 % pattern moves the optimum when some runs are left out; the definition, done by hand here
    runs = runs_at(0.6, 5.0, [0.05, -0.05, 0.04, -0.03, 0.02, 0.05, -0.04, 0.01])
    found = fit(runs, BASE)
    for i, row in enumerate(found.rows):
        alone = fit(runs[:i] + runs[i + 1:], BASE).constants
        predicted = runs[i].inputs.quantities(**alone)["step_time"]
        assert row.loo_error == pytest.approx(predicted / runs[i].measured_s - 1, rel=1e-12)
    assert found.leave_one_out.mean >= found.in_sample.mean     # least mean |error| in sample, by construction
    errors = np.array([r.error for r in found.rows])
    assert found.in_sample.mean == pytest.approx(np.abs(errors).mean())
    assert found.in_sample.signed_mean == pytest.approx(errors.mean())


def test_a_search_predicts_each_lattice_point_once_the_same_as_alone(monkeypatch):
    # the leave-one-out folds ask one search for the same lattice points again (each fold's polish starts from the
    # fit of all runs): each point is predicted once per search, and its column of errors is the same numbers
    # whether it was predicted in a batch, alone or kept from before (the committed fit unchanged to the bit)
    runs = runs_at(0.6, 5.0, [0.05, -0.05, 0.04, -0.03, 0.02, 0.05, -0.04, 0.01])
    batches = []
    real = step_fit._predict
    monkeypatch.setattr(step_fit, "_predict", lambda r, points, count: batches.append(count) or real(r, points, count))
    search = step_fit._Search(runs, ["eta", "kappa"], {})
    index = np.array([[0, 0], [60, 20], [140, 80], [60, 20]])       # one point twice
    first = search.errors(index)
    again = search.errors(index[::-1])
    assert batches == [3]                                            # three distinct points, one batch
    alone = np.stack([step_fit._Search(runs, ["eta", "kappa"], {}).errors(row[None, :])[:, 0] for row in index],
                     axis=1)
    assert np.array_equal(first, alone) and np.array_equal(again, first[:, ::-1])
    # and they are the hand model's errors: eta 0.30 + 60 · 0.005 = 0.6, kappa 20 · 0.25 = 5 at [60, 20]
    by_hand = [r.inputs.w / 0.6 + 5.0 * r.inputs.u for r in runs]
    assert first[:, 1] == pytest.approx([t / r.measured_s - 1 for t, r in zip(by_hand, runs)], rel=1e-12)


def test_a_constant_no_run_depends_on_is_held(monkeypatch):
    extra = compute.Fitted("omega", "a constant the hand model does not read", 0.0, 1.0)
    monkeypatch.setattr(step_fit, "FITTED", {**compute.FITTED, "omega": extra})
    found = fit(runs_at(0.6, 5.0), {**BASE, "omega": 0.25})
    assert found.fitted == ("eta", "kappa")
    assert found.constants["omega"] == 0.25 and "depends on it" in found.held["omega"]


def test_a_constant_the_runs_push_past_its_range_is_held_at_that_edge():
    # kappa = 25 lies above kappa's range [0, 20]: a free fit ends at 20, and the runs want it there (held at the
    # base's 0.75 no eta fits them as well): held at the edge, said so, and eta alone fitted beside it
    runs = runs_at(0.6, 25.0)
    found = fit(runs, BASE)
    assert found.fitted == ("eta",)
    assert found.constants["kappa"] == 20.0
    assert "edge (20 of [0, 20])" in found.held["kappa"] and "held at that edge" in found.held["kappa"]
    # by definition of the mean |error|: kappa at the base's value fits worse than the found constants whatever eta
    at_base = min(step_fit.errors_at(runs, {"eta": e, "kappa": 0.75}).mean for e in step_fit.lattice("eta"))
    assert found.in_sample.mean < at_base
    # eta = 0.2, below [0.30, 1.00], drives both to an edge the runs want: both held there, nothing fitted
    found = fit(runs_at(0.2, 5.0), BASE)
    assert found.fitted == () and found.constants == {"eta": 0.3, "kappa": 20.0}
    assert [r.loo_error for r in found.rows] == [r.error for r in found.rows]
    # T at eta 0.3, kappa 20 against T at 0.2, 5 for the first run (w 1.0, u 0.02), by hand
    assert found.rows[0].error == pytest.approx((1.0 / 0.3 + 20.0 * 0.02) / (1.0 / 0.2 + 5.0 * 0.02) - 1)


def test_a_constant_the_runs_do_not_determine_is_held_at_the_base_value():
    # kappa's work is a thousandth of what SHAPES give it: under a ±2 % pattern a free fit slides it to an edge (0),
    # and at the base's 0.75 the fit is as good (within NOT_DETERMINED): held there, said so; eta fitted
    pattern = [0.02, -0.02, 0.01, -0.01, 0.02, -0.01, 0.0, 0.01]
    shapes = [(w, u / 1000) for w, u in SHAPES]
    runs = runs_at(0.6, 5.0, pattern, shapes)
    found = fit(runs, BASE)
    assert found.fitted == ("eta",) and found.constants["kappa"] == BASE["kappa"]
    assert "edge (0 of [0, 20])" in found.held["kappa"] and "do not determine it" in found.held["kappa"]
    # and it is what holding kappa at the base's value on request finds
    assert found.constants == fit(runs, BASE, hold=("kappa",)).constants


class ThreeConstants(HandModel):
    """T = w / eta + kappa · u + x · w · u: x's work is correlated with kappa's, so a kappa held away from what
    the runs want pushes x (and then eta) to edges in turn."""

    def quantities(self, **c):
        return {"step_time": self.w / np.asarray(c["eta"]) + np.asarray(c["kappa"]) * self.u
                + np.asarray(c["x"]) * self.w * self.u}


def three_runs(truth, pattern=(0.0,) * len(SHAPES)):
    return [MeasuredRun(f"r{i}", ThreeConstants(w, u),
                        float(ThreeConstants(w, u).quantities(**truth)["step_time"]) * (1 + pattern[i]))
            for i, (w, u) in enumerate(SHAPES)]


@pytest.fixture
def with_x(monkeypatch):
    monkeypatch.setattr(step_fit, "FITTED", {**compute.FITTED, "x": compute.Fitted("x", "seconds per unit", 0.0, 2.0)})
    return {**BASE, "x": 1.0}


def test_an_edge_held_at_the_edge_does_not_cascade(with_x):
    # kappa = 22 is past its range: held at 20 (the edge), eta and x stay fitted and the runs are fitted to ~1 %;
    # holding kappa at the base's 0.75 instead (the former rule) pushes x to its edge, held too: ~20 % off
    runs = three_runs({"eta": 0.6, "kappa": 22.0, "x": 0.3})
    found = fit(runs, with_x)
    assert found.fitted == ("eta", "x") and found.constants["kappa"] == 20.0
    assert found.constants["eta"] == pytest.approx(0.6, abs=0.01)
    assert found.in_sample.mean < 0.02
    assert fit(runs, with_x, hold=("kappa",)).in_sample.mean > 5 * found.in_sample.mean


def test_constants_fitted_beside_an_edge_predict_held_out_runs_within_leave_one_out(with_x):
    # the check on runs an edge is held in: fitted on the first six runs (±2 %), the last two (moved 0 and
    # +1 %) predicted within the fit's own leave-one-out error (one fixed split, as calibrate-step's test; a held-out
    # run moved by the pattern's full 2 % can lie outside the leave-one-out max of six runs by its own noise)
    pattern = [0.02, -0.02, 0.01, -0.01, 0.02, -0.01, 0.0, 0.01]
    runs = three_runs({"eta": 0.6, "kappa": 22.0, "x": 0.3}, pattern)
    found = fit(runs[:6], with_x)
    assert found.constants["kappa"] == 20.0 and found.fitted == ("eta", "x")
    errors = [abs(r.inputs.quantities(**found.constants)["step_time"] / r.measured_s - 1) for r in runs[6:]]
    assert max(errors) <= found.leave_one_out.max and sum(errors) / len(errors) <= found.leave_one_out.mean


def test_fewer_runs_than_constants_plus_two_are_refused():
    with pytest.raises(InputError, match="3 runs cannot fit 2 constants .*at least 4"):
        fit(runs_at(0.6, 5.0)[:3], BASE)
    assert fit(runs_at(0.6, 5.0)[:4], BASE).constants == {"eta": 0.6, "kappa": 5.0}


@pytest.mark.parametrize("bad", [0.0, -1.0, math.nan, math.inf])
def test_a_measurement_that_is_not_a_positive_finite_number_is_refused(bad):
    runs = runs_at(0.6, 5.0)
    runs[2] = MeasuredRun("r2", runs[2].inputs, bad)
    with pytest.raises(InputError, match="'r2'.*positive finite"):
        fit(runs, BASE)


def test_duplicate_runs_are_refused():
    runs = runs_at(0.6, 5.0)
    with pytest.raises(InputError, match="'r1' is given twice"):
        fit(runs + [MeasuredRun("r1", HandModel(9.0, 0.3), 1.0)], BASE)
    with pytest.raises(InputError, match="'r0' and 'again' are the same run"):
        fit(runs + [MeasuredRun("again", HandModel(*SHAPES[0]), 2.0)], BASE)


def test_the_lattices_hold_the_committed_values():
    # eta 0.715 and kappa 7.25 (the A100 fit) are lattice points: 0.30 + 83·0.005, 29·0.25
    assert 0.715 in step_fit.lattice("eta") and 7.25 in step_fit.lattice("kappa")
    assert step_fit.lattice("eta")[[0, -1]].tolist() == [0.30, 1.00]


# -- on the real step model ------------------------------------------------------------------------

def _inputs(model, words, hardware="h100"):
    from symcomm.training.answers import step_inputs

    return step_inputs(SimpleNamespace(name="hybrid", assignments=words.split(), algorithm=None, dtype=None,
                                       backend=None, model=model, model_config=None, hardware=hardware))


def test_published_runs_bind_as_eval_binds_their_words():
    # the fit script's inputs (published.inputs_of) are the numbers eval hybrid binds from the same words
    from symcomm.derivations import published

    keys = ("h", "L", "a", "h_kv", "F", "V", "s", "Phi", "t", "p", "d", "c", "e", "b", "m", "v", "G")
    compared = 0
    for run in published.runs():
        if not published.has_step_time(run) or run["layers"] % (run["p"] * run["v"]):
            continue     # uneven pipelines (Llama 3's L = 126 on p = 16) the hybrid strategy does not take yet
        direct = published.inputs_of(run)
        words = [f"{k}={direct.values[k]}" for k in keys] + [f"{k}={v}" for k, v in published.options_of(run).items()]
        via_eval = step_inputs_of(words, run["hardware"], direct.dtype)
        assert float(via_eval.quantities()["step_time"]) == pytest.approx(
            float(direct.quantities()["step_time"]), rel=1e-12), run["id"]
        compared += 1
    assert compared >= 20


def step_inputs_of(words, hardware, dtype):
    from symcomm.training.answers import step_inputs

    return step_inputs(SimpleNamespace(name="hybrid", assignments=words, algorithm=None, dtype=dtype, backend=None,
                                       model=None, model_config=None, hardware=hardware))


def test_the_step_model_recovers_its_own_constants():
    # runs generated by the step model at eta 0.55, kappa 4 (lattice points) are fitted back exactly
    layouts = [("llama3-8b", "t=2 p=1 d=8 c=1 b=128 m=16 s=4096 sp=1 recompute=selective flash=0"),
               ("llama3-8b", "t=1 p=2 d=16 c=1 b=256 m=16 s=8192 flash=1 recompute=full"),
               ("llama3-70b", "t=8 p=4 d=4 c=1 b=64 m=8 s=8192 sp=1 recompute=selective flash=1"),
               ("llama3-70b", "t=4 p=8 d=4 c=1 b=128 m=32 s=4096 sp=1 recompute=full flash=0")]
    runs = []
    for i, (model, words) in enumerate(layouts):
        inputs = _inputs(model, words)
        runs.append(MeasuredRun(f"run{i}", inputs, float(inputs.quantities(eta=0.55, kappa=4.0, w_half=0.0,
                                                                             eta_attn=0.55)["step_time"])))
    # four runs fit two constants: w_half and eta_attn (which these runs also read: flash=1) held as asked
    found = fit(runs, {**BASE, "w_half": 0.0, "eta_attn": 0.55}, hold=("w_half", "eta_attn"))
    assert found.constants == {"eta": 0.55, "kappa": 4.0, "w_half": 0.0, "eta_attn": 0.55}
    assert found.held["w_half"] == "held at the base hardware's value, as asked"
    assert found.in_sample.max < 1e-9


def test_one_candidate_is_priced_as_a_batch_prices_it():
    # a search's single Nelder–Mead steps take the evaluator's plain-float code (_relative_errors_at), its batches
    # and kept lattice columns numpy's (_relative_errors): the same float64 arithmetic, so the same errors to the
    # last bit or two, at points spread over the constants' ranges (the step model against itself, two code paths)
    runs = [MeasuredRun("a", _inputs("llama3-8b", "t=2 p=1 d=8 c=1 b=128 m=16 s=4096 sp=1 recompute=selective"), 9.0),
            MeasuredRun("b", _inputs("llama3-70b", "t=8 p=4 d=4 c=1 b=64 m=8 s=8192 sp=1 recompute=full"), 30.0)]
    rng = np.random.default_rng(7)
    points = {"eta": rng.uniform(0.3, 1.0, 12), "kappa": rng.uniform(0.0, 20.0, 12),
              "w_half": rng.uniform(0.0, 600.0, 12), "eta_attn": rng.uniform(0.1, 1.0, 12)}
    batch = step_fit._relative_errors(runs, points, 12)
    for i in range(12):
        alone = step_fit._relative_errors_at(runs, {n: float(v[i]) for n, v in points.items()})
        assert alone == pytest.approx(batch[:, i], rel=1e-13, abs=1e-15)


class FourConstants(HandModel):
    """T = w / eta + kappa · u + x · w · u + y: two more constants, each with its own range and its own work (the
    four terms differ from run to run independently), for the search of more than a whole lattice allows."""

    def quantities(self, **c):
        return {"step_time": self.w / np.asarray(c["eta"]) + np.asarray(c["kappa"]) * self.u
                + np.asarray(c["x"]) * self.w * self.u + np.asarray(c["y"])}


def test_four_constants_are_recovered_by_the_coarse_grid_and_refinement(monkeypatch):
    # 141 · 81 · 201 · 201 lattice points: far above EXHAUSTIVE_POINTS, so the coarse grid then refinement
    extra = {"x": compute.Fitted("x", "seconds per unit of work", 0.0, 2.0),
             "y": compute.Fitted("y", "seconds per step", 0.0, 1.0)}
    monkeypatch.setattr(step_fit, "FITTED", {**compute.FITTED, **extra})
    truth = {"eta": 0.6, "kappa": 5.0, "x": 0.3, "y": 0.25}     # lattice points: x in steps of 0.01, y of 0.005
    runs = [MeasuredRun(f"r{i}", FourConstants(w, u), float(FourConstants(w, u).quantities(**truth)["step_time"]))
            for i, (w, u) in enumerate(SHAPES)]
    found = fit(runs, {**BASE, "x": 1.0, "y": 0.5})
    assert found.fitted == ("eta", "kappa", "x", "y")
    assert found.constants == pytest.approx(truth, abs=1e-9)
    assert found.in_sample.max < 1e-9


def test_errors_at_given_constants_fit_nothing():
    # r0 (w 1.0, u 0.02) measured at eta 0.6, kappa 5; predicted at 0.5, 5: (2 + 0.1) / (1/0.6 + 0.1) - 1, by hand
    errors = step_fit.errors_at(runs_at(0.6, 5.0), {"eta": 0.5, "kappa": 5.0})
    by_hand = [(w / 0.5 + 5 * u) / (w / 0.6 + 5 * u) - 1 for w, u in SHAPES]
    assert errors.runs == len(SHAPES)
    assert errors.mean == pytest.approx(sum(map(abs, by_hand)) / len(SHAPES), rel=1e-12)
    assert errors.max == pytest.approx(max(map(abs, by_hand)), rel=1e-12)


class OneRunReads(HandModel):
    """T = w / eta + kappa · u, and for the run marked ``extra`` + y · w: a constant y that one run alone reads."""

    def __init__(self, w, u, extra=False):
        super().__init__(w, u)
        self.extra = extra

    def quantities(self, **c):
        base = self.w / np.asarray(c["eta"]) + np.asarray(c["kappa"]) * self.u
        return {"step_time": base + (np.asarray(c["y"]) * self.w if self.extra else 0 * base)}


def test_a_constant_one_run_alone_reads_is_not_fitted_and_that_run_is_left_out(monkeypatch):
    # y moves run r7's time only: fitted on it alone it would absorb whatever r7's other errors leave over (here the
    # +30 % put on r7), and r7's leave-one-out fold would have no run for it; the base gives none, so r7 is left out,
    # said, and eta, kappa come from the other seven exactly
    monkeypatch.setattr(step_fit, "FITTED", {**compute.FITTED, "y": compute.Fitted("y", "seconds per unit", 0.0, 2.0)})
    runs = runs_at(0.6, 5.0)
    w, u = SHAPES[7]
    runs[7] = MeasuredRun("r7", OneRunReads(w, u, extra=True), (w / 0.6 + 5.0 * u) * 1.3)
    found = fit(runs, BASE)
    assert found.fitted == ("eta", "kappa") and "y" not in found.constants
    assert "not determined by one run" in found.held["y"]
    assert list(found.left_out) == ["r7"] and "only its prediction depends on y" in found.left_out["r7"]
    assert [row.id for row in found.rows] == [f"r{i}" for i in range(7)]
    assert found.constants["eta"] == pytest.approx(0.6, rel=1e-3) and found.constants["kappa"] == pytest.approx(5.0, rel=1e-3)
