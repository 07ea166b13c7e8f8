"""Published Megatron-Bridge pre-training rows (``data/bridge_runs_*.json``) as plain data, and their checks.

Each file records rows of NVIDIA-NeMo/Megatron-Bridge ``docs/performance-summary-archive.md``, one run
per printed number, with the layout and the recipe flags of that release (the file's ``_convention``
says what every field means).  :func:`load` reads one file by name, :func:`validate` says what is wrong
with one run (an empty list when nothing is).  No SymPy here: the fit reads these files at its start.
"""

from __future__ import annotations

import json
import math
import re
from importlib import resources

from symcomm.base.errors import InputError
from symcomm.training.frameworks import GRAD_REDUCE
from symcomm.training.settings import ADAM_DTYPES, ATTENTION_KERNELS, LOSS_KINDS, SP_INPUTS, TP_EMBEDDINGS

#: a data file's name: bridge_runs_<release tag>.json, torchtitan_runs.json, megatron_lm_runs.json, nemo_runs.json,
#: llm_foundry_runs.json, dgxc_runs.json, dgxc_25_05_runs.json, automodel_runs.json, kempnerforge_runs.json,
#: kempnerforge_mfu_runs.json, modelzoo_runs.json or megatron_lm_tests_runs.json
#: (same per-run schema), in derivations/data (never a path)
NAME = re.compile(r"bridge_runs_[a-z0-9_.]+\.json|torchtitan_runs\.json|megatron_lm_runs\.json|nemo_runs\.json"
                  r"|llm_foundry_runs\.json|dgxc_runs\.json|dgxc_25_05_runs\.json|automodel_runs\.json"
                  r"|kempnerforge_runs\.json|kempnerforge_mfu_runs\.json|modelzoo_runs\.json"
                  r"|megatron_lm_tests_runs\.json")
#: the largest data file read, in bytes (the 25.09 + 25.11 file is about 0.2 MB)
LIMIT = 4 * 1024 * 1024

#: every run carries these keys (MoE runs also "moe"), in this order in the file
REQUIRED = ("id", "release", "section", "row", "role", "hardware", "model", "seq", "global_batch", "micro_batch",
            "gpus", "nvlink_domain", "t", "p", "c", "v", "e", "etp", "d", "fsdp", "pipeline_layout", "precision",
            "fp8_param_gather", "recompute", "recompute_modules", "recompute_layers", "sp", "distributed_optimizer",
            "overlap", "cuda_graphs", "tokens_per_s_per_gpu", "model_tflops_per_gpu", "step_time_s", "derived",
            "assumed", "recipe")
MODEL_KEYS = ("name", "hidden", "layers", "heads", "kv_heads", "head_dim", "ffn", "gated_mlp", "vocab", "tied",
              "source")
MOE_KEYS = ("experts", "top_k", "moe_layers", "dense_layers_first", "moe_ffn", "shared_experts", "shared_expert_ffn")
OVERLAP_KEYS = ("grad_reduce", "param_gather", "tp_comm", "moe_a2a", "p2p")
#: h100-gt: torchtitan's Grand Teton H100s (their peak only bounded: symcomm/presets/hardware.json); a100: LLM Foundry's tables
HARDWARE = ("a100", "a100-40gb", "h100", "h100-gt", "h200", "b200", "gb200")
#: fp8-rowwise: torchao float8 with one scale per row (torchtitan's rowwise recipe)
PRECISIONS = ("bf16", "fp8-cs", "fp8-ds", "fp8-mx", "fp8-block", "fp8-rowwise", "nvfp4")
#: op: torchtitan's op-level selective activation checkpointing (symcomm.training.settings.TORCHTITAN_OP_SAC)
RECOMPUTE = ("none", "selective", "full", "op")
#: "fit": a release named for fitting; "check": never fitted on; "regression": a row its framework's maintainers (or its
#: own table's footnote) publish as a regression, which ``known_cause`` names: neither fitted nor counted among the
#: checks, its error shown beside its cause (a configuration its maintainers call broken is not what the model is for)
ROLES = ("fit", "check", "regression")
#: grad_reduce_dtype (optional): the element type of the data-parallel gradient reduction where the recipe's
#: optimizer sets it apart from the framework's rule (NeMo's Apex DistributedFusedAdam: grad_sync_dtype)
GRAD_REDUCE_DTYPES = ("fp32", "bf16")
#: grad_reduce (optional): one of the step model's grad_reduce values a recipe fixes (symcomm.training.frameworks.GRAD_REDUCE)
#: adam_dtype (optional): Adam's state type where the recipe's optimizer sets it apart from fp32 (NeMo's Apex
#: DistributedFusedAdam: optim.dtype), one of the adam_dtype setting's values (symcomm.training.settings.ADAM_DTYPES)
#: step_time_s is rounded to 4 significant digits, so it meets GBS·seq/(tokens/s/GPU·GPUs) within 0.05 %
STEP_TOLERANCE = 1e-3


