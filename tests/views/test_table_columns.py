"""Which columns of a documentation table wrap in the LaTeX document (symcomm.views.docs.wrapping_columns): by hand
from the rule — a column wider than 40 characters wraps, and while the unwrapped columns beside the wrapping ones
hold more than 70 characters side by side, the widest of them wraps too."""

from symcomm.views.docs import table_context, wrapping_columns
from symcomm.core.chapters import Table


def test_no_wide_column_nothing_wraps_however_many_columns():
    assert wrapping_columns([30, 30, 30, 30]) == [False] * 4


def test_a_wide_column_with_narrow_neighbours_wraps_alone():
    # 9 + 12 + 23 = 44 characters beside it: within 70
    assert wrapping_columns([9, 12, 60, 23]) == [False, False, True, False]


def test_neighbours_too_wide_beside_a_wrapping_column_wrap_widest_first():
    # the step-time chapter's "What the constants were measured on": 9 + 12 + 23 + 37 + 28 = 109 > 70 beside the
    # 60-character column; wrapping the 37 leaves 72, still > 70; wrapping the 28 leaves 44
    assert wrapping_columns([9, 12, 23, 60, 37, 28]) == [False, False, False, True, True, True]


def test_the_wrapping_columns_share_half_the_line():
    table = Table("t", ("a", "b", "c"), (("x" * 50, "y" * 45, "z"),), caption="", source="")
    spec = table_context(table)["latex_columns"]
    assert spec.count("p{0.25\\linewidth}") == 2 and spec.endswith("l")
