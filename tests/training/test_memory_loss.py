"""The cross-entropy's buffers and FSDP2's shards (symcomm/training/memory.py: loss_bytes_per_logit,
loss_or_recompute, sharded_weight_bytes), each counted by hand from the tensors the sources allocate."""

import pytest

from symcomm.base.errors import InputError
from symcomm.derivations import modern
from symcomm.training import settings, steptime

from conftest import symcomm_command

NO_COMM = {"alpha": 0.0, "beta": 0.0, "gamma": 0.0, "alpha_inter": 0.0, "beta_inter": 0.0, "G": 8}
# b = 2 sequences of s = 32 tokens on d = m = c = 1: 64 tokens in the micro-batch; V = 1000
TINY = {**NO_COMM, "h": 64, "L": 4, "a": 4, "h_kv": 64, "F": 256, "V": 1000, "s": 32, "Phi": 10**6, "e": 1, "v": 1,
        "d": 1, "c": 1, "b": 2, "m": 1, "peak": 1e12, "eta": 1.0, "kappa": 0.0, "hbm": 1e30}
PLAIN = {"embeddings": "1", "gqa": "1", "gated": "0", "flash": "1", "grad_dtype": "same"}
FSDP2 = {**PLAIN, "framework": "fsdp2", "zero": "3"}
MEGATRON = {**PLAIN, "framework": "megatron", "zero": "1"}


