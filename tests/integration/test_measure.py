"""symcomm measure / validate: the kernel's counters, a real gloo group of 2 ranks, the CLI."""

import json
import os
import socket
import threading
from pathlib import Path

import pytest

from symcomm.commands.main import main
from symcomm.measurement.measure import Progress, predict_op, tcp_bytes_sent
from symcomm.measurement.predict import rows_from
from symcomm.collectives.profiles import GLOO

from conftest import ROOT

DATA = ROOT / "derivations" / "data" / "gloo_measurements.json"

# torch (the [measure] extra) is optional: the tests that need it are marked `torch`, skipped on a user's
# machine without it (the README's `python -m pytest` must pass there) and failed in CI (tests/conftest.py)


def test_tcp_info_counts_exactly_the_payload_sent():
    server = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(server.getsockname(), timeout=10)
    peer, _ = server.accept()
    got = []
    reader = threading.Thread(target=lambda: got.append(len(peer.recv(12345, socket.MSG_WAITALL))))
    reader.start()
    before, sockets = tcp_bytes_sent()
    client.sendall(b"x" * 12345)
    reader.join(timeout=10)
    after, _ = tcp_bytes_sent()
    for s in (client, peer, server):
        s.close()
    assert got == [12345] and sockets >= 2
    assert after - before == 12345


def test_prediction_of_one_ring_all_reduce():
    pred = predict_op(GLOO, "all_reduce", 4, 2 ** 20)
    # 4 MiB: 8 segments of 512 KiB, 12 sent and 12 received per rank, 96 + 48 bytes each
    assert pred["predicted"] == [6 * 2 ** 20 + 12 * 144] * 4
    assert pred["model_payload"]["busiest"] == 6 * 2 ** 20


def test_progress_bar_goes_to_its_stream(capsys):
    import io
    stream = io.StringIO()
    bar = Progress(stream)
    bar(0, 2, "N=2")
    bar(1, 2, "N=2")
    bar(2, 2, "N=2")
    bar.close()
    assert "2/2" in stream.getvalue() and stream.getvalue().endswith("\n")
    assert capsys.readouterr() == ("", "")     # nothing on the process's own streams


def test_the_sweep_reports_progress_to_its_caller_and_prints_nothing(capsys, monkeypatch):
    # issue 23, item 4: the library returns, the command draws; a stand-in group (no torch) ticks once
    # per plan item, so 2 ranks x (1 primitive x 1 size + 0 steps) = 1 item: calls (0 of 1) then (1 of 1)
    def group(n, plan, timeout, progress=None):
        for _ in plan:
            progress()
        return {item: [0] * n for item in plan}, [0] * n

    monkeypatch.setattr(measure, "run_group", group)
    calls = []
    measure.sweep(ranks=(2,), sizes=(1024,), primitives=("all_reduce",), steps=(),
                  progress=lambda *a: calls.append(a))
    assert calls == [(0, 1, "N=2"), (1, 1, "N=2")]
    assert capsys.readouterr() == ("", "")


