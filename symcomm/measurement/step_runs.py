"""The measured runs ``symcomm calibrate-step`` reads: a JSON or CSV file of runs, each a model, the KEY=VALUE
words ``symcomm eval hybrid`` takes, and one measurement — a step time, tokens/s, tokens/s per GPU, or a
training log whose per-iteration lines give it.

Each run is bound by the step model's one binding (:func:`symcomm.training.answers.step_inputs`, what
``eval hybrid --hardware BASE`` evaluates): the same words give the same numbers in both commands.  Files
are read size-capped (:func:`symcomm.base.files.read_capped`), JSON with the safe reader and the schema
``step-runs``; every number is bounded; no text reaches anything but the number grammar and the binding.

Logs (the first framework whose lines the file holds):

* Megatron-LM and NeMo / Megatron-Bridge: the ``training_log`` lines, `` iteration N/ TOTAL | ... | elapsed
  time per iteration (ms): X |`` (NVIDIA/Megatron-LM ``megatron/training/training.py``, ``training_log``, at
  d98e8a6; NVIDIA-NeMo/Megatron-Bridge ``src/megatron/bridge/training/utils/train_utils.py`` at 067f987): X is
  the interval timer over the iterations since the previous logged line, divided by their number; seconds
  per step = X / 1000.
* NeMo 2.0 (its Lightning trainer's progress printer): ``Training epoch E, iteration N/TOTAL | ... |
  global_batch_size: B | ... | train_step_timing in s: X | ...`` (NVIDIA/NeMo
  ``nemo/lightning/pytorch/callbacks/progress_printer.py`` at 8cfedd7, ``ProgressPrinter.on_train_batch_end``): X is
  the mean of the per-step timings over the logging interval, in seconds, printed to 4 significant digits; N counts
  from 0 (N = steps − 1), read as N + 1.
* torchtitan: ``step: N  loss: ...  tps: T  tflops: ...`` (pytorch/torchtitan at b5bcd76,
  ``torchtitan/components/metrics.py``, ``MetricsProcessor.log``): T = the tokens of this rank's batches
  since the previous logged line (``torchtitan/trainer.py``: ``labels.numel()`` per batch) / (the time since
  it × the non-data-parallel degree t·p·c): tokens per second per GPU; seconds per step = b·s / (T · GPUs),
  GPUs = d·t·p·c.

A logged line is kept when every iteration it averages comes after the first ``warmup`` iterations of the log
(:data:`WARMUP` by default: start-up, compilation and allocator warm-up; counted from the iteration the log starts
at, so a run resumed from a checkpoint warms up as a fresh one does); the measurement is the median of
the kept lines, refused with fewer than :data:`MIN_LOG_LINES`, and said where their middle half spreads over more
than :data:`LOG_SPREAD` of it (a step time that changed mid-run or alternates).
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

from ..base import notes
from ..base.errors import InputError
from ..base.files import MIB, read_capped
from ..base.inputs import check, loads, parse_real, parse_whole
from ..presets.hardware_values import PEAK_NAMES
from .step_fit import MeasuredRun

#: a runs file (JSON or CSV) is at most this large
MAX_RUNS_BYTES = 4 * MIB
#: a training log is at most this large
MAX_LOG_BYTES = 64 * MIB
#: runs in one file at most
MAX_RUNS = 1000
#: iterations skipped at the start of a log unless a run says otherwise
WARMUP = 10
#: kept log lines needed at least
MIN_LOG_LINES = 3
#: a log whose kept lines' quartiles lie further apart than this share of their median is said: a step time that
#: changed mid-run or alternates has no one value, and the median fitted may be one no line logged
LOG_SPREAD = 0.10
#: the measurement fields; each run gives exactly one
MEASUREMENTS = ("step_time_s", "tokens_per_s", "tokens_per_s_per_gpu", "log")
#: a step time or throughput outside these bounds is no measurement of a training step
MAX_SECONDS = 1e6
MAX_TOKENS_PER_S = 1e12
#: CSV columns
COLUMNS = ("id", "model", "model_config", "words", "dtype", "source", "framework", "warmup") + MEASUREMENTS

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
# a logged figure is read as the whole token after its label, then parsed strictly: a 'nan', '1e30' or '-' is no
# number of the grammar, and refuses the log rather than being read as its leading digits or passed over
#: each format's line as two patterns, its iteration's (the first in the line) and its figure's (the first after it):
#: searched one after the other, each in linear time; one pattern with .*? between them was tried again from every
#: "iteration" of a line, quadratic in its length (an outsider's 300 kB line of them took 69 s to refuse)
_ITERATION = re.compile(r"iteration\s+(\d{1,12})\s*/\s*\d{1,12}\s*\|")
_MEGATRON = (_ITERATION, re.compile(r"elapsed time per iteration \(ms\):\s*([^\s|]{1,40})"))
_NEMO = (_ITERATION, re.compile(r"train_step_timing in s:\s*([^\s|]{1,40})"))
_TORCHTITAN = (re.compile(r"step:\s*(\d{1,12})\s"), re.compile(r"tps:\s*([^\s|]{1,40})"))
_FIGURE = {"megatron": re.compile(r"[0-9]{1,12}(?:\.[0-9]{0,12})?"),
           # NeMo 2.0 prints a figure to 4 significant digits (f'{val:.4}'): 13.29, or 1.234e+03 past 9999
           "nemo": re.compile(r"[0-9]{1,12}(?:\.[0-9]{0,12})?(?:e[+-]?[0-9]{1,3})?"),
           "torchtitan": re.compile(r"[0-9][0-9,]{0,20}(?:\.[0-9]{0,12})?")}
_BATCH = {"megatron": re.compile(r"global batch size:\s*(\d{1,12})"),
          "nemo": re.compile(r"global_batch_size:\s*(\d{1,12})")}


@dataclass(frozen=True)
class LogReading:
    """What a log gave: its framework, the seconds per step of each kept line's iterations (or, for
    torchtitan, tokens/s per GPU), the lines kept and skipped, and (Megatron-LM) the global batch size each kept
    line prints (None where it prints none)."""
    framework: str
    values: tuple
    kept: int
    skipped: int
    unit: str
    line_batches: tuple = ()
    text_batches: frozenset = frozenset()   # every 'global batch size: N' of a Megatron-LM log, on any line
    unread: int = 0     # lines that name an iteration but carry no figure of the format's: not read, and said

    @property
    def batches(self) -> frozenset:
        """The global batch sizes a Megatron-LM log's kept lines print ('global batch size: N'), or where they
        print none, those its other lines do."""
        return frozenset(n for n in self.line_batches if n is not None) or self.text_batches

    def at_batch(self, batch: int) -> tuple:
        """The kept values of the lines that print global batch size ``batch`` (all of them when no kept line
        prints one): a log whose batch ramps up (Megatron-LM's --rampup-batch-size) times its smaller batches
        first."""
        if all(n is None for n in self.line_batches):
            return self.values
        return tuple(x for x, n in zip(self.values, self.line_batches) if n == batch)


def read_log(path, warmup: int = WARMUP) -> LogReading:
    """The per-iteration figures of a Megatron-LM / NeMo or torchtitan log, warm-up skipped (module doc)."""
    raw = read_capped(path, MAX_LOG_BYTES, "log")
    text = _ANSI.sub("", raw.decode("utf-8", errors="replace"))
    for framework, pattern, unit in (("megatron", _MEGATRON, "s"), ("nemo", _NEMO, "s"),
                                     ("torchtitan", _TORCHTITAN, "tokens/s/GPU")):
        found, unread = [], 0
        head, figure = pattern
        for line in text.splitlines():
            m = head.search(line)
            got = m and figure.search(line, m.end())
            unread += bool(m and not got)
            if got:
                batch = _BATCH[framework].search(line) if framework in _BATCH else None
                # NeMo 2.0 numbers its lines from 0 (iteration n - 1 after n steps): counted from 1 as the others
                iteration = int(m.group(1)) + (1 if framework == "nemo" else 0)
                found.append((iteration, got.group(1), int(batch.group(1)) if batch else None))
        if found:
            break
    else:
        raise InputError(f"log {str(path)!r}: no Megatron-LM/NeMo line ('iteration N/ M | ... elapsed time per "
                         "iteration (ms): X'), no NeMo 2.0 line ('... iteration N/M | ... | train_step_timing in s: "
                         "X') and no torchtitan line ('step: N ... tps: T')")
    # the warm-up is the process's first iterations, counted from where this log starts: a run resumed from a
    # checkpoint numbers its lines on from the checkpoint's iteration (5001, ...), and its first lines warm up as a
    # fresh run's do; the first line averages one logging interval (the gap to the second line) back from it
    start = found[0][0] - (found[1][0] - found[0][0]) if len(found) > 1 and found[1][0] > found[0][0] else 0
    values, batches, skipped, before = [], [], 0, max(start, 0)
    first = before
    label = {"megatron": "elapsed time per iteration (ms)", "nemo": "train_step_timing in s"}.get(framework, "tps")
    for iteration, number, batch in found:
        if iteration == before and iteration != first:
            raise InputError(f"log {str(path)!r}: iteration {iteration} is logged twice: several ranks' lines? "
                             "keep one rank's (e.g. the lines that start [rank0])")
        if iteration <= before:
            raise InputError(f"log {str(path)!r}: iteration {iteration} follows {before}: one run's log, "
                             "in order, please")
        if not _FIGURE[framework].fullmatch(number):
            raise InputError(f"log {str(path)!r}: iteration {iteration} logs {label} {number!r}, not a number "
                             "(digits and a decimal point): no step of it can be timed; cut the line out or give "
                             "another log")
        if before - first < warmup:      # this line averages iterations before + 1 .. iteration: some in warm-up
            skipped += 1
        else:
            x = float(number.replace(",", ""))
            if not (math.isfinite(x) and x > 0):
                raise InputError(f"log {str(path)!r}: iteration {iteration} logs {label} {number!r}, not a positive "
                                 "number: no step of it can be timed; cut the line out or give another log")
            values.append(x / 1000.0 if framework == "megatron" else x)
            batches.append(batch)
        before = iteration
    if len(values) < MIN_LOG_LINES:
        raise InputError(f"log {str(path)!r}: {len(values)} logged lines after the first {warmup} iterations "
                         f"(warm-up); the median needs at least {MIN_LOG_LINES}: give a longer log or a smaller "
                         "warmup")
    text_batches = (frozenset(int(x) for x in _BATCH[framework].findall(text)) if framework in _BATCH
                    else frozenset())
    return LogReading(framework, tuple(values), len(values), skipped, unit, tuple(batches), text_batches, unread)


def _quartiles(values) -> tuple[float, float]:
    """The medians of the lower and the upper half of ``values`` (Tukey's hinges; the middle value in both when
    their count is odd)."""
    ordered = sorted(values)
    half = (len(ordered) + 1) // 2
    return _median(ordered[:half]), _median(ordered[-half:])


def _median(values) -> float:
    ordered = sorted(values)
    n = len(ordered)
    return ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2


def _records(path) -> list[dict]:
    """The runs of a JSON (schema ``step-runs``) or CSV file, as dicts of the same fields."""
    raw = read_capped(path, MAX_RUNS_BYTES, "RUNS")
    what = f"RUNS {str(path)!r}"
    try:
        # utf-8-sig: a byte-order mark (Excel's "CSV UTF-8", PowerShell's files) is no part of the first field
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(f"{what}: not UTF-8 text") from None
    if text.lstrip().startswith("{"):
        return list(check(loads(text, what), "step-runs", what)["runs"])
    if text.lstrip().startswith("["):
        raise InputError(f"{what}: a JSON array; give the runs as an object, {{\"runs\": [...]}}")
    header = next(csv.reader(io.StringIO(text)), [])
    twice = sorted({c for c in header if header.count(c) > 1})
    if twice:
        # csv.DictReader keeps the last of two columns of one name, as json kept the last of two keys
        raise InputError(f"{what}: the CSV column {twice[0]!r} is given twice in the header; give each column once")
    rows = list(csv.DictReader(io.StringIO(text)))
    if not rows:
        raise InputError(f"{what}: neither JSON ({{\"runs\": [...]}}) nor CSV with a header row and runs")
    unknown = [c for c in rows[0] if c is not None and c not in COLUMNS]
    if unknown:
        raise InputError(f"{what}: unknown CSV column {unknown[0]!r}; allowed: {', '.join(COLUMNS)}")
    for i, row in enumerate(rows, start=2):
        # csv.DictReader puts the cells beyond the header's columns under None: empty ones (a trailing comma) are
        # nothing, any other a value with no column
        if any(cell.strip() for cell in row.pop(None, ()) or ()):
            raise InputError(f"{what} line {i}: more cells than the header's {len(header)} columns")
        # and the columns a short row leaves out under None: refused as the JSON schema refuses a missing field, not
        # read as empty cells
        missing = [column for column, cell in row.items() if cell is None]
        if missing:
            raise InputError(f"{what} line {i}: {len(header) - len(missing)} cells where the header has {len(header)} "
                             f"columns (none for {missing[0]!r}); give every column, an empty cell where it has no value")
    if len(rows) > MAX_RUNS:
        raise InputError(f"{what}: {len(rows)} runs; at most {MAX_RUNS}")
    out = []
    for i, row in enumerate(rows, start=2):
        rec = {k: v.strip() for k, v in row.items() if v is not None and v.strip()}
        try:        # the line said once, before the value's own complaint (which names the field)
            for key in ("step_time_s", "tokens_per_s", "tokens_per_s_per_gpu"):
                if key in rec:
                    rec[key] = parse_real(key, rec[key], least=0.0,
                                          most=MAX_TOKENS_PER_S if key != "step_time_s" else MAX_SECONDS,
                                          strictly_above=True)
            if "warmup" in rec:
                rec["warmup"] = parse_whole("warmup", rec["warmup"], least=0, most=10 ** 9)
        except InputError as err:
            raise InputError(f"{what} line {i}: {err}") from None
        out.append(rec)
    return out


#: the framework options (eval's framework=) a log's trainer runs: Megatron-LM's and Megatron-Bridge's lines come from
#: Megatron-Core with its DDP or its FSDP, torchtitan's from FSDP2
LOG_FRAMEWORKS = {"megatron": ("megatron", "megatron_fsdp"), "nemo": ("megatron", "megatron_fsdp"),
                  "torchtitan": ("fsdp2",)}


def _step_seconds(rec: dict, inputs, where: Path, what: str) -> tuple[float, str]:
    """(measured seconds per step, how they were read) of one run."""
    given = [k for k in MEASUREMENTS if k in rec]
    if len(given) != 1:
        raise InputError(f"{what}: give exactly one of {', '.join(MEASUREMENTS)} (got {', '.join(given) or 'none'})")
    v = inputs.values
    tokens = v["b"] * v["s"]                           # tokens per step: the global batch b of s tokens
    gpus = v["d"] * v["t"] * v["p"] * v["c"]
    key = given[0]
    if "warmup" in rec and key != "log":
        raise InputError(f"{what}: warmup counts a log's first iterations; this run gives {key}, no log: leave warmup "
                         "out")
    if key == "step_time_s":
        return float(rec[key]), "step_time_s"
    if key == "tokens_per_s":
        return tokens / float(rec[key]), f"b·s / tokens_per_s = {tokens:g} / {rec[key]:g}"
    if key == "tokens_per_s_per_gpu":
        return tokens / (float(rec[key]) * gpus), f"b·s / (tokens_per_s_per_gpu · {gpus:g} GPUs)"
    log = Path(rec["log"])
    log = log if log.is_absolute() else where / log
    warmup = int(rec.get("warmup", WARMUP))
    try:
        reading = read_log(log, warmup)
    except InputError as err:           # the log's own complaint, said of the run that names it
        raise InputError(f"{what}: {err}") from None
    if reading.batches and int(v["b"]) not in reading.batches:
        raise InputError(f"{what}: its log's lines print global batch size {', '.join(map(str, sorted(reading.batches)))}"
                         f", its words b={int(v['b'])}: give the run the log's batch (or the log of this run)")
    timed = reading.at_batch(int(v["b"]))
    if len(timed) < MIN_LOG_LINES:
        raise InputError(f"{what}: {len(timed)} of its log's lines after the warm-up print global batch size "
                         f"{int(v['b'])} (the others {', '.join(map(str, sorted(reading.batches - {int(v['b'])})))}); "
                         f"the median needs at least {MIN_LOG_LINES}: give a longer log")
    median = _median(timed)
    low, high = _quartiles(timed)
    if high - low > LOG_SPREAD * median:
        notes.add(f"{what}: its log's kept lines spread from {min(timed):.4g} to {max(timed):.4g} {reading.unit}, "
                  f"their middle half {low:.4g} to {high:.4g} {reading.unit} around the median {median:.4g} fitted: "
                  "a step that changed mid-run or alternates has no one time; give the stretch of the log that is "
                  "the run's steady state (or its step_time_s)")
    other = reading.kept - len(timed)
    how = (f"{reading.framework} log {rec['log']}: median of {len(timed)} logged lines after {warmup} warm-up "
           f"iterations ({reading.skipped} line{'' if reading.skipped == 1 else 's'} skipped"
           + (f"; {other} line{'' if other == 1 else 's'} at another global batch size "
              f"({', '.join(map(str, sorted(reading.batches - {int(v['b'])})))}, a ramp-up) left out" if other else "")
           + (f"; {reading.unread} line{'' if reading.unread == 1 else 's'} naming an iteration without its "
              f"{'time' if reading.unit == 's' else 'tps'} not read" if reading.unread else "")
           + ")")
    priced = str(inputs.options.get("framework", ""))
    allowed = LOG_FRAMEWORKS[reading.framework]
    if priced not in allowed:
        # a log is its trainer's: the run priced as another framework would be fitted and recorded as that one
        asked = " or ".join(f"framework={name}" for name in allowed)
        raise InputError(f"{what}: its log is {reading.framework}'s but its words price framework={priced}: give "
                         f"{asked} in its words")
    if reading.unit == "s":
        return median, how
    return tokens / (median * gpus), how + f", b·s / (tps · {gpus:g} GPUs)"


def _constant_refusal(words: list) -> str | None:
    """Why a run's words cannot be fitted, or None: they type a constant the fit sets (eval would take it, the fit
    would not, and the run would be priced with a value it was not measured at)."""
    from ..presets.hardware_values import STEP_TIME_NAMES

    typed = [name for name in STEP_TIME_NAMES if any(str(w).split("=", 1)[0] == name for w in words)]
    if not typed:
        return None
    return (f"its words type {', '.join(typed)}, a constant calibrate-step fits: leave it out of the run's words "
            f"(--hold {typed[0]} keeps it at the base hardware's value for every run)")


def _dtype_refusal(dtype, words: list, given: str) -> str | None:
    """Why a run's ``dtype`` cannot be fitted, or None: at a --dtype no fit measured (hardware_values.dtype_measured:
    an fp8 or fp32 bf16 run) the matmuls are timed at that dtype's peak, so the fitted eta would be a share of it,
    while the hardware file written holds eta as every command reads it, a share of the bf16 peak."""
    from ..presets.hardware_values import MEASURED_DTYPES, dtype_measured
    from ..training.settings import PRECISIONS

    precision = next((str(w).split("=", 1)[1] for w in words if str(w).startswith("precision=")), "bf16")
    if dtype is None or dtype_measured(str(dtype), precision):
        return None
    if precision != "bf16":
        return (f"{given} {dtype} would price the messages of a precision={precision} run in {dtype} elements, which "
                f"no fitted run moved; leave it out (bf16): the dtypes calibrate-step fits: "
                f"{', '.join(MEASURED_DTYPES)}")
    return (f"{given} {dtype} would time the matmuls at the {dtype} peak and fit eta as a share of it, but the "
            f"hardware file holds eta as a share of the bf16 peak, as eval and plan read it: give a run of an FP8 or "
            f"FP4 recipe its precision= in its words ({', '.join(p for p in PRECISIONS if p != 'bf16')}: its linear "
            f"GEMMs at that peak, the rest in bf16); the dtypes calibrate-step fits: {', '.join(MEASURED_DTYPES)}")


#: the words of a run that retype its hardware: the peaks, which a part without a datasheet peak needs typed; the HBM
#: bandwidth and the links, which the written file keeps from the base; the GPUs per node
PEAK_WORDS = PEAK_NAMES
LINK_WORDS = ("hbm", "alpha", "beta", "gamma", "alpha_inter", "beta_inter", "bw", "bw_inter")
NODE_WORDS = ("G", "gpus_per_node")


def typed_hardware(path) -> list[tuple[str, dict]]:
    """Each run's id and the hardware words its words type (name → text, :data:`PEAK_WORDS`, :data:`LINK_WORDS`,
    :data:`NODE_WORDS`), in the file's order: what the file calibrate-step writes must keep, or refuse."""
    out = []
    for i, rec in enumerate(_records(path)):
        words = rec.get("words", "")
        words = words.split() if isinstance(words, str) else list(words)
        typed = {}
        for word in words:
            name, sep, text = str(word).partition("=")
            if sep and name in PEAK_WORDS + LINK_WORDS + NODE_WORDS:
                typed[name] = text
        out.append((str(rec.get("id") or f"run {i + 1}"), typed))
    return out


