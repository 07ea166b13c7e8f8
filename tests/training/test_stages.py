"""Uneven pipeline stages (symcomm/training/stages.py, stagestep.py): the layers each stage kind holds, the
busiest stage the step model finds, the memory of each stage, the refusals, and the planner's splits — every
expected value counted by hand from the definition of the split (the first of the p·v chunks L_first layers, the
last L_last, the p·v − 2 middle ones (L − L_first − L_last)/(p·v − 2) each; stage i holds chunks i, i + p, ...)."""

import pytest
import sympy as sp

from symcomm import presets
from symcomm.core import symbols as S
from symcomm.planner import Request, plan
from symcomm.training import steptime
from symcomm.training.stages import stage_layers
from symcomm.training.subjects import subject

NO_COMM = {"alpha": 0.0, "beta": 0.0, "gamma": 0.0, "alpha_inter": 0.0, "beta_inter": 0.0, "G": 8}
# one layer's forward: Q, O h × h, K, V h × h_kv, QKᵀ and scores·V s²h each, MLP h → F → h (2 FLOPs per
# multiply-add): 2·32·64·(2·64 + 2·64) + 2·2·32·32·64 + 2·2·32·64·256 = 1 048 576 + 262 144 + 2 097 152; causal
# flash attention (flash=1) runs half of the s × s core (FlashAttention-2 §3.1.1): 262 144 / 2 = 131 072
LAYER = 1_048_576 + 131_072 + 2_097_152
# forward + backward of one layer at 1 FLOP per peak-second (eta = eta_attn = 1): the GEMMs 3× their forward
# (input and weight gradients), the flash core 1 + 5/2 of its forward (its backward recomputes the scores: five
# s × s GEMMs to the forward's two, FlashAttention-2, Algorithm 2)
LAYER_STEP = 3 * (1_048_576 + 2_097_152) + sp.Rational(7, 2) * 131_072
TINY = {"h": 64, "a": 4, "h_kv": 64, "F": 256, "s": 32, "Phi": 1000, "e": 1, "v": 1, "t": 1, "c": 1, "d": 1,
        "b": 8, "m": 8, "peak": 1e12, "eta": 1.0, "eta_attn": 1.0, "kappa": 0.0, "hbm": 1e30, **NO_COMM}
PLAIN = {"zero": "0", "framework": "megatron", "gqa": "1", "gated": "0", "flash": "1", "dp_overlap": "0",
         "grad_dtype": "same"}
UNEVEN = {**PLAIN, "pipeline_split": "first_last"}


def _layers(split, schedule, values):
    return {kind: stage_layers(split, schedule, kind).subs({S.symbol(k): x for k, x in values.items()})
            for kind in ("first", "middle", "last")}


def test_the_stages_hold_the_chunks_the_split_gives_them():
    # L = 10 on p = 4, L_first = 1, L_last = 3: the two middle chunks (10 − 1 − 3)/2 = 3 each
    assert _layers("first_last", "1f1b", {"L": 10, "p": 4, "L_first": 1, "L_last": 3}) == {
        "first": 1, "middle": 3, "last": 3}
    # interleaved, p = 2, v = 2: chunks 0, 1, 2, 3 hold 1, 3, 3, 3; stage 0 holds chunks 0 and 2 (1 + 3), stage 1
    # chunks 1 and 3 (3 + 3)
    assert _layers("first_last", "interleaved", {"L": 10, "p": 2, "v": 2, "L_first": 1, "L_last": 3}) == {
        "first": 4, "middle": 6, "last": 6}
    # p = 2, v = 1: no middle chunk, the numerator is 0 (whatever the middle figure, no stage uses it)
    got = _layers("first_last", "1f1b", {"L": 10, "p": 2, "L_first": 4, "L_last": 6})
    assert (got["first"], got["last"]) == (4, 6)
    # even: L/p on every stage, today's rule
    assert _layers("even", "1f1b", {"L": 12, "p": 4}) == {"first": 3, "middle": 3, "last": 3}