@pytest.mark.parametrize("options, t, p, per_logit", [
    # Megatron-LM megatron/core/tensor_parallel/cross_entropy.py: the bf16 logits (2) and the fp32 copy it
    # exponentiates in place and saves for the backward (4)
    (MEGATRON, 2, 1, 6),
    # torchtitan train.py@9dec370a: F.cross_entropy(pred.float()), del pred, eager.  The backward's peak: the
    # log-softmax _log_softmax saves (4, derivatives.yaml), the zeroed gradient nll_loss_backward writes (4) and the
    # new tensor _log_softmax_backward_data writes (4); the forward's 2 + 4 + 4 = 10 is below it
    (FSDP2, 1, 1, 12),
    # the setting overrides the framework's own loss
    ({**MEGATRON, "loss": "eager"}, 1, 1, 12),
    # t > 1, torch/distributed/tensor/parallel/loss.py: _nll_loss_and_log_softmax_backward holds the saved
    # log-softmax (4), zeros_like (4), exp(x) (4) and their sum (4) at once
    (FSDP2, 2, 1, 16),
    # p > 1, pp_outputs=kept: torch/distributed/pipelining/stage.py keeps the last stage's bf16 output of every
    # micro-batch (output_chunks, merged after the step): m = 2 of them, 2 bytes each, beside the 12: 16
    ({**FSDP2, "pp_outputs": "kept"}, 1, 2, 16),
    # p > 1, freed (schedule.step(return_outputs=False), torchtitan since e5ef99aa): the stage still holds the
    # micro-batch's own output in fwd_cache until its backward, where the unpipelined loop's ``del pred`` freed it:
    # one output, 2 bytes, beside the 12: 14
    (FSDP2, 1, 2, 14),
    # torch.compile'd loss: the bf16 logits the graph saves (2) and the bf16 gradient its backward writes (2)
    ({**FSDP2, "loss": "compiled"}, 1, 1, 4),
    # compile=1 with no loss given: torchtitan compiles the loss with the model (its compile components default to
    # model and loss; torchtitan/components/loss.py, BaseLoss._maybe_compile): the same 4
    ({**FSDP2, "compile": "1"}, 1, 1, 4),
    # NeMo AutoModel's MaskedCrossEntropy with fp32_upcast false (masked_ce.py at 8d9bfb90e): F.cross_entropy of the
    # bf16 logits, which the recipe keeps (2, train_ft.py's ``out``); the backward holds the saved bf16 log-softmax
    # (2), nll_loss_backward's zeroed bf16 gradient (2) and the log-softmax backward's bf16 output (2): 8
    ({**FSDP2, "loss": "eager_bf16"}, 1, 1, 8),
    # t = 2: the vocabulary-sharded output (AutoModel's lm_head ColwiseParallel(output_layouts=Shard(-1),
    # use_local_output=False)) gathered whole by full_tensor(): the kept shard 2 bytes per entry of V/2, and the
    # three bf16 tensors of the backward over all V = 2 · (V/2) entries, 3 · 2 · 2 = 12 per entry of V/2: 14
    ({**FSDP2, "loss": "eager_bf16"}, 2, 1, 14),
    # p = 2, kept: the 8 already hold one bf16 output (the caller's ``out``, under a pipeline the stage's); the
    # stage keeps the other m - 1 = 1 micro-batch's too, 2 bytes: 10
    ({**FSDP2, "loss": "eager_bf16", "pp_outputs": "kept"}, 1, 2, 10),
    # p = 2, freed: only the micro-batch's own output, which the 8 count: 8
    ({**FSDP2, "loss": "eager_bf16"}, 1, 2, 8),
    # KempnerForge (tensor_parallel.py at 3ad9d9a: the output head ColwiseParallel(output_layouts=Replicate())): at
    # t = 2 each rank holds the whole bf16 logits the head returns, which train.py keeps (its ``logits``) beside the
    # saved log-softmax, the zeroed gradient and the log-softmax backward's output, four tensors of all V = 2 · (V/2)
    # entries: 4 · 2 · 2 = 16 per entry of V/2
    ({**FSDP2, "loss": "replicated_bf16"}, 2, 1, 16),
    # at t = 1 nothing is gathered: the same 8 as eager_bf16
    ({**FSDP2, "loss": "replicated_bf16"}, 1, 1, 8),
    # p = 2, t = 2, kept: the stage keeps the other micro-batch's whole logits too, 2 bytes for all V = 2 · (V/2)
    # entries, 4 per entry of V/2, beside the 16: 20
    ({**FSDP2, "loss": "replicated_bf16", "pp_outputs": "kept"}, 2, 2, 20),
    # flash-attn's CrossEntropyLoss (LLM Foundry's MPT, Composer keeping the model's outputs): the bf16 logits its
    # autograd function saves (2) and the bf16 gradient its backward allocates (2, inplace_backward off): 4, whichever
    # build (the CUDA extension of flash-attn 1.x, the Triton kernels of 2.4)
    ({**PLAIN, "framework": "fsdp", "zero": "3", "loss": "xentropy_cuda"}, 1, 1, 4),
    ({**PLAIN, "framework": "fsdp", "zero": "3", "loss": "xentropy_triton"}, 2, 1, 4),
])
def test_the_loss_buffers_per_token_and_vocabulary_entry(options, t, p, per_logit):
    values = {**TINY, "t": t, "p": p}
    if p == 2:
        values.update(m=2, b=4)      # still 2 sequences a micro-batch: b/(d·m) = 2
    q = steptime.quantities(values, 2, **options)
    tokens = 2 * 32                  # the micro-batch's sequences × s/c
    assert float(q["memory_logits"]) == per_logit * tokens * 1000 / t


