"""Published training runs (``data/published_runs.json``) as inputs of the step-time model.

Each run gives a model shape, a layout and one measurement; :func:`options_of` and
:func:`values_of` turn it into the options and the values of :func:`symcomm.training.steptime.quantities`,
:func:`measured_step_time` turns its measurement into seconds per iteration.  What a paper
does not state is taken from the run's own ``assumed`` list or, for the framework settings
below, from what the framework of that year ran (each with its source).
"""

from __future__ import annotations

import json
from importlib import resources

import numpy as np

from symcomm.training.flops import model_flops
from symcomm.presets import Model, hardware
from symcomm.core.symbols import F, L, V, a, h, h_kv, s
from symcomm.training import steptime

#: Megatron-LM 2021–2022 (the papers' runs): DDP, gradients all-reduced after the backward, not
#: overlapped (no --overlap-grad-reduce yet); fp16 runs (Narayanan et al., examples/sc21/CONFIG.sh
#: --fp16) keep and reduce fp16 gradients (--accumulate-allreduce-grads-in-fp32 off by default), bf16
#: runs an fp32 gradient buffer (forced on for bf16 in arguments.py; Korthikanti et al.'s Figure 1
#: counts 18 bytes per parameter: 2 + 4 + 12); no flash attention (softmax scores stored); no overlap of the
#: pipeline sends (Megatron-LM added overlap_p2p_comm in commit f9283c5a, 2023-05-31, default on from 4eeff55d,
#: 2023-10-12)
#: Megatron-LM added gradient accumulation fusion (the weight gradients accumulated into the fp32 buffer in place)
#: in commit 83b1e42f, 2022-02-13 (bf16 only until 07916bf2, 2022-09-27), after Narayanan et al.'s runs; Korthikanti
#: et al. name no commit: taken off for both (an assumption; wgrad_fusion=0)
MEGATRON_2021 = {"zero": "0", "framework": "megatron", "dp_overlap": "0", "flash": "0", "p2p_overlap": "0",
                 "wgrad_fusion": "0"}
#: Megatron-LM's column-parallel linears start their backward's tensor-parallel collectives asynchronously from
#: 2021-09 (symcomm.training.frameworks.TP_BACKWARD_OVERLAP_SOURCE: --async-tensor-model-parallel-allreduce, commit
#: cf7efd4f of 2021-08-30, on by default from 3f652469 of 2021-09-02): the runs measured before it ran them on the
#: critical path (tp_backward_overlap=0): Narayanan et al.'s (arXiv 2104.04473, April 2021; examples/sc21 of
#: 2021-08-10) and the README's GPT-3 example (its sentence added in 152aab30, 2021-01-11).  Korthikanti et al.'s
#: runs (2022, with sequence parallelism, which came after) keep the framework's default
SYNC_TP_BACKWARD = ("narayanan2021-", "megatron-readme-")
#: Llama 3 (Dubey et al. 2024, §3.3.2): FSDP-style sharding without resharding after the forward,
#: gradients reduce-scattered in fp32, communication overlapped; flash attention
LLAMA3 = {"zero": "3", "framework": "fsdp", "reshard_after_forward": "0", "grad_reduce": "per_step",
          "grad_dtype": "fp32", "dp_overlap": "1", "flash": "1"}


def load() -> dict:
    text = resources.files(__package__).joinpath("data", "published_runs.json").read_text(encoding="utf-8")
    return json.loads(text)


def runs(hardware_name: str | None = None, role: str | None = None) -> list[dict]:
    return [r for r in load()["runs"]
            if (hardware_name is None or r["hardware"] == hardware_name) and (role is None or r["role"] == role)]


def parameters(run: dict) -> int:
    """Φ from the shape, as symcomm.presets counts a model: GPT (biases, learned positions, tied
    embedding, final LayerNorm) or, with a gated MLP, Llama (SwiGLU, grouped-query attention, untied)."""
    return Model(name=run["id"], title=run["id"], family="llama" if run["gated_mlp"] else "gpt",
                 hidden=run["hidden"], layers=run["layers"], heads=run["heads"], kv_heads=run["kv_heads"],
                 ffn=run["ffn"], vocab=run["vocab"], seq=run["seq"]).parameters


#: DeepSpeed's pipeline engine (Megatron-DeepSpeed, GPT-NeoX, MT-NLG): ZeRO-1 reducing once per step
#: after the last micro-batch, not overlapped; its pipeline sends the whole activation from every
#: tensor rank (no scatter-gather: deepspeed/runtime/pipe/engine.py sends the stage output as it is)
DEEPSPEED_PIPE = {"framework": "deepspeed", "grad_reduce": "per_step", "dp_overlap": "0", "flash": "0"}


def framework_of(run: dict) -> str:
    """Which framework setting a run's own description names: llama3, fsdp, deepspeed or megatron."""
    text = run.get("framework", "")
    if run["id"].startswith("dubey2024"):
        return "llama3"
    if "FSDP" in text:
        return "fsdp"
    if "DeepSpeed" in text:
        return "deepspeed"
    return "megatron"


