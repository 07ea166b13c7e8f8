"""Which link a group of ranks uses on a hardware part: one node's, the network's, or the mix a flat algorithm
spanning nodes runs at (:func:`link_values`), the one rule eval, compare and the calibrations read
(``base.crossing`` holds its shares)."""

from __future__ import annotations

from ..base.crossing import ONE_NIC, RING, crossing_note, inter_shares, leg_time
from ..base.errors import InputError


# -- which link a group uses: the one rule ---------------------------------------------------------

def spans_nodes(ranks: int, gpus_per_node: int) -> bool:
    """Whether a group of ``ranks`` ranks, placed on nodes of ``gpus_per_node`` GPUs, crosses the
    network: more ranks than a node holds.  The one rule every command uses (``eval``, ``compare``
    through :func:`link_values`, ``nccl-tests`` through ``calibration_file.model_from``, ``calibrate`` for the
    level of a fit; the strategies state the same relation symbolically, ``training.axes.spans``)."""
    return ranks > gpus_per_node


def nic_sharers(ranks: int, gpus_per_node: int) -> int:
    """k: the ranks of a flat group of ``ranks`` consecutive ranks (nccl-tests', a single strategy's) on the
    node that holds the fewest of them, nodes of ``gpus_per_node`` GPUs: G when G divides N, else the last
    node's N mod G; one node's group (N ≤ G) is N.  A ring step waits for its slowest crossing, and the
    node with the fewest ranks has the fewest NICs to spread the crossings over."""
    rest = ranks % gpus_per_node
    return min(ranks, gpus_per_node) if rest == 0 or ranks < gpus_per_node else rest


def link_values(system, ranks: int | None, two_level: bool, gpus_per_node: int | None = None,
                bytes_per_element: int = 1, spread: bool = False,
                crossing: str | None = None) -> tuple[dict[str, float | int], str]:
    """The time constants a group of ``ranks`` ranks uses on ``system``, its nodes holding
    ``gpus_per_node`` GPUs (default: the system's), and a note saying why ("" when there is nothing
    to say).

    A two-level algorithm prices each level at its own link (α, β inside a node, α_inter,
    β_inter across).  A single-level one (a flat ring, tree...) runs over one link: inside a node
    the intra-node one; once the group spans nodes it is as fast as its slowest link, the
    network: its α is α_inter, and its β the inter-node value, or for a ring collective (``spread``:
    ``collectives.algorithms.SPREADS_OVER_NICS``, whose crossings NCCL spreads over the node's NICs)
    the larger of (k − 1)/k of β and 1/k of β_inter at k = :func:`nic_sharers` ranks per node (the two legs run
    at once: ``base.crossing.CONCURRENT``).  ``crossing`` names the algorithm's
    rule (``base.crossing``: RING is ``spread``; PEERS, a pairwise all-to-all, sends to k − 1 peers on its
    node and N − k across, one-port, so its per-step α and β are the mix (k − 1)/(N − 1) of the intra-node
    value + (N − k)/(N − 1) of the inter-node one, ``base.crossing.inter_shares``, the same shares the
    strategies' terms split by); None: RING if ``spread`` else ONE_NIC.

    The inter-node link has two meanings, equal for a physical link (a preset) but not for a
    fitted one: the per-step α, β of a flat algorithm spanning nodes (``inter``: a flat ring of N
    ranks sends 2(N−1)/N·M per rank over it), and α_inter, β_inter of a two-level form's inter-node
    phase (``inter_two_level``: the G ranks of a node each move 2(N/G−1)/(N/G)·M/G across at once,
    so a β_inter fitted to a measured time is the share of the network each of them gets).  A
    calibrated file keeps both (:func:`hardware_file`); the two-level forms take ``inter_two_level``
    when the file has it, and are refused across nodes, naming it, when the file's ``inter`` is a
    flat fit without it."""
    values = system.values(bytes_per_element)
    g = gpus_per_node or system.gpus_per_node
    if two_level:
        across = ranks is None or spans_nodes(ranks, g)
        if system.inter_two_level is not None:
            values["alpha_inter"] = system.inter_two_level.latency_s
            values["beta_inter"] = bytes_per_element / system.inter_two_level.bytes_per_second
        elif system.two_level_unknown and across:
            raise system.lacks("inter_two_level", f"a two-level algorithm across nodes needs: {system.two_level_unknown}")
        return values, ""
    if ranks is None or not spans_nodes(ranks, g):
        return values, ""
    rule = crossing or (RING if spread else ONE_NIC)
    k = nic_sharers(ranks, g)
    # one rule for every crossing, the shares of base.crossing (a share of 0 leaves its link's value unread): α's
    # steps wait for both legs, one-port; β's legs run at once where the rule is concurrent (a ring: the slower leg,
    # its node leg the fullest node's, min(N, G) ranks, its network leg the emptiest's, k)
    (a_across, a_stays), (b_across, b_stays) = inter_shares(rule, ranks, k, min(ranks, g))
    values["alpha"] = leg_time(ONE_NIC, a_stays, a_across, values["alpha"], values["alpha_inter"])
    values["beta"] = leg_time(rule, b_stays, b_across, values["beta"], values["beta_inter"])
    note = crossing_note(rule, ranks, g, k)
    if system.from_file and system.inter.source.startswith("not measured"):
        # a calibrated file of one node's log: the crossing is priced at the base preset's datasheet link
        note += (f"; the inter-node link of {system.name} is {system.inter.source}, so the crossing's time is the "
                 "datasheet's: calibrate on a multi-node log to measure it")
    return values, note


#: the time constants' names (those of ``symbols.TIME_SYMBOLS``, written out: this wing starts without SymPy;
#: ``tests/training/test_fasteval.py`` holds them equal)
TIME_NAMES = frozenset(("alpha", "alpha_inter", "beta", "beta_inter", "gamma"))


def _refuse_typed_links(texts: dict, mixes: bool) -> None:
    """Refuse time constants typed for a flat algorithm whose group spans nodes (``mixes``: link_values mixes the
    hardware's two links into its α, β, which a typed α, β, α_inter or β_inter would not enter)."""
    typed = sorted(TIME_NAMES & texts.keys() - {"gamma"}) if mixes else ()
    if typed:
        raise InputError(f"{', '.join(typed)} with --hardware: N={texts.get('N')} spans nodes, and the flat algorithm's "
                         "alpha, beta mix the hardware's two links; give the links in a hardware file (intra, inter: "
                         "symcomm/schema/hardware.schema.json), or leave the time constants out")
