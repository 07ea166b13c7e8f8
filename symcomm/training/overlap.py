"""What of the communication stays on the critical path of a step, as SymPy expressions (seconds),
as the frameworks overlap it (:mod:`symcomm.training.frameworks` says who overlaps what by default;
the run's settings ``overlap_grad_reduce``, ``overlap_param_gather``, ``tp_overlap``, ``a2a_overlap``,
``p2p_overlap`` override it).  Part of the step model (:mod:`symcomm.training.steptime`).

Data parallel (:func:`exposed_data_parallel`):

* gradient reductions (ZeRO 0–2) overlapped in buckets behind the backward: exposed =
  max(reduce − window, the last bucket's reduce), the last bucket starting only when the backward
  ends (Megatron-LM distributed_data_parallel.py: buckets of max(40M, 1M·d) parameters; DeepSpeed
  reduce_bucket_size 5·10⁸ elements, deepspeed/runtime/zero/config.py); not overlapped: all of it;
* the parameter all-gather after the optimizer step (ZeRO 1/2): exposed unless overlap_param_gather,
  then max(the first bucket's gather, gather − the first micro-batch's forward) (Megatron-LM
  param_and_grad_buffer.py: the forward pre-hook waits on its bucket and dispatches the next);
* Megatron's interleaved schedule (v model chunks a stage, :data:`INTERLEAVED_SYNC`) syncs each chunk apart:
  its reduce-scatter starts after its last micro-batch's backward, and the last p micro-batches (m when fewer) run
  their backwards chunk by chunk from the last chunk to the first, so all but the first chunk's reductions hide behind
  the p(v − 1) chunk backwards that follow them and the first chunk's behind its own last one: the window of a
  reduction once per step is (p(v − 1) + 1)/v micro-batch backwards, not one; each chunk's parameter gather runs
  while the chunk before it makes its first p forwards (the first two at the step's start), a window of
  (p(v − 1) + 1)/v micro-batch forwards; v = 1 gives the one micro-batch of the rules above;
* ZeRO-3 per layer (FSDP2, Megatron-FSDP: one all-gather and one reduce-scatter per layer): the first
  layer's gather of every forward and the last layer's reduce-scatter of every reduction exposed in
  full; every other collective exposes its latency (the a·α part of its cost: each waits on its own
  event before its layer computes) and hides its bandwidth part behind its own phase's compute as far as
  it lasts (:data:`PER_LAYER_PHASES`): a forward's gathers behind the forwards that gather, the backward's
  gathers behind the backwards, the reductions behind the backwards that reduce (every micro-batch's, or the
  last one's when gradients are reduced once per step); ZeRO-3 of a whole-model unit (DeepSpeed, FSDP as symcomm counts them): gathers hidden
  behind the forwards and backwards, exposed = max(0, gathers − window);
* ZeRO-3 per layer under PyTorch's pipelining (framework fsdp2, p ≥ 2, gradients reduced once per step,
  :data:`PIPELINED_POST_BACKWARD`): the stage runs every micro-batch's backward with gradient sync off and,
  after the last one has finished, FSDP's post-backward of every layer of the chunk: those reduce-scatters
  follow the whole backward, none of it left to hide them.  On the first stage's GPU that backward is the
  step's last work (1F1B; under the interleaved schedule the last p backwards are its first chunk's), so one
  chunk's reductions (1/v of the stage's) are exposed in full; a later chunk's hide behind the first chunk's
  remaining backwards, and the other stages' behind their cooldown (the first stage's tail is the step's);
* the rest (the tied-embedding all-reduce) exposed.

What hides is not free (:func:`with_slowdown`): the compute a collective runs beside runs 18.9 % slower while it does
(Lee et al. 2025, :data:`OVERLAP_SLOWDOWN`), so every axis's seconds on the critical path are what waits plus
σ/(1 + σ) of what hides; the exposed times this module returns (per micro-batch and the data-parallel ones) carry it.

Per micro-batch (:func:`hidden_behind`): a communication overlapped with compute hides behind the
window left by the others it shares the window with, down to a floor that cannot hide.  Tensor
parallel (``tp_overlap``, :data:`TP_OVERLAP`): the GEMM next to each collective runs in t chunks,
each chunk's communication behind another chunk's GEMM; one chunk of t per collective is modelled as
exposed (the pipelined reduce-scatter's last chunk follows the last GEMM chunk; the ring-exchange
all-gather's chunk has to arrive before the GEMM that uses it), the rest hides as far as the compute
lasts.  Transformer Engine runs this only inside an NVLink domain (its README's requirement): the
model does not refuse tp_overlap=1 on a group spanning nodes, it prices it as asked.  PyTorch's async TP
(framework=fsdp2, :data:`ASYNC_TP`) fuses a sequence collective with the GEMM next to it where Inductor's pattern
matches (compute.ASYNC_TP_FUSION), so each hides behind that GEMM alone, the unmatched ones not at all
(:func:`tp_exposed`).  Without tp_overlap, Megatron's and Transformer Engine's column-parallel linears still start
two collectives of their backward asynchronously (tp_backward_overlap, :func:`tp_backward_exposed`), each hiding
behind the one GEMM it runs beside.
"""

