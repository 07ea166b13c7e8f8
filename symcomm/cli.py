"""symcomm: closed forms, numbers, proofs, layouts and calibration of training communication (COMMAND --help).

The commands: list, show, eval, compare, prove, presets, plan, export, measure, validate,
calibrate, nccl-tests.

Bad input gets one line on stderr naming the parameter and what is allowed, and exit
status 2; a failed proof exits 1.  Exact values stay exact: integers print as integers.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time as _time
import sympy as sp

from . import symbols as S
from .algorithms import algorithms_of
from .errors import InputError, SymcommError
from .evaluate import exact, plain
from .inputs import parse_number
from .primitives import PRIMITIVES
from .printing import FORMATS, render
from .subjects import Subject, aliases, option_names, subject
from .units import DTYPES, bytes_per_element, human_size, human_time

#: More subcommands: "module:function", the function takes argparse's subparsers object,
#: adds its parser(s) and sets ``run`` (a function of args returning the exit status;
#: raise UsageError or ValueError for bad input).
SUBCOMMANDS: tuple[str, ...] = ("symcomm.export:register_cli", "symcomm.measure:register_cli",
                               "symcomm.plan:register_cli", "symcomm.calibrate:register_cli")

#: parameter names the CLI accepts besides the symbols' own names
ALIASES = {"gpus_per_node": "G"}
#: how an error names a parameter that has another spelling: both, so the user finds the one they typed
_SPELLED = {key: f"{key} ({typed})" for typed, key in ALIASES.items()}
_TIME_NAMES = {S.BY_SYMBOL[sym].cli_name for sym in S.TIME_SYMBOLS}
_PER_MESSAGE = {S.alpha, S.alpha_inter}  # coefficients that count messages, not elements


#: bad input: reported in one line, exit status 2 (the name earlier releases used)
UsageError = InputError


def _strategies() -> dict:
    # imported on first use: `symcomm list` of the collectives needs no strategy
    from .strategies import STRATEGIES

    return STRATEGIES


def split_assignments(items: list[str], target_options: set[str]) -> tuple[dict, dict]:
    """KEY=VALUE words → (symbol values as text, option values as text)."""
    values, options = {}, {}
    for item in items:
        if "=" not in item:
            raise UsageError(f"{item!r} is not KEY=VALUE; write for example N=8 M=1073741824")
        key, text = item.split("=", 1)
        typed = key.strip()
        if not typed:
            raise UsageError(f"{item!r} is not KEY=VALUE: the name before '=' is empty; write for example N=8")
        key = ALIASES.get(typed, typed)
        if key in values or key in options:
            raise UsageError(f"{typed} is given twice; give each parameter once")
        if key in target_options:
            options[key] = text
        else:
            values[key] = text
    return values, options


def bind(target: Subject, texts: dict, check: bool = True, also_used: frozenset = frozenset()) -> tuple[dict, dict]:
    """Check names and parse values: (symbol → exact value, time symbol → value).  With
    ``check`` False the values are not checked against the subject's requirements (the
    caller checks them against what a backend runs instead)."""
    needed = target.symbols()
    needed_names = sorted(S.BY_SYMBOL[x].cli_name for x in needed if x in S.BY_SYMBOL)
    time_needed = {S.BY_SYMBOL[sym].cli_name for sym, coef in target.cost.coefficients if coef != 0}
    allowed = needed_names + sorted(_TIME_NAMES)
    values, times, unused = {}, {}, []
    for key, text in texts.items():
        if key in _TIME_NAMES:
            times[S.symbol(key)] = parse_number(key, text, integer=False)
        elif key in needed_names or (target.open_symbols and key in S.SYMBOLS):
            # a strategy may be given a known symbol it does not use with these options
            # (e with moe=0, N to cross-check d·t·p·c); it is checked, then noted
            sym = S.symbol(key)
            values[sym] = parse_number(_SPELLED.get(key, key), text, integer=bool(sym.is_integer),
                                       least=target.least.get(sym, 1))
            if key not in needed_names and key not in also_used:
                unused.append(key)
        else:
            options = f"; options: {', '.join(target.option_names)}" if target.option_names else ""
            raise UsageError(f"unknown parameter {key!r} for {target.label}; allowed: {', '.join(allowed)}{options}")
    missing = [name for name in needed_names if S.symbol(name) not in values]
    if missing:
        raise UsageError(f"missing {', '.join(missing)}: {target.label} needs {', '.join(needed_names)} "
                         f"(as KEY=VALUE)")
    problems = target.problems(values) if check else []
    if problems:
        raise UsageError(problems[0])
    if unused:
        print(f"symcomm: note: {', '.join(unused)} not used by {target.label}", file=sys.stderr)
    if times:
        absent = sorted(time_needed - {S.BY_SYMBOL[s].cli_name for s in times})
        if absent:
            raise UsageError(f"missing {', '.join(absent)}: the time of {target.label} needs "
                             f"{', '.join(sorted(time_needed))} once any of them is given")
    return values, times


# -- evaluation ---------------------------------------------------------------------------

def evaluate(target: Subject, values: dict, times: dict, scale: int, in_bytes: bool = False) -> dict:
    """The cost's fields at ``values`` (× ``scale``); ``in_bytes``: terms with their own element type
    (fp32 gradients) count their own size, so the figures are bytes on the wire."""
    out: dict = {}
    cost = target.cost_in(scale) if in_bytes else target.cost
    for key, expr in cost.fields().items():
        number = exact(expr, values)
        if key not in ("alpha", "alpha_inter"):
            number = number * scale
        out[key] = number
    if times:
        t = sum((exact(coef, values) * (1 if sym in _PER_MESSAGE else scale) * times[sym]
                 for sym, coef in cost.coefficients), sp.Integer(0))
        out["time"] = t
    return out


def _term_rows(target: Subject, values: dict, scale: int, in_bytes: bool = False) -> list[dict]:
    rows = []
    for term in target.terms:
        cost = term.cost
        own = bytes_per_element(term.dtype) if in_bytes and getattr(term, "dtype", "") else scale
        rows.append({
            "label": term.label,
            "axis": getattr(term, "axis", ""),
            "collective": term.primitive,
            "algorithm": term.algorithm,
            "group": plain(exact(term.group, values)),
            "message": plain(exact(term.message, values) * own),
            "count": plain(exact(term.count, values)),
            "send": plain(exact(cost.send, values) * own),
            **({"dtype": term.dtype} if getattr(term, "dtype", "") else {}),
        })
    return rows


def _preset_shape(args, name: str, option_texts: dict) -> dict:
    """A model preset's (or config's) shape is used as plan uses it: with fewer K, V heads than
    heads ``gqa`` defaults to 1, ``embeddings`` to 1 (its vocabulary is known), with tied
    embeddings ``tied`` defaults to 1, each said in a note; an option given explicitly (gqa=0)
    still wins."""
    wanted = [key for key in ("gqa", "tied", "embeddings") if key in option_names(name) and key not in option_texts]
    if not wanted or not (args.model or args.model_config):
        return option_texts
    from . import presets

    if args.model and args.model_config:
        raise UsageError("give --model or --model-config, not both")
    try:
        model = presets.model(args.model) if args.model else presets.model_from_config(args.model_config)
    except ValueError as err:
        raise UsageError(str(err)) from None
    out = dict(option_texts)
    if "gqa" in wanted and model.kv_heads < model.heads:
        print(f"symcomm: note: gqa=1: {model.name} has {model.kv_heads} K, V heads for {model.heads} heads "
              "(grouped-query attention, as plan assumes); give gqa=0 for full-width K, V", file=sys.stderr)
        out["gqa"] = "1"
    if "embeddings" in wanted:
        print(f"symcomm: note: embeddings=1: {model.name}'s V × h embedding and LM head on the end stages, as plan "
              "counts them; give embeddings=0 to leave them out", file=sys.stderr)
        out["embeddings"] = "1"
    if "tied" in wanted and model.tied:
        print(f"symcomm: note: tied=1: {model.name} ties its embedding and LM head; give tied=0 to untie",
              file=sys.stderr)
        out["tied"] = "1"
    return out


def _axis_rows(target: Subject, values: dict, times: dict, scale: int, in_bytes: bool) -> dict:
    """Per parallel axis: what its busiest GPU sends (and its time), and which pipeline stage that GPU is on."""
    from .strategies import busiest_stage, cost_in_bytes_of

    by_axis: dict = {}
    for term in target.terms:
        by_axis.setdefault(getattr(term, "axis", ""), []).append(term)
    stages = values.get(S.p)
    stages = int(stages) if isinstance(stages, sp.Integer) else None   # parsed numbers, never text
    out = {}
    for axis, terms in by_axis.items():
        cost = cost_in_bytes_of(terms, scale) if in_bytes else _summed(terms)
        row = {"send": plain(exact(cost.send, values) * scale), "stage": busiest_stage(terms, stages)}
        if times:
            row["time"] = plain(sum((exact(coef, values) * (1 if sym in _PER_MESSAGE else scale) * times[sym]
                                     for sym, coef in cost.coefficients), sp.Integer(0)))
        out[axis or "all"] = row
    return out


#: the one rule for time constants, said in --help, the README and every output
TIME_RULE = ("alpha, alpha_inter: seconds per message; beta, beta_inter: seconds per byte moved, gamma: seconds per "
             "byte reduced (bytes = elements × --dtype, bf16 when a time is asked without it); or bw=50GB/s, "
             "bw_inter=400Gb/s per direction instead of beta, beta_inter")
_TIME_UNITS = {"alpha": "s/message", "alpha_inter": "s/message", "beta": "s/byte", "beta_inter": "s/byte",
               "gamma": "s/byte reduced"}


def _with_units(texts: dict, dtype: str | None) -> tuple[dict, str | None, dict]:
    """Bandwidths (bw=50GB/s → beta) and sizes with a unit (M=1GiB → elements of --dtype) turned into the
    symbols' own values; --dtype defaults to bf16 (said in a note) once a time or a byte size is given, since
    β and γ are per byte.  Returns (texts, dtype, how each converted value was derived)."""
    from .inputs import SIZE_UNITS, parse_bandwidth, parse_size_bytes, split_unit

    out, derived = dict(texts), {}
    for key, target in (("bw", "beta"), ("bw_inter", "beta_inter")):
        if key in out:
            if target in out:
                raise UsageError(f"give {key} or {target}, not both ({target} = 1 / {key})")
            try:
                rate = parse_bandwidth(key, out.pop(key))
            except InputError as err:
                raise UsageError(str(err)) from None
            out[target] = repr(1.0 / rate)
            derived[target] = f"1 / {key} = 1 / ({rate:g} bytes/s)"
    sized = "M" in out and split_unit(out["M"], SIZE_UNITS)[1] is not None
    if dtype is None and (sized or any(key in out for key in _TIME_NAMES)):
        dtype = "bf16"
        print("symcomm: note: --dtype bf16 (2 bytes per element): beta and gamma are seconds per byte; give "
              "--dtype to change it", file=sys.stderr)
    if sized:
        try:
            nbytes = parse_size_bytes("M", out["M"])
        except InputError as err:
            raise UsageError(str(err)) from None
        size = bytes_per_element(dtype)
        if nbytes % size:
            raise UsageError(f"M={out['M']} is not a whole number of {dtype} elements ({size} bytes each)")
        derived["M"] = f"{out['M']} / {size} bytes per {dtype} element"
        out["M"] = str(nbytes // size)
    return out, dtype, derived


def _inputs(args, values: dict, times: dict, typed: set, derived: dict, dtype: str | None) -> dict:
    """Every value the answer used, with its unit and where it came from."""
    from . import presets

    def source(name: str) -> str:
        if name in derived:
            return "typed, " + derived[name]
        if name in typed:
            return "typed"
        if name == "Phi" and not (args.model or args.model_config):
            return "derived from the shape (h, L, a, h_kv, F, V, s)"
        if args.model and name in presets.model(args.model).values():
            return f"model preset {args.model}"
        if args.model_config and name != "G":
            return f"config file {args.model_config}"
        if args.hardware:
            return f"hardware {args.hardware}"
        return "default"

    out = {}
    for sym, value in values.items():
        name = S.BY_SYMBOL[sym].cli_name
        out[name] = {"value": plain(value), "unit": S.BY_SYMBOL[sym].unit, "source": source(name)}
    for sym, value in times.items():
        name = S.BY_SYMBOL[sym].cli_name
        out[name] = {"value": plain(value), "unit": _TIME_UNITS[name], "source": source(name)}
    if dtype:
        out["dtype"] = {"value": dtype, "unit": f"{bytes_per_element(dtype)} bytes per element",
                        "source": "typed (--dtype)" if args.dtype else
                        ("default (--hardware gives per-byte constants)" if args.hardware else
                         "default (a time or a byte size was asked)")}
    return out


def _units(result: dict, extras: dict, unit: str) -> dict:
    """The unit of every number in the answer (alpha and beta there are counts, not the inputs α, β)."""
    out = {"send": unit, "recv": unit, "total": unit, "time": "s",
           "alpha": "messages on the critical path (the count multiplying α)",
           "alpha_inter": "messages across nodes on the critical path (the count multiplying α_inter)",
           "beta": f"{unit} moved on the critical path (the count multiplying β)",
           "beta_inter": f"{unit} moved across nodes on the critical path (the count multiplying β_inter)",
           "gamma": f"{unit} reduced on the critical path (the count multiplying γ)"}
    out = {key: value for key, value in out.items() if key in result}
    out.update({"bubble_fraction": "ratio", "gpus": "GPUs"})
    return {key: value for key, value in out.items() if key in result or key in extras}


def _phi_from_shape(texts: dict, gated: bool) -> dict:
    """Φ from the shape given as KEY=VALUE (h, L, a, h_kv, F, V, s): GPT's count (biases, learned
    positions, tied embedding), or with gated=1 Llama's (SwiGLU, grouped-query attention, untied
    embeddings) — said in a note; without the whole shape, texts unchanged (Φ is then missing)."""
    shape = ("h", "L", "a", "h_kv", "F", "V", "s")
    if not all(key in texts for key in shape):
        return texts
    from . import presets

    n = {key: parse_number(key, texts[key], integer=True) for key in shape}
    if (n["h_kv"] * n["a"]) % n["h"]:
        raise UsageError(f"h_kv={n['h_kv']} is not a whole number of heads of width h/a = {n['h']}/{n['a']}")
    values = {S.h: n["h"], S.L: n["L"], S.a: n["a"], presets.n_kv: n["h_kv"] * n["a"] // n["h"], S.F: n["F"],
              S.V: n["V"], S.s: n["s"], S.L_moe: 0, S.E: 1, S.F_e: n["F"], S.E_s: 0}
    phi = int(presets.parameter_formula("llama" if gated else "gpt").subs(values))
    print(f"symcomm: note: Phi={phi} from the shape ({'Llama' if gated else 'GPT'} count; give Phi= to override)",
          file=sys.stderr)
    return {**texts, "Phi": str(phi)}


def _steptime():
    # imported on first use: only `eval hybrid` needs the step model
    from . import steptime

    return steptime


def _step_report(args, target: Subject, values: dict, times: dict, dtype: str, step_texts: dict) -> dict:
    """The step model at the bound values: the model's shape (F, gated) from the preset or config,
    the hardware's peak at --dtype and its fitted constants, β and γ per element of --dtype."""
    from . import presets

    scale = bytes_per_element(dtype)
    try:
        system = presets.hardware(args.hardware)
        compute = system.compute_values(dtype)
        model = (presets.model(args.model) if args.model else
                 presets.model_from_config(args.model_config) if args.model_config else None)
    except ValueError as err:
        raise UsageError(str(err)) from None
    numbers = {S.BY_SYMBOL[sym].cli_name: float(val) for sym, val in values.items()}
    if model is not None:
        numbers = {**{k: float(x) for k, x in model.values().items() if k not in numbers}, **numbers}
        step_texts = {"gated": "1" if model.gated else "0", **step_texts}
    if "F" not in numbers:
        raise UsageError("missing F: the step time needs the FFN width F (give --model, --model-config or F=...)")
    for sym, value in times.items():
        name = S.BY_SYMBOL[sym].cli_name
        numbers[name] = float(value) * (1 if sym in _PER_MESSAGE else scale)    # per element of --dtype
    numbers.update(compute)
    options = {key: value for key, value in target.options.items() if key != "backend"}
    out = _steptime().report(numbers, scale, options, step_texts)
    out["constants"] = {**compute, "source": system.step_time_source, "peak_source": system.peak_source,
                        "dtype": dtype}
    return out


