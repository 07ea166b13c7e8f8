"""The hybrid layout (d, t, p, c, e): every axis on its own group, on the sizes that remain for it,
placed in Megatron's rank order; its embedding and LM-head terms, its checks and its extras.
Its options are the run setting's (:mod:`symcomm.training.settings`); its entry is in the registry
(:mod:`symcomm.training.strategies`).
"""

from __future__ import annotations

from dataclasses import replace

import sympy as sp

from ..base.crossing import MESH, ONE_NIC, crossing_of
from ..core import symbols as S
from ..core import rules
from ..core.rules import Rule, When
from .axes import (bubble_fraction, chunks_of, run_data_schedule, dispatch_count_terms, dp_terms, ep_terms,
                   flex_dispatch_terms, kv_width, mla_tp_terms, moe_probs_tp_terms, moe_tp_terms, pipeline_share, pp_terms, ranks_per_node,
                   replica_terms, ring_terms, routed_per_token, sp_regather_of, spans, spread_over_nics, tp_terms, ulysses_terms)
from . import flops
from .frameworks import CP_ALGORITHMS, FRAMEWORKS, MEGATRON_CORE, choices
from .megatron_features import EXPERT_TP_SIZE, FLEX_DISPATCHERS
from .settings import (ROUTER_GROUPS, SP_INPUT_LINEARS, TORCH_PIPELINING_FRAMEWORKS, RunSetting, fp8_amax_reduced,
                       fp8_grad_gather_of, fp8_tp_gather_of)
from .stages import block_checks, block_share, split_checks, stage_layers
from .terms import Term

Phi, b, s, h, N, G = S.Phi, S.b, S.s, S.h, S.N, S.G
L, m, v, k, f, E, h_kv, a = S.L, S.m, S.v, S.k, S.f, S.E, S.h_kv, S.a
d, t, p, c, e, L_moe, Phi_E, V = S.d, S.t, S.p, S.c, S.e, S.L_moe, S.Phi_E, S.V


def hybrid_terms(**options) -> tuple[Term, ...]:
    """The hybrid layout's terms for its busiest GPU: the last pipeline stage's (its layers, the LM head);
    with pipeline_split=first_last the layer collectives are tagged as the last stage's, since the stages differ
    (the step model compares every stage kind: :func:`stage_terms`)."""
    run = RunSetting(**options)
    terms = stage_terms(run, "last")
    if run.pipeline_split == "even":
        return terms
    return tuple(replace(term, stage="last") if term.axis in ("tp", "cp", "ep", "dp") and not term.stage else term
                 for term in terms)


