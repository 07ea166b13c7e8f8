"""Step time of a hybrid layout: compute, communication, overlap and pipeline bubble as
SymPy expressions, and the memory each GPU holds.

The model (every piece an expression of the symbols of :mod:`symcomm.core.symbols`; times in
seconds, sizes in bytes; one training step = forward + backward of the global batch b in m
micro-batches per data-parallel replica, then the optimizer step):

* **compute** of one micro-batch on the busiest pipeline stage (the last: L/p layers and the
  LM head), split over the t·c GPUs of the stage: hardware FLOPs (:mod:`symcomm.training.flops`,
  recompute included) / (peak · η), where ``peak`` is the datasheet matmul rate at the run's
  dtype and η the share of it the matmuls reach (fitted, see ``derivations/step_time.py``);
* **per micro-batch communication on the critical path**: the hybrid strategy's tp, cp, ep
  and pp terms divided by m — exposed (Megatron runs them between its GEMMs) unless overlapped
  (:mod:`symcomm.training.overlap`): ``tp_overlap=1`` hides tp behind the micro-batch's compute but one
  chunk of t (Transformer Engine userbuffers, whose GEMMs then run in chunks that each read the weight again:
  :func:`symcomm.training.compute.ub_chunk_elements`), or with framework=fsdp2 each sequence collective behind the
  GEMM it is fused with (PyTorch's async TP, :func:`symcomm.training.overlap.tp_exposed`); without it Megatron's
  and Transformer Engine's column-parallel linears still hide two backward collectives each behind one GEMM
  (``tp_backward_overlap``, :func:`symcomm.training.overlap.tp_backward_exposed`); ``a2a_overlap`` the
  expert all-to-alls, each behind the piece of the other micro-batch's compute Megatron runs it beside
  (:func:`symcomm.training.overlap.a2a_exposed`), ``p2p_overlap`` the pipeline sends, in the window the ones
  before left;
* **pipeline**: (m + (p − 1)/v) slots of one micro-batch each (Narayanan et al. 2021, §2.2: the
  bubble is (p − 1)/v micro-batch times of the busiest stage), (m + n_ga·(p − 1)/v) when each of n_ga
  gradient-accumulation steps runs its own schedule (``ga_schedules``, frameworks.PIPELINING_GA);
* **data parallel** as the framework overlaps it (:func:`symcomm.training.overlap.exposed_data_parallel`):
  gradient reductions behind the backward in buckets, the last one exposed (``overlap_grad_reduce``);
  the post-step parameter all-gather exposed or, with ``overlap_param_gather``, behind the next
  forward but its first bucket; under Megatron's interleaved schedule each model chunk synced apart, both
  windows (p(v − 1) + 1)/v micro-batches wide instead of one; FSDP2 / Megatron-FSDP per layer: the first
  gather and the last reduce-scatter exposed, every collective's latency, the bandwidth beyond the compute;
* **optimizer**: Adam over the GPU's own parameters, memory-bound: each parameter reads and
  writes its fp32 copy and two moments, reads its gradient and writes the 16-bit weight —
  26 bytes + the gradient's bytes, at the HBM bandwidth; with Megatron-Core's gradient buffer its
  per-step passes beside (zeroed, scaled by 1/d, its NaN-check norm: :func:`after_backward_seconds`).

Every exposed time carries the slowdown that the hidden rest of its communication causes the compute it runs
beside (σ/(1 + σ) of the hidden seconds, σ = 18.9 %: :func:`symcomm.training.overlap.with_slowdown`).

Step time = pipeline + exposed data-parallel communication + optimizer.  The quantities it
reports follow from it: tokens/s = b·s / step; MFU = model FLOPs / (step · GPUs · peak);
HFU likewise with the hardware FLOPs.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import sympy as sp
from sympy.core.mul import _mulsort

from . import flops
from . import settings
from ..base.errors import InputError
from ..presets.hardware_values import TYPED_HARDWARE
from .axes import bubble_slots, run_data_schedule
from .compute import attention_kind, micro_batch_compute, with_absent_constants
from . import torchmem
from .memory import (STAGE_OF, eager_block, kept_widths, layer_activation_bytes, memory_model, memory_options,
                     memory_per_gpu, saved_input_bytes)
from .overlap import dp_overlap_of, exposed_data_parallel, micro_batch_on_path, param_gather_overlap_of
from .terms import time_in_bytes_of
from .subjects import subject
from ..core.symbols import b, c, d, hbm, m, p, peak, s, t, v

#: options of the step model beyond the hybrid strategy's own (symcomm.training.settings.STEP_OPTIONS), by name
STEP_OPTIONS = settings.STEP_OPTIONS_BY_NAME
#: the names the step model's options are given by: theirs and their older ones (settings.KEY_ALIASES)
STEP_KEYS = settings.STEP_KEYS
#: passes over every byte of a Megatron-Core gradient buffer per step (NVIDIA/Megatron-LM f2e5db402c,
#: megatron/core/distributed/): zeroed at the step's start (DistributedDataParallel.zero_grad_buffer → the buffer's
#: reset: one write), scaled by 1/d before its collective (param_and_grad_buffer.py Bucket.start_grad_sync:
#: grad_data *= gradient_scaling_factor, 1/d unless average_in_collective, off by default: a read and a write),
#: and its NaN check (the same function: grad_data.norm(p=2), check_for_nan_in_grad, which training.py sets from
#: --check-for-nan-in-loss-and-grad, on by default: one read) — each on the compute stream, so on the step's path
GRAD_BUFFER_PASSES = 4
#: the frameworks whose gradient buffer makes these passes: Megatron-LM's DDP and distributed optimizer
GRAD_BUFFER_FRAMEWORKS = ("megatron",)


def after_backward_seconds(memory: dict, data, adam_dtype: str = "fp32") -> sp.Expr:
    """The memory-bound work of a step beside its micro-batches, at the HBM bandwidth: Adam over the GPU's own
    parameters (its ``adam_dtype`` state, settings.ADAM_STATE_BYTES, read and written: 24 bytes in fp32; the 16-bit
    weight written, 2; the gradient read) and, for a Megatron-Core gradient buffer (ZeRO 0 or 1: the whole buffer on
    every GPU), :data:`GRAD_BUFFER_PASSES` over its bytes.  One rule for the
    even and the uneven pipeline (symcomm.training.stagestep)."""
    grad_bytes = 4 if data.grad_dtype == "fp32" else 2
    state = settings.ADAM_STATE_BYTES[adam_dtype]
    adam = memory["optimizer"] / state * (2 * state + 2 + grad_bytes)
    buffer = (GRAD_BUFFER_PASSES * memory["gradients"]
              if data.framework in GRAD_BUFFER_FRAMEWORKS and data.zero <= 1 else sp.Integer(0))
    return (adam + buffer) / hbm


@dataclass(frozen=True)
class StepModel:
    """The step time and its parts, each a SymPy expression (seconds; bytes for memory)."""
    options: tuple
    compute: sp.Expr                 # compute of the whole step on the busiest GPU (no bubble)
    comm: dict                       # axis → communication time of the step, alone (no overlap)
    exposed: dict                    # axis → the part of it on the critical path
    bubble: sp.Expr
    optimizer: sp.Expr
    step: sp.Expr
    model_flops: sp.Expr             # the whole step, all GPUs
    hardware_flops: sp.Expr
    memory: dict = field(default_factory=dict)   # part → bytes per GPU, each on its stage (memory.STAGE_OF)
    memory_total: sp.Expr | None = None          # the busiest GPU's bytes (memory.memory_per_gpu)
    # an uneven pipeline split (symcomm.training.stagestep): per stage kind its slot, its memory and the memory's
    # parts (stage_slot_<kind>, stage_bytes_<kind>, stage_bytes_<part>_<kind>)
    stages: dict = field(default_factory=dict)
    # of model_flops, the half of the causal attention cores that Megatron-LM's count leaves out (flops.causal_half)
    causal_flops: sp.Expr = sp.Integer(0)
    # of hardware_flops, the same half and that of every attention core the recompute runs again
    # (flops.causal_half_executed)
    hardware_causal_flops: sp.Expr = sp.Integer(0)

    @property
    def model_flops_causal(self) -> sp.Expr:
        """model_flops at Megatron-LM's count: causal attention at half (what mfu_causal divides)."""
        return self.model_flops - self.causal_flops

    @property
    def memory_per_gpu(self) -> sp.Expr:
        return sp.Add(*self.memory.values()) if self.memory_total is None else self.memory_total

    @property
    def comm_time(self) -> sp.Expr:
        return sp.Add(*self.comm.values())

    @property
    def exposed_comm_time(self) -> sp.Expr:
        return sp.Add(*self.exposed.values())

    def quantities(self, ratios: bool = True) -> dict[str, sp.Expr]:
        """Every reported quantity, by its output name; without ``ratios``, all but the four that divide by the
        step (tokens_per_second, mfu, mfu_causal, hfu, hfu_causal): SymPy's assumptions take seconds over the reciprocal of an
        uneven pipeline's step, and the planner's kernels (symcomm.planner.kernelbuild) read none of them."""
        gpus = t * c * d * p
        out = {"step_time": self.step, "compute_time": self.compute, "comm_time": self.comm_time,
               "exposed_comm_time": self.exposed_comm_time, "bubble_time": self.bubble,
               "optimizer_time": self.optimizer}
        if ratios:
            out.update({"tokens_per_second": quotient(b * s, self.step),
                        "mfu": quotient(self.model_flops, self.step * gpus * peak),
                        "mfu_causal": quotient(self.model_flops_causal, self.step * gpus * peak),
                        "hfu": quotient(self.hardware_flops, self.step * gpus * peak),
                        "hfu_causal": quotient(self.hardware_flops - self.hardware_causal_flops,
                                               self.step * gpus * peak)})
        out.update({"model_flops": self.model_flops, "hardware_flops": self.hardware_flops,
                    "memory_per_gpu": self.memory_per_gpu})
        out.update({f"comm_time_{axis}": x for axis, x in self.comm.items()})
        out.update({f"exposed_comm_time_{axis}": x for axis, x in self.exposed.items()})
        out.update({f"memory_{part}": x for part, x in self.memory.items()})
        out.update(self.stages)
        return out


