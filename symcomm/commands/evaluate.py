"""``symcomm eval``: a primitive's or a strategy's numbers, printed as text or JSON.

Its parser, its printer, and an entry of its own (:func:`main`): ``symcomm eval`` comes here straight from
:mod:`symcomm.__main__`, without the rest of the CLI, so that a primitive's answer — which
:func:`symcomm.training.fasteval.eval_document` gives from the generated exact code — starts without SymPy, as
``eval hybrid`` of a shipped model and hardware at a generated option set does (:mod:`symcomm.training.hybridfast`);
anything else loads it there, on first use.  The full CLI
(:func:`symcomm.commands.main.build_parser`) registers the very same parser; both run through
:func:`symcomm.commands.runner.run`: the same errors, exit statuses and notes.
"""

from __future__ import annotations

import json

from ..base.units import DTYPES, human_size, human_time
from ..training.fasteval import eval_document
from ..training.words import TIME_RULE


def register_cli(subparsers) -> None:
    p = subparsers.add_parser("eval", help="numbers of a primitive or strategy")
    p.add_argument("name", help="a primitive or a strategy (symcomm list shows them)")
    p.add_argument("assignments", nargs="*", metavar="KEY=VALUE",
                   help="symbol values (N=8 M=2**30, M=1GiB) and options (zero=1); symcomm list shows each subject's "
                        "options with their defaults (hybrid's step-model settings too), symcomm show NAME its "
                        "symbols; hybrid: t, p, d, c, e the degrees, b the global batch in sequences, m the "
                        "micro-batches per replica (b/(d·micro-batch size)), s the sequence; " + TIME_RULE)
    p.add_argument("--algorithm", help="the primitive's algorithm (symcomm list shows them); default: the first")
    p.add_argument("--dtype", help=f"{', '.join(DTYPES)} or bytes per element; bf16 when a time is asked "
                                   "without it")
    p.add_argument("--backend", help="evaluate under a backend profile: textbook, nccl, nccl_nvls, mpich, gloo")
    p.add_argument("--model", help="model preset: fills its shape (Phi, h, L, a, h_kv, V, F, s, and its experts', "
                                   "MLA's and Mamba's sizes where it has them)")
    p.add_argument("--model-config", help="a Hugging Face config.json on disk, instead of --model")
    p.add_argument("--hardware", help="hardware preset or file (path/to/hardware.json): fills alpha, beta, gamma, alpha_inter, beta_inter "
                                      "(per byte; --dtype defaults to bf16) and G")
    p.add_argument("--json", action="store_true", help="one JSON document on stdout instead of the text")
    p.set_defaults(run=cmd_eval)


