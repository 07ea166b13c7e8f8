"""The command line: exact JSON numbers, published figures, one-line errors."""

import json
import subprocess
import sys

import pytest

from symcomm.commands.main import main
from conftest import ROOT, TESTS, symcomm_command


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def eval_json(capsys, *argv):
    code, out, err = run(capsys, "eval", *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def test_ring_all_reduce_published_figures(capsys):
    # the worked example: N=8, M=2^30 → α 14, β 1.75·2^30, γ 0.875·2^30
    got = eval_json(capsys, "all_reduce", "--algorithm", "ring", "N=8", "M=1073741824")
    assert got["alpha"] == 14
    assert got["beta"] == 7 * 2**30 // 4
    assert got["gamma"] == 7 * 2**30 // 8
    assert got["send"] == got["recv"] == 7 * 2**30 // 4
    assert got["total"] == 8 * 7 * 2**30 // 4
    assert got["unit"] == "elements" and "time" not in got


def test_bytes_and_time(capsys):
    got = eval_json(capsys, "all_reduce", "N=8", "M=2**30", "--dtype", "bf16",
                    "alpha=5e-6", "beta=1e-11", "gamma=0")
    assert got["unit"] == "bytes"
    assert got["send"] == 2 * 7 * 2**30 // 4
    # T = 14·5 µs + 2·1.75·2^30 bytes · 1e-11 s/byte
    assert got["time"] == pytest.approx(14 * 5e-6 + 3.5 * 2**30 * 1e-11)


def test_huge_values_stay_exact_integers(capsys):
    got = eval_json(capsys, "all_reduce", "N=1048576", "M=1125899906842624")
    n, m = 2**20, 2**50
    assert got["send"] == 2 * (n - 1) * m // n
    assert got["total"] == 2 * (n - 1) * m
    assert isinstance(got["total"], int)


def test_general_n_uses_ceiling_log(capsys):
    # Bruck all-gather, N=6: rounds send 1, 2, 2 blocks → ⌈log₂6⌉ = 3 rounds, 5 blocks
    got = eval_json(capsys, "all_gather", "--algorithm", "bruck", "N=6", "M=60")
    assert got["alpha"] == 3 and got["send"] == 50


@pytest.mark.parametrize("argv, word", [
    (["eval", "allreduce", "N=8", "M=8"], "unknown primitive"),
    (["eval", "all_reduce", "--algorithm", "nope", "N=8", "M=8"], "algorithm"),
    (["eval", "all_reduce", "N=0", "M=8"], "N=0"),
    (["eval", "all_reduce", "--algorithm", "rabenseifner", "N=3", "M=12"], "power of two"),
    (["eval", "all_reduce", "N=8", "M=-1"], "M=-1"),
    (["eval", "all_reduce", "N=8", "M=abc"], "M='abc'"),
    (["eval", "all_reduce", "N=8"], "missing M"),
    (["eval", "all_reduce", "N=8", "M=8", "foo=1"], "unknown parameter 'foo'"),
    (["eval", "all_reduce", "N=8", "M=8", "--dtype", "fp7"], "--dtype"),
    (["show", "all_reduce", "--format", "pdf"], "--format"),
    # a nonzero value far below 1e-30 was read as 0 (the time then silently left out γ)
    (["eval", "all_reduce", "N=8", "M=8", "alpha=1e-6", "beta=1e-9", "gamma=1.6e-260", "--dtype", "bf16"],
     "gamma=1.6e-260"),
    (["eval", "all_reduce", "N=8", "M=8", "alpha=1e-6", "beta=1e-9", "gamma=1e-9999999", "--dtype", "bf16"],
     "too small"),
])
def test_bad_input_is_one_line_exit_2(capsys, argv, word):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert word in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_console_script_has_no_traceback():
    proc = subprocess.run([sys.executable, "-m", "symcomm.commands.main", "eval", "all_reduce", "N=3", "M=x"],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_list_json_names_every_primitive(capsys):
    code, out, _ = run(capsys, "list", "--json")
    names = {p["name"] for p in json.loads(out)["primitives"]}
    assert names == {"broadcast", "scatter", "gather", "reduce", "all_gather", "reduce_scatter",
                     "all_reduce", "all_to_all", "send_recv"}


@pytest.mark.parametrize("fmt", ["pretty", "text", "latex", "markdown", "python", "json"])
def test_show_formats(capsys, fmt):
    code, out, _ = run(capsys, "show", "all_reduce", "--algorithm", "ring", "--format", fmt)
    assert code == 0 and "send" in out


def test_prove_passes(capsys):
    # through the entry, as `symcomm prove` runs: it turns the collector off while it proves (symcomm.__main__._prove),
    # and it is on again for the rest of this process
    import gc

    from symcomm.__main__ import main as entry

    assert gc.isenabled()
    code = entry(["prove", "--quiet"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert " claims proved in " in out
    assert gc.isenabled()


def test_eval_uses_the_presets_grouped_query_attention(capsys):
    # Llama 3 70B: 8 K, V heads of 128 for 64 heads (h_kv = 1024), as plan assumes.  Ring attention sends,
    # per layer, 3 ring passes of K and V, 2·(N−1)/N·b·s·h_kv each: 80 layers · 3 · 2 · 7/8 · 8192 · 1024 bf16
    code, out, err = run(capsys, "eval", "cp_ring", "--model", "llama3-70b", "N=8", "b=1", "--dtype", "bf16",
                         "--json", "--verbose")
    assert code == 0, err
    assert "note: gqa=1" in err and "llama3-70b" in err     # the default taken, said with --verbose
    assert json.loads(out)["send"] == 80 * 3 * 2 * 7 * 8192 * 1024 // 8 * 2
    code, out, err = run(capsys, "eval", "cp_ring", "--model", "llama3-70b", "N=8", "b=1", "gqa=0", "--dtype",
                         "bf16", "--json")
    assert code == 0 and "gqa" not in err
    assert json.loads(out)["send"] == 80 * 3 * 2 * 7 * 8192 * 8192 // 8 * 2     # K, V of full width h = 8192


def test_moe_with_tensor_parallel_and_no_sequence_parallel_is_refused(capsys):
    code, out, err = run(capsys, "eval", "hybrid", "--model", "mixtral-8x7b", "moe=1", "t=2", "p=1", "d=8", "c=1",
                         "e=8", "b=16", "m=2", "G=8")
    # a refusal is one line with nothing before it (the preset's notes are not printed)
    assert code == 2 and len(err.splitlines()) == 1 and err.startswith("symcomm: error: ")
    assert "moe=1 with t=2 needs sp=1" in err


def test_eval_counts_fp32_gradients_in_bytes(capsys):
    # hybrid, Megatron ZeRO-0 over d = 4 (t = p = c = 1): one ring all-reduce of Φ gradients in fp32
    # (megatron/training/arguments.py): 2·3/4·Φ elements of 4 bytes, whatever the run's bf16
    code, out, err = run(capsys, "eval", "hybrid", "zero=0", "t=1", "p=1", "d=4", "c=1", "b=4", "m=1", "L=1",
                         "s=8", "h=8", "Phi=1000", "G=8", "--dtype", "bf16", "--json")
    assert code == 0, err
    got = json.loads(out)
    assert got["send"] == 2 * 3 * 1000 // 4 * 4
    assert [row.get("dtype") for row in got["terms"] if row["axis"] == "dp"] == ["fp32"]
    code, out, err = run(capsys, "eval", "hybrid", "zero=0", "grad_dtype=same", "t=1", "p=1", "d=4", "c=1", "b=4",
                         "m=1", "L=1", "s=8", "h=8", "Phi=1000", "G=8", "--dtype", "bf16", "--json")
    assert json.loads(out)["send"] == 2 * 3 * 1000 // 4 * 2


def test_eval_reports_the_busiest_gpu_per_axis_and_its_stage(capsys):
    # with the LM head on the last stage that stage's GPU is the busiest on tp and dp; the pipeline's busiest
    # is an interior stage (it sends both ways); p = 4 has interior stages
    args = ("eval", "hybrid", "embeddings=1", "t=2", "p=4", "d=2", "c=1", "b=8", "m=4", "L=8", "s=16", "h=8",
            "Phi=100000", "V=64", "G=8", "--json")
    code, out, err = run(capsys, *args)
    assert code == 0, err
    axes = json.loads(out)["axes"]
    assert axes["tp"]["stage"] == axes["dp"]["stage"] == "the last pipeline stage"
    assert axes["pp"]["stage"] == "an interior pipeline stage"
    # the axes add up to the whole (the same busiest-GPU convention, axis by axis)
    assert sum(row["send"] for row in axes.values()) == json.loads(out)["send"]
    code, out, err = run(capsys, *args[:-1])
    assert "busiest GPU per axis:" in out and "tp: send" in out


def test_beta_is_per_byte_whatever_the_dtype(capsys):
    # one rule: β in s/byte.  Ring all-reduce of M = 2**30 elements on N = 8: 2·7/8·M elements moved.
    # bf16 (2 bytes): 2·7/8·2**31 bytes × 1e-11 s/byte; fp32 (4 bytes): twice that; without --dtype: bf16, noted
    moved = 2 * 7 / 8 * 2 ** 30
    times = {}
    for dtype in ("bf16", "fp32", None):
        words = ["eval", "all_reduce", "--algorithm", "ring", "N=8", "M=2**30", "alpha=0", "beta=1e-11", "gamma=0",
                 "--json"] + (["--dtype", dtype] if dtype else [])
        code, out, err = run(capsys, *words)
        assert code == 0, err
        times[dtype] = json.loads(out)["time"]
        assert json.loads(out)["inputs"]["beta"]["unit"] == "s/byte"
    assert times["bf16"] == pytest.approx(moved * 2 * 1e-11, rel=1e-12)
    assert times["fp32"] == pytest.approx(moved * 4 * 1e-11, rel=1e-12)
    assert times[None] == times["bf16"]


def test_bandwidth_and_sizes_with_units(capsys):
    # bw=50GB/s is β = 1/(50·10⁹) s/byte; M=1GiB of bf16 is 2**29 elements (hand arithmetic)
    code, out, err = run(capsys, "eval", "all_reduce", "--algorithm", "ring", "N=8", "M=1GiB", "bw=50GB/s",
                         "alpha=0", "gamma=0", "--dtype", "bf16", "--json")
    assert code == 0, err
    got = json.loads(out)
    assert got["values"]["M"] == 2 ** 29
    assert got["time"] == pytest.approx(2 * 7 / 8 * 2 ** 30 / 50e9, rel=1e-12)
    assert got["inputs"]["M"]["source"].startswith("typed, 1GiB")
    assert got["units"]["send"] == "bytes" and got["units"]["time"] == "s"
    code, out, err = run(capsys, "eval", "all_reduce", "N=8", "M=1GiB", "bw=50GB/s", "beta=1e-11")
    assert code == 2 and "bw or beta" in err


def test_eval_json_says_where_each_input_came_from(capsys):
    code, out, err = run(capsys, "eval", "dp", "N=64", "--model", "llama3-8b", "--hardware", "h100", "--json")
    assert code == 0, err
    inputs = json.loads(out)["inputs"]
    assert inputs["N"]["source"] == "typed"
    assert inputs["Phi"]["source"] == "model preset llama3-8b"
    assert inputs["beta"]["source"] == "hardware h100" and inputs["beta"]["unit"] == "s/byte"
    assert inputs["dtype"]["value"] == "bf16" and inputs["dtype"]["source"].startswith("default")


def test_show_substitutes_values_and_writes_cases_as_cases(capsys):
    # ring all-reduce sends 2(N−1)/N·M; at N = 8 that is 7M/4 (hand arithmetic)
    code, out, err = run(capsys, "show", "all_reduce", "--algorithm", "ring", "N=8", "--format", "json")
    assert code == 0, err
    got = json.loads(out)
    assert got["values"] == {"N": 8} and got["formulas"]["send"]["text"] == "7*M/4"
    code, out, _ = run(capsys, "show", "pp")             # Piecewise in N: drawn as cases, not Piecewise(...)
    assert code == 0 and "Piecewise" not in out and "for N = 1" in out
    code, out, _ = run(capsys, "show", "all_reduce", "--algorithm", "ring", "--format", "markdown")
    assert "| quantity | formula |" in out and "| send |" in out
    code, out, err = run(capsys, "show", "all_reduce", "--algorithm", "ring", "Q=3")
    assert code == 2 and "'Q'" in err


@pytest.mark.parametrize("word", ["alpha=5e-6", "beta=1e-11", "gamma=0", "bw=50GB/s"])
def test_show_leaves_times_to_eval(capsys, word):
    # show's closed forms count elements: a β substituted there is per element while eval's is per byte
    # (elements × --dtype), so the same words gave two times (0.0189 s and eval's 0.0377 s at N=8, M=2**30 bf16,
    # an outsider's test); show refuses them in one line and names eval's command
    code, out, err = run(capsys, "show", "all_reduce", "N=8", "M=2**30", word)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "symcomm eval all_reduce" in err and word.split("=")[0] in err


def test_compare_marks_the_best_and_finds_the_crossover(capsys):
    # N = 16, α = 10 µs, bf16 at 50 GB/s: β = 2/50e9 s per element.  Recursive doubling: 4α + 4M·β;
    # Rabenseifner: 8α + 2·15/16·M·β (Thakur et al. 2005 §4): they cross at M = 4α / (2.125 β) = 470,588.2
    # (γ = 0 given: compare, like eval, needs γ for the reducing algorithms)
    code, out, err = run(capsys, "compare", "all_reduce", "N=16", "M=1MiB", "alpha=1e-5", "bw=50GB/s", "gamma=0",
                         "--json")
    assert code == 0, err
    got = json.loads(out)
    assert got["best"] == "in_network" and "in_network" in got["ranges_leave_out"]
    ranges = got["fastest_by_message_size"]
    assert [r["algorithm"] for r in ranges] == ["recursive_doubling", "rabenseifner"]
    assert ranges[1]["crossover_elements"] == pytest.approx(4e-5 / (2.125 * 4e-11), rel=1e-6)
    ring = next(r for r in got["algorithms"] if r["algorithm"] == "ring")
    # counts as eval gives them with a dtype: bytes, 2·15/16 of the 1 MiB buffer
    assert ring["alpha"] == 30 and ring["beta"] == 2 * 15 * 2 ** 20 // 16
    # the two-level form needs G and the inter-node pair, which nothing gave: not guessed (G = N, α_inter = α
    # was the old default), refused in eval's words
    assert any(line.startswith("hierarchical: missing G") for line in got["skipped"])
    code, out, err = run(capsys, "compare", "tp", "N=8")
    assert code == 2 and "primitive" in err


def test_every_option_of_every_command_has_help():
    import argparse

    from symcomm.commands.main import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    bare = [(name, action.option_strings or action.dest) for name, command in commands.choices.items()
            for action in command._actions if not isinstance(action, argparse._HelpAction) and not action.help]
    assert not bare
    listed = {choice.dest for choice in commands._choices_actions}
    assert listed == set(commands.choices)          # the top-level help lists every command with its help
    assert all(choice.help for choice in commands._choices_actions)


# -- output paths (symcomm/base/files.py) -----------------------------------------------------------------

#: every option that names a file to write, with the words its command needs before the path is
#: checked (a log that is never read: the path is checked first); the test below finds such
#: options in the parser, so a new one fails here until it is listed
OUTPUT_OPTIONS = {
    ("export", "--output"): ["--format", "c"],
    ("measure", "--output"): ["--no-progress"],
    ("validate", "--output"): ["--no-progress"],
    ("calibrate", "--output"): ["never-read.log"],
    ("calibrate", "--plot"): ["never-read.log"],
    ("calibrate-step", "--output"): ["never-read.json", "--hardware", "h100"],
}


def _path_options():
    """(command, option) for every option of every subcommand that takes a path to write."""
    import argparse

    from symcomm.commands.main import build_parser

    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    writes = {"-o", "--output", "--out", "--plot", "--save", "--screenshot", "--csv-file", "--write"}
    return {(name, max(action.option_strings, key=len)) for name, command in commands.choices.items()
            for action in command._actions if set(action.option_strings) & writes and action.nargs != 0}


def test_every_output_option_is_listed():
    assert _path_options() == set(OUTPUT_OPTIONS)


@pytest.mark.parametrize("bad", ["", "out.json/", "made/", ".", "made/.."],
                         ids=["empty", "trailing-slash", "folder-slash", "dot", "dot-dot"])
@pytest.mark.parametrize("command, option", sorted(OUTPUT_OPTIONS))
def test_output_path_that_is_empty_or_a_folder_is_refused(capsys, monkeypatch, tmp_path, command, option, bad):
    # `-o ''` was skipped by `if args.output:` (nothing written, no word said) and `-o out.json/`
    # wrote the file out.json, since Path() drops the trailing slash
    monkeypatch.chdir(tmp_path)
    (tmp_path / "made").mkdir()
    code, out, err = run(capsys, command, *OUTPUT_OPTIONS[(command, option)], option, bad)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    named = err.split("error: ", 1)[1]   # after "symcomm: error: "
    assert named.startswith((option, "-o")) and repr(bad) in named
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["made"]     # nothing written


def test_replacing_a_file_keeps_its_mode_and_a_new_file_gets_the_umask(tmp_path):
    import os
    import stat

    from symcomm.base.files import write_file

    old_umask = os.umask(0o022)
    try:
        private = tmp_path / "private.json"
        private.write_text("old")
        os.chmod(private, 0o640)
        write_file(private, "new")
        # the bits the user chose for this file, not 0666 minus the umask (0644)
        assert private.read_text() == "new" and stat.S_IMODE(private.stat().st_mode) == 0o640
        os.chmod(private, 0o600)
        write_file(private, b"newer")
        assert stat.S_IMODE(private.stat().st_mode) == 0o600
        os.umask(0o077)
        fresh = tmp_path / "fresh.json"
        write_file(fresh, "x")
        # a new file: 0666 minus the umask 077 = 0600
        assert stat.S_IMODE(fresh.stat().st_mode) == 0o600
        os.umask(0o022)
        write_file(tmp_path / "open.json", "x")
        assert stat.S_IMODE((tmp_path / "open.json").stat().st_mode) == 0o644       # 0666 − 022
    finally:
        os.umask(old_umask)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fresh.json", "open.json", "private.json"]


def test_notes_that_restate_a_default_need_verbose(capsys):
    # without --dtype a time is in bf16 (the README's rule): a default, said only with --verbose
    words = ("eval", "all_reduce", "N=8", "M=1GiB", "alpha=1e-6", "beta=1e-11", "gamma=0")
    code, out, err = run(capsys, *words)
    assert code == 0 and err == ""
    code, out, err = run(capsys, *words, "--verbose")
    assert code == 0 and err.splitlines() == [
        "symcomm: note: --dtype bf16 (2 bytes per element): beta and gamma are seconds per byte; give --dtype to "
        "change it"]
    # a value typed and not used is not a default: always said, after the answer
    code, out, err = run(capsys, "eval", "dp", "N=8", "Phi=100", "M=5")
    assert code == 0 and out and err.splitlines() == ["symcomm: note: M not used by dp (algorithm=ring)"]


def test_the_api_returns_its_notes_instead_of_printing(capsys):
    import symcomm

    got = symcomm.evaluate("dp", N=8, Phi=100, M=5)
    assert capsys.readouterr().err == ""
    assert got.notes == ("M not used by dp (algorithm=ring)",)
    got = symcomm.compare("all_reduce", N=16, M="1MiB", alpha=1e-5, bw="50GB/s", gamma=0)
    assert capsys.readouterr().err == ""
    assert any(note.startswith("--dtype bf16") for note in got.notes)     # every note, defaults included


@pytest.mark.parametrize("bad", ["", "page.png/", "."])
def test_site_screenshot_path_is_checked_before_chromium_starts(capsys, monkeypatch, tmp_path, bad):
    # `python -m symcomm.tools.screenshot --screenshot PATH` is the one writer outside the symcomm command
    from symcomm.tools import screenshot
    from symcomm.views import site

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(site, "screenshot", lambda *a: pytest.fail("Chromium started for a bad path"))
    assert screenshot.main(["--screenshot", bad]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and f"--screenshot {bad!r}" in err
    assert list(tmp_path.iterdir()) == []


# -- every usage error of every command is one line and exit 2 (issue 23, item 4) ------------------------
# The cases are read from the parser itself, so a new subcommand or option is covered with no edit here.

def _subcommands():
    import argparse

    from symcomm.commands.main import build_parser

    action = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices


def _valued_options():
    # every option that takes a value (not a flag): given last with no value, argparse must refuse it
    return [(name, action.option_strings[-1]) for name, sub in _subcommands().items() for action in sub._actions
            if action.option_strings and action.nargs != 0 and action.option_strings[-1] not in ("-h", "--help")]


def _complete_prefix(sub) -> list[str]:
    # the required arguments with placeholder words (argparse checks none of their values: the commands do)
    words = []
    for action in sub._actions:
        if not _needs_a_word(action):
            continue
        words += [action.option_strings[-1], "8"] if action.option_strings else ["x"]
    return words


def _one_line_refusal(argv, capsys):
    from symcomm.__main__ import main as entry     # `plan` goes to symcomm.planner.main, the rest to commands.main.main

    code = entry(list(argv))
    out, err = capsys.readouterr()
    assert code == 2, (argv, code, err)
    assert out == "", (argv, out)
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("symcomm: error: ") and "Traceback" not in err, (argv, err)
    return lines[0]


def test_every_subcommand_is_covered():
    # the lists below are not empty by accident: the thirteen subcommands of commands/main.py's docstring
    assert set(_subcommands()) == {"list", "show", "eval", "presets", "compare", "prove", "export", "measure",
                                   "validate", "plan", "calibrate", "nccl-tests", "calibrate-step"}


@pytest.mark.parametrize("command,option", _valued_options())
def test_an_option_without_its_value_is_one_line(command, option, capsys):
    line = _one_line_refusal([command, option], capsys)
    assert option in line and ("expected one argument" in line or "expected at least one argument" in line), line


@pytest.mark.parametrize("command", sorted(_subcommands()))
def test_an_unknown_flag_is_one_line(command, capsys):
    argv = [command, *_complete_prefix(_subcommands()[command]), "--no-such-flag"]
    assert _one_line_refusal(argv, capsys) == "symcomm: error: unrecognized arguments: --no-such-flag"


def _needs_a_word(action) -> bool:
    # a KEY=VALUE list (nargs "*") is "required" to argparse but may be empty
    return action.required and action.nargs not in ("*", "?")


@pytest.mark.parametrize("command", sorted(_subcommands()))
def test_a_missing_required_argument_or_stray_word_is_one_line(command, capsys):
    sub = _subcommands()[command]
    if any(_needs_a_word(action) for action in sub._actions):
        line = _one_line_refusal([command], capsys)
        assert "the following arguments are required" in line
    elif any(not action.option_strings for action in sub._actions):
        # plan's words are KEY=VALUE pairs: a bare word is refused as one, naming it
        line = _one_line_refusal([command, "extra"], capsys)
        assert "'extra' is not KEY=VALUE" in line
    else:
        # a command that takes no word refuses one (`symcomm list extra`)
        assert _one_line_refusal([command, "extra"], capsys) == "symcomm: error: unrecognized arguments: extra"


#: for each subcommand with a choice among named values: a command line reaching that choice with a bad
#: value, and the option the refusal must name.  list, presets and prove take no choice (only flags).
LOG = "tests/data/nccl-tests/a100-1node-all_reduce.log"
BAD_CHOICE = {
    "show": (["show", "all_reduce", "--format", "nope"], "--format"),
    "eval": (["eval", "dp", "N=8", "Phi=1", "--backend", "nope"], "--backend"),
    "compare": (["compare", "all_reduce", "N=8", "M=8", "--dtype", "nope"], "--dtype"),
    "export": (["export", "--format", "nope"], "--format"),
    "measure": (["measure", "--backend", "nope"], "--backend"),
    "validate": (["validate", "--backend", "nope"], "--backend"),
    "plan": (["plan", "--model", "llama3-8b", "--gpus", "8", "--batch", "8", "--hardware", "h100",
              "--recompute", "nope"], "--recompute"),
    "calibrate": (["calibrate", LOG, "--collective", "nope"], "collective"),
    "nccl-tests": (["nccl-tests", "nope", "--ranks", "8"], "collective"),
    "calibrate-step": (["calibrate-step", "derivations/data/step_runs_example.json", "--hardware", "nope"],
                       "--hardware"),
    "<command>": (["nope"], "invalid choice"),
}


@pytest.mark.parametrize("case", sorted(BAD_CHOICE))
def test_a_bad_choice_is_one_line_naming_it(case, capsys, monkeypatch):
    from pathlib import Path

    monkeypatch.chdir(ROOT)     # LOG is relative to the source tree
    argv, name = BAD_CHOICE[case]
    line = _one_line_refusal(argv, capsys)
    assert name in line and "nope" in line, line


def test_the_choices_table_covers_every_command_with_a_choice():
    assert set(BAD_CHOICE) == set(_subcommands()) - {"list", "presets", "prove"} | {"<command>"}


# -- symcomm.commands.runner.run: the one mapping, tested on a stand-in command ------------------------------------

def _stand_in(behaviour):
    from symcomm.base import notes
    from symcomm.commands import runner as command

    parser = command.Parser(prog="symcomm")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=command.Parser)
    p = sub.add_parser("go")
    notes.add_flag(p)
    p.set_defaults(run=behaviour)
    return parser


def test_run_prints_notes_after_the_answer_and_defaults_only_verbose(capsys):
    from symcomm.base import notes
    from symcomm.commands import runner as command

    def answer(args):
        notes.add("a default was taken", restates_default=True)
        notes.add("a typed value was not used")
        print("the answer")
        return 0

    assert command.run(_stand_in(answer), ["go"]) == 0
    out, err = capsys.readouterr()
    assert out == "the answer\n" and err == "symcomm: note: a typed value was not used\n"
    assert command.run(_stand_in(answer), ["go", "--verbose"]) == 0
    assert capsys.readouterr().err.splitlines() == ["symcomm: note: a default was taken",
                                                    "symcomm: note: a typed value was not used"]


def test_notes_said_before_are_added_again_once_each():
    from symcomm.base import notes

    held = (notes.Note("a default was taken", True), notes.Note("a typed value was not used"))
    notes.extend(held)                                  # no collector: nowhere, as notes.add
    with notes.collected() as said:
        notes.add("a typed value was not used")
        notes.extend(held)
        notes.extend(held)
    assert said == [notes.Note("a typed value was not used"), notes.Note("a default was taken", True)]


@pytest.mark.parametrize("raised,code,said", [
    (ValueError("bad\n value"), 2, "symcomm: error: bad value\n"),   # folded to one line
    (KeyboardInterrupt(), 130, "symcomm: interrupted\n"),            # 128 + SIGINT, as a shell says
])
def test_run_maps_errors_to_one_line_and_no_note_before_a_refusal(raised, code, said, capsys):
    from symcomm.base import notes
    from symcomm.commands import runner as command

    def refuse(args):
        notes.add("never shown before a refusal")
        raise raised

    assert command.run(_stand_in(refuse), ["go"]) == code
    assert capsys.readouterr() == ("", said)


def test_run_leaves_quietly_when_the_reader_closes_the_pipe(monkeypatch):
    import io

    from symcomm.commands import runner as command

    def closed(args):
        raise BrokenPipeError

    stderr = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stderr)
    assert command.run(_stand_in(closed), ["go"]) == 0
    assert stderr.closed      # nothing written, and Python's own report of the pipe at exit silenced


def test_the_command_layer_loads_no_sympy():
    # `symcomm plan` starts without SymPy; its parser and error mapping must not pull it in
    code = "import sys, symcomm.commands.runner; sys.exit('sympy' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_no_shared_expert_is_a_value_you_can_type(capsys):
    # E_s counts a MoE layer's shared experts: "0 or more" (symbols.py); Mixtral has none (its config has no
    # shared expert), DeepSeek-V3 one.  eval took E_s=0 from the mixtral-8x7b preset but refused it typed.
    layout = ["moe=1", "sp=1", "t=2", "d=4", "p=2", "c=1", "e=1", "b=32", "m=8"]
    preset = eval_json(capsys, "hybrid", *layout, "--model", "mixtral-8x7b", "--hardware", "h100")
    typed = eval_json(capsys, "hybrid", *layout, "E_s=0", "--model", "mixtral-8x7b", "--hardware", "h100")
    assert typed["step_time"] == preset["step_time"] and typed["send"] == preset["send"]
    code, _, err = run(capsys, "eval", "hybrid", *layout, "E_s=-1", "--model", "mixtral-8x7b", "--hardware", "h100")
    assert code == 2 and "E_s=-1 is not allowed: E_s takes a whole number from 0 to 2**100" in err
    # a symbol declared positive keeps its least value of 1
    code, _, err = run(capsys, "eval", "hybrid", *layout, "F_e=0", "--model", "mixtral-8x7b", "--hardware", "h100")
    assert code == 2 and "F_e=0 is not allowed: F_e takes a whole number from 1" in err


def test_a_built_in_subcommand_starts_without_the_other_subcommands_modules():
    """`symcomm eval` (list, show, compare, presets, prove) builds its parser without importing export, measure,
    plan, calibrate and calibrate-step (their modules pull in the export formats, the harness, the planner: a
    tenth of a second of a cold start, issue 25); a name that is none of the built-ins still gets them all."""
    probe = ("import sys; from symcomm.commands.main import main; main(sys.argv[1:]); "
             "print(sorted(m for m in sys.modules if m.startswith('symcomm.commands.')), file=sys.stderr)")
    run = subprocess.run([sys.executable, "-c", probe, "eval", "all_reduce", "N=8", "M=8"], capture_output=True,
                         text=True, cwd=ROOT, check=True)
    loaded = run.stderr.strip().splitlines()[-1]
    for name in ("export", "measure", "plan", "calibrate", "calibrate_step"):
        assert f"'symcomm.commands.{name}'" not in loaded
    assert "send" in run.stdout


def test_an_unknown_subcommand_is_refused_naming_every_subcommand(capsys):
    assert main(["nope"]) == 2
    err = capsys.readouterr().err
    for name in ("eval", "export", "measure", "validate", "plan", "calibrate", "nccl-tests", "calibrate-step"):
        assert f"'{name}'" in err


def test_a_moe_model_typed_by_its_shape_gets_its_parameter_counts():
    # Mixtral 8x7B by hand: per layer the attention 4096·4096 (Q) + 2·4096·1024 (K, V) + 4096·4096 (O) = 41,943,040,
    # 8 SwiGLU experts 8·3·4096·14336 = 1,409,286,144, the router 4096·8 and two RMSNorms 2·4096; 32 layers, untied
    # embeddings 2·32000·4096 and the final norm 4096: 46,702,792,704 (Jiang et al. 2024: 47B); the routed experts
    # alone 32·1,409,286,144 = 45,097,156,608
    import json

    shape = ["h=4096", "L=32", "a=32", "h_kv=1024", "F=14336", "V=32000", "gated=1", "gqa=1", "moe=1", "E=8", "k=2",
             "F_e=14336", "L_moe=32", "t=1", "p=1", "d=8", "c=1", "e=8", "b=64", "m=8", "s=4096"]
    run = symcomm_command("eval", "hybrid", "--hardware", "h100", *shape, "E_s=0", "--json")
    assert run.returncode == 0, run.stderr
    inputs = json.loads(run.stdout)["inputs"]
    assert (inputs["Phi"]["value"], inputs["Phi_E"]["value"]) == (46_702_792_704, 45_097_156_608)
    # Llama 4 Maverick (Hugging Face config: 48 layers of h = 5120, 40 heads and 8 K, V heads of 128, dense FFN 16384,
    # MoE every other layer: 128 routed experts of 8192 and one shared one, top-1, vocabulary 202048): Meta's model
    # card gives 400B parameters, 17B active; the count, the shared expert's 24·3·5120·8192 = 3.02B included, is
    # 400,711,848,960
    maverick = ["h=5120", "L=48", "a=40", "h_kv=1024", "F=16384", "V=202048", "gated=1", "gqa=1", "moe=1", "E=128",
                "k=1", "F_e=8192", "L_moe=24", "E_s=1", "t=1", "p=1", "d=8", "c=1", "e=8", "b=64", "m=8", "s=8192"]
    run = symcomm_command("eval", "hybrid", "--hardware", "h100", *maverick, "--json")
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["inputs"]["Phi"]["value"] == 400_711_848_960
    # typed counts win
    run = symcomm_command("eval", "hybrid", "--hardware", "h100", *shape, "E_s=0", "Phi=1000000000", "Phi_E=500000000",
                          "--json")
    inputs = json.loads(run.stdout)["inputs"]
    assert (inputs["Phi"]["value"], inputs["Phi_E"]["value"]) == (1_000_000_000, 500_000_000)


def test_what_an_outsider_s_test_found_is_said_or_refused_in_one_line(capsys):
    # a flat ring over two 8-GPU nodes runs its two links at once (the larger of 7/8 of the intra-node beta and 1/8
    # of beta_inter per element, base.crossing's rule): a modelling choice, said unasked, not only under -v
    code, out, err = run(capsys, "eval", "all_reduce", "--algorithm", "ring", "N=16", "M=64MiB", "--hardware", "h100")
    assert code == 0 and "the larger of 7/8 of the intra-node beta and 1/8 of beta_inter" in err
    # a value inside the range but below what is computed with is said as such, not as the range it lies in
    code, out, err = run(capsys, "eval", "all_reduce", "N=8", "M=8", "alpha=1e-31", "beta=1", "gamma=0")
    assert code == 2 and "below 1e-30" in err and "from 0" not in err
    # one rank moves nothing: nccl-tests refuses it by its range, not as a link model to recalibrate
    code, out, err = run(capsys, "nccl-tests", "all_reduce", "--hardware", "h100", "--ranks", "1")
    assert code == 2 and "--ranks" in err and "from 2" in err and "recalibrate" not in err
    # a token's top-k experts are distinct: k above E is refused, by the ep strategy and by the hybrid's MoE
    code, out, err = run(capsys, "eval", "ep", "N=8", "E=8", "k=9", "b=1", "s=8", "h=8", "L_moe=2")
    assert code == 2 and "E=8 must be at least k=9" in err
    code, out, err = run(capsys, "eval", "hybrid", "--model", "mixtral-8x7b", "--hardware", "h100", "t=1", "p=1",
                         "d=8", "c=1", "e=8", "b=64", "m=8", "s=4096", "k=9")
    assert code == 2 and "E=8 must be at least k=9" in err and len(err.strip().splitlines()) == 1


def test_what_an_outsider_s_test_found_is_labelled_where_it_is_printed(capsys):
    # the bubble fraction is Narayanan et al.'s bubble time over the ideal compute time, (p − 1)/m = 3/4 here, not a
    # share of the step (GPipe's (p − 1)/(m + p − 1) = 3/7): said beside it
    code, out, err = run(capsys, "eval", "pp", "N=4", "m=4", "b=8", "s=8", "h=8")
    line = next(x for x in out.splitlines() if x.strip().startswith("bubble_fraction"))
    assert "0.75" in line and "ideal compute time" in line
    # M is in elements whatever unit it was typed in (1 GiB of bf16: 2**29 elements)
    code, out, err = run(capsys, "eval", "all_reduce", "N=8", "M=1GiB", "--hardware", "h100")
    assert f"M={2 ** 29}" in out.splitlines()[0] and "(M in elements of bf16)" in out.splitlines()[0]
    layout = ["eval", "hybrid", "--model", "llama2-7b", "--hardware", "h100", "t=1", "p=1", "c=1", "d=8", "b=64", "m=8",
              "s=4096", "framework=deepspeed", "zero=3"]
    # Φ typed alone moves the weights and the traffic, not the FLOPs: said
    code, out, err = run(capsys, *layout, "Phi=13015864320")
    assert code == 0 and "the FLOPs, compute time and MFU count the model's shape" in err
    # a bf16 recipe timed at the FP8 peak (--dtype fp8) names the peak its MFU divides by
    code, out, err = run(capsys, *layout, "--dtype", "fp8")
    assert "MFU" in out and "of the fp8 peak" in next(x for x in out.splitlines() if "throughput" in x)
    # the room left is a share of the GPU's memory, not of the count
    code, out, err = run(capsys, *layout)
    assert "% of the GPU's memory free" in next(x for x in out.splitlines() if x.strip().startswith("fits"))
    # a first/last stage count without its split would be priced as an even split: refused in one line
    code, out, err = run(capsys, "eval", "hybrid", "--model", "llama3-70b", "--hardware", "h100", "t=8", "d=8", "c=1",
                         "b=512", "m=64", "s=8192", "sp=1", "p=4", "L_first=18", "L_last=18")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "pipeline_split=first_last" in err


def test_what_a_third_outsider_s_test_found(capsys, tmp_path):
    # plan and eval share the rule for the fit's error: a peak typed over the hardware's own leaves it unknown in both
    plan = ["plan", "--model", "llama3-8b", "--gpus", "8", "--hardware", "h100", "--batch", "64", "--framework",
            "megatron", "--top", "2"]
    code, out, err = run(capsys, *plan, "--peak", "5e15")
    assert code == 0 and "step times off by unknown" in out
    code, out, err = run(capsys, *plan, "--peak", "989.4e12")
    assert code == 0 and "step times off by typically" in out
    # --no-memory-check ranks layouts that may not fit: the CSV's fits column is the GPU's verdict on each count
    # (Llama 3 70B on 64 H100 at t = p = 1 holds far more than 80 GB), not 1 for every ranked row
    code, out, err = run(capsys, "plan", "--model", "llama3-70b", "--gpus", "64", "--hardware", "h100", "--batch",
                         "256", "--no-memory-check", "--csv", "--top", "3")
    import csv as _csv
    rows = list(_csv.DictReader(out.splitlines()))
    assert rows and all(row["fits"] == str(int(float(row["memory_bytes"]) <= 85_520_809_984)) for row in rows)
    # a 40 GB A100's log takes the 40 GB preset as its base (half the memory, 1.555 TB/s of HBM), and says so
    target = tmp_path / "a100.json"
    code, out, err = run(capsys, "calibrate", str(TESTS / "data" / "nccl-tests" / "a100-1node-all_reduce.log"),
                         "-o", str(target))
    assert code == 0 and "--base a100-40gb" in err
    written = json.loads(target.read_text())
    assert written["memory_bytes"] == 40 * 2 ** 30 and written["hbm_bytes_per_second"] == 1.555e12
    # eval prices the fit's α-β-γ line; where the file holds the log's efficiency curve nccl-tests divides by it:
    # said, so that the two answers are not read as one
    code, out, err = run(capsys, "eval", "all_reduce", "N=8", "M=2097152", "--dtype", "fp32", "--hardware", str(target))
    assert code == 0 and "per-size efficiency curve for all_reduce on 8 ranks" in err


def test_ring_attention_needs_2c_to_divide_the_sequence(capsys):
    # Megatron-Core views the sequence as 2·cp_size chunks (megatron/core/utils.py get_batch_on_this_cp_rank): at
    # s = 3000, c = 8 gives 3000/16 = 187.5 tokens a chunk, which no run takes; plan ranked it (an outsider's test).
    # Refused by eval and left out of plan's search, for the ring variants; Ulysses splits the heads, c | s enough
    words = ["eval", "hybrid", "--model", "llama3-8b", "--hardware", "h100", "t=1", "p=1", "d=1", "c=8", "b=8", "m=8",
             "s=3000"]
    code, out, err = run(capsys, *words)
    assert code == 2 and "s=3000 must be divisible by 2c=16" in err
    code, out, err = run(capsys, *words, "cp=ulysses")
    assert code == 0, err
    code, out, err = run(capsys, *words[:-1], "s=3008")          # 3008 = 16 · 188
    assert code == 0, err
    code, out, err = run(capsys, "plan", "--model", "llama3-8b", "--gpus", "8", "--hardware", "h100", "--batch", "64",
                         "--seq", "3000", "--cp", "8", "--framework", "megatron")
    assert code == 2 and "--cp=8 is not allowed" in err and "choose 1, 2, 4" in err


def test_sequence_parallel_needs_t_c_to_divide_the_sequence(capsys):
    # Megatron-Core's scatter to the sequence-parallel region splits the s/c tokens of a CP rank over t and asserts it
    # divides (megatron/core/tensor_parallel/mappings.py, _split_along_first_dim).  eval priced s = 8191 at t = 8
    # (1,023.875 tokens a rank), and plan, whose search already left it out, said no layout fits in memory and then,
    # under --no-memory-check, to try --no-memory-check (an outsider's test)
    words = ["eval", "hybrid", "--model", "llama3-8b", "--hardware", "h100", "t=8", "p=1", "d=1", "c=1", "b=8", "m=8"]
    code, out, err = run(capsys, *words, "s=8191", "sp=1")
    assert code == 2 and out == "" and "s=8191 must be divisible by t·c=8 with sp=1" in err
    assert run(capsys, *words, "s=8191", "sp=0")[0] == 0          # without SP each rank holds the whole sequence
    assert run(capsys, *words, "s=8192", "sp=1")[0] == 0          # 8192 = 8 · 1024
    # with Ulysses over c = 2 ranks and t = 4: s/c = 4098 tokens a CP rank, not divisible by 4 (8196 = 8 · 1024.5)
    code, out, err = run(capsys, *words[:6], "t=4", "p=1", "d=1", "c=2", "b=8", "m=8", "s=8196", "sp=1", "cp=ulysses")
    assert code == 2 and "t·c=8" in err
    plan = ["plan", "--model", "llama3-8b", "--gpus", "8", "--hardware", "h100", "--batch", "64", "--seq", "8191",
            "--tp", "8", "--sp", "1"]
    for extra in ((), ("--no-memory-check",)):
        code, out, err = run(capsys, *plan, *extra)
        assert code == 2 and "runs the fixed settings" in err and "t | seq/c (seq=8191)" in err, err
        assert "fits in" not in err and "--no-memory-check" not in err


def test_a_width_typed_over_a_preset_keeps_its_heads_whole(capsys):
    # h=100 over Llama 3 8B's 32 heads made heads 3.125 wide and kept its K/V width 1024 above h, priced with a note
    # on Φ alone (an outsider's test); a shape typed whole is refused so (h_kv a whole number of heads of width h/a)
    words = ["eval", "hybrid", "--model", "llama3-8b", "--hardware", "h100", "t=1", "p=1", "d=8", "c=1", "b=64", "m=8",
             "s=8192"]
    code, out, err = run(capsys, *words, "h=100")
    assert code == 2 and out == "" and "h/a = 100/32" in err
    # h = 2048 gives heads 64 wide: the preset's K/V width 1024 is 16 of them; 100 is no whole number of them
    assert run(capsys, *words, "h=2048")[0] == 0
    code, out, err = run(capsys, *words, "h=2048", "h_kv=100")
    assert code == 2 and "h_kv=100" in err and "width h/a = 64" in err
    # the preset's own shape typed again changes nothing
    assert run(capsys, *words, "h=4096", "h_kv=1024")[0] == 0


@pytest.mark.parametrize("argv", [
    ["plan", "--model", "llama3-8b", "--gpus", "8", "--hardware", "h100", "--batch", "64", "--tp", "2", "--tp", "4"],
    ["plan", "--model", "llama3-8b", "--model", "llama3-70b", "--gpus", "8", "--hardware", "h100", "--batch", "64"],
    ["eval", "all_reduce", "N=8", "M=8", "--dtype", "fp32", "--dtype=bf16", "--hardware", "h100"],
])
def test_an_option_given_twice_is_refused_not_the_last_kept(capsys, argv):
    # argparse kept the last (--tp 2 --tp 4 planned t = 4; an outsider's test), where KEY=VALUE words given twice are
    # refused: one rule for both
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "is given twice" in err


def test_a_predicted_nccl_tests_table_claims_no_check_it_never_ran(capsys):
    # nccl-tests' footer "Out of bounds values : 0 OK" reports its check of computed results; a prediction computed
    # none, so it says so (an outsider's test read the copied line as a fabricated check)
    code, out, err = run(capsys, "nccl-tests", "all_reduce", "--hardware", "h100", "--ranks", "8", "-b", "8", "-e", "64")
    assert code == 0 and "0 OK" not in out and "# Out of bounds values : not checked (predicted, not run)" in out


def test_nccl_tests_refuses_a_step_that_never_grows(capsys):
    # -f 1 -i 0 adds nothing to -b: nccl-tests' sizes would never reach -e; it was silently run as -f 2 (an outsider's
    # test).  -f 1 with -i steps by the bytes given; -b = -e is the one size, whatever the step
    words = ["nccl-tests", "all_reduce", "--hardware", "h100", "--ranks", "8", "-b", "8", "-e", "64"]
    code, out, err = run(capsys, *words, "-f", "1", "-i", "0")
    assert code == 2 and out == "" and "never grows" in err
    code, out, err = run(capsys, *words, "-f", "1", "-i", "8")
    assert code == 0, err
    sizes = [int(line.split()[0]) for line in out.splitlines() if line.strip() and not line.startswith("#")]
    assert sizes == [8, 16, 24, 32, 40, 48, 56, 64]
    code, out, err = run(capsys, *words[:-2], "-e", "8", "-f", "1")
    assert code == 0, err
    # 8 to 1 GiB by 1 byte is 2^30 - 7 sizes: refused, where the table stopped at 4,096 rows without a word
    code, out, err = run(capsys, *words[:-2], "-e", "1G", "-f", "1", "-i", "1")
    assert code == 2 and out == "" and "gives more than 4,096 sizes" in err
    code, out, err = run(capsys, *words[:-2], "-e", str(8 + 4095), "-f", "1", "-i", "1")     # 4,096 sizes: printed
    assert code == 0, err
    assert len([line for line in out.splitlines() if line.strip() and not line.startswith("#")]) == 4096


def test_a_throughput_below_a_token_a_second_is_not_printed_as_zero(capsys):
    # s = 2**40 tokens a sequence: 0.004 tokens/s, which ",.0f" printed as 0 beside an MFU of 93 % (an outsider's test)
    code, out, err = run(capsys, "eval", "hybrid", "--model", "llama3-8b", "--hardware", "h100", "t=1", "p=1", "d=8",
                         "c=1", "b=8", "m=1", "s=2**40")
    assert code == 0, err
    line = next(line for line in out.splitlines() if line.strip().startswith("throughput"))
    rate = float(line.split()[1])
    assert 0 < rate < 1


def test_a_typed_phi_the_shape_does_not_count_and_an_untyped_gate_are_said():
    # OLMo 2 1B's shape (h 2048, 18 layers of 16 heads, SwiGLU 5632, vocabulary 100352, untied) by hand, Llama's count:
    # per layer Q, K, V, O 4·2048² = 16,777,216, the MLP 3·2048·5632 = 34,603,008, two norms 4,096 — 51,384,320 × 18
    # = 924,917,760; the embedding and LM head 2·100352·2048 = 411,041,792; the final norm 2,048: 1,335,961,600
    shape = ["h=2048", "L=18", "a=16", "h_kv=2048", "F=5632", "V=100352", "t=1", "p=1", "d=8", "c=1", "b=8", "m=1",
             "s=4096", "framework=fsdp2", "zero=3", "embeddings=1"]
    far = symcomm_command("eval", "hybrid", "--hardware", "h100", *shape, "gated=1", "Phi=9e9")
    assert far.returncode == 0, far.stderr
    assert "Phi=9e+09 typed, where the shape typed counts Φ = 1,335,961,600 (Llama count)" in far.stderr
    near = symcomm_command("eval", "hybrid", "--hardware", "h100", *shape, "gated=1", "Phi=1.34e9")   # within 1 %
    assert near.returncode == 0 and "typed, where the shape typed counts" not in near.stderr
    # gated left at its default with an F other than GPT's 4h = 8192: counted ungated, and said so
    untyped = symcomm_command("eval", "hybrid", "--hardware", "h100", *shape)
    assert "gated=0 (not given): the MLP counted ungated" in untyped.stderr and "F=5632" in untyped.stderr
    typed = symcomm_command("eval", "hybrid", "--hardware", "h100", *shape, "gated=0")
    assert "gated=0 (not given)" not in typed.stderr


def test_a_phi_below_its_embeddings_is_refused(capsys):
    # Φ = 1e9 over Llama 3 8B's embedding and LM head, 2·V·h = 2 · 128,256 · 4,096 = 1,050,673,152 parameters, left
    # the layers −50,673,152 and DeepSpeed ZeRO-3's gathered layers −12 MiB (an outsider's test)
    words = ["eval", "hybrid", "--model", "llama3-8b", "--hardware", "h100", "t=1", "p=1", "d=8", "c=1", "s=4096",
             "b=64", "m=8", "Phi=1e9"]
    code, out, err = run(capsys, *words, "framework=deepspeed", "zero=3")
    assert code == 2 and out == "" and "2·V·h=1050673152" in err
    assert run(capsys, *words, "tied=1")[0] == 0              # one tied copy: V·h = 525,336,576 ≤ 1e9
    assert run(capsys, *words, "embeddings=0")[0] == 0        # a Φ of the layers alone
    assert run(capsys, *words[:-1], "Phi=1050673152")[0] == 0  # the embeddings exactly: layers of no parameters


def test_fsdp_no_shard_holds_its_gradients_in_the_parameters_dtype(capsys):
    # PyTorch FSDP1's NO_SHARD all-reduces the gradient and casts it to the parameter's dtype, the fp32 master
    # (torch/distributed/fsdp/_runtime_utils.py, _reduce_grad_no_shard: _cast_grad_to_param_dtype), as its sharded
    # strategies do: 4 bytes per parameter, not the 2 of the bf16 reduction (an outsider's test).  Llama 3 8B's Φ is
    # 8,030,261,248 (the preset): 32,121,044,992 bytes; FULL_SHARD over 8 GPUs an eighth of them
    words = ["eval", "hybrid", "--model", "llama3-8b", "--hardware", "h100", "t=1", "p=1", "d=8", "c=1", "s=4096",
             "b=64", "m=8", "framework=fsdp", "--json"]
    assert eval_json(capsys, *words[1:-1], "zero=0")["memory"]["gradients"] == 4 * 8_030_261_248
    assert eval_json(capsys, *words[1:-1], "zero=3")["memory"]["gradients"] == 4 * 8_030_261_248 / 8


def test_a_json_file_with_a_key_given_twice_is_refused(capsys, tmp_path):
    # json keeps the last of two equal keys: a hardware file's second "eta" won unseen (an outsider's test); refused
    # in one line, as an option given twice is
    path = tmp_path / "hw.json"
    path.write_text('{"intra": {"bytes_per_second": 450e9, "latency_s": 3e-6}, '
                    '"inter": {"bytes_per_second": 50e9, "latency_s": 1e-5}, "gpus_per_node": 8, "gpus_per_node": 4}')
    code, out, err = run(capsys, "eval", "all_reduce", "N=16", "M=1GiB", "--hardware", str(path))
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "'gpus_per_node' is given twice" in err
    path.write_text(path.read_text().replace(', "gpus_per_node": 4', ""))
    assert run(capsys, "eval", "all_reduce", "N=16", "M=1GiB", "--hardware", str(path))[0] == 0


def test_a_predicted_nccl_tests_table_says_how_far_off_it_may_be(capsys, tmp_path):
    # the prediction printed bare: a preset's alpha and beta are NCCL's cost-model constants, no measurement (they
    # miss the shipped A100 log by tens of %), a calibration's error is its leave-one-out over the log's rows
    words = ["nccl-tests", "all_reduce", "--ranks", "8", "-b", "8", "-e", "64"]
    code, out, err = run(capsys, *words, "--hardware", "a100")
    assert code == 0 and "# error: unknown: no log of this cluster was fitted" in out
    target = tmp_path / "cal.json"
    code, out, err = run(capsys, "calibrate", str(TESTS / "data" / "nccl-tests" / "a100-1node-all_reduce.log"), "-o",
                         str(target))
    assert code == 0, err
    held_out = json.loads(target.read_text())["calibration"][0]["held_out_rms_relative"]
    code, out, err = run(capsys, *words, "--hardware", str(target))
    assert code == 0 and f"# error: relative RMS {100 * held_out:.1f} % over the log's rows" in out
    code, out, err = run(capsys, *words[:3], "4", *words[4:], "--hardware", str(target))
    assert code == 0 and "# error: unknown at 4 ranks: the log was measured on 8" in out


def test_the_full_recompute_working_set_is_the_layers_own_count(capsys):
    # full recompute holds, beside the kept inputs, one layer's activations of one micro-batch as no recompute keeps
    # them (memory.recompute_working_set): it took Korthikanti's 4h MLP, 544 MiB for Mixtral's layer where the
    # layer keeps 1008 MiB (an outsider's hand count: (17h + 2k(3F_e + h))·s·b bytes).  Every Mixtral layer is MoE,
    # p = 1: the no-recompute activations over its 32 layers are one layer's
    words = ["eval", "hybrid", "--model", "mixtral-8x7b", "--hardware", "h100", "t=1", "p=1", "d=8", "e=8", "c=1",
             "s=4096", "b=64", "m=8"]
    kept = eval_json(capsys, *words[1:], "recompute=none")["memory"]["activations"]
    working = eval_json(capsys, *words[1:], "recompute=full")["memory"]["recompute"]
    assert working == pytest.approx(kept / 32, rel=1e-12)
    h, k, f_e, tokens = 4096, 2, 14336, 4096 * 1      # b/(d·m) = 1 sequence of 4,096 tokens
    # Mixtral trains without dropout and keeps K and V at its 8 query groups of 128 (h_kv = 1024): its attention
    # block 8h + 4h_kv (Korthikanti's 13h less the mask and 4(h − h_kv)), its MoE block's norm 4h, no mask
    assert working == (12 * h + 4 * 1024 + 2 * k * (3 * f_e + h)) * tokens


def test_a_node_typed_larger_than_the_parts_is_said(capsys):
    # G=1024 on h100 priced 1,024 GPUs as one NVLink domain at NVLink bandwidth, silently (an outsider's test): said;
    # the part's own G says nothing
    words = ["eval", "hybrid", "--model", "llama3-8b", "--hardware", "h100", "t=1", "p=1", "d=8", "c=1", "b=64",
             "m=8", "s=8192"]
    code, out, err = run(capsys, *words, "G=1024")
    assert code == 0 and "G=1024 above h100's 8 GPUs per node" in err
    code, out, err = run(capsys, *words, "G=8")
    assert code == 0 and "above h100's" not in err


def test_what_the_stop_67_outsiders_found(capsys):
    llama = ["eval", "hybrid", "--model", "llama3.1-8b", "--hardware", "h100", "t=1", "p=1", "d=8", "c=1", "b=16",
             "m=1", "s=8192"]
    # torchtitan's selective activation checkpointing is op-level; recompute=selective is Megatron's (the attention
    # core's scores), which under flash attention keeps what recompute=none keeps: said where the framework is fsdp2
    code, out, err = run(capsys, *llama, "framework=fsdp2", "zero=3", "recompute=selective")
    assert code == 0 and "give recompute=op for it" in err
    code, out, err = run(capsys, *llama, "recompute=selective")
    assert code == 0 and "give recompute=op for it" not in err
    # plan's micro-batch size mb= is no eval parameter: one line naming m, without the strategy's whole label
    code, out, err = run(capsys, *llama[:-2], "mb=2", "s=8192")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "unknown parameter 'mb' for hybrid" in err and "eval takes m" in err and "sp_regather=framework" not in err
    # an FP8 recipe's messages at a 4-byte --dtype: no fitted run moved them, so the fit's error is not shown
    code, out, err = run(capsys, *llama, "precision=fp8_tensor", "--dtype", "fp32")
    assert code == 0 and "off by       unknown" in out and "--dtype fp32 with precision=fp8_tensor" in err
    code, out, err = run(capsys, *llama, "precision=fp8_tensor")
    assert "off by       typically" in out
    # the step model's settings are listed beside the hybrid's options (flash attention is on by default)
    code, out, err = run(capsys, "list")
    assert "the step model's settings too" in out and " flash=1 " in out
    code, out, err = run(capsys, "list", "--json")
    assert json.loads(out)["hybrid_step_options"]["flash"] == {"default": "1", "allowed": ["0", "1"]}
    # a bandwidth without its unit reads as bytes/s: 50 B/s is refused as the slip it is, an unknown unit lists them
    ring = ["eval", "all_reduce", "N=8", "M=1GiB", "alpha=0", "gamma=0"]
    code, out, err = run(capsys, *ring, "bw=50")
    assert code == 2 and "has no rate unit" in err and "bw=50GB/s" in err
    code, out, err = run(capsys, *ring, "bw=50GBps")
    assert code == 2 and "units: B/s" in err
    # bw=5e10 (bytes/s): 2·7/8 of 2**30 bf16 elements of 2 bytes = 1.75·2**31 bytes at 5e10 B/s = 37.58 ms
    code, out, err = run(capsys, *ring, "bw=5e10")
    assert code == 0 and "37.6 ms" in out
    # compare's ranges are among the algorithms that ran at the typed M (ring is refused at M=1e9 on N=6: not a
    # multiple), said; in-network reduction is marked as needing a switch that reduces
    code, out, err = run(capsys, "compare", "all_reduce", "N=6", "M=1e9", "bw=50GB/s", "alpha=5e-6", "gamma=0")
    assert code == 0 and "of those that ran at these values (not ring" in out
    assert "in_network" in out and "needs a switch that reduces" in out
    # a layout refused for its pipeline's in-flight activations says so (Llama 3's 405B layout, t=8 p=16 without
    # recompute, runs on 80 GB under Meta's own schedule, Dubey et al. 2024 §3.3.2; Megatron's holds more)
    code, out, err = run(capsys, "eval", "hybrid", "--model", "llama3-405b", "--hardware", "h100", "t=8", "p=16",
                         "d=64", "c=1", "b=2048", "m=32", "s=8192", "sp=1", "pipeline_split=first_last",
                         "schedule=interleaved", "v=2", "L_first=3", "L_last=3")
    fits = next(line for line in out.splitlines() if line.strip().startswith("fits"))
    assert code == 0 and "NO:" in fits and "the pipeline schedule holds in flight" in fits
    # plan takes an FP8 recipe's share typed as eval does, and prices its rows as eval prices their commands
    fixed = ["--model", "llama3-8b", "--gpus", "8", "--hardware", "h100", "--batch", "64", "--seq", "4096",
             "--precision", "fp8_tensor", "--framework", "megatron", "--top", "1", "--tp", "1", "--pp", "1", "--cp", "1",
             "--micro-batch", "1", "--recompute", "full", "--json", "eta_fp8=0.5"]
    code, out, err = run(capsys, "plan", *fixed)
    assert code == 0, err
    planned = json.loads(out)
    row = planned["layouts"][0]
    assert planned["step_time_error"] is None and planned["typed"] == {"eta_fp8": 0.5}
    said = eval_json(capsys, "hybrid", "--model", "llama3-8b", "--hardware", "h100", "t=1", "p=1", "c=1", "d=8", "b=64",
                     "m=8", "s=4096", "recompute=full", "precision=fp8_tensor", "framework=megatron", "eta_fp8=0.5")
    assert row["step_time"] == pytest.approx(said["step_time"], rel=1e-9)
    # kB, the SI kilobyte: 1000 bytes, 500 bf16 elements
    code, out, err = run(capsys, "eval", "all_reduce", "N=4", "M=1kB", "--json")
    assert code == 0 and json.loads(out)["values"]["M"] == 500
    # a size typed with a unit that breaks a rule: the refusal names the elements the rule read and what was typed
    # (1 kB of fp32 is 1000 / 4 = 250 elements, which N=8 does not divide: 250 = 8·31 + 2)
    code, out, err = run(capsys, "eval", "all_reduce", "N=8", "M=1kB", "--dtype", "fp32")
    assert code == 2 and not out
    assert err.strip().endswith("M=250 (M=1kB typed: 1kB / 4 bytes per fp32 element) is not allowed: it must be a "
                                "multiple of N=8"), err
    # a missing value names the strategy by its name and the options typed, not by its ~40-option label
    code, out, err = run(capsys, "eval", "hybrid", "--model", "llama3.1-8b", "--hardware", "h100", "t=1", "p=1", "d=128",
                         "b=256", "m=1", "s=8192", "framework=fsdp2", "zero=3")
    assert code == 2 and err.startswith("symcomm: error: missing c: hybrid zero=3 framework=fsdp2 "), err
    assert "sp_regather" not in err and len(err) < 200, err
    # a typed peak or HBM bandwidth of 0 timed the step at infinity and was refused as "compute_time = inf", while the
    # grammar's own refusal of hbm=-1 said hbm takes a number from 0 (an outsider's test): 0 is refused by its name
    for word in ("hbm=0", "peak=0"):
        code, out, err = run(capsys, "eval", "hybrid", "--model", "llama3.1-8b", "--hardware", "h100", "t=1", "p=1",
                             "d=8", "c=1", "b=64", "m=8", "s=8192", word)
        assert code == 2 and f"{word} is not allowed: {word.split('=')[0]} is a rate, a number above 0" in err, err
    code, out, err = run(capsys, "plan", "--model", "llama3.1-8b", "--gpus", "8", "--hardware", "h100", "--batch", "64",
                         "--seq", "8192", "hbm=0")
    assert code == 2 and "hbm=0 is not allowed" in err, err


def test_a_strategy_message_its_ranks_do_not_divide_is_said_and_printed_to_the_element(capsys):
    # tp on N = 3 ranks of b·s·h = 1·2048·8192 = 16,777,216 elements: 4 ring all-reduces, each rank sending
    # 2·(3 − 1)/3·M = 11,184,810.67 a collective, 44,739,242.67 the forward's two; eval all_reduce refuses such an M,
    # so the strategy says its counts are mean shares, to two decimals (not 8.94785e+07)
    assert main(["eval", "tp", "N=3", "b=1", "s=2048", "h=8192", "L=1"]) == 0
    out, err = capsys.readouterr()
    assert "send         89,478,485.33 elements" in out
    assert "send 44,739,242.67 elements" in out
    assert "16,777,216 elements is not a multiple of its 3 ranks" in err
    assert main(["eval", "tp", "N=4", "b=1", "s=2048", "h=8192", "L=1"]) == 0
    assert "not a multiple" not in capsys.readouterr().err


def test_what_a_fourth_outsider_s_test_found_is_refused_in_one_line(capsys):
    # M=2**20/2*4 was read as 2**20/(2·4) = 131,072 where Python and C read (2**20/2)·4 = 2,097,152: a product after
    # '/' is refused, one factor after it is read as before (2**21·4/2 = 4,194,304 by hand)
    code, out, err = run(capsys, "eval", "all_reduce", "N=2", "M=2**20/2*4")
    assert code == 2 and "M=2**20/2*4 is not allowed: a product after '/'" in err and len(err.splitlines()) == 1
    got = eval_json(capsys, "all_reduce", "N=2", "M=2**21*4/2")
    assert got["values"]["M"] == 4 * 2**20
    # peak=989.4 (TFLOP/s, as every output prints it) read as 989.4 FLOP/s timed the step at 6.4e11 s with a plausible
    # MFU: a peak below 10^12 FLOP/s or an HBM bandwidth below 10^9 bytes/s is refused naming the unit
    layout = ["eval", "hybrid", "--model", "llama3-8b", "--hardware", "h100", "t=1", "p=1", "d=8", "c=1", "b=8", "m=1"]
    for word, unit in (("peak=989.4", "FLOP/s"), ("peak_fp8=1979", "FLOP/s"), ("hbm=3350", "bytes/s")):
        code, out, err = run(capsys, *layout, word)
        assert code == 2 and f"{word} is not allowed: {word.split('=')[0]} is in {unit}" in err, err
    code, out, err = run(capsys, "plan", "--model", "llama3-8b", "--gpus", "8", "--hardware", "h100", "--batch", "64",
                         "--peak", "989.4")
    assert code == 2 and "peak=989.4 is not allowed" in err and "write peak=989.4e12" in err, err
    # compare's G placed a flat ring's ranks on nodes of G GPUs where eval refused G: one node of 16 H100s now in both,
    # by hand 30 steps at NVLink's 3.4 µs + 2·15/16·2^21 bytes at 450 GB/s + 15/16·2^21 bytes reduced at 3/3.35 TB/s
    hand = 30 * 3.4e-6 + 2 * 15 / 16 * 2 ** 21 / 450e9 + 15 / 16 * 2 ** 21 * 3 / 3.35e12
    got = eval_json(capsys, "all_reduce", "--algorithm", "ring", "N=16", "M=2**20", "G=16", "--hardware", "h100")
    code, out, err = run(capsys, "compare", "all_reduce", "N=16", "M=2**20", "G=16", "--hardware", "h100", "--json")
    ring = next(r for r in json.loads(out)["algorithms"] if r["algorithm"] == "ring")
    assert got["time"] == pytest.approx(hand, rel=1e-12) and ring["time"] == got["time"]
    # plan --compare searches what it leaves out (v here: the interleaved schedule can win), where eval defaults it
    # (v = 1): said beside the row
    code, out, err = run(capsys, "plan", "--model", "llama3-8b", "--gpus", "16", "--hardware", "h100", "--batch", "64",
                         "--top", "1", "--compare", "t=2,p=2,d=4,c=1,mb=1,zero=1,framework=megatron,recompute=none,sp=1")
    assert code == 0 and "not given, so searched: v, e, raf)" in out, out
    # an empty G was taken as not given (the preset's nodes) and said as "nodes of  GPUs" (a second outsider)
    code, out, err = run(capsys, "eval", "all_reduce", "--algorithm", "ring", "N=16", "M=64", "--hardware", "h100", "G=")
    assert code == 2 and "G (gpus_per_node)='' is not a number" in err
    # a peak far below a GPU's that no printed unit explains is told the unit, not a wrong spelling
    code, out, err = run(capsys, *layout, "peak=9.99e11")
    assert code == 2 and "write it in FLOP/s" in err and "e11e12" not in err
    # a divisor in parentheses: the grammar has none, said so (not "a product after '/'")
    code, out, err = run(capsys, "eval", "all_reduce", "N=2", "M=2**20/(2*4)")
    assert code == 2 and "the grammar has no parentheses" in err
    # the Python API refuses an empty name as the command line does
    import symcomm
    from symcomm.base.errors import InputError
    with pytest.raises(InputError, match="hardware='' is empty"):
        symcomm.evaluate("all_reduce", algorithm="ring", N=16, M=2 ** 20, hardware="")
    # an empty option (--hardware "$HW" with HW unset) answered another question in silence: counts without a time
    for words in (("eval", "all_reduce", "N=8", "M=64", "--hardware", ""), ("eval", "all_reduce", "N=8", "M=64",
                  "--dtype", ""), ("compare", "all_reduce", "N=8", "M=64", "--hardware", "")):
        code, out, err = run(capsys, *words)
        assert code == 2 and out == "" and f"{words[-2]} '' is empty" in err and len(err.splitlines()) == 1, err


def test_a_predicted_nccl_tests_header_names_every_constant_its_formula_reads(capsys):
    # an outsider's 16-rank prediction (hierarchical, across two nodes of 8) named only the intra-node alpha and beta
    # in its header, though the inter-node pair priced half its levels; one node's ring reads the intra pair alone
    from symcomm import presets

    h100 = presets.hardware("h100")
    code, out, err = run(capsys, "nccl-tests", "all_reduce", "--hardware", "h100", "--ranks", "16", "-b", "8", "-e", "64",
                         "--algorithm", "hierarchical")
    assert code == 0, err
    header = next(line for line in out.splitlines() if line.startswith("# model:"))
    assert "all_reduce/hierarchical" in header
    assert f"alpha_inter {h100.inter.latency_s * 1e6:.4g} us" in header and "beta_inter" in header
    code, out, err = run(capsys, "nccl-tests", "all_reduce", "--hardware", "h100", "--ranks", "8", "-b", "8", "-e", "64")
    header = next(line for line in out.splitlines() if line.startswith("# model:"))
    assert "all_reduce/ring" in header and "alpha " in header and "alpha_inter" not in header


def test_nccl_tests_prices_a_multi_node_group_with_the_ring_nccl_runs_as_eval_does(capsys):
    # NCCL has no two-level all-reduce or all-gather of its own: over several nodes it runs its ring (or tree), as
    # nccl-tests' --help promises ("the calibrated one, else ring"); an outsider found the prediction switched to the
    # catalog's hierarchical form across nodes, 21-30 % slower than the ring eval prices for the same group
    for primitive in ("all_reduce", "all_gather"):
        code, out, err = run(capsys, "nccl-tests", primitive, "--hardware", "h100", "--ranks", "16", "-b", "1G",
                             "-e", "1G")
        assert code == 0, err
        assert f"# model: catalog {primitive}/ring" in out
        row = next(line for line in out.splitlines() if line.strip().startswith("1073741824"))
        time_us = float(row.split()[5])
        code, out, err = run(capsys, "eval", primitive, "N=16", "M=1GiB", "--hardware", "h100", "--dtype", "fp32",
                             "--json")
        assert code == 0, err
        assert json.loads(out)["time"] * 1e6 == pytest.approx(time_us, rel=1e-5)


def test_element_totals_of_mixed_types_say_so(capsys):
    # an outsider's find: zero=1 on d = 8 with Φ = 8·10⁹ sends (7/8)·Φ fp32 gradient elements (reduce-scatter) and
    # (7/8)·Φ bf16 parameter elements (all-gather): 14·10⁹ "elements" that are 42·10⁹ bytes (7·10⁹·4 + 7·10⁹·2), not
    # 14·10⁹ × 2; the element total is said to mix types, and --dtype gives the bytes
    words = ("eval", "hybrid", "d=8", "t=1", "p=1", "c=1", "Phi=8000000000", "b=8", "s=4096", "h=8192", "L=32", "m=1",
             "zero=1", "G=8")
    code, out, err = run(capsys, *words, "--json")
    assert code == 0, err
    got = json.loads(out)
    assert got["send"] == 14 * 10 ** 9 and got["unit"].startswith("elements of mixed types (the fp32 terms")
    assert "the totals add elements of different types" in err
    code, out, err = run(capsys, *words, "--dtype", "bf16", "--json")
    got = json.loads(out)
    assert got["send"] == 42 * 10 ** 9 and got["unit"] == "bytes" and "different types" not in err


def test_calibrate_names_the_flag_of_an_unknown_algorithm_and_a_bandwidth_bound_in_units_it_takes(capsys):
    # outsider finds: "unknown algorithm 'bruck'" named no flag; the bandwidth bound read "to 1 EB/s", a unit refused
    from conftest import ROOT

    log = str(ROOT / "tests" / "data" / "nccl-tests" / "h100-2node-all_reduce.log")
    code, out, err = run(capsys, "calibrate", log, "--algorithm", "bruck")
    assert code == 2 and err.startswith("symcomm: error: --algorithm bruck: not an algorithm of all_reduce; choose ring")
    code, out, err = run(capsys, "eval", "all_reduce", "N=8", "M=1GiB", "bw=2000000TB/s", "alpha=1e-6", "gamma=0")
    assert code == 2 and "to 1000000TB/s" in err
    code, out, err = run(capsys, "eval", "all_reduce", "N=8", "M=1GiB", "bw=1000000TB/s", "alpha=1e-6", "gamma=0")
    assert code == 0, err
