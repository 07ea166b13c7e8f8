"""One micro-batch's compute (symcomm.training.compute): the GEMM widths' efficiency, the FP8 recipes and their
casts, counted by hand on a small shape; fp8_param_gather's 1-byte all-gathers."""


import json
import pytest
import sympy as sp

from symcomm.base.errors import InputError
from symcomm.core import symbols as S
from symcomm.numbers.evaluation import exact
from symcomm.training import compute, settings, steptime
from symcomm.training.subjects import subject
from symcomm.training.terms import cost_in_bytes_of

from conftest import symcomm_command

# a small shape: one layer, MHA, plain MLP, one GPU, one sequence of 2 tokens in one micro-batch
SHAPE = {"h": 4, "h_kv": 4, "a": 2, "F": 8, "V": 16, "s": 2, "L": 1, "t": 1, "p": 1, "d": 1, "c": 1, "b": 1, "m": 1}
RATES = {"peak": 1000, "eta": sp.Rational(1, 2), "w_half": 2, "kappa": 0, "kappa_moe": 0, "hbm": 100,
         "peak_fp8": 2000, "eta_fp8": sp.Rational(2, 5), "eta_attn": sp.Rational(1, 4)}

# the layer's GEMMs by hand, (M, K, N) for T = 2 tokens: QKV 4 → 12, output 4 → 4, FC1 4 → 8, FC2 8 → 4
LINEAR = ((2, 4, 12), (2, 4, 4), (2, 4, 8), (2, 8, 4))
LM_HEAD = (2, 4, 16)
# Megatron-Core's vocab-parallel cross-entropy over the LM head's T × V = 2 × 16 = 32 logits, bytes per logit read
# and written op by op (megatron/core/tensor_parallel/cross_entropy.py at NVIDIA/Megatron-LM f2e5db402c): forward
# .float() 2 + 4, max 4, subtract in place 4 + 4, exp in place 4 + 4, sum 4, div_ 4 + 4 = 38; backward mul_ 4 + 4
# and autograd's cast of the fp32 gradient back to bf16 4 + 2 = 14; at hbm = 100 bytes/s
LOSS_FORWARD, LOSS_BACKWARD = sp.Rational(32 * 38, 100), sp.Rational(32 * 14, 100)
# QKᵀ and scores × V: 4·B·s²·h (Narayanan et al. 2021, Appendix), of which causal flash attention (flash=1, the
# default) runs half: the blocks above the diagonal are skipped (Dao 2023, FlashAttention-2, §3.1.1)
FULL_CORE_FLOPS = 4 * 2 ** 2 * 4
CORE_FLOPS = FULL_CORE_FLOPS // 2
# the flash kernel at peak · eta_attn = 1000 · 1/4 = 250 FLOP/s; its backward runs five s × s GEMMs to the
# forward's two (S = QKᵀ recomputed, dV, dP, dQ, dK: FlashAttention-2, Algorithm 2): 5/2 of the forward
CORE = sp.Rational(CORE_FLOPS, 250)
CORE_BACK = sp.Rational(5, 2) * CORE


def gemm_seconds(M, K, N, peak, eta, half=RATES["w_half"]):
    """2MNK FLOPs at peak × η·w/(w + w_half), w = MNK/(MK + KN + MN): the efficiency's definition (``half``: the
    GEMM's half-width, w_half; w_half_expert for the experts' grouped GEMMs)."""
    w = sp.Rational(M * K * N, M * K + K * N + M * N)
    return sp.Rational(2 * M * K * N) / (peak * eta * w / (w + half))


# the GEMM counts by hand take framework=deepspeed, whose weight gradients are written, not accumulated in place;
# Megatron's in-place accumulation into its gradient buffer is counted by hand apart
# (test_megatron_accumulates_the_weight_gradients_in_place_by_hand)
def micro(precision="bf16", recompute="none", embeddings=False, values=None, flash=True, kernel="fused"):
    run = settings.RunSetting(precision=precision, recompute=recompute, embeddings=embeddings, flash=flash,
                              attention_kernel=kernel, framework="deepspeed")
    out = compute.micro_batch_compute(run)
    at = {S.SYMBOLS[k].symbol: v for k, v in {**SHAPE, **RATES, **(values or {})}.items()}
    return exact(out.forward, at), exact(out.backward, at)


def test_bf16_small_shape_by_hand():
    bf16 = sum(gemm_seconds(*g, 1000, sp.Rational(1, 2)) for g in LINEAR)
    forward, backward = micro()
    assert forward == bf16 + CORE
    assert backward == 2 * bf16 + CORE_BACK                      # input and weight gradients: 2 × forward


def test_fa2_runs_the_core_at_its_published_share():
    # attention_kernel=fa2: the core at peak · eta_fa2 = 1000 · 1/5 = 200 FLOP/s, not at eta_attn; the GEMMs as before
    bf16 = sum(gemm_seconds(*g, 1000, sp.Rational(1, 2)) for g in LINEAR)
    core = sp.Rational(CORE_FLOPS, 200)
    forward, backward = micro(kernel="fa2", values={"eta_fa2": sp.Rational(1, 5)})
    assert forward == bf16 + core
    assert backward == 2 * bf16 + sp.Rational(5, 2) * core


def test_fa2_takes_the_presets_published_share_and_is_refused_without_one():
    # H100, PyTorch SDPA's flash backend (FlashAttention-2) at head dim 128, sequence length 8k, with the causal mask, as
    # pytorch/benchmark commit c0409aaf's message prints it (16 heads, batch 2): forward 1.84317 ms, backward 5.28237 ms.
    # FLOPs by hand: 4 * 2 * 16 * 8192^2 * 128 / 2 (the mask) = 5.4976e11 forward, 2.5 times that backward
    # (FlashAttention-2, Algorithm 2), so 298.3 and 260.2 TFLOP/s, and the core's share of the 989.4 TFLOP/s peak is
    # 3.5 / (1/298.3 + 2.5/260.2) / 989.4 = 270.0 / 989.4 = 0.273
    from symcomm import presets
    forward_flops = 4 * 2 * 16 * 8192 ** 2 * 128 / 2
    by_hand = 3.5 / (1 / (forward_flops / 1.84317e-3) + 2.5 / (2.5 * forward_flops / 5.28237e-3)) / 989.4e12
    assert presets.hardware("h100").compute_values("bf16", attention_kernel="fa2")["eta_fa2"] == pytest.approx(
        by_hand, abs=5e-4)
    for name in ("h100-gt", "h200", "h100-roce"):       # H100's compute die: the same published share
        assert dict(presets.hardware(name).attention_shares)["fa2"] == pytest.approx(by_hand, abs=5e-4), name
    assert "eta_fa2" not in presets.hardware("h100").compute_values("bf16")
    # GB200: no published FlashAttention-2 share: refused, in one line
    run = symcomm_command("eval", "hybrid", "--model", "llama3-8b", "--hardware", "gb200", "t=1", "p=1", "d=8", "c=1",
                          "b=16", "m=2", "s=4096", "attention_kernel=fa2")
    assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1
    assert "attention_shares fa2" in run.stderr and "attention_kernel=fused" in run.stderr


def test_triton_runs_the_core_at_its_own_published_share():
    # attention_kernel=triton: the core at peak · eta_triton = 1000 · 1/10 = 100 FLOP/s, neither eta_attn nor eta_fa2
    bf16 = sum(gemm_seconds(*g, 1000, sp.Rational(1, 2)) for g in LINEAR)
    core = sp.Rational(CORE_FLOPS, 100)
    forward, backward = micro(kernel="triton", values={"eta_triton": sp.Rational(1, 10), "eta_fa2": sp.Rational(1, 5)})
    assert forward == bf16 + core
    assert backward == 2 * bf16 + sp.Rational(5, 2) * core


def test_a100_kernel_shares_are_the_flashattention2_release_chart():
    # Dao-AILab/flash-attention assets/flash2_a100_fwd_bwd_benchmark.png at 4f285b35, panel (d): causal, head dim
    # 128, sequence length 8k, forward + backward: FlashAttention-2 182 TFLOP/s, FlashAttention Triton 78, of the
    # A100's 312 TFLOP/s bf16 peak (datasheet)
    from symcomm import presets
    for name in ("a100", "a100-40gb"):
        assert presets.hardware(name).compute_values("bf16", attention_kernel="fa2")["eta_fa2"] == pytest.approx(
            182 / 312, abs=5e-4), name
        assert presets.hardware(name).compute_values("bf16", attention_kernel="triton")["eta_triton"] == pytest.approx(
            78 / 312, abs=5e-4), name
        # the fused core below Hopper is FlashAttention-2: Transformer Engine prefers cuDNN's FusedAttention only on
        # compute capability 9.0 and above (transformer_engine/pytorch/attention/dot_product_attention/utils.py,
        # get_attention_backend), so a run without attention_kernel reads FlashAttention-2's share as eta_attn
        assert presets.hardware(name).compute_values("bf16")["eta_attn"] == pytest.approx(182 / 312, abs=5e-4), name
    # H100: no chart times the port; the same release's H100 chart (flash2_h100_fwd_bwd_benchmark.png, panel (d), 8k)
    # has FlashAttention-1 at 135 and FlashAttention-2 at 308, the A100 chart the port at 78/80 of the one and 78/182
    # of the other: 135 · 78/80 = 131.6 and 308 · 78/182 = 132.0 TFLOP/s of the 989.4 peak, 0.133 both ways
    for by_hand in (135 * 78 / 80 / 989.4, 308 * 78 / 182 / 989.4):
        assert dict(presets.hardware("h100").attention_shares)["triton"] == pytest.approx(by_hand, abs=5e-4)
    # B200: none published: refused, naming the field and the way out
    with pytest.raises(InputError, match="attention_shares triton.*attention_kernel=fused"):
        presets.hardware("b200").compute_values("bf16", attention_kernel="triton")


