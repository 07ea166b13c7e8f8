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
    variant's its own and the step model's, one script for every variant (the page opens with a hardware preset, so
    the step time draws)."""
    page = ["index.html", "style.css", "catalog.js", "numbers.js", "formulas/helpers.js", "app.js"]
    assert list(site.first_view_files(SITE, "all_reduce__ring")) == page + ["formulas/all_reduce.js"]
    assert list(site.first_view_files(SITE, "all_reduce__rabenseifner")) == page + ["formulas/all_reduce.js"]
    hybrid = next(e["ident"] for e in _catalog()["subjects"] if e["owner"] == "hybrid" and e["changed"])
    assert list(site.first_view_files(SITE, hybrid)) == page + [f"formulas/{hybrid}.js", "formulas/hybrid__step.js"]
    assert (SITE / "formulas" / f"{hybrid}.js").stat().st_size == site.first_view_files(SITE, hybrid)[f"formulas/{hybrid}.js"]


def test_an_unknown_view_is_refused_with_the_choices():
    with pytest.raises(InputError, match=r"the page has no subject 'nonesuch': it offers \d+ \("):
        site.first_view_files(SITE, "nonesuch")


def test_shared_texts_are_written_once_and_each_entry_holds_its_index():
    # by hand: two variants sharing a source and a convention, each its own summary; other fields untouched
    entries = [{"ident": "a", "source": "S", "convention": "C", "summary": "x", "title": "S"},
               {"ident": "b", "source": "S", "convention": "C", "summary": "y", "title": "T"}]
    texts, out = site.shared_texts(entries)
    assert texts == ["S", "C", "x", "y"]
    assert out == [{"ident": "a", "source": 0, "convention": 1, "summary": 2, "title": "S"},
                   {"ident": "b", "source": 0, "convention": 1, "summary": 3, "title": "T"}]
    assert entries[0]["source"] == "S"          # the caller's entries are left as they are


def test_the_catalog_read_back_as_app_js_reads_it_gives_each_subject_its_own_texts():
    catalog = _catalog()
    assert catalog["shared_texts"] == ["source", "convention", "summary"]
    assert len(set(catalog["texts"])) == len(catalog["texts"])      # each text once
    # app.js: sub[key] = CAT.texts[sub[key]] for every key of CAT.shared_texts
    read = {e["ident"]: {k: catalog["texts"][e[k]] for k in catalog["shared_texts"]} for e in catalog["subjects"]}
    from symcomm.collectives.algorithms import algorithm
    from symcomm.training.strategies import STRATEGIES

    ring = algorithm("all_reduce", "ring")
    assert read["all_reduce__ring"]["source"] == ring.source and read["all_reduce__ring"]["summary"] == ring.summary
    assert read["hybrid"]["source"] == STRATEGIES["hybrid"].source
    assert "M = the full unsharded buffer" in read["all_reduce__ring"]["convention"]


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


# -- the step model: one script, one graph for every hybrid variant (issue 25, item 3) -------------------------

STEP_RUN = r"""
const vm = require("node:vm");
const [script, calls] = JSON.parse(require("node:fs").readFileSync(0, "utf8"));
const box = vm.createContext({});
vm.runInContext(script, box);
const out = calls.map(([fn, args]) => { try { return box.SYMCOMM_FORMULAS[fn](args); }
                                        catch (e) { return e.constructor.name + ": " + e.message; } });
