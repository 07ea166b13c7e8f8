"""README.md opens with the two commands a fresh machine runs; CI runs the second one."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _commands() -> list[str]:
    block = re.search(r"```sh\n(.*?)```", (ROOT / "README.md").read_text(), re.S).group(1)
    return [line.split("#")[0].strip() for line in block.strip().splitlines()]


def test_readme_opens_with_main_job_and_tests():
    main_job, tests = _commands()[:2]
    assert "build_docs.py" in main_job
    assert tests.endswith("python -m pytest")


def test_ci_runs_the_readme_test_command_verbatim():
    _, tests = _commands()[:2]
    assert tests in (ROOT / ".ci" / "run").read_text().splitlines()
