"""Layouts a framework cannot run are refused by eval and never ranked by plan.

DeepSpeed's pipeline engine (deepspeedai/DeepSpeed deepspeed/runtime/pipe/engine.py at 03f6f75c) asserts "ZeRO-2
and ZeRO-3 are incompatible with pipeline parallelism" and runs one schedule, schedule.TrainSchedule (1F1B, no
interleaved stages); DeepSpeed's sequence parallelism is DeepSpeed-Ulysses, an all-to-all over the heads
(docs/_tutorials/ds-sequence.md), not a ring; its engine refuses ZeRO-3 with MoE layers (deepspeed/runtime/engine.py:
"MoE not supported with Stage 3")."""

import json
import subprocess
import sys

import pytest

from symcomm import presets
from symcomm.planner import Request, plan

LAYOUT = ["--model", "llama3.1-70b", "--hardware", "h100", "t=1", "b=256", "m=4", "s=8192", "framework=deepspeed"]


def _eval(*words):
    return subprocess.run([sys.executable, "-m", "symcomm", "eval", "hybrid", *LAYOUT, *words],
                          capture_output=True, text=True)


@pytest.mark.parametrize("words, said", [
    (("p=2", "c=1", "d=32", "zero=3"), "framework=deepspeed with zero=3 needs p=1 (p=2)"),
    (("p=2", "c=1", "d=32", "zero=2"), "framework=deepspeed with zero=2 needs p=1 (p=2)"),
    (("p=2", "c=1", "d=32", "zero=1", "schedule=interleaved", "v=2"),
     "schedule=interleaved with framework=deepspeed is refused"),
    (("p=1", "c=2", "d=32", "zero=3"), "framework=deepspeed with c=2 needs cp=ulysses"),
    # DeepSpeed-Ulysses reduces the gradients in seq_parallel_communication_data_type, 'fp32' by default
    # (deepspeed/runtime/engine.py and runtime/constants.py at edaa7221): the element type is asked for, not guessed
    (("p=1", "c=2", "d=32", "zero=2", "cp=ulysses"), "framework=deepspeed with c=2 needs grad_dtype given"),
])
def test_eval_refuses_in_one_line(words, said):
    out = _eval(*words)
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert said in out.stderr and len(out.stderr.strip().splitlines()) == 1


TORCH_LAYOUT = ["--model", "llama3.1-8b", "--hardware", "h100", "t=1", "b=16", "m=4", "s=8192"]


@pytest.mark.parametrize("words, said", [
    # torch.distributed.pipelining's stage (torch 2.13.0 torch/distributed/pipelining/stage.py,
    # backward_maybe_with_nosync) knows DDP and FSDP2 modules only, and PyTorch's context parallel is composed with
    # FSDP2 (torchtitan): the FSDP1 row (LLM Foundry's Composer) runs neither
    (("framework=fsdp", "zero=3", "p=2", "c=1", "d=4"), "framework=fsdp with p=2 is refused: it runs no pipeline"),
    (("framework=fsdp", "zero=3", "p=1", "c=2", "d=4"),
     "framework=fsdp with c=2 is refused: it runs no context parallelism"),
    # PyTorch's context parallel rotates K and V shards round a ring (_context_parallel/_attention.py, _RotateMethod
    # ALL_GATHER and ALL_TO_ALL): torchtitan runs no Ulysses head split
    (("framework=fsdp2", "zero=3", "p=1", "c=2", "d=4", "cp=ulysses"),
     "framework=fsdp2 with c=2 needs cp=ring or ring_flash_attn"),
])
def test_pytorch_frameworks_refuse_what_they_do_not_compose(words, said):
    out = subprocess.run([sys.executable, "-m", "symcomm", "eval", "hybrid", *TORCH_LAYOUT, *words],
                         capture_output=True, text=True)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert said in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_plan_ranks_no_fsdp1_pipeline_or_context_parallel_and_no_fsdp2_ulysses():
    got = plan(Request(presets.model("llama3-8b"), presets.hardware("h100"), gpus=8, batch=64, seq=8192), 200)
    rows = got.rows(200)
    assert any(row["c"] > 1 for row in rows)         # context parallel is still searched where it runs
    fsdp1 = [row for row in rows if any(label.startswith("fsdp ") for label in row["labels"])]
    assert fsdp1 and all(row["p"] == 1 and row["c"] == 1 for row in fsdp1)
    got = plan(Request(presets.model("llama3-8b"), presets.hardware("h100"), gpus=8, batch=64, seq=8192,
                       framework="fsdp2", cp_algorithm="ring"), 200)
    assert any(row["c"] > 1 for row in got.rows(200))


