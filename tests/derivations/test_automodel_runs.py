"""NeMo AutoModel's DGX-H100 BF16 pre-training table (derivations/data/automodel_runs.json): each typed row against
the table as printed, its derived numbers made here by hand, the model FLOP rate the table prints recovered from its
tokens/s and the typed shape, the fake balanced gate's routing counted here, and every row evaluated as
``symcomm eval hybrid`` words or left out with a reason.

The table (NVIDIA-NeMo/Automodel docs/performance-summary.md; the Llama row as at 2013a4dd6, the MoE rows as at
8d9bfb90e and unchanged since) prints per row: model, GPUs, GBS, MBS, LBS, GA, sequence, TP, PP, CP, EP, VP, FSDP,
kernels, time per global step, model TFLOP/s/GPU and tokens/s/GPU.
"""

import json
from pathlib import Path

import pytest

from symcomm.derivations import bridge_runs, modern

FILE = "automodel_runs.json"
RUNS = bridge_runs.load(FILE)["runs"]

#: the typed rows as printed: model, GPUs, GBS, MBS, LBS, GA, seq, TP, PP, CP, EP, VP, FSDP, time (s), TFLOP/s, tokens/s
PRINTED = [
    ("Llama3 70B", 64, 128, 1, 1, 4, 8192, 1, 1, 2, None, None, 32, 18.90, 389, 866.77),
    ("DeepSeek V3 671B", 256, 512, 1, 8, 1, 4096, 1, 4, 1, 64, 8, 64, 8.18, 250, 1002),
    ("DeepSeek V3 671B", 1024, 8192, 1, 8, 4, 4096, 1, 4, 1, 64, 8, 256, 37.87, 216, 865),
    ("Qwen3 MoE 30B", 8, 512, 4, 4, 16, 4096, 1, 1, 1, 8, None, 8, 21.773, 277, 12040),
]


def test_one_check_run_per_typed_row():
    assert len(RUNS) == len(PRINTED)
    for run, (name, gpus, gbs, mbs, lbs, ga, seq, tp, pp, cp, ep, vp, fsdp, step, tflops, tokens) in zip(RUNS, PRINTED):
        assert run["row"].startswith(name + " | ")
        assert (run["gpus"], run["global_batch"], run["micro_batch"], run["seq"]) == (gpus, gbs, mbs, seq)
        assert (run["t"], run["p"], run["c"], run["e"], run["v"], run["d"]) == (tp, pp, cp, ep or 1, vp or 1, fsdp)
        # the local batch is GA micro-steps' worth of the data-parallel rank's share: GBS = LBS · GA · FSDP
        assert gbs == lbs * ga * fsdp
        assert run["step_time_s"] == pytest.approx(step, rel=1e-3)
        assert (run["model_tflops_per_gpu"], run["tokens_per_s_per_gpu"]) == (tflops, tokens)
        assert run["role"] == "check" and run["hardware"] == "h100" and run["precision"] == "bf16"


@pytest.mark.parametrize("run", RUNS, ids=lambda r: r["id"])
def test_run_is_valid(run):
    assert bridge_runs.validate(run) == []


@pytest.mark.parametrize("index, d, m", [
    # by hand: d = GPUs/(t·p·c); m = GBS/(d·MBS)
    (0, 32, 4),        # 64/(1·1·2) = 32; 128/(32·1) = 4, the table's GA 4
    (1, 64, 8),        # 256/(1·4·1) = 64; 512/(64·1) = 8, LBS 8 of MBS 1
    (3, 8, 16),        # 8/1 = 8; 512/(8·4) = 16, the table's GA 16
])
def test_derived_numbers_by_hand(index, d, m):
    run = RUNS[index]
    words = dict(w.split("=", 1) for w in modern.words(run))
    assert (words["d"], words["m"], words["b"]) == (str(d), str(m), str(run["global_batch"]))


