"""Floating-point operations of a transformer step, as SymPy expressions of its shape.

Convention (the one Narayanan et al. 2021, Appendix, and Korthikanti et al. 2022, Appendix A,
use, so that their equations can be checked term for term):

* only matrix multiplications are counted, 2 FLOPs per multiply-add; norms, softmax,
  activations and the optimizer are not FLOPs here (they are memory-bound and timed apart);
* attention is counted over the full s × s score matrix (no causal halving), as the papers do;
* the backward pass of a matmul costs twice its forward (one matmul for the input gradient,
  one for the weight gradient);
* "model FLOPs" = forward + backward, whatever is recomputed (what MFU divides);
  "hardware FLOPs" = model FLOPs + what the recompute mode runs again (what HFU divides).

Every function takes ``B`` sequences of ``seq`` tokens; the shape symbols are those of
:mod:`symcomm.core.symbols` (h, a, h_kv, F, V, L, s; L_moe, k, F_e, E_s for mixtures of experts;
q_lora, kv_lora, d_nope, d_rope, d_v for DeepSeek's multi-head latent attention, ``attention="mla"``).
Counts are FLOPs (not FLOP/s), for the whole model and batch unless a name says per layer.
"""

from __future__ import annotations

import sympy as sp

from ..core.symbols import (D_mtp, E, E_s, F, F_e, L, L_att, L_moe, L_ssm, V, a, a_ssm, d_nope, d_rope, d_ssm, d_v,
                            g_ssm, h, h_kv, h_lat, h_q, k, kv_lora, n_ssm, q_lora)
from .stages import block_share

#: the recompute modes (Korthikanti et al. 2022, §5): none; selective = the attention core
#: (QKᵀ, softmax, dropout, attention over V) is recomputed; full = the whole layer's forward; op = torchtitan's
#: op-level selective checkpointing (:func:`op_recomputed_matmuls`: the even-numbered matmuls of each block); block =
#: full for the first L_rc layers of each model chunk (Megatron's recompute_method block)
RECOMPUTE_MODES = ("none", "selective", "full", "op", "block")

KORTHIKANTI_FLOPS = ("Korthikanti et al. 2022, Reducing Activation Recomputation in Large Transformer Models, "
                     "Appendix A (model FLOPs 72BLsh²(1 + s/(6h) + V/(12hL)))")
NARAYANAN_FLOPS = ("Narayanan et al. 2021, Efficient Large-Scale Language Model Training on GPU Clusters Using "
                   "Megatron-LM, §5.1 eq. (3): 96BsLh²(1 + s/(6h) + V/(16Lh)) with one recomputed forward")


#: the attention kinds the FLOP counts take: multi-/grouped-query with heads h/a wide ("mha") or a·head_dim = h_q
#: wide ("mha_q": Qwen3, gpt-oss; the step model's q_width=heads), DeepSeek's multi-head latent attention ("mla")
ATTENTIONS = ("mha", "mha_q", "mla")


def kind_of_attention(attention: str, q_width) -> str:
    """The attention kind the FLOP and parameter counts take: ``attention`` (mha or mla), with q_width=heads
    multi-head attention's heads a·head_dim = h_q wide as "mha_q" (:func:`query_width`)."""
    return "mha_q" if attention == "mha" and q_width == "heads" else attention


def query_width(attention: str = "mha"):
    """The width of Q (and of the output projection's input) per token: h, or h_q = a·head_dim ("mha_q")."""
    return h_q if attention == "mha_q" else h

DEEPSEEK_V2_MLA = ("DeepSeek-AI 2024, DeepSeek-V2: A Strong, Economical, and Efficient Mixture-of-Experts Language "
                   "Model, arXiv:2405.04434, §2.1.2-2.1.3 (eqs. 9-19: W^DQ, W^UQ, W^QR, W^DKV, W^UK, W^UV, W^KR, W^O)")
