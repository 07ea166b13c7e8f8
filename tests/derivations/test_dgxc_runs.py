"""NVIDIA's DGX Cloud benchmarking recipes, v25.01 (derivations/data/dgxc_runs.json): the Llama 3.1 tables of
llama3.1/README_8b.md, README_70b.md and README_405b.md (NeMo 24.09) and the Nemotron-4 tables of
nemotron/README_15b.md and README_340b.md (NeMo 24.11) at 143b90dd, on H100 in BF16 and FP8, against the printed step
times, and the words each row is evaluated by.
"""

from symcomm import presets
from symcomm.derivations import bridge_runs, modern

RUNS = bridge_runs.load("dgxc_runs.json")["runs"]
BY_ID = {r["id"]: r for r in RUNS}


def test_one_check_run_per_printed_step_time():
    # the tables print 5 GPU counts for 8B (8-128), 6 for 70B (64-2048), 6 for 405B (32-2304), 8 for Nemotron-4 15B
    # (16-2048) and 5 for 340B (128-2048), each in BF16 and FP8
    assert len(RUNS) == 2 * (5 + 6 + 6 + 8 + 5) == len(BY_ID)
    assert all(r["role"] == "check" and r["hardware"] == "h100" for r in RUNS)
    assert [problem for r in RUNS for problem in bridge_runs.validate(r)] == []
    # README_70b.md: "Llama 3.1 70b 24.09 FP8 (TP=4, PP=4, CP=2, VP=5, MBS=1, GA=64)", 512 GPUs (GBS=1024): 11.18 s;
    # d = 512/(4·4·2) = 16, 1024/16 = 64 micro-batches, the table's GA
    run = BY_ID["dgxc-25.01-h100-llama3.1-70b-fp8-g512"]
    assert (run["t"], run["p"], run["c"], run["v"], run["d"], run["global_batch"], run["step_time_s"]) == \
        (4, 4, 2, 5, 16, 1024, 11.18)
    assert run["global_batch"] // (run["d"] * run["micro_batch"]) == 64


def test_the_words_follow_the_recipe():
    fp8 = dict(w.split("=", 1) for w in modern.words(BY_ID["dgxc-25.01-h100-llama3.1-405b-fp8-g576"]))
    # llama3.1_405b.yaml: grad_sync_dtype bf16, num_query_groups 16 (h_kv = 16·128); configure.sh: fp8_params true
    assert (fp8["grad_dtype"], fp8["fp8_param_gather"], fp8["h_kv"], fp8["precision"]) == \
        ("same", "1", "2048", "fp8_delayed")
    # at 32 GPUs configure.sh runs 7 layers on one stage
    small = dict(w.split("=", 1) for w in modern.words(BY_ID["dgxc-25.01-h100-llama3.1-405b-bf16-g32"]))
    assert (small["L"], small["p"], small["fp8_param_gather"]) == ("7", "1", "0")
    # nemotron/configure.sh for 340b: NVTE_FUSED_ATTN=0, Transformer Engine's FlashAttention-2 backend; optim dtype bf16
    big = dict(w.split("=", 1) for w in modern.words(BY_ID["dgxc-25.01-h100-nemotron4-340b-bf16-g128"]))
    assert (big["attention_kernel"], big["adam_dtype"], big["recompute"]) == ("fa2", "bf16", "selective")
    # typed by the Nemotron-4 340B preset: squared-ReLU (not gated), 8 query groups of h/a = 192
    assert "--model nemotron4-340b" in modern.command(BY_ID["dgxc-25.01-h100-nemotron4-340b-bf16-g128"])
    nemotron = presets.model("nemotron4-340b")
    assert (nemotron.gated, nemotron.values()["h_kv"]) == (False, 8 * 18432 // 96)
    evaluated, refused = modern.measured_runs("h100", "check")
    assert refused == {} and sum(r.id.startswith("dgxc-25.01-") for r in evaluated) == len(RUNS)
