"""The package as a user installs it: a wheel in a fresh virtual environment, outside the
source tree, runs every subcommand, the export in every format, and the docs build.

Slow (a wheel, a venv, the dependencies from the registry): marked ``wheel``, it runs when SYMCOMM_CI=1
(as .ci/run sets) or SYMCOMM_WHEEL=1, and skips otherwise (tests/conftest.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import ROOT
pytestmark = [pytest.mark.wheel, pytest.mark.slow]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    work = tmp_path_factory.mktemp("wheel")
    # built from a copy of the source tree: setuptools writes build/ and symcomm.egg-info/ beside the sources,
    # and no test writes into the checkout (tests run in parallel; the CLI fuzz watches the tree's top level).
    # Left out: what the build does not read (the tests, the built docs, caches, version control).
    source = work / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".ci", "docs", "tests", "build", "dist", "*.egg-info", "__pycache__", ".hypothesis", ".benchmarks",
        ".pytest_cache", "*.whl"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(work / "dist"), str(source)], check=True)
    wheel = next((work / "dist").glob("symcomm-*.whl"))
    venv = work / "venv"
    # a venv without a pip of its own, installed into by this environment's pip (--python: pip's code run by the
    # venv's interpreter, the same resolution and install): ensurepip unpacking a pip that nothing here runs took
    # ~6 s of CPU, 11 s of wall, of the fixture's ~25 s.  --no-compile: the venv's processes write the bytecode of
    # what they import (_run), not pip of every file of every dependency (SymPy's and numpy's tests among them):
    # the install 12.9 s of CPU with pip's compiling, 3.4 s without, the first import 2.3 s more
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-compile", str(wheel)],
                   check=True)
    home = work / "home"          # no source tree on the path: run from here
    home.mkdir()
    return wheel, python, home


def _run(python: Path, home: Path, *argv: str) -> subprocess.CompletedProcess:
    # PYTHONDONTWRITEBYTECODE left out too: the venv is this test's own, installed without bytecode (installed
    # above), so that its first process compiles what it imports once and the others read it
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE")}
    return subprocess.run([str(python), *argv], cwd=home, env=env, capture_output=True, text=True, timeout=600)


def test_wheel_holds_the_package_and_no_top_level_content(installed):
    wheel, _, _ = installed
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert tops == {"symcomm"}, tops                       # no top-level "derivations" or "templates"
    for needed in ("symcomm/derivations/__init__.py", "symcomm/derivations/data/gloo_measurements.json",
                   "symcomm/templates/export/formulas.md.j2", "symcomm/templates/latex/symcomm.tex.j2",
                   "symcomm/schema/formulas.schema.json", "symcomm/presets/models.json"):
        assert needed in names, needed


FORMATS = ["python", "c", "javascript", "json", "latex", "markdown"]

SUBCOMMANDS = [
    ["list", "--json"],
    ["show", "all_reduce", "--algorithm", "ring", "--format", "latex"],
    ["eval", "all_reduce", "N=8", "M=2**30", "--json"],
    ["eval", "dp", "N=64", "--model", "llama3-8b", "--hardware", "h100"],
    ["plan", "--model", "llama3-8b", "--gpus", "64", "--hardware", "a100", "--batch", "64", "--top", "2"],
    ["validate", "--from", "DATA", "--no-progress"],
    ["prove", "--quiet"],
    ["calibrate", "LOG", "--json"],
    ["calibrate-step", "RUNS", "--hardware", "h100", "--json"],
    ["nccl-tests", "all_reduce", "--hardware", "a100", "--ranks", "8", "-b", "8", "-e", "1M"],
    ["presets", "--json"],
]

#: one process of the installed package: where it imports from (its first act), then the command's main on every
#: format's export and on every argv of SUBCOMMANDS: each call's exit code, stdout and stderr (a traceback that
#: escapes main is caught and kept as its stderr, exit code None), so that one call's failure fails its own test only
_IN_THE_VENV = """\
import contextlib, io, json, sys, traceback
import symcomm, symcomm.derivations as derivations
from symcomm.commands.main import main

def call(argv):
    so, se = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(so), contextlib.redirect_stderr(se):
        try:
            rc = main(argv)
        except BaseException:
            rc = None
            traceback.print_exc()
    return [rc, so.getvalue(), se.getvalue()]

formats, calls = json.loads(sys.argv[1])
out = {"files": [symcomm.__file__, derivations.__file__],
       "export": {f: call(["export", "--format", f, "-o", f"formulas.{f}"]) for f in formats},
       "subcommands": [call(argv) for argv in calls]}
sys.stdout.write(json.dumps(out))
"""


@pytest.fixture(scope="module")
def in_the_venv(installed):
    """What the installed package does, in one process (:data:`_IN_THE_VENV`): one start of Python, SymPy and the
    package, and one build of the catalog's costs (every format prints them; list, show and prove read them), for the
    import check, the six formats and the eleven subcommands, which were three processes.  test_wheel.py's CPU, the
    venv's processes included (-n 0, a subreaper summing every descendant's rusage, paired on one loaded machine,
    2026-12-03): 20.8 and 20.7 s as three processes, 18.8 and 19.0 s as one."""
    _, python, home = installed
    data = ROOT / "derivations" / "data" / "gloo_measurements.json"
    log = ROOT / "derivations" / "data" / "nccl-tests" / "a100-1node-all_reduce.log"
    runs = ROOT / "derivations" / "data" / "step_runs_example.json"
    calls = [[str(data) if word == "DATA" else str(log) if word == "LOG" else str(runs) if word == "RUNS" else word
              for word in argv] for argv in SUBCOMMANDS]
    got = _run(python, home, "-c", _IN_THE_VENV, json.dumps([FORMATS, calls]))
    assert got.returncode == 0, got.stderr
    return json.loads(got.stdout)


def test_installed_package_is_not_the_source_tree(in_the_venv):
    files = in_the_venv["files"]
    assert all(str(ROOT) not in name and "site-packages" in name for name in files), files


@pytest.mark.parametrize("fmt", FORMATS)
def test_export_every_format(installed, in_the_venv, fmt):
    _, _, home = installed
    code, _, stderr = in_the_venv["export"][fmt]
    assert code == 0, stderr
    assert (home / f"formulas.{fmt}").stat().st_size > 1000


@pytest.fixture(scope="module")
def subcommands(in_the_venv):
    """Every argv of :data:`SUBCOMMANDS`, by argv: (exit code, stdout, stderr), from the one process."""
    return dict(zip(map(tuple, SUBCOMMANDS), in_the_venv["subcommands"]))


@pytest.mark.parametrize("argv", SUBCOMMANDS)
def test_every_subcommand(subcommands, argv):
    code, stdout, stderr = subcommands[tuple(argv)]
    assert code == 0, stderr
    if argv[0] == "list":
        assert json.loads(stdout)["primitives"]


def test_build_docs_against_the_wheel(installed):
    _, python, home = installed
    script = home / "build_docs.py"
    shutil.copy(ROOT / "build_docs.py", script)          # beside no symcomm/: imports the installed one
    got = _run(python, home, str(script), "--out", str(home / "docs"))
    assert got.returncode == 0, got.stderr
    assert (home / "docs" / "index.md").is_file() and (home / "docs" / "symcomm.tex").is_file()
