"""The glue between the planner and its step model's kernels (:mod:`symcomm.numbers.kernels`): the option key
of a combination, its kernel (shipped as data, or built in the process), the values every kernel reads,
and one call of a kernel over a block of layouts."""

from __future__ import annotations

import functools
from dataclasses import replace

import numpy as np

from ..base import notes
from ..base.units import bytes_per_element
from ..training import settings
from .request import PlanError, Request, expert_tp_run

def _gated(model) -> bool:
    """SwiGLU (three MLP matrices) in the llama and deepseek families; two in gpt (GELU), nemotron_h and nemotron4
    (squared ReLU): the model's own rule (Model.gated)."""
    return model.gated


def _base_values(req: Request) -> dict:
    model = req.model
    scale = bytes_per_element(req.dtype)
    out = {**model.values(), "F": model.ffn, "s": req.seq, "b": req.batch,
           **req.hardware.values(scale),
           **req.hardware.compute_values(req.dtype, precision=req.precision, attention_kernel=req.attention_kernel,
                                         typed=req.typed_hardware)}
    out["G"] = req.G
    if model.moe:
        out.update({"F_e": model.moe_ffn or model.ffn, "E_s": model.shared_experts})
    return out


def _options(req: Request, scheme: tuple, recompute: str, sp_on: bool, schedule: str, split: str = "even",
             grad_dtype: str | None = None) -> tuple:
    return option_key(scheme, recompute, sp_on, schedule, cp=req.cp_algorithm, moe=bool(req.model.moe),
                      embeddings=bool(req.embeddings), tied=bool(req.model.tied), gated=_gated(req.model), split=split,
                      dispatcher=req.dispatcher, router=(req.router_groups, req.router_group_topk),
                      shape=model_attention(req.model), precision=req.precision, kernel=req.attention_kernel,
                      nvlink=req.nvlink, expert_tp=req.expert_tp,
                      dropout=req.model.dropout if req.dropout is None else req.dropout, grad_dtype=grad_dtype)


def model_attention(model) -> tuple[str, str]:
    """(attention, q_width) as the model's shape fixes them, as eval fills them from a preset
    (:meth:`symcomm.presets.models.Model.settings`): mla for DeepSeek's latent attention, q_width=heads where the
    heads are wider than h/a (Qwen3, gpt-oss), else mha and h."""
    fixed = model.settings()
    return (fixed.get("attention", settings.OPTIONS["attention"].default),
            fixed.get("q_width", settings.OPTIONS["q_width"].default))


def option_key(scheme, recompute, sp_on, schedule, *, cp, moe, embeddings, tied, gated, split="even",
               dispatcher="alltoall", router=(1, 1), shape=("mha", "h"), precision="bf16", kernel="fused",
               nvlink="switch", expert_tp=None, dropout=True, grad_dtype=None) -> tuple:
    """One option combination of the step model: the run setting (symcomm.training.settings.RunSetting) of this
    scheme and these choices, as its kernel key (:meth:`RunSetting.key`: sorted (setting, typed value) pairs).
    ``shape``: (attention, q_width) of the model (:func:`model_attention`); ``dropout``: the model's (Model.dropout:
    the memory model's dropout masks, as eval fills dropout= from the preset).
    ``dispatcher``, ``router`` (router_groups, router_group_topk) and ``expert_tp`` are a MoE model's (a dense model
    has none: left at their defaults); the expert TP size is the one :func:`~.request.expert_tp_run` says the plan runs
    (1 under the flex dispatchers, as Megatron-Core needs: symcomm.training.hybrid, _FLEX_NEEDS_ETP1).
    ``grad_dtype``: the gradient reductions' element type where the framework's own depends on the layout
    (frameworks.Framework.cp_grad_dtype); None, the framework's."""
    run = settings.parse({"zero": scheme.zero, "framework": scheme.framework,
                          "reshard_after_forward": scheme.reshard_after_forward, "sp": sp_on, "recompute": recompute,
                          "schedule": schedule, "cp": cp, "gqa": True, "moe": moe, "embeddings": embeddings,
                          "tied": tied, "gated": gated, "pipeline_split": split,
                          "dispatcher": dispatcher if moe else settings.OPTIONS["dispatcher"].default,
                          "expert_tp": (expert_tp_run(dispatcher, expert_tp) if moe
                                        else settings.OPTIONS["expert_tp"].default),
                          "router_groups": router[0] if moe else 1, "router_group_topk": router[1] if moe else 1,
                          "attention": shape[0], "q_width": shape[1], "precision": precision,
                          "attention_kernel": kernel, "nvlink": nvlink, "dropout": dropout,
                          **({"grad_dtype": grad_dtype} if grad_dtype is not None else {})})
    return run.key()


def _kernel(options: tuple, run_bytes: int):
    """(parameters, quantities, function) of this option combination's kernel (symcomm.numbers.kernels): the shipped
    graph (symcomm/planner/kerneldata, read as data, no SymPy), else one built in the process (below)."""
    return _kernel_of(options, run_bytes).as_tuple()


