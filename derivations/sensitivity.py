"""How far the check runs' step-time errors move under the assumptions the published data leave open: a derivation
script that prints and stores nothing (no constant is set from a check run; the figures say where the model and the
runs disagree, for the closing notes and the next stop's leads).

    python -m derivations.sensitivity

Each variant prices the runs it concerns twice through ``eval hybrid``'s own binding (:func:`modern.inputs`), as typed
and with one assumption changed, and prints their mean |error|, max |error| and signed mean (error = predicted /
measured − 1, positive: the model is slower than the run):

* ``tp_overlap=0``: Transformer Engine's userbuffers overlap (``tp_overlap=1``: every sequence collective behind the
  micro-batch's compute but one chunk of t, symcomm.training.overlap.tp_exposed) priced as no overlap, on the H100
  Megatron-Core runs that set it, fitted and checked apart (the fitted ones with their fitted constants, no refit);
* ``kappa_moe=0``: no routing passes around the experts (compute.routed_bytes), on the MoE runs of PyTorch-native
  trainers, whose routing is not Megatron-Core's that kappa_moe was fitted on;
* the attention share LLM Foundry's Triton rows imply (:func:`implied_share`), by GPU and sequence length: their core is
  priced at the published share of FlashAttention-2's release chart (symcomm/presets/hardware.json attention_source).
"""

from __future__ import annotations

import statistics
from collections import defaultdict

from . import modern


def implied_share(share: float, predicted: float, rest: float, measured: float) -> float | None:
    """The attention core's share of the peak that would make the prediction the measurement: the core took
    predicted − rest seconds at ``share`` (``rest``: the prediction with the core free), so at the implied share it
    takes measured − rest; None where the rest alone is not below the measurement (the row cannot say)."""
    if measured <= rest:
        return None
    return share * (predicted - rest) / (measured - rest)


def _step(run: dict, **constants) -> float:
    return float(modern.inputs(run, fitting=False).quantities(**constants)["step_time"])


def _summary(errors: list[float]) -> str:
    return (f"mean |error| {100 * statistics.mean(map(abs, errors)):.1f} %, max {100 * max(map(abs, errors)):.1f} %, "
            f"signed mean {100 * statistics.mean(errors):+.1f} %")


def _in_scope(roles: tuple[str, ...]):
    for role in roles:
        for run in modern.runs(role):
            if modern.out_of_scope(run) is None:
                yield role, run


def tp_overlap_off(**constants) -> dict[str, tuple[list, list]]:
    """role → (errors as typed, errors with tp_overlap=0) of the H100 Megatron-Core runs with tp_overlap=1, at the
    stored constants or at ``constants`` (step-model constants by name, as the quantities take them)."""
    out: dict = defaultdict(lambda: ([], []))
    for role, run in _in_scope(("fit", "check")):
        words = modern.words(run)
        if run["hardware"] != "h100" or "tp_overlap=1" not in words or "framework=megatron" not in words:
            continue
        # the same run typed without the overlap (its overlap field: modern.words spells it tp_overlap=0)
        off = {**run, "overlap": {**run["overlap"], "tp_comm": False}}
        out[role][0].append(_step(run, **constants) / run["step_time_s"] - 1)
        out[role][1].append(_step(off, **constants) / run["step_time_s"] - 1)
    return dict(out)


def routing_free() -> list[tuple[str, float, float]]:
    """(run id, error as typed, error at kappa_moe = 0) of the MoE check runs of PyTorch-native trainers."""
    out = []
    for _, run in _in_scope(("check",)):
        words = modern.words(run)
        if "moe=1" in words and "framework=fsdp2" in words:
            out.append((run["id"], _step(run) / run["step_time_s"] - 1,
                        _step(run, kappa_moe=0) / run["step_time_s"] - 1))
    return out


def triton_shares() -> dict[tuple[str, int], list[float]]:
    """(hardware, sequence length) → the shares LLM Foundry's attn_impl=triton rows imply (:func:`implied_share`)."""
    out: dict = defaultdict(list)
    for _, run in _in_scope(("check",)):
        if not run["id"].startswith("llm-foundry") or run.get("attn_impl") != "triton":
            continue
        bound = modern.inputs(run, fitting=False)
        share = float(bound.values["eta_triton"])
        predicted = float(bound.quantities()["step_time"])
        rest = float(bound.quantities(eta_triton=1e9)["step_time"])
        got = implied_share(share, predicted, rest, run["step_time_s"])
        if got is not None:
            out[run["hardware"], run["seq"]].append(got)
    return dict(out)


def main() -> None:
    print("tp_overlap=0 (H100, Megatron-Core runs with Transformer Engine's userbuffers overlap):")
    for role, (typed, off) in sorted(tp_overlap_off().items()):
        print(f"  {role}: {len(typed)} runs; as typed {_summary(typed)}; no overlap {_summary(off)}")
    print("kappa_moe=0 (MoE runs of PyTorch-native trainers):")
    for rid, typed, free in routing_free():
        print(f"  {rid}: {100 * typed:+.1f} % as typed, {100 * free:+.1f} % without routing passes")
    print("attention share implied by LLM Foundry's Triton rows (median over the rows; the core's share of the step "
          "as predicted grows with the sequence):")
    for (hardware, seq), shares in sorted(triton_shares().items()):
        print(f"  {hardware:10} s={seq:6d}: {len(shares):3d} rows, median {statistics.median(shares):.3f}")


if __name__ == "__main__":
    main()