def stage_terms(run: RunSetting, kind: str) -> tuple[Term, ...]:
    """The terms of one GPU of a pipeline stage of this kind (symcomm.training.stages.KINDS): its layers'
    tp, cp and ep collectives, the pipeline's (an interior stage's sends, for every kind), the embedding's
    (first) or the LM head's and loss's (last; the first's too when p = 1), and the data-parallel reductions
    of the parameters it holds.  With pipeline_split=even the last stage's are exactly the hybrid strategy's."""
    # the typed run setting; "sp" is read into sp_on, since a name sp would hide sympy; the layers'
    # forward collectives run again only under full recompute (RunSetting.forward_reruns)
    zero, sp_on, recompute, schedule = run.zero, run.sp, run.forward_reruns, run.schedule
    scatter_gather, cp, gqa, moe = run.scatter_gather, run.cp, run.gqa, run.moe
    data = run_data_schedule(run)
    regather = sp_regather_of(run.framework, run.sp_regather)
    replica_batch = b / d                      # sequences of one data-parallel replica
    local_seq = s / c                          # tokens of each sequence on one CP rank
    even = run.pipeline_split == "even"
    layers = stage_layers(run.pipeline_split, schedule, kind)    # layers on one pipeline stage: L/p when even
    n_gpus = t * c * d * p
    terms: list[Term] = []

    # TP on the replica batch and the local sequence, the stage's layers, every micro-batch; an MoE layer
    # has no dense MLP, hence no MLP-block collectives (MEGATRON_MOE_TP); MoE layers in the model's proportion
    moe_layers = (L_moe / p if even else L_moe * layers / L) if moe else 0
    mla = run.attention == "mla"
    # multi-token prediction on the last stage (flops.MEGATRON_MTP): each of the D_mtp depths runs one layer of the
    # decoder's last kind (with mamba=1 two blocks, '*E'), its collectives as such a layer's; the weight-gradient
    # reductions count the MTP layers held (mtp_layers_held: one when the depths share it)
    mtp_here = run.mtp_on and kind == "last"
    mtp_runs = S.D_mtp if mtp_here else sp.Integer(0)
    mtp_held = mtp_layers_held(run.mtp) if mtp_here else sp.Integer(0)
    moe_held = moe_layers + (mtp_held if moe else 0)
    # the stage's dense decoder layers, whose MLP Megatron-Core's recompute module mlp runs again (an MoE layer's is
    # not: transformer_layer.py recomputes the MLP only where not self.is_moe_layer); an MTP depth of an MoE model is
    # an MoE layer, one of a dense model a dense one
    dense_layers = layers - moe_layers + (0 if moe else mtp_runs)
    moe_layers = moe_layers + (mtp_runs if moe else 0)
    run_layers = layers + mtp_runs * (2 if run.mamba else 1)
    # every ring group below spreads its node crossings over the NICs of its ranks on a node
    # (axes.spread_over_nics), its ranks standing the product of the axes inside it apart (1 for t, t for c, d), the
    # product of the axes outside it the number of its spans one after another
    # PyTorch's non-reentrant checkpoint stops a layer's recompute before its last collective (RECOMPUTE_EARLY_STOP)
    stops_early = run.framework_row.recompute_stops_early
    terms += spread_over_nics(tp_terms(t, replica_batch * local_seq * h, run_layers, recompute=recompute, sp_on=sp_on,
                                       recompute_gathers=run.gathers_rerun, stops_early=stops_early,
                                       groups=n_gpus / t, across=spans(t, G), micro=m, regather=regather,
                                       moe_layers=moe_layers, mla_layers=layers + mtp_runs if mla else 0,
                                       blocks_per_layer=1 if run.mamba else 2,
                                       mlp_again=dense_layers if "mlp" in run.modules else None,
                                       gather_dtype="fp8" if fp8_tp_gather_of(run) else "",
                                       grad_gather_dtype="fp8" if fp8_grad_gather_of(run) else "",
                                       amax_reduced=fp8_amax_reduced(run),
                                       input_linears=SP_INPUT_LINEARS.get(run.sp_input),
                                       # the MoE layers with a shared expert (E_s ≥ 1): its MLP on the TP group
                                       shared_layers=moe_layers * sp.Min(S.E_s, 1) if moe else 0), 1, c * d * p)
    if mla and sp_on:
        terms += spread_over_nics(mla_tp_terms(t, replica_batch * local_seq, layers + mtp_runs, recompute,
                                               groups=n_gpus / t, across=spans(t, G), micro=m, regather=regather,
                                               latents=mla_latents()), 1, c * d * p)
        # the duplicated down projections' weight gradients, partial over the s/t tokens of each rank, are
        # summed over the TP group once per step (MEGATRON_MLA_SP: finalize_model_grads.py)
        down = h * (S.q_lora + S.kv_lora + S.d_rope)
        terms += spread_over_nics((Term("all_reduce", "ring", t, down * (layers + mtp_held), 1,
                                        "MLA down-projection weight-gradient all-reduce (sequence parallel)",
                                        n_gpus / t, spans(t, G), "tp", phase="after backward",
                                        dtype=data.grad_dtype),), 1, c * d * p)

    # CP on its group: K/V heads split by TP; MLA's K (a·(d_nope + d_rope)) and V (a·d_v) after the
    # up-projection, the pair counted at their mean width (MLA_CONTEXT_PARALLEL)
    kv = mla_kv_mean() if mla else kv_width(gqa)
    # mamba=1: the attention blocks only; each MTP depth one more
    attention_layers = (layers * S.L_att / L if run.mamba else layers) + mtp_runs
    if cp in ("ring", "ring_flash_attn"):
        # with c = 1 no attention runs over a ring (ring_terms: the return sends vanish with the group)
        terms += spread_over_nics(ring_terms(c, replica_batch, s, kv / t, attention_layers, n_gpus / c, spans(t * c, G), m,
                                             backward="ring_flash_attn" if cp == "ring_flash_attn" else "minimal",
                                             recompute=recompute), t, d * p)
    else:
        # Ulysses moves Q (as wide as K) and O (as wide as V) too
        width = (a * (S.d_nope + S.d_rope) + a * S.d_v) / 2 if mla else h
        # pairwise all-to-alls: k − 1 of a rank's c − 1 peers share its node (base.crossing.PEERS), as the ring's
        terms += spread_over_nics(ulysses_terms(c, replica_batch, s, width / t, kv / t, attention_layers, n_gpus / c,
                                                spans(t * c, G), m, recompute=recompute), t, d * p)

    # EP: tokens of this rank (1/t of them with SP), MoE layers of this stage; the dispatcher gathers the routed
    # tokens over the expert-tensor-parallel group of etp ranks (the TP group's t by default, 1 or t_e), the
    # innermost axis of Megatron-Core's expert grid tp-ep-dp-pp (parallel_state.py), so the e ranks of an EP group
    # stand etp apart (MEGATRON_EXPERT_GRID)
    etp = expert_tp_size(run.expert_tp)
    # LatentMoE: the dispatcher sends the tokens projected to h_lat (token_dispatcher.py: moe_latent_size or h)
    width = S.h_lat if run.moe_latent else h
    if moe:
        # Megatron-Core's recompute module moe reruns the whole MoE layer, its dispatch and combine with it
        recompute_moe = recompute or "moe" in run.modules
        tokens_h = replica_batch * local_seq * width / (t if sp_on else 1)
        # spanning nodes, k − 1 of a rank's e − 1 peers share its node (base.crossing.PEERS), its k the fewest
        # ranks of the EP group a node holds, the group's ranks etp apart
        ep_inner = etp
        ep_across = spans(e * ep_inner, G)
        if run.dispatcher in FLEX_DISPATCHERS:
            # the flex dispatcher (axes.FLEX_DISPATCH), expert_tp=1 or t = 1 (hybrid_checks): a rank's own tokens,
            # the group's r ranks on a node as the all-to-all's PEERS rule counts them (one NIC when unaligned)
            on_node = ranks_per_node(e, ep_inner, n_gpus / (e * ep_inner))
            terms += flex_dispatch_terms(e, tokens_h / width, width, moe_layers, on_node, groups=n_gpus / e,
                                         across=ep_across, micro=m, recompute=recompute_moe,
                                         router=(run.router_groups, run.router_group_topk), stops_early=stops_early)
        else:
            # Megatron-Core's dispatcher sends each routed copy's router probability too (axes.MEGATRON_PROBS_A2A)
            probs = tokens_h / width if run.framework in MEGATRON_CORE else None
            terms += spread_over_nics(ep_terms(e, tokens_h, moe_layers, "dropless", groups=n_gpus / e,
                                               across=ep_across, micro=m, recompute=recompute_moe,
                                               stops_early=stops_early, probs_tokens=probs),
                                      ep_inner, n_gpus / (e * ep_inner))
        if run.dispatcher != "alltoall_padded":
            # dropless: the counts reach the host before each MoE layer's dispatch (axes.DISPATCH_HOST_WAIT), over the
            # TPxEP group (the expert group and, with expert_tp = tp, its t ranks)
            terms += spread_over_nics(dispatch_count_terms(e * ep_inner, moe_layers, groups=n_gpus / (e * ep_inner),
                                                           across=ep_across, micro=m, recompute=recompute_moe),
                                      1, n_gpus / (e * ep_inner))
        if sp_on and run.moe_latent:
            # the latent projections, duplicated on every TP rank, each see the rank's own s/t tokens: their weight
            # gradients are summed over the TP group once per step, as MLA's down projections (MEGATRON_MLA_SP)
            terms += spread_over_nics((Term("all_reduce", "ring", t, 2 * h * S.h_lat * moe_held, 1,
                                            "MoE latent-projection weight-gradient all-reduce (sequence parallel)",
                                            n_gpus / t, spans(t, G), "tp", phase="after backward",
                                            dtype=data.grad_dtype),), 1, c * d * p)
        if run.expert_tp == "t_e" or (sp_on and run.expert_tp == "tp"):
            # the etp ranks' received copies, each rank's own 1/t of the replica's tokens gathered from etp ranks
            # (token_dispatcher.py, MoEAlltoAllTokenDispatcher: gather_from_sequence_parallel_region over the expert
            # TP group whenever its size exceeds 1); with expert_tp=tp only under SP, which MoE with t > 1 needs
            routed = routed_per_token("dropless") * replica_batch * local_seq * width * etp / t
            terms += spread_over_nics(moe_tp_terms(etp, routed, moe_layers, recompute_moe, groups=n_gpus / etp,
                                                   across=spans(etp, G), micro=m, stops_early=stops_early), 1,
                                      n_gpus / etp)
            if run.framework in MEGATRON_CORE and run.dispatcher not in FLEX_DISPATCHERS:
                # and the routed copies' fp32 probabilities, gathered as the tokens (axes.MEGATRON_PROBS_A2A)
                terms += spread_over_nics(moe_probs_tp_terms(etp, routed / width, moe_layers, recompute_moe,
                                                             groups=n_gpus / etp, across=spans(etp, G), micro=m),
                                          1, n_gpus / etp)

    # PP: one boundary message per micro-batch; /t with SP (already sharded) or scatter-gather
    activation = replica_batch * local_seq * h
    shard = activation / t if (sp_on or scatter_gather) else activation
    # stage s holds ranks [s·tcd, (s+1)·tcd): some boundary crosses a node once the pipeline
    # spans nodes; a stage whose *both* boundaries cross needs G | tcd, i.e. tcd ≥ G. The
    # busiest stage (one crossing the forward way) pays α_inter, β_inter forward, and
    # backward only when tcd ≥ G (G dividing tcd or tcd dividing G, as layouts have it)
    terms += pp_terms(p, shard, schedule, pipelines=t * c * d, across=spans(n_gpus, G),
                      across_backward=spans(t * c * d, G - 1))
    if scatter_gather and not sp_on:
        chunks = chunks_of(schedule)
        for name in ("forward", "backward"):
            terms += spread_over_nics((Term("all_gather", "ring", t, activation / m, chunks * m,
                                            "scatter-gather re-assembly at the receiving stage",
                                            (p * chunks - 1) / chunks * c * d, spans(t, G), "pp",
                                            pipeline_share(p, chunks), name),), 1, c * d * p)

    # the embedding and the LM head: on the first and the last stage (the same one when p = 1)
    embeddings, tied = run.embeddings, run.tied
    replicated = run.tp_embedding == "replicated"
    if embeddings and kind != "middle":
        terms += spread_over_nics(_embedding_terms(activation, replica_batch * local_seq, sp_on, regather, tied,
                                                   groups=c * d, across=spans(t, G), kind=kind,
                                                   replicated=replicated), 1, c * d * p)
    if mtp_here:
        terms += spread_over_nics(_mtp_terms(activation, replica_batch * local_seq, sp_on, regather, groups=c * d,
                                             across=spans(t, G)), 1, c * d * p)
    # the MTP layers' parameters on the last stage (mtp_shards: 0, 0 elsewhere and with mtp=0)
    mtp_dense, mtp_experts = (mtp_shards(run.mtp, run.tied, run.gated, moe,
                                         flops.kind_of_attention(run.attention, run.q_width), run.mamba,
                                         run.moe_latent, run.expert_tp) if mtp_here else (0, 0))

    # DP on the shard each GPU owns, over the d·c ranks that hold the same parameters
    dense = (Phi - Phi_E) if moe else Phi
    if embeddings:
        # the busiest GPU is on the last stage: its L/p layers' share and the V·h/t LM head (or tied
        # embedding copy); with p = 1 one stage holds everything.  groups is set so that the total is
        # the parameters really held: Φ, and one more V·h for a tied copy on the last stage when p > 1
        # tp_embedding=replicated (p = 1: hybrid_checks): the embedding whole on each of the t ranks, (1 − 1/t)·V·h
        # more than its vocabulary-parallel share (tp_plans.TP_EMBEDDING_REPLICATED)
        whole = replicated_embedding_share(replicated)
        busiest = (end_stage_shard(dense, tied) if even else stage_shard(dense, tied, layers, kind)) + mtp_dense + whole
        held = dense + (sp.Piecewise((0, sp.Eq(p, 1)), (V * h, True)) if tied else 0) + mtp_dense * t + whole * t
        # the root unit PyTorch's FSDP wraps apart from the blocks: the end stage's share of the embedding and LM head
        root = end_stage_shard(embedding_parameters(tied), tied) + whole
        blocks = dense - embedding_parameters(tied) + mtp_dense * t
        terms += tuple(replace(term, stage="last")
                       # per-layer ZeRO-3: the end stage's embedding (or LM head) is one more unit (torchtitan
                       # apply_fsdp wraps tok_embeddings and [norm, output] apart from the blocks)
                       for term in _dense_dp(data, busiest, held / busiest, layers + 1, root=root,
                                             # the blocks alone held: Φ less the embedding and LM head (each copy)
                                             root_groups=blocks / (busiest - root),
                                             # the root units: every parameter held less the blocks'
                                             root_unit_groups=(held - blocks) / root))
        if tied:
            # the two copies (first and last stage) sum their gradients once per step
            terms.append(Term("all_reduce", "ring", 2, V * h / t, sp.Piecewise((0, sp.Eq(p, 1)), (1, True)),
                              "tied-embedding gradient all-reduce, first and last stage", t * c * d,
                              spans(n_gpus, G), "dp", phase="after backward", dtype=data.grad_dtype,
                              stage="first and last"))
        elif mtp_here:
            # the MTP stage's embedding copy and the first stage's sum their gradients once per step (mtp_shards)
            terms.append(Term("all_reduce", "ring", 2, V * h / t, sp.Piecewise((0, sp.Eq(p, 1)), (1, True)),
                              "MTP embedding-copy gradient all-reduce, first and last stage", t * c * d,
                              spans(n_gpus, G), "dp", phase="after backward", dtype=data.grad_dtype,
                              stage="first and last"))
    else:
        # an uneven split: this stage's share; groups as even (t·p), so the total counts every stage as this one
        own = dense / (t * p) if even else dense * layers / (L * t)
        terms += _dense_dp(data, own, n_gpus / (d * c), layers)
    if moe:
        # expert parameters: sharded over e, etp and p; replicas are the expert-data ranks, t·d·c/(etp·e) of them;
        # an uneven split: this stage's layers' share
        held, group = expert_shard(run.expert_tp)
        held = (held if even else held * p * layers / L) + mtp_experts
        # the expert-data ranks stand etp·e apart (parallel_state.py's grid)
        terms += spread_over_nics(dp_terms(data, group, held, n_gpus / group, spans(t * c * d, G), "expert ",
                                           moe_held), etp * e, p)
    if run.recompute == "block":
        # the layers' forward collectives run again for the recomputing share of them only (the terms above counted
        # every layer's, as full recompute: RunSetting.forward_reruns)
        share = block_share(schedule)
        terms = [replace(term, count=term.count * share) if term.phase == "forward recompute" else term
                 for term in terms]
    if run.nvlink == MESH:
        # nodes wired point to point: a ring's or an all-to-all's bytes on a node run over its group's pair links there,
        # a pipeline send (one GPU to one GPU) over one pair link; the expert dispatch's legs, sends to many GPUs
        # counted as one, keep the switch's β (base.crossing)
        terms = [replace(term, mesh_gpus=G) if crossing_of(term.primitive, term.algorithm) != ONE_NIC
                 or (term.axis == "pp" and term.primitive == "send_recv") else term for term in terms]
    return tuple(terms)