@pytest.mark.parametrize("argv, word", [
    (["measure", "--ranks", "9"], "at most 8"),
    (["measure", "--ranks", "1"], "ranks"),
    (["measure", "--sizes", "2**24"], "2**23"),
    (["measure", "--primitives", "allreduce"], "allreduce"),
    (["validate", "--backend", "nccl"], "only gloo"),
    (["validate", "--timeout", "0"], "timeout"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, argv, word):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert word in err and err.count("\n") == 1


@pytest.mark.skipif(not DATA.exists(), reason="no committed measurement file")
def test_validate_from_file_and_a_miss_names_primitive_n_m(capsys, tmp_path):
    assert main(["validate", "--from", str(DATA)]) == 0
    capsys.readouterr()
    saved = json.loads(DATA.read_text())
    row = next(r for r in saved["rows"] if r["name"] == "all_reduce" and r["N"] == 3)
    row["measured"][0] += 4096
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(saved))
    assert main(["validate", "--from", str(bad)]) == 1
    err = capsys.readouterr().err
    assert f"all_reduce N=3 M={row['M']}" in err


@pytest.mark.torch
def test_measure_two_gloo_ranks(capsys):
    code = main(["validate", "--ranks", "2", "--sizes", "2**10,3000", "--steps", "ddp,fsdp",
                 "--json", "--no-progress", "--timeout", "100"])
    out = json.loads(capsys.readouterr().out)
    misses = [r for r in out["rows"] if not r["matched"]]
    assert code == 0, misses
    assert out["count"] == 8 * 2 + 2
    names = {r["name"] for r in out["rows"]}
    assert {"all_reduce", "reduce_scatter", "ddp", "fsdp"} <= names
    import torch    # the report names the torch the ranks ran (read from its distribution, not imported there)
    assert out["torch"] == torch.__version__


# -- hardening (issue 10): options, --output, --from files, sockets, Ctrl-C ---------------------

import signal
import subprocess
import sys
import time

import symcomm.measurement.measure as measure


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("symcomm: error: "), err
    return err


@pytest.fixture
def no_sweep(monkeypatch):
    """symcomm.measurement.measure.sweep replaced by a recorder: a test fails loudly if measuring starts."""
    calls = []

    def fake(**kwargs):
        calls.append(kwargs)
        raise AssertionError("the measurement started before the options were checked")

    monkeypatch.setattr(measure, "sweep", fake)
    return calls


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0", "86401", "", "1e400", "3 s"])
def test_a_bad_timeout_is_refused_before_measuring(capsys, no_sweep, value):
    assert main(["measure", "--ranks", "2", "--sizes", "1024", "--no-progress", f"--timeout={value}"]) == 2
    assert "--timeout" in _one_error_line(capsys)
    assert no_sweep == []


@pytest.mark.parametrize("argv, words", [
    (["--ranks", "2,9"], ["--ranks 9", "at most 8"]),
    (["--ranks", "0"], ["--ranks 0", "at least 2"]),
    (["--ranks", "2.5"], ["--ranks", "whole number"]),
    (["--ranks", "2,,3"], ["--ranks"]),
    (["--ranks", ",".join(["2"] * 65)], ["--ranks", "at most 64 values"]),
    (["--sizes", "0"], ["--sizes 0", "at least 1"]),
    (["--sizes", "2**23+1"], ["--sizes"]),
    (["--sizes", "8388609"], ["--sizes 8388609", "2**23"]),
    (["--sizes", "2**1000000"], ["--sizes"]),
    (["--steps", "zero9"], ["--steps", "zero9"]),
])
def test_bad_ranks_sizes_steps_are_one_line(capsys, no_sweep, argv, words):
    assert main(["measure", "--no-progress", *argv]) == 2
    err = _one_error_line(capsys)
    assert all(w in err for w in words), err
    assert no_sweep == []


def test_good_options_reach_the_sweep_parsed(capsys, monkeypatch):
    seen = {}

    def fake(**kwargs):
        seen.update(kwargs)
        return []

    monkeypatch.setattr(measure, "sweep", fake)
    # the options are parsed before torch is needed: a machine without torch checks them too (issue 23, item 7)
    monkeypatch.setattr(measure, "torch_installed", lambda: True)
    assert main(["measure", "--ranks", "3,2,3", "--sizes", "2**10,3*2**10", "--timeout", "5/2",
                 "--primitives", "all_reduce", "--steps", "none", "--json", "--no-progress"]) == 0
    assert seen["ranks"] == (3, 2) and seen["sizes"] == (1024, 3072)
    assert seen["timeout"] == 2.5 and isinstance(seen["timeout"], float)
    assert seen["primitives"] == ("all_reduce",) and seen["steps"] == ()
    assert json.loads(capsys.readouterr().out)["count"] == 0


def test_without_torch_measure_is_one_line_after_the_options_are_checked(capsys, no_sweep, monkeypatch):
    # torch made unfindable (as on a machine without the [measure] extra), whether or not it is installed
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    assert main(["measure", "--ranks", "2,9", "--no-progress"]) == 2      # the options first: 9 > 8 ranks
    assert "--ranks 9" in _one_error_line(capsys)
    assert main(["measure", "--ranks", "2", "--sizes", "1024", "--no-progress"]) == 2
    err = _one_error_line(capsys)
    assert "torch is not installed" in err and "--from" in err
    assert no_sweep == []


def test_output_into_a_missing_folder_fails_before_measuring(capsys, no_sweep, tmp_path):
    target = tmp_path / "missing" / "out.json"
    assert main(["measure", "--ranks", "2", "--sizes", "1024", "--no-progress", "--output", str(target)]) == 2
    err = _one_error_line(capsys)
    assert "--output" in err and str(target) in err and "does not exist" in err
    assert no_sweep == [] and not target.parent.exists()


@pytest.mark.parametrize("kind", ["folder", "link", "fifo"])
def test_output_that_is_not_a_regular_file_fails_before_measuring(capsys, no_sweep, tmp_path, kind):
    target = tmp_path / "out.json"
    if kind == "folder":
        target.mkdir()
    elif kind == "link":
        (tmp_path / "real.json").write_text("keep")
        target.symlink_to(tmp_path / "real.json")
    else:
        os.mkfifo(target)
    assert main(["validate", "--no-progress", "--output", str(target)]) == 2
    assert "--output" in _one_error_line(capsys)
    assert no_sweep == []
    if kind == "link":
        assert (tmp_path / "real.json").read_text() == "keep"


@pytest.mark.skipif(not DATA.exists(), reason="no committed measurement file")
def test_output_is_a_regular_file_under_the_umask(capsys, tmp_path):
    target = tmp_path / "out.json"
    old = os.umask(0o027)
    try:
        assert main(["validate", "--from", str(DATA), "--json", "--output", str(target)]) == 0
        printed = json.loads(capsys.readouterr().out)
        # a new file: 0666 minus the umask 027
        assert target.stat().st_mode & 0o777 == 0o640
        os.chmod(target, 0o600)
        assert main(["validate", "--from", str(DATA), "--json", "--output", str(target)]) == 0
    finally:
        os.umask(old)
    assert json.loads(target.read_text()) == printed
    # replaced: the file keeps the bits its owner gave it, not 0666 minus the umask
    assert target.stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def _row(**fields):
    row = {"kind": "op", "name": "all_reduce", "N": 2, "M": 1024, "measured": [4672, 4672]}
    row.update(fields)
    return row


@pytest.mark.parametrize("text, words", [
    pytest.param('{"rows": 5}', ["field 'rows'", "array"], id="rows-not-an-array"),
    pytest.param("[]", ["top level", "object"], id="not-an-object"),
    pytest.param("{}", ["rows", "required"], id="no-rows"),
    pytest.param(json.dumps({"rows": [_row(N="2")]}), ["field 'rows/0/N'", "integer"], id="string-N"),
    pytest.param(json.dumps({"rows": [_row(N=10_000_000)]}), ["field 'rows/0/N'", "64"], id="N-ten-million"),
    pytest.param(json.dumps({"rows": [_row(N=1, measured=[0])]}), ["field 'rows/0/N'"], id="N-one"),
    pytest.param(json.dumps({"rows": [_row(M=0)]}), ["field 'rows/0/M'"], id="M-zero"),
    pytest.param(json.dumps({"rows": [_row(M=2 ** 40 + 1)]}), ["field 'rows/0/M'"], id="M-above-2**40"),
    pytest.param(json.dumps({"rows": [_row(kind="step", name="zero3", Phi=294912)]}),
                 ["field 'rows/0/name'", "zero3"], id="unknown-step"),
    pytest.param(json.dumps({"rows": [_row(kind="step", name="ddp")]}), ["field 'rows/0'", "Phi"],
                 id="step-without-Phi"),
    pytest.param(json.dumps({"rows": [_row(name="allreduce")]}), ["field 'rows/0/name'", "allreduce"],
                 id="unknown-primitive"),
    pytest.param(json.dumps({"rows": [_row(kind="OP")]}), ["field 'rows/0/kind'"], id="unknown-kind"),
    pytest.param(json.dumps({"rows": [_row(measured=[1, -1])]}), ["field 'rows/0/measured/1'"], id="negative-bytes"),
    pytest.param(json.dumps({"rows": [_row(measured="4672")]}), ["field 'rows/0/measured'"],
                 id="measured-not-an-array"),
    pytest.param(json.dumps({"rows": [_row(bytes_per_element=2)]}), ["field 'rows/0/bytes_per_element'"],
                 id="bytes-per-element-2"),
    # checked in code: the schema cannot relate two fields
    pytest.param(json.dumps({"rows": [_row(N=3, M=1023)]}), ["field 'rows/0/measured'", "N=3"],
                 id="measured-not-N-values"),
    pytest.param(json.dumps({"rows": [_row(kind="step", name="ddp", Phi=1000)]}), ["field 'rows/0/Phi'", "294912"],
                 id="Phi-of-another-model"),
    # a prediction that would loop for minutes: 64 ranks × 2**22 segments of 1 MiB
    pytest.param(json.dumps({"rows": [_row(N=64, M=2 ** 40, measured=[0] * 64)]}), ["field 'rows/0/M'"],
                 id="prediction-too-long"),
    # all-gather needs whole blocks: M a multiple of N
    pytest.param(json.dumps({"rows": [_row(name="all_gather", N=3, M=1000, measured=[0, 0, 0])]}),
                 ["field 'rows/0/M'"], id="M-not-a-multiple-of-N"),
    pytest.param('{"rows": [{"kind": "op", "name": "all_reduce", "N": 2, "M": NaN, "measured": [1, 2]}]}', ["NaN"],
                 id="NaN"),
    pytest.param('{"rows": [], "x": Infinity}', ["Infinity"], id="Infinity"),
    pytest.param('{"rows": ' + "[" * 40 + "]" * 40 + "}", ["nested deeper"], id="nested-40-deep"),
    pytest.param('{"rows": [', ["not valid JSON"], id="truncated-JSON"),
    pytest.param(b"\xff\xfe{}", ["UTF-8"], id="not-UTF-8"),
])
def test_a_bad_measurement_file_is_one_line_naming_file_and_field(capsys, tmp_path, text, words):
    path = tmp_path / "bad.json"
    (path.write_bytes if isinstance(text, bytes) else path.write_text)(text)
    assert main(["validate", "--from", str(path)]) == 2
    err = _one_error_line(capsys)
    assert "--from" in err and str(path) in err and all(w in err for w in words), err


@pytest.mark.parametrize("kind", ["/dev/zero", "fifo", "folder", "missing", "large"])
def test_from_reads_only_a_regular_file_of_at_most_64_mib(capsys, tmp_path, kind):
    if kind == "/dev/zero":
        path = "/dev/zero"
    else:
        path = str(tmp_path / "m.json")
        if kind == "fifo":
            os.mkfifo(path)        # opened without waiting for a writer, then refused
        elif kind == "folder":
            os.mkdir(path)
        elif kind == "large":
            with open(path, "wb") as fh:
                fh.truncate(64 * 1024 * 1024 + 1)
    assert main(["validate", "--from", path]) == 2
    err = _one_error_line(capsys)
    assert "--from" in err and path in err


@pytest.mark.skipif(not DATA.exists(), reason="no committed measurement file")
def test_the_committed_measurement_file_satisfies_the_schema():
    from symcomm.base.inputs import check

    saved = json.loads(DATA.read_text())
    assert check(saved, "measurement", "data") is saved
    # a file of whole numbers written as 2.0 (JSON Schema counts them as integers) validates too
    row = saved["rows"][0]
    row["N"] = float(row["N"])
    assert rows_from(saved)[0].n == 2 and rows_from(saved)[0].matched


def _listening() -> dict:
    """{inode: (address, port)} of the LISTEN sockets in /proc/net/tcp and tcp6."""
    out = {}
    for name, family in (("/proc/net/tcp", socket.AF_INET), ("/proc/net/tcp6", socket.AF_INET6)):
        try:
            lines = Path(name).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] != "0A":
                continue
            address, port = fields[1].split(":")
            raw = bytes.fromhex(address)
            raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))  # host-order words
            out[fields[9]] = (socket.inet_ntop(family, raw), int(port, 16))
    return out


