"""The committed fit script (derivations/fit_step_time.py) on the fitting core: the papers' runs and the modern runs
(derivations/modern.py) that the step model takes flow into one fit per hardware preset; those that do not
evaluate are left out and said."""

from types import SimpleNamespace

import pytest

from symcomm.base.errors import InputError
from symcomm.derivations import fit_step_time, modern
from symcomm.training.answers import step_inputs

#: stand-ins for modern runs on h100: eval hybrid's words on llama3-8b (the step times: any positive numbers)
WORDS = ["t=1 p=1 d=8 c=1 b=64 m=8 s=8192 recompute=selective flash=1",
         "t=2 p=1 d=8 c=1 b=128 m=16 s=4096 sp=1 recompute=selective flash=0",
         "t=1 p=2 d=16 c=1 b=256 m=16 s=8192 flash=1 recompute=full",
         "t=4 p=1 d=4 c=1 b=32 m=4 s=8192 sp=1 flash=0 recompute=selective",
         "t=1 p=4 d=8 c=1 b=512 m=64 s=2048 recompute=none flash=0",
         # six runs: eta, w_half, kappa and eta_attn (the flash core's share, which the flash=1 runs read) + 2
         "t=2 p=2 d=4 c=1 b=64 m=16 s=4096 sp=1 recompute=none flash=1"]


def _stand_ins(monkeypatch, refused: int):
    runs = [{"id": f"modern-{i}", "hardware": "h100", "words": w, "step_time_s": 4.0 + i} for i, w in enumerate(WORDS)]
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
    assert "2 modern runs marked fit do not evaluate" in text and "leave-one-out" in text


def test_a_preset_whose_runs_do_not_evaluate_is_not_fitted(monkeypatch):
    _stand_ins(monkeypatch, refused=1)
    monkeypatch.setattr(modern, "inputs", lambda run, fitting=True: (_ for _ in ()).throw(InputError("unknown parameter 'x'")))
    with pytest.raises(InputError, match="no run marked for fitting on h100 evaluates .*unknown parameter 'x'"):
        fit_step_time.fit("h100")
