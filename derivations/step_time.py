"""Chapter 11 — step time against published runs.

The communication formulas of the other chapters become a step time once compute, overlap
and the pipeline bubble join them (symcomm/training/steptime.py).  This chapter derives the FLOPs of
a transformer from its shape and proves them equal to the papers' closed forms, derives two
closed forms the model makes visible (the interleaving degree that minimises the step, the
micro-batch that hides the data-parallel reduce), and shows the model against every
published run in ``data/published_runs.json``: predicted and published step time, the
error of each row, and which runs fitted the two constants of each hardware preset.
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from symcomm.training import flops, stages
from symcomm.core.chapters import Chapter, Derivation, Step, Table
from symcomm.presets import hardware
from symcomm.core.proof import Claim, Limit
from symcomm.collectives.algorithms import algorithm
from symcomm.core.symbols import F, L, L_first, L_last, M, N, V, alpha, beta, c, d, eta, gamma, h, h_kv, m, p, peak, s, t, v

from . import published

B = sp.Symbol("B", integer=True, positive=True)          # sequences in the batch counted
GPT = {F: 4 * h, h_kv: h}                                  # GPT: FFN 4h, multi-head attention
NARAYANAN = "Narayanan et al. 2021, Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM"
KORTHIKANTI = "Korthikanti et al. 2022, Reducing Activation Recomputation in Large Transformer Models"
KAPLAN = "Kaplan et al. 2020, Scaling Laws for Neural Language Models, §2.1 (C ≈ 6N per token)"

LAYER = Derivation(
    "FLOPs of one GPT layer's forward",
    (Step(flops.layer_forward(B, s).subs(GPT), "Q, K, V and output projections, QKᵀ and scores × V, the MLP "
                                               "h → 4h → h; 2 FLOPs per multiply-add"),
     Step(24 * B * s * h ** 2 + 4 * B * s ** 2 * h, "collect: 8Bsh² of projections, 16Bsh² of MLP, 4Bs²h of "
                                                   "attention core")),
    "FLOPs, forward, B sequences of s tokens; full s × s scores (the papers' count)",
    NARAYANAN + ", Appendix", lhs="layer forward")

MODEL_FLOPS = Derivation(
    "Model FLOPs per iteration (forward + backward)",
    (Step(flops.model_flops(B, s).subs(GPT), "3 × the forward of L layers and the LM head (backward = 2 × forward)"),
     Step(72 * B * L * s * h ** 2 * (1 + s / (6 * h) + V / (12 * h * L)), "Korthikanti et al.'s closed form")),
    "FLOPs per iteration of a batch of B sequences, no recompute (what MFU divides)",
    KORTHIKANTI + ", Appendix A (model FLOPs)", lhs="model FLOPs")

FULL_RECOMPUTE = Derivation(
    "Hardware FLOPs with full recomputation",
    (Step(flops.hardware_flops(B, s, "full").subs(GPT), "model FLOPs + every layer's forward once more (the LM "
                                                        "head is not recomputed)"),
     Step(96 * B * s * L * h ** 2 * (1 + s / (6 * h) + V / (16 * L * h)), "Narayanan et al.'s eq. (3)")),
    "FLOPs per iteration, full activation recomputation",
    NARAYANAN + ", §5.1 eq. (3)", lhs="hardware FLOPs, full")

SELECTIVE = flops.hardware_flops(B, s, "selective").subs(GPT)
KORTHIKANTI_SELECTIVE = 72 * B * L * s * h ** 2 * (1 + s / (3 * h) + V / (12 * h * L))

SELECTIVE_RECOMPUTE = Derivation(
    "Hardware FLOPs with selective recomputation",
    (Step(SELECTIVE, "model FLOPs + the attention core's forward (QKᵀ, scores × V) once more"),
     Step(72 * B * L * s * h ** 2 * (1 + 2 * s / (9 * h) + V / (12 * h * L)), "collect: 4Bs²h per layer more")),
    "FLOPs per iteration, selective recomputation",
    KORTHIKANTI + ", §5 (what selective recomputation re-runs)", lhs="hardware FLOPs, selective",
    claims=(Claim(KORTHIKANTI_SELECTIVE - SELECTIVE, 8 * B * L * s ** 2 * h,
                  name="Korthikanti et al.'s printed hardware FLOPs for selective recompute count 8Bs²h per "
                       "layer more than re-running the attention core's forward (12 instead of 4)",
                  source=KORTHIKANTI + ", Appendix A (hardware FLOPs)"),))

# the 6N rule: every weight matrix costs 2 FLOPs per token forward and 4 backward
WEIGHTS_PER_LAYER = 2 * h ** 2 + 2 * h * h_kv + 3 * h * F
SIX_N = Claim(3 * (flops.layer_forward(1, 1, gated=True) - flops.attention_core(1, 1)), 6 * WEIGHTS_PER_LAYER,
              name="outside the attention core, a gated (SwiGLU), grouped-query layer costs 6 FLOPs per weight "
                   "and token, forward + backward", source=KAPLAN)

# -- the interleaving degree that minimises the step -------------------------------------------
# one micro-batch slot of the busiest stage: compute and on-path communication C, plus the pipeline
# sends, which interleaving makes v times as many (P per send pair of one chunk boundary)
C_slot = sp.Symbol("C", positive=True)
P_send = sp.Symbol("P", positive=True)
STEP_OF_V = (m + (p - 1) / v) * (C_slot + v * P_send)
V_BEST = sp.sqrt((p - 1) * C_slot / (m * P_send))

INTERLEAVING = Derivation(
    "The interleaving degree that minimises the step",
    (Step(STEP_OF_V, "(m + (p − 1)/v) slots; a slot is C of compute and on-path communication plus v pipeline "
                     "send pairs of P each (Narayanan et al. §2.2.2: v times the 1F1B sends)"),
     Step(m * C_slot + (p - 1) * P_send + (p - 1) * C_slot / v + m * P_send * v,
          "expand: the bubble term falls as 1/v, the send term grows as v")),
    "seconds per step, busiest stage; v treated as continuous",
    NARAYANAN + ", §2.2.2", lhs="step(v)",
    claims=(Claim(sp.diff(STEP_OF_V, v).subs(v, V_BEST), 0,
                  name="the step is stationary at v* = √((p − 1)·C / (m·P))", source=NARAYANAN + ", §2.2.2"),
            Claim(STEP_OF_V.subs(v, V_BEST), (sp.sqrt(m * C_slot) + sp.sqrt((p - 1) * P_send)) ** 2,
                  name="at v* the step is (√(m·C) + √((p − 1)·P))²", source=NARAYANAN + ", §2.2.2")))

# -- uneven pipeline stages (pipeline_split=first_last) ------------------------------------------
# the first of the p·v chunks holds L_first layers, the last L_last, the p·v − 2 middle ones MID each; stage i holds
# chunks i, i + p, ... (symcomm/training/stages.py: Megatron-LM's layout order and its first/last-stage flags)
_MAX = sp.Max(p * v - 2, 1)
MID = stages.middle_chunk_layers("interleaved").xreplace({_MAX: p * v - 2})      # where middle chunks exist
STAGE = {kind: stages.stage_layers("first_last", "interleaved", kind).xreplace({_MAX: p * v - 2})
         for kind in stages.KINDS}
MEGATRON_SPLIT = ("Megatron-LM megatron/core/transformer/transformer_block.py, get_num_layers_to_build, and "
                  "megatron/core/transformer/pipeline_parallel_layer_layout.py (NVIDIA/Megatron-LM at "
                  "d98e8a64ddf34856e74b24714e3bedb2f5a39553)")

UNEVEN = Derivation(
    "Layers per stage under a first/last split",
    (Step(L_first + (p * v - 2) * MID + L_last, "the p·v chunks: the first, the p·v − 2 middle ones, the last"),
     Step(STAGE["first"] + (p - 2) * STAGE["middle"] + STAGE["last"],
          "regrouped by stage: the first stage holds chunk 0 and v − 1 middle chunks, the last chunk p·v − 1 and "
          "v − 1 middle ones, each of the p − 2 middle stages v middle chunks")),
    "transformer layers (p·v ≥ 3 chunks)",
    MEGATRON_SPLIT, lhs="L",
    claims=(Claim(L_first + (p * v - 2) * MID + L_last, L, definition=True,
                  name="the chunks of a first/last split hold the L layers (MID = (L − L_first − L_last)/(p·v − 2))"),
            Claim(STAGE["first"] + (p - 2) * STAGE["middle"] + STAGE["last"], L,
                  name="the stages of a first/last split hold the L layers: first + (p − 2)·middle + last = L",
                  source=MEGATRON_SPLIT),
            Claim(STAGE["last"].subs({L_first: L / (p * v), L_last: L / (p * v)}), L / p,
                  name="with L_first = L_last = L/(p·v) an end stage holds L/p layers, as the even split",
                  source=MEGATRON_SPLIT),
            Claim(STAGE["middle"].subs({L_first: L / (p * v), L_last: L / (p * v)}), L / p,
                  name="and so does a middle stage: the even split is the first/last split of equal chunks",
                  source=MEGATRON_SPLIT)))


# -- the micro-batch that hides the data-parallel reduce ----------------------------------------
# Megatron with --overlap-grad-reduce: the ring all-reduce of the stage's Φ/(t·p) gradients (β_g per
# element) runs behind the last micro-batch's backward, 2·(L/p)·f·B/(t·c·peak·η) for B sequences of
# f forward FLOPs per layer each
f_seq = flops.layer_forward(1, s).subs(GPT)
# the catalog's ring all-reduce over the d replicas, γ left out (the reduction runs at HBM speed beside it)
REDUCE = algorithm("all_reduce", "ring").cost.time.subs({N: d, M: 12 * L * h ** 2 / (t * p), gamma: 0})
BACKWARD_PER_SEQUENCE = 2 * (L / p) * f_seq / (t * c * peak * eta)
B_HIDDEN = REDUCE / BACKWARD_PER_SEQUENCE

HIDING = Derivation(
    "The micro-batch that hides the data-parallel gradient reduce",
    (Step(B_HIDDEN.subs(alpha, 0), "ring all-reduce of the stage's 12Lh²/(t·p) gradients over d replicas ÷ the "
                                   "backward time of one sequence on the stage"),
     Step(sp.simplify(B_HIDDEN.subs(alpha, 0)), "t and p cancel: a wider tensor or pipeline split shrinks the "
                                               "gradient and the backward alike")),
    "sequences per micro-batch; transformer-layer parameters 12Lh² (GPT); β per gradient element; latency α "
    "left out (large buckets)",
    NARAYANAN + ", §3.2 (data-parallel all-reduce); Megatron-LM --overlap-grad-reduce", lhs="B*",
    claims=(Claim(sp.diff(B_HIDDEN.subs(alpha, 0), t), 0,
                  name="the micro-batch that hides the gradient all-reduce does not depend on t"),
            Claim(sp.diff(B_HIDDEN.subs(alpha, 0), p), 0,
                  name="nor on p"),
            Limit(B_HIDDEN.subs(alpha, 0) * s, (d - 1) / d * beta * c * peak * eta / 2, var=h,
                  name="for wide models the tokens per micro-batch that hide it tend to (d−1)/d · β·c·peak·η/2")))


# -- the published runs ------------------------------------------------------------------------

def run_rows() -> list[dict]:
    """One row per published run: the layout, published and predicted step time, the error."""
    rows = []
    for run in published.runs():
        if not published.has_step_time(run):      # TFLOP/s with no stated FLOP count (OPT, GPT-NeoX-20B)
            continue
        q = published.predict(run)
        predicted, measured = float(q["step_time"]), published.measured_step_time(run)
        rows.append({"id": run["id"], "where": run["where"], "role": run["role"], "hardware": run["hardware"],
                     "gpus": run["gpus"], "layout": f"t={run['t']} p={run['p']} d={run['d']} c={run['c']} "
                                                   f"v={run['v']} mb={run['micro_batch']}",
                     "settings": f"{run['recompute']}" + (" + SP" if run["sp"] else ""),
                     "published": measured, "predicted": predicted, "error": predicted / measured - 1,
                     "mfu": float(q["mfu"]), "bubble": float(q["bubble_time"]) / predicted})
    return rows


def _percent(x: float) -> str:
    return f"{100 * x:+.1f} %"


def _runs_table(rows) -> Table:
    body = tuple((r["id"], r["hardware"], r["gpus"], r["layout"], r["settings"], f"{r['published']:.3f}",
                  f"{r['predicted']:.3f}", _percent(r["error"]), r["role"]) for r in rows)
    def stats(chosen):
        e = np.array([abs(r["error"]) for r in chosen])
        return f"mean |error| {100 * e.mean():.1f} %, max {100 * e.max():.1f} % over {len(e)} runs" if len(e) else "none"

    systems = sorted({r["hardware"] for r in rows})
    summary = "; ".join(
        f"{system}: fitting runs {stats([r for r in rows if r['hardware'] == system and r['role'] == 'fit'])}, "
        f"check runs {stats([r for r in rows if r['hardware'] == system and r['role'] == 'check'])}"
        for system in systems)
    return Table(
        "Step time: predicted against published",
        ("run", "hardware", "GPUs", "layout", "recompute", "published (s)", "predicted (s)", "error", "role"),
        body,
        caption=("Seconds per iteration. Published: Korthikanti et al.'s Table 5 times as printed; Narayanan et "
                 "al.'s Table 1 and Llama 3's Table 4 through their TFLOP/s per GPU (the iteration's FLOPs, eq. (3) "
                 "for Narayanan et al., symcomm's model FLOPs for Llama 3, over the FLOP/s of all GPUs); check rows: "
                 "BLOOM's logged time, MT-NLG's printed times, the Megatron-LM README's TFLOP/s through eq. (3) "
                 "(OPT and GPT-NeoX-20B print TFLOP/s with no FLOP count and have no row). "
                 + summary + ". Role 'fit': the run fitted its system's two constants; 'check': never fitted to, "
                 "shown as the model predicts it."),
        source=NARAYANAN + ", Table 1; " + KORTHIKANTI + ", Tables 3 and 5; Dubey et al. 2024, The Llama 3 Herd "
               "of Models, Table 4")


def _constants_table() -> Table:
    rows = []
    for system in sorted({r["hardware"] for r in published.runs()}):
        hw = hardware(system)
        constants = dict(hw.step_time)
        rows.append((system, f"{hw.peak('bf16') / 1e12:g}", f"{constants['eta']:g}", f"{constants['kappa']:g}",
                     len(published.runs(system, role="fit"))))
    return Table("Fitted constants", ("hardware", "peak bf16 (TFLOP/s)", "eta", "kappa", "runs fitted on"),
                 tuple(rows),
                 caption=("eta: the share of the datasheet peak the matmuls reach; kappa: HBM passes over each "
                          "activation byte by the memory-bound kernels. Fitted by python -m "
                          "symcomm.derivations.fit_step_time (grid search, least mean |relative error| of step time). "
                          "Other presets borrow these (see symcomm/presets/hardware.json)."),
                 source="symcomm/presets/hardware.json")


def memory_rows() -> list[dict]:
    """Korthikanti et al.'s Figure 1 against the memory model, with the figure's own count of
    parameters (the transformer layers' 12Lh², 18 bytes each: fp16 weights and fp32 gradient
    and Adam states) and activations (Table 2; the 175B and 530B runs interleaved, v = 3)."""
    from symcomm.training import steptime

    out = []
    for entry in published.load()["memory"]:
        run = next(r for r in published.runs() if r["id"] == entry["runs"][0])
        values = {**published.values_of(run), "Phi": 12 * run["layers"] * run["hidden"] ** 2}
        base = {**published.options_of(run), "embeddings": "0"}
        states = steptime.quantities(values, 2, **{**base, "recompute": "none", "sp": "0"})
        baseline = float(states["memory_activations"])
        present = float(steptime.quantities(values, 2, **{**base, "recompute": "selective", "sp": "1"})["memory_activations"])
        held = float(states["memory_weights"] + states["memory_gradients"] + states["memory_optimizer"])
        gib = 2.0 ** 30
        out.append({"model": entry["where"].split(", ")[1].split()[0], "states": (entry["weights_grads_optimizer_gib"], held / gib),
                    "baseline": (entry["activations_tp_only_gib"], baseline / gib),
                    "present": (entry["activations_sp_selective_gib"], present / gib)})
    return out


def _memory_table() -> Table:
    rows = tuple((r["model"],) + tuple(f"{pub:.2f} / {ours:.2f}" for pub, ours in (r["states"], r["baseline"],
                                                                                   r["present"]))
                 for r in memory_rows())
    return Table("Memory per GPU against Korthikanti et al.'s Figure 1",
                 ("model", "weights + gradients + Adam (GiB)", "activations, no recompute (GiB)",
                  "activations, SP + selective (GiB)"), rows,
                 caption="published / symcomm, GiB (2³⁰ bytes), first pipeline stage.",
                 source=KORTHIKANTI + ", Figure 1 (values read off the figure) and Table 2")


CHAPTER = Chapter(
    11, "step-time", "Step time against published runs",
    ("A step is compute, communication and waiting. symcomm's step model (symcomm/training/steptime.py) times the busiest "
     "GPU: hardware FLOPs over the datasheet peak times a fitted share eta, plus kappa passes over the activation "
     "bytes for the memory-bound kernels; the tensor, context, expert and pipeline collectives of the hybrid "
     "strategy on the critical path of every micro-batch; (p − 1)/v micro-batch slots of bubble; the data-parallel "
     "reduce hidden behind the backward as far as the framework overlaps it; Adam at the HBM bandwidth. "
     "With an uneven split of the layers (pipeline_split=first_last: the first and the last of the p·v model "
     "chunks L_first and L_last layers, the middle ones the rest in equal parts, as Megatron-LM's first/last-stage "
     "flags and layout strings place them) the model prices every stage kind — the first (embedding), a middle "
     "one, the last (LM head and loss) — and the slowest sets the micro-batch slot of the pipeline and its "
     "bubble; memory is the stage holding the most. "
     "The FLOPs below are proved equal to the papers' closed forms, except one: Korthikanti et al.'s hardware "
     "FLOPs for selective recomputation count the recomputed attention core three times (its forward and "
     "backward once more), which their printed HFU follows; symcomm counts what re-runs, its forward. Two "
     "constants per system are fitted, on the runs marked 'fit'; the 2022 runs are faster than the 2021 ones "
     "for the same work per replica (530B: 49.05 s against 54.1 s), so fitting on Narayanan et al.'s table alone "
     "would leave Korthikanti et al.'s rows 7 % slow on average. Runs never fitted to are shown beside them: "
     "BLOOM and the Megatron-LM README's GPT-3 run come within 9 %; MT-NLG, run by DeepSpeed's pipeline engine, "
     "is 17–20 % slower than the model predicts — the model has no term for that engine's own overheads."),
    derivations=(LAYER, MODEL_FLOPS, FULL_RECOMPUTE, SELECTIVE_RECOMPUTE, INTERLEAVING, UNEVEN, HIDING),
    claims=(SIX_N,),
    late_tables=lambda: (_runs_table(run_rows()), _constants_table(), _memory_table()),
)
