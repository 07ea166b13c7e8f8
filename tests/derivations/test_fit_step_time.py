"""The committed fit script (derivations/fit_step_time.py) on the fitting core: the papers' runs and the modern runs
(derivations/modern.py) that the step model takes flow into one fit per hardware preset; those that do not
evaluate are left out and said."""

from types import SimpleNamespace

import pytest

from symcomm.base.errors import InputError
from symcomm.derivations import fit_step_time, modern
from symcomm.training.answers import step_inputs

#: stand-ins for modern runs on h100: eval hybrid's words on llama3-8b (the step times: any the layouts can reach,
#: slower than their work at the datasheet peak, which the fitting core refuses below)
WORDS = ["t=1 p=1 d=8 c=1 b=64 m=8 s=8192 recompute=selective flash=1",
         "t=2 p=1 d=8 c=1 b=128 m=16 s=4096 sp=1 recompute=selective flash=0",
         "t=1 p=2 d=16 c=1 b=256 m=16 s=8192 flash=1 recompute=full",
         "t=4 p=1 d=4 c=1 b=32 m=4 s=8192 sp=1 flash=0 recompute=selective",
         "t=1 p=4 d=8 c=1 b=512 m=64 s=2048 recompute=none flash=0",
         # six runs: eta, w_half, kappa and eta_attn (the flash core's share, which the flash=1 runs read) + 2
         "t=2 p=2 d=4 c=1 b=64 m=16 s=4096 sp=1 recompute=none flash=1"]


def _stand_ins(monkeypatch, refused: int):
    runs = [{"id": f"modern-{i}", "hardware": "h100", "words": w, "step_time_s": 40.0 + i} for i, w in enumerate(WORDS)]
    runs += [{"id": f"refused-{i}", "hardware": "h100", "words": "t=1 p=5 d=8 c=1 b=64 m=8", "step_time_s": 1.0}
             for i in range(refused)]

    def inputs(run, fitting=True):
        return step_inputs(SimpleNamespace(name="hybrid", assignments=run["words"].split(), algorithm=None, dtype=None,
                                           backend=None, model="llama3-8b", model_config=None, hardware="h100"),
                           fitting)

    monkeypatch.setattr(modern, "runs", lambda role=None: runs if role in (None, "fit") else [])
    monkeypatch.setattr(modern, "out_of_scope", lambda run: None)
    monkeypatch.setattr(modern, "command", lambda run: run["words"])        # one run per layout
    monkeypatch.setattr(modern, "inputs", inputs)
    monkeypatch.setattr(modern, "source_of", lambda run: "megatron-bridge 99.01")
    monkeypatch.setattr(modern, "framework_of", lambda run: "Megatron-Core")


def test_modern_runs_that_evaluate_are_fitted_and_the_others_said(monkeypatch):
    _stand_ins(monkeypatch, refused=2)
    assert "h100" in fit_step_time.systems()
    found = fit_step_time.fit("h100")
    assert found["fitted_on"] == [f"modern-{i}" for i in range(len(WORDS))]
    assert sorted(found["not_evaluated"]) == ["refused-0", "refused-1"]
    assert "p=5" in found["not_evaluated"]["refused-0"]
    groups = found["fit"].by("source")
    assert list(groups) == ["megatron-bridge 99.01"] and groups["megatron-bridge 99.01"][0].runs == len(WORDS)
    text = "\n".join(fit_step_time.report({"h100": found}))
    assert "2 modern runs marked fit are left out of the fit" in text and "leave-one-out" in text


def test_a_preset_whose_runs_do_not_evaluate_is_not_fitted(monkeypatch):
    _stand_ins(monkeypatch, refused=1)
    monkeypatch.setattr(modern, "inputs", lambda run, fitting=True: (_ for _ in ()).throw(InputError("unknown parameter 'x'")))
    with pytest.raises(InputError, match="no run marked for fitting on h100 evaluates .*unknown parameter 'x'"):
        fit_step_time.fit("h100")


