"""Parallel strategies, composed from the catalog's collectives.

A strategy is a tuple of :class:`Term` values — which primitive, which catalog
algorithm, on which group, with which message, how many times per training step — and
its cost is the role-wise sum of the terms' catalog costs (:meth:`Cost.sum`).  No total
is typed by hand: every count below is a number of collectives, and every volume comes
from :mod:`symcomm.collectives.algorithms` with N → group, M → message.

Conventions (ARCHITECTURE.md, "Conventions"; stated once here and repeated in each
strategy's ``convention``):

- elements, never bytes; M of a term is the full unsharded buffer of that collective;
- per *training step* (one optimizer step), forward + backward, for the whole model;
  a term's ``phase`` (printed in its label) says which pass it belongs to;
- exact (N−1)/N forms; limits are claims in the chapters, never substituted here;
- ``send`` = elements sent by the busiest GPU, assuming the same GPU is busiest in every
  term (true for the symmetric collectives used here; for pipelines it is an interior
  stage); ``total`` = elements sent summed over all GPUs (a term's total × its groups);
- time = Σ of the terms' α-β-γ times, no overlap of communication with computation;
- a single strategy's group is N; b is the batch of one step for the group described
  (EP: the batch each rank routes); hybrid layouts take the global batch and divide by d.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import Callable, Mapping

import sympy as sp

from ..core import symbols as S
from ..core import rules
from ..collectives.algorithms import SOURCE_ARTICLE, algorithm, algorithms_of
from ..core.cost import Cost
from .frameworks import (DEEPSPEED_ENGINE, DEEPSPEED_STAGE3, FSDP_RUNTIME, GRAD_REDUCE,
                         MEGATRON_DDP, MEGATRON_FP32_GRADS, MEGATRON_SP_REGATHER, check_stage, framework)
from ..core.rules import Rule, When
from .settings import (HYBRID_OPTIONS, RECOMPUTE_OPTION, Option, RunSetting, flag as _flag,
                       reruns_forward)

Phi, b, s, h, N, G = S.Phi, S.b, S.s, S.h, S.N, S.G
L, m, v, k, f, E, h_kv, a = S.L, S.m, S.v, S.k, S.f, S.E, S.h_kv, S.a
d, t, p, c, e, L_moe, Phi_E, V = S.d, S.t, S.p, S.c, S.e, S.L_moe, S.Phi_E, S.V

RAJBHANDARI = "Rajbhandari, Rasley, Ruwase & He 2020, ZeRO: Memory Optimizations Toward Training Trillion Parameter Models, SC20"
ZHAO = "Zhao et al. 2023, PyTorch FSDP: Experiences on Scaling Fully Sharded Data Parallel, VLDB 16(12)"
SHOEYBI = "Shoeybi et al. 2019, Megatron-LM: Training Multi-Billion Parameter Language Models Using Model Parallelism, arXiv:1909.08053"
NARAYANAN = "Narayanan et al. 2021, Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM, SC21"
KORTHIKANTI = "Korthikanti et al. 2022, Reducing Activation Recomputation in Large Transformer Models, arXiv:2205.05198"
HUANG = "Huang et al. 2019, GPipe: Efficient Training of Giant Neural Networks using Pipeline Parallelism, NeurIPS"
JACOBS = "Jacobs et al. 2023, DeepSpeed Ulysses: System Optimizations for Enabling Training of Extreme Long Sequence Transformer Models, arXiv:2309.14509"
LIU = "Liu, Zaharia & Abbeel 2023, Ring Attention with Blockwise Transformers for Near-Infinite Context, arXiv:2310.01889"
FEDUS = "Fedus, Zoph & Shazeer 2021, Switch Transformers, JMLR 23(120)"
LEPIKHIN = "Lepikhin et al. 2020, GShard: Scaling Giant Models with Conditional Computation and Automatic Sharding, arXiv:2006.16668"

#: what the frameworks execute, by file (read at github.com/NVIDIA/Megatron-LM, microsoft/DeepSpeed, pytorch/pytorch);
#: the data-parallel ones (DEEPSPEED_*, FSDP_RUNTIME, MEGATRON_DDP, _SP_REGATHER, _FP32_GRADS) sit in symcomm.training.frameworks
MEGATRON_EMBEDDINGS = ("Megatron-LM megatron/core/tensor_parallel/layers.py (VocabParallelEmbedding: output "
                       "all-reduced over t, reduce-scattered with sequence parallel), mappings.py "
                       "(copy_to_tensor_model_parallel_region: the LM head's input gradient all-reduced in the "
                       "backward), cross_entropy.py (VocabParallelCrossEntropy: all-reduces of the logits' max, the "
                       "target logit and the sum of exponentials, b·s each), megatron/core/distributed/"
                       "finalize_model_grads.py (tied embeddings: the first and last stages all-reduce the "
                       "embedding gradient)")
MEGATRON_MOE_TP = ("Megatron-LM megatron/core/transformer/moe/token_dispatcher.py, MoEAlltoAllTokenDispatcher "
                   "(moe_token_dispatcher_type=alltoall): each rank routes its own sequence-parallel tokens, "
                   "all-to-alls them over the expert-parallel group (token_dispatch), all-gathers what it received "
                   "over the expert-tensor-parallel group (dispatch_postprocess), reduce-scatters the experts' "
                   "partial outputs over that group (combine_preprocess) and all-to-alls them back "
                   "(token_combine); the backward runs the transposes (tensor_parallel/mappings.py: an all-gather's "
                   "gradient is a reduce-scatter and back). The experts' linears communicate nothing themselves "
                   "(moe/experts.py, extensions/transformer_engine.py: explicit_expert_comm), and the MoE layer "
                   "stands where the dense MLP was (transformer/transformer_layer.py), so the MLP's sequence-parallel "
                   "all-gather, reduce-scatter and backward re-all-gather do not run. parallel_state.py: the expert "
                   "grid is ordered tp-ep-dp-pp with expert_tensor_parallel_size defaulting to the tensor-parallel "
                   "size (the expert-tensor-parallel group is then the TP group; expert data parallel = the d·c/e "
                   "ranks holding the same experts)")
MEGATRON_RECOMPUTE = ("Megatron-LM megatron/core/recompute.py (checkpointed_forward: full recompute wraps chunks of "
                      "whole transformer layers) and megatron/core/tensor_parallel/random.py (CheckpointFunction."
                      "backward runs the layers' forward again before their backward): every forward collective of "
                      "the layers runs twice — tensor/sequence parallel, the context-parallel attention exchanges, "
                      "the MoE dispatch and combine; the embedding, LM head, pipeline sends and data-parallel "
                      "reductions lie outside the checkpointed layers and run once")
MEGATRON_INTERLEAVED = ("Megatron-LM megatron/core/pipeline_parallel/schedules.py, forward_backward_pipelining_with_"
                        "interleaving (v model chunks per stage; only the first chunk of the first stage receives no "
                        "activations and the last chunk of the last stage sends none) and p2p_communication.py (the "
                        "pipeline group is a ring: the last stage sends to the first)")
MEGATRON_SCATTER_GATHER = ("Megatron-LM megatron/p2p_communication.py, _communicate (scatter_gather_tensors_in_pipeline, "
                           "until the code moved into megatron/core in 2023 and the option was dropped): without "
                           "sequence parallel each TP rank sends 1/t of the activation (split_tensor_into_1d_equal_"
                           "chunks) and the receiver all-gathers it over the TP group (gather_split_1d_tensor); with "
                           "sequence parallel the option does nothing")
MEGATRON_MOE_SP = ("Megatron-LM megatron/core/transformer/moe/moe_layer.py, MoELayer.forward: training with "
                   "tensor_model_parallel_size > 1 and MoE requires sequence_parallel (ValueError otherwise)")

_TIME = S.TIME_SYMBOLS


# -- a term: one kind of collective, repeated ---------------------------------------------

#: The pass of a training step a term runs in (:attr:`Term.phase`), as its label spells it.
PASSES = ("forward", "forward recompute", "backward", "after backward", "after the step",
          "after the optimizer step")


@dataclass(frozen=True)
class Term:
    """``count`` × the catalog's ``algorithm`` of ``primitive`` on ``group`` ranks, message M = ``message``.

    ``groups`` is how many such groups run side by side (it multiplies ``total`` only; it
    may be fractional when copies differ, e.g. the interleaved pipeline).  ``across_nodes``
    is True, False, or a relation such as ``t*c > G`` deciding the level once values are
    known: α, β land on α_inter, β_inter where it holds.  ``what`` names the collective in
    words and ``phase`` the pass it runs in (one of :data:`PASSES`, or "" for none); the
    :attr:`label` printed everywhere is "what (phase)".
    """

    primitive: str
    algorithm: str
    group: sp.Expr
    message: sp.Expr
    count: sp.Expr
    what: str
    groups: sp.Expr = sp.Integer(1)
    across_nodes: bool | sp.Basic = False
    axis: str = ""               # which parallel dimension the term belongs to (tp, dp, pp, ...)
    # the share of the per-GPU figures (send, recv, α, β, γ) that the busiest GPU carries,
    # where GPUs differ (a pipeline's end stages send one way only); total is unaffected
    busiest: sp.Expr = sp.Integer(1)
    phase: str = ""
    # the element type of the buffer when it is not the run's (--dtype): "fp32" for gradients Megatron
    # reduces in fp32; the formulas count its own elements, bytes use its size (:func:`cost_in_bytes_of`)
    dtype: str = ""
    # which pipeline stage's GPU the per-GPU figures describe, where stages differ: "interior" (a
    # pipeline's middle stage, sending both ways), "first", "last", "first and last"; "" = every stage alike
    stage: str = ""

    def __post_init__(self):
        if self.phase and self.phase not in PASSES:
            raise ValueError(f"unknown pass {self.phase!r} for a term; choose one of: {', '.join(PASSES)}")

    @property
    def label(self) -> str:
        """The term in words: "what (phase)", e.g. "parameter all-gather (forward)"."""
        return f"{self.what} ({self.phase})" if self.phase else self.what

    @property
    def cost(self) -> Cost:
        return _term_cost(self)


@functools.lru_cache(maxsize=None)
def _term_cost(term: Term) -> Cost:
    """A term's cost, computed once per distinct term (terms are immutable values)."""
    base = algorithm(term.primitive, term.algorithm).cost
    part = base.subs({N: sp.sympify(term.group, strict=True), S.M: sp.sympify(term.message, strict=True)}).times(term.count)
    total = part.total * sp.sympify(term.groups, strict=True)
    part = replace(part.times(term.busiest), total=total)
    return _on_level(part, term.across_nodes)


