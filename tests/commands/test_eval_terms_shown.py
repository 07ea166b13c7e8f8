"""What ``symcomm eval`` prints of a strategy's terms: every term that sends at the values given, one line each, and how
many send nothing (c = 1's ring passes, p = 1's pipeline sends), which --json lists all the same."""

import json
import subprocess
import sys

WORDS = ["eval", "hybrid", "--model", "llama3-8b", "t=2", "p=1", "d=4", "c=1", "b=64", "m=16", "s=4096", "G=8", "zero=1",
         "tied=1"]


def _run(*extra):
    out = subprocess.run([sys.executable, "-m", "symcomm", *WORDS, *extra], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_terms_that_send_nothing_are_counted_not_listed():
    text = _run()
    terms = json.loads(_run("--json"))["terms"]
    silent = [row for row in terms if row["send"] == 0]
    # by hand at these values: c = 1 leaves the K, V ring passes and the dK, dV reduction nothing to send (3 terms), p = 1
    # the two pipeline sends and the tied copies' all-reduce between the first and the last stage (3 more)
    assert len(silent) == 6
    assert f"  ({len(silent)} more terms send nothing at these values; --json lists every term)" in text
    listed = [line for line in text.splitlines() if line.startswith("  · ")]
    assert len(listed) == len(terms) - len(silent)
    assert not any("send 0 " in line for line in listed)
