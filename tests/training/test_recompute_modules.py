"""Megatron-Core's recompute modules moe_act, layernorm, mlp and moe (recompute_moe_act, recompute_layernorm,
recompute_mlp, recompute_moe).  Expected values counted by hand on published shapes (their config.json): gpt-oss-120b
(h 2880, 36 layers all MoE, k 4 of 128 experts, expert width 2880), DeepSeek-V3 (h 7168, 61 layers of which the first
3 dense with F 18432), Qwen3-235B-A22B (h 4096, 94 layers all MoE, k 8 of 128 experts, expert width 1536, no shared
expert)."""

import pytest

import symcomm
from symcomm.base.errors import InputError
from symcomm.training.settings import RunSetting

# gpt-oss-120b as Megatron-Bridge 26.04.01 runs it on H100: p = 4 (9 layers a stage), d = 16, micro-batch
# b/(d·m) = 512/(16·8) = 4 sequences of 4096 tokens = 16,384 tokens; 1F1B keeps min(p, m) = 4 micro-batches in flight
GPT_OSS = dict(model="gpt-oss-120b", hardware="h100", t=1, p=4, c=1, d=16, e=8, b=512, m=8, s=4096, G=8,
               embeddings=1, recompute="none", moe=1, dispatcher="alltoall")
HELD = 9 * 4 * 16_384           # layers on the first stage × micro-batches in flight × tokens of one


def _pair(words, **flag):
    return symcomm.evaluate("hybrid", **words), symcomm.evaluate("hybrid", **words, **flag)


def test_moe_act_keeps_no_activation_output():
    # each token's k = 4 routed rows keep FC2's input, 2880 wide, 2 bytes (bf16), t = 1
    plain, again = _pair(GPT_OSS, recompute_moe_act=1)
    assert plain["memory"]["activations"] - again["memory"]["activations"] == HELD * 4 * 2 * 2880
    assert again["hardware_flops"] == plain["hardware_flops"]          # an activation is no matmul
    assert again["compute_time"] > plain["compute_time"]               # its memory-bound rerun
    assert again["comm_time"] == plain["comm_time"]


def test_layernorm_keeps_no_pre_mlp_norm_output():
    # the MoE layer's pre-MLP norm output, 2880 wide, 2 bytes a token
    plain, again = _pair(GPT_OSS, recompute_layernorm=1)
    assert plain["memory"]["activations"] - again["memory"]["activations"] == HELD * 2 * 2880
    assert again["hardware_flops"] == plain["hardware_flops"]
    assert again["compute_time"] > plain["compute_time"]


def test_mlp_reruns_the_dense_layers_and_their_collectives():
    # DeepSeek-V3 at t = 2 with sequence parallelism on one stage: the 3 dense layers' gated MLP, 3 matrices of
    # 7168 × 18432, 2 FLOPs a multiply-add, once more for each of the b·s tokens
    words = dict(model="deepseek-v3", hardware="h100", t=2, p=1, c=1, d=16, e=16, b=64, m=4, s=4096, sp=1,
                 recompute="none", precision="fp8_tensor", expert_tp="1")
    plain, again = _pair(words, recompute_mlp=1)
    assert again["hardware_flops"] - plain["hardware_flops"] == pytest.approx(
        3 * 6 * 64 * 4096 * 7168 * 18432, rel=1e-12)
    assert again["model_flops"] == plain["model_flops"]
    rerun = {row["label"]: row["count"] for row in again.data["terms"] if row["label"].endswith("(forward recompute)")}
    # FC1's input all-gathered and FC2's output reduce-scattered again, once a dense layer and micro-batch; under
    # Transformer Engine's current scaling (fp8_tensor) the input is quantized again first, its amax all-reduced over
    # the tensor-parallel group (tp_plans.TE_AMAX_REDUCTION)
    assert rerun == {"sequence all-gather (forward recompute)": 3 * 4,
                     "sequence reduce-scatter (forward recompute)": 3 * 4,
                     "FP8 amax all-reduce (current scaling) (forward recompute)": 3 * 4}
    assert again["memory"]["activations"] < plain["memory"]["activations"]


def test_mlp_frees_the_mlp_at_its_own_width():
    # an outsider's hand count: Llama 3 70B at t = 8 with sequence parallelism, one sequence of 4096 tokens, 80 layers;
    # per token and layer over t, no recompute keeps the norms' inputs 4h, QKV's and FC1's inputs 4h, Q 2h, K and V
    # 4h_kv (h_kv = h/8), the attention output 2h, SwiGLU's input 4F and FC2's 2F (no dropout mask: Llama 3 trains
    # without); recompute_mlp frees FC1's input, 4F and 2F, leaving 10h + 4h_kv = 10.5h
    words = dict(model="llama3-70b", hardware="h100", t=8, p=1, d=1, c=1, b=1, m=1, s=4096, sp=1)
    import symcomm

    got = symcomm.evaluate("hybrid", **words, recompute_mlp=1)["memory"]["activations"]
    assert got == pytest.approx(10.5 * 8192 / 8 * 4096 * 80, rel=1e-12)