#: Megatron-Core's MLA under context parallelism: the core attention (Transformer Engine's
#: DotProductAttention with cp_comm_type p2p or a2a) receives K of a·(qk_head_dim + qk_pos_emb_head_dim) and V
#: of a·v_head_dim per token, already up-projected (megatron/core/transformer/multi_latent_attention.py,
#: get_query_key_value_tensors, commit d98e8a6): those are what travel, not the latents
MLA_CONTEXT_PARALLEL = ("Megatron-LM megatron/core/transformer/multi_latent_attention.py (commit d98e8a6): K "
                        "a·(d_nope + d_rope) and V a·d_v per token reach the context-parallel core attention")


#: Megatron-Core's MLA under sequence parallelism (megatron/core/transformer/multi_latent_attention.py,
#: _qkv_down_projection and get_query_key_value_tensors; core/models/gpt/gpt_layer_specs.py: the up projections are
#: column-parallel, the down projections plain linears; extensions/transformer_engine.py: a 'duplicated' linear's
#: weight is marked sequence_parallel; distributed/finalize_model_grads.py sums such gradients over the TP group)
MEGATRON_MLA_SP = ("Megatron-LM (commit d98e8a6) megatron/core/transformer/multi_latent_attention.py: the q and kv "
                   "down projections run duplicated on each TP rank's s/t tokens; the column-parallel up projections "
                   "all-gather the q_lora and kv_lora latents and the rotary key (d_rope) is all-gathered apart; "
                   "extensions/transformer_engine.py marks the duplicated weights sequence_parallel and "
                   "distributed/finalize_model_grads.py all-reduces their gradients over the TP group")


