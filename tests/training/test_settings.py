"""The typed run setting (symcomm/training/settings.py) and the framework table (symcomm/training/frameworks.py): one
parse, one format, one meaning of ``recompute`` in every command, one row per framework."""

import json

import pytest

import symcomm
from symcomm.training import frameworks, settings
from symcomm.views import site
from symcomm.commands.main import main
from symcomm.base.errors import InputError
from symcomm.training.frameworks import FRAMEWORKS, Framework, Scheme
from symcomm.training.settings import RunSetting
from symcomm.training.axes import data_schedule, sp_regather_of
from symcomm.training.strategies import STRATEGIES
from symcomm.training.overlap import dp_overlap_of
from symcomm.core.symbols import L as S_L

#: the documented spellings of recompute (settings.RECOMPUTE_ALIASES: 0 = none, 1 = full) and what each means
SPELLINGS = {"none": "none", "selective": "selective", "full": "full", "0": "none", "1": "full"}
EVAL = ["eval", "hybrid", "--model", "llama3-8b", "--hardware", "h100", "t=8", "d=8", "p=1", "c=1", "m=4", "b=64",
        "s=4096", "--json"]


# -- one parse, one format --------------------------------------------------------------------------

def test_parse_types_every_setting_and_format_writes_it_back():
    got = settings.parse(["zero=3", "framework=fsdp", "reshard_after_forward=0", "recompute=1", "sp=1",
                          "grad_reduce=framework"])
    # typed: the stage an int, flags bools, "as the framework does" None, recompute's alias read as full
    assert got == RunSetting(zero=3, framework="fsdp", reshard_after_forward=False, recompute="full", sp=True)
    assert got.grad_reduce is None and got.overlap_grad_reduce is None
    words = settings.format(got)
    assert "recompute=full" in words and "reshard_after_forward=0" in words and "grad_reduce=framework" in words
    assert settings.parse(words) == got                      # format, then parse: the same value


@pytest.mark.parametrize("words, named, allowed", [
    (["recompute=some"], "recompute=some", "choose none, selective, full, op or block (0 = none, 1 = full)"),
    (["zero=4"], "zero=4", "choose 0, 1, 2 or 3"),
    (["framework=torch"], "framework=torch", "choose megatron, deepspeed, fsdp, fsdp2 or megatron_fsdp"),
    (["sp=yes"], "sp=yes", "choose 0 or 1"),
    (["dp_overlap=2"], "dp_overlap=2", "choose framework, 0 or 1"),
    (["colour=red"], "'colour'", "settings: zero, framework"),
    (["recompute"], "'recompute'", "KEY=VALUE"),
])
def test_parse_refuses_a_bad_value_in_one_line_naming_the_key_and_what_is_allowed(words, named, allowed):
    with pytest.raises(InputError) as err:
        settings.parse(words)
    text = str(err.value)
    assert "\n" not in text and named in text and allowed in text


# -- the kernel key: the shipped data and the planner's lookup both come from the setting ------------

def test_the_kernel_key_of_a_setting_is_typed_and_round_trips():
    run = RunSetting(zero=3, framework="fsdp", sp=True, recompute="selective", gated=True, embeddings=True)
    key = run.key()
    # by the definition of the key: the KERNEL_SETTINGS pairs, sorted by name, each value typed as the
    # setting holds it (flags bool, the stage int, a choice str, "as the framework does" None)
    assert key == (("cp", "ring"), ("embeddings", True), ("framework", "fsdp"), ("gated", True), ("gqa", False),
                   ("moe", False), ("pipeline_split", "even"), ("recompute", "selective"), ("reshard_after_forward", None),
                   ("schedule", "1f1b"), ("sp", True), ("tied", False), ("zero", 3))
    assert [type(value) for _, value in key[-2:]] == [bool, int]
    # back from the key (and from its JSON form, lists not tuples): the same setting on those keys
    assert RunSetting.from_key(key).key() == key
    assert RunSetting.from_key(json.loads(json.dumps(key))).key() == key
    # a key naming a value its option does not allow is refused, naming the option
    with pytest.raises(InputError, match="zero=5 is not allowed"):
        RunSetting.from_key((("zero", 5),))


