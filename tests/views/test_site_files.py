"""The interactive page's files (docs/site/, no browser): each view's first load stays under issue 25's budget,
the formula scripts share one helpers script, and a script built on the shared helpers computes what the
standalone one computes.

The page is the committed one (tests/integration/test_docs.py holds it equal to a fresh build); the browser's
own count of the bytes it requests is ``python -m symcomm.tools.pagespeed``.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from conftest import ROOT, absent
from symcomm.base.errors import InputError
from symcomm.views import site

SITE = ROOT / "docs" / "site"
NODE = shutil.which("node")


def _catalog() -> dict:
    text = (SITE / "catalog.js").read_text(encoding="utf-8")
    return json.loads(text[text.index("{"):text.rindex("}") + 1])


def test_every_view_loads_at_most_a_megabyte_before_its_first_render():
    """Issue 25's goal, "≤ 1 MB loaded before [the first render]", for the view of every subject the page
    offers (a user may open any by its link), not only the one it opens on."""
    over = {}
    for entry in _catalog()["subjects"]:
        size = sum(site.first_view_files(SITE, entry["ident"]).values())
        if size > 1_000_000:
            over[entry["ident"]] = size
    assert not over, over


def test_the_first_view_is_the_page_its_helpers_and_the_subjects_own_script():
    """Read off index.html by hand: its style sheet and four scripts (catalog.js, numbers.js, the shared helpers,
    app.js); then a collective's view adds its primitive's script (all algorithms: the chart draws them), a hybrid
    variant's its own and its step model's (the page opens with a hardware preset, so the step time draws)."""
    page = ["index.html", "style.css", "catalog.js", "numbers.js", "formulas/helpers.js", "app.js"]
    assert list(site.first_view_files(SITE, "all_reduce__ring")) == page + ["formulas/all_reduce.js"]
    assert list(site.first_view_files(SITE, "all_reduce__rabenseifner")) == page + ["formulas/all_reduce.js"]
    hybrid = next(e["ident"] for e in _catalog()["subjects"] if e["owner"] == "hybrid" and e["changed"])
    assert list(site.first_view_files(SITE, hybrid)) == page + [f"formulas/{hybrid}.js", f"formulas/{hybrid}__step.js"]
    assert (SITE / "formulas" / f"{hybrid}.js").stat().st_size == site.first_view_files(SITE, hybrid)[f"formulas/{hybrid}.js"]


def test_an_unknown_view_is_refused_with_the_choices():
    with pytest.raises(InputError, match=r"the page has no subject 'nonesuch': it offers \d+ \("):
        site.first_view_files(SITE, "nonesuch")


def test_the_helpers_are_written_once_and_index_html_loads_them_before_app_js():
    scripts = sorted((SITE / "formulas").glob("*.js"))
    helpers = SITE / "formulas" / "helpers.js"
    assert helpers in scripts
    assert "function _gcd(" in helpers.read_text(encoding="utf-8")
    repeated = [p.name for p in scripts if p != helpers and "function _gcd(" in p.read_text(encoding="utf-8")]
    assert not repeated, repeated
    html = (SITE / "index.html").read_text(encoding="utf-8")
    assert html.index('src="formulas/helpers.js"') < html.index('src="app.js"')
    # every catalog file exists: a view never asks for a script the build did not write
    files = {e["file"] for e in _catalog()["subjects"]} | {e["step"]["file"] for e in _catalog()["subjects"] if "step" in e}
    assert all((SITE / name).is_file() for name in files), sorted(n for n in files if not (SITE / n).is_file())


# -- the shared helpers compute what the standalone script computes (node) ---------------------------------

RUN = r"""
const vm = require("node:vm");
const [helpers, shared, standalone, calls] = JSON.parse(require("node:fs").readFileSync(0, "utf8"));
const show = (f) => { try { const r = f(); return typeof r === "bigint" ? r.toString() + "n" : typeof r === "object" ? String(r) : r; }
                      catch (e) { return e.constructor.name + ": " + e.message; } };
const apart = vm.createContext({});
vm.runInContext(standalone, apart);
const together = vm.createContext({});
const before = show(() => vm.runInContext(shared, together));
vm.runInContext(helpers, together);
vm.runInContext(shared, together);
const out = calls.map(([fn, args]) => {
  const a = Object.fromEntries(Object.entries(args).map(([k, v]) => [k, typeof v === "string" ? BigInt(v) : v]));
  return [show(() => apart.F[fn](a)), show(() => together.F[fn](a))];
});
process.stdout.write(JSON.stringify([before, out]));
"""


def test_a_script_on_the_shared_helpers_equals_the_standalone_one():
    if NODE is None:
        absent("node is not installed")
    from symcomm.views.export import select
    from symcomm.views.export.javascript import helpers_script, to_script

    chosen = select(["all_reduce__ring", "all_reduce__recursive_doubling", "broadcast__binomial_tree"])
    calls = [["all_reduce__ring__send", {"N": "8", "M": "1024"}],
             ["all_reduce__ring__time", {"N": "8", "M": "1024", "alpha": 1e-6, "beta": 1e-9, "gamma": 0.0}],
             ["all_reduce__ring__send", {"N": "8", "M": "1000"}],
             ["all_reduce__recursive_doubling__send", {"N": "6", "M": "64"}],
             ["all_reduce__ring__send", {"N": "1", "M": "64"}],
             ["broadcast__binomial_tree__alpha", {"N": "5", "M": "64"}]]
    payload = json.dumps([helpers_script("H"), to_script(chosen, namespace="F", helpers="H"),
                          to_script(chosen, namespace="F"), calls])
    proc = subprocess.run([NODE, "-e", RUN], input=payload, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    before, out = json.loads(proc.stdout)
    # loaded before its helpers, the script says what is missing instead of failing on an undefined name
    assert before == "Error: load the shared helpers (globalThis.H) before this script"
    for (fn, args), (apart, together) in zip(calls, out):
        assert apart == together, (fn, args, apart, together)
    # ring all-reduce sends 2(N−1)/N·M elements from the busiest rank (Patarasuk & Yuan 2009, §2): 2·7/8·1024 = 1792
    assert out[0][1] == "1792n"
    assert out[4][1].startswith("RangeError: N=1 is not allowed")   # N ≥ 2 for a collective, as eval says
    # one helper block in the standalone script, none in the shared one
    assert len(re.findall(r"^function _gcd\(", to_script(chosen, helpers="H"), re.M)) == 0