def mla_latents() -> tuple:
    """(what, width per token, re-gathered for a weight gradient) of MLA's input-side all-gathers under
    sequence parallel (MEGATRON_MLA_SP): the query latent (q_lora; the h-wide input when q_lora = 0,
    no query compression), the K, V latent (kv_lora), the rotary key (d_rope: not a linear's input)."""
    query = sp.Piecewise((h, sp.Eq(S.q_lora, 0)), (S.q_lora, True))
    return (("query latent", query, True), ("K, V latent", S.kv_lora, True), ("rotary key", S.d_rope, False))


def mla_kv_mean() -> sp.Expr:
    """The mean of MLA's K and V widths per token, (a·(d_nope + d_rope) + a·d_v)/2: the ring's K, V
    pair (2 blocks of this width) moves K and V's a·(d_nope + d_rope + d_v) elements per token."""
    return a * (S.d_nope + S.d_rope + S.d_v) / 2


def _dense_dp(data, shard, groups, units, root=0, root_groups=None, root_unit_groups=None) -> tuple:
    """The data-parallel collectives of the ``shard`` a GPU holds of the dense parameters (``groups`` of its d·c
    replica ranks hold the stage's), ``units`` per-layer units: over the d·c ranks, or under hybrid sharding
    (``data.replicas``, frameworks.HSDP_SOURCE) over the d·c/d_r ranks of a shard group, t apart, every reduced shard
    then all-reduced over the replicas, t·d·c/d_r apart; ``root``, ``root_groups``: the shard's root-unit parameters
    and the groups of its blocks and of the root unit (axes.dp_terms)."""
    group = d * c / data.replicas
    return (spread_over_nics(dp_terms(data, group, shard, groups * data.replicas, spans(t * group, G), "", units,
                                      root, None if root_groups is None else root_groups * data.replicas,
                                      None if root_unit_groups is None else root_unit_groups * data.replicas),
                             t, p * data.replicas)
            + spread_over_nics(replica_terms(data, group, shard, groups * group, spans(t * c * d, G), units, root,
                                             None if root_groups is None else root_groups * group,
                                             None if root_unit_groups is None else root_unit_groups * group),
                               t * group, p))


#: Megatron-Core's expert grid: expert tensor × expert × expert data × pipeline = the world, in that order (innermost
#: first), its expert tensor size --expert-tensor-parallel-size defaulting to the TP size; the alltoall dispatcher
#: all-to-alls over the expert group and gathers over the expert tensor group whenever it exceeds one rank
MEGATRON_EXPERT_GRID = ("NVIDIA/Megatron-LM megatron/core/parallel_state.py at d98e8a64 (initialize_model_parallel: "
                        "expert_tensor_parallel_size defaults to tensor_model_parallel_size; the expert RankGenerator "
                        "tp=expert_tensor_parallel_size, ep, dp=world/(etp·ep·pp), pp) and megatron/core/transformer/"
                        "moe/token_dispatcher.py (MoEAlltoAllTokenDispatcher: tp_group = the expert TP group, "
                        "gather_from_sequence_parallel_region over it when its size exceeds 1)")


def expert_tp_size(expert_tp: str = "tp") -> sp.Expr:
    """The expert tensor-parallel size of the ``expert_tp`` setting: t (tp, Megatron-Core's default), 1, or the
    typed t_e (:data:`MEGATRON_EXPERT_GRID`)."""
    size = EXPERT_TP_SIZE[expert_tp]
    return sp.Integer(1) if size is None else S.symbol(size)


def expert_shard(expert_tp: str = "tp"):
    """(expert parameters one GPU holds, the expert-data-parallel group holding the same ones):
    Megatron-Core's expert grid (:data:`MEGATRON_EXPERT_GRID`: expert tensor × expert × expert data × pipeline =
    the world) gives Φ_E/(e·etp·p) over t·d·c/(e·etp) ranks at the expert tensor size etp
    (:func:`expert_tp_size`): Φ_E/(e·t·p) over d·c/e at its default t, the experts whole, Φ_E/(e·p) over t·d·c/e,
    with 1."""
    etp = expert_tp_size(expert_tp)
    return Phi_E / (e * etp * p), t * d * c / (e * etp)


def mtp_layers_held(mtp: str) -> sp.Expr:
    """MTP layers whose parameters the last stage holds: one when the depths share it (mtp=shared,
    mtp_use_repeated_layer), else one per depth, D_mtp (flops.MEGATRON_MTP)."""
    return sp.Integer(1) if mtp == "shared" else S.D_mtp


def mtp_shards(mtp: str, tied: bool, gated: bool, moe: bool, attention: str, mamba: bool, latent: bool,
               expert_tp: str = "tp") -> tuple[sp.Expr, sp.Expr]:
    """(parameters outside the routed experts, routed experts' parameters) one GPU of the last stage holds for
    multi-token prediction (0, 0 with mtp=0): its MTP layers (:func:`mtp_layers_held`, flops.mtp_parameters) over t,
    the experts over e (and t with expert_tp=tp, :func:`expert_shard`'s split), and with p > 1 and untied embeddings a
    copy of the V·h embedding the depths read (Megatron-Core language_module.py at d98e8a64,
    setup_embeddings_and_output_layer: the MTP stage builds the embedding, a duplicate of the first stage's, its
    gradient all-reduced with it: distributed/finalize_model_grads.py, _allreduce_word_embedding_grads)."""
    if mtp == "0":
        return sp.Integer(0), sp.Integer(0)
    held = mtp_layers_held(mtp)
    dense, experts = flops.mtp_parameters(gated, moe, attention, mamba, latent)
    copy = 0 if tied else sp.Piecewise((0, sp.Eq(p, 1)), (V * h, True))
    return (held * dense + copy) / t, held * experts / (e * expert_tp_size(expert_tp))