def _socket_inodes_of_descendants(root: int) -> set:
    """The socket inodes open in the processes below ``root`` (the ranks are the rank server's children)."""
    return set().union(*[_socket_inodes_of(pid) for pid in _descendants(root)])


def _socket_inodes_of(pid: int) -> set:
    found = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
            if link.startswith("socket:["):
                found.add(link[8:-1])
    except OSError:
        pass
    return found


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="Linux /proc only")
@pytest.mark.torch
def test_no_socket_listens_beyond_loopback_while_validating(capsys, monkeypatch):
    import ipaddress

    # a caller's environment must not move gloo off loopback: name an interface with a route
    try:
        routed = [line.split()[0] for line in Path("/proc/net/route").read_text().splitlines()[1:]]
    except OSError:
        routed = []
    monkeypatch.setenv("GLOO_SOCKET_IFNAME", next((name for name in routed if name != "lo"), "eth0"))
    before = set(_listening())
    seen, stop = {}, threading.Event()

    def poll():
        while not stop.is_set():
            new = {k: v for k, v in _listening().items() if k not in before and k not in seen}
            if new:
                ours = _socket_inodes_of_descendants(os.getpid())
                seen.update({k: v for k, v in new.items() if k in ours})
            time.sleep(0.005)

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    try:
        # three sizes, not one: the ranks' listeners live while they measure, and one 1024-element size on forked
        # ranks left a window a poller starved of CPU (a loaded 2-core run) once missed altogether
        code = main(["validate", "--ranks", "2", "--sizes", "2**10,2**16,2**20", "--primitives", "all_reduce",
                     "--steps", "none", "--no-progress", "--timeout", "100"])
    finally:
        stop.set()
        poller.join()
    assert code == 0, capsys.readouterr()
    wide = [v for v in seen.values() if not ipaddress.ip_address(v[0]).is_loopback]
    assert wide == [], f"listening beyond loopback: {wide}"
    # the poller saw the ranks' own (gloo) listeners, on loopback: it was looking
    assert seen, "no listener of the ranks was seen at all"
    assert os.environ["GLOO_SOCKET_IFNAME"] != "lo"   # the parent's environment is left as it was