from __future__ import annotations

import functools
from dataclasses import replace

import sympy as sp

from . import frameworks as F
from .compute import async_tp_fusion, tp_fused_gemm_seconds
from ..core import symbols as S


#: what the interleaved schedule's per-chunk synchronisation follows (exposed_data_parallel's interleaved_chunks)
INTERLEAVED_SYNC = ("NVIDIA/Megatron-LM megatron/core/pipeline_parallel/schedules.py at d98e8a64 "
                    "(forward_backward_pipelining_with_interleaving: param_sync_func of the first two model chunks at "
                    "the start, of each later one in forward_step_helper when the chunk before it starts its first "
                    "micro-batch; a chunk's grad sync when its last micro-batch's backward is done, "
                    "is_last_microbatch_for_model_chunk) and megatron/training/training.py (grad_sync_func, "
                    "param_sync_func per chunk under overlap_grad_reduce, overlap_param_gather with "
                    "align_param_gather); NVIDIA-NeMo/Megatron-Bridge src/megatron/bridge/training/comm_overlap.py and "
                    "setup.py at c8101293 (align_param_gather = True when p > 1 and v > 1)")
#: the frameworks whose interleaved schedule syncs each model chunk apart (:data:`INTERLEAVED_SYNC`)
CHUNK_SYNC_FRAMEWORKS = ("megatron",)


#: what the tp_overlap model follows
TP_OVERLAP = ("Transformer Engine examples/pytorch/comm_gemm_overlap/README.md (commit 5f44453c: userbuffers "
              "comm+GEMM overlap, ub_overlap_ag / ub_overlap_rs / bulk dgrad and wgrad; tensor-parallel GPUs on one "
              "NVLink node) and transformer_engine/pytorch/module/base.py (initialize_ub: ring_exchange for the "
              "all-gathers, pipeline with num_splits chunks for the reduce-scatters); Megatron-LM "
              "megatron/core/model_parallel_config.py (tp_comm_overlap: False by default)")


#: the frameworks whose tp_overlap=1 is PyTorch's async TP (torchtitan: FSDP2 with the TP plan compiled under
#: torch._inductor.config._micro_pipeline_tp): each sequence collective of a dense block runs micro-pipelined with the
#: GEMM it feeds or follows, and hides behind that GEMM alone (:func:`tp_exposed`)
ASYNC_TP_FRAMEWORKS = ("fsdp2",)
#: what the async-TP pairing follows
ASYNC_TP = ("pytorch/torchtitan torchtitan/models/llama3/parallelize_llama.py at 820504e2 (enable_async_tp: "
            "torch._inductor.config._micro_pipeline_tp = True and symmetric memory on the TP group); pytorch/pytorch "
            "torch/_inductor/fx_passes/micro_pipeline_tp.py (an all-gather feeding matmuls becomes one "
            "fused_all_gather_matmul, a matmul feeding a reduce-scatter fused_matmul_reduce_scatter) and "
            "torch/distributed/_symmetric_memory/__init__.py (_pipelined_multi_all_gather_and_consume: the local "
            "shard's matmul first, then each remote shard copied and consumed on two alternating streams; "
            "_pipelined_produce_and_all2all for the reduce-scatter: chunk by chunk, each copied while the next is "
            "computed)")


@functools.lru_cache(maxsize=None)
def max0(x):
    # evaluate=False: the same value, SymPy's search for a simpler Max is slow on long x; and once per distinct x:
    # even unevaluated, SymPy orders the two by counting every node of x (the option combinations of a kernel
    # family ask for the same x again and again: python -m symcomm.tools.codegen)
    return sp.Max(0, x, evaluate=False)


#: the buckets of the data-parallel reductions and gathers, in elements (parameters), by framework:
#: Megatron-LM megatron/core/distributed/distributed_data_parallel.py (bucket_size = max(40000000,
#: 1000000 × the data-parallel group's size) when overlapped; that group is without context parallelism, d, though
#: the reduction runs over d·c: get_data_parallel_world_size() at f2e5db402c, process_groups_config.py's dp_group at
#: d98e8a64).  Stages after the first run one bucket there (pp_rank > 0 disables bucketing), started as their last
#: backward ends, (p − 1) backwards before the first stage's: the first stage's last bucket is what trails the step,
#: and what is counted.  DeepSpeed's and
#: FSDP's whole-model units keep the window rule (their reductions hide behind it, no bucket floor)
BUCKETS = {"megatron": lambda: sp.Max(40_000_000, 1_000_000 * S.d, evaluate=False)}
#: the frameworks whose 1F1B pipeline (no interleaving) waits on each later stage's whole parameter all-gather while it
#: fills, one stage after another, under overlap_param_gather: Megatron-LM forces align_param_gather off without
#: virtual stages, so no param_sync_func starts a gather ahead (megatron/training/arguments.py and training.py at
#: d98e8a64), the distributed optimizer starts none after its step when it overlaps (megatron/core/optimizer/
#: distrib_optimizer.py, step_with_ready_grads), and a stage after the first holds one bucket (distributed_data_
#: parallel.py: pp_rank > 0 disables bucketing), so its gather is dispatched and waited on in the forward pre-hook of
#: its first micro-batch (param_and_grad_buffer.py, finish_param_sync), after the stage before it sent that micro-batch
FILL_GATHER_FRAMEWORKS = ("megatron",)


