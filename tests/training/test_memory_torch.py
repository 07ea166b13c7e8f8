"""PyTorch's own buffers under the fsdp2 framework (symcomm/training/torchmem.py, wired in memory.py), each expected
value counted by hand from the tensors the cited sources allocate (2 bytes per bf16 element, 4 per fp32), not from
the code under test."""

import pytest

import symcomm
from symcomm.training import steptime

NO_COMM = {"alpha": 0.0, "beta": 0.0, "gamma": 0.0, "alpha_inter": 0.0, "beta_inter": 0.0, "G": 8}
# b = 2 sequences of s = 32 tokens on d = m = c = 1: 64 tokens in the micro-batch; V = 1000, h = 64, L = 4;
# Phi = 10⁶ + the untied embedding and LM head 2·V·h = 128,000: each of the 4 layers holds 250,000 parameters
TINY = {**NO_COMM, "h": 64, "L": 4, "a": 4, "h_kv": 64, "F": 256, "V": 1000, "s": 32, "Phi": 1_128_000, "e": 1,
        "v": 1, "d": 1, "c": 1, "b": 2, "m": 1, "t": 1, "p": 1, "peak": 1e12, "eta": 1.0, "kappa": 0.0, "hbm": 1e30}
PLAIN = {"embeddings": "1", "gqa": "1", "gated": "0", "flash": "1", "tied": "0"}
FSDP2 = {**PLAIN, "framework": "fsdp2", "zero": "3", "grad_dtype": "fp32"}
MEGATRON = {**PLAIN, "framework": "megatron", "zero": "1", "grad_dtype": "same"}


def _memory(values, **options):
    return {k[len("memory_"):]: float(x) for k, x in steptime.quantities(values, 2, **options).items()
            if k.startswith("memory_") and k != "memory_per_gpu"}


@pytest.mark.parametrize("t", [1, 2])
def test_fsdp2s_root_and_lm_head_buffers_by_hand(t):
    parts = _memory({**TINY, "t": t}, **FSDP2)
    # FSDP2 leaves the root (torchtitan's: embedding, final norm, LM head) unsharded after the forward
    # (_fsdp_state.py, _lazy_init: post_forward_mesh_info = None): the V·h embedding and V·h head in bf16, over t
    assert parts["root_params"] == 2 * (1000 * 64 + 1000 * 64) / t
    # the LM head's bf16 weight gradient, freed only in the root's post-backward at the backward's end
    assert parts["head_gradient"] == 2 * 1000 * 64 / t
    # the final RMSNorm saves its fp32 input (4h) and bf16 normalised input (2h) on its sequence shard; the output
    # projection's ColwiseParallel all-gathers its input and saves it whole (2h): 64 tokens each
    assert parts["head_inputs"] == 64 * (2 * 64 + (4 + 2) * 64 / t)


def test_megatron_has_none_of_pytorchs_buffers():
    parts = _memory({**TINY, "t": 2}, **{**MEGATRON, "sp": "1"})
    assert not {"root_params", "head_gradient", "head_inputs", "pipeline_buffers"} & set(parts)


def test_fsdp2s_unit_gradients_are_a_16_bit_gradient_and_an_fp32_reduce_scatter_input():
    # per-layer ZeRO-3, one layer = (Phi − 2·V·h)/L = 250,000 parameters: the layer computing and the one
    # prefetched in bf16 (2·2 bytes each parameter); FSDP2's gradients: the layer computing's unsharded bf16
    # gradient (2) and the previous layer's reduce-scatter input in the fp32 reduce_dtype (4)
    # (_fsdp_collectives.py foreach_reduce: the bf16 gradients are freed after the copy-in)
    assert _memory(TINY, **FSDP2)["gathered_layers"] == (2 * 2 + 2 + 4) * 250_000
    # with a bf16 reduction, 2 + 2: what two bf16 gradients held also give
    assert _memory(TINY, **{**FSDP2, "grad_dtype": "same"})["gathered_layers"] == (2 * 2 + 2 + 2) * 250_000