def replicated_embedding_share(replicated: bool) -> sp.Expr:
    """The parameters one GPU holds beyond its vocabulary-parallel share of the embedding under tp_embedding=replicated
    (the whole V·h on each of the t ranks, p = 1: tp_plans.TP_EMBEDDING_REPLICATED): (1 − 1/t)·V·h; 0 otherwise."""
    return V * h * (1 - 1 / t) if replicated else sp.Integer(0)


def embedding_parameters(tied: bool) -> sp.Expr:
    """The parameters of the V·h embedding and LM head counted in Φ: one V·h tied, two untied."""
    return V * h * (1 if tied else 2)


def end_stage_shard(dense, tied: bool) -> sp.Expr:
    """Parameters one GPU of an end pipeline stage holds: its L/p layers' share of the non-embedding
    parameters and one V·h embedding (or LM head, or tied copy), over t; with p = 1 the one stage
    holds all of ``dense`` (Φ, or Φ − Φ_E with experts), which counts V·h once tied, twice untied."""
    in_phi = embedding_parameters(tied)
    return sp.Piecewise((dense / t, sp.Eq(p, 1)), (((dense - in_phi) / p + V * h) / t, True))


def stage_shard(dense, tied: bool, layers, kind: str) -> sp.Expr:
    """Parameters one GPU of a stage of this kind holds under an uneven split: its ``layers``' share of the
    non-embedding parameters (``dense`` less the V·h embedding and LM head, or the one tied copy) and, on
    the first and the last stage, one V·h (the embedding; the LM head or the tied copy), over t; with p = 1
    the one stage holds all of ``dense`` (as :func:`end_stage_shard`)."""
    in_phi = embedding_parameters(tied)
    ends = 0 if kind == "middle" else V * h
    return sp.Piecewise((dense / t, sp.Eq(p, 1)), (((dense - in_phi) * layers / L + ends) / t, True))


def _mtp_terms(activation, tokens, sp_on, regather, groups, across) -> tuple[Term, ...]:
    """The tensor-parallel collectives of the D_mtp multi-token-prediction depths on the last stage, per micro-batch,
    beside their layers' (counted with the stage's): each depth's embedding lookup as the first stage's
    (VocabParallelEmbedding: reduce-scatter with sequence parallel, else all-reduce) and its output head and
    cross-entropy as the last stage's (:func:`_embedding_terms`); its eh_proj (multi_token_prediction.py at d98e8a64,
    _concat_embeddings: a ColumnParallelLinear 2h → h/t with gather_output=False, then
    gather_from_tensor_model_parallel_region over the hidden width and, with sequence parallel,
    scatter_to_sequence_parallel_region): with sequence parallel its 2h-wide input all-gathered and that gradient
    reduce-scatter (re-gathered for the weight gradient with ``regather``), the output all-gathered forward and the
    scatter's gradient all-gathered backward; without, the output all-gathered and the input gradient all-reduced."""
    depths = S.D_mtp
    head = tuple(replace(term, count=term.count * depths, what="MTP " + term.what)
                 for term in _embedding_terms(activation, tokens, sp_on, regather, False, groups, across, "last")
                 if term.stage == "last")
    lookup = tuple(replace(term, count=term.count * depths, stage="last",
                           what="MTP " + term.what.replace("(first stage)", "(last stage)"))
                   for term in _embedding_terms(activation, tokens, sp_on, regather, False, groups, across, "first"))
    if sp_on:
        eh = [Term("all_gather", "ring", t, 2 * activation / m, depths * m, "MTP eh_proj input all-gather (last stage)",
                   groups, across, "tp", phase="forward", stage="last"),
              Term("all_gather", "ring", t, activation / m, depths * m, "MTP eh_proj output all-gather (last stage)",
                   groups, across, "tp", phase="forward", stage="last"),
              Term("all_gather", "ring", t, activation / m, depths * m, "MTP sequence-scatter gradient all-gather "
                   "(last stage)", groups, across, "tp", phase="backward", stage="last"),
              Term("reduce_scatter", "ring", t, 2 * activation / m, depths * m, "MTP eh_proj input-gradient "
                   "reduce-scatter (last stage)", groups, across, "tp", phase="backward", stage="last")]
        if regather:
            eh.append(Term("all_gather", "ring", t, 2 * activation / m, depths * m, "MTP eh_proj input re-all-gather "
                           "for the weight gradient (last stage)", groups, across, "tp", phase="backward",
                           stage="last"))
    else:
        eh = [Term("all_gather", "ring", t, activation / m, depths * m, "MTP eh_proj output all-gather (last stage)",
                   groups, across, "tp", phase="forward", stage="last"),
              Term("all_reduce", "ring", t, 2 * activation / m, depths * m, "MTP eh_proj input-gradient all-reduce "
                   "(last stage)", groups, across, "tp", phase="backward", stage="last")]
    return head + lookup + tuple(eh)