MEGATRON_MLA = ("Megatron-LM megatron/core/transformer/multi_latent_attention.py (commit d98e8a6): "
                "linear_q_down_proj h → q_lora_rank (absent when q_lora_rank is None: linear_q_proj h → "
                "a·(qk_head_dim + qk_pos_emb_head_dim)), linear_q_up_proj, linear_kv_down_proj h → kv_lora_rank + "
                "qk_pos_emb_head_dim, linear_kv_up_proj kv_lora_rank → a·(qk_head_dim + v_head_dim), linear_proj "
                "a·v_head_dim → h")


def mla_query_width():
    """Multiply-adds per token of MLA's query path: h·q_lora + q_lora·a·(d_nope + d_rope) through the query
    latent; q_lora = 0 means no query compression (DeepSeek-V2-Lite's q_lora_rank null; Megatron-Core's
    linear_q_proj): h·a·(d_nope + d_rope)."""
    return sp.Piecewise((h * a * (d_nope + d_rope), sp.Eq(q_lora, 0)),
                        (q_lora * (h + a * (d_nope + d_rope)), True))


def mla_projections_per_token() -> sp.Expr:
    """Multiply-adds per token of MLA's projections (DEEPSEEK_V2_MLA, MEGATRON_MLA): the query path
    (:func:`mla_query_width`), K, V down h → kv_lora + d_rope, K, V up kv_lora → a·(d_nope + d_v), and the
    output a·d_v → h."""
    return (mla_query_width() + h * (kv_lora + d_rope) + kv_lora * a * (d_nope + d_v) + a * d_v * h)


def mla_up_per_token() -> sp.Expr:
    """Multiply-adds per token of MLA's up projections, what Megatron-Core's mla_up_proj recompute runs again:
    the query's q_lora → a·(d_nope + d_rope) (without query compression, q_lora = 0, its one projection from h) and
    K, V's kv_lora → a·(d_nope + d_v) (MEGATRON_MLA)."""
    query = sp.Piecewise((h * a * (d_nope + d_rope), sp.Eq(q_lora, 0)), (q_lora * a * (d_nope + d_rope), True))
    return query + kv_lora * a * (d_nope + d_v)


def attention_projections(B, seq, attention: str = "mha") -> sp.Expr:
    """Q and O are h × h (h × h_q with heads a·head_dim wide, "mha_q"), K and V are h × h_kv (h_kv = h without
    grouped-query attention); MLA: its five projections (:func:`mla_projections_per_token`)."""
    if attention == "mla":
        return 2 * B * seq * mla_projections_per_token()
    return 2 * B * seq * h * (2 * query_width(attention) + 2 * h_kv)


def attention_core(B, seq, attention: str = "mha") -> sp.Expr:
    """QKᵀ (B·a·s·s·(h/a) multiply-adds) and the scores times V (the same): 4·B·s²·h (4·B·s²·h_q with heads
    a·head_dim wide, "mha_q").  MLA: QKᵀ over
    the d_nope + d_rope wide heads and the scores times V over d_v, per head: 2·B·s²·a·(d_nope + d_rope + d_v)."""
    if attention == "mla":
        return 2 * B * seq ** 2 * a * (d_nope + d_rope + d_v)
    if attention == "mha_q":
        return 4 * B * seq ** 2 * h_q
    return 4 * B * seq ** 2 * h


def mlp(B, seq, width=F, gated: bool = False) -> sp.Expr:
    """h → width → h: two matrices, three with a gated unit (SwiGLU's gate and up projections)."""
    return (3 if gated else 2) * 2 * B * seq * h * width


def layer_forward(B, seq, gated: bool = False, width=F, attention: str = "mha") -> sp.Expr:
    """One dense transformer layer's forward."""
    return attention_projections(B, seq, attention) + attention_core(B, seq, attention) + mlp(B, seq, width, gated)