def test_the_8b_context_parallel_rows_loss_by_hand():
    # torchtitan's 2024-12 Table 2 (Llama 3.1 8B, local batch 1 of 32,768 tokens a GPU, eager loss, t = 1):
    # 12 bytes × 32,768 tokens × 128,256 vocabulary entries = 50,432,311,296 bytes (32,768 · 128,256 =
    # 4,202,692,608), 46.97 GiB, where the Megatron-LM count of 6 bytes gave half
    values = {**NO_COMM, "h": 4096, "L": 32, "a": 32, "h_kv": 1024, "F": 14336, "V": 128256, "s": 32768,
              "Phi": 8.03e9, "e": 1, "v": 1, "t": 1, "p": 1, "d": 8, "c": 1, "b": 8, "m": 1, "peak": 1e15,
              "eta": 1.0, "kappa": 0.0, "hbm": 1e30}
    # the rows ran their blocks under torch.compile (the table's "torch.compile"), the loss eagerly: typed, as fsdp2
    # under compile=1 takes the compiled loss of torchtitan's later commits otherwise
    q = steptime.quantities(values, 2, **{**FSDP2, "gated": "1", "recompute": "full", "compile": "1",
                                          "loss": "eager"})
    assert float(q["memory_logits"]) == 50_432_311_296
    # with them the LM head's kept inputs (torchtitan's final RMSNorm: fp32 x, 4h, and the bf16 normalised x, 2h;
    # the output projection's bf16 input, 2h): 8·4096 bytes × 32,768 tokens = 1,073,741,824
    assert float(q["memory_head_inputs"]) == 8 * 4096 * 32768
    # the backward side: the recompute working set (one compiled layer as no recompute keeps it: Korthikanti's 34·h a
    # token with the MLP at its own width, his 16h of GeLU MLP tensors given way to the gated MLP's 2F-wide FC1 output
    # and F-wide FC2 input at 2 bytes, 6F: (18h + 6F)·s bytes at t = 1, 5.23 GB) and the LM head's bf16 weight gradient
    # FSDP2's root holds to the end of the backward (2·V·h = 1,050,673,152) are smaller, and never live with the
    # loss's buffers: the peak counts the loss side alone
    assert float(q["memory_recompute"]) == (18 * 4096 + 6 * 14336) * 32768
    assert float(q["memory_head_gradient"]) == 2 * 128256 * 4096
    loss_side = 50_432_311_296 + 1_073_741_824
    others = sum(float(x) for k, x in q.items()
                 if k.startswith("memory_") and k not in ("memory_per_gpu", "memory_logits", "memory_recompute",
                                                          "memory_head_inputs", "memory_head_gradient"))
    assert float(q["memory_per_gpu"]) == pytest.approx(others + loss_side, rel=1e-12)


@pytest.mark.parametrize("vocab, larger", [(1000, "logits"), (100, "recompute")])
def test_the_peak_holds_the_larger_of_the_loss_buffers_and_the_recompute_working_set(vocab, larger):
    # full recompute, t = 2, no SP: the working set is one layer as no recompute keeps it, Korthikanti et al.
    # 2022 Table 2 with flash: s·b·h(10 + 24/t) = 32·2·64·22 = 90,112 bytes; the logits 6 × 64 tokens × V/2:
    # 192,000 bytes with V = 1000, 19,200 with V = 100
    q = steptime.quantities({**TINY, "t": 2, "p": 1, "V": vocab}, 2, **{**MEGATRON, "recompute": "full"})
    assert float(q["memory_recompute"]) == 90_112
    assert float(q["memory_logits"]) == 6 * 64 * vocab / 2
    others = sum(float(x) for k, x in q.items()
                 if k.startswith("memory_") and k not in ("memory_per_gpu", "memory_logits", "memory_recompute"))
    assert float(q["memory_per_gpu"]) == pytest.approx(others + float(q[f"memory_{larger}"]), rel=1e-12)


def test_an_uneven_splits_last_stage_holds_the_larger_too():
    # p = 2, first_last split with 2 layers each: the last stage's total is its parts with the logits and the
    # working set as the larger of the two (here the logits: 6 × 64 × 1000/1 = 384,000 > 34·32·2·64 = 139,264)
    values = {**TINY, "t": 1, "p": 2, "m": 2, "b": 4, "L_first": 2, "L_last": 2}
    q = steptime.quantities(values, 2, **{**MEGATRON, "zero": "0", "recompute": "full", "pipeline_split": "first_last"})
    parts = {k[len("stage_bytes_"):-len("_last")]: float(x) for k, x in q.items()
             if k.startswith("stage_bytes_") and k.endswith("_last") and k != "stage_bytes_last"}
    assert parts["logits"] == 384_000 and parts["recompute"] == 139_264
    rest = sum(x for k, x in parts.items() if k not in ("logits", "recompute"))
    assert float(q["stage_bytes_last"]) == pytest.approx(rest + 384_000, rel=1e-12)


