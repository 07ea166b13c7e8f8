"""The step model's hardware values by name: the constants a ``step_time`` block is fitted with, the peaks of each
element type, and which of them a user may type over a hardware's (``eval hybrid --hardware h100 eta=0.6``),
with the rules for a typed one, and the values a datasheet gives by rule (the roofline widths, a reduction's γ)
(:mod:`symcomm.presets.systems` reads and re-exports them)."""

from __future__ import annotations

from ..base.crossing import SWITCH
from ..base.errors import InputError

#: the width constants held at the additive roofline of the part's datasheet (peak and HBM bandwidth), not fitted:
#: a preset that borrows another's fitted constants takes these from its own datasheet (:func:`roofline_w_half`)
ROOFLINE_HELD = ("w_half", "w_half_expert")


def roofline_w_half(peak_bf16: float, hbm_bytes_per_second: float, element_bytes: int = 2) -> float:
    """w_half of the additive roofline, peak·bytes/(2·B_hbm) (Williams et al. 2009; the step-time chapter's claim): the
    width at which a GEMM's operand bytes at the HBM bandwidth take as long as its FLOPs at the peak; 295 on H100 SXM
    in bf16 (989.4 TFLOP/s, 3.35 TB/s), 206 on H200 (4.8 TB/s), the same in FP8 (twice the rate, half the bytes)."""
    return peak_bf16 * element_bytes / (2 * hbm_bytes_per_second)


def with_own_widths(values: dict, peak_bf16: float, hbm_bytes_per_second: float) -> dict:
    """``values`` with each width of :data:`ROOFLINE_HELD` it holds set to the roofline of this peak and HBM
    bandwidth: what a borrowing preset runs (symcomm.presets.systems.Hardware.own_roofline)."""
    width = roofline_w_half(peak_bf16, hbm_bytes_per_second)
    return {**values, **{name: width for name in ROOFLINE_HELD if name in values}}


#: the element types below 16 bits whose matmuls a precision recipe runs (symcomm.training.settings.PRECISIONS), each
#: with its own datasheet peak (peak_flops key; the symbol peak_<type>) and fitted share (eta_<type>)
LOW_DTYPES = ("fp8", "fp4")
#: the peaks a user may type over the hardware's (:meth:`Hardware.peak`): the bf16 one and one per low type
PEAK_NAMES = ("peak",) + tuple(f"peak_{dtype}" for dtype in LOW_DTYPES)


#: the attention kernels (the attention_kernel setting) that run the core at a share of the bf16 peak published for
#: the kernel (hardware attention_shares, key = the setting's value; symbol eta_<key>), not at the fitted eta_attn of
#: the fused core: each with its name in words
PUBLISHED_KERNELS = {"fa2": "FlashAttention-2", "triton": "FlashAttention's Triton port",
                     "cudnn": "cuDNN's fused attention"}
#: the symbols of those shares
KERNEL_SHARES = tuple(f"eta_{kernel}" for kernel in PUBLISHED_KERNELS)
#: the fitted constants a ``step_time`` block may hold (symcomm.training.compute.FITTED describes them): the presets'
#: (the fit script's) and, from a calibration on runs that name a kernel, that kernel's share of the bf16 peak, which
#: then stands in for the published one (``symcomm calibrate-step``: a team's own runs may time their kernel)
STEP_TIME_NAMES = (("eta", "eta_fp8", "w_half", "kappa", "eta_attn", "w_half_expert", "eta_fp4", "kappa_moe")
                   + KERNEL_SHARES)


def kernel_share(shares: dict, compute_capability: tuple, kernel: str) -> float | None:
    """The published share of the bf16 peak the attention kernel ``kernel`` (:data:`PUBLISHED_KERNELS`) reaches on a
    part with these ``attention_shares`` and ``compute_capability``, None where none is published: ``shares[kernel]``;
    cuDNN's, where the part prints none of its own, is the fused core's on compute capability 9.0 and above, where
    that core is cuDNN's (Transformer Engine's get_attention_backend prefers FusedAttention from Hopper on: the
    hardware schema's ``fused``)."""
    if kernel == "cudnn" and kernel not in shares and tuple(compute_capability[:1]) >= (9,):
        return shares.get("fused")
    return shares.get(kernel)


