"""ga_schedules=1: a step of n_ga gradient-accumulation steps, each one pipeline schedule of m/n_ga micro-batches, as
torch.distributed.pipelining runs them under torchtitan and NeMo AutoModel (symcomm.training.frameworks.PIPELINING_GA).
Expected values from the definition: every schedule fills and drains its pipeline ((p - 1)/v micro-batch slots each,
Narayanan et al. 2021 §2.2), and every schedule ends in the stage's post-backward, which reduce-scatters the gradients
and reshards the parameters, so a stage kept gathered within a schedule gathers again in the next."""

import subprocess
import sys

import pytest

import symcomm
from symcomm.base.errors import InputError

# Llama 3.1 8B on 2 pipeline stages of 4 FSDP2 ranks, 24 micro-batches a step, as torchtitan runs FSDP2 under PP
# (reshard_after_forward=0, gradients reduced once per schedule); d = 4 keeps the data-parallel collectives in
LAYOUT = dict(model="llama3.1-8b", hardware="h100", t=1, p=2, c=1, d=4, b=96, m=24, s=4096, framework="fsdp2",
              zero=3, grad_dtype="fp32", reshard_after_forward=0, grad_reduce="per_step", embeddings=1)


def _run(**words):
    return symcomm.evaluate("hybrid", **{**LAYOUT, **words})


def _counts(result) -> dict:
    return {term["label"]: term["count"] for term in result["terms"] if term["axis"] == "dp"}


def test_one_schedule_a_step_is_the_plain_step():
    # n_ga = 1: the step's m micro-batches are one schedule, as without the setting
    plain, one = _run(), _run(ga_schedules=1, n_ga=1)
    for key in ("step_time", "bubble_time", "exposed_comm_time", "comm_time", "memory_per_gpu"):
        assert one[key] == pytest.approx(plain[key], rel=1e-12), key


def test_each_schedule_fills_and_drains():
    # 1F1B on p = 2: (p - 1) = 1 micro-batch slot of bubble per schedule, so 4 schedules pay 4 slots where one pays 1
    plain, four = _run(), _run(ga_schedules=1, n_ga=4)
    assert four["bubble_time"] == pytest.approx(4 * plain["bubble_time"], rel=1e-12)
    assert four["bubble_fraction"] == pytest.approx(4 * 1 / 24, rel=1e-12)       # n_ga (p - 1)/m
    assert plain["bubble_fraction"] == pytest.approx(1 / 24, rel=1e-12)
    # the compute is the same 24 micro-batches either way
    assert four["compute_time"] == pytest.approx(plain["compute_time"], rel=1e-12)


def test_interleaved_bubble_per_schedule():
    # interleaved, v = 2 chunks a stage: (p - 1)/v = 1/2 slot per schedule, 3 schedules of 8 micro-batches
    words = dict(schedule="interleaved", v=2)
    plain, three = _run(**words), _run(**words, ga_schedules=1, n_ga=3)
    assert three["bubble_fraction"] == pytest.approx(3 * 1 / (2 * 24), rel=1e-12)
    assert three["bubble_time"] == pytest.approx(3 * plain["bubble_time"], rel=1e-12)


def test_every_schedule_reduces_and_regathers():
    # gradients reduce-scattered once a schedule (the last backward's post-backward) and, the stage resharded after
    # it, its layers all-gathered again for the next schedule's first forward: 3 of each where one schedule runs 1
    plain, three = _counts(_run()), _counts(_run(ga_schedules=1, n_ga=3))
    assert set(plain) == set(three)
    for label, count in plain.items():
        assert three[label] == 3 * count, label
    # resharded after every forward, every backward gathers anyway (the last stage's m = 24), and its first forward
    # of each schedule: the schedules add their first forward's gathers and their reductions
    plain, three = _counts(_run(reshard_after_forward=1)), _counts(_run(reshard_after_forward=1, ga_schedules=1, n_ga=3))
    for label, count in plain.items():
        assert three[label] == (count if "(backward)" in label and "all-gather" in label else 3 * count), label
    # the last stage's 16 blocks and its root unit (the LM head) gathered 3 times a step, once a schedule; the backward
    # gathers the 16 blocks again every micro-batch, not the root, which FSDP keeps gathered through the backward
    # (_fsdp_state.py, _lazy_init): 24·16; the root its own gather at its own size (axes.ROOT_UNIT_FIRST), the blocks'
    # 16 theirs
    assert three["root-unit parameter all-gather (forward)"] == 3 * 1
    assert three["per-layer parameter all-gather (forward)"] == 3 * 16
    assert three["per-layer parameter all-gather (backward)"] == 24 * 16


def test_a_gpu_holds_one_schedule_at_once():
    # each schedule ends in the post-backward that reshards and drops its micro-batches: at most one schedule's
    # 24/4 = 6 micro-batches of 4 sequences are held, as in a step of 24 sequences in 6 micro-batches
    four = _run(ga_schedules=1, n_ga=4)
    alone = _run(b=24, m=6)
    assert four["memory_per_gpu"] == pytest.approx(alone["memory_per_gpu"], rel=1e-12)
    assert four["memory"] == pytest.approx(alone["memory"], rel=1e-12)


def test_more_schedules_never_faster():
    # more fills and drains and more reductions: never a shorter step
    times = [_run(ga_schedules=1, n_ga=n)["step_time"] for n in (1, 2, 4, 8)]
    assert times == sorted(times) and times[0] < times[-1]


def test_refused_where_the_framework_runs_one_schedule():
    megatron = {key: value for key, value in LAYOUT.items()
                if key not in ("grad_dtype", "reshard_after_forward", "grad_reduce")}
    with pytest.raises(InputError, match="ga_schedules=1 with framework=megatron is refused.*framework=fsdp2"):
        symcomm.evaluate("hybrid", **{**megatron, "framework": "megatron", "zero": 1, "ga_schedules": 1, "n_ga": 2})


@pytest.mark.parametrize("words, says", [
    (dict(p=1, d=8, ga_schedules=1, n_ga=2), "ga_schedules=1 with p=1 needs p at least 2"),
    (dict(ga_schedules=1, n_ga=5), "m=24 must be divisible by n_ga=5"),
])
def test_refused_in_one_line_by_the_command(words, says):
    typed = {**LAYOUT, **words}
    argv = ["eval", "hybrid", "--model", typed.pop("model"), "--hardware", typed.pop("hardware")]
    argv += [f"{key}={value}" for key, value in typed.items()]
    done = subprocess.run([sys.executable, "-m", "symcomm", *argv], capture_output=True, text=True)
    assert done.returncode == 2
    assert says in done.stderr and "Traceback" not in done.stderr
