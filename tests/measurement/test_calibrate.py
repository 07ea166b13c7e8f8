"""nccl-tests logs read, calibrated and predicted (symcomm.measurement.nccl_tests, symcomm.measurement.calibrate).

Expected values come from the logs themselves (tests/data/nccl-tests/, sources in SOURCES.md):
nccl-tests' own busbw column and hand computations from a row, as each comment says.
"""

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

from symcomm.measurement import nccl_prediction, nccl_tests
from symcomm.measurement.calibrate import calibrate
from symcomm.commands.main import main
from conftest import TESTS

DATA = TESTS / "data" / "nccl-tests"
A100 = DATA / "a100-1node-all_reduce.log"
A100_2 = DATA / "a100-2node-all_reduce.log"
H100_2 = DATA / "h100-2node-all_reduce.log"


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def rows_of(path):
    return {r.size: r for r in nccl_tests.read(path)[0].rows}


# -- reading -------------------------------------------------------------------------------------

def test_the_header_gives_ranks_hosts_and_device():
    log = nccl_tests.read(A100)[0]
    assert (log.collective.name, log.ranks, log.hosts, log.gpus_per_node) == ("all_reduce", 8, 1, 8)
    assert log.device == "NVIDIA A100-SXM4-40GB"
    two = nccl_tests.read(H100_2)[0]
    # 16 "#  Rank" lines on two hosts, ztan-mig-235z and ztan-mig-gq73
    assert (two.ranks, two.hosts, two.gpus_per_node, two.nodes) == (16, 2, 8, 2)


def test_busbw_follows_nccl_tests_own_convention():
    # the 1 MiB row: 1048576 B in 76.71 µs; busbw = S/t × 2(n−1)/n = 23.92 GB/s, the log's own busbw column
    row = rows_of(A100)[1048576]
    assert row.measured.time_s == pytest.approx(76.71e-6)
    factor = nccl_tests.collective("all_reduce").factor(8)
    assert factor == pytest.approx(1.75)
    assert factor * row.size / row.measured.time_s / 1e9 == pytest.approx(23.92, abs=0.005)
    assert row.measured.busbw == pytest.approx(23.92e9)
    # in-place is kept apart: 77.73 µs
    assert row.in_place.time_s == pytest.approx(77.73e-6)


@pytest.mark.parametrize("name, n, factor", [("all_gather", 8, 7 / 8), ("reduce_scatter", 8, 7 / 8),
                                             ("alltoall", 4, 3 / 4), ("broadcast", 8, 1), ("reduce", 8, 1),
                                             ("sendrecv", 8, 1), ("all_reduce", 16, 30 / 16)])
def test_busbw_factors_of_performance_md(name, n, factor):
    # doc/PERFORMANCE.md: 2(n−1)/n all-reduce; (n−1)/n all-gather, reduce-scatter, all-to-all; 1 otherwise
    assert nccl_tests.collective(name).factor(n) == pytest.approx(factor)


def test_printed_size_and_count_as_nccl_tests_computes_them():
    # all_gather_perf -b 1M on 8 ranks, float: count = 1048576/4/8 = 32768 per rank, size = the full 1 MiB
    assert nccl_tests.collective("all_gather").buffers(1048576, 4, 8) == (1048576, 32768)
    # -b 8 on 8 ranks: 2 floats, (2/8) & ~3 = 0 per rank: nccl-tests prints size 0
    assert nccl_tests.collective("all_gather").buffers(8, 4, 8) == (0, 0)
    assert nccl_tests.collective("all_reduce").buffers(1048576, 4, 8) == (1048576, 262144)


OLD_FORMAT = """\
# nThread 1 nGpus 4 minBytes 1048576 maxBytes 4194304 step: 2(factor) warmup iters: 5 iters: 20 validation: 1
#
# Using devices
#   Rank  0 Pid  1000 on     node01 device  0 [0x07] Tesla V100-SXM2-16GB
#   Rank  1 Pid  1000 on     node01 device  1 [0x08] Tesla V100-SXM2-16GB
#   Rank  2 Pid  1000 on     node01 device  2 [0x09] Tesla V100-SXM2-16GB
#   Rank  3 Pid  1000 on     node01 device  3 [0x0a] Tesla V100-SXM2-16GB
#
#                                                     out-of-place                       in-place
#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     1048576        262144   float     sum    100.0   10.49   15.73  0e+00    101.0   10.38   15.57    N/A
     2097152        524288   float     sum    150.0   13.98   20.97  0e+00    151.0   13.89   20.83    N/A
     4194304       1048576   float     sum    250.0   16.78   25.17  0e+00    250.0   16.78   25.17    N/A
"""


def test_older_layout_without_root_with_error_column_and_na():
    log = nccl_tests.parse(OLD_FORMAT, "old.log", collective_name="all_reduce")[0]
    assert log.ranks == 4 and log.hosts == 1
    first = log.rows[0]
    assert first.root is None and first.redop == "sum"
    assert first.out_of_place.wrong == 0 and first.in_place.wrong is None
    assert first.measured.time_s == pytest.approx(100e-6)


def _headerless(path, prefix=""):
    lines = [line for line in Path(path).read_text().splitlines() if nccl_tests._dtype_at(line.split()) is not None]
    return "\n".join(prefix + line for line in lines) + "\n"


def test_headerless_log_needs_ranks_and_says_what_busbw_suggests(tmp_path, capsys):
    log = tmp_path / "cut.log"
    log.write_text(_headerless(A100))
    code, out, err = run(capsys, "calibrate", log)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    # busbw/algbw of the 8 GiB row: 235.14/134.37 = 1.75 = 2(n−1)/n → n = 8
    assert "--ranks" in err and "says 8" in err and "line 1" in err


def test_extra_leading_columns_and_no_header_give_the_same_fit(tmp_path, capsys):
    log = tmp_path / "mpirun.log"
    log.write_text(_headerless(A100, prefix="[1,0]<stdout>: "))
    code, out, _ = run(capsys, "calibrate", log, "--ranks", 8, "--collective", "all_reduce", "--json")
    assert code == 0
    fit = json.loads(out)["collectives"][0]
    whole = calibrate([str(A100)])[0]
    assert fit["ranks"] == 8
    assert fit["alpha"] == pytest.approx(whole.alpha) and fit["beta"] == pytest.approx(whole.beta)


@pytest.mark.parametrize("change, line_no, words", [
    (("  76.71 ", "  76.7x "), 31, "time"),                 # a letter inside the time of the 1 MiB row
    (("     1048576        262144     float     sum      -1    76.71   13.67   23.92      0    77.73   13.49   23.61      0",
      "     1048576        262144"), 31, "not an nccl-tests row"),   # the row cut after its count
    (("  76.71   13.67   23.92      0", "  76.71   13.67      0"), 31, "values after the type"),  # a column lost
    (("     1048576        262144", "     1048575        262144"), 31, "whole number of float"),
    (("  76.71 ", "  1e999 "), 31, "out of range"),
])
def test_malformed_logs_get_one_line_with_the_line_number(tmp_path, capsys, change, line_no, words):
    text = A100.read_text()
    assert change[0] in text
    bad = tmp_path / "bad.log"
    bad.write_text(text.replace(change[0], change[1], 1))
    code, out, err = run(capsys, "calibrate", bad)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert f"line {line_no}" in err and words in err


