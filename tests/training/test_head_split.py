"""The heads a layout splits (symcomm/training/megatron_features.py: head_split_refusal): eval refuses what
Megatron-Core refuses and the planner never searches, on both of its paths, once the model's shape is known."""

import json

import pytest

from symcomm.api import evaluate
from symcomm.base.errors import InputError
from symcomm.training.megatron_features import head_split_refusal

from conftest import symcomm_command

# Llama 3.1 8B: h = 4096, a = 32 heads of 128, 8 K/V heads (h_kv = 1024)
LLAMA_8B = {"a": 32, "h": 4096, "h_kv": 1024}


@pytest.mark.parametrize("t, c, cp, refused", [
    (3, 1, "ring", "a=32 attention heads"),          # 32 % 3 = 2
    (16, 1, "ring", "8 K/V heads"),                  # 32 % 16 = 0, but 8 % 16 = 8
    (8, 1, "ring", None),                            # 8 | 32 and 8 | 8
    (2, 32, "ulysses", "c must divide 16"),          # a/t = 16 heads a rank, 16 % 32 = 16
    # 16 % 8 = 0, but each rank's 8/2 = 4 K/V heads over c = 8: Transformer Engine's all-to-all asks every head count
    # to divide over the CP ranks (context_parallel.py at d0067d0d: num_heads % cp_size == 0 for Q, K, V)
    (2, 8, "ulysses", "so c must divide 4"),
    (2, 4, "ulysses", None),                         # 16 % 4 = 0 and 4 % 4 = 0
    (2, 32, "ring", None),                           # a ring splits the sequence, not the heads
])
def test_the_heads_over_t_and_ulysses_c_by_hand(t, c, cp, refused):
    said = head_split_refusal({"cp": cp}, {**LLAMA_8B, "t": t, "c": c})
    assert (said is None) == (refused is None)
    if refused:
        assert refused in said


def test_mla_has_no_kv_heads_to_split_and_head_dim_models_use_their_own_width():
    # DeepSeek-V3's 128 heads over t = 8 under MLA: K and V are per head, nothing else to check
    assert head_split_refusal({"attention": "mla"}, {"a": 128, "h": 7168, "h_kv": 7168, "t": 8}) is None
    # Qwen3-30B-A3B: 32 heads of head_dim 128 (h_q = 4096) over h = 2048, 4 K/V heads (h_kv = 512): t = 8 splits the
    # 32 heads but not the 4 K/V heads; read with h/a = 64 the K/V would look like 8 heads and pass
    said = head_split_refusal({}, {"a": 32, "h": 2048, "h_q": 4096, "h_kv": 512, "t": 8})
    assert said and "4 K/V heads" in said
    assert head_split_refusal({}, {"a": 32, "h": 2048, "h_q": 4096, "h_kv": 512, "t": 4}) is None


def test_eval_refuses_on_the_command_line_and_in_the_api_alike():
    words = ["p=1", "d=8", "c=1", "b=64", "m=8", "s=4096"]
    done = symcomm_command("eval", "hybrid", "--model", "llama3.1-8b", "--hardware", "h100", "t=3", *words)
    assert done.returncode == 2 and "t=3 does not divide the model's a=32 attention heads" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    with pytest.raises(InputError, match="does not divide the model's a=32"):
        evaluate("hybrid", model="llama3.1-8b", hardware="h100", t=3, p=1, d=8, c=1, b=64, m=8, s=4096)
    # t = 8 runs as before
    assert evaluate("hybrid", model="llama3.1-8b", hardware="h100", t=8, p=1, d=1, c=1, b=8, m=1, s=4096)["step_time"] > 0


def test_the_communication_alone_of_a_model_refuses_the_same_split():
    # eval hybrid --model without --hardware (the communication only): Llama 3 70B's 64 heads over t = 3 cannot run
    # (each rank a/t whole heads), so its fractional message counts (h_kv·s/3 elements) are not printed; an outsider
    # saw them printed where --hardware refused the layout
    words = ["G=8", "t=3", "p=1", "d=1", "c=1", "b=8", "m=8"]
    done = symcomm_command("eval", "hybrid", "--model", "llama3-70b", *words)
    assert done.returncode == 2 and "t=3 does not divide the model's a=64 attention heads" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    with pytest.raises(InputError, match="4 K/V heads"):
        evaluate("hybrid", model="qwen3-30b-a3b", G=8, t=8, sp=1, p=1, d=1, c=1, e=1, b=8, m=8)
    assert evaluate("hybrid", model="llama3-70b", G=8, t=8, p=1, d=1, c=1, b=8, m=8)["send"] > 0