def cost_in_bytes_of(terms, run_bytes) -> Cost:
    """The terms' summed cost counted in elements of ``run_bytes`` bytes: a term whose buffer has
    its own element type (``Term.dtype``) is widened by its size over ``run_bytes``, so that
    elements × ``run_bytes`` gives the bytes on the wire of every term."""
    from ..base.units import bytes_per_element

    def one(term):
        if not term.dtype or bytes_per_element(term.dtype) == run_bytes:
            return term.cost
        # run_bytes may be a symbol (the interactive page's bytes per element), so no sp.Rational
        return term.cost.widened(sp.Integer(bytes_per_element(term.dtype)) / run_bytes)
    return Cost.sum(one(term) for term in terms)


def _on_level(cost: Cost, across) -> Cost:
    if across is True or across is sp.true:
        return cost.across_nodes()
    if across is False or across is sp.false:
        return cost
    # a relation: keep both levels and let the values decide
    inter = cost.across_nodes()
    coeffs = []
    for sym in _TIME:
        both = sp.Piecewise((inter.coefficient(sym), across), (cost.coefficient(sym), True))
        if both != 0:
            coeffs.append((sym, both))
    return replace(cost, coefficients=tuple(coeffs))


# -- options: settings that are not symbols -----------------------------------------------

# Option (typed values, their text forms, aliases) is symcomm.training.settings.Option: one parse for every command.


# -- strategies -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Strategy:
    name: str
    title: str
    summary: str
    source: str
    convention: str
    options: dict[str, Option]
    build: Callable[..., tuple[Term, ...]]
    #: what the values must satisfy (symcomm.core.rules), some only under some options (rules.When)
    checks: tuple[Rule | When, ...] = ()
    extra: Callable[..., dict] | None = None

    def settings(self, **options) -> dict[str, object]:
        """Every option's typed value (flags bool, stages int, choices str), defaults filled in;
        ValueError on an unknown option or a value it does not allow."""
        unknown = [name for name in options if name not in self.options]
        if unknown:
            known = ", ".join(self.options) or "none"
            raise ValueError(f"unknown option {unknown[0]!r} for {self.name}; options: {known}")
        return {name: opt.resolve(options.get(name, opt.default)) for name, opt in self.options.items()}

    def resolve(self, **options) -> dict[str, str]:
        """Every option's value in its text form (as typed and printed), defaults filled in."""
        return {name: Option.text(value) for name, value in self.settings(**options).items()}

    def terms(self, **options) -> tuple[Term, ...]:
        return tuple(self.build(**self.settings(**options)))

    def cost(self, **options) -> Cost:
        """Σ of the terms' costs: send of the busiest GPU per step, total over all GPUs."""
        return Cost.sum(term.cost for term in self.terms(**options))

    def cost_where(self, keep: Callable[[Term], bool], **options) -> Cost:
        """Σ of the costs of the terms ``keep`` accepts (e.g. :func:`forward` ones)."""
        return Cost.sum(term.cost for term in self.terms(**options) if keep(term))

    def by_axis(self, **options) -> dict[str, Cost]:
        """The cost split by parallel dimension (tp, dp, pp, cp, ep), in term order."""
        costs: dict[str, list[Cost]] = {}
        for term in self.terms(**options):
            costs.setdefault(term.axis, []).append(term.cost)
        return {axis: Cost.sum(parts) for axis, parts in costs.items()}

    def extras(self, **options) -> dict[str, sp.Expr]:
        """Quantities beside the traffic, e.g. the pipeline bubble fraction."""
        return {} if self.extra is None else dict(self.extra(**self.settings(**options)))

    def validate(self, values: Mapping[sp.Symbol, object], **options) -> list[str]:
        """One line per problem with the values or options; empty when all is well."""
        problems = []
        for name, value in options.items():
            if name not in self.options:
                problems.append(f"unknown option {name!r} for {self.name}; options: {', '.join(self.options) or 'none'}")
                continue
            try:
                self.options[name].resolve(value)
            except ValueError as err:
                problems.append(str(err))
        if problems:
            return problems
        values = {sym: sp.sympify(val, strict=True) for sym, val in values.items()}
        return rules.problems(self.rules(**options), values)

    def rules(self, **options) -> tuple[Rule, ...]:
        """The rules in force with these options: the strategy's checks (those under
        :class:`~symcomm.core.rules.When` resolved), then a power-of-two group for each term whose
        algorithm needs one."""
        settings = self.settings(**options)
        groups = (_power_of_two(term) for term in self.build(**settings))
        return rules.in_force(self.checks, settings) + tuple(rule for rule in groups if rule is not None)


