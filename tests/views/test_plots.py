"""The plots' log axes are labelled in plain text (issue 25: math text was a tenth of the docs build), with the
very ticks and numbers matplotlib's own log scale labels them with."""

from __future__ import annotations

import pytest

from conftest import absent
from symcomm.views.plots import plain_log_label

#: what matplotlib 3.11.2's LogFormatterSciNotation writes (matplotlib/ticker.py: LogFormatterMathtext.__call__ and
#: LogFormatterSciNotation._non_decade_format) and the text a reader should see instead, written by hand
FORMS = [
    (r"$\mathdefault{10^{6}}$", "10⁶"),
    (r"$\mathdefault{10^{0}}$", "10⁰"),
    (r"$\mathdefault{10^{-12}}$", "10⁻¹²"),
    (r"$\mathdefault{2^{10}}$", "2¹⁰"),
    (r"$\mathdefault{3\times10^{-5}}$", "3×10⁻⁵"),
    (r"$\mathdefault{2.5\times10^{1}}$", "2.5×10¹"),
    (r"$\mathdefault{0}$", "0"),
    ("", ""),
]


@pytest.mark.parametrize("math, plain", FORMS)
def test_a_math_label_becomes_the_same_number_in_plain_text(math, plain):
    assert plain_log_label(math) == plain


def test_a_label_of_an_unknown_form_is_refused_not_shipped_as_math():
    with pytest.raises(ValueError, match="form"):
        plain_log_label(r"$\mathdefault{10^{2.50}}$")


def _pyplot():
    """matplotlib's pyplot on the file-only backend, or the test skipped (a user without the plots extra)."""
    try:
        import matplotlib
    except ImportError:
        absent("matplotlib is not installed (pip install 'symcomm[plots]')")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _every_plot():
    """(name, figure) of every plot the docs draw, each drawn from what it takes (the plots close nothing: the
    caller closes each figure when done)."""
    _pyplot()
    from symcomm.derivations.calibration import fit_dicts
    from symcomm.derivations.step_time import run_rows
    from symcomm.training.strategies import STRATEGIES
    from symcomm.views.plots import PLOTS, TAKES

    for name, draw in PLOTS.items():
        given = {"nothing": lambda: (), "published runs": lambda: (run_rows(),),
                 "calibration": lambda: (fit_dicts(),)}.get(TAKES.get(name, ""), lambda: (STRATEGIES,))()
        fig, _, _ = draw(*given)
        yield name, fig


def _value(label: str) -> float:
    """The number a plain label shows, read back independently of the module: '3×10⁻⁵' → 3e-5."""
    digits = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")
    coefficient, _, power = label.rpartition("×")
    split = min(power.index(c) for c in "⁰¹²³⁴⁵⁶⁷⁸⁹⁻" if c in power)
    base, exponent = power[:split], power[split:].translate(digits)
    return (float(coefficient) if coefficient else 1.0) * float(base) ** int(exponent)


def test_every_plot_labels_its_log_ticks_as_matplotlib_would_without_math_text():
    plt = _pyplot()
    from matplotlib.text import Text
    from matplotlib.ticker import LogFormatterSciNotation
    for name, fig in _every_plot():
        fig.canvas.draw()
        texts = [t.get_text() for t in fig.findobj(Text)]
        assert not [t for t in texts if "$" in t], name
        labelled = 0
        for ax in fig.axes:
            for axis in (ax.xaxis, ax.yaxis):
                assert axis.get_scale() == "log", (name, axis)
                base = axis.get_transform().base
                for locator, ours, theirs in (
                        (axis.get_major_locator(), axis.get_major_formatter(), LogFormatterSciNotation(base)),
                        (axis.get_minor_locator(), axis.get_minor_formatter(),
                         LogFormatterSciNotation(base, labelOnlyBase=False))):
                    theirs.set_axis(axis)
                    low, high = sorted(axis.get_view_interval())
                    locs = [x for x in locator() if low <= x <= high]
                    mine, default = ours.format_ticks(locs), theirs.format_ticks(locs)
                    assert [bool(t) for t in mine] == [bool(t) for t in default], (name, mine, default)
                    for x, text in zip(locs, mine):
                        if text:
                            labelled += 1
                            assert _value(text) == pytest.approx(x, rel=1e-9), (name, x, text)
        assert labelled >= 4, name
        plt.close(fig)


