"""symcomm: closed forms, numbers, proofs, layouts and calibration of training communication (COMMAND --help).

The commands: list, show, eval, compare, prove, presets, plan, export, measure, validate,
calibrate, nccl-tests, calibrate-step.

Bad input gets one line on stderr naming the parameter and what is allowed, and exit
status 2; a failed proof exits 1.  Exact values stay exact: integers print as integers.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import sys
import time as _time
import sympy as sp

from ..core import symbols as S
from ..collectives.algorithms import algorithms_of
from ..training.answers import compare_payload
from ..training.binding import _SPELLED, _TIME_NAMES, TIME_RULE, UsageError, _strategies, split_assignments
from ..base import notes
from . import evaluate, runner
from ..numbers.evaluation import exact, plain
from ..base.inputs import parse_number
from ..collectives.primitives import PRIMITIVES
from ..core.printing import render
from ..training.subjects import Subject, aliases, option_names, subject
from ..base.units import DTYPES, human_size, human_time

#: More subcommands: "module:function", the function takes argparse's subparsers object,
#: adds its parser(s) and sets ``run`` (a function of args returning the exit status;
#: raise UsageError or ValueError for bad input).
SUBCOMMANDS: tuple[str, ...] = ("symcomm.commands.export:register_cli", "symcomm.commands.measure:register_cli",
                               "symcomm.commands.plan:register_cli", "symcomm.commands.calibrate:register_cli",
                               "symcomm.commands.calibrate_step:register_cli")

SHOW_FORMATS = ("pretty", "text", "latex", "markdown", "python", "json")


def _show_values(target: Subject, texts: dict) -> dict:
    """KEY=VALUE given to show: symbols substituted into the formulas (exactly), anything else refused."""
    known = {S.BY_SYMBOL[x].cli_name for x in target.symbols() if x in S.BY_SYMBOL}
    out = {}
    for key, text in texts.items():
        if key in _TIME_NAMES or key in ("bw", "bw_inter"):
            # the closed forms count elements, so a β substituted here would be per element while eval's is per
            # byte: one question, one code path (eval's), not two answers in different units
            raise UsageError(f"{key} is not taken by show: its closed forms count elements and keep the times "
                             f"symbolic; for a time in seconds use eval, which prices bytes (elements × --dtype): "
                             f"symcomm eval {target.name} {' '.join(f'{k}={v}' for k, v in texts.items())}")
        if key not in known:
            raise UsageError(f"unknown parameter {key!r} for {target.label}; its formulas use: {', '.join(sorted(known))}")
        sym = S.symbol(key)
        out[sym] = parse_number(_SPELLED.get(key, key), text, integer=bool(sym.is_integer), least=target.least.get(sym, S.least_value(sym)))
    problems = target.problems(out) if out else []
    if problems:
        raise UsageError(problems[0])
    return out


def cmd_show(args) -> int:
    texts, option_texts = split_assignments(args.assignments, set(option_names(args.name)))
    target = subject(args.name, args.algorithm, **option_texts)
    if args.format not in SHOW_FORMATS:
        raise UsageError(f"--format {args.format!r} is not allowed; choose one of {', '.join(SHOW_FORMATS)}")
    values = _show_values(target, texts)
    fields = {key: expr for key, expr in target.quantities().items() if key != "time" or expr != 0}
    shown = {key: exact(expr, values) if values else expr for key, expr in fields.items()}
    given = ", ".join(f"{S.BY_SYMBOL[k].cli_name}={v}" for k, v in values.items())
    if args.format == "json":
        from ..core.exprtree import to_tree

        print(json.dumps({
            "name": target.name, **({"algorithm": target.algorithm} if target.kind == "primitive" else
                                     {"options": dict(target.options)}),
            "values": {S.BY_SYMBOL[k].cli_name: plain(v) for k, v in values.items()},
            "convention": target.convention, "requires": list(target.requires), "source": target.source,
            "formulas": {key: {"text": sp.sstr(expr), "latex": render(expr, "latex"), "tree": to_tree(expr)}
                         for key, expr in shown.items()},
        }, indent=2, ensure_ascii=False))
        return 0
    if args.format == "markdown":
        print(f"**{target.label}**" + (f" at {given}" if given else "") + "\n")
        print("| quantity | formula |\n|---|---|")
        for key, expr in shown.items():
            print(f"| {key} | {render(expr, 'markdown')} |")
        print(f"\n{target.convention}. Source: {target.source}")
        return 0
    print(f"{target.label}" + (f"   at {given} (substituted; the rest stays symbolic)" if given else ""))
    print(f"  convention: {target.convention}")
    if target.requires:
        print(f"  requires:   {'; '.join(target.requires)}")
    print(f"  source:     {target.source}")
    for key, expr in shown.items():
        if args.format == "pretty":
            block = sp.pretty(expr, use_unicode=True, wrap_line=False).splitlines() or [""]
            print(f"  {key:<12} {block[0]}")
            for line in block[1:]:
                print(f"  {'':<12} {line}")
        else:
            print(f"  {key:<12} {render(expr, args.format)}")
    for term in target.terms:
        count, group, message = (exact(x, values) if values else x for x in (term.count, term.group, term.message))
        print(f"  · {term.label}: {sp.sstr(count)} × {term.primitive}/{term.algorithm} "
              f"on {sp.sstr(group)} ranks, message {sp.sstr(message)}")
    return 0


def cmd_compare(args) -> int:
    """Every algorithm of a primitive side by side (symcomm.training.answers.compare_payload), printed."""
    out = compare_payload(args)
    rows, ranges, skipped = out["algorithms"], out["fastest_by_message_size"], out["skipped"]
    best, dtype, scale = next(r for r in rows if r["algorithm"] == out["best"]), out["dtype"], out["bytes_per_element"]
    if args.json:
        print(json.dumps(out, indent=2, ensure_ascii=False, allow_nan=False))
        return 0
    # the counts eval prints, in bytes of dtype; the inter-node pair only when a two-level algorithm ran
    columns = [("alpha", "α msgs", 8), ("beta", "β bytes", 16), ("gamma", "γ bytes", 16)]
    if any("alpha_inter" in r for r in rows):
        columns += [("alpha_inter", "α_inter msgs", 13), ("beta_inter", "β_inter bytes", 16)]
    group = f"N={out['N']}, " if out["N"] is not None else "2 ranks, "
    print(f"{args.name} on {group}M={out['M']:,} elements ({dtype}, {scale} bytes each): counts on the "
          "critical path and time, each algorithm evaluated as eval --algorithm evaluates it")
    print(f"  {'algorithm':<24}" + "".join(f" {title:>{width}}" for _, title, width in columns) + f" {'time':>10}")
    for r in sorted(rows, key=lambda r: r["time"]):
        mark = "  ← best" if r is best else ""
        if r["algorithm"] in out["ranges_leave_out"]:
            # a switch that adds (NVLink SHARP, IB SHARP): no cluster without one runs it
            mark += "  (needs a switch that reduces: NVLS, SHARP)"
        print(f"  {r['algorithm']:<24}" + "".join(f" {r[key]:>{width},}" if key in r else f" {'–':>{width}}"
                                                  for key, _, width in columns)
              + f" {human_time(r['time']):>10}{mark}")
    # the ranges compare the algorithms that ran at these values: one refused at this M (ring where N does not divide
    # M) is left out of every range, though its line exists at the sizes it takes
    absent = [line.split(":", 1)[0] for line in skipped]
    print("  fastest by message size among host-based algorithms (elements; where the lines cross)"
          + (f", of those that ran at these values (not {', '.join(absent)}: see below)" if absent else "") + ":")
    for r in ranges:
        crossing = (f"   (overtakes at M ≈ {r['crossover_elements']:,.0f} elements, "
                    f"{human_size(r['crossover_elements'] * scale, 'bytes')})") if "crossover_elements" in r else ""
        upper = "and above" if r is ranges[-1] else f"{r['to_elements']:,}"
        print(f"    {r['from_elements']:>15,} – {upper:<15} {r['algorithm']}{crossing}")
    for line in skipped:
        print(f"  not run: {line}")
    return 0


def cmd_list(args) -> int:
    primitives = [
        {"name": p.name, "title": p.title, "pattern": p.pattern, "reduces": p.reduces,
         "algorithms": [{"name": a.name, "requires": [r.text for r in a.requires],
                         "summary": a.summary, "source": a.source}
                        for a in algorithms_of(p.name)]}
        for p in PRIMITIVES.values()
    ]
    listed = list(_strategies().items()) + [(alias, _strategies()[own]) for alias, own in aliases().items()]
    strategies = [
        {"name": key, "title": s.title, "options": {n: {"default": o.text(o.default), "allowed": list(o.texts)}
                                                    for n, o in s.options.items()},
         **({"alias_of": s.name} if key != s.name else {})}
        for key, s in listed
    ]
    # the step model's own settings (eval hybrid and plan with --hardware): no strategy option, so listed apart
    from ..training.settings import STEP_OPTIONS

    step = {o.name: {"default": o.text(o.default), "allowed": list(o.texts)} for o in STEP_OPTIONS}
    if args.json:
        print(json.dumps({"primitives": primitives, "strategies": strategies, "hybrid_step_options": step},
                         indent=2, ensure_ascii=False))
        return 0
    for p in primitives:
        print(f"{p['name']:<15} {', '.join(a['name'] for a in p['algorithms'])}")
    if strategies:
        print()
        for s in strategies:
            opts = " ".join(f"{n}={o['default']}" for n, o in s["options"].items())
            alias = f" (alias of {s['alias_of']})" if "alias_of" in s else ""
            print(f"{s['name']:<15} {s['title']}{alias}" + (f"  [{opts}]" if opts else ""))
            if s["name"] == "hybrid":
                print(f"{'':<15} with --hardware, the step model's settings too: ["
                      + " ".join(f"{n}={o['default']}" for n, o in step.items()) + "]")
    return 0


def cmd_presets(args) -> int:
    """Every hardware and model preset with its values and sources."""
    from .. import presets

    systems = [presets.describe_hardware(presets.hardware(name)) for name in presets.hardware_names()]
    models = []
    for name in presets.model_names():
        m = presets.model(name)
        models.append({"name": name, "title": m.title, "family": m.family, "values": m.values(),
                       "published_parameters": m.published_parameters, "source": m.source})
    if args.json:
        print(json.dumps({"hardware": systems, "models": models}, indent=2, ensure_ascii=False))
        return 0
    print("hardware (bandwidth per GPU per direction; alpha per message)")
    for h in systems:
        print(f"  {h['name']:<11} {h['title']}")
        for level in ("intra", "inter"):
            x = h[level]
            print(f"    {level}  {x['bytes_per_second'] / 1e9:g} GB/s, alpha {x['latency_s'] * 1e6:g} us: {x['title']} "
                  f"({x['conversion']}; {x['source']}; latency: {x['latency_source']})")
        print(f"    G {h['gpus_per_node']}, memory {h['memory_bytes'] / 1e9:g} GB, HBM {h['hbm_bytes_per_second'] / 1e12:g} TB/s "
              f"({h['source']})")
        if h["peak_flops"]:
            peaks = ", ".join(f"{k} {v / 1e12:g}" for k, v in h["peak_flops"].items())
            print(f"    peak TFLOP/s {peaks} ({h['peak_source']})")
        if h.get("peak_flops_bounds"):
            bounds = ", ".join(f"{k} {lo / 1e12:g} to {hi / 1e12:g}" for k, (lo, hi) in h["peak_flops_bounds"].items())
            print(f"    peak TFLOP/s not published, bounded: {bounds}; the step time needs a typed peak=, peak_fp8= "
                  f"within them ({h['peak_source']})")
        if h["step_time"]:
            consts = ", ".join(f"{k} {v:g}" for k, v in h["step_time"].items())
            print(f"    step time {consts} ({h['step_time_source']})")
    print()
    print("models")
    for m in models:
        shown = " ".join(f"{k}={v}" for k, v in m["values"].items())
        print(f"  {m['name']:<16} {m['title']}: {shown} ({m['source']})")
    return 0


def _progress(text: str) -> None:
    """A progress line on stderr, for a person watching a terminal (never in a pipe or a log)."""
    if sys.stderr.isatty():
        sys.stderr.write("\r\033[K" + text if text else "\r\033[K")
        sys.stderr.flush()


def cmd_prove(args) -> int:
    started = _time.perf_counter()
    _progress("symcomm prove: building the chapters' claims ...")
    from ..derivations import CHAPTERS
    from ..core.proof import check, is_definition

    failed = count = definitions = failed_definitions = 0
    for number, chapter in enumerate(CHAPTERS, 1):
        _progress(f"symcomm prove: chapter {number} of {len(CHAPTERS)} ({chapter.slug}) ...")
        for claim in chapter.all_claims():
            proof = check(claim)
            definition = is_definition(claim)
            if definition:
                definitions += 1
            else:
                count += 1
            if proof:
                if not args.quiet:
                    print(f"{'def' if definition else 'ok':<5} [{chapter.slug}] {claim.name}")
            else:
                if definition:
                    failed_definitions += 1
                else:
                    failed += 1
                print(f"FAIL  [{chapter.slug}] {claim.name}: {proof.detail}")
    _progress("")
    seconds = _time.perf_counter() - started
    print(f"{count - failed} of {count} claims proved in {len(CHAPTERS)} chapters, "
          f"{definitions - failed_definitions} of {definitions} definitions (true by construction) checked apart "
          f"({seconds:.1f} s)")
    return 1 if failed or failed_definitions else 0


#: the subcommands this module defines itself: run by name, they need none of SUBCOMMANDS' modules
BUILT_IN = ("list", "show", "eval", "compare", "presets", "prove")


def build_parser(others: bool = True) -> argparse.ArgumentParser:
    """The command's parser; ``others`` False leaves out :data:`SUBCOMMANDS` (for a built-in subcommand
    named first, whose parsing, errors and help do not depend on them: their imports are a tenth of a second
    of a cold start)."""
    parser = runner.Parser(prog="symcomm", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=runner.Parser)
    p = sub.add_parser("list", help="every primitive with its algorithms, and the strategies")
    p.add_argument("--json", action="store_true", help="one JSON document on stdout instead of the text")
    p.set_defaults(run=cmd_list)
    p = sub.add_parser("show", help="closed forms of a primitive or strategy")
    p.add_argument("name", help="a primitive or a strategy (symcomm list shows them)")
    p.add_argument("assignments", nargs="*", metavar="KEY=VALUE",
                   help="symbol values (N=8 M=2**30), substituted exactly into the closed forms, which count "
                        "elements and keep the times (alpha, beta, gamma) symbolic: eval prices them in bytes; "
                        "and options (zero=1)")
    p.add_argument("--algorithm", help="the primitive's algorithm (symcomm list shows them); default: the first")
    p.add_argument("--format", default="pretty",
                   help="pretty (Unicode, cases as cases; the default), text (one line), latex, markdown "
                        "(a table), python or json (text, LaTeX and an expression tree per formula)")
    p.set_defaults(run=cmd_show)
    evaluate.register_cli(sub)     # eval: its own module (SymPy-free, so the entry may start it alone)
    p = sub.add_parser("presets", help="every hardware and model preset with its values and sources")
    p.add_argument("--json", action="store_true", help="one JSON document on stdout instead of the text")
    p.set_defaults(run=cmd_presets)
    p = sub.add_parser("compare", help="every algorithm of a primitive side by side at N and M, the best marked, "
                                       "and where they cross")
    p.add_argument("name", help="a primitive (symcomm list shows them)")
    p.add_argument("assignments", nargs="*", metavar="KEY=VALUE",
                   help="N, M (M=1GiB allowed), and G, C, K for the algorithms that take them (as eval); " + TIME_RULE)
    p.add_argument("--dtype", help=f"{', '.join(DTYPES)} or bytes per element; bf16 by default")
    p.add_argument("--hardware", help="a hardware preset or file: fills alpha, beta, gamma, their inter-node pair and G, "
                                      "as for eval (a flat group across nodes at the links its crossings use, said in a note)")
    p.add_argument("--json", action="store_true", help="one JSON document (seconds; counts in bytes, M in elements)")
    p.set_defaults(run=cmd_compare)
    p = sub.add_parser("prove", help="check every claim; exit 1 if any fails")
    p.add_argument("--quiet", action="store_true", help="print failures and the summary only")
    p.set_defaults(run=cmd_prove)
    for path in SUBCOMMANDS if others else ():
        module, _, function = path.partition(":")
        getattr(importlib.import_module(module), function)(sub)
    for each in sub.choices.values():
        notes.add_flag(each)
    return parser


@functools.lru_cache(maxsize=2)
def _parser(others: bool) -> argparse.ArgumentParser:
    # built once per process and kind: some 5 ms of adding every subcommand's options, which every in-process call
    # of main() paid again (a Python caller's loop, the tests' hundreds); parsing reads a parser, never changes it
    return build_parser(others)


def main(argv: list[str] | None = None) -> int:
    # the one mapping of errors to exit statuses and of notes to stderr (symcomm.commands.runner), as `symcomm plan`'s
    argv = sys.argv[1:] if argv is None else list(argv)
    return runner.run(_parser(argv[:1] != [] and argv[0] not in BUILT_IN), argv)


if __name__ == "__main__":
    # run the module's importable twin so that UsageError is the class subcommands raise
    from symcomm.commands.main import main as _main

    sys.exit(_main())