def _print_step(payload: dict) -> None:
    cannot = (" — of a layout that does NOT fit in memory (below)" if payload["fits"] is False else
              " — of a layout that may not fit in memory (below)" if payload["fits_over_error"] == "uncertain" else "")
    # under an uneven split each part is the largest over the stage kinds (stagestep), not one stage's: said, as the
    # parts then add up to more than the step
    uneven = (" — each part the largest over the stage kinds (first, middle, last), so together they may exceed the "
              "step" if payload["options"].get("pipeline_split", "even") != "even" else "")
    print(f"  step time    {human_time(payload['step_time'])}  (compute {human_time(payload['compute_time'])}, "
          f"exposed communication {human_time(payload['exposed_comm_time'])} [what waits, and 0.159 of what hides: "
          f"the compute it slows], bubble {human_time(payload['bubble_time'])}, optimizer "
          f"{human_time(payload['optimizer_time'])}){uneven}{cannot}")
    from ..presets import fits_words, step_error_words

    print("  off by       " + step_error_words(payload["step_time_error"]))
    per_axis = ", ".join(f"{axis} {human_time(x)}" for axis, x in payload["comm_time_per_axis"].items())
    print(f"  comm alone   {human_time(payload['comm_time'])}  ({per_axis})")
    # under an FP8 or FP4 recipe MFU and HFU still divide by the bf16 peak (steptime.FP8_MFU), so they may pass 100 %:
    # the line names that peak there, as a ratio with no unit beside it would read as a share of what the GPU can do
    low = payload["options"].get("precision", "bf16") != "bf16"
    # and under --dtype fp8 (a bf16 recipe timed at another peak) the peak it divides by is that one: named too
    peak = payload.get("constants", {}).get("dtype", "bf16")
    of_peak = f" of the {peak} peak" if low or peak != "bf16" else ""
    rate = payload["tokens_per_second"]
    # the whole job's rate, and a GPU's beside it: logs and tables print either (torchtitan's tps is a GPU's)
    gpus = payload.get("gpus")
    each = (f" (all {gpus:,} GPUs; {_rate(rate / gpus)} a GPU)" if isinstance(gpus, int) and gpus > 1 else "")
    print(f"  throughput   {_rate(rate)} tokens/s{each}, MFU {100 * payload['mfu']:.1f} %{of_peak} "
          f"({100 * payload['mfu_causal']:.1f} % with causal attention counted at half, as Megatron-LM counts it), "
          f"HFU {100 * payload['hfu']:.1f} %{of_peak} ({100 * payload['hfu_causal']:.1f} % with causal attention at "
          f"half)" + ("; the low-precision linear GEMMs run against their own, "
                                                          "higher peak" if low else ""))
    stage = payload.get("memory_stage", {})
    parts = ", ".join(f"{k} {human_size(x, 'bytes')}" + (f" [{stage[k]} stage]" if stage.get(k, "every") != "every"
                                                        else "") for k, x in payload["memory"].items())
    # memory.loss_or_recompute: the loss side and the backward side are never live at once
    loss_side = [k for k in ("logits", "head_inputs") if k in payload["memory"]]
    backward_side = [k for k in ("recompute", "head_gradient", "ring_attention") if payload["memory"].get(k)]
    if loss_side and backward_side:
        parts += f"; of {' + '.join(loss_side)} and {' + '.join(backward_side)} only the larger counts"
    print(f"  memory/GPU   {human_size(payload['memory_per_gpu'], 'bytes')}  ({parts})")
    print("  fits         " + fits_words(payload))
    c = payload["constants"]
    # "typed" beside each peak the user gave (its input row's source), not beside the bf16 one for any of them
    typed_peaks = {name for name, row in payload["inputs"].items() if name.startswith("peak")
                   and isinstance(row, dict) and row.get("source") == "typed"}
    from ..presets.systems import LOW_DTYPES, PUBLISHED_KERNELS      # here: a primitive's cold eval reads no preset

    low = next((kind for kind in LOW_DTYPES if f"peak_{kind}" in c), None)
    fp8 = (f"; precision {payload['options']['precision']}: peak_{low} {c[f'peak_{low}'] / 1e12:g} TFLOP/s"
           f"{' typed' if f'peak_{low}' in typed_peaks else ''}, eta_{low} {c[f'eta_{low}']}" if low else "")
    if payload["options"].get("precision") == "fp8_rowwise":
        from ..training.settings import ROWWISE_CAST_SHARE
        fp8 += (f", its casts at {float(ROWWISE_CAST_SHARE):g} of the HBM bandwidth (torchao's own table of rowwise "
                "speedups on H100: symcomm.derivations.rowwise_casts)")
    # the attention core's share: a published kernel's (attention_kernel fa2, triton, cudnn), else the fitted eta_attn (eta
    # where none is)
    kernel = next((k for k in PUBLISHED_KERNELS if f"eta_{k}" in c), None)
    share_from = {"typed": "typed", "step_time": "fitted, the hardware's step_time"}.get(
        c.get("kernel_share_from"), "the hardware's attention_source")
    attention = (f", eta_{kernel} {c[f'eta_{kernel}']} ({PUBLISHED_KERNELS[kernel]}: {share_from})"
                 if kernel else
                 f", eta_attn {c['eta_attn']}" if "eta_attn" in c else "")
    typed = " typed" if "peak" in typed_peaks else ""
    # an MoE's own: its experts' GEMMs' half-width and the passes over its routed token copies
    moe = (f", w_half_expert {c['w_half_expert']:g} elements, kappa_moe {c['kappa_moe']:g}"
           if str(payload["options"].get("moe")) in ("1", "True") and "kappa_moe" in c else "")
    print(f"  constants    peak {c['peak'] / 1e12:g} TFLOP/s ({c['dtype']}{typed}), eta {c['eta']}, w_half {c['w_half']:g} "
          f"elements, kappa {c['kappa']}{moe}{attention}{fp8}: {c['source']}")
    if "stages" in payload:                   # an uneven pipeline split: every stage kind, the busiest named
        busiest = payload["busiest_stage"]
        stages = "".join(f"; {kind}: slot {human_time(x['slot_time'])}, {human_size(x['memory'], 'bytes')}"
                         for kind, x in payload["stages"].items())
        print(f"  stages       slot (one micro-batch on the critical path) set by {busiest['slot']}; most memory on "
              f"{busiest['memory']}{stages}")