#: the frameworks whose edge buckets hold the word embedding whole: a Megatron-LM bucket closes after the
#: parameter that fills it, never splitting one (param_and_grad_buffer.py at NVIDIA/Megatron-LM f2e5db402c,
#: ParamAndGradBuffer: the parameters in reverse order, a new bucket once its size is reached), so the first
#: stage's last bucket — the one the step waits on after the last backward — holds the word embedding, the
#: model's first parameter, its V·h/t elements however small the bucket size; and the distributed optimizer
#: gathers that same bucket first, dispatched after the step and waited on before the first forward
#: (distrib_optimizer.py there: _get_model_param_buffer_dp_views, "all-gathers to run first for the start of the
#: model"; step → _dispatch_gather_model_params(0)).  At least V·h/t: the rest of the bucket is not counted
EMBEDDING_BUCKET_FRAMEWORKS = ("megatron",)


def edge_bucket(framework_name: str, embeddings: bool):
    """The elements of the bucket that ends a step's reductions and starts its gathers on the first stage (one
    bucket of :data:`BUCKETS`, or at least the word embedding's V·h/t where :data:`EMBEDDING_BUCKET_FRAMEWORKS`
    hold it whole); None for a framework without buckets."""
    if framework_name not in BUCKETS:
        return None
    bucket = BUCKETS[framework_name]()
    if embeddings and framework_name in EMBEDDING_BUCKET_FRAMEWORKS:
        return sp.Max(bucket, S.V * S.h / S.t, evaluate=False)
    return bucket


def dp_overlap_of(framework_name: str, zero: int, dp_overlap: bool | None = None) -> bool:
    """Whether the data-parallel gradient reductions overlap the backward (overlap_grad_reduce): as the
    framework's row says at this ZeRO stage (symcomm.training.frameworks: DP_OVERLAP_SOURCE), unless given."""
    return F.framework(framework_name).dp_overlap(zero) if dp_overlap is None else bool(dp_overlap)


def param_gather_overlap_of(framework_name: str, zero: int, given: bool | None = None) -> bool:
    """Whether the parameter all-gathers hide behind compute (overlap_param_gather): as the framework's
    row says at this ZeRO stage (PARAM_GATHER_SOURCE), unless given."""
    return F.framework(framework_name).param_gather_overlap(zero) if given is None else bool(given)


def p2p_overlap_of(framework_name: str, schedule: str, given: bool | None = None) -> bool:
    """Whether the pipeline sends hide behind the chunks' compute (p2p_overlap): as the framework's row
    says for this schedule (P2P_OVERLAP_SOURCE: Megatron-LM, interleaved only), unless given."""
    return F.framework(framework_name).p2p_overlap(schedule) if given is None else bool(given)


def a2a_overlap_of(framework_name: str, given: bool | None = None) -> bool:
    """Whether the expert all-to-alls hide behind another micro-batch's compute (a2a_overlap): as the
    framework's row says (A2A_OVERLAP_SOURCE: off by default everywhere), unless given."""
    return F.framework(framework_name).a2a_overlap if given is None else bool(given)


#: the frameworks whose pipeline is PyTorch's torch.distributed.pipelining, which reduces an FSDP2 stage's gradients
#: only after the stage's last micro-batch's backward (:data:`PIPELINED_POST_BACKWARD`)
PIPELINED_POST_BACKWARD_FRAMEWORKS = ("fsdp2",)
#: what the pipelined post-backward follows
PIPELINED_POST_BACKWARD = (
    "pytorch/pytorch torch/distributed/pipelining/stage.py (as stored at 88fa1e71; the benchmark's torch 1963fc8 not "
    "read), _PipelineStageBase.backward_maybe_with_nosync: for an FSDPModule every micro-batch's backward runs under "
    "set_requires_gradient_sync(False) and set_reshard_after_backward(False); when last_backward, run_post_backward "
    "then calls post_backward() on every FSDP parameter group of the stage (their reduce-scatters) and "
    "_root_post_backward_final_callback() (the default stream waits on them); "
    "torch/distributed/pipelining/schedules.py: backward_one_chunk(..., last_backward=True) only for a stage's "
    "micro-batch n_microbatches − 1; pytorch/torchtitan torchtitan/parallelisms/parallelize_llama.py at 9dec370a "
    "(apply_fsdp: fully_shard on every transformer block and the stage's root, reshard_after_forward False under PP)")


def pipelined_post_backward(data, grad_overlap: bool) -> bool:
    """True when the gradient reduce-scatters of a pipeline stage run after its last backward
    (:data:`PIPELINED_POST_BACKWARD`): ZeRO-3 per layer of a framework in
    :data:`PIPELINED_POST_BACKWARD_FRAMEWORKS`, overlapped when it can be; the pipeline's stage reduces once per
    schedule whatever the run's grad_reduce (axes.DataSchedule.under_pipeline)."""
    return (data.zero == 3 and data.shard_unit == "layer" and grad_overlap
            and data.framework in PIPELINED_POST_BACKWARD_FRAMEWORKS)