def test_the_loss_side_and_the_backward_side_are_never_live_at_once():
    # t = 1, recompute=full: the loss side is the eager loss's 12 bytes × 64 tokens × V = 768,000 and the head's
    # inputs 64 · 8 · 64 = 32,768; the backward side the working set (one layer as no recompute keeps it, eagerly:
    # two norms' fp32 inputs and outputs 2·(4 + 2)h, the two linear inputs 2·2h, Q 2h, K and V repeated 2·2h, the
    # attention's output 2h and logsumexp 4a, the ungated MLP's activation input and output 2·2F: per token
    # 24·64 + 16 + 4·256 = 2,576 bytes, 164,864 for 64 tokens) and the head's gradient 2·V·h = 128,000; the peak
    # takes the larger
    q = steptime.quantities(TINY, 2, **{**FSDP2, "recompute": "full"})
    parts = {k[len("memory_"):]: float(x) for k, x in q.items() if k.startswith("memory_") and k != "memory_per_gpu"}
    assert parts["logits"] == 12 * 64 * 1000 and parts["recompute"] == 164_864
    rest = sum(x for k, x in parts.items() if k not in ("logits", "head_inputs", "recompute", "head_gradient"))
    assert float(q["memory_per_gpu"]) == pytest.approx(rest + 768_000 + 32_768, rel=1e-12)


def test_the_pipeline_stages_buffers_by_hand():
    # torch.distributed.pipelining, 1F1B on p = 4 stages, m = 8 micro-batches of 1 sequence of 32 tokens
    # (b = 8, d = 1), t = 1: one stage output is 2·32·64 = 4,096 bytes.  Every stage but the last allocates m
    # gradient receive buffers and keeps its in-flight micro-batches' outputs (fwd_cache); every stage but the
    # first allocates m activation receive buffers, of which its in-flight ones are its first layer's kept input.
    # In flight at rank r: min(p − r, m): 4 on the first, 3 on the busiest middle (rank 1), 1 on the last
    values = {**TINY, "p": 4, "m": 8, "b": 8, "L": 8, "Phi": 2_128_000, "L_first": 2, "L_last": 2}
    q = steptime.quantities(values, 2, **{**FSDP2, "reshard_after_forward": "0", "grad_reduce": "per_step",
                                          "pipeline_split": "first_last", "schedule": "1f1b"})
    one = 2 * 32 * 64
    assert float(q["stage_bytes_pipeline_buffers_first"]) == one * (8 + 4)
    assert float(q["stage_bytes_pipeline_buffers_middle"]) == one * ((8 + 3) + (8 - 3))
    assert float(q["stage_bytes_pipeline_buffers_last"]) == one * (8 - 1)


@pytest.mark.parametrize("outputs, held", [("kept", 4), ("freed", 1)])
def test_the_last_stage_keeps_every_micro_batchs_logits_or_its_own(outputs, held):
    # kept (step()'s return_outputs=True): the last stage appends each micro-batch's bf16 output to output_chunks,
    # merged after the step: at the last micro-batch's loss all m = 4 are held, 2 bytes each, beside the eager loss's
    # 12: 20 bytes × 32 tokens × V; freed (return_outputs=False): only the micro-batch's own, in fwd_cache until its
    # backward: 14
    values = {**TINY, "p": 2, "m": 4, "b": 4, "L_first": 2, "L_last": 2}
    q = steptime.quantities(values, 2, **{**FSDP2, "reshard_after_forward": "0", "grad_reduce": "per_step",
                                          "pipeline_split": "first_last", "pp_outputs": outputs})
    assert float(q["stage_bytes_logits_last"]) == (12 + 2 * held) * 32 * 1000


