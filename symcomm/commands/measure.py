"""``symcomm measure`` and ``symcomm validate``: wire bytes of torch.distributed/gloo on loopback, against a
backend profile.

The command layer of :mod:`symcomm.measurement.measure` (the harness): the options checked, the progress bar
given stderr, the result printed (JSON or a table) and saved (``-o``).  The harness is reached through its
module (``harness.sweep``), so that tests can stand in for it.
"""

from __future__ import annotations

import json
import sys

from ..base.errors import InputError
from ..collectives.profiles import PROFILES
from ..measurement import measure as harness
from ..measurement.measure import (DEFAULT_RANKS, DEFAULT_SIZES, MAX_FROM_BYTES, MAX_RANKS, MAX_SIZE, MAX_TIMEOUT,
                                   MeasureError, Progress, report)
from ..measurement.predict import PRIMITIVES, STEPS, rows_from


def _ints(text: str, what: str, least: int, most: int, too_few: str, too_many: str) -> tuple[int, ...]:
    """A comma-separated list of whole numbers in [least, most], each once, in the order given."""
    from ..base.inputs import MAX_VALUE, parse_list

    values = parse_list(what, text, least=0, most=MAX_VALUE)   # the grammar, the count, the magnitude
    for value in values:
        if value < least:
            raise InputError(f"--{what} {value} is not allowed: {too_few}")
        if value > most:
            raise InputError(f"--{what} {value} is not allowed: {too_many}")
    return tuple(dict.fromkeys(values))


def _names(text: str, allowed, what: str) -> tuple[str, ...]:
    if text in ("", "none"):
        return ()
    names = tuple(w.strip() for w in text.split(","))
    for name in names:
        if name not in allowed:
            shown = name if len(name) <= 40 else name[:37] + "..."
            raise InputError(f"--{what} {shown!r} is not allowed; choose from {', '.join(allowed)}")
    return tuple(dict.fromkeys(names))


def _options(args):
    from ..base.inputs import parse_real

    ranks = _ints(args.ranks, "ranks", 2, MAX_RANKS, "a group needs at least 2 ranks",
                  f"at most {MAX_RANKS} ranks on this machine")
    sizes = _ints(args.sizes, "sizes", 1, MAX_SIZE, "give at least 1 element",
                  "at most 2**23 elements (32 MiB of float32)")
    timeout = parse_real("--timeout", args.timeout, least=0, most=MAX_TIMEOUT, strictly_above=True)
    return dict(ranks=ranks, sizes=sizes, primitives=_names(args.primitives, PRIMITIVES, "primitives"),
                steps=_names(args.steps, STEPS, "steps"), timeout=timeout)


def _print_table(result: dict) -> None:
    print(f"{result['library']}, torch {result['torch']}, backend profile {result['backend']}: "
          f"bytes sent per rank (measured / predicted)")
    for row in result["rows"]:
        size = f"M={row['M']}" if row["kind"] == "op" else f"Φ={row['Phi']}"
        pred = row.get("predicted")
        status = "ok  " if row["matched"] else "MISS"
        busiest = max(row["measured"])
        line = f"{status} {row['name']:<15} N={row['N']:<2} {size:<11} busiest {busiest:>11,}"
        if pred:
            ratio = busiest / max(pred) if max(pred) else float("nan")
            line += f" / {max(pred):>11,}  ratio {ratio:.6f}"
        model = row["model_payload"]
        line += f"  model payload {max(v for k, v in model.items() if k != 'total'):,}"
        print(line + f"  [{row.get('algorithm', row.get('strategy'))}]")
        for problem in row.get("problems", []):
            print(f"       {problem}")
    print(f"{result['matched']} of {result['count']} matched")


def _emit(result: dict, args) -> None:
    """Save (--output: a regular file, replaced atomically), then print as JSON (--json) or as a table."""
    if args.output is not None:
        from ..base.files import write_file
        write_file(args.output, json.dumps(result, indent=1, ensure_ascii=False) + "\n", "-o/--output")
    if args.json:
        print(json.dumps(result, indent=1, ensure_ascii=False))
    else:
        _print_table(result)


