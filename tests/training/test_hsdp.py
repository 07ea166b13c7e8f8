"""hsdp=1 d_r: hybrid sharding, FSDP2 on a (replicate, shard) mesh (symcomm.training.frameworks.HSDP_SOURCE): d_r
replicas of the model, each sharded over d/d_r of the data-parallel ranks.  Expected values from the definition: the
sharded states split over the shard group only, the gathers and reduce-scatters run over it, and each reduced shard
is all-reduced over the replicas (what PyTorch sends: tests/integration/test_torch_fsdp2_counts.py)."""

import pytest

import symcomm
from symcomm.base.errors import InputError

LAYOUT = dict(model="llama3.1-8b", hardware="h100", t=1, p=1, c=1, d=16, b=32, m=2, s=4096, framework="fsdp2",
              zero=3, grad_dtype="fp32", embeddings=1)


def _run(**words):
    return symcomm.evaluate("hybrid", **{**LAYOUT, **words})


def test_one_replica_is_plain_sharding():
    plain, one = _run(), _run(hsdp=1, d_r=1)
    for key in ("step_time", "comm_time", "memory_per_gpu"):
        assert one[key] == pytest.approx(plain[key], rel=1e-12), key


def test_the_sharded_states_split_over_the_shard_group_only():
    # 16 ranks as 4 replicas of 4 shards: each GPU holds 16/4 = 4 times the gradient and optimizer shard
    plain, four = _run(), _run(hsdp=1, d_r=4)
    for part in ("gradients", "optimizer"):
        assert four["memory"][part] == pytest.approx(4 * plain["memory"][part], rel=1e-12), part


def test_the_shard_group_gathers_and_the_replicas_all_reduce():
    plain = {t["label"]: t for t in _run()["terms"] if t["axis"] == "dp"}
    four = {t["label"]: t for t in _run(hsdp=1, d_r=4)["terms"] if t["axis"] == "dp"}
    for label, term in plain.items():
        assert (four[label]["group"], four[label]["count"], four[label]["message"]) == \
            (16 // 4, term["count"], term["message"]), label
    reduced = four["per-layer gradient all-reduce over the replicas (backward)"]
    scatter = four["per-layer gradient reduce-scatter (backward)"]
    # once per reduce-scatter, over the 4 replicas, the shard each of the 4 shard ranks reduced
    assert (reduced["group"], reduced["count"], reduced["message"]) == (4, scatter["count"], scatter["message"] / 4)
    assert reduced["dtype"] == "fp32"


@pytest.mark.parametrize("words, says", [
    (dict(framework="megatron", zero=1, grad_dtype=None), "hsdp=1 with framework=megatron is refused"),
    (dict(d_r=3), "d=16 must be divisible by d_r=3"),
    # the experts' data-parallel grid under hybrid sharding is not modelled
    (dict(model="mixtral-8x7b", moe=1, e=8), "hsdp=1 with framework=fsdp2 and moe=1 is refused"),
])
def test_refused_in_one_line(words, says):
    typed = {**LAYOUT, "hsdp": 1, "d_r": 2, **words}
    typed = {key: value for key, value in typed.items() if value is not None}
    with pytest.raises(InputError, match=says):
        symcomm.evaluate("hybrid", **typed)
