"""The buffers PyTorch's own runtime holds under the ``fsdp2`` framework (torchtitan on FSDP2, DTensor tensor
parallel and torch.distributed.pipelining), in bytes per GPU as SymPy expressions, beside the parts every framework
has (:mod:`symcomm.training.memory`, which adds these to its parts when ``data.framework == "fsdp2"``).  Each is our
own count of the tensors the cited code allocates or keeps, 2 bytes per bf16 element, 4 per fp32; live bytes, with
no allowance for what the caching allocator reserves beyond them.

The runs these were read for: torchtitan at 9dec370ad26b5f8e9a7333a0e36165018262644b with torch 1963fc83 (the
2024-12 benchmarks' versions table, benchmarks/llama3_h100_202412_torchtitan.md).  The torch files were read at
the stored versions named beside each (torch 1963fc83 itself is not stored here); the lines counted are the same
in the releases around it (2.5 to 2.7) as far as read.
"""

from __future__ import annotations

import functools

import sympy as sp

from ..core.symbols import V, b, c, d, h, m, s, t

#: FSDP2's reduce-scatter of one unit's gradients: foreach_reduce allocates the reduce-scatter input in
#: MixedPrecisionPolicy.reduce_dtype (torch.empty(..., dtype=reduce_dtype)), copies the unsharded gradients into it
#: (foreach_reduce_scatter_copy_in) and only then frees them ("Only after the copy-in finishes can we free the
#: gradients"); the input stays referenced until the next unit's reduce-scatter is issued (reduce_scatter_state)
FSDP2_REDUCE = ("torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py (foreach_reduce), _fsdp_param_group.py "
                "(post_backward: reduce_scatter_state)")
#: FSDP2 keeps the root module's parameters unsharded after the forward ("For the root, do not reshard after
#: forward since for training, the parameters would be freed and all-gathered immediately": FSDPState._lazy_init
#: sets the root group's post_forward_mesh_info = None), and the root's post-backward, which reduces and frees its
#: gradients, runs from the backward's final callback (_root_post_backward_final_callback): its forward inputs (the
#: token ids) need no gradient, so no per-module hook fires earlier.  torchtitan's root is the whole model: the
#: embedding, the final norm and the LM head (parallelize_llama.py@9dec370a, apply_fsdp: fully_shard(model))
FSDP2_ROOT = ("torch/distributed/fsdp/_fully_shard/_fsdp_state.py (_lazy_init, _root_post_backward_final_callback); "
              "torchtitan torchtitan/parallelisms/parallelize_llama.py@9dec370a (apply_fsdp)")
#: what the LM head keeps for its backward under torchtitan's model and tensor-parallel plan: the final norm
#: (torchtitan/models/norms.py@9dec370a RMSNorm: x.float() times rsqrt(mean(x²) + eps), cast back, times the
#: weight; eager autograd saves the fp32 x (4 bytes) and the bf16 normalised tensor the weight multiplies (2);
#: SequenceParallel gives it s/t of the tokens with t > 1) and the output projection's input (2 bytes), whole on every
#: TP rank: its ColwiseParallel(input_layouts=Shard(1)) all-gathers the sequence-sharded norm output into a
#: Replicate input before the matmul, which saves that input (parallelize_llama.py@9dec370a apply_tp;
#: torch/distributed/tensor/parallel/style.py ColwiseParallel._prepare_input_fn)
HEAD_INPUTS = ("torchtitan torchtitan/models/norms.py@9dec370a (RMSNorm), torchtitan/parallelisms/"
               "parallelize_llama.py@9dec370a (apply_tp: output ColwiseParallel(input_layouts=Shard(1)), norm "
               "SequenceParallel); torch/distributed/tensor/parallel/style.py (ColwiseParallel)")
#: torch.distributed.pipelining's stage buffers (torch/distributed/pipelining/stage.py, read at 0138610331):
#: PipelineStage._prepare_forward_infra allocates one activation receive buffer per micro-batch
#: (_make_tensor_from_meta for every chunk_id in range(num_microbatches)) on every stage but the first,
#: _prepare_backward_infra one gradient receive buffer per micro-batch (_create_grad_recv_info) on every stage but
#: the last; forward_one_chunk keeps each micro-batch's output in fwd_cache until its backward, and the last stage
#: appends every output to output_chunks, merged only after the step (Schedule.step: _merge_outputs).  The 2024-era
#: stage.py (the one whose backward_maybe_with_nosync still runs FSDP's post-backward itself, as the runs' torch of
#: 2024-12-23 did) appended every stage's output to output_chunks: m − held more outputs on a stage that sends, 0 on
#: the first stage when m ≤ p (all m in flight there); counted as today's stage.py keeps them
PIPELINE_STAGE = ("torch/distributed/pipelining/stage.py (_prepare_forward_infra, _prepare_backward_infra, "
                  "_create_grad_recv_info, forward_one_chunk: fwd_cache, output_chunks)")