def test_malformed_log_through_the_installed_command(tmp_path):
    bad = tmp_path / "bad.log"
    bad.write_text(A100.read_text().replace("  76.71 ", "  7.6.71 ", 1))
    done = subprocess.run([sys.executable, "-m", "symcomm.commands.main", "calibrate", str(bad)], capture_output=True, text=True)
    assert done.returncode == 2 and "line 31" in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_a_log_without_rows_is_refused(tmp_path, capsys):
    empty = tmp_path / "empty.log"
    empty.write_text("# nThread 1 nGpus 8 minBytes 8 maxBytes 8\n# Out of bounds values : 0 OK\n")
    code, _, err = run(capsys, "calibrate", empty)
    assert code == 2 and "no nccl-tests result rows" in err


def test_a_log_given_twice_is_refused(tmp_path, capsys):
    # an outsider's `calibrate A A` fitted the one log twice without a word (calibrate-step refuses one log read by two
    # runs); a link to it is the same file
    link = tmp_path / "again.log"
    link.symlink_to(A100)
    for words in ((A100, A100), (A100, link)):
        code, out, err = run(capsys, "calibrate", *words)
        assert code == 2 and out == "" and "is given twice" in err
    # a copy under another name holds the same test row for row (the verification round's case)
    copy = tmp_path / "copy.log"
    copy.write_text(A100.read_text())
    code, out, err = run(capsys, "calibrate", A100, copy)
    assert code == 2 and out == "" and "hold the same test, row for row" in err


# -- the fit -------------------------------------------------------------------------------------

@pytest.mark.parametrize("path, largest_busbw, smallest_time, hbm", [
    (A100, 235.14e9, 32.01e-6, 2.039e12),      # the 8 GiB row's busbw column; the 64 B row's time
    (A100_2, 71.56e9, 38.75e-6, 2.039e12),
    (H100_2, 338.82e9, 135.8e-6, 3.35e12),     # the 8 B row
])
def test_fitted_bandwidth_and_latency_against_the_log(path, largest_busbw, smallest_time, hbm):
    fit = calibrate([str(path)])[0]
    assert fit.model.algorithm == "ring"
    # γ is held at the log's GPU preset's 3 / HBM bandwidth (hardware.json: A100 2.039 TB/s, H100 3.35 TB/s)
    assert fit.gamma == pytest.approx(3 / hbm, rel=1e-12)
    # the ring all-reduce's busbw tends to 1/(β + γ/2) (chapter 12: b = 2(N−1)/N·S, c = (N−1)/N·S, busbw
    # factor 2(N−1)/N), so the large-message busbw converted back is β + γ/2: within 5 %
    assert abs(1 / (fit.beta + fit.gamma / 2) / largest_busbw - 1) < 0.05
    # the α-β line at the smallest size (2(N−1)α + a negligible β term) within 25 % of its time
    smallest = min(fit.rows, key=lambda r: r["bytes"])
    assert smallest["measured_time"] == pytest.approx(smallest_time)
    assert abs(smallest["alpha_beta_time"] / smallest_time - 1) < 0.25
    # the calibrated model (with the efficiency curve) reproduces every row ≥ 1 MiB within 10 %
    for row in fit.rows:
        if row["bytes"] >= 2 ** 20:
            assert abs(row["predicted_time"] / row["measured_time"] - 1) < 0.10


def test_relative_least_squares_is_exact_on_an_exact_alpha_beta_log():
    # rows made by hand from T = 14α + 1.75·S·β with α = 2 µs, β = 1/200 GB/s (ring all-reduce, N = 8)
    alpha, beta = 2e-6, 1 / 200e9
    lines = ["# nThread 1 nGpus 8 minBytes 8 maxBytes 8589934592",
             *[f"#  Rank {r:2d} Group  0 Pid 1 on host device {r:2d} [0x00] GPU" for r in range(8)]]
    for k in range(3, 34, 2):
        size = 2 ** k
        t = 14 * alpha + 1.75 * size * beta
        algbw, busbw = size / t / 1e9, 1.75 * size / t / 1e9
        lines.append(f"{size:12d} {size // 4:12d} float sum -1 {t * 1e6:.6f} {algbw:.6f} {busbw:.6f} 0 "
                     f"{t * 1e6:.6f} {algbw:.6f} {busbw:.6f} 0")
    log = nccl_tests.with_ranks(nccl_tests.parse("\n".join(lines), "exact.log", collective_name="all_reduce")[0], None, None)
    from symcomm.measurement.calibrate import fit_log

    fit = fit_log(log)
    assert fit.alpha == pytest.approx(alpha, rel=1e-4) and fit.beta == pytest.approx(beta, rel=1e-4)
    assert all(e == pytest.approx(1, abs=1e-4) for e in fit.model.efficiency)


def test_best_algorithm_says_it_cannot_tell_linear_forms_apart():
    fit = calibrate([str(A100)], algorithm="best")[0]
    note = " ".join(fit.notes)
    assert "--algorithm best" in note and "tied" in note
    assert fit.model.algorithm == "ring"     # ties go to the default


def test_two_levels_need_a_single_node_log_beside_the_multi_node_one():
    alone = calibrate([str(A100_2)])
    assert [f.model.algorithm for f in alone] == ["ring"]
    assert "cannot separate" in " ".join(alone[0].notes)
    both = calibrate([str(A100), str(A100_2)])
    two = [f for f in both if f.model.algorithm == "hierarchical"]
    assert len(two) == 1
    held = two[0].model.times
    intra = both[0]
    assert held["alpha"] == intra.alpha and held["beta"] == intra.beta
    # the 8 GiB row: T = 2(G−1)/G·S·β + (N/G−1)/(N/G)·2·S/G·β_inter + ((G−1)/G + (N/G−1)/(N/G)/G)·S·γ,
    # γ held at the A100 preset's 3 / 2.039 TB/s — the fit's β_inter reproduces it within the 5 % the
    # bandwidth rows allow
    s, t = 8589934592, 225083e-6
    assert held["gamma"] == pytest.approx(A100_GAMMA, rel=1e-12)
    predicted = (2 * 7 / 8 * s * held["beta"] + 2 * 8 / 128 * s * held["beta_inter"] + 14 * held["alpha"]
                 + 2 * held["alpha_inter"] + (7 / 8 + 1 / 16) * s * A100_GAMMA)
    assert abs(predicted / t - 1) < 0.05


# -- the written file and the predicted table ----------------------------------------------------

def _every_other(path, tmp_path):
    text = path.read_text().splitlines()
    rows = [i for i, line in enumerate(text) if nccl_tests._dtype_at(line.split()) is not None]
    unseen = set(rows[1::2])
    sub = tmp_path / path.name
    sub.write_text("\n".join(line for i, line in enumerate(text) if i not in unseen) + "\n")
    return sub, [text[i] for i in sorted(unseen)]


@pytest.mark.parametrize("path", [A100, H100_2])
def test_held_out_rows_predicted_by_nccl_tests_from_the_written_file(path, tmp_path, capsys):
    sub, unseen = _every_other(path, tmp_path)
    written = tmp_path / "hw.json"
    code, _, _ = run(capsys, "calibrate", sub, "-o", written)
    assert code == 0
    log = nccl_tests.read(path)[0]
    lo, hi = min(r.size for r in log.rows), max(r.size for r in log.rows)
    code, out, _ = run(capsys, "nccl-tests", "all_reduce", "--hardware", written, "--ranks", log.ranks,
                       "-b", lo, "-e", hi, "-f", 2)
    assert code == 0
    predicted = {r.size: r.measured.time_s for r in nccl_tests.parse(out, "predicted", collective_name="all_reduce")[0].rows}
    measured = {r.size: r.measured.time_s for r in nccl_tests.parse("\n".join(unseen), "unseen",
                                                               collective_name="all_reduce")[0].rows}
    checked = 0
    for size, t in measured.items():
        error = abs(predicted[size] / t - 1)
        if size >= 64 * 2 ** 20:
            assert error < 0.10, (size, error)
            checked += 1
        elif size <= 64 * 2 ** 10:
            assert error < 0.25, (size, error)
            checked += 1
    assert checked >= 9    # A100: 5 rows ≤ 64 KiB and 4 ≥ 64 MiB unseen; H100: 7 and 4