def quotient(x: sp.Expr, y: sp.Expr) -> sp.Expr:
    """``x / y``, the very expression SymPy builds, without the question SymPy asks on the way when ``y`` holds a
    sum: ``Pow(sum, -1)`` asks whether each of a two-term sum's terms is infinite (sympy/core/add.py
    ``Add._eval_power``, SymPy 1.14), and over a step model's Max, Min and Piecewise that was 0.4 s of CPU of the docs
    build (the page's 86 step models divide by their step), to leave the sum as it stands all the same: that method
    changes only a sum that is a number, or one of an infinite and an imaginary term.

    So when nothing in the product could combine or change — both commutative, ``x`` a rational coefficient times
    factors that are no number, ``y`` a product of symbols and sums that are no number and hold no imaginary term, no
    base twice — the product is what ``Mul`` would build: those factors and the reciprocals, in Mul's canonical order
    (``_mulsort``), the coefficient first.  Anything else SymPy divides.  tests/training/test_step_time.py compares
    the two, srepr for srepr, on the page's step models (even and uneven split, gated or not) and on products that
    take either path; every one of the page's 86 was compared once (the commit's message)."""
    coeff, top = sp.Mul.make_args(x)[0], list(sp.Mul.make_args(x))
    if coeff.is_Rational:
        top = top[1:]
    else:
        coeff = sp.S.One
    bottom = sp.Mul.make_args(y)

    def plain_sum(f):
        return f.is_Add and not f.is_number and not any(t is sp.I or t.is_Mul and sp.I in t.args for t in f.args)

    bases = [f.as_base_exp()[0] for f in top] + list(bottom)
    simple = (x.is_commutative and y.is_commutative and coeff != 0 and top and len(set(bases)) == len(bases)
              and not any(f.is_Number or f is sp.I or f.as_base_exp()[0].is_Number for f in top)
              and all(f.is_Symbol or plain_sum(f) for f in bottom))
    if not simple:
        return x / y
    factors = top + [sp.Pow(f, -1, evaluate=False) for f in bottom]
    _mulsort(factors)
    return sp.Mul(*([] if coeff is sp.S.One else [coeff]) + factors, evaluate=False)