def busiest_stage(terms, stages=None) -> str:
    """In words, which pipeline stage's GPU the summed per-GPU figures of ``terms`` (one axis)
    describe; ``stages`` = the number of pipeline stages when known (1 and 2 have no interior)."""
    tags = {term.stage for term in terms}
    if stages == 1 and tags - {""}:
        return "the only stage"
    if tags & {"last", "first and last"}:
        return "the last pipeline stage"
    if "interior" in tags:
        return "either stage" if stages == 2 else "an interior pipeline stage"
    return "every stage alike"


def forward(term: Term) -> bool:
    """Terms of the forward pass (recomputation excluded): what many papers count."""
    return term.phase == "forward"


def _power_of_two(term: Term) -> Rule | None:
    """A term whose algorithm takes log₂ of its group needs a power-of-two group."""
    alg = algorithm(term.primitive, term.algorithm)
    if not alg.power_of_two:
        return None
    return rules.power_of_two(term.group, f"{term.group}={{x}} is not allowed: {term.algorithm} {term.primitive} "
                                          "needs a power-of-two group (2, 4, 8, ...)")


# -- data parallel ------------------------------------------------------------------------------

_ALL_REDUCE = tuple(alg.name for alg in algorithms_of("all_reduce"))
_DP_ALGORITHMS = _ALL_REDUCE + ("naive",)


def _dp(algorithm: str) -> tuple[Term, ...]:
    # "naive" is the source article's parameter-server form: the catalog's flat reduce + flat broadcast
    name = "flat" if algorithm == "naive" else algorithm
    return (Term("all_reduce", name, N, Phi, 1, "gradient all-reduce", axis="dp", phase="after backward"),)


# -- how a framework schedules the data-parallel collectives over m micro-batches -------------------

# the frameworks' rows (stages, gradient-reduce rule, defaults, sources): symcomm.training.frameworks.FRAMEWORKS


@dataclass(frozen=True)
class DataSchedule:
    """How many times per step the data-parallel collectives run, as a framework runs them.

    ``grad_reduce``: per_step (one reduction after the last micro-batch: Megatron's DDP and
    distributed optimizer, DeepSpeed ZeRO-0/1, FSDP/DDP inside ``no_sync``) or per_micro_batch
    (after every micro-batch's backward: DeepSpeed ZeRO ≥ 2, FSDP/DDP without ``no_sync``).
    ``reshard_after_forward`` (ZeRO-3 only): the parameters are freed after the forward and
    all-gathered again in the backward.
    """

    framework: str
    zero: int
    grad_reduce: str
    reshard_after_forward: bool
    grad_dtype: str = ""          # the gradient collectives' element type; "" = the run's (--dtype)

    def gradient_reductions(self, micro):
        return micro if self.grad_reduce == "per_micro_batch" else sp.Integer(1)

    def forward_gathers(self, micro):
        # a unit neither resharded after the forward nor after the backward (FSDP: no_sync and
        # reshard_after_forward=False, _should_free_in_backward) stays gathered for the whole step
        if not self.reshard_after_forward and self.grad_reduce == "per_step":
            return sp.Integer(1)
        return micro

    def backward_gathers(self, micro):
        return micro if self.reshard_after_forward else sp.Integer(0)

    @property
    def full_gradients(self) -> bool:
        """True when a GPU holds the unsharded gradient of its parameters through the step
        (ZeRO < 2, or a sharded stage that reduces once per step and so must accumulate it)."""
        return self.zero < 2 or self.grad_reduce == "per_step"

    @property
    def full_parameters(self) -> bool:
        """True when a GPU holds the unsharded parameters through forward and backward."""
        return self.zero < 3 or not self.reshard_after_forward


def data_schedule(framework_name: str, zero: int, grad_reduce: str | None = None,
                  reshard_after_forward: bool | None = None, grad_dtype: str | None = None) -> DataSchedule:
    """The schedule ``framework_name`` runs for ZeRO stage ``zero`` (its row of
    symcomm.training.frameworks.FRAMEWORKS), with any switch given explicitly (not None) overriding the
    framework's own choice; InputError naming the option for a stage the framework does not run."""
    row = framework(framework_name)
    check_stage(row, zero)
    grad_reduce = row.grad_reduce(zero) if grad_reduce is None else grad_reduce
    reshard = row.reshard_after_forward if reshard_after_forward is None else reshard_after_forward
    grad_dtype = row.grad_dtype if grad_dtype is None else grad_dtype
    return DataSchedule(row.name, zero, grad_reduce, bool(reshard), "" if grad_dtype == "same" else grad_dtype)


def _zero12(micro_batches: str = "1", grad_reduce: str = "per_micro_batch") -> tuple[Term, ...]:
    micro = m if micro_batches == "m" else sp.Integer(1)
    count = micro if grad_reduce == "per_micro_batch" else sp.Integer(1)
    return (
        Term("reduce_scatter", "ring", N, Phi, count, "gradient reduce-scatter", axis="dp", phase="after backward"),
        Term("all_gather", "ring", N, Phi, 1, "updated-parameter all-gather", axis="dp",
             phase="after the optimizer step"),
    )


def _zero1() -> tuple[Term, ...]:
    return _zero12()


def _zero3_on(group, message, groups=1, across=False, schedule: DataSchedule | None = None,
              micro=1) -> tuple[Term, ...]:
    """ZeRO-3 / FSDP: parameters all-gathered for the forward (and again for the backward
    when resharded after the forward), gradients reduce-scattered; counts per ``schedule``
    over ``micro`` micro-batches (default: one micro-batch, all three once)."""
    schedule = schedule or DataSchedule("deepspeed", 3, "per_micro_batch", True)
    out = [Term("all_gather", "ring", group, message, schedule.forward_gathers(micro), "parameter all-gather",
                groups, across, "dp", phase="forward")]
    backward = schedule.backward_gathers(micro)
    if backward != 0:
        out.append(Term("all_gather", "ring", group, message, backward, "parameter all-gather", groups, across,
                        "dp", phase="backward"))
    out.append(Term("reduce_scatter", "ring", group, message, schedule.gradient_reductions(micro),
                    "gradient reduce-scatter", groups, across, "dp", phase="backward", dtype=schedule.grad_dtype))
    return tuple(out)


