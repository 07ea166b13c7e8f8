"""mamba=1: hybrid Mamba-Transformer models (Nemotron-H, Nemotron 3) counted block by block.  Expected values by hand
from the definition, on Nemotron 3 Nano's shape as Megatron-Bridge's recipe builds it (nemotron_3_nano.py at
c810129341: 52 layers = 23 Mamba, 23 MoE, 6 attention; h = 2688; 32 heads of 128, 2 K/V groups; Mamba 64 heads of
64, state 128, 8 groups; 128 experts top-6 of width 1856, one shared expert 3712 wide; vocabulary 131072)."""

import subprocess
import sys

import pytest

import symcomm
from symcomm.base.errors import InputError
from symcomm.training.settings import RunSetting

H, S, VOCAB = 2688, 8192, 131072
RUN = dict(model="nemotron-3-nano", hardware="b200", p=1, c=1, e=8, s=S, dispatcher="alltoall")


def _eval(**words):
    return symcomm.evaluate("hybrid", **{**RUN, **words})


def test_model_flops_count_each_block_kind_by_hand():
    # forward FLOPs per token (2 per multiply-add, the attention core over the full s × s as the papers count it):
    # attention: QKV 2688 × (4096 + 2·256) and O 4096 × 2688 = 2·2688·8704 = 46,792,704; core 4·s·4096 =
    # 134,217,728; Mamba-2: projections 2·(2688·10304 + 4096·2688) = 77,414,400 and the chunked scan
    # 2·(128·128·8 + 128·4096 + 2·128·4096) = 3,407,872; MoE: (6 routed + the shared one's two halves) ·
    # 2·2·2688·1856 = 159,645,696; the LM head 2·2688·131072 = 704,643,072.  Model FLOPs = 3 × forward.
    per_token = (6 * (46_792_704 + 134_217_728) + 23 * (77_414_400 + 3_407_872) + 23 * 159_645_696
                 + 704_643_072)
    r = _eval(t=1, d=8, b=64, m=8)
    assert r["model_flops"] == pytest.approx(3 * 64 * S * per_token, rel=1e-12)


def test_tensor_parallel_runs_one_pair_per_block_and_none_for_the_moe_blocks():
    # t = 2, sequence parallel: per micro-batch and pass one sequence all-gather before each of the 23 Mamba and 6
    # attention blocks (in_proj, QKV), one reduce-scatter after each; the MoE blocks' tokens go through the
    # dispatcher instead, but for the shared expert's MLP each runs on the TP group (Megatron-Core's SharedExpertMLP):
    # 29 + 23 per micro-batch, m = 4 micro-batches → 208
    r = _eval(t=2, d=8, b=32, m=4, sp=1)
    counts = {x["label"]: x["count"] for x in r["terms"]}
    assert counts["sequence all-gather (forward)"] == (29 + 23) * 4
    assert counts["sequence reduce-scatter (forward)"] == (29 + 23) * 4


def test_activations_add_each_block_kind_by_hand():
    # t = 1, no sequence parallel, bf16 (16-bit saved inputs), one micro-batch of b/(d·m) = 1 sequence, bytes per
    # token: attention 2·2688 + 2·2688 (norm input, QKV input), Q 2·4096 (32 heads of 128: h_q = 4096, Megatron-Core's
    # query [s, b, np, hn]), K and V 2·256 each at the model's 2 query groups of 128 (2·2·2·256), the output
    # projection's input 2·4096 (np·hn), no dropout mask (Nemotron 3 Nano trains without dropout)
    # = 4·2688 + 4·4096 + 4·256 = 28,160;
    # Mamba 2·2688 + 2·2688 (norm input,
    # in_proj input) + 2·10304 (z, x, B, C, dt) + 3·2·4096 (scan output, gated norm input, out_proj input) = 55,936;
    # MoE: norm input and output 4·2688 = 10,752, the 6 routed rows' permuted input 2·2688 and FC1 output and
    # activation 2·1856 + 2·1856 (not gated) per row, FC2's output not kept (Megatron-Core moe/experts.py at d98e8a64:
    # the probabilities multiply the activation's output): 6·12,800 = 76,800, the shared expert (two of 1856)
    # 2·(2·1856 + 2·1856) = 14,848: 102,400
    per_token = 6 * 28_160 + 23 * 55_936 + 23 * 102_400
    r = _eval(t=1, d=8, b=8, m=1, precision="bf16")
    assert r["memory"]["activations"] == per_token * S


def test_the_preset_sets_mamba_and_says_so():
    r = _eval(t=1, d=8, b=8, m=1)
    assert r["options"]["mamba"] == "1"
    assert any("mamba=1: nemotron-3-nano is a hybrid Mamba-Transformer of 52 layers (6 attention, 23 Mamba-2, 23 MoE)"
               in note for note in r.notes)


@pytest.mark.parametrize("words, named", [
    (dict(framework="fsdp2"), "framework=fsdp2"),
    (dict(recompute="full"), "recompute=full"),
    (dict(recompute="op"), "recompute=op"),
])
def test_what_the_hybrid_does_not_count_is_refused(words, named):
    with pytest.raises(InputError, match=named):
        RunSetting(mamba=True, moe=True, **words)