@functools.lru_cache(maxsize=None)
def step_model(run_bytes: int = 2, **options) -> StepModel:
    """The step model of the hybrid layout with these options (the hybrid strategy's, plus
    :data:`STEP_OPTIONS`); values are text, as the command line gives them, read once into a
    :class:`symcomm.training.settings.RunSetting`.  Communication is counted in elements of ``run_bytes``
    bytes (β per element of that size), fp32 terms widened."""
    run = settings.parse(options)
    if run.pipeline_split != "even":
        from .stagestep import uneven_step_model

        return uneven_step_model(run, run_bytes, StepModel, after_backward_seconds, _check_megatron_overlap)
    texts = run.texts()
    hybrid = subject("hybrid", **{option.name: texts[option.name] for option in settings.HYBRID_OPTIONS})
    opts = memory_options(run)
    recompute, gated, flash = run.recompute, run.gated, run.flash
    moe, embeddings, zero, framework = run.moe, run.embeddings, run.zero, run.framework
    data = run_data_schedule(run)

    by_axis: dict = {}
    for term in hybrid.terms:
        by_axis.setdefault(term.axis, []).append(term)

    def time_of(terms):
        return time_in_bytes_of(tuple(terms), run_bytes)

    comm = {axis: time_of(terms) for axis, terms in by_axis.items()}

    # compute of one micro-batch on the busiest stage (the last: L/p layers and the LM head), per GPU
    compute_micro = micro_batch_compute(run)

    chunks = v if run.schedule == "interleaved" else sp.Integer(1)
    # the overlapped axes behind the micro-batch's compute, one after another (overlap.micro_batch_on_path)
    on_path = micro_batch_on_path(run, by_axis, comm, time_of, m, compute_micro)
    slot = compute_micro.total + sum(on_path.values())
    # each of the step's pipeline schedules (data.schedules: n_ga under ga_schedules=1) fills and drains
    idle = bubble_slots(p, run.schedule, data.schedules)
    pipeline = (m + idle) * slot
    bubble = idle * slot

    # data parallel: reductions behind the backward, gathers behind the compute, as the framework overlaps
    # them (overlap.exposed_data_parallel); the tied-embedding all-reduce exposed
    grad_overlap = dp_overlap_of(framework, zero, run.overlap_grad_reduce)
    param_overlap = param_gather_overlap_of(framework, zero, run.overlap_param_gather)
    _check_megatron_overlap(framework, zero, grad_overlap, param_overlap)
    exposed_dp = exposed_data_parallel(by_axis.get("dp", []), time_of, data, m, compute_micro,
                                       grad_overlap=grad_overlap, param_overlap=param_overlap,
                                       pipeline_chunks=chunks, embeddings=embeddings, interleaved_chunks=chunks)

    # the m working slots' communication; the bubble's slots (compute and communication alike) are the bubble
    exposed = {axis: x * m for axis, x in on_path.items()}
    exposed["dp"] = exposed_dp
    exposed = {axis: x for axis, x in exposed.items() if axis in comm}
    comm = {axis: comm[axis] for axis in comm}

    memory = memory_model(data, recompute, opts, flash, moe, embeddings, gated)
    per_layer = layer_activation_bytes(recompute, flash, run.sp, run.attention, moe, gated, run.expert_tp,
                                       torchmem.kept_whole(framework, run.precision), run.schedule,
                                       saved_input_bytes(framework, run.precision, run.sp), opts["torch_compiled"],
                                       run.mamba, run.moe_latent, run.recompute_mla_up, run.modules,
                                       eager=eager_block(framework, opts), widths=kept_widths(opts))
    # what a GPU holds at once is one schedule's (DataSchedule.one_schedule: under ga_schedules=1, m/n_ga in flight)
    memory_total = data.one_schedule(memory_per_gpu(memory, per_layer, run.schedule))
    memory = data.one_schedule(memory)
    optimizer = after_backward_seconds(memory, data, run.adam_dtype)

    step = pipeline + exposed_dp + optimizer
    compute_total = m * compute_micro.total
    model = flops.model_flops(b, s, gated, moe, attention_kind(run), run.mamba, run.moe_latent, run.mtp_on)
    hardware = flops.hardware_flops(b, s, recompute, gated, moe, attention_kind(run), run.schedule, run.mamba,
                                    run.moe_latent, run.recompute_mla_up, run.mtp_on, modules=run.modules)
    key = tuple(sorted(texts.items()))
    return StepModel(key, compute_total, comm, exposed, bubble, optimizer, step, model, hardware, memory,
                     memory_total, causal_flops=flops.causal_half(b, s, attention_kind(run), run.mamba, run.mtp_on),
                     hardware_causal_flops=flops.causal_half_executed(b, s, recompute, attention_kind(run),
                                                                      run.schedule, run.mamba, run.mtp_on))