def _zero3(micro_batches: str = "1", grad_reduce: str = "per_micro_batch",
           reshard_after_forward: bool = True) -> tuple[Term, ...]:
    micro = m if micro_batches == "m" else sp.Integer(1)
    return _zero3_on(N, Phi, schedule=DataSchedule("fsdp", 3, grad_reduce, reshard_after_forward), micro=micro)


def _hsdp() -> tuple[Term, ...]:
    # shard groups are the G ranks of a node; the N/G copies of each shard sit on N/G nodes
    inside = _zero3_on(G, Phi, groups=N / G, across=False)
    across = Term("all_reduce", "ring", N / G, Phi / G, 1, "shard-gradient all-reduce across replicas",
                  G, True, "dp", phase="backward")
    return inside + (across,)


# -- tensor and sequence parallel ----------------------------------------------------------------

def _passes(recompute: bool) -> tuple[tuple[str, int], ...]:
    """(pass, how many times it runs per layer): full recompute re-runs the forward."""
    out = [("forward", 1), ("backward", 1)]
    if recompute:
        out.insert(1, ("forward recompute", 1))
    return tuple(out)


def _tp_terms(group, message, layers, algorithm="ring", recompute=False, sp_on=False, groups=1,
              across=False, micro=1, regather=False, moe_layers=0) -> tuple[Term, ...]:
    """Megatron: per layer and pass, 2 all-reduces (attention out, MLP out) or, with SP,
    2 all-gathers + 2 reduce-scatters in their place; ``regather`` (SP only): the backward
    all-gathers the sequence-sharded inputs of the 2 column-parallel GEMMs (QKV, FC1) once
    more for their weight gradients (Megatron-LM, Transformer Engine).  ``moe_layers`` of the
    ``layers`` have an MoE layer in the MLP's place: only their attention block runs these
    collectives (the dispatcher's are :func:`_moe_tp_terms`; MEGATRON_MOE_TP)."""
    blocks = 2 * layers - moe_layers           # attention blocks, and the MLP blocks that remain dense
    out = []
    for name, _ in _passes(recompute):
        if sp_on:
            out.append(Term("all_gather", "ring", group, message / micro, blocks * micro,
                            "sequence all-gather", groups, across, "tp", phase=name))
            out.append(Term("reduce_scatter", "ring", group, message / micro, blocks * micro,
                            "sequence reduce-scatter", groups, across, "tp", phase=name))
        else:
            out.append(Term("all_reduce", algorithm, group, message / micro, blocks * micro,
                            "activation all-reduce", groups, across, "tp", phase=name))
    if sp_on and regather:
        out.append(Term("all_gather", "ring", group, message / micro, blocks * micro,
                        "input re-all-gather for the weight gradient", groups, across, "tp", phase="backward"))
    return tuple(out)


def _moe_tp_terms(group, routed, layers, recompute=False, groups=1, across=False, micro=1) -> tuple[Term, ...]:
    """Megatron's all-to-all dispatcher with expert tensor parallelism (MEGATRON_MOE_TP): per
    MoE layer and micro-batch, the tokens each rank received by all-to-all are all-gathered
    over the ``group`` ranks of the expert-tensor-parallel group, and the experts' partial
    outputs reduce-scattered back; the backward runs the reduce-scatter's gradient (an
    all-gather) and the all-gather's (a reduce-scatter).  ``routed`` = the routed copies of the
    whole tensor-parallel group, k·tokens·h: the gathered buffer, M of both collectives."""
    out = []
    for name, _ in _passes(recompute):
        out.append(Term("all_gather", "ring", group, routed / micro, layers * micro,
                        "MoE routed-token all-gather over the expert-tensor-parallel group", groups, across, "tp",
                        phase=name))
        out.append(Term("reduce_scatter", "ring", group, routed / micro, layers * micro,
                        "MoE expert-output reduce-scatter over the expert-tensor-parallel group", groups, across,
                        "tp", phase=name))
    return tuple(out)


def _tp(algorithm: str, recompute: str) -> tuple[Term, ...]:
    return _tp_terms(N, b * s * h, L, algorithm, reruns_forward(recompute))


def _sp(recompute: str, sp_regather: bool) -> tuple[Term, ...]:
    return _tp_terms(N, b * s * h, L, recompute=reruns_forward(recompute), sp_on=True, regather=sp_regather)


# -- pipeline parallel -------------------------------------------------------------------------------

def _chunks(schedule: str):
    return v if schedule == "interleaved" else sp.Integer(1)


def pipeline_share(stages, chunks) -> sp.Expr:
    """The busiest stage's sends over an interior stage's 2v per micro-batch.

    With p ≥ 3 stages an interior stage sends v chunks forward and v backward; with p = 2
    each stage has one boundary inside each of its chunks but one (2v − 1 sends); with
    p = 1 there is no boundary at all.  (Hand count over the chunk order 0, 1, …, pv − 1
    placed round-robin on the stages, Narayanan et al. 2021 §2.2.)
    """
    return sp.Piecewise((0, sp.Eq(stages, 1)), ((2 * chunks - 1) / (2 * chunks), sp.Eq(stages, 2)),
                        (1, True))


def _pp_terms(stages, message, schedule, pipelines=1, across=False, micro=m,
              across_backward=None) -> tuple[Term, ...]:
    """One point-to-point send per chunk boundary and micro-batch, forward (activations)
    and backward (their gradients).  An interior stage sends v·m messages each way; the
    pipeline has stages·v − 1 chunk boundaries, hence groups = (stages·v − 1)/v per pipeline;
    the end stages of a short pipeline send less (:func:`pipeline_share`).  ``across`` is
    the level of the busiest stage's forward sends, ``across_backward`` (default: the
    same) of its backward ones."""
    across_backward = across if across_backward is None else across_backward
    chunks = _chunks(schedule)
    boundaries_per_count = (stages * chunks - 1) / chunks * pipelines
    share = pipeline_share(stages, chunks)
    return (
        Term("send_recv", "direct", 2, message / micro, chunks * micro, "activations to the next stage",
             boundaries_per_count, across, "pp", share, "forward", stage="interior"),
        Term("send_recv", "direct", 2, message / micro, chunks * micro, "activation gradients to the previous stage",
             boundaries_per_count, across_backward, "pp", share, "backward", stage="interior"),
    )


def _pp(schedule: str) -> tuple[Term, ...]:
    return _pp_terms(N, b * s * h, schedule)


def bubble_fraction(stages, schedule: str) -> sp.Expr:
    """Pipeline bubble time / ideal compute time (Narayanan et al. 2021, §2.2):
    (p − 1)/m for GPipe and 1F1B, (p − 1)/(v·m) interleaved."""
    return (stages - 1) / (_chunks(schedule) * m)


def _pp_extras(schedule: str) -> dict:
    in_flight = {"gpipe": m, "1f1b": N, "interleaved": N}[schedule]
    return {"bubble_fraction": bubble_fraction(N, schedule),
            "micro_batches_in_flight": in_flight}


# -- expert parallel ------------------------------------------------------------------------------------

