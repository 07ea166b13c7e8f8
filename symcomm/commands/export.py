"""``symcomm export``: the closed forms as LaTeX, Markdown, Python, C, JavaScript or JSON.

The command layer of :mod:`symcomm.views.export`: it parses the options and prints; the formats
and the writing of ``-o`` are the export package's.
"""

from __future__ import annotations

from ..base.errors import InputError
from ..views.export import FORMATS, export, select


def register_cli(subparsers) -> None:
    """``symcomm export --format F [--only NAME...] [--numpy] [-o PATH] [--list]``."""
    p = subparsers.add_parser(
        "export", help="closed-form formulas as LaTeX, Markdown, Python, C, JavaScript or JSON",
        description="Every formula of eval as a function of symcomm's symbols (names as eval's KEY=VALUE words). "
                    "Counts are in elements (of B_e bytes where a subject mixes widths: below; eval without --dtype "
                    "counts each term in its own elements, so compare bytes); beta, gamma (and beta_inter) are per element: the per-byte constants eval "
                    "takes times the bytes per element. A formula of a subject that runs some terms in a width of "
                    "their own (Megatron's fp32 gradient reductions, ring-flash-attn's fp32 dK, dV) takes B_e too, the "
                    "bytes per element of the run's dtype (2 for bf16), and counts those terms in elements of that "
                    "dtype: its time is then eval's at --dtype. Each function checks its arguments and the rules "
                    "between them as eval does (Requires: in its text), but the --numpy module, which checks nothing.")
    p.add_argument("--format", default=None, help="required (but with --list): " + ", ".join(FORMATS))
    p.add_argument("--only", nargs="+", metavar="NAME",
                   help="formula, subject (all_reduce__ring), primitive or strategy names")
    p.add_argument("--numpy", action="store_true", help="python: vectorised numpy functions (floats)")
    p.add_argument("-o", "--output", metavar="PATH", help="write to PATH atomically (default: stdout)")
    p.add_argument("--list", action="store_true", help="print the formula names and exit")
    p.set_defaults(run=cmd_export)


def cmd_export(args) -> int:
    import sys

    try:
        if args.list:
            for f in select(args.only):
                print(f.name)
            return 0
        if args.format is None:
            raise ValueError(f"--format is required; choose one of {', '.join(FORMATS)}")
        text = export(args.format, args.only, numpy=args.numpy, path=args.output)
    except ValueError as err:
        raise InputError(str(err)) from None
    if args.output is None:
        sys.stdout.write(text)
    return 0
