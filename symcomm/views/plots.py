"""The documentation's plots, drawn from the engine's expressions (matplotlib: optional).

Each plot function returns (figure, title, caption) and states its assumptions in the
caption; numbers come from the symbolic costs through :func:`symcomm.numbers.evaluation.fast`.  Install
the extra with ``pip install 'symcomm[plots]'``.
"""

from __future__ import annotations

import functools
import re

import numpy as np
import sympy as sp

from ..base.crossing import crossing_of
from ..core import symbols as S
from ..collectives.algorithms import POW2, algorithms_of
from ..numbers.evaluation import fast
from ..core.rules import is_power_of_two


def _curve(expr, name: str, x: np.ndarray) -> np.ndarray:
    """``expr`` (a function of the one symbol ``name``) at every point of ``x``, as floats."""
    return fast(expr)(**{name: x}) * np.ones_like(x, dtype=float)


#: line styles and (hollow) markers: series i gets the i-th pair, no two series of a plot alike
_LINESTYLES = ("-", "--", "-.", ":")
_MARKERS = ("o", "s", "^", "v", "D", "<", ">", "p", "h", "*")


def series_style(i: int, count: int) -> dict:
    """Matplotlib keywords for series ``i`` of ``count``: a line style and marker pair of its own,
    markers hollow and staggered along the line, so that a series drawn over another (two
    algorithms with one formula at this N) still shows."""
    return {"linestyle": _LINESTYLES[i % len(_LINESTYLES)], "marker": _MARKERS[i % len(_MARKERS)],
            "markersize": 5, "markerfacecolor": "none", "markevery": (0.1 * i / max(count, 1), 0.1)}


_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")
#: the three forms matplotlib's LogFormatterSciNotation writes a tick label in (matplotlib/ticker.py, v3.11.2):
#: a power of the base, a coefficient times one, a plain number (an exponent below axes.formatter.min_exponent)
_POWER = re.compile(r"\$\\mathdefault\{(?:(-?[0-9.e+]+)\\times)?([0-9.]+)\^\{(-?[0-9]+)\}\}\$")
_NUMBER = re.compile(r"\$\\mathdefault\{(-?[0-9.e+-]+)\}\$")


def plain_log_label(text: str) -> str:
    """A log axis's tick label as matplotlib writes it in math text (``$\\mathdefault{10^{6}}$``) as plain
    Unicode text (10⁶, 2×10⁻³): the same number, without the math-text parser, which each renderer (the
    measuring pass, SVG, PDF) runs again for every label and which took a tenth of the docs build."""
    if not text:
        return text
    power = _POWER.fullmatch(text)
    if power:
        coefficient, base, exponent = power.groups()
        return (f"{coefficient}×" if coefficient else "") + base + exponent.translate(_SUPERSCRIPT)
    number = _NUMBER.fullmatch(text)
    if number:
        return number.group(1).replace("-", "−")
    raise ValueError(f"a log tick label of a form this module does not know: {text!r}")


@functools.cache
def _plain_log_formatter():
    from matplotlib.ticker import LogFormatterSciNotation

    class PlainLogFormatter(LogFormatterSciNotation):
        """matplotlib's own choice of which ticks to label and with what number, written as plain text."""

        def __call__(self, x, pos=None):
            return plain_log_label(super().__call__(x, pos))

    return PlainLogFormatter


def log_scales(ax, x_base=10, y_base=10) -> None:
    """Both axes of ``ax`` logarithmic, labelled as matplotlib's log scale labels them (the same ticks and
    numbers: its ``LogScale`` defaults, major ticks at the powers, minor ones labelled when few) in plain text."""
    formatter = _plain_log_formatter()
    for axis, scale, base in ((ax.xaxis, ax.set_xscale, x_base), (ax.yaxis, ax.set_yscale, y_base)):
        scale("log", base=base)
        axis.set_major_formatter(formatter(base))
        axis.set_minor_formatter(formatter(base, labelOnlyBase=False))


#: the figure's margins around its axes, in inches: room for the tick labels and the axis labels, fixed rather
#: than measured (a tight box lays out and draws every text of the figure once more only to find them; the test
#: tests/views/test_plots.py holds every text of every plot inside its figure)
MARGINS = {"left": 0.72, "right": 0.25, "bottom": 0.5, "top": 0.15}
#: inches between two axes side by side: the right one's tick labels and axis label stand in it
GAP = 0.85