_ALL_TO_ALL = tuple(alg.name for alg in algorithms_of("all_to_all"))


def _routed(capacity: str):
    """Elements per token that leave for the experts: k copies, padded to f·k with capacity."""
    return f * k if capacity == "padded" else k


def _ep_terms(group, tokens_h, layers, capacity, algorithm="pairwise", groups=1, across=False,
              micro=1, recompute=False) -> tuple[Term, ...]:
    """Dispatch and combine all-to-alls per MoE layer, forward and backward; ``recompute``: the
    forward's two again before the backward (MEGATRON_RECOMPUTE)."""
    message = _routed(capacity) * tokens_h / micro
    count = layers * micro
    passes = (("token dispatch all-to-all", "forward"), ("expert-output combine all-to-all", "forward"))
    if recompute:
        passes += (("token dispatch all-to-all", "forward recompute"),
                   ("expert-output combine all-to-all", "forward recompute"))
    passes += (("combine-gradient all-to-all", "backward"), ("dispatch-gradient all-to-all", "backward"))
    return tuple(Term("all_to_all", algorithm, group, message, count, what, groups, across, "ep", phase=phase)
                 for what, phase in passes)


def _ep(algorithm: str, capacity: str) -> tuple[Term, ...]:
    return _ep_terms(N, b * s * h, L_moe, capacity, algorithm)


# -- context parallel ------------------------------------------------------------------------------------

def _kv_width(gqa: bool):
    return h_kv if gqa else h


def _ulysses_terms(group, batch, seq, width, kv, layers, groups=1, across=False, micro=1,
                   recompute=False) -> tuple[Term, ...]:
    """Per layer and pass: all-to-all of Q, K, V (sequence-sharded → head-sharded) and of O
    (back).  A rank's buffer is its s/group tokens: M = batch·(seq/group)·width.  ``recompute``:
    the forward's four again before the backward (MEGATRON_RECOMPUTE)."""
    out = []
    for name, _ in _passes(recompute):
        for what, w in (("Q", width), ("K", kv), ("V", kv), ("O", width)):
            out.append(Term("all_to_all", "pairwise", group, batch * seq / group * w / micro, layers * micro,
                            f"{what} all-to-all", groups, across, "cp", phase=name))
    return tuple(out)


RING_FLASH_ATTN = ("zhuzilin/ring-flash-attention ring_flash_attn/ring_flash_attn.py, ring_flash_attn_backward: "
                   "N−1 K, V sends, then dK, dV (accumulated in fp32) sent at each of the N steps, the last one "
                   "returning them to their owner")
#: the ring-attention backward variants: the achievable minimum, and what ring-flash-attention runs
RING_BACKWARDS = ("minimal", "ring_flash_attn")


def _ring_terms(group, batch, seq, kv, layers, groups=1, across=False, micro=1,
                backward: str = "minimal", recompute=False) -> tuple[Term, ...]:
    """Ring attention: forward, K and V blocks travel once round the ring — a ring
    all-gather of the full-sequence K (and V), M = batch·seq·kv; backward, K and V travel
    again and dK, dV are summed on the way home — a ring reduce-scatter each
    (``backward="minimal"``).  ``"ring_flash_attn"``: the accumulation starts at the block's
    owner, so after the N − 1 reduction steps one more send brings dK, dV home — a block of
    batch·(seq/group)·kv each; that implementation accumulates and sends dK, dV in fp32
    (``dtype="fp32"``: fp32 elements, 4 bytes each).  ``recompute``: the forward's K, V pass
    again before the backward (MEGATRON_RECOMPUTE)."""
    message = batch * seq * kv / micro
    n = layers * micro
    out = [
        Term("all_gather", "ring", group, message, 2 * n, "K, V ring pass", groups, across, "cp", phase="forward"),
    ]
    if recompute:
        out.append(Term("all_gather", "ring", group, message, 2 * n, "K, V ring pass", groups, across, "cp",
                        phase="forward recompute"))
    out += [
        Term("all_gather", "ring", group, message, 2 * n, "K, V ring pass", groups, across, "cp", phase="backward"),
        Term("reduce_scatter", "ring", group, message, 2 * n, "dK, dV ring reduction", groups, across, "cp",
             phase="backward", dtype="fp32" if backward == "ring_flash_attn" else ""),
    ]
    if backward == "ring_flash_attn":
        # a group of one runs no ring: its return sends (the one ring term not already zero for a
        # group of one) vanish with the group
        alone = sp.Piecewise((0, sp.Eq(group, 1)), (1, True))
        out.append(Term("send_recv", "direct", 2, message / group, 2 * n * alone, "dK, dV return to their owner",
                        groups * group, across, "cp", phase="backward", dtype="fp32"))
    return tuple(out)


def _cp_ulysses(gqa: str) -> tuple[Term, ...]:
    return _ulysses_terms(N, b, s, h, _kv_width(gqa), L)


def _cp_ring(gqa: str, backward: str) -> tuple[Term, ...]:
    return _ring_terms(N, b, s, _kv_width(gqa), L, backward=backward)


# -- hybrid layouts ----------------------------------------------------------------------------------------

#: Megatron rank order, innermost first: rank = tp + t·(cp + c·(dp + d·pp)).  A group
#: spans nodes when the ranks it covers (its size × the sizes inside it) exceed G.
RANK_ORDER = ("t", "c", "d", "p")


