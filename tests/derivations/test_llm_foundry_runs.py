"""LLM Foundry's MPT throughput tables (derivations/data/llm_foundry_runs.json): each row against the table as printed,
its step time made here by hand, and the words it is evaluated by.

The tables (mosaicml/llm-foundry scripts/train/benchmarking/README.md at 49521837) print per row: model, sequence
length, GPUs, GPU, MFU, HFU, (model TFLOP,) micro-batch size, gradient accumulation, global batch, throughput in
sequences/s, tokens/s and tokens/s/GPU, tokens per batch, precision, FSDP mixed-precision mode, sharding strategy,
activation checkpointing, CPU offload and parameter count.
"""

from symcomm.derivations import bridge_runs, modern

FILE = "llm_foundry_runs.json"
RUNS = bridge_runs.load(FILE)["runs"]
BY_ID = {r["id"]: r for r in RUNS}


def test_one_check_run_per_printed_row_of_the_tables_typed():
    # rows counted in the README at 49521837: the large-scale H100 BF16 table 18 (1b, 3b, 7b, 13b, 30b, 70b at 128,
    # 256 and 512 GPUs), the H100 BF16 table 52, the H100 FP8 table 7, the A100 80GB table 61, the A100 40GB table 78;
    # the A100 80GB table as b2a43a14 (2023-10) left it: 59 rows run again by its sweep (amp_bf16 DEFAULT, where the
    # rows of b2a43a14~1 print bf16 PURE) and the two 70b rows as 2023-05 printed them (the same values there)
    count = {}
    for r in RUNS:
        key = (r["hardware"], r["release"], r["precision"])
        count[key] = count.get(key, 0) + 1
    assert count == {("h100", "2024-01", "bf16"): 18, ("h100", "2023-10", "bf16"): 52, ("h100", "2023-10", "fp8-ds"): 7,
                     ("a100", "2023-10", "bf16"): 59,
                     ("a100", "2023-05", "bf16"): 2, ("a100-40gb", "2023-05", "bf16"): 78}
    assert all(r["role"] == "check" for r in RUNS) and len(BY_ID) == len(RUNS)
    assert [problem for r in RUNS for problem in bridge_runs.validate(r)] == []


def test_a_row_as_printed_and_its_step_time_by_hand():
    # H100 80GB BF16: "7b | 2048 | 8 | h100_80gb | 46.44 | 46.44 | … | 6 | 1 | 48 | 41 | 85144 | 10643 | 98304 |
    # amp_bf16 | DEFAULT | FULL_SHARD | False | False | 6658859008": one step is 48 sequences of 2048 tokens over
    # 8 GPUs at 10,643 tokens/s each: 48·2048/(10643·8) = 1.15456 s
    run = BY_ID["llm-foundry-2023-10-h100-mpt-7b-s2048-g8-mb6-bf16"]
    assert (run["global_batch"], run["micro_batch"], run["gpus"], run["tokens_per_s_per_gpu"]) == (48, 6, 8, 10643)
    assert abs(run["step_time_s"] / 1.15456 - 1) < 5e-4       # stored at 4 significant digits, as every run file
    assert run["recompute"] == "none" and run["sharding"] == "FULL_SHARD" and run["mixed_precision"] == "DEFAULT"
    # mpt-7b.yaml: d_model 4096, n_heads 32, n_layers 32, expansion_ratio 4, vocab 50368
    m = run["model"]
    assert (m["hidden"], m["heads"], m["layers"], m["ffn"], m["vocab"], m["tied"], m["gated_mlp"]) == \
        (4096, 32, 32, 16384, 50368, True, False)


def test_the_words_say_how_composer_ran_fsdp():
    words = dict(w.split("=", 1) for w in modern.words(BY_ID["llm-foundry-2023-10-h100-mpt-7b-s2048-g8-mb6-bf16"]))
    # FULL_SHARD: gathered for the forward and again for the backward; DEFAULT: gradients reduced in fp32; the
    # 2023-10 sweep passes no attn_impl, so submit_benchmarks.py's default, MPT's Triton port
    assert (words["framework"], words["zero"], words["reshard_after_forward"], words["grad_dtype"],
            words["attention_kernel"]) == ("fsdp", "3", "1", "fp32", "triton")
    # the large-scale table's 1b runs SHARD_GRAD_OP (gathered once per micro-batch)
    grad_op = dict(w.split("=", 1) for w in modern.words(BY_ID["llm-foundry-2024-01-h100-large-mpt-1b-s2048-g128-mb12-bf16"]))
    assert grad_op["reshard_after_forward"] == "0"
    # its sweep (sweep.py at 5e85bd62) runs attn_impl flash, FlashAttention-2 (the gpu-flash2 extra), for 1b
    assert grad_op["attention_kernel"] == "fa2"
    # A100's rows, both sweeps: submit_benchmarks.py's default, attn_impl triton
    a100 = dict(w.split("=", 1) for w in modern.words(BY_ID["llm-foundry-2023-05-a100-mpt-70b-s2048-g64-mb8-bf16"]))
    assert a100["attention_kernel"] == "triton" and a100["grad_dtype"] == "same"    # the 70b rows print PURE


def test_the_words_name_the_fused_loss_mpt_runs_by_default():
    # MPT's loss_fn (MosaicGPT's before it) defaults to fused_crossentropy, flash-attn's CrossEntropyLoss, and raises
    # where it cannot import it (mosaicml/examples examples/llm/src/models/mosaic_gpt/mosaic_gpt.py at v0.0.4, whose
    # sweep at 9fa3ceb9 produced the 2023-05 rows; llmfoundry/models/mpt/modeling_mpt.py at b2a43a14, 5e85bd62); the
    # sweeps install it with the llm extra (flash-attn 0.2.8) or the gpu extra (1.0.9), with their CUDA xentropy
    # extension, and from 2024-01 the gpu-flash2 extra (flash-attn 2.4.2, whose CrossEntropyLoss runs Triton kernels);
    # no model yaml of theirs sets loss_fn
    kinds = {release: {dict(w.split("=", 1) for w in modern.words(r))["loss"] for r in RUNS if r["release"] == release}
             for release in ("2023-05", "2023-10", "2024-01")}
    assert kinds == {"2023-05": {"xentropy_cuda"}, "2023-10": {"xentropy_cuda"}, "2024-01": {"xentropy_triton"}}


def test_every_row_evaluates_as_its_command():
    for hardware in ("a100", "a100-40gb", "h100"):
        evaluated, refused = modern.measured_runs(hardware, "check")
        ours = [run for run in evaluated if run.id.startswith("llm-foundry")]
        assert refused == {} and ours
        assert all(run.framework == "LLM Foundry (FSDP)" for run in ours)
