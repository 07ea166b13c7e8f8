"""Parallel strategies, composed from the catalog's collectives.

A strategy is a tuple of :class:`Term` values — which primitive, which catalog
algorithm, on which group, with which message, how many times per training step — and
its cost is the role-wise sum of the terms' catalog costs (:meth:`Cost.sum`).  No total
is typed by hand: every count below is a number of collectives, and every volume comes
from :mod:`symcomm.collectives.algorithms` with N → group, M → message.

This module is the registry, the one place a strategy is added: ``_ENTRIES`` (each strategy's
options, checks, sources and the function building its terms), ``ALIASES`` and ``STRATEGIES``.
The terms themselves are built elsewhere in the wing: :mod:`~symcomm.training.terms` (a
:class:`Term` and its cost), :mod:`~symcomm.training.axes` (each axis's collectives and where a
group sits), :mod:`~symcomm.training.single` (the single strategies) and
:mod:`~symcomm.training.hybrid` (the hybrid layout).

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

from dataclasses import dataclass
from typing import Callable, Mapping

import sympy as sp

from ..core import symbols as S
from ..base import memo
from ..core import rules
from ..collectives.algorithms import SOURCE_ARTICLE, algorithms_of
from ..core.cost import Cost
from .axes import RING_BACKWARDS
from .frameworks import (DEEPSPEED_BUCKET_ALLREDUCE, DEEPSPEED_ENGINE, DEEPSPEED_STAGE3, FSDP_RUNTIME, GRAD_REDUCE,
                         MEGATRON_DDP, MEGATRON_FP32_GRADS, MEGATRON_SP_REGATHER, TORCHTITAN_FSDP_DEFAULTS)
from .recipes import TE_WEIGHT_CACHE
from .tp_plans import TE_AMAX_REDUCTION, TE_FP8_GATHER
from ..core.rules import Rule, When
from .hybrid import TOP_K_OF_E, hybrid_terms, hybrid_checks, hybrid_extras
from .settings import HYBRID_OPTIONS, RECOMPUTE_OPTION, Option, flag as _flag
from .single import (build_cp_ring, build_cp_ulysses, build_dp, build_ep, build_hsdp, build_pp, build_sp, build_tp,
                     build_zero1, build_zero12, build_zero3, pp_extras)
from .terms import Term, power_of_two_rule

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
                   "all-gather, reduce-scatter and backward re-all-gather do not run, but for a shared expert's "
                   "(MEGATRON_SHARED_EXPERT_TP). parallel_state.py: the expert "
                   "grid is ordered tp-ep-dp-pp with expert_tensor_parallel_size defaulting to the tensor-parallel "
                   "size (the expert-tensor-parallel group is then the TP group; expert data parallel = the d·c/e "
                   "ranks holding the same experts)")
#: a MoE layer's shared experts are one MLP on the tensor-parallel group, column- then row-parallel with sequence
#: parallelism, so each runs a dense MLP block's collectives (its input all-gather, its output reduce-scatter, their
#: backward transposes and the input's re-all-gather for the weight gradient)
MEGATRON_SHARED_EXPERT_TP = ("NVIDIA/Megatron-LM megatron/core/transformer/moe/shared_experts.py at d98e8a64 "
                             "(SharedExpertMLP, an MLP of ColumnParallelLinear linear_fc1 and RowParallelLinear "
                             "linear_fc2 on the tensor-parallel group) and moe_module_specs.py "
                             "(get_moe_module_spec_for_backend: the shared experts' linear spec)")
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
RING_FLASH_ATTN = ("zhuzilin/ring-flash-attention ring_flash_attn/ring_flash_attn.py, ring_flash_attn_backward: "
                   "N−1 K, V sends, then dK, dV (accumulated in fp32) sent at each of the N steps, the last one "
                   "returning them to their owner")


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
        return self._built(self.settings(**options))

    def _built(self, settings: dict) -> tuple[Term, ...]:
        """``build`` of these settings, once per strategy and option set (the terms are immutable): a subject asks
        for them twice (its terms, its rules), the step model and the docs build again for every variant."""
        built = memo.table(self, "_terms_by_settings")
        key = tuple(settings.items())
        if key not in built:
            built[key] = tuple(self.build(**settings))
        return built[key]

    def cost(self, **options) -> Cost:
        """Σ of the terms' costs: send of the busiest GPU per step, total over all GPUs."""
        return Cost.sum(term.cost for term in self.terms(**options))

    def cost_where(self, keep: Callable[[Term], bool], **options) -> Cost:
        """Σ of the costs of the terms ``keep`` accepts (e.g. :func:`forward` ones)."""
        return Cost.sum(term.cost for term in self.terms(**options) if keep(term))

    def by_axis(self, **options) -> dict[str, Cost]:
        """The cost split by parallel dimension (tp, dp, pp, cp, ep), in term order: summed once per option set (the
        costs are immutable; the docs' chapters ask for the same layouts again), a new dict each call."""
        settings = self.settings(**options)
        summed = memo.table(self, "_by_axis_by_settings")
        key = tuple(settings.items())
        if key not in summed:
            costs: dict[str, list[Cost]] = {}
            for term in self._built(settings):
                costs.setdefault(term.axis, []).append(term.cost)
            summed[key] = tuple((axis, Cost.sum(parts)) for axis, parts in costs.items())
        return dict(summed[key])

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
        groups = (power_of_two_rule(term) for term in self._built(settings))
        return rules.in_force(self.checks, settings) + tuple(rule for rule in groups if rule is not None)