def test_the_last_stage_is_busiest_when_the_lm_head_is_heavy():
    values = {**TINY, "L": 10, "p": 4, "L_first": 1, "L_last": 3, "V": 1000}
    q = steptime.quantities(values, 2, **{**UNEVEN, "embeddings": "1"})
    # one sequence per micro-batch; the LM head 2·32·64·1000 = 4 096 000 FLOPs forward; forward + backward = 3×:
    # first 1 layer, middle 3 layers, last 3 layers + the LM head
    head = 2 * 32 * 64 * 1000
    slots = {"first": float(LAYER_STEP) / 1e12, "middle": float(3 * LAYER_STEP) / 1e12,
             "last": float(3 * LAYER_STEP + 3 * head) / 1e12}
    for kind, slot in slots.items():
        assert float(q[f"stage_slot_{kind}"]) == pytest.approx(slot, rel=1e-12)
    # 1F1B: m + p − 1 = 11 slots of the busiest stage (Narayanan et al. 2021 §2.2), the optimizer free (hbm = ∞)
    assert float(q["step_time"]) == pytest.approx(11 * slots["last"], rel=1e-12)
    assert float(q["bubble_time"]) == pytest.approx(3 * slots["last"], rel=1e-12)
    assert steptime.busiest_stages({k: float(x) for k, x in q.items()}, 4)["slot"] == "the last pipeline stage"


def test_a_middle_stage_is_busiest_when_the_ends_are_light():
    # L_first = L_last = 1: the middle chunks hold (10 − 2)/2 = 4 layers each, more than the last's 1 + LM head
    values = {**TINY, "L": 10, "p": 4, "L_first": 1, "L_last": 1, "V": 1000}
    q = steptime.quantities(values, 2, **{**UNEVEN, "embeddings": "1"})
    middle = float(4 * LAYER_STEP) / 1e12
    assert 4 * LAYER > LAYER + 2 * 32 * 64 * 1000 and LAYER == 3_276_800
    assert float(q["step_time"]) == pytest.approx(11 * middle, rel=1e-12)
    named = steptime.busiest_stages({k: float(x) for k, x in q.items()}, 4)
    assert named["slot"] == "a middle pipeline stage (rank 1)"


def test_an_even_first_last_split_gives_the_even_numbers():
    # L = 8 on p = 4, two layers a stage: the slot is 2·LAYER_STEP (no LM head), m + p − 1 = 11 slots, by hand;
    # the even split and first_last with L_first = L_last = 2 both give it
    values = {**TINY, "L": 8, "p": 4, "V": 1000}
    hand = float(11 * 2 * LAYER_STEP) / 1e12
    even = steptime.quantities(values, 2, **{**PLAIN, "embeddings": "0"})
    uneven = steptime.quantities({**values, "L_first": 2, "L_last": 2}, 2, **{**UNEVEN, "embeddings": "0"})
    assert float(even["step_time"]) == pytest.approx(hand, rel=1e-12)
    assert float(uneven["step_time"]) == pytest.approx(hand, rel=1e-12)


def test_memory_is_the_stage_holding_the_most():
    # zero=0, 2-byte gradients: 2 + 2 + 12 = 16 bytes per parameter held; no embeddings: a stage holds Φ·layers/L;
    # activations (Korthikanti et al. 2022 Table 2, flash, t = 1, no SP): 34·s·b·h = 34·32·1·64 = 69 632 bytes a
    # layer and micro-batch; 1F1B in flight at rank r: min(p − r, m) = 4 (first), 3 (rank 1), 1 (last)
    values = {**TINY, "L": 10, "p": 4, "L_first": 1, "L_last": 3, "V": 1000}
    q = steptime.quantities(values, 2, **{**UNEVEN, "embeddings": "0"})
    per_layer = 34 * 32 * 64
    hand = {"first": 16 * 100 + 1 * 4 * per_layer, "middle": 16 * 300 + 3 * 3 * per_layer,
            "last": 16 * 300 + 3 * 1 * per_layer}
    assert hand == {"first": 280_128, "middle": 631_488, "last": 213_696}
    for kind, bytes_ in hand.items():
        assert float(q[f"stage_bytes_{kind}"]) == pytest.approx(bytes_, rel=1e-12)
    assert float(q["memory_per_gpu"]) == pytest.approx(631_488, rel=1e-12)
    report = steptime.report({**values}, 2, {k: v for k, v in UNEVEN.items() if k not in steptime.STEP_OPTIONS},
                             {k: steptime.STEP_OPTIONS[k].resolve(v) for k, v in UNEVEN.items()
                              if k in steptime.STEP_OPTIONS})
    assert report["busiest_stage"]["memory"] == "a middle pipeline stage (rank 1)"
    assert report["memory"]["activations"] == pytest.approx(9 * per_layer, rel=1e-12)