def _rate(rate: float) -> str:
    """A tokens/s figure: whole tokens, or three significant digits below 100 (an absurd sequence length's rate below a
    token a second printed 0 tokens/s beside its MFU)."""
    return f"{rate:,.0f}" if rate >= 100 else f"{rate:.3g}"


def _element_type(dtype: str) -> str:
    """A term's own element type as printed: a dtype's name, or a whole number of bytes (the MoE token counts'
    int64) said as bytes."""
    return f"{dtype}-byte elements" if dtype.isdigit() else dtype


#: what an extra number is, beside it: the bubble as Narayanan et al. define it, not as a share of the step
_EXTRA_WORDS = {"bubble_fraction": " (bubble time / ideal compute time, Narayanan et al. 2021 §2.2.1, the interleaved "
                                   "schedule's §2.2.2; of the whole "
                                   "step f/(1 + f))"}


def _count(value) -> str:
    """A count as text: whole, with thousands separators; a fraction (a stage's average over a model whose layers
    split unevenly in kind: words.moe_share_note) to two places, not to the float's seventeen digits (--json keeps
    them)."""
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.2f}"
    return f"{int(value):,}" if isinstance(value, float) else f"{value:,}"


def cmd_eval(args) -> int:
    payload = eval_document(args)
    result_keys, extra_keys = payload.pop("_result_keys"), payload.pop("_extra_keys")
    if args.json:
        print(json.dumps(payload, indent=2, ensure_ascii=False))
        return 0
    unit = payload["unit"]
    given = " ".join(f"{k}={v}" for k, v in payload["values"].items())
    # M is in elements (of the dtype the counts below are in bytes of), whatever unit it was typed in
    print(f"{payload['label']}   {given}" + (f"   (M in elements of {payload['dtype']})"
                                            if "M" in payload["values"] and payload.get("dtype") else ""))
    for key in result_keys:
        value = payload[key]
        if key in ("send", "recv", "total"):
            shown = human_size(value, unit)
            if unit == "bytes":
                shown += f" ({value:,} bytes)" if isinstance(value, int) else ""
        elif key == "time":
            shown = human_time(value)
        elif key in ("alpha", "alpha_inter"):
            shown = f"{_count(value)} messages on the critical path"
        elif key.startswith("beta"):
            shown = f"{_count(value)} {unit} moved on the critical path"
        else:
            shown = f"{_count(value)} {unit} reduced on the critical path"
        print(f"  {key:<12} {shown}")
    for key in extra_keys:
        if key == "layers_middle_stage" and payload["values"].get("p", 3) < 3:
            continue        # no middle stage below p = 3
        print(f"  {key:<12} {payload[key]}" + _EXTRA_WORDS.get(key, ""))
    if "axes" in payload:
        slot = (payload.get("busiest_stage") or {}).get("slot")
        if "layers_last_stage" in payload and slot != "the last pipeline stage":
            # an uneven split: the strategy's terms (and the send and total above) are the last stage's, not the
            # busiest's; without the step model (no --hardware) no stage kind is compared, so it is said either way
            where = (f"{slot} sets the step's slot, its times under comm alone" if slot else
                     "the other stages' are not counted here; the step model (--hardware) prices every stage kind")
            layers = payload["layers_last_stage"]
            print(f"  the last pipeline stage's GPU per axis (an uneven split: these terms and the send and total above "
                  f"count its {layers:g} layer{'' if layers == 1 else 's'}; {where}):")
        else:
            print("  busiest GPU per axis:")
        for axis, row in payload["axes"].items():
            when = f", {human_time(row['time'])}" if "time" in row else ""
            print(f"    {axis}: send {human_size(row['send'], unit)}{when} — {row['stage']}")
    if "step_time" in payload:
        _print_step(payload)
    silent = 0
    for row in payload.get("terms", []):
        if row["send"] == 0:        # a term these values make send nothing (c = 1's ring, p = 1's sends): counted below
            silent += 1
            continue
        print(f"  · {row['label']}: {_count(row['count'])} × {row['collective']}/{row['algorithm']} "
              f"on {row['group']} ranks, message {human_size(row['message'], unit)}, "
              f"send {human_size(row['send'], unit)}" + (f" [{_element_type(row['dtype'])}]" if "dtype" in row else ""))
    if silent:
        print(f"  ({silent} more term{'s' if silent > 1 else ''} send nothing at these values; --json lists every term)")
    return 0


def main(argv: list[str]) -> int:
    """``symcomm eval ...`` without the rest of the CLI (whose import loads SymPy): the same parser, the same
    one-line errors and exit statuses as :func:`symcomm.commands.main.main` (:func:`symcomm.commands.runner.run`)."""
    from .runner import run_one

    return run_one(register_cli, argv)