def _check_megatron_overlap(framework: str, zero: int, grad_overlap: bool, param_overlap: bool) -> None:
    """--overlap-param-gather needs the distributed optimizer (DDP gathers no parameter): InputError for zero=0.
    Without --overlap-grad-reduce Megatron-LM's arguments.py refuses it too, but Megatron-Core's DDP runs it (its
    forward pre-hooks wait for each bucket's gather whatever the reduction does) and Megatron-Bridge's recipes set it
    so (25.09's DeepSeek-V3): priced as asked, and eval says so (words.param_gather_note)."""
    if framework != "megatron" or not param_overlap:
        return
    if zero == 0:
        raise InputError("overlap_param_gather=1 needs zero=1 with framework=megatron (DDP gathers no parameters; "
                         "Megatron-LM's --overlap-param-gather needs --use-distributed-optimizer)")


@functools.lru_cache(maxsize=None)
def _evaluators(run_bytes: int, options: tuple):
    from ..numbers.numeric import bundle

    return bundle(step_model(run_bytes, **dict(options)).quantities())


def quantities(values: dict, run_bytes: int = 2, **options) -> dict[str, float]:
    """Every quantity of the step model with these options, at these values (by CLI symbol
    name; floats or numpy arrays), as floats: seconds, bytes, FLOPs, ratios (one compiled function of
    them all, common parts computed once)."""
    # the options in the order given find their compiled bundle without sorting them on every call
    key = (run_bytes, tuple(options.items()))
    held = _BY_GIVEN_ORDER.get(key)
    if held is None:
        if len(_BY_GIVEN_ORDER) >= 1024:
            _BY_GIVEN_ORDER.clear()
        held = _BY_GIVEN_ORDER[key] = _evaluators(run_bytes, tuple(sorted(options.items())))
    return held(**with_absent_constants(values))


