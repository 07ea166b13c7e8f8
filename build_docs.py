"""The main job: prove every claim, then render docs/ (Markdown, LaTeX, plots).

    python build_docs.py [--out docs]

A claim that fails stops the build (exit 1, naming the claim).  The same input builds
byte-identical files.  Plots need the optional extra ``symcomm[plots]`` (matplotlib);
without it they are skipped and the build says so.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
from importlib import resources
import time
from pathlib import Path

# SymPy keeps the last 1000 expressions it built and the answers about them (SYMPY_CACHE_SIZE, read when sympy is
# first imported, below); a build builds tens of thousands that recur (the step model's Max and Min, the sums the
# printers gather), so with 1000 most are built and asked about again.  20000 costs about 10 MB; a value in the
# environment wins.  Only when this file runs as the build: imported after SymPy (the tests), it changes nothing.
os.environ.setdefault("SYMPY_CACHE_SIZE", "20000")

# The build keeps what it makes (the chapters, their proofs, tables and formulas) until it exits, so the collector
# finds little to free: its full passes took 0.8 s of CPU (7 passes, 59k objects freed) when they ran every tenth
# middle pass, and with those once in 1000 its young passes still took 0.2 s (725 of the youngest generation, 65 of
# the middle; timed with gc.callbacks).  Off for the whole build: its peak memory grew from 172 to 185 MB (maximum
# resident set, three builds each).  Only when this file runs as the build (the tests import it into a process of
# their own, whose collector stays as it was).
if __name__ == "__main__":
    import gc

    gc.disable()


def one_unequal_to_dicts() -> None:
    """SymPy's 1 compared with a dict says False without turning the dict into a SymPy ``Dict`` first.

    ``factor_terms`` and ``gcd_terms`` (the printers' numeric factors pulled out, the prover's sums) build a
    ``Factors`` from a dict of powers for every term they meet, and its first test, ``factors in (None, S.One)``,
    makes 1 compare itself with that dict: SymPy's number comparison sympifies the other side, a Dict of Tuples
    sorted (``ordered``) only to find that a Dict is not a number.  The build made 20,277 of them, about a twentieth of
    its CPU (cProfile: 2.1 s of 40).  A dict is never equal to 1 either way: ``Rational.__eq__`` answers False for
    anything it sympifies to a non-number, and a dict sympifies to a Dict.  Only when this file runs as the build:
    the tests import it into a process of their own, whose SymPy stays as it was."""
    from sympy.core.numbers import One

    compared = One.__eq__

    def equals(self, other):
        if isinstance(other, dict):
            return False
        return compared(self, other)

    One.__eq__ = equals


if __name__ == "__main__":
    one_unequal_to_dicts()

import jinja2

from symcomm.derivations import CHAPTERS
from symcomm.views import docs
from symcomm.templates import FOLDER as TEMPLATE_FOLDER
from symcomm.base.errors import SymcommError
from symcomm.base.files import make_folder, write_file
from symcomm.core.printing import markdown_text, tex_text
from symcomm.training.subjects import COLLECTIVE_CONVENTION
from symcomm.core.proof import check, is_definition

ROOT = Path(__file__).resolve().parent
TEMPLATES = TEMPLATE_FOLDER

def environments():
    loader = jinja2.FileSystemLoader(str(TEMPLATES))
    markdown = jinja2.Environment(loader=loader, undefined=jinja2.StrictUndefined,
                                  keep_trailing_newline=True, trim_blocks=False)
    markdown.filters["md"] = markdown_text
    latex = jinja2.Environment(loader=loader, undefined=jinja2.StrictUndefined,
                               block_start_string=r"\BLOCK{", block_end_string="}",
                               variable_start_string=r"\VAR{", variable_end_string="}",
                               comment_start_string=r"\#{", comment_end_string="}",
                               trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    latex.filters["tex"] = lambda text: tex_text(text, breaks=True)   # long paths may break after / and _
    return markdown, latex


def write(path: Path, text: str | bytes, written: list) -> None:
    """Write atomically (a reader never sees half a file), a regular file under the umask."""
    make_folder(path.parent, "--out")
    write_file(path, text, "--out")
    written.append(path)


def prove_all(chapters) -> tuple[dict, int]:
    """Check every claim, chapter by chapter; exit on the first chapter with a failure."""
    proofs, proved = {}, 0
    for chapter in chapters:
        started = time.perf_counter()
        failures = []
        for claim in chapter.all_claims():
            proof = check(claim)
            proofs[id(claim)] = proof
            if proof:
                proved += 0 if is_definition(claim) else 1
            else:
                failures.append(proof)
        seconds = time.perf_counter() - started
        print(f"chapter {chapter.number} {chapter.slug}: {len(chapter.derivations)} derivations, "
              f"{sum(1 for c in chapter.all_claims() if not is_definition(c)) - len(failures)} claims proved, "
              f"{sum(1 for c in chapter.all_claims() if is_definition(c))} definitions ({seconds:.1f} s)", flush=True)
        for proof in failures:
            print(f"FAIL [{chapter.slug}] {proof.claim.name}: {proof.detail}", file=sys.stderr)
        if failures:
            sys.exit(1)
    return proofs, proved


def api_functions() -> list[dict]:
    """The Python API's functions with their signatures and docstrings (examples as doctests,
    each closed by a blank line so that the Markdown fence is not read as expected output)."""
    import inspect
    import textwrap

    from symcomm import api

    out = []
    for name in ("evaluate", "compare", "plan", "formula"):
        function = getattr(api, name)
        doc = textwrap.dedent(function.__doc__ or "").strip("\n")
        words, examples = [], []
        for line in doc.splitlines():
            (examples if examples or line.lstrip().startswith(">>>") else words).append(line.strip() if not examples and not line.lstrip().startswith(">>>") else line.lstrip())
        text = " ".join(w for w in words if w).replace("``", "`")
        if examples:
            text += "\n\n```python\n" + "\n".join(examples) + "\n\n```"
        signature = str(inspect.signature(function)).replace("'", "")
        out.append({"name": name, "signature": signature, "doc": text})
    return out


#: no date, a fixed producer: two builds write the same bytes
SVG_METADATA = {"Date": None}
PDF_METADATA = {"CreationDate": None, "ModDate": None, "Producer": "symcomm build_docs.py (matplotlib)",
                "Creator": "symcomm build_docs.py"}


def without_property_tables() -> None:
    """matplotlib's artists without the table of their properties in the docstring of their ``set`` method.

    Importing pyplot defines about a hundred Artist classes, and each writes that table for ``help()`` as it is
    defined (matplotlib.artist.kwdoc: every setter's docstring parsed), a fifth of the import: 0.61 s of CPU against
    0.50 s without it (medians of 5, the import of pyplot and the SVG and PDF backends after SymPy's).  The build reads
    no docstring; the plots are drawn and written as before.  Only when this file runs as the build, before pyplot is
    first imported (tests/integration/test_docs.py runs the build as a process of its own)."""
    import matplotlib.artist

    matplotlib.artist.kwdoc = lambda artist: ""


def render_plots(out: Path, strategies, written: list) -> list[dict]:
    try:
        import matplotlib
    except ImportError:
        print("plots skipped: matplotlib is not installed (pip install 'symcomm[plots]')")
        return []
    matplotlib.use("Agg")
    if __name__ == "__main__":
        without_property_tables()
    import matplotlib.pyplot as plt
    from symcomm.derivations.calibration import fit_dicts
    from symcomm.derivations.step_time import run_rows
    from symcomm.views.plots import PLOTS, TAKES

    # fixed ids and no date, so that two builds are byte-identical
    plt.rcParams.update({"svg.hashsalt": "symcomm", "svg.fonttype": "path"})
    plots = []
    for name, draw in PLOTS.items():
        # only what this plot takes is computed (the published runs' predictions are seconds of step models)
        given = {"nothing": tuple, "published runs": lambda: (run_rows(),), "calibration": lambda: (fit_dicts(),)}.get(
            TAKES.get(name, ""), lambda: (strategies,))()
        fn = (lambda d=draw, args=given: d(*args))
        fig, title, caption = fn()
        # SVG for the Markdown pages, PDF (vector) for the LaTeX document; the whole figure, whose margins
        # (views.plots.MARGINS) hold its texts, not a tight box (found by laying out every text once more)
        for fmt, metadata in (("svg", SVG_METADATA), ("pdf", PDF_METADATA)):
            buffer = io.BytesIO()
            fig.savefig(buffer, format=fmt, metadata=metadata)
            write(out / "plots" / f"{name}.{fmt}", buffer.getvalue(), written)
        plt.close(fig)
        plots.append({"title": title, "caption": caption, "path": f"plots/{name}.svg", "pdf": f"plots/{name}.pdf"})
    return plots


def build(out: Path) -> int:
    started = time.perf_counter()
    from symcomm.training.strategies import STRATEGIES

    proofs, proved = prove_all(CHAPTERS)
    written: list = []
    markdown, latex = environments()
    chapters = []
    for chapter in CHAPTERS:
        context = docs.chapter_context(chapter, proofs)
        context["module"] = chapter.module if hasattr(chapter, "module") else chapter.slug.replace("-", "_")
        chapters.append(context)
    plots = render_plots(out, STRATEGIES, written)
    shared = {
        "chapters": chapters, "claims_proved": proved, "convention": COLLECTIVE_CONVENTION,
        "symbols": docs.symbol_rows(), "primitives": docs.primitive_rows(),
        "algorithms": docs.algorithm_rows(), "bounds": docs.bound_rows(),
        "strategies": docs.strategy_rows(), "plots": plots,
        "pictures": docs.picture_rows(), "usage": docs.usage_rows(),
    }
    write(out / "index.md", markdown.get_template("markdown/index.md.j2").render(**shared), written)
    write(out / "api.md", markdown.get_template("markdown/api.md.j2").render(functions=api_functions()), written)
    page = markdown.get_template("markdown/chapter.md.j2")
    for context in chapters:
        write(out / f"{context['slug']}.md", page.render(ch=context), written)
    write(out / "symcomm.tex", latex.get_template("latex/symcomm.tex.j2").render(**shared), written)
    from symcomm.views import site
    for name, text in site.files().items():
        write(out / "site" / name, text, written)
    shot = site.committed_screenshot()
    if shot is not None:
        write(out / "site" / site.SCREENSHOT, shot, written)
    speed = json.loads((resources.files("symcomm.derivations") / "data" / "bench.json").read_text(encoding="utf-8"))
    write(out / "speed.md", docs.speed_page(speed, markdown), written)
    seconds = time.perf_counter() - started
    derivations = sum(len(ch.derivations) for ch in CHAPTERS)
    print(f"built docs: {len(CHAPTERS)} chapters, {derivations} derivations, {proved} claims proved, "
          f"{len(written)} files written to {out}, {seconds:.1f} s")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs"), help="output directory (default: docs/)")
    args = parser.parse_args(argv)
    try:
        make_folder(Path(args.out), "--out")
        return build(Path(args.out))
    except SymcommError as err:
        print(f"build_docs: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    status = main()
    # the build keeps what it made to its end: frozen, it is not walked by the interpreter's last collection at
    # exit (tenths of a second of CPU) to free memory the process hands back whole
    import gc

    gc.freeze()
    sys.exit(status)
