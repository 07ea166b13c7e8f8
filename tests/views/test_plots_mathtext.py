"""The docs build's shared mathtext parse (issue 25, the build's CPU time): a tick label parsed once for every
renderer, the same result matplotlib's own parse gives, and matplotlib left as it was afterwards."""

from __future__ import annotations

import pytest

pytest.importorskip("matplotlib")


def test_each_string_parsed_once_across_renderers_and_restored():
    from matplotlib.font_manager import FontProperties
    from matplotlib.mathtext import MathTextParser

    from symcomm.views.plots import mathtext_parsed_once

    before = MathTextParser.__dict__["_parse_cached"]
    label, prop = r"$\mathdefault{2^{10}}$", FontProperties(size=10)
    own = MathTextParser("path").parse(label, 72, prop)
    with mathtext_parsed_once():
        # two parsers, as the SVG and the PDF renderer each make their own: one parse, one result handed to both
        first = MathTextParser("path").parse(label, 72, prop)
        second = MathTextParser("path").parse(label, 72, prop)
        assert first is second
        # another dpi or output kind is another parse (the key is what the parse depends on)
        assert MathTextParser("path").parse(label, 100, prop) is not first
        assert MathTextParser("agg").parse(label, 72, prop) is not first
    assert MathTextParser.__dict__["_parse_cached"] is before
    # the shared parse is matplotlib's own: the same glyphs and boxes
    assert (first.width, first.height, first.depth) == (own.width, own.height, own.depth)
    assert first.glyphs == own.glyphs and first.rects == own.rects