def kernel_shares(step_time: dict, shares: dict, compute_capability: tuple, kernels) -> dict[str, float]:
    """{eta_<kernel>: its share} for each of ``kernels`` (:data:`PUBLISHED_KERNELS`) a part times: a calibration's
    fitted share (its ``step_time`` block's, symcomm calibrate-step on runs naming the kernel), else the published one
    (:func:`kernel_share` of its ``attention_shares``); a kernel neither gives is left out.  What the step model reads
    for a run naming the kernel, and where a calibration on such runs starts."""
    out = {}
    for kernel in kernels:
        share = step_time.get(f"eta_{kernel}")
        if share is None:
            share = kernel_share(shares, compute_capability, kernel)
        if share is not None:
            out[f"eta_{kernel}"] = share
    return out


#: the step model's constants a user may type over the hardware's (each wins over the hardware's value where the run
#: reads it): the fitted ones and the kernels' shares
TYPED_CONSTANTS = STEP_TIME_NAMES
#: the datasheet values a user may type over the hardware's: the peaks and the HBM bandwidth (bytes/s)
TYPED_DATASHEET = PEAK_NAMES + ("hbm",)
#: every hardware value a user may type (eval hybrid --hardware): the datasheet's and the constants
TYPED_HARDWARE = TYPED_DATASHEET + TYPED_CONSTANTS
#: the least rate a typed datasheet value may be, its unit and the unit a slip is read in (a peak in TFLOP/s, a
#: bandwidth in GB/s: what every output prints): 10^12 FLOP/s and 10^9 bytes/s, below any accelerator's
_LEAST_RATE = {"peak": (1e12, "FLOP/s", ("TFLOP/s", "e12")), "hbm": (1e9, "bytes/s", ("GB/s", "e9"))}
#: the typed constants that are a share of a peak, in (0, 1]
_SHARES = frozenset(name for name in TYPED_CONSTANTS if name.startswith("eta"))


#: a link below 1e8 bytes/s per direction (100 MB/s, under 1 Gb/s Ethernet) is a unit slip (GB/s or Gb/s typed as a
#: bare number), not a link; no upper bound: a calibration's fitted "inter" of one node is its NVLink's
_LEAST_LINK = 1e8


def document_unit_slips(document: dict, what: str) -> None:
    """InputError for a hardware file's number written in the unit the outputs print rather than the field's: a peak
    in TFLOP/s (989.4 timed a step at 10^12 times its length), an HBM bandwidth or a link's in GB/s or Gb/s, memory in
    GB.  The bounds are the typed constants' (eval's peak= and hbm=), no GPU's or link's figure is below them.  A
    port's Gb/s written as bytes/s (400e9 for 400 Gb/s, 8× the port) stays plausible and is not caught."""
    def refuse(field: str, value: float, unit: str, hint: str) -> None:
        raise InputError(f"{what}: field {field!r}: {value:g} is not allowed: the field is in {unit}; {hint}")

    peaks = dict(document.get("peak_flops") or {})
    peaks.update({f"{k} (bounds)": v for k, pair in (document.get("peak_flops_bounds") or {}).items() for v in pair})
    least, unit, (shown, power) = _LEAST_RATE["peak"]
    for key, value in peaks.items():
        if value < least:
            refuse(f"peak_flops/{key}", value, unit, f"no GPU is below {least:g} (for {value:g} {shown} write "
                                                     f"{value:g}{power})")
    hbm, (least, unit, _) = document.get("hbm_bytes_per_second"), _LEAST_RATE["hbm"]
    if hbm is not None and hbm < least:
        refuse("hbm_bytes_per_second", hbm, unit, f"no GPU's HBM is below {least:g} (for {hbm:g} TB/s write "
                                                  f"{hbm:g}e12, for GB/s {hbm:g}e9)")
    memory = document.get("memory_bytes")
    if memory is not None and memory < 1e9:
        refuse("memory_bytes", memory, "bytes", f"no GPU holds less than 1e9 (for {memory:g} GB write {memory:g}e9, "
                                                f"for {memory:g} GiB {memory * 2 ** 30:.0f})")
    for side in ("intra", "inter"):
        link = document.get(side)
        rate = link.get("bytes_per_second") if isinstance(link, dict) else None
        if rate is None:
            continue
        if rate < _LEAST_LINK:
            refuse(f"{side}/bytes_per_second", rate, "bytes/s per direction",
                   f"no link here is below {_LEAST_LINK:g} (for {rate:g} GB/s write {rate:g}e9; for {rate:g} Gb/s, "
                   f"{rate / 8:g}e9)")