def test_groups_that_do_not_tile_the_nvlink_domains_are_said():
    # GB200 NVL72: 72 GPUs a domain.  t = 1, c = 1, d = 64, e = 64 on 128 GPUs: the expert and data-parallel groups of
    # 64 ranks 0-63 and 64-127 in Megatron's rank order, the second one 8 ranks in the first domain (64-71) and 56 in
    # the second: it straddles; G = 64 tiles them; an H100 node of 8 holds t = 8 whole
    layout = ["--model", "deepseek-v3", "--hardware", "gb200", "t=1", "p=2", "d=64", "c=1", "e=64", "b=1024", "m=16",
              "s=4096", "precision=mxfp8", "pipeline_split=first_last", "L_first=31", "L_last=30", "recompute=full"]
    said = symcomm_command("eval", "hybrid", *layout)
    assert said.returncode == 0, said.stderr
    assert "the data-parallel groups of 64 ranks, the expert-parallel groups of 64 ranks do not tile the NVLink " \
           "domains of G=72 GPUs" in said.stderr
    tiled = symcomm_command("eval", "hybrid", *layout, "G=64")
    assert tiled.returncode == 0 and "do not tile" not in tiled.stderr
    h100 = symcomm_command("eval", "hybrid", "--model", "llama3-70b", "--hardware", "h100", "t=8", "p=4", "d=4", "c=1",
                           "b=64", "m=8")
    assert h100.returncode == 0 and "do not tile" not in h100.stderr
    # plan says which of its rows do (576 GPUs, expert-parallel groups of 64: every one of them here)
    planned = symcomm_command("plan", "--model", "deepseek-v3", "--hardware", "gb200", "--gpus", "576", "--ep", "64",
                              "--batch", "4608", "--seq", "4096", "--precision", "mxfp8", "--top", "3")
    assert planned.returncode == 0, planned.stderr
    assert "NVLink domains: rows 1, 2, 3 have parallel groups that do not tile the domains of 72 GPUs" in planned.stdout
    tiled = symcomm_command("plan", "--model", "llama3-70b", "--hardware", "h100", "--gpus", "64", "--batch", "64",
                            "--top", "3")
    assert tiled.returncode == 0 and "NVLink domains:" not in tiled.stdout


@pytest.mark.parametrize("schedule", [None, "1f1b"])
def test_v_off_the_interleaved_schedule_is_refused(schedule):
    # a recipe's virtual pipeline size typed without schedule=interleaved was priced as one chunk a stage, said only in
    # a note that v was not used (an outsider's DeepSeek-V3 recipe: 37.1 s, against 28.4 s interleaved)
    words = ["t=8", "p=4", "v=2", "d=4", "c=1", "b=64", "m=8"] + ([f"schedule={schedule}"] if schedule else [])
    said = symcomm_command("eval", "hybrid", "--model", "llama3-70b", "--hardware", "h100", *words)
    assert said.returncode == 2 and "Traceback" not in said.stderr
    assert "is the interleaved schedule's model chunks per pipeline stage" in said.stderr
    ran = symcomm_command("eval", "hybrid", "--model", "llama3-70b", "--hardware", "h100", *words[:7],
                          "schedule=interleaved")
    assert ran.returncode == 0, ran.stderr


def test_group_limited_routing_beside_a_dispatcher_of_every_copy_is_said_to_change_nothing():
    # Megatron's all-to-all dispatcher sends each of a token's k routed copies, so where they sit (router_groups) does
    # not change its bytes; the flex dispatchers send a token once per GPU or node, and there it counts
    from symcomm.training.megatron_features import routing_note

    said = routing_note({"moe": "1", "router_groups": "8", "dispatcher": "alltoall"})
    assert said and said.startswith("router_groups=8: group-limited routing") and "dispatcher=alltoall" in said
    assert routing_note({"moe": "1", "router_groups": "8", "dispatcher": "deepep"}) is None
    assert routing_note({"moe": "1", "router_groups": "1", "dispatcher": "alltoall"}) is None
    ran = symcomm_command("eval", "hybrid", "--model", "qwen3-30b-a3b", "--hardware", "h100", "t=1", "p=1", "d=8",
                          "e=8", "c=1", "b=64", "m=8", "s=4096", "router_groups=16", "router_group_topk=4")
    assert ran.returncode == 0 and "router_groups=16: group-limited routing" in ran.stderr


def test_a_framework_refusing_the_default_zero_says_it_is_the_default():
    # FSDP1 runs NO_SHARD (zero=0) or FULL_SHARD/SHARD_GRAD_OP (zero=3): which is not guessed, and the default's
    # refusal says it was the default
    layout = ("eval", "hybrid", "--model", "llama3-8b", "--hardware", "h100", "t=1", "p=1", "d=8", "c=1", "b=64", "m=8")
    said = symcomm_command(*layout, "framework=fsdp")
    assert said.returncode == 2 and "zero=1 is the default where zero is not given" in said.stderr
    # FSDP2 (fully_shard) and Megatron-FSDP run ZeRO-3 alone: taken for them, in eval, the API and show alike
    for framework in ("fsdp2", "megatron_fsdp"):
        ran = symcomm_command(*layout, f"framework={framework}", "--json")
        assert ran.returncode == 0, ran.stderr
        assert json.loads(ran.stdout)["options"]["zero"] == "3"
    shown = symcomm_command("show", "hybrid", "framework=fsdp2")
    assert shown.returncode == 0 and "zero=3 framework=fsdp2" in shown.stdout
    # typed, the stage it does not run is refused without the default's words
    said = symcomm_command(*layout, "framework=fsdp2", "zero=1")
    assert said.returncode == 2 and "zero=1 is not run by framework=fsdp2" in said.stderr
    assert "is the default" not in said.stderr


def test_a_dense_models_groups_that_straddle_are_said_too():
    # a dense model has no e; its groups straddle all the same: t = 2, c = 3 on nodes of 8 puts each context-parallel
    # group of 3 ranks in a block of t·c = 6 consecutive ranks (Megatron's order: tp innermost, then cp), and the
    # block of ranks 6-11 spans two nodes (an outsider's layout: eval said nothing, plan's row promised it would)
    said = symcomm_command("eval", "hybrid", "--model", "llama3-8b", "--hardware", "h100", "t=2", "p=1", "d=4", "c=3",
                           "b=48", "m=4", "s=6144")
    assert said.returncode == 0, said.stderr
    assert "the context-parallel groups of 3 ranks (interleaved in blocks of 6 consecutive ranks) do not tile the " \
           "NVLink domains of G=8 GPUs" in said.stderr
