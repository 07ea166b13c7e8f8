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