#: (run bytes, the options as given) → their compiled bundle (_evaluators keys them sorted)
_BY_GIVEN_ORDER: dict = {}


#: what every reported number is in
UNITS = {"step_time": "s", "compute_time": "s", "comm_time": "s", "exposed_comm_time": "s", "bubble_time": "s",
         "optimizer_time": "s", "tokens_per_second": "tokens/s", "mfu": "ratio", "mfu_causal": "ratio", "hfu": "ratio",
         "hfu_causal": "ratio",
         "memory_per_gpu": "bytes", "model_flops": "FLOP per step, all GPUs",
         "hardware_flops": "FLOP per step, all GPUs"}

ASSUMPTIONS = (
    "one step = forward + backward of the global batch b, m micro-batches per data-parallel replica, then the "
    "optimizer; the busiest GPU is on the last pipeline stage (its L/p layers and the LM head)",
    "compute = hardware FLOPs (matmuls, 2 per multiply-add, full s×s attention as Narayanan et al. and "
    "Korthikanti et al. count it) / (peak × eta), each GEMM's share of peak eta·w/(w + w_half) for its width "
    "w = MNK/(MK + KN + MN) (w_half the hardware's; w_half = 0 would be shape-independent), plus kappa HBM passes "
    "over the activation bytes of "
    "Korthikanti et al. Table 2 (the memory-bound kernels); under an FP8 precision the layers' linear GEMMs at "
    "peak_fp8 × eta_fp8 (nvfp4: peak_fp4 × eta_fp4) and their casts at the HBM bandwidth, the attention core and "
    "LM head in bf16; the "
    "cross-entropy's HBM passes over the logits as the loss setting runs them (vocab_parallel 38 + 14 bytes per "
    "logit, te_fused 8 + 14, eager 22 + 26 at t = 1, 38 + 38 under loss_parallel at t > 1; compiled not counted); wgrad_fusion=1 (Megatron's default) the weight gradients read and written in the "
    "gradient buffer every micro-batch; fused_projections=0 (fsdp2's default: torchtitan's separate wq, wk, wv and "
    "w1, w3) each projection its own GEMM at its own width",
    "tensor, context, expert and pipeline communication on the critical path of every micro-batch, unless "
    "overlapped: tp_overlap=1 hides tp behind the micro-batch's compute but one chunk of t (under Megatron its GEMMs "
    "run in Transformer Engine's chunks, each reading the weight again); without it Megatron's "
    "column-parallel linears hide their backward's input re-all-gather and input-gradient reduce-scatter (all-reduce) "
    "each behind the one GEMM it runs beside (tp_backward_overlap; dense blocks), a2a_overlap the expert "
    "all-to-alls each behind the piece of the other micro-batch's compute Megatron pairs it with, p2p_overlap the pipeline sends (Megatron-LM: on with the interleaved schedule); bubble = "
    "(p − 1)/v micro-batch slots, n_ga times under ga_schedules=1 (a schedule per gradient-accumulation step)",
    "data-parallel gradient reductions hidden behind the backward when the framework overlaps them "
    "(overlap_grad_reduce; Megatron's last bucket of max(40M, 1M·d) parameters exposed), the post-step "
    "parameter all-gather exposed unless overlap_param_gather (then its first bucket), ZeRO-3 gathers prefetched "
    "behind the compute; FSDP2 and Megatron-FSDP one gather and reduce-scatter per layer: the first gather, the "
    "last reduce-scatter and every collective's latency exposed; Megatron's edge bucket at least the word "
    "embedding (V·h/t); Adam memory-bound at the HBM bandwidth, and Megatron's gradient buffer zeroed, scaled "
    "by 1/d and its norm read per step by the non-finite check (check_for_nan_in_grad)",
    "hidden communication is not free: the compute a collective runs beside runs 18.9 % slower while it does (Lee et "
    "al. 2025, arXiv:2507.03114, the published mean; up to 40 %), so each axis's exposed time is what waits plus "
    "0.159 (0.189/1.189) of what hides; an upper bound where the collective outlasts the compute",
    "memory: the busiest of the first stage (its activations) and the last (its logits: the loss's buffers per "
    "logit as the loss setting runs it), plus every stage's weights, gradients, optimizer states, the larger of the "
    "loss's buffers and the recompute working set, and FSDP's gathered layers; under fsdp2 PyTorch's own buffers too (FSDP2's unsharded root, "
    "the LM head's kept inputs and gradient, torch.distributed.pipelining's receive buffers and kept outputs, "
    "ring attention's gathered K, V and fp32 gradients under context parallelism: symcomm.training.torchmem)",
    "pipeline_split=first_last (the first and the last of the p·v chunks L_first, L_last layers, the middle ones "
    "the rest in equal parts): every stage kind priced (first: the embedding; middle; last: the LM head), the "
    "slowest sets the slot, memory is the stage holding the most; each reported time part is the largest over the "
    "stages",
)