@functools.lru_cache(maxsize=None)     # a subs over a whole time, the same ones for every option combination
def latency(x: sp.Expr) -> sp.Expr:
    """The a·α part of a time: what a collective pays however small its message (β, γ set to 0).  Strict:
    a time is an expression or a number, never text."""
    return sp.sympify(x, strict=True).subs({S.beta: 0, S.gamma: 0, S.beta_inter: 0})


def hidden_behind(comm, window, floor=0):
    """(exposed, window left): ``comm`` overlapped with ``window`` seconds of compute, ``floor`` of
    it never hiding; the window it used is gone for the next communication that shares it."""
    exposed = sp.Max(floor, comm - window, evaluate=False) if floor != 0 else max0(comm - window)
    return exposed, max0(window - (comm - exposed))


def _bucketed(terms, bucket):
    """The terms with each message cut to one bucket (the whole message when it is smaller)."""
    return [replace(x, message=sp.Min(x.message, bucket, evaluate=False)) for x in terms]


#: how much slower the compute runs while a collective overlaps it: Lee et al. 2025, "Characterizing
#: Compute-Communication Overlap in GPU-Accelerated Distributed Deep Learning: Performance and Power Implications"
#: (arXiv:2507.03114), its abstract: overlapped with communication, compute kernels took 18.9 % longer on average
#: (up to 40.0 %) than alone, over GPT and Llama training on 4 A100s, H100s, MI250s and MI210s (NCCL's and RCCL's
#: kernels share the SMs and the HBM with the GEMMs).  A published mean, not fitted here.
OVERLAP_SLOWDOWN = sp.Rational(189, 1000)
#: what the slowdown follows
OVERLAP_SLOWDOWN_SOURCE = ("Lee, Oh, Kim, Go, Park, Mahajan 2025, arXiv:2507.03114 (abstract: an average "
                           "computational slowdown of 18.9 %, at most 40.0 %, when compute overlaps communication)")


def with_slowdown(exposed, alone):
    """The critical-path seconds of communication that takes ``alone`` seconds by itself, of which ``exposed`` waits:
    the exposed part, plus what the hidden part (alone − exposed) slows the compute it runs beside.  Compute that
    runs σ = :data:`OVERLAP_SLOWDOWN` slower for the X seconds a collective overlaps it finishes σ/(1 + σ)·X later
    than alone (X of the overlap do X/(1 + σ) of the compute's work).  Exact where the compute outlasts the
    communication; where the communication outlasts it the slowed compute hides partly behind the communication's
    own tail, so this is an upper bound there."""
    return exposed + OVERLAP_SLOWDOWN / (1 + OVERLAP_SLOWDOWN) * (alone - exposed)


def exposed_data_parallel(dp_terms, time_of, data, m, compute, *, grad_overlap: bool,
                          param_overlap: bool, pipeline_chunks=None, embeddings: bool = False,
                          interleaved_chunks=None) -> sp.Expr:
    """:func:`waiting_data_parallel` with the slowdown its hidden part causes the compute (:func:`with_slowdown`),
    and the 1F1B fill's waits on the later stages' gathers (:func:`fill_gather_waits`): the data-parallel
    communication's seconds on the step's critical path."""
    waiting = waiting_data_parallel(dp_terms, time_of, data, m, compute, grad_overlap=grad_overlap,
                                    param_overlap=param_overlap, pipeline_chunks=pipeline_chunks,
                                    embeddings=embeddings, interleaved_chunks=interleaved_chunks)
    fill = fill_gather_waits(dp_terms, time_of, data, param_overlap=param_overlap,
                             interleaved_chunks=interleaved_chunks)
    return (with_slowdown(waiting, time_of(dp_terms)) if dp_terms else waiting) + fill