def _forward_flops_per_token(model: dict, seq: int) -> float:
    """Our own count of one token's forward FLOPs (2 per multiply-add): every matmul's weights once (the attention's
    projections, MLA's low-rank ones where the model has them, the dense or the k routed and shared experts' gated
    MLP, the router, the LM head) and the causal attention core at half the s × s scores and their product with V."""
    h, layers, heads = model["hidden"], model["layers"], model["heads"]
    if "kv_lora_rank" in model:
        qk = model["qk_nope_head_dim"] + model["qk_rope_head_dim"]
        v = model["v_head_dim"]
        attention = (h * model["q_lora_rank"] + model["q_lora_rank"] * heads * qk
                     + h * (model["kv_lora_rank"] + model["qk_rope_head_dim"])
                     + model["kv_lora_rank"] * heads * (model["qk_nope_head_dim"] + v) + heads * v * h)
    else:
        qk = v = model["head_dim"]
        attention = 2 * h * heads * qk + 2 * h * model["kv_heads"] * qk
    core = 2 * seq * heads * (qk + v) / 2          # QKᵀ and PV per token, the causal half
    if "experts" in model:
        moe_layers = model["moe_layers"]
        experts = 3 * h * model["moe_ffn"] * (model["top_k"] + model["shared_experts"]) + h * model["experts"]
        mlp = moe_layers * experts + (layers - moe_layers) * 3 * h * model["ffn"]
    else:
        mlp = layers * 3 * h * model["ffn"]
    return 2 * (layers * attention + mlp + h * model["vocab"]) + layers * core


@pytest.mark.parametrize("run", RUNS, ids=lambda r: r["id"])
def test_printed_flop_rate_follows_from_the_tokens_and_the_typed_shape(run):
    # training = 3 forwards (the backward twice the forward), no recompute: the printed TFLOP/s is a whole number
    # (±0.5) of 216-389, so the shape typed here is the one AutoModel counted to within 0.5 %
    tflops = 3 * _forward_flops_per_token(run["model"], run["seq"]) * run["tokens_per_s_per_gpu"] / 1e12
    assert tflops == pytest.approx(run["model_tflops_per_gpu"], rel=5e-3)