def test_every_shipped_kernel_key_is_a_run_setting_and_the_planner_finds_it():
    from importlib import resources

    from symcomm.numbers import kernels
    from symcomm.planner.request import SCHEMES

    folder = resources.files("symcomm.planner").joinpath("kerneldata")
    index = json.loads(folder.joinpath("index.json").read_text(encoding="utf-8"))
    assert len(index["families"]) >= 3
    for family in index["families"]:
        # symcomm.numbers.kernels.family_key's order
        run_bytes, gated, tied, moe, embeddings, cp, attention, q_width, precision = family["key"]
        run = settings.parse({"gated": gated, "tied": tied, "moe": moe, "embeddings": embeddings, "cp": cp,
                              "attention": attention, "q_width": q_width, "precision": precision})
        assert (run.gated, run.tied, run.moe, run.embeddings) == (gated, tied, moe, embeddings)   # typed as shipped
        assert (run.attention, run.q_width, run.precision) == (attention, q_width, precision)
        data = json.loads(folder.joinpath(family["file"] + ".json").read_text(encoding="utf-8"))
        for kernel in data["kernels"]:
            key = RunSetting.from_key(kernel["options"]).key()
            assert [list(pair) for pair in key] == kernel["options"]              # the file holds the canonical key
            assert kernels.shipped(key, run_bytes) is not None
    # the planner's lookup of one combination is the setting's key, and it is shipped: llama (gated, untied, dense,
    # trained without dropout as every preset)
    from symcomm.planner import option_key
    key = option_key(SCHEMES[0], "full", True, "1f1b", cp="ring", moe=False, embeddings=True, tied=False, gated=True,
                     dropout=False)
    assert key == RunSetting(zero=SCHEMES[0].zero, framework=SCHEMES[0].framework,
                             reshard_after_forward=SCHEMES[0].reshard_after_forward, sp=True, recompute="full",
                             gqa=True, embeddings=True, gated=True, dropout=False).key()
    assert kernels.shipped(key, 2) is not None


def test_eval_reads_the_step_models_options_once_into_typed_values():
    from symcomm.training.steptime import step_options

    # the step model's options typed by the settings' Options (flags bool, "as the framework does" None), the
    # hybrid strategy's left to the strategy: no text form survives to be compared with "0"/"1" again
    hybrid, own = step_options({"gated": "1", "flash": "0", "dp_overlap": "framework", "zero": "3"})
    assert hybrid == {"zero": "3"}
    assert own == {"gated": True, "flash": False, "overlap_grad_reduce": None}    # dp_overlap: its older name
    assert all(type(own[k]) is bool for k in ("gated", "flash"))


def test_recompute_reruns_the_forward_collectives_only_under_full():
    # Korthikanti et al. 2022, §5: selective recomputation re-runs the attention core (no collective);
    # full recomputation runs each layer's forward again, its collectives with it
    assert [settings.reruns_forward(x) for x in settings.RECOMPUTE] == [False, False, True, False]
    assert RunSetting(recompute="full").forward_reruns and not RunSetting(recompute="selective").forward_reruns


def test_op_recompute_reruns_the_sequence_all_gathers_alone():
    # torchtitan's _save_list (parallelize_llama.py at 9dec370a) holds reduce_scatter_tensor, not the all-gathers:
    # the recompute runs the norm-output all-gathers again and replays the reduce-scatters' saved outputs
    assert [settings.regathers_forward(x) for x in settings.RECOMPUTE] == [False, False, False, True]
    run = RunSetting(recompute="op")
    assert run.gathers_rerun and not run.forward_reruns