def waiting_data_parallel(dp_terms, time_of, data, m, compute, *, grad_overlap: bool,
                          param_overlap: bool, pipeline_chunks=None, embeddings: bool = False,
                          interleaved_chunks=None) -> sp.Expr:
    """The exposed time of the data-parallel ``dp_terms`` (``time_of`` prices a list of terms) with
    ``m`` micro-batches of ``compute`` (a MicroBatchCompute) each, under the framework's ``data``
    schedule; ``grad_overlap``: the gradient reductions hide behind the backward (overlap_grad_reduce);
    ``param_overlap``: the parameter all-gathers hide behind the compute (overlap_param_gather);
    ``pipeline_chunks`` (the chunks a GPU of the first pipeline stage holds, None for a stage whose reductions
    end no step): where the pipeline's post-backward runs them after the last backward
    (:func:`pipelined_post_backward`), one chunk's reductions exposed in full when p ≥ 2; ``embeddings``: the
    stage whose edge bucket counts (the first) holds the word embedding (:func:`edge_bucket`);
    ``interleaved_chunks``: Megatron's model chunks per stage (v, 1 without interleaving), whose per-chunk
    synchronisation widens the windows of a reduction and a gather made once per step (:data:`INTERLEAVED_SYNC`)."""
    if data.zero == 3 and data.shard_unit == "layer":
        overlapped = _per_layer_exposed(dp_terms, time_of, data, m, compute, grad_overlap, param_overlap)
        if pipeline_chunks is None or not pipelined_post_backward(data, grad_overlap):
            return overlapped
        reductions = [x for x in dp_terms if x.phase == "backward" and x.primitive != "all_gather"]
        others = [x for x in dp_terms if x not in reductions]
        after = (_per_layer_exposed(others, time_of, data, m, compute, grad_overlap, param_overlap)
                 + time_of(reductions) / pipeline_chunks)
        return sp.Piecewise((after, sp.Ge(S.p, 2, evaluate=False)), (overlapped, sp.true), evaluate=False)
    bucket = edge_bucket(data.framework, embeddings)
    reductions = [x for x in dp_terms if x.phase == "backward" and x.primitive != "all_gather"]
    reduce_t = time_of(reductions)
    gather_forward = time_of([x for x in dp_terms if x.phase == "forward" and x.primitive == "all_gather"])
    gather_backward = time_of([x for x in dp_terms if x.phase == "backward" and x.primitive == "all_gather"])
    after_step = [x for x in dp_terms if x.phase == "after the step" and x.primitive == "all_gather"]
    rest_t = time_of([x for x in dp_terms if x.phase not in ("forward", "backward") and x not in after_step])
    steps = data.gradient_reductions(m)
    # what hides behind one window shares it (and the links): the forward gathers behind the m forwards;
    # the backward gathers and, when overlapped, the reductions behind the backwards they follow (every
    # micro-batch's when reduced per micro-batch, the last one's when reduced once per step)
    # Megatron's interleaved schedule syncs each model chunk apart (INTERLEAVED_SYNC): the window of a reduction
    # or a gather made once per step is (p(v - 1) + 1)/v micro-batches' backward or forward, 1 with v = 1
    spread = (sp.Min(S.p, m, evaluate=False) * (interleaved_chunks - 1) + 1) / interleaved_chunks \
        if interleaved_chunks is not None and data.framework in CHUNK_SYNC_FRAMEWORKS and steps != m else sp.Integer(1)
    backward_window = (m if steps == m else spread) * compute.backward
    hiding_gathers = gather_backward if param_overlap else sp.Integer(0)
    if grad_overlap:
        exposed_backward = max0(hiding_gathers + reduce_t - backward_window)
        if bucket is not None and reductions:
            # the last bucket's reduction starts when the backward ends: nothing is left to hide it
            exposed_backward = sp.Max(time_of(_bucketed(reductions, bucket)),
                                      hiding_gathers + reduce_t - backward_window, evaluate=False)
    else:
        exposed_backward = max0(hiding_gathers - m * compute.backward) + reduce_t
    if param_overlap:
        exposed_forward = max0(gather_forward - m * compute.forward)
    else:
        exposed_forward = gather_forward + gather_backward
    exposed_after = time_of(after_step)
    if param_overlap and after_step:
        # the next step's first forward waits on the first bucket, the others gather behind it
        exposed_after = (sp.Max(time_of(_bucketed(after_step, bucket)), exposed_after - spread * compute.forward,
                                evaluate=False)
                         if bucket is not None else max0(exposed_after - spread * compute.forward))
    return exposed_forward + exposed_backward + exposed_after + rest_t


def fill_gather_waits(dp_terms, time_of, data, *, param_overlap: bool, interleaved_chunks=None) -> sp.Expr:
    """The seconds a 1F1B pipeline's fill waits on the later stages' parameter all-gathers under overlap_param_gather
    (:data:`FILL_GATHER_FRAMEWORKS`): with p ≥ 2 each of the p − 1 stages after the first waits on its whole gather
    as its first micro-batch arrives, one after another, counted at this stage's gather (the post-step all-gather of
    ``dp_terms``); nothing hides them, so no slowdown either.  0 otherwise (interleaved: each chunk's gather started
    ahead, :data:`INTERLEAVED_SYNC`)."""
    if not param_overlap or data.framework not in FILL_GATHER_FRAMEWORKS or interleaved_chunks != 1:
        return sp.Integer(0)
    after_step = [x for x in dp_terms if x.phase == "after the step" and x.primitive == "all_gather"]
    if not after_step:
        return sp.Integer(0)
    return sp.Piecewise(((S.p - 1) * time_of(after_step), sp.Ge(S.p, 2, evaluate=False)), (0, sp.true),
                        evaluate=False)