def test_b200_fa2_share_is_pytorch_sdpas_flash_backend_on_b200():
    # NVIDIA/cudnn-frontend benchmark/sdpa_benchmark_training/artifacts/sdpa_bf16_benchmark_results_NVIDIA_B200.csv
    # (commit 0258951d): PyTorch SDPA's flash backend (FlashAttention-2) on a B200, head dim 128, causal, 8k: forward
    # 373.392, backward 298.867 TFLOP/s; the backward runs 5/2 of the forward's FLOPs, so the core's share of the
    # 2250 TFLOP/s peak is 3.5 / (1/373.392 + 2.5/298.867) / 2250 = 316.9 / 2250 = 0.1409
    from symcomm import presets
    by_hand = 3.5 / (1 / 373.392 + 2.5 / 298.867) / 2250
    for name in ("b200", "b200-xdr"):       # the same GPU
        assert presets.hardware(name).compute_values("bf16", attention_kernel="fa2")["eta_fa2"] == pytest.approx(
            by_hand, abs=5e-4), name
    assert "fa2" not in dict(presets.hardware("gb200").attention_shares)      # none published on GB200


def test_cudnn_is_the_published_cudnn_share_under_any_framework():
    # attention_kernel=cudnn: the core at cuDNN's published share whichever framework calls it.  The shares by hand,
    # each the backward running 5/2 of the forward's FLOPs (FlashAttention-2, Algorithm 2):
    # H100 80GB SXM5, Shah et al. 2024 (FlashAttention-3, arXiv 2407.08608) section 4.1, cuDNN at head dim 128, 8k:
    # forward 600, backward 518 TFLOP/s of 989.4; B200, NVIDIA/cudnn-frontend sdpa_bf16_benchmark_results_NVIDIA_B200.csv
    # (0258951d), PyTorch SDPA's cuDNN backend at 8k: 1171.3 and 942.5 of 2250; GB200, cudnn-frontend
    # llama3.1_20260424_100750.csv (fb682ce7), 8k: 1574 and 1332 of 2500
    from symcomm import presets
    by_hand = {"h100": 3.5 / (1 / 600 + 2.5 / 518) / 989.4, "b200": 3.5 / (1 / 1171.3 + 2.5 / 942.5) / 2250,
               "gb200": 3.5 / (1 / 1574 + 2.5 / 1332) / 2500}
    by_hand.update({name: by_hand["h100"] for name in ("h100-gt", "h200", "h100-roce")})   # H100's die
    by_hand["b200-xdr"] = by_hand["b200"]
    for name, share in by_hand.items():
        values = presets.hardware(name).compute_values("bf16", attention_kernel="cudnn", typed={"peak": 9e14})
        assert values["eta_cudnn"] == pytest.approx(share, abs=5e-4), name
    # the core at peak · eta_cudnn, as fa2's at eta_fa2: 1000 · 1/4 = 250 FLOP/s
    bf16 = sum(gemm_seconds(*g, 1000, sp.Rational(1, 2)) for g in LINEAR)
    forward, backward = micro(kernel="cudnn", values={"eta_cudnn": sp.Rational(1, 4)})
    assert forward == bf16 + sp.Rational(CORE_FLOPS, 250)
    # under fsdp2 on H100 naming cudnn times the core as Megatron's fused core is timed there (the framework's own
    # default today: frameworks.framework_attention), faster than FlashAttention-2, and no constant is typed: the
    # fit's error stays
    layout = ("--model", "llama3.1-8b", "--hardware", "h100", "t=1", "p=1", "d=8", "c=1", "b=16", "m=1", "s=8192",
              "zero=3")
    fsdp2 = symcomm_command("eval", "hybrid", *layout, "framework=fsdp2", "attention_kernel=cudnn", "--json")
    fsdp2_fa2 = symcomm_command("eval", "hybrid", *layout, "framework=fsdp2", "attention_kernel=fa2", "--json")
    typed = symcomm_command("eval", "hybrid", *layout, "framework=fsdp2", f"eta_attn={by_hand['h100']:.4f}", "--json")
    assert fsdp2.returncode == fsdp2_fa2.returncode == typed.returncode == 0, fsdp2.stderr + typed.stderr
    cudnn_s = json.loads(fsdp2.stdout)["step_time"]
    assert cudnn_s < json.loads(fsdp2_fa2.stdout)["step_time"]
    assert cudnn_s == pytest.approx(json.loads(typed.stdout)["step_time"], rel=2e-3)
    # A100: no published cuDNN share (Transformer Engine runs FlashAttention-2 there): refused, in one line
    run = symcomm_command("eval", "hybrid", *layout[:3], "a100", *layout[4:], "framework=fsdp2",
                          "attention_kernel=cudnn")
    assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1
    assert "attention_shares cudnn" in run.stderr and "attention_kernel=fused" in run.stderr


def test_published_fused_share_is_what_a_block_without_eta_attn_reads():
    # Shah et al. 2024 (FlashAttention-3, arXiv 2407.08608) section 4.1 charts, H100 80GB SXM5, head dim 128, seq 8k:
    # cuDNN forward 600 TFLOP/s, backward 518; the backward runs 5/2 of the forward's FLOPs (FlashAttention-2,
    # Algorithm 2), so the core's share of the 989.4 TFLOP/s peak is 3.5 / (1/600 + 2.5/518) / 989.4 = 0.5448
    from dataclasses import replace
    from symcomm import presets
    by_hand = 3.5 / (1 / 600 + 2.5 / 518) / 989.4
    h100 = presets.hardware("h100")
    assert dict(h100.attention_shares)["fused"] == pytest.approx(by_hand, abs=5e-4)
    block = {k: v for k, v in h100.step_time if k != "eta_attn"}
    unfitted = replace(h100, step_time=tuple(block.items()))
    assert unfitted.compute_values("bf16")["eta_attn"] == dict(h100.attention_shares)["fused"]
    # without a published share the older rule stands: eta_attn read as eta
    bare = replace(unfitted, attention_shares=())
    assert bare.compute_values("bf16")["eta_attn"] == bare.compute_values("bf16")["eta"]


def test_without_flash_attention_the_whole_masked_core_runs():
    # Megatron-LM 2021-22 (flash=0) computed the full s × s scores, masked: all 4·B·s²·h of the core
    bf16 = sum(gemm_seconds(*g, 1000, sp.Rational(1, 2)) for g in LINEAR)
    forward, backward = micro(flash=False)
    assert forward == bf16 + sp.Rational(FULL_CORE_FLOPS, 500)
    assert backward == 2 * forward


def test_bf16_lm_head_and_full_recompute_by_hand():
    linear = sum(gemm_seconds(*g, 1000, sp.Rational(1, 2)) for g in LINEAR)
    head = gemm_seconds(*LM_HEAD, 1000, sp.Rational(1, 2))
    forward, backward = micro(recompute="full", embeddings=True)
    assert forward == linear + CORE + head + LOSS_FORWARD
    # the layer's forward again, not the head's nor the loss's
    assert backward == 2 * (linear + head) + CORE_BACK + (linear + CORE) + LOSS_BACKWARD


def test_moe_grouped_gemms_by_hand():
    """Every layer MoE, E = 4 experts over e = 2 GPUs, top-2, expert width 8, no shared expert: the two GPUs' 2·T·k
    = 8 routed tokens spread evenly put 2 tokens on each expert, and each GPU holds 2 experts, each running FC1
    (2 × 4 · 4 × 8) and FC2 (2 × 8 · 8 × 4).  The experts' grouped GEMMs on their own half-width w_half_expert = 6,
    the attention's on w_half = 2."""
    moe = {"L_moe": 1, "E": 4, "e": 2, "k": 2, "F_e": 8, "E_s": 0, "w_half_expert": 6}
    run = settings.RunSetting(moe=True, framework="deepspeed")
    out = compute.micro_batch_compute(run)
    at = {S.SYMBOLS[k].symbol: v for k, v in {**SHAPE, **RATES, **moe}.items()}
    # FC1: w = 64/(8 + 32 + 16) = 8/7, 128 FLOPs at 1000 · ½ · (8/7)/(8/7 + 6) = 80 FLOP/s: 1.6 s
    experts = 2 * (gemm_seconds(2, 4, 8, 1000, sp.Rational(1, 2), 6) + gemm_seconds(2, 8, 4, 1000, sp.Rational(1, 2), 6))
    assert gemm_seconds(2, 4, 8, 1000, sp.Rational(1, 2), 6) == sp.Rational(8, 5)
    attention = sum(gemm_seconds(*g, 1000, sp.Rational(1, 2)) for g in LINEAR[:2])
    assert exact(out.forward, at) == experts + attention + CORE
    assert exact(out.backward, at) == 2 * (experts + attention) + CORE_BACK


def test_moe_routing_passes_by_hand():
    """kappa_moe = 3 HBM-pass equivalents over the routed token copies: the GPU's T = 2 tokens (t = 1: all of them
    its own) in k = 2 copies of their h = 4 wide hidden vector at 2 bytes an element, one MoE layer: 2·2·4·2 = 32
    bytes, 3 passes at 100 bytes/s = 0.96 s, forward a third (0.32 s), backward two (0.64 s), on top of the same
    run at kappa_moe = 0; a dense run reads none of it."""
    moe = {"L_moe": 1, "E": 4, "e": 2, "k": 2, "F_e": 8, "E_s": 0, "w_half_expert": 6}
    run = settings.RunSetting(moe=True, framework="deepspeed")
    out = compute.micro_batch_compute(run)
    at = {S.SYMBOLS[k].symbol: v for k, v in {**SHAPE, **RATES, **moe}.items()}
    routed = {**at, S.kappa_moe: 3}
    assert exact(out.forward, routed) - exact(out.forward, at) == sp.Rational(32, 100)
    assert exact(out.backward, routed) - exact(out.backward, at) == sp.Rational(64, 100)
    assert S.kappa_moe not in compute.micro_batch_compute(settings.RunSetting()).total.free_symbols
    # a full recompute runs the MoE layers' forward again: a third more
    full = compute.micro_batch_compute(settings.RunSetting(moe=True, framework="deepspeed", recompute="full"))
    assert exact(full.total, routed) - exact(full.total, at) == sp.Rational(128, 100)


