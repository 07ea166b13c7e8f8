"""symcomm: the communication cost of distributed training, derived, proved and evaluated."""

from .symbols import SYMBOLS, symbol
from .cost import Cost, Traffic
from .proof import AtLeast, Claim, ClaimFailed, Domain, Limit, Proof, check, prove, POWER_OF_TWO
from .primitives import PRIMITIVES, primitive
from .algorithms import ALGORITHMS, Algorithm, algorithm, algorithms_of
from .export import export

__all__ = [
    "SYMBOLS", "symbol", "Cost", "Traffic", "AtLeast", "Claim", "ClaimFailed", "Domain", "Limit",
    "Proof", "check", "prove", "POWER_OF_TWO", "PRIMITIVES", "primitive", "ALGORITHMS",
    "Algorithm", "algorithm", "algorithms_of", "export",
]
