"""The content: one module per chapter, each exposing ``CHAPTER`` (a symcomm Chapter).

The order of :data:`CHAPTERS` is the order of the documentation.
"""

from . import collectives
from . import data_parallel, zero, tensor_parallel, pipeline, expert_parallel, context_parallel, hybrid
from . import parameters, reality

CHAPTERS = (
    collectives.CHAPTER,
    data_parallel.CHAPTER,
    zero.CHAPTER,
    tensor_parallel.CHAPTER,
    pipeline.CHAPTER,
    expert_parallel.CHAPTER,
    context_parallel.CHAPTER,
    hybrid.CHAPTER,
    parameters.CHAPTER,
    reality.CHAPTER,
)