# bytes per element a cast moves, from Transformer Engine's docs (docs/features/low_precision_training, commit
# d0067d0d): it reads the bf16 tensor (2 bytes; current scaling reads it twice, for the amax first) and writes
# a rowwise and a columnwise (on Hopper transposed) 1-byte copy; MXFP8 adds one E8M0 byte per 32 elements to
# each copy, blockwise FP8 one fp32 scale per 128 activations and per 128×128 weights
CAST_BYTES = {"fp8_tensor": (2 + 2 + 2 * 1, 2 + 2 + 2 * 1),
              # delayed scaling: the scale from the amax history, one read of the tensor (fp8_delayed_scaling.rst)
              "fp8_delayed": (2 + 2 * 1, 2 + 2 * 1),
              "mxfp8": (2 + 2 * (1 + sp.Rational(1, 32)), 2 + 2 * (1 + sp.Rational(1, 32))),
              "fp8_block": (2 + 2 * (1 + sp.Rational(4, 128)), 2 + 2 * (1 + sp.Rational(4, 128 * 128)))}
X_ELEMENTS = sum(M * K for M, K, N in LINEAR)                  # 8 + 8 + 8 + 16 = 40
W_ELEMENTS = sum(K * N for M, K, N in LINEAR)                  # 48 + 16 + 32 + 32 = 128
DY_ELEMENTS = sum(M * N for M, K, N in LINEAR)                 # 24 + 8 + 16 + 8 = 56


@pytest.mark.parametrize("precision", ["fp8_tensor", "fp8_delayed", "mxfp8", "fp8_block"])
def test_fp8_small_shape_by_hand(precision):
    """The linear GEMMs at peak_fp8 · eta_fp8 (same width factor), the attention core at the bf16 peak · eta_attn
    and the LM head at the bf16 peak · eta, the casts at the HBM bandwidth: X and the weights (m = 1) forward, dY
    backward."""
    act, weight = CAST_BYTES[precision]
    assert (X_ELEMENTS, W_ELEMENTS, DY_ELEMENTS) == (40, 128, 56)
    fp8 = sum(gemm_seconds(*g, 2000, sp.Rational(2, 5)) for g in LINEAR)
    head = gemm_seconds(*LM_HEAD, 1000, sp.Rational(1, 2))
    forward, backward = micro(precision, embeddings=True)
    assert forward == fp8 + CORE + head + (X_ELEMENTS * act + W_ELEMENTS * weight) / sp.Integer(100) + LOSS_FORWARD
    assert backward == 2 * (fp8 + head) + CORE_BACK + DY_ELEMENTS * act / sp.Integer(100) + LOSS_BACKWARD


# NVFP4, bytes per element from Transformer Engine's NVFP4 page (docs/features/low_precision_training/nvfp4/nvfp4.rst,
# commit d0067d0d) and its quantizer (transformer_engine/pytorch/csrc/quantizer.cpp, NVFP4Quantizer::quantize_impl):
# the amax first, a read of the bf16 tensor (2; the Hadamard-transformed columnwise amax in the same read), then the
# cast reading it again (2) and writing a rowwise and a transposed columnwise E2M1 copy, half a byte each, each with
# one E4M3 byte per 16 elements of an activation or gradient, per 16×16 block of a weight
NVFP4_BYTES = (2 + 2 + 2 * (sp.Rational(1, 2) + sp.Rational(1, 16)),
               2 + 2 + 2 * (sp.Rational(1, 2) + sp.Rational(1, 256)))


def test_nvfp4_small_shape_by_hand():
    """The linear GEMMs, all three of each, at peak_fp4 · eta_fp4 (3000 · 1/3 = 1000 FLOP/s here, same width
    factor), the attention core and LM head in bf16 as under FP8, the casts as above at the HBM bandwidth."""
    act, weight = NVFP4_BYTES
    assert (act, weight) == (sp.Rational(41, 8), sp.Rational(641, 128))
    fp4 = sum(gemm_seconds(*g, 3000, sp.Rational(1, 3)) for g in LINEAR)
    head = gemm_seconds(*LM_HEAD, 1000, sp.Rational(1, 2))
    rates = {"peak_fp4": 3000, "eta_fp4": sp.Rational(1, 3)}
    forward, backward = micro("nvfp4", embeddings=True, values=rates)
    assert forward == fp4 + CORE + head + (X_ELEMENTS * act + W_ELEMENTS * weight) / sp.Integer(100) + LOSS_FORWARD
    assert backward == 2 * (fp4 + head) + CORE_BACK + DY_ELEMENTS * act / sp.Integer(100) + LOSS_BACKWARD
    # the FP8 constants play no part, nor the FP4 ones under an FP8 recipe
    assert micro("nvfp4", embeddings=True, values={**rates, "peak_fp8": 1, "eta_fp8": 1}) == (forward, backward)
    assert micro("fp8_tensor", values={"peak_fp4": 1, "eta_fp4": 1}) == micro("fp8_tensor")


def test_nvfp4_on_the_hardware_presets():
    """GB200 and B200 give a dense FP4 peak, twice their FP8 one (NVIDIA's GB200 NVL72 and HGX B200 tables: FP4 20
    and 18 PFLOPS with sparsity per GPU); GB200's eta_fp4 is fitted on its NVFP4 runs, B200's carried over from it (one
    named run there) and H100 has no FP4 at all: its refusal names what is missing."""
    from symcomm.presets import hardware

    gb200 = hardware("gb200").compute_values("bf16", "nvfp4")
    assert gb200["peak_fp4"] == 2 * hardware("gb200").peak("fp8") == 1e16
    assert 0 < gb200["eta_fp4"] <= 1 and "peak_fp8" not in gb200 and "eta_fp8" not in gb200
    assert "eta_fp4" not in hardware("gb200").compute_values("bf16", "mxfp8")
    assert hardware("b200").peak("fp4") == 9e15
    # B200's one NVFP4 run cannot fit its share: it is held at B200's fitted eta_fp8 times GB200's eta_fp4/eta_fp8
    # (derivations/fit_step_time.py transferred_eta_fp4), the same Blackwell GPU
    b200, fitted = hardware("b200"), dict(hardware("b200").step_time)
    assert b200.compute_values("bf16", "nvfp4")["eta_fp4"] == pytest.approx(
        fitted["eta_fp8"] * gb200["eta_fp4"] / dict(hardware("gb200").step_time)["eta_fp8"], abs=5e-5)
    with pytest.raises(InputError, match="compute capability 9.0, and the recipe's GEMMs need 10.0 or higher"):
        hardware("h100").compute_values("bf16", "nvfp4")
    # Megatron-Core gathers NVFP4 weights under its own switch; the FP8 one is refused here, not misread
    with pytest.raises(InputError, match="fp8_param_gather=1 with precision=nvfp4"):
        subject("hybrid", zero="1", fp8_param_gather="1", precision="nvfp4").terms


def test_a_typed_low_peak_the_precision_does_not_run_is_said():
    import symcomm

    layout = dict(model="llama3-70b", hardware="gb200", t=2, p=4, d=8, c=1, b=256, m=32, s=8192, sp=1)
    # three calls: the first answers, the second plans, the third answers from the plan (symcomm.training.hybridfast)
    for _ in range(3):
        got = symcomm.evaluate("hybrid", **layout, precision="mxfp8", peak_fp4=1e16)
        assert "peak_fp4 not used: precision=mxfp8 runs no matmul in FP4" in got.notes
        got = symcomm.evaluate("hybrid", **layout, precision="nvfp4", peak_fp8=5e15)
        assert "peak_fp8 not used: precision=nvfp4 runs no matmul in FP8" in got.notes


def test_eval_says_typed_beside_the_peak_typed_alone():
    layout = ("--model", "llama3-70b", "--hardware", "gb200", "t=2", "p=4", "d=8", "c=1", "b=256", "m=32", "s=8192",
              "sp=1", "precision=nvfp4")
    line = next(x for x in _cli("eval", "hybrid", *layout, "peak_fp4=5e15").stdout.splitlines()
                if x.startswith("  constants"))
    assert "peak 2500 TFLOP/s (bf16)," in line and "peak_fp4 5000 TFLOP/s typed," in line
    line = next(x for x in _cli("eval", "hybrid", *layout, "peak=2e15").stdout.splitlines()
                if x.startswith("  constants"))
    assert "peak 2000 TFLOP/s (bf16 typed)," in line and "peak_fp4 10000 TFLOP/s," in line


# torchao float8 rowwise, bytes per element by torchao's own roofline (pytorch/ao torchao/testing/float8/
# roofline_utils.py at 6243040, "rowwise"): X and dY two kernels, bf16 read 2 + FP8 write 1 + transposed bf16
# write 2, then read 2 + write 1 (5 + 3); the weight 2 + 1, 2·2, 2 + 1 (3 + 7), every micro-batch; and the
# backward's GEMMs rescale their bf16 outputs dX, dW afterwards (float8_ops.py addmm_float8_unwrapped): 2 + 2
def test_fp8_rowwise_casts_of_one_gemm_by_hand():
    gemm = compute.Gemm("g", 2, 4, 8)                  # X 2×4 = 8, W 4×8 = 32, dY 2×8 = 16 elements
    x, w, back = compute.cast_bytes([(gemm, 1)], "fp8_rowwise")
    assert (x, w) == (8 * 5, 32 * 3)                   # the forward: no 1/m on the weight (cast in every forward)
    assert back == 8 * 3 + 32 * 7 + 16 * (5 + 3) + 4 * (8 + 32)
    # and three such GEMMs count three times
    assert compute.cast_bytes([(gemm, 3)], "fp8_rowwise") == (3 * x, 3 * w, 3 * back)


