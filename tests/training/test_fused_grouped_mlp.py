"""fused_grouped_mlp=1 (Transformer Engine's fused grouped MLP: transformer_engine/pytorch/ops/fused/
forward_grouped_mlp.py and backward_grouped_mlp.py at 29a8c2fe; Megatron-Bridge's cutedsl_fused_grouped_mlp): no
memory-bound pass over the routed rows' F_e-wide tensors and two casts made in GEMM epilogues.  Expected values counted
by hand on Qwen3-30B-A3B's shape (its config.json: h 2048, 48 layers all MoE, 128 experts, 8 per token, moe_intermediate
768) with kappa and the HBM bandwidth typed, so the count does not lean on a fitted constant."""

import subprocess
import sys

import pytest

import symcomm
from symcomm.base.errors import InputError
from symcomm.training.settings import RunSetting

WORDS = dict(model="qwen3-30b-a3b", hardware="gb200", t=1, p=1, c=1, d=8, e=8, b=512, m=16, s=4096, G=72, moe=1,
             precision="mxfp8", kappa=10, hbm=8e12)


def test_the_experts_f_e_wide_passes_and_two_casts_go():
    # one micro-batch: b/(d·m) = 4 sequences, T = 4·4096 = 16,384 tokens, k = 8 rows each, 48 MoE layers.
    # kappa's passes: per row FC1's output (2·768 wide) and the activation's output (768), 2 bytes an element:
    #   (4 + 2)·768 = 4,608 bytes a row, 10 passes (kappa=10), forward and backward together.
    # casts (MXFP8: read the bf16 element, 2 bytes, write a row-wise and a column-wise 1-byte copy with a 1-byte scale
    #   per 32 elements: 2 + 2·(1 + 1/32) = 4.0625 bytes an element): FC2's input (768 a row) in the forward and FC1's
    #   output gradient (2·768 a row) in the backward, 2,304 elements a row.
    rows = 48 * 16_384 * 8
    per_micro = rows * (10 * 4_608 + 4.0625 * 2_304) / 8e12
    plain = symcomm.evaluate("hybrid", **WORDS)
    fused = symcomm.evaluate("hybrid", **WORDS, fused_grouped_mlp=1)
    assert plain["compute_time"] - fused["compute_time"] == pytest.approx(16 * per_micro, rel=1e-9)
    assert fused["model_flops"] == plain["model_flops"] and fused["memory"] == plain["memory"]


def test_it_is_refused_where_transformer_engine_does_not_fuse():
    # not MXFP8, not Megatron-Core, not SwiGLU experts, with layers kept in bf16 (unfused), or with the moe_act
    # checkpoint of the activation it replaces
    for setting, said in ((dict(moe=True, gated=True, precision="fp8_tensor"), "needs precision=mxfp8"),
                          (dict(moe=True, gated=True, precision="mxfp8", framework="fsdp2", zero=3),
                           "framework=fsdp2 is not run"),
                          (dict(moe=False, gated=True, precision="mxfp8"), "needs moe=1 and gated=1"),
                          (dict(moe=True, gated=False, precision="mxfp8"), "needs moe=1 and gated=1"),
                          (dict(moe=True, gated=True, precision="mxfp8", bf16_layers=True),
                           "bf16_layers=1 is not modelled"),
                          (dict(moe=True, gated=True, precision="mxfp8", recompute_moe_act=True),
                           "recompute_moe_act=1 is not modelled")):
        with pytest.raises(InputError, match=said):
            RunSetting(fused_grouped_mlp=True, **setting)
    RunSetting(fused_grouped_mlp=True, moe=True, gated=True, precision="mxfp8")


def test_shapes_off_the_256_grid_are_refused():
    # gpt-oss-120b: h = 2880 = 11.25 · 256 (its config.json), so Transformer Engine leaves its experts unfused
    # (ops/_common.py, fuse_grouped_mlp_ops)
    words = {**WORDS, "model": "gpt-oss-120b"}
    with pytest.raises(InputError, match=r"h = 2880, 2F_e = 5760, F_e = 2880 are not"):
        symcomm.evaluate("hybrid", **words, fused_grouped_mlp=1)
    # Qwen3-30B-A3B with its experts split over t = 2 (expert_tp=tp): F_e/t = 384 = 1.5 · 256
    with pytest.raises(InputError, match=r"F_e/t = 384 is not"):
        symcomm.evaluate("hybrid", **{**WORDS, "t": 2, "sp": 1}, fused_grouped_mlp=1)
    # the same split with expert_tp=1 runs each expert whole: 2048, 1536 and 768 are multiples of 256
    symcomm.evaluate("hybrid", **{**WORDS, "t": 2, "sp": 1}, expert_tp="1", fused_grouped_mlp=1)


def test_the_cli_refuses_in_one_line():
    out = subprocess.run([sys.executable, "-m", "symcomm", "eval", "hybrid", "--model", "gpt-oss-120b", "--hardware",
                          "gb200", "t=1", "p=1", "c=1", "d=8", "e=8", "b=512", "m=16", "s=4096", "G=72", "moe=1",
                          "precision=mxfp8", "fused_grouped_mlp=1"], capture_output=True, text=True)
    assert out.returncode == 2 and out.stdout == "" and "Traceback" not in out.stderr
    assert out.stderr.count("\n") == 1 and "fused_grouped_mlp=1" in out.stderr
