"""The planner's kernels of the MoE families of width h (Mixtral's, DeepSeek-V3's): never stale, equal to the step
model, the same whatever PYTHONHASHSEED is.  test_codegen.py holds the other families and says why the file is
split; the checks are its own (:func:`test_codegen.check_fresh`, :func:`test_codegen.check_kernels`).  No test here
times anything."""

import os
import subprocess
import sys

import pytest

from symcomm.tools import codegen
from symcomm.planner import kernelbuild

from test_codegen import MOE_FILE, check_fresh, check_kernels


@pytest.mark.slow
@pytest.mark.parametrize("kind", MOE_FILE, ids=codegen.family_name)
def test_committed_kernels_equal_a_fresh_generation(kind):
    check_fresh(kind)


#: a sample of the MoE family's combinations, as graph text: in this process and, by this code, in a fresh one
_SAMPLE = ("kind = (True, False, True, 'mha', 'h'); combos = codegen.combinations(kind)[::17]; "
           "family = {'run_bytes': 2, **dict(codegen.kernel_setting(kind).key(codegen.FAMILY_SETTINGS))}; "
           "text = codegen.dumps(kernelbuild.graph_data(family, [(o, 2) for o in combos]))")


def _sample_text() -> str:
    kind = (True, False, True, "mha", "h")
    combos = codegen.combinations(kind)[::17]
    family = {"run_bytes": 2, **dict(codegen.kernel_setting(kind).key(codegen.FAMILY_SETTINGS))}
    return codegen.dumps(kernelbuild.graph_data(family, [(o, 2) for o in combos]))


@pytest.mark.slow
def test_the_graphs_do_not_depend_on_the_hash_seed():
    # SymPy's own cse iterated over sets (its output followed PYTHONHASHSEED); the graph walk follows SymPy's
    # canonical argument order, so two seeds give the same text.  One seed is this process's own (its step models
    # are already built: the freshness test above read them), the other a fixed one that differs from it, in a
    # fresh process: one SymPy build of the sample instead of two (two fresh processes, seeds 1 and 2)
    code = ("import sys; from symcomm.tools import codegen; from symcomm.planner import kernelbuild; "
            + _SAMPLE + "; sys.stdout.write(text)")
    mine = os.environ.get("PYTHONHASHSEED", "random")            # unset: a random seed, drawn at start-up
    other = "2" if mine == "1" else "1"
    here = _sample_text()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONHASHSEED": other})
    assert out.returncode == 0, out.stderr
    assert out.stdout == here and here.count("\n") > 100, f"PYTHONHASHSEED {mine} and {other} differ"


# slow: as test_codegen.py's (the step models of a fifth of the family read again)
@pytest.mark.slow
@pytest.mark.parametrize("name", ["mixtral-8x7b", "deepseek-v3"])
def test_kernels_equal_the_step_model(name):
    check_kernels(name)