def test_fp8_rowwise_small_shape_by_hand():
    """All three GEMMs of each linear in FP8 (torchao ROWWISE: input, weight and output gradient cast axiswise,
    torchao/float8/config.py at 6243040), at peak_fp8 · eta_fp8 like fp8_tensor; the casts as above, at 43 % of the
    HBM bandwidth (torchao's published rowwise table: tests/derivations/test_rowwise_casts.py reads the share off it,
    43 % at h100's constants)."""
    fp8 = sum(gemm_seconds(*g, 2000, sp.Rational(2, 5)) for g in LINEAR)
    forward, backward = micro("fp8_rowwise")
    # X 40, W 128, dY 56 elements (X_ELEMENTS, W_ELEMENTS, DY_ELEMENTS below); hbm = 100 B/s, the casts at 43 B/s
    assert forward == fp8 + CORE + sp.Rational(40 * 5 + 128 * 3, 43)
    assert backward == 2 * fp8 + CORE_BACK + sp.Rational(40 * 3 + 128 * 7 + 56 * 8 + 4 * (40 + 128), 43)


def test_fp8_rowwise_refuses_the_float8_all_gather():
    # torchao: enable_fsdp_float8_all_gather only supports tensorwise scaling (config.py at 6243040)
    with pytest.raises(InputError, match="fp8_param_gather=1 with precision=fp8_rowwise"):
        subject("hybrid", framework="fsdp2", zero="3", fp8_param_gather="1", precision="fp8_rowwise").terms


def _compute(run, values=None):
    out = compute.micro_batch_compute(run)
    at = {S.SYMBOLS[k].symbol: v for k, v in {**SHAPE, **RATES, **(values or {})}.items()}
    return exact(out.forward, at), exact(out.backward, at)


@pytest.mark.parametrize("gated, recompute", [(False, "none"), (True, "none"), (True, "full")])
def test_eager_memory_bound_ops_by_hand(gated, recompute):
    """compile=0 (torchtitan eager): per layer two RMSNorms over h = 4 on the 2 tokens, 32 bytes per element more
    than fused (x.float() 2+4, pow 4+4, mean 4, ·rsqrt 4+4, type_as 4+2, ·weight 2+2 = 36 against 2+2), rotary over
    h + h_kv = 8, 16 more (.float() 2+4, complex product 4+4, type_as 4+2 = 20 against 4), SwiGLU over F = 8, 4 more
    (silu 2+2, product 2+2+2 against 2+2+2): 2·32·4·2 + 2·16·8 (+ 2·4·8 gated) bytes at 100 B/s, the forward once,
    the backward twice, a full recompute once more (torchtitan models/norms.py, models/llama/model.py at 9dec370a)."""
    extra = sp.Rational(2 * 32 * 4 * 2 + 2 * 16 * 8 + (2 * 4 * 8 if gated else 0), 100)
    common = dict(framework="fsdp2", zero=3, gated=gated, recompute=recompute)
    eager = _compute(settings.RunSetting(compile=False, **common))
    fused = _compute(settings.RunSetting(compile=True, **common))
    assert eager[0] - fused[0] == extra
    assert eager[1] - fused[1] == (3 if recompute == "full" else 2) * extra
    # fsdp2's default is eager (torchtitan's training.compile is false); megatron's fused
    assert _compute(settings.RunSetting(**common)) == eager
    assert settings.RunSetting(framework="megatron").eager is False


def test_compile_0_is_refused_where_the_eager_count_does_not_hold():
    with pytest.raises(InputError, match="compile=0 with framework=megatron"):
        settings.parse(["compile=0"])
    with pytest.raises(InputError, match="compile=0 with moe=1"):
        settings.parse(["compile=0", "framework=fsdp2", "zero=3", "moe=1"])
    # a MoE block of fsdp2 by default: counted fused, as before the setting
    assert settings.parse(["framework=fsdp2", "zero=3", "moe=1"]).eager is False


def test_fp8_tensor_numbers_by_hand():
    """The same, as plain numbers: fp8 GEMMs (512 FLOPs + 2·w_half·224 elements moved) / 800 = 1.76 s, the causal
    half of the core 32/250 = 0.128 s (its backward 5/2 of it, 0.32 s), casts (40 + 128)·6 bytes / 100 = 10.08 s
    forward, 56·6/100 = 3.36 s backward."""
    forward, backward = micro("fp8_tensor")
    assert float(forward) == pytest.approx(1.76 + 0.128 + 10.08, rel=1e-12)
    assert float(backward) == pytest.approx(2 * 1.76 + 0.32 + 3.36, rel=1e-12)


def test_weights_cast_once_per_step():
    """Transformer Engine caches the FP8 weights over the micro-batches (is_first_microbatch): with m = 4 a
    micro-batch (of a quarter of the tokens) carries a quarter of the weights' cast."""
    one = micro("fp8_tensor", values={"kappa": 0, "w_half": 0, "peak_fp8": 10 ** 30, "peak": 10 ** 30})
    four = micro("fp8_tensor", values={"kappa": 0, "w_half": 0, "peak_fp8": 10 ** 30, "peak": 10 ** 30,
                                       "b": 4, "m": 4})
    act, weight = CAST_BYTES["fp8_tensor"]
    assert float(one[0]) == pytest.approx((40 * act + 128 * weight) / 100, rel=1e-9)
    assert float(four[0]) == pytest.approx((40 * act + 128 * weight / 4) / 100, rel=1e-9)


def test_efficiency_limits():
    eta, w_half = sp.Rational(7, 10), 300
    at = {S.eta: eta, S.w_half: w_half}
    width = sp.Symbol("w", positive=True)
    eff = compute.efficiency(width)
    assert eff.subs(at).subs(width, w_half) == eta / 2
    assert sp.limit(eff.subs(at), width, sp.oo) == eta
    values = [eff.subs(at).subs(width, x) for x in (1, 10, 100, 1000, 10 ** 6)]
    assert values == sorted(values) and values[-1] < eta
    assert eff.subs({S.w_half: 0}) == S.eta


def test_w_half_zero_is_the_shape_independent_model():
    """w_half = 0 and eta_attn = eta: every matmul at peak · eta, hardware FLOPs / (peak · eta) (Narayanan et al.
    2021 §5.1), but for the flash core's backward, 5/2 of its forward (FlashAttention-2, Algorithm 2)."""
    forward, backward = micro(values={"w_half": 0, "eta_attn": sp.Rational(1, 2)})
    assert forward == sp.Rational(512 + CORE_FLOPS, 500)
    assert backward == sp.Rational(2 * 512, 500) + sp.Rational(5, 2) * sp.Rational(CORE_FLOPS, 500)


def test_defaults_leave_the_step_model_unchanged():
    """precision=bf16 and no w_half, no eta_attn given: the same numbers as w_half = 0 and eta_attn = eta given
    (what a hardware block fitted before them means)."""
    values = {"h": 1024, "L": 8, "a": 16, "h_kv": 256, "F": 4096, "V": 32000, "s": 2048, "Phi": 10 ** 9, "t": 2,
              "p": 2, "d": 4, "c": 1, "b": 64, "m": 8, "v": 1, "alpha": 1e-5, "beta": 1e-10, "gamma": 1e-11,
              "alpha_inter": 2e-5, "beta_inter": 4e-10, "G": 8, "peak": 1e15, "eta": 0.6, "kappa": 3.0, "hbm": 3e12}
    without = steptime.quantities(values, 2, embeddings="1", gated="1")
    given = steptime.quantities({**values, "w_half": 0.0, "eta_attn": 0.6}, 2, embeddings="1", gated="1",
                                precision="bf16")
    assert without == given


def test_fp8_param_gather_moves_one_byte_elements():
    """Megatron's distributed optimizer all-gathers the Φ/(t·p) shard after the step: a ring over d ranks moves
    (d − 1)/d of it per rank; in FP8 that is 1 byte per element, half the bf16 bytes (Megatron-Core
    --fp8-param-gather)."""
    def gather_bytes(flag, precision="fp8_tensor"):
        hybrid = subject("hybrid", zero="1", fp8_param_gather=flag, precision=precision)
        term = next(x for x in hybrid.terms if x.what == "parameter all-gather")
        cost = cost_in_bytes_of((term,), 2).time
        # β = 2 s per 2-byte element = 1 s per byte, no latency: the seconds are the bytes one rank sends
        return exact(cost, {S.Phi: 1200, S.t: 1, S.p: 1, S.d: 4, S.c: 1, S.beta: 2, S.alpha: 0, S.G: 8,
                            S.alpha_inter: 0, S.beta_inter: 2, S.gamma: 0})
    assert gather_bytes("0") == 3 * 1200 // 4 * 2                   # 900 bf16 elements, 2 bytes each
    assert gather_bytes("1") == 3 * 1200 // 4 * 1                   # the same elements, 1 byte each
    assert gather_bytes("1", "fp8_block") == 3 * 1200 // 4 * 1
    # MXFP8: Megatron-Core gathers through a bf16 buffer and re-quantizes (param_and_grad_buffer.py)
    assert gather_bytes("1", "mxfp8") == 3 * 1200 // 4 * 2