def _embedding_terms(activation, tokens, sp_on, regather, tied, groups, across, kind="last",
                     replicated=False) -> tuple[Term, ...]:
    """The vocabulary-parallel embedding (first stage) and LM head + cross-entropy (last
    stage), per micro-batch, over the t ranks of a stage; ``activation`` = the replica's
    (b/d)·(s/c)·h, ``tokens`` = its (b/d)·(s/c).  ``kind`` last: the last stage's terms carry the GPU,
    the first stage's count for it only when p = 1 (one stage holds both); ``kind`` first: the first
    stage's only, all counted.  ``replicated`` (tp_embedding=replicated): the embedding whole on each rank, its
    output split by sequence locally, no forward collective; the gradient's all-gather stays (with sp=1)."""
    if kind == "first":
        return tuple(replace(term, busiest=sp.Integer(1))
                     for term in _embedding_terms(activation, tokens, sp_on, regather, tied, groups, across, "last",
                                                  replicated)
                     if term.stage == "first")
    first = sp.Piecewise((1, sp.Eq(p, 1)), (0, True))
    out = []
    if sp_on:
        # a whole embedding's output is split by sequence locally: no forward collective
        out += [] if replicated else [Term("reduce_scatter", "ring", t, activation / m, m,
                                           "embedding-output reduce-scatter (first stage)", groups, across, "tp",
                                           first, "forward", stage="first")]
        out += [Term("all_gather", "ring", t, activation / m, m, "embedding-gradient all-gather (first stage)",
                     groups, across, "tp", first, "backward", stage="first"),
                Term("all_gather", "ring", t, activation / m, m, "LM-head input all-gather (last stage)",
                     groups, across, "tp", phase="forward", stage="last"),
                Term("reduce_scatter", "ring", t, activation / m, m, "LM-head input-gradient reduce-scatter "
                     "(last stage)", groups, across, "tp", phase="backward", stage="last")]
        if regather:
            out.append(Term("all_gather", "ring", t, activation / m, m, "LM-head input re-all-gather for the "
                            "weight gradient (last stage)", groups, across, "tp", phase="backward", stage="last"))
    else:
        out += [] if replicated else [Term("all_reduce", "ring", t, activation / m, m,
                                           "embedding-output all-reduce (first stage)", groups, across, "tp", first,
                                           "forward", stage="first")]
        out += [Term("all_reduce", "ring", t, activation / m, m, "LM-head input-gradient all-reduce (last stage)",
                     groups, across, "tp", phase="backward", stage="last")]
    # in fp32: Megatron-Core's vocabulary-parallel cross entropy casts the logits to float before the max
    # (megatron/core/tensor_parallel/cross_entropy.py, calculate_logits_max: vocab_parallel_logits.float()), so
    # the three reductions move fp32 tokens; torchtitan's loss, over DTensor logits, calls .float() first too
    out.append(Term("all_reduce", "ring", t, tokens / m, 3 * m, "cross-entropy all-reduces: max, target logit, "
                    "sum of exponentials (last stage)", groups, across, "tp", phase="forward", stage="last",
                    dtype="fp32"))
    return tuple(out)


def hybrid_extras(schedule, pipeline_split="even", mamba=False, ga_schedules=False, **_) -> dict:
    """The bubble fraction (each of the n_ga schedules' own under ga_schedules=1) and the GPUs; with an uneven split the transformer layers one GPU of each stage kind
    holds (symcomm.training.stages: the middle figure applies when p ≥ 3); with mamba=1 the attention and Mamba
    layers the last stage holds, in the model's proportion (every layer count of the hybrid then read, so that its
    rules, L at least L_att + L_ssm (+ L_moe), are checked on every answer)."""
    out = {"bubble_fraction": bubble_fraction(p, schedule, S.n_ga if ga_schedules else 1), "gpus": t * c * d * p}
    if pipeline_split != "even":
        out.update({f"layers_{kind}_stage": stage_layers(pipeline_split, schedule, kind)
                    for kind in ("first", "middle", "last")})
    if mamba:
        layers = stage_layers(pipeline_split, schedule, "last")
        out.update({"attention_layers_stage": layers * S.L_att / L, "mamba_layers_stage": layers * S.L_ssm / L})
    return out


_REPLICATED_EMBEDDING_ONE_STAGE = rules.fixed(p, 1, "tp_embedding=replicated with p={x} is not modelled: a whole "
                                                   "embedding makes the first stage heavier than the last, which the "
                                                   "stage counts do not hold; give p=1 or tp_embedding=vocab_parallel")
_REPLICATED_EMBEDDING_NEEDS_TP = Rule("at_least", t, sp.Integer(2), "tp_embedding=replicated with t={x} places nothing "
                                      "(a whole embedding on each of t >= {y} tensor-parallel ranks); give t >= 2 or "
                                      "tp_embedding=vocab_parallel", "t ≥ 2")
_NO_EXPERTS = rules.fixed(e, 1, "e={x} needs moe=1 (and L_moe, Phi_E); without MoE layers e must be 1")
_MOE_NEEDS_SP = rules.fixed(t, 1, "moe=1 with t={x} needs sp=1: Megatron-Core refuses MoE with tensor parallelism without "
                                  "sequence parallelism (megatron/core/transformer/moe/moe_layer.py)")


_FLEX_NEEDS_TE1 = rules.fixed(S.t_e, 1, "dispatcher=deepep or hybridep with t_e={x} needs an expert tensor-parallel "
                                        "size of 1: the flex dispatcher with expert tensor parallelism is not "
                                        "modelled (token_dispatcher.py, MoEFlexTokenDispatcher)")
_FLEX_NEEDS_ETP1 = rules.fixed(t, 1, "dispatcher=deepep or hybridep with t={x} needs expert_tp=1: the flex dispatcher "
                                     "then sends each token to every TP rank of an expert (its TPxEP group: "
                                     "token_dispatcher.py, MoEFlexTokenDispatcher), which is not modelled")


# the flex dispatcher's expected destination nodes D(n) = n·(1 − (1 − 1/n)^k) (axes.flex_dispatch_terms) need a whole
# n = e/r: an EP group of e > G consecutive ranks (expert_tp=1, or t = 1) that G does not divide fills its last node
# with e mod G ranks (GB200 NVL72, e = 128: 72 and 56), so n = e/(e mod G) is a fraction no placement has (and
# with several such groups, ranks_per_node's one-NIC bound counts e nodes of one rank each, no placement either;
# a group of e ≤ G is priced as before: one node, or the one-NIC bound when it straddles two).  Min(e, G)
# divides e exactly when e ≤ G or G | e, the one divides rule the exports and the planner's kernels already read.
_FLEX_NEEDS_WHOLE_NODES = Rule("divides", sp.Min(e, G), e,
                               "dispatcher=deepep or hybridep with e={y} on G={x} GPUs per node needs e at most G or "
                               "a multiple of G: an expert group filling its nodes unequally has no whole number of "
                               "nodes to count its destination nodes over (e/(e mod G) is a fraction)",
                               "e at most G or a multiple of G (flex dispatcher)")


_MAMBA_NEEDS_ONE_CP = rules.fixed(c, 1, "mamba=1 with c={x} is not modelled: Megatron-Core's Mamba mixers run context "
                                         "parallelism by their own all-to-alls (mamba_context_parallel.py), not "
                                         "counted; give c=1")
# the mixer's heads and groups split over the TP ranks (megatron/core/ssm/mamba_mixer.py asserts both)
_MAMBA_CHECKS = (rules.divisible(S.a_ssm, t), rules.divisible(S.g_ssm, t),
                 Rule("at_least", L, S.L_att + S.L_ssm,
                      "L={x} must be at least L_att + L_ssm={y}: the attention and Mamba layers are among the L",
                      "L ≥ L_att + L_ssm"))
_MAMBA_MOE_LAYERS = Rule("at_least", L, S.L_att + S.L_ssm + L_moe,
                         "L={x} must be at least L_att + L_ssm + L_moe={y}: the attention, Mamba and MoE layers are "
                         "among the L", "L ≥ L_att + L_ssm + L_moe")


