"""The Python API: what the commands compute, as values (``symcomm.evaluate``, ``symcomm.compare``,
``symcomm.plan``, ``symcomm.formula``), and the evaluation the ``eval`` and ``compare`` commands print.

Every function takes the same names and values as the command line (numbers may be Python
numbers or text: ``N=8``, ``M="1GiB"``, ``bw="50GB/s"``) and returns a :class:`Result`: a
plain mapping of numbers with units, ``.to_dict()`` for JSON, and a table in Jupyter.  Bad
input raises :class:`symcomm.base.errors.InputError` (a ``ValueError``) naming the parameter, as
the commands' one-line errors do.

>>> import symcomm
>>> r = symcomm.evaluate("all_reduce", algorithm="ring", N=8, M=2**30, alpha=0, beta=1e-11, gamma=0, dtype="bf16")
>>> r["send"], r["units"]["send"]
(3758096384, 'bytes')
>>> round(r["time"], 6)
0.037581
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from types import SimpleNamespace

import sympy as sp

from .core import symbols as S
from .base import notes
from .collectives.algorithms import algorithms_of
from .base.errors import InputError
from .numbers.evaluation import exact, plain
from .base.inputs import parse_number
from .collectives.primitives import PRIMITIVES
from .training.subjects import Subject, option_names, subject
from .base.units import bytes_per_element

#: bad input: reported in one line, exit status 2 by the CLI
UsageError = InputError


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
    from .training.strategies import STRATEGIES

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


def parse_value(key: str, text, least: int | None = None):
    """One KEY=VALUE value, exactly: a time constant as a real number, a symbol as its kind
    (whole for integer symbols, at least ``least``, by default the symbol's own least value);
    InputError naming the parameter."""
    if key in _TIME_NAMES:
        return parse_number(key, text, integer=False)
    sym = S.symbol(key)
    least = S.least_value(sym) if least is None else least
    return parse_number(_SPELLED.get(key, key), text, integer=bool(sym.is_integer), least=least)


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
            times[S.symbol(key)] = parse_value(key, text)
        elif key in needed_names or (target.open_symbols and key in S.SYMBOLS):
            # a strategy may be given a known symbol it does not use with these options
            # (e with moe=0, N to cross-check d·t·p·c); it is checked, then noted
            sym = S.symbol(key)
            values[sym] = parse_value(key, text, least=target.least.get(sym))
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
        notes.add(f"{', '.join(unused)} not used by {target.label}")
    if times:
        absent = sorted(time_needed - {S.BY_SYMBOL[s].cli_name for s in times})
        if absent:
            raise UsageError(f"missing {', '.join(absent)}: the time of {target.label} needs "
                             f"{', '.join(sorted(time_needed))} once any of them is given")
    return values, times


# -- evaluation ---------------------------------------------------------------------------

def _costs_at(target: Subject, values: dict, times: dict, scale: int, in_bytes: bool = False) -> dict:
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
        notes.add(f"gqa=1: {model.name} has {model.kv_heads} K, V heads for {model.heads} heads "
              "(grouped-query attention, as plan assumes); give gqa=0 for full-width K, V", restates_default=True)
        out["gqa"] = "1"
    if "embeddings" in wanted:
        notes.add(f"embeddings=1: {model.name}'s V × h embedding and LM head on the end stages, as plan "
              "counts them; give embeddings=0 to leave them out", restates_default=True)
        out["embeddings"] = "1"
    if "tied" in wanted and model.tied:
        notes.add(f"tied=1: {model.name} ties its embedding and LM head; give tied=0 to untie", restates_default=True)
        out["tied"] = "1"
    return out


def _axis_rows(target: Subject, values: dict, times: dict, scale: int, in_bytes: bool) -> dict:
    """Per parallel axis: what its busiest GPU sends (and its time), and which pipeline stage that GPU is on."""
    from .training.terms import busiest_stage, cost_in_bytes_of

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
    from .base.inputs import SIZE_UNITS, parse_bandwidth, parse_size_bytes, split_unit

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
        notes.add("--dtype bf16 (2 bytes per element): beta and gamma are seconds per byte; give "
              "--dtype to change it", restates_default=True)
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
            system = presets.hardware(args.hardware)
            # γ = 0 for want of an HBM bandwidth, or because the file's fitted β already holds the reduction
            if name == "gamma" and (system.hbm_bytes_per_second is None or system.reduction_folded):
                return f"hardware {args.hardware}: " + "; ".join(system.defaults_used())
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
    shape_only = presets.Model(name="KEY=VALUE", title="the shape given", family="llama" if gated else "gpt",
                               hidden=int(n["h"]), layers=int(n["L"]), heads=int(n["a"]),
                               kv_heads=int(n["h_kv"] * n["a"] // n["h"]), ffn=int(n["F"]), vocab=int(n["V"]),
                               seq=int(n["s"]))
    phi = shape_only.parameters
    notes.add(f"Phi={phi} from the shape ({'Llama' if gated else 'GPT'} count; give Phi= to override)", restates_default=True)
    return {**texts, "Phi": str(phi)}


def _steptime():
    # imported on first use: only `eval hybrid` needs the step model
    from .training import steptime

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
    if args.backend:
        out["assumptions"].append(f"the step time counts ring collectives (the hybrid strategy's own), not what "
                                  f"--backend {args.backend} runs; the communication figures above do")
    out["constants"] = {**compute, "source": system.step_time_source, "peak_source": system.peak_source,
                        "dtype": dtype}
    # the planner's rule (presets.Hardware.fits): a layout that cannot run says so beside its figures
    out.update(system.memory_verdict(out["memory_per_gpu"]))
    out["units"].update({"gpu_memory_bytes": "bytes", "memory_excess_bytes": "bytes"})
    out["assumptions"] += list(system.defaults_used())
    return out


def _summed(terms):
    from .core.cost import Cost

    return Cost.sum(term.cost for term in terms)



def bound(target: Subject, texts: dict, dtype: str | None, args, *, typed: frozenset = frozenset(),
          check: bool = True, also_used: frozenset = frozenset(), gpus_per_node: str | None = None) -> tuple[dict, dict, str | None]:
    """(symbol → exact value, time symbol → value, dtype): ``target`` at the KEY=VALUE ``texts``
    (units already converted) completed from the presets of ``args`` (model, model_config,
    hardware: which link each level uses is ``presets.link_values``' rule, on nodes of
    ``gpus_per_node`` GPUs — default the G in ``texts`` — else the preset's), then checked by
    :func:`bind`.  The one binding ``eval`` and ``compare`` share; what the user is told goes to
    :mod:`symcomm.base.notes`."""
    model, config, hardware = (getattr(args, key, None) for key in ("model", "model_config", "hardware"))
    if model or config or hardware:  # presets fill values; KEY=VALUE wins
        from .presets import fill_from_presets
        texts, dtype = fill_from_presets(target, texts, model_name=model, config_path=config,
                                         hardware_name=hardware, dtype=dtype,
                                         gpus_per_node=gpus_per_node or texts.get("G"))
    if "s" in texts and "s" not in typed and (model or config):
        notes.add(f"s={texts['s']} is the preset's sequence length (its context window); give s= for "
             "the length you train at")
    values, times = bind(target, texts, check=check, also_used=also_used)
    return values, times, dtype


def eval_payload(args) -> dict:
    """What ``symcomm eval`` answers, as the JSON document (``args``: the command's options:
    name, assignments, algorithm, dtype, backend, model, model_config, hardware)."""
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
    # the step model (eval hybrid --hardware) uses the shape beyond what the communication needs
    step_names = frozenset(("a", "h_kv", "F", "V", "F_e", "E_s", "k", "v")) if stepping and args.hardware else frozenset()
    values, times, dtype = bound(target, texts, dtype, args, typed=typed, check=not args.backend,
                                 also_used=step_names)
    if args.backend:  # what that library runs for each collective (symcomm.collectives.profiles)
        target = target.under(args.backend, values, bytes_per_element(dtype) if dtype else 4)
        problems = target.problems(values)   # the requirements of what the backend runs
        if problems:
            raise UsageError(problems[0])
    scale = bytes_per_element(dtype) if dtype else 1
    unit = "bytes" if dtype else "elements"
    result = _costs_at(target, values, times, scale, in_bytes=bool(dtype))
    extras = {key: exact(expr, values) for key, expr in target.extras.items()}
    payload = {
        "label": target.label,
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
    payload["_result_keys"] = list(result)
    payload["_extra_keys"] = list(extras)
    if stepping and args.hardware:
        payload["time_is"] = "communication alone (no compute, overlap or bubble); step_time is the whole step"
        payload.update(_step_report(args, target, values, times, dtype, step_texts))
    return payload


def compare_payload(args) -> dict:
    """What ``symcomm compare`` answers, as the JSON document: every algorithm of a primitive side
    by side at N and M — counts, time, the best — and which algorithm is fastest over which range
    of message sizes (where they cross).

    Each algorithm is bound and evaluated exactly as ``eval --algorithm A`` evaluates it
    (:func:`bound`, :func:`_costs_at`): the same hardware fill (each level of a two-level
    algorithm at its own link, G the preset's GPUs per node), the same symbols (C, K, G where
    the algorithm needs them), the same refusals — an algorithm ``eval`` would refuse with
    these values (a power of two, a missing C or α_inter) is listed in ``skipped`` with eval's
    words.  The curves over M use the same bound values with M varied."""
    import numpy as np

    from .numbers.evaluation import fast

    if args.name not in PRIMITIVES:
        raise UsageError(f"compare takes a primitive; choose one of {', '.join(PRIMITIVES)}")
    targets = [subject(args.name, alg.name) for alg in algorithms_of(args.name)]
    texts, _ = split_assignments(args.assignments, set())
    typed = set(texts)
    # what some algorithm of the primitive takes; a name none takes is a typo, refused at once
    takes = {S.BY_SYMBOL[x].cli_name for t in targets for x in t.symbols() if x in S.BY_SYMBOL}
    allowed = sorted(takes) + sorted(_TIME_NAMES) + ["bw", "bw_inter"]
    for key in texts:
        if key not in allowed:
            raise UsageError(f"unknown parameter {_SPELLED.get(key, key)!r} for compare {args.name}; allowed: "
                             f"{', '.join(allowed)}")
    texts, dtype, derived = _with_units(texts, args.dtype)
    least = {sym: n for t in targets for sym, n in t.least.items()}
    for key, text in texts.items():   # a value that is not a number is refused, not skipped per algorithm
        parse_value(key, text, least=least.get(S.symbol(key)) if key in S.SYMBOLS else 1)
    # the single-level time constants some algorithm uses are needed (as eval needs them); the
    # inter-node pair only by the two-level algorithms, which are skipped (eval's words) without it
    single = [S.BY_SYMBOL[sym].cli_name for sym in (S.alpha, S.beta, S.gamma)
              if any(coef != 0 for t in targets for x, coef in t.cost.coefficients if x == sym)]
    shape = [key for key in ("N", "M") if key in takes]       # send_recv has no N: two ranks
    missing = [key for key in (*shape, *single) if key not in texts and not (args.hardware and key in single)]
    if missing:
        raise UsageError(f"missing {', '.join(missing)}: compare {args.name} needs {', '.join(shape)} and "
                         f"{', '.join(single)} (or --hardware); " + TIME_RULE)
    dtype = dtype or "bf16"
    rows, curves, skipped, points = [], {}, [], {}
    sizes = np.unique(np.round(2.0 ** np.arange(0, 41, 0.25)))          # 1 to 2**40 elements
    scale = bytes_per_element(dtype)
    for target in targets:
        own = {key: text for key, text in texts.items() if key in _TIME_NAMES or S.symbol(key) in target.symbols()}
        try:
            # a typed G places every algorithm's ranks on nodes of G GPUs, not only the two-level ones
            values, times, _ = bound(target, own, dtype, args, typed=frozenset(typed), gpus_per_node=texts.get("G"))
        except InputError as err:
            skipped.append(f"{target.algorithm}: {err}")
            continue
        result = _costs_at(target, values, times, scale, in_bytes=True)     # what eval prints
        rows.append({"algorithm": target.algorithm, **{key: plain(val) for key, val in result.items()},
                     "values": {S.BY_SYMBOL[sym].cli_name: plain(val) for sym, val in values.items()},
                     "inputs": _inputs(SimpleNamespace(model=None, model_config=None, hardware=args.hardware,
                                                       dtype=args.dtype), values, times, typed, derived, dtype)})
        # the same point as floats for the curves over M: β, γ per element of dtype, as in eval's sum
        point = {S.BY_SYMBOL[sym].cli_name: float(val) for sym, val in values.items()}
        point.update({S.BY_SYMBOL[sym].cli_name: float(val) * (1 if sym in _PER_MESSAGE else scale)
                      for sym, val in times.items()})
        points[target.algorithm] = (fast(target.cost.time), point)
        timer = points[target.algorithm][0]
        curves[target.algorithm] = np.asarray(timer(**{**point, "M": sizes}), dtype=float) * np.ones_like(sizes)
    if not rows:
        raise UsageError(f"no algorithm of {args.name} runs with these values: " + "; ".join(skipped))
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

    def at(name: str, size: float) -> float:
        timer, point = points[name]
        return float(timer(**{**point, "M": size}))

    for before, after in zip(ranges, ranges[1:]):
        # where the two lines cross, by bisection on M between the grid points that bracket it
        low, high = float(before["to_elements"]), float(after["from_elements"])
        for _ in range(80):
            middle = (low * high) ** 0.5
            gap = at(before["algorithm"], middle) - at(after["algorithm"], middle)
            low, high = (middle, high) if gap < 0 else (low, middle)
        after["crossover_elements"] = high
    n, m = (int(parse_value(key, texts[key], least=least.get(S.symbol(key), 1))) if key in shape else None
            for key in ("N", "M"))
    unit = "bytes"
    counts = _units({key: None for row in rows for key in row}, {}, unit)
    out = {"primitive": args.name, "N": n, "M": m, "dtype": dtype, "bytes_per_element": scale, "unit": unit,
           "units": {**counts, "M": "elements", "N": "ranks",
                     "values": "each row's symbol values (N ranks, M elements, G ranks per node, C chunks, "
                               "K elements), as eval --json gives them",
                     "inputs": "each row's inputs with unit and source, as eval --json gives them",
                     "from_elements": "elements", "to_elements": "elements", "crossover_elements": "elements"},
           "best": best["algorithm"], "algorithms": rows, "fastest_by_message_size": ranges,
           "ranges_leave_out": [n for n in curves if n not in names], "skipped": skipped}
    return out


# -- the Python API ---------------------------------------------------------------------------------

def _words(values: dict) -> list[str]:
    """Python keyword values as the command line's KEY=VALUE words (numbers exactly, text as given)."""
    out = []
    for key, value in values.items():
        if isinstance(value, bool):
            value = int(value)
        if isinstance(value, float):
            value = repr(value)
        out.append(f"{key}={value}")
    return out


@dataclass(frozen=True)
class Result:
    """An answer of the Python API: the same document the command prints with ``--json``.

    ``result["time"]`` reads a number, ``result.to_dict()`` gives a copy for JSON, and Jupyter
    shows it as a table (``_repr_markdown_``, ``_repr_html_``)."""

    kind: str
    data: dict = field(repr=False)
    #: what the command would print beside the answer (symcomm.base.notes), every one, defaults included
    notes: tuple[str, ...] = ()

    def __getitem__(self, key):
        return self.data[key]

    def __contains__(self, key) -> bool:
        return key in self.data

    def keys(self):
        return self.data.keys()

    def to_dict(self) -> dict:
        return json.loads(json.dumps(self.data))

    def _rows(self) -> list[tuple[str, str, str]]:
        units = self.data.get("units", {})
        rows = []
        for key, value in self.data.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                shown = f"{value:,}" if isinstance(value, int) else f"{value:.6g}"
                rows.append((key, shown, str(units.get(key, ""))))
        return rows

    def _repr_markdown_(self) -> str:
        title = self.data.get("label") or self.data.get("primitive") or self.kind
        lines = [f"**{title}**", "", "| quantity | value | unit |", "|---|---|---|"]
        lines += [f"| {k} | {v} | {u} |" for k, v, u in self._rows()]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        import html

        title = html.escape(str(self.data.get("label") or self.data.get("primitive") or self.kind))
        body = "".join(f"<tr><td>{html.escape(k)}</td><td>{html.escape(v)}</td><td>{html.escape(u)}</td></tr>"
                       for k, v, u in self._rows())
        return (f"<p><b>{title}</b></p><table><tr><th>quantity</th><th>value</th><th>unit</th></tr>"
                f"{body}</table>")

    def __repr__(self) -> str:
        title = self.data.get("label") or self.data.get("primitive") or self.kind
        return f"<symcomm {self.kind}: {title}; {len(self.data)} fields, .to_dict() for all>"


def evaluate(name: str, *, algorithm: str | None = None, dtype: str | None = None, backend: str | None = None,
             model: str | None = None, model_config: str | None = None, hardware: str | None = None,
             **values) -> Result:
    """``symcomm eval NAME KEY=VALUE ...`` as a value: send, recv, total, α/β/γ counts, time, the
    terms of a strategy, its step time with ``hardware`` (hybrid), ``inputs`` and ``units``.

    >>> import symcomm
    >>> symcomm.evaluate("dp", N=64, Phi=8 * 10**9)["send"]      # 2·63/64·Φ elements
    15750000000
    """
    args = SimpleNamespace(name=name, assignments=_words(values), algorithm=algorithm, dtype=dtype,
                           backend=backend, model=model, model_config=model_config, hardware=hardware)
    with notes.collected() as said:
        data = eval_payload(args)
    data.pop("_result_keys", None)
    data.pop("_extra_keys", None)
    return Result("evaluation", data, tuple(n.text for n in said))


def compare(primitive: str, *, dtype: str | None = None, hardware: str | None = None, **values) -> Result:
    """``symcomm compare PRIMITIVE ...`` as a value: every algorithm's counts and time at N and M,
    the best, and the fastest algorithm by message size with the sizes where they cross.

    >>> import symcomm
    >>> r = symcomm.compare("all_reduce", N=16, M="1MiB", alpha=1e-5, bw="50GB/s", gamma=0, dtype="bf16")
    >>> [x["algorithm"] for x in r["fastest_by_message_size"]]
    ['recursive_doubling', 'rabenseifner']
    """
    args = SimpleNamespace(name=primitive, assignments=_words(values), dtype=dtype, hardware=hardware, json=True)
    with notes.collected() as said:
        data = compare_payload(args)
    return Result("comparison", data, tuple(n.text for n in said))


def plan(model: str, *, gpus: int, batch: int, seq: int, hardware: str, top: int = 10, **options) -> Result:
    """``symcomm plan`` as a value: the layouts ranked by the step-time model (``layouts``), with the
    request and the assumptions; ``options`` are the command's flags by name (tp=8, zero=1, no_memory_check=True)
    or eval's KEY=VALUE names (t=8, recompute="selective"), checked as the command checks them.

    >>> import symcomm
    >>> best = symcomm.plan("llama3-8b", gpus=16, batch=64, seq=4096, hardware="h100", top=1)["layouts"][0]
    >>> best["t"] * best["p"] * best["c"] * best["d"]
    16
    """
    from . import planner     # imported here: numpy's import is paid only by a plan

    # the command's own check of every value (symcomm.planner.request_from_args), no argv words, no argparse
    args = planner.namespace(model=model, gpus=gpus, batch=batch, seq=seq, hardware=hardware, top=top, **options)
    with notes.collected() as said:     # what `symcomm plan` prints beside its answer, as data
        request, top = planner.request_from_args(args), planner.top_from_args(args)
        data = planner.to_json(planner.plan(request, top), top)
    return Result("plan", data, tuple(n.text for n in said))


def formula(name: str, algorithm: str | None = None, **options):
    """The closed forms of a primitive's algorithm or a strategy (with its options), as a
    :class:`symcomm.training.subjects.Subject`-backed value that Jupyter renders in LaTeX.

    >>> import symcomm
    >>> symcomm.formula("all_reduce", "ring").send
    2*M*(N - 1)/N
    """
    return Formula(subject(name, algorithm, **{k: str(v) for k, v in options.items()}))


@dataclass(frozen=True)
class Formula:
    """A subject's formulas: ``.send``, ``.recv``, ``.total``, ``.time`` (SymPy expressions), a LaTeX
    table in Jupyter (``_repr_latex_``), ``.to_dict()`` for JSON (text and LaTeX of each)."""

    subject: Subject

    def __getattr__(self, key):
        fields = self.subject.quantities()
        if key in fields:
            return fields[key]
        raise AttributeError(key)

    def _fields(self) -> dict:
        return {key: expr for key, expr in self.subject.quantities().items() if key != "time" or expr != 0}

    def to_dict(self) -> dict:
        from .core.printing import render

        return {"label": self.subject.label, "convention": self.subject.convention, "source": self.subject.source,
                "formulas": {k: {"text": sp.sstr(v), "latex": render(v, "latex")} for k, v in self._fields().items()}}

    def _repr_latex_(self) -> str:
        from .core.printing import render

        rows = r" \\ ".join(rf"\text{{{k}}} &= {render(v, 'latex')}" for k, v in self._fields().items())
        return rf"$\begin{{aligned}}{rows}\end{{aligned}}$"

    def __repr__(self) -> str:
        return f"<symcomm formulas of {self.subject.label}: {', '.join(self._fields())}>"