def test_every_text_of_every_plot_stands_inside_its_figure():
    """The plots are saved whole, inside fixed margins (views.plots.MARGINS), not cropped to a measured box: every
    text the renderer draws (tick labels, axis labels, legends) must then fit in the figure, with room to spare
    from its edge.  The texts are the ones handed to the renderer's draw_text, so hidden ticks do not count."""
    plt = _pyplot()
    for name, fig in _every_plot():
        renderer = fig.canvas.get_renderer()
        drawn = []
        draw_text = renderer.draw_text

        def recording(gc, x, y, s, prop, angle, ismath=False, mtext=None):
            drawn.append(mtext)
            return draw_text(gc, x, y, s, prop, angle, ismath, mtext)

        renderer.draw_text = recording
        fig.draw(renderer)
        # the axis labels, the tick labels of both axes and a legend's entries, at least
        assert len(drawn) >= 8 and all(t is not None for t in drawn), name
        box = fig.bbox
        edge = 2.0           # pixels (at 100 dpi): no text touches the figure's border
        for text in drawn:
            extent = text.get_window_extent(renderer)
            assert (extent.x0 >= box.x0 + edge and extent.y0 >= box.y0 + edge
                    and extent.x1 <= box.x1 - edge and extent.y1 <= box.y1 - edge), (name, text.get_text(), extent, box)
        plt.close(fig)


def test_every_minor_tick_matplotlib_would_draw_is_drawn_once():
    """Minor ticks are drawn as two lines per axis (views.plots.minor_ticks_as_lines), their marks and their grid
    lines, the labelled ones left as ticks: together at exactly the places matplotlib's own log scale puts its
    minor ticks (a fresh LogLocator(base, subs="auto") over the final limits, the majors left out), each once."""
    plt = _pyplot()
    from matplotlib.lines import TICKDOWN, TICKLEFT, Line2D
    from matplotlib.ticker import LogLocator
    for name, fig in _every_plot():
        fig.canvas.draw()
        drawn_minor = 0
        for ax in fig.axes:
            lines = [a for a in ax.get_children() if isinstance(a, Line2D)]
            for axis, marker, coordinate in ((ax.xaxis, TICKDOWN, Line2D.get_xdata),
                                             (ax.yaxis, TICKLEFT, Line2D.get_ydata)):
                low, high = sorted(axis.get_view_interval())
                theirs = LogLocator(base=axis.get_transform().base, subs="auto")
                theirs.set_axis(axis)
                majors = [x for x in LogLocator(base=axis.get_transform().base).tick_values(low, high)]
                want = sorted(x for x in theirs() if low <= x <= high
                              and not any(abs(x - m) <= 1e-9 * m for m in majors))
                marks = [x for line in lines if line.get_marker() == marker and line.get_linestyle() == "None"
                         for x in coordinate(line)]
                ticks = list(axis.get_minor_locator()())
                # the ticks left are the labelled ones: the rest are two lines, not a tick object each
                assert all(axis.get_minor_formatter().format_ticks(ticks)), (name, axis.axis_name)
                got = sorted(marks + ticks)
                assert len(got) == len(want) and all(abs(g - w) <= 1e-9 * w for g, w in zip(got, want)), \
                    (name, axis.axis_name, got, want)
                # one grid line per mark: its segments (x, x, NaN) or (y, y, NaN)
                grids = [line for line in lines if line.get_linestyle() == "-" and len(coordinate(line)) == 3 * len(marks)
                         and line.get_alpha() == 0.3]
                assert len(grids) == (1 if marks else 0), (name, axis.axis_name)
                drawn_minor += len(marks)
        assert drawn_minor >= 20, name
        plt.close(fig)


def test_the_all_reduce_plot_prices_each_algorithm_as_eval_does_on_the_same_links(tmp_path):
    # the plot's links (N = 16 on nodes of 8, α 5 µs and 50 GB/s inside, 10 µs and 25 GB/s across) as a hardware file:
    # eval's ring across nodes, by hand, 30 steps of α_inter + 2·15/16·2^30 bytes at the slower of 7/8 of the node's
    # 1/(50 GB/s) and 1/8 of the network's 1/(25 GB/s): 30·1e-5 + 2,013,265,920 · 1.75e-11 = 35.53 ms (an outsider
    # read 80.8 ms off the plot, which priced the whole ring at the network's β); the hierarchical one pays each level
    plt = _pyplot()
    import json

    import symcomm
    from symcomm.views.plots import all_reduce_time_vs_message

    links = tmp_path / "links.json"
    links.write_text(json.dumps({"intra": {"bytes_per_second": 50e9, "latency_s": 5e-6}, "inter": {
        "bytes_per_second": 25e9, "latency_s": 10e-6}, "gpus_per_node": 8, "hbm_bytes_per_second": 2e12,
        "memory_bytes": 8e10}))
    fig, _, _ = all_reduce_time_vs_message()
    try:
        curves = {line.get_label(): (line.get_xdata(), line.get_ydata()) for line in fig.axes[0].lines}
        x, y = curves["ring"]
        at = list(x).index(2.0 ** 30)
        assert y[at] == pytest.approx(30 * 1e-5 + 2_013_265_920 * 1.75e-11, rel=1e-9)
        for name in ("ring", "hierarchical", "rabenseifner"):
            x, y = curves[name]
            answer = symcomm.evaluate("all_reduce", algorithm=name, N=16, M=2 ** 29, dtype="bf16", gamma=0,
                                      hardware=str(links))
            assert y[list(x).index(2.0 ** 30)] == pytest.approx(float(answer["time"]), rel=1e-9), name
    finally:
        plt.close(fig)
