"""``python -m symcomm.tools.codegen``: write the planner's kernels, ``symcomm/planner/kerneldata/``, from the step model.

The planner ranks layouts by the step-time model (:mod:`symcomm.training.steptime`), a SymPy expression per option
combination.  Building and compiling those at run time costs seconds; instead this command turns, once,
every option combination the planner searches for the model families of the shipped presets (with the
default flags: embeddings on the end stages, ring context parallelism, 2-byte elements; in bf16 and under the FP8
recipes of :data:`SHIPPED_PRECISIONS`) into DATA: per family and precision one JSON file holding one graph of operations (:data:`symcomm.numbers.kernels.OPS`: add, mul, div, pow by a
number, max, min, where, comparisons...), equal subexpressions one node shared by every combination, and per
combination the nodes of every quantity the planner reports.  :mod:`symcomm.numbers.kernels` reads and runs those
files with numpy alone: nothing read is executed as code, and ``tests/integration/test_codegen.py`` (with
``test_codegen_moe.py``) fails when the committed files differ from a fresh generation.

The graph is built by walking the SymPy expressions in the order of their arguments (SymPy's canonical
order, not a hash order), so the files are the same whatever ``PYTHONHASHSEED`` is.  In a product or a sum
the factors or terms that hold no layout variable are grouped first (one scalar, computed once), then the
array ones; negative powers become one division.

Regenerate after any change to the step model, the strategies or the FLOP counts::

    python -m symcomm.tools.codegen            # rewrite symcomm/planner/kerneldata/, training/primitive_data.py, hybrid_data.py
    python -m symcomm.tools.codegen --check    # exit 1 if the committed files are stale

It writes the primitives' module too, ``symcomm/training/primitive_data.py`` (:mod:`symcomm.tools.primitivegen`:
every algorithm's cost and requirements as exact Python, so ``eval`` of a primitive needs no SymPy); it does not
depend on the step model.  And the hybrid's option sets, ``symcomm/training/hybrid_data.py``
(:mod:`symcomm.tools.hybridgen`: per option set its sheet as exact Python, its rules, its step model's float code and
the rows' words, so ``eval hybrid`` of a shipped model and hardware needs no SymPy).  ``--primitives`` writes (or
checks) those two modules alone, in ~20 s.

A named attention kernel (``--attention-kernel fa2``, ``triton``) needs no file of its own: it runs on the fused
core's graph with eta_attn at its share (:func:`symcomm.planner.kernels.timed_as`).  Any other combination
(``--no-embeddings``, ``--cp-algorithm ulysses``, fp32 or fp8 elements, a
``--model-config`` of another family shape) gets its graph built in the process by :func:`graph_data`
(:mod:`symcomm.planner.kernelbuild`, with SymPy: slower to start, the same numbers, the same interpreter), and the
planner says so in a note.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

# SymPy keeps the last 1000 expressions it built and the answers about them (SYMPY_CACHE_SIZE, read when sympy is
# first imported, below); the option combinations of a family build the same sums, products and relations again
# and again, and with 1000 most are built and asked about anew: with 20000 (as build_docs.py) the kernels take half
# the CPU (one MoE family 11.6 -> 6.4 s), at no more memory (96 MiB).  A value in the environment wins.  Only when this
# file runs as the command: imported (the tests), it changes nothing.
if __name__ == "__main__":
    os.environ.setdefault("SYMPY_CACHE_SIZE", "20000")

from ..planner.kernelbuild import AXES, graph_data

#: (gated, tied, moe, attention, q_width) of the shipped presets' families: GPT-3 (GELU MLP, tied embeddings),
#: Llama (SwiGLU, untied), Mixtral (SwiGLU, untied, MoE), DeepSeek-V3 (the same with MLA), Qwen3-MoE and gpt-oss
#: (the same with query heads wider than h/a)
SHAPES = ((False, True, False, "mha", "h"), (True, False, False, "mha", "h"), (True, False, True, "mha", "h"),
          (True, False, True, "mla", "h"), (True, False, True, "mha", "heads"))
#: the precision recipes shipped (plan --precision): bf16, and the FP8 recipe each part's framework runs by default
#: (Hopper: Transformer Engine's per-tensor current scaling; Blackwell: MXFP8), so an FP8 plan starts without SymPy
SHIPPED_PRECISIONS = ("bf16", "fp8_tensor", "mxfp8")
#: every shipped family: a shape and a precision, (gated, tied, moe, attention, q_width, precision); a kind of five
#: (a shape alone) reads as bf16
KINDS = tuple((*shape, precision) for precision in SHIPPED_PRECISIONS for shape in SHAPES)
#: the flags the shipped kernels cover: embeddings on the end stages, ring context parallelism, 2-byte elements, no
#: dropout (every shipped preset trains without: Model.dropout, tests/integration/test_codegen.py)
EMBEDDINGS, CP, RUN_BYTES, DROPOUT = True, "ring", 2, False
PACKAGE = Path(__file__).resolve().parents[1] / "planner" / "kerneldata"


def _unpacked(kind: tuple) -> tuple:
    """(gated, tied, moe, attention, q_width, precision) of a kind of five or six."""
    return (*kind[:5], kind[5] if len(kind) > 5 else "bf16")


def family_name(kind: tuple) -> str:
    gated, tied, moe, attention, q_width, precision = _unpacked(kind)
    return (f"plan_g{gated:d}_t{tied:d}_m{moe:d}" + ("_mla" if attention == "mla" else "")
            + ("_qheads" if q_width == "heads" else "") + ("" if precision == "bf16" else f"_{precision}"))


#: the settings that select a kernel file (with the run bytes): symcomm.numbers.kernels.family_key
FAMILY_SETTINGS = ("attention", "cp", "embeddings", "gated", "moe", "precision", "q_width", "tied")


def kernel_setting(kind: tuple):
    """The run setting every kernel of this family shares (the rest at the defaults)."""
    from ..training.settings import RunSetting

    gated, tied, moe, attention, q_width, precision = _unpacked(kind)
    return RunSetting(gated=gated, tied=tied, moe=moe, embeddings=EMBEDDINGS, cp=CP, attention=attention,
                      q_width=q_width, precision=precision, dropout=DROPOUT)


def combinations(kind: tuple) -> list[tuple]:
    """Every option combination the planner builds for this family shape: the kernel keys
    (:meth:`symcomm.training.settings.RunSetting.key`) its ``_options`` looks up."""
    from .. import planner as plan
    from ..planner.request import framework_precision_refusal
    from ..training.frameworks import planned_schedules

    gated, tied, moe, attention, q_width, precision = _unpacked(kind)
    out = []
    for sp_on in plan.SP_CHOICES:
        for recompute in plan.RECOMPUTE:
            # the schemes the planner searches under this precision (symcomm.planner.request._schemes)
            for scheme in (s for s in plan.SCHEMES if framework_precision_refusal(s.framework, precision) is None):
                for schedule in planned_schedules(scheme, moe):              # as symcomm.planner.search
                    for split in ("even", "first_last"):     # symcomm.planner.search: uneven splits of L over p·v
                        out.append(plan.option_key(scheme, recompute, sp_on, schedule, cp=CP, moe=moe,
                                                   embeddings=EMBEDDINGS, tied=tied, gated=gated, split=split,
                                                   shape=(attention, q_width), precision=precision,
                                                   dropout=DROPOUT))
    return out


def family_data(kind: tuple) -> dict:
    family = {"run_bytes": RUN_BYTES, **dict(kernel_setting(kind).key(FAMILY_SETTINGS))}
    return graph_data(family, [(options, RUN_BYTES) for options in combinations(kind)])


def index_data() -> dict:
    """``kerneldata/index.json``: which file holds which family, and the busiest stage of each axis."""
    from ..numbers.kernels import FORMAT
    from ..training.terms import busiest_stage
    from ..training.subjects import subject

    stages = []
    for embeddings in (False, True):
        terms = subject("hybrid", embeddings=embeddings, moe=True).terms
        for axis in AXES:
            mine = [term for term in terms if term.axis == axis]
            if mine:
                stages.append({"embeddings": embeddings, "axis": axis,
                               "stages": [busiest_stage(mine, n) for n in (1, 2, 3)]})
    from ..numbers.kernels import family_key

    families = [{"key": list(family_key(kernel_setting(kind).key(), RUN_BYTES)), "file": family_name(kind)}
                for kind in KINDS]
    return {"format": FORMAT, "families": families, "stages": stages}


def dumps(data: dict) -> str:
    """Canonical text: one node per line (diffs stay readable), keys in order, no spaces."""
    if "nodes" not in data:
        return json.dumps(data, sort_keys=True, separators=(",", ":"), allow_nan=False) + "\n"
    head = {k: v for k, v in data.items() if k not in ("nodes", "kernels")}
    lines = [json.dumps(head, sort_keys=True, separators=(",", ":"), allow_nan=False)[:-1] + ',"nodes":[']
    lines += [json.dumps(n, separators=(",", ":"), allow_nan=False) + "," for n in data["nodes"]]
    lines[-1] = lines[-1][:-1]
    lines.append('],"kernels":[')
    lines += [json.dumps(k, sort_keys=True, separators=(",", ":"), allow_nan=False) + "," for k in data["kernels"]]
    lines[-1] = lines[-1][:-1]
    lines.append("]}")
    return "\n".join(lines) + "\n"


def generate(kinds=KINDS) -> dict[str, str]:
    """file name → text, every file of ``symcomm/planner/kerneldata/`` (``kinds``: only those families)."""
    out = {"index.json": dumps(index_data())}
    for kind in kinds:
        out[family_name(kind) + ".json"] = dumps(family_data(kind))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m symcomm.tools.codegen", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if symcomm/planner/kerneldata/ is stale")
    parser.add_argument("--primitives", action="store_true",
                        help="only symcomm/training/primitive_data.py and hybrid_data.py (the primitives' and the "
                             "hybrid option sets' code), not the kernels")
    args = parser.parse_args(argv)
    stale_primitives = _primitives(args.check)
    if stale_primitives:
        print(stale_primitives, file=sys.stderr)
    if args.primitives:
        return 1 if args.check and stale_primitives else 0
    files = generate()
    stale = sorted(name for name, text in files.items()
                   if not (PACKAGE / name).is_file() or (PACKAGE / name).read_text(encoding="utf-8") != text)
    extra = sorted(p.name for p in PACKAGE.glob("*.json") if p.name not in files) if PACKAGE.is_dir() else []
    if args.check:
        for name in stale + extra:
            print(f"stale: symcomm/planner/kerneldata/{name}", file=sys.stderr)
        return 1 if stale or extra or stale_primitives else 0
    from ..base.files import write_file

    PACKAGE.mkdir(exist_ok=True)
    for name in stale:
        write_file(PACKAGE / name, files[name], what="symcomm/planner/kerneldata")
    for name in extra:
        (PACKAGE / name).unlink()
    print(f"symcomm/planner/kerneldata/: {len(stale)} written, {len(files) - len(stale)} unchanged, {len(extra)} removed",
          file=sys.stderr)
    return 0


def _primitives(check: bool) -> str:
    """Write (or with ``check`` only compare) the training wing's generated modules, symcomm/training/primitive_data.py
    and symcomm/training/hybrid_data.py: what to say ("" when they were fresh)."""
    from . import hybridgen, primitivegen

    said = []
    for target, generate in ((primitivegen.TARGET, primitivegen.generate), (hybridgen.TARGET, hybridgen.generate)):
        path = Path(__file__).resolve().parents[1].joinpath(*target)
        text = generate()
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            continue
        if check:
            said.append(f"stale: symcomm/{'/'.join(target)}")
            continue
        from ..base.files import write_file

        write_file(path, text, what="symcomm/" + "/".join(target))
        said.append(f"symcomm/{'/'.join(target)}: written")
    return "\n".join(said)


if __name__ == "__main__":
    sys.exit(main())