def test_fsdp2_gathers_its_root_unit_in_16_bits_under_fp8_param_gather():
    # torchao's float8 all-gather converts nn.Linear weights only, and torchtitan's float8 filter_fqns leaves "output"
    # out: the root unit (embedding, final norm, LM head) is gathered in bf16 (an outsider's llama3-8b printed its
    # 1.96 GiB root gather as 1002 MiB [fp8]); the blocks' gathers are fp8
    hybrid = subject("hybrid", zero="3", framework="fsdp2", fp8_param_gather="1", precision="fp8_tensor",
                     embeddings="1")
    gathers = [x for x in hybrid.terms if x.primitive == "all_gather" and x.axis == "dp"]
    root = [x for x in gathers if x.what.startswith("root-unit")]
    blocks = [x for x in gathers if x.what.startswith("per-layer")]
    assert root and blocks
    assert all(x.dtype == "" for x in root) and all(x.dtype == "fp8" for x in blocks)


def test_refusals_name_the_setting():
    with pytest.raises(InputError, match="fp8_param_gather=1 needs FP8 weights"):
        steptime.step_model(2, fp8_param_gather="1", zero="1")
    with pytest.raises(InputError, match="fp8_param_gather=1 needs FP8 weights"):
        subject("hybrid", zero="1", fp8_param_gather="1").terms
    with pytest.raises(InputError, match="zero=1, 2 or 3"):
        subject("hybrid", zero="0", fp8_param_gather="1", precision="fp8_tensor").terms
    with pytest.raises(InputError, match="precision=fp8_row is not allowed"):
        settings.parse({"precision": "fp8_row"})


def test_hardware_gives_fp8_constants_or_refuses():
    from symcomm.presets import hardware

    from dataclasses import replace

    # Transformer Engine's recipe checks (transformer_engine/pytorch/quantization.py at d0067d0d): FP8 needs compute
    # capability 8.9, MXFP8 10.0 (not 12.0 and up); NVIDIA's table gives A100 8.0, H100 9.0, B200 10.0
    with pytest.raises(InputError, match="compute capability 8.0, and the recipe's GEMMs need 8.9 or higher"):
        hardware("a100").compute_values("bf16", "fp8_tensor")
    with pytest.raises(InputError, match="compute capability 9.0, and the recipe's GEMMs need 10.0 or higher and below"):
        hardware("h100").compute_values("bf16", "mxfp8")
    assert hardware("b200").compute_values("bf16", "mxfp8")["peak_fp8"] == hardware("b200").peak("fp8")
    # a part whose capability is not given (a hardware file without it): the peak it lacks refuses
    with pytest.raises(InputError, match="no FP8 peak"):
        replace(hardware("a100"), compute_capability=()).compute_values("bf16", "fp8_tensor")
    # an FP8 peak and no FP8 run fitted (a hardware file fitted on bf16 runs alone): the FP8 share refuses
    bf16_only = replace(hardware("h100"), step_time=tuple((k, v) for k, v in hardware("h100").step_time
                                                          if k not in ("eta_fp8", "w_half", "w_half_expert")))
    with pytest.raises(InputError, match="eta_fp8"):
        bf16_only.compute_values("bf16", "fp8_block")
    # a step_time block without w_half reads it as 0, the shape-independent model (a file fitted before it)
    assert bf16_only.compute_values("bf16")["w_half"] == 0.0
    assert "peak_fp8" not in hardware("h100").compute_values("bf16")


def _cli(*args):
    return symcomm_command(*args, entry="symcomm.commands.main")


LAYOUT = ("t=1", "p=1", "d=8", "c=1", "b=16", "m=1", "s=8192")


def _fp8_file(path, step_time: dict):
    """An H100 hardware file with both peaks and the step-time constants ``step_time``."""
    import json

    from symcomm.presets import hardware as preset

    h = preset("h100")
    link = lambda x: {"bytes_per_second": x.bytes_per_second, "latency_s": x.latency_s}   # noqa: E731
    path.write_text(json.dumps({"intra": link(h.intra), "inter": link(h.inter), "gpus_per_node": 8,
                                "hbm_bytes_per_second": 3.35e12, "peak_flops": {"bf16": 989.4e12, "fp8": 1978.9e12},
                                "step_time": step_time}))
    return path


def test_eval_hybrid_fp8_without_a_fitted_eta_fp8_refuses_in_one_line(tmp_path):
    # a file fitted on bf16 runs alone: an FP8 peak, no FP8 share
    path = _fp8_file(tmp_path / "bf16.json", {"eta": 0.68, "kappa": 0.75})
    run = _cli("eval", "hybrid", "--model", "llama3-8b", "--hardware", str(path), *LAYOUT, "precision=fp8_tensor")
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1 and "eta_fp8" in run.stderr


def test_eval_hybrid_fp8_from_a_hardware_file(tmp_path):
    """A hardware file with eta_fp8: strict JSON, the setting echoed canonically, both peaks in the constants,
    and FP8 faster than bf16 but by less than the peaks' factor 2 (the attention core, LM head and casts)."""
    import json

    path = _fp8_file(tmp_path / "fp8.json", {"eta": 0.68, "eta_fp8": 0.68, "w_half": 300, "kappa": 0.75})

    def step(*extra):
        run = _cli("eval", "hybrid", "--model", "llama3-8b", "--hardware", str(path), *LAYOUT, *extra, "--json")
        assert run.returncode == 0, run.stderr
        return json.loads(run.stdout, parse_constant=lambda text: pytest.fail(f"not strict JSON: {text}"))

    bf16, fp8 = step(), step("precision=fp8_tensor", "fp8_param_gather=1")
    assert fp8["options"]["precision"] == "fp8_tensor" and fp8["options"]["fp8_param_gather"] == "1"
    assert fp8["constants"]["peak_fp8"] == 1978.9e12 and fp8["constants"]["peak"] == 989.4e12
    assert "peak_fp8" not in bf16["constants"] and bf16["constants"]["w_half"] == 300
    assert bf16["compute_time"] / 2 < fp8["compute_time"] < bf16["compute_time"]


# -- recompute=op: torchtitan's op-level selective checkpointing ------------------------------------------------
# the block's matmuls in forward order wq, wk, wv, wo, w1, (w3,) w2 (torchtitan/models/llama/model.py at 9dec370a);
# the policy (parallelize_llama.py, _save_list) saves the odd-numbered and recomputes the even-numbered ones, the
# last excepted (the recompute stops once the backward's tensors are rebuilt); the SDPA's output is saved, so the
# core is not run again.  For T = 2 tokens of the SHAPE: wk 2 × 4 · 4 × 4 (h_kv = 4), wo 2 × 4 · 4 × 4, and gated w3
# 2 × 4 · 4 × 8.
OP_AGAIN = ((2, 4, 4), (2, 4, 4))
OP_AGAIN_GATED = OP_AGAIN + ((2, 4, 8),)


def _op_micro(gated, precision="bf16", recompute="op"):
    run = settings.RunSetting(precision=precision, recompute=recompute, gated=gated, framework="deepspeed")
    out = compute.micro_batch_compute(run)
    at = {S.SYMBOLS[k].symbol: v for k, v in {**SHAPE, **RATES}.items()}
    return exact(out.forward, at), exact(out.backward, at)


@pytest.mark.parametrize("gated, again", [(False, OP_AGAIN), (True, OP_AGAIN_GATED)])
def test_op_recompute_runs_the_even_numbered_matmuls_again_by_hand(gated, again):
    forward, backward = _op_micro(gated)
    none_forward, none_backward = _op_micro(gated, recompute="none")
    assert forward == none_forward                                   # the forward is the forward
    assert backward - none_backward == sum(gemm_seconds(*g, 1000, sp.Rational(1, 2)) for g in again)


def test_op_recompute_under_fp8_recasts_every_linear_input_by_hand():
    # the recomputed GEMMs at peak_fp8 · eta_fp8 = 800, and the casts of X of every linear (each a PREFER_RECOMPUTE op
    # the recompute runs again): X_ELEMENTS · (2 + 2 + 2) bytes at 100 B/s
    forward, backward = _op_micro(False, "fp8_tensor")
    none_forward, none_backward = _op_micro(False, "fp8_tensor", "none")
    assert forward == none_forward
    act, _ = CAST_BYTES["fp8_tensor"]
    assert backward - none_backward == (sum(gemm_seconds(*g, 2000, sp.Rational(2, 5)) for g in OP_AGAIN)
                                        + X_ELEMENTS * act / sp.Integer(100))


def test_op_recompute_costs_less_than_full_and_more_than_none():
    for gated in (False, True):
        backs = {r: _op_micro(gated, recompute=r)[1] for r in ("none", "op", "full")}
        assert backs["none"] < backs["op"] < backs["full"]


# -- PyTorch's context parallel: the ring's memory-bound passes ----------------------------------------------------

def _forward_backward(framework: str, at: dict, **setting) -> tuple:
    """One micro-batch's forward and backward seconds, exactly at ``at``, under a ZeRO-3 run of ``framework`` with
    ``setting`` (no embeddings, compiled, the projections fused unless the setting says: only what the test changes
    moves)."""
    setting = {"fused_projections": True, **setting}
    run = settings.RunSetting(framework=framework, zero=3, embeddings=False, compile=True, **setting)
    out = compute.micro_batch_compute(run)
    return exact(out.forward, at), exact(out.backward, at)