def framed(fig):
    """``fig`` with its axes (one row) placed within :data:`MARGINS` and :data:`GAP`; returns ``fig``."""
    width, height = fig.get_size_inches()
    count = len(fig.axes)
    axis_width = (width - MARGINS["left"] - MARGINS["right"] - (count - 1) * GAP) / count
    fig.subplots_adjust(left=MARGINS["left"] / width, right=1 - MARGINS["right"] / width,
                        bottom=MARGINS["bottom"] / height, top=1 - MARGINS["top"] / height,
                        wspace=GAP / axis_width)
    return fig


def minor_ticks_as_lines(fig):
    """The unlabelled minor ticks of every axis of ``fig`` drawn as two artists per axis, their grid lines and their
    marks, each one line through all of them (styled as the axis's own minor tick; labelled "_...", so no legend or
    series reads them), instead of a tick object of five artists each (a log axis has dozens, laid out and drawn
    once per saved file); the labelled ones, if any, stay ticks.  Call it last: it fixes the axes' limits where autoscaling put them, which the ticks are
    placed for.  Returns ``fig``."""
    from matplotlib.lines import Line2D
    from matplotlib.ticker import FixedLocator

    for ax in fig.axes:
        ax.set_xlim(ax.get_xlim())
        ax.set_ylim(ax.get_ylim())
        for axis, transforms in ((ax.xaxis, ax.get_xaxis_transform), (ax.yaxis, ax.get_yaxis_transform)):
            low, high = sorted(axis.get_view_interval())
            locs = [x for x in axis.get_minorticklocs() if low <= x <= high]   # without the majors, in view
            texts = axis.get_minor_formatter().format_ticks(locs)
            plain = [x for x, text in zip(locs, texts) if not text]
            tick = axis.get_minor_ticks(1)[0]          # the style the axis would give a minor tick
            axis.set_minor_locator(FixedLocator([x for x, text in zip(locs, texts) if text]))
            if not plain:
                continue
            across = [v for x in plain for v in (x, x, np.nan)]
            span = [v for _ in plain for v in (0.0, 1.0, np.nan)]
            grid, mark = tick.gridline, tick.tick1line
            # a vertical line per x tick (data x, axes y from 0 to 1), a horizontal one per y tick
            ax.add_artist(Line2D(*((across, span) if axis is ax.xaxis else (span, across)),
                                 transform=transforms(which="grid"), color=grid.get_color(),
                                 linewidth=grid.get_linewidth(), linestyle=grid.get_linestyle(),
                                 alpha=grid.get_alpha(), zorder=axis.get_zorder(), visible=grid.get_visible(),
                                 label="_minor grid"))
            ax.add_artist(Line2D(*((plain, [0.0] * len(plain)) if axis is ax.xaxis else ([0.0] * len(plain), plain)),
                                 transform=transforms(which="tick1"), linestyle="none", marker=mark.get_marker(),
                                 markersize=mark.get_markersize(), markeredgewidth=mark.get_markeredgewidth(),
                                 color=mark.get_color(), zorder=axis.get_zorder(), clip_on=False,
                                 visible=mark.get_visible(), label="_minor ticks"))
    return fig


def _figure():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.3, 3.9), dpi=100)
    framed(fig)
    ax.grid(True, which="both", alpha=0.3)
    return fig, ax


def dp_volume_vs_n(strategies):
    """Per-GPU elements sent per step ÷ Φ for naive DP, ring DP and ZeRO-3."""
    fig, ax = _figure()
    n = np.arange(2, 1025)
    curves = (("DP, naive (root)", strategies["dp"].cost(algorithm="naive").send),
              ("DP, ring", strategies["dp"].cost(algorithm="ring").send),
              ("ZeRO-3 / FSDP", strategies["zero3"].cost().send))
    for i, (label, send) in enumerate(curves):
        y = _curve(send / S.Phi, "N", n)
        ax.plot(n, y, label=label, **series_style(i, len(curves)))
    log_scales(ax, x_base=2)
    ax.set_xlabel("GPUs N")
    ax.set_ylabel("busiest-GPU send per step / Φ")
    ax.legend()
    caption = ("Elements sent by the busiest GPU per training step, divided by Φ (exact (N−1)/N forms). "
               "The naive root grows as N−1; the ring tends to 2, ZeRO-3 to 3.")
    minor_ticks_as_lines(fig)
    return fig, "Data parallel: per-GPU volume vs N", caption