@pytest.mark.parametrize("run", [r for r in RUNS if "experts" in r["model"]], ids=lambda r: r["id"])
def test_the_fake_balanced_gate_is_one_group_of_k_contiguous_experts(run):
    """FakeBalancedGate.forward (nemo_automodel/components/moe/layers.py at 8d9bfb90e): token i's experts are
    arange(N·k).view(N, k) % E, i.e. i·k + j mod E for j < k.  Counted here over two full cycles of tokens: every
    token's k experts lie in one block of k contiguous experts, and the blocks used are all E/k of them, evenly:
    group-limited routing with E/k groups, one chosen per token, as the row's words type it."""
    experts, k = run["model"]["experts"], run["model"]["top_k"]
    groups = experts // k
    used = []
    for token in range(2 * groups):
        chosen = {(token * k + j) % experts for j in range(k)}
        assert len({e // k for e in chosen}) == 1 and len(chosen) == k
        used.append(next(iter(chosen)) // k)
    assert sorted(used) == sorted(list(range(groups)) * 2)
    words = dict(w.split("=", 1) for w in modern.words(run))
    assert (words["router_groups"], words["router_group_topk"], words["dispatcher"]) == (str(groups), "1", "deepep")


def test_words_follow_each_recipe():
    llama, deepseek, _, qwen = (dict(w.split("=", 1) for w in modern.words(r)) for r in RUNS)
    # Llama: SDPA limited to flash and efficient under context parallelism, compiled layers, bf16 reduction, a
    # reduce-scatter after every micro-batch (defer_fsdp_grad_sync False)
    assert (llama["framework"], llama["attention_kernel"], llama["cp"], llama["compile"]) == ("fsdp2", "fa2",
                                                                                               "ring_flash_attn", "1")
    assert (llama["grad_dtype"], llama["grad_reduce"]) == ("same", "per_micro_batch")
    # MaskedCrossEntropy's default fp32_upcast, outside the compiled layers: the eager loss, typed (fsdp2 under
    # compile=1 takes torchtitan's compiled one otherwise)
    assert llama["loss"] == "eager"
    # the MoE rows: Transformer Engine's attention (cuDNN's on H100), fp32 reduction, bf16 parameters and Adam state
    for words in (deepseek, qwen):
        assert (words["attention_kernel"], words["grad_dtype"], words["adam_dtype"]) == ("cudnn", "fp32", "bf16")
        # MaskedCrossEntropy with fp32_upcast false, the model's output kept through the backward
        assert words["loss"] == "eager_bf16"
        assert words["reshard_after_forward"] == "0"
    # under pipeline parallelism AutoModel syncs gradients in the last backward only
    assert (deepseek["grad_reduce"], deepseek["schedule"], deepseek["v"]) == ("per_step", "interleaved", "8")
    assert qwen["grad_reduce"] == "per_micro_batch"


def test_each_row_in_scope_is_checked_at_what_its_command_gives():
    # step_fit.json's h100 check rows (written by python -m symcomm.derivations.fit_step_time) hold each row in scope at
    # the step time its words evaluate to now: no stale stored number, and the framework and source it is grouped by
    stored = json.loads((Path(modern.__file__).parent / "data" / "step_fit.json").read_text(encoding="utf-8"))
    checked = {r["id"]: r for r in stored["checks"]["h100"]["runs"]}
    in_scope = [r for r in RUNS if modern.out_of_scope(r) is None]
    assert len(in_scope) == 4
    for run in in_scope:
        step = float(modern.inputs(run, fitting=False).quantities()["step_time"])
        row = checked[run["id"]]
        assert row["predicted_s"] == pytest.approx(step, rel=1e-5)
        assert row["error"] == pytest.approx(step / run["step_time_s"] - 1, rel=1e-4)
        assert (row["framework"], row["framework_option"]) == ("AutoModel (FSDP2)", "fsdp2")
        assert row["source"] == modern.source_of(run) == f"nemo-automodel {run['release']}"


def test_a_step_of_several_pipeline_schedules_is_typed_as_it_runs():
    # DeepSeek-V3 on 1,024 GPUs: GA 4 calls of an 8-micro-batch schedule (benchmark.py's loop), four fill-and-drains:
    # the row's words say so (ga_schedules=1 n_ga=4) over its 32 micro-batches a step (8192/(256 replicas · MBS 1))
    run = RUNS[2]
    assert run["schedules_per_step"] == 4
    words = modern.words(run)
    assert {"ga_schedules=1", "n_ga=4", "m=32"} <= set(words)
    assert all(modern.out_of_scope(r) is None for r in RUNS)
    assert not any(word.startswith(("ga_schedules", "n_ga")) for r in RUNS if r is not run for word in modern.words(r))


def test_the_typed_pipeline_split_is_said_to_be_an_approximation():
    said = modern.approximations(RUNS[1])
    assert any("first 29 chunks" in line for line in said)


def test_rows_are_in_the_modern_check_runs():
    ids = {r["id"] for r in modern.runs("check")}
    assert {r["id"] for r in RUNS} <= ids
    assert FILE in modern.FILES


@pytest.mark.parametrize("field, value, said", [
    ("grad_reduce", "sometimes", "grad_reduce 'sometimes' is not one of per_step, per_micro_batch"),
    ("compile", 1, "compile must be true or false, not 1"),
    ("loss", "fused", "loss 'fused' is not one of vocab_parallel, te_fused, eager, compiled, eager_bf16"),
    ("schedules_per_step", 3, "schedules_per_step must be a positive integer dividing the micro-batches per step"),
])
def test_a_bad_optional_field_is_named(field, value, said):
    run = dict(RUNS[3], **{field: value})     # 16 micro-batches: 3 does not divide them
    problems = bridge_runs.validate(run)
    assert len(problems) == 1 and said in problems[0]