def _hybrid(**options) -> tuple[Term, ...]:
    # the typed run setting; "sp" is read into sp_on, since a name sp would hide sympy; the layers'
    # forward collectives run again only under full recompute (RunSetting.forward_reruns)
    run = RunSetting(**options)
    zero, sp_on, recompute, schedule = run.zero, run.sp, run.forward_reruns, run.schedule
    scatter_gather, cp, gqa, moe = run.scatter_gather, run.cp, run.gqa, run.moe
    data = data_schedule(run.framework, zero, run.grad_reduce, run.reshard_after_forward, run.grad_dtype)
    regather = sp_regather_of(run.framework, run.sp_regather)
    replica_batch = b / d                      # sequences of one data-parallel replica
    local_seq = s / c                          # tokens of each sequence on one CP rank
    layers = L / p                             # layers on one pipeline stage
    n_gpus = t * c * d * p
    terms: list[Term] = []

    # TP on the replica batch and the local sequence, L/p layers, every micro-batch; an MoE layer
    # has no dense MLP, hence no MLP-block collectives (MEGATRON_MOE_TP)
    moe_layers = L_moe / p if moe else 0
    terms += _tp_terms(t, replica_batch * local_seq * h, layers, recompute=recompute, sp_on=sp_on,
                       groups=n_gpus / t, across=_spans(t, G), micro=m, regather=regather, moe_layers=moe_layers)

    # CP on its group: K/V heads split by TP
    if cp in ("ring", "ring_flash_attn"):
        # with c = 1 no attention runs over a ring (_ring_terms: the return sends vanish with the group)
        terms += _ring_terms(c, replica_batch, s, _kv_width(gqa) / t, layers, n_gpus / c, _spans(t * c, G), m,
                             backward="ring_flash_attn" if cp == "ring_flash_attn" else "minimal",
                             recompute=recompute)
    else:
        terms += _ulysses_terms(c, replica_batch, s, h / t, _kv_width(gqa) / t, layers, n_gpus / c,
                                _spans(t * c, G), m, recompute=recompute)

    # EP: tokens of this rank (1/t of them with SP), MoE layers of this stage; with SP on t > 1 ranks
    # the dispatcher gathers the routed tokens over the expert-tensor-parallel group (= the TP group)
    if moe:
        tokens_h = replica_batch * local_seq * h / (t if sp_on else 1)
        terms += _ep_terms(e, tokens_h, moe_layers, "dropless", groups=n_gpus / e, across=_spans(t * e, G), micro=m,
                           recompute=recompute)
        if sp_on:
            terms += _moe_tp_terms(t, _routed("dropless") * replica_batch * local_seq * h, moe_layers, recompute,
                                   groups=n_gpus / t, across=_spans(t, G), micro=m)

    # PP: one boundary message per micro-batch; /t with SP (already sharded) or scatter-gather
    activation = replica_batch * local_seq * h
    shard = activation / t if (sp_on or scatter_gather) else activation
    # stage s holds ranks [s·tcd, (s+1)·tcd): some boundary crosses a node once the pipeline
    # spans nodes; a stage whose *both* boundaries cross needs G | tcd, i.e. tcd ≥ G. The
    # busiest stage (one crossing the forward way) pays α_inter, β_inter forward, and
    # backward only when tcd ≥ G (G dividing tcd or tcd dividing G, as layouts have it)
    terms += _pp_terms(p, shard, schedule, pipelines=t * c * d, across=_spans(n_gpus, G),
                       across_backward=_spans(t * c * d, G - 1))
    if scatter_gather and not sp_on:
        chunks = _chunks(schedule)
        for name in ("forward", "backward"):
            terms.append(Term("all_gather", "ring", t, activation / m, chunks * m,
                              "scatter-gather re-assembly at the receiving stage",
                              (p * chunks - 1) / chunks * c * d, _spans(t, G), "pp",
                              pipeline_share(p, chunks), name))

    # the embedding and the LM head: on the first and the last stage (the same one when p = 1)
    embeddings, tied = run.embeddings, run.tied
    if embeddings:
        terms += _embedding_terms(activation, replica_batch * local_seq, sp_on, regather, tied,
                                  groups=c * d, across=_spans(t, G))

    # DP on the shard each GPU owns, over the d·c ranks that hold the same parameters
    dense = (Phi - Phi_E) if moe else Phi
    if embeddings:
        # the busiest GPU is on the last stage: its L/p layers' share and the V·h/t LM head (or tied
        # embedding copy); with p = 1 one stage holds everything.  groups is set so that the total is
        # the parameters really held: Φ, and one more V·h for a tied copy on the last stage when p > 1
        busiest = end_stage_shard(dense, tied)
        held = dense + (sp.Piecewise((0, sp.Eq(p, 1)), (V * h, True)) if tied else 0)
        terms += tuple(replace(term, stage="last")
                       for term in _dp_terms(data, d * c, busiest, held / busiest, _spans(t * c * d, G), ""))
        if tied:
            # the two copies (first and last stage) sum their gradients once per step
            terms.append(Term("all_reduce", "ring", 2, V * h / t, sp.Piecewise((0, sp.Eq(p, 1)), (1, True)),
                              "tied-embedding gradient all-reduce, first and last stage", t * c * d,
                              _spans(n_gpus, G), "dp", phase="after backward", dtype=data.grad_dtype,
                              stage="first and last"))
    else:
        terms += _dp_terms(data, d * c, dense / (t * p), n_gpus / (d * c), _spans(t * c * d, G), "")
    if moe:
        # expert parameters: sharded over e (and t, p); replicas are the d·c/e expert-data ranks
        terms += _dp_terms(data, d * c / e, Phi_E / (e * t * p), n_gpus * e / (d * c),
                           _spans(t * c * d, G), "expert ")
    return tuple(terms)


def end_stage_shard(dense, tied: bool) -> sp.Expr:
    """Parameters one GPU of an end pipeline stage holds: its L/p layers' share of the non-embedding
    parameters and one V·h embedding (or LM head, or tied copy), over t; with p = 1 the one stage
    holds all of ``dense`` (Φ, or Φ − Φ_E with experts), which counts V·h once tied, twice untied."""
    in_phi = V * h * (1 if tied else 2)
    return sp.Piecewise((dense / t, sp.Eq(p, 1)), (((dense - in_phi) / p + V * h) / t, True))


def _embedding_terms(activation, tokens, sp_on, regather, tied, groups, across) -> tuple[Term, ...]:
    """The vocabulary-parallel embedding (first stage) and LM head + cross-entropy (last
    stage), per micro-batch, over the t ranks of a stage; ``activation`` = the replica's
    (b/d)·(s/c)·h, ``tokens`` = its (b/d)·(s/c).  The last stage's terms carry the busiest GPU;
    the first stage's count for it only when p = 1 (one stage holds both)."""
    first = sp.Piecewise((1, sp.Eq(p, 1)), (0, True))
    out = []
    if sp_on:
        out += [Term("reduce_scatter", "ring", t, activation / m, m, "embedding-output reduce-scatter (first stage)",
                     groups, across, "tp", first, "forward", stage="first"),
                Term("all_gather", "ring", t, activation / m, m, "embedding-gradient all-gather (first stage)",
                     groups, across, "tp", first, "backward", stage="first"),
                Term("all_gather", "ring", t, activation / m, m, "LM-head input all-gather (last stage)",
                     groups, across, "tp", phase="forward", stage="last"),
                Term("reduce_scatter", "ring", t, activation / m, m, "LM-head input-gradient reduce-scatter "
                     "(last stage)", groups, across, "tp", phase="backward", stage="last")]
        if regather:
            out.append(Term("all_gather", "ring", t, activation / m, m, "LM-head input re-all-gather for the "
                            "weight gradient (last stage)", groups, across, "tp", phase="backward", stage="last"))
    else:
        out += [Term("all_reduce", "ring", t, activation / m, m, "embedding-output all-reduce (first stage)",
                     groups, across, "tp", first, "forward", stage="first"),
                Term("all_reduce", "ring", t, activation / m, m, "LM-head input-gradient all-reduce (last stage)",
                     groups, across, "tp", phase="backward", stage="last")]
    out.append(Term("all_reduce", "ring", t, tokens / m, 3 * m, "cross-entropy all-reduces: max, target logit, "
                    "sum of exponentials (last stage)", groups, across, "tp", phase="forward", stage="last"))
    return tuple(out)


def sp_regather_of(framework_name: str, sp_regather: bool | None = None) -> bool:
    """Whether sequence parallelism all-gathers its inputs again in the backward: as the
    framework's row says (Megatron-LM and Megatron-DeepSpeed, which runs Megatron's layers, do;
    torch's tensor parallel keeps the gathered input), unless given explicitly."""
    return framework(framework_name).sp_regather if sp_regather is None else bool(sp_regather)


def _spans(x, y):
    """The relation x > y, or its truth value when SymPy can already decide it."""
    return sp.StrictGreaterThan(x, y, evaluate=False) if not (x - y).is_number else bool(x > y)