def test_moe_reruns_the_experts_and_the_dispatch():
    # Qwen3-235B-A22B on 2 stages of 47 layers: each token through k = 8 experts, a gated 4096 → 1536 → 4096
    words = dict(model="qwen3-235b-a22b", hardware="h100", t=1, p=2, c=1, d=32, e=16, b=512, m=8, s=4096, G=8,
                 embeddings=1, recompute="none", dispatcher="alltoall")
    plain, again = _pair(words, recompute_moe=1)
    assert again["hardware_flops"] - plain["hardware_flops"] == pytest.approx(
        94 * 8 * 6 * 512 * 4096 * 4096 * 1536, rel=1e-12)
    rows = {row["label"]: row for row in again.data["terms"]}
    dispatch = rows["token dispatch all-to-all (forward recompute)"]
    # 47 layers × 8 micro-batches; a micro-batch's 2 · 4096 tokens × k = 8 rows × 4096 wide, 2 bytes
    assert dispatch["count"] == 47 * 8
    assert dispatch["message"] == 2 * 4096 * 8 * 4096 * 2
    assert "expert-output combine all-to-all (forward recompute)" in rows
    assert again["comm_time_per_axis"]["ep"] > plain["comm_time_per_axis"]["ep"]
    assert again["memory"]["activations"] < plain["memory"]["activations"]


def test_the_mtp_depths_layer_reruns_its_module_too():
    # DeepSeek-V3 with one MTP depth: its layer is a MoE TransformerLayer of the same config (the decoder's last kind),
    # so recompute_moe reruns its experts as it reruns the 58 MoE layers': each token through k = 8 routed and 1
    # shared expert, a gated 7168 → 2048 → 7168 (3 matrices, 2 FLOPs a multiply-add), once more for the b·s tokens
    words = dict(model="deepseek-v3", hardware="h100", t=2, p=1, c=1, d=16, e=16, b=64, m=4, s=4096, sp=1,
                 recompute="none", precision="fp8_tensor", expert_tp="1", mtp="1", D_mtp=1)
    plain, again = _pair(words, recompute_moe=1)
    assert again["hardware_flops"] - plain["hardware_flops"] == pytest.approx(
        (58 + 1) * 9 * 6 * 64 * 4096 * 7168 * 2048, rel=1e-12)
    assert again["model_flops"] == plain["model_flops"]


@pytest.mark.parametrize("words, message", [
    (dict(recompute_moe_act=True), "recompute_moe_act=1 needs moe=1"),
    (dict(recompute_moe=True), "recompute_moe=1 needs moe=1"),
    (dict(recompute_layernorm=True), "recompute_layernorm=1 needs moe=1 or attention=mla"),
    (dict(recompute_mlp=True, recompute="full"), "recompute_mlp=1 needs recompute=none or selective"),
    (dict(recompute_moe_act=True, moe=True, recompute="full"), "recompute_moe_act=1 needs recompute=none or selective"),
    # transformer_config.py at d98e8a64 refuses moe_act and layernorm under delayed scaling
    (dict(recompute_layernorm=True, moe=True, precision="fp8_delayed"), "recompute_layernorm=1 needs a precision other"),
])
def test_refused_where_the_module_has_no_layer(words, message):
    with pytest.raises(InputError, match=message):
        RunSetting(**words)


def test_the_cli_refuses_in_one_line():
    with pytest.raises(InputError) as refused:
        symcomm.evaluate("hybrid", model="llama3-8b", hardware="h100", t=1, p=1, c=1, d=8, b=64, m=8, s=4096,
                         recompute_moe=1)
    assert "\n" not in str(refused.value) and "recompute_moe=1 needs moe=1" in str(refused.value)


def test_recompute_mlp_on_a_stage_with_mtp_counts_its_dense_layers_only():
    # the last stage of DeepSeek-V3's Megatron-Bridge 25.09 H100 recipe (p=8 v=4 with MTP): the recompute module mlp
    # runs the dense layers' MLP again, never an MoE layer's (transformer_layer.py: not self.is_moe_layer), so its
    # collectives count the stage's dense layers; they were counted as layers − (MoE layers + the MTP depth), -90.2
    # all-gathers, which made recomputing cheaper than not
    import symcomm

    words = dict(t=2, p=8, d=64, c=1, e=64, b=8192, m=128, s=4096, G=8, sp=1, recompute="none", mtp=1, D_mtp=1,
                 recompute_mlp=1, schedule="interleaved", v=4, pipeline_split="first_last", L_first=1, L_last=0, moe=1,
                 dispatcher="alltoall", framework="megatron", zero=1)
    got = symcomm.evaluate("hybrid", model="deepseek-v3", **words)
    again = [row for row in got["terms"] if "(forward recompute)" in row["label"]]
    assert again and all(row["count"] >= 0 for row in again)
    plain = symcomm.evaluate("hybrid", model="deepseek-v3", **{**words, "recompute_mlp": 0})
    assert got["send"] >= plain["send"]