def _framework_limits() -> tuple[When, ...]:
    """A framework's pipeline, context-parallel and expert-parallel limits (symcomm.training.frameworks: pipeline_zero,
    cp_algorithms, expert_parallel): DeepSpeed's pipeline engine refuses ZeRO-2 and -3, its sequence parallelism is
    Ulysses, and PyTorch's FSDP1 places no experts."""
    out = []
    for row in FRAMEWORKS.values():
        if not row.pipeline_zero:
            out.append(rules.when("framework", (row.name,), rules.fixed(
                p, 1, f"framework={row.name} with p={{x}} is refused: it runs no pipeline ({row.limits_where}); "
                      "give p=1")))
        for zero in sorted(set(row.zero_stages) - set(row.pipeline_zero)) if row.pipeline_zero else ():
            out.append(rules.when("framework", (row.name,), rules.when("zero", (zero,), rules.fixed(
                p, 1, f"framework={row.name} with zero={zero} needs p=1 (p={{x}}): its pipeline engine runs ZeRO "
                      f"stage {choices(map(str, row.pipeline_zero))} only ({row.limits_where}); give zero="
                      f"{max(row.pipeline_zero)} or p=1"))))
        if not row.expert_parallel:
            out.append(rules.when("framework", (row.name,), rules.when("moe", (True,), rules.fixed(
                S.e, 1, f"framework={row.name} with e={{x}} is refused: it runs no expert parallelism ({row.ep_where}); "
                        "give e=1 (the experts sharded with the rest) or a framework that places experts: "
                        f"{choices(n for n, r in FRAMEWORKS.items() if r.expert_parallel)}"))))
        refused = tuple(cp for cp in CP_ALGORITHMS if cp not in row.cp_algorithms)
        if not row.cp_algorithms:
            out.append(rules.when("framework", (row.name,), rules.fixed(
                c, 1, f"framework={row.name} with c={{x}} is refused: it runs no context parallelism "
                      f"({row.cp_where}); give c=1")))
        elif refused:
            out.append(rules.when("framework", (row.name,), rules.when("cp", refused, rules.fixed(
                c, 1, f"framework={row.name} with c={{x}} needs cp={' or '.join(row.cp_algorithms)}: its sequence "
                      f"parallelism is that only ({row.cp_where}); give cp={row.cp_algorithms[0]} or c=1"))))
        if row.cp_grad_dtype is not None:
            # the element type is the framework's default and its config's choice at once: eval asks which (the
            # planner prices its default, frameworks.Framework.cp_grad_dtype)
            out.append(rules.when("framework", (row.name,), rules.when("cp", row.cp_algorithms, rules.when(
                "grad_dtype", (None,), rules.fixed(
                c, 1, f"framework={row.name} with c={{x}} needs grad_dtype given: with context parallelism it reduces "
                      f"the gradients in another element type ({row.cp_grad_where}); give grad_dtype="
                      f"{row.cp_grad_dtype} (its default) or grad_dtype=same (a config that sets the run's own)")))))
    return tuple(out)


#: the ring variants of context parallelism, whose causal split is load-balanced (Ulysses splits the heads)
RING_CPS = ("ring", "ring_flash_attn")
#: c ≥ 2 ranks of ring attention cut the sequence into 2c chunks, each rank the i-th and (2c − 1 − i)-th, so that the
#: causal work is even: Megatron-Core requires it (megatron/core/utils.py get_batch_on_this_cp_rank views the sequence
#: as 2·cp_size chunks), PyTorch's context parallel balances only then (torch/distributed/tensor/experimental/
#: _context_parallel/_load_balancer.py, _create_default_load_balancer), and the step model prices the even split
_CAUSAL_SPLIT = Rule("divides", c * sp.Min(c, 2), s,
                     "s={y} must be divisible by 2c={x}: ring attention's causal split cuts the sequence into 2c chunks "
                     "(Megatron-Core's get_batch_on_this_cp_rank; PyTorch's context parallel balances only then), as "
                     "the step model prices it", "2c | s (c ≥ 2)")


#: sequence parallelism splits each CP rank's s/c tokens over the t ranks: Megatron-Core's scatter to the
#: sequence-parallel region asserts it (megatron/core/tensor_parallel/mappings.py, _split_along_first_dim: 'First
#: dimension of the tensor should be divisible by tensor parallel size'), and the step model prices s/(c·t) a rank
_SP_SPLIT = Rule("divides", t * c, s,
                 "s={y} must be divisible by t·c={x} with sp=1: sequence parallelism splits each CP rank's s/c tokens "
                 "over the t ranks (Megatron-Core's _split_along_first_dim asserts it), as the step model prices it; "
                 "give an s that t·c divides, or sp=0", "t·c | s (sp=1)")


def _embeddings_in_phi() -> tuple[When, ...]:
    """With embeddings=1 the layers hold Φ less the embedding and the LM head (V·h each, one when tied; of the dense
    Φ − Φ_E with MoE layers): a Φ below them left a negative layer (gathered layers of −12 MiB, an outsider's test)."""
    out = []
    for moe, held, said in ((False, Phi, "Phi"), (True, Phi - Phi_E, "Phi - Phi_E")):
        for tied, copies in ((False, 2), (True, 1)):
            out.append(rules.when("embeddings", (True,), rules.when("moe", (moe,), rules.when("tied", (tied,), Rule(
                "at_least", held, copies * V * h,
                f"{said}={{x}} must be at least the {'embedding and LM head' if copies == 2 else 'tied embedding'}'s "
                f"{copies if copies > 1 else ''}{'·' if copies > 1 else ''}V·h={{y}} (embeddings=1): the layers hold "
                f"the rest; give the model's whole count, or embeddings=0 for a Φ of the layers alone",
                f"{said} ≥ {copies}·V·h")))))
    return tuple(out)


#: a token's k routed experts are distinct (the router's top-k over the E experts' scores)
TOP_K_OF_E = Rule("at_least", E, k, "E={x} must be at least k={y}: the router sends each token to k distinct experts",
                   "E ≥ k")


_OFFLOAD_NEEDS_ONE_STAGE = rules.fixed(p, 1, "cpu_offload=1 with p={x} is refused: Megatron-Core has no CPU offloading "
                                              "with pipeline parallelism (transformer_config.py); give p=1")
_OFFLOAD_LESS_THAN_L = Rule("at_least", L, S.L_off + 1,
                            "cpu_offload=1 needs L_off below L={x} (L_off + 1 = {y}): Megatron-Core offloads fewer "
                            "layers than the model has (cpu_offloading_num_layers < num_layers)", "L > L_off")


_FSDP2_PIPELINE_REDUCES_ONCE = rules.fixed(
    p, 1, "framework=fsdp2 with grad_reduce=per_micro_batch and p={x} is refused: torch.distributed.pipelining holds "
          "an FSDP2 stage's gradient sync back until a schedule's last backward (stage.py, backward_maybe_with_nosync), "
          "so it reduces once per schedule; give grad_reduce=per_step (or leave it to the framework) or p=1")