def _per_layer_exposed(dp_terms, time_of, data, m, compute, grad_overlap, param_overlap) -> sp.Expr:
    """ZeRO-3 with one all-gather and one reduce-scatter per layer (FSDP2, Megatron-FSDP): the first
    gather of each forward and the last reduce-scatter of each reduction in full, the latency of every
    other overlapped collective, and their bandwidth beyond the compute of their own phase (:data:`PER_LAYER_PHASES`):
    a forward's gathers behind the forwards that gather, the backward's gathers behind the m backwards, the
    reductions behind the backwards that reduce (every one per micro-batch; the last one when reduced once per step)."""
    gathers = [x for x in dp_terms if x.primitive == "all_gather" and x.phase in ("forward", "backward")]
    reductions = [x for x in dp_terms if x.phase == "backward" and x.primitive != "all_gather"]
    rest = [x for x in dp_terms if x not in gathers and x not in reductions]
    exposed = time_of(rest)
    overlapped = (gathers if param_overlap else []) + (reductions if grad_overlap else [])
    exposed += sum((time_of([x]) for x in dp_terms if x not in rest and x not in overlapped), sp.Integer(0))
    if not overlapped:
        return exposed
    # one layer's collective per pass: the first gather of every forward that gathers, the last reduce-scatter of
    # every reduction (a per-layer term's count is passes × layers); their latency is in the floor already
    first = sum((time_of([replace(x, count=1)]) for x in overlapped if x in gathers and x.phase == "forward"),
                sp.Integer(0)) * data.forward_gathers(m)
    last = sum((time_of([replace(x, count=1)]) for x in overlapped if x in reductions),
               sp.Integer(0)) * data.gradient_reductions(m)

    def bandwidth(terms, edge=sp.Integer(0)):
        total = time_of(terms) if terms else sp.Integer(0)
        return total - latency(total) - (edge - latency(edge))

    total = time_of(overlapped)
    forward = bandwidth([x for x in overlapped if x in gathers and x.phase == "forward"], first)
    backward_gathers = bandwidth([x for x in overlapped if x in gathers and x.phase == "backward"])
    reduced = bandwidth([x for x in overlapped if x in reductions], last)
    # the backwards that reduce carry their share of the backward's gathers beside the reductions; the others hide
    # their own gathers behind their own backwards
    r = data.gradient_reductions(m)
    exposed += (latency(total) + (first - latency(first)) + (last - latency(last))
                + max0(forward - data.forward_gathers(m) * compute.forward)
                + max0(backward_gathers * r / m + reduced - r * compute.backward)
                + max0(backward_gathers * (m - r) / m - (m - r) * compute.backward))
    return exposed


#: why each phase's collectives hide behind their own phase's compute only: FSDP2 issues a layer's all-gather in the
#: forward when the layer before it runs (implicit prefetch) and in the backward one layer ahead (explicit backward
#: prefetch), and a layer's reduce-scatter after its gradients (post_backward): no collective of one phase waits in
#: another phase's compute (torch 2.13.0 as this project installs it: torch/distributed/fsdp/_fully_shard/
#: _fsdp_state.py, _pre_forward's forward prefetch and _pre_backward's backward prefetch; _fsdp_param_group.py,
#: pre_backward's _backward_prefetch and post_backward); Megatron-FSDP's all-gathers are prefetched in the pass that
#: runs them, in forward-pass order in the forward (NVIDIA/Megatron-LM megatron/core/distributed/fsdp/src/
#: megatron_fsdp/megatron_fsdp.py at d98e8a64, _pre_forward_param_unshard: prefetch_order FORWARD_PASS_ORDER, that
#: prefetch off for a recompute's forward inside the backward, which the backward's own order serves)
PER_LAYER_PHASES = ("torch 2.13.0 torch/distributed/fsdp/_fully_shard/_fsdp_state.py and _fsdp_param_group.py; "
                    "NVIDIA/Megatron-LM megatron/core/distributed/fsdp/src/megatron_fsdp/megatron_fsdp.py at d98e8a64")


#: the frameworks whose context parallel is PyTorch's ring (torch.distributed.tensor.experimental, torchtitan)
TORCH_CP_FRAMEWORKS = ("fsdp2",)
#: what its overlap follows
TORCH_CP_OVERLAP = ("pytorch/pytorch torch/distributed/tensor/experimental/_attention.py (late 2024): "
                    "_templated_ring_attention issues the K, V all-gather (_AllGatherRotater, rotate_method allgather, "
                    "torchtitan's default) before step 0's SDPA on the local causal block and waits on it at step 1; "
                    "_templated_ring_attention_backward likewise, and sends each step's dK, dV (all-to-all rotater) after "
                    "its SDPA backward, waiting on it after the next step's, the last one after the loop")


def torch_cp_exposed(cp_terms, time_of, m, compute):
    """The context-parallel communication of one micro-batch left on the critical path by PyTorch's ring
    (:data:`TORCH_CP_OVERLAP`), over the stage's layers: each K, V all-gather (forward, its recompute, backward)
    hides behind the first step's block, 1/c of the attention core's forward (backward) time with the load balance;
    the dK, dV reduction's c − 1 transfers behind the c − 1 later steps' backward, (c − 1)/c of it; the last transfer,
    dK, dV home to their owner, waited on after the loop: exposed in full."""
    def per_micro(phase, what):
        return time_of([x for x in cp_terms if x.phase == phase and x.what == what]) / m

    exposed = sp.Integer(0)
    for phase, window in (("forward", compute.core_forward), ("forward recompute", compute.core_forward),
                          ("backward", compute.core_backward)):
        exposed += max0(per_micro(phase, "K, V ring pass") - window / S.c)
    exposed += max0(per_micro("backward", "dK, dV ring reduction") - compute.core_backward * (S.c - 1) / S.c)
    known = ("K, V ring pass", "dK, dV ring reduction")
    return exposed + time_of([x for x in cp_terms if x.what not in known]) / m


#: the sequence collectives of a dense block that async TP fuses with a GEMM (symcomm.training.axes: one all-gather
#: and one reduce-scatter per attention and per MLP block and pass)
SEQUENCE_COLLECTIVES = ("sequence all-gather", "sequence reduce-scatter")