def moe_layer_forward(B, seq, gated: bool = True, attention: str = "mha") -> sp.Expr:
    """One MoE layer's forward: attention, the router (h × E: negligible, not counted), and each
    token through k routed experts and E_s shared experts of width F_e (E_s = 0: none, as Mixtral, Qwen3-MoE)."""
    return attention_projections(B, seq, attention) + attention_core(B, seq, attention) + expert_forward(B, seq, gated)


def expert_forward(B, seq, gated: bool = True, latent: bool = False) -> sp.Expr:
    """The experts of one MoE layer: each token through k routed and E_s shared experts of width F_e.  ``latent``
    (LatentMoE, moe_latent=1): the routed experts h_lat → F_e → h_lat on the token projected h → h_lat and back
    (:data:`MEGATRON_LATENT_MOE`), the shared experts on the h-wide token."""
    if not latent:
        return (k + E_s) * mlp(B, seq, F_e, gated)
    routed = k * (3 if gated else 2) * 2 * B * seq * h_lat * F_e
    return routed + E_s * mlp(B, seq, F_e, gated) + 2 * (2 * B * seq * h * h_lat)


MEGATRON_LATENT_MOE = ("Megatron-LM megatron/core/transformer/moe/moe_layer.py (commit d98e8a6): with moe_latent_size "
                       "the MoE layer's fc1_latent_proj h → moe_latent_size before the token dispatcher and "
                       "fc2_latent_proj back after it, TE linears with parallel_mode 'duplicated'; experts.py and "
                       "token_dispatcher.py take moe_latent_size as the experts' and the dispatch's hidden width; "
                       "the shared expert runs on the h-wide hidden states")


MEGATRON_MAMBA = ("Megatron-LM megatron/core/ssm/mamba_mixer.py (commit d98e8a6): in_proj, one ColumnParallelLinear "
                  "h → 2·d_inner + 2·ngroups·d_state + nheads (z, x, B, C, dt), the causal conv1d over x, B, C, the "
                  "chunked scan (mamba_split_conv1d_scan_combined, chunk_size 128), the gated RMSNorm over d_inner, "
                  "out_proj, a RowParallelLinear d_inner → h; nheads, ngroups split over t")
#: the chunk length of Mamba-2's chunked scan (MambaMixer's chunk_size default, MEGATRON_MAMBA)
SSD_CHUNK = 128
DAO_GU_SSD = ("Dao and Gu 2024, Transformers are SSMs (Mamba-2), arXiv:2405.21060, §6 (the SSD algorithm: per chunk "
              "of Q tokens the diagonal block C·Bᵀ masked times X, the chunk's states Bᵀ·X, and the off-diagonal "
              "output C·states)")


def mamba_projections_per_token() -> sp.Expr:
    """Multiply-adds per token of a Mamba-2 mixer's two projections (MEGATRON_MAMBA): in_proj h × (2·d_ssm +
    2·g_ssm·n_ssm + a_ssm) and out_proj d_ssm × h."""
    return h * (2 * d_ssm + 2 * g_ssm * n_ssm + a_ssm) + d_ssm * h


def ssd_scan(B, seq) -> sp.Expr:
    """The chunked scan's matmul FLOPs (DAO_GU_SSD, chunks of Q = SSD_CHUNK tokens), per token: C·Bᵀ within the
    chunk, Q·n_ssm per group (g_ssm groups); the masked scores times X, Q·d_ssm; the chunk states Bᵀ·X and the output
    from them C·states, n_ssm·d_ssm each; 2 FLOPs per multiply-add.  The convolution, gates, exponentials and the
    states' passing between chunks are memory-bound, not FLOPs here."""
    Q = SSD_CHUNK
    return 2 * B * seq * (Q * n_ssm * g_ssm + Q * d_ssm + 2 * n_ssm * d_ssm)


def mamba_layer_forward(B, seq) -> sp.Expr:
    """One Mamba-2 layer's forward (mamba=1): its projections and the chunked scan."""
    return 2 * B * seq * mamba_projections_per_token() + ssd_scan(B, seq)