@pytest.mark.parametrize("words, what", [
    ({"recompute": "op", "moe": "1"}, "moe=1"),
    ({"recompute": "op", "attention": "mla"}, "attention=mla"),
    ({"recompute": "op", "flash": "0"}, "flash=1"),
])
def test_op_recompute_is_refused_in_one_line_where_the_op_list_does_not_describe_the_block(words, what):
    with pytest.raises(InputError) as err:
        settings.parse(words)
    text = str(err.value)
    assert "\n" not in text and "recompute=op" in text and what in text


def test_op_recompute_with_tensor_parallelism_needs_sequence_parallelism(capsys):
    # torchtitan's TP plan always shards the norms' sequence (parallelize_llama.py, apply_tp): t = 8 without sp is
    # refused in one line, exit 2; with sp=1 it evaluates, and the forward recompute holds the all-gathers alone
    assert main([*EVAL[:-1], "recompute=op"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "recompute=op with t=8 needs sp=1" in err
    data = _eval_json(capsys, "recompute=op", "sp=1")
    again = [term for term in data["terms"] if term["label"].endswith("(forward recompute)")]
    assert again and {term["collective"] for term in again} == {"all_gather"}
    forward = [term for term in data["terms"] if term["label"] == "sequence all-gather (forward)"]
    assert [term["count"] for term in again] == [term["count"] for term in forward]      # each forward gather once more


# -- recompute: the same words in every command ----------------------------------------------------

@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_show_takes_every_spelling_and_echoes_the_canonical_one(capsys, spelling):
    for name in ("hybrid", "tp", "sp"):
        assert main(["show", name, f"recompute={spelling}"]) == 0
        out = capsys.readouterr().out
        assert f"recompute={SPELLINGS[spelling]}" in out.splitlines()[0], (name, out.splitlines()[0])


def _eval_json(capsys, *extra):
    assert main([*EVAL, *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_eval_takes_every_spelling_and_echoes_what_it_used(capsys):
    got = {spelling: _eval_json(capsys, f"recompute={spelling}") for spelling in SPELLINGS}
    for spelling, data in got.items():
        assert data["options"]["recompute"] == SPELLINGS[spelling]
        assert data["label"].count(f"recompute={SPELLINGS[spelling]}") == 1
        # the whole setting is echoed, the hybrid's and the step model's options alike
        assert data["options"]["zero"] == "1" and data["options"]["flash"] == "1"
    # an alias is the same setting: the same numbers
    assert got["1"]["step_time"] == got["full"]["step_time"] and got["0"]["step_time"] == got["none"]["step_time"]
    # selective adds compute (the attention core again) but no collective; full adds both
    assert got["selective"]["send"] == got["none"]["send"] < got["full"]["send"]
    assert got["none"]["compute_time"] < got["selective"]["compute_time"] < got["full"]["compute_time"]


def test_the_api_takes_the_same_spellings(capsys):
    printed = _eval_json(capsys, "recompute=1")
    values = dict(word.split("=") for word in EVAL[6:-1])
    got = symcomm.evaluate("hybrid", model="llama3-8b", hardware="h100", recompute=1, **values)
    assert got["options"]["recompute"] == "full" and got["step_time"] == printed["step_time"]
    for spelling, meant in SPELLINGS.items():
        assert f"recompute={meant}" in symcomm.formula("hybrid", recompute=spelling).subject.label
        assert symcomm.formula("tp", recompute=spelling).subject.options["recompute"] == meant
    # the terms of recompute=1 and recompute=full: one setting
    assert STRATEGIES["hybrid"].terms(recompute=1) == STRATEGIES["hybrid"].terms(recompute="full")


PLAN = ["plan", "--model", "llama3-8b", "--hardware", "h100", "--gpus", "16", "--batch", "32", "--seq", "2048",
        "--top", "1", "--json"]


@pytest.mark.parametrize("spelling", ["1", "full", "0", "selective"])
def test_plan_takes_the_same_spellings_and_echoes_the_canonical_one(capsys, spelling):
    assert main([*PLAN, "--recompute", spelling]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["fixed"]["recompute"] == SPELLINGS[spelling]
    assert {s["recompute"] for row in data["layouts"] for s in row["settings"]} == {SPELLINGS[spelling]}
    assert f" recompute={SPELLINGS[spelling]} " in data["layouts"][0]["eval_command"]


def test_plan_compare_takes_the_aliases(capsys):
    assert main([*PLAN, "--compare", "t=1,p=1,d=16,recompute=1"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {s["recompute"] for s in data["compare"]["settings"]} == {"full"}


def test_a_plan_request_types_its_fixed_settings_by_the_settings_options():
    from symcomm import presets
    from symcomm.planner import PlanError, Request

    def request(**fixed):
        return Request(presets.model("llama3-8b"), presets.hardware("a100"), gpus=16, batch=32, seq=2048, **fixed)

    # text or typed, the same typed value (RunSetting's types: zero int, sp bool, recompute a word)
    got = request(zero="3", framework="fsdp", recompute="1", sp="1")
    assert (got.zero, got.framework, got.recompute, got.sp) == (3, "fsdp", "full", True)
    assert type(got.zero) is int and type(got.sp) is bool
    assert request(zero=3, framework="fsdp", recompute="full", sp=True) == got
    with pytest.raises(PlanError, match=r"--sp=yes is not allowed; choose 0 or 1"):
        request(sp="yes")


@pytest.mark.parametrize("flag, word", [(("--recompute", "1"), "recompute=full"), (("--sp", "1"), "sp=1"),
                                        (("--zero", "1"), "zero=1")])
def test_plan_reads_a_flag_and_its_word_as_one_value(capsys, flag, word):
    # --recompute 1 and recompute=full are one setting (0/1 are recompute's aliases of none/full): not "differ"
    assert main([*PLAN, *flag, word]) == 0
    data = json.loads(capsys.readouterr().out)
    name, value = word.split("=")
    assert settings.OPTIONS[name].text(data["fixed"][name]) == value       # echoed in its canonical word


def test_plan_compare_reads_sp_and_zero_by_the_same_options(capsys):
    assert main([*PLAN, "--compare", "t=1,p=1,d=16,sp=0,zero=1"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {(s["sp"], s["zero"]) for s in data["compare"]["settings"]} == {(0, 1)}
    assert main([*PLAN, "--compare", "t=1,p=1,d=16,zero=5"]) == 2
    assert "--compare zero=5 is not allowed; choose 0, 1, 2 or 3" in capsys.readouterr().err


def test_the_plan_api_takes_a_settings_flag_typed_or_as_text():
    # the other settings fixed: without embeddings no shipped kernel serves the search, and a free search built its
    # 72 combinations with SymPy in the process (15 s); fixed, 3
    common = dict(gpus=16, batch=32, seq=2048, hardware="h100", top=1, recompute="selective", zero=1,
                  framework="megatron")
    typed = symcomm.plan("llama3-8b", sp=True, embeddings=False, **common)
    text = symcomm.plan("llama3-8b", sp="1", no_embeddings=True, **common)
    assert typed["fixed"]["sp"] == 1 and typed["embeddings"] is False
    assert typed["layouts"][0]["step_time"] == text["layouts"][0]["step_time"]
    with pytest.raises(InputError, match="takes a number or text"):    # zero is a stage, not a flag: no True
        symcomm.plan("llama3-8b", **{**common, "zero": True})


def test_the_page_offers_each_recompute_and_runs_its_step_model_under_it():
    hybrids = [sub for sub in site.subjects() if sub.name == "hybrid"]
    entries = {sub.options["recompute"] for sub in hybrids}
    assert entries == set(settings.HYBRID_RECOMPUTE)           # the catalog's own words, no 0/1
    by = {sub.options["recompute"]: sub for sub in hybrids if set(sub.changed) <= {"recompute"}}
    compute = {r: site.step_quantities(by[r], "0")["compute_time"] for r in ("none", "selective")}
    assert compute["none"] != compute["selective"]           # selective is not run as none (the page before)


# -- frameworks as data ---------------------------------------------------------------------------------



@pytest.mark.parametrize("name, zero, reductions_per_step", [
    # MEGATRON_DDP: finish_grad_sync once per step (no_sync for all but the last micro-batch)
    ("megatron", 0, "1"), ("megatron", 1, "1"),
    # DEEPSPEED_ENGINE: stages 0/1 reduce at the accumulation boundary, stage ≥ 2 at every micro-batch
    ("deepspeed", 1, "1"), ("deepspeed", 2, "m"), ("deepspeed", 3, "m"),
    # FSDP_RUNTIME: the post-backward hook reduce-scatters every micro-batch unless no_sync wraps it
    ("fsdp", 0, "m"), ("fsdp", 3, "m"),
])
def test_each_row_reduces_as_its_framework_file_says(name, zero, reductions_per_step):
    from symcomm.core.symbols import m

    assert data_schedule(name, zero).gradient_reductions(m) == (m if reductions_per_step == "m" else 1)


def test_each_row_holds_its_defaults():
    # MEGATRON_FP32_GRADS: Megatron reduces fp32 gradients, DeepSpeed and FSDP the run's type
    assert [data_schedule(n, z).grad_dtype for n, z in (("megatron", 1), ("deepspeed", 2), ("fsdp", 3))] == ["fp32", "", ""]
    # MEGATRON_SP_REGATHER: Megatron's layers (and Megatron-DeepSpeed) re-gather, torch's TP keeps the input
    assert [sp_regather_of(n) for n in ("megatron", "deepspeed", "fsdp")] == [True, True, False]
    # DP_OVERLAP_SOURCE: Megatron overlaps only with --overlap-grad-reduce, DeepSpeed overlap_comm at stage 3, FSDP always
    assert [dp_overlap_of("megatron", z) for z in (0, 1)] == [False, False]
    assert [dp_overlap_of("deepspeed", z) for z in (2, 3)] == [False, True]
    assert [dp_overlap_of("fsdp", z) for z in (0, 3)] == [True, True]
    assert dp_overlap_of("megatron", 1, True) and sp_regather_of("fsdp", True)    # an explicit value wins


def test_a_stage_a_framework_does_not_run_is_refused_naming_it():
    with pytest.raises(InputError, match=r"^zero=2 is not run by framework=megatron \(DDP: zero=0"):
        data_schedule("megatron", 2)
    with pytest.raises(InputError, match=r"^zero=1 is not run by framework=fsdp \(NO_SHARD"):
        data_schedule("fsdp", 1)


def test_the_planner_searches_the_rows_schemes():
    from symcomm import planner as plan

    assert plan.SCHEMES == tuple(s for row in FRAMEWORKS.values() for s in row.schemes)
    assert plan.FRAMEWORKS == tuple(FRAMEWORKS)
    # the six schemes searched before the table (a new row adds its own)
    named = {s.name: (s.framework, s.zero, s.reshard_after_forward) for s in plan.SCHEMES}
    assert {"megatron zero 0": ("megatron", 0, None), "megatron zero 1": ("megatron", 1, None),
            "deepspeed zero 2": ("deepspeed", 2, None), "deepspeed zero 3": ("deepspeed", 3, None),
            "fsdp full-shard": ("fsdp", 3, True), "fsdp grad-op": ("fsdp", 3, False)}.items() <= named.items()


def test_a_new_framework_is_one_row(monkeypatch):
    # a framework that runs ZeRO-3 like FSDP but keeps parameters after the forward, reduces once per
    # step and overlaps nothing: every reader takes it from its row alone
    row = Framework("fsdp2", "test row", (3,), "(zero=3 only)", frameworks.NEVER, False, "fp32", False, (),
                    (Scheme("fsdp2", 3, None, "fsdp2"),), ("no file",))
    monkeypatch.setitem(FRAMEWORKS, "fsdp2", row)
    data = data_schedule("fsdp2", 3)
    assert (data.grad_reduce, data.reshard_after_forward, data.grad_dtype) == ("per_step", False, "fp32")
    assert not sp_regather_of("fsdp2") and not dp_overlap_of("fsdp2", 3)
    with pytest.raises(InputError, match=r"zero=1 is not run by framework=fsdp2 \(zero=3 only\)"):
        data_schedule("fsdp2", 1)


def test_tensor_parallelism_without_sp_does_not_take_op_and_sp_does():
    # the tp strategy has no sequence parallelism, which torchtitan's op list presumes (its saved reduce-scatters):
    # refused naming the values it takes; the sp strategy takes op and runs its forward all-gathers once more
    # (2 all-gathers + 2 reduce-scatters forward, the same backward, 2 all-gathers again: 10 collectives a layer)
    with pytest.raises(InputError, match="recompute=op is not allowed; choose none, selective or full"):
        symcomm.formula("tp", recompute="op")
    terms = STRATEGIES["sp"].terms(recompute="op", sp_regather=False)
    assert sum(term.count for term in terms) == 10 * S_L


# -- fp8_tp_gather: torchao's float8 tensor-parallel styles ----------------------------------------

@pytest.mark.parametrize("words, gathered", [
    (("framework=fsdp2", "precision=fp8_tensor"), (1, 1)),              # torchtitan under float8 tensorwise: FP8
    (("framework=fsdp2", "precision=fp8_rowwise"), (2, 2)),             # rowwise: plain ColwiseParallel, bf16
    # Transformer Engine quantizes before it gathers (distributed.py gather_along_first_dim: _all_gather_fp8), the
    # output gradient too (base.py grad_output_preprocess); blockwise FP8 (as MXFP8) gathers that gradient in both
    # directions, about 2 bytes an element, counted at 16-bit (tp_plans.TE_FP8_GATHER)
    (("framework=megatron_fsdp", "precision=fp8_tensor"), (1, 1)),
    (("framework=megatron_fsdp", "precision=fp8_block"), (1, 2)),
    (("framework=fsdp2", "precision=fp8_tensor", "fp8_tp_gather=0"), (2, 2)),
    (("framework=megatron_fsdp", "precision=fp8_tensor", "fp8_tp_gather=0"), (2, 2)),
])
def test_fp8_tp_gather_moves_one_byte_elements_by_hand(capsys, words, gathered):
    # pytorch/ao torchao/float8/float8_tensor_parallel.py at 6243040: Float8ColwiseParallel casts the sequence-sharded
    # input to FP8 before its all-gather, Float8RowwiseParallel the output gradient before the backward's all-gather;
    # the reduce-scatters carry the GEMMs' 16-bit outputs.  b/d = 8 sequences per replica in m = 4 micro-batches:
    # M = 2 · 4096 tokens · h 4096 elements, bytes = elements × 1 (FP8) or × 2 (bf16)
    data = _eval_json(capsys, "sp=1", "zero=3", *words)
    by = {term["label"]: term for term in data["terms"]}
    elements = 2 * 4096 * 4096
    for phase, bytes_each in zip(("forward", "backward"), gathered):
        assert by[f"sequence all-gather ({phase})"]["message"] == bytes_each * elements
        assert by[f"sequence reduce-scatter ({phase})"]["message"] == 2 * elements


@pytest.mark.parametrize("words", [("precision=fp8_rowwise", "sp=1"), ("precision=bf16", "sp=1"),
                                   ("precision=fp8_tensor", "sp=0")])
def test_fp8_tp_gather_needs_sequence_parallel_per_tensor_fp8(capsys, words):
    assert main([*EVAL, "framework=fsdp2", "zero=3", "fp8_tp_gather=1", *words]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "fp8_tp_gather=1 needs sp=1 and an FP8 recipe" in err