process.stdout.write(JSON.stringify(out));
"""


def _run_steps(script: str, calls: list) -> list:
    proc = subprocess.run([NODE, "-e", STEP_RUN], input=json.dumps([script, calls]), capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def test_the_shared_step_script_computes_what_eval_computes():
    """Two variants (the default layout, and the interleaved schedule with a first/last split: its stage kinds)
    in one script, each gated value, against eval's own path (``steptime.quantities``: SymPy compiled to Python,
    no graph): the page passes β, γ per byte and B_e, eval per element (β·B_e, as ``eval --dtype`` turns them)."""
    if NODE is None:
        absent("node is not installed")
    from symcomm.training import steptime

    hybrids = [sub for sub in site.subjects() if sub.name == "hybrid"]
    chosen = [next(s for s in hybrids if not s.changed),
              next(s for s in hybrids if s.options.get("pipeline_split") == "first_last")]
    bundles = {name: q for sub in chosen for name, q in site.step_bundles(sub).items()}
    script = site.step_script(bundles)
    # an H100-like point (peak, HBM from its datasheet; η, η_attn, κ, w_half plausible fits; the link's α, β per byte)
    hardware = {"peak": 9.89e14, "eta": 0.55, "hbm": 3.35e12, "kappa": 2.0, "w_half": 300.0, "peak_fp8": 1.979e15,
                "eta_fp8": 0.5, "eta_attn": 0.4, "alpha": 5e-6, "beta": 1 / 4.5e11, "gamma": 1 / 1e13, "alpha_inter": 1e-5,
                "beta_inter": 1 / 5e10}
    calls, want = [], []
    for sub in chosen:
        values = {**site.START, **site.start_values(sub), **hardware, "L_first": 15, "L_last": 17}
        per_element = {**values, **{k: values[k] * 2 for k in ("beta", "gamma", "beta_inter")}}   # B_e = 2 (bf16)
        for gated in site.GATED:
            for dropout in site.DROPOUT:
                calls.append([site.step_function(sub, gated, dropout), {**values, "B_e": 2}])
                want.append(steptime.quantities(per_element, 2, **{k: str(v) for k, v in sub.options.items()},
                                                gated=gated, dropout=dropout))
    got = _run_steps(script, calls)
    for (fn, _), page, expected in zip(calls, got, want):
        assert isinstance(page, dict), (fn, page)
        assert set(expected) <= set(page), (fn, sorted(set(expected) - set(page)))
        for q, value in expected.items():
            assert page[q] == pytest.approx(float(value), rel=1e-12, abs=1e-300), (fn, q, page[q], value)
    # one runner, however many variants: the script's size grows by the variants' own nodes only
    assert script.count("function runner(") == 1


def test_the_step_script_names_a_missing_argument_and_refuses_an_unknown_operation():
    if NODE is None:
        absent("node is not installed")
    from symcomm.core import symbols as S

    # step_time = α·m + β·b per element; the page passes β per byte: at B_e = 2, β = 1, b = 3, α = 1, m = 4 → 4 + 6 = 10
    bundles = {"toy__step_gated_0": {"step_time": S.alpha * S.m + S.beta * S.b}}
    script = site.step_script(bundles)
    got = _run_steps(script, [["toy__step_gated_0", {"alpha": 1, "m": 4, "beta": 1, "b": 3, "B_e": 2}],
                              ["toy__step_gated_0", {"alpha": 1, "m": 4, "beta": 1, "B_e": 2}]])
    assert got[0] == {"step_time": 10}
    assert got[1] == "TypeError: missing argument b"
    graph = site.step_graph(bundles)
    forged = script.replace(json.dumps(graph["nodes"], separators=(",", ":")),
                            json.dumps(graph["nodes"][:-1] + [["exec"] + graph["nodes"][-1][1:]], separators=(",", ":")))
    assert forged != script
    assert _run_steps(forged, [["toy__step_gated_0", {}]]) == ["Error: unknown operation exec"]


def test_a_rooted_subjects_send_and_recv_in_bytes_are_the_busier_rank_in_bytes():
    """A rooted collective reports the busier of its root and its other ranks (ARCHITECTURE.md); the page counts
    bytes of B_e bytes per element.  Its send and recv are B_e times the element cost's busier rank — the larger
    of the root's and the others' traffic each scaled to bytes, whichever form the page prints — at every point
    tried, for every rooted subject the page offers."""
    import itertools

    import sympy as sp

    from symcomm.core import symbols as S
    from symcomm.numbers.evaluation import exact

    rooted = [sub for sub in site.subjects() if sub.cost_in(site.BYTES).root is not None]
    assert len(rooted) >= 10       # the rooted algorithms of reduce, broadcast, gather, scatter, ... and dp/tp over them
    for sub in rooted:
        page = site.bytes_quantities(sub)
        root, others = sub.cost_in(site.BYTES).root, sub.cost_in(site.BYTES).others
        for quantity, of_root, of_others in (("send", root.send, others.send), ("recv", root.recv, others.recv)):
            free = sorted(page[quantity].free_symbols | of_root.free_symbols | of_others.free_symbols, key=str)
            for n, b_e, m in itertools.product((2, 3, 5, 8, 12), (1, 2, 4), (96, 4096)):
                # N ranks, B_e bytes, every other symbol (M, K, Φ, b, s, h, L) m
                values = {x: {S.N: n, site.BYTES: b_e}.get(x, m) for x in free}
                busier = max(exact(b_e * of_root, values), exact(b_e * of_others, values))
                assert exact(page[quantity], values) == busier, (sub.ident, quantity, values)