def dense_layers(moe: bool) -> sp.Expr:
    """The dense-MLP layers of a hybrid Mamba model (mamba=1): the layers no other block kind fills."""
    return L - L_att - L_ssm - (L_moe if moe else 0)


def hybrid_layers_forward(B, seq, gated: bool = False, moe: bool = False, attention: str = "mha",
                          latent: bool = False) -> sp.Expr:
    """The L layers of a hybrid Mamba model (mamba=1), each one block: L_att attention blocks, L_ssm Mamba-2
    mixers, L_moe expert blocks (moe) and the rest dense MLPs (:func:`dense_layers`).  With L_ssm = 0 and a
    transformer's L layers cut into their attention and MLP blocks (2L layers, L_att = L) it is the transformer's
    count (proved in derivations/hybrid_mamba.py)."""
    out = (L_att * (attention_projections(B, seq, attention) + attention_core(B, seq, attention))
           + L_ssm * mamba_layer_forward(B, seq) + dense_layers(moe) * mlp(B, seq, F, gated))
    return out + (L_moe * expert_forward(B, seq, gated, latent) if moe else 0)


def lm_head_forward(B, seq) -> sp.Expr:
    """The logits: h × V for every token (the embedding lookup is not a matmul)."""
    return 2 * B * seq * h * V


MEGATRON_MTP = ("Megatron-LM megatron/core/transformer/multi_token_prediction.py (commit d98e8a6): each depth a "
                "MultiTokenPredictionLayer: enorm and hnorm (RMSNorms over h) of the next token's embedding and of the "
                "hidden state, torch.cat, eh_proj a ColumnParallelLinear 2h → h (_concat_embeddings), one layer of the "
                "decoder's kind (models/gpt/gpt_layer_specs.py get_gpt_mtp_block_spec: the last decoder layer's spec; "
                "the hybrid model its MTP pattern, Nemotron 3 Super's '*E'), final_layernorm (_postprocess); "
                "process_mtp_loss: the shared output layer and the cross-entropy per depth; MultiTokenPredictionBlock "
                "with mtp_use_repeated_layer: one layer run mtp_num_layers times")


def mtp_depth_forward(B, seq, gated: bool = False, moe: bool = False, attention: str = "mha", mamba: bool = False,
                      latent: bool = False) -> sp.Expr:
    """One multi-token-prediction depth's forward matmuls without its output head (:data:`MEGATRON_MTP`): eh_proj
    2h → h and the depth's layer, the decoder's last kind: an MoE layer with ``moe`` (DeepSeek-V3's), else a dense
    one; with ``mamba`` the hybrid's '*E' (an attention block and an expert block, Nemotron 3 Super's)."""
    eh_proj = 2 * B * seq * 2 * h * h
    if mamba:
        attention_block = attention_projections(B, seq, attention) + attention_core(B, seq, attention)
        return eh_proj + attention_block + (expert_forward(B, seq, gated, latent) if moe else mlp(B, seq, F, gated))
    if moe:
        return eh_proj + moe_layer_forward(B, seq, gated, attention)
    return eh_proj + layer_forward(B, seq, gated, attention=attention)


def mtp_forward(B, seq, gated: bool = False, moe: bool = False, attention: str = "mha", mamba: bool = False,
                latent: bool = False) -> sp.Expr:
    """The D_mtp depths' forward: each its layer (:func:`mtp_depth_forward`) and the shared output head."""
    return D_mtp * (mtp_depth_forward(B, seq, gated, moe, attention, mamba, latent) + lm_head_forward(B, seq))