# -- the registry ------------------------------------------------------------------------------------------

_ALL_REDUCE = tuple(alg.name for alg in algorithms_of("all_reduce"))
_DP_ALGORITHMS = _ALL_REDUCE + ("naive",)
_ALL_TO_ALL = tuple(alg.name for alg in algorithms_of("all_to_all"))
_EXACT = "elements; per training step, forward + backward; exact (N−1)/N form"
_SCHEDULES = ("gpipe", "1f1b", "interleaved")
_MICRO_BATCHES = Option("micro_batches", "1", ("1", "m"),
                        "1: one micro-batch per step (the papers' count); m: m micro-batches per step (gradient "
                        "accumulation), each collective counted as often as the framework runs it")
_PARTITION_REDUCE = Option("partition_reduce", "reduce_scatter", ("reduce_scatter", "all_reduce"),
                           "the gradient reduction: reduce_scatter (each rank receives the sum of its partition: the "
                           "paper's); all_reduce (the whole gradient all-reduced, each rank keeping its partition: "
                           "DeepSpeed's default from v0.12.4, stage_1_and_2.py)")
_RECOMPUTE = RECOMPUTE_OPTION        # none | selective | full | op, one meaning for every strategy and command
#: tensor parallelism without SP takes every mode but op: torchtitan's op list keeps the sequence-parallel
#: reduce-scatters, and its tensor parallelism always shards the norms' sequence (parallelize_llama.py, apply_tp):
#: recompute=op is the sp strategy's
_TP_RECOMPUTE = Option(RECOMPUTE_OPTION.name, RECOMPUTE_OPTION.default,
                       tuple(mode for mode in RECOMPUTE_OPTION.allowed if mode != "op"),
                       "activation recomputation: none; selective (the attention core: no collective runs again); "
                       "full (the forward all-reduces run again in backward); 0 = none, 1 = full (op, torchtitan's "
                       "op-level checkpointing, needs sequence parallelism: strategy sp)",
                       RECOMPUTE_OPTION.aliases)


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
              build_dp),
    _strategy("zero1", "ZeRO stage 1 (optimizer states sharded)",
              "the Φ gradients reduced by a reduce-scatter (the paper's) or, partition_reduce=all_reduce, an "
              "all-reduce of which each rank keeps its partition (DeepSpeed's), then all-gather of the updated Φ "
              "parameters",
              RAJBHANDARI + ", §7.2.1; " + DEEPSPEED_ENGINE + "; partition_reduce=all_reduce: "
              + DEEPSPEED_BUCKET_ALLREDUCE,
              _EXACT + "; the paper prints the limit 2Ψ (partition_reduce=reduce_scatter; all_reduce: 3Φ(N−1)/N, "
              "limit 3Φ, which no paper prints); gradients accumulate unsharded over the micro-batches and are "
              "reduced once per step", (_PARTITION_REDUCE,), build_zero1),
    _strategy("zero2", "ZeRO stage 2 (optimizer states and gradients sharded)",
              "the Φ gradients reduced after every micro-batch (as DeepSpeed schedules it) by a reduce-scatter (the "
              "paper's) or, partition_reduce=all_reduce, an all-reduce of which each rank keeps its partition "
              "(DeepSpeed's), then all-gather of the updated Φ parameters",
              RAJBHANDARI + ", §7.2.1; " + DEEPSPEED_ENGINE + "; partition_reduce=all_reduce: "
              + DEEPSPEED_BUCKET_ALLREDUCE,
              _EXACT + "; the paper prints the limit 2Ψ (one micro-batch, partition_reduce=reduce_scatter; all_reduce: "
              "3Φ(N−1)/N, limit 3Φ); micro_batches=m: m micro-batches per step",
              (_MICRO_BATCHES,
               Option("grad_reduce", "per_micro_batch", GRAD_REDUCE,
                      "per_micro_batch: DeepSpeed ZeRO ≥ 2 reduces after every micro-batch (the sharded "
                      "gradient cannot accumulate the full one); per_step: once, which needs ZeRO-1's full "
                      "gradient memory"), _PARTITION_REDUCE),
              build_zero12),
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
              build_zero3),
    _strategy("hsdp", "Hybrid sharded data parallel",
              "ZeRO-3 inside each node of G GPUs; the Φ/G shard gradients all-reduced across the N/G replicas",
              ZHAO + ", §3.2.2 (hybrid sharding)",
              _EXACT + "; shard group = the G GPUs of a node (α, β), replica group across nodes (α_inter, β_inter)",
              (), build_hsdp, (rules.divisible(N, G),)),
    _strategy("tp", "Tensor parallel (Megatron)",
              "per layer, 2 all-reduces of b·s·h in the forward (attention and MLP outputs) and 2 in the backward",
              SHOEYBI + ", §3; " + NARAYANAN + ", §3.2",
              _EXACT + "; per step over L layers (L = 1: per layer); recompute=full adds the forward all-reduces again",
              (Option("algorithm", "ring", _ALL_REDUCE, "all-reduce algorithm"), _TP_RECOMPUTE),
              build_tp, (rules.divisible(a, N),)),
    _strategy("sp", "Tensor + sequence parallel (Megatron)",
              "each TP all-reduce becomes an all-gather + a reduce-scatter of b·s·h; sp_regather=1 adds the "
              "backward re-all-gather of the 2 column-parallel inputs (Megatron-LM)",
              KORTHIKANTI + ", §4.2.2; " + MEGATRON_SP_REGATHER,
              _EXACT + "; per step over L layers; recompute=full adds the forward collectives again, recompute=op "
                       "the forward all-gathers",
              (_RECOMPUTE,
               _flag("sp_regather", "1 = the backward all-gathers each column-parallel GEMM's sequence-sharded "
                                    "input again for its weight gradient (Megatron-LM layers.py, Transformer "
                                    "Engine): 10·bsh(t−1)/t per layer; 0 = the gathered input is kept (Korthikanti "
                                    "et al.'s count, torch DTensor tensor parallel): 8·bsh(t−1)/t")),
              build_sp, (rules.divisible(a, N), rules.divisible(s, N))),
    _strategy("pp", "Pipeline parallel",
              "b·s·h activations cross each stage boundary forward, their gradients backward, in m micro-batches",
              HUANG + "; " + NARAYANAN + ", §2.2",
              "elements; per training step, forward + backward; send = an interior stage (N ≥ 3; with N = 2 each "
              "stage sends one direction only); interleaved: v chunks per stage, N·v − 1 chunk boundaries",
              (Option("schedule", "1f1b", _SCHEDULES, "pipeline schedule"),),
              build_pp,
              (rules.divisible(L, N), rules.when("schedule", ("interleaved",), rules.divisible(L, N * v, "L|N*v")),
               rules.when("schedule", ("interleaved",), rules.divisible(m, N)), rules.divisible(b, m)),
              pp_extras),
    _strategy("ep", "Expert parallel (MoE)",
              "per MoE layer, all-to-all dispatch of k·b·s·h routed token copies and the combine back, "
              "forward and backward",
              LEPIKHIN + ", §2.2; " + FEDUS + ", §2.1",
              "elements; per step, forward + backward; uniform routing (each rank keeps 1/N of its tokens); "
              "b·s = the tokens each rank routes; dropless sends k·b·s·h, padded sends f·k·b·s·h",
              (Option("algorithm", "pairwise", _ALL_TO_ALL, "all-to-all algorithm"),
               Option("capacity", "dropless", ("dropless", "padded"),
                      "dropless: exactly the routed copies; padded: buffers padded to capacity factor f")),
              build_ep, (rules.divisible(E, N), TOP_K_OF_E)),
    _strategy("cp_ulysses", "Context parallel, DeepSpeed-Ulysses",
              "per layer, all-to-all of Q, K, V and O forward, the same backward; each rank holds s/N tokens",
              JACOBS + ", §3.1 (the design), §3.2 (its communication analysis)",
              "elements; per step, forward + backward (the paper counts forward); gqa=1: K, V of width h_kv",
              (_flag("gqa", "1 = K and V have width h_kv (grouped-query attention), else h"),),
              build_cp_ulysses, (rules.divisible(s, N), rules.divisible(a, N))),
    _strategy("cp_ring", "Context parallel, ring attention",
              "K and V blocks travel round the ring once per layer forward; K, V again and dK, dV backward",
              LIU + ", §3; " + RING_FLASH_ATTN,
              "elements; per step, forward + backward (the paper counts forward); gqa=1: K, V of width h_kv; "
              "backward=ring_flash_attn sends dK, dV N times, in fp32 (counted in fp32 elements; bytes use 4 "
              "per element whatever --dtype; the formulas shown price them as the others' elements, where eval, the page and "
              "the exports price their 4 bytes: the exports count them in elements of the run's dtype, 4/B_e each)",
              (_flag("gqa", "1 = K and V have width h_kv (grouped-query attention), else h"),
               Option("backward", "minimal", RING_BACKWARDS,
                      "minimal: dK, dV reduce-scattered round the ring, N−1 blocks each (the least any ring can "
                      "send); ring_flash_attn: N blocks each, the last returning them to their owner "
                      "(zhuzilin/ring-flash-attention ring_flash_attn.py)")),
              build_cp_ring, (rules.divisible(s, N),)),
    _strategy("hybrid", "Hybrid layout (d, t, p, c, e)",
              "each axis on its own group, on the sizes that remain for it; Megatron rank order t, c, d, p",
              NARAYANAN + ", §3; " + KORTHIKANTI + "; " + RAJBHANDARI + "; " + MEGATRON_DDP + "; " + DEEPSPEED_ENGINE
              + "; " + FSDP_RUNTIME + "; " + MEGATRON_SP_REGATHER + "; " + MEGATRON_MOE_SP + "; "
              + MEGATRON_MOE_TP + "; " + MEGATRON_SHARED_EXPERT_TP + "; " + MEGATRON_RECOMPUTE + "; " + MEGATRON_INTERLEAVED + "; "
              + MEGATRON_SCATTER_GATHER + "; " + MEGATRON_EMBEDDINGS + "; " + MEGATRON_FP32_GRADS
              + "; framework=deepspeed, zero=1 or 2: " + DEEPSPEED_BUCKET_ALLREDUCE
              + "; framework=fsdp2: " + TORCHTITAN_FSDP_DEFAULTS
              + "; an FP8 recipe under Transformer Engine (framework=megatron, megatron_fsdp): " + TE_FP8_GATHER
              + "; " + TE_AMAX_REDUCTION + "; " + TE_WEIGHT_CACHE,
              "elements; per GPU per step, forward + backward; b = global batch (b/d per replica), m micro-batches; "
              "data-parallel collectives counted as the framework runs them over the m micro-batches; the terms a "
              "framework runs in another width (Megatron's and torchtitan's gradient reductions in fp32, MoE's "
              "per-expert token counts in 8-byte integers, Transformer Engine's FP8 sequence all-gathers in 1-byte "
              "elements and its fp32 amax all-reduces, marked in eval) count their own elements: send, recv and β add them to the others', "
              "and the formulas shown price them as the others' elements, where eval, the page and the exports price "
              "each term's own bytes (a bf16 run's fp32 gradient reduce-scatter at twice the time shown here; the "
              "exports count each term in elements of the run's dtype, B_e bytes each: its bytes/B_e); "
              "TP on L/p layers, DP on the Φ/(t·p) shard over d·c ranks, PP (b/d)(s/c)h per boundary; "
              "rank order t innermost, then c, d, p; a group crosses nodes when the ranks it spans exceed G, and a ring "
              "group across nodes pays α_inter every step and β_inter on 1/k of its elements, β on the rest, k the fewest "
              "of its ranks on a node (G/(the axes inside it) on full nodes; 1 when a group may start mid-node), their "
              "NICs sharing the crossings (NCCL's channels); the busiest "
              "pipeline stage sends forward across nodes once the pipeline spans nodes, backward too when t·c·d ≥ G; "
              "embeddings=1: the tp and dp figures are the last stage's GPU (LM head, cross-entropy, V·h/t shard; "
              "the first stage's only when p = 1), pp stays an interior stage's, so for p ≥ 3 send adds the two "
              "busiest stages (an upper bound on any one GPU); recompute=full: the layers' forward collectives (tp, cp, "
              "ep) again, not the embedding's, the pipeline's or the data-parallel ones; pipeline_split=first_last: the layers' tp, "
              "cp, ep and the dp terms are the last stage's (L_last + (v − 1)·(L − L_first − L_last)/(p·v − 2) layers; "
              "the step model compares every stage), so send is the last stage's GPU's, not the busiest's where a middle "
              "stage holds more layers; their totals count every stage as the last one (but dp with embeddings=1: Φ)",
              HYBRID_OPTIONS,                  # the run setting's options (symcomm.training.settings)
              hybrid_terms, hybrid_checks(), hybrid_extras),
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