#: what recompute=op counts (symcomm.training.memory.op_kept_widths, symcomm.training.flops.op_recomputed_matmuls)
OP_RECOMPUTE = ("recompute=op (torchtitan's op-level selective checkpointing): each block keeps its input and the "
                "outputs of every other matmul (gated: wq, wv, w1, w2), of the SDPA (with its logsumexp) and of the "
                "sequence-parallel reduce-scatters as eager checkpointing keeps them; under torch.compile (fsdp2 with "
                "compile=1) only those the backward reads, the last matmul's output and its reduce-scatter's left out "
                "(AOTAutograd's partitioner drops unread saved values); the backward runs the other matmuls but the last (gated: "
                "wk, wo, w3), every memory-bound "
                "op and the sequence all-gathers again, not the attention core")

#: what recompute=block counts (symcomm.training.stages.block_share; settings.MEGATRON_BLOCK_RECOMPUTE)
BLOCK_RECOMPUTE = ("recompute=block (Megatron's --recompute-method block): the first L_rc layers of each model chunk "
                   "keep only their input and run their forward and its collectives again before their backward, as "
                   "under full; the others keep their activations, as under none; counted as those shares, L_rc·p·v/L "
                   "and the rest, of every layer's work and bytes")

#: why fp8_param_gather=1 leaves an MXFP8 run's parameter all-gathers at its dtype (symcomm.training.axes.data_schedule)
MXFP8_GATHER = ("fp8_param_gather=1 with precision=mxfp8: the parameter all-gathers move bf16, as Megatron-Core "
                "gathers MXFP8 weights through a bf16 buffer and re-quantizes them "
                "(megatron/core/distributed/param_and_grad_buffer.py)")
#: what MFU and HFU mean under an FP8 recipe (both tensor-core rates run in one step)
FP8_MFU = ("under an FP8 or FP4 precision: mfu and hfu divide by the bf16 peak (peak); the linear GEMMs run at "
           "peak_fp8 × eta_fp8 (nvfp4: peak_fp4 × eta_fp4) (torchtitan docs/performance.md leaves MFU out for Float8 "
           "runs for this reason: two peaks in one step)")


#: the hybrid's and the step model's option words apart (settings.step_options: SymPy-free, the fast path reads it)
step_options = settings.step_options


def check_finite(numbers: dict, values: dict | None = None) -> None:
    """The last line of defence (eval hybrid and plan): a step-model output that is inf or nan (a zero
    bandwidth, peak or eta reaching a division; sizes whose products leave a float's range) is refused, naming it and
    the largest of ``values`` (the inputs), never printed as a number."""
    if math.isfinite(sum(numbers.values())):
        return      # a finite sum: every number finite (an inf or a nan makes the sum inf or nan)
    bad = [name for name, x in numbers.items() if not math.isfinite(x)]
    if bad:
        # d=2**60 with b=2**60 overflowed the products to nan, and the message blamed the hardware alone
        large = sorted(((abs(float(x)), name) for name, x in (values or {}).items()
                        if name not in TYPED_HARDWARE and isinstance(x, (int, float)) and abs(float(x)) >= 2 ** 40),
                       reverse=True)[:3]
        sizes = ("the largest values given (" + ", ".join(f"{name}={x:.3g}" for x, name in large)
                 + ") may take its products beyond a float's range, or " if large else "")
        raise InputError(f"the step model gives {bad[0]} = {numbers[bad[0]]} (not a finite number) with these "
                         f"values: {sizes}check the hardware's bandwidths, peak_flops, hbm_bytes_per_second and "
                         "step_time")


#: the stage kinds (symcomm.training.stages.KINDS; a middle stage exists only when p ≥ 3)
STAGE_NAMES = ("first", "middle", "last")


