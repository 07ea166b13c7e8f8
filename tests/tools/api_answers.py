"""The answers of ``symcomm.evaluate`` and ``symcomm eval --json`` over a fixed set of subjects and layouts, as
one JSON document: run it before and after a change to the answers' code path and compare the two files byte
for byte (``python tests/tools/api_answers.py OUT.json``; a refusal is recorded as its message).  Not a test:
a tool for a speed change that must leave every answer as it was (issue 25)."""

from __future__ import annotations

import json
import subprocess
import sys

import symcomm
from symcomm.base.errors import InputError

LLAMA = dict(model="llama3-8b", hardware="h100")
#: (name, keyword values): strategies with and without the step time, primitives, options, refusals
CASES = [
    ("hybrid", dict(LLAMA, t=8, p=1, d=8, c=1, b=64, m=8, s=4096)),
    ("hybrid", dict(LLAMA, t=8, p=1, d=8, c=1, b=64, m=8, s=4096, dtype="fp8")),
    ("hybrid", dict(LLAMA, t=4, p=2, d=8, c=1, b=128, m=16, s=8192)),
    ("hybrid", dict(LLAMA, t=2, p=4, d=4, c=2, b=32, m=8, s=4096, recompute="selective")),
    ("hybrid", dict(LLAMA, t=8, p=2, d=4, c=1, b=64, m=8, s=4096, zero=1, sp=1)),
    ("hybrid", dict(LLAMA, t=8, p=2, d=4, c=1, b=64, m=8, s=4096, zero=3, framework="fsdp2", recompute="full")),
    ("hybrid", dict(LLAMA, t=8, p=4, d=2, c=1, b=64, m=16, s=4096, schedule="interleaved", v=2)),
    ("hybrid", dict(LLAMA, t=8, p=1, d=8, c=1, b=64, m=8, s=4096, framework="fsdp2", zero=3)),
    ("hybrid", dict(LLAMA, t=8, p=1, d=8, c=1, b=64, m=8, s=4096, precision="fp8_rowwise")),
    ("hybrid", dict(model="deepseek-v3", hardware="h100", t=1, p=1, d=64, c=1, e=64, b=1024, m=16, s=4096)),
    ("hybrid", dict(model="llama3-70b", hardware="h100", t=8, p=4, d=8, c=2, b=256, m=32, s=8192)),
    ("hybrid", dict(model="llama3-8b", hardware="b200", t=2, p=1, d=32, c=1, b=256, m=8, s=4096)),
    ("hybrid", dict(model="llama3-8b", t=8, p=1, d=8, c=1, b=64, m=8, s=4096)),     # no step time
    ("hybrid", dict(LLAMA, t=3, p=1, d=8, c=1, b=64, m=8, s=4096)),      # refused or answered: recorded
    ("hybrid", dict(LLAMA, t=8, p=1, d=8, c=1, b=63, m=8, s=4096)),
    ("hybrid", dict(LLAMA, t=8, p=1, d=8, c=1, b=64, m=8, s=4096, N=128)),
    ("dp", dict(N=64, Phi=8 * 10 ** 9)),
    ("dp", dict(N=64, Phi=8 * 10 ** 9, alpha=5e-6, beta=1e-11, gamma=1e-12, dtype="bf16")),
    ("zero3", dict(N=8, Phi=1000)),
    ("zero1", dict(N=16, Phi=7 * 10 ** 9, hardware="h100")),
    ("tp", dict(model="llama3-8b", N=8, b=8, s=4096)),
    ("sp", dict(model="llama3-8b", N=8, b=8, s=4096, hardware="h100")),
    ("pp", dict(model="llama3-8b", N=4, b=8, m=8, s=4096)),
    ("ep", dict(model="deepseek-v3", N=8, b=8, s=4096)),
    ("cp_ring", dict(model="llama3-8b", N=4, b=8, s=32768)),
    ("cp_ulysses", dict(model="llama3-8b", c=4, b=8, s=32768, hardware="h100")),
    ("hsdp", dict(N=64, G=8, Phi=10 ** 9)),
    ("all_reduce", dict(algorithm="ring", N=8, M=2 ** 30, alpha=5e-6, beta=1e-11, gamma=1e-12, dtype="bf16")),
    ("all_reduce", dict(algorithm="ring", N=8, M="1GiB", hardware="h100")),
    ("all_reduce", dict(algorithm="recursive_doubling", N=6, M=1024)),
    ("all_reduce", dict(algorithm="rabenseifner", N=16, M=3, alpha=1e-6, beta=1e-10, gamma=1e-12)),
    ("all_gather", dict(N=7, M=700, alpha=1e-6, bw="50GB/s", gamma=0, dtype="fp32")),
    ("reduce_scatter", dict(algorithm="ring", N=64, M=2 ** 40, hardware="h100")),
    ("all_reduce", dict(algorithm="hierarchical", N=64, G=8, M=2 ** 30, hardware="h100")),
    ("all_to_all", dict(N=16, M=2 ** 20, hardware="h100")),
    ("broadcast", dict(N=5, M=1000)),
]


def _api(name: str, values: dict):
    try:
        r = symcomm.evaluate(name, **values)
    except InputError as err:
        return {"refused": str(err)}
    return {"data": r.to_dict(), "notes": list(r.notes)}


def _cli(name: str, values: dict):
    argv = [sys.executable, "-m", "symcomm", "eval", name, "--json"]
    for key, value in values.items():
        if key in ("algorithm", "dtype", "model", "hardware", "backend"):
            argv += [f"--{key.replace('_', '-')}", str(value)]
        else:
            argv.append(f"{key}={value}")
    done = subprocess.run(argv, capture_output=True, text=True)
    return {"rc": done.returncode, "stdout": done.stdout, "stderr": done.stderr}


def main(path: str, cli: bool = True) -> None:
    out = []
    for name, values in CASES:
        first = _api(name, values)
        second = _api(name, values)          # the warm call (caches filled) must answer the same
        out.append({"name": name, "values": {k: str(v) for k, v in values.items()}, "api": first,
                    "api_warm_same": first == second, **({"cli": _cli(name, values)} if cli else {})})
    with open(path, "w") as handle:
        json.dump(out, handle, indent=1, sort_keys=True)


if __name__ == "__main__":
    main(sys.argv[1], cli="--no-cli" not in sys.argv)
