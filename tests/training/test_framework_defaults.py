"""Framework defaults as the framework's source sets them (stop 69, an outsider's reading of DeepSpeed and torchtitan):
DeepSpeed's ZeRO-1/2 all-reduce their gradient buckets, each rank keeping its partition; torchtitan reduces FSDP2's
gradients in fp32 and does not reshard after the forward under a pipeline."""

import pytest

import symcomm

PHI = 8 * 10 ** 9          # elements; a round Φ so the hand counts below are exact


def _dp_terms(**values):
    answer = symcomm.evaluate("hybrid", **values)
    return [term for term in answer["terms"] if term["axis"] == "dp"]


@pytest.mark.parametrize("zero,m,reductions", [(1, 4, 1), (2, 4, 4)])
def test_deepspeed_all_reduces_its_gradient_buckets(zero, m, reductions):
    # deepspeed/runtime/zero/stage_1_and_2.py (v0.12.4 on): average_tensor → allreduce_and_scatter → dist.all_reduce
    # of the whole bucket; ZeRO-2 reduces after each of the m micro-batches, ZeRO-1 once at the boundary
    # (engine.py allreduce_gradients). Hand count, N = d = 8 ranks: a ring all-reduce sends 2·(N−1)/N·Φ, the
    # parameter all-gather (N−1)/N·Φ
    terms = _dp_terms(framework="deepspeed", zero=zero, Phi=PHI, h=4096, L=32, s=4096, G=8, d=8, t=1, p=1, c=1,
                      b=8 * m, m=m)
    reduce = [x for x in terms if "gradient" in x["label"]]
    assert [x["collective"] for x in reduce] == ["all_reduce"], reduce
    assert reduce[0]["count"] == reductions
    total = sum(x["send"] for x in terms)
    assert total == reductions * 2 * PHI * 7 // 8 + PHI * 7 // 8


def _fsdp2(p, **typed):
    return symcomm.evaluate("hybrid", model="llama3-8b", hardware="h100", framework="fsdp2", zero=3, d=32 // p, p=p,
                            t=1, c=1, b=256, m=8, s=8192, **typed)


def test_fsdp2_follows_torchtitans_defaults():
    # torchtitan config/configs.py: mixed_precision_reduce is float32, its one value; distributed/fsdp.py: the default
    # reshard policy is `not pp_enabled`
    piped, alone = _fsdp2(2), _fsdp2(1)
    dp_terms = lambda answer: [t for t in answer["terms"] if t["axis"] == "dp"]    # noqa: E731
    gathers_back = [t for t in dp_terms(piped) if t["label"].endswith("all-gather (backward)")]
    assert gathers_back and all(t["count"] == 0 for t in gathers_back), gathers_back   # kept under the pipeline
    assert any(t["count"] > 0 for t in dp_terms(alone) if t["label"].endswith("all-gather (backward)"))
    scatters = [t for t in dp_terms(piped) if "reduce-scatter" in t["label"]]
    assert scatters and all(t.get("dtype") == "fp32" for t in scatters), scatters
    # typed, a value holds for every p: the same numbers as the default under the pipeline
    assert _fsdp2(2, reshard_after_forward=0, grad_dtype="fp32")["step_time"] == pytest.approx(piped["step_time"],
                                                                                                 rel=1e-12)
    assert _fsdp2(2, reshard_after_forward=1)["step_time"] != pytest.approx(piped["step_time"], rel=1e-6)
