"""The content: one module per chapter, each exposing ``CHAPTER`` (a symcomm Chapter).

The order of :data:`CHAPTERS` is the order of the documentation.
"""

from . import collectives

CHAPTERS = (
    collectives.CHAPTER,
)
