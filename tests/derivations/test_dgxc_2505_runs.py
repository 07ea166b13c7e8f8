"""NVIDIA's DGX Cloud benchmarking recipes, v25.05.04 (derivations/data/dgxc_25_05_runs.json): the step-time tables of
llama3.1/README.md (Llama 3.1 405B), nemotron/README.md (Nemotron-4 15B and 340B), deepseek_v3/pretraining/README.md
(DeepSeek-V3), nemotronh/README.md (Nemotron-H 56B), grok1/README.md (Grok-1 314B) and llama4/README.md (Llama 4
Maverick) at 1f6d9f40, on H100 and GB200, against the printed step times, the words each row is evaluated by, and the
rows the step model cannot express, with the reason it gives.
"""

import json

from symcomm import presets
from symcomm.derivations import bridge_runs, modern
from conftest import symcomm_command

RUNS = bridge_runs.load("dgxc_25_05_runs.json")["runs"]
BY_ID = {r["id"]: r for r in RUNS}


def _words(run_id: str) -> dict:
    return dict(w.split("=", 1) for w in modern.words(BY_ID[run_id]))


def test_one_check_run_per_printed_step_time():
    # llama3.1/README.md prints Llama 3.1 405B at 128, 256, 512 GB200 GPUs and 512 H100 GPUs, each in BF16 and FP8;
    # nemotron/README.md Nemotron4 15b at 16 H100s and 340b at 256 H100s (BF16, FP8), 340b on GB200 at 128, 256, 512
    # GPUs weak-scaled and again strong-scaled (BF16, FP8); deepseek_v3/pretraining/README.md BF16 only, at 512 and
    # 1024 H100s and 128, 256, 512 GB200s; nemotronh/README.md FP8 only, at 32 to 2048 H100s (7 counts);
    # grok1/README.md and llama4/README.md at 128, 256, 512 GB200s and 512 H100s, each in BF16 and FP8
    llama, nemotron, deepseek = 2 * (3 + 1), 2 * (1 + 1) + 2 * (3 + 3), 2 + 3
    nemotron_h, grok, llama4 = 7, 2 * (3 + 1), 2 * (3 + 1)
    assert len(RUNS) == llama + nemotron + deepseek + nemotron_h + grok + llama4 == len(BY_ID)
    assert all(r["role"] == "check" and r["release"] == "25.05.04" for r in RUNS)
    assert {r["hardware"] for r in RUNS} == {"h100", "gb200"}
    assert [problem for r in RUNS for problem in bridge_runs.validate(r)] == []
    # the GB200 layout table: 128 GPUs, TP 4, PP 8, CP 2, VP 8, DP 2, MBS 1, GBS 64, GA 32; the BF16 table: 9.347 s,
    # "Throughput in tokens per second 56092" (the README's own 8192·64/9.347)
    run = BY_ID["dgxc-25.05.04-gb200-llama3.1-405b-bf16-g128"]
    assert (run["t"], run["p"], run["c"], run["v"], run["d"], run["global_batch"], run["step_time_s"]) == \
        (4, 8, 2, 8, 2, 64, 9.347)
    assert run["global_batch"] // (run["d"] * run["micro_batch"]) == 32
    assert abs(run["tokens_per_s_per_gpu"] * run["gpus"] - 56092) < 1


