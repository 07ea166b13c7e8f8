"""The bytes Transformer Engine's low-precision recipes move and keep per element: what a cast to FP8 (FP4) reads
and writes (:data:`CAST`), read by the compute model (its casts at the HBM bandwidth,
:func:`symcomm.training.compute.cast_bytes`) and the memory model (the quantized input a linear keeps for its weight
gradient, :func:`symcomm.training.memory.saved_input_bytes`).  A recipe added here is counted by both."""

from __future__ import annotations

import sympy as sp

#: bytes per element a cast to FP8 (FP4) reads and writes, per recipe: (extra bf16 read for the amax,
#: scale bytes per element of an activation or gradient, of a weight, bytes per quantized element).  The cast reads
#: the bf16 tensor (2 bytes) and writes two copies (1 byte each in FP8, 1/2 in FP4) with their scales.  Sources:
#: Transformer Engine docs/features/low_precision_training (commit d0067d0d): fp8_current_scaling.rst ("reading the tensor
#: twice": the amax, then the cast; delayed scaling fuses the amax into the cast, so this counts the
#: current-scaling upper bound; one fp32 scale per tensor, negligible); mxfp8.rst (one E8M0 byte per 32
#: elements, rowwise and columnwise scaled copies differ, "columnwise quantized tensors cannot be computed
#: from rowwise quantized ones"); fp8_blockwise_scaling.rst (one fp32 scale per 1×128 block of activations
#: and gradients, per 128×128 block of weights); performance_considerations.rst (Hopper transposes the
#: columnwise copy).  NVFP4 (docs/features/low_precision_training/nvfp4/nvfp4.rst and
#: transformer_engine/pytorch/csrc/quantizer.cpp NVFP4Quantizer::quantize_impl, commit d0067d0d): E2M1 values, half a
#: byte each, one E4M3 scale per 16 consecutive elements of an activation or gradient and per 16×16 block of a weight
#: (2D, the default), a rowwise and a transposed columnwise copy (its GEMM takes the TN layout only); the global fp32
#: scale needs the tensor's amax first, a read of its own (nvte_hadamard_transform_amax for the inputs and gradients,
#: whose columnwise copy goes through the random Hadamard transform: both amaxes in that one read;
#: nvte_compute_amax for the weights), and the cast with the transform is one kernel for bf16 inputs
#: (nvte_quantize_with_hadamard_transform: counted so; its unfused path, for shapes the fused kernel refuses, writes
#: the transformed copy too, not counted).
CAST = {
    "fp8_tensor": (sp.Integer(2), sp.Integer(0), sp.Integer(0), sp.Integer(1)),
    # delayed scaling (fp8_delayed_scaling.rst at d0067d0d: "reduces tensor reads per quantization from two to one",
    # the scale from the amax history, this tensor's amax recorded by the cast itself)
    "fp8_delayed": (sp.Integer(0), sp.Integer(0), sp.Integer(0), sp.Integer(1)),
    "mxfp8": (sp.Integer(0), sp.Rational(1, 32), sp.Rational(1, 32), sp.Integer(1)),
    "fp8_block": (sp.Integer(0), sp.Rational(4, 128), sp.Rational(4, 128 * 128), sp.Integer(1)),
    "nvfp4": (sp.Integer(2), sp.Rational(1, 16), sp.Rational(1, 16 * 16), sp.Rational(1, 2)),
}
#: bf16 bytes read per element by a cast, and FP8 copies written (rowwise and columnwise)
CAST_READ, CAST_COPIES = 2, 2


#: Transformer Engine keeps each linear's quantized weight across a step's micro-batches: Linear.forward caches it
#: under "weight" in _fp8_workspaces when is_first_microbatch is given (re-quantized in place on the first), rowwise
#: and columnwise while gradients are on (Hopper transposes the columnwise copy; Blackwell's per-tensor FP8 keeps
#: none: 1 byte, counted at Hopper's 2); Megatron-Core passes is_first_microbatch unless
#: disable_parameter_transpose_cache (default False).  With --fp8-param-gather the parameter is itself the quantized
#: tensor and no workspace is kept (its 2 bytes stand in the bf16 weight's place, counted as it)
TE_WEIGHT_CACHE = ("NVIDIA/TransformerEngine transformer_engine/pytorch/module/linear.py (Linear.forward: cache_name, "
                   "_fp8_workspaces; quantize_weight) at d0067d0d; Megatron-LM megatron/core/extensions/"
                   "transformer_engine.py (is_first_microbatch) and transformer_config.py "
                   "(disable_parameter_transpose_cache) at d98e8a64")
