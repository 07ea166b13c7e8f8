"""The sensitivity script's arithmetic (derivations.sensitivity), checked by hand."""

import pytest

from derivations import sensitivity


def test_the_implied_share_is_the_published_one_scaled_by_the_core_s_time():
    # a row priced at the published share 0.25: 10 s without the core, 40 s with it, so the core took 30 s; measured
    # 34 s leaves the core 24 s, and the same FLOPs in 24 s run at 0.25 · 30 / 24 = 0.3125 of the peak
    assert sensitivity.implied_share(0.25, 40.0, 10.0, 34.0) == pytest.approx(0.3125)
    # measured as predicted: the published share itself
    assert sensitivity.implied_share(0.25, 40.0, 10.0, 40.0) == pytest.approx(0.25)
    # the rest alone already takes the measured time: the row says nothing of the core
    assert sensitivity.implied_share(0.25, 40.0, 10.0, 10.0) is None


def test_no_overlap_is_never_faster_than_the_overlap_it_replaces_where_chunks_cost_nothing():
    # tp_overlap=1 hides communication (symcomm.training.overlap.tp_exposed) and runs its GEMMs in Transformer Engine's
    # chunks, each reading the weight again (compute.ub_chunk_elements); the width term prices those reads, so at
    # w_half = 0 the chunks cost nothing and, priced without the overlap, no run is faster
    for role, (typed, off) in sensitivity.tp_overlap_off(w_half=0).items():
        assert typed and len(typed) == len(off)
        assert all(b >= a - 1e-12 for a, b in zip(typed, off)), role