def mtp_parameters(gated: bool = False, moe: bool = False, attention: str = "mha", mamba: bool = False,
                   latent: bool = False) -> tuple[sp.Expr, sp.Expr]:
    """(parameters outside the routed experts, routed experts' parameters) of one MTP layer (:data:`MEGATRON_MTP`):
    eh_proj 2h·h and its three RMSNorms (enorm, hnorm, final_layernorm: 3h); the layer's two norms (2h; MLA's q and
    kv latent norms q_lora + kv_lora too), its attention projections (a linear's weights are its multiply-adds per
    token) and its MLP, or with ``moe`` the router h·E, the E_s shared experts and the latent projections 2·h·h_lat
    (``latent``) beside the E routed experts.  The embedding it reads is the model's (a copy on the last stage when
    p > 1: symcomm.training.memory)."""
    def weights(forward_flops):
        # a linear's weights are its multiply-adds per token: half its forward FLOPs of one token
        return forward_flops / 2

    attention_weights = weights(attention_projections(1, 1, attention)) + (q_lora + kv_lora if attention == "mla" else 0)
    dense = 2 * h * h + 3 * h + 2 * h + attention_weights
    if not moe:
        return dense + weights(mlp(1, 1, F, gated)), sp.Integer(0)
    width = h_lat if latent else h
    dense = dense + h * E + E_s * weights(mlp(1, 1, F_e, gated)) + (2 * h * h_lat if latent else 0)
    return dense, E * weights(mlp(1, 1, F_e, gated)).xreplace({h: width})


def forward(B, seq, gated: bool = False, moe: bool = False, attention: str = "mha", mamba: bool = False,
            latent: bool = False) -> sp.Expr:
    """The whole model's forward: L layers (L_moe of them MoE when ``moe``; with ``mamba`` the hybrid's blocks,
    :func:`hybrid_layers_forward`) and the LM head."""
    if mamba:
        layers = hybrid_layers_forward(B, seq, gated, moe, attention, latent)
    elif moe:
        layers = (L - L_moe) * layer_forward(B, seq, gated, attention=attention) \
            + L_moe * moe_layer_forward(B, seq, gated, attention)
    else:
        layers = L * layer_forward(B, seq, gated, attention=attention)
    return layers + lm_head_forward(B, seq)


def block_matmuls(gated: bool = True, attention: str = "mha") -> tuple[tuple[str, object, object, str], ...]:
    """The matmuls of one dense Llama block's forward in the order torchtitan runs them, as (name, input width,
    output width, how tensor parallelism splits it: "column" splits the output, "row" the input): Attention.forward
    ``self.wq(x), self.wk(x), self.wv(x)``, the SDPA, ``self.wo``; FeedForward.forward
    ``self.w2(F.silu(self.w1(x)) * self.w3(x))`` (w1 before w3: Python evaluates the product's left operand
    first); pytorch/torchtitan torchtitan/models/llama/model.py at 9dec370a, torchtitan/models/llama3/model.py
    at 820504e2; without a gated unit the MLP is w1, w2.  Column-parallel wq, wk, wv, w1, w3 and row-parallel
    wo, w2 (torchtitan parallelize_llama.py, apply_tp)."""
    q = query_width(attention)
    out = [("wq", h, q, "column"), ("wk", h, h_kv, "column"), ("wv", h, h_kv, "column"), ("wo", q, h, "row"),
           ("w1", h, F, "column")]
    if gated:
        out.append(("w3", h, F, "column"))
    return tuple(out + [("w2", F, h, "row")])


def op_saved_matmuls(gated: bool = True, attention: str = "mha") -> tuple:
    """The matmuls whose outputs recompute=op keeps: the odd-numbered ones of :func:`block_matmuls` (1st, 3rd,
    ...).  torchtitan's policy counts aten.mm per block and pass (a fresh counter for each checkpointed call, one
    for the forward and one for the recompute) and saves an mm unless its count is even (TORCHTITAN_OP_SAC in
    symcomm.training.settings): gated wq, wv, w1, w2; else wq, wv, w1."""
    return block_matmuls(gated, attention)[0::2]