def test_a_published_gemm_gives_eta_through_the_models_own_curve():
    # a (1000 × 4000)·(4000 × 2000) GEMM, by hand: w = MNK/(MK + KN + MN) = 8e9/(4e6 + 8e6 + 2e6) = 4000/7; at 500 of
    # a 1000 TFLOP/s peak its share is 1/2, which the curve eta·w/(w + w_half) gives with eta = 1/2 at w_half = 0 and
    # with eta = 1 at w_half = w (half of eta at w = w_half)
    gemm = fit_step_time.PublishedGemm("eta", "bf16", 500.0, 1000, 2000, 4000, "a test")
    assert fit_step_time.published_eta(gemm, 1000e12, 0.0) == pytest.approx(0.5, rel=1e-12)
    assert fit_step_time.published_eta(gemm, 1000e12, 4000 / 7) == pytest.approx(1.0, rel=1e-12)


def _held_base(monkeypatch, system: str) -> dict:
    """fit_step_time.fit's base constants and holds for ``system``, caught before the fitting core runs."""
    seen = {}

    def capture(runs, base, hold, base_said=None):
        seen.update(base=base, hold=hold)
        raise InputError("captured")

    monkeypatch.setattr(fit_step_time, "fitting_runs", lambda s: (["a run"], {}))
    monkeypatch.setattr(fit_step_time.step_fit, "fit", capture)
    with pytest.raises(InputError, match="captured"):
        fit_step_time.fit(system)
    return seen


#: stas00/ml-engineering compute/accelerator/README.md (744d01e1), 'Maximum Achievable Matmul FLOPS comparison table',
#: BF16: A100 SXM 271.2 TFLOPS at 1024 x 10240 x 5120 of a 312 peak.  By hand: its width 1/(1/1024 + 1/10240 + 1/5120)
#: = 787.69; A100's roofline w_half 312e12 · 2 / (2 · 2.039e12) = 153.016, the curve's factor 787.69/940.71 = 0.83735;
#: 271.2/312 = 0.86923 of peak, so 1.03809 through the curve; A100's fitted eta 0.79 (the stored fit: symcomm/presets/
#: hardware.json, derivations/data/step_fit.json) over it: the training share 0.76101
A100_FITTED_ETA = 0.79
A100_TRAINING_SHARE = A100_FITTED_ETA / ((271.2 / 312) / (787.6923 / (787.6923 + 153.0162)))


def test_h100_holds_eta_at_its_maximum_matmul_times_a100s_training_share(monkeypatch):
    # the same table: H100 SXM 794.5 TFLOPS at 2048 x 2048 x 13312.  By hand: width 1/(2/2048 + 1/13312) = 950.857;
    # w_half 989.4e12 · 2 / (2 · 3.35e12) = 295.343, factor 950.857/1246.200 = 0.76301; 794.5/989.4 = 0.80301 of peak,
    # 1.05243 through the curve; times 0.76101: eta 0.80091
    seen = _held_base(monkeypatch, "h100")
    assert seen["base"]["eta"] == pytest.approx(1.05243 * A100_TRAINING_SHARE, abs=1e-4)
    assert seen["base"]["eta"] == pytest.approx(0.8009, abs=1e-4)
    assert "794.5" in seen["hold"]["eta"] and "271.2" in seen["hold"]["eta"] and "ml-engineering" in seen["hold"]["eta"]
    assert seen["base"]["w_half"] == pytest.approx(295.34, abs=0.01)      # the curve it went through


def test_b200_holds_eta_at_its_maximum_matmul_times_a100s_training_share(monkeypatch):
    # the same table: B200 SXM 1745.0 TFLOPS at 1792 x 16128 x 3072.  By hand: width 1057.574; w_half 2.25e15 · 2 /
    # (2 · 7.672e12) = 293.274 (the driver's 7,680-bit bus at 3,996 MHz, DDR: pytorch/ao pull request 4002), factor
    # 0.78290; 1745/2250 = 0.77556 of peak, 0.99062 through the curve; times 0.76101: 0.75388
    seen = _held_base(monkeypatch, "b200")
    assert seen["base"]["w_half"] == pytest.approx(2.25e15 / 7.672e12, abs=1e-9)
    assert seen["base"]["eta"] == pytest.approx(0.7539, abs=1e-4)
    assert "1745" in seen["hold"]["eta"]