def files_read(path) -> list[tuple[str, str]]:
    """The files reading the runs of ``path`` opens, as (what, path) pairs: the runs file, and each run's log and
    model config (relative to the runs file)."""
    where = Path(str(path)).resolve().parent
    out = [("RUNS", str(path))]
    for i, rec in enumerate(_records(path)):
        rid = str(rec.get("id") or f"run {i + 1}")
        for key in ("log", "model_config"):
            given = rec.get(key)
            if isinstance(given, str) and given:
                what = "the log" if key == "log" else "the model config"
                out.append((f"{what} of run {rid!r}", str(given if Path(given).is_absolute() else where / given)))
    return out


def read_runs(path, hardware: str, dtype: str | None = None) -> tuple[list, dict]:
    """(the runs of ``path`` bound on the base ``hardware`` (preset or file), as
    :class:`~symcomm.measurement.step_fit.MeasuredRun`; run id → how its step time was read)."""
    from ..training.answers import step_inputs

    where = Path(str(path)).resolve().parent
    out, read_as = [], {}
    logs: dict = {}                       # each log read → the run that read it
    unread: dict[str, list[str]] = {}     # names typed but not read → the runs that typed them
    for i, rec in enumerate(_records(path)):
        rid = str(rec.get("id") or f"run {i + 1}")
        if not rid.isprintable():       # printed in the report's table: a control character would break it
            raise InputError(f"RUNS {str(path)!r}, run {i + 1}: its id {rid[:40]!r} holds a control character; "
                             "give printable text")
        what = f"RUNS {str(path)!r}, run {rid!r}"
        words = rec.get("words", "")
        words = words.split() if isinstance(words, str) else list(words)
        config = rec.get("model_config")
        config = str(config if Path(config).is_absolute() else where / config) if config else None
        args = SimpleNamespace(name="hybrid", assignments=words, algorithm=None, dtype=rec.get("dtype", dtype),
                               backend=None, model=rec.get("model"), model_config=config, hardware=hardware)
        refused = (_dtype_refusal(args.dtype, words, "its field 'dtype'" if "dtype" in rec else "--dtype")
                   or _constant_refusal(words))
        if refused:
            raise InputError(f"{what}: {refused}")
        try:
            with notes.collected() as said:
                inputs = step_inputs(args, fitting=True)
        except InputError as err:
            # a run without its model field reads as missing the model's sizes: say which field gives them
            whose = ("; it has no field 'model' or 'model_config' (a preset name or a model file) to give the model's "
                     "sizes" if str(err).startswith("missing ") and not rec.get("model") and not config else "")
            raise InputError(f"{what}: {err}{whose}") from None
        for note in said:
            if note.unread:
                unread.setdefault(", ".join(note.unread), []).append(rid)
            else:
                notes.add(note.text, restates_default=note.restates_default)
        if isinstance(rec.get("log"), str):
            log = Path(rec["log"]) if Path(rec["log"]).is_absolute() else where / rec["log"]
            other = logs.setdefault(log.resolve(), rid)
            if other != rid:
                raise InputError(f"{what}: its log {rec['log']!r} is run {other!r}'s too: one log measures one run")
        from ..training.frameworks import FRAMEWORKS

        label, priced = str(rec.get("framework") or ""), str(inputs.options.get("framework", ""))
        meant = {**{name: (name,) for name in FRAMEWORKS}, **LOG_FRAMEWORKS}.get(label.lower())
        if meant is not None and priced not in meant:
            # the field labels the run for the report's table; a label naming a trainer its words do not price would
            # be read as that trainer's error
            raise InputError(f"{what}: its field 'framework' says {label}, its words price framework={priced}: give "
                             f"{' or '.join(f'framework={name}' for name in meant)} in its words (the field is a label)")
        seconds, how = _step_seconds(rec, inputs, where, what)
        if not (math.isfinite(seconds) and 0 < seconds <= MAX_SECONDS):
            raise InputError(f"{what}: the measured step time {seconds!r} s is not a positive finite number "
                             f"of at most {MAX_SECONDS:g} s")
        out.append(MeasuredRun(rid, inputs, seconds, rec.get("source", ""), rec.get("framework", "")))
        read_as[rid] = how
    # a name typed but not read is said once for the file, with the runs that typed it, where each run's binding
    # says it beside its own setting (one line per run and setting in a file of many runs)
    for names, ids in unread.items():
        shown = ", ".join(ids[:3]) + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")
        notes.add(f"{names} typed but not read by the step model in {len(ids)} of the {len(out)} runs ({shown})")
    return out, read_as