def _dp_terms(data: DataSchedule, group, shard, groups, across, what) -> tuple[Term, ...]:
    """The data-parallel collectives of one replica group, counted as ``data`` schedules them
    over the m micro-batches."""
    reductions = data.gradient_reductions(m)
    if data.zero == 0:
        return (Term("all_reduce", "ring", group, shard, reductions, f"{what}gradient all-reduce",
                     groups, across, "dp", phase="backward", dtype=data.grad_dtype),)
    if data.zero in (1, 2):
        return (Term("reduce_scatter", "ring", group, shard, reductions, f"{what}gradient reduce-scatter",
                     groups, across, "dp", phase="backward", dtype=data.grad_dtype),
                Term("all_gather", "ring", group, shard, 1, f"{what}parameter all-gather",
                     groups, across, "dp", phase="after the step"))
    return tuple(replace(term, what=what + term.what)
                 for term in _zero3_on(group, shard, groups, across, data, m))


def _hybrid_extras(schedule, **_) -> dict:
    return {"bubble_fraction": bubble_fraction(p, schedule), "gpus": t * c * d * p}


_NO_EXPERTS = rules.fixed(e, 1, "e={x} needs moe=1 (and L_moe, Phi_E); without MoE layers e must be 1")
_MOE_NEEDS_SP = rules.fixed(t, 1, "moe=1 with t={x} needs sp=1: Megatron-Core refuses MoE with tensor parallelism without "
                                  "sequence parallelism (megatron/core/transformer/moe/moe_layer.py)")


def _hybrid_checks() -> tuple[Rule | When, ...]:
    return (
        rules.equal(t * p * d * c, N, "t*p*d*c"),
        rules.when("moe", (False,), _NO_EXPERTS),
        rules.when("moe", (True,), rules.when("sp", (False,), _MOE_NEEDS_SP)),
        rules.divisible(L, p),
        rules.when("schedule", ("interleaved",), rules.divisible(L, p * v)),
        rules.when("schedule", ("interleaved",), rules.divisible(m, p)),
        # Megatron-LM megatron/training/arguments.py refuses the interleaved schedule on one stage (and on
        # two without overlap_p2p_comm); with p = 1 schedules.py runs no pipeline at all
        rules.when("schedule", ("interleaved",), rules.at_least(p, 2)),
        rules.divisible(a, t),
        rules.divisible(b, d),
        rules.divisible(b / d, m, "b/d|m"),
        rules.divisible(s, c),
        rules.divisible(d * c, e, "d*c|e"),
        rules.divisible(E, e),
    )


# -- the registry ------------------------------------------------------------------------------------------

_EXACT = "elements; per training step, forward + backward; exact (N−1)/N form"
_SCHEDULES = ("gpipe", "1f1b", "interleaved")
_MICRO_BATCHES = Option("micro_batches", "1", ("1", "m"),
                        "1: one micro-batch per step (the papers' count); m: m micro-batches per step (gradient "
                        "accumulation), each collective counted as often as the framework runs it")
_RECOMPUTE = RECOMPUTE_OPTION        # none | selective | full, one meaning for every strategy and command


def _strategy(name, title, summary, source, convention, options, build, checks=(), extra=None) -> Strategy:
    return Strategy(name, title, summary, source, convention, {o.name: o for o in options}, build,
                    tuple(checks), extra)