def test_gb200_holds_eta_at_its_own_maximum_matmul(monkeypatch):
    # the same table has GB200 itself: 1822.0 TFLOPS at 4096 x 9728 x 2048 of its 2500 peak.  By hand: width 1197.292;
    # w_half 2.5e15 · 2 / (2 · 8e12) = 312.5, factor 0.79302; 1822/2500 = 0.7288 of peak, 0.91902 through the curve;
    # times 0.76101: 0.69938
    seen = _held_base(monkeypatch, "gb200")
    assert seen["base"]["w_half"] == pytest.approx(312.5, abs=1e-9)
    assert seen["base"]["eta"] == pytest.approx(0.6994, abs=1e-4)
    assert "1822" in seen["hold"]["eta"]


def test_the_training_share_follows_the_reference_eta_the_fit_hands_on(monkeypatch):
    # main fits A100 first and hands its eta on: at half its stored eta the share halves and so does H100's held eta
    eta, why = fit_step_time.transferred_eta("h100", A100_FITTED_ETA / 2)
    assert eta == pytest.approx(1.05243 * A100_TRAINING_SHARE / 2, abs=1e-4)
    assert f"its fitted eta {A100_FITTED_ETA / 2}" in why


def test_blackwell_holds_eta_attn_at_the_published_cudnn_share(monkeypatch):
    # NVIDIA/cudnn-frontend SDPA training benchmarks, head dim 128, causal, sequence length 8k; the backward runs 5/2
    # of the forward's FLOPs, so the core's rate is 3.5 / (1/forward + 2.5/backward).  B200 (0258951d artifacts,
    # cuDNN 9.13): forward 1171.278, backward 942.509 TFLOP/s -> 998.2, / 2250 = 0.4437.  GB200 (fb682ce7 results,
    # cuDNN 9.22): forward 1574, backward 1332 -> 1393.2, / 2500 = 0.5573.
    for system, forward, backward, peak in (("b200", 1171.278, 942.509, 2250), ("gb200", 1574, 1332, 2500)):
        by_hand = 3.5 / (1 / forward + 2.5 / backward) / peak
        seen = _held_base(monkeypatch, system)
        assert seen["base"]["eta_attn"] == pytest.approx(by_hand, abs=5e-4), system
        assert "published fused-attention share" in seen["hold"]["eta_attn"], system


def test_check_errors_are_grouped_by_the_constants_used_and_the_framework():
    # three hand-made check rows: two fsdp2 runs on parts borrowing h100's constants (errors -0.2 and -0.4: mean
    # |error| 0.3, max 0.4, signed -0.3), one megatron run on h100 itself (+0.1)
    checked = {"h100": {"constants_from": "h100", "runs": [{"framework_option": "megatron", "error": 0.1}]},
               "h100-gt": {"constants_from": "h100", "runs": [{"framework_option": "fsdp2", "error": -0.2}]},
               "h200": {"constants_from": "h100", "runs": [{"framework_option": "fsdp2", "error": -0.4}]}}
    got = fit_step_time.check_errors(checked)
    assert got == {"h100": {
        "fsdp2": {"mean": 0.3, "max": 0.4, "signed_mean": -0.3, "runs": 2, "hardware": ["h100-gt", "h200"]},
        "megatron": {"mean": 0.1, "max": 0.1, "signed_mean": 0.1, "runs": 1, "hardware": ["h100"]}}}


def test_the_presets_check_errors_are_those_of_the_stored_check_runs():
    # hardware.json's step_time.checks (what eval and plan print) is recomputed from step_fit.json's check rows,
    # written by the same run of the fit script: a refit or --checks-only that left one stale fails here
    import json

    stored = json.loads(fit_step_time.HARDWARE_JSON.read_text(encoding="utf-8"))
    checked = json.loads(fit_step_time.RESULTS_JSON.read_text(encoding="utf-8"))["checks"]
    expected = fit_step_time.store_check_errors(json.loads(json.dumps(stored)), checked)
    assert stored == expected
    assert set(stored["systems"]["h100"]["step_time"]["checks"]) >= {"megatron", "fsdp2"}