def sequence_parallel_vs_s(strategies, n=8, h=8192, b=1):
    """Per-layer, per-GPU send vs sequence length for TP, SP, Ulysses and ring attention."""
    fig, ax = _figure()
    seq = 2.0 ** np.arange(10, 21)
    curves = (("TP (Megatron)", strategies["tp"].cost().send),
              ("SP (Megatron sequence parallel)", strategies["sp"].cost().send),
              ("CP, Ulysses", strategies["cp_ulysses"].cost().send),
              ("CP, ring attention", strategies["cp_ring"].cost().send))
    values = {S.N: n, S.h: h, S.b: b, S.L: 1}
    for i, (label, send) in enumerate(curves):
        y = _curve(sp.sympify(send, strict=True).subs(values), "s", seq)
        ax.plot(seq, y, label=label, **series_style(i, len(curves)))
    log_scales(ax, x_base=2)
    ax.set_xlabel("sequence length s")
    ax.set_ylabel("elements sent per GPU per layer per step")
    ax.legend()
    caption = (f"One layer, forward + backward, N = {n} GPUs, h = {h}, b = {b}, K/V of full width; "
               "elements. TP and SP coincide (proved in chapter 4, SP as sp_regather=0 runs it: Megatron-LM's re-gather of "
               "the input for the weight gradient sends 5/4 of it); Ulysses is 1/N of them.")
    minor_ticks_as_lines(fig)
    return fig, "Tensor, sequence and context parallel vs sequence length", caption


def all_reduce_time_vs_message(n=16, ranks_per_node=8, bytes_per_element=2,
                               alpha=5e-6, beta_bytes=1 / 50e9, alpha_inter=10e-6,
                               beta_inter_bytes=1 / 25e9):
    """α-β time of every all-reduce algorithm vs message size."""
    fig, ax = _figure()
    sizes = 2.0 ** np.arange(10, 33)          # bytes
    values = {S.N: n, S.G: ranks_per_node, S.gamma: 0, S.alpha: alpha, S.beta: beta_bytes * bytes_per_element,
              S.alpha_inter: alpha_inter, S.beta_inter: beta_inter_bytes * bytes_per_element}
    shown = [alg for alg in algorithms_of("all_reduce") if not (POW2 in alg.requires and not is_power_of_two(n))]
    for i, alg in enumerate(shown):
        cost = alg.cost
        if cost.coefficient(S.alpha_inter) == 0 and n > ranks_per_node:
            # a flat algorithm on N > G ranks: its α and β split between the node's links and the network by its
            # crossing rule (base.crossing: a ring's node exits rotate over the node's NICs), as eval prices it on
            # a hardware file of these links; the two-level one pays each level its own already
            cost = cost.across_nodes(ranks_per_node, crossing_of("all_reduce", alg.name), group=n)
        time = sp.sympify(cost.time, strict=True).subs(values)
        y = _curve(time, "M", sizes / bytes_per_element)
        ax.plot(sizes, y, label=alg.name, **series_style(i, len(shown)))
    log_scales(ax, x_base=2)
    ax.set_xlabel(f"message size (bytes: M elements × {bytes_per_element})")
    ax.set_ylabel("time (s)")
    ax.legend(fontsize=8)
    caption = (f"N = {n} GPUs, {ranks_per_node} per node, bf16, α = {alpha * 1e6:g} µs, "
               f"β = 1/({1 / beta_bytes / 1e9:g} GB/s) inside a node, α_inter = {alpha_inter * 1e6:g} µs, "
               f"β_inter = 1/({1 / beta_inter_bytes / 1e9:g} GB/s) across nodes; the single-level algorithms span "
               "nodes, their α and β split between the two levels by each one's crossing rule (a ring's node exits "
               "rotate over the node's NICs: β time max((k − 1)/k·β, β_inter/k), k GPUs a node; the others through "
               "one NIC: α_inter, β_inter), as eval prices them; the hierarchical one pays each level its own; "
               "γ = 0, no overlap.")
    minor_ticks_as_lines(fig)
    return fig, "All-reduce algorithms: time vs message size", caption


