"""Chapter 13 — hybrid Mamba-Transformer models (Nemotron-H, Nemotron 3): their layers as the step model counts them.

Megatron-Core's hybrid models (``hybrid_layer_pattern``: 'M' a Mamba-2 mixer, '*' attention, 'E' MoE, '-' an MLP)
make each of their L layers one block with its own pre-norm, where a transformer layer holds two (attention and
MLP).  The step model takes them as ``mamba=1``: L_att attention blocks, L_ssm Mamba-2 mixers, L_moe MoE blocks and
the rest dense MLPs, a pipeline stage holding each kind in the model's proportion.  The proofs below tie this count
to the transformer's: a transformer of L layers is a hybrid of 2L layers, L of them attention and none Mamba, and
the FLOPs, the activation bytes and the tensor-parallel collectives of the two are equal.  The Mamba mixer's own
counts are checked by hand on Nemotron 3 Nano.

Units: FLOPs (2 per multiply-add, forward only unless said), bytes per micro-batch and GPU, collectives per step.
"""

import sympy as sp

from symcomm.core.chapters import Chapter, Derivation, Step
from symcomm.core.proof import Claim
from symcomm.core.symbols import (E_s, F, F_e, L, L_att, L_moe, L_ssm, a_ssm, b, c, d, d_ssm, g_ssm, h, h_kv, h_lat,
                                  k, m, n_ssm, p, s, t)
from symcomm.presets import model
from symcomm.training import flops
from symcomm.training.axes import tp_terms
from symcomm.training.memory import KeptWidths, activation_bytes, hybrid_block_bytes, hybrid_layer_bytes

SOURCE = flops.MEGATRON_MAMBA
B = sp.Symbol("B", integer=True, positive=True)
L_tf = sp.Symbol("L_tf", integer=True, positive=True)          # the transformer's layers
#: a transformer of L_tf layers as a hybrid: each layer cut into its attention and its MLP block
AS_HYBRID = {L: 2 * L_tf, L_att: L_tf, L_ssm: 0}
fused, plain = sp.symbols("saved_fused saved_plain", positive=True)

MAMBA_FLOPS = Derivation(
    "A Mamba-2 layer's forward FLOPs",
    (Step(flops.mamba_layer_forward(B, s), "in_proj and out_proj, and the chunked scan (chunks of "
                                           f"Q = {flops.SSD_CHUNK} tokens)"),
     Step(2 * B * s * (h * (3 * d_ssm + 2 * g_ssm * n_ssm + a_ssm)
                       + flops.SSD_CHUNK * (n_ssm * g_ssm + d_ssm) + 2 * n_ssm * d_ssm),
          "per token: h·(2d_ssm + 2g_ssm·n_ssm + a_ssm) + d_ssm·h in the projections; Q·n_ssm·g_ssm (C·Bᵀ), "
          "Q·d_ssm (the masked scores times X) and 2·n_ssm·d_ssm (the chunk states and the output from them)")),
    "FLOPs, forward, B sequences of s tokens, 2 per multiply-add", SOURCE + "; " + flops.DAO_GU_SSD,
    lhs="FLOPs, Mamba-2 layer")

HYBRID_FLOPS = Derivation(
    "A hybrid Mamba model's layers: forward FLOPs",
    (Step(flops.hybrid_layers_forward(B, s, gated=False, moe=True),
          "L_att attention blocks, L_ssm Mamba-2 mixers, L_moe MoE blocks (k routed and E_s shared experts), the "
          "rest dense MLPs"),
     Step(L_att * (2 * B * s * h * (2 * h + 2 * h_kv) + 4 * B * s ** 2 * h)
          + L_ssm * 2 * B * s * (h * (3 * d_ssm + 2 * g_ssm * n_ssm + a_ssm)
                                 + flops.SSD_CHUNK * (n_ssm * g_ssm + d_ssm) + 2 * n_ssm * d_ssm)
          + L_moe * (k + E_s) * 4 * B * s * h * F_e + (L - L_att - L_ssm - L_moe) * 4 * B * s * h * F,
          "per block kind: QKV, output and the core; the Mamba mixer (above); k + E_s experts of 2 matrices h × F_e; "
          "an MLP of 2 matrices h × F")),
    "FLOPs, forward, B sequences, the LM head apart", SOURCE, lhs="FLOPs, layers")

_nano = model("nemotron-3-nano")
_nano_values = {sym: val for sym, val in _nano.architecture().items() if sym.name in
                ("h", "L", "L_att", "L_ssm", "a_ssm", "d_ssm", "n_ssm", "g_ssm")}