@pytest.mark.parametrize("options", [MEGATRON, {**FSDP2, "reshard_after_forward": "0", "grad_reduce": "per_step"}])
def test_the_interleaved_warm_up_never_holds_more_than_all_micro_batches(options):
    # p = 2 stages of v = 2 chunks, m = 2 micro-batches of one 32-token sequence, L = 4, full recompute (each layer
    # keeps its input, 2·32·64 = 4,096 bytes a micro-batch): Korthikanti's first-stage factor would hold
    # 2·(1 + 1/4) = 2.5 micro-batches, but the warm-up is capped at the m·v = 4 chunk-micro-batches there are
    # (Megatron-LM schedules.py min(num_warmup_microbatches, total_num_microbatches); torch schedules.py
    # min(warmup_ops, n_microbatches · n_local_stages)): all 2 micro-batches on the stage's L/p = 2 layers
    values = {**TINY, "p": 2, "v": 2, "m": 2, "b": 2}
    q = steptime.quantities(values, 2, **{**options, "recompute": "full", "schedule": "interleaved"})
    assert float(q["memory_activations"]) == 4096 * 2 * 2


@pytest.mark.parametrize("recompute, part, layers", [("full", "recompute", 1), ("selective", "activations", 4)])
def test_pytorch_tensor_parallel_keeps_the_gathered_inputs_whole(recompute, part, layers):
    # t = 2 with sequence parallel, flash: Korthikanti et al. 2022 Table 2 keeps a layer's 34·s·b·h/t =
    # 34·64·64/2 = 69,632 bytes (64 tokens); torchtitan's plan all-gathers the attention's and the MLP's input
    # (PrepareModuleInput Shard(1) -> Replicate) and ColwiseParallel's matmuls save them whole: 2 · 2·64·64 bytes
    # where the count has 2 · 2·64·64/2, 8,192 more.  Full recompute: in the one layer recomputed (the working
    # set); selective: in each of the L = 4 layers kept
    values = {**TINY, "t": 2}
    # the block compiled: Korthikanti's count with the gathered inputs whole (the eager block's own count below)
    torch_tp = _memory(values, **{**FSDP2, "sp": "1", "recompute": recompute, "compile": "1"})[part]
    megatron = _memory(values, **{**MEGATRON, "sp": "1", "recompute": recompute})[part]
    assert megatron == 69_632 * layers
    assert torch_tp == (69_632 + 8_192) * layers


def test_the_eager_block_keeps_its_own_count_with_sequence_parallel():
    # t = 2, sp, eager, full recompute (the working set: one layer as no recompute keeps it), ungated: per token the
    # two norms on their sequence shard 12h/t = 384, the two gathered linear inputs whole 4h = 256, Q 2h/t = 64, K and
    # V repeated 4h/t = 128, the attention's output 2h/t = 64 and logsumexp 4a/t = 8, the MLP 4F/t = 512: 1,416 bytes,
    # 90,624 for 64 tokens
    assert _memory({**TINY, "t": 2}, **{**FSDP2, "sp": "1", "recompute": "full"})["recompute"] == 90_624


def test_float8_layers_are_left_at_korthikantis_count():
    # under torchao float8 the gathered inputs are fp8 and Float8Linear saves fp8 weight copies too
    # (torchmem.TP_GATHERED): a layer the count does not describe, so the bf16 term is not added
    values = {**TINY, "t": 2, "peak_fp8": 2e12, "eta_fp8": 1.0, "eta_attn": 1.0, "w_half": 0.0}
    parts = _memory(values, **{**FSDP2, "sp": "1", "recompute": "full", "precision": "fp8_tensor"})
    assert parts["recompute"] == 34 * 64 * 64 / 2