def load(name: str) -> dict:
    """The parsed file ``derivations/data/<name>`` (e.g. ``bridge_runs_25.json``)."""
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise InputError(f"bridge runs file {name!r}: give a file name of the form bridge_runs_<tag>.json "
                         "(a file in derivations/data, not a path)")
    path = resources.files(__package__).joinpath("data", name)
    if not path.is_file():
        raise InputError(f"bridge runs file {name!r}: no such file in derivations/data")
    with path.open("rb") as stream:     # read at most one byte past the cap: a huge file is never read whole
        data = stream.read(LIMIT + 1)
    if len(data) > LIMIT:
        raise InputError(f"bridge runs file {name!r}: more than {LIMIT:,} bytes; at most {LIMIT:,}")
    return json.loads(data.decode("utf-8"), parse_constant=_refuse_constant)


def _refuse_constant(word: str):
    raise InputError(f"bridge runs file: {word} is not strict JSON; write a number or null")


def runs(name: str, role: str | None = None) -> list[dict]:
    """The runs of one file, all or only those of ``role`` (:data:`ROLES`)."""
    if role is not None and role not in ROLES:
        raise InputError(f"role {role!r}: one of {', '.join(ROLES)}")
    return [r for r in load(name)["runs"] if role is None or r["role"] == role]