HYBRID = {S.t: 1, S.d: 1, S.c: 1, S.N: 8, S.a: 8, S.b: 8, S.m: 8, S.s: 1024, S.e: 1, S.E: 1}


@pytest.mark.parametrize("values,options,message", [
    # 61 − 1 − 1 = 59 layers for p − 2 = 6 middle stages
    ({S.L: 61, S.p: 8, S.L_first: 1, S.L_last: 1}, {}, "L − L_first − L_last = 59 must be divisible by p − 2 = 6"),
    # interleaved: p·v − 2 = 14 middle chunks
    ({S.L: 61, S.p: 8, S.v: 2, S.L_first: 2, S.L_last: 2}, {"schedule": "interleaved"},
     "L − L_first − L_last = 57 must be divisible by p·v − 2 = 14"),
    ({S.L: 10, S.p: 4, S.L_first: 8, S.L_last: 4}, {}, "L_first + L_last = 12 must not exceed L = 10"),
    ({S.L: 10, S.p: 2, S.N: 2, S.L_first: 4, S.L_last: 5}, {}, "p = 2 model chunks has no middle chunk"),
    # one stage: its one chunk is the whole model, the even split
    ({S.L: 10, S.p: 1, S.N: 1, S.L_first: 10, S.L_last: 10}, {}, "pipeline_split=first_last needs p ≥ 2 stages, not p=1"),
])
def test_a_split_that_cannot_be_is_refused_in_words(values, options, message):
    sub = subject("hybrid", pipeline_split="first_last", **options)
    problems = sub.problems({**HYBRID, **values})
    assert any(message in line for line in problems), problems


@pytest.mark.parametrize("values", [
    {S.L: 61, S.p: 8, S.L_first: 7, S.L_last: 6},       # 48 = 6 · 8
    {S.L: 10, S.p: 2, S.N: 2, S.L_first: 4, S.L_last: 6},
    {S.L: 10, S.p: 4, S.N: 4, S.L_first: 0, S.L_last: 0},  # Megatron lets an end chunk hold no transformer layer
])
def test_a_split_that_can_be_is_accepted(values):
    assert subject("hybrid", pipeline_split="first_last").problems({**HYBRID, **values}) == []


def test_the_even_split_still_refuses_what_does_not_divide():
    assert any(line.startswith("L=126 must be divisible by p=8") and "pipeline_split=first_last" in line
               for line in subject("hybrid").problems({**HYBRID, S.L: 126, S.p: 8}))


@pytest.mark.parametrize("model,pp,gpus,batch", [("deepseek-v3", 8, 1024, 4096), ("llama3-405b", 16, 2048, 2048)])
def test_the_planner_finds_an_uneven_layout(model, pp, gpus, batch):
    # 61 layers on 8 stages, 126 on 16: no even split exists, so every row is a first/last split
    layers = presets.model(model).layers
    assert layers % pp
    got = plan(Request(model=presets.model(model), hardware=presets.hardware("h100"), gpus=gpus, batch=batch,
                       seq=4096, gpus_per_node=8, pp=pp), top=3)
    row = got.rows(1)[0]
    assert row["p"] == pp and row["pipeline_split"] == "first_last"
    chunks = row["p"] * row["v"]
    middle, rest = divmod(layers - row["L_first"] - row["L_last"], chunks - 2)
    assert rest == 0 and abs(row["L_first"] - middle) <= 2 and abs(row["L_last"] - middle) <= 2
    assert f"L_first={row['L_first']}" in row["eval_command"] and "pipeline_split=first_last" in row["eval_command"]


