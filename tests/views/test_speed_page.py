"""docs/speed.md has one renderer (symcomm.views.docs.speed_page): the docs build hands it its Markdown
environment, the bench's writer (python -m symcomm.tools.bench) none; both must write the same bytes, or a
bench run and the next docs build would disagree about the committed page."""

import importlib.util
import json
from pathlib import Path

from symcomm.views.docs import speed_page

ROOT = Path(__file__).resolve().parents[2]


def _build_docs():
    spec = importlib.util.spec_from_file_location("build_docs", ROOT / "build_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_bench_and_the_docs_build_render_the_speed_page_alike():
    report = json.loads((ROOT / "derivations" / "data" / "bench.json").read_text(encoding="utf-8"))
    markdown, _ = _build_docs().environments()
    page = speed_page(report)
    assert page == speed_page(report, markdown)
    # the committed run's figures are on it (the first goal's name, as the bench wrote it)
    assert report["goals"][0]["goal"] in page
    assert "Calculon is not run" in page


def _one_goal_page(**goal) -> str:
    report = json.loads((ROOT / "derivations" / "data" / "bench.json").read_text(encoding="utf-8"))
    base = {"goal": "a goal", "target": "a target", "met": False, "what": "what", "measured": {}}
    return speed_page({**report, "goals": [{**base, **goal}]})


def test_a_goal_in_seconds_is_printed_in_seconds_not_as_a_ratio():
    # the page once printed prove's 5.8 s CPU as "5.80×": the figure's unit is the bench's word, not a guess
    page = _one_goal_page(figure=5.8, unit="s")
    assert "| 5.80 s |" in page and "5.80×" not in page
    assert "| 4.53 µs |" in _one_goal_page(figure=4.527, unit="µs")
    assert "| 6.85× |" in _one_goal_page(figure=6.846, unit="×")


def test_a_ratio_goal_with_a_per_call_bound_shows_the_call_too():
    # a goal "≥ 5× …, and ≤ ~15 µs a call" is met on both: the page shows both figures (45.8 µs: a CPU median)
    page = _one_goal_page(figure=6.846, unit="×", per_call_s=45.8e-6)
    assert "| 6.85×, 45.80 µs a call |" in page


def test_the_bench_refuses_a_unit_it_does_not_know():
    import pytest

    from symcomm.tools.bench import _goal

    with pytest.raises(ValueError, match="unit='ms'"):
        _goal("g", "t", 1.0, True, "w", {}, unit="ms")


def test_the_page_goal_shows_each_views_first_renders_and_bytes():
    # the bench's page goal (bench_page): its figure in seconds, each view's median, least and most in ms (of 3
    # loads here: 700, 900, 800 ms → median 800) and what it loaded before the first render
    views = {"hybrid": {"first_render_ms": [700.0, 900.0, 800.0], "bytes_before": 552_968,
                        "files_before": ["app.js", "catalog.js"]}}
    page = _one_goal_page(figure=0.8, unit="s", measured=views, bytes_before=552_968)
    assert "| 0.80 s |" in page
    assert "hybrid: median 800 ms (least 700, most 900), 552,968 bytes in 2 files before it" in page