@pytest.mark.parametrize("recompute, forwards", [("none", 1), ("full", 2), ("op", 1)])
def test_pytorch_context_parallel_ring_moves_these_bytes_by_hand(recompute, forwards):
    # pytorch/pytorch torch/distributed/tensor/experimental/_attention.py (late 2024), every op one HBM pass, on the
    # last CP rank (load balance on: every step on its whole query).  c = 2, one layer, T = s/c = 1 local token,
    # h = 4: Q = KV = 4 elements (gqa=0: K, V at h).  Forward, op by op: step 0 upcasts its output (read 2, write 4:
    # 6 B/el) and concatenates K, V for the all-gather (read 2 + write 2 each: 8 B/el of KV); step 1 upcasts (6) and
    # merges in three fp32 ops (out − block, × sigmoid, out − that: 12 + 8 + 12 = 32); the result cast back (6)
    forward = (6 + 6 + 32 + 6) * 4 + 8 * 4
    # backward: fp32 zeros for dQ, dK, dV (4 + 8); step 0: dQ += (10), dK, dV += (20), K, V cat (8), dK, dV cat for
    # the all-to-all (16); step 1: dQ += (10), dK, dV into their first half (5 + 5) then cat back (8 + 8), dK, dV
    # cat (16); the end: dQ and dK, dV cast to bf16 (6 + 12)
    backward = (4 + 10 + 10 + 6) * 4 + (8 + 20 + 8 + 16 + 26 + 16 + 12) * 4
    at = {S.SYMBOLS[k].symbol: v for k, v in {**SHAPE, **RATES, "c": 2, "hbm": 1}.items()}
    setting = dict(cp="ring_flash_attn", recompute=recompute)
    # Megatron runs Transformer Engine's ring
    ring, without = _forward_backward("fsdp2", at, **setting), _forward_backward("megatron_fsdp", at, **setting)
    assert ring[0] - without[0] == forward
    # a full recompute reruns the attention's forward, ring and all; op's saves the SDPA's outputs
    assert ring[1] - without[1] == backward + (forwards - 1) * forward


def test_without_context_parallelism_the_ring_moves_nothing():
    at = {S.SYMBOLS[k].symbol: v for k, v in {**SHAPE, **RATES, "hbm": 1}.items()}
    run = settings.RunSetting(framework="fsdp2", zero=3, cp="ring_flash_attn", embeddings=False, compile=True)
    assert [exact(x, at) for x in compute.cp_ring_bytes(run, S.SYMBOLS["s"].symbol, 1)] == [0, 0]


@pytest.mark.parametrize("recompute, recasts", [("none", 0), ("full", 1)])
def test_torchao_casts_the_weights_in_every_micro_batch_and_recompute(recompute, recasts):
    # pytorch/ao torchao/float8/float8_linear.py at 4f8021f2: forward_fp8_matmul casts the bf16 weight (its amax, then
    # the cast) at every forward call, so each of m = 4 micro-batches pays the whole weights' cast, and a full
    # recompute's forward pays it again; Transformer Engine caches the FP8 weight over the micro-batches
    # (is_first_microbatch: 1/m of it per micro-batch) and its recompute does not recast.  Per-tensor current
    # scaling: 2 + 2 + 2·1 bytes per weight element, W = 128 elements (the four GEMMs above), HBM at 100 B/s.
    at = {S.SYMBOLS[k].symbol: v for k, v in {**SHAPE, **RATES, "m": 4, "b": 4}.items()}
    setting = dict(precision="fp8_tensor", recompute=recompute)
    torchao, te = _forward_backward("fsdp2", at, **setting), _forward_backward("megatron_fsdp", at, **setting)
    cast = sp.Rational(W_ELEMENTS * (2 + 2 + 2 * 1), 100)
    assert torchao[0] - te[0] == cast - cast / 4
    assert torchao[1] - te[1] == recasts * cast


def test_with_fp8_all_gather_torchao_receives_fp8_weights():
    # torchao float8_linear.py at 4f8021f2: cast_weight_to_float8_t returns a weight the FSDP all-gather already cast
    # (fsdp_utils.py fsdp_pre_all_gather casts the shard): no per-micro-batch cast, the count Transformer Engine's has
    at = {S.SYMBOLS[k].symbol: v for k, v in {**SHAPE, **RATES, "m": 4, "b": 4}.items()}

    def seconds(framework):
        run = settings.RunSetting(framework=framework, zero=3, precision="fp8_tensor", recompute="full",
                                  embeddings=False, compile=True, fp8_param_gather=True, fused_projections=True)
        out = compute.micro_batch_compute(run)
        return exact(out.forward, at), exact(out.backward, at)

    assert seconds("fsdp2") == seconds("megatron_fsdp")


# Transformer Engine's fused loss over the same 32 logits (transformer_engine/pytorch/triton/cross_entropy.py and
# common/triton/cross_entropy.py at NVIDIA/TransformerEngine d0067d0d): forward online_softmax_kernel reads the bf16
# logits 2, cross_entropy_kernel reads them 2 and writes the fp32 gradient 4 = 8; backward element_mul_kernel 4 + 4
# and autograd's cast to bf16 4 + 2 = 14
TE_FORWARD, TE_BACKWARD = sp.Rational(32 * 8, 100), sp.Rational(32 * 14, 100)
# PyTorch's eager F.cross_entropy of the fp32 copy (torchtitan's loss without torch.compile) over the same 32 logits,
# kernel by kernel (aten/src/ATen/native/cuda/SoftMax.cu, cunn_SoftMaxForward: a max pass, a sum-of-exp pass, a write
# pass; Loss.cu, nll_loss): forward .float() 2 + 4, three fp32 reads 12 and the log-softmax written 4 = 22; backward
# nll_loss_backward's zeroed gradient 4, the log-softmax backward's sum over it 4 and its pass reading it and the saved
# log-softmax and writing the input gradient 4 + 4 + 4, the cast back to bf16 4 + 2 = 26; at hbm = 100 bytes/s
EAGER_FORWARD, EAGER_BACKWARD = sp.Rational(32 * 22, 100), sp.Rational(32 * 26, 100)


@pytest.mark.parametrize("framework, loss, counted", [("megatron", None, "vp"), ("megatron", "vocab_parallel", "vp"),
                                                      ("megatron", "te_fused", "te"), ("fsdp2", "eager", "eager"),
                                                      ("fsdp2", None, None), ("megatron", "eager", "eager"),
                                                      ("megatron", "compiled", None)])
def test_the_loss_passes_follow_the_memory_models_loss_setting(framework, loss, counted):
    # Megatron-Core's unfused vocab-parallel loss is counted (LOSS_FORWARD, LOSS_BACKWARD above), torchtitan's eager
    # loss at t = 1 (EAGER_FORWARD, EAGER_BACKWARD); the compiled one is not counted yet: only the head's GEMMs — and
    # compiled is fsdp2's own under compile=1 (torchtitan compiles the loss with the model)
    # compile=1: torchtitan's eager block ops (counted apart, EAGER_BYTES) left out of this count; fused projections:
    # the GEMMs of LINEAR for every framework (torchtitan's separate ones counted apart, test_separate_projections_...)
    run = settings.RunSetting(embeddings=True, framework=framework, loss=loss, compile=True, fused_projections=True)
    out = compute.micro_batch_compute(run)
    at = {S.SYMBOLS[k].symbol: v for k, v in {**SHAPE, **RATES}.items()}
    linear = sum(gemm_seconds(*g, 1000, sp.Rational(1, 2)) for g in LINEAR)
    head = gemm_seconds(*LM_HEAD, 1000, sp.Rational(1, 2))
    loss_forward, loss_backward = {"vp": (LOSS_FORWARD, LOSS_BACKWARD), "te": (TE_FORWARD, TE_BACKWARD),
                                   "eager": (EAGER_FORWARD, EAGER_BACKWARD)}.get(counted, (0, 0))
    # Megatron's weight gradients accumulated into its fp32 buffer: 6 bytes more per weight element, the layer's
    # 128 and the head's 4 × 16 (test_megatron_accumulates_the_weight_gradients_in_place_by_hand)
    accumulate = sp.Rational(6 * (128 + 64), 100) if framework == "megatron" else 0
    assert exact(out.forward, at) == linear + CORE + head + loss_forward
    assert exact(out.backward, at) == 2 * (linear + head) + CORE_BACK + loss_backward + accumulate


@pytest.mark.parametrize("grad_dtype, more", [("fp32", 2 * 4 - 2), ("same", 2 * 2 - 2)])
def test_megatron_accumulates_the_weight_gradients_in_place_by_hand(grad_dtype, more):
    # Megatron-LM's gradient accumulation fusion (on by default, arguments.py at NVIDIA/Megatron-LM f2e5db402c):
    # each weight-gradient GEMM reads and writes main_grad (fp32: 4 + 4 bytes per weight element; bf16 2 + 2)
    # where the width term counts a 16-bit write (2): 6 or 2 bytes more per element of the layer's weights
    # 4·12 + 4·4 + 4·8 + 8·4 = 128, at hbm = 100 bytes/s, in the backward only
    run = settings.RunSetting(framework="megatron", grad_dtype=grad_dtype)
    other = settings.RunSetting(framework="deepspeed", grad_dtype=grad_dtype)
    at = {S.SYMBOLS[k].symbol: v for k, v in {**SHAPE, **RATES}.items()}
    megatron, deepspeed = compute.micro_batch_compute(run), compute.micro_batch_compute(other)
    assert exact(megatron.forward, at) == exact(deepspeed.forward, at)
    assert exact(megatron.backward - deepspeed.backward, at) == sp.Rational(more * 128, 100)


# -- separate projections (torchtitan's Llama) ---------------------------------------------------------------------

@pytest.mark.parametrize("precision, peak, eta", [("bf16", 1000, sp.Rational(1, 2)),
                                                  ("fp8_tensor", 2000, sp.Rational(2, 5))])