def op_recomputed_matmuls(gated: bool = True, attention: str = "mha") -> tuple:
    """The matmuls recompute=op runs again before the block's backward: the even-numbered ones of
    :func:`block_matmuls` but a last one, whose output the backward never reads: the recompute stops once it
    has rebuilt every tensor the backward saved, before the block's last matmul runs (pytorch/pytorch
    torch/utils/checkpoint.py: the non-reentrant checkpoint torchtitan's checkpoint_wrapper runs raises
    _StopRecomputationError once its recompute counter reaches the saved tensors; set_checkpoint_early_stop,
    on by default; the matmul's inputs are saved before it runs).  Gated: wk, wo, w3; without a gated unit wk, wo (w2, the 6th, is not rerun)."""
    every = block_matmuls(gated, attention)
    return tuple(mm for i, mm in enumerate(every[:-1]) if i % 2 == 1)


def op_recomputed_per_token(gated: bool = True, attention: str = "mha") -> sp.Expr:
    """Multiply-adds per token of the matmuls recompute=op runs again (:func:`op_recomputed_matmuls`):
    h·h_kv + q·h (wk, wo), + h·F gated (w3)."""
    return sp.Add(*(inner * outer for _, inner, outer, _ in op_recomputed_matmuls(gated, attention)))


def recomputed(B, seq, recompute: str, gated: bool = False, moe: bool = False, attention: str = "mha",
               schedule: str = "1f1b", mamba: bool = False, latent: bool = False) -> sp.Expr:
    """What the recompute mode runs again before the backward (forward FLOPs): nothing; the
    attention core of every layer; every layer's forward (the LM head is not recomputed); or, op, every
    layer's even-numbered matmuls (:func:`op_recomputed_matmuls`; dense blocks only, the mode refuses MoE);
    block, full's for the share of the layers that recompute (symcomm.training.stages.block_share, by ``schedule``)."""
    if recompute == "block":
        return block_share(schedule) * recomputed(B, seq, "full", gated, moe, attention)
    if recompute == "none":
        return sp.Integer(0)
    if recompute == "selective":
        return (L_att if mamba else L) * attention_core(B, seq, attention)
    if recompute == "full":
        return forward(B, seq, gated, moe, attention, mamba, latent) - lm_head_forward(B, seq)
    if recompute == "op" and not moe and attention != "mla":
        return L * 2 * B * seq * op_recomputed_per_token(gated, attention)
    if recompute == "op":
        raise ValueError("recompute=op counts the dense Llama block only (no MoE, no MLA)")
    raise ValueError(f"recompute={recompute} is not allowed; choose {', '.join(RECOMPUTE_MODES)}")


def model_flops(B, seq, gated: bool = False, moe: bool = False, attention: str = "mha", mamba: bool = False,
                latent: bool = False, mtp: bool = False) -> sp.Expr:
    """Forward + backward (= 3 × forward) of B sequences: what MFU divides.  ``mtp``: the D_mtp multi-token-prediction
    depths' too (:func:`mtp_forward`), as Megatron-LM's and Megatron-Bridge's printed model FLOPs count them
    (megatron/training/training.py at d98e8a64, num_floating_point_operations: mtp_num_layers more layers of the
    last kind, the MTP projections and (1 + mtp_num_layers) logits; Megatron-Bridge training/utils/flop_utils.py)."""
    depths = mtp_forward(B, seq, gated, moe, attention, mamba, latent) if mtp else 0
    return 3 * (forward(B, seq, gated, moe, attention, mamba, latent) + depths)


def causal_half(B, seq, attention: str = "mha", mamba: bool = False, mtp: bool = False) -> sp.Expr:
    """The model FLOPs a causal attention core leaves undone: half of every attention core's s × s, forward and
    backward (3 × forward), the multi-token-prediction depths' too.  :func:`model_flops` counts them (this module's
    convention, the papers'); Megatron-LM's own count does not (megatron/training/training.py at d98e8a64,
    num_floating_point_operations: the core attention term over 2, "causal mask (only half of the mask is
    non-zero)"), nor Megatron-Bridge's printed model TFLOP/s, so model_flops minus this is the FLOPs their MFU
    divides."""
    layers = (L_att if mamba else L) + (D_mtp if mtp else 0)
    return 3 * layers * attention_core(B, seq, attention) / 2