def test_memory_check_errors_are_grouped_by_framework_with_their_band():
    # three hand-made memory rows (the model's bytes / the printed peak - 1): two fsdp2 runs at -0.1 and -0.3 (mean
    # |error| 0.2, max 0.3, signed -0.2, band -0.3 to -0.1), one megatron run at +0.05
    rows = [{"framework_option": "fsdp2", "hardware": "h200", "error": -0.1},
            {"framework_option": "fsdp2", "hardware": "h100-gt", "error": -0.3},
            {"framework_option": "megatron", "hardware": "h100", "error": 0.05}]
    got = fit_step_time.memory_check_errors(rows)
    assert got["fsdp2"].pop("hardware") == ["h100-gt", "h200"]
    assert got["fsdp2"] == pytest.approx({"mean": 0.2, "max": 0.3, "signed_mean": -0.2, "runs": 2, "lowest": -0.3,
                                          "highest": -0.1})
    assert got["megatron"]["lowest"] == got["megatron"]["highest"] == 0.05 and got["megatron"]["runs"] == 1
    assert "memory_checks" not in fit_step_time.store_memory_errors({"memory_checks": {}}, [])


def test_the_presets_memory_checks_are_those_of_the_stored_memory_rows():
    # hardware.json's memory_checks (what eval's memory verdict reads) is recomputed from step_fit.json's memory rows
    # by the same run of the fit script: a refit or --checks-only that left one stale fails here
    import json

    stored = json.loads(fit_step_time.HARDWARE_JSON.read_text(encoding="utf-8"))
    results = json.loads(fit_step_time.RESULTS_JSON.read_text(encoding="utf-8"))
    memory = results["memory"]
    assert stored == fit_step_time.store_memory_errors(json.loads(json.dumps(stored)), memory, results["ran_over"])
    assert sum(found["runs"] for found in stored["memory_checks"].values()) == len(memory)
    assert stored["memory_checks"]["fsdp2"]["runs"] == sum(r["framework_option"] == "fsdp2" for r in memory)
    # Megatron-LM's functional tests print Megatron-Core's peak (derivations/data/megatron_lm_tests_runs.json)
    assert stored["memory_checks"]["megatron"]["runs"] == sum(r["framework_option"] == "megatron" for r in memory) >= 2


def test_the_runs_that_ran_set_the_bands_upper_end_but_those_in_doubt():
    # two runs counted 3 % and 5 % over their GPU's memory, a third 50 % whose layout is in doubt: the band's upper end
    # is the sure ones' largest, one unit of the sixth digit up (0.05 + 1e-6), over the 2 sure runs
    over = [{"id": "a", "hardware": "h100", "over": 0.03, "layout_in_doubt": False, "framework_option": "megatron"},
            {"id": "b", "hardware": "a100", "over": 0.05, "layout_in_doubt": False, "framework_option": "fsdp2"},
            {"id": "c", "hardware": "b200", "over": 0.5, "layout_in_doubt": True, "framework_option": "deepspeed"}]
    got = fit_step_time.store_memory_errors({}, [], over)["memory_ran_over"]
    # the sure runs' frameworks, as eval's memory verdict names them
    assert got == {"highest": pytest.approx(0.050001, abs=1e-9), "runs": 2, "hardware": ["a100", "h100"],
                   "frameworks": ["fsdp2", "megatron"]}
    assert "memory_ran_over" not in fit_step_time.store_memory_errors({"memory_ran_over": got}, [], over[2:])