DEEPSEEK_P8 = dict(model="deepseek-v3", hardware="h100", t=1, p=8, d=16, c=1, e=8, b=1024, m=64, s=4096, moe=1,
                   pipeline_split="first_last", L_first=7, L_last=6)


def test_the_python_api_and_eval_take_the_same_words():
    import json

    import symcomm
    from symcomm.commands.main import main

    got = symcomm.evaluate("hybrid", **DEEPSEEK_P8)
    assert got["options"]["pipeline_split"] == "first_last"
    # 61 − 7 − 6 = 48 layers over the 6 middle stages: 8 each, the extras' hand count
    assert (got["layers_first_stage"], got["layers_middle_stage"], got["layers_last_stage"]) == (7, 8, 6)
    assert set(got["stages"]) == {"first", "middle", "last"}
    words = ["eval", "hybrid", "--model", "deepseek-v3", "--hardware", "h100", "--json"]
    words += [f"{k}={v}" for k, v in DEEPSEEK_P8.items() if k not in ("model", "hardware")]
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main(words) == 0
    printed = json.loads(out.getvalue(), parse_constant=lambda x: pytest.fail(f"not strict JSON: {x}"))
    assert printed["step_time"] == got["step_time"] and printed["busiest_stage"] == got["busiest_stage"]


def test_the_command_line_refuses_a_bad_split_in_one_line(capsys):
    from symcomm.commands.main import main

    words = ["eval", "hybrid", "--model", "deepseek-v3", "--hardware", "h100"]
    words += [f"{k}={v}" for k, v in {**DEEPSEEK_P8, "L_first": 1, "L_last": 1}.items() if k not in ("model", "hardware")]
    assert main(words) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "L − L_first − L_last = 59 must be divisible by p − 2 = 6" in err
    assert main([w for w in words if not w.startswith(("pipeline_split", "L_first", "L_last"))]
                + ["pipeline_split=uneven"]) == 2
    assert "pipeline_split=uneven is not allowed; choose even or first_last" in capsys.readouterr().err


def test_eval_says_whose_terms_it_prints_under_an_uneven_split():
    # Qwen3-235B on p = 8 with 2 layers on the first and last stages and 15 on each middle one: the strategy's terms
    # count the last stage's 2 layers, while the step's slot is a middle stage's (an outsider read "busiest GPU per
    # axis" beside the last stage's 2 layers against comm alone's middle-stage times as a contradiction)
    from conftest import symcomm_command

    words = ["--model", "qwen3-235b-a22b", "--hardware", "h100", "t=4", "p=8", "d=8", "e=8", "c=1", "b=512", "m=64",
             "s=4096", "zero=1", "sp=1"]
    uneven = symcomm_command("eval", "hybrid", *words, "pipeline_split=first_last", "L_first=2", "L_last=2")
    assert uneven.returncode == 0, uneven.stderr
    assert ("the last pipeline stage's GPU per axis (an uneven split: these terms and the send and total above count "
            "its 2 layers; a middle pipeline stage (rank 1) sets the step's slot") in uneven.stdout
    # without --hardware no stage kind is compared: said all the same (an outsider read the last stage's send as the
    # busiest rank's)
    counts = symcomm_command("eval", "hybrid", *words[:2], *words[4:], "G=8", "pipeline_split=first_last", "L_first=2",
                             "L_last=2")
    assert counts.returncode == 0, counts.stderr
    assert ("count its 2 layers; the other stages' are not counted here; the step model (--hardware) prices every "
            "stage kind") in counts.stdout and "busiest GPU per axis" not in counts.stdout
    # an even split (94 layers over p = 2) prices the last stage, whose terms they are
    even = symcomm_command("eval", "hybrid", *[{"p=8": "p=2", "d=8": "d=32", "m=64": "m=16"}.get(w, w) for w in words])
    assert even.returncode == 0, even.stderr
    assert "busiest GPU per axis:" in even.stdout
