"""``symcomm calibrate`` and ``symcomm nccl-tests``: α, β (and an efficiency curve) fitted to nccl-tests logs,
and an nccl-tests table predicted from a hardware preset or file.

The command layer of :mod:`symcomm.measurement.calibrate` and :mod:`symcomm.measurement.nccl_tests`: the
options checked, every output path checked before anything is computed, the files written, the text or JSON
printed.  The fits and predictions are the measurement wing's.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from ..base.errors import InputError
from ..base.files import check_output, refuse_overwriting, same_path, write_file
from ..base.inputs import parse_whole
from ..base.notes import add as add_note
from ..measurement import nccl_prediction, nccl_tests
from ..measurement.calibrate import _base_preset, calibrate
from ..measurement.calibration_file import calibrated_range, extrapolated, hardware_document, model_from
from ..measurement.calibration_report import _bytes, _sizes_text, report_text


def _plot_format(path: str) -> str:
    """The image format ``--plot`` names by its extension (what matplotlib writes)."""
    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in PLOT_FORMATS:
        raise InputError(f"--plot {path!r}: the extension names the format; choose one of "
                         f"{', '.join('.' + k for k in PLOT_FORMATS)}")
    return suffix


#: --plot formats: extension → matplotlib's savefig keywords (no dates, so a rerun writes the same bytes)
PLOT_FORMATS = {"svg": {"metadata": {"Date": None}}, "png": {}, "pdf": {"metadata": {"CreationDate": None}}}


def cmd_calibrate(args) -> int:
    ranks = parse_whole("--ranks", args.ranks, least=1, most=1 << 20) if args.ranks is not None else None
    gpn = (parse_whole("--gpus-per-node", args.gpus_per_node, least=1, most=1024)
           if args.gpus_per_node is not None else None)
    for option, value in (("-o", args.output), ("--plot", args.plot)):
        if value is not None and not str(value).strip():
            raise InputError(f"{option} {value!r}: an empty file name; give a path ({option} "
                             f"{'hw.json' if option == '-o' else 'fit.svg'}) or leave {option} out")
    # the files this command reads, which neither output may replace
    read = [("the log", log) for log in args.logs] + ([("--base", args.base)] if args.base else [])
    if args.output is not None:
        check_output(args.output, "-o")
        refuse_overwriting(args.output, read, "-o")
    if args.output is not None and args.plot is not None and same_path(args.output, args.plot):
        raise InputError(f"-o {args.output} and --plot {args.plot} name one file: the plot would replace the hardware "
                         "file; give each its own path")
    if args.plot is not None:
        plot_format = _plot_format(args.plot)
        check_output(args.plot, "--plot")
        refuse_overwriting(args.plot, read, "--plot")
        try:
            import matplotlib
        except ImportError:
            raise InputError("--plot needs matplotlib: pip install 'symcomm[plots]'") from None
    if args.name is not None and not (0 < len(args.name) <= 200 and args.name.isprintable()):
        raise InputError("--name: give 1 to 200 printable characters")
    # everything is computed and checked before any file is written
    fits = calibrate(args.logs, ranks, gpn, args.algorithm, args.collective, base=args.base)
    document = None
    if args.output is not None:
        from .. import presets

        # the base the fits held γ of (the same rule, the same logs)
        base = _base_preset([f.log for f in fits], args.base)
        document = hardware_document(fits, base, name=args.name)
        presets.check_hardware_document(document, "the hardware file calibrate would write")
        document_text = json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    image = None
    if args.plot is not None:
        import io

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        from ..views.plots import calibration_vs_measured

        fig, _, _ = calibration_vs_measured([f.as_dict() for f in fits])
        buffer = io.BytesIO()
        fig.savefig(buffer, format=plot_format, bbox_inches="tight", **PLOT_FORMATS[plot_format])
        plt.close(fig)
        image = buffer.getvalue()
    if args.json:
        payload = {"collectives": [f.as_dict() for f in fits]}
        if args.output is not None:
            payload["hardware_file"] = str(args.output)
        text = json.dumps(payload, indent=2, ensure_ascii=False, allow_nan=False)
    else:
        text = report_text(fits)
    if document is not None:
        write_file(args.output, document_text, "-o")
    if image is not None:
        write_file(args.plot, image, "--plot")
    print(text)
    if not args.json and args.output is not None:
        print(f"\nwrote {args.output} (use it as --hardware {args.output})")
    return 0


def parse_size(key: str, text: str) -> int:
    """An nccl-tests size: a whole number with an optional K, M or G (powers of 1024, as its parsesize)."""
    text = str(text).strip()
    unit = 1
    if text and text[-1] in "kKmMgG":
        unit = {"k": 1024, "m": 1024 ** 2, "g": 1024 ** 3}[text[-1].lower()]
        text = text[:-1]
    return parse_whole(key, text, least=0, most=nccl_tests.MAX_BYTES // unit) * unit


def cmd_nccl_tests(args) -> int:
    from .. import presets

    coll = nccl_tests.collective(args.collective)
    ranks = parse_whole("--ranks", args.ranks, least=2, most=1 << 20)     # one rank moves nothing a link model times
    gpn = parse_whole("--gpus-per-node", args.gpus_per_node, least=1, most=1024) if args.gpus_per_node else None
    if not args.hardware:
        raise InputError(f"--hardware is required: a preset ({', '.join(presets.hardware_names())}) or a "
                         "hardware file (calibrate -o writes one)")
    hardware = presets.hardware(args.hardware)
    lo, hi = parse_size("-b", args.minbytes), parse_size("-e", args.maxbytes)
    if lo < 1 or hi < lo:
        raise InputError(f"-b {args.minbytes} and -e {args.maxbytes}: need 1 ≤ -b ≤ -e")
    factor = parse_whole("-f", args.stepfactor, least=1, most=1024) if args.stepfactor else 1
    step = parse_size("-i", args.stepbytes) if args.stepbytes else 0
    if factor <= 1 and step <= 0:
        # nccl-tests adds -i when -f is 1: nothing to add would never leave -b; not guessed as -f 2
        if lo < hi:
            raise InputError(f"-f {args.stepfactor} with -i {args.stepbytes or 0}: the size never grows from -b to -e; "
                             "give -f 2 or more (multiply), or -f 1 with -i the bytes to add")
        factor = 2          # -b = -e: the one size, whatever the step
    if args.datatype not in nccl_tests.DTYPE_BYTES:
        raise InputError(f"-d {args.datatype!r} is not allowed; choose one of {', '.join(nccl_tests.DTYPE_BYTES)}")
    sizes = nccl_prediction.sizes_between(lo, hi, factor if factor > 1 else 1, step)
    model = model_from(hardware, coll, ranks, gpn, args.algorithm)
    # the constants the algorithm's formula reads at these ranks (a two-level one its inter-node pair too), each as used
    read = nccl_prediction.coefficients(coll.primitive, model.algorithm, ranks, [1 << 20], model.gpus_per_node)
    used = ", ".join(f"{name} {model.times.get(name, 0) * 1e6:.4g} us" if name.startswith("alpha")
                     else f"{name} {model.times.get(name, 0):.4g} s/byte"
                     for name in ("alpha", "beta", "alpha_inter", "beta_inter") if name in read and read[name].any())
    header = (f"predicted by symcomm: {coll.name}_perf on {ranks} ranks, --hardware {hardware.name}",
              f"model: catalog {coll.primitive}/{model.algorithm}, {used}"
              + (", efficiency curve of " + model.source if model.sizes else ", no efficiency curve (alpha-beta alone)"),
              f"error: {model.error}")
    text, rows = nccl_prediction.table(model, sizes, args.datatype, header)
    for r in rows:
        if r["bytes"] > 0 and not (math.isfinite(r["time"]) and r["time"] > 0):
            # a calibration of a log that could not determine α and β (written before they were refused)
            raise InputError(f"--hardware {hardware.name}: its {model.algorithm} model predicts {r['time']:g} s for "
                             f"{r['bytes']} bytes (α = {model.times.get('alpha', 0):g} s, β = "
                             f"{model.times.get('beta', 0):g} s/byte); recalibrate it with symcomm calibrate")
    measured = calibrated_range(model)
    outside = extrapolated([r["bytes"] for r in rows], measured)
    for r in rows:
        r["extrapolated"] = r["bytes"] in outside
    notes = list(model.notes)
    if outside:
        notes.append(f"{len(outside)} of the {len(rows)} sizes ({_sizes_text(outside)}) lie outside the calibrated "
                     f"range {_bytes(measured[0])} to {_bytes(measured[1])}: there the efficiency is held at the "
                     "nearest calibrated size's, an extrapolation the log did not measure")
    for note in notes:
        add_note(note)
    if args.json:
        print(json.dumps({"collective": coll.name, "algorithm": model.algorithm, "ranks": ranks,
                          "hardware": hardware.name, "times": model.times,
                          "calibrated_range_bytes": list(measured) if measured else None,
                          "outside_calibrated_range": outside, "notes": notes, "rows": rows},
                         indent=2, allow_nan=False))
    else:
        print(text)
    return 0


def register_cli(subparsers) -> None:
    p = subparsers.add_parser("calibrate", help="fit alpha, beta (and a per-size efficiency curve) to nccl-tests logs")
    p.add_argument("logs", nargs="+", metavar="LOG", help="nccl-tests output (all_reduce_perf ... as printed)")
    p.add_argument("--ranks", help="ranks of a log whose header is cut off")
    p.add_argument("--gpus-per-node", help="GPUs per node of a log without header that spans nodes")
    p.add_argument("--collective", help="the test, when the log does not name it (all_reduce, all_gather, ...)")
    p.add_argument("--algorithm", help="catalog algorithm to fit (default ring; 'best' lets symcomm pick)")
    p.add_argument("--base", help="hardware preset (or file) for what a log cannot measure (memory, HBM, peaks); "
                                  "default: the preset of the log's GPU")
    p.add_argument("--name", default="calibrated", help="name of the written hardware")
    p.add_argument("-o", "--output", help="write a hardware file (JSON) usable as --hardware FILE")
    p.add_argument("--plot", help="draw measured vs fitted time and busbw (.svg, .png or .pdf: the extension "
                                  "names the format)")
    p.add_argument("--json", action="store_true", help="one JSON document on stdout instead of the text")
    p.set_defaults(run=cmd_calibrate)

    p = subparsers.add_parser("nccl-tests", help="predict an nccl-tests table (its own layout) from a hardware preset or file")
    p.add_argument("collective", help=f"one of {', '.join(nccl_tests.COLLECTIVES)}")
    p.add_argument("--hardware", help="preset name or hardware file (calibrate -o)")
    p.add_argument("--ranks", required=True, help="ranks N")
    p.add_argument("--gpus-per-node", help="GPUs per node (default: the hardware's)")
    p.add_argument("--algorithm", help="catalog algorithm (default: the calibrated one, else ring)")
    p.add_argument("-b", "--minbytes", default="8", help="smallest size (K, M, G: powers of 1024); default 8")
    p.add_argument("-e", "--maxbytes", default="8G", help="largest size; default 8G")
    p.add_argument("-f", "--stepfactor", default="2", help="multiply the size by this; default 2")
    p.add_argument("-i", "--stepbytes", help="add this to the size instead (with -f 1)")
    p.add_argument("-d", "--datatype", default="float", help="nccl-tests type name (float, half, bfloat16...); default float")
    p.add_argument("--json", action="store_true", help="one JSON document on stdout instead of the text")
    p.set_defaults(run=cmd_nccl_tests)
