"""The README's measuring commands (symcomm validate, symcomm measure) run as written: a file of their own (their
ranks take minutes), so that a parallel worker runs them beside the rest of tests/integration/test_readme.py."""

import pytest

from test_readme import NEEDS_TORCH, _run_in, _use_block


@pytest.mark.slow
@pytest.mark.torch      # skipped without torch, failed in CI (tests/conftest.py)
def test_the_readme_measuring_commands_run_as_written(tmp_path):
    lines = [line for line in _use_block() if line.startswith(NEEDS_TORCH)]
    assert lines, "the README shows no measuring command any more: drop this test"
    problems = _run_in(tmp_path, lines)
    assert not problems, "\n".join(problems)