def _print_step(payload: dict) -> None:
    print(f"  step time    {human_time(payload['step_time'])}  (compute {human_time(payload['compute_time'])}, "
          f"exposed communication {human_time(payload['exposed_comm_time'])}, bubble "
          f"{human_time(payload['bubble_time'])}, optimizer {human_time(payload['optimizer_time'])})")
    per_axis = ", ".join(f"{axis} {human_time(x)}" for axis, x in payload["comm_time_per_axis"].items())
    print(f"  comm alone   {human_time(payload['comm_time'])}  ({per_axis})")
    print(f"  throughput   {payload['tokens_per_second']:,.0f} tokens/s, MFU {100 * payload['mfu']:.1f} %, "
          f"HFU {100 * payload['hfu']:.1f} %")
    parts = ", ".join(f"{k} {human_size(x, 'bytes')}" for k, x in payload["memory"].items())
    print(f"  memory/GPU   {human_size(payload['memory_per_gpu'], 'bytes')}  ({parts})")
    c = payload["constants"]
    print(f"  constants    peak {c['peak'] / 1e12:g} TFLOP/s ({c['dtype']}), eta {c['eta']}, kappa {c['kappa']}: "
          f"{c['source']}")


def _summed(terms):
    from .cost import Cost

    return Cost.sum(term.cost for term in terms)