def datasheet_value(system, name: str) -> float | None:
    """``system``'s own value of a datasheet name a user may type over it (:data:`TYPED_DATASHEET`: peak, peak_fp8,
    peak_fp4, hbm), or None where it has none (a peak known only by its bounds)."""
    if name == "hbm":
        return system.hbm_bytes_per_second
    return dict(system.peak_flops).get(name.partition("_")[2] or "bf16")


def datasheet_moved(system, typed: dict) -> list[str]:
    """The datasheet values of ``typed`` (name → value) other than ``system``'s own: the fit's error, measured at the
    hardware's own peaks and HBM bandwidth, is not known there.  One rule for eval and plan."""
    return [name for name, value in typed.items()
            if name in TYPED_DATASHEET and datasheet_value(system, name) not in (None, value)]


def with_typed_constants(values: dict, typed: dict) -> dict:
    """``values`` (Hardware.compute_values') with each typed constant (:data:`TYPED_CONSTANTS`) in place of the
    hardware's where the run reads it (a key of ``values``); a share of a peak outside (0, 1] refused."""
    for name in TYPED_DATASHEET:
        # the grammar reads any number ≥ 0; a peak or a bandwidth of 0 would time the step at infinity
        if name in typed and not typed[name] > 0:
            raise InputError(f"{name}={typed[name]:g} is not allowed: {name} is a rate, a number above 0")
        # every output prints a peak in TFLOP/s and a bandwidth in GB/s, so peak=989.4 is a unit slip that read as
        # 989.4 FLOP/s timed the step at 10^12 times its length with a plausible MFU (an outsider's test): the units
        # are said rather than the slip priced
        least, unit, scale = _LEAST_RATE["hbm" if name == "hbm" else "peak"]
        if name in typed and typed[name] < least:
            value = typed[name]
            # a slip of the printed unit is read as such only where that unit makes it a GPU's (below 10^5 of it)
            hint = (f"for {value:g} {scale[0]} write {name}={value:g}{scale[1]}" if value < 1e5 else
                    f"write it in {unit} (1 {scale[0]} = 1{scale[1]})")
            raise InputError(f"{name}={value:g} is not allowed: {name} is in {unit}, and no GPU is below "
                             f"{least:g}; {hint}")
    for name in TYPED_CONSTANTS:
        if name in typed:
            value = typed[name]
            if name in _SHARES and not 0 < value <= 1:
                raise InputError(f"{name}={value:g} is not allowed: a share of the peak lies in (0, 1]")
            if name in values:
                values = {**values, name: value}
    return values


def unused_peaks(typed: dict, precision: str, attention_kernel: str = "fused") -> list[str]:
    """The notes of the typed hardware values the run does not read: a low-precision peak or share for a run whose
    precision runs no matmul at it (peak_fp8, eta_fp8 under bf16 or nvfp4; peak_fp4, eta_fp4 under any but nvfp4),
    a published kernel's share (eta_fa2, eta_triton) unless attention_kernel is that kernel, eta_attn under any of
    them: said, not refused."""
    low = low_dtype(precision)
    said = [f"{name}_{dtype} not used: precision={precision} runs no matmul in {dtype.upper()}"
            for dtype in LOW_DTYPES for name in ("peak", "eta") if f"{name}_{dtype}" in typed and dtype != low]
    runs_at = f"eta_{attention_kernel}" if attention_kernel in PUBLISHED_KERNELS else "eta_attn"
    for name in KERNEL_SHARES + ("eta_attn",):
        if name in typed and name != runs_at:
            said.append(f"{name} not used: attention_kernel={attention_kernel} runs the attention core at {runs_at}")
    return said


def low_dtype(precision: str) -> str | None:
    """The element type a precision recipe's linear GEMMs run at (:data:`LOW_DTYPES`), None for bf16: NVFP4
    (Transformer Engine's NVFP4BlockScaling) at FP4, every other recipe at FP8."""
    return None if precision == "bf16" else "fp4" if precision == "nvfp4" else "fp8"


#: the compute capabilities (major, minor) a precision recipe's GEMMs run on: [least, first refused) — the
#: recipe checks of Transformer Engine (transformer_engine/pytorch/quantization.py at d0067d0d: _compute_fp8_support
#: 8.9 and up for delayed and per-tensor current scaling, _compute_fp8_block_scaling_support 9.0 and up,
#: _compute_mxfp8_support and _compute_nvfp4_support 10.0 and up, MXFP8 not on 12.0 and up); torchao's float8
#: (tensorwise and rowwise: fp8_tensor, fp8_rowwise under fsdp2) runs on torch._scaled_mm, which needs the same
#: 8.9.  A part's capability: NVIDIA's CUDA GPU Compute Capability table (developer.nvidia.com/cuda-gpus)
PRECISION_CAPABILITY = {"fp8_delayed": ((8, 9), None), "fp8_tensor": ((8, 9), None), "fp8_rowwise": ((8, 9), None),
                        "fp8_block": ((9, 0), None), "mxfp8": ((10, 0), (12, 0)), "nvfp4": ((10, 0), None)}