def test_fsdp2_accumulating_without_sync_holds_one_units_16_bit_gradient():
    # p = 4 under torch.distributed.pipelining: FSDP2 keeps every unit unsharded (reshard_after_forward=False) and
    # accumulates unsharded fp32 gradients (counted in ``gradients``); the unit computing's bf16 gradient lives
    # until its post-backward adds it in (_fsdp_param.py accumulate_unsharded_grad_if_needed): 2 bytes × one
    # layer's (Phi − 2·V·h)/L = 2,000,000/8 = 250,000 parameters; nothing gathered beyond the unsharded weights
    values = {**TINY, "p": 4, "m": 8, "b": 8, "L": 8, "Phi": 2_128_000, "L_first": 2, "L_last": 2}
    options = {**FSDP2, "reshard_after_forward": "0", "grad_reduce": "per_step", "pipeline_split": "first_last"}
    q = steptime.quantities(values, 2, **options)
    assert float(q["stage_bytes_gathered_layers_middle"]) == 2 * 250_000
    # with a bf16 reduction autograd accumulates into the gradient in place: nothing more
    q = steptime.quantities(values, 2, **{**options, "grad_dtype": "same"})
    assert float(q["stage_bytes_gathered_layers_middle"]) == 0


@pytest.mark.parametrize("cp", ["ring", "ring_flash_attn"])
def test_pytorchs_ring_attention_buffers_by_hand(cp):
    # c = 2: b·s/c = 2·32/2 = 32 tokens per GPU; torchtitan repeats K and V to the query heads before SDPA
    # (model.py@9dec370a, repeat_kv), so key, value and each gradient hold 32·h/t = 32·64 = 2,048 elements.
    # torch's ring attention backward (_attention.py, _templated_ring_attention_backward) holds the all-gathered bf16
    # key and value of both ranks (2 ranks · 2 tensors · 2 bytes · 2,048), the fp32 query gradient (4 · 2,048), and
    # the fp32 key and value gradients received, concatenated to send and received again (3 · 2 · 4 · 2,048)
    expected = (2 * 2 * 2 + 4 + 3 * 2 * 4) * 2_048
    assert expected == 73_728
    parts = _memory({**TINY, "c": 2}, **{**FSDP2, "cp": cp, "recompute": "full"})
    assert parts["ring_attention"] == expected
    # live in the layer's backward with the recompute working set, never with the loss buffers
    assert _memory({**TINY, "c": 1}, **{**FSDP2, "cp": cp})["ring_attention"] == 0


def test_ring_attention_buffers_only_under_pytorchs_runtime():
    assert "ring_attention" not in _memory({**TINY, "c": 2}, **{**MEGATRON, "cp": "ring"})
    assert "ring_attention" not in _memory({**TINY, "c": 2}, **{**FSDP2, "cp": "ulysses"})


def test_the_ring_attention_buffers_join_the_backward_side():
    # p = 1, full recompute: the peak adds the larger of the loss side and the backward side; with the loss buffers
    # shrunk (V = 10) the backward side (working set + head gradient + ring buffers) is the larger and counts whole
    values = {**TINY, "c": 2, "V": 10, "Phi": 1_000_000 + 2 * 10 * 64}
    q = steptime.quantities(values, 2, **{**FSDP2, "recompute": "full"})
    parts = {k[len("memory_"):]: float(x) for k, x in q.items() if k.startswith("memory_") and k != "memory_per_gpu"}
    backward = parts["recompute"] + parts["head_gradient"] + parts["ring_attention"]
    assert backward > parts["logits"] + parts["head_inputs"]
    rest = sum(x for k, x in parts.items()
               if k not in ("logits", "head_inputs", "recompute", "head_gradient", "ring_attention"))
    assert float(q["memory_per_gpu"]) == pytest.approx(rest + backward, rel=1e-12)