def cmd_eval(args) -> int:
    stepping = args.name == "hybrid"
    known = set(option_names(args.name)) | (set(_steptime().STEP_OPTIONS) if stepping else set())
    texts, option_texts = split_assignments(args.assignments, known)
    step_texts: dict = {}
    if stepping:   # the step model's options (recompute=none|selective|full, gated, ...) apart
        try:
            option_texts, step_texts = _steptime().step_options(option_texts)
        except ValueError as err:
            raise UsageError(str(err)) from None
    option_texts = _preset_shape(args, args.name, option_texts)
    if stepping and "Phi" not in texts and not (args.model or args.model_config):
        texts = _phi_from_shape(texts, step_texts.get("gated", "0") == "1")
    target = subject(args.name, args.algorithm, **option_texts)
    typed = set(texts)
    texts, dtype, derived = _with_units(texts, args.dtype)
    if args.model or args.model_config or args.hardware:  # presets fill values; KEY=VALUE wins
        from .presets import fill_from_presets
        texts, dtype = fill_from_presets(target, texts, model_name=args.model, config_path=args.model_config,
                                         hardware_name=args.hardware, dtype=dtype)
    if "s" in texts and "s" not in typed and (args.model or args.model_config):
        print(f"symcomm: note: s={texts['s']} is the preset's sequence length (its context window); give s= for "
              "the length you train at", file=sys.stderr)
    # the step model (eval hybrid --hardware) uses the shape beyond what the communication needs
    step_names = frozenset(("a", "h_kv", "F", "V", "F_e", "E_s", "k", "v")) if stepping and args.hardware else frozenset()
    values, times = bind(target, texts, check=not args.backend, also_used=step_names)
    if args.backend:  # what that library runs for each collective (symcomm.profiles)
        target = target.under(args.backend, values, bytes_per_element(dtype) if dtype else 4)
        problems = target.problems(values)   # the requirements of what the backend runs
        if problems:
            raise UsageError(problems[0])
    scale = bytes_per_element(dtype) if dtype else 1
    unit = "bytes" if dtype else "elements"
    result = evaluate(target, values, times, scale, in_bytes=bool(dtype))
    extras = {key: exact(expr, values) for key, expr in target.extras.items()}
    payload = {
        "kind": target.kind,
        "name": target.name,
        **({"algorithm": target.algorithm} if target.kind == "primitive" else {"options": dict(target.options)}),
        "values": {S.BY_SYMBOL[sym].cli_name: plain(val) for sym, val in values.items()},
        "unit": unit,
        **({"dtype": dtype, "bytes_per_element": scale} if dtype else {}),
        **{key: plain(val) for key, val in result.items()},
        **{key: plain(val) for key, val in extras.items()},
    }
    if target.terms:
        payload["terms"] = _term_rows(target, values, scale, in_bytes=bool(dtype))
        axes = _axis_rows(target, values, times, scale, in_bytes=bool(dtype))
        if len(axes) > 1:
            payload["axes"] = axes
    payload["inputs"] = _inputs(args, values, times, typed, derived, dtype)
    payload["units"] = _units(result, extras, unit)
    if stepping and args.hardware:
        payload["time_is"] = "communication alone (no compute, overlap or bubble); step_time is the whole step"
        payload.update(_step_report(args, target, values, times, dtype, step_texts))
    if args.json:
        print(json.dumps(payload, indent=2, ensure_ascii=False))
        return 0
    given = " ".join(f"{k}={v}" for k, v in payload["values"].items())
    print(f"{target.label}   {given}")
    for key in result:
        value = plain(result[key])
        if key in ("send", "recv", "total"):
            shown = human_size(value, unit)
            if unit == "bytes":
                shown += f" ({value:,} bytes)" if isinstance(value, int) else ""
        elif key == "time":
            shown = human_time(value)
        elif key in ("alpha", "alpha_inter"):
            shown = f"{value:,} messages on the critical path"
        elif key.startswith("beta"):
            shown = f"{value:,} {unit} moved on the critical path"
        else:
            shown = f"{value:,} {unit} reduced on the critical path"
        print(f"  {key:<12} {shown}")
    for key, val in extras.items():
        print(f"  {key:<12} {plain(val)}")
    if "axes" in payload:
        print("  busiest GPU per axis:")
        for axis, row in payload["axes"].items():
            when = f", {human_time(row['time'])}" if "time" in row else ""
            print(f"    {axis}: send {human_size(row['send'], unit)}{when} — {row['stage']}")
    if "step_time" in payload:
        _print_step(payload)
    for row in payload.get("terms", []):
        print(f"  · {row['label']}: {row['count']} × {row['collective']}/{row['algorithm']} "
              f"on {row['group']} ranks, message {human_size(row['message'], unit)}, "
              f"send {human_size(row['send'], unit)}" + (f" [{row['dtype']}]" if "dtype" in row else ""))
    return 0


