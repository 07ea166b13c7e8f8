"""Which linears gather the sequence-sharded input under sequence parallelism (the sp_input setting), counted by hand.

With sp_input=block one all-gather serves a block's input (Megatron-LM; torchtitan's PrepareModuleInput); with DTensor's
ColwiseParallel(input_layouts=Shard(1)) on every projection (KempnerForge's plan: kempnerforge/distributed/
tensor_parallel.py at 3ad9d9a, _build_block_tp_plan) each column-parallel linear gathers its own input in the forward
and reduce-scatters its own input gradient in the backward, while the row-parallel outputs are unchanged.
"""

import pytest

from symcomm.base.errors import InputError
from symcomm.training.hybrid import hybrid_terms


def _counts(**options) -> dict:
    """(primitive, phase) → collectives of one step's tensor-parallel terms, symbols as they stand (L, m)."""
    out: dict = {}
    for term in hybrid_terms(zero=3, framework="fsdp2", sp=True, **options):
        if term.axis == "tp" and term.primitive in ("all_gather", "reduce_scatter") and term.what.startswith("sequence"):
            key = (term.primitive, term.phase)
            out[key] = out.get(key, 0) + term.count
    return out


@pytest.mark.parametrize("sp_input, per_layer", [
    ("block", 2),             # the attention block's input and the MLP block's input
    ("linear_gated", 5),      # q, k, v; gate and up
    ("linear", 4),            # q, k, v; the one up projection
])
def test_input_gathers_per_layer_by_hand(sp_input, per_layer):
    from symcomm.core.symbols import L, m, p
    counts = _counts(sp_input=sp_input)
    # per layer of the stage's L/p and micro-batch: the forward's input gathers and the backward's input-gradient
    # reduce-scatters follow sp_input; the row-parallel outputs (attention output, FC2: 2 a layer) do not
    assert counts[("all_gather", "forward")] == per_layer * L / p * m
    assert counts[("reduce_scatter", "backward")] == per_layer * L / p * m
    assert counts[("reduce_scatter", "forward")] == 2 * L / p * m
    assert counts[("all_gather", "backward")] == 2 * L / p * m


def test_moe_layers_gather_for_their_attention_only():
    # an MoE layer's MLP side is the dispatcher's (no dense MLP block): of a layer's five per-linear gathers only q, k, v
    from symcomm.core.symbols import E_s, L, L_moe, m, p
    import sympy as sp
    counts = _counts(sp_input="linear_gated", moe=True)
    # and a shared expert's MLP (E_s ≥ 1), whose two gated input linears gather as a dense MLP's do
    assert sp.simplify(counts[("all_gather", "forward")]
                       - (3 * L / p + 2 * (L / p - L_moe / p) + 2 * L_moe * sp.Min(1, E_s) / p) * m) == 0


@pytest.mark.parametrize("options", [dict(sp=False), dict(attention="mla"), dict(mamba=True)])
def test_per_linear_gathers_need_sequence_parallel_attention_blocks(options):
    with pytest.raises(InputError, match="sp_input=linear_gated needs sp=1"):
        hybrid_terms(**{"zero": 3, "framework": "fsdp2", "sp": True, "sp_input": "linear_gated", **options})