def layer_gradient_bytes(grad_bytes: int) -> int:
    """Bytes per parameter of one FSDP2 unit's gradients while they are reduced (:data:`FSDP2_REDUCE`): the unit
    computing holds its unsharded gradient in the parameters' 16-bit type (2) and the unit before it the
    reduce-scatter input in the reduction's type (``grad_bytes``: 4 under torchtitan's fp32 reduce_dtype): 6, or
    4 with a 16-bit reduction."""
    return 2 + grad_bytes


#: FSDP2 without gradient sync (torch.distributed.pipelining's backward_maybe_with_nosync:
#: set_requires_gradient_sync(False) for every micro-batch's backward): each unit's post-backward converts the
#: parameters' 16-bit gradient into an unsharded accumulator in reduce_dtype (to_accumulated_grad_if_needed:
#: unsharded_grad.to(reduce_dtype)) or adds it into that accumulator (accumulate_unsharded_grad_if_needed:
#: unsharded_accumulated_grad += unsharded_param.grad; unsharded_param.grad = None)
FSDP2_ACCUMULATE = ("torch/distributed/fsdp/_fully_shard/_fsdp_param.py (to_accumulated_grad_if_needed, "
                    "accumulate_unsharded_grad_if_needed), _fsdp_param_group.py (post_backward)")


def accumulating_gradient_bytes(grad_bytes: int) -> int:
    """Bytes per parameter of one FSDP2 unit beyond its accumulated gradient (counted whole in ``gradients``) while
    it accumulates without sync (:data:`FSDP2_ACCUMULATE`): the unit computing's 16-bit gradient (2) until its
    post-backward adds it into the accumulator in the reduction's type; 0 when that type is the 16-bit one
    (``grad_bytes`` 2: autograd accumulates into the gradient in place)."""
    return 2 if grad_bytes != 2 else 0


def root_parameters(tied: bool, replicated: bool = False) -> sp.Expr:
    """Bytes of the FSDP2 root's unsharded 16-bit parameters, held from the forward through the backward
    (:data:`FSDP2_ROOT`; FSDP1's root alike: symcomm.training.frameworks.ROOT_KEPT_GATHERED): the V·h embedding and
    the V·h LM head (one tied copy), over t, the embedding whole with ``replicated`` (tp_embedding=replicated); the
    final norm's h weights are left out (under a millionth of it at Llama's sizes)."""
    embedding = V * h if replicated else V * h / t
    return 2 * (embedding + (0 if tied else V * h / t))


def head_gradient() -> sp.Expr:
    """Bytes of the LM head's unsharded 16-bit weight gradient (V·h/t), which autograd writes when the output
    projection's backward runs, right after the loss's, and FSDP2 frees only in the root's post-backward at the end
    of the backward (:data:`FSDP2_ROOT`): live through every layer's backward, with the recompute working set,
    never with the loss buffers (the gradient does not exist yet while they are live).  Under pipeline parallelism
    the stage's post-backward converts it into the accumulated fp32 gradient (counted in ``gradients``) at the end
    of each micro-batch's backward: the same bytes, live as long as that backward."""
    return 2 * V * h / t


def head_inputs(micro) -> sp.Expr:
    """Bytes the final norm and the LM head keep for their backward, per micro-batch on the stage holding the head
    (:data:`HEAD_INPUTS`): tokens · (2h + 6h/t), tokens = micro·s/c: the output projection's whole input (2h) and
    the norm's fp32 input and bf16 normalised tensor on its sequence shard (6h/t; all tokens at t = 1).  Live from
    the head's forward to its backward: with the loss buffers, before any layer's backward."""
    tokens = micro * s / c
    return tokens * (2 * h + 6 * h / t)


#: PyTorch tensor parallel as torchtitan plans it (parallelize_llama.py@9dec370a apply_tp: each block's "attention"
#: and "feed_forward" get PrepareModuleInput(input_layouts=Shard(1), desired_input_layouts=Replicate()), an
#: all-gather of the sequence-sharded input, and wq/wk/wv, w1/w3 are ColwiseParallel nn.Linear modules whose matmul
#: autograd saves that gathered input for the weight gradient, whole on every TP rank; Megatron-LM saves the
#: sequence shard and all-gathers it again in the backward (megatron/core/tensor_parallel/layers.py,
#: LinearWithGradAccumulationAndAsyncCommunication), which is Korthikanti et al. 2022's 34sbh/t.  bf16 only: under
#: torchao float8 (PrepareFloat8ModuleInput, float8_tensor_parallel.py@eab345c) the input is cast to float8 before
#: the all-gather and Float8Linear saves the fp8 input and an fp8 copy of its weight (float8_linear.py@eab345c,
#: manual_float8_matmul_with_args_in_float8: ctx.save_for_backward(input_fp8, weight_fp8_t)), a layer Korthikanti's
#: count does not describe: not counted
TP_GATHERED = ("torchtitan torchtitan/parallelisms/parallelize_llama.py@9dec370a (apply_tp: PrepareModuleInput "
               "Shard(1) -> Replicate, ColwiseParallel); torch/distributed/tensor/parallel/style.py")