def precision_refusal(precision: str, capability: tuple, hardware: str) -> str | None:
    """Why a part of compute ``capability`` (major, minor; () unknown: nothing said) cannot run ``precision``'s
    GEMMs (:data:`PRECISION_CAPABILITY`), as a one-line refusal; None when it can."""
    if not capability or precision not in PRECISION_CAPABILITY:
        return None
    (least, refused) = PRECISION_CAPABILITY[precision]
    if least <= tuple(capability) and (refused is None or tuple(capability) < refused):
        return None
    need = f"{least[0]}.{least[1]} or higher" + (f" and below {refused[0]}.{refused[1]}" if refused else "")
    return (f"precision={precision} is not run on --hardware {hardware}: its GPUs are of compute capability "
            f"{capability[0]}.{capability[1]}, and the recipe's GEMMs need {need} (Transformer Engine "
            "transformer_engine/pytorch/quantization.py); choose precision=bf16 or a recipe the part runs")


#: the element types of the runs every fit measured (16-bit training): a step timed at another --dtype (its matmuls at
#: that type's peak, its messages at its size) is not what the fits' errors describe
MEASURED_DTYPES = ("bf16", "fp16")
#: the 4-byte --dtype values: a run's messages at twice the 16-bit size every fitted run moved
WIDE_DTYPES = ("fp32", "tf32")


def dtype_measured(dtype: str, precision: str) -> bool:
    """Whether a step timed at ``dtype`` under ``precision`` is what the fits measured: a run at a --dtype of
    :data:`MEASURED_DTYPES`; a low-precision recipe, which times its GEMMs at its own peaks whatever --dtype says, at
    any but a 4-byte one, whose messages no fitted run moved (eval's and plan's one rule for whether the fit's error is
    shown)."""
    return dtype in MEASURED_DTYPES or (precision != "bf16" and dtype not in WIDE_DTYPES)


def memory_uncounted(dtype: str, precision: str) -> str | None:
    """Why the memory model's count is no count of a run of ``dtype`` under ``precision`` (eval's memory verdict then
    unknown; plan refuses to keep layouts by it), or None: a bf16 recipe at a 4-byte --dtype (fp32, tf32: 4-byte
    weights, gradients and activations) is counted as a 16-bit run, less than it holds, so a "fits" by that count would
    be no verdict (--dtype fp8's 16-bit count is at least what it holds: its "fits" stands)."""
    if precision != "bf16" or dtype not in WIDE_DTYPES:
        return None
    return (f"the memory model counts a 16-bit run's weights, gradients and activations, not those of a --dtype {dtype} "
            "run, which hold more")


def uncounted_plan_refusal(dtype: str, precision: str) -> str | None:
    """plan's refusal to keep the layouts that fit where :func:`memory_uncounted` says eval's verdict is unknown, or
    None."""
    why = memory_uncounted(dtype, precision)
    return why and (f"--dtype {dtype}: {why}, so which layouts fit is unknown: give --no-memory-check to rank every "
                    "layout by its step time alone, or leave --dtype out (bf16)")


def low_dtype_note(dtype: str, precision: str) -> str | None:
    """What a ``--dtype`` other than a 16-bit one means beside a bf16 ``precision`` (eval's and plan's one note), or
    None: fp8 a recipe no framework runs; fp32 (or tf32) a run whose matmuls and messages take that type while the
    memory model counts a 16-bit run's."""
    if dtype_measured(dtype, precision):
        return None
    if dtype in WIDE_DTYPES and precision != "bf16":
        return (f"--dtype {dtype} with precision={precision}: the recipe's GEMMs as it runs them, but the messages in "
                "4-byte elements, where every fitted run moved 16-bit ones (and the framework's own-width terms): the "
                "step time's error is unknown; leave --dtype out (bf16) for the recipe's messages")
    if dtype in WIDE_DTYPES:
        return (f"--dtype {dtype}: the matmuls at the {dtype} peak × eta and the messages in 4-byte elements, but the "
                "memory counts a 16-bit run's weights, gradients and activations, and no published run trained in "
                f"{dtype}: the step time's error is unknown; --dtype bf16 (or fp16) is what the fits measured")
    if dtype != "fp8":
        return None
    return ("--dtype fp8 with precision=bf16 runs every matmul at the FP8 peak × eta (its MFU against that FP8 peak) "
            "and its messages in 1-byte elements, while the memory counts a 16-bit run's weights, gradients and "
            "activations: a recipe no "
            "framework runs and no published run measured; precision=fp8_tensor, mxfp8, fp8_block or fp8_rowwise runs FP8 as "
            "frameworks do (the linear GEMMs at the FP8 peak × eta_fp8, the attention core and LM head in bf16, the "
            "casts at the HBM bandwidth)")