def _paired(term, time_of, gemms, exposed_beside) -> sp.Expr:
    """The exposed seconds of ``term``'s collectives, each beside a GEMM of one layer: count/2 beside each of ``gemms``
    (the attention block's and the MLP's), ``exposed_beside(one collective's seconds, its GEMM's)`` each.  One
    collective priced alone, not the term's total over its count: a stage kind without layers has count 0."""
    one = time_of([replace(term, count=sp.Integer(1))])
    return term.count / 2 * sum((exposed_beside(one, g) for g in gemms), sp.Integer(0))


def tp_exposed(tp_terms, time_of, m, window, fused=None):
    """(the tensor-parallel communication of one micro-batch left on the critical path under tp_overlap=1, the
    window of compute left for the next overlapped axis).  Without ``fused`` (Transformer Engine's userbuffers,
    :data:`TP_OVERLAP`): all of it behind the micro-batch's compute, one chunk of t exposed.  With ``fused`` =
    {(pass, primitive): (attention block's, MLP's)}, the forward seconds of the GEMM each sequence collective of one
    layer is fused with on one GPU (PyTorch's async TP, :data:`ASYNC_TP`, compute.async_tp_fusion): each sequence
    collective hides only behind the GEMM it is fused with — in the forward an all-gather feeds the column-parallel GEMMs and a reduce-scatter follows the
    row-parallel ones; in the backward the roles swap (a column-parallel GEMM's input gradient is reduce-scattered,
    a row-parallel GEMM's output gradient all-gathered before its input-gradient GEMM, of the forward's FLOPs); the
    weight-gradient GEMMs are fused with none.  A collective of C seconds fused with a GEMM of G, both in t chunks,
    leaves max(C/t, C − G·(t − 1)/t) exposed: one chunk's transfer never hides (the reduce-scatter's last, after
    the last GEMM chunk; the all-gather's local copy and barrier before the first), the other t − 1 hide behind the
    other GEMM chunks as far as they last; a collective Inductor leaves unfused (G = 0, compute.ASYNC_TP_FUSION) is
    exposed whole.  The other tensor-parallel collectives (embedding, LM head, loss) as without ``fused``."""
    if fused is None:
        total = time_of(tp_terms) / m
        return hidden_behind(total, window, total / S.t)
    paired = [x for x in tp_terms if x.what in SEQUENCE_COLLECTIVES]
    rest = [x for x in tp_terms if x.what not in SEQUENCE_COLLECTIVES]
    exposed, moved = sp.Integer(0), sp.Integer(0)
    for term in paired:
        gemms = fused["backward" if term.phase == "backward" else "forward", term.primitive]
        exposed += _paired(term, time_of, gemms,
                           lambda one, g: sp.Max(one / S.t, one - g * (S.t - 1) / S.t, evaluate=False))
        moved += time_of([term])
    exposed, moved = exposed / m, moved / m
    window = max0(window - (moved - exposed))
    rest_time = time_of(rest) / m
    if not rest:
        return exposed, window
    rest_exposed, window = hidden_behind(rest_time, window, rest_time / S.t)
    return exposed + rest_exposed, window


#: the backward collectives of a column-parallel linear that run beside one of its GEMMs under tp_backward_overlap
#: (F.TP_BACKWARD_OVERLAP_SOURCE): the input's re-all-gather beside the input-gradient GEMM, the input gradient's
#: reduce-scatter (all-reduce without sequence parallel) beside the weight-gradient GEMM
ASYNC_BACKWARD = frozenset(("input re-all-gather for the weight gradient", "sequence reduce-scatter",
                            "activation all-reduce"))


def tp_backward_overlap_of(framework_name: str, given: bool | None = None) -> bool:
    """Whether the column-parallel linears run their backward collectives asynchronously (tp_backward_overlap): as
    the framework's row says (TP_BACKWARD_OVERLAP_SOURCE: Megatron-Core's and Transformer Engine's linears), unless
    given."""
    return F.framework(framework_name).tp_backward_overlap if given is None else bool(given)


def tp_backward_exposed(tp_terms, time_of, m, window, column_gemms):
    """(the tensor-parallel communication of one micro-batch on the critical path without tp_overlap, the window
    left) where the column-parallel linears start their backward collectives asynchronously (:data:`ASYNC_BACKWARD`):
    each such collective of C seconds hides behind the one GEMM it runs beside, the input-gradient or the
    weight-gradient GEMM, each of the forward GEMM's FLOPs (G seconds): max(0, C − G) exposed.  ``column_gemms`` =
    (QKV's, FC1's) forward seconds per micro-batch on one GPU (compute.tp_fused_gemm_seconds): of a dense layer's
    two such collectives of each kind one is the attention block's, one the MLP's.  The rest (the forward's, the
    row-parallel linears' gradient all-gathers, the LM head's, a recompute's) stays on the path whole."""
    exposed, hidden = sp.Integer(0), sp.Integer(0)
    for term in tp_terms:
        total = time_of([term])
        if term.phase == "backward" and term.what in ASYNC_BACKWARD:
            left = _paired(term, time_of, column_gemms, lambda one, g: max0(one - g))
            exposed += left
            hidden += total - left
        else:
            exposed += total
    return exposed / m, max0(window - hidden / m)