def busiest_stages(number: dict, stages: int) -> dict:
    """In words, the stage that sets the slot (one micro-batch on the critical path) and the one holding the most
    memory: from the per-stage figures of an uneven split (ties: the later stage); an even split's model
    prices the last stage's slot (its L/p layers alike, the LM head on the last) and the busier of the first and
    the last stage's memory (memory.memory_per_gpu)."""
    if stages == 1:
        return {"slot": "the only stage", "memory": "the only stage"}
    if "stage_slot_last" not in number:
        return {"slot": "the last pipeline stage", "memory": "the busier of the first and the last pipeline stage"}
    kinds = [kind for kind in STAGE_NAMES if kind != "middle" or stages >= 3]
    name = {"first": "the first pipeline stage", "middle": "a middle pipeline stage (rank 1)",
            "last": "the last pipeline stage"}
    return {what: name[max(reversed(kinds), key=lambda kind: number[f"stage_{key}_{kind}"])]
            for what, key in (("slot", "slot"), ("memory", "bytes"))}


@functools.lru_cache(maxsize=256)
def _report_keys(keys: tuple) -> tuple:
    """(per-axis comm times, per-axis exposed times, memory parts) as (short name, quantity) pairs in the
    quantities' order: sorted out once per set of quantities (one per option set), not on every report."""
    def parts(prefix: str, leave_out: str = "") -> tuple:
        return tuple((k[len(prefix):], k) for k in keys if k.startswith(prefix) and k != leave_out)

    return parts("comm_time_"), parts("exposed_comm_time_"), parts("memory_", "memory_per_gpu")


@dataclass(frozen=True)
class _ReportPlan:
    """What a report holds that its option set alone decides, found once per option set: the compiled
    quantities, which of them go where, the units, the memory parts' stages, the option texts and the
    assumptions; a report then pays for its numbers only."""
    evaluator: object           # the step model's quantities, one compiled float evaluator (_evaluators')
    names: tuple                # the quantities' names, in the evaluator's order (twelve and more: a tuple back)
    comm: tuple                 # (axis, quantity) pairs: comm_time_per_axis
    exposed: tuple              # (axis, quantity) pairs: exposed_comm_time_per_axis
    memory: tuple               # (part, quantity) pairs: memory
    memory_stage: dict          # part → the stage holding it (memory.STAGE_OF), an even split's
    uneven: bool                # per-stage figures (an uneven split): memory read from the busiest stage
    units: dict
    options: dict               # the setting used, canonical texts
    assumptions: tuple


def _report_plan(run_bytes: int, hybrid_options: dict, own_options: dict) -> _ReportPlan:
    # keyed by the options in the order given (no sort per report); a refusal is raised and nothing kept
    key = (run_bytes, tuple(hybrid_options.items()), tuple(own_options.items()))
    held = _REPORT_PLANS.get(key)
    if held is None:
        if len(_REPORT_PLANS) >= 1024:
            _REPORT_PLANS.clear()
        held = _REPORT_PLANS[key] = _new_report_plan(run_bytes, hybrid_options, own_options)
    return held


#: (run bytes, hybrid options, step options, each in the order given) → their _ReportPlan
_REPORT_PLANS: dict = {}


def _new_report_plan(run_bytes: int, hybrid_options: dict, own_options: dict) -> _ReportPlan:
    options = tuple(sorted({**hybrid_options, **own_options}.items()))
    evaluator = _evaluators(run_bytes, options).evaluator
    keys = tuple(step_model(run_bytes, **dict(options)).quantities())     # the bundle's names, in its order
    comm, exposed, memory = _report_keys(keys)
    units = {**UNITS, "comm_time_per_axis": "s", "exposed_comm_time_per_axis": "s", "memory": "bytes",
             "memory_stage": "pipeline stage: first, last or every",
             "busiest_stage": "which stage sets the micro-batch slot and which holds the most memory"}
    texts, assumed = _setting_words_as_given(tuple(hybrid_options.items()), tuple(own_options.items()))
    options = dict(texts)
    assumptions = list(ASSUMPTIONS) + list(assumed)
    if options["precision"] != "bf16":
        assumptions.append(FP8_MFU)
    if options["precision"] == "mxfp8" and options["fp8_param_gather"] == "1":
        assumptions.append(MXFP8_GATHER)
    if options["recompute"] == "op":
        assumptions.append(OP_RECOMPUTE)
    if options["recompute"] == "block":
        assumptions.append(BLOCK_RECOMPUTE)
    return _ReportPlan(evaluator, keys, comm, exposed, memory, {part: STAGE_OF[part] for part, _ in memory},
                       "stage_bytes_last" in keys, units, options, tuple(assumptions))


