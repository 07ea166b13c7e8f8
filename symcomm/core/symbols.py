"""Every symbol symcomm uses, in one place.

The source article's notation is kept: Φ parameters, batch b, sequence length s, hidden size h,
N GPUs.  Assumptions are declared so that a proof holds for every admissible value: a
count of ranks or tokens is a positive integer, a latency or a bandwidth cost is a
positive real.  Each symbol also has a plain ASCII *CLI name* (``Phi``, ``alpha``...),
which is also the keyword its evaluator takes.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp
from sympy.codegen.cfunctions import log2

from ..base.bits import ones_below_int  # noqa: F401  (read as S.ones_below_int)


@dataclass(frozen=True)
class SymbolInfo:
    symbol: sp.Symbol
    cli_name: str
    meaning: str
    unit: str


def _integer(name: str) -> sp.Symbol:
    return sp.Symbol(name, integer=True, positive=True)


def _real(name: str) -> sp.Symbol:
    return sp.Symbol(name, real=True, positive=True)


def _nonneg(name: str) -> sp.Symbol:
    return sp.Symbol(name, real=True, nonnegative=True)


# --- the source article's notation -------------------------------------------------------------
Phi = _integer("Phi")          # parameters (FP16: 2Φ bytes)
b = _integer("b")              # batch (sequences per step for the group described)
s = _integer("s")              # sequence length
h = _integer("h")              # hidden size
N = _integer("N")              # ranks (GPUs) in the group

# --- collectives -----------------------------------------------------------------------
M = _integer("M")              # message: the full, unsharded buffer, in elements
G = _integer("G")              # ranks per node (inner level of a two-level algorithm)
C = _integer("C")              # chunks a pipelined chain splits the buffer into
K = _integer("K")              # most elements in one segment of a segmented ring (gloo: 1 MiB / bytes per element)

# --- α-β-γ time model ------------------------------------------------------------------
alpha = _nonneg("alpha")              # s per message (inside a node / single level)
beta = _nonneg("beta")                # s per element (inside a node / single level)
gamma = _nonneg("gamma")              # s per reduced element
alpha_inter = _nonneg("alpha_inter")  # s per message across nodes
beta_inter = _nonneg("beta_inter")    # s per element across nodes

# --- model and parallel layout ---------------------------------------------------------
L = _integer("L")              # transformer layers
m = _integer("m")              # micro-batches per step (pipeline)
v = _integer("v")              # model chunks per pipeline stage (interleaved schedule)
k = _integer("k")              # experts chosen per token (top-k)
f = _real("f")                 # MoE capacity factor
E = _integer("E")              # experts
h_kv = _integer("h_kv")        # width of K (or V) per token: h for MHA, smaller with GQA
h_q = _integer("h_q")          # width of Q (and of the output projection's input) per token, a·head_dim, where it is not h
a = _integer("a")              # attention heads
d = _integer("d")              # data-parallel degree
t = _integer("t")              # tensor-parallel degree
p = _integer("p")              # pipeline-parallel degree
c = _integer("c")              # context-parallel degree
e = _integer("e")              # expert-parallel degree
L_moe = _integer("L_moe")      # MoE layers (those whose MLP is a mixture of experts)
Phi_E = _integer("Phi_E")      # expert parameters (the part of Φ sharded by expert parallelism)
V = _integer("V")              # vocabulary size (the embedding and the LM head are V × h)
F = _integer("F")              # FFN (MLP intermediate) width of a dense layer
F_e = _integer("F_e")          # FFN width of one expert
E_s = sp.Symbol("E_s", integer=True, nonnegative=True)   # shared (always active) experts of a MoE layer (0 or more)
# pipeline_split=first_last: transformer layers of the first and of the last of the p·v model chunks (0 or more:
# Megatron-LM lets an end chunk hold only the embedding or the loss)
L_first = sp.Symbol("L_first", integer=True, nonnegative=True)
L_last = sp.Symbol("L_last", integer=True, nonnegative=True)
# recompute=block: the first L_rc layers of each model chunk rerun their forward in the backward, the rest none
# (Megatron-Core's recompute_granularity full with recompute_method block and recompute_num_layers L_rc)
L_rc = sp.Symbol("L_rc", integer=True, positive=True)
# cpu_offload=1: the activations of L_off transformer layers kept in host memory (Megatron-Core's
# --cpu-offloading-num-layers)
L_off = sp.Symbol("L_off", integer=True, nonnegative=True)
# multi-head latent attention (DeepSeek-V2 arXiv:2405.04434 §2.1; the config.json names in the comments)
q_lora = sp.Symbol("q_lora", integer=True, nonnegative=True)  # q_lora_rank; 0 = no query compression (W_Q is h × a·(d_nope + d_rope))
kv_lora = _integer("kv_lora")  # kv_lora_rank: the joint K, V latent
d_nope = _integer("d_nope")    # qk_nope_head_dim: per head, the part of Q, K without rotary embedding
d_rope = _integer("d_rope")    # qk_rope_head_dim: per head, the rotary part of Q (K's is one, shared by the heads)
d_v = _integer("d_v")          # v_head_dim: per head, the width of V
# mamba=1: hybrid Mamba-Transformer layers (Nemotron-H, Nemotron 3: Megatron-Core's hybrid_layer_pattern), each of
# the L layers one block: L_att attention, L_ssm Mamba-2 mixers, L_moe MoE, the rest dense MLPs
L_att = sp.Symbol("L_att", integer=True, nonnegative=True)    # attention layers ('*' of the pattern)
L_ssm = _integer("L_ssm")      # Mamba-2 layers ('M' of the pattern)
a_ssm = _integer("a_ssm")      # Mamba heads (mamba_num_heads)
d_ssm = _integer("d_ssm")      # Mamba inner width, heads × head dim (d_inner = mamba_num_heads · mamba_head_dim)
n_ssm = _integer("n_ssm")      # Mamba state size (d_state, mamba_state_dim)
g_ssm = _integer("g_ssm")      # Mamba groups of B, C (ngroups, mamba_num_groups)
# bf16_layers=1: layers whose linears stay bf16 under a low-precision recipe (Megatron-Core --first-last-layers-bf16:
# --num-layers-at-start-in-bf16 + --num-layers-at-end-in-bf16)
L_bf16 = sp.Symbol("L_bf16", integer=True, nonnegative=True)
h_lat = _integer("h_lat")      # moe_latent=1: the routed experts' token width (LatentMoE's moe_latent_size), not h
D_mtp = _integer("D_mtp")      # mtp on: multi-token-prediction depths run per step (Megatron-Core --mtp-num-layers)
n_ga = _integer("n_ga")        # ga_schedules=1: gradient-accumulation steps of a step, each one pipeline schedule
d_r = _integer("d_r")          # hsdp=1: replicas of the sharded model among the d data-parallel ranks (d/d_r shard it)
t_e = _integer("t_e")          # expert_tp=t_e: the expert tensor-parallel size (Megatron-Core --expert-tensor-parallel-size)

# --- step time: the compute side -------------------------------------------------------
peak = _real("peak")           # dense matmul FLOP/s of one GPU at the run's dtype (datasheet)
eta = _real("eta")             # fitted: the share of peak the matmuls reach
hbm = _real("hbm")             # HBM bytes/s of one GPU (datasheet)
kappa = _nonneg("kappa")       # fitted: HBM passes over each activation byte (the memory-bound kernels)
peak_fp8 = _real("peak_fp8")   # dense FP8 matmul FLOP/s of one GPU (datasheet), for precision=fp8_* runs
eta_fp8 = _real("eta_fp8")     # fitted: the share of peak_fp8 the FP8 matmuls reach at large shapes
peak_fp4 = _real("peak_fp4")   # dense FP4 matmul FLOP/s of one GPU (datasheet), for precision=nvfp4 runs
eta_fp4 = _real("eta_fp4")     # fitted: the share of peak_fp4 the NVFP4 matmuls reach at large shapes
w_half = _nonneg("w_half")     # fitted: the GEMM width at which a matmul reaches half its large-shape share
w_half_expert = _nonneg("w_half_expert")   # fitted: the same for the MoE experts' grouped GEMMs (absent: w_half)
kappa_moe = _nonneg("kappa_moe")  # fitted: HBM-pass equivalents over each routed token copy (absent: 0)
eta_attn = _real("eta_attn")   # fitted: the share of peak (bf16) the flash-attention core reaches
eta_fa2 = _real("eta_fa2")     # published: the share of peak (bf16) FlashAttention-2 reaches (attention_kernel=fa2)
eta_triton = _real("eta_triton")  # published: the share of peak (bf16) FlashAttention's Triton port reaches (triton)
eta_cudnn = _real("eta_cudnn")  # published: the share of peak (bf16) cuDNN's fused attention reaches (cudnn)


SYMBOLS: dict[str, SymbolInfo] = {
    info.cli_name: info
    for info in (
        SymbolInfo(Phi, "Phi", "model parameters (2Φ bytes in fp16/bf16, as the source article counts them)", "elements"),
        SymbolInfo(b, "b", "batch size (sequences per step)", "sequences"),
        SymbolInfo(s, "s", "sequence length", "tokens"),
        SymbolInfo(h, "h", "hidden dimension", "elements"),
        SymbolInfo(N, "N", "number of GPUs (ranks) in the group", "ranks"),
        SymbolInfo(M, "M", "message size: the full unsharded buffer", "elements"),
        SymbolInfo(G, "G", "ranks per node (inner group of a two-level algorithm)", "ranks"),
        SymbolInfo(C, "C", "chunks a pipelined chain (ring broadcast/reduce) splits the buffer into", "chunks"),
        SymbolInfo(K, "K", "most elements in one segment of a segmented ring (gloo's reduce: 1 MiB / bytes per element)",
                   "elements"),
        SymbolInfo(alpha, "alpha", "latency per message (intra-node or single level)", "s"),
        SymbolInfo(beta, "beta", "transfer time per element (intra-node or single level); the CLI takes s/byte",
                   "s/element"),
        SymbolInfo(gamma, "gamma", "reduction time per element; the CLI takes s/byte", "s/element"),
        SymbolInfo(alpha_inter, "alpha_inter", "latency per message across nodes", "s"),
        SymbolInfo(beta_inter, "beta_inter", "transfer time per element across nodes; the CLI takes s/byte",
                   "s/element"),
        SymbolInfo(L, "L", "transformer layers", "layers"),
        SymbolInfo(m, "m", "micro-batches per step", "micro-batches"),
        SymbolInfo(v, "v", "model chunks per pipeline stage (interleaved)", "chunks"),
        SymbolInfo(k, "k", "experts per token (top-k)", "experts"),
        SymbolInfo(f, "f", "MoE capacity factor", "ratio"),
        SymbolInfo(E, "E", "number of experts", "experts"),
        SymbolInfo(h_kv, "h_kv", "width of K or V per token (h for MHA, less with GQA)", "elements"),
        SymbolInfo(h_q, "h_q", "width of Q per token, a·head_dim, where the heads are not h/a wide (q_width=heads: "
                   "Qwen3, gpt-oss)", "elements"),
        SymbolInfo(a, "a", "attention heads", "heads"),
        SymbolInfo(d, "d", "data-parallel degree", "ranks"),
        SymbolInfo(t, "t", "tensor-parallel degree", "ranks"),
        SymbolInfo(p, "p", "pipeline-parallel degree", "ranks"),
        SymbolInfo(c, "c", "context-parallel degree", "ranks"),
        SymbolInfo(e, "e", "expert-parallel degree", "ranks"),
        SymbolInfo(L_moe, "L_moe", "MoE layers (MLP replaced by a mixture of experts)", "layers"),
        SymbolInfo(Phi_E, "Phi_E", "expert parameters (part of Phi, sharded over the experts)", "elements"),
        SymbolInfo(V, "V", "vocabulary size (embedding and LM head are V × h)", "tokens"),
        SymbolInfo(F, "F", "FFN (MLP intermediate) width of a dense layer", "elements"),
        SymbolInfo(F_e, "F_e", "FFN width of one expert", "elements"),
        SymbolInfo(E_s, "E_s", "shared experts of a MoE layer (always active)", "experts"),
        SymbolInfo(L_first, "L_first", "transformer layers in the first of the p·v model chunks "
                   "(pipeline_split=first_last)", "layers"),
        SymbolInfo(L_last, "L_last", "transformer layers in the last of the p·v model chunks "
                   "(pipeline_split=first_last)", "layers"),
        SymbolInfo(L_rc, "L_rc", "transformer layers of each model chunk that recompute their forward in the backward "
                   "(recompute=block: Megatron's --recompute-method block --recompute-num-layers)", "layers"),
        SymbolInfo(L_off, "L_off", "transformer layers whose activations are offloaded to host memory (cpu_offload=1: "
                   "Megatron-Core's --cpu-offloading-num-layers)", "layers"),
        SymbolInfo(q_lora, "q_lora", "MLA query latent width (q_lora_rank; 0 = no query compression)", "elements"),
        SymbolInfo(kv_lora, "kv_lora", "MLA joint key-value latent width (kv_lora_rank)", "elements"),
        SymbolInfo(d_nope, "d_nope", "MLA per-head width of Q and K without rotary embedding (qk_nope_head_dim)",
                   "elements"),
        SymbolInfo(d_rope, "d_rope", "MLA per-head width of the rotary part of Q and K (qk_rope_head_dim)", "elements"),
        SymbolInfo(d_v, "d_v", "MLA per-head width of V (v_head_dim)", "elements"),
        SymbolInfo(L_att, "L_att", "attention layers of a hybrid Mamba model (mamba=1)", "layers"),
        SymbolInfo(L_ssm, "L_ssm", "Mamba-2 layers of a hybrid Mamba model (mamba=1)", "layers"),
        SymbolInfo(a_ssm, "a_ssm", "Mamba heads (mamba_num_heads)", "heads"),
        SymbolInfo(d_ssm, "d_ssm", "Mamba inner width: heads × head dim (d_inner)", "elements"),
        SymbolInfo(n_ssm, "n_ssm", "Mamba state size (d_state)", "elements"),
        SymbolInfo(g_ssm, "g_ssm", "Mamba groups of the B, C projections (ngroups)", "groups"),
        SymbolInfo(L_bf16, "L_bf16", "layers whose linear GEMMs stay bf16 under an FP8 or FP4 recipe (bf16_layers=1: "
                   "Megatron-Core's first and last layers in bf16)", "layers"),
        SymbolInfo(h_lat, "h_lat", "LatentMoE: the width the routed experts see and the dispatcher sends "
                   "(moe_latent_size; moe_latent=1)", "elements"),
        SymbolInfo(D_mtp, "D_mtp", "multi-token prediction: the depths each step runs (mtp=1 or shared; "
                   "Megatron-Core's mtp_num_layers)", "layers"),
        SymbolInfo(n_ga, "n_ga", "gradient-accumulation steps of one step, each its own pipeline schedule of m/n_ga "
                   "micro-batches (ga_schedules=1: torch.distributed.pipelining under torchtitan, NeMo AutoModel)",
                   "schedules"),
        SymbolInfo(d_r, "d_r", "hybrid sharding: replicas among the d data-parallel ranks, each sharding the model over "
                   "d/d_r of them (hsdp=1: FSDP2 on a (replicate, shard) mesh)", "replicas"),
        SymbolInfo(t_e, "t_e", "expert tensor-parallel size: each routed expert split over t_e ranks, the innermost axis "
                   "of Megatron-Core's expert grid (expert_tp=t_e; --expert-tensor-parallel-size)", "ranks"),
        SymbolInfo(peak, "peak", "dense matmul throughput of one GPU at the run's dtype", "FLOP/s"),
        SymbolInfo(eta, "eta", "share of peak the matmuls reach (fitted or held: the hardware preset says which)", "ratio"),
        SymbolInfo(hbm, "hbm", "memory (HBM) bandwidth of one GPU", "bytes/s"),
        SymbolInfo(kappa, "kappa", "fitted HBM passes over each activation byte (norms, softmax, dropout)", "ratio"),
        SymbolInfo(peak_fp8, "peak_fp8", "dense FP8 matmul throughput of one GPU (precision=fp8_tensor, fp8_delayed, "
                   "mxfp8, fp8_block, fp8_rowwise)", "FLOP/s"),
        SymbolInfo(eta_fp8, "eta_fp8", "fitted share of peak_fp8 the FP8 matmuls reach at large shapes", "ratio"),
        SymbolInfo(peak_fp4, "peak_fp4", "dense FP4 matmul throughput of one GPU (precision=nvfp4)", "FLOP/s"),
        SymbolInfo(eta_fp4, "eta_fp4", "fitted share of peak_fp4 the NVFP4 matmuls reach at large shapes", "ratio"),
        SymbolInfo(w_half, "w_half", "fitted GEMM width (MNK/(MK + KN + MN)) at which a matmul reaches half its "
                   "large-shape share of peak; 0 = shape-independent", "elements"),
        SymbolInfo(w_half_expert, "w_half_expert", "fitted GEMM width at which an MoE expert's grouped GEMM reaches "
                   "half its large-shape share of peak; absent = w_half", "elements"),
        SymbolInfo(kappa_moe, "kappa_moe", "fitted HBM-pass equivalents over each routed token copy's hidden vector per "
                   "MoE layer (dispatch, permutation, combine: forward + backward); absent = 0", "ratio"),
        SymbolInfo(eta_attn, "eta_attn", "share of the bf16 peak the flash-attention core reaches (forward and "
                   "backward; fitted, or held at the part's published share)", "ratio"),
        SymbolInfo(eta_fa2, "eta_fa2", "published share of the bf16 peak FlashAttention-2 reaches "
                   "(attention_kernel=fa2)", "ratio"),
        SymbolInfo(eta_triton, "eta_triton", "published share of the bf16 peak FlashAttention's Triton port reaches "
                   "(attention_kernel=triton)", "ratio"),
        SymbolInfo(eta_cudnn, "eta_cudnn", "published share of the bf16 peak cuDNN's fused attention reaches "
                   "(attention_kernel=cudnn)", "ratio"),
    )
}

BY_SYMBOL: dict[sp.Symbol, SymbolInfo] = {info.symbol: info for info in SYMBOLS.values()}

#: bytes per element of the run's dtype, B_e: no command-line symbol (eval takes --dtype), but the exports read it
#: where a subject runs some terms in a width of its own (counted in elements of B_e bytes) and the page counts
#: every subject in bytes of it
BYTES = sp.Symbol("B_e", integer=True, positive=True)
BYTES_INFO = SymbolInfo(BYTES, "B_e", "bytes per element of the run's dtype (--dtype)", "bytes")
#: the symbols an exported formula may hold, by name: :data:`SYMBOLS` and B_e (the JSON tree format's symbols)
EXPORTED: dict[str, SymbolInfo] = {**SYMBOLS, BYTES_INFO.cli_name: BYTES_INFO}

#: The coefficients of T = a·α + b·β + c·γ (+ the inter-node pair), in display order.
TIME_SYMBOLS: tuple[sp.Symbol, ...] = (alpha, beta, gamma, alpha_inter, beta_inter)

#: A time symbol of the intra-node (single) level → its inter-node counterpart (γ has none).
INTER_NODE: dict[sp.Symbol, sp.Symbol] = {alpha: alpha_inter, beta: beta_inter}


class CeilLog2(sp.Function):
    """⌈log₂ n⌉, the number of rounds a doubling pattern needs for n ranks: one function.

    Everything symcomm knows about ⌈log₂⌉ lives here, so that no printer or evaluator
    has to recognise the pattern ``ceiling(log2(n))``:

    * **evaluation** — a positive rational evaluates exactly (``(n − 1).bit_length()`` for
      an integer n ≥ 1), and ``CeilLog2(2**k)`` is ``k`` for an integer k (the proofs of
      the power-of-two domain substitute N = 2ᵏ); any other number gives what SymPy gives
      for ``ceiling(log2(n))``.  It is an integer, nonnegative for n ≥ 1.
    * **printing** — ``str()`` and LaTeX print it as ``ceiling(log2(n))`` and
      ``\\left\\lceil{\\log_2 n}\\right\\rceil``; Python, NumPy and C print
      ``math.ceil(math.log2(n))``, ``numpy.ceil(numpy.log2(n))``, ``ceil(log2(n))``,
      JavaScript ``Math.ceil(Math.log2(n))``, or ``NAME(n)`` when the printer has an attribute
      ``ceil_log2_function = "NAME"``: the exact helper its code defines (the exported Python
      module's ``_ceil_log2``, the C header's ``symcomm_ceil_log2``, the JavaScript module's
      ``_ceil_log2``, :func:`symcomm.numbers.logarithms.ceil_log2`).
    * ``rewrite(sympy.ceiling)`` gives the form ``ceiling(log2(n))``.
    * ``CeilLog2(2**k + 1)`` is ``k + 1`` for an integer k ≥ 0, so that :func:`log2_floor`
      reduces to k at N = 2ᵏ.
    """

    nargs = 1

    @classmethod
    def eval(cls, n):
        if n.is_Rational and n.is_positive:
            if n >= 1:
                return sp.Integer((int(sp.ceiling(n)) - 1).bit_length())
            return -sp.Integer(int(sp.floor(1 / n)).bit_length() - 1)
        if n.is_Pow and n.base == 2 and n.exp.is_integer:
            return n.exp
        const, rest = n.as_coeff_Add()
        if const == 1 and rest.is_Pow and rest.base == 2 and rest.exp.is_integer and rest.exp.is_nonnegative:
            return rest.exp + 1   # 2^k < 2^k + 1 ≤ 2^(k+1): ⌊log₂⌋ at a power of two (see log2_floor)
        if n.is_number:
            return sp.ceiling(log2(n))   # a float, or an argument ≤ 0: SymPy's value (zoo for 0)
        return None

    def _eval_is_integer(self):
        return True if self.args[0].is_positive else None

    def _eval_is_nonnegative(self):
        n = self.args[0]
        if n.is_positive and (n - 1).is_nonnegative:
            return True
        return None

    def _eval_is_positive(self):
        n = self.args[0]
        return True if (n - 1).is_positive else None

    def _eval_rewrite_as_ceiling(self, n, **kwargs):
        return sp.ceiling(log2(n))

    def _eval_evalf(self, prec):
        return self.rewrite(sp.ceiling)._eval_evalf(prec)

    # -- printing: the form ceiling(log2(n)) in every language ----------------------------

    def _sympystr(self, printer):
        return f"ceiling(log2({printer._print(self.args[0])}))"

    def _pretty(self, printer):
        return printer._print(self.rewrite(sp.ceiling))

    def _latex(self, printer, exp=None):
        tex = r"\left\lceil{%s}\right\rceil" % printer._print(log2(self.args[0]))
        return r"%s^{%s}" % (tex, exp) if exp is not None else tex

    def _code(self, printer, ceil: str, log: str) -> str:
        arg = printer._print(self.args[0])
        helper = getattr(printer, "ceil_log2_function", None)
        if helper:
            return f"{helper}({arg})"
        return f"{ceil}({log}({arg}))"

    def _pythoncode(self, printer):
        return self._code(printer, printer._module_format("math.ceil"), printer._module_format("math.log2"))

    def _numpycode(self, printer):
        return self._code(printer, printer._module_format(printer._module + ".ceil"),
                          printer._module_format(printer._module + ".log2"))

    def _ccode(self, printer):
        return self._code(printer, "ceil", "log2")

    def _javascript(self, printer):
        return self._code(printer, "Math.ceil", "Math.log2")


def log2_ceil(n: sp.Expr) -> sp.Expr:
    """⌈log₂ n⌉, the number of rounds a doubling pattern needs for n ranks (:class:`CeilLog2`)."""
    return CeilLog2(n)


class OnesBelow(sp.Function):
    """ones(n) = Σ_{b=0}^{n−1} popcount(b): the ones in the binary forms of 0 … n − 1.

    A binomial scatter or gather moves block b along one link per set bit of b (rank b's
    path to the root clears its lowest set bit at each hop), so its total is ones(N)·M/N.
    Like :class:`CeilLog2` it is one function everywhere: an integer n ≥ 0 evaluates
    exactly, ``OnesBelow(2**k)`` is k·2^(k−1) (the proofs' power-of-two domain); ``str()``
    prints ``ones_below(n)``, LaTeX ``\\operatorname{ones}(n)``; code printers call
    ``NAME(n)`` where the printer has ``ones_below_function = "NAME"`` (the exported Python
    module's ``_ones_below``, the C header's ``symcomm_ones_below``, the JavaScript module's
    ``_ones_below``, :func:`symcomm.numbers.logarithms.ones_below`).
    """

    nargs = 1

    @classmethod
    def eval(cls, n):
        if n.is_Integer and n >= 0:
            return sp.Integer(ones_below_int(int(n)))
        if n.is_Pow and n.base == 2 and n.exp.is_integer and n.exp.is_nonnegative:
            return n.exp * 2 ** n.exp / 2
        return None

    def _eval_is_integer(self):
        return True if self.args[0].is_integer and self.args[0].is_nonnegative else None

    def _eval_is_nonnegative(self):
        return True if self.args[0].is_integer and self.args[0].is_nonnegative else None

    def _sympystr(self, printer):
        return f"ones_below({printer._print(self.args[0])})"

    def _latex(self, printer, exp=None):
        tex = r"\operatorname{ones}\left(%s\right)" % printer._print(self.args[0])
        return r"%s^{%s}" % (tex, exp) if exp is not None else tex

    def _code(self, printer) -> str:
        helper = getattr(printer, "ones_below_function", None)
        if not helper:
            raise NotImplementedError("this printer has no ones_below helper")
        return f"{helper}({printer._print(self.args[0])})"

    _pythoncode = _numpycode = _ccode = _javascript = _code


def log2_floor(n: sp.Expr) -> sp.Expr:
    """⌊log₂ n⌋ for an integer n ≥ 1, written ⌈log₂(n + 1)⌉ − 1 (the same integer: 2^⌊log₂n⌋ ≤ n
    < n + 1 ≤ 2^(⌊log₂n⌋+1)), so that every printer and evaluator of :class:`CeilLog2` serves it
    and ``log2_floor(2**k)`` is k."""
    return CeilLog2(n + 1) - 1


def least_value(sym: sp.Symbol) -> int:
    """The smallest value a whole-number symbol takes by its declaration: 0 for one declared
    nonnegative (E_s: a MoE layer may have no shared expert, as Mixtral), else 1.  A subject may
    ask more (``Subject.least``: N ≥ 2 for a collective)."""
    return 0 if sym.is_nonnegative and not sym.is_positive else 1


def symbol(cli_name: str) -> sp.Symbol:
    """The symbol with this CLI name, or a ValueError listing the names that exist."""
    try:
        return SYMBOLS[cli_name].symbol
    except KeyError:
        raise ValueError(
            f"unknown symbol {cli_name!r}; known symbols: {', '.join(SYMBOLS)}"
        ) from None