SHOW_FORMATS = ("pretty", "text", "latex", "markdown", "python", "json")


def _show_values(target: Subject, texts: dict) -> dict:
    """KEY=VALUE given to show: symbols substituted into the formulas (exactly), anything else refused."""
    known = {S.BY_SYMBOL[x].cli_name for x in target.symbols() if x in S.BY_SYMBOL} | set(_TIME_NAMES)
    out = {}
    for key, text in texts.items():
        if key not in known:
            raise UsageError(f"unknown parameter {key!r} for {target.label}; its formulas use: {', '.join(sorted(known))}")
        sym = S.symbol(key)
        out[sym] = parse_number(_SPELLED.get(key, key), text, integer=bool(sym.is_integer), least=target.least.get(sym, 1))
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
    fields = dict(target.cost.fields())
    if target.cost.time != 0:
        fields["time"] = target.cost.time
    fields.update(target.extras)
    shown = {key: exact(expr, values) if values else sp.sympify(expr, strict=True) for key, expr in fields.items()}
    given = ", ".join(f"{S.BY_SYMBOL[k].cli_name}={v}" for k, v in values.items())
    if args.format == "json":
        from .exprtree import to_tree

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
    """Every algorithm of a primitive side by side at N and M: counts, time, the best, and which
    algorithm is fastest over which range of message sizes (where they cross)."""
    import numpy as np

    from .evaluate import fast

    if args.name not in PRIMITIVES:
        raise UsageError(f"compare takes a primitive; choose one of {', '.join(PRIMITIVES)}")
    texts, _ = split_assignments(args.assignments, set())
    texts, dtype, _derived = _with_units(texts, args.dtype)
    if args.hardware:
        from .presets import fill_from_presets

        texts, dtype = fill_from_presets(subject(args.name), texts, hardware_name=args.hardware, dtype=dtype)
    dtype = dtype or "bf16"
    scale = bytes_per_element(dtype)
    missing = [key for key in ("N", "M", "alpha", "beta") if key not in texts]
    if missing:
        raise UsageError(f"missing {', '.join(missing)}: compare needs N, M and the time constants (alpha, beta; "
                         "or --hardware); " + TIME_RULE)
    numbers = {}
    for key, text in texts.items():
        if key in _TIME_NAMES:
            numbers[key] = float(parse_number(key, text, integer=False)) * (1 if key in ("alpha", "alpha_inter") else scale)
        elif key in ("N", "M", "G"):
            numbers[key] = int(parse_number(_SPELLED.get(key, key), text, integer=True))
        else:
            raise UsageError(f"unknown parameter {key!r} for compare; allowed: N, M, G, alpha, beta, gamma, "
                             "alpha_inter, beta_inter, bw, bw_inter")
    numbers.setdefault("gamma", 0.0)
    numbers.setdefault("G", numbers["N"])
    numbers.setdefault("alpha_inter", numbers["alpha"])
    numbers.setdefault("beta_inter", numbers["beta"])
    rows, curves, skipped = [], {}, []
    sizes = np.unique(np.round(2.0 ** np.arange(0, 41, 0.25)))          # 1 to 2**40 elements
    for alg in algorithms_of(args.name):
        target = subject(args.name, alg.name)
        point = {S.symbol(k): sp.Integer(v) for k, v in numbers.items() if k in ("N", "M", "G")}
        problems = target.problems(point)
        if problems:
            skipped.append(f"{alg.name}: {problems[0]}")
            continue
        cost = target.cost
        time = fast(cost.time)
        counts = {key: plain(exact(expr, point)) for key, expr in cost.fields().items()
                  if key in ("alpha", "beta", "gamma", "alpha_inter", "beta_inter")}
        rows.append({"algorithm": alg.name, **counts, "time": float(time(**numbers))})
        curves[alg.name] = np.asarray(time(**{**numbers, "M": sizes}), dtype=float) * np.ones_like(sizes)
    if not rows:
        raise UsageError(f"no algorithm of {args.name} runs on N={numbers['N']}: " + "; ".join(skipped))
    best = min(rows, key=lambda r: r["time"])
    # in-network reduction needs a switch that adds (NVLink SHARP, IB SHARP): the ranges are drawn
    # among the algorithms any cluster runs, with it named apart
    names = [n for n in curves if n != "in_network"] or list(curves)
    table = np.vstack([curves[n] for n in names])
    # equal times (rabenseifner_fold is rabenseifner on a power of two) go to the first listed, so the
    # ranges change only where one algorithm really overtakes another
    winner = np.argmax(table <= table.min(axis=0) * (1 + 1e-9), axis=0)
    ranges, start = [], 0
    for i in range(1, len(sizes) + 1):
        if i == len(sizes) or winner[i] != winner[start]:
            ranges.append({"algorithm": names[winner[start]], "from_elements": int(sizes[start]),
                           "to_elements": int(sizes[i - 1])})
            start = i
    timers = {alg.name: fast(subject(args.name, alg.name).cost.time) for alg in algorithms_of(args.name)
              if alg.name in names}
    for before, after in zip(ranges, ranges[1:]):
        # where the two lines cross, by bisection on M between the grid points that bracket it
        low, high = float(before["to_elements"]), float(after["from_elements"])
        gap = lambda size: (float(timers[before["algorithm"]](**{**numbers, "M": size}))
                            - float(timers[after["algorithm"]](**{**numbers, "M": size})))
        for _ in range(80):
            middle = (low * high) ** 0.5
            low, high = (middle, high) if gap(middle) < 0 else (low, middle)
        after["crossover_elements"] = high
    out = {"primitive": args.name, "N": numbers["N"], "M": numbers["M"], "dtype": dtype,
           "units": {"time": "s", "alpha": "messages", "beta": "elements moved", "gamma": "elements reduced",
                     "from_elements": "elements", "to_elements": "elements", "crossover_elements": "elements"},
           "best": best["algorithm"], "algorithms": rows, "fastest_by_message_size": ranges,
           "ranges_leave_out": [n for n in curves if n not in names], "skipped": skipped}
    if args.json:
        print(json.dumps(out, indent=2, ensure_ascii=False))
        return 0
    print(f"{args.name} on N={numbers['N']}, M={numbers['M']:,} elements ({dtype}): α, β, γ counts and time")
    print(f"  {'algorithm':<26} {'α count':>10} {'β count':>16} {'γ count':>16} {'time':>10}")
    for r in sorted(rows, key=lambda r: r["time"]):
        mark = "  ← best" if r is best else ""
        print(f"  {r['algorithm']:<26} {r.get('alpha', 0):>10,} {r.get('beta', 0):>16,} {r.get('gamma', 0):>16,} "
              f"{human_time(r['time']):>10}{mark}")
    print("  fastest by message size among host-based algorithms (elements; where the lines cross):")
    for r in ranges:
        crossing = (f"   (overtakes at M ≈ {r['crossover_elements']:,.0f} elements, "
                    f"{human_size(r['crossover_elements'] * scale, 'bytes')})") if "crossover_elements" in r else ""
        print(f"    {r['from_elements']:>15,} – {r['to_elements']:<15,} {r['algorithm']}{crossing}")
    for line in skipped:
        print(f"  not run: {line}")
    return 0