def test_the_words_follow_the_recipe():
    # launch.sh passes no --fp8_recipe: argument_parser.py's default ds, bf16_with_fp8_mixed (delayed scaling,
    # fp8_param_gather True); pretrain_performance_optimizations sets grad_reduce_in_fp32 False; the recipe's
    # account_for_embedding/loss_in_pipeline_split: (126 + 2)/64 slots, one layer on the first and the last chunk
    llama = _words("dgxc-25.05.04-gb200-llama3.1-405b-fp8-g256")
    assert (llama["precision"], llama["fp8_param_gather"], llama["grad_dtype"], llama["G"]) == \
        ("fp8_delayed", "1", "same", "72")
    assert (llama["pipeline_split"], llama["L_first"], llama["L_last"], llama["v"]) == ("first_last", "1", "1", "8")
    # nemotron/launch.sh for gb200: --cuda_graphs true; Nemotron4Config340B: squared-ReLU (not gated), 8 query groups
    big = BY_ID["dgxc-25.05.04-gb200-nemotron4-340b-bf16-g512-strong"]
    words = _words(big["id"])
    assert (words["recompute"], words["b"], words["m"]) == ("none", "512", str(512 // 16))
    assert "--model nemotron4-340b" in modern.command(big)
    assert (presets.model("nemotron4-340b").gated, presets.model("nemotron4-340b").values()["h_kv"]) == \
        (False, 8 * 18432 // 96)
    assert any(text.startswith("CUDA graphs") for text in modern.approximations(big))
    # 15b on H100: TP 2, MBS 2, GBS 64 over 16 GPUs: d 8, GA 64/(8·2) = 4 (the layout table's GA)
    small = _words("dgxc-25.05.04-h100-nemotron4-15b-bf16-g16")
    assert (small["t"], small["d"], small["m"], small["sp"]) == ("2", "8", "4", "1")
    # deepseek_v3 launch.sh on H100: RM='mla_up_proj' (no attention-core recompute), ETP 1, PP 8; the perf script:
    # first stage 64/8 − 1 = 7 layers, last 64/8 − 2 = 6; MegatronTokenDropCallback (padded to capacity); bf16_mixed
    # keeps grad_reduce_in_fp32 True; pretrain_recipe(use_mtp=True): one MTP layer
    ds = _words("dgxc-25.05.04-h100-deepseek-v3-bf16-g512")
    assert (ds["recompute"], ds["recompute_mla_up"], ds["expert_tp"], ds["L_first"], ds["L_last"]) == \
        ("none", "1", "1", "7", "6")
    assert (ds["dispatcher"], ds["grad_dtype"], ds["mtp"], ds["D_mtp"]) == ("alltoall_padded", "fp32", "1", "1")
    # on GB200 RM='core_attn': the attention core recomputed (recompute=selective); PP 4: 15 and 14 layers
    gb = _words("dgxc-25.05.04-gb200-deepseek-v3-bf16-g128")
    assert (gb["recompute"], gb["e"], gb["L_first"], gb["L_last"]) == ("selective", "32", "15", "14")


def test_deepseek_v3_attention_core_runs_unfused_on_gb200_only():
    # DeepSeek-V3's MLA: q and k heads of 128 + 64 = 192 (qk_nope_head_dim + qk_rope_head_dim), v heads of 128.
    # Transformer Engine before 71c76b6b (2025-06-13, v2.5; the run's NeMo 25.04.01 is older) refuses cuDNN's fused
    # core on sm100 for any head dimension above 128 and FlashAttention for head_dim_qk != head_dim_v, so GB200
    # (sm100) runs Transformer Engine's unfused core; H100 (sm90) keeps cuDNN's fused core up to 256
    model = BY_ID["dgxc-25.05.04-gb200-deepseek-v3-bf16-g128"]["model"]
    assert (model["qk_nope_head_dim"] + model["qk_rope_head_dim"], model["v_head_dim"]) == (192, 128)
    deepseek = [r for r in RUNS if "deepseek-v3" in r["id"]]
    assert {r["id"]: _words(r["id"]).get("flash", "1") for r in deepseek} == \
        {r["id"]: "0" if r["hardware"] == "gb200" else "1" for r in deepseek}
    assert sum(r["hardware"] == "gb200" for r in deepseek) == 3


#: every row is in the step model's scope: Nemotron-H 56B (NemotronHConfig56B's hybrid_override_pattern: 54 Mamba-2
#: mixers, 10 attention layers, 54 squared-ReLU MLPs), Grok-1 (MixtralConfig8x7B resized: 8 experts, every layer MoE)
#: and Llama 4 Maverick (dense and MoE layers alternating, moe_layer_freq [0, 1]·24, one shared expert) are typed by
#: their shape (modern.shape_words; eval counts their Φ and Φ_E)
OUT_OF_SCOPE: dict = {}


def test_no_row_is_out_of_scope():
    assert [r["id"] for r in RUNS if modern.out_of_scope(r)] == []


def test_nemotron_h_is_counted_by_its_shape():
    # Nemotron-H 56B (NVIDIA 2025, Nemotron-H, arXiv 2504.03624: a 56B model): the count from its shape, 56.32B
    words = modern.words(next(r for r in RUNS if r["model"]["name"] == "nemotronh-56b"))
    run = symcomm_command("eval", "hybrid", "--hardware", "h100", *words, "--json")
    assert run.returncode == 0, run.stderr
    phi = json.loads(run.stdout)["inputs"]["Phi"]["value"]
    assert abs(phi - 56e9) / 56e9 < 0.01


def test_every_row_in_scope_evaluates():
    # every other row is in the step model's scope and none is refused by a rule only the model checks
    for hardware in ("h100", "gb200"):
        evaluated, refused = modern.measured_runs(hardware, "check")
        mine = {r["id"] for r in RUNS if r["hardware"] == hardware and r["model"]["name"] not in OUT_OF_SCOPE}
        assert mine.isdisjoint(refused)
        assert {i for run in evaluated for i in run.id.split("+")} >= mine
