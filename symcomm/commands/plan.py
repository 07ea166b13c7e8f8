"""``symcomm plan``: every valid layout ranked by the step-time model.

The command layer of :mod:`symcomm.planner`: its parser (built from ``planner.FLAGS``, the options the Python
API fills too), and the printing of the answer as text, JSON or CSV.  The check of every value is the
planner's (:func:`symcomm.planner.request_from_args`, shared with ``symcomm.plan``).  Like the planner, this
module imports no SymPy: ``symcomm plan`` comes here straight from the entry, without the rest of the CLI.
"""

from __future__ import annotations

import json

from ..planner import FLAGS, KEYS, TYPED, plan, request_from_args, to_csv, to_json, to_text, top_from_args


def register_cli(subparsers) -> None:
    p = subparsers.add_parser("plan", help="rank every valid layout that fits in memory by the step-time model")
    p.add_argument("assignments", nargs="*", metavar="KEY=VALUE",
                   help=f"the layout as eval hybrid spells it, instead of (or with) the flags: {', '.join(KEYS)} "
                        "(t=8 p=4 d=32 m=8 zero=1 sp=1 recompute=selective b=1024 s=8192); and, in place of the "
                        f"hardware's, {', '.join(TYPED)} (eta=0.6: the step time's error is then unknown)")
    for flag, default, what in FLAGS:
        if default is False:
            p.add_argument(flag, action="store_true", help=what)
        else:
            p.add_argument(flag, default=None, help=what)
    p.set_defaults(run=cmd_plan)


def cmd_plan(args) -> int:
    req = request_from_args(args)
    top = top_from_args(args)
    result = plan(req, top)
    if args.json:
        print(json.dumps(to_json(result, top), indent=2, ensure_ascii=False, allow_nan=False))   # strict JSON
    elif args.csv:
        print(to_csv(result, top), end="")
    else:
        print(to_text(result, top))
    return 0


def main(argv: list[str]) -> int:
    """``symcomm plan ...`` without the rest of the CLI (whose import loads SymPy): the same parser class, the
    same one-line errors and exit statuses as :func:`symcomm.commands.main.main` (:func:`symcomm.commands.runner.run`)."""
    from .runner import run_one

    return run_one(register_cli, argv)
