"""symcomm measure / validate: the kernel's counters, a real gloo group of 2 ranks, the CLI."""

import json
import socket
import threading
from pathlib import Path

import pytest

from symcomm.cli import main
from symcomm.measure import Progress, predict_op, tcp_bytes_sent
from symcomm.profiles import GLOO

DATA = Path(__file__).resolve().parent.parent / "derivations" / "data" / "gloo_measurements.json"


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
    bar = Progress(2, stream=stream)
    bar.step("N=2")
    bar.step()
    bar.step()
    bar.close()
    assert "2/2" in stream.getvalue()


@pytest.mark.parametrize("argv, word", [
    (["measure", "--ranks", "9"], "at most 8"),
    (["measure", "--ranks", "1"], "ranks"),
    (["measure", "--sizes", "2**23"], "2**22"),
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


def test_measure_two_gloo_ranks(capsys):
    pytest.importorskip("torch")
    code = main(["validate", "--ranks", "2", "--sizes", "2**10,3000", "--steps", "ddp,fsdp",
                 "--json", "--no-progress", "--timeout", "100"])
    out = json.loads(capsys.readouterr().out)
    misses = [r for r in out["rows"] if not r["matched"]]
    assert code == 0, misses
    assert out["count"] == 8 * 2 + 2
    names = {r["name"] for r in out["rows"]}
    assert {"all_reduce", "reduce_scatter", "ddp", "fsdp"} <= names
