"""One training step of a tiny layout, executed as the frameworks order their collectives.

The step is walked micro-batch by micro-batch and layer by layer, each collective run by
symcomm.collectives.executions on the real global ranks (Megatron order: rank = tp + t·(cp + c·(dp
+ d·pp))); the elements every rank sends are counted per axis.  Context parallelism runs inside
each layer's attention: ring attention (Megatron-LM/Transformer Engine p2p, ring-flash-attention)
passes each rank's K and V blocks round the c ranks of its group, Ulysses (DeepSpeed) all-to-alls
Q, K, V and O; the data-parallel gradients are reduced over the d·c ranks that hold the same
parameters (Megatron's data-parallel group with context parallelism).  With embeddings the first
stage runs the vocabulary-parallel embedding and the last the LM head and cross-entropy, each end
stage reducing its larger shard (tied: their gradient all-reduced once per step); with MoE the MoE
layers take the dense MLP's place and dispatch and combine tokens by all-to-all over e expert ranks,
with t > 1 (sequence parallel) gathering the routed tokens and scattering the expert outputs over the
expert-tensor-parallel group.  With the interleaved schedule each stage holds v model chunks and
the micro-batch visits chunk 0, 1, …, p·v − 1 (chunk q on stage q mod p); full recomputation runs
each layer's forward again just before its backward; scatter-gather (no sequence parallel) sends
1/t of each boundary activation per TP rank and all-gathers it at the receiver.  Counted in bytes,
the gradient reductions use the gradient type.  The order of the micro-batches (1F1B, interleaved
warm-up) is not the schedule's: it does not change what is sent.  Nothing here reads a strategy's
terms: the walk is the frameworks' order (Megatron-LM layers.py, schedules.py, token_dispatcher.py,
random.py, DeepSpeed engine.py and stage3.py, torch FSDP _runtime_utils.py), written out again.
The busiest rank per axis must send what the hybrid strategy's formula says, and all ranks together
its total.
"""

import numpy as np
import sympy as sp
from hypothesis import assume, given, settings, strategies as st

from symcomm.training.frameworks import FRAMEWORKS
from symcomm.training.settings import TORCH_PIPELINING_FRAMEWORKS
from symcomm.collectives import executions, network
from symcomm.core import symbols as S
from symcomm.training.strategies import STRATEGIES
from symcomm.training.terms import cost_in_bytes_of

AXES = ("tp", "cp", "ep", "pp", "dp")