#: the GPUs of the point-to-point NVLink board the mesh wiring follows (symcomm.base.crossing.NVLINK_MESH_SOURCE)
MESH_BOARD_GPUS = 4


def mesh_board_note(system, gpus_per_node, nvlink: str) -> str | None:
    """What a typed G below an NVLink preset's GPUs per node means under nvlink=switch (eval's and plan's one note), or
    None: the preset's NVSwitch board gives every pair the whole NVLink bandwidth, where the boards of four Hopper GPUs
    wire them point to point (symcomm.base.crossing, NVLINK_MESH_SOURCE); and what nvlink=mesh means on more GPUs than
    such a board holds (:data:`MESH_BOARD_GPUS`): their domains are switched."""
    if (nvlink == "mesh" and gpus_per_node is not None and float(gpus_per_node) > MESH_BOARD_GPUS
            and system.intra.name.startswith("nvlink")):
        # the wiring the mesh follows is a board of four (symcomm.base.crossing.NVLINK_MESH_SOURCE): NVLink domains
        # of more GPUs (HGX 8-GPU boards, NVL72) reach each other through NVSwitch
        return (f"nvlink=mesh with G={float(gpus_per_node):g}: the mesh is a board of {MESH_BOARD_GPUS} GPUs wired "
                f"point to point (the HGX H100/H200 4-GPU board); NVLink domains of more GPUs ({system.name}'s "
                f"{system.gpus_per_node} among them) connect them through NVSwitch, which nvlink=switch prices")
    if gpus_per_node is not None and float(gpus_per_node) > system.gpus_per_node:
        # a domain larger than the part's: its links priced at the part's NVLink bandwidth, a system none ships
        return (f"G={float(gpus_per_node):g} above {system.name}'s {system.gpus_per_node} GPUs per node: priced as one "
                f"NVLink domain of {float(gpus_per_node):g} GPUs at its intra-node bandwidth, which {system.name}'s "
                f"nodes are not ({system.gpus_per_node} GPUs each): across them the groups would pay the network")
    hopper = tuple(system.compute_capability or ())[:1] == (9,)       # the boards the source shows (NVLink 4)
    if nvlink != "switch" or gpus_per_node is None or not hopper or not system.intra.name.startswith("nvlink"):
        return None
    if not 1 < float(gpus_per_node) < system.gpus_per_node:
        return None
    return (f"G={float(gpus_per_node):g} below {system.name}'s {system.gpus_per_node} GPUs per node: its GPUs priced as "
            f"the preset's NVSwitch board connects them (nvlink=switch, every pair at the whole NVLink bandwidth); a "
            f"board of four Hopper GPUs (HGX H100/H200 4-GPU) wires them point to point: nvlink=mesh")


def declared_wiring_note(system, spelled: str) -> str | None:
    """What eval and plan say where a hardware file declares its nodes' GPUs wired point to point (its ``nvlink``) and
    the command takes it as its default (``spelled``: the command's own spelling of the setting, ``nvlink=`` or
    ``--nvlink ``), or None for NVSwitch nodes, the default of every preset."""
    if system.nvlink == SWITCH:
        return None
    return (f"{spelled}{system.nvlink}: {system.name} says its nodes' GPUs are wired point to point (its nvlink); "
            f"give {spelled}{SWITCH} for NVSwitch nodes")


def element_refusal(dtype: str, precision: str) -> str | None:
    """Why ``dtype`` cannot be a run's element type under the low ``precision`` recipe, or None: the recipe keeps the
    weights, gradients and activations 16-bit and runs only its linear GEMMs in FP8 or FP4, so a 1-byte --dtype would
    count every byte the run holds and sends at half its size."""
    if precision == "bf16" or dtype not in ("fp8", "int8"):
        return None
    return (f"--dtype {dtype} with precision={precision} is not a run: the recipe keeps the weights, gradients and "
            "activations 16-bit and runs only its linear GEMMs in low precision; give --dtype bf16 (or fp16), and "
            "fp8_param_gather=1 where the framework gathers the weights in FP8")