def test_predicted_table_is_in_nccl_tests_layout(capsys):
    code, out, _ = run(capsys, "nccl-tests", "all_gather", "--hardware", "h100", "--ranks", 8, "-b", "1M", "-e", "4M")
    assert code == 0
    rows = [line for line in out.splitlines() if not line.startswith("#")]
    assert len(rows) == 3
    first = rows[0].split()
    # size, count (per rank: 1048576/4/8), type, redop, root, then time, algbw, busbw, #wrong twice
    assert first[:5] == ["1048576", "32768", "float", "none", "-1"] and len(first) == 13
    time_us, algbw, busbw = float(first[5]), float(first[6]), float(first[7])
    assert algbw == pytest.approx(1048576 / (time_us * 1e-6) / 1e9, abs=0.01)
    assert busbw == pytest.approx(algbw * 7 / 8, abs=0.01)
    # the preset's α-β alone: ring all-gather on one node, T = 7α + 7/8·S·β (NVLink 4: 3.4 µs, 450 GB/s)
    assert time_us == pytest.approx((7 * 3.4e-6 + 7 / 8 * 1048576 / 450e9) * 1e6, abs=0.01)
    assert re.search(r"#\s+size\s+count\s+type\s+redop\s+root\s+time\s+algbw\s+busbw\s+#wrong", out)


def test_the_hardware_file_goes_wherever_a_preset_goes(tmp_path, capsys):
    written = tmp_path / "a100.json"
    assert run(capsys, "calibrate", A100, "-o", written)[0] == 0
    data = json.loads(written.read_text())
    assert data["intra"]["bytes_per_second"] == pytest.approx(calibrate([str(A100)])[0].bandwidth)
    code, out, _ = run(capsys, "eval", "all_reduce", "N=8", "M=2**30", "--hardware", written, "--json")
    assert code == 0
    result = json.loads(out)
    # 14α + 1.75·2^30 bytes·β (bf16 by default: β per element = 2 bytes × β per byte, γ = 3/HBM of the a100 preset)
    beta, alpha = 1 / data["intra"]["bytes_per_second"], data["intra"]["latency_s"]
    gamma = 3 / data["hbm_bytes_per_second"]
    expected = 14 * alpha + 1.75 * 2 ** 30 * 2 * beta + 7 / 8 * 2 ** 30 * 2 * gamma
    assert result["time"] == pytest.approx(expected, rel=1e-9)


def test_a_bad_hardware_file_names_the_file_and_the_field(tmp_path, capsys):
    bad = tmp_path / "hw.json"
    bad.write_text(json.dumps({"intra": {"bytes_per_second": -1, "latency_s": 1e-6},
                               "inter": {"bytes_per_second": 1e9, "latency_s": 1e-6}, "gpus_per_node": 8}))
    code, out, err = run(capsys, "nccl-tests", "all_reduce", "--hardware", bad, "--ranks", 8)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and str(bad) in err and "intra/bytes_per_second" in err


def test_presets_lists_every_preset_with_sources(capsys):
    from symcomm import presets

    code, out, _ = run(capsys, "presets", "--json")
    assert code == 0
    data = json.loads(out)
    assert [h["name"] for h in data["hardware"]] == list(presets.hardware_names())
    assert [m["name"] for m in data["models"]] == list(presets.model_names())
    assert all(h["intra"]["source"] and h["intra"]["latency_source"] for h in data["hardware"])


def test_calibrate_json_shape(capsys):
    code, out, _ = run(capsys, "calibrate", A100, "--json")
    assert code == 0
    fit = json.loads(out)["collectives"][0]
    assert {"collective", "algorithm", "ranks", "alpha", "beta", "gamma", "rows"} <= set(fit)
    row = next(r for r in fit["rows"] if r["bytes"] == 1048576)
    assert {"bytes", "measured_time", "predicted_time", "measured_busbw", "predicted_busbw"} <= set(row)
    assert row["measured_time"] == pytest.approx(76.71e-6)
    assert row["measured_busbw"] == pytest.approx(23.92e9, rel=1e-3)   # the log's busbw column


