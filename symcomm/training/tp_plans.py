"""How a framework's tensor-parallel plan treats the sequence-sharded activations: which linears all-gather their input
under sequence parallelism (sp_input) and when the sequence all-gathers may move FP8 (fp8_tp_gather), each with the
one-line refusal :class:`symcomm.training.settings.RunSetting` raises for a combination that has no meaning.  Each
function reads a setting's typed fields only, so this module imports nothing of the package (settings.py re-exports
its names).  SymPy-free: the planner imports it.
"""

from __future__ import annotations

#: which linears gather the sequence-sharded input under sequence parallelism (the sp_input setting): one gather per
#: block input, or each column-parallel projection its own (q, k, v and a gated MLP's gate and up; or a plain MLP's up)
SP_INPUTS = ("block", "linear_gated", "linear")
#: the column-parallel linears of an attention block and of a dense MLP block that gather their own input, per sp_input
SP_INPUT_LINEARS = {"linear_gated": (3, 2), "linear": (3, 1)}


def fp8_tp_gather_refusal(setting) -> str | None:
    """Why ``setting``'s fp8_tp_gather=1 has no meaning, or None: FP8 gathers need sequence parallelism (without it
    the tensor-parallel collectives are all-reduces of 16-bit outputs) and per-tensor scales (torchao's float8 TP
    styles take tensorwise scaling only)."""
    if setting.fp8_tp_gather and not (setting.sp and setting.precision == "fp8_tensor"):
        return ("fp8_tp_gather=1 needs sp=1 and precision=fp8_tensor (torchao's float8 tensor-parallel styles gather "
                "per-tensor-scaled FP8); give fp8_tp_gather=0 or framework")
    return None


def sp_input_refusal(setting) -> str | None:
    """Why ``setting``'s sp_input has no meaning, or None: the per-linear gathers are sequence parallelism's, counted
    for multi-head or grouped-query attention and a dense or MoE transformer (MLA's and Mamba's input sides are their
    own).  Which MLP projections gather (linear_gated: gate and up; linear: the one up projection) the value says: the
    hybrid strategy's terms are built without the step model's gated."""
    if setting.sp_input == "block":
        return None
    if not setting.sp or setting.attention == "mla" or setting.mamba:
        return (f"sp_input={setting.sp_input} needs sp=1 with attention=mha or gqa and mamba=0 (the per-linear "
                "sequence all-gathers of q, k, v and the MLP's column-parallel linears); give sp_input=block")
    return None