CLAIMS = [
    Claim(flops.hybrid_layers_forward(B, s, gated=True, moe=False).subs(AS_HYBRID),
          L_tf * flops.layer_forward(B, s, gated=True),
          name="a transformer of L_tf layers counted as a hybrid of 2·L_tf (L_tf attention, none Mamba): the same "
               "forward FLOPs (gated MLP)", source=SOURCE),
    Claim(flops.hybrid_layers_forward(B, s, gated=False, moe=True).subs(AS_HYBRID),
          L_tf * flops.layer_forward(B, s) + L_moe * (flops.expert_forward(B, s, False) - flops.mlp(B, s)),
          name="with MoE blocks among them: an MoE block in an MLP's place adds its experts and drops the MLP",
          source=SOURCE),
    *(Claim(2 * hybrid_layer_bytes(sp_on, False, True, saved=(fused, plain)).subs(AS_HYBRID),
            activation_bytes("none", True, sp_on, saved=(fused, plain)),
            name=f"activation bytes, sequence parallel {'on' if sp_on else 'off'}: the attention block's 13sbh and "
                 "the MLP block's 21sbh (each with its pre-norm) make Korthikanti et al.'s 34sbh per transformer "
                 "layer, the linears' saved bytes alike",
            source="Korthikanti et al. 2022, Table 2")
      for sp_on in (False, True)),
    *(Claim(sum((term.count for term in tp_terms(t, b * s * h, 2 * L_tf / p, sp_on=sp_on, micro=m,
                                                  blocks_per_layer=1)), sp.Integer(0)),
            sum((term.count for term in tp_terms(t, b * s * h, L_tf / p, sp_on=sp_on, micro=m)), sp.Integer(0)),
            name=f"tensor-parallel collectives, sequence parallel {'on' if sp_on else 'off'}: one pair per block, "
                 "so 2·L_tf one-block layers run the transformer's two pairs per layer",
            source="Korthikanti et al. 2022, §4.2.2 (g and ḡ per block)")
      for sp_on in (False, True)),
    Claim(flops.expert_forward(B, s, False, latent=True).subs(h_lat, h) - 4 * B * s * h ** 2,
          flops.expert_forward(B, s, False),
          name="LatentMoE with the latent as wide as h, its two projections aside: the plain MoE block's experts",
          source=flops.MEGATRON_LATENT_MOE),
    # Nemotron 3 Nano: in_proj h × (2·4096 + 2·8·128 + 64) = 2688 × 10304, out_proj 4096 × 2688: 27,697,152 +
    # 11,010,048 = 38,707,200 multiply-adds per token (nemotron_3_nano.py's mamba_num_heads 64, head dim 64, state
    # 128, groups 8)
    Claim(flops.mamba_projections_per_token().subs(_nano_values), 38_707_200,
          name="Nemotron 3 Nano: a Mamba-2 layer's projections, 38,707,200 multiply-adds per token (hand count)",
          source=_nano.source),
    # the scan per token: 2·(128·128·8 + 128·4096 + 2·128·4096) = 2·(131,072 + 524,288 + 1,048,576) = 3,407,872
    Claim(flops.ssd_scan(1, 1).subs(_nano_values), 3_407_872,
          name="Nemotron 3 Nano: the chunked scan, 3,407,872 FLOPs per token (hand count), 4.2 % of the layer's",
          source=flops.DAO_GU_SSD),
    # the Mamba block's kept bytes per token, no sequence parallel, t = 1, 16-bit saved inputs: norm input 2·2688,
    # in_proj input 2·2688, in_proj output 2·10304, scan output 2·4096, gated norm input 2·4096, out_proj input
    # 2·4096: 5376 + 5376 + 20608 + 8192 + 8192 + 8192 = 55,936 (no dropout mask after the block: the model trains
    # without dropout)
    Claim(hybrid_block_bytes(False, False, False, widths=KeptWidths(dropout=False))["mamba"].subs({**_nano_values, t: 1, b: 1, s: 1, c: 1, d: 1, m: 1}),
          55_936, name="Nemotron 3 Nano: a Mamba-2 block keeps 55,936 bytes per token (hand count, t = 1)",
          source=SOURCE),
]

CHAPTER = Chapter(
    13, "hybrid-mamba", "Hybrid Mamba-Transformer models",
    "Nemotron-H and Nemotron 3 interleave Mamba-2 mixers with attention and MoE blocks, one block per layer. "
    "The step model counts them as mamba=1: each block kind's FLOPs, GEMMs, kept activations and tensor-parallel "
    "collectives in the model's proportion; Nemotron 3 Super's LatentMoE (moe_latent=1) sends and computes its "
    "routed experts h_lat wide between a down- and an up-projection. Proved equal to the transformer's counts "
    "when the Mamba layers are none, and checked by hand on Nemotron 3 Nano's shape.",
    (MAMBA_FLOPS, HYBRID_FLOPS), tuple(CLAIMS))
