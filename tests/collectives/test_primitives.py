"""The primitives' definitions, and the seed's identities as data transformations."""

import numpy as np
from hypothesis import given, settings, strategies as st

from symcomm.collectives.primitives import PRIMITIVES

define = {name: p.define for name, p in PRIMITIVES.items()}


def test_all_to_all_is_the_seeds_transpose():
    # the seed's §1.4 picture, N = 4: GPU r holds [r0, r1, r2, r3] → GPU j holds [0j, 1j, 2j, 3j]
    inputs = [np.array([10 * r + j for j in range(4)]) for r in range(4)]
    out = define["all_to_all"](inputs)
    for j in range(4):
        assert list(out[j]) == [10 * r + j for r in range(4)]


def test_rooted_definitions_by_hand():
    a, b, c = np.array([1, 2]), np.array([3, 4]), np.array([5, 6])
    assert list(define["reduce"]([a, b, c])[0]) == [9, 12]
    assert list(define["gather"]([a, b, c])[0]) == [1, 2, 3, 4, 5, 6]
    assert [list(x) for x in define["scatter"]([np.arange(6), None, None])] == [[0, 1], [2, 3], [4, 5]]
    assert all(list(x) == [1, 2] for x in define["broadcast"]([a, None, None]))


def _buffers(draw, n, size):
    return [np.array(draw(st.lists(st.integers(-99, 99), min_size=size, max_size=size))) for _ in range(n)]


# 50: no branch depends on the values (every line reached by the first example, tests/tools/hypothesis_reach.py,
# 2026-12-02); what varies is the shape, N in 2..9 × 1..3 elements per rank = 24 shapes, which 50 draws mostly cover
@settings(max_examples=50, deadline=None)
@given(st.data())
def test_all_reduce_is_reduce_then_broadcast_and_reduce_scatter_then_all_gather(data):
    n = data.draw(st.integers(2, 9))
    x = _buffers(data.draw, n, n * data.draw(st.integers(1, 3)))
    want = define["all_reduce"](x)
    via_root = define["broadcast"](define["reduce"](x))
    via_shards = define["all_gather"](define["reduce_scatter"](x))
    for r in range(n):
        assert np.array_equal(via_root[r], want[r])
        assert np.array_equal(via_shards[r], want[r])


# 50: as above (N in 2..9 × 1..3 elements = 24 shapes; one code path)
@settings(max_examples=50, deadline=None)
@given(st.data())
def test_all_gather_is_gather_then_broadcast(data):
    n = data.draw(st.integers(2, 9))
    x = _buffers(data.draw, n, data.draw(st.integers(1, 3)))
    want = define["all_gather"](x)
    got = define["broadcast"](define["gather"](x))
    assert all(np.array_equal(g, w) for g, w in zip(got, want))