def options_of(run: dict) -> dict[str, str]:
    kind = framework_of(run)
    grad_dtype = "same" if run.get("precision") == "fp16" else "fp32"
    if kind == "llama3":
        settings = dict(LLAMA3)
    elif kind == "fsdp":       # metaseq: FSDP over the data-parallel group, Megatron tensor parallel inside
        settings = {"zero": "3", "framework": "fsdp", "grad_dtype": grad_dtype, "flash": "0",
                    "reshard_after_forward": "1"}
    elif kind == "deepspeed":
        settings = {**DEEPSPEED_PIPE, "zero": str(run.get("zero") or 1), "grad_dtype": grad_dtype}
    else:
        settings = {**MEGATRON_2021, "grad_dtype": grad_dtype}
        if run["id"].startswith(SYNC_TP_BACKWARD):
            settings["tp_backward_overlap"] = "0"
    scatter = kind == "megatron" and run.get("scatter_gather", True) and not run["sp"] and run["p"] > 1
    return {**settings, "sp": "1" if run["sp"] else "0", "recompute": run["recompute"],
            "schedule": run["schedule"], "embeddings": "1", "gqa": "1", "gated": "1" if run["gated_mlp"] else "0",
            "scatter_gather": "1" if scatter else "0", "cp": "ring", "tied": "0"}


def values_of(run: dict, constants: dict | None = None) -> dict:
    """The symbols' values for this run on its hardware preset; ``constants`` (eta, kappa) replace the
    preset's fitted ones (the fit passes arrays of candidates)."""
    system = hardware(run["hardware"])
    dtype = "fp16" if run.get("precision") == "fp16" else "bf16"
    compute = {"peak": system.peak(dtype), "hbm": system.hbm_bytes_per_second}
    compute.update(constants if constants is not None else dict(system.step_time))
    d_ = run["d"]
    return {"h": run["hidden"], "L": run["layers"], "a": run["heads"],
            "h_kv": run["kv_heads"] * (run["hidden"] // run["heads"]), "F": run["ffn"], "V": run["vocab"],
            "s": run["seq"], "Phi": parameters(run), "t": run["t"], "p": run["p"], "d": d_, "c": run["c"], "e": 1,
            "b": run["global_batch"], "m": run["global_batch"] // (d_ * run["micro_batch"]), "v": run["v"],
            **system.values(2), "G": run["gpus_per_node"], **compute}


def has_step_time(run: dict) -> bool:
    """False for a run that prints TFLOP/s per GPU without saying what FLOPs they count."""
    return "iteration_time_s" in run or run.get("flops_count") in ("narayanan-eq3", "model")


def measured_step_time(run: dict) -> float:
    """Seconds per iteration: as printed, or the FLOPs per iteration the run's ``flops_count``
    names over the printed FLOP/s of all GPUs (Narayanan et al.'s eq. (3), which counts the
    recompute forward, or symcomm's model FLOPs, :func:`symcomm.training.flops.model_flops`)."""
    if "iteration_time_s" in run:
        return float(run["iteration_time_s"])
    if not has_step_time(run):
        raise ValueError(f"{run['id']}: TFLOP/s per GPU with no stated FLOP count give no iteration time")
    B, seq, layers, width, vocab = run["global_batch"], run["seq"], run["layers"], run["hidden"], run["vocab"]
    if run["flops_count"] == "narayanan-eq3":
        flops = 96 * B * seq * layers * width ** 2 * (1 + seq / (6 * width) + vocab / (16 * layers * width))
    else:
        shape = {h: width, L: layers, a: run["heads"], h_kv: run["kv_heads"] * (width // run["heads"]),
                 F: run["ffn"], V: vocab, s: seq}
        flops = float(model_flops(B, s, gated=run["gated_mlp"]).subs(shape))
    return flops / (run["gpus"] * run["tflops_per_gpu"] * 1e12)


def predict(run: dict, constants: dict | None = None) -> dict:
    """Every quantity of the step model for this run (floats, or arrays with array constants)."""
    return steptime.quantities(values_of(run, constants), 2, **options_of(run))


def errors(runs_: list[dict], constants: dict | None = None) -> np.ndarray:
    """Relative error of the predicted step time, one row per run."""
    return np.array([np.asarray(predict(r, constants)["step_time"]) / measured_step_time(r) - 1 for r in runs_])


def inputs_of(run: dict, constants: dict | None = None):
    """The run as the step model's one binding yields it (:class:`symcomm.training.answers.StepInputs`, what
    ``eval hybrid --hardware`` evaluates): :func:`values_of` and :func:`options_of`, β per element of 2
    bytes.  For every run the hybrid strategy accepts, the same numbers as its KEY=VALUE words bound by
    ``eval`` (tests/training/test_step_fit.py); the uneven pipelines of Llama 3 (L = 126 on p = 16), which eval
    takes as pipeline_split=first_last, are evaluated here from these values directly, as the fit first read them."""
    from symcomm.training.answers import StepInputs

    dtype = "fp16" if run.get("precision") == "fp16" else "bf16"
    return StepInputs(values_of(run, constants), 2, options_of(run), dtype)


def source_of(run: dict) -> str:
    """The source a run is grouped under: its id's first part (author and year, or the repository)."""
    return run["id"].split("-")[0]


def measured_runs(hardware_name: str, role: str = "fit") -> list:
    """The runs of one hardware preset with a step time, as the fitting core reads them
    (:class:`symcomm.measurement.step_fit.MeasuredRun`)."""
    from symcomm.measurement.step_fit import MeasuredRun

    return [MeasuredRun(r["id"], inputs_of(r), measured_step_time(r), source_of(r), framework_of(r))
            for r in runs(hardware_name, role=role) if has_step_time(r)]
