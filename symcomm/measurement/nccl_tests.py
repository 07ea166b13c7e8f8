"""nccl-tests: its output read as data, and its conventions.

nccl-tests (github.com/NVIDIA/nccl-tests) prints one row per message size::

    #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
    #        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
       1048576        262144     float     sum      -1    76.71   13.67   23.92      0    77.73   13.49   23.61      0

out-of-place then in-place (``src/util.cu``: ``writeBenchmarkLinePreamble``,
``writeBenchmarkLineBody``); older releases print ``error`` instead of ``#wrong``, no
``root`` or ``redop`` column, and ``N/A`` when validation is off.  Its conventions
(``doc/PERFORMANCE.md``): the size S is the full buffer in bytes (the all-gather's output,
the reduce-scatter's input, the all-to-all's per-rank buffer), ``algbw = S / t`` and
``busbw = algbw × factor``: 2(n−1)/n for all-reduce, (n−1)/n for all-gather,
reduce-scatter and all-to-all, 1 for broadcast, reduce and send/receive.  That S is
symcomm's M (ARCHITECTURE.md, "Conventions": M is the full buffer, as in nccl-tests).

:func:`read` turns a log into :class:`Log` values (one per test it holds): every number
bounded before use (:mod:`symcomm.base.inputs`), the file size capped (:mod:`symcomm.base.files`), a
row it cannot read reported with its line number, never guessed.  The table predicted from a
calibration (:class:`Prediction`, :func:`table`) is :mod:`symcomm.measurement.nccl_prediction`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from ..base.errors import InputError
from ..base.files import MIB, read_capped
from ..base.inputs import parse_real, parse_whole

#: a log larger than this is not an nccl-tests log
MAX_LOG_BYTES = 16 * MIB
MAX_ROWS = 10_000
#: sizes and times a row may state (1 PiB, one day)
MAX_BYTES = 2 ** 50
MAX_TIME_US = 86_400e6
MAX_GBPS = 1e6

#: nccl-tests' element types and their sizes (src/common.cu, test_typenames)
DTYPE_BYTES = {"int8": 1, "uint8": 1, "int32": 4, "uint32": 4, "int64": 8, "uint64": 8, "half": 2,
               "float": 4, "double": 8, "bfloat16": 2, "fp8_e4m3": 1, "fp8_e5m2": 1, "f8e4m3": 1, "f8e5m2": 1,
               "char": 1, "int": 4}
REDOPS = ("sum", "prod", "max", "min", "avg", "mulsum", "premulsum", "none", "all")


@dataclass(frozen=True)
class Collective:
    """One nccl-tests program: its name, symcomm's primitive, its busbw factor's numerator
    and denominator as functions of n (factor = num(n)/den(n)), and what its count column is."""

    name: str
    primitive: str
    title: str
    per_rank_count: bool           # the count column is S / (n · element size), not S / element size

    def factor(self, n: int) -> float:
        """busbw / algbw (doc/PERFORMANCE.md)."""
        if self.name == "all_reduce":
            return 2 * (n - 1) / n
        if self.name in ("all_gather", "reduce_scatter", "alltoall"):
            return (n - 1) / n
        return 1.0

    def buffers(self, size: int, elt: int, n: int) -> tuple[int, int]:
        """(printed size, printed count) of a requested size, as nccl-tests computes them
        (src/common.cu setupArgs and each test's GetCollByteCount)."""
        count = size // elt
        if self.name in ("all_gather", "reduce_scatter"):
            base = (count // n) & ~(16 // elt - 1) if elt <= 16 else count // n
            return base * n * elt, base
        if self.name == "alltoall":
            param = (count // n) & ~(16 // elt - 1) if elt <= 16 else count // n
            return n * param * elt, param
        return count * elt, count


COLLECTIVES = {c.name: c for c in (
    Collective("all_reduce", "all_reduce", "all-reduce", False),
    Collective("all_gather", "all_gather", "all-gather", True),
    Collective("reduce_scatter", "reduce_scatter", "reduce-scatter", True),
    Collective("alltoall", "all_to_all", "all-to-all", True),
    Collective("broadcast", "broadcast", "broadcast", False),
    Collective("reduce", "reduce", "reduce", False),
    Collective("sendrecv", "send_recv", "send/receive", False),
)}
_ALIASES = {"allreduce": "all_reduce", "allgather": "all_gather", "reducescatter": "reduce_scatter",
            "all_to_all": "alltoall", "send_recv": "sendrecv", "bcast": "broadcast"}


def collective(name: str) -> Collective:
    """A collective by its nccl-tests name (``all_reduce``, ``all_reduce_perf``) or symcomm's."""
    key = str(name).strip().lower()
    key = key[:-5] if key.endswith("_perf") else key
    key = _ALIASES.get(key, key)
    if key not in COLLECTIVES:
        shown = name if len(str(name)) <= 30 else str(name)[:27] + "..."
        raise InputError(f"collective {shown!r} is not allowed; choose one of {', '.join(COLLECTIVES)}")
    return COLLECTIVES[key]


# -- reading a log --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Side:
    """One measurement of a row: out-of-place or in-place."""

    time_s: float
    algbw: float                   # bytes/s, as printed (GB/s × 10⁹)
    busbw: float
    wrong: float | None            # None: N/A (validation off)


@dataclass(frozen=True)
class Row:
    line: int
    size: int                      # bytes, the full buffer S
    count: int
    dtype: str
    redop: str
    root: int | None
    out_of_place: Side | None
    in_place: Side | None

    @property
    def measured(self) -> Side:
        """The out-of-place measurement (nccl-tests' first), or the in-place one when only it exists."""
        return self.out_of_place or self.in_place


@dataclass(frozen=True)
class Log:
    """One test of a log: its rows and what its header said."""

    path: str
    collective: Collective | None
    ranks: int | None
    hosts: int | None
    gpus_per_node: int | None
    devices: tuple[str, ...]
    rows: tuple[Row, ...]
    avg_busbw: float | None = None
    notes: tuple[str, ...] = ()
    first_line: int = 1
    #: True where no header said which hosts the ranks ran on and none was given: the ranks taken as one node
    one_node_assumed: bool = False

    @property
    def nodes(self) -> int:
        if self.ranks and self.gpus_per_node:
            return max(1, -(-self.ranks // self.gpus_per_node))
        return 1

    @property
    def device(self) -> str:
        return self.devices[0] if self.devices else ""


_PROGRAM = re.compile(r"\b(all_reduce|all_gather|reduce_scatter|alltoall|broadcast|reduce|sendrecv)_perf\b")
_STARTING = re.compile(r"Collective test starting:\s*(\S+)")
_NTHREAD = re.compile(r"nThread\s+(\d{1,6})\s+nGpus\S*\s+(\d{1,6})")
_RANK = re.compile(r"(?:#\s*|^\s*)Rank\s+(\d{1,7})\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+(?:on\s+(\S+)\s+)?device\s+\d+\s+\[[^\]]*\]\s*(.*)$")
_AVG = re.compile(r"Avg bus bandwidth\s*:\s*([0-9.eE+-]{1,24})")
_UNITS = re.compile(r"\(B\)\s+\(elements\)")
_INT = re.compile(r"-?[0-9]{1,20}\Z")
_REAL = re.compile(r"[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]{1,3})?\Z")


def _short(text: str, most: int = 60) -> str:
    text = "".join(ch if ch.isprintable() else "?" for ch in text.strip())
    return text if len(text) <= most else text[: most - 3] + "..."


class _Reader:
    def __init__(self, path: str, what: str):
        self.path, self.what = path, what

    def fail(self, line: int, message: str) -> InputError:
        return InputError(f"{self.what} {self.path!r} line {line}: {message}")

    def real(self, token: str, line: int, column: str, most: float) -> float:
        if not _REAL.match(token):
            raise self.fail(line, f"{column} {_short(token, 24)!r} is not a number")
        try:
            return parse_real(column, token, least=0.0, most=most)
        except InputError:
            raise self.fail(line, f"{column} {_short(token, 24)} is out of range (0 to {most:g})") from None

    def whole(self, token: str, line: int, column: str, least: int, most: int) -> int:
        if not _INT.match(token):
            raise self.fail(line, f"{column} {_short(token, 24)!r} is not a whole number")
        if token.startswith("-"):
            value = -parse_whole(column, token[1:], least=0, most=most) if token[1:] != "0" else 0
            if value < least:
                raise self.fail(line, f"{column} {token} is out of range ({least} to {most})")
            return value
        try:
            return parse_whole(column, token, least=max(least, 0), most=most)
        except InputError:
            raise self.fail(line, f"{column} {_short(token, 24)} is out of range ({least} to {most:,})") from None

    def side(self, tokens: list[str], line: int, unit: float) -> Side | None:
        time_text, alg, bus = tokens[0], tokens[1], tokens[2]
        if time_text.upper() == "N/A":
            return None
        t = self.real(time_text, line, "time", MAX_TIME_US) * unit
        if t <= 0:
            raise self.fail(line, "time 0 is not a measurement")
        wrong = None
        if len(tokens) > 3 and tokens[3].upper() != "N/A":
            wrong = self.real(tokens[3], line, "#wrong", 2.0 ** 62)
            if wrong > 0:
                # nccl-tests counts the elements its check found wrong: the time of a wrong result measures nothing
                raise self.fail(line, f"#wrong {tokens[3]}: the collective returned wrong results in this row, so its "
                                      "time is no measurement; rerun the test or drop the row")
        return Side(t, self.real(alg, line, "algbw", MAX_GBPS) * 1e9, self.real(bus, line, "busbw", MAX_GBPS) * 1e9, wrong)

    def row(self, tokens: list[str], at: int, line: int, unit: float, root_column: bool | None) -> Row:
        size = self.whole(tokens[at - 2], line, "size", 0, MAX_BYTES)
        count = self.whole(tokens[at - 1], line, "count", 0, MAX_BYTES)
        dtype = tokens[at]
        rest = tokens[at + 1:]
        redop = ""
        if rest and rest[0].lower() in REDOPS:
            redop = rest.pop(0).lower()
        elif rest and not _REAL.match(rest[0]) and rest[0].upper() != "N/A":
            raise self.fail(line, f"{_short(rest[0], 24)!r} after the type is neither a reduction nor a number")
        root = None
        if root_column is True or (root_column is None and len(rest) % 2 == 1):
            if not rest:
                raise self.fail(line, "the row ends after the type")
            root = self.whole(rest.pop(0), line, "root", -1, 2 ** 31)
        if len(rest) in (6, 8):
            k = len(rest) // 2
            sides = (self.side(rest[:k], line, unit), self.side(rest[k:], line, unit))
        elif len(rest) == 16:          # -I 1: four per-iteration statistics after each #wrong
            sides = (self.side(rest[:4], line, unit), self.side(rest[8:12], line, unit))
        elif len(rest) in (3, 4):      # only one of the two measurements printed
            sides = (None, self.side(rest, line, unit))
        else:
            raise self.fail(line, f"{len(rest)} values after the type and reduction; a row has time, algbw, busbw "
                                  "and #wrong for out-of-place and in-place (6 or 8 values)")
        if size and dtype in DTYPE_BYTES and size % DTYPE_BYTES[dtype]:
            raise self.fail(line, f"size {size} is not a whole number of {dtype} elements")
        for side in sides:
            # algbw = size / time (doc/PERFORMANCE.md), printed to 0.01 GB/s: a row whose algbw the time does not
            # give was edited or mangled, and which of the two to trust is not the reader's to guess
            if side is not None and side.algbw >= 1e9 and abs(size / side.time_s - side.algbw) > 0.02 * side.algbw + 1e7:
                raise self.fail(line, f"algbw {side.algbw / 1e9:.2f} GB/s is not size/time ({size / side.time_s / 1e9:.2f} "
                                      "GB/s): the row contradicts itself")
        return Row(line, size, count, dtype, redop, root, sides[0], sides[1])


def _dtype_at(tokens: list[str]) -> int | None:
    for i in range(2, len(tokens)):
        if tokens[i] in DTYPE_BYTES and _INT.match(tokens[i - 1]) and _INT.match(tokens[i - 2]):
            return i
    return None


def read(path, *, what: str = "log", collective_name: str | None = None) -> list[Log]:
    """The tests in an nccl-tests log file (usually one; several when logs were concatenated)."""
    raw = read_capped(path, MAX_LOG_BYTES, what)
    return parse(raw.decode("utf-8", errors="replace"), str(path), what=what, collective_name=collective_name)


def parse(text: str, path: str = "<text>", *, what: str = "log", collective_name: str | None = None) -> list[Log]:
    reader = _Reader(path, what)
    forced = collective(collective_name) if collective_name else None
    tests: list[dict] = []

    def fresh(line: int) -> dict:
        return {"program": None, "ranks": {}, "devices": [], "rows": [], "avg": None, "unit": 1e-6,
                "root": None, "line": line, "threads_gpus": None}

    current = fresh(1)
    lines = text.split("\n")
    if len(lines) > 20 * MAX_ROWS:
        raise InputError(f"{what} {path!r}: {len(lines):,} lines is too many for an nccl-tests log")
    for number, raw_line in enumerate(lines, start=1):
        line = raw_line.rstrip("\r")
        if not line.strip():
            continue
        tokens = line.split()
        at = _dtype_at(tokens)
        if at is None:
            body = line[line.find("#"):] if "#" in line else line
            header_start = _NTHREAD.search(body) or _STARTING.search(body)
            program = _PROGRAM.search(body)
            if (header_start or (program and "#" not in line)) and current["rows"]:
                tests.append(current)
                current = fresh(number)
            matched = False
            if m := _NTHREAD.search(body):
                current["threads_gpus"] = (int(m.group(1)), int(m.group(2)))
                matched = True
            if m := _STARTING.search(body):
                current["program"] = m.group(1)
                matched = True
            if m := _RANK.search(body):
                matched = True
                rank = int(m.group(1))
                if rank < 1 << 20:
                    current["ranks"][rank] = m.group(2) or ""
                    if m.group(3).strip():
                        current["devices"].append(_short(m.group(3), 60))
            if m := _AVG.search(body):
                matched = True
                try:
                    current["avg"] = parse_real("Avg bus bandwidth", m.group(1), most=MAX_GBPS) * 1e9
                except InputError:
                    pass
            if _UNITS.search(body):
                matched = True
                current["unit"] = 1e-3 if "(ms)" in body else 1e-6
            if re.search(r"\bsize\s+count\s+type\b", body):
                matched = True
                current["root"] = bool(re.search(r"\broot\b", body))
            if program:
                matched = True
                current["program"] = current["program"] or program.group(0)
            stripped = line.strip()
            # a row with its size and a type but no whole size and count before it (a count printed 2.147e+09) is
            # a row the reader cannot read, said, not dropped
            if (not matched and not stripped.startswith("#") and "NCCL" not in line
                    and (re.match(r"[0-9]+\s+-?[0-9]+(\s|$)", stripped)
                         or (_INT.match(tokens[0]) and any(t in DTYPE_BYTES for t in tokens[1:4])))):
                raise reader.fail(number, f"not an nccl-tests row: {_short(stripped)!r} (expected size, count, "
                                          "type, then the measurements)")
            continue
        if len(current["rows"]) >= MAX_ROWS:
            raise reader.fail(number, f"more than {MAX_ROWS:,} rows in one test")
        current["rows"].append(reader.row(tokens, at, number, current["unit"], current["root"]))
    if current["rows"] or not tests:
        tests.append(current)
    if not any(t["rows"] for t in tests):
        raise InputError(f"{what} {path!r}: no nccl-tests result rows (a row is: size count type [redop root] "
                         "time algbw busbw #wrong, out-of-place then in-place)")
    out = []
    for test in tests:
        if not test["rows"]:
            continue
        out.append(_log(test, path, reader, forced))
    return out


def _log(test: dict, path: str, reader: _Reader, forced: Collective | None) -> Log:
    rows = tuple(test["rows"])
    notes = []
    ranks = (max(test["ranks"]) + 1) if test["ranks"] else None
    hosts = {h for h in test["ranks"].values() if h}
    gpn = None
    if ranks and hosts:
        per_host = {}
        for rank, host in test["ranks"].items():
            per_host[host] = per_host.get(host, 0) + 1
        gpn = max(per_host.values())
    found = None
    if test["program"]:
        found = collective(test["program"])
    elif forced is None:
        name = Path(path).name.lower().replace("-", "_")
        for key in sorted(COLLECTIVES, key=len, reverse=True):
            if key in name or (COLLECTIVES[key].primitive in name):
                found = COLLECTIVES[key]
                break
    chosen = forced or found
    if forced and found and forced.name != found.name:
        raise reader.fail(test["line"], f"the log is {found.name}_perf, not {forced.name}")
    if chosen is None:
        chosen = _guess(rows)
        if chosen is not None:
            notes.append(f"no program name in the log: taken as {chosen.name} from its columns "
                         f"(redop {rows[0].redop or '—'}, root {rows[0].root}); give --collective to say otherwise")
    return Log(path, chosen, ranks, len(hosts) or None, gpn, tuple(dict.fromkeys(test["devices"])),
               rows, test["avg"], tuple(notes), test["line"])


def _guess(rows: tuple[Row, ...]) -> Collective | None:
    """The collective a headerless log's columns say (None when they leave it open)."""
    row = rows[-1]
    elt = DTYPE_BYTES.get(row.dtype, 4)
    full = row.count * elt == row.size
    if row.root is not None and row.root >= 0:
        return COLLECTIVES["broadcast" if row.redop in ("", "none") else "reduce"]
    if row.redop == "none":
        return None                   # all-gather and all-to-all print the same columns
    if full:
        return COLLECTIVES["all_reduce"]   # send/receive prints the same columns; the common case
    return COLLECTIVES["reduce_scatter"]


def ranks_from_busbw(log: Log) -> int | None:
    """n from busbw / algbw of the largest row (2(n−1)/n → n = 2/(2 − f)), when it is exact enough."""
    if log.collective is None:
        return None
    side = max(log.rows, key=lambda r: r.size).measured
    if side is None or side.algbw < 1e9:
        return None
    f = side.busbw / side.algbw
    if log.collective.name == "all_reduce" and f < 2:
        n = 2 / (2 - f)
    elif log.collective.name in ("all_gather", "reduce_scatter", "alltoall") and f < 1:
        n = 1 / (1 - f)
    else:
        return None
    return round(n) if 1 < n < 1e5 else None


def with_ranks(log: Log, ranks: int | None, gpus_per_node: int | None) -> Log:
    """The log with its group size settled: from the header, or --ranks / --gpus-per-node for a
    log without one (they must agree with a header that is there)."""
    where = f"log {log.path!r}"
    if log.collective is None:
        raise InputError(f"{where} line {log.first_line}: all-gather and all-to-all print the same columns; "
                         "give --collective all_gather or alltoall")
    if log.ranks is not None and ranks is not None and ranks != log.ranks:
        raise InputError(f"{where}: --ranks {ranks} but the log's header lists {log.ranks} ranks")
    hint = ranks_from_busbw(log) if log.ranks is None else None
    if log.ranks is None and ranks is None:
        said = f" (its busbw/algbw ratio says {hint})" if hint else ""
        raise InputError(f"{where} line {log.first_line}: the header with the ranks is cut off{said}; "
                         "give --ranks N (and --gpus-per-node G when the run spans nodes)")
    if hint is not None and hint != ranks:
            # the busbw factor nccl-tests printed is 2(n − 1)/n (all-reduce) or (n − 1)/n of the n it ran on
            raise InputError(f"{where}: --ranks {ranks} but the log's busbw/algbw ratio says {hint} ranks (nccl-tests "
                             f"prints busbw = algbw × its factor of the ranks it ran on); give --ranks {hint}")
    n = log.ranks or ranks
    notes, assumed = list(log.notes), False
    if log.gpus_per_node is not None and log.ranks is not None:
        g = log.gpus_per_node
        if gpus_per_node is not None and gpus_per_node != g:
            raise InputError(f"{where}: --gpus-per-node {gpus_per_node} but the header shows {g} GPUs per host "
                             f"({log.hosts or 1} host{'s' if (log.hosts or 1) > 1 else ''}); leave it out")
    else:
        g = gpus_per_node or n
        if gpus_per_node is None:
            what = "no header" if log.ranks is None else "no host names in the header"
            notes.append(f"{what}: taken as one node of {n} GPUs (give --gpus-per-node when it spans nodes)")
            assumed = True
    if n % min(g, n):
        raise InputError(f"{where}: {n} ranks are not whole nodes of {g} GPUs")
    _rows_agree(log, n, where)
    return replace(log, ranks=n, gpus_per_node=min(g, n), notes=tuple(notes), one_node_assumed=assumed)


def _rows_agree(log: Log, n: int, where: str) -> None:
    """InputError for a row whose columns contradict the collective and ranks the log is read as: busbw = algbw × the
    collective's factor at n (doc/PERFORMANCE.md; printed to 0.01 GB/s, so within 2 % where algbw is 1 GB/s or more),
    and count = size / element size (/ n for the per-rank counts of all-gather, reduce-scatter, all-to-all:
    :meth:`Collective.buffers`).  An all-reduce log read as all-gather (its program line cut off, or named so) fitted
    β at half the link's, and a busbw column edited tenfold or a count of another type passed unread."""
    c = log.collective
    factor = c.factor(n)
    for row in log.rows:
        elt = DTYPE_BYTES.get(row.dtype)
        if elt and row.size and row.count * elt * (n if c.per_rank_count else 1) != row.size:
            raise InputError(f"{where} line {row.line}: count {row.count} of {row.dtype} ({elt} bytes) is not size "
                             f"{row.size} / {elt}{f' / {n} ranks' if c.per_rank_count else ''} as {c.name}_perf prints "
                             "it: the row contradicts itself, or the log is another collective's or rank count's")
        for side in (row.out_of_place, row.in_place):
            if side is None or side.algbw < 1e9:
                continue
            if abs(side.busbw - side.algbw * factor) > 0.02 * side.algbw * factor + 1e7:
                other = ("; an all-reduce's factor at these ranks is "
                         f"{COLLECTIVES['all_reduce'].factor(n):.4g}" if c.name != "all_reduce" else
                         f"; an all-gather's or reduce-scatter's is {COLLECTIVES['all_gather'].factor(n):.4g}")
                raise InputError(f"{where} line {row.line}: busbw {side.busbw / 1e9:.2f} GB/s is not algbw "
                                 f"{side.algbw / 1e9:.2f} × {c.name}'s factor {factor:.4g} at {n} ranks "
                                 f"(doc/PERFORMANCE.md){other}: the row contradicts itself, or the log is another "
                                 "collective's; give --collective for the program that printed it")

