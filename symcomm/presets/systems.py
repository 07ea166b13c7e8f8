"""Hardware presets, shipped as data (``hardware.json``), and hardware files (a calibration's): their
links, the γ a calibration held, and the one rule of which link a group of ranks uses.

Bandwidths are per GPU and per direction in bytes/s; ``β`` per byte = 1 / bandwidth (seconds per byte),
and per element = that × bytes per element.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from pathlib import Path

from ..base.crossing import CONCURRENT, CROSSING, ONE_NIC, RING, SWITCH, crossing_of, inter_shares
from ..base.errors import InputError
from ..base.units import DTYPES
from .hardware_values import (LOW_DTYPES, PEAK_NAMES, PUBLISHED_KERNELS, STEP_TIME_NAMES, TYPED_CONSTANTS,  # noqa: F401
                              TYPED_DATASHEET, TYPED_HARDWARE, STEP_TIME_ABSENT, STEP_TIME_ABSENT_AS,
                              STEP_TIME_ABSENT_UNMEASURED, ROOFLINE_HELD, absent_as, absent_filled, calibrated_gamma, curve_note, document_unit_slips,
                              element_refusal, entry_gamma, hbm_gamma, kernel_share, kernel_shares, low_dtype,
                              precision_refusal, roofline_w_half, unused_peaks, with_own_widths,
                              with_typed_constants)  # (re-exported)
from ..base import memo, notes
from . import fit_errors
from .models import _load, model, model_from_config
from .links import TIME_NAMES, _refuse_typed_links, link_values, nic_sharers, spans_nodes  # noqa: F401 (re-exported)

# -- hardware -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Link:
    name: str
    title: str
    bytes_per_second: float
    latency_s: float
    published: str
    conversion: str
    source: str
    latency_source: str


@dataclass(frozen=True)
class Hardware:
    name: str
    title: str
    intra: Link
    inter: Link
    gpus_per_node: int
    memory_bytes: float | None         # None: a hardware file without memory_bytes (memory fit unknown)
    hbm_bytes_per_second: float | None  # None: a hardware file without it (gamma 0, no step time)
    source: str
    peak_flops: tuple = ()             # (dtype, dense matmul FLOP/s) pairs, from the datasheet
    peak_source: str = ""
    #: (dtype, lowest, highest FLOP/s) triples of a GPU whose peak no datasheet gives, only the bounds its source
    #: states (a power-limited part): the step time then needs a typed peak within them (:meth:`peak`)
    peak_bounds: tuple = ()
    step_time: tuple = ()              # (name, value) pairs of the fitted constants (STEP_TIME_NAMES)
    step_time_source: str = ""         # the runs they were fitted on (or whose they borrow), the command
    calibration: tuple = ()            # per-collective fits of symcomm calibrate (dicts: see schema/hardware)
    from_file: bool = False            # a hardware file (its errors name the file and the field)
    #: True for a file whose calibrated links fold the reduction into β (calibrate before it wrote
    #: ``gamma_held``): its γ is then 0, whatever its HBM bandwidth, so that c·γ is not counted twice
    reduction_folded: bool = False
    #: the two-level forms' inter-node link (α_inter, β_inter of their inter-node phase), when it is not
    #: ``inter``: a calibrated file keeps the two meanings apart (:func:`link_values`).  None: ``inter``
    #: serves both (a preset's physical link), unless ``two_level_unknown`` says why it cannot
    inter_two_level: Link | None = None
    #: why the two-level inter-node link is unknown ("" when it is known): a file whose ``inter`` was fitted
    #: to a flat algorithm across nodes and that has no ``inter_two_level`` (no single-node log beside it)
    two_level_unknown: str = ""
    #: what reading an older calibrated file took (a note, said wherever its values are used)
    link_note: str = ""
    #: (kernel, share of the bf16 peak) pairs of the attention kernels timed by a published figure rather than a
    #: fitted constant (attention_kernel=fa2: FlashAttention-2), and where the figures come from
    attention_shares: tuple = ()
    attention_source: str = ""
    #: how far the step time of these constants may be off: the leave-one-out errors of the fit that gave them
    #: (("mean", ..), ("max", ..), ("signed_mean", ..), ("runs", n)) and whose fit it was; () when not recorded
    step_errors: tuple = ()
    step_errors_of: str = ""
    #: how far they were off on published runs never fitted on, per framework option (eval's framework=):
    #: (framework, mean, max, signed_mean, runs, (the hardware presets the runs ran on)) tuples; () when not recorded
    step_checks: tuple = ()
    #: the framework options the fitted runs ran (``step_time.frameworks``); () when the block does not say
    step_frameworks: tuple = ()
    #: the precision recipes the fitted and the checked runs ran (``step_time.precisions``, ``checked_precisions``);
    #: () when the block does not say
    step_precisions: tuple = ()
    #: the attention kernels the fitted runs ran (``step_time.attention_kernels``); () when the block does not say
    step_kernels: tuple = ()
    #: the constants the block holds because no run of its fit reads them, with the fit's reason
    #: (:func:`fit_errors.unread_of`): a setting that reads one is not measured by the fit's error
    step_unread: tuple = ()
    #: how far they were off on each model preset's own published runs, per framework option (``step_time.models``):
    #: (model, framework, lowest, highest, signed_mean, runs, fitted, (hardware)) tuples; () when not recorded
    step_models: tuple = ()
    #: (major, minor) of the GPU's compute capability, which decides the precision recipes it runs
    #: (hardware_values.precision_refusal); () when not given (a file without it: not checked)
    compute_capability: tuple = ()
    #: a file whose ``inter`` is a flat fit: that link as written (``inter`` holds it per NIC, :func:`_per_nic`)
    #: and the run it was fitted on as (key, value) pairs, so that a file written over it (``--base``) carries
    #: the fit, not the conversion, and is converted once when read
    inter_as_fitted: Link | None = None
    inter_fitted_on: tuple = ()
    #: how far the memory model's count was off on published runs that print their peak memory
    #: (:func:`fit_errors.memory_band` of hardware.json's ``memory_checks``), the same for every GPU (the model counts
    #: bytes); None when none is recorded
    memory_band: tuple | None = None
    #: a preset that borrows another's fitted constants (``step_time.borrowed_from``): its w_half and w_half_expert
    #: are its own datasheet's roofline at the peak it runs (:data:`ROOFLINE_HELD`), as the lender's are the lender's
    own_roofline: bool = False
    #: how a node's GPUs reach each other (symcomm.base.crossing.NVLINK_TOPOLOGIES): a file's ``nvlink``, which eval
    #: hybrid's nvlink= and plan's --nvlink default to (training.words.hardware_wiring); every preset's is switch
    nvlink: str = SWITCH

    def lacks(self, field: str, needed_for: str) -> InputError:
        """The one-line refusal of a command that needs an optional field this hardware does not give."""
        where = f"hardware file {self.name!r}" if self.from_file else f"hardware preset {self.name!r}"
        return InputError(f"--hardware: {where} has no {field}, which {needed_for}; add {field} to it "
                          "(symcomm/schema/hardware.schema.json)")

    def peak(self, dtype: str, typed: float | None = None) -> float:
        """Dense matmul FLOP/s at ``dtype``, or ``typed`` (a peak the user gave, which wins, as every typed value
        does); InputError naming the types the datasheet gives, or the bounds of a peak no datasheet gives."""
        bounds = {d: (lo, hi) for d, lo, hi in self.peak_bounds}
        name = f"peak_{dtype}" if dtype in LOW_DTYPES else "peak"
        if typed is not None:
            if dtype in bounds and not bounds[dtype][0] <= typed <= bounds[dtype][1]:
                lo, hi = bounds[dtype]
                raise InputError(f"{name}={typed:g} is outside the bounds --hardware {self.name}'s source gives its "
                                 f"dense {dtype} peak: give {name} between {lo:g} and {hi:g} FLOP/s (symcomm presets "
                                 f"{self.name} says where they come from)")
            return typed
        if dtype in bounds and dtype not in dict(self.peak_flops):
            lo, hi = bounds[dtype]
            raise InputError(f"--hardware {self.name}: no datasheet gives its dense {dtype} peak, only bounds: "
                             f"{lo:g} to {hi:g} FLOP/s (symcomm presets {self.name} says where they come from); give "
                             f"{name}=FLOP/s between them (both ends, to see the step time's range)")
        table = dict(self.peak_flops)
        if not table:
            raise self.lacks("peak_flops", "the step time needs (FLOPs / (peak × eta))")
        if dtype not in table:      # offered: the peaks of element types (tf32, fp32 matmuls in TF32 mode, is none)
            raise InputError(f"--dtype {dtype} has no peak for --hardware {self.name}; choose {', '.join(n for n in table if n in DTYPES)}")
        return table[dtype]

    def compute_values(self, dtype: str = "bf16", precision: str = "bf16", fitting: bool = False,
                       attention_kernel: str = "fused", typed: dict | None = None) -> dict[str, float]:
        """peak, hbm and the fitted eta, kappa, w_half, eta_attn: the step-time model's hardware symbols (InputError
        naming the field a hardware file leaves out: the step time has no default for any of them but w_half, whose
        absence means 0, the shape-independent model, and eta_attn, whose absence means the hardware's published fused share (:meth:`published_attention`), else eta: :func:`absent_filled`).
        ``peak`` is the datasheet rate at ``dtype`` (the run's 16-bit type); under a low ``precision`` (symcomm.training.settings.PRECISIONS) it is the bf16 rate,
        which the attention core and the LM head run at, and peak_fp8, eta_fp8 (FP8 recipes) or peak_fp4, eta_fp4
        (nvfp4) are added for the linear matmuls (:func:`low_dtype`).
        ``fitting``: for a fit of the constants (symcomm.measurement.step_fit), which supplies every one it
        fits: a fitted constant the hardware lacks is not refused.  ``attention_kernel`` fa2, triton or cudnn adds
        eta_<kernel>, that kernel's published share (``attention_shares``), refused where the hardware gives none.  ``typed``:
        the values the user gave by name (:data:`TYPED_HARDWARE`), which win over the hardware's: the peaks (:meth:`peak`)
        and the constants the run reads (:func:`with_typed_constants`)."""
        typed = typed or {}
        return with_typed_constants(self._compute_values(dtype, precision, fitting, attention_kernel, typed), typed)

    def _compute_values(self, dtype: str, precision: str, fitting: bool, attention_kernel: str, typed: dict) -> dict:
        if element_refusal(dtype, precision):
            raise InputError(element_refusal(dtype, precision))
        fitted = dict(self.step_time)
        if not fitted and not fitting:
            raise self.lacks("step_time (eta, kappa)", "the step time needs (the fitted share of peak and HBM passes)")
        peak = self.peak(dtype if precision == "bf16" else "bf16", typed.get("peak"))
        hbm = typed.get("hbm", self.hbm_bytes_per_second)
        if hbm is None:
            raise self.lacks("hbm_bytes_per_second", "the step time needs (Adam and the memory-bound kernels run at "
                                                     "the HBM bandwidth; or give hbm=bytes/s)")
        out = {"peak": peak, "hbm": hbm, **fitted}
        if self.own_roofline:
            # the lender held its widths at its own datasheet's roofline (not fitted): this part's peak and HBM
            # bandwidth give its own (H200's 4.8 TB/s a w_half of 206 where H100's 3.35 give 295)
            out = with_own_widths(out, peak, hbm)
        if not fitting:         # a fit supplies eta and reads eta_attn from it where the block has none
            out = absent_filled({**self.published_attention(), **out})
        # a kernel's share: a calibration's fitted one (the block's, calibrate-step on runs naming the kernel), else the
        # published one; the shares of the kernels the run does not name are not its values
        for kernel in PUBLISHED_KERNELS:
            if kernel != attention_kernel:
                out.pop(f"eta_{kernel}", None)
        if attention_kernel in PUBLISHED_KERNELS:
            share = kernel_shares(fitted, dict(self.attention_shares), self.compute_capability,
                                  (attention_kernel,)).get(f"eta_{attention_kernel}")
            if share is None:
                raise self.lacks(f"attention_shares {attention_kernel}", f"attention_kernel={attention_kernel} needs "
                                 f"(the share of the bf16 peak {PUBLISHED_KERNELS[attention_kernel]} reaches, from a "
                                 "published kernel benchmark); or choose attention_kernel=fused")
            out[f"eta_{attention_kernel}"] = share
        low = low_dtype(precision)
        for other in LOW_DTYPES:
            if other != low:
                out.pop(f"eta_{other}", None)
        if low is None:
            return out
        word = low.upper()
        if refused := precision_refusal(precision, self.compute_capability, self.name):
            raise InputError(refused)
        if low not in dict(self.peak_flops) and low not in {d for d, _, _ in self.peak_bounds}:
            raise InputError(f"precision={precision}: --hardware {self.name} gives no {word} peak (peak_flops has "
                             f"{', '.join(dict(self.peak_flops)) or 'nothing'}); choose precision=bf16"
                             + ("" if low == "fp8" else " or an FP8 one"))
        if f"eta_{low}" not in fitted and f"eta_{low}" not in typed and not fitting:
            raise self.lacks(f"step_time eta_{low}", f"precision={precision} needs (the share of the {word} peak its "
                                                     f"matmuls reach, fitted on {word} runs: none is fitted for it yet)")
        # a typed share in place of one the hardware lacks (with_typed_constants puts it in)
        held = {f"eta_{low}": typed[f"eta_{low}"]} if f"eta_{low}" not in out and f"eta_{low}" in typed else {}
        return {**out, **held, f"peak_{low}": self.peak(low, typed.get(f"peak_{low}"))}

    def own_step_constants(self, peak: float | None = None) -> dict[str, float]:
        """The ``step_time`` constants as this part runs them at its datasheet peak (or ``peak``, a bf16 peak given
        for it): a borrowing preset's widths its own roofline (:attr:`own_roofline`), where it has a bf16 peak; the
        block as it is otherwise."""
        out, peak = dict(self.step_time), peak or dict(self.peak_flops).get("bf16")
        if self.own_roofline and peak and self.hbm_bytes_per_second:
            return with_own_widths(out, peak, self.hbm_bytes_per_second)
        return out

    def published_attention(self) -> dict[str, float]:
        """{"eta_attn": the fused attention core's published share of the bf16 peak} where the hardware gives
        one (``attention_shares.fused``, from a kernel benchmark, not fitted), else {}: what a ``step_time`` block
        without a fitted eta_attn reads (before the older rule, eta_attn = eta), and where the step fit holds it
        when its runs do not determine it."""
        shares = dict(self.attention_shares)
        return {"eta_attn": shares["fused"]} if "fused" in shares else {}

    def step_time_error(self, framework: str | None = None, frameworks: tuple = (), reads: tuple = (),
                        model: str | None = None, precision: str | None = None) -> dict | None:
        """How far a step time of these constants may be off, as far as it was measured: the leave-one-out
        errors over the runs their fit fitted on (each predicted by the constants fitted without it) and, under
        ``checks``, the errors on published runs never fitted on, per framework option (``framework``: that one
        alone, {} when none of its runs was checked; None: every framework checked).  ``unchecked``: what of the
        setting no run measured (:meth:`unchecked`; ``frameworks`` the framework options priced, ``framework`` among
        them, ``reads`` the constants the step model reads, ``precision`` the recipe).  ``model``: a model preset's name; where its own
        published runs were evaluated with these constants, ``model`` holds their errors per framework option (as
        ``checks`` filters them) and ``model_name`` the name.  None when the hardware records no fit error (a file
        without ``step_time.errors``).  One rule for eval and plan."""
        errors = dict(self.step_errors)
        if not errors:
            return None
        checks = {name: {"mean": mean, "max": worst, "signed_mean": signed, "runs": runs, "hardware": list(on)}
                  for name, mean, worst, signed, runs, on in self.step_checks
                  if framework is None or name == framework}
        priced = tuple(sorted({*frameworks, *([framework] if framework is not None else [])}))
        own = fit_errors.model_errors(self.step_models, model, framework)
        return {"mean": errors["mean"], "max": errors["max"], "signed_mean": errors["signed_mean"],
                "runs": int(errors["runs"]), "of": self.step_errors_of,
                "what": "the leave-one-out error of the fit that gave these constants: each of its runs predicted by "
                        "the constants fitted without it; runs unlike them (another model, layout, framework, release "
                        "or GPU) can be off by more",
                "checks": checks, "unchecked": list(self.unchecked(priced, reads, precision)),
                **({"model_name": model, "model": own} if own else {})}

    def unchecked(self, frameworks: tuple, reads: tuple, precision: str | None = None) -> tuple[str, ...]:
        """What of a setting no published run measured with these constants, each worded: a framework option of
        ``frameworks`` that no fitted run ran (``step_time.frameworks``; nothing said where the block does not record
        them) and no check run either; a ``precision`` recipe no fitted or checked run ran (``step_precisions``); a
        named attention kernel's share no fitted run ran (``step_kernels``: the published figure);
        a constant of ``reads`` (those the step model reads) that the step-time block
        leaves out, read as another's value (:data:`STEP_TIME_ABSENT_AS`: e.g. the flash-attention core's eta_attn as
        the matmuls' eta on a part whose fitted runs ran no flash attention); and one it holds because no run of its
        fit reads it (:attr:`step_unread`: a calibrated file's eta_fp8 held at its base hardware's value, where the
        user's runs were all bf16)."""
        taken = self.constants_taken_as_another(reads)
        return tuple(self.part_unmeasured()
                     + fit_errors.options_unmeasured(self.step_errors_of, self.frameworks_unmeasured(frameworks),
                                                     precision, self.step_precisions)
                     + [f"{name} (no fitted run reads it: taken as {absent_as(name)})" for name in taken]
                     + [f"{name} ({self.step_errors_of}'s fit: {why})" for name, why in self.step_unread
                        if name in reads and name not in taken]
                     + fit_errors.kernels_unmeasured(self.step_errors_of, reads, self.step_kernels))

    def part_unmeasured(self) -> list[str]:
        """The words for a part that borrows another's constants (``step_errors_of`` another name) and that no
        published run the fit recorded ran on, fitted or checked: the donor's errors are the donor's, not its own
        (H100 PCIe's 350 W against the fitted H100 SXM's 700 W)."""
        if not self.own_roofline or not self.step_errors_of or self.step_errors_of == self.name:
            return []
        if any(self.name in on for *_, on in self.step_checks):
            return []
        return [f"hardware {self.name} (it borrows {self.step_errors_of}'s constants; no published run on it was "
                "fitted or checked)"]

    def frameworks_unmeasured(self, frameworks) -> tuple[str, ...]:
        """Those of ``frameworks`` (framework options) that no fitted run and no check run of these constants ran; ()
        where the step-time block does not record its runs' frameworks (a file written before it did)."""
        if not self.step_frameworks:
            return ()
        measured = {*self.step_frameworks, *(name for name, *_ in self.step_checks)}
        return tuple(name for name in frameworks if name not in measured)

    def constants_taken_as_another(self, reads) -> tuple[str, ...]:
        """Those of ``reads`` (constant names) that the step-time block leaves out and that are read as another's value
        (:data:`STEP_TIME_ABSENT_AS`), no published kernel figure standing in (:meth:`published_attention`)."""
        held = {**dict(self.step_time), **self.published_attention()}
        return tuple(name for name in (*STEP_TIME_ABSENT_AS, *STEP_TIME_ABSENT_UNMEASURED)
                     if name in reads and name not in held)

    def fits(self, bytes_per_gpu):
        """THE rule for "fits in memory" (``plan`` keeps a layout by it, ``eval hybrid`` reports it): the
        bytes per GPU at most the GPU's memory_bytes, no allowance.  A number or a numpy array; None when
        the hardware gives no memory figure (a file without memory_bytes): unknown, never guessed."""
        if self.memory_bytes is None:
            return None
        return bytes_per_gpu <= self.memory_bytes

    def memory_verdict(self, bytes_per_gpu: float, framework: str | None = None) -> dict:
        """:func:`fit_errors.memory_verdict` of ``bytes_per_gpu`` on this GPU (the one rule, :meth:`fits`), counted for
        ``framework`` (a framework option; None: any)."""
        return fit_errors.memory_verdict(self.fits(bytes_per_gpu), bytes_per_gpu, self.memory_bytes, self.memory_band,
                                         framework)

    def defaults_used(self) -> tuple[str, ...]:
        """What this hardware file leaves out that has a default, as the outputs state it."""
        out = [self.link_note] if self.link_note else []
        if self.reduction_folded:
            out.append(f"hardware file {self.name!r}: its calibration entries do not say which gamma their fits held "
                       "(written before calibrate recorded gamma_held), so their fitted beta includes the reduction: "
                       "gamma = 0 for this file, not 3 / its HBM bandwidth on top (recalibrate from the logs to "
                       "separate them)")
        elif self.hbm_bytes_per_second is None:
            out.append(f"hardware file {self.name!r} gives no hbm_bytes_per_second: gamma = 0 (reducing costs "
                       "nothing beyond beta: the reduction is taken as folded into beta, as symcomm calibrate "
                       "does without an HBM bandwidth)")
        return tuple(out)

    @property
    def beta_per_byte(self) -> float:
        """Seconds per byte inside a node: 1 / (per-direction bytes/s)."""
        return 1.0 / self.intra.bytes_per_second

    @property
    def beta_inter_per_byte(self) -> float:
        return 1.0 / self.inter.bytes_per_second

    @property
    def gamma_per_byte(self) -> float:
        """Seconds per reduced byte: read two operands, write one, at HBM bandwidth (0, the stated
        default, when a hardware file does not give the HBM bandwidth, or when its fitted β already
        holds the reduction, :func:`calibrated_gamma`: both said by :meth:`defaults_used`)."""
        if self.reduction_folded:
            return 0.0
        return hbm_gamma(self.hbm_bytes_per_second)

    def values(self, bytes_per_element: int = 1) -> dict[str, float | int]:
        """alpha, beta, gamma, alpha_inter, beta_inter (β, γ per element of the given size) and G, the
        inter pair from ``inter``: the strategies' groups across nodes are flat, and the two-level forms
        take ``inter_two_level`` through :func:`link_values`; a
        default taken for a field the hardware file leaves out is said (a note: every command that prices
        with these values, eval, compare, nccl-tests, states it)."""
        for text in self.defaults_used():
            notes.add(text)
        return {"alpha": self.intra.latency_s, "beta": self.beta_per_byte * bytes_per_element,
                "gamma": self.gamma_per_byte * bytes_per_element,
                "alpha_inter": self.inter.latency_s, "beta_inter": self.beta_inter_per_byte * bytes_per_element,
                "G": self.gpus_per_node}


def hardware_names() -> tuple[str, ...]:
    return tuple(_load("hardware.json")["systems"])


def link(name: str) -> Link:
    links = _load("hardware.json")["links"]
    if name not in links:
        raise InputError(f"link {name!r} is not allowed; choose one of {', '.join(links)}")
    d = links[name]
    return Link(name, d["title"], float(d["bytes_per_second"]), float(d["latency_s"]), d["published"],
                d["conversion"], d["source"], d["latency_source"])


def hardware(name: str) -> Hardware:
    """A shipped system preset, or a hardware file (a value with a path separator or ending in
    .json: JSON of the schema ``hardware``, read size-capped and validated); ValueError naming
    the presets that exist, InputError naming the file and the field."""
    if _is_path(str(name)):
        return hardware_file(name)      # read each time: a file may change
    return _preset(name)


@functools.lru_cache(maxsize=None)
def _preset(name: str) -> Hardware:
    """A shipped preset, built once per process (a Hardware is immutable; a name refused is not kept)."""
    systems = _load("hardware.json")["systems"]
    if name not in systems:
        raise InputError(f"--hardware {name!r} is not allowed; choose one of {', '.join(systems)} "
                         "or give a hardware file (path/to/hardware.json)")
    d = systems[name]
    fitted = d.get("step_time", {})
    if "borrowed_from" in fitted:
        own_note = fitted.get("note", "")
        fitted = {**systems[fitted["borrowed_from"]]["step_time"], "note": own_note}
    return Hardware(name, d["title"], link(d["intra"]), link(d["inter"]), int(d["gpus_per_node"]),
                    float(d["memory_bytes"]), float(d["hbm_bytes_per_second"]), d["source"],
                    tuple(sorted((k, float(x)) for k, x in d.get("peak_flops", {}).items())), d.get("peak_source", ""),
                    _bounds(d), _fitted_constants(fitted),
                    fitted.get("note", "") or fitted.get("source", ""),
                    attention_shares=_shares(d), attention_source=d.get("attention_source", ""),
                    step_errors_of=d["step_time"].get("borrowed_from", name) if "step_time" in d else "",
                    **fit_errors.step_fields(fitted), compute_capability=tuple(d.get("compute_capability", ())), memory_band=_memory_band(),
                    own_roofline="borrowed_from" in d.get("step_time", {}))


def _memory_band() -> tuple | None:
    """The presets' memory checks' band (hardware.json ``memory_checks``): every GPU's, presets' and files' alike."""
    document = _load("hardware.json")
    return fit_errors.memory_band(fit_errors.memory_checks_of(document), fit_errors.memory_ran_of(document))


def _bounds(d: dict) -> tuple:
    return tuple(sorted((k, float(lo), float(hi)) for k, (lo, hi) in d.get("peak_flops_bounds", {}).items()))


def _shares(d: dict) -> tuple:
    return tuple(sorted((k, float(x)) for k, x in d.get("attention_shares", {}).items()))


#: a hardware file is a few KiB (with calibration curves some tens); anything past this is not one
MAX_HARDWARE_BYTES = 4 * 1024 * 1024


def _is_path(value: str) -> bool:
    return "/" in value or "\\" in value or value.endswith(".json")


def _fitted_constants(fitted: dict) -> tuple:
    """The (name, value) pairs of a ``step_time`` block's constants; none when it holds none (the step time
    then refuses), else w_half = 0 where the block leaves it out (:data:`STEP_TIME_ABSENT`); η_attn stays out
    when the block leaves it out (:meth:`Hardware.compute_values` reads it as η then)."""
    given = {k: float(fitted[k]) for k in STEP_TIME_NAMES if k in fitted}
    if not given:
        return ()
    given = {**{k: v for k, v in STEP_TIME_ABSENT.items() if k not in STEP_TIME_ABSENT_UNMEASURED}, **given}
    return tuple((k, given[k]) for k in STEP_TIME_NAMES if k in given)


def check_hardware_document(document: dict, what: str) -> dict:
    """``document`` if it is a valid hardware file (schema ``hardware`` and the relations a
    schema cannot state), else InputError naming ``what`` and the field."""
    from ..base.inputs import check

    check(document, "hardware", what)
    document_unit_slips(document, what)
    for i, entry in enumerate(document.get("calibration", ())):
        if len(entry["sizes_bytes"]) != len(entry["efficiency"]):
            raise InputError(f"{what}: field 'calibration/{i}': sizes_bytes and efficiency differ in length")
        if list(entry["sizes_bytes"]) != sorted(entry["sizes_bytes"]):
            raise InputError(f"{what}: field 'calibration/{i}/sizes_bytes': sizes must be in increasing order")
        if entry["algorithm"] == "hierarchical" and not {"alpha_inter", "beta_inter"} <= set(entry):
            raise InputError(f"{what}: field 'calibration/{i}': a two-level fit needs alpha_inter and beta_inter")
        if "gamma_held" in entry and "gamma" in entry and entry["gamma"] != entry["gamma_held"]:
            raise InputError(f"{what}: field 'calibration/{i}/gamma': {entry['gamma']:g} differs from its gamma_held "
                             f"{entry['gamma_held']:g}; gamma is the older name of gamma_held: give one")
    # one decomposition of the measured time: the γ each fit held is the γ every command adds
    gamma, folded = calibrated_gamma(document)
    for i, entry in enumerate(document.get("calibration", ())):
        held = entry_gamma(entry)
        if held is not None and not math.isclose(held, gamma, rel_tol=1e-9, abs_tol=0.0):
            key = "gamma_held" if "gamma_held" in entry else "gamma"
            why = ("another entry states no gamma_held (written before calibrate recorded it: its fitted β "
                   "includes the reduction), so the file's γ is 0" if folded else
                   f"the file's γ is 3 / hbm_bytes_per_second = {gamma:g} s/byte" if gamma > 0 else
                   "the file gives no hbm_bytes_per_second, so its γ is 0")
            raise InputError(f"{what}: field 'calibration/{i}/{key}': its fit held γ = {held:g} s/byte, but {why}; "
                             "the fitted β holds the reduction at the fit's γ, so another γ would count it twice or "
                             "not at all: recalibrate (symcomm calibrate LOG -o FILE) or make them agree")
    return document


def hardware_file(path) -> Hardware:
    """A hardware description from a JSON file (what ``symcomm calibrate -o`` writes)."""
    from ..base.inputs import read_json

    what = f"--hardware {str(path)!r}"
    d = read_json(path, "--hardware", "hardware", limit=MAX_HARDWARE_BYTES)
    check_hardware_document(d, what)
    name = str(d.get("name") or Path(str(path)).stem)

    def file_link(level: str) -> Link:
        x = d[level]
        return Link(f"{name}-{level}", x.get("title", f"{level}-node link of {name}"), float(x["bytes_per_second"]),
                    float(x["latency_s"]), x.get("published", ""), x.get("conversion", ""),
                    x.get("source", str(path)), x.get("latency_source", x.get("source", str(path))))

    fitted = d.get("step_time", {})
    _, folded = calibrated_gamma(d)
    inter, two_level, unknown, link_note = _inter_links(d, what, file_link)
    as_fitted, fitted_on = None, ()
    if d["inter"].get("fitted_as") == "flat":
        as_fitted = file_link("inter")
        run = _flat_entry(d, as_fitted)
        fitted_on = tuple((key, run[key]) for key in _FITTED_ON if run is not None and run.get(key) is not None)
    return Hardware(str(path), d.get("title", name), file_link("intra"), inter, int(d["gpus_per_node"]),
                    float(d["memory_bytes"]) if "memory_bytes" in d else None,
                    float(d["hbm_bytes_per_second"]) if "hbm_bytes_per_second" in d else None,
                    d.get("source", str(path)),
                    tuple(sorted((k, float(x)) for k, x in d.get("peak_flops", {}).items())), d.get("peak_source", ""),
                    _bounds(d), _fitted_constants(fitted), fitted.get("source", ""),
                    tuple(d.get("calibration", ())), from_file=True, reduction_folded=folded,
                    inter_two_level=two_level, two_level_unknown=unknown, link_note=link_note,
                    attention_shares=_shares(d), attention_source=d.get("attention_source", ""),
                    step_errors_of=name, **fit_errors.step_fields(fitted),
                    compute_capability=tuple(d.get("compute_capability", ())),
                    inter_as_fitted=as_fitted, inter_fitted_on=fitted_on, memory_band=_memory_band(),
                    nvlink=d.get("nvlink", SWITCH))


def _inter_links(d: dict, what: str, file_link) -> tuple[Link, Link | None, str, str]:
    """(the flat link across nodes, the two-level forms' inter-node link or None for the same one,
    why the latter is unknown or "", a note on how an older file was read) of a hardware document.

    * ``inter_two_level`` given: the two meanings apart, as calibrate writes them.
    * ``inter`` marked ``"fitted_as": "flat"`` without ``inter_two_level``: the two-level link is not
      known (a multi-node log calibrated without a single-node one): refused across nodes.
    * neither, and a two-level calibration entry whose α_inter, β_inter are ``inter``'s: a file of
      calibrate before the two were kept apart, which wrote the two-level fit as ``inter``.  Read as
      that fit for the two-level forms, and the flat link from the file's flat calibration entry of a
      run across nodes (the one the calibrate of today writes as ``inter``), said in a note; without
      such an entry the flat meaning is unknown: refused, naming the field.
    * otherwise ``inter`` is one link for both (a physical link, as a preset's)."""
    inter = file_link("inter")
    kept = ""
    if d["inter"].get("fitted_as") == "flat":
        entry = _flat_entry(d, inter)
        inter = _per_nic(inter, entry, file_link("intra"), what)
        if entry is None:
            kept = (f"hardware file {what[len('--hardware '):]}: its inter link is a flat fit, and no calibration "
                    "entry records the log's ranks and GPUs per node: taken as the per-NIC link, so a ring across "
                    "nodes splits it over the NICs of a node's ranks (recalibrate to convert it at the log's own k)")
    if "inter_two_level" in d:
        return inter, file_link("inter_two_level"), "", kept
    if d["inter"].get("fitted_as") == "flat":
        return inter, None, ("the file's inter link was fitted to a flat algorithm across nodes, which is not the "
                             "two-level forms' inter-node phase; symcomm calibrate fits it from a single-node log "
                             "given with the multi-node one"), kept
    entries = d.get("calibration", ())
    g = int(d["gpus_per_node"])
    old_two_level = [e for e in entries if "alpha_inter" in e and "beta_inter" in e
                     and math.isclose(e["alpha_inter"], inter.latency_s, rel_tol=1e-9)
                     and math.isclose(1.0 / e["beta_inter"], inter.bytes_per_second, rel_tol=1e-9)]
    if d["inter"].get("fitted_as") != "two_level" and not old_two_level:
        return inter, None, "", ""
    flat = [e for e in entries if "alpha_inter" not in e and spans_nodes(e["ranks"], e.get("gpus_per_node") or g)]
    flat.sort(key=lambda e: (e["collective"] != "all_reduce", -e["ranks"]))
    if not flat:
        raise InputError(f"{what}: field 'inter' is a two-level fit (calibrate before inter_two_level), and the file "
                         "has no flat calibration across nodes to give the link a flat algorithm spanning nodes runs "
                         "at; recalibrate (symcomm calibrate SINGLE_NODE_LOG MULTI_NODE_LOG -o FILE) or move it to "
                         "inter_two_level and give inter")
    e = flat[0]
    source = f"the flat calibration entry {e['collective']}/{e['algorithm']} on {e['ranks']} ranks ({e.get('source', '')})"
    flat_link = _per_nic(Link(inter.name, inter.title, 1.0 / float(e["beta"]), float(e["alpha"]), "", "", source,
                              source), e, file_link("intra"), what)
    note = (f"hardware file {what[len('--hardware '):]}: its inter link is a two-level fit (written before calibrate "
            "kept inter_two_level apart): it prices the two-level forms' inter-node phase, and a flat algorithm "
            f"across nodes runs at {source}'s alpha, beta (recalibrate to write both)")
    return flat_link, inter, "", note


#: what a flat fit's run records (the link's ``fitted_on``, or its calibration entry)
_FITTED_ON = ("collective", "algorithm", "ranks", "gpus_per_node")


def _flat_entry(d: dict, inter: Link) -> dict | None:
    """The run a flat-fitted ``inter`` link was fitted on: its ``fitted_on``, else the calibration entry it
    was written from (its α and β), else None."""
    if "fitted_on" in d["inter"]:
        return dict(d["inter"]["fitted_on"])
    for e in d.get("calibration", ()):
        if ("alpha_inter" not in e and math.isclose(1.0 / float(e["beta"]), inter.bytes_per_second, rel_tol=1e-9)
                and math.isclose(float(e["alpha"]), inter.latency_s, rel_tol=1e-9)):
            return e
    return None


def _per_nic(flat: Link, entry: dict | None, intra: Link, what: str) -> Link:
    """The per-NIC link behind a flat fit of a multi-node log.  The fit's α, β are the log's per-step values at its
    own k ranks per node (:func:`nic_sharers` of the entry's ranks and GPUs per node), which :func:`link_values`
    and the strategies' terms mix from the two links by the algorithm's crossing rule (``base.crossing``):
    v_fit = stays·v_intra + across·v_inter, or for a ring's β, whose legs run at once, β_fit = max(stays·β_intra,
    across·β_inter).  Read once, the other way, so that the log's own group is priced at its fit and no fitted
    value is mixed twice: a ring, β_inter = k·β_fit, the network's leg the slower (α all across: kept); a pairwise
    all-to-all (PEERS: k − 1 of its N − 1 peers on its node), β_inter = ((N − 1)·β_fit − (k − 1)·β_intra)/(N − k),
    α_inter likewise.  Kept whole (said in the
    link's conversion) when no entry records the log's N and G or its algorithm crosses through one NIC;
    refused when the result is not positive (the intra link is slower than the fit allows)."""
    if entry is None:
        return Link(flat.name, flat.title, flat.bytes_per_second, flat.latency_s, flat.published,
                    "a flat fit kept whole as the per-NIC link: no calibration entry records its log's ranks and "
                    "GPUs per node", flat.source, flat.latency_source)
    ranks, g = int(entry["ranks"]), int(entry.get("gpus_per_node") or 0)
    rule = crossing_of(entry["collective"], entry["algorithm"])
    if rule == ONE_NIC or not g:
        return Link(flat.name, flat.title, flat.bytes_per_second, flat.latency_s, flat.published,
                    f"a flat {entry['algorithm']} fit kept whole: only a ring's and a pairwise all-to-all's "
                    "crossings split between the links", flat.source, flat.latency_source)
    k = nic_sharers(ranks, g)
    (a_across, a_stays), (b_across, b_stays) = inter_shares(rule, ranks, k, min(ranks, g))
    if rule in CONCURRENT:
        # the legs at once (link_values: β_fit = max(stays·β_intra, across·β_inter)): the network's the slower where
        # the fit is slower than the node's leg alone, β_inter = β_fit/across; a fit as fast says nothing of it
        if not 1 / flat.bytes_per_second > b_stays / intra.bytes_per_second:
            raise InputError(f"{what}: field 'inter' (a flat ring fit on {ranks} ranks, {k} per node) is as fast as "
                             f"its node's leg alone ({b_stays:.4g} of the intra link's beta) or faster: its network leg "
                             "is not the slower, so the fit does not give beta_inter; give an intra link measured on "
                             "the same machine (symcomm calibrate SINGLE_NODE_LOG MULTI_NODE_LOG -o FILE)")
        beta = 1 / flat.bytes_per_second / b_across
        formula, why = (f"beta_inter = {k}·beta_fit",
                        f"a ring's crossings spread over the node's {k} NICs, its network leg the slower of two at once")
    else:
        beta = (1 / flat.bytes_per_second - b_stays / intra.bytes_per_second) / b_across
        formula = (f"beta_inter = ({ranks - 1}·beta_fit − {k - 1}·beta_intra)/{ranks - k}, alpha_inter likewise")
        why = f"a pairwise all-to-all sends to {k - 1} of its {ranks - 1} peers on its node"
    alpha = (flat.latency_s - a_stays * intra.latency_s) / a_across
    for name, value in (("beta", beta), ("alpha", alpha)):
        if value <= 0:
            raise InputError(f"{what}: field 'inter' (a flat fit on {ranks} ranks, {k} per node) is faster than its "
                             f"intra link allows: {formula} gives {name}_inter = {value:.3g} "
                             f"{'s/byte' if name == 'beta' else 's'}, not positive; give an intra link measured on "
                             "the same machine (symcomm calibrate SINGLE_NODE_LOG MULTI_NODE_LOG -o FILE)")
    return Link(flat.name, flat.title, 1.0 / beta, alpha, flat.published,
                f"per NIC, from the flat fit on {ranks} ranks with {k} per node: {formula} ({why})", flat.source,
                flat.latency_source)


#: the ring collectives whose crossings spread over a node's NICs (collectives.algorithms.SPREADS_OVER_NICS:
#: both read base.crossing's one table; tests/presets checks the two are equal)
_RINGS = frozenset(pair for pair, rule in CROSSING.items() if rule == RING)


# -- the CLI's eval: values from presets ----------------------------------------------------------

def fill_from_presets(target, texts: dict, *, model_name: str | None = None, config_path: str | None = None,
                      hardware_name: str | None = None, dtype: str | None = None,
                      gpus_per_node: str | None = None) -> tuple[dict, str | None]:
    """(KEY=VALUE texts completed from the model preset or config file and the hardware preset
    for the symbols ``target`` (a :class:`symcomm.training.subjects.Subject`) uses, the dtype).  An
    explicit KEY=VALUE always wins.  With a hardware preset the time symbols are per byte, so
    the dtype defaults to bf16; which link's α, β a group uses is :func:`link_values`' rule, with
    nodes of ``gpus_per_node`` GPUs when given (a typed G), else the preset's; which link was
    taken is a note (:mod:`symcomm.base.notes`)."""
    refused = element_refusal(str(dtype or "bf16"), str(getattr(target, "options", {}).get("precision", "bf16")))
    if refused:                       # with --hardware or without: the bytes would be half of what the run holds
        raise InputError(refused)
    # what the shipped presets fill depends on the subject, the presets' names, the dtype, N and G alone (the
    # presets never change in a process): worded once per those, its note said again on every call; a file
    # (a config, a hardware or model file) is read again each time, since it may have changed
    fill_key = None
    if not config_path and not _is_path(str(model_name or "")) and not _is_path(str(hardware_name or "")):
        fill_key = (model_name, hardware_name, dtype, texts.get("N"), gpus_per_node)
        held = memo.table(target, "_preset_fills").get(fill_key)
        if held is not None:
            filled_texts, dtype, why, mixes = held
            _refuse_typed_links(texts, mixes)
            if why:
                notes.add(why)     # a mix of the two links is a modelling choice, said unasked
            return {**filled_texts, **texts}, dtype
    from ..base.inputs import parse_whole

    generated = hasattr(target, "preset_names")   # a generated primitive (training.fasteval): its names as data, no SymPy
    if generated:
        needed = target.preset_names
    else:
        from ..core import symbols as S

        needed = memo.once(target, "_preset_needed", lambda: frozenset(    # once per subject (subjects are immutable)
            S.BY_SYMBOL[x].cli_name for x in target.symbols() if x in S.BY_SYMBOL))
    filled: dict[str, object] = {}
    why, mixes = "", False
    try:
        if model_name and config_path:
            raise InputError("give --model or --model-config, not both")
        if model_name or config_path:
            chosen = model(model_name) if model_name else model_from_config(config_path)
            filled.update({k: v for k, v in chosen.values().items() if k in needed})
        if hardware_name:
            system = hardware(hardware_name)
            dtype = dtype or "bf16"
            two_level = target.two_level if generated else any(sym in (S.alpha_inter, S.beta_inter)
                                                               for sym, _ in target.cost.coefficients)
            group = texts.get("N", filled.get("N"))
            ranks = parse_whole("N", str(group)) if group is not None else None
            g = parse_whole("G (gpus_per_node)", str(gpus_per_node)) if gpus_per_node else None
            preset, why = link_values(system, ranks, two_level, g, spread=getattr(target, "spreads_over_nics", False),
                                      crossing=getattr(target, "crossing", None))
            mixes = bool(why) and not two_level
            _refuse_typed_links(texts, mixes)
            why = "; ".join(x for x in (why, curve_note(system, hardware_name, target, ranks)) if x)
            if why:
                notes.add(why)     # a mix of the two links is a modelling choice, said unasked
            for key, value in preset.items():
                if key in TIME_NAMES or key in needed:
                    filled[key] = value
    except ValueError as err:
        raise InputError(str(err)) from None
    filled_texts = {k: repr(v) if isinstance(v, float) else str(v) for k, v in filled.items()}
    if fill_key is not None:
        fills = memo.table(target, "_preset_fills")
        if len(fills) >= 256:
            fills.clear()
        fills[fill_key] = (filled_texts, dtype, why, mixes)
    return {**filled_texts, **texts}, dtype