def cmd_measure(args) -> int:
    _emit(_run(args), args)
    return 0


def _run(args) -> dict:
    """The result of the command: every option and the --output path checked first, so that
    no bad path or value costs a finished measurement."""
    from ..base.files import check_output
    from ..base.inputs import read_json

    if args.backend not in PROFILES:
        shown = args.backend if len(args.backend) <= 40 else args.backend[:37] + "..."
        raise InputError(f"--backend {shown!r} is not allowed; choose one of: {', '.join(PROFILES)}")
    if args.backend != "gloo":
        raise InputError(f"--backend {args.backend}: only gloo can be measured here (torch.distributed on loopback)")
    if args.output is not None:
        check_output(args.output, "-o/--output")
    if getattr(args, "input", None):
        saved = read_json(args.input, "--from", "measurement", limit=MAX_FROM_BYTES)
        rows = rows_from(saved, args.backend, what=f"--from {str(args.input)!r}", checked=True)
        return report(rows, args.backend)
    opts = _options(args)
    # said before any progress bar is drawn: without torch nothing can be measured
    if not harness.torch_installed():
        raise InputError("torch is not installed, so nothing can be measured: pip install -e '.[measure]' "
                         "(torch==2.13.0, CPU build), or give --from a saved measurement")
    bar = None if args.no_progress else Progress(sys.stderr)     # the command's bar, on stderr
    try:
        rows = harness.sweep(backend=args.backend, progress=bar, **opts)
    except MeasureError as err:
        raise InputError(str(err)) from None
    finally:
        if bar is not None:
            bar.close()
    return report(rows, args.backend)


def cmd_validate(args) -> int:
    result = _run(args)
    _emit(result, args)
    misses = [r for r in result["rows"] if not r["matched"]]
    for row in misses:
        size = f"M={row['M']}" if row["kind"] == "op" else f"Φ={row['Phi']}"
        print(f"symcomm: validate: {row['name']} N={row['N']} {size} misses the {result['backend']} "
              f"profile: {'; '.join(row.get('problems', []))}", file=sys.stderr)
    return 1 if misses else 0


def register_cli(subparsers) -> None:
    for name, fn, text in (("measure", cmd_measure, "measure wire bytes of torch.distributed/gloo on loopback"),
                           ("validate", cmd_validate, "measure and compare with a backend profile; exit 1 on a miss")):
        p = subparsers.add_parser(name, help=text)
        p.add_argument("--backend", default="gloo", help=f"profile: {', '.join(PROFILES)} (only gloo is measurable)")
        p.add_argument("--ranks", default=",".join(map(str, DEFAULT_RANKS)), help="N values, e.g. 2,3,4,8 (≤ 8)")
        p.add_argument("--sizes", default=",".join(f"2**{m.bit_length() - 1}" for m in DEFAULT_SIZES),
                       help="M values in float32 elements, e.g. 2**10,2**16,2**23 (≤ 2**23; rounded down to a multiple of N)")
        p.add_argument("--primitives", default=",".join(PRIMITIVES),
                       help="comma-separated primitives to measure (default: all nine)")
        p.add_argument("--steps", default=",".join(STEPS), help="training steps to measure: ddp,fsdp or none")
        p.add_argument("--timeout", type=str, default="180",
                       help="seconds allowed per group of N ranks (> 0, ≤ 86400)")
        p.add_argument("--json", action="store_true", help="one JSON document on stdout instead of the text")
        p.add_argument("-o", "--output", help="also write the JSON result to this file")
        p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
        if name == "validate":
            p.add_argument("--from", dest="input", metavar="FILE",
                           help="validate a measurement file instead of measuring (JSON, ≤ 64 MiB)")
        p.set_defaults(run=fn)