@pytest.mark.parametrize("words", [("p=2", "c=1", "d=32", "zero=1"),
                                   ("p=1", "c=2", "d=32", "zero=3", "cp=ulysses", "grad_dtype=fp32"),
                                   ("p=1", "c=1", "d=64", "zero=3")])
def test_what_deepspeed_runs_still_evaluates(words):
    out = _eval(*words, "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["step_time"] > 0


def test_moe_with_zero3_is_refused_and_not_ranked():
    # DeepSpeed's engine: "MoE not supported with Stage 3" (deepspeed/runtime/engine.py, _configure_zero_optimizer)
    out = subprocess.run([sys.executable, "-m", "symcomm", "eval", "hybrid", "--model", "deepseek-v3", "--hardware",
                          "h100", "t=1", "p=1", "c=1", "e=8", "d=1024", "m=1", "b=4096", "s=4096",
                          "framework=deepspeed", "zero=3"], capture_output=True, text=True)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "moe=1 with framework=deepspeed zero=3 is refused" in out.stderr
    got = plan(Request(presets.model("deepseek-v3"), presets.hardware("h100"), gpus=1024, batch=4096, seq=4096), 20)
    labels = [label for row in got.rows(200) for label in row["labels"]]
    assert not any(label.startswith("deepspeed zero 3") for label in labels)
    assert labels


def test_plan_ranks_no_layout_deepspeed_cannot_run():
    got = plan(Request(presets.model("llama3.1-70b"), presets.hardware("h100"), gpus=64, batch=256, seq=8192), 20)
    # every ranked row: DeepSpeed's first ones rank past the 200th, never folded with Megatron's (whose attention keeps
    # K and V at Llama's 8 query groups, DeepSpeed's models repeated to the 64 heads: memory.GROUPED_KV_FRAMEWORKS)
    rows = [row for row in got.rows(None) if any(label.startswith("deepspeed") for label in row["labels"])]
    assert rows, "deepspeed rows should still be ranked where it can run them"
    for row in rows:
        zero3 = any(label.startswith(("deepspeed zero 2", "deepspeed zero 3")) for label in row["labels"])
        assert not (zero3 and row["p"] > 1), row
        assert row["v"] == 1, row
        assert row["c"] == 1, row                 # the request's cp is ring: DeepSpeed runs Ulysses only


def test_fsdp1_places_no_experts_so_eval_refuses_and_plan_ranks_none():
    # PyTorch's FSDP1 (framework=fsdp) shards a unit's parameters over one process group, experts like the rest
    # (torch/distributed/fsdp/fully_sharded_data_parallel.py): it has no expert parallelism, so e > 1 is no layout it
    # runs; e = 1 (every expert sharded with the rest) is
    words = ["eval", "hybrid", "--model", "qwen3-30b-a3b", "--hardware", "h100", "t=1", "p=1", "c=1", "d=64",
             "b=512", "m=8", "s=4096", "framework=fsdp", "zero=3"]
    out = subprocess.run([sys.executable, "-m", "symcomm", *words, "e=8"], capture_output=True, text=True)
    assert out.returncode == 2 and "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert "framework=fsdp with e=8 is refused: it runs no expert parallelism" in out.stderr
    assert subprocess.run([sys.executable, "-m", "symcomm", *words, "e=1"], capture_output=True).returncode == 0
    got = plan(Request(presets.model("qwen3-30b-a3b"), presets.hardware("h100"), gpus=64, batch=512, seq=4096), 20)
    rows = got.rows(500)
    fsdp1 = [row for row in rows if any(label.startswith("fsdp ") for label in row["labels"])]
    assert rows and all(row["e"] == 1 for row in fsdp1)


def test_torch_pipelinings_1f1b_needs_as_many_micro_batches_as_stages():
    # torch.distributed.pipelining's Schedule1F1B.__init__ raises "Number of microbatches (2) must be greater than or
    # equal to the number of stages (4)" (torch/distributed/pipelining/schedules.py in torch 2.13.0): an outsider's plan
    # ranked first a framework=fsdp2 1F1B layout of m = 4 on p = 8, and eval priced m = 2 on p = 4.  Megatron's 1F1B
    # runs it (its bubble (p − 1)/m, more than one step of compute): still priced
    words = ["eval", "hybrid", "--model", "llama3-70b", "--hardware", "h100", "t=8", "p=4", "d=2", "c=1", "s=8192",
             "sp=1"]

    def run(*more):
        return subprocess.run([sys.executable, "-m", "symcomm", *words, *more], capture_output=True, text=True)

    out = run("b=16", "m=2", "framework=fsdp2", "zero=3")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "m=2: torch.distributed.pipelining's Schedule1F1B (framework=fsdp2) needs at least" in out.stderr
    # one micro-batch per schedule under ga_schedules=1: m/n_ga = 1 < 4
    out = run("b=64", "m=16", "framework=fsdp2", "zero=3", "ga_schedules=1", "n_ga=16")
    assert out.returncode == 2 and "m/n_ga=1: torch.distributed.pipelining's Schedule1F1B" in out.stderr
    assert run("b=16", "m=4", "framework=fsdp2", "zero=3").returncode == 0                 # m = p runs
    assert run("b=16", "m=2", "framework=megatron", "zero=1").returncode == 0              # Megatron's 1F1B runs it
    # plan ranks none: each fsdp2 1F1B row has m ≥ p
    got = plan(Request(presets.model("llama3-70b"), presets.hardware("h100"), gpus=64, batch=32, seq=8192,
                       framework="fsdp2", pp=8), 50)
    rows = [row for row in got.rows(50) if row["p"] > 1 and row["v"] == 1]
    assert rows and all(row["m"] >= row["p"] for row in rows)


def test_torchtitans_async_tp_needs_torch_compile():
    # torchtitan/config/configs.py at b5bcd76c (CompileConfig.__post_init__): "Async TP requires 'model' in
    # --compile.components and --compile.enable"; an outsider's fsdp2 tp_overlap=1 without compile was priced
    words = ["eval", "hybrid", "--model", "llama3-8b", "--hardware", "h100", "t=8", "p=1", "d=1", "c=1", "b=8", "m=1",
             "s=8192", "sp=1", "framework=fsdp2", "zero=3", "tp_overlap=1"]
    out = subprocess.run([sys.executable, "-m", "symcomm", *words], capture_output=True, text=True)
    assert out.returncode == 2 and "tp_overlap=1 with framework=fsdp2 needs compile=1" in out.stderr
    out = subprocess.run([sys.executable, "-m", "symcomm", *words, "compile=1"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_ulysses_gradients_are_reduced_in_fp32_and_plan_prices_them_so():
    # DeepSpeed with Ulysses (c ≥ 2) reduces the gradients in fp32 by default (seq_parallel_communication_data_type,
    # deepspeed/runtime/engine.py at edaa7221): twice the bytes of a bf16 reduction, the same element count
    def dp_bytes(dtype):
        out = _eval("p=1", "c=2", "d=32", "zero=2", "cp=ulysses", f"grad_dtype={dtype}", "--json")
        assert out.returncode == 0, out.stderr
        terms = json.loads(out.stdout)["terms"]
        return sum(term["send"] for term in terms if term["axis"] == "dp" and "gradient" in term["label"])

    assert dp_bytes("fp32") == 2 * dp_bytes("same") > 0
    got = plan(Request(presets.model("llama3-8b"), presets.hardware("h100"), gpus=16, batch=16, seq=32768,
                       framework="deepspeed", cp_algorithm="ulysses"), 200)
    rows = got.rows(200)
    commands = [row["eval_command"] for row in rows]
    with_cp = [c for c in commands if " c=1 " not in c]
    assert with_cp and all("grad_dtype=fp32" in c for c in with_cp)
    assert all("grad_dtype" not in c for c in commands if " c=1 " in c)
    assert all(setting.get("grad_dtype") == ("fp32" if row["c"] > 1 else None)
               for row in rows for setting in row["settings"])


def test_deepspeed_holds_its_gradients_in_the_model_type_whatever_type_it_reduces_in():
    # DeepSpeed keeps the gradients in grad_accum_dtype, the model's bf16 unless the config names another
    # (deepspeed/runtime/engine.py at edaa7221, get_data_types); reducing in fp32 casts each 16-bit bucket to fp32 for
    # the all-reduce (zero/stage_1_and_2.py, gradient_reduction_w_predivide). Hand count, ZeRO-2 over the d·c = 64
    # ranks of the sequence-data-parallel group: a 2-byte gradient partition of Φ/64 either way, and the 5e8-element
    # bucket (reduce_bucket_size's default) at 2 bytes, with its 4-byte copy when reduced in fp32
    def memory(dtype):
        out = _eval("p=1", "c=2", "d=32", "zero=2", "cp=ulysses", f"grad_dtype={dtype}", "--json")
        assert out.returncode == 0, out.stderr
        got = json.loads(out.stdout)
        return got["memory"], int(got["values"]["Phi"])

    fp32, phi = memory("fp32")
    bf16, _ = memory("same")
    assert fp32["gradients"] == bf16["gradients"] == 2 * phi / 64
    assert bf16["dp_buckets"] == 2 * 500_000_000 and fp32["dp_buckets"] == (2 + 4) * 500_000_000


@pytest.mark.parametrize("words, said", [
    # Megatron-Core's get_forward_backward_func (megatron/core/pipeline_parallel/schedules.py at d98e8a64) runs no
    # pipelining, 1F1B or the interleaved schedule: GPipe is torch.distributed.pipelining's
    (("schedule=gpipe",), "schedule=gpipe with framework=megatron is refused"),
    (("schedule=gpipe", "framework=megatron_fsdp", "zero=3"), "schedule=gpipe with framework=megatron_fsdp is refused"),
    # megatron/training/arguments.py at d98e8a64: 'Tensor parallel communication/GEMM overlap can happen only when
    # sequence parallelism is enabled'
    (("sp=0", "tp_overlap=1"), "tp_overlap=1 with framework=megatron needs sp=1"),
])
def test_what_megatron_does_not_run_is_refused_in_one_line(words, said):
    out = subprocess.run([sys.executable, "-m", "symcomm", "eval", "hybrid", "--model", "llama3.1-70b", "--hardware",
                          "h100", "t=8", "p=4", "d=8", "c=1", "b=512", "m=64", "s=8192", *words],
                         capture_output=True, text=True)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert said in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
    ran = subprocess.run([sys.executable, "-m", "symcomm", "eval", "hybrid", "--model", "llama3.1-70b", "--hardware",
                          "h100", "t=8", "p=4", "d=8", "c=1", "b=512", "m=64", "s=8192", "framework=fsdp2", "zero=3",
                          "schedule=gpipe", "compile=1"], capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr          # torch.distributed.pipelining's ScheduleGPipe
