"""The collectives of each parallel axis (dp, tp, pp, ep, cp) as terms, and where a group sits.

One builder per axis, taking the group, the message and the counts as arguments, so that a single
strategy (:mod:`symcomm.training.single`) and the hybrid layout (:mod:`symcomm.training.hybrid`) count the
same collectives; the framework's schedule of the data-parallel ones (:class:`DataSchedule`); and the
placement helpers (Megatron's rank order, whether a group spans nodes).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

import sympy as sp

from ..core import symbols as S
from ..base.errors import InputError
from .frameworks import ROOT_KEPT_GATHERED, check_stage, framework
from ..base.crossing import ONE_NIC, RING, crossing_of
from .routing import destinations_hit as routed_places
from .terms import Term

Phi, b, s, h, N, G = S.Phi, S.b, S.s, S.h, S.N, S.G
L, m, v, k, f, E, h_kv, a = S.L, S.m, S.v, S.k, S.f, S.E, S.h_kv, S.a
d, t, p, c, e, L_moe, Phi_E, V = S.d, S.t, S.p, S.c, S.e, S.L_moe, S.Phi_E, S.V


# -- placement: Megatron's rank order, and whether a group spans nodes --------------------------------

#: Megatron rank order, innermost first: rank = tp + t·(cp + c·(dp + d·pp)).  A group
#: spans nodes when the ranks it covers (its size × the sizes inside it) exceed G.
RANK_ORDER = ("t", "c", "d", "p")


def spans(x, y):
    """The relation x > y, or its truth value when SymPy can already decide it."""
    return sp.StrictGreaterThan(x, y, evaluate=False) if not (x - y).is_number else bool(x > y)


def _whole(x):
    """x is a whole number (as a relation the planner's kernels can read: floor and eq)."""
    return sp.Eq(sp.floor(x), x)


# the same few (group, inner, blocks) recur in every hybrid variant and stage kind; the Piecewise costs SymPy ~10 ms
# to build (its conditions are simplified on construction), and the result is an immutable expression
@functools.lru_cache(maxsize=256)
def ranks_per_node(group, inner, blocks):
    """k: the fewest ranks a node holds of a group of ``group`` ranks standing ``inner`` apart (the product of
    the axes inside it in :data:`RANK_ORDER`: 1 for t, t for c and d), once it spans nodes of G GPUs.  The
    ``blocks`` groups' spans of inner·group ranks lie one after another from rank 0; when each starts at a node
    boundary (one block, or G dividing the span) and inner divides G, full nodes hold G/inner of the group and
    the last one what remains: k = (span mod G)/inner, G/inner when nothing remains (a ring step waits for its
    slowest crossing, at the node with the fewest ranks).  Otherwise a span may start a few ranks before a
    node's end, leaving a single rank of the group there: k = 1, the one-NIC pricing, an upper bound on the
    time, never a guess between."""
    return _placed(group, inner, blocks)[0]


def most_per_node(group, inner, blocks):
    """K: the most ranks a node holds of such a group (:func:`ranks_per_node`'s placement): G/inner where its spans
    start at node boundaries (the full nodes), else 1 with k (one NIC).  A ring's node leg is that node's."""
    return _placed(group, inner, blocks)[1]


@functools.lru_cache(maxsize=None)
def _placed(group, inner, blocks):
    span = inner * group
    fill = span - G * (sp.ceiling(span / G) - 1)       # the last node's ranks of the span: in (0, G], never 0
    aligned = sp.And(_whole(G / inner), sp.Or(sp.Eq(blocks, 1), sp.Eq(fill, G)))
    return sp.Piecewise((fill / inner, aligned), (1, True)), sp.Piecewise((G / inner, aligned), (1, True))


def spread_over_nics(terms, inner, blocks) -> tuple[Term, ...]:
    """``terms`` with :attr:`Term.ranks_per_node` set for each ring collective and pairwise all-to-all that may
    cross nodes (its group ``inner`` ranks apart, ``blocks`` such spans one after another): a ring's crossings
    spread over its k ranks' NICs, k − 1 of a pairwise all-to-all's peers share its node
    (:func:`ranks_per_node`, ``base.crossing``); the others as given (one NIC, an upper bound)."""
    return tuple(replace(term, ranks_per_node=ranks_per_node(term.group, inner, blocks),
                         most_per_node=most_per_node(term.group, inner, blocks) if crossing_of(
                             term.primitive, term.algorithm) == RING else None)
                 if term.across_nodes is not False and crossing_of(term.primitive, term.algorithm) != ONE_NIC
                 else term for term in terms)


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
    shard_unit: str = "model"     # ZeRO-3: one collective per "layer" (an FSDP unit) or for the whole "model"
    param_dtype: str = ""         # the parameter all-gathers' element type: "fp8" (fp8_param_gather), "" = the run's
    # the pipeline schedules a step runs: 1, or n_ga under ga_schedules=1, each ending in the stage's reduction
    # and resharding (frameworks.PIPELINING_GA), so "per step" is per schedule
    schedules: sp.Expr = sp.Integer(1)
    # how the framework's runtime keeps a unit between micro-batches (frameworks.KEPT_GATHERED): "no_sync" (FSDP1: a
    # unit not resharded after its forward stays gathered while the gradients wait), "pipeline" (FSDP2: resharded after
    # every backward, but under torch.distributed.pipelining, whose stage holds the gradient sync and the resharding
    # back until a schedule's last backward, whatever the run's grad_reduce)
    kept_gathered: str = "no_sync"
    # hybrid sharding (hsdp=1): the replicas of the sharded model, d_r, each sharding over 1/d_r of the group
    replicas: sp.Expr = sp.Integer(1)
    # ZeRO-1/2's gradient collective (frameworks.Framework.partition_reduce): "reduce_scatter" or "all_reduce"
    partition_reduce: str = "reduce_scatter"
    # ZeRO-3 with p ≥ 2: resharded after the forward there? None: as reshard_after_forward (torchtitan: False,
    # frameworks.Framework.reshard_when_piped)
    reshard_piped: bool | None = None

    def resharding(self, resharded, kept):
        """``resharded`` where the parameters are freed after the forward, else ``kept``: as reshard_after_forward
        says, or under a pipeline (p ≥ 2) as :attr:`reshard_piped` says where it is set."""
        alone = resharded if self.reshard_after_forward else kept
        if self.reshard_piped is None or self.reshard_piped == self.reshard_after_forward:
            return alone
        return sp.Piecewise((resharded if self.reshard_piped else kept, sp.Ge(S.p, 2)), (alone, True))

    def under_pipeline(self, piped, alone):
        """``piped`` where the framework's pipeline runtime decides (kept_gathered "pipeline", p ≥ 2), else ``alone``."""
        if self.kept_gathered != "pipeline":
            return alone
        return sp.Piecewise((piped, sp.Ge(S.p, 2)), (alone, True))

    def gradient_reductions(self, micro):
        return self.under_pipeline(self.schedules,
                                   micro if self.grad_reduce == "per_micro_batch" else self.schedules)

    def forward_gathers(self, micro):
        if self.kept_gathered == "pipeline":
            # FSDP2: every forward gathers (the backward before it resharded) but in a pipeline's schedule, where
            # the last stage's first forward gathers and every later one finds its units gathered: a backward kept
            # them (after a forward resharded them, the backward gathered them again: backward_gathers)
            return self.under_pipeline(self.schedules, micro)
        # a unit neither resharded after the forward nor after the backward (FSDP: no_sync and
        # reshard_after_forward=False, _should_free_in_backward) stays gathered for the whole step
        if not self.reshard_after_forward and self.grad_reduce == "per_step":
            return self.schedules
        return micro

    def gradients(self, whole, sharded):
        """``whole`` where a GPU holds its parameters' unsharded gradients through the step (:attr:`full_gradients`;
        under a pipeline of the "pipeline" runtime always, its stage accumulating without sync), else ``sharded``."""
        return whole if self.full_gradients else self.under_pipeline(whole, sharded)

    def one_schedule(self, counted):
        """``counted`` (an expression, or a dict of them: what the memory model holds) over one of the step's
        schedules, which is what a GPU holds at once: b/n_ga sequences in m/n_ga micro-batches of the same size
        under ga_schedules=1, so the micro-batches in flight and the pipeline's kept buffers are one schedule's."""
        if self.schedules == 1:
            return counted
        if isinstance(counted, dict):
            return {key: self.one_schedule(x) for key, x in counted.items()}
        per = {S.b: S.b / self.schedules, S.m: S.m / self.schedules}
        return sp.sympify(counted, strict=True).subs(per, simultaneous=True)

    def backward_gathers(self, micro):
        return self.resharding(micro, sp.Integer(0))

    @property
    def full_gradients(self) -> bool:
        """True when a GPU holds the unsharded gradient of its parameters through the step
        (ZeRO < 2, or a sharded stage that reduces once per step and so must accumulate it)."""
        return self.zero < 2 or self.grad_reduce == "per_step"

    def full_parameters(self, whole, sharded):
        """``whole`` where a GPU holds the unsharded parameters through forward and backward (ZeRO < 3, or not
        resharded after the forward: :meth:`resharding`), else ``sharded``."""
        return whole if self.zero < 3 else self.resharding(sharded, whole)


def data_schedule(framework_name: str, zero: int, grad_reduce: str | None = None,
                  reshard_after_forward: bool | None = None, grad_dtype: str | None = None,
                  fp8_param_gather: bool = False, precision: str = "bf16", ga_schedules: bool = False,
                  hsdp: bool = False) -> DataSchedule:
    """The schedule ``framework_name`` runs for ZeRO stage ``zero`` (its row of
    symcomm.training.frameworks.FRAMEWORKS), with any switch given explicitly (not None) overriding the
    framework's own choice; InputError naming the option for a stage the framework does not run.
    ``fp8_param_gather``: the parameter all-gathers move FP8 weights, 1 byte per element (Megatron-Core
    --fp8-param-gather, megatron/training/arguments.py: distributed optimizer or FSDP only; torchao
    float8's FSDP all-gather, torchtitan docs/float8.md); ZeRO-0 gathers no parameter and bf16 has no FP8
    weight, so both are refused.  Under ``precision=mxfp8`` the gathers stay at the run's dtype: Megatron-Core's
    parameter buffer for MXFP8 weights is a bf16 view of the gradient buffer, gathered and then re-quantized
    into the MXFP8 weights (NVIDIA/Megatron-LM megatron/core/distributed/param_and_grad_buffer.py, commit
    d98e8a64: "only half of the buffer is used to store params in bf16").  ``ga_schedules``: the step is n_ga
    pipeline schedules, each reducing once (:data:`symcomm.training.frameworks.PIPELINING_GA`)."""
    row = framework(framework_name)
    check_stage(row, zero)
    if fp8_param_gather and zero == 0:
        raise InputError("fp8_param_gather=1 needs a sharded data-parallel axis (zero=1, 2 or 3): with zero=0 no "
                         "parameter is all-gathered")
    if fp8_param_gather and row.name in ("deepspeed", "fsdp"):
        # DeepSpeed's ZeRO gathers its 16-bit partitions (runtime/zero/stage_1_and_2.py all_gather_dp_groups,
        # stage3.py; ZeRO++'s quantized weights are int8), PyTorch FSDP its flat parameters in their dtype; torchao's
        # float8 all-gather is FSDP2's (torchtitan docs/float8.md)
        raise InputError(f"fp8_param_gather=1 with framework={row.name} is refused: it gathers its 16-bit parameters "
                         "(no FP8 parameter all-gather); give fp8_param_gather=0, or framework=megatron, "
                         "megatron_fsdp or fsdp2")
    if fp8_param_gather and precision == "bf16":
        raise InputError("fp8_param_gather=1 needs FP8 weights: give precision=fp8_tensor, fp8_delayed, mxfp8 or fp8_block")
    if fp8_param_gather and precision == "fp8_rowwise":
        # torchao: "enable_fsdp_float8_all_gather only supports tensorwise scaling granularity" (torchao/float8/
        # config.py at 6243040, Float8LinearConfig.__post_init__); torchtitan asserts it off with a recipe_name
        # (torchtitan/components/quantization/float8.py at 820504e2)
        raise InputError("fp8_param_gather=1 with precision=fp8_rowwise is refused: torchao's float8 all-gather takes "
                         "tensorwise scales only; give fp8_param_gather=0 or precision=fp8_tensor")
    if fp8_param_gather and precision == "nvfp4":
        # Megatron-Core gathers NVFP4 weights under its own switch (--fp4-param-gather: packed E2M1 with their
        # scales), which this flag of 1-byte FP8 weights does not describe
        raise InputError("fp8_param_gather=1 with precision=nvfp4 is refused: it gathers 1-byte FP8 weights, and an "
                         "FP4 parameter gather is not modelled; give fp8_param_gather=0 (the gathers counted at the "
                         "run's dtype, an upper bound) or an FP8 precision")
    grad_reduce = row.grad_reduce(zero) if grad_reduce is None else grad_reduce
    reshard = row.reshard_after_forward if reshard_after_forward is None else reshard_after_forward
    # the framework's policy under a pipeline applies where nothing is typed (typed, the value holds for every p)
    reshard_piped = row.reshard_when_piped if reshard_after_forward is None else None
    grad_dtype = row.grad_dtype if grad_dtype is None else grad_dtype
    return DataSchedule(row.name, zero, grad_reduce, bool(reshard), "" if grad_dtype == "same" else grad_dtype,
                        shard_unit=row.shard_unit,
                        param_dtype="fp8" if fp8_param_gather and precision != "mxfp8" else "",
                        schedules=S.n_ga if ga_schedules else sp.Integer(1), kept_gathered=row.kept_gathered,
                        partition_reduce=row.partition_reduce, reshard_piped=reshard_piped,
                        replicas=S.d_r if hsdp else sp.Integer(1))


def run_data_schedule(run) -> DataSchedule:
    """The data-parallel schedule of a typed run setting (symcomm.training.settings.RunSetting): its framework's, with
    the switches the run gives (:func:`data_schedule`)."""
    return data_schedule(run.framework, run.zero, run.grad_reduce, run.reshard_after_forward, run.grad_dtype,
                         run.fp8_param_gather, run.precision, run.ga_schedules, run.hsdp)


def dp_terms(data: DataSchedule, group, shard, groups, across, what, units=1, root=0,
             root_groups=None, root_unit_groups=None) -> tuple[Term, ...]:
    """The data-parallel collectives of one replica group, counted as ``data`` schedules them
    over the m micro-batches.  ZeRO-3 with ``data.shard_unit == "layer"`` (FSDP2, Megatron-FSDP: one
    all-gather and one reduce-scatter per wrapped layer, FSDP2_RUNTIME, MEGATRON_FSDP_RUNTIME) runs
    ``units`` collectives of shard/units each where a whole-model unit runs one of the shard: the same
    elements, ``units`` times the messages.  ``root``: the parameters of ``shard`` in the root unit (the embedding
    and LM head), one of the units, which PyTorch's FSDP (frameworks.ROOT_KEPT_GATHERED) gathers and reduces as its
    own collective at its own size, each pass's first gather and last reduce-scatter (:data:`ROOT_UNIT_FIRST`), and
    keeps gathered from its forward through the backward: the forward's gathers and the reduce-scatters are a root
    term (root elements, once a pass) and a blocks' term (shard − root in units − 1 messages), the backward gathers
    the blocks' alone, over ``root_groups`` groups (what makes the blocks' total their parameters held), the root
    term over ``root_unit_groups`` (the root units' parameters held over ``root``; default: what makes the pair's
    total the one term's over ``groups``, every parameter held)."""
    reductions = data.gradient_reductions(m)
    if data.zero == 0:
        return (Term("all_reduce", "ring", group, shard, reductions, f"{what}gradient all-reduce",
                     groups, across, "dp", phase="backward", dtype=data.grad_dtype),)
    if data.zero in (1, 2):
        return (partition_reduction(data.partition_reduce, group, shard, reductions, what, groups, across,
                                    data.grad_dtype),
                Term("all_gather", "ring", group, shard, 1, f"{what}parameter all-gather",
                     groups, across, "dp", phase="after the step", dtype=data.param_dtype))
    per = units if data.shard_unit == "layer" else 1
    if not _root_apart(data, root):
        return tuple(replace(term, what=what + ("per-layer " if data.shard_unit == "layer" else "") + term.what,
                             message=term.message / per, count=term.count * per)
                     for term in zero3_on(group, shard, groups, across, data, m))
    # PyTorch's FSDP: the root unit apart, at its own size (ROOT_UNIT_FIRST), the blocks' units at theirs
    block_groups, unit_groups = _root_and_block_groups(shard, groups, root, root_groups, root_unit_groups)
    out = []
    for term in zero3_on(group, shard, groups, across, data, m):
        # a stage of no blocks (an uneven split's L_first = 0) sends none: count 0, its message read as over 1 unit
        blocks = replace(term, what=what + "per-layer " + term.what, message=(shard - root) / sp.Max(per - 1, 1),
                         count=term.count * (per - 1), groups=block_groups)
        if (term.primitive, term.phase) != ("all_gather", "backward"):
            # the root unit's embedding and LM head are no float8 linears (torchao converts nn.Linear only, and
            # torchtitan's float8 filter_fqns leaves "output" out): gathered in the run's 16-bit type whatever
            # fp8_param_gather does to the blocks'
            dtype = "" if term.primitive == "all_gather" else term.dtype
            out.append(replace(term, what=what + "root-unit " + term.what, message=root, groups=unit_groups,
                               dtype=dtype))
        out.append(blocks)
    return tuple(out)


#: why PyTorch's FSDP root unit is its own collective, the first of each forward and the last of each reduction: the
#: root's pre-forward gathers its own parameters (the embedding, torchtitan's final norm and LM head; KempnerForge's
#: whole embedding) before the embedding runs and the first block's gather is issued behind it on the same stream, and
#: its post-backward reduce-scatter follows the first block's, the embedding's gradient being the backward's last
#: (torch 2.13.0 torch/distributed/fsdp/_fully_shard/_fsdp_state.py, _pre_forward and _root_post_backward_final_callback;
#: _fsdp_param_group.py, unshard on the all-gather stream and post_backward's reduce-scatter)
ROOT_UNIT_FIRST = ("torch 2.13.0 torch/distributed/fsdp/_fully_shard/_fsdp_state.py (_pre_forward, "
                   "_root_post_backward_final_callback) and _fsdp_param_group.py (unshard, post_backward)")


def _root_apart(data: DataSchedule, root) -> bool:
    """Is the root unit's share ``root`` its own collective (PyTorch's FSDP per-layer units: ROOT_UNIT_FIRST)?"""
    return root != 0 and data.shard_unit == "layer" and data.framework in ROOT_KEPT_GATHERED


def _root_and_block_groups(shard, groups, root, root_groups=None, root_unit_groups=None) -> tuple:
    """(the blocks' groups, the root unit's) of a shard split into its root and its blocks: as given, else the blocks'
    are ``groups`` and the root's what makes the pair's total the whole shard's over ``groups``."""
    blocks = groups if root_groups is None else root_groups
    unit = (shard * groups - (shard - root) * blocks) / root if root_unit_groups is None else root_unit_groups
    return blocks, unit


def partition_reduction(collective: str, group, shard, reductions, what="", groups=1, across=False,
                        dtype="") -> Term:
    """ZeRO-1/2's gradient reduction: a reduce-scatter (each rank receives the sum of its partition) or, as DeepSpeed
    runs it (frameworks.DEEPSPEED_BUCKET_ALLREDUCE), an all-reduce of the whole buffer of which each rank keeps its
    partition: 2(N−1)/N of it sent where the reduce-scatter sends (N−1)/N."""
    if collective == "all_reduce":
        return Term("all_reduce", "ring", group, shard, reductions,
                    f"{what}gradient all-reduce (each rank keeps its partition)", groups, across, "dp", phase="backward",
                    dtype=dtype)
    return Term("reduce_scatter", "ring", group, shard, reductions, f"{what}gradient reduce-scatter", groups, across,
                "dp", phase="backward", dtype=dtype)


def replica_terms(data: DataSchedule, shard_group, shard, groups, across, units=1, root=0, root_groups=None,
                  root_unit_groups=None) -> tuple[Term, ...]:
    """Hybrid sharding (``data.replicas`` > 1, frameworks.HSDP_SOURCE): after each of the ``units`` reduce-scatters
    over the ``shard_group`` ranks, the reduced shard (``shard``/``units`` over ``shard_group``) all-reduced over the
    replicas, as often as the gradients are reduced; none without replicas.  ``root`` (PyTorch's FSDP, as
    :func:`dp_terms`): the root unit's reduce-scatter and so its all-reduce at its own size, the blocks' at theirs."""
    if data.replicas == 1:
        return ()
    reductions = data.gradient_reductions(m)
    if not _root_apart(data, root):
        return (Term("all_reduce", "ring", data.replicas, shard / (units * shard_group), reductions * units,
                     "per-layer gradient all-reduce over the replicas", groups, across, "dp", phase="backward",
                     dtype=data.grad_dtype),)
    block_groups, unit_groups = _root_and_block_groups(shard, groups, root, root_groups, root_unit_groups)
    return (Term("all_reduce", "ring", data.replicas, root / shard_group, reductions,
                 "root-unit gradient all-reduce over the replicas", unit_groups, across, "dp", phase="backward",
                 dtype=data.grad_dtype),
            Term("all_reduce", "ring", data.replicas, (shard - root) / (sp.Max(units - 1, 1) * shard_group),
                 reductions * (units - 1), "per-layer gradient all-reduce over the replicas", block_groups, across,
                 "dp", phase="backward", dtype=data.grad_dtype))


def zero3_on(group, message, groups=1, across=False, schedule: DataSchedule | None = None,
             micro=1) -> tuple[Term, ...]:
    """ZeRO-3 / FSDP: parameters all-gathered for the forward (and again for the backward
    when resharded after the forward), gradients reduce-scattered; counts per ``schedule``
    over ``micro`` micro-batches (default: one micro-batch, all three once)."""
    schedule = schedule or DataSchedule("deepspeed", 3, "per_micro_batch", True)
    out = [Term("all_gather", "ring", group, message, schedule.forward_gathers(micro), "parameter all-gather",
                groups, across, "dp", phase="forward", dtype=schedule.param_dtype)]
    backward = schedule.backward_gathers(micro)
    if backward != 0:
        out.append(Term("all_gather", "ring", group, message, backward, "parameter all-gather", groups, across,
                        "dp", phase="backward", dtype=schedule.param_dtype))
    out.append(Term("reduce_scatter", "ring", group, message, schedule.gradient_reductions(micro),
                    "gradient reduce-scatter", groups, across, "dp", phase="backward", dtype=schedule.grad_dtype))
    return tuple(out)


# -- tensor and sequence parallel ----------------------------------------------------------------

def _passes(recompute: bool) -> tuple[tuple[str, int], ...]:
    """(pass, how many times it runs per layer): full recompute re-runs the forward."""
    out = [("forward", 1), ("backward", 1)]
    if recompute:
        out.insert(1, ("forward recompute", 1))
    return tuple(out)


def tp_terms(group, message, layers, algorithm="ring", recompute=False, sp_on=False, groups=1,
             across=False, micro=1, regather=False, moe_layers=0, mla_layers=0,
             recompute_gathers=False, gather_dtype="", blocks_per_layer=2, mlp_again=None,
             input_linears=None, stops_early=False, grad_gather_dtype=None, amax_reduced=False,
             shared_layers=0) -> tuple[Term, ...]:
    """Megatron: per layer and pass, 2 all-reduces (attention out, MLP out) or, with SP,
    2 all-gathers + 2 reduce-scatters in their place; ``regather`` (SP only): the backward
    all-gathers the sequence-sharded inputs of the 2 column-parallel GEMMs (QKV, FC1) once
    more for their weight gradients (Megatron-LM, Transformer Engine).  ``moe_layers`` of the
    ``layers`` have an MoE layer in the MLP's place: only their attention block runs these
    collectives (the dispatcher's are :func:`moe_tp_terms`; MEGATRON_MOE_TP).  ``mla_layers`` (SP
    only) of them have MLA attention, whose input side is :func:`mla_tp_terms`: their h-wide input
    all-gather (forward), its gradient's reduce-scatter (backward) and the re-all-gather are not here.
    ``recompute_gathers`` (SP only; recompute=op, symcomm.training.settings.regathers_forward): the forward's
    all-gathers, not its reduce-scatters, run again before the backward.  ``gather_dtype`` (SP only): the element type
    of every sequence all-gather when not the run's ("fp8": torchao's float8 TP styles, tp_plans.TORCHAO_GATHER_FRAMEWORKS).
    ``blocks_per_layer`` 1: a hybrid Mamba model's layers (mamba=1), each one block (attention, Mamba mixer, dense MLP:
    an in_proj/QKV/FC1 column-parallel input and an out_proj/output/FC2 row-parallel output), its MoE layers none.
    ``mlp_again``: the dense MLP blocks Megatron-Core's recompute module mlp runs again before their backward
    (settings.RECOMPUTE_MODULES): their forward's collectives once more, FC1's all-gather and FC2's reduce-scatter
    with SP, FC2's all-reduce without.  ``input_linears`` (SP only; the sp_input setting): (an attention block's, a
    dense MLP block's) column-parallel linears that each all-gather their own input and reduce-scatter its gradient,
    in place of one per block input.  ``stops_early`` (a recompute that stops once the tensors the backward needs are
    made again: frameworks.RECOMPUTE_EARLY_STOP): the recompute skips each dense layer's last collective, its MLP
    output's reduce-scatter (all-reduce), whose output no backward reads.  ``grad_gather_dtype`` (SP only; None: as
    ``gather_dtype``): the element type of the backward's output-gradient all-gathers (Transformer Engine's MXFP8 and
    blockwise FP8 gather them in both directions: the run's 16-bit, tp_plans.fp8_grad_gather_of).  ``amax_reduced``
    (SP only): each all-gather but the re-gathers follows a quantize that all-reduces one fp32 amax over the group
    (Transformer Engine's current scaling, tp_plans.TE_AMAX_REDUCTION): as many 1-element all-reduces beside it.
    ``shared_layers`` of the ``moe_layers`` run a shared expert beside their routed ones: an MLP on the tensor-parallel
    group (MEGATRON_SHARED_EXPERT_TP), whose collectives are a dense MLP block's."""
    # attention (or Mamba) blocks, the MLP blocks that remain dense, and the shared experts' MLPs
    blocks = blocks_per_layer * layers - moe_layers + shared_layers
    inputs = blocks - (mla_layers if sp_on else 0)   # blocks whose input side is h wide
    if sp_on and input_linears is not None:
        attention_linears, mlp_linears = input_linears
        inputs = attention_linears * layers + mlp_linears * (layers - moe_layers + shared_layers)
    out = []
    for name, _ in _passes(recompute):
        # the outputs a pass reduces: every block's, but a recompute that stops early skips the dense MLPs'
        outputs = blocks - (layers - moe_layers) if stops_early and name == "forward recompute" else blocks
        if sp_on:
            gathers, scatters = (blocks, inputs) if name == "backward" else (inputs, outputs)
            dtype = grad_gather_dtype if name == "backward" and grad_gather_dtype is not None else gather_dtype
            out.append(Term("all_gather", "ring", group, message / micro, gathers * micro,
                            "sequence all-gather", groups, across, "tp", phase=name, dtype=dtype))
            out.append(Term("reduce_scatter", "ring", group, message / micro, scatters * micro,
                            "sequence reduce-scatter", groups, across, "tp", phase=name))
        else:
            out.append(Term("all_reduce", algorithm, group, message / micro, outputs * micro,
                            "activation all-reduce", groups, across, "tp", phase=name))
    if mlp_again is not None and not recompute:
        if sp_on:
            out.append(Term("all_gather", "ring", group, message / micro, mlp_again * micro,
                            "sequence all-gather", groups, across, "tp", phase="forward recompute", dtype=gather_dtype))
            out.append(Term("reduce_scatter", "ring", group, message / micro, mlp_again * micro,
                            "sequence reduce-scatter", groups, across, "tp", phase="forward recompute"))
        else:
            out.append(Term("all_reduce", algorithm, group, message / micro, mlp_again * micro,
                            "activation all-reduce", groups, across, "tp", phase="forward recompute"))
    if sp_on and recompute_gathers and not recompute:
        out.append(Term("all_gather", "ring", group, message / micro, inputs * micro,
                        "sequence all-gather", groups, across, "tp", phase="forward recompute", dtype=gather_dtype))
    if sp_on and amax_reduced:
        out += [replace(term, primitive="all_reduce", message=sp.Integer(1), what="FP8 amax all-reduce (current scaling)",
                        dtype="fp32") for term in out if term.what == "sequence all-gather"]
    if sp_on and regather:
        out.append(Term("all_gather", "ring", group, message / micro, inputs * micro,
                        "input re-all-gather for the weight gradient", groups, across, "tp", phase="backward",
                        dtype=gather_dtype))
    return tuple(out)


def mla_tp_terms(group, tokens, layers, recompute=False, groups=1, across=False, micro=1, regather=False,
                 latents=()) -> tuple[Term, ...]:
    """Megatron-Core's MLA with sequence parallel on ``group`` ranks, the attention block's input side
    (MEGATRON_MLA_SP): the down projections are duplicated on every TP rank and run on its s/t tokens,
    so instead of one h-wide all-gather the column-parallel up projections all-gather their latents
    and the rotary key is all-gathered apart; ``latents`` = (what, width per token, re-gathered for the
    weight gradient); the backward reduce-scatters their gradients.  ``tokens`` = the replica's tokens
    (M = tokens · width).  The output side (linear_proj's reduce-scatter, its gradient's all-gather)
    stays h-wide (:func:`tp_terms` with ``mla_layers``)."""
    out = []
    for name, _ in _passes(recompute):
        for what, width, _again in latents:
            op, verb = ("reduce_scatter", "gradient reduce-scatter") if name == "backward" else ("all_gather",
                                                                                                 "all-gather")
            out.append(Term(op, "ring", group, tokens * width / micro, layers * micro, f"MLA {what} {verb}",
                            groups, across, "tp", phase=name))
    if regather:
        for what, width, again in latents:
            if again:
                out.append(Term("all_gather", "ring", group, tokens * width / micro, layers * micro,
                                f"MLA {what} re-all-gather for the weight gradient", groups, across, "tp",
                                phase="backward"))
    return tuple(out)


def moe_tp_terms(group, routed, layers, recompute=False, groups=1, across=False, micro=1,
                 stops_early=False) -> tuple[Term, ...]:
    """Megatron's all-to-all dispatcher with expert tensor parallelism (MEGATRON_MOE_TP): per
    MoE layer and micro-batch, the tokens each rank received by all-to-all are all-gathered
    over the ``group`` ranks of the expert-tensor-parallel group, and the experts' partial
    outputs reduce-scattered back; the backward runs the reduce-scatter's gradient (an
    all-gather) and the all-gather's (a reduce-scatter).  ``routed`` = the routed copies of the
    whole tensor-parallel group, k·tokens·h: the gathered buffer, M of both collectives.  ``stops_early``: a recompute
    that stops early (:func:`tp_terms`) skips the reduce-scatter, the layer's last collective."""
    out = []
    for name, _ in _passes(recompute):
        out.append(Term("all_gather", "ring", group, routed / micro, layers * micro,
                        "MoE routed-token all-gather over the expert-tensor-parallel group", groups, across, "tp",
                        phase=name))
        if stops_early and name == "forward recompute":
            continue
        out.append(Term("reduce_scatter", "ring", group, routed / micro, layers * micro,
                        "MoE expert-output reduce-scatter over the expert-tensor-parallel group", groups, across,
                        "tp", phase=name))
    return tuple(out)


def moe_probs_tp_terms(group, routed_probs, layers, recompute=False, groups=1, across=False,
                       micro=1) -> tuple[Term, ...]:
    """Megatron's all-to-all dispatcher with expert tensor parallelism (MEGATRON_PROBS_A2A): the fp32 router
    probabilities of the copies each rank received, ``routed_probs`` = k·tokens of the whole tensor-parallel group (one
    per copy), all-gathered as the tokens in each forward (:func:`moe_tp_terms`), their gradient reduce-scattered in
    the backward."""
    return tuple(Term("reduce_scatter" if name == "backward" else "all_gather", "ring", group, routed_probs / micro,
                      layers * micro, "MoE router-probability " + ("gradient reduce-scatter" if name == "backward"
                                                                   else "all-gather")
                      + " over the expert-tensor-parallel group", groups, across, "tp", phase=name, dtype="fp32")
                 for name, _ in _passes(recompute))


def sp_regather_of(framework_name: str, sp_regather: bool | None = None) -> bool:
    """Whether sequence parallelism all-gathers its inputs again in the backward: as the
    framework's row says (Megatron-LM and Megatron-DeepSpeed, which runs Megatron's layers, do;
    torch's tensor parallel keeps the gathered input), unless given explicitly."""
    return framework(framework_name).sp_regather if sp_regather is None else bool(sp_regather)


# -- pipeline parallel -------------------------------------------------------------------------------

def chunks_of(schedule: str):
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


def pp_terms(stages, message, schedule, pipelines=1, across=False, micro=m,
             across_backward=None) -> tuple[Term, ...]:
    """One point-to-point send per chunk boundary and micro-batch, forward (activations)
    and backward (their gradients).  An interior stage sends v·m messages each way; the
    pipeline has stages·v − 1 chunk boundaries, hence groups = (stages·v − 1)/v per pipeline;
    the end stages of a short pipeline send less (:func:`pipeline_share`).  ``across`` is
    the level of the busiest stage's forward sends, ``across_backward`` (default: the
    same) of its backward ones."""
    across_backward = across if across_backward is None else across_backward
    chunks = chunks_of(schedule)
    boundaries_per_count = (stages * chunks - 1) / chunks * pipelines
    share = pipeline_share(stages, chunks)
    return (
        Term("send_recv", "direct", 2, message / micro, chunks * micro, "activations to the next stage",
             boundaries_per_count, across, "pp", share, "forward", stage="interior"),
        Term("send_recv", "direct", 2, message / micro, chunks * micro, "activation gradients to the previous stage",
             boundaries_per_count, across_backward, "pp", share, "backward", stage="interior"),
    )


def bubble_slots(stages, schedule: str, schedules=1) -> sp.Expr:
    """Micro-batch slots a step's pipeline idles (Narayanan et al. 2021, §2.2): p − 1 a schedule for GPipe and 1F1B,
    (p − 1)/v interleaved, once for each of the step's ``schedules`` (n_ga under ga_schedules=1)."""
    return schedules * (stages - 1) / chunks_of(schedule)


def bubble_fraction(stages, schedule: str, schedules=1) -> sp.Expr:
    """Pipeline bubble time / ideal compute time (Narayanan et al. 2021, §2.2):
    (p − 1)/m for GPipe and 1F1B, (p − 1)/(v·m) interleaved, each schedule's (:func:`bubble_slots`)."""
    return bubble_slots(stages, schedule, schedules) / m


# -- expert parallel ------------------------------------------------------------------------------------

def routed_per_token(capacity: str):
    """Elements per token that leave for the experts: k copies, padded to f·k with capacity."""
    return f * k if capacity == "padded" else k


def ep_terms(group, tokens_h, layers, capacity, algorithm="pairwise", groups=1, across=False,
             micro=1, recompute=False, stops_early=False, probs_tokens=None) -> tuple[Term, ...]:
    """Dispatch and combine all-to-alls per MoE layer, forward and backward; ``recompute``: the
    forward's two again before the backward (MEGATRON_RECOMPUTE), the dispatch alone when the recompute stops early
    (:func:`tp_terms`: the combine is the layer's last collective).  ``probs_tokens`` (the tokens of ``tokens_h``):
    each dispatch also all-to-alls the routed copies' fp32 router probabilities, one per copy, and the backward
    their gradient (MEGATRON_PROBS_A2A); None: the dispatch sends the tokens alone."""
    message = routed_per_token(capacity) * tokens_h / micro
    count = layers * micro
    passes = (("token dispatch all-to-all", "forward"), ("expert-output combine all-to-all", "forward"))
    if recompute:
        passes += (("token dispatch all-to-all", "forward recompute"),)
        if not stops_early:
            passes += (("expert-output combine all-to-all", "forward recompute"),)
    passes += (("combine-gradient all-to-all", "backward"), ("dispatch-gradient all-to-all", "backward"))
    out = tuple(Term("all_to_all", algorithm, group, message, count, what, groups, across, "ep", phase=phase)
                for what, phase in passes)
    if probs_tokens is None:
        return out
    probs = routed_per_token(capacity) * probs_tokens / micro
    return out + tuple(Term("all_to_all", algorithm, group, probs, count, what, groups, across, "ep", phase=phase,
                            dtype="fp32")
                       for what, phase in (("router-probability all-to-all", "forward"),
                                           *((("router-probability all-to-all", "forward recompute"),)
                                             if recompute else ()),
                                           ("router-probability gradient all-to-all", "backward")))


#: Megatron-Core's all-to-all dispatcher (frameworks.MEGATRON_CORE) sends the routed copies' probabilities beside the
#: tokens (torchtitan's and DeepSpeed's weight the experts' outputs by the router's scores where the token is, sending
#: none)
MEGATRON_PROBS_A2A = ("NVIDIA/Megatron-LM megatron/core/transformer/moe/token_dispatcher.py at d98e8a64 "
                      "(MoEAlltoAllTokenDispatcher.token_dispatch: all_to_all of permuted_probs over the EP group after "
                      "the tokens'; dispatch_postprocess gathers them over the expert-TP group as the tokens)")


#: where the flex dispatcher's hierarchical dispatch is read
FLEX_DISPATCH = ("NVIDIA/Megatron-LM megatron/core/transformer/moe/token_dispatcher.py at d98e8a64 (MoEFlexTokenDispatcher "
                 "over the TPxEP group; _DeepepManager, _HybridEPManager) and fused_a2a.py (FusedDispatch: the bf16 "
                 "hidden states to DeepEP's Buffer.dispatch; init_hybrid_ep_buffer asserts no FP8 dispatch); "
                 "deepseek-ai/DeepEP csrc/kernels/internode.cu: a token goes over RDMA once to each destination node, "
                 "to the rank of its own local index, which forwards it over NVLink once to each destination GPU there "
                 "(DeepSeek-V3 report arXiv:2412.19437 §3.2.2)")
#: where the dropless dispatchers' host wait is read
DISPATCH_HOST_WAIT = ("NVIDIA/Megatron-LM megatron/core/transformer/moe/token_dispatcher.py at d98e8a64: "
                      "MoEAlltoAllTokenDispatcher.preprocess all-gathers each rank's per-expert counts over the TPxEP "
                      "group (gather_from_sequence_parallel_region) and, dropless, syncs them to the host before the "
                      "expert all-to-all (cuda_sync_point before_ep_alltoall); drop_and_pad sets them constant. "
                      "fused_a2a.py FusedDispatch: 'the CPU will wait for GPU's signal' (DeepEP's received counts); "
                      "_HybridEPManager without a rank capacity factor sizes its buffers from a CPU sync. Forward only: "
                      "the backward reuses the forward's splits")


def destinations_hit(places, topk=k):
    """The expected number of the ``places`` (GPUs or nodes, each holding E/places of the experts) that a token's
    ``topk`` experts fall on, under uniform routing (Megatron-Core's moe_router_force_load_balancing, the runs' own
    setting) with the k picks independent: places·(1 − (1 − 1/places)^k).  Drawn without replacement (k distinct
    experts of E, the hypergeometric places·(1 − C(E − E/places, k)/C(E, k))) the count is larger, by at most 2.7 %
    for E ≥ 128, k ≤ 8 and places ≤ 64 (tests/training/test_dispatch.py counts both): the form is that count's
    E → ∞ limit, kept because C(256, 8)'s factorials overflow the float evaluators (DeepSeek-V3's E = 256)."""
    places = sp.sympify(places, strict=True)
    return places * (1 - (1 - 1 / places) ** topk)


def flex_dispatch_terms(group, tokens, width, layers, ranks_on_node, groups=1, across=False, micro=1,
                        recompute=False, router=(1, 1), stops_early=False) -> tuple[Term, ...]:
    """DeepEP's and HybridEP's dispatch and combine per MoE layer, forward and backward (FLEX_DISPATCH): of a rank's
    ``tokens`` (each ``width`` elements), each goes over the network once to every other node its k experts fall on,
    (n − 1)·(1 − (1 − 1/n)^k) copies for the n = group/``ranks_on_node`` nodes of the expert group; then over NVLink
    once to every GPU of a node its experts fall on but the one it arrived at (on its own node: but itself),
    n·(r − 1)·(1 − (1 − 1/e)^k) copies for r = ``ranks_on_node`` GPUs of the group on a node (by symmetry what
    every rank sends, as the rank of each local index forwards its node's share).  Each leg is one fused kernel
    (one α, its own NIC or NVLink); the legs are added, an upper bound: DeepEP runs them in one kernel, the
    forwarders' NVLink sends behind the RDMA receives.  The combine sends the same back, the backward runs the
    two again; ``recompute``: the forward's two again before the backward (MEGATRON_RECOMPUTE).  ``router``: (G, g),
    group-limited routing (routing.GROUP_LIMITED_ROUTING): 1 − (1 − 1/x)^k becomes routing.grouped_hit's count over
    x nodes (x GPUs), each place alike, so the n − 1 other nodes (e − n GPUs but the arrival ones) keep their share.
    n must be whole: a group filling its nodes unequally (more than G ranks, G not dividing them) has no such n, and
    the hybrid strategy refuses it (symcomm.training.hybrid, _FLEX_NEEDS_WHOLE_NODES)."""
    group, ranks_on_node = sp.sympify(group, strict=True), sp.sympify(ranks_on_node, strict=True)
    nodes = group / ranks_on_node
    # the other nodes hit: all hit but the own one, (n − 1)/n of them; the GPUs hit but the one of arrival: (e − n)/e
    network = tokens * width * (nodes - 1) / nodes * routed_places(nodes, k, *router) / micro
    nvlink = tokens * width * (group - nodes) / group * routed_places(group, k, *router) / micro
    count = layers * micro
    # a group inside one node sends nothing over the network: no launch either
    # (n − 1 clipped at 1: n is 1 or at least 2, as ranks_per_node leaves it; no Eq of its Piecewise, which the
    # planner's kernels cannot compute)
    crosses = sp.Min(nodes - 1, 1)
    passes = [("token dispatch", "forward"), ("expert-output combine", "forward")]
    if recompute:
        passes += [("token dispatch", "forward recompute")]
        if not stops_early:            # the combine, the layer's last collective, skipped by an early stop
            passes += [("expert-output combine", "forward recompute")]
    passes += [("combine-gradient dispatch", "backward"), ("dispatch-gradient combine", "backward")]
    out = []
    for what, phase in passes:
        out.append(Term("send_recv", "direct", 2, network, count * crosses,
                        f"{what}, network leg (one copy per destination node)", groups, across, "ep", phase=phase))
        out.append(Term("send_recv", "direct", 2, nvlink, count, f"{what}, NVLink leg (one copy per destination GPU)",
                        groups, False, "ep", phase=phase))
    return tuple(out)


def dispatch_count_terms(group, layers, groups=1, across=False, micro=1, recompute=False) -> tuple[Term, ...]:
    """The dropless dispatchers' token-count exchange before each MoE layer's dispatch, forward (and its recompute)
    only (DISPATCH_HOST_WAIT): each of the ``group`` ranks of the expert group contributes E int64 counts, all-gathered
    (M = group·E, 8-byte elements); the host waits for them before it launches the dispatch, so the exchange's
    latency is on the critical path.  The alltoall dispatcher runs this all-gather; DeepEP's and HybridEP's
    counts travel inside their dispatch kernel, counted as the same exchange.  The host's own copy and wait are
    not counted apart (no published figure found)."""
    phases = ("forward", "forward recompute") if recompute else ("forward",)
    return tuple(Term("all_gather", "ring", group, group * E, layers * micro,
                      "MoE per-expert token-count all-gather (the host waits for it)", groups, across, "ep",
                      phase=phase, dtype="8") for phase in phases)


# -- context parallel ------------------------------------------------------------------------------------

def kv_width(gqa: bool):
    return h_kv if gqa else h


def ulysses_terms(group, batch, seq, width, kv, layers, groups=1, across=False, micro=1,
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


#: the ring-attention backward variants: the achievable minimum, and what ring-flash-attention runs
RING_BACKWARDS = ("minimal", "ring_flash_attn")


def ring_terms(group, batch, seq, kv, layers, groups=1, across=False, micro=1,
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
