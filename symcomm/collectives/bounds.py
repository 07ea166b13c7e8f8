"""Lower bounds on the cost of each primitive with point-to-point messages.

Chan, Heimlich, Purkayastha & van de Geijn 2007, CCPE 19(13), its lower bounds:
every collective needs ⌈log₂N⌉ rounds, since the number of ranks holding (a
contribution to) the data at most doubles per round; a rank that must end up with data
it lacks must receive it; a reduction must add (N−1)/N·M elements somewhere per rank.
All-to-all: each rank must receive the N−1 blocks it lacks (Bruck et al. 1997, §2).
Counts in elements, M the full unsharded buffer (ARCHITECTURE.md, "Conventions").  In-network reduction is not bound by these:
the switch adds, so no rank needs to receive the partial sums of others.
"""

from __future__ import annotations


from ..core import symbols as S
from .algorithms import BRUCK, CHAN
from ..core.cost import Cost

N, M = S.N, S.M
_rounds = S.log2_ceil(N)
_share = (N - 1) * M / N

CHAN_BOUNDS = CHAN.short + ", lower bounds"

#: primitive → (bound as a Cost of α, β, γ coefficients, source)
LOWER_BOUNDS: dict[str, tuple[Cost, str]] = {
    "broadcast": (Cost.of(send=0, recv=M, total=0, alpha=_rounds, beta=M), CHAN_BOUNDS),
    "scatter": (Cost.of(send=0, recv=M / N, total=0, alpha=_rounds, beta=_share), CHAN_BOUNDS),
    "gather": (Cost.of(send=0, recv=0, total=0, alpha=_rounds, beta=_share), CHAN_BOUNDS),
    "reduce": (Cost.of(send=0, recv=0, total=0, alpha=_rounds, beta=M, gamma=_share), CHAN_BOUNDS),
    "all_gather": (Cost.of(send=0, recv=_share, total=0, alpha=_rounds, beta=_share), CHAN_BOUNDS),
    "reduce_scatter": (Cost.of(send=0, recv=0, total=0, alpha=_rounds, beta=_share, gamma=_share), CHAN_BOUNDS),
    "all_reduce": (Cost.of(send=0, recv=0, total=0, alpha=_rounds, beta=2 * _share, gamma=_share), CHAN_BOUNDS),
    "all_to_all": (Cost.of(send=0, recv=_share, total=0, alpha=_rounds, beta=_share),
                   BRUCK.short + ", §2"),
    "send_recv": (Cost.of(send=0, recv=M, total=0, alpha=1, beta=M), "one message of M elements"),
}

