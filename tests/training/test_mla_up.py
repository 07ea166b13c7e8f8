"""recompute_mla_up (Megatron-Core's recompute module mla_up_proj): MLA's up projections run again before the
attention core's backward and Q, K, V are not kept.  Expected values by hand on DeepSeek-V3's shape (its config.json:
h 7168, 61 layers, 128 heads, q_lora_rank 1536, kv_lora_rank 512, qk_nope 128, qk_rope 64, v_head 128)."""

import pytest

import symcomm
from symcomm.base.errors import InputError
from symcomm.training.settings import RunSetting

WORDS = dict(model="deepseek-v3", hardware="h100", t=8, p=1, c=1, d=16, e=16, b=128, m=8, s=4096, sp=1,
             recompute="selective", precision="fp8_tensor", expert_tp="1")


def _both():
    return symcomm.evaluate("hybrid", **WORDS), symcomm.evaluate("hybrid", **WORDS, recompute_mla_up=1)


def test_the_up_projections_run_again():
    # per token and layer q_lora·a·(d_nope + d_rope) + kv_lora·a·(d_nope + d_v) = 1536·128·192 + 512·128·256 =
    # 37,748,736 + 16,777,216 multiply-adds, 2 FLOPs each, over 61 layers and 128 · 4096 tokens
    plain, again = _both()
    assert again["hardware_flops"] - plain["hardware_flops"] == pytest.approx(
        61 * 2 * 128 * 4096 * (37_748_736 + 16_777_216), rel=1e-12)
    assert again["model_flops"] == plain["model_flops"]
    assert again["compute_time"] > plain["compute_time"]


def test_q_k_v_are_not_kept():
    # Q and K 2 bytes · 2 · a·(d_nope + d_rope) = 4·128·192, V 2·a·d_v = 2·128·128 bytes a token, split over t = 8:
    # 16,384 bytes a token and layer; one micro-batch of b/(d·m) = 1 sequence in flight (p = 1), 4096 tokens, 61 layers
    plain, again = _both()
    assert plain["memory"]["activations"] - again["memory"]["activations"] == pytest.approx(61 * 4096 * 16_384,
                                                                                           rel=1e-12)


def test_without_mla_it_is_refused():
    with pytest.raises(InputError, match="recompute_mla_up=1 needs attention=mla"):
        RunSetting(recompute_mla_up=True)
    with pytest.raises(InputError, match="recompute_mla_up=1 needs attention=mla"):
        RunSetting(recompute_mla_up=True, attention="mla", recompute="full")