def test_plot_file_is_written(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    target = tmp_path / "fit.svg"
    assert run(capsys, "calibrate", A100, "--plot", target)[0] == 0
    assert target.read_text().startswith("<?xml")


# -- what a log cannot determine: refused in one line, nothing written (issue 22) -----------------

def _log_text(rows, ranks=8, hosts=1, program="all_reduce_perf"):
    """An nccl-tests log in its own layout (header with one "#  Rank" line per rank, then size,
    count, type, redop, root, time, algbw, busbw, #wrong out-of-place and in-place) with the
    given (size in bytes, time in seconds) rows; busbw = S/t · 2(n−1)/n (doc/PERFORMANCE.md)."""
    per_host = ranks // hosts
    lines = [f"# {program}", f"# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor)"]
    lines += [f"#  Rank {r:2d} Group  0 Pid 1 on host{r // per_host} device {r % per_host:2d} [0x00] "
              "NVIDIA A100-SXM4-40GB" for r in range(ranks)]
    factor = 2 * (ranks - 1) / ranks
    for size, t in rows:
        algbw = size / t / 1e9
        side = f"{t * 1e6:.3f} {algbw:.3f} {algbw * factor:.3f} 0"
        lines.append(f"{size:12d} {size // 4:12d} float sum -1 {side} {side}")
    return "\n".join(lines) + "\n"


#: γ of the GPU _log_text names (A100-SXM4-40GB): a reduction reads two operands and writes one at the
#: HBM bandwidth, 3 / 1.555 TB/s (hardware.json, a100-40gb: the 40 GB part's HBM2, the A100 datasheet's 40 GB
#: column) — what calibrate holds for such a log, whose GPU's preset it takes as its base
A100_GAMMA = 3 / 1.555e12


def _ring(alpha, beta, n=8, gamma=A100_GAMMA):
    """Ring all-reduce on n ranks: T(S) = 2(n−1)α + 2(n−1)/n·S·β + (n−1)/n·S·γ (Patarasuk & Yuan 2009;
    chapter 2: each of the n−1 reduce-scatter steps reduces a block of S/n)."""
    return lambda size: 2 * (n - 1) * alpha + 2 * (n - 1) / n * size * beta + (n - 1) / n * size * gamma


A100_LIKE = _ring(2.3e-6, 1 / 233e9)          # about the shipped A100 log's fit: 2.3 µs, 233 GB/s
POWERS = [2 ** k for k in range(6, 34)]       # 64 B … 8 GiB, nccl-tests -b 64 -e 8G -f 2


def _refused(capsys, tmp_path, *argv):
    """Run calibrate with -o and --plot into tmp_path: exit 2, one line on stderr, nothing on
    stdout, no file written; returns the line."""
    out_file, plot_file = tmp_path / "hw.json", tmp_path / "fit.svg"
    code, out, err = run(capsys, "calibrate", *argv, "-o", out_file, "--plot", plot_file)
    assert code == 2 and out == "", (code, out, err)
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not out_file.exists() and not plot_file.exists()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []    # no temporary left
    return err


@pytest.mark.parametrize("case, rows, ranks, words", [
    # one rank: all-reduce moves nothing (busbw factor 2(1−1)/1 = 0); a local copy of 4 µs + S/1 TB/s
    ("one-rank", [(s, 4e-6 + s / 1e12) for s in POWERS], 1, "1 rank moves no data"),
    *[(f"{k}-rows", [(s, A100_LIKE(s)) for s in POWERS[:: 27 // max(k - 1, 1)][:k]], 8, "at least 5 sizes")
      for k in (1, 2, 3, 4)],
    # the four small rows (64 … 512 B) plus two more: still all latency-bound, time flat
    ("six-small-rows", [(s, A100_LIKE(s)) for s in POWERS[:6]], 8, "does not grow with size"),
    # every size twice (two runs concatenated without their headers)
    ("duplicate-sizes", [(s, A100_LIKE(s)) for s in POWERS[:8] for _ in (0, 1)], 8, "again (first on line"),
    # 1, 1.5, 2, 2.5 and 3 MiB: a 3× span cannot hold a latency- and a bandwidth-bound size
    ("no-span", [(s * 2 ** 19, A100_LIKE(s * 2 ** 19)) for s in (2, 3, 4, 5, 6)], 8, "span only 3×"),
    # 32 µs at every size: no bandwidth term anywhere
    ("flat", [(s, 32e-6) for s in POWERS], 8, "does not grow with size"),
    # only large sizes (64 MiB … 8 GiB): busbw at the smallest is already 90 % of the largest
    ("no-latency-rows", [(s, A100_LIKE(s)) for s in POWERS[20:]], 8, "α is not measured"),
])
def test_degenerate_logs_are_refused_and_nothing_is_written(tmp_path, capsys, case, rows, ranks, words):
    log = tmp_path / "in" / f"{case}.log"
    log.parent.mkdir()
    log.write_text(_log_text(rows, ranks=ranks))
    err = _refused(capsys, tmp_path, log)
    assert str(log) in err and words in err, err


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4, 5, 6, 7])
def test_random_times_are_refused(tmp_path, capsys, seed):
    import random

    draw = random.Random(seed)
    # times drawn uniformly from 10 µs to 10 ms, once in size order and once sorted (so that they grow)
    times = [draw.uniform(10e-6, 10e-3) for _ in POWERS]
    for name, series in (("random", times), ("sorted", sorted(times))):
        log = tmp_path / "in" / f"{name}.log"
        log.parent.mkdir(exist_ok=True)
        log.write_text(_log_text(list(zip(POWERS, series))))
        err = _refused(capsys, tmp_path, log)
        assert str(log) in err


def test_a_good_log_recovers_alpha_and_beta_within_the_stated_uncertainty(tmp_path, capsys):
    import random

    # T = 14α + 1.75·S·β + 0.875·S·γ (ring, N = 8; γ the A100's, which calibrate holds) at α = 3 µs,
    # β = 1/150 GB/s, each time off by a fixed pseudo-random ±2 %: the fit must give back α and β within
    # 3 of its own standard errors
    alpha, beta = 3e-6, 1 / 150e9
    draw = random.Random(22)
    rows = [(s, _ring(alpha, beta)(s) * (1 + draw.uniform(-0.02, 0.02))) for s in POWERS]
    log = tmp_path / "good.log"
    log.write_text(_log_text(rows))
    out_file = tmp_path / "hw.json"
    code, out, err = run(capsys, "calibrate", log, "--json", "-o", out_file)
    assert code == 0, err
    fit = json.loads(out, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))["collectives"][0]
    se = fit["stderr"]
    assert 0 < se["alpha"] < 0.05 * alpha and 0 < se["beta"] < 0.05 * beta
    assert abs(fit["alpha"] - alpha) <= 3 * se["alpha"] and abs(fit["beta"] - beta) <= 3 * se["beta"]
    assert fit["size_range_bytes"] == [64, 2 ** 33]
    # the RMS says which rows: the α-β line over its fitted rows and over all 28
    assert fit["all_rows"] == 28 and 3 <= fit["fit_rows"] <= 28
    assert fit["fit_rms_relative"] < 0.02 and fit["all_rows_rms_relative"] < 0.05   # noise of at most 2 %
    # the written file carries the same (schema-valid: nccl-tests reads it back)
    entry = json.loads(out_file.read_text())["calibration"][0]
    assert entry["stderr"] == se and entry["size_range_bytes"] == [64, 2 ** 33]
    code, out, err = run(capsys, "calibrate", log)
    assert code == 0
    assert "±" in out and "64 B to 8.00 GiB" in out and "over all 28 rows" in out and "rows it was fitted to" in out


def test_leave_one_out_closed_form_equals_refitting_without_each_row():
    # the definition: drop row j from the fitted rows, refit α, β by least squares in relative
    # error (numpy's lstsq, not the closed form), rebuild the efficiency curve without row j and
    # predict t_j from it (nccl_prediction.Prediction interpolates in log S, constant beyond the ends)
    import numpy as np

    from symcomm.measurement.calibrate import fit_log

    log = nccl_tests.with_ranks(nccl_tests.read(A100)[0], None, None)
    fit = fit_log(log)
    sizes = np.array([r["bytes"] for r in fit.rows], dtype=float)
    times = np.array([r["measured_time"] for r in fit.rows])
    coefs = nccl_prediction.coefficients("all_reduce", "ring", 8, sizes, 8)
    chosen = set(fit.fitted_rows)
    for j in range(len(sizes)):
        keep = [i for i in range(len(sizes)) if i != j]
        rows = [i for i in keep if i in chosen]
        design = np.column_stack([coefs["alpha"][rows] / times[rows], coefs["beta"][rows] / times[rows]])
        scale = np.linalg.norm(design, axis=0)
        a, b = np.linalg.lstsq(design / scale, np.ones(len(rows)), rcond=None)[0] / scale
        core = coefs["alpha"] * a + coefs["beta"] * b
        model = nccl_prediction.Prediction(log.collective, "ring", 8, 8, {"alpha": a, "beta": b},
                            tuple(int(s) for s in sizes[keep]), tuple(core[keep] / times[keep]))
        expected = model.time([sizes[j]])[0] / times[j] - 1
        assert fit.held_out[j] == pytest.approx(expected, rel=1e-6, abs=1e-9), j


def test_tens_of_thousands_of_rows_fit_in_linear_time():
    # 10,000 rows (nccl_tests.MAX_ROWS): the leave-one-out is one pass, not a refit per row. No clock:
    # the fit must not call the least-squares solver once per row
    import numpy as np

    from symcomm.measurement import calibrate as cal

    sizes = np.unique(np.geomspace(64, 2 ** 33, nccl_tests.MAX_ROWS).astype(int) // 4 * 4)
    rows = tuple(nccl_tests.Row(i + 1, int(s), int(s) // 4, "float", "sum", -1,
                           nccl_tests.Side(A100_LIKE(s) * (1 + 0.01 * math.sin(i)), 0.0, 0.0, 0.0), None)
                 for i, s in enumerate(sizes))
    log = nccl_tests.Log("many.log", nccl_tests.collective("all_reduce"), 8, 1, 8, (), rows)
    calls = []
    original = cal.fit_core
    try:
        cal.fit_core = lambda *a, **k: calls.append(1) or original(*a, **k)
        fit = cal.fit_log(log)
    finally:
        cal.fit_core = original
    assert len(calls) == 1 and len(fit.held_out) == len(sizes)


def test_two_levels_whose_inter_node_fit_is_not_positive_are_refused_before_writing(tmp_path, capsys):
    # a 2-node log faster than the single-node one: the two-level form's intra part alone (14α +
    # 1.75·S·β at the held α, β) already exceeds every time, so β_inter would be negative
    single, double = tmp_path / "in" / "one-node.log", tmp_path / "in" / "two-node.log"
    single.parent.mkdir()
    single.write_text(_log_text([(s, A100_LIKE(s)) for s in POWERS]))
    double.write_text(_log_text([(s, 0.9 * A100_LIKE(s)) for s in POWERS], ranks=16, hosts=2))
    assert run(capsys, "calibrate", double)[0] == 0          # alone, its flat fit is fine
    err = _refused(capsys, tmp_path, single, double)
    assert str(double) in err and "hierarchical" in err and "not a positive number" in err


def test_hierarchical_on_a_single_node_log_is_a_one_line_refusal(tmp_path, capsys):
    err = _refused(capsys, tmp_path, A100, "--algorithm", "hierarchical")
    assert "single-node log and a multi-node log" in err


def test_best_on_reduce_leaves_out_what_needs_a_segment_size(tmp_path, capsys):
    log = tmp_path / "reduce.log"
    # the all-reduce log as reduce_perf would print its columns: busbw = algbw (reduce's factor 1, doc/PERFORMANCE.md;
    # a row keeping all-reduce's 2(n - 1)/n is refused as another collective's)
    lines = []
    for line in A100.read_text().replace("all_reduce_perf", "reduce_perf").splitlines():
        tokens = line.split()
        if len(tokens) == 13 and tokens[2] == "float":      # size count type redop root, then the two sides
            tokens[7], tokens[11] = tokens[6], tokens[10]
            line = "  ".join(tokens)
        lines.append(line)
    log.write_text("\n".join(lines) + "\n")
    code, out, err = run(capsys, "calibrate", log, "--algorithm", "best")
    assert code == 0, err
    # gloo's segmented ring needs K (elements per segment), which no nccl-tests log gives
    assert "left out: ring_segmented (needs K)" in out
    err = _refused(capsys, tmp_path, log, "--algorithm", "ring_segmented")
    assert "needs K" in err


def test_base_without_optional_fields_writes_a_valid_file(tmp_path, capsys):
    base = tmp_path / "base.json"
    # the least a hardware file may be (schema: intra, inter, gpus_per_node)
    base.write_text(json.dumps({"intra": {"bytes_per_second": 1e11, "latency_s": 1e-6},
                                "inter": {"bytes_per_second": 1e10, "latency_s": 5e-6}, "gpus_per_node": 8}))
    written = tmp_path / "hw.json"
    code, _, err = run(capsys, "calibrate", A100, "--base", base, "-o", written)
    assert code == 0, err
    data = json.loads(written.read_text())
    assert "memory_bytes" not in data and "hbm_bytes_per_second" not in data
    assert run(capsys, "nccl-tests", "all_reduce", "--hardware", written, "--ranks", 8)[0] == 0


@pytest.mark.parametrize("suffix, magic", [(".svg", b"<?xml"), (".png", b"\x89PNG"), (".pdf", b"%PDF")])
def test_plot_is_written_in_the_format_its_extension_names(tmp_path, capsys, suffix, magic):
    pytest.importorskip("matplotlib")
    target = tmp_path / f"fit{suffix}"
    assert run(capsys, "calibrate", A100, "--plot", target)[0] == 0
    assert target.read_bytes().startswith(magic)     # the files' own signatures


@pytest.mark.parametrize("argv, words", [
    (("--plot", "fit.jpg"), "choose one of .svg, .png, .pdf"),
    (("--plot", ""), "--plot '': an empty file name"),
    (("-o", ""), "-o '': an empty file name"),
])
def test_bad_output_names_are_refused(tmp_path, capsys, argv, words):
    code, out, err = run(capsys, "calibrate", A100, *argv)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and words in err


def test_an_output_that_is_a_log_it_reads_is_refused(tmp_path, capsys):
    # calibrate LOG -o LOG would replace the measurement with the hardware file fitted to it
    log = tmp_path / "ar.log"
    log.write_bytes(Path(A100).read_bytes())
    for option in ("-o", "--plot"):
        target = log if option == "-o" else tmp_path / "ar.svg"
        if option == "--plot":
            pytest.importorskip("matplotlib")
            target.write_bytes(log.read_bytes())
            code, out, err = run(capsys, "calibrate", log, target, option, target)
        else:
            code, out, err = run(capsys, "calibrate", log, option, target)
        assert code == 2 and out == "" and "which this command reads" in err
    assert log.read_bytes() == Path(A100).read_bytes()


def test_too_many_log_files_are_refused(capsys):
    from symcomm.measurement.calibrate import MAX_LOG_FILES

    code, _, err = run(capsys, "calibrate", *[A100] * (MAX_LOG_FILES + 1))
    assert code == 2 and f"at most {MAX_LOG_FILES}" in err


def test_nccl_tests_flags_sizes_outside_the_calibrated_range(tmp_path, capsys):
    written = tmp_path / "hw.json"
    assert run(capsys, "calibrate", A100, "-o", written)[0] == 0
    # the log measured 64 B … 8 GiB; -b 8 -e 16G asks for 8, 16, 32 B and 16 GiB beyond it
    code, out, err = run(capsys, "nccl-tests", "all_reduce", "--hardware", written, "--ranks", 8, "-b", 8,
                         "-e", "16G", "--json")
    assert code == 0
    data = json.loads(out, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))
    assert data["calibrated_range_bytes"] == [64, 2 ** 33]
    assert data["outside_calibrated_range"] == [8, 16, 32, 2 ** 34]
    assert [r["bytes"] for r in data["rows"] if r["extrapolated"]] == [8, 16, 32, 2 ** 34]
    assert "outside the calibrated range" in err
    # inside the range: no note
    code, _, err = run(capsys, "nccl-tests", "all_reduce", "--hardware", written, "--ranks", 8, "-b", 64, "-e", "8G")
    assert code == 0 and "outside" not in err


def _old_style_file(path, alpha, beta):
    """A hardware file as calibrate wrote it before issue 22: no stderr, no size range."""
    path.write_text(json.dumps({
        "intra": {"bytes_per_second": 1e11, "latency_s": 1e-6}, "inter": {"bytes_per_second": 1e10, "latency_s": 5e-6},
        "gpus_per_node": 8,
        "calibration": [{"collective": "all_reduce", "algorithm": "ring", "ranks": 8, "gpus_per_node": 8,
                         "alpha": alpha, "beta": beta, "sizes_bytes": [64, 1024], "efficiency": [1.0, 1.0]}]}))
    return path


def test_an_old_hardware_file_still_reads_and_one_predicting_nothing_is_refused(tmp_path, capsys):
    old = _old_style_file(tmp_path / "old.json", 2e-6, 1 / 100e9)
    code, out, err = run(capsys, "nccl-tests", "all_reduce", "--hardware", old, "--ranks", 8, "-b", 64, "-e", 64)
    assert code == 0, err
    # 14α + 1.75·64·β = 28 µs + 1.12 ns
    assert float(out.splitlines()[-3 - 1].split()[5]) == pytest.approx(28.00, abs=0.01)
    # α = β = 0 (what a one-rank log used to give): every size would take 0 s
    zero = _old_style_file(tmp_path / "zero.json", 0.0, 0.0)
    code, out, err = run(capsys, "nccl-tests", "all_reduce", "--hardware", zero, "--ranks", 8)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "predicts 0 s" in err


def _hierarchical(alpha_inter, beta_inter, alpha=2.3e-6, beta=1 / 233e9, gamma=A100_GAMMA):
    """Two-level all-reduce on N = 16 ranks, G = 8 per node (reduce-scatter inside, all-reduce across,
    all-gather inside): 2(G−1)α + 2(G−1)/G·S·β + 2(N/G−1)α_inter + 2(N/G−1)/(N/G)·(S/G)·β_inter, and
    the reductions (G−1)/G·S inside and (N/G−1)/(N/G)·S/G across times γ, which at N/G = 2 is
    14α + 1.75·S·β + 2α_inter + S/8·β_inter + (7/8 + 1/16)·S·γ (as in the two-level test above)."""
    return lambda s: 14 * alpha + 1.75 * s * beta + 2 * alpha_inter + s / 8 * beta_inter + 15 / 16 * s * gamma


@pytest.mark.parametrize("alpha_inter, recovered", [(5e-6, True), (0.05e-6, False)])
def test_two_level_fit_recovers_or_refuses_alpha_inter_by_its_standard_error(tmp_path, capsys, alpha_inter,
                                                                               recovered):
    import random

    # the single-node log exact (α = 2.3 µs, β = 1/233 GB/s held), the 2-node one off by ±2 %; an
    # α_inter of 5 µs is 10 µs of a 42 µs latency row: found within 3 standard errors; one of 0.05 µs is
    # 0.1 µs, far under the 2 % noise (0.8 µs): not determined, refused
    draw = random.Random(0)
    single, double = tmp_path / "in" / "one-node.log", tmp_path / "in" / "two-node.log"
    single.parent.mkdir()
    single.write_text(_log_text([(s, A100_LIKE(s)) for s in POWERS]))
    model = _hierarchical(alpha_inter, 1 / 20e9)
    double.write_text(_log_text([(s, model(s) * (1 + draw.uniform(-0.02, 0.02))) for s in POWERS], ranks=16, hosts=2))
    if recovered:
        code, out, err = run(capsys, "calibrate", single, double, "--json")
        assert code == 0, err
        two = next(f for f in json.loads(out)["collectives"] if f["algorithm"] == "hierarchical")
        se = two["stderr"]
        assert abs(two["alpha_inter"] - alpha_inter) <= 3 * se["alpha_inter"]
        assert abs(two["beta_inter"] - 1 / 20e9) <= 3 * se["beta_inter"]
    else:
        err = _refused(capsys, tmp_path, single, double)
        assert str(double) in err and "does not determine α_inter" in err


def test_rows_scattered_off_any_line_are_refused_by_the_residual_rule():
    # the rule itself (the row bands keep a log's own rows near a line, so no log reaches it
    # alone): rows of a ring all-reduce alternately 30 % above and below T = 14α + 1.75·S·β miss
    # any line by about 30 % RMS, over the 10 % the rule allows
    import numpy as np

    from symcomm.measurement import calibrate as cal
    from symcomm.base.errors import InputError

    sizes = np.array([2.0 ** k for k in range(6, 34)])
    times = np.array([A100_LIKE(s) * (1.3 if i % 2 else 0.7) for i, s in enumerate(sizes)])
    coefs = {"alpha": np.full_like(sizes, 14.0), "beta": 1.75 * sizes}
    line = cal.fit_core(coefs, times, np.arange(len(sizes)))
    assert line.rms > cal.MAX_FIT_RMS
    log = nccl_tests.Log("scattered.log", nccl_tests.collective("all_reduce"), 8, 1, 8, (), ())
    with pytest.raises(InputError, match="not an α-β line"):
        cal._check_line(log, "ring", line)


# -- γ is counted once: the fit holds the γ the written file carries (issue 22, "no confident nonsense") --

def test_the_fit_recovers_alpha_and_beta_with_gamma_held(tmp_path):
    # an exact ring all-reduce log on 8 A100s (Patarasuk & Yuan 2009; chapter 2): T(S) = 14α + 1.75·S·β
    # + 0.875·S·γ with α = 2 µs, β = 1/300 GB/s (the link's own) and γ = 3 / 2.039 TB/s = 1.4713e-12
    # s/byte (the a100 preset's HBM).  Calibrate holds that γ, so it gives back α and β themselves.
    from symcomm.measurement.calibrate import fit_log

    alpha, beta = 2e-6, 1 / 300e9
    rows = [(s, _ring(alpha, beta)(s)) for s in POWERS]
    # times printed in µs with 3 decimals (_log_text): at most 0.0005 µs off, under 2e-5 of the smallest
    # row's 28 µs
    log = nccl_tests.with_ranks(nccl_tests.parse(_log_text(rows), "exact.log")[0], None, None)
    fit = fit_log(log)
    assert fit.gamma == pytest.approx(3 / 2.039e12, rel=1e-12) and "a100" in fit.gamma_source
    assert fit.alpha == pytest.approx(alpha, rel=1e-3) and fit.beta == pytest.approx(beta, rel=1e-4)
    # the α-β-γ line passes through every row: the efficiency is 1 everywhere
    assert all(e == pytest.approx(1, abs=1e-3) for e in fit.model.efficiency)
    # folding instead (γ = 0 held) gives β + γ/2 = 1/300e9 + 1.5/2.039e12 = 4.069e-12 s/byte: the
    # reduction inside β (0.875·S·γ = 1.75·S·γ/2), which a γ added on top would count twice
    folded = fit_log(log, held=(0.0, "folded"))
    assert folded.beta == pytest.approx(1 / 300e9 + 1.5 / 2.039e12, rel=1e-4)
    assert folded.beta == pytest.approx(4.069e-12, rel=1e-3)


def test_the_written_file_states_the_gamma_its_fit_held(tmp_path, capsys):
    log = tmp_path / "a100.log"
    log.write_text(_log_text([(s, _ring(2e-6, 1 / 300e9)(s)) for s in POWERS]))
    written = tmp_path / "hw.json"
    code, out, err = run(capsys, "calibrate", log, "-o", written)
    assert code == 0, err
    assert "γ = 3 / HBM bandwidth of a100-40gb" in out and "the link's own" in out
    data = json.loads(written.read_text())
    # the file's γ is 3 / its HBM bandwidth (the a100-40gb preset's 1.555 TB/s), and the fit held exactly that
    assert data["hbm_bytes_per_second"] == 1.555e12
    assert data["calibration"][0]["gamma_held"] == pytest.approx(3 / 1.555e12, rel=1e-12)
    assert "held" in data["source"]
    # the intra link is the fitted β, the link's own (1/300 GB/s), not β + γ/2
    assert data["intra"]["bytes_per_second"] == pytest.approx(300e9, rel=1e-4)


def test_a_gpu_without_preset_folds_the_reduction_and_the_file_says_so(tmp_path, capsys):
    # a GPU symcomm has no preset for: no HBM bandwidth, so no γ is known; the fit holds γ = 0, the
    # fitted β carries the reduction (β + γ/2 of the data), and the file's γ is 0 (no hbm field)
    alpha, beta, gamma = 2e-6, 1 / 300e9, 1e-12
    log = tmp_path / "other.log"
    log.write_text(_log_text([(s, _ring(alpha, beta, gamma=gamma)(s)) for s in POWERS])
                   .replace("NVIDIA A100-SXM4-40GB", "Some Accelerator X1"))
    written = tmp_path / "hw.json"
    code, out, err = run(capsys, "calibrate", log, "-o", written)
    assert code == 0, err
    assert "folded into β" in out
    data = json.loads(written.read_text())
    assert "hbm_bytes_per_second" not in data and "folded into β" in data["source"]
    assert data["calibration"][0]["gamma_held"] == 0
    # β + γ/2 = 1/300e9 + 0.5e-12 = 3.8333e-12 s/byte
    assert 1 / data["intra"]["bytes_per_second"] == pytest.approx(1 / 300e9 + 0.5e-12, rel=1e-4)
    # eval on that file: γ = 0, so the time is the fit's own line, 14α + 1.75·S·(β + γ/2) at S = 2^30
    # bytes of fp32 (4 bytes per element: β per element = 4 × per byte; M = 2^28 elements)
    code, out, err = run(capsys, "eval", "all_reduce", "--algorithm", "ring", "N=8", "M=1GiB", "--dtype", "fp32",
                         "--hardware", written, "--json")
    assert code == 0, err
    got = json.loads(out)
    assert got["inputs"]["gamma"]["value"] == 0
    assert got["time"] == pytest.approx(14 * alpha + 1.75 * 2 ** 30 * (beta + gamma / 2), rel=1e-3)


def _calibrated_file(tmp_path, capsys, **change):
    """A file calibrate wrote from the shipped A100 log, with top-level fields changed and each
    calibration entry's keys replaced by ``change['entry']`` (a function of the entry)."""
    written = tmp_path / "hw.json"
    assert run(capsys, "calibrate", A100, "-o", written)[0] == 0
    data = json.loads(written.read_text())
    entry = change.pop("entry", None)
    if entry:
        data["calibration"] = [entry(e) for e in data["calibration"]]
    data.update(change)
    written.write_text(json.dumps(data))
    return written, data


def test_an_old_file_without_gamma_held_reads_gamma_as_folded_and_says_so(tmp_path, capsys):
    # decided (presets.calibrated_gamma): a calibration entry that does not state the γ its fit held was
    # written by calibrate when it held γ = 0, so its β (and the links written from it) include the
    # reduction; the file's γ is 0 — that fit's own decomposition — not 3/HBM on top, and a note says so
    old, data = _calibrated_file(tmp_path, capsys, entry=lambda e: {k: v for k, v in e.items() if k != "gamma_held"})
    assert data["hbm_bytes_per_second"] == 1.555e12            # γ would be 3/HBM but for the rule
    code, out, err = run(capsys, "eval", "all_reduce", "--algorithm", "ring", "N=8", "M=1GiB", "--dtype", "fp32",
                         "--hardware", old, "--json")
    assert code == 0, err
    got = json.loads(out)
    assert got["inputs"]["gamma"]["value"] == 0 and "gamma_held" in err and "gamma = 0 for this file" in err
    assert "gamma_held" in got["inputs"]["gamma"]["source"]          # --json says it too, beside the value
    # 14α + 1.75·S·β with the file's intra link (S = 2^30 bytes): nothing added for the reduction
    alpha, beta = data["intra"]["latency_s"], 1 / data["intra"]["bytes_per_second"]
    assert got["time"] == pytest.approx(14 * alpha + 1.75 * 2 ** 30 * beta, rel=1e-12)
    # nccl-tests on the same file: its entry's γ is 0 too, so it divides that same line by e(1 GiB)
    entry = data["calibration"][0]
    efficiency = dict(zip(entry["sizes_bytes"], entry["efficiency"]))[2 ** 30]
    code, out, err = run(capsys, "nccl-tests", "all_reduce", "--hardware", old, "--ranks", 8, "-b", "1G", "-e", "1G",
                         "--json")
    assert code == 0, err
    assert json.loads(out)["rows"][0]["time"] * efficiency == pytest.approx(got["time"], rel=1e-9)
    # and such a file is no --base for a new calibration (its links hold the reduction)
    (tmp_path / "out").mkdir()
    err = _refused(capsys, tmp_path / "out", A100, "--base", old)
    assert "--base" in err and "γ" in err


@pytest.mark.parametrize("change, field", [
    # a file whose γ (3 / HBM) is not the one its fit held: the HBM bandwidth edited to 3.35 TB/s
    ({"hbm_bytes_per_second": 3.35e12}, "calibration/0/gamma_held"),
    # an entry stating another γ than the file's
    ({"entry": lambda e: {**e, "gamma_held": 1e-12}}, "calibration/0/gamma_held"),
    # the older name beside the new one, disagreeing
    ({"entry": lambda e: {**e, "gamma": 0.0}}, "calibration/0/gamma"),
])
def test_a_file_whose_gamma_is_not_the_one_its_fit_held_is_refused(tmp_path, capsys, change, field):
    bad, _ = _calibrated_file(tmp_path, capsys, **change)
    code, out, err = run(capsys, "eval", "all_reduce", "N=8", "M=1GiB", "--hardware", bad)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert f"'{field}'" in err and str(bad) in err


def test_a_file_mixing_old_and_new_entries_is_refused(tmp_path, capsys):
    # one entry states γ = 3/HBM, another (copied from an older file) none: the file's γ is 0 by the old
    # entry, which is not what the new one held
    mixed, data = _calibrated_file(tmp_path, capsys)
    old = {k: v for k, v in data["calibration"][0].items() if k != "gamma_held"}
    data["calibration"].append({**old, "collective": "reduce_scatter"})
    mixed.write_text(json.dumps(data))
    code, out, err = run(capsys, "nccl-tests", "all_reduce", "--hardware", mixed, "--ranks", 8)
    assert code == 2 and out == "" and "'calibration/0/gamma_held'" in err and "another entry" in err


def test_a_log_faster_than_its_gpus_reduction_is_refused_with_gamma_named(tmp_path, capsys):
    # busbw 3 TB/s on 8 "A100s" (in-network reduction, or the wrong GPU named): T = 14α + 1.75·S/3e12,
    # so the large-size time per byte, 1.75/3e12 = 5.8e-13 s, is under the reduction alone at the
    # A100's γ, 0.875·3/2.039e12 = 1.29e-12 s: no positive β is left once γ is held
    log = tmp_path / "in" / "fast.log"
    log.parent.mkdir()
    log.write_text(_log_text([(s, _ring(2e-6, 1 / 3e12, gamma=0)(s)) for s in POWERS]))
    err = _refused(capsys, tmp_path, log)
    assert "γ held" in err and "--base" in err and str(log) in err
    # with a --base that gives no HBM bandwidth, γ = 0 (folded) and the same log calibrates
    base = tmp_path / "base.json"
    base.write_text(json.dumps({"intra": {"bytes_per_second": 1e11, "latency_s": 1e-6},
                                "inter": {"bytes_per_second": 1e10, "latency_s": 5e-6}, "gpus_per_node": 8}))
    code, out, err = run(capsys, "calibrate", log, "--base", base)
    assert code == 0, err
    assert "folded into β" in out


def test_a_base_files_two_inter_node_links_go_on_apart(tmp_path, capsys):
    # a 1-node log calibrated over a --base file: the network is not measured, so both inter-node links are
    # the base's; a base whose flat inter has no inter_two_level passes on the mark that refuses the two-level
    # forms across nodes (a flat ring's per-step β is not the two-level form's β_inter: tests/commands/test_compare.py)
    two_node, both = tmp_path / "two-node.json", tmp_path / "both.json"
    assert run(capsys, "calibrate", A100_2, "-o", two_node)[0] == 0
    assert run(capsys, "calibrate", A100, A100_2, "-o", both)[0] == 0
    for base in (two_node, both):
        written = tmp_path / f"over-{base.name}"
        code, _, err = run(capsys, "calibrate", A100, "--base", base, "-o", written)
        assert code == 0, err
        got, given = json.loads(written.read_text()), json.loads(base.read_text())
        assert got["inter"]["bytes_per_second"] == given["inter"]["bytes_per_second"]
        assert got.get("inter_two_level", {}).get("bytes_per_second") == \
            given.get("inter_two_level", {}).get("bytes_per_second")
        code, out, err = run(capsys, "eval", "all_reduce", "--algorithm", "hierarchical", "N=16", "M=1GiB",
                             "--hardware", written)
        assert (code == 2 and "inter_two_level" in err) if base == two_node else code == 0, err


@pytest.mark.parametrize("mangle, said", [
    # nccl-tests' #wrong counts the elements its check found wrong: that row's time measures nothing
    (lambda row: row[:-1] + "5", "#wrong 5"),
    # algbw = size/time (nccl-tests doc/PERFORMANCE.md): an algbw the time does not give is a row that contradicts
    # itself (edited or mangled), whichever of the two is right
    (lambda row: " ".join(row.split()[:6] + ["999.99"] + row.split()[7:]), "is not size/time"),
])
def test_a_row_that_is_no_measurement_is_refused_in_one_line(tmp_path, capsys, mangle, said):
    rows = _log_text([(s, _ring(2e-6, 1 / 300e9)(s)) for s in POWERS]).splitlines()
    rows[-1] = mangle(rows[-1])              # the 8 GiB row (out-of-place side's algbw, in-place's #wrong)
    log = tmp_path / "mangled.log"
    log.write_text("\n".join(rows) + "\n")
    code, out, err = run(capsys, "calibrate", log)
    assert code == 2 and len(err.strip().splitlines()) == 1 and said in err and "Traceback" not in err


def _halved(text: str) -> str:
    """The log with every time halved and every bandwidth doubled: the same test, twice as fast."""
    out = []
    for line in text.splitlines():
        parts = line.split()
        if line.strip() and not line.startswith("#") and len(parts) >= 13 and parts[0].isdigit():
            parts[5], parts[9] = (f"{float(parts[i]) / 2:.1f}" for i in (5, 9))
            for i in (6, 7, 10, 11):
                parts[i] = f"{float(parts[i]) * 2:.2f}"
            line = "  ".join(parts)
        out.append(line)
    return "\n".join(out) + "\n"


def test_what_the_stop_67_outsider_found_in_calibrate(tmp_path, capsys):
    real = tmp_path / "a100.log"
    real.write_text((DATA / "a100-1node-all_reduce.log").read_text())
    fast = tmp_path / "fast.log"
    fast.write_text(_halved(real.read_text()))
    # -o and --plot naming one file: the plot would replace the hardware file
    code, out, err = run(capsys, "calibrate", real, "-o", tmp_path / "x.svg", "--plot", tmp_path / "x.svg")
    assert code == 2 and "name one file" in err and not (tmp_path / "x.svg").exists()
    # two logs of one test the file would choose between by their order: refused where they disagree (~2x here)
    code, out, err = run(capsys, "calibrate", real, fast, "-o", tmp_path / "hw.json")
    assert code == 2 and "more than 10 % apart" in err and not (tmp_path / "hw.json").exists()
    # a link twice the A100's NVLink (300 GB/s per direction, its datasheet) is said, with what to check
    code, out, err = run(capsys, "calibrate", fast)
    assert code == 0 and "above a100-40gb's NVLink datasheet" in out
    code, out, err = run(capsys, "calibrate", real)
    assert code == 0 and "NVLink datasheet" not in out          # 300.8 GB/s: within 10 % of 300
    # a base named for another GPU than the log prints
    code, out, err = run(capsys, "calibrate", real, "--base", "h100")
    assert code == 0 and "but the base hardware is h100" in out
    # --gpus-per-node against the header's one host of 8 GPUs
    code, out, err = run(capsys, "calibrate", real, "--gpus-per-node", "4")
    assert code == 2 and "the header shows 8 GPUs per host" in err
    # a log without its header: --ranks against the busbw/algbw ratio (2(n − 1)/n = 1.875 on 16 ranks), and the
    # one-node reading said in the first line
    bare = tmp_path / "bare.log"
    bare.write_text("".join(line + "\n" for line in (DATA / "h100-2node-all_reduce.log").read_text().splitlines()
                            if not line.startswith("#")))
    code, out, err = run(capsys, "calibrate", bare, "--ranks", "8")
    assert code == 2 and "ratio says 16 ranks" in err
    code, out, err = run(capsys, "calibrate", bare, "--ranks", "16")
    assert code == 0 and "ASSUMED: the log names no hosts" in out.splitlines()[0]


def _edited(tmp_path, name, edit):
    """The committed A100 all-reduce log with ``edit`` (tokens → tokens) applied to its 8 GiB row."""
    lines = []
    for line in A100.read_text().splitlines():
        tokens = line.split()
        if tokens[:1] == ["8589934592"]:
            line = "  ".join(edit(tokens))
        lines.append(line)
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_row_whose_columns_contradict_the_collective_is_refused(tmp_path, capsys):
    # an outsider's edits of this log each passed: nccl-tests prints busbw = algbw × the collective's factor
    # (2(n - 1)/n = 1.75 for all-reduce on 8 ranks, doc/PERFORMANCE.md) and count = size / the type's bytes
    tenfold = _edited(tmp_path, "busbw.log", lambda t: t[:7] + [f"{10 * float(t[7]):.2f}"] + t[8:])
    assert "busbw 2351.40 GB/s is not algbw 134.37 × all_reduce's factor 1.75 at 8 ranks" in _refused(
        capsys, tmp_path, tenfold)
    halved = _edited(tmp_path, "count.log", lambda t: t[:1] + [str(int(t[1]) // 2)] + t[2:])
    assert "count 1073741824 of float (4 bytes) is not size 8589934592 / 4" in _refused(capsys, tmp_path, halved)
    # the whole log without its program line, read as an all-gather: its counts are not per rank, and its busbw is
    # all-reduce's (β was fitted at half the link's)
    bare = tmp_path / "bare.log"
    bare.write_text("\n".join(x for x in A100.read_text().splitlines() if "all_reduce_perf" not in x) + "\n")
    said = _refused(capsys, tmp_path, bare, "--collective", "all_gather")
    assert "as all_gather_perf prints it" in said


def test_a_collective_priced_on_links_fitted_to_another_s_log_says_so(tmp_path, capsys):
    # an outsider's all_gather table from a file calibrated on the all-reduce log said the links were "the hardware's
    # own values (a preset's: NCCL's cost-model constants and datasheet bandwidths), not a measurement"
    written = tmp_path / "hw.json"
    code, _, err = run(capsys, "calibrate", A100, "-o", written)
    assert code == 0, err
    code, out, err = run(capsys, "nccl-tests", "all_gather", "--hardware", written, "--ranks", "8")
    assert code == 0, err
    assert "were fitted on another log (all_reduce/ring on 8 ranks" in out + err
    assert "NCCL's cost-model constants" not in out + err


def test_a_row_the_reader_cannot_read_is_said_not_dropped(tmp_path, capsys):
    # an outsider's 8 GiB row with its count printed 2.147e+09 was passed over: the fit ran on the other 27 rows and
    # said it was valid to 4 GiB (README: a row it cannot read is reported with its line number)
    sci = _edited(tmp_path, "sci.log", lambda t: t[:1] + ["2.147e+09"] + t[2:])
    assert "line 44: not an nccl-tests row: '8589934592 2.147e+09 float" in _refused(capsys, tmp_path, sci)
