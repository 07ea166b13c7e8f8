"""cpu_offload=1: Megatron-Core's activation offloading (--cpu-offloading --cpu-offloading-num-layers L_off) keeps the
activations of L_off layers in host memory.  Megatron-Core refuses it with pipeline parallelism and with activation
recompute, and for L_off ≥ L (megatron/core/transformer/transformer_config.py at d98e8a64).  Expected values by hand;
the step time is not changed (the copies are not timed, said in a note)."""

import subprocess
import sys

import pytest

import symcomm

# Megatron-Bridge 25.09's GB200 Llama 3 70B FP8 recipe: Megatron-FSDP over 64 GPUs, MBS 2, 40 of 80 layers offloaded
LAYOUT = dict(model="llama3-70b", hardware="gb200", t=1, p=1, d=64, c=1, b=256, m=2, s=8192, G=72,
              framework="megatron_fsdp", zero=3, precision="fp8_tensor", recompute="none", sp=0)


def test_the_offloaded_layers_activations_leave_the_gpu():
    # every layer keeps the same bytes (no recompute, one stage): 40 of the 80 layers offloaded leave half of the
    # GPU's activations (their bytes by hand: the next test); the step time is not changed (the copies not timed)
    plain = symcomm.evaluate("hybrid", **LAYOUT)
    off = symcomm.evaluate("hybrid", **LAYOUT, cpu_offload=1, L_off=40)
    per_layer = plain["memory"]["activations"] / 80
    assert off["memory"]["activations"] == pytest.approx(40 * per_layer, rel=1e-12)
    assert off["step_time"] == pytest.approx(plain["step_time"], rel=1e-12)
    assert any(note.startswith("cpu_offload=1: the activations of L_off layers") for note in off.notes)


def test_the_offloaded_bytes_by_hand():
    # the first 40 layers' activations: 40 · s·b·h · (bytes a layer keeps per s·b·h); with sp=0, t=1 every tensor whole
    plain = symcomm.evaluate("hybrid", **LAYOUT)
    off = symcomm.evaluate("hybrid", **LAYOUT, cpu_offload=1, L_off=40)
    sbh = 8192 * 2 * 8192
    kept_per_sbh = (plain["memory"]["activations"] - off["memory"]["activations"]) / (40 * sbh)
    # Korthikanti's 34 less its 4h GeLU MLP's 16 (the GeLU's input 8, FC2's 8), with the three other linears' inputs at
    # the recipe's bytes: QKV's and FC1's (norm-fused, no SP: one FP8 copy, 1 byte each of their h) and the attention
    # output's h (plain: 1 byte): 18 − 3; and Llama 3 70B's SwiGLU MLP of F = 28,672 = 3.5h: its 2F-wide input at 2
    # bytes (4F) and FC2's FP8 input (F): 5 · 3.5
    # Llama 3 70B trains without dropout (no mask: 2 less), keeps K and V at its 8 query groups (4·(1 − 1/8) = 3.5 less)
    # and the attention output at 16 bits (the core keeps it, the projection its original input: 1 more)
    assert kept_per_sbh == pytest.approx(18 - 3 + 5 * 3.5 - 2 - 3.5 + 1, rel=1e-12)


def _eval(*words):
    return subprocess.run([sys.executable, "-m", "symcomm", "eval", "hybrid", "--model", "llama3-70b", "--hardware",
                           "gb200", "t=1", "c=1", "b=256", "m=2", "s=8192", "zero=3", *words], capture_output=True, text=True)


@pytest.mark.parametrize("words, said", [
    (("p=2", "d=32", "cpu_offload=1", "L_off=40", "framework=megatron_fsdp"), "cpu_offload=1 with p=2 is refused"),
    (("p=1", "d=64", "cpu_offload=1", "L_off=80", "framework=megatron_fsdp"), "cpu_offload=1 needs L_off below L=80"),
    (("p=1", "d=64", "cpu_offload=1", "L_off=40", "recompute=full", "framework=megatron_fsdp"), "cpu_offload=1 needs recompute=none"),
    (("p=1", "d=64", "cpu_offload=1", "L_off=40", "framework=fsdp2"), "cpu_offload=1 with framework=fsdp2"),
])
def test_what_megatron_core_refuses_is_refused_in_one_line(words, said):
    out = _eval(*words)
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert said in out.stderr and len(out.stderr.strip().splitlines()) == 1