#: the value of a fitted constant a block leaves out, where absence has a meaning: w_half = 0, the
#: shape-independent matmul efficiency, and kappa_moe = 0, no routing passes, as every block without them was fitted with
STEP_TIME_ABSENT = {"w_half": 0.0, "kappa_moe": 0.0}
#: of those, the ones whose absent value no fitted run measured where a setting reads it (an MoE on a part fitted on
#: dense runs alone): said as a constant taken as another's is (:meth:`Hardware.unchecked`)
STEP_TIME_ABSENT_UNMEASURED = ("kappa_moe",)


#: the fitted constants whose absence means another's value: η_attn = η, the attention core at the matmuls'
#: share, and w_half_expert = w_half, the experts' grouped GEMMs on the dense GEMMs' width curve, as every
#: block without them was fitted with
STEP_TIME_ABSENT_AS = {"eta_attn": "eta", "w_half_expert": "w_half"}


def absent_as(name: str) -> str:
    """What an absent constant is read as, in words: another's name or its value."""
    return STEP_TIME_ABSENT_AS.get(name) or format(STEP_TIME_ABSENT[name], "g")


def absent_filled(values: dict) -> dict:
    """``values`` with the constants a block may leave out at their meaning when absent
    (:data:`STEP_TIME_ABSENT`, :data:`STEP_TIME_ABSENT_AS`): THE rule, for hardware blocks and callers alike."""
    out = {**STEP_TIME_ABSENT, **values}
    for name, like in STEP_TIME_ABSENT_AS.items():
        if name not in out and like in out:
            out[name] = out[like]
    return out


def hbm_gamma(hbm_bytes_per_second: float | None) -> float:
    """γ per byte of a GPU with this HBM bandwidth: a reduction reads two operands and writes one,
    3 / bandwidth (0 when the bandwidth is not known: nothing is guessed)."""
    return 3.0 / hbm_bytes_per_second if hbm_bytes_per_second else 0.0


def entry_gamma(entry: dict) -> float | None:
    """The γ (s per reduced byte) a calibration entry's fit held fixed while fitting α and β, which
    its model (``symcomm nccl-tests``) adds back: ``gamma_held``, or the older optional ``gamma``;
    None when the entry states neither (calibrate before ``gamma_held``, which folded the reduction
    into β)."""
    for key in ("gamma_held", "gamma"):
        if key in entry:
            return float(entry[key])
    return None


def calibrated_gamma(document: dict) -> tuple[float, bool]:
    """(the file's γ per byte, whether its calibrated β folds the reduction).

    A calibrated β and the γ added to it must be one decomposition of the measured time, or a
    reducing collective pays its reduction twice (once inside the fitted β, once as c·γ).  So:

    * every entry states the γ its fit held: the file's γ is 3 / its HBM bandwidth, and each
      entry's γ must be that one (checked by :func:`check_hardware_document`);
    * an entry states none (a file written before calibrate recorded it): its fit held γ = 0, so
      its β includes the reduction, and the links calibrate wrote from it too.  The file's γ is
      then 0 — what that fit assumed, reproducing it exactly — rather than 3/HBM on top of it
      (counted twice) or a refusal of a file whose meaning is known.  Commands say so in a note."""
    entries = document.get("calibration", ())
    folded = any(entry_gamma(e) is None for e in entries)
    return (0.0 if folded else hbm_gamma(document.get("hbm_bytes_per_second"))), folded


def curve_note(system, hardware_name: str, target, ranks) -> str:
    """What eval says where the hardware file holds calibrate's per-size efficiency curve for the collective and group
    asked: nccl-tests divides the same α-β(-γ) line by it (the log's own time at a logged size); eval does not."""
    primitive = str(getattr(target, "label", "")).split(" / ")[0]
    if not any(e.get("collective") == primitive and e.get("ranks") == ranks for e in system.calibration):
        return ""
    return (f"--hardware {hardware_name} holds calibrate's per-size efficiency curve for {primitive} on {ranks} ranks: "
            "eval prices the α-β-γ line its fit gives; symcomm nccl-tests divides that line by the curve (the log's own "
            "time at a logged size), so at sizes where the curve is far from 1 the two differ")