def test_ring_attention_buffers_on_a_pipeline_stage_go_with_its_backward_side():
    # p = 2, c = 2, first_last split, full recompute, m = 4 micro-batches of one 32-token sequence (b = 4): c splits
    # each into 16 tokens a GPU, so the ring buffers are (4·2 + 28)·16·64 = 36,864 bytes on every stage.  The first
    # stage has no loss side: its total grows by all of them; the last stage's loss side (the eager loss's 12 + 2m
    # bytes with the pipeline's m outputs kept × 16 tokens × V = 320,000) outweighs its backward side, which they
    # join: its total does not move
    values = {**TINY, "p": 2, "m": 4, "b": 4, "L_first": 2, "L_last": 2}
    options = {**FSDP2, "reshard_after_forward": "0", "grad_reduce": "per_step", "pipeline_split": "first_last",
               "recompute": "full", "pp_outputs": "kept"}
    one, two = (steptime.quantities({**values, "c": c}, 2, **options) for c in (1, 2))
    assert float(two["stage_bytes_ring_attention_first"]) == (4 * 2 + 28) * 16 * 64 == 36_864
    assert float(two["stage_bytes_logits_last"]) == (12 + 2 * 4) * 16 * 1000
    # c = 2 halves every token-proportional part: compare each stage with its own parts at c = 2
    for kind, grows in (("first", True), ("last", False)):
        parts = {k: float(x) for k, x in two.items() if k.startswith("stage_bytes_") and k.endswith("_" + kind)
                 and k != f"stage_bytes_{kind}"}
        without = sum(x for k, x in parts.items() if "ring_attention" not in k)
        loss = sum(parts.get(f"stage_bytes_{p}_{kind}", 0.0) for p in ("logits", "head_inputs"))
        back = sum(parts.get(f"stage_bytes_{p}_{kind}", 0.0) for p in ("recompute", "head_gradient"))
        base = without - loss - back + max(loss, back)
        expected = base + 36_864 if grows else base
        assert float(two[f"stage_bytes_{kind}"]) == pytest.approx(expected, rel=1e-12)
    assert float(one["stage_bytes_ring_attention_first"]) == 0


def test_pytorchs_fsdp_keeps_its_root_gathered_through_the_backward_and_gathers_it_not_again():
    # PyTorch's FSDP1 frees no root parameters after the forward with FULL_SHARD (_runtime_utils.py,
    # _post_forward_reshard), FSDP2 none of the root's (_fsdp_state.py, _lazy_init): the root (the V·h embedding and
    # the V·h LM head, untied) stays gathered in bf16, 2·(2·1000·64) bytes at t = 1, and of the L + 1 = 5 per-layer
    # units a micro-batch gathers only the 4 blocks again in the backward; Megatron-FSDP gathers all 5 again.  The
    # root is its own collective at its own size, 128,000 (axes.ROOT_UNIT_FIRST), the 4 blocks' 250,000 each; Megatron-
    # FSDP's 5 units are counted at their mean, 1,128,000/5
    values = {**TINY, "d": 4, "b": 8}
    fsdp1 = _memory(values, **{**PLAIN, "framework": "fsdp", "zero": "3"})
    assert fsdp1["root_params"] == 2 * (2 * 1000 * 64)
    for framework, again in (("fsdp", 4), ("fsdp2", 4), ("megatron_fsdp", 5)):
        rows = symcomm.evaluate("hybrid", h=64, L=4, V=1000, Phi=1_128_000, t=1, p=1, d=4, c=1, b=8, m=1, s=32,
                                G=8, framework=framework, zero=3, tied=0, embeddings=1)["terms"]
        gathers = {row["label"]: row for row in rows if row["collective"] == "all_gather"}
        forward = gathers["per-layer parameter all-gather (forward)"]
        if again == 4:
            root = gathers["root-unit parameter all-gather (forward)"]
            assert (root["count"], root["message"]) == (1, 128_000)
            assert (forward["count"], forward["message"]) == (4, 250_000)
        else:
            assert "root-unit parameter all-gather (forward)" not in gathers
            assert (forward["count"], forward["message"]) == (5, 1_128_000 / 5)
        assert gathers["per-layer parameter all-gather (backward)"]["count"] == again, framework
        # the blocks' 10⁶ parameters in 4 gathers of a block's 250,000 each (the root's 128,000 kept); 5 mean units
        # of 1,128,000/5 where the root is gathered again
        assert gathers["per-layer parameter all-gather (backward)"]["message"] == (250_000 if again == 4
                                                                                 else 1_128_000 / 5)