def kept_whole(framework: str, precision: str) -> bool:
    """Does the run keep its sequence-parallel blocks' gathered inputs whole (:data:`TP_GATHERED`): PyTorch's
    tensor parallel (the fsdp2 framework) at bf16."""
    return framework == "fsdp2" and precision == "bf16"


def tp_gathered_inputs(micro) -> sp.Expr:
    """Bytes one layer keeps beyond Korthikanti's sequence-parallel count under PyTorch tensor parallel
    (:data:`TP_GATHERED`), per micro-batch: the attention's and the MLP's all-gathered bf16 inputs, 2h bytes a token
    each, whole where the count has their s/t shards: 4·tokens·h·(1 − 1/t), tokens = micro·s/c."""
    return 4 * (micro * s / c) * h * (1 - 1 / t)


@functools.lru_cache(maxsize=None)     # its Max once per stage, not per option combination of a kernel family
def pipeline_buffers(kind: str, chunks, held, sp_on: bool) -> sp.Expr:
    """Bytes of torch.distributed.pipelining's buffers on one GPU of a stage of this kind (:data:`PIPELINE_STAGE`),
    each one micro-batch's stage output, 2·tokens·h bytes (/t with sequence parallel: torchtitan's blocks end in a
    RowwiseParallel(output_layouts=Shard(1)) whose local shard is what the stage sends), tokens = (b/(d·m))·s/c.
    ``chunks`` model chunks on the stage, ``held`` micro-batches in flight on each (symcomm.training.stages.in_flight):

    * the gradient receive buffers, m per chunk that sends its output on (all but the last chunk of the model);
    * the outputs kept in fwd_cache, ``held`` per such chunk (the last chunk's output is the logits, counted with
      the loss: symcomm.training.memory.loss_bytes_per_logit);
    * the activation receive buffers, m per chunk that receives (all but the first chunk), less the ``held`` of
      them that are the chunk's first layer's kept input, already counted with the activations (the checkpoint
      saves the received tensor itself)."""
    tokens = (b / (d * m)) * s / c
    one = 2 * tokens * h / (t if sp_on else 1)
    sending = chunks - (1 if kind == "last" else 0)
    receiving = chunks - (1 if kind == "first" else 0)
    return one * (sending * (m + held) + receiving * sp.Max(m - held, 0))


#: PyTorch's context-parallel attention as torchtitan runs it (the ``cp=ring`` setting under fsdp2): torchtitan
#: hands SDPA key and value already repeated to the GPU's a/t query heads (torchtitan/models/llama/model.py@9dec370a,
#: Attention.forward: repeat_kv before F.scaled_dot_product_attention), so each holds tokens·h/t elements, and rotates
#: them by all-gather (torchtitan/config_manager.py@9dec370a: context_parallel_rotate_method defaults to
#: "allgather").  The backward of one layer's ring attention (torch/distributed/tensor/experimental/_attention.py,
#: read at the stored 0123248a; torch 1963fc83 itself is not stored here: _templated_ring_attention_backward,
#: _AllGatherRotater, _AllToAllRotater) holds at once: the all-gathered key and value of all c ranks in bf16
#: (_AllGatherRotater.exchange_buffers: one all_gather_tensor of the concatenated K and V), the query gradient
#: accumulated in fp32 (_ContextParallelOptions.convert_to_f32 True: grad_query = zeros_like(query, float32)), the
#: key and value gradients held in fp32 as the received rotation buffer, and the fp32 K and V gradients concatenated
#: for the next rank (next_grad_kv = torch.cat(...)) with the all-to-all's fp32 output they are sent into
#: (dkv_rotater is always _AllToAllRotater: ft_c.permute_tensor)
RING_ATTENTION = ("torch/distributed/tensor/experimental/_attention.py@0123248a (_templated_ring_attention_backward, "
                  "_AllGatherRotater, _AllToAllRotater, _ContextParallelOptions); torchtitan "
                  "torchtitan/config_manager.py@9dec370a (context_parallel_rotate_method 'allgather'), "
                  "torchtitan/models/llama/model.py@9dec370a (Attention.forward: repeat_kv)")


def ring_attention_buffers(micro) -> sp.Expr:
    """Bytes of PyTorch's ring attention's buffers while one layer's attention backward runs under context
    parallelism (:data:`RING_ATTENTION`), per micro-batch: with K = tokens·h/t elements (one of key, value, query
    gradient on the GPU's a/t heads of h/a each), tokens = micro·s/c, the all-gathered bf16 key and value of the c
    ranks 2·2·c·K, the fp32 query gradient 4·K, the fp32 key and value gradients received 8·K, sent 8·K and being
    received 8·K: (4c + 28)·K; 0 without context parallelism (c = 1: no ring).  Live with the recompute working set
    (the layer's backward), never with the loss buffers; beyond the plain flash attention backward's bf16 gradients,
    which the working set's count already holds."""
    elements = micro * s / c * h / t
    return sp.Piecewise((0, sp.Eq(c, 1)), ((4 * c + 28) * elements, True))
