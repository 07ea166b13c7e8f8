"""Published pre-training runs (``data/bridge_runs_*.json``, ``data/torchtitan_runs.json``) as plain data.

:func:`load` reads one such file by name; :func:`validate` says what is wrong with one run
(an empty list when nothing is). No SymPy here: the fit script and the tests read these files
without the engine. The file's ``_convention`` says what each field means and in which unit.
"""

from __future__ import annotations

import json
from importlib import resources

from symcomm.base.errors import InputError

#: every field a run must carry, in the order the files write them
REQUIRED = ("id", "release", "section", "row", "role", "hardware", "model", "seq", "global_batch", "micro_batch",
            "gpus", "nvlink_domain", "t", "p", "c", "v", "e", "etp", "d", "fsdp", "pipeline_layout", "precision",
            "fp8_param_gather", "recompute", "recompute_modules", "recompute_layers", "sp", "distributed_optimizer",
            "overlap", "cuda_graphs", "tokens_per_s_per_gpu", "model_tflops_per_gpu", "step_time_s", "derived",
            "assumed", "recipe")
MODEL_REQUIRED = ("name", "hidden", "layers", "heads", "kv_heads", "ffn", "gated_mlp", "vocab", "tied", "source")
OVERLAPS = ("grad_reduce", "param_gather", "tp_comm", "moe_a2a", "p2p")
HARDWARE = ("h100", "b200", "gb200")
#: fp8-rowwise: torchao float8 with row-wise scales (torchtitan); the others as in the Bridge file's _convention
PRECISIONS = ("bf16", "fp8-cs", "fp8-ds", "fp8-mx", "fp8-block", "fp8-rowwise", "nvfp4")
RECOMPUTE = ("none", "selective", "full")
ROLES = ("fit", "check")
#: how close step_time_s must be to global_batch·seq/(tokens/s per GPU · GPUs): it is rounded to 4 digits
STEP_TOLERANCE = 1e-3


def load(name: str) -> dict:
    """The document of ``data/<name>`` (e.g. ``bridge_runs_26.json``), parsed as strict JSON."""
    if "/" in name or "\\" in name or not name.endswith(".json"):
        raise InputError(f"run file {name!r}: give the name of a .json file in derivations/data, e.g. bridge_runs_26.json")
    text = resources.files(__package__).joinpath("data", name).read_text(encoding="utf-8")
    return json.loads(text, parse_constant=_refuse_constant)


def _refuse_constant(word: str):
    raise InputError(f"run file: {word} is not strict JSON (no NaN or Infinity)")


def _positive_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def layers_per_chunk(run: dict) -> list[int] | None:
    """The decoder layers on each virtual pipeline chunk when the run states them, else None."""
    layout = run.get("pipeline_layout")
    if isinstance(layout, dict):
        return layout.get("layers_per_chunk")
    return None


def validate(run: dict) -> list[str]:
    """What is wrong with one run, one line each, naming the run and the field."""
    name = run.get("id", "<no id>")
    missing = [key for key in REQUIRED if key not in run]
    if missing:
        return [f"{name}: missing field(s) {', '.join(missing)}"]
    problems = []
    model = run["model"]
    problems += [f"{name}: model has no {key}" for key in MODEL_REQUIRED if key not in model]
    for key in ("seq", "global_batch", "micro_batch", "gpus", "nvlink_domain", "t", "p", "c", "v", "e", "d"):
        if not _positive_int(run[key]):
            problems.append(f"{name}: {key} must be a positive integer, not {run[key]!r}")
    if problems:
        return problems
    if run["t"] * run["p"] * run["c"] * run["d"] != run["gpus"]:
        problems.append(f"{name}: gpus {run['gpus']} != t·p·c·d = {run['t']}·{run['p']}·{run['c']}·{run['d']}")
    micro = run["global_batch"] / (run["d"] * run["micro_batch"])
    if micro != int(micro) or micro < 1:
        problems.append(f"{name}: global_batch/(d·micro_batch) = {micro} is not a positive integer")
    for key, allowed in (("hardware", HARDWARE), ("precision", PRECISIONS), ("recompute", RECOMPUTE), ("role", ROLES)):
        if run[key] not in allowed:
            problems.append(f"{name}: {key} {run[key]!r} is not one of {', '.join(allowed)}")
    if sorted(run["overlap"]) != sorted(OVERLAPS) or any(v not in (True, False, None) for v in run["overlap"].values()):
        problems.append(f"{name}: overlap must hold exactly {', '.join(OVERLAPS)}, each true, false or null")
    if not (isinstance(run["tokens_per_s_per_gpu"], (int, float)) and run["tokens_per_s_per_gpu"] > 0):
        return problems + [f"{name}: tokens_per_s_per_gpu must be a positive number"]
    expected = run["global_batch"] * run["seq"] / (run["tokens_per_s_per_gpu"] * run["gpus"])
    if abs(run["step_time_s"] - expected) > STEP_TOLERANCE * expected:
        problems.append(f"{name}: step_time_s {run['step_time_s']} is not global_batch·seq/(tokens/s/GPU·GPUs) = {expected:.6g}")
    chunks = layers_per_chunk(run)
    if chunks is not None:
        if len(chunks) != run["p"] * run["v"]:
            problems.append(f"{name}: layers_per_chunk has {len(chunks)} entries, p·v = {run['p'] * run['v']}")
        if sum(chunks) != model["layers"]:
            problems.append(f"{name}: layers_per_chunk sums to {sum(chunks)}, the model has {model['layers']} layers")
    if not (run["id"] == run["id"].lower() and run["derived"] and run["assumed"] and run["recipe"]):
        problems.append(f"{name}: id must be lowercase and derived, assumed and recipe non-empty")
    return problems