class Step:
    def __init__(self, t: int, p: int, d: int, c: int = 1):
        self.t, self.p, self.d, self.c = t, p, d, c
        self.n = t * c * p * d
        self.sent = {axis: [0] * self.n for axis in AXES}
        self.width = 1                                 # what one element counts as: 1, or its bytes

    def rank(self, tp: int, dp: int, pp: int, cp: int = 0) -> int:
        return tp + self.t * (cp + self.c * (dp + self.d * pp))

    def _run(self, axis, members, execute, inputs):
        net = network.Network(self.n)
        group = network.Group(members, 1)
        execute(group, inputs)
        net.replay([group])
        for r, count in enumerate(net.sent):
            self.sent[axis][r] += count * self.width

    def all_gather(self, axis, members, size):
        self._run(axis, members, executions.ring_all_gather,
                  {i: np.ones(size // len(members)) for i in range(len(members))})

    def reduce_scatter(self, axis, members, size):
        self._run(axis, members, executions.ring_reduce_scatter, {i: np.ones(size) for i in range(len(members))})

    def all_reduce(self, axis, members, size):          # ring all-reduce: reduce-scatter, then all-gather
        self.reduce_scatter(axis, members, size)
        self.all_gather(axis, members, size)

    def send(self, axis, src, dst, size):
        self._run(axis, [src, dst], executions.direct_send_recv, {0: np.ones(size)})

    def all_to_all(self, axis, members, size):           # size = one rank's buffer
        self._run(axis, members, executions.pairwise_all_to_all, {i: np.ones(size) for i in range(len(members))})

    def ring_pass(self, axis, members, block, steps):
        """Each member sends the block it holds to the next member, ``steps`` times; a group of one
        (no context parallelism) runs plain attention and sends nothing."""
        for _ in range(steps if len(members) > 1 else 0):
            for i, src in enumerate(members):
                self.send(axis, src, members[(i + 1) % len(members)], block)

    # -- groups ---------------------------------------------------------------------------------
    def tp_groups(self, pp):
        return [[self.rank(i, dp, pp, cp) for i in range(self.t)] for dp in range(self.d) for cp in range(self.c)]

    def cp_groups(self, pp):
        return [[self.rank(tp, dp, pp, i) for i in range(self.c)] for dp in range(self.d) for tp in range(self.t)]

    def _data_ranks(self, tp, pp):                      # the d·c ranks of one (tp, pp), cp innermost
        return [self.rank(tp, dp, pp, cp) for dp in range(self.d) for cp in range(self.c)]

    def ep_groups(self, pp, e):
        """Megatron's expert ranks (order tp-ep-dp-pp over the d·c ranks): e consecutive ones."""
        return [ranks[i:i + e] for tp in range(self.t) for ranks in [self._data_ranks(tp, pp)]
                for i in range(0, len(ranks), e)]

    def expert_tp_groups(self, pp, e):
        """parallel_state.py's expert grid, built on its own: order tp-ep-dp-pp with the expert tensor
        size t (expert_tensor_parallel_size's default), e expert ranks, t·c·d/(t·e) expert-data ones;
        global rank = etp + t·(ep + e·(edp + edp_size·pp)).  The group of one (ep, edp)."""
        edp_size = self.c * self.d // e
        return [[etp + self.t * (ep + e * (edp + edp_size * pp)) for etp in range(self.t)]
                for ep in range(e) for edp in range(edp_size)]

    def expert_dp_groups(self, e):
        """The ranks holding the same experts: one position in every expert-parallel group."""
        return [ranks[j::e] for tp in range(self.t) for pp in range(self.p)
                for ranks in [self._data_ranks(tp, pp)] for j in range(e)]

    def dp_groups(self):
        """(stage, the d·c ranks holding the same parameters): Megatron's data parallel with context parallel."""
        return [(pp, [self.rank(tp, dp, pp, cp) for dp in range(self.d) for cp in range(self.c)])
                for tp in range(self.t) for pp in range(self.p)]


def train_step(t, p, d, m, layers_per_stage, tokens, h, phi, scheme, sp_on, regather, c=1, cp="ring", kv=None,
               vocab=0, tied=False, experts=1, top_k=1, moe_layers=0, phi_experts=0, widths=None, chunks=1,
               recompute=False, scatter_gather=False, n_experts=0):
    """Counts of one step; ``scheme`` = (framework, zero, reshard_after_forward); ``tokens`` = the
    tokens of one micro-batch on one CP rank, ``kv`` = the width of K and V (h without GQA), ``phi``
    = the transformer layers' parameters; ``vocab`` > 0 adds the vocab × h embedding on the first
    stage and the LM head (``tied``: the embedding's weights, a copy when p > 1) on the last;
    ``moe_layers`` of each stage's layers have ``phi_experts``/p expert parameters split over
    ``experts`` expert-parallel ranks, each token routed to ``top_k`` of them, uniformly; ``widths``
    = bytes per element {"run", "grad", "fp32"} counts bytes (gradient reductions in the gradient
    type, ring-flash-attention's dK, dV and the cross-entropy's reductions in fp32), else elements; ``chunks`` = v model chunks per
    stage (interleaved), ``recompute`` = full recomputation, ``scatter_gather`` = Megatron's
    pipeline scatter-gather; ``n_experts`` = E, the counts each rank all-gathers before a dropless dispatch."""
    framework, zero, reshard = scheme
    assert not (moe_layers and t > 1 and not sp_on), "moe_layer.py refuses MoE with t > 1 without SP in training"
    kv = h if kv is None else kv
    step = Step(t, p, d, c)
    widths = widths or {"run": 1, "grad": 1, "fp32": 1}
    step.width = widths["run"]
    act = tokens * h                                   # one micro-batch's activations on a replica's CP rank

    def held(pp):                                      # parameters a stage holds, before the split over t
        out = phi // p
        if vocab and pp == 0:
            out += vocab * h                           # the word embedding
        if vocab and pp == p - 1 and not (tied and p == 1):
            out += vocab * h                           # the output layer, or the tied embedding's copy
        return out

    def tp_pair(group, backward, stop=False):         # stop: a recompute ending before the block's output reduction
        if sp_on:
            step.all_gather("tp", group, act)
            if not stop:
                step.reduce_scatter("tp", group, act)
            if backward and regather:                  # layers.py: re-gather the input for the weight gradient
                step.all_gather("tp", group, act)
        elif not stop:
            step.all_reduce("tp", group, act)

    def attention(group, backward):
        """The context-parallel exchanges of one layer's core attention, heads split by TP."""
        q_o, k_v = tokens * h // t, tokens * kv // t   # one rank's Q (or O) and K (or V)
        if cp == "ulysses":                            # DeepSpeed sequence/layer.py: Q, K, V in, O out
            for size in (q_o, k_v, k_v, q_o):
                step.all_to_all("cp", group, size)
            return
        step.ring_pass("cp", group, k_v, c - 1)        # K blocks round the ring
        step.ring_pass("cp", group, k_v, c - 1)        # V blocks
        if backward:                                   # dK, dV partial sums travel round to their owner
            extra = 1 if cp == "ring_flash_attn" else 0    # ring-flash-attention: accumulation starts at the owner
            if cp == "ring_flash_attn":                # ... and accumulates and sends dK, dV in fp32
                step.width = widths["fp32"]
            step.ring_pass("cp", group, k_v, c - 1 + extra)
            step.ring_pass("cp", group, k_v, c - 1 + extra)
            step.width = widths["run"]

    def experts_block(pp, stop=False):
        """token_dispatcher.py, MoEAlltoAllTokenDispatcher: all-to-all of this rank's routed copies over
        the expert ranks, all-gather of what arrived over the expert-tensor-parallel group, the experts
        (their linears communicate nothing: experts.py), reduce-scatter of their partial outputs over
        that group, all-to-all back.  The backward meets the same sequence: the combine's gradient
        all-to-all, the reduce-scatter's gradient (an all-gather), the all-gather's (a reduce-scatter),
        the dispatch's gradient all-to-all (mappings.py).  Uniform dropless routing.  Megatron-Core's
        dispatcher (token_dispatch, dispatch_postprocess) sends each routed copy's router probability beside
        it, one element a copy, all-to-all and gathered (their gradients back in the backward)."""
        routed = top_k * tokens * h // t              # the copies one rank routes: its s/t tokens (SP), k each
        probs = top_k * tokens // t if framework in ("megatron", "megatron_fsdp") else 0
        # stop: a recompute that ends with the experts' last saved input runs the dispatch and gather only
        sequence = ("all-to-all", "gather") if stop else ("all-to-all", "gather", "scatter", "all-to-all")
        for i, collective in enumerate(sequence):
            if collective == "all-to-all":
                for ep_group in step.ep_groups(pp, experts):
                    step.all_to_all("ep", ep_group, routed)
                    if i == 0 and probs:
                        step.all_to_all("ep", ep_group, probs)
            elif t > 1:                                # the group's t·routed, gathered and scattered back
                for group in step.expert_tp_groups(pp, experts):
                    (step.all_gather if collective == "gather" else step.reduce_scatter)("tp", group, t * routed)
                    if collective == "gather" and probs:
                        step.all_gather("tp", group, t * probs)

    def token_counts(pp):
        """token_dispatcher.py, MoEAlltoAllTokenDispatcher.preprocess (dropless): each rank's per-expert token
        counts (``n_experts`` of them, int64, each counted as one element here) all-gathered over its TPxEP group,
        the expert grid's t·e ranks of one (expert-data, pipeline) position, before the forward's dispatch; the
        backward reuses the splits."""
        edp_size = t * c * d // (t * experts)
        for edp in range(edp_size):
            members = [etp + t * (ep + experts * (edp + edp_size * pp)) for ep in range(experts) for etp in range(t)]
            step.all_gather("ep", members, n_experts * len(members))

    def layer(pp, backward, moe=False, recomputing=False):
        # PyTorch's non-reentrant checkpoint (fsdp, fsdp2: torch/utils/checkpoint.py, early_stop) ends a layer's
        # recompute once the tensors its backward saved are made again: its last collective is not run again
        stop = recomputing and framework in ("fsdp", "fsdp2")
        for tp_group in step.tp_groups(pp):
            tp_pair(tp_group, backward)                # attention block: input gather / output reduction
        for cp_group in step.cp_groups(pp):
            attention(cp_group, backward)
        if moe:                                        # the MoE layer stands in the dense MLP's place
            if not backward:
                token_counts(pp)
            experts_block(pp, stop)
        else:
            for tp_group in step.tp_groups(pp):
                tp_pair(tp_group, backward, stop)      # MLP block

    def dp_all(collective, blocks_only=False):      # blocks_only: the root unit (embedding, head) left out
        step.width = widths["run" if collective == step.all_gather else "grad"]   # parameters, or gradients
        for pp, group in step.dp_groups():
            collective("dp", group, (phi // p if blocks_only else held(pp)) // t)
        if moe_layers:                                 # expert parameters over the expert-data-parallel ranks
            for group in step.expert_dp_groups(experts):
                collective("dp", group, phi_experts // (experts * t * p))
        step.width = widths["run"]

    def embedding(backward):                           # layers.py VocabParallelEmbedding, first stage
        for group in step.tp_groups(0):
            if sp_on:                                  # mappings.py: reduce-scatter to the sequence (back: gather)
                (step.all_gather if backward else step.reduce_scatter)("tp", group, act)
            elif not backward:                         # all-reduce of the partial lookups (back: identity)
                step.all_reduce("tp", group, act)

    def lm_head(backward):                             # ColumnParallelLinear output layer + cross_entropy.py
        for group in step.tp_groups(p - 1):
            if sp_on:
                if backward:
                    step.reduce_scatter("tp", group, act)
                    if regather:
                        step.all_gather("tp", group, act)
                else:
                    step.all_gather("tp", group, act)
            elif backward:                             # copy_to_tensor_model_parallel_region: back all-reduce
                step.all_reduce("tp", group, act)
            if not backward:                           # vocab-parallel cross-entropy: max, target logit, Σ exp,
                step.width = widths["fp32"]            # of the logits cast to float first (cross_entropy.py)
                for _ in range(3):
                    step.all_reduce("tp", group, tokens)
                step.width = widths["run"]

    def boundary(pp, to):                              # activations (or their gradients) per TP and CP rank
        split = sp_on or scatter_gather                # sharded already (SP), or split 1/t (scatter-gather)
        for dp in range(d):
            for ci in range(c):
                for tp in range(t):
                    step.send("pp", step.rank(tp, dp, pp, ci), step.rank(tp, dp, to, ci), act // (t if split else 1))
        if scatter_gather and not sp_on:               # p2p_communication.py: the receiver's TP group re-assembles
            for group in step.tp_groups(to):
                step.all_gather("pp", group, act)

    per_chunk = layers_per_stage // chunks
    last = p * chunks - 1                              # chunk q runs on stage q mod p (schedules.py, interleaved)

    def chunk_layers(q):                               # the stage-local indices of chunk q's layers
        return range(q // p * per_chunk, (q // p + 1) * per_chunk)

    # FSDP2 under torch.distributed.pipelining (p > 1): the stage holds the gradient sync and the resharding back
    # until the schedule's last backward (stage.py, backward_maybe_with_nosync), so only the first forward gathers
    # (every later one follows a backward that kept the layers), and the gradients are reduced once, at the end
    pipelined = framework == "fsdp2" and p > 1
    # DeepSpeed's ZeRO-1/2 all-reduce the whole gradient bucket, each rank keeping its partition (stage_1_and_2.py:
    # average_tensor → allreduce_and_scatter → dist.all_reduce, v0.12.4 on)
    partition_reduce = step.all_reduce if framework == "deepspeed" else step.reduce_scatter
    for micro in range(m):
        if zero == 3 and (micro == 0 or not pipelined):
            dp_all(step.all_gather)                    # parameters for the forward
        for q in range(last + 1):
            pp = q % p
            if vocab and q == 0:
                embedding(backward=False)
            for i in chunk_layers(q):
                layer(pp, backward=False, moe=i < moe_layers)
            if vocab and q == last:
                lm_head(backward=False)
            if q < last:
                boundary(pp, (q + 1) % p)
        if zero == 3 and reshard:
            # parameters again for the backward; PyTorch's FSDP keeps its root unit (the embedding and the head)
            # gathered from the forward (_runtime_utils.py _post_forward_reshard, _fsdp_state.py _lazy_init)
            dp_all(step.all_gather, blocks_only=framework in ("fsdp", "fsdp2"))
        for q in reversed(range(last + 1)):
            pp = q % p
            if vocab and q == last:
                lm_head(backward=True)
            for i in reversed(chunk_layers(q)):
                if recompute:                          # random.py CheckpointFunction.backward: the forward again
                    layer(pp, backward=False, moe=i < moe_layers, recomputing=True)
                layer(pp, backward=True, moe=i < moe_layers)
            if vocab and q == 0:
                embedding(backward=True)
            if q > 0:
                boundary(pp, (q - 1) % p)
        per_micro_batch = (zero == 3 and not pipelined) or (framework == "deepspeed" and zero == 2)
        if per_micro_batch:
            dp_all(step.reduce_scatter if zero == 3 else partition_reduce)   # engine.py: ZeRO ≥ 2 reduces every micro-batch
    if pipelined:
        dp_all(step.reduce_scatter)                    # perform_reduce_grad: once, after the schedule's last backward
    if zero == 0:
        dp_all(step.all_reduce)                        # Megatron DDP: once, after the last micro-batch
    elif zero == 1:
        dp_all(partition_reduce)                       # the distributed optimizer (DeepSpeed's ZeRO-1): once per step
    if vocab and tied and p > 1:                       # finalize_model_grads.py: the two copies' gradients
        step.width = widths["grad"]
        for dp in range(d):
            for ci in range(c):
                for tp in range(t):
                    step.all_reduce("dp", [step.rank(tp, dp, 0, ci), step.rank(tp, dp, p - 1, ci)], vocab * h // t)
    step.width = widths["run"]
    if zero in (1, 2):
        dp_all(step.all_gather)                        # updated parameters after the optimizer step
    return step


#: fsdp2 and megatron_fsdp gather and reduce-scatter one layer at a time (L/p collectives of shard/(L/p)): the walk
#: below counts elements, which splitting a ring collective into per-layer ones leaves as they are, so it walks them
#: as one per stage (their L/p times the α are the chapter's claim, derivations/step_time.py FSDP_UNITS)
def _runs(scheme, p, c, cp, v, moe=False, m=None):
    """Whether the scheme's framework runs this layout (symcomm.training.frameworks: DeepSpeed's pipeline engine runs
    ZeRO 0 and 1 only and 1F1B only, its sequence parallelism Ulysses only, its MoE layers no ZeRO-3; PyTorch's FSDP1
    places no experts, so ``moe``, with e > 1, is none of its layouts; torch.distributed.pipelining's Schedule1F1B
    (fsdp2) at least p micro-batches); eval refuses the others."""
    framework, zero, _ = scheme
    row = FRAMEWORKS[framework]
    return ((p == 1 or zero in row.pipeline_zero) and (c == 1 or cp in row.cp_algorithms)
            and (v == 1 or "interleaved" in row.schedules)
            and (not moe or (zero in row.moe_zero and row.expert_parallel))
            and not (framework in TORCH_PIPELINING_FRAMEWORKS and v == 1 and m is not None and m < p))


SCHEMES = (("megatron", 0, True), ("megatron", 1, True), ("deepspeed", 2, True), ("deepspeed", 3, True),
           ("fsdp", 3, True), ("fsdp", 3, False), ("fsdp2", 3, True), ("megatron_fsdp", 3, True))


def check_step(step, options, values):
    axes = STRATEGIES["hybrid"].by_axis(**options)
    for axis in AXES:
        if axis not in axes:
            assert not any(step.sent[axis]), (axis, step.sent[axis])
            continue
        busiest = sp.sympify(axes[axis].send).subs(values)
        total = sp.sympify(axes[axis].total).subs(values)
        assert max(step.sent[axis]) == busiest, (axis, step.sent[axis], busiest)
        assert sum(step.sent[axis]) == total, (axis, sum(step.sent[axis]), total)


# 30: each example executes one step of a drawn layout; the step's and the formula's 355 lines are all reached by
# example 10 (tests/tools/hypothesis_reach.py, 2026-12-02)
@settings(max_examples=30, deadline=None)
@given(t=st.sampled_from([1, 2]), p=st.integers(1, 3), d=st.integers(1, 3), m=st.integers(1, 2),
       layers=st.integers(1, 2), scheme=st.sampled_from(SCHEMES), sp_on=st.booleans(), regather=st.booleans())
def test_a_step_sends_what_the_hybrid_formula_says(t, p, d, m, layers, scheme, sp_on, regather):
    sp_on = sp_on and t > 1
    s, h, q = 2 * t, 3, 2                               # s divisible by t (sequence parallel), Φ/(t·p) by d
    phi = t * p * d * q
    assume(_runs(scheme, p, 1, "ring", 1, m=m))      # what the framework runs (frameworks.py)
    step = train_step(t, p, d, m, layers, s, h, phi, scheme, sp_on, regather)
    framework, zero, reshard = scheme
    options = {"zero": zero, "framework": framework, "reshard_after_forward": int(reshard), "sp": int(sp_on),
               "sp_regather": int(regather)}
    values = {S.t: t, S.p: p, S.d: d, S.c: 1, S.e: 1, S.b: d * m, S.s: s, S.h: h, S.L: p * layers, S.m: m,
              S.Phi: phi, S.G: t * p * d}
    check_step(step, options, values)


# 40: each example executes one step of a drawn layout; the step's and the formula's 379 lines are all reached by
# example 13 (tests/tools/hypothesis_reach.py, 2026-12-02)
@settings(max_examples=40, deadline=None)
@given(t=st.sampled_from([1, 2]), c=st.integers(1, 4), p=st.integers(1, 3), d=st.integers(1, 2),
       m=st.integers(1, 2), layers=st.integers(1, 2), scheme=st.sampled_from(SCHEMES), sp_on=st.booleans(),
       regather=st.booleans(), cp=st.sampled_from(["ring", "ulysses", "ring_flash_attn"]), gqa=st.booleans())
def test_a_context_parallel_step_sends_what_the_hybrid_formula_says(t, c, p, d, m, layers, scheme, sp_on,
                                                                     regather, cp, gqa):
    """c ≥ 1: each sequence split over c ranks (rank order t, c, d, p), attention exchanging
    K and V round a ring or Q, K, V, O by all-to-all; DP over the d·c ranks of a shard."""
    assume(t * c * p * d <= 16)
    sp_on = sp_on and t > 1
    local = 2 * t * c                                   # tokens per CP rank: divisible by t (SP) and c (Ulysses)
    s = c * local
    h = 2 * t * c                                       # heads' width split by t, then by c (Ulysses)
    h_kv = t * c if gqa else h
    q = 2
    phi = t * p * d * c * q
    assume(_runs(scheme, p, c, cp, 1, m=m))      # what the framework runs (frameworks.py)
    step = train_step(t, p, d, m, layers, local, h, phi, scheme, sp_on, regather, c=c, cp=cp, kv=h_kv)
    framework, zero, reshard = scheme
    options = {"zero": zero, "framework": framework, "reshard_after_forward": int(reshard), "sp": int(sp_on),
               "sp_regather": int(regather), "cp": cp, "gqa": int(gqa)}
    values = {S.t: t, S.p: p, S.d: d, S.c: c, S.e: 1, S.b: d * m, S.s: s, S.h: h, S.h_kv: h_kv,
              S.L: p * layers, S.m: m, S.Phi: phi, S.G: t * p * d * c}
    check_step(step, options, values)


# 40: each example executes one step of a drawn layout; the step's and the formula's 389 lines are all reached by
# example 19 (tests/tools/hypothesis_reach.py, 2026-12-02)
@settings(max_examples=40, deadline=None)
@given(t=st.sampled_from([1, 2]), c=st.integers(1, 2), p=st.integers(1, 4), d=st.integers(1, 2),
       m=st.integers(1, 2), layers=st.integers(1, 2), scheme=st.sampled_from(SCHEMES), sp_on=st.booleans(),
       regather=st.booleans(), tied=st.booleans())
def test_a_step_with_embeddings_sends_what_the_hybrid_formula_says(t, c, p, d, m, layers, scheme, sp_on, regather,
                                                                   tied):
    """embeddings=1: the first stage's embedding, the last stage's LM head and cross-entropy, their
    larger data-parallel shards and (tied, p > 1) the embedding-gradient all-reduce between them;
    the formula's tp and dp figures are the busiest GPU's, which the walk finds on the last stage."""
    assume(t * c * p * d <= 16)
    sp_on = sp_on and t > 1
    local = 2 * t * c
    s, h = c * local, 2 * t * c
    vocab = 2 * t * d * c                              # V·h/t splits over the d·c ranks and halves (tied pair)
    layer_phi = t * p * d * c * 2
    assume(_runs(scheme, p, c, "ring", 1, m=m))      # what the framework runs (frameworks.py)
    step = train_step(t, p, d, m, layers, local, h, layer_phi, scheme, sp_on, regather, c=c, vocab=vocab, tied=tied)
    framework, zero, reshard = scheme
    options = {"zero": zero, "framework": framework, "reshard_after_forward": int(reshard), "sp": int(sp_on),
               "sp_regather": int(regather), "embeddings": 1, "tied": int(tied)}
    values = {S.t: t, S.p: p, S.d: d, S.c: c, S.e: 1, S.b: d * m, S.s: s, S.h: h, S.L: p * layers, S.m: m,
              S.Phi: layer_phi + vocab * h * (1 if tied else 2), S.V: vocab, S.G: t * p * d * c}
    check_step(step, options, values)


# 40: each example executes one step of a drawn layout; the step's and the formula's 427 lines are all reached by
# example 11 (tests/tools/hypothesis_reach.py, 2026-12-02)
@settings(max_examples=40, deadline=None)
@given(t=st.sampled_from([1, 2]), c=st.integers(1, 2), p=st.integers(1, 2), d=st.integers(1, 4),
       e=st.sampled_from([2, 4]), m=st.integers(1, 2), layers=st.integers(1, 2), moe_all=st.booleans(),
       top_k=st.integers(1, 2), scheme=st.sampled_from(SCHEMES), regather=st.booleans(), recompute=st.booleans())
def test_a_moe_step_sends_what_the_hybrid_formula_says(t, c, p, d, e, m, layers, moe_all, top_k, scheme, regather,
                                                       recompute):
    """moe=1, e > 1: each MoE layer's token dispatch and combine all-to-alls (and their gradients)
    over e consecutive expert ranks, uniform dropless routing; with t > 1 (sequence parallel, which
    Megatron requires) the routed tokens gathered and the expert outputs scattered over the expert-
    tensor-parallel group in place of the dense MLP's collectives; the expert parameters reduced
    over the d·c/e ranks holding the same experts; before each forward dispatch the E per-expert token
    counts all-gathered over the TPxEP group (dropless); recompute: every layer's forward again.  Not
    walked: expert_tensor_parallel_size ≠ t, shared experts."""
    assume(t * c * p * d <= 16 and (d * c) % e == 0)
    sp_on = t > 1
    moe_layers = layers if moe_all else 1
    local = 2 * c * t * e                              # tokens per CP rank: the t ranks' SP shards, each rank's
    s, h = c * local, 4 * c                            # router probabilities split evenly over the e ranks
    phi = t * p * d * c * 2                            # dense parameters (Φ − Φ_E)
    phi_experts = e * t * p * (d * c // e) * 2
    assume(_runs(scheme, p, c, "ring", 1, moe=True, m=m))      # what the framework runs (frameworks.py)
    step = train_step(t, p, d, m, layers, local, h, phi, scheme, sp_on, regather, c=c, experts=e, top_k=top_k,
                      moe_layers=moe_layers, phi_experts=phi_experts, recompute=recompute and scheme[1] < 3,
                      n_experts=2 * e)
    framework, zero, reshard = scheme
    options = {"zero": zero, "framework": framework, "reshard_after_forward": int(reshard), "moe": 1,
               "sp": int(sp_on), "sp_regather": int(regather), "recompute": int(recompute and zero < 3)}
    values = {S.t: t, S.p: p, S.d: d, S.c: c, S.e: e, S.E: 2 * e, S.k: top_k, S.b: d * m, S.s: s, S.h: h,
              S.L: p * layers, S.L_moe: p * moe_layers, S.m: m, S.Phi: phi + phi_experts, S.Phi_E: phi_experts,
              S.G: t * p * d * c, S.E_s: 0}          # no shared expert (the step walks none)
    assert not STRATEGIES["hybrid"].validate(values, **options)
    check_step(step, options, values)


# 40: each example executes one step of a drawn layout; the step's and the formula's 431 lines are all reached by
# example 35 (close to the count: not fewer) (tests/tools/hypothesis_reach.py, 2026-12-02)
@settings(max_examples=40, deadline=None)
@given(t=st.sampled_from([1, 2]), c=st.integers(1, 2), p=st.integers(2, 3), d=st.integers(1, 2),
       v=st.integers(1, 3), per_chunk=st.integers(1, 2), scheme=st.sampled_from(SCHEMES[:3]), sp_on=st.booleans(),
       regather=st.booleans(), recompute=st.booleans(), scatter_gather=st.booleans(),
       cp=st.sampled_from(["ring", "ulysses", "ring_flash_attn"]), embeddings=st.booleans(), tied=st.booleans(),
       moe=st.booleans(), e=st.sampled_from([1, 2]))
def test_a_step_with_interleaving_recompute_and_scatter_gather_sends_what_the_formula_says(
        t, c, p, d, v, per_chunk, scheme, sp_on, regather, recompute, scatter_gather, cp, embeddings, tied, moe, e):
    """schedule=interleaved (v ≥ 2 chunks per stage, m a multiple of p as Megatron's interleaved
    schedule needs), recompute=1 (each layer's forward collectives again before its backward,
    random.py), scatter_gather=1 (each TP rank sends 1/t, the receiving stage all-gathers; nothing
    with SP), together with CP, embeddings and MoE.  Schemes without ZeRO-3: whether a recomputed
    forward gathers the parameters again is the ZeRO-3 runtime's business, not walked here."""
    sp_on = sp_on and t > 1
    moe = moe and (t == 1 or sp_on)                    # moe_layer.py: MoE with t > 1 needs SP
    e = e if moe else 1
    assume(t * c * p * d <= 12 and (d * c) % e == 0)
    tied = tied and embeddings
    m = p                                              # one round of p micro-batches per step
    local = 2 * t * c * e                              # each rank's router probabilities split evenly over e ranks
    s, h = c * local, 2 * t * c
    h_kv = t * c
    vocab = 2 * t * d * c if embeddings else 0
    layers = v * per_chunk                             # per stage
    layer_phi = t * p * d * c * 2
    phi_experts = e * t * p * (d * c // e) * 2 if moe else 0
    assume(_runs(scheme, p, c, cp, v, moe=moe, m=m))      # what the framework runs (frameworks.py)
    step = train_step(t, p, d, m, layers, local, h, layer_phi, scheme, sp_on, regather, c=c, cp=cp, kv=h_kv,
                      vocab=vocab, tied=tied, experts=e, moe_layers=per_chunk if moe else 0, phi_experts=phi_experts,
                      chunks=v, recompute=recompute, scatter_gather=scatter_gather, n_experts=2 * e)
    framework, zero, reshard = scheme
    options = {"zero": zero, "framework": framework, "reshard_after_forward": int(reshard), "sp": int(sp_on),
               "sp_regather": int(regather), "cp": cp, "gqa": 1, "embeddings": int(embeddings), "tied": int(tied),
               "moe": int(moe), "recompute": int(recompute), "scatter_gather": int(scatter_gather),
               "schedule": "interleaved" if v > 1 else "1f1b"}
    values = {S.t: t, S.p: p, S.d: d, S.c: c, S.e: e, S.E: 2 * e, S.k: 1, S.b: d * m, S.s: s, S.h: h, S.h_kv: h_kv,
              S.v: v, S.L: p * layers, S.L_moe: p * per_chunk if moe else 0, S.m: m, S.V: vocab,
              S.Phi: layer_phi + vocab * h * (1 if tied else 2) + phi_experts, S.Phi_E: phi_experts,
              S.G: t * p * d * c, S.E_s: 0}          # no shared expert (the step walks none)
    assert not STRATEGIES["hybrid"].validate(values, **options)
    check_step(step, options, values)


BF16, FP32 = 2, 4


# 40: each example executes one step of a drawn layout; the step's and the formula's 346 lines are all reached by
# example 12 (tests/tools/hypothesis_reach.py, 2026-12-02)
@settings(max_examples=40, deadline=None)
@given(t=st.sampled_from([1, 2]), c=st.integers(1, 2), p=st.integers(1, 3), d=st.integers(1, 2),
       m=st.integers(1, 2), layers=st.integers(1, 2), scheme=st.sampled_from(SCHEMES), sp_on=st.booleans(),
       cp=st.sampled_from(["ring", "ulysses", "ring_flash_attn"]), embeddings=st.booleans(), tied=st.booleans(),
       grad_dtype=st.sampled_from(["framework", "fp32", "same"]))
def test_a_step_in_bytes_matches_the_formula_in_bytes(t, c, p, d, m, layers, scheme, sp_on, cp, embeddings, tied,
                                                      grad_dtype):
    """A bf16 run counted in bytes: the gradient reductions in the gradient type (fp32 for
    Megatron-LM and torchtitan's FSDP2 by default, the run's for DeepSpeed and FSDP), ring-flash-attention's dK, dV in
    fp32, the rest in bf16; the formula's terms widened by cost_in_bytes_of, per axis."""
    assume(t * c * p * d <= 16)
    sp_on = sp_on and t > 1
    tied = tied and embeddings
    framework, zero, reshard = scheme
    # framework: Megatron-LM's fp32 main gradients; torchtitan's mixed_precision_reduce, float32 its one value
    grad = {"fp32": FP32, "same": BF16, "framework": FP32 if framework in ("megatron", "fsdp2") else BF16}[grad_dtype]
    local = 2 * t * c
    s, h = c * local, 2 * t * c
    vocab = 2 * t * d * c if embeddings else 0
    layer_phi = t * p * d * c * 2
    assume(_runs(scheme, p, c, cp, 1, m=m))      # what the framework runs (frameworks.py)
    step = train_step(t, p, d, m, layers, local, h, layer_phi, scheme, sp_on, True, c=c, cp=cp, vocab=vocab,
                      tied=tied, widths={"run": BF16, "grad": grad, "fp32": FP32})
    options = {"zero": zero, "framework": framework, "reshard_after_forward": int(reshard), "sp": int(sp_on),
               "sp_regather": 1, "cp": cp, "embeddings": int(embeddings), "tied": int(tied),
               "grad_dtype": grad_dtype}
    values = {S.t: t, S.p: p, S.d: d, S.c: c, S.e: 1, S.b: d * m, S.s: s, S.h: h, S.L: p * layers, S.m: m,
              S.Phi: layer_phi + vocab * h * (1 if tied else 2), S.V: vocab, S.G: t * p * d * c}
    terms = STRATEGIES["hybrid"].terms(**options)
    for axis in AXES:
        mine = [term for term in terms if term.axis == axis]
        if not mine:
            assert not any(step.sent[axis]), (axis, step.sent[axis])
            continue
        cost = cost_in_bytes_of(mine, BF16)
        busiest = sp.sympify(cost.send).subs(values) * BF16
        total = sp.sympify(cost.total).subs(values) * BF16
        assert max(step.sent[axis]) == busiest, (axis, step.sent[axis], busiest)
        assert sum(step.sent[axis]) == total, (axis, sum(step.sent[axis]), total)
