"""The planner's kernels (symcomm/planner/kerneldata, graphs written by ``python -m symcomm.tools.codegen``, run by
symcomm.numbers.kernels): never stale, the same whatever PYTHONHASHSEED is, equal to the step model they were built
from, and the planner's rows unchanged by them.  No test here times anything.

Three files, so that pytest-xdist's ``--dist loadfile`` can hand them to both workers (one file held a worker for a
third of the suite's run): this one the dense families and the qheads MoE family (:data:`HERE`),
test_codegen_moe.py the MoE families of width h (:data:`MOE_FILE`: Mixtral's and DeepSeek-V3's, with the hash-seed
test, which samples Mixtral's), each with its models' kernels against the step model (the step models a freshness
test built are cached in the process: the kernel test reads a fifth of them again), and test_codegen_rows.py the
planner's rows."""

import numpy as np
import pytest

from symcomm.tools import codegen
from symcomm.planner import kernelbuild
from symcomm.numbers import kernels
from symcomm import presets
from symcomm.numbers.numeric import bundle
from symcomm.planner import RECOMPUTE, Request, enumerate_layouts
from symcomm.planner.kernels import _base_values, _options, model_attention

from conftest import ROOT
KERNELDATA = ROOT / "symcomm" / "planner" / "kerneldata"


# -- never stale (these four came in with the kernels as data and were lost in a later merge) -------------------

def test_the_committed_files_are_the_families_and_the_index():
    committed = sorted(p.name for p in KERNELDATA.iterdir() if p.name != "__pycache__")
    assert committed == sorted(["index.json"] + [codegen.family_name(k) + ".json" for k in codegen.KINDS]), \
        "run: python -m symcomm.tools.codegen"


def test_the_committed_index_equals_a_fresh_one():
    committed = (KERNELDATA / "index.json").read_text(encoding="utf-8")
    assert committed == codegen.dumps(codegen.index_data()), "run: python -m symcomm.tools.codegen"


#: the families test_codegen_moe.py checks, and the ones checked here: every family in one of the two, by construction
MOE_FILE = tuple(kind for kind in codegen.KINDS if kind[2] and kind[4] == "h")
HERE = tuple(kind for kind in codegen.KINDS if kind not in MOE_FILE)


def check_fresh(kind: tuple) -> None:
    """One family: its step models built with SymPy (cached in the process: :func:`check_kernels` reads a fifth of
    them again) and walked into a graph, compared as text with the committed file."""
    name = codegen.family_name(kind) + ".json"
    committed = (KERNELDATA / name).read_text(encoding="utf-8")
    assert committed == codegen.dumps(codegen.family_data(kind)), \
        f"symcomm/planner/kerneldata/{name} is stale: run python -m symcomm.tools.codegen"


@pytest.mark.slow
@pytest.mark.parametrize("kind", HERE, ids=codegen.family_name)
def test_committed_kernels_equal_a_fresh_generation(kind):
    check_fresh(kind)


def test_the_two_files_split_the_families():
    # the split is a filter of KINDS, so a new family lands in one of the files: this holds that it is a split
    assert sorted(MOE_FILE + HERE) == sorted(codegen.KINDS) and MOE_FILE and HERE
    assert set(MOE_FILE).isdisjoint(HERE)


def test_the_planner_searches_what_the_step_model_offers():
    # one recompute vocabulary: the planner searches the values the hybrid strategy (and so the step model built on
    # it) takes, but op (torchtitan's op-level checkpointing), searched only when --recompute fixes it, so the kernels
    # a cold plan builds and codegen ships stay three recompute modes per combination
    from symcomm.training.strategies import STRATEGIES

    assert RECOMPUTE == ("none", "selective", "full")
    # and block, whose L_rc (layers of each model chunk) is a number of one layout, never searched
    assert STRATEGIES["hybrid"].options["recompute"].allowed == RECOMPUTE + ("op", "block")


def check_kernels(name: str) -> None:
    """Every generated combination of this model's family (a fifth of them), every quantity, on every layout of a
    request: the kernel against the SymPy step model."""
    req = Request(presets.model(name), presets.hardware("h100"), gpus=256, batch=512, seq=4096)
    layouts = enumerate_layouts(req)
    values = {**_base_values(req), **{k: layouts[k].astype(np.float64) for k in kernelbuild.LAYOUT}}
    # the first/last-split combinations read L_first, L_last: the even split's (L/(p·v) layers in every chunk)
    chunks = values["p"] * values["v"]
    values.update(L_first=values["L"] / chunks, L_last=values["L"] / chunks)
    # (gated, tied, moe, attention, q_width)
    kind = (req.model.family != "gpt", bool(req.model.tied), bool(req.model.moe), *model_attention(req.model))
    sample = codegen.combinations(kind)[::5]
    kernel = {options: kernels.shipped(options, 2).as_tuple() for options in sample}
    # the same quantities of the SymPy step models, every combination's compiled in one numpy function (the
    # combinations share most of their parts, compiled once: one function per combination cost 2-3 times the CPU)
    # (kernelbuild.quantities: the step model's quantities, no ratio, and model_flops less its causal half)
    models = [kernelbuild.quantities(o, 2) for o in sample]
    wanted = bundle({(i, quantity): q[quantity] for i, (options, q) in enumerate(zip(sample, models))
                     for quantity in kernel[options][1]})(**values)
    checked = 0
    for i, options in enumerate(sample):
        params, names, function = kernel[options]
        got = function(*[values[p] for p in params])
        for quantity, value in zip(names, got):
            want = np.broadcast_to(wanted[i, quantity], layouts["t"].shape)
            # a quantity that is the remainder of larger terms (an exposed share: a max(0, x − y)) carries their
            # rounding, so equal within 1e-12 of the array's largest value as well as relatively
            scale = float(np.max(np.abs(want))) if want.size else 0.0
            np.testing.assert_allclose(np.broadcast_to(value, want.shape), want, rtol=1e-12, atol=1e-12 * scale)
            checked += 1
    assert checked > 50


# slow: a fifth of a family's step models built with SymPy and compiled together, 3.5-6 s of CPU each beside the
# freshness tests' step models (paired runs, 2026-12-02: 6.2-13.7 s with one compiled function per combination)
@pytest.mark.slow
@pytest.mark.parametrize("name", ["gpt3-175b", "llama3-70b"])
def test_kernels_equal_the_step_model(name):
    check_kernels(name)


def test_combinations_are_the_planners():
    req = Request(presets.model("llama3-8b"), presets.hardware("a100"), gpus=16, batch=32, seq=2048)
    from symcomm.planner import SCHEMES
    key = _options(req, SCHEMES[7], "selective", 1, "interleaved")      # megatron-fsdp: ZeRO-3, interleaved
    assert key in codegen.combinations(("1", "0", "0", "mha", "h"))
    assert kernels.shipped(key, 2) is not None
    assert kernels.shipped(key, 4) is None                       # fp32 elements: compiled in the process