def test_context_parallel_is_refused_in_one_line():
    out = subprocess.run([sys.executable, "-m", "symcomm", "eval", "hybrid", "--model", "nemotron-3-nano",
                          "--hardware", "b200", "t=1", "p=1", "c=2", "d=4", "e=8", "b=32", "m=4", "s=8192"],
                         capture_output=True, text=True)
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert "mamba=1 with c=2 is not modelled" in out.stderr


def _cli(*argv):
    return subprocess.run([sys.executable, "-m", "symcomm", *argv], capture_output=True, text=True)


def test_layer_counts_beyond_the_layers_are_refused():
    # L_att + L_ssm = 40 + 23 = 63 of the 52 layers: no count of dense layers is negative
    out = _cli("eval", "hybrid", "--model", "nemotron-3-nano", "--hardware", "b200", "t=1", "p=1", "c=1", "d=8",
               "e=8", "b=32", "m=4", "s=8192", "L_att=40")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "L=52 must be at least L_att + L_ssm=63" in out.stderr


def test_plan_refuses_a_hybrid_model_rather_than_rank_it_as_a_transformer():
    out = _cli("plan", "--model", "nemotron-3-nano", "--gpus", "64", "--hardware", "b200", "--batch", "512")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "hybrid Mamba-Transformer (mamba=1), which plan does not search" in out.stderr


SUPER = dict(model="nemotron-3-super", hardware="gb200", p=1, c=1, s=S)


def test_super_model_flops_count_latent_moe_by_hand():
    # Nemotron 3 Super (nemotron_3_super.py at c810129341: 8 attention, 40 Mamba, 40 LatentMoE of 88 layers; h 4096;
    # Mamba 128 heads of 64; 512 experts top-22 of 2688 on a latent of 1024; one shared expert 5376 wide), forward
    # FLOPs per token: attention 2·4096·(4096 + 4096 + 2·256) = 71,303,168 and the core 4·8192·4096 = 134,217,728;
    # Mamba 2·(4096·18560 + 8192·4096) = 219,152,384 and the scan 2·(128·128·8 + 128·8192 + 2·128·8192) = 6,553,600;
    # LatentMoE: 22 routed experts 2·2·1024·2688 = 242,221,056, the shared one 2·2·4096·5376 = 88,080,384, the two
    # projections 2·2·4096·1024 = 16,777,216; the LM head 2·4096·131072 = 1,073,741,824
    per_token = (8 * (71_303_168 + 134_217_728) + 40 * (219_152_384 + 6_553_600)
                 + 40 * (242_221_056 + 88_080_384 + 16_777_216) + 1_073_741_824)
    r = symcomm.evaluate("hybrid", **SUPER, t=2, d=32, e=64, b=512, m=16, sp=1, dispatcher="hybridep", expert_tp="1",
                         precision="mxfp8")
    assert r["model_flops"] == pytest.approx(3 * 512 * S * per_token, rel=1e-12)
    assert r["options"]["moe_latent"] == "1"


def test_latent_moe_dispatches_the_latent_width():
    # the flex dispatcher's legs carry tokens h_lat = 1024 wide, not h = 4096: the typed moe_latent=0 sends 4 times
    # the bytes
    words = dict(**SUPER, t=2, d=32, e=64, b=512, m=16, sp=1, dispatcher="hybridep", expert_tp="1")
    latent = symcomm.evaluate("hybrid", **words)["comm_time_per_axis"]["ep"]
    wide = symcomm.evaluate("hybrid", **words, moe_latent=0)["comm_time_per_axis"]["ep"]
    assert wide > 2 * latent


def test_bf16_layers_are_the_recipe_at_none_and_slower_with_more():
    # L_bf16 = 0 keeps every layer in the low precision: the recipe's own step; more layers in bf16 only slow it
    words = dict(model="llama3-8b", hardware="gb200", t=1, p=1, c=1, d=8, b=64, m=8, s=8192, precision="mxfp8")
    plain = symcomm.evaluate("hybrid", **words)["compute_time"]
    times = [symcomm.evaluate("hybrid", **words, bf16_layers=1, L_bf16=n)["compute_time"] for n in (0, 8, 32)]
    assert times[0] == pytest.approx(plain, rel=1e-12)
    assert times[0] < times[1] < times[2]


def test_names_only_the_step_model_reads_are_not_said_unused():
    # L_bf16 and the mixer's sizes change the step time (above; Nano's mixer by hand) but no collective: typed with
    # --hardware they are used, and a note calling them unused would contradict the answer beside it
    words = dict(model="llama3-8b", hardware="gb200", t=1, p=1, c=1, d=8, b=64, m=8, s=8192, precision="mxfp8")
    got = symcomm.evaluate("hybrid", **words, bf16_layers=1, L_bf16=8)
    assert not [note for note in got.notes if "not used" in note]
    nano = _eval(t=1, d=8, b=64, m=1)
    for name, value in (("d_ssm", 2 * 4096), ("n_ssm", 64), ("g_ssm", 4), ("a_ssm", 32)):
        wider = _eval(t=1, d=8, b=64, m=1, **{name: value})
        assert not [note for note in wider.notes if "not used" in note], name
        assert wider["step_time"] != nano["step_time"], name


@pytest.mark.parametrize("words, named", [
    (dict(bf16_layers=True), "bf16_layers=1 needs a low precision"),
    (dict(moe_latent=True, moe=True), "moe_latent=1 needs mamba=1 and moe=1"),
])
def test_settings_without_meaning_are_refused(words, named):
    with pytest.raises(InputError, match=named):
        RunSetting(**words)