def _stat(pid: int):
    """(parent, start time) of the live (not zombie) process ``pid``, else None."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] == "Z" else (int(fields[1]), fields[19])


def _processes() -> dict:
    """{pid: (parent, start time)} of every live process."""
    return {int(pid): stat for pid in os.listdir("/proc") if pid.isdigit() and (stat := _stat(int(pid)))}


def _descendants(root: int) -> set:
    table, found, frontier = _processes(), set(), {root}
    while frontier:
        frontier = {pid for pid, (parent, _) in table.items() if parent in frontier} - found
        found |= frontier
    return found


def _is_rank_server(pid: int) -> bool:
    try:
        return b"multiprocessing.forkserver" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _measurement_of(parent: int) -> tuple[dict, dict]:
    """({pid: start time} of the rank server ``parent`` started, {pid: start time} of the ranks it forked): the
    ranks are the server's children (symcomm.measurement.rank_server), not ``parent``'s."""
    table = _processes()
    servers = {pid: start for pid, (up, start) in table.items() if up == parent and _is_rank_server(pid)}
    ranks = {pid: start for pid, (up, start) in table.items() if up in servers}
    return servers, ranks


def _survivors(processes: dict, within: float) -> dict:
    """The processes (pid → start time) still running after ``within`` seconds of waiting."""
    deadline = time.monotonic() + within
    left = dict(processes)
    while left and time.monotonic() < deadline:
        left = {pid: start for pid, start in left.items() if (_stat(pid) or (None, None))[1] == start}
        time.sleep(0.05)
    return left


def _wait_for_ranks(proc, count: int) -> tuple[dict, dict]:
    """(the rank server, its ranks) of a measurement once ``count`` ranks run (two minutes at most)."""
    server: dict = {}
    ranks: dict = {}
    deadline = time.monotonic() + 120
    while len(ranks) < count and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
        server, ranks = _measurement_of(proc.pid)
    assert len(ranks) == count, "the ranks did not start"
    assert len(server) == 1, f"the ranks are not forked from one rank server: {server}"
    return server, ranks


@pytest.fixture
def short_tmp():
    """A TMPDIR short enough for the rank server's socket name (pytest's own folders under xdist are not:
    measure._context spawns the ranks then, tested below)."""
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="symcomm-test-", dir="/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_a_temporary_folder_too_long_for_the_servers_socket_spawns_the_ranks(monkeypatch):
    import tempfile

    # Python 3.11's fork server names its socket TMPDIR/pymp-XXXXXXXX/listener-XXXXXXXX: 32 bytes after TMPDIR, at
    # most 107 in all (Linux sun_path[108] with its NUL)
    monkeypatch.setattr(tempfile, "gettempdir", lambda: "/" + "t" * 74)           # 75 + 32 = 107: fits
    assert measure._context().get_start_method() == "forkserver"
    monkeypatch.setattr(tempfile, "gettempdir", lambda: "/" + "t" * 75)           # 108: does not
    assert measure._context().get_start_method() == "spawn"


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="Linux /proc only")
@pytest.mark.parametrize("after", [0.2, 2.5], ids=["while-ranks-start", "while-measuring"])
@pytest.mark.torch
def test_ctrl_c_prints_one_line_and_leaves_no_rank_running(short_tmp, after):
    scratch = short_tmp
    env = {**os.environ, "TMPDIR": str(scratch), "PYTHONWARNINGS": "ignore"}
    # two groups (N=2, then N=3) at the default sizes (up to 2**23) and steps: many seconds of measuring after the
    # first ranks start (forked from their server, they start at once: 1024 alone ended within 2.5 s)
    proc = subprocess.Popen([sys.executable, "-m", "symcomm.commands.main", "measure", "--ranks", "2,3",
                             "--no-progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, env=env)
    try:
        _wait_for_ranks(proc, 2)
        time.sleep(after)
        # the ranks running when Ctrl-C comes, and their server: between the two groups (N=2 done, N=3 not yet
        # forked) none runs for a moment, so look again until some do (a loaded machine lands there)
        server, ranks = _measurement_of(proc.pid)
        deadline = time.monotonic() + 30
        while not ranks and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
            server, ranks = _measurement_of(proc.pid)
        assert ranks and server and proc.poll() is None, "the measurement ended before Ctrl-C"
        os.killpg(proc.pid, signal.SIGINT)    # what the terminal does on Ctrl-C
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert "Traceback" not in err and "_worker" not in err and "multiprocessing" not in err, err
    assert [line for line in err.splitlines() if line.strip()] == ["symcomm: interrupted"], err
    assert proc.returncode == 130 and out == ""
    left = _survivors({**server, **ranks}, within=10)
    assert left == {}, f"ranks (or their server) still running after Ctrl-C: {sorted(left)}"
    assert sorted(scratch.glob("symcomm-*")) == [], "the rendezvous folder was left behind"


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="Linux /proc only")
@pytest.mark.torch
def test_the_ranks_die_with_a_killed_parent(short_tmp):
    env = {**os.environ, "TMPDIR": str(short_tmp)}   # the rendezvous folder a SIGKILL leaves behind
    processes: dict = {}
    # the default sizes (up to 2**23) and steps: many seconds of work left when the parent dies
    proc = subprocess.Popen([sys.executable, "-m", "symcomm.commands.main", "measure", "--ranks", "2", "--no-progress"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, env=env)
    try:
        server, ranks = _wait_for_ranks(proc, 2)
        processes = {**server, **ranks}
        # once every rank has a socket (gloo's: its worker runs, past asking to die with its server) freeze them: a
        # rank cannot finish its work and exit by itself meanwhile
        deadline = time.monotonic() + 60
        while not all(_socket_inodes_of(pid) for pid in ranks) and time.monotonic() < deadline:
            time.sleep(0.02)
        for pid in ranks:
            os.kill(pid, signal.SIGSTOP)
        proc.kill()             # SIGKILL: no cleanup code of the parent runs
        proc.wait()
        left = _survivors(processes, within=3)
        assert left == {}, f"ranks (or their server) outlived their killed parent: {sorted(left)}"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid, start in processes.items():
            if (_stat(pid) or (None, None))[1] == start:
                os.kill(pid, signal.SIGKILL)


def test_the_rank_server_module_acts_only_in_the_server_its_parent_named():
    """rank_server dies with its parent only in a process whose parent named itself (measure._start): the
    parent, a test or a spawned rank importing it are left alone."""
    from symcomm.measurement import rank_server

    code = "import os, symcomm.measurement.rank_server as r; print(r.SERVER == os.getpid(), r.SERVER is None)"
    named = {**os.environ, rank_server.PARENT_VARIABLE: str(os.getpid())}   # this process is the child's parent
    other = {**os.environ, rank_server.PARENT_VARIABLE: str(os.getppid())}  # a grandparent: not the child's parent
    answers = [subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
               for env in (named, other)]
    assert answers == ["True False\n", "False True\n"]
    assert rank_server.SERVER is None   # imported here, in the test's own process: nothing


class _FakeRank:
    """A started rank for measure._stop: join() can be interrupted like a real wait."""

    def __init__(self, pid, interrupt=False):
        self.pid, self.exitcode, self.interrupt, self.killed = pid, None, interrupt, False

    def join(self, timeout=None):
        if self.interrupt and not self.killed:
            self.interrupt = False
            raise KeyboardInterrupt
        if self.killed:
            self.exitcode = -9

    def kill(self):
        self.killed = True


def test_ctrl_c_while_waiting_for_finished_ranks_still_kills_them_all():
    ranks = [_FakeRank(10, interrupt=True), _FakeRank(11), _FakeRank(None)]   # the last never started
    with pytest.raises(KeyboardInterrupt):
        measure._stop(ranks, finished=True)
    assert [r.killed for r in ranks] == [True, True, False]


def test_an_unfinished_run_kills_every_rank_without_waiting():
    ranks = [_FakeRank(10), _FakeRank(11)]
    measure._stop(ranks, finished=False)
    assert all(r.killed and r.exitcode == -9 for r in ranks)


@pytest.mark.torch
def test_gloo_reduce_over_sends_above_two_segments_per_rank(capsys):
    # gloo/reduce.cc (torch 2.13): segments of ≤ 1 MiB, numSegments rounded up to a multiple of N,
    # sends in all but the last two of numSegments iterations (none of an empty segment), then each
    # rank's chunk of numSegments/N segments goes to the root. Hand count, fp32, M = 2**22 (16 MiB):
    #   N = 2: 16 segments, 8 a chunk: 14 sent in the loop + an 8 MiB chunk = 22 MiB = 1.375 M
    #   N = 3 (M rounded down to 2**22 − 1, the last segment 4 B short): 18 segments, 6 a chunk, 2
    #     empty; rank 1 sends all but its chunk's last two (full) = 14 MiB − 4 B, + its 6 MiB chunk;
    #     rank 2's last two are the empty ones: 16 MiB − 4 B, + its chunk of 4 MiB − 4 B
    #   N = 4: 16 segments, 4 a chunk: 14 + 4 = 18 MiB = 1.125 M
    # and the root sends the buffer but its chunk's last two (full) segments in the loop, nothing more
    MiB = 2 ** 20
    for n, m, want in ((2, 2 ** 22, [22 * MiB]), (3, 2 ** 22 - 1, [20 * MiB - 4, 20 * MiB - 8]),
                       (4, 2 ** 22, [18 * MiB] * 3)):
        assert main(["measure", "--ranks", str(n), "--sizes", str(m), "--primitives", "reduce",
                     "--steps", "none", "--no-progress", "--json"]) == 0
        (row,) = json.loads(capsys.readouterr().out)["rows"]
        assert row["M"] == m and row["payload"][1:] == want
        assert row["payload"][0] == 4 * m - 2 * MiB
        # the catalog's closed form (reduce/ring_segmented under gloo) is the measured payload
        assert row["model_payload"]["busiest_other"] == max(want) and row["matched"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX: a fork server")
def test_a_ctrl_c_while_forked_ranks_start_is_held_until_all_started(monkeypatch):
    """Only the fork server starts with SIGINT ignored (its ranks inherit that); a Ctrl-C while it forks the ranks is
    held and raised once every rank has started (each then has its pid for the caller to kill: none is left
    half-started, meeting a queue already closed), where before it was ignored and the sweep went on."""
    import multiprocessing.forkserver
    import signal

    from symcomm.measurement import measure
    from symcomm.measurement.rank_server import PARENT_VARIABLE

    seen = {}
    started = []

    def server_starts():
        seen["server"] = (signal.getsignal(signal.SIGINT), os.environ.get("GLOO_SOCKET_IFNAME"),
                          os.environ.get(PARENT_VARIABLE))

    class Rank:
        def start(self):
            if not started:
                os.kill(os.getpid(), signal.SIGINT)     # Ctrl-C while the first rank starts
                for _ in range(1000):                    # the handler runs between bytecodes: give it some
                    pass
            started.append(self)

    monkeypatch.setattr(multiprocessing.forkserver, "ensure_running", server_starts)
    ranks = [Rank(), Rank(), Rank()]
    with pytest.raises(KeyboardInterrupt):
        measure._start(ranks, server=True)
    assert started == ranks                               # every rank started before the interrupt
    assert seen["server"] == (signal.SIG_IGN, "lo", str(os.getpid()))
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert os.environ.get(PARENT_VARIABLE) is None