def step_time_vs_published(rows):
    """Predicted against published step time, one marker per run (``rows``: dicts with
    published, predicted, hardware, role), the ±10 % band drawn."""
    fig, ax = _figure()
    for i, system in enumerate(sorted({r["hardware"] for r in rows})):
        mine = [r for r in rows if r["hardware"] == system]
        ax.plot([r["published"] for r in mine], [r["predicted"] for r in mine], linestyle="none",
                marker=_MARKERS[i % len(_MARKERS)], color=f"C{i}", label=system)
    low = min(min(r["published"], r["predicted"]) for r in rows) / 1.3
    high = max(max(r["published"], r["predicted"]) for r in rows) * 1.3
    line = np.array([low, high])
    ax.plot(line, line, color="black", linewidth=1, label="predicted = published")
    ax.plot(line, 1.1 * line, color="grey", linestyle="--", linewidth=1, label="±10 %")
    ax.plot(line, 0.9 * line, color="grey", linestyle="--", linewidth=1)
    log_scales(ax)
    ax.set_xlabel("published step time (s)")
    ax.set_ylabel("predicted step time (s)")
    ax.legend(fontsize=8)
    caption = ("Every published run of chapter 11, predicted by the step model with its hardware preset's fitted "
               "constants; seconds per iteration, log scales.")
    minor_ticks_as_lines(fig)
    return fig, "Step time: predicted against published runs", caption


def calibration_vs_measured(fits):
    """Measured against calibrated time and busbw vs message size, log-log (``fits``: the dicts
    of ``symcomm calibrate --json``, one per collective)."""
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10.7, 3.9), dpi=100)
    for ax in (left, right):
        ax.grid(True, which="both", alpha=0.3)
        log_scales(ax, x_base=2)
        ax.set_xlabel("message size S (bytes, the full buffer)")
    colours = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple")
    for i, fit in enumerate(fits):
        colour = colours[i % len(colours)]
        rows = [r for r in fit["rows"] if r["bytes"] > 0]
        size = np.array([r["bytes"] for r in rows], dtype=float)
        label = f"{fit['collective']}, {fit['ranks']} ranks"
        measured = np.array([r["measured_time"] for r in rows])
        core = np.array([r["alpha_beta_time"] for r in rows])
        factor = np.array([r["measured_busbw"] * r["measured_time"] / r["bytes"] for r in rows])
        # measured and fitted of one collective: one colour, each its own line style and marker
        measured_style, fit_style = series_style(2 * i, 2 * len(fits)), series_style(2 * i + 1, 2 * len(fits))
        left.plot(size, measured * 1e6, color=colour, label=f"{label}: measured", **measured_style)
        left.plot(size, core * 1e6, color=colour, label=f"{label}: α-β fit", **fit_style)
        right.plot(size, np.array([r["measured_busbw"] for r in rows]) / 1e9, color=colour,
                   label=f"{label}: measured", **measured_style)
        right.plot(size, factor * size / core / 1e9, color=colour, label=f"{label}: α-β fit", **fit_style)
        if size.size >= 2 and size[-1] > size[-2]:
            # the line's own limit: its time is α-terms + S·(β- and γ-terms) per byte, so busbw tends to the factor
            # over that per-byte slope (1/β without a reduction; 1/(β + γ/2) for a ring all-reduce)
            slope = (core[-1] - core[-2]) / (size[-1] - size[-2])
            right.axhline(factor[-1] / slope / 1e9, color=colour, linestyle=":", linewidth=1)
    left.set_ylabel("time (µs)")
    right.set_ylabel("busbw (GB/s)")
    left.legend(fontsize=7)
    right.legend(fontsize=7)
    framed(fig)
    caption = ("Measured nccl-tests rows (markers) against the catalog's α-β formula at the fitted α, β (lines); "
               "the dotted line is the busbw the α-β line tends to at large messages (1/β; 1/(β + γ/2) for an "
               "all-reduce, whose reduction costs γ per byte). The gap between marker and line is the "
               "efficiency curve the calibrated prediction divides by (α-β time / measured time).")
    minor_ticks_as_lines(fig)
    return fig, "Calibration: measured against fitted time and busbw", caption


#: name → function drawing it from the strategies (or, for the ones in TAKES, from what is named there)
PLOTS = {
    "dp_volume_vs_n": dp_volume_vs_n,
    "sequence_parallel_vs_s": sequence_parallel_vs_s,
    "all_reduce_time_vs_message": all_reduce_time_vs_message,
    "step_time_vs_published": step_time_vs_published,
    "calibration_vs_measured": calibration_vs_measured,
}
#: the plots that take something other than the strategies: what the caller passes
TAKES = {"all_reduce_time_vs_message": "nothing", "step_time_vs_published": "published runs",
         "calibration_vs_measured": "calibration"}