def causal_half_executed(B, seq, recompute: str = "none", attention: str = "mha", schedule: str = "1f1b",
                         mamba: bool = False, mtp: bool = False) -> sp.Expr:
    """Of :func:`hardware_flops`, the FLOPs a causal attention core leaves undone: :func:`causal_half`'s and half of
    every core the recompute runs again before the backward (selective and full every attention layer's, block its
    share of them, op none: torchtitan's op-level list keeps the SDPA's output; an MTP depth's under selective and
    full, as :func:`mtp_recomputed` counts it).  hardware_flops minus this is what hfu_causal divides, as mfu_causal
    divides model_flops minus causal_half: at long sequences the full s × s count makes HFU pass the share of the peak
    any kernel reaches (a causal flash kernel runs half of it)."""
    layers = L_att if mamba else L
    again = {"selective": layers, "full": layers, "block": block_share(schedule) * layers}.get(recompute, 0)
    if mtp and recompute in ("selective", "full"):
        again = again + D_mtp
    return causal_half(B, seq, attention, mamba, mtp) + again * attention_core(B, seq, attention) / 2


def mtp_recomputed(B, seq, recompute: str, gated: bool = False, moe: bool = False, attention: str = "mha",
                   mamba: bool = False, latent: bool = False, mla_up: bool = False) -> sp.Expr:
    """What the recompute mode runs again of the D_mtp depths: selective their attention core; full each depth's
    eh_proj and layer (MultiTokenPredictionLayer._checkpointed_forward, recompute_method uniform); block nothing
    (Megatron-Core warns and skips MTP recompute under it); recompute_mla_up the depth's MLA up projections."""
    again = {"selective": attention_core(B, seq, attention),
             "full": mtp_depth_forward(B, seq, gated, moe, attention, mamba, latent)}.get(recompute, 0)
    up = 2 * B * seq * mla_up_per_token() if mla_up and attention == "mla" else 0
    return D_mtp * (again + up)


def hardware_flops(B, seq, recompute: str = "none", gated: bool = False, moe: bool = False,
                   attention: str = "mha", schedule: str = "1f1b", mamba: bool = False, latent: bool = False,
                   mla_up: bool = False, mtp: bool = False, modules=frozenset()) -> sp.Expr:
    """Model FLOPs + the recomputed forward: what the GPUs execute, what HFU divides.  ``mla_up``
    (recompute_mla_up): every layer's MLA up projections once more (:func:`mla_up_per_token`); ``mtp``: the
    multi-token-prediction depths and what of them the recompute runs again (:func:`mtp_recomputed`).  ``modules``
    (symcomm.training.settings.RECOMPUTE_MODULES; recompute none or selective): mlp, every dense layer's MLP once
    more; moe, every MoE layer's experts (the router's h × E left out, as the forward leaves it); moe_act and
    layernorm rerun no matmul.  Each MTP depth's layer is a TransformerLayer of the same config, the decoder's last
    kind (MoE where the model has MoE layers: :data:`MEGATRON_MTP`), so its module reruns too, as its time counts it
    (symcomm.training.compute.mtp_setting keeps the modules)."""
    again = L * 2 * B * seq * mla_up_per_token() if mla_up and attention == "mla" else 0
    depths = D_mtp if mtp else 0
    if mtp:
        again = again + mtp_recomputed(B, seq, recompute, gated, moe, attention, mamba, latent, mla_up)
    if "mlp" in modules:
        again += ((L - L_moe if moe else L) + (0 if moe else depths)) * mlp(B, seq, F, gated)
    if "moe" in modules and moe:
        again += (L_moe + depths) * expert_forward(B, seq, gated, latent)
    return (model_flops(B, seq, gated, moe, attention, mamba, latent, mtp)
            + recomputed(B, seq, recompute, gated, moe, attention, schedule, mamba, latent) + again)