def cmd_list(args) -> int:
    primitives = [
        {"name": p.name, "title": p.title, "pattern": p.pattern, "reduces": p.reduces,
         "algorithms": [{"name": a.name, "requires": [r.describe() for r in a.requires],
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
    if args.json:
        print(json.dumps({"primitives": primitives, "strategies": strategies}, indent=2, ensure_ascii=False))
        return 0
    for p in primitives:
        print(f"{p['name']:<15} {', '.join(a['name'] for a in p['algorithms'])}")
    if strategies:
        print()
        for s in strategies:
            opts = " ".join(f"{n}={o['default']}" for n, o in s["options"].items())
            alias = f" (alias of {s['alias_of']})" if "alias_of" in s else ""
            print(f"{s['name']:<15} {s['title']}{alias}" + (f"  [{opts}]" if opts else ""))
    return 0


def cmd_presets(args) -> int:
    """Every hardware and model preset with its values and sources."""
    from . import presets

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
        if h["step_time"]:
            consts = ", ".join(f"{k} {v:g}" for k, v in h["step_time"].items())
            print(f"    step time {consts} ({h['step_time_source']})")
    print()
    print("models")
    for m in models:
        shown = " ".join(f"{k}={v}" for k, v in m["values"].items())
        print(f"  {m['name']:<16} {m['title']}: {shown} ({m['source']})")
    return 0


def cmd_prove(args) -> int:
    from .derivations import CHAPTERS
    from .proof import check, is_definition

    started = _time.perf_counter()
    failed = count = definitions = failed_definitions = 0
    for chapter in CHAPTERS:
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
    seconds = _time.perf_counter() - started
    print(f"{count - failed} of {count} claims proved in {len(CHAPTERS)} chapters, "
          f"{definitions - failed_definitions} of {definitions} definitions (true by construction) checked apart "
          f"({seconds:.1f} s)")
    return 1 if failed or failed_definitions else 0


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage error in one line."""

    def error(self, message):
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="symcomm", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    p = sub.add_parser("list", help="every primitive with its algorithms, and the strategies")
    p.add_argument("--json", action="store_true", help="one JSON document on stdout instead of the text")
    p.set_defaults(run=cmd_list)
    for name, fn, text in (("show", cmd_show, "closed forms"), ("eval", cmd_eval, "numbers")):
        p = sub.add_parser(name, help=f"{text} of a primitive or strategy")
        p.add_argument("name", help="a primitive or a strategy (symcomm list shows them)")
        p.add_argument("assignments", nargs="*", metavar="KEY=VALUE",
                       help="symbol values (N=8 M=2**30, M=1GiB) and options (zero=1); " + TIME_RULE)
        p.add_argument("--algorithm", help="the primitive's algorithm (symcomm list shows them); default: the first")
        if name == "show":
            p.add_argument("--format", default="pretty",
                           help="pretty (Unicode, cases as cases; the default), text (one line), latex, markdown "
                                "(a table), python or json (text, LaTeX and an expression tree per formula)")
        else:
            p.add_argument("--dtype", help=f"{', '.join(DTYPES)} or bytes per element; bf16 when a time is asked "
                                           "without it")
            p.add_argument("--backend", help="evaluate under a backend profile: textbook, nccl, nccl_nvls, mpich, gloo")
            p.add_argument("--model", help="model preset: fills Phi, h, L, a, h_kv, s (and E, k, L_moe, Phi_E)")
            p.add_argument("--model-config", help="a Hugging Face config.json on disk, instead of --model")
            p.add_argument("--hardware", help="hardware preset or file (path/to/hardware.json): fills alpha, beta, gamma, alpha_inter, beta_inter "
                                              "(per byte; --dtype defaults to bf16) and G")
            p.add_argument("--json", action="store_true", help="one JSON document on stdout instead of the text")
        p.set_defaults(run=fn)
    p = sub.add_parser("presets", help="every hardware and model preset with its values and sources")
    p.add_argument("--json", action="store_true", help="one JSON document on stdout instead of the text")
    p.set_defaults(run=cmd_presets)
    p = sub.add_parser("compare", help="every algorithm of a primitive side by side at N and M, the best marked, "
                                       "and where they cross")
    p.add_argument("name", help="a primitive (symcomm list shows them)")
    p.add_argument("assignments", nargs="*", metavar="KEY=VALUE", help="N, M (M=1GiB allowed), G; " + TIME_RULE)
    p.add_argument("--dtype", help=f"{', '.join(DTYPES)} or bytes per element; bf16 by default")
    p.add_argument("--hardware", help="a hardware preset or file: fills alpha, beta, gamma and their inter-node pair")
    p.add_argument("--json", action="store_true", help="one JSON document (seconds, elements)")
    p.set_defaults(run=cmd_compare)
    p = sub.add_parser("prove", help="check every claim; exit 1 if any fails")
    p.add_argument("--quiet", action="store_true", help="print failures and the summary only")
    p.set_defaults(run=cmd_prove)
    for path in SUBCOMMANDS:
        module, _, function = path.partition(":")
        getattr(importlib.import_module(module), function)(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        # KEY=VALUE words may follow options (eval all_reduce --algorithm ring N=8 M=8):
        # argparse leaves those after an option unparsed, so they are collected here
        args, extra = build_parser().parse_known_args(argv)
        stray = [word for word in extra if word.startswith("-") or "=" not in word]
        if stray or (extra and not hasattr(args, "assignments")):
            shown = " ".join(w if w and w.isprintable() and not any(c.isspace() for c in w) else repr(w)
                             for w in stray or extra)
            raise UsageError(f"unrecognized arguments: {shown}")
        if extra:
            args.assignments = list(args.assignments) + extra
        if getattr(args, "dtype", None):
            bytes_per_element(args.dtype)
        return args.run(args)
    except (SymcommError, ValueError) as err:
        print(f"symcomm: error: {_one_line(err)}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # the reader left (symcomm list | head): stop quietly, as a filter should
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        print("symcomm: interrupted", file=sys.stderr)
        return 130


def _one_line(err: Exception) -> str:
    text = " ".join(str(err).split())
    return text if len(text) <= 500 else text[:497] + "..."


if __name__ == "__main__":
    # run the module's importable twin so that UsageError is the class subcommands raise
    from symcomm.cli import main as _main

    sys.exit(_main())
