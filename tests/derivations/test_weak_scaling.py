"""The step-time chapter's weak-scaling table (derivations/step_time.py: per_doubling, weak_scaling_series): the slope
by hand, and the series it finds in the stored check rows."""

import pytest

from symcomm.derivations import step_time


def test_per_doubling_is_the_least_squares_slope_against_log2_gpus():
    # by hand: errors falling one point per doubling from 64 to 256 GPUs
    assert step_time.per_doubling([64, 128, 256], [-0.10, -0.11, -0.12]) == pytest.approx(-0.01)
    # x = log2 GPUs = 3, 4, 6 (mean 13/3), y = 0, 0, 0.03 (mean 0.01): x − x̄ = −4/3, −1/3, 5/3 and y − ȳ = −0.01,
    # −0.01, 0.02; Σ(x − x̄)(y − ȳ) = 0.04/3 + 0.01/3 + 0.1/3 = 0.05, Σ(x − x̄)² = (16 + 1 + 25)/9 = 42/9: slope 0.45/42
    assert step_time.per_doubling([8, 16, 64], [0.0, 0.0, 0.03]) == pytest.approx(0.45 / 42)


def test_a_series_holds_one_layout_at_three_or_more_gpu_counts_with_the_same_work_per_gpu():
    found = step_time.weak_scaling_series()
    assert found
    for series in found:
        assert len(series["gpus"]) >= 3 and series["gpus"] == sorted(series["gpus"])
        assert len(series["errors"]) == len(series["gpus"])
        assert series["per_doubling"] == pytest.approx(step_time.per_doubling(series["gpus"], series["errors"]))
    # DGX Cloud's Llama 3.1 70B FP8 table: 64 to 2,048 H100 at TP 4, PP 4, CP 2 (six runs, the global batch growing
    # with the GPUs), the model growing more optimistic with the GPU count
    seventy = next(s for s in found if s["model"] == "llama3.1-70b" and s["precision"] == "fp8-ds")
    assert seventy["gpus"] == [64, 128, 256, 512, 1024, 2048] and seventy["per_doubling"] < 0
