"""mtp (Megatron-Core's multi-token prediction, --mtp-num-layers D_mtp): each depth's eh_proj, one layer of the
model's last kind and the shared output head on the last stage.  Expected values by hand from the published shapes:
DeepSeek-V3 (its config.json: h 7168, 128 heads, q_lora_rank 1536, kv_lora_rank 512, qk_nope 128, qk_rope 64, v_head
128, 256 routed experts top-8 and 1 shared of 2048, SwiGLU, vocabulary 129,280) and Nemotron 3 Super (h 4096, 32 heads
of 128, 2 K/V groups, 512 experts top-22 of 2688 on a latent of 1024, one shared expert of 5376, squared ReLU,
vocabulary 131,072)."""

import pytest

import symcomm
from symcomm.base.errors import InputError
from symcomm.training import flops
from symcomm.training.settings import RunSetting

DSV3 = dict(model="deepseek-v3", hardware="h100", t=8, p=1, c=1, d=16, e=16, b=128, m=8, s=4096, sp=1,
            recompute="selective", precision="fp8_tensor", expert_tp="1")
SUPER = dict(model="nemotron-3-super", hardware="b200", t=2, p=1, c=1, d=32, e=64, b=256, m=8, s=8192, sp=1,
             precision="mxfp8", expert_tp="1", framework="megatron")


def _with(words, **mtp):
    return symcomm.evaluate("hybrid", **words, **mtp)


def test_deepseek_v3_depth_flops_by_hand():
    # multiply-adds per token of one depth: eh_proj 2·7168·7168 = 102,760,448; MLA: query 1536·(7168 + 128·192) =
    # 48,758,784, kv down 7168·(512 + 64) = 4,128,768, kv up 512·128·256 = 16,777,216, output 128·128·7168 =
    # 117,440,512 (187,105,280); 8 routed + 1 shared SwiGLU experts 9·3·7168·2048 = 396,361,728; output head
    # 7168·129,280 = 926,679,040; together 1,612,906,496, 2 FLOPs each, + the core over the full 4096² scores
    # 2·4096·128·(128 + 64 + 128) = 335,544,320 FLOPs a token: 3,561,357,312; model FLOPs = 3 × forward
    plain, mtp = _with(DSV3), _with(DSV3, mtp=1, D_mtp=1)
    assert mtp["model_flops"] - plain["model_flops"] == pytest.approx(3 * 128 * 4096 * 3_561_357_312, rel=1e-12)
    # selective recompute runs the depth's core again: 335,544,320 FLOPs a token
    assert (mtp["hardware_flops"] - mtp["model_flops"]) - (plain["hardware_flops"] - plain["model_flops"]) == \
        pytest.approx(128 * 4096 * 335_544_320, rel=1e-12)
    assert mtp["compute_time"] > plain["compute_time"]


def test_deepseek_v3_mtp_parameters_by_hand():
    # outside the routed experts: eh_proj 2·7168² = 102,760,448 and 3 + 2 norms 5·7168 = 35,840; MLA 187,105,280 and its
    # two latent norms 1536 + 512; router 7168·256 = 1,835,008; the shared expert 3·7168·2048 = 44,040,192:
    # 335,778,816.  Routed: 256·3·7168·2048 = 11,274,289,152
    shape = {"h": 7168, "a": 128, "q_lora": 1536, "kv_lora": 512, "d_nope": 128, "d_rope": 64, "d_v": 128, "E": 256,
             "E_s": 1, "F_e": 2048}
    dense, routed = flops.mtp_parameters(gated=True, moe=True, attention="mla")
    values = {symbol: shape[symbol.name] for symbol in dense.free_symbols | routed.free_symbols}
    assert (dense.subs(values), routed.subs(values)) == (335_778_816, 11_274_289_152)
    # DeepSeek-V3's report: 14B of its 685B are the MTP module, which holds its own embedding and head too (2·7168·129,280)
    assert abs(335_778_816 + 11_274_289_152 + 2 * 926_679_040 - 14e9) / 14e9 < 0.05
    # on one GPU (t = 8, experts whole over e = 16): 335,778,816/8 + 11,274,289,152/16 = 746,615,424 more weights,
    # 2 bytes each (Megatron-Core's distributed optimizer keeps the bf16 weights whole)
    plain, mtp = _with(DSV3), _with(DSV3, mtp=1, D_mtp=1)
    assert mtp["memory"]["weights"] - plain["memory"]["weights"] == 2 * 746_615_424
    # the depth's logits buffers beside the model's
    assert mtp["memory"]["logits"] == 2 * plain["memory"]["logits"]


def test_super_depths_by_hand():
    # one depth '*E', multiply-adds per token: eh_proj 2·4096² = 33,554,432; attention QKV and output
    # 4096·(2·4096 + 2·256) = 35,651,584; 22 routed experts 22·2·1024·2688 = 121,110,528, the shared 5376-wide one
    # 2·4096·5376 = 44,040,192, the latent projections 2·4096·1024 = 8,388,608; head 4096·131,072 = 536,870,912:
    # 779,616,256, 2 FLOPs each, + the core 4·8192·4096 = 134,217,728 FLOPs: 1,693,450,240 a token, two depths
    plain, two = _with(SUPER), _with(SUPER, mtp="shared", D_mtp=2)
    assert two["model_flops"] - plain["model_flops"] == pytest.approx(3 * 2 * 256 * 8192 * 1_693_450_240, rel=1e-12)
    # one layer run twice: the parameters of one depth, the FLOPs of two
    one_each = _with(SUPER, mtp=1, D_mtp=2)
    assert one_each["model_flops"] == two["model_flops"]
    assert two["memory"]["weights"] == _with(SUPER, mtp=1, D_mtp=1)["memory"]["weights"]
    assert one_each["memory"]["weights"] > two["memory"]["weights"]


def test_the_depths_sit_on_the_last_stage():
    words = dict(DSV3, p=2, pipeline_split="first_last", L_first=31, L_last=30)
    plain, mtp = _with(words), _with(words, mtp=1, D_mtp=1)
    labels = [term["label"] for term in mtp["terms"] if "MTP" in term["label"]]
    assert labels and all("first stage" not in label or "first and last" in label for label in labels)
    # the last stage's slot grows, the first's does not
    assert mtp["stages"]["last"]["slot_time"] > plain["stages"]["last"]["slot_time"]
    assert mtp["stages"]["first"]["slot_time"] == plain["stages"]["first"]["slot_time"]
    # with p > 1 and untied embeddings the last stage holds a copy of the embedding, summed with the first's once a step
    assert any(label.startswith("MTP embedding-copy gradient all-reduce") for label in labels)


def test_what_is_not_modelled_is_refused():
    with pytest.raises(InputError, match="mtp=1 with framework=fsdp2 is not modelled"):
        RunSetting(mtp="1", framework="fsdp2", embeddings=True, zero=3)
    with pytest.raises(InputError, match="mtp=shared needs embeddings=1"):
        RunSetting(mtp="shared")
    with pytest.raises(InputError, match="mtp=1 with mamba=1 needs moe=1"):
        RunSetting(mtp="1", mamba=True, embeddings=True)
    with pytest.raises(InputError, match="mtp=2 is not allowed; choose 0, 1 or shared"):
        RunSetting(mtp="2")