def test_fsdp2_keeps_no_16_bit_shard_but_megatron_does():
    # d = 4, Φ = 10⁶: Megatron's distributed optimizer keeps the bf16 weights whole (2 bytes × 10⁶); FSDP2 keeps
    # the fp32 sharded parameter as the optimizer's master (Adam's 12 bytes over 4 ranks) and no bf16 shard
    # (torch/distributed/fsdp/_fully_shard/_fsdp_param.py: all_gather_inputs casts the shard per all-gather)
    values = {**TINY, "t": 1, "p": 1, "d": 4, "b": 8}
    fsdp2 = steptime.quantities(values, 2, **{**FSDP2, "embeddings": "0"})
    megatron = steptime.quantities(values, 2, **{**MEGATRON, "embeddings": "0"})
    assert float(fsdp2["memory_weights"]) == 0 and float(fsdp2["memory_optimizer"]) == 12 * 10**6 / 4
    assert float(megatron["memory_weights"]) == 2 * 10**6


def test_fsdp1_keeps_no_16_bit_shard_but_deepspeed_zero3_does():
    # d = 4, Φ = 10⁶, ZeRO-3 both: PyTorch FSDP1's FlatParameter shard is the fp32 master, its 16-bit copy allocated
    # before each all-gather and freed after it (torch/distributed/fsdp/_flat_param.py: _use_low_precision_shard,
    # _free_low_precision_sharded_param); DeepSpeed's stage 3 keeps each parameter's 16-bit partition (ds_tensor)
    # beside the optimizer's fp32 one: 2 bytes × 10⁶ / 4
    values = {**TINY, "t": 1, "p": 1, "d": 4, "b": 8}
    fsdp1 = steptime.quantities(values, 2, **{**PLAIN, "framework": "fsdp", "zero": "3", "embeddings": "0"})
    deepspeed = steptime.quantities(values, 2, **{**PLAIN, "framework": "deepspeed", "zero": "3", "embeddings": "0"})
    assert float(fsdp1["memory_weights"]) == 0 and float(fsdp1["memory_optimizer"]) == 12 * 10**6 / 4
    assert float(deepspeed["memory_weights"]) == 2 * 10**6 / 4
    # and its reduction bucket beside them, as at ZeRO-1/2: reduce_bucket_size 5·10⁸ elements (zero/config.py) in
    # bf16, allocated once with contiguous_gradients (stage3.py: the IPG bucket's buffer); none under FSDP1
    assert float(deepspeed["memory_dp_buckets"]) == 2 * 5 * 10**8
    assert "memory_dp_buckets" not in fsdp1 or float(fsdp1["memory_dp_buckets"]) == 0


def test_the_loss_setting_refuses_another_value_naming_its_choices():
    with pytest.raises(InputError, match=r"loss=fused is not allowed; choose .*eager.*compiled"):
        settings.parse({"loss": "fused"})


def test_kept_pipeline_outputs_are_refused_where_no_torch_pipelining_runs():
    # Megatron-LM's schedules (megatron/core/pipeline_parallel/schedules.py) free the last stage's output after its
    # loss; only torch.distributed.pipelining's step() keeps them (return_outputs=True)
    with pytest.raises(InputError, match=r"pp_outputs=kept: only framework=fsdp2 .*framework=megatron"):
        settings.parse({"pp_outputs": "kept", "framework": "megatron"})
    with pytest.raises(InputError, match=r"pp_outputs=all is not allowed; choose freed or kept"):
        settings.parse({"pp_outputs": "all", "framework": "fsdp2"})


def test_the_pipelined_check_rows_keep_their_outputs_as_their_pytorch_did():
    # the 2024-12 torchtitan tables ran PyTorch 1963fc8 (2024-12-23), before step(return_outputs=...) existed, so the
    # last stage kept every micro-batch's output; a p = 1 row has no pipeline and says nothing
    runs = {r["id"]: r for r in modern.runs("check")}
    assert "pp_outputs=kept" in modern.words(runs["torchtitan-2024-12-h100-llama3.1-405b-fsdp8-tp8-pp8-1f1b-fp8-cs-t5"])
    assert "pp_outputs=kept" in modern.words(runs["automodel-2025-10-h100-deepseek-v3-pp4-vp8-ep64-fsdp64-bf16"])
    assert not any(w.startswith("pp_outputs=")
                   for w in modern.words(runs["torchtitan-2024-12-h100-llama3.1-8b-fsdp-compile-bf16-t1"]))