def tp_on_path(run, tp_terms, time_of, m, window):
    """(the tensor-parallel communication of one micro-batch on the critical path, the window of compute left for the
    next overlapped axis) as the run overlaps it: tp_overlap=1 :func:`tp_exposed`; else, where the framework's linears
    start their backward collectives asynchronously (:func:`tp_backward_overlap_of`) and the layers are the dense
    block's (compute.tp_fused_gemm_seconds; not a Mamba hybrid's), :func:`tp_backward_exposed`; else all of it."""
    if run.tp_overlap:
        return tp_exposed(tp_terms, time_of, m, window, async_tp_gemms(run))
    gemms = None
    if tp_backward_overlap_of(run.framework, run.tp_backward_overlap) and not run.mamba:
        gemms = tp_fused_gemm_seconds(run)
    if gemms is None:
        return time_of(tp_terms) / m, window
    return tp_backward_exposed(tp_terms, time_of, m, window, gemms[0])


def micro_batch_on_path(run, by_axis: dict, comm: dict, time_of, m, micro) -> dict:
    """The tensor, context, expert and pipeline communication of one micro-batch on the critical path, per axis, of
    a stage whose terms are ``by_axis`` (their times ``comm``) and whose micro-batch compute is ``micro``: the
    overlapped axes hide behind that compute one after another, each in the window the previous ones left
    (:func:`hidden_behind`): PyTorch's ring its K, V passes behind its own steps (:func:`torch_cp_exposed`), tp as
    the run overlaps it (:func:`tp_on_path`), ep in the four phases Megatron pairs with another micro-batch's compute
    (a2a_overlap, :func:`a2a_exposed`), pp sends behind
    the chunks' compute (p2p_overlap).  One rule for the even split (steptime) and each stage kind of an uneven one
    (stagestep)."""
    on_path = {axis: comm.get(axis, sp.Integer(0)) / m for axis in ("tp", "cp", "ep", "pp")}
    if run.framework in TORCH_CP_FRAMEWORKS and run.cp != "ulysses" and "cp" in by_axis:
        on_path["cp"] = torch_cp_exposed(by_axis["cp"], time_of, m, micro)
    window = micro.total
    if "tp" in comm:
        on_path["tp"], window = tp_on_path(run, by_axis["tp"], time_of, m, window)
    if a2a_overlap_of(run.framework, run.a2a_overlap) and "ep" in comm:
        on_path["ep"], window = a2a_exposed(on_path["ep"], micro, window)
    if p2p_overlap_of(run.framework, run.schedule, run.p2p_overlap) and "pp" in comm:
        on_path["pp"], window = hidden_behind(on_path["pp"], window)
    # what waits, and what the hidden rest slows the micro-batch's compute by (with_slowdown)
    return {axis: with_slowdown(x, comm.get(axis, sp.Integer(0)) / m) for axis, x in on_path.items()}


#: what a2a_overlap's phases follow
A2A_PHASES = ("Megatron-LM megatron/core/models/common/model_chunk_schedule_plan.py at d98e8a64, "
              "TransformerLayerSchedulePlan.run: one layer's forward of a micro-batch and another layer's backward "
              "of the previous one, the communication stream running combine_bwd | dispatch_fwd -> dispatch_bwd | "
              "combine_fwd beside the compute stream's pre_dispatch_fwd | mlp_bwd -> mlp_bwd_dw -> mlp_fwd | "
              "pre_dispatch_bwd")


def a2a_exposed(ep, micro, window):
    """(exposed, window left) of a micro-batch's expert all-to-alls ``ep`` under a2a_overlap, as Megatron pairs them
    (:data:`A2A_PHASES`): each of the four (the forward's dispatch and combine, the backward's two) runs beside one
    piece of the other micro-batch's compute and hides behind that piece alone: the combine's gradient behind the
    forward's pre-dispatch part (everything but the routed experts' grouped GEMMs), the dispatch behind the experts'
    backward, the dispatch's gradient behind the experts' forward, the combine behind the pre-dispatch part's
    backward.  exposed = Σ max(0, ep/4 − piece) over the four pieces (the four taken alike: ep/4 each), never less
    than ep − the whole micro-batch's compute; the window it used is gone for the pipeline's sends."""
    quarter = ep / 4
    pieces = (micro.forward - micro.expert_forward, micro.expert_backward, micro.expert_forward,
              micro.backward - micro.expert_backward)
    exposed = sum((max0(quarter - x) for x in pieces), sp.Integer(0))
    return exposed, max0(window - (ep - exposed))


def async_tp_gemms(run):
    """The GEMMs each tensor-parallel collective hides behind under tp_overlap=1: for a framework whose TP overlap is
    PyTorch's async TP (:data:`ASYNC_TP_FRAMEWORKS`), the dense block's, by pass and collective
    (compute.async_tp_fusion: 0 where Inductor does not fuse it); None (the whole micro-batch, Transformer Engine's
    userbuffers) otherwise."""
    return async_tp_fusion(run) if run.framework in ASYNC_TP_FRAMEWORKS else None