_ENTRIES = (
    _strategy("dp", "Data parallel",
              "every GPU holds the whole model; the Φ gradients are all-reduced once per step",
              SOURCE_ARTICLE + ", ch. 2; " + RAJBHANDARI + ", §7.1",
              _EXACT + "; naive = flat reduce + flat broadcast (root sends and receives (N−1)Φ)",
              (Option("algorithm", "ring", _DP_ALGORITHMS,
                      "all-reduce algorithm: ring (default), naive (flat reduce + flat broadcast) or any catalog all-reduce"),),
              _dp),
    _strategy("zero1", "ZeRO stage 1 (optimizer states sharded)",
              "reduce-scatter of the Φ gradients, then all-gather of the updated Φ parameters",
              RAJBHANDARI + ", §7.2.1; " + DEEPSPEED_ENGINE,
              _EXACT + "; the paper prints the limit 2Ψ; gradients accumulate unsharded over the micro-batches "
              "and are reduced once per step", (), _zero1),
    _strategy("zero2", "ZeRO stage 2 (optimizer states and gradients sharded)",
              "reduce-scatter of the Φ gradients (after every micro-batch, as DeepSpeed runs it), then all-gather "
              "of the updated Φ parameters",
              RAJBHANDARI + ", §7.2.1; " + DEEPSPEED_ENGINE,
              _EXACT + "; the paper prints the limit 2Ψ (one micro-batch); micro_batches=m: m micro-batches per step",
              (_MICRO_BATCHES,
               Option("grad_reduce", "per_micro_batch", GRAD_REDUCE,
                      "per_micro_batch: DeepSpeed ZeRO ≥ 2 reduce-scatters after every micro-batch (the sharded "
                      "gradient cannot accumulate the full one); per_step: once, which needs ZeRO-1's full "
                      "gradient memory")),
              _zero12),
    _strategy("zero3", "ZeRO stage 3 / FSDP (parameters sharded too)",
              "all-gather Φ before the forward, again before the backward, reduce-scatter the gradients "
              "(each micro-batch, as DeepSpeed and FSDP run it)",
              RAJBHANDARI + ", §7.2.2; " + ZHAO + ", §3; " + DEEPSPEED_STAGE3 + "; " + FSDP_RUNTIME,
              _EXACT + "; one collective per phase over the whole buffer (bucketing per layer changes α, not volume); "
              "the paper prints the limit 3Ψ (one micro-batch); micro_batches=m: m micro-batches per step",
              (_MICRO_BATCHES,
               Option("grad_reduce", "per_micro_batch", GRAD_REDUCE,
                      "per_micro_batch: reduce-scatter after every micro-batch (DeepSpeed ZeRO-3, FSDP); per_step: "
                      "FSDP's no_sync accumulates unsharded gradients and reduce-scatters once"),
               _flag("reshard_after_forward",
                     "1 = parameters freed after the forward and all-gathered again in the backward (DeepSpeed "
                     "ZeRO-3, FSDP FULL_SHARD); 0 = kept (FSDP SHARD_GRAD_OP / reshard_after_forward=False)", True)),
              _zero3),
    _strategy("hsdp", "Hybrid sharded data parallel",
              "ZeRO-3 inside each node of G GPUs; the Φ/G shard gradients all-reduced across the N/G replicas",
              ZHAO + ", §3.2.2 (hybrid sharding)",
              _EXACT + "; shard group = the G GPUs of a node (α, β), replica group across nodes (α_inter, β_inter)",
              (), _hsdp, (rules.divisible(N, G),)),
    _strategy("tp", "Tensor parallel (Megatron)",
              "per layer, 2 all-reduces of b·s·h in the forward (attention and MLP outputs) and 2 in the backward",
              SHOEYBI + ", §3; " + NARAYANAN + ", §3.2",
              _EXACT + "; per step over L layers (L = 1: per layer); recompute=full adds the forward all-reduces again",
              (Option("algorithm", "ring", _ALL_REDUCE, "all-reduce algorithm"), _RECOMPUTE),
              _tp, (rules.divisible(a, N),)),
    _strategy("sp", "Tensor + sequence parallel (Megatron)",
              "each TP all-reduce becomes an all-gather + a reduce-scatter of b·s·h; sp_regather=1 adds the "
              "backward re-all-gather of the 2 column-parallel inputs (Megatron-LM)",
              KORTHIKANTI + ", §4.2.2; " + MEGATRON_SP_REGATHER,
              _EXACT + "; per step over L layers; recompute=full adds the forward collectives again",
              (_RECOMPUTE,
               _flag("sp_regather", "1 = the backward all-gathers each column-parallel GEMM's sequence-sharded "
                                    "input again for its weight gradient (Megatron-LM layers.py, Transformer "
                                    "Engine): 10·bsh(t−1)/t per layer; 0 = the gathered input is kept (Korthikanti "
                                    "et al.'s count, torch DTensor tensor parallel): 8·bsh(t−1)/t")),
              _sp, (rules.divisible(a, N), rules.divisible(s, N))),
    _strategy("pp", "Pipeline parallel",
              "b·s·h activations cross each stage boundary forward, their gradients backward, in m micro-batches",
              HUANG + "; " + NARAYANAN + ", §2.2",
              "elements; per training step, forward + backward; send = an interior stage (N ≥ 3; with N = 2 each "
              "stage sends one direction only); interleaved: v chunks per stage, N·v − 1 chunk boundaries",
              (Option("schedule", "1f1b", _SCHEDULES, "pipeline schedule"),),
              _pp,
              (rules.divisible(L, N), rules.when("schedule", ("interleaved",), rules.divisible(L, N * v, "L|N*v")),
               rules.when("schedule", ("interleaved",), rules.divisible(m, N)), rules.divisible(b, m)),
              _pp_extras),
    _strategy("ep", "Expert parallel (MoE)",
              "per MoE layer, all-to-all dispatch of k·b·s·h routed token copies and the combine back, "
              "forward and backward",
              LEPIKHIN + ", §2.2; " + FEDUS + ", §2.1",
              "elements; per step, forward + backward; uniform routing (each rank keeps 1/N of its tokens); "
              "b·s = the tokens each rank routes; dropless sends k·b·s·h, padded sends f·k·b·s·h",
              (Option("algorithm", "pairwise", _ALL_TO_ALL, "all-to-all algorithm"),
               Option("capacity", "dropless", ("dropless", "padded"),
                      "dropless: exactly the routed copies; padded: buffers padded to capacity factor f")),
              _ep, (rules.divisible(E, N),)),
    _strategy("cp_ulysses", "Context parallel, DeepSpeed-Ulysses",
              "per layer, all-to-all of Q, K, V and O forward, the same backward; each rank holds s/N tokens",
              JACOBS + ", §3.1",
              "elements; per step, forward + backward (the paper counts forward); gqa=1: K, V of width h_kv",
              (_flag("gqa", "1 = K and V have width h_kv (grouped-query attention), else h"),),
              _cp_ulysses, (rules.divisible(s, N), rules.divisible(a, N))),
    _strategy("cp_ring", "Context parallel, ring attention",
              "K and V blocks travel round the ring once per layer forward; K, V again and dK, dV backward",
              LIU + ", §3; " + RING_FLASH_ATTN,
              "elements; per step, forward + backward (the paper counts forward); gqa=1: K, V of width h_kv; "
              "backward=ring_flash_attn sends dK, dV N times, in fp32 (counted in fp32 elements; bytes use 4 "
              "per element whatever --dtype)",
              (_flag("gqa", "1 = K and V have width h_kv (grouped-query attention), else h"),
               Option("backward", "minimal", RING_BACKWARDS,
                      "minimal: dK, dV reduce-scattered round the ring, N−1 blocks each (the least any ring can "
                      "send); ring_flash_attn: N blocks each, the last returning them to their owner "
                      "(zhuzilin/ring-flash-attention ring_flash_attn.py)")),
              _cp_ring, (rules.divisible(s, N),)),
    _strategy("hybrid", "Hybrid layout (d, t, p, c, e)",
              "each axis on its own group, on the sizes that remain for it; Megatron rank order t, c, d, p",
              NARAYANAN + ", §3; " + KORTHIKANTI + "; " + RAJBHANDARI + "; " + MEGATRON_DDP + "; " + DEEPSPEED_ENGINE
              + "; " + FSDP_RUNTIME + "; " + MEGATRON_SP_REGATHER + "; " + MEGATRON_MOE_SP + "; "
              + MEGATRON_MOE_TP + "; " + MEGATRON_RECOMPUTE + "; " + MEGATRON_INTERLEAVED + "; "
              + MEGATRON_SCATTER_GATHER + "; " + MEGATRON_EMBEDDINGS + "; " + MEGATRON_FP32_GRADS,
              "elements; per GPU per step, forward + backward; b = global batch (b/d per replica), m micro-batches; "
              "data-parallel collectives counted as the framework runs them over the m micro-batches; "
              "TP on L/p layers, DP on the Φ/(t·p) shard over d·c ranks, PP (b/d)(s/c)h per boundary; "
              "rank order t innermost, then c, d, p; a group crosses nodes when the ranks it spans exceed G; the busiest "
              "pipeline stage sends forward across nodes once the pipeline spans nodes, backward too when t·c·d ≥ G; "
              "embeddings=1: the tp and dp figures are the last stage's GPU (LM head, cross-entropy, V·h/t shard; "
              "the first stage's only when p = 1), pp stays an interior stage's, so for p ≥ 3 send adds the two "
              "busiest stages (an upper bound on any one GPU); recompute=full: the layers' forward collectives (tp, cp, "
              "ep) again, not the embedding's, the pipeline's or the data-parallel ones",
              HYBRID_OPTIONS,                  # the run setting's options (symcomm.training.settings)
              _hybrid, _hybrid_checks(), _hybrid_extras),
)

#: other names of strategies, kept apart from the registry: FSDP's full sharding is ZeRO-3
ALIASES: dict[str, str] = {"fsdp": "zero3"}


class _Registry(dict):
    """name → Strategy.  Iterating gives each strategy once, under its own name; looking up
    an alias (``STRATEGIES["fsdp"]``) gives the strategy it names."""

    def __missing__(self, key):
        if key in ALIASES:
            return self[ALIASES[key]]
        raise KeyError(key)

    def __contains__(self, key):
        return dict.__contains__(self, key) or key in ALIASES

    def get(self, key, default=None):
        return self[key] if key in self else default


STRATEGIES: dict[str, Strategy] = _Registry((entry.name, entry) for entry in _ENTRIES)


def strategy(name: str) -> Strategy:
    """Look up a strategy (or an alias), or raise a ValueError listing the names that exist."""
    try:
        return STRATEGIES[name]
    except KeyError:
        raise ValueError(f"unknown strategy {name!r}; choose one of: {', '.join(list(STRATEGIES) + list(ALIASES))}") from None