def test_torchtitan_runs_compile_their_loss_only_where_the_commit_does():
    # 9dec370a (the 2024-12 tables): train.py's torch.compile of loss_fn is commented out, so even the
    # "FSDP + torch.compile" rows run the loss eager; e7c0cae9 (the H200 table): components/loss.py compiles it
    # with training.compile
    runs = {r["id"]: r for r in modern.runs("check")}
    eager = modern.words(runs["torchtitan-2024-12-h100-llama3.1-8b-fsdp-compile-bf16-t1"])
    compiled = modern.words(runs["torchtitan-2025-06-h200-llama3.1-8b-fsdp32-compile-fp8-cs-trainy-4n"])
    assert "loss=eager" in eager        # typed: fsdp2 under compile=1 takes the compiled loss otherwise
    assert "loss=compiled" in compiled


def test_eval_says_only_the_larger_of_logits_and_recompute_counts():
    words = ["--hardware", "h100", "h=64", "L=4", "a=4", "h_kv=64", "F=256", "V=1000", "s=32", "t=1", "p=1", "d=1",
             "c=1", "b=2", "m=1", "Phi=1e6", "embeddings=1", "gated=0"]

    def memory_line(recompute):
        run = symcomm_command("eval", "hybrid", *words, f"recompute={recompute}")
        assert run.returncode == 0, run.stderr
        out = run.stdout
        return next(x for x in out.splitlines() if x.strip().startswith("memory/GPU"))
    # full recompute: logits (6 × 64 × 1000 = 375 KiB) and the working set (34·32·2·64 = 136 KiB) both shown
    assert memory_line("full").endswith("; of logits and recompute only the larger counts)")
    assert "only the larger" not in memory_line("none")      # no working set: nothing to say


def test_eval_names_both_sides_under_fsdp2():
    # fsdp2 adds the LM head's kept inputs to the loss side and its gradient to the backward side
    # (memory.LOSS_SIDE, memory.BACKWARD_SIDE): the line names both sums
    words = ["--hardware", "h100", "h=64", "L=4", "a=4", "h_kv=64", "F=256", "V=1000", "s=32", "t=1", "p=1", "d=1",
             "c=1", "b=2", "m=1", "Phi=1e6", "embeddings=1", "gated=0", "framework=fsdp2", "zero=3",
             "recompute=full"]
    run = symcomm_command("eval", "hybrid", *words)
    assert run.returncode == 0, run.stderr
    out = run.stdout
    line = next(x for x in out.splitlines() if x.strip().startswith("memory/GPU"))
    assert line.endswith("; of logits + head_inputs and recompute + head_gradient only the larger counts)")


@pytest.mark.parametrize("framework, zero, grad_dtype, adam_dtype, shard_bytes", [
    # FSDP2 casts the reduce-scatter's output to the sharded parameter's dtype (_fsdp_collectives.py foreach_reduce,
    # orig_dtype): the fp32 master's 4 bytes whether the reduction ran in bf16 or fp32
    ("fsdp2", "3", "same", "fp32", 4), ("fsdp2", "3", "fp32", "fp32", 4),
    # a model cast to bf16 (adam_dtype=bf16: KempnerForge's, AutoModel's MoE) keeps bf16 shards: 2
    ("fsdp2", "3", "fp32", "bf16", 2),
    # FSDP1 alike (_runtime_utils.py _cast_grad_to_param_dtype)
    ("fsdp", "3", "same", "fp32", 4),
])
def test_a_gradient_shard_is_the_sharded_parameters_type(framework, zero, grad_dtype, adam_dtype, shard_bytes):
    # Φ = 10^6 parameters over d = 4 ranks, every micro-batch reduced (m = 1): the shard holds Φ/4 gradients
    values = {**TINY, "t": 1, "p": 1, "d": 4, "b": 8}
    options = {**PLAIN, "framework": framework, "zero": zero, "grad_dtype": grad_dtype, "adam_dtype": adam_dtype}
    q = steptime.quantities(values, 2, **options)
    assert float(q["memory_gradients"]) == pytest.approx(shard_bytes * 10 ** 6 / 4, rel=1e-12)