def test_separate_projections_time_each_linear_at_its_own_width_by_hand(precision, peak, eta):
    # torchtitan's Llama (pytorch/torchtitan torchtitan/models/llama/model.py at 9dec370a, Attention and FeedForward)
    # calls wq, wk, wv and w1, w3 as separate nn.Linear modules on one input: with h = h_kv = 4, F = 8, gated, T = 2
    # tokens, the fused QKV 2 × 4 · 4 × 12 runs as three 2 × 4 · 4 × 4 GEMMs (q, h_kv, h_kv wide) and the fused gate
    # and up 2 × 4 · 4 × 16 (2F) as two 2 × 4 · 4 × 8: the same FLOPs at smaller widths, each GEMM timed by the
    # efficiency's definition (gemm_seconds); the FP8 casts of their shared input are counted alike both ways
    fused = gemm_seconds(2, 4, 12, peak, eta) + gemm_seconds(2, 4, 16, peak, eta)
    apart = 3 * gemm_seconds(2, 4, 4, peak, eta) + 2 * gemm_seconds(2, 4, 8, peak, eta)
    assert apart > fused
    at = {S.SYMBOLS[k].symbol: v for k, v in {**SHAPE, **RATES}.items()}
    setting = dict(gated=True, precision=precision)
    titan = _forward_backward("fsdp2", at, fused_projections=None, **setting)       # the framework's default: apart
    joined = _forward_backward("fsdp2", at, fused_projections=True, **setting)
    assert titan[0] - joined[0] == apart - fused
    assert titan[1] - joined[1] == 2 * (apart - fused)                           # input and weight gradients
    # Megatron-Core's linear_qkv and linear_fc1 are one GEMM each: its default is the fused count
    megatron = _forward_backward("megatron_fsdp", at, fused_projections=None, **setting)
    assert megatron == _forward_backward("megatron_fsdp", at, fused_projections=True, **setting)
    assert _forward_backward("megatron_fsdp", at, fused_projections=False, **setting) != megatron


def test_async_tp_fuses_the_separate_projections_together_by_hand():
    # PyTorch's async TP fuses the all-gather with the matmuls sharing its gathered input; with wq, wk, wv apart the
    # column-parallel window is the three GEMMs' seconds (2 × 4 · 4 × 4 each) and the gate's and up's (2 × 4 · 4 × 8)
    run = settings.RunSetting(framework="fsdp2", zero=3, gated=True, sp=True, tp_overlap=True, compile=True)
    (qkv, fc1), (out, fc2) = compute.tp_fused_gemm_seconds(run)
    at = {S.SYMBOLS[k].symbol: v for k, v in {**SHAPE, **RATES}.items()}
    half = sp.Rational(1, 2)
    assert exact(qkv, at) == 3 * gemm_seconds(2, 4, 4, 1000, half)
    assert exact(fc1, at) == 2 * gemm_seconds(2, 4, 8, 1000, half)
    assert exact(out, at) == gemm_seconds(2, 4, 4, 1000, half)
    assert exact(fc2, at) == gemm_seconds(2, 8, 4, 1000, half)


@pytest.mark.parametrize("precision, gated, fused, expected", [
    # bf16, fsdp2's separate projections: the gathers feed the matmuls (fused); the backward reduce-scatter of the
    # attention input's gradient follows the add of wq's, wk's and wv's input-gradient matmuls, a gated MLP's the add
    # of the gate's and up's (unfused, 0); an ungated FC1 is one matmul (fused)
    ("bf16", True, None, ("qkv fc1", "out fc2", "out fc2", "0 0")),
    ("bf16", False, None, ("qkv fc1", "out fc2", "out fc2", "0 fc1")),
    # one QKV matmul and one FC1 matmul: every collective fused
    ("bf16", True, True, ("qkv fc1", "out fc2", "out fc2", "qkv fc1")),
    # torchao tensorwise with its float8 TP styles (fp8_tp_gather, fsdp2's default with sp=1): the gathered FP8 tensor
    # feeds _scaled_mm, fused as bf16's
    ("fp8_tensor", True, None, ("qkv fc1", "out fc2", "out fc2", "0 0")),
    # torchao rowwise: the gathered bf16 tensor feeds the FP8 cast (gathers unfused); the input-gradient GEMM's output
    # is rescaled by a mul before its reduce-scatter (unfused); the forward's rowwise _scaled_mm feeds its
    # reduce-scatter (fused)
    ("fp8_rowwise", True, True, ("0 0", "out fc2", "0 0", "0 0")),
])
def test_async_tp_fuses_a_collective_only_with_an_adjacent_matmul(precision, gated, fused, expected):
    # Inductor's micro-pipeline pass (torch/_inductor/fx_passes/micro_pipeline_tp.py): an all-gather with the matmuls
    # taking its output as their left operand (_find_consumer_matmuls), a reduce-scatter with the one matmul producing
    # its input (_find_producer_matmul); the rest run as plain collectives (0: nothing to hide behind)
    run = settings.RunSetting(framework="fsdp2", zero=3, gated=gated, sp=True, tp_overlap=True, compile=True,
                              fused_projections=fused, precision=precision)
    (qkv, fc1), (out, fc2) = compute.tp_fused_gemm_seconds(run)
    named = {"0": sp.Integer(0), "qkv": qkv, "fc1": fc1, "out": out, "fc2": fc2}
    keys = (("forward", "all_gather"), ("forward", "reduce_scatter"), ("backward", "all_gather"),
            ("backward", "reduce_scatter"))
    fusion = compute.async_tp_fusion(run)
    assert {key: fusion[key] for key in keys} == {key: tuple(named[x] for x in pair.split())
                                                   for key, pair in zip(keys, expected)}


@pytest.mark.parametrize("c", [2, 4, 8])
def test_context_parallel_core_is_the_rings_sdpa_calls_by_hand(c):
    # pytorch/pytorch torch/distributed/tensor/experimental/_attention.py (_templated_ring_attention, round-robin load
    # balance on by default, _ContextParallelOptions): each rank holds two chunks of s/(2c) tokens, n = s/c in all.
    # Step 0 runs one causal SDPA call over its n queries and n keys: half of a full call's 4·n²·h (the flash kernel
    # skips the blocks above the diagonal, FlashAttention-2 §3.1.1); each of the c − 1 later steps one non-causal call
    # of n queries × n/2 keys (i ≤ rank: the first chunk of the K, V received) or n/2 × n (i > rank: the second chunk
    # of the queries), 4·n·(n/2)·h either way.  s = 16, h = 4, one layer, at peak · eta_attn = 1000 · 1/4.
    n = 16 // c
    ring = 4 * n * n * 4 // 2 + (c - 1) * 4 * n * (n // 2) * 4
    run = settings.RunSetting(framework="fsdp2", zero=3, cp="ring_flash_attn", embeddings=False, compile=True)
    out = compute.micro_batch_compute(run)
    at = {S.SYMBOLS[k].symbol: v for k, v in {**SHAPE, **RATES, "s": 16, "c": c}.items()}
    assert exact(out.core_forward, at) == sp.Rational(ring, 250)
    # the backward calls the flash backward on the same blocks (_templated_ring_attention_backward): 5/2 of each
    assert exact(out.core_backward, at) == sp.Rational(5, 2) * sp.Rational(ring, 250)


def test_the_eager_loss_under_loss_parallel_by_hand():
    # torch's loss_parallel at t = 2 (torch/distributed/tensor/parallel/loss.py at 02eef6b8), each op one pass over the
    # GPU's T × V/t = 2 × 8 = 16 logits: forward .float() 2 + 4, amax 4, x − max 4 + 4, exp 4 + 4, sum 4, the
    # log-probabilities 4 + 4 = 38; backward zeros 4, exp 4 + 4, their sum 4 + 4 + 4, times the gradient 4 + 4, the cast
    # to bf16 4 + 2 = 38; at t = 1 the 22 and 26 bytes of EAGER_FORWARD, EAGER_BACKWARD over T × V = 32 logits
    run = settings.RunSetting(embeddings=True, framework="fsdp2", loss="eager", compile=True, fused_projections=True)
    forward, backward = compute.loss_pass_bytes(run, sp.Integer(2))
    at1 = {S.SYMBOLS[k].symbol: v for k, v in {**SHAPE, "t": 1}.items()}
    at2 = {S.SYMBOLS[k].symbol: v for k, v in {**SHAPE, "t": 2}.items()}
    assert (exact(forward, at1), exact(backward, at1)) == (22 * 32, 26 * 32)
    assert (exact(forward, at2), exact(backward, at2)) == (38 * 16, 38 * 16)


def test_the_bf16_eager_loss_by_hand():
    # F.cross_entropy of the bf16 logits themselves (NeMo AutoModel's MaskedCrossEntropy, fp32_upcast false), the
    # kernels of EAGER_FORWARD, EAGER_BACKWARD on 2-byte rows without the copy and the cast: forward three reads of the
    # row 2 · 3 and the log-probabilities written 2 = 8; backward the zeroed gradient 2, the sum over it 2, the pass
    # reading it and the saved output and writing the input gradient 2 + 2 + 2 = 10.  T = 2 tokens, V = 16: at t = 1
    # over 32 logits; at t = 2 the loss gathers the whole vocabulary, so the same 32 logits, 16 of them the GPU's
    # KempnerForge's head returns the whole logits on every rank (replicated_bf16): the same kernels on the same 32
    for loss in ("eager_bf16", "replicated_bf16"):
        run = settings.RunSetting(embeddings=True, framework="fsdp2", loss=loss, compile=True,
                                  fused_projections=True)
        forward, backward = compute.loss_pass_bytes(run, sp.Integer(2))
        for tp in (1, 2):
            at = {S.SYMBOLS[k].symbol: v for k, v in {**SHAPE, "t": tp}.items()}
            assert (exact(forward, at), exact(backward, at)) == (8 * 32, 10 * 32)


