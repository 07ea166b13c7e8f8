"""One training step of a tiny layout, executed as the frameworks order their collectives.

The step is walked micro-batch by micro-batch and layer by layer, each collective run by
symcomm.simulate's ring executions on the real global ranks (Megatron order: rank = tp + t·(dp
+ d·pp), c = 1); the elements every rank sends are counted per axis.  Nothing here reads a
strategy's terms: the walk is the frameworks' order (Megatron-LM layers.py and schedules.py,
DeepSpeed engine.py and stage3.py, torch FSDP _runtime_utils.py), written out again.  The
busiest rank per axis must send what the hybrid strategy's formula says, and all ranks together
its total.
"""

import numpy as np
import sympy as sp
from hypothesis import given, settings, strategies as st

from symcomm import simulate as sim
from symcomm import symbols as S
from symcomm.strategies import STRATEGIES

AXES = ("tp", "pp", "dp")


class Step:
    def __init__(self, t: int, p: int, d: int):
        self.t, self.p, self.d = t, p, d
        self.n = t * p * d
        self.sent = {axis: [0] * self.n for axis in AXES}

    def rank(self, tp: int, dp: int, pp: int) -> int:
        return tp + self.t * (dp + self.d * pp)

    def _run(self, axis, members, execute, inputs):
        net = sim.Network(self.n)
        group = sim.Group(members, 1)
        execute(group, inputs)
        net.replay([group])
        for r, count in enumerate(net.sent):
            self.sent[axis][r] += count

    def all_gather(self, axis, members, size):
        self._run(axis, members, sim.ring_all_gather,
                  {i: np.ones(size // len(members)) for i in range(len(members))})

    def reduce_scatter(self, axis, members, size):
        self._run(axis, members, sim.ring_reduce_scatter, {i: np.ones(size) for i in range(len(members))})

    def all_reduce(self, axis, members, size):          # ring all-reduce: reduce-scatter, then all-gather
        self.reduce_scatter(axis, members, size)
        self.all_gather(axis, members, size)

    def send(self, axis, src, dst, size):
        self._run(axis, [src, dst], sim.direct_send_recv, {0: np.ones(size)})

    # -- groups ---------------------------------------------------------------------------------
    def tp_groups(self, pp):
        return [[self.rank(i, dp, pp) for i in range(self.t)] for dp in range(self.d)]

    def dp_groups(self):
        return [[self.rank(tp, i, pp) for i in range(self.d)] for tp in range(self.t) for pp in range(self.p)]


def train_step(t, p, d, m, layers_per_stage, tokens, h, phi, scheme, sp_on, regather):
    """Counts of one step; ``scheme`` = (framework, zero, reshard_after_forward)."""
    framework, zero, reshard = scheme
    step = Step(t, p, d)
    act = tokens * h                                   # one micro-batch's activations on a replica
    shard = phi // (t * p)

    def tp_block(pp, backward):
        for group in step.tp_groups(pp):
            for _ in range(2):                         # attention output, MLP output
                if sp_on:
                    step.all_gather("tp", group, act)
                    step.reduce_scatter("tp", group, act)
                    if backward and regather:          # layers.py: re-gather the input for the weight gradient
                        step.all_gather("tp", group, act)
                else:
                    step.all_reduce("tp", group, act)

    def dp_all(collective):
        for group in step.dp_groups():
            collective("dp", group, shard)

    for micro in range(m):
        if zero == 3:
            dp_all(step.all_gather)                    # parameters for the forward
        for pp in range(p):
            for _ in range(layers_per_stage):
                tp_block(pp, backward=False)
            if pp + 1 < p:                             # activations to the next stage, per TP rank
                for dp in range(d):
                    for tp in range(t):
                        step.send("pp", step.rank(tp, dp, pp), step.rank(tp, dp, pp + 1), act // (t if sp_on else 1))
        if zero == 3 and reshard:
            dp_all(step.all_gather)                    # parameters again for the backward
        for pp in reversed(range(p)):
            for _ in range(layers_per_stage):
                tp_block(pp, backward=True)
            if pp > 0:
                for dp in range(d):
                    for tp in range(t):
                        step.send("pp", step.rank(tp, dp, pp), step.rank(tp, dp, pp - 1), act // (t if sp_on else 1))
        per_micro_batch = zero == 3 or (framework == "deepspeed" and zero == 2)
        if per_micro_batch:
            dp_all(step.reduce_scatter)                # engine.py: ZeRO ≥ 2 reduces every micro-batch
    if zero == 0:
        dp_all(step.all_reduce)                        # Megatron DDP: once, after the last micro-batch
    elif zero == 1:
        dp_all(step.reduce_scatter)                    # the distributed optimizer: once per step
    if zero in (1, 2):
        dp_all(step.all_gather)                        # updated parameters after the optimizer step
    return step


SCHEMES = (("megatron", 0, True), ("megatron", 1, True), ("deepspeed", 2, True), ("deepspeed", 3, True),
           ("fsdp", 3, True), ("fsdp", 3, False))


@settings(max_examples=30, deadline=None)
@given(t=st.sampled_from([1, 2]), p=st.integers(1, 3), d=st.integers(1, 3), m=st.integers(1, 2),
       layers=st.integers(1, 2), scheme=st.sampled_from(SCHEMES), sp_on=st.booleans(), regather=st.booleans())
def test_a_step_sends_what_the_hybrid_formula_says(t, p, d, m, layers, scheme, sp_on, regather):
    sp_on = sp_on and t > 1
    s, h, q = 2 * t, 3, 2                               # s divisible by t (sequence parallel), Φ/(t·p) by d
    phi = t * p * d * q
    step = train_step(t, p, d, m, layers, s, h, phi, scheme, sp_on, regather)
    framework, zero, reshard = scheme
    options = {"zero": zero, "framework": framework, "reshard_after_forward": int(reshard), "sp": int(sp_on),
               "sp_regather": int(regather)}
    values = {S.t: t, S.p: p, S.d: d, S.c: 1, S.e: 1, S.b: d * m, S.s: s, S.h: h, S.L: p * layers, S.m: m,
              S.Phi: phi, S.G: t * p * d}
    axes = STRATEGIES["hybrid"].by_axis(**options)
    for axis in AXES:
        busiest = sp.sympify(axes[axis].send).subs(values)
        total = sp.sympify(axes[axis].total).subs(values)
        assert max(step.sent[axis]) == busiest, (axis, step.sent[axis], busiest)
        assert sum(step.sent[axis]) == total, (axis, sum(step.sent[axis]), total)