_GA_NEEDS_PIPELINE = Rule("at_least", p, sp.Integer(2),
                          "ga_schedules=1 with p={x} needs p at least {y}: it counts the pipeline schedules a step runs; "
                          "give ga_schedules=0 without pipeline parallelism", "p ≥ 2")


_OP_NEEDS_SP = rules.fixed(t, 1, "recompute=op with t={x} needs sp=1: torchtitan's tensor-parallel plan shards the "
                                 "norms' sequence and the op list keeps its reduce-scatters (parallelize_llama.py, "
                                 "apply_tp and _save_list)")


_GROUPS_NEED_POWER_OF_TWO_E = rules.power_of_two(e, "router_groups > 1 needs e a power of two (e={x}): the routed "
                                                     "places are counted where the expert group's nodes and the "
                                                     "router groups divide one another")


def _router_checks() -> tuple[When, ...]:
    """Group-limited routing (symcomm.training.routing): the experts cut into whole groups (Megatron-Core
    transformer_config.py asserts num_moe_experts divisible by moe_router_num_groups), e a power of two."""
    grouped = tuple(n for n in ROUTER_GROUPS if n > 1)
    return (rules.when("moe", (True,), rules.when("router_groups", grouped, _GROUPS_NEED_POWER_OF_TWO_E)),
            *(rules.when("moe", (True,), rules.when("router_groups", (n,), rules.divisible(E, n, f"E|router_groups")))
              for n in grouped))


#: torch.distributed.pipelining's Schedule1F1B refuses fewer micro-batches per schedule than stages (torch/distributed/
#: pipelining/schedules.py, Schedule1F1B.__init__: 'Number of microbatches (...) must be greater than or equal to the
#: number of stages'); under ga_schedules=1 each of the n_ga schedules runs m/n_ga
_TORCH_1F1B_WORDS = ("torch.distributed.pipelining's Schedule1F1B (framework=fsdp2) needs at least as many micro-batches "
                     "per schedule as stages, p={y} (torch/distributed/pipelining/schedules.py, Schedule1F1B): give m ≥ p")
_TORCH_1F1B_M = Rule("at_least", m, p, "m={x}: " + _TORCH_1F1B_WORDS, "m ≥ p (Schedule1F1B)")
_TORCH_1F1B_M_GA = Rule("at_least", m / S.n_ga, p, "m/n_ga={x}: " + _TORCH_1F1B_WORDS.replace("give m ≥ p",
                                                                                              "give m/n_ga ≥ p"),
                        "m/n_ga ≥ p (Schedule1F1B)")


def hybrid_checks() -> tuple[Rule | When, ...]:
    return (
        rules.equal(t * p * d * c, N, "t*p*d*c"),
        rules.when("moe", (False,), _NO_EXPERTS),
        rules.when("moe", (True,), rules.when("sp", (False,), _MOE_NEEDS_SP)),
        rules.when("mamba", (True,), _MAMBA_NEEDS_ONE_CP),
        *(rules.when("mamba", (True,), rule) for rule in _MAMBA_CHECKS),
        rules.when("mamba", (True,), rules.when("moe", (True,), _MAMBA_MOE_LAYERS)),
        rules.when("recompute", ("op",), rules.when("sp", (False,), _OP_NEEDS_SP)),
        *split_checks(),                     # L over the p·v chunks: even, or first/last (symcomm.training.stages)
        *block_checks(),                     # recompute=block: L_rc layers of a chunk at most
        rules.when("schedule", ("interleaved",), rules.divisible(m, p)),
        # ga_schedules=1: n_ga schedules of m/n_ga micro-batches each, on a pipeline (frameworks.PIPELINING_GA)
        rules.when("ga_schedules", (True,), rules.divisible(m, S.n_ga, "m|n_ga")),
        rules.when("ga_schedules", (True,), _GA_NEEDS_PIPELINE),
        rules.when("hsdp", (True,), rules.divisible(d, S.d_r, "d|d_r")),
        rules.when("framework", ("fsdp2",), rules.when("grad_reduce", ("per_micro_batch",), _FSDP2_PIPELINE_REDUCES_ONCE)),
        *(rules.when("framework", TORCH_PIPELINING_FRAMEWORKS, rules.when("schedule", ("1f1b",), rules.when(
            "ga_schedules", (ga,), rule))) for ga, rule in ((False, _TORCH_1F1B_M), (True, _TORCH_1F1B_M_GA))),
        # Megatron-LM megatron/training/arguments.py refuses the interleaved schedule on one stage (and on
        # two without overlap_p2p_comm); with p = 1 schedules.py runs no pipeline at all
        rules.when("schedule", ("interleaved",), rules.at_least(p, 2)),
        rules.divisible(a, t),
        rules.divisible(b, d),
        rules.divisible(b / d, m, "b/d|m"),
        rules.divisible(s, c),
        rules.when("cp", RING_CPS, _CAUSAL_SPLIT),
        rules.when("sp", (True,), _SP_SPLIT),
        *_embeddings_in_phi(),
        rules.when("expert_tp", ("tp",), rules.divisible(d * c, e, "d*c|e")),
        # expert_tp=1 or t_e: Megatron-Core's expert grid is etp × e × (t·d·c/(etp·e)) × p (parallel_state.py:
        # world_size must be divisible by expert_tensor × expert × pipeline sizes)
        rules.when("moe", (True,), rules.when("expert_tp", ("1",), rules.divisible(t * d * c, e, "t*d*c|e"))),
        rules.when("moe", (True,), rules.when("expert_tp", ("t_e",),
                                              rules.divisible(t * d * c, S.t_e * e, "t*d*c|t_e*e"))),
        rules.divisible(E, e),
        rules.when("moe", (True,), TOP_K_OF_E),
        rules.when("moe", (True,), rules.when("dispatcher", FLEX_DISPATCHERS,
                                              rules.when("expert_tp", ("tp",), _FLEX_NEEDS_ETP1))),
        rules.when("moe", (True,), rules.when("dispatcher", FLEX_DISPATCHERS,
                                              rules.when("expert_tp", ("t_e",), _FLEX_NEEDS_TE1))),
        rules.when("moe", (True,), rules.when("dispatcher", FLEX_DISPATCHERS, _FLEX_NEEDS_WHOLE_NODES)),
        *_router_checks(),
        *_framework_limits(),
        rules.when("tp_embedding", ("replicated",), _REPLICATED_EMBEDDING_ONE_STAGE),
        rules.when("tp_embedding", ("replicated",), _REPLICATED_EMBEDDING_NEEDS_TP),
        rules.when("cpu_offload", (True,), _OFFLOAD_NEEDS_ONE_STAGE),
        rules.when("cpu_offload", (True,), _OFFLOAD_LESS_THAN_L),
    )