def test_a_count_within_the_runs_that_ran_is_an_uncertain_no():
    # band: printed peaks 0.3 % to 28.7 % above the count (errors -0.223 to -0.003); runs that ran up to +5.9 % over.
    # 100 bytes of GPU: a count of 104 is over by the count, but within the 5.9 % runs that ran were over-counted by
    # (104 / 1.059 = 98.2 ≤ 100): uncertain; 107 is past it (107 / 1.059 = 101.0 > 100): no
    from symcomm.presets import fit_errors

    checks = (("fsdp2", 0.12, 0.223, -0.12, -0.223, -0.003, 20, ("h100-gt",)),)
    band = fit_errors.memory_band(checks, (0.059, 15))
    assert fit_errors.fits_over_error(band, 104.0, 100.0) == "uncertain"
    assert fit_errors.fits_over_error(band, 107.0, 100.0) == "no"
    assert fit_errors.fits_over_error(fit_errors.memory_band(checks), 104.0, 100.0) == "no"   # without them
    words = fit_errors.memory_band_words(fit_errors.memory_error(band))
    assert words.endswith("and 15 published runs that ran were counted up to 5.9 % over their GPU's memory")
    # one such run is said in the singular
    one = fit_errors.memory_band_words(fit_errors.memory_error(fit_errors.memory_band(checks, (0.046, 1))))
    assert one.endswith("and 1 published run that ran was counted up to 4.6 % over its GPU's memory")
    rows = [{"over": 0.046, "layout_in_doubt": False}, {"over": 0.5, "layout_in_doubt": True}]
    assert fit_step_time.over_summary(rows) == ("counted over their GPU's memory, though they ran: 1 published run, "
                                                "by up to 4.6 % (and 1 whose layout is in doubt)")


def test_a_lone_nvfp4_run_is_predicted_at_the_reference_parts_fp4_over_fp8_ratio(monkeypatch):
    """One NVFP4 run on a part cannot fit its eta_fp4: it stays out of the fit, the share is carried over as the
    part's fitted eta_fp8 times the reference part's eta_fp4/eta_fp8, and the run is predicted at it, said."""
    from symcomm.measurement import step_fit

    lone = step_fit.MeasuredRun("lone-nvfp4", None, 10.0)
    first = step_fit.StepFit({"eta": 0.7, "eta_fp8": 0.5}, ("eta_fp8",), {}, step_fit.Errors.of([0.0]),
                             step_fit.Errors.of([0.0]), (), {"lone-nvfp4": "only its prediction depends on eta_fp4, "
                                                             "which one run cannot determine"})
    seen = {}

    def errors_at(runs, constants):
        seen.update(runs=runs, constants=constants)
        return step_fit.Errors.of([0.1])          # the stand-in prediction: 10 % slow

    monkeypatch.setattr(fit_step_time, "fitting_runs", lambda s: ([lone], {}))
    monkeypatch.setattr(fit_step_time.step_fit, "fit", lambda runs, base, hold, base_said=None: first)
    monkeypatch.setattr(fit_step_time.step_fit, "errors_at", errors_at)
    found = fit_step_time.fit("b200", fp4_reference={"eta_fp4": 0.6, "eta_fp8": 0.8})
    # by hand: 0.5 · 0.6/0.8 = 0.375, and the run measured at 10 s is predicted at 11 s
    assert found["eta_fp4"] == 0.375 and seen["constants"]["eta_fp4"] == 0.375 and seen["runs"] == [lone]
    assert "0.6 / 0.8 = 0.7500" in found["fit"].held["eta_fp4"]
    assert found["not_evaluated"]["lone-nvfp4"].endswith("predicted at the held eta_fp4 0.375: 11 s against 10 s "
                                                         "measured, +10.0 %")
    # on the reference part itself nothing is carried: its NVFP4 runs are its own to fit
    assert "eta_fp4" not in fit_step_time.fit("gb200", fp4_reference={"eta_fp4": 0.6, "eta_fp8": 0.8})


def test_the_stored_transfer_is_not_the_next_fits_base(monkeypatch):
    # a second fit --write must start where the first did: B200's stored eta_fp4 is the last transfer, not a value of
    # the part, so the base the fitting core gets has none (and the lone run is left out again, not fitted on)
    from symcomm.presets import hardware

    assert "eta_fp4" in dict(hardware("b200").step_time)
    assert "eta_fp4" not in _held_base(monkeypatch, "b200")["base"]
    assert "eta_fp4" in _held_base(monkeypatch, "gb200")["base"]