def names_read(run_bytes: int, hybrid_options: dict, own_options: dict) -> frozenset:
    """The names (CLI) the step model of this setting reads: its compiled quantities' arguments."""
    return frozenset(_report_plan(run_bytes, hybrid_options, own_options).evaluator.names)


def report(values: dict, run_bytes: int, hybrid_options: dict, own_options: dict) -> dict:
    """The step model's numbers at ``values`` (CLI names → numbers; β, γ per element of ``run_bytes``
    bytes): the reported quantities, per-axis times, memory parts, the units and the assumptions."""
    plan = _report_plan(run_bytes, hybrid_options, own_options)
    got = plan.evaluator.float_at(with_absent_constants(values))      # every value a Python number: floats there
    # the bundle's {name: value} in one pass; float(): a constant quantity's int, a numpy fallback's float64
    number = dict(zip(plan.names, map(float, got)))
    check_finite(number, values)
    out = {key: number[key] for key in UNITS}
    out["comm_time_per_axis"] = {short: number[k] for short, k in plan.comm}
    out["exposed_comm_time_per_axis"] = {short: number[k] for short, k in plan.exposed}
    out["memory"] = {short: number[k] for short, k in plan.memory}
    # which pipeline stage's GPU holds each part (the busiest GPU: the larger of the first and the last)
    out["memory_stage"] = dict(plan.memory_stage)
    out["bubble_fraction_of_step"] = number["bubble_time"] / number["step_time"]
    out["units"] = dict(plan.units)
    stages = int(values.get("p", 0))
    out["busiest_stage"] = busiest_stages(number, stages)
    if plan.uneven:          # an uneven split: the busiest stage's memory parts, and every stage's
        kinds = [kind for kind in STAGE_NAMES if kind != "middle" or stages >= 3]
        busiest = max(reversed(kinds), key=lambda kind: number[f"stage_bytes_{kind}"])
        out["memory"] = {part: number[k] for part in STAGE_OF if (k := f"stage_bytes_{part}_{busiest}") in number}
        out["memory_stage"] = {part: busiest for part in out["memory"]}
        out["stages"] = {kind: {"slot_time": number[f"stage_slot_{kind}"], "memory": number[f"stage_bytes_{kind}"]}
                         for kind in kinds}
        out["units"]["stages"] = "slot_time s (one micro-batch: compute + tp, cp, ep, pp), memory bytes per GPU"
    out["options"] = dict(plan.options)    # the setting used, canonical
    out["assumptions"] = list(plan.assumptions)
    return out


def _setting_words_as_given(hybrid_options: tuple, own_options: tuple) -> tuple:
    # _setting_words of the options in the order given: found without sorting them on every report
    key = (hybrid_options, own_options)
    held = _WORDS_BY_GIVEN_ORDER.get(key)
    if held is None:
        if len(_WORDS_BY_GIVEN_ORDER) >= 1024:
            _WORDS_BY_GIVEN_ORDER.clear()
        held = _WORDS_BY_GIVEN_ORDER[key] = _setting_words(tuple(sorted({**dict(hybrid_options),
                                                                         **dict(own_options)}.items())))
    return held


#: (hybrid options, step options, each in the order given) → _setting_words of them
_WORDS_BY_GIVEN_ORDER: dict = {}


@functools.lru_cache(maxsize=256)
def _setting_words(options: tuple) -> tuple:
    # (its canonical texts, what it assumes): a function of the option words alone, parsed once per process
    run = settings.parse(dict(options))
    return tuple(run.texts().items()), tuple(_setting_assumptions(run))


def _setting_assumptions(run: settings.RunSetting) -> list[str]:
    """What the MoE and MLA parts of the model approximate, said beside the numbers they shape."""
    out = []
    if run.moe:
        out.append("MoE: balanced routing (each expert gets its share k/E of the tokens); a stage holds the MoE "
                   "layers in the model's proportion L_moe/L (a recipe that puts the dense layers on one stage, "
                   "as DeepSeek-V3's first 3, differs); expert_tp=" + run.expert_tp + (
                       ": experts whole on a GPU, sharded over e" if run.expert_tp == "1" else
                       ": experts split over t_e ranks, the expert grid's own" if run.expert_tp == "t_e" else
                       ": experts split over the t TP ranks (Megatron-Core's default)"))
    if run.attention == "mla":
        out.append("attention=mla: DeepSeek's multi-head latent attention counted by its own projections, core and "
                   "activations; its down projections (h·(q_lora + kv_lora + d_rope) per layer), which Megatron-Core "
                   "duplicates on every TP rank, are counted as split over t in the memory and the data-parallel "
                   "reductions")
    return out
