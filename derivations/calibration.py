"""Calibration from nccl-tests: what α, β and γ mean against nccl-tests' busbw, and one worked
calibration from a public log (derivations/data/nccl-tests/, its source beside it).

``CHAPTER`` (number 12) proves that the busbw of the catalog's bandwidth-optimal forms tends
to 1/β as the message grows (so a fitted β is a busbw converted back), and shows the worked
calibration of an 8× A100 all-reduce log: the fitted α and β, every row against the α-β line
and the efficiency curve, and the held-out test (calibrated on every other row, the other
rows predicted).  The tables are computed when the docs are rendered (``late_tables``).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import sympy as sp

from symcomm.core import symbols as S
from symcomm.collectives.algorithms import algorithm
from symcomm.core.chapters import Chapter, Derivation, Step, Table
from symcomm.core.proof import Claim, Limit

DATA = Path(__file__).resolve().parent / "data" / "nccl-tests" / "a100-1node-all_reduce.log"
LOG_SOURCE = ("8× A100-SXM4-40GB in one node (OCI BM.GPU4.8), all_reduce_perf -b 64 -e 10G -f 2 -g 8, as posted in "
              "Oracle Japan's OCI tutorials, “GPUクラスタを構築する”, section 4-2 "
              "(oracle-japan/ocitutorials, tutorials/_intermediates/spinup-gpu-cluster.md; "
              "https://oracle-japan.github.io/ocitutorials/intermediates/spinup-gpu-cluster/)")
PERFORMANCE = "nccl-tests doc/PERFORMANCE.md (algbw = S/t; busbw factors) and src/common.cu (the table's columns)"

N, M = S.N, S.M
alpha, beta, gamma = S.alpha, S.beta, S.gamma

#: nccl-tests' busbw / algbw, per collective (doc/PERFORMANCE.md)
FACTORS = {"all_reduce": 2 * (N - 1) / N, "all_gather": (N - 1) / N, "reduce_scatter": (N - 1) / N,
           "all_to_all": (N - 1) / N, "broadcast": sp.Integer(1)}


def _time(primitive: str, name: str, with_gamma: bool = False) -> sp.Expr:
    cost = algorithm(primitive, name).cost
    return sum((coef * sym for sym, coef in cost.coefficients if with_gamma or sym != gamma), sp.Integer(0))


def _busbw(primitive: str, name: str, with_gamma: bool = False) -> sp.Expr:
    return FACTORS[primitive] * M / _time(primitive, name, with_gamma)


RING_BUSBW = Derivation(
    title="The busbw of the ring all-reduce tends to 1/β, γ apart",
    lhs="busbw of the ring all-reduce, its γ term apart (the second claim)",
    steps=(
        Step(_busbw("all_reduce", "ring"), "busbw = algbw × 2(N−1)/N, algbw = M/T, T the catalog's ring time "
             "2(N−1)α + 2(N−1)/N·Mβ"),
        Step(M / (N * alpha + M * beta), "divide by 2(N−1)/N: the factor is the ring's β coefficient per byte"),
    ),
    convention="M = the full buffer in bytes (nccl-tests' size S), β and γ per byte; the steps leave γ out, the "
               "second claim puts it back",
    source=PERFORMANCE,
    claims=(
        Limit(M / (N * alpha + M * beta), 1 / beta, M, sp.oo,
              name="ring all-reduce: busbw → 1/β as M → ∞", source=PERFORMANCE),
        Limit(_busbw("all_reduce", "ring", with_gamma=True), 2 / (2 * beta + gamma), M, sp.oo,
              name="with γ: busbw → 1/(β + γ/2); a fit at one N sees β + γ/2 only", source=PERFORMANCE),
    ),
)


def _limit_claims() -> tuple:
    out = []
    for primitive, name in (("all_gather", "ring"), ("reduce_scatter", "ring"), ("all_to_all", "pairwise"),
                            ("all_reduce", "rabenseifner")):
        out.append(Limit(_busbw(primitive, name), 1 / beta, M, sp.oo,
                         name=f"{primitive}/{name}: busbw → 1/β as M → ∞", source=PERFORMANCE))
    out.append(Limit(_busbw("broadcast", "ring"), S.C / ((N + S.C - 2) * beta), M, sp.oo,
                     name="broadcast/ring (a pipelined chain of C chunks): busbw → C/(N + C − 2) · 1/β",
                     source=PERFORMANCE))
    out.append(Claim(_time("all_reduce", "ring").subs(M, 0), 2 * (N - 1) * alpha,
                     name="ring all-reduce: an empty message costs 2(N−1)α, the latency rows' level",
                     source=PERFORMANCE))
    return tuple(out)


@lru_cache(maxsize=1)
def worked():
    """The worked calibration: (fit of the whole log, fit of every other row, the rows it did not see)."""
    from symcomm.measurement import nccl_tests
    from symcomm.measurement.calibrate import fit_log

    log = nccl_tests.with_ranks(nccl_tests.read(DATA)[0], None, None)
    whole = fit_log(log)
    kept = tuple(r for i, r in enumerate(log.rows) if i % 2 == 0)
    unseen = tuple(r for i, r in enumerate(log.rows) if i % 2 == 1)
    half = fit_log(nccl_tests.Log(log.path, log.collective, log.ranks, log.hosts, log.gpus_per_node, log.devices, kept))
    return whole, half, unseen


def fit_dicts() -> list:
    """The worked calibration as ``symcomm calibrate --json`` gives it (for the plot)."""
    whole, _, _ = worked()
    return [whole.as_dict()]


def _tables() -> tuple:
    whole, half, unseen = worked()
    n = whole.model.ranks
    largest = max(whole.rows, key=lambda r: r["bytes"])
    smallest = min(whole.rows, key=lambda r: r["bytes"])
    summary = Table(
        "The fitted constants",
        ("quantity", "value", "unit", "against the log"),
        (("α (per message)", f"{whole.alpha * 1e6:.3f} ± {whole.stderr['alpha'] * 1e6:.3f}", "µs",
          f"2(N−1)α = {2 * (n - 1) * whole.alpha * 1e6:.1f} µs; the {smallest['bytes']} B row took "
          f"{smallest['measured_time'] * 1e6:.2f} µs"),
         ("β (per byte)", f"{whole.beta:.4g} ± {whole.stderr['beta']:.2g}", "s/byte",
          "± one standard error of the least squares (from the fit's own scatter)"),
         ("1/β (per direction)", f"{whole.bandwidth / 1e9:.2f} ± {whole.stderr['beta'] / whole.beta ** 2 / 1e9:.2f}",
          "GB/s", "the link's own: the reduction is γ's, held below"),
         ("γ (per reduced byte)", f"{whole.gamma:.4g}", "s/byte", f"not fitted: {whole.gamma_source}"),
         ("1/(β + γ/2)", f"{1 / (whole.beta + whole.gamma / 2) / 1e9:.2f}", "GB/s",
          f"the busbw the line tends to; the log's busbw {largest['measured_busbw'] / 1e9:.2f} GB/s at "
          f"{largest['bytes']:,} B ({100 * (1 / (whole.beta + whole.gamma / 2) / largest['measured_busbw'] - 1):+.1f} %)"),
         ("relative RMS of the α-β fit", f"{100 * whole.rms:.2f}", "%",
          f"over the {len(whole.fitted_rows)} latency and bandwidth rows it was fitted to; "
          f"{100 * whole.rms_all:.1f} % over all {len(whole.rows)} rows"),
         ("sizes measured", f"{whole.size_range[0]:,} to {whole.size_range[1]:,}", "B",
          "where the calibration holds; beyond them its efficiency curve is extrapolated")),
        caption=(f"all_reduce on {n} ranks, catalog ring formula, fitted by weighted least squares in relative "
                 "error on the rows where one term dominates (time within 20 % of the smallest; busbw within 5 % "
                 "of the largest). Reproduce: symcomm calibrate derivations/data/nccl-tests/a100-1node-all_reduce.log."),
        source=LOG_SOURCE)
    factor = whole.model.collective.factor(n)
    rows = tuple((f"{r['bytes']:,}", f"{r['measured_time'] * 1e6:.2f}", f"{r['alpha_beta_time'] * 1e6:.2f}",
                  f"{100 * (r['alpha_beta_time'] / r['measured_time'] - 1):+.1f}", f"{r['efficiency']:.3f}",
                  f"{r['measured_busbw'] / 1e9:.2f}", f"{factor * r['bytes'] / r['alpha_beta_time'] / 1e9:.2f}",
                  "yes" if r["in_fit"] else "")
                 for r in whole.rows)
    per_row = Table(
        "Every row against the α-β line",
        ("size S (B)", "measured (µs)", "α-β (µs)", "α-β vs measured", "efficiency e(S)", "busbw measured (GB/s)",
         "busbw α-β (GB/s)", "in the fit"),
        rows,
        caption=("Out-of-place time as printed. e(S) = α-β time / measured time: 1 where the formula holds (the "
                 "latency rows and the largest sizes); below 1 in between, where NCCL switches protocols and "
                 "channel counts, which no α-β line follows. The calibrated prediction is the α-β time divided by "
                 "e(S), interpolated in log S between measured sizes."),
        source=LOG_SOURCE)
    held = []
    for r in unseen:
        predicted = float(half.model.time([r.size])[0])
        measured = r.measured.time_s
        held.append((f"{r.size:,}", f"{measured * 1e6:.2f}", f"{predicted * 1e6:.2f}",
                     f"{100 * (predicted / measured - 1):+.1f}",
                     f"{100 * (float(half.model.core([r.size])[0]) / measured - 1):+.1f}"))
    held_out = Table(
        "Held out: calibrated on every other row, the other rows predicted",
        ("size S (B)", "measured (µs)", "calibrated prediction (µs)", "error", "α-β alone"),
        tuple(held),
        caption=("The calibration made from rows 1, 3, 5… of the log (its α, β and efficiency curve), predicting "
                 "rows 2, 4, 6… it never saw, as symcomm nccl-tests --hardware FILE does. The last column is the "
                 "α-β formula without the curve: what the curve adds in the middle sizes."),
        source=LOG_SOURCE)
    return summary, per_row, held_out


CHAPTER = Chapter(
    number=12,
    slug="calibration",
    title="Calibration from nccl-tests",
    intro=("nccl-tests prints, for each message size S (bytes, the full buffer: symcomm's M), the time t and two "
           "bandwidths: algbw = S/t and busbw = algbw × a factor, 2(N−1)/N for all-reduce, (N−1)/N for all-gather, "
           "reduce-scatter and all-to-all, 1 for broadcast and reduce. The factor is exactly the β coefficient per "
           "byte of the bandwidth-optimal catalog forms, so, γ apart, busbw → 1/β as S grows: a fitted β, converted "
           "back, is the per-direction bandwidth each GPU's link reaches (an all-reduce's busbw, paying γ per reduced "
           "byte too, tends to 1/(β + γ/2), below). α is the cost of a message that "
           "carries nothing: the time of the smallest sizes divided by the messages on the critical path, 2(N−1) "
           "for the ring all-reduce. γ, the cost per reduced byte, is a multiple of M like β at any one N, so no fit "
           "of one log separates them: the busbw tends to 1/(β + γ/2) for the ring all-reduce. symcomm calibrate "
           "therefore holds γ at the value the hardware file it writes carries (3 / the HBM bandwidth of the log's "
           "GPU preset, or of --base) and subtracts c·γ as known, so the fitted β is the link's own and every "
           "command that adds c·γ (eval, compare, nccl-tests) counts the reduction once; without an HBM bandwidth "
           "γ = 0 and the reduction is folded into β, as the file says. Each calibration entry records the γ its "
           "fit held (gamma_held); a file without it, written before, is read with γ = 0. "
           "symcomm calibrate fits α and β by least squares in relative error on the rows where one term "
           "dominates; between them NCCL's protocol switches (LL, LL128, Simple) and channel counts make the "
           "measured curve sag below the α-β line, and the efficiency curve e(S) = α-β time / measured time records "
           "by how much. symcomm nccl-tests predicts α-β time / e(S), e interpolated in log S; without a "
           "calibration it prints the α-β formula alone. A log that spans nodes fits the flat formula at the "
           "network's α, β; with a single-node log beside it, the two-level (hierarchical) form is fitted for "
           "α_inter, β_inter with the intra-node values held. These are two meanings of the inter-node link, fitted "
           "through two formulas: a flat ring of N ranks pays 2(N−1)/N·M·β per rank, so its β is the per-step "
           "cost of its slowest hop, while the two-level form pays 2(N/G−1)/(N/G)·(M/G)·β_inter across nodes with "
           "all G ranks of a node crossing at once, so its β_inter is each rank's share of the network. One "
           "16-rank, 2-node A100 log gives about 75 GB/s for the first and 6.6 GB/s for the second; a flat ring "
           "priced at the second is 10× too slow. The hardware file keeps both: inter from the flat fit (marked "
           "fitted_as flat), used by flat algorithms spanning nodes and by the strategies' groups across nodes, and "
           "inter_two_level from the two-level fit, used by the two-level forms. A file with a flat inter and no "
           "inter_two_level (a multi-node log without a single-node one) refuses the two-level forms across nodes; "
           "a file that does not mark its inter (a preset's physical link) serves both. "
           "A flat ring spanning nodes does not cross at one NIC: NCCL runs it as several channels and gives "
           "successive channels successive NICs of a node (NVIDIA/nccl src/graph/search.cc, ncclTopoSearchRecNet), "
           "so with k of its ranks on a node each is the node's exit for 1/k of what a rank sends. symcomm prices it "
           "α_inter every step, β_inter on 1/k of the elements and the intra-node β on the other (k−1)/k, the two "
           "legs at once (a channel's NVLink hops and its NIC carry its chunks in the same steps; "
           "derivations/hybrid.py holds the measured multi-node rings against it): per element the slower leg, "
           "max((k−1)/k·β, β_inter/k), an effective bandwidth min(k·B_intra/(k−1), k·B_nic) (k = G for a group "
           "of consecutive ranks filling its nodes, the fewest ranks any node holds otherwise). A flat fit of a "
           "multi-node log is that rule at the log's own k, so the file's flat inter is read once, the other "
           "way, as the per-NIC link: β_inter = k·β_fit, the network's leg the slower, with k from the run the fit "
           "records (its fitted_on, or its calibration entry), refused when the fit is as fast as the node's leg "
           "alone (it then says nothing of the network) and kept whole, said, "
           "when no record gives the log's ranks and GPUs per node or the fit is not a ring's; eval, compare, "
           "nccl-tests and the strategies' ring groups then split it again at their own k, and the log's own "
           "group is priced at its fit. Against the two 2-node logs (busbw at 8 GB; the model's busbw is "
           "1/(β_eff + γ/2)): 2 × 8 A100 on OCI RoCE measured 71.6 GB/s, where one NIC of 25 GB/s gives 24.6 GB/s "
           "and the split at k = 8 with NVLink at 300 GB/s 174.3 GB/s: the log is 2.9× the one-NIC figure and 41 % "
           "of the split's; 2 × 8 H100 on GCP A3 Mega (8 GPU NICs of 200 Gb/s, 25 GB/s per GPU: Google Cloud, "
           "'Networking and GPU machines') measured 338.8 GB/s, above the split's 183.6 GB/s (339.2 GB/s at the "
           "h100 preset's 50 GB/s NIC) and above any flat ring at those NICs: NCCL ran another algorithm there "
           "(NVLink SHARP or a tree crossing with 1/G of the buffer), which the two-level forms describe, not "
           "a flat ring. "
           "The worked example below is a public 8× A100 log."),
    derivations=(RING_BUSBW,),
    claims=_limit_claims(),
    late_tables=_tables,
)