def _kernel_of(options: tuple, run_bytes: int):
    """This option combination's kernel (:func:`_kernel`), a note said when it is built in the process."""
    from ..numbers import kernels

    found = kernels.shipped(options, run_bytes)
    if found is None:
        o = settings.RunSetting.from_key(options).texts()
        notes.add(f"no shipped kernel for {run_bytes}-byte elements, cp={o['cp']}, embeddings={o['embeddings']}, "
                  f"gated={o['gated']}, tied={o['tied']}, moe={o['moe']}, pipeline_split={o['pipeline_split']}, "
                  f"dispatcher={o['dispatcher']}, router_groups={o['router_groups']}, precision={o['precision']}, "
                  f"attention_kernel={o['attention_kernel']}, nvlink={o['nvlink']}, expert_tp={o['expert_tp']}, "
                  f"dropout={o['dropout']}: "
                  "the step model was compiled with "
                  "SymPy in this process (the same numbers, slower to start)")
        found = _built_kernel(options, run_bytes)
    return found


@functools.lru_cache(maxsize=None)
def _built_kernel(options: tuple, run_bytes: int):
    """A combination no shipped file holds (--no-embeddings, --cp-algorithm ulysses, fp32 or fp8 elements,
    another family shape): its step model built with SymPy and turned into a graph in the process, once,
    then run by the same interpreter as the shipped ones."""
    from . import kernelbuild
    from ..numbers import kernels

    data = kernelbuild.graph_data({}, [(options, run_bytes)])
    return kernels.from_data(data, "the step model")[(options, run_bytes)]


@functools.lru_cache(maxsize=None)
def timed_as(options: tuple) -> tuple[tuple, str]:
    """(the combination whose kernel times ``options``, the name whose value it reads as eta_attn).  A named attention
    kernel (attention_kernel=fa2, triton, cudnn) changes nothing in the step model but the share its core runs at
    (symcomm.training.compute: its eta_<kernel> where the fused core's eta_attn stands, KERNEL_SHARE), so it runs
    on the fused core's kernel, shipped for every family, with eta_attn at eta_<kernel>: the same numbers, no SymPy
    (tests/planner/test_plan.py checks each row against eval's own evaluation)."""
    run = settings.RunSetting.from_key(options)
    if run.attention_kernel == settings.OPTIONS["attention_kernel"].default:
        return options, "eta_attn"
    return replace(run, attention_kernel=settings.OPTIONS["attention_kernel"].default).key(), \
        f"eta_{run.attention_kernel}"


def names_read(blocks, run_bytes: int) -> set:
    """The names (CLI) the step models of ``blocks`` (option combinations) read: their kernels' parameters (a named
    attention kernel's share where its twin reads eta_attn: :func:`timed_as`)."""
    out = set()
    for block in blocks:
        twin, share = timed_as(block.options)
        out |= {share if name == "eta_attn" else name for name in _kernel_of(twin, run_bytes).params}
    return out


def _all_quantities(blocks: list, run_bytes: int, values: dict) -> list[dict]:
    """Every quantity the planner reports for each (option combination, rows) of ``blocks``, ``values`` over all
    the layouts: the kernels run together (symcomm.numbers.kernels.run_together), each node of their family's
    graph once over every layout, each block's quantities its rows of them."""
    from ..numbers import kernels

    twins = [timed_as(options) for options, _rows in blocks]
    shares = {share for _twin, share in twins}
    if len(shares) > 1:     # one plan names one attention kernel (Request.attention_kernel)
        raise ValueError(f"_all_quantities: blocks of several attention kernels ({', '.join(sorted(shares))})")
    share = shares.pop() if shares else "eta_attn"
    if share != "eta_attn" and share in values:
        values = {**values, "eta_attn": values[share]}
    found = [_kernel_of(twin, run_bytes) for twin, _share in twins]
    with np.errstate(divide="ignore", invalid="ignore"):
        try:
            got = kernels.run_together([(kernel, rows) for kernel, (_o, rows) in zip(found, blocks)], values)
        except (ZeroDivisionError, OverflowError) as err:  # scalar parts in plain Python floats
            raise _not_finite("the step model", err) from None
    return [{name: _over(x, rows.size) for name, x in zip(kernel.quantities, quantities)}
            for kernel, (_o, rows), quantities in zip(found, blocks, got)]


def _over(x, n: int) -> np.ndarray:
    """A quantity as n float64 values: an array of them as it is (each block's its own), a scalar broadcast."""
    if type(x) is np.ndarray and x.dtype == np.float64 and x.shape == (n,):
        return x
    return np.broadcast_to(np.asarray(x, dtype=np.float64), (n,))


def _not_finite(name: str, err: Exception) -> PlanError:
    return PlanError(f"{name} is not a finite number with these values ({err}): check the hardware's bandwidths, "
                     "peak_flops, hbm_bytes_per_second and step_time")