@pytest.mark.parametrize("loss, forward_per_logit, backward_per_logit", [
    # flash-attn 1.x's CUDA extension (csrc/xentropy/xentropy_kernel.cu at v1.0.3): the forward kernel reads each bf16
    # row once for its max and sum and once more for its sum of exponentials, 2 + 2, and writes one loss and one
    # log-sum-exp per token; the backward kernel reads the row 2 and writes its gradient in bf16 2
    ("xentropy_cuda", 4, 4),
    # flash-attn 2.4.2's Triton kernels (flash_attn/ops/triton/cross_entropy.py): the forward reads each block of the
    # row once 2, the backward as above 2 + 2
    ("xentropy_triton", 2, 4),
])
def test_flash_attns_fused_loss_passes_by_hand(loss, forward_per_logit, backward_per_logit):
    # T = 2 tokens, V = 16: 32 logits at t = 1; with t = 2 the GPU's vocabulary shard, 16 (the loss's process group
    # splits the vocabulary; only per-token values cross it)
    run = settings.RunSetting(embeddings=True, framework="fsdp", loss=loss, compile=True, fused_projections=True)
    forward, backward = compute.loss_pass_bytes(run, sp.Integer(2))
    for tp, logits in ((1, 32), (2, 16)):
        at = {S.SYMBOLS[k].symbol: v for k, v in {**SHAPE, "t": tp}.items()}
        assert (exact(forward, at), exact(backward, at)) == (forward_per_logit * logits, backward_per_logit * logits)


def test_pytorch_frameworks_time_their_own_attention_kernel():
    # torchtitan (fsdp2) and PyTorch FSDP (fsdp) call torch's scaled_dot_product_attention.  As they ship today it runs
    # cuDNN's fused attention first on compute capability 9.x and 10.x (torchtitan's sdpa_kernel order from 6a3a9da9;
    # PyTorch's check_prefer_cudnn_attention with the cuDNN 9.19 its 2.11 wheels bundle): on an H100 cuDNN's share,
    # 3.5 / (1/600 + 2.5/518) / 989.4 = 0.5448 by Shah et al. 2024's bars, said in a note (an older stack runs
    # FlashAttention-2 first); below 9.0 the flash backend first, FlashAttention-2's share where it is not the fused one
    from dataclasses import replace

    from symcomm import presets
    from symcomm.training.frameworks import framework_attention

    h100 = presets.hardware("h100")
    cudnn = 3.5 / (1 / 600 + 2.5 / 518) / 989.4
    for name in ("fsdp", "fsdp2"):
        extra, said = framework_attention(name, h100, "fused", {})
        assert extra["eta_attn"] == pytest.approx(cudnn, abs=5e-4)
        assert "cuDNN's fused attention first" in said and "attention_kernel=fa2" in said
    # Megatron's own kernel, a named kernel, a typed eta_attn: nothing changed
    assert framework_attention("megatron", h100, "fused", {}) == ({}, "")
    assert framework_attention("fsdp2", h100, "fa2", {}) == ({}, "")
    assert framework_attention("fsdp2", h100, "fused", {"eta_attn": 0.5}) == ({}, "")
    # B200 (10.0): cuDNN's is its fused core's share, 0.444; A100 (8.0): FlashAttention-2 first, which is its fused
    # core's too (Transformer Engine runs FlashAttention-2 there): one share, nothing to say
    assert framework_attention("fsdp2", presets.hardware("b200"), "fused", {})[0] == {"eta_attn": 0.444}
    assert framework_attention("fsdp2", presets.hardware("a100"), "fused", {}) == ({}, "")
    # a part below 9.0 whose fused share is another kernel's: SDPA's FlashAttention-2 share, 0.273 with H100's timing
    # (a hypothetical 8.9 copy of the H100 preset): 5.4976e11 causal forward FLOPs in 1.84317 ms, 2.5 times them in
    # 5.28237 ms (pytorch/benchmark c0409aaf), combined at the backward's 5/2
    extra, said = framework_attention("fsdp2", replace(h100, compute_capability=(8, 9)), "fused", {})
    forward_flops = 4 * 2 * 16 * 8192 ** 2 * 128 / 2
    by_hand = 3.5 / (1.84317e-3 / forward_flops + 2.5 * 5.28237e-3 / (2.5 * forward_flops)) / 989.4e12
    assert extra["eta_attn"] == pytest.approx(by_hand, abs=5e-4)
    assert "flash backend (FlashAttention-2) runs first" in said


def test_eval_and_plan_price_an_fsdp2_layout_alike_on_h100():
    # the plan's row and its eval command: one rule (framework_attention) on both paths, and eval's default equal to
    # naming cuDNN's attention (attention_kernel=cudnn), FlashAttention-2's slower
    import json

    layout = ["t=1", "p=1", "c=1", "d=64", "m=8", "b=512", "s=8192", "framework=fsdp2", "zero=3", "recompute=none"]
    plan = json.loads(symcomm_command("plan", "--model", "llama3-8b", "--hardware", "h100", "--gpus", "64", "--batch",
                                      "512", "--seq", "8192", "--framework", "fsdp2", "--recompute", "none", "--json",
                                      "--top", "20").stdout)
    row = next(r for r in plan["layouts"] if (r["t"], r["p"], r["c"], r["d"], r["m"]) == (1, 1, 1, 64, 8))

    def step(*extra):
        run = symcomm_command("eval", "hybrid", "--model", "llama3-8b", "--hardware", "h100", *layout, *extra, "--json")
        return json.loads(run.stdout)["step_time"]

    assert step() == pytest.approx(row["step_time"], rel=1e-9)
    assert step() == pytest.approx(step("attention_kernel=cudnn"), rel=1e-12)
    assert step("attention_kernel=fa2") > step()    # SDPA's FlashAttention-2, at 0.273, is slower


def test_the_attention_kernel_choices_are_the_fused_core_and_the_published_ones():
    # the option's choices (settings.ATTENTION_KERNELS) and the kernels timed at a published share
    # (hardware_values.PUBLISHED_KERNELS, each with its hardware key and symbol eta_<kernel>) name the same kernels
    from symcomm.core import symbols
    from symcomm.presets.hardware_values import PUBLISHED_KERNELS

    assert set(settings.ATTENTION_KERNELS) == {"fused", *PUBLISHED_KERNELS}
    assert all(f"eta_{kernel}" in symbols.SYMBOLS for kernel in PUBLISHED_KERNELS)


def _chunked(M, K, N, n, peak=1000, eta=sp.Rational(1, 2)):
    """What running (M × K)·(K × N) as n GEMMs of M/n rows adds to its time: n chunks timed by the definition
    (gemm_seconds) less the whole GEMM."""
    return n * gemm_seconds(sp.Rational(M, n), K, N, peak, eta) - gemm_seconds(M, K, N, peak, eta)


def _overlap_difference(precision="bf16", framework="megatron", t=2, recompute="none"):
    """(forward, backward) of tp_overlap=1 less tp_overlap=0, the small shape at tensor-parallel size ``t``."""
    at = {S.SYMBOLS[k].symbol: v for k, v in {**SHAPE, **RATES, "t": t}.items()}
    # fsdp2's async TP is a torch.compile pass (frameworks.framework_refusal): compiled both ways
    compiled = True if framework == "fsdp2" else None
    # Megatron overlaps only under sequence parallelism (frameworks.framework_refusal): every framework with it here
    on, off = (compute.micro_batch_compute(settings.RunSetting(framework=framework, tp_overlap=flag, sp=True,
                                                               precision=precision, recompute=recompute,
                                                               compile=compiled))
               for flag in (True, False))
    return exact(on.forward - off.forward, at), exact(on.backward - off.backward, at)


# the small shape's dense GEMMs on one of t = 2 GPUs, (M, K, N): QKV 4 → 12/2, output 4/2 → 4, FC1 4 → 8/2, FC2 8/2 → 4
TP2 = {"QKV": (2, 4, 6), "output": (2, 2, 4), "FC1": (2, 4, 4), "FC2": (2, 4, 4)}


def test_userbuffers_runs_the_gemms_in_their_chunks_by_hand():
    """tp_overlap=1 under Megatron: Transformer Engine's userbuffers splits QKV's and FC1's forward into t GEMMs of
    M/t rows (ring_exchange), the attention output's and FC2's into 4 (pipeline's num_splits, bf16), and their input
    gradients in the backward into t (transformer_engine/pytorch/module/base.py at d0067d0d, initialize_ub's
    defaults): each chunk timed by the definition, the difference is what splitting adds."""
    forward, backward = _overlap_difference()
    assert forward == (_chunked(*TP2["QKV"], 2) + _chunked(*TP2["FC1"], 2) + _chunked(*TP2["output"], 4)
                       + _chunked(*TP2["FC2"], 4))
    assert backward == _chunked(*TP2["output"], 2) + _chunked(*TP2["FC2"], 2)
    assert forward > 0 and backward > 0
    # a full recompute runs the forward's chunks again in the backward
    again_forward, again_backward = _overlap_difference(recompute="full")
    assert (again_forward, again_backward) == (forward, backward + forward)


def test_userbuffers_chunks_under_fp8_ring_exchange_the_output_gemms_too():
    """The FP8 recipes' configs ring-exchange the attention output's and FC2's forward as well (Megatron-Bridge
    comm_overlap.py at 067f987d, userbuffers_fp8_*: RingExchangeOverlapCfg): t chunks, at the FP8 rate."""
    fp8 = {"peak": 2000, "eta": sp.Rational(2, 5)}
    forward, backward = _overlap_difference("fp8_tensor")
    assert forward == sum(_chunked(*g, 2, **fp8) for g in TP2.values())
    assert backward == _chunked(*TP2["output"], 2, **fp8) + _chunked(*TP2["FC2"], 2, **fp8)


@pytest.mark.parametrize("framework, t", [("megatron", 1), ("fsdp2", 2), ("deepspeed", 2)])
def test_userbuffers_chunks_nothing_unsplit_or_in_another_framework(framework, t):
    """At t = 1 nothing is split; PyTorch's async TP (fsdp2) and a framework without userbuffers run whole GEMMs."""
    assert _overlap_difference(framework=framework, t=t) == (0, 0)