def _positive_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _positive_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def validate(run: dict) -> list[str]:
    """What is wrong with one run: missing fields, a layout that does not multiply out, a step time that
    does not follow from the printed throughput.  An empty list when the run is sound."""
    name = run.get("id", "<no id>")
    problems = [f"{name}: missing field {key!r}" for key in REQUIRED if key not in run]
    if problems:
        return problems
    model = run["model"]
    problems += [f"{name}: model lacks {key!r}" for key in MODEL_KEYS if key not in model]
    if "experts" in model:
        problems += [f"{name}: MoE model lacks {key!r}" for key in MOE_KEYS if key not in model]
        if "moe" not in run:
            problems.append(f"{name}: MoE model without the 'moe' settings")
    problems += [f"{name}: overlap lacks {key!r}" for key in OVERLAP_KEYS if key not in run["overlap"]]
    for key, allowed in (("hardware", HARDWARE), ("precision", PRECISIONS), ("recompute", RECOMPUTE), ("role", ROLES)):
        if run[key] not in allowed:
            problems.append(f"{name}: {key} {run[key]!r} is not one of {', '.join(allowed)}")
    if run["id"] != run["id"].lower():
        problems.append(f"{name}: id is not lowercase")
    sizes = ("seq", "global_batch", "micro_batch", "gpus", "nvlink_domain", "t", "p", "c", "v", "e", "d")
    bad = [f"{name}: {key} must be a positive integer, not {run[key]!r}"
           for key in sizes if not _positive_int(run[key])]
    # torchtitan prints tokens/s with a decimal and no TFLOP/s: a positive number, and null for a rate not printed
    if not _positive_number(run["tokens_per_s_per_gpu"]):
        bad.append(f"{name}: tokens_per_s_per_gpu must be a positive number, not {run['tokens_per_s_per_gpu']!r}")
    if run["model_tflops_per_gpu"] is not None and not _positive_number(run["model_tflops_per_gpu"]):
        bad.append(f"{name}: model_tflops_per_gpu must be a positive number or null, "
                   f"not {run['model_tflops_per_gpu']!r}")
    # memory_gib (optional): the source's printed peak memory per GPU in GiB, null where it prints none
    memory = run.get("memory_gib")
    if memory is not None and not _positive_number(memory):
        bad.append(f"{name}: memory_gib must be a positive number or null, not {memory!r}")
    # micro_batch_open (optional): the micro-batch sizes a source that prints none leaves open (the typed one among
    # them), each a divisor of the sequences a data-parallel replica takes a step; the checks predict each
    opened = run.get("micro_batch_open")
    if opened is not None and _positive_int(run["d"]) and not (
            isinstance(opened, list) and run["micro_batch"] in opened
            and all(_positive_int(x) and run["global_batch"] % (run["d"] * x) == 0 for x in opened)):
        bad.append(f"{name}: micro_batch_open must list micro-batch sizes, micro_batch among them, each dividing "
                   f"global_batch/d, not {opened!r}")
    # known_cause (optional): why the row's step time disagrees with the step model, from the sources it names
    if "known_cause" in run and not (isinstance(run["known_cause"], str) and run["known_cause"].strip()):
        bad.append(f"{name}: known_cause must be a sentence naming its sources, not {run['known_cause']!r}")
    if "grad_reduce_dtype" in run and run["grad_reduce_dtype"] not in GRAD_REDUCE_DTYPES:
        bad.append(f"{name}: grad_reduce_dtype {run['grad_reduce_dtype']!r} is not one of {', '.join(GRAD_REDUCE_DTYPES)}")
    # attention_kernel (optional): the attention core's kernel where the recipe picks one apart from the framework's
    # fused default (the step model's attention_kernel setting)
    if "attention_kernel" in run and run["attention_kernel"] not in ATTENTION_KERNELS:
        bad.append(f"{name}: attention_kernel {run['attention_kernel']!r} is not one of {', '.join(ATTENTION_KERNELS)}")
    # flash (optional): false where the attention core ran no flash kernel (the step model's flash=0)
    if "flash" in run and not isinstance(run["flash"], bool):
        bad.append(f"{name}: flash must be true or false, not {run['flash']!r}")
    # fused_grouped_mlp (optional): whether Transformer Engine fused the routed experts' grouped MLP (the step model's
    # fused_grouped_mlp setting)
    if "fused_grouped_mlp" in run and not isinstance(run["fused_grouped_mlp"], bool):
        bad.append(f"{name}: fused_grouped_mlp must be true or false, not {run['fused_grouped_mlp']!r}")
    if "adam_dtype" in run and run["adam_dtype"] not in ADAM_DTYPES:
        bad.append(f"{name}: adam_dtype {run['adam_dtype']!r} is not one of {', '.join(ADAM_DTYPES)}")
    # cpu_offload_layers (optional): the layers whose activations Megatron-Core offloads to the host (the recipe's
    # cpu_offloading_num_layers), fewer than the model has; the step model's cpu_offload, L_off
    offload = run.get("cpu_offload_layers")
    if offload is not None and not (_positive_int(offload) and offload < run["model"].get("layers", 0)):
        bad.append(f"{name}: cpu_offload_layers must be a positive integer below the model's layers, not {offload!r}")
    # compile, reshard_after_forward (optional): a PyTorch-native trainer's torch.compile and FSDP2 resharding where the
    # recipe sets them; grad_reduce (optional): when it reduce-scatters the gradients (the step model's grad_reduce)
    bad += [f"{name}: {key} must be true or false, not {run[key]!r}"
            for key in ("compile", "reshard_after_forward") if key in run and not isinstance(run[key], bool)]
    # schedules_per_step (optional): how many times a step runs its pipeline schedule (gradient accumulation over whole
    # schedules, each over m/schedules_per_step micro-batches), where a trainer does so
    per_step = run.get("schedules_per_step", 1)
    if not (_positive_int(per_step) and (run["global_batch"] // (run["d"] * run["micro_batch"])) % per_step == 0):
        bad.append(f"{name}: schedules_per_step must be a positive integer dividing the micro-batches per step, "
                   f"not {per_step!r}")
    # loss (optional): the cross-entropy where the recipe's loss is not its framework's (the step model's loss setting)
    if "loss" in run and run["loss"] not in LOSS_KINDS:
        bad.append(f"{name}: loss {run['loss']!r} is not one of {', '.join(LOSS_KINDS)}")
    # sp_input (optional): which linears gather the sequence-sharded input where the trainer's plan is not one gather
    # per block (the step model's sp_input setting)
    if "sp_input" in run and run["sp_input"] not in SP_INPUTS:
        bad.append(f"{name}: sp_input {run['sp_input']!r} is not one of {', '.join(SP_INPUTS)}")
    # tp_embedding (optional): the input embedding whole on each tensor-parallel rank where the trainer's plan leaves
    # it out (the step model's tp_embedding setting)
    if "tp_embedding" in run and run["tp_embedding"] not in TP_EMBEDDINGS:
        bad.append(f"{name}: tp_embedding {run['tp_embedding']!r} is not one of {', '.join(TP_EMBEDDINGS)}")
    if "grad_reduce" in run and run["grad_reduce"] not in GRAD_REDUCE:
        bad.append(f"{name}: grad_reduce {run['grad_reduce']!r} is not one of {', '.join(GRAD_REDUCE)}")
    if run["role"] == "regression" and "known_cause" not in run:
        bad.append(f"{name}: role regression needs the known_cause naming where the regression is published")
    if bad:
        return problems + bad
    t, p, c, d = run["t"], run["p"], run["c"], run["d"]
    if t * p * c * d != run["gpus"]:
        problems.append(f"{name}: t·p·c·d = {t}·{p}·{c}·{d} = {t * p * c * d}, not gpus = {run['gpus']}")
    per_replica = d * run["micro_batch"]
    if run["global_batch"] % per_replica:
        problems.append(f"{name}: GBS/(d·MBS) = {run['global_batch']}/{per_replica} is not an integer")
    expected = run["global_batch"] * run["seq"] / (run["tokens_per_s_per_gpu"] * run["gpus"])
    step = run["step_time_s"]
    finite = isinstance(step, (int, float)) and math.isfinite(step)
    if not finite or abs(step - expected) > STEP_TOLERANCE * expected:
        problems.append(f"{name}: step_time_s {step!r} is not GBS·seq/(tokens/s/GPU·GPUs) = {expected:.6g} s "
                        "within 0.1 %")
    layout = run["pipeline_layout"]
    if isinstance(layout, dict) and "layers_per_chunk" in layout:
        chunks = layout["layers_per_chunk"]
        if len(chunks) != p * run["v"]:
            problems.append(f"{name}: layers_per_chunk has {len(chunks)} entries, not p·v = {p * run['v']}")
        if sum(chunks) != model["layers"]:
            problems.append(f"{name}: layers_per_chunk sums to {sum(chunks)}, not the model's {model['layers']} layers")
    return problems
