"""KEY=VALUE words bound to a subject, as ``eval`` and ``compare`` read them: names checked (and their
other spellings), values parsed exactly, units converted (``bw=50GB/s`` → β, ``M=1GiB`` → elements of
--dtype), the presets' values filled in (a model's shape, a hardware's links), and the subject's
requirements checked.  The one binding both commands (and the Python API) share; what the user is told
goes to :mod:`symcomm.base.notes`.
"""

from __future__ import annotations

import functools

from ..core import symbols as S
from ..base import memo, notes
from ..base.crossing import placed_note
from ..base.errors import InputError
from ..base.inputs import parse_number
from ..base.units import bytes_per_element
from ..numbers.evaluation import hold, python_number
from .subjects import Subject, option_names
# the KEY=VALUE words' own rules (SymPy-free: the primitives' fast path reads them too), named here as before
from .words import (_SPELLED, _TIME_UNITS, ALIASES, NEEDS_OPTION, TIME_NAMES, TIME_RULE, UsageError, _with_units,  # noqa: F401
                    given, kv_width_refusal, needs_option_refusal, note_unread_times, hardware_wiring, preset_shape, split_assignments,
                    value_text)


_TIME_NAMES = TIME_NAMES     # words.TIME_NAMES: {cli name of each of symbols.TIME_SYMBOLS} (a test holds them equal)
_PER_MESSAGE = {S.alpha, S.alpha_inter}  # coefficients that count messages, not elements




def _presets():
    # imported on first use (symcomm list, show, prove read no preset), then kept: an import statement per call
    # costs its lookups on every answer
    global _PRESETS
    if _PRESETS is None:
        from .. import presets

        _PRESETS = presets
    return _PRESETS


_PRESETS = None


def _strategies() -> dict:
    # imported on first use: `symcomm list` of the collectives needs no strategy
    from .strategies import STRATEGIES

    return STRATEGIES


def parse_value(key: str, text, least: int | None = None):
    """One KEY=VALUE value, exactly: a time constant as a real number, a symbol as its kind
    (whole for integer symbols, at least ``least``, by default the symbol's own least value);
    InputError naming the parameter."""
    if type(text) is int:
        text = str(text)           # the API's whole numbers (the common case): value_text's rule for an int
    elif type(text) is not str:
        text = value_text(text)    # a Python value of the API, read as the word it stands for: one grammar
    return _parsed(key, text, least)[0]      # the same words give the same immutable number: parsed once


def _parsed_value(key: str, text, least: int | None = None) -> tuple:
    """:func:`parse_value`'s number with the same number as a Python int or Fraction (None when not exact) and
    as a float: (SymPy's, Python's, float), converted once per word with the parse."""
    if type(text) is int:
        text = str(text)
    elif type(text) is not str:
        text = value_text(text)
    return _parsed(key, text, least)


@functools.lru_cache(maxsize=4096)
def _parsed(key: str, text: str, least: int | None):
    number = _parse_value(key, text, least)
    exact = python_number(number)
    # float() of the exact Python number rounds as SymPy's does (answers._step_numbers' rule)
    return number, exact, float(number if exact is None else exact)


def _parse_value(key: str, text, least: int | None):
    if key in _TIME_NAMES:
        return parse_number(key, text, integer=False)
    sym = S.symbol(key)
    least = S.least_value(sym) if least is None else least
    return parse_number(_SPELLED.get(key, key), text, integer=bool(sym.is_integer), least=least)


def _names_of(target: Subject) -> tuple:
    """(the names its formulas need, sorted; the time constants its time uses; every name it takes): found
    once per subject (subjects are immutable and cached: symcomm.training.answers), not once per call."""
    def build():
        needed_names = sorted(S.BY_SYMBOL[x].cli_name for x in target.symbols() if x in S.BY_SYMBOL)
        time_needed = frozenset(S.BY_SYMBOL[sym].cli_name for sym, coef in target.cost.coefficients if coef != 0)
        return needed_names, time_needed, needed_names + sorted(_TIME_NAMES)

    return memo.once(target, "_binding_names", build)


def _needed_of(target: Subject) -> tuple:
    """(the names its formulas need, as a set; the least value a name may take where the subject says), once
    per subject: the loop over the words then looks up names (strings), not SymPy symbols."""
    return memo.once(target, "_binding_needed", lambda: (
        frozenset(_names_of(target)[0]), {S.BY_SYMBOL[sym].cli_name: n for sym, n in target.least.items()}))


#: CLI name → symbol (symbols.symbol without its error: the names looked up here are known ones)
_SYMBOL = {name: info.symbol for name, info in S.SYMBOLS.items()}


def bind(target: Subject, texts: dict, check: bool = True, also_used: frozenset = frozenset()) -> tuple[dict, dict]:
    """Check names and parse values: (symbol → exact value, time symbol → value).  With
    ``check`` False the values are not checked against the subject's requirements (the
    caller checks them against what a backend runs instead)."""
    values, times = {}, {}
    # the same numbers as Python ints and Fractions (held for the checks and the answer: held_numbers) and as
    # floats by name (the step model's: floats_of), from the parse's own cache: converted once per word
    numbers, time_numbers, floats, time_floats = {}, {}, {}, {}
    # what the names alone decide (each word's symbol and least value, the names not used, the time constants
    # missing) is found once per subject and names given, in their order: a warm call parses the words only
    plans = memo.table(target, "_binding_plans")
    plan = plans.get((tuple(texts), also_used))
    if plan is None:
        plan = _bind_plan(target, texts, also_used)
        if len(plans) >= 256:
            plans.clear()
        plans[tuple(texts), also_used] = plan
    slots, unused, absent = plan
    for (key, sym, least, is_time), text in zip(slots, texts.values()):
        if type(text) is not str:      # _parsed_value's rule, inlined: a word per value, parsed once per word
            text = str(text) if type(text) is int else value_text(text)
        if is_time:
            times[sym], time_numbers[sym], time_floats[key] = _parsed(key, text, None)
        else:
            values[sym], numbers[sym], floats[key] = _parsed(key, text, least)
    # parse_number gives SymPy's Integer or Rational: every value has its Python number (never None)
    hold(values, numbers)
    hold(times, time_numbers)
    if len(_FLOATS) >= 4:
        _FLOATS.clear()
    _FLOATS[id(times)] = (times, time_floats)
    _FLOATS[id(values)] = (values, floats)
    problems = target.problems(values) if check else []
    if problems:
        raise UsageError(problems[0])
    refused = next((key for key in unused if key in NEEDS_OPTION), None)
    if refused:
        raise UsageError(needs_option_refusal(refused))
    if unused:
        notes.add(f"{', '.join(unused)} not used by {target.label}", unread=tuple(unused))
    if absent:
        raise UsageError(f"missing {', '.join(absent)}: the time of {_who(target)} needs "
                         f"{', '.join(sorted(_names_of(target)[1]))} once any of them is given")
    return values, times


#: the words users bring from elsewhere for a parameter eval spells otherwise: the hint its refusal adds
MISSPELT = {"mb": " (mb is plan's micro-batch size; eval takes m, the micro-batches per replica: m = b/(d·mb))",
            "micro_batch": " (eval takes m, the micro-batches per replica: b/(d·micro-batch size))",
            "dp": " (the data-parallel degree is d)", "tp": " (the tensor-parallel degree is t)",
            "pp": " (the pipeline-parallel degree is p)", "ep": " (the expert-parallel degree is e)",
            "vp": " (the virtual pipeline stages per rank are v, with schedule=interleaved)",
            "seq": " (the sequence length is s)", "gbs": " (the global batch, in sequences, is b)"}


def _who(target: Subject) -> str:
    """A subject as a refusal names it: a primitive by its label, a strategy by its name and the options given, not
    its whole label (the hybrid's names all ~40 options)."""
    if target.kind == "primitive":
        return target.label
    return " ".join([target.name, *(f"{k}={v}" for k, v in target.changed.items())])


def _bind_plan(target: Subject, texts: dict, also_used: frozenset) -> tuple:
    """(each word's (name, symbol, least value, is a time constant), the names given but not used, the time
    constants missing once one is given) for ``texts``' names, in their order; the refusals in the words'
    order — a value that is not a number (each parsed here as it comes), a name unknown, then a needed name
    missing — so a plan exists only for names that bind."""
    needed_names, time_needed, allowed = _names_of(target)
    needed, least = _needed_of(target)
    slots, unused = [], []
    for key, text in texts.items():
        if key in _TIME_NAMES:
            _parsed_value(key, text)
            slots.append((key, _SYMBOL[key], None, True))
        elif key in needed or (target.open_symbols and key in S.SYMBOLS):
            # a strategy may be given a known symbol it does not use with these options
            # (e with moe=0, N to cross-check d·t·p·c); it is checked, then noted
            _parsed_value(key, text, least.get(key))
            slots.append((key, _SYMBOL[key], least.get(key), False))
            if key not in needed and key not in also_used:
                unused.append(key)
        else:
            options = (f"; options: {', '.join(target.option_names)} (symcomm list: their defaults)"
                       if target.option_names else "")
            if target.name == "hybrid":     # the step model's own, read with --hardware
                from .settings import STEP_OPTIONS

                options += f"; step-time options: {', '.join(option.name for option in STEP_OPTIONS)}"
            raise UsageError(f"unknown parameter {key!r} for {_who(target)}; allowed: {', '.join(allowed)}{options}"
                             f"{MISSPELT.get(key, '')}")
    # every needed name given (set operations, the common case), else which are missing, in order
    missing = [] if needed <= texts.keys() and needed.isdisjoint(_TIME_NAMES) else \
        [name for name in needed_names if name not in texts or name in _TIME_NAMES]
    if missing:
        raise UsageError(f"missing {', '.join(missing)}: {_who(target)} needs {', '.join(needed_names)} "
                         f"(as KEY=VALUE)")
    given_times = [key for key in texts if key in _TIME_NAMES]
    absent = sorted(time_needed - set(given_times)) if given_times else []
    return tuple(slots), unused, absent


def floats_of(bound_values: dict) -> dict | None:
    """The values of a dict :func:`bind` returned (values or times), as floats by CLI name, or None when that
    dict is not the last one bound (the binding's dicts are never changed after binding)."""
    held = _FLOATS.get(id(bound_values))
    return held[1] if held is not None and held[0] is bound_values else None


#: id → (a dict bind returned, its values as floats by name): the last answer's, kept for the step model
_FLOATS: dict = {}


def _preset_shape(args, name: str, option_texts: dict) -> dict:
    """A model preset's (or config's) shape as the subject ``name`` takes it (:func:`words.preset_shape`, the
    rule and its notes; SymPy-free, so the hybrid fast path reads it too), and the nodes' wiring a hardware file
    declares (:func:`words.hardware_wiring`)."""
    if getattr(args, "hardware", None):
        option_texts = hardware_wiring(args, option_texts, option_names(name))
    if not (args.model or args.model_config):
        return option_texts
    return preset_shape(args, name, option_texts, option_names(name))


def _shape_count(texts: dict, gated: bool, tied: str | None = None, moe: bool = False, mamba: bool = False):
    """The model the shape given as KEY=VALUE counts (:func:`_phi_from_shape`' rules), as (the shape's model, its Φ,
    the count's name, the embedding's words); None without the whole shape."""
    hybrid = ("L_att", "L_ssm", "a_ssm", "d_ssm", "n_ssm", "g_ssm")
    shape = ("h", "L", "a", "h_kv", "F", "V", "s") + (("E", "k", "F_e", "L_moe") if moe else ()) + (
        hybrid if mamba else ())
    # the counts' MLPs: a hybrid's squared-ReLU ones (gated=0), a MoE transformer's SwiGLU experts (gated=1)
    other_mlp = gated if mamba else moe and not gated
    if not all(key in texts for key in shape) or (moe and "E_s" not in texts) or other_mlp:
        return None
    from .. import presets
    from .settings import OPTIONS

    n = {key: parse_number(key, value_text(texts[key]), integer=True) for key in shape}
    if moe:                          # no shared expert (Mixtral, Grok-1, Qwen3-MoE) is 0
        n["E_s"] = parse_number("E_s", value_text(texts["E_s"]), integer=True, least=0)
    said = kv_width_refusal(int(n["h"]), int(n["a"]), int(n["h_kv"]))
    if said:
        raise UsageError(said)
    untied = None if tied is None else not OPTIONS["tied"].resolve(tied)   # InputError names tied= and 0, 1
    experts = dict(experts=int(n["E"]), top_k=int(n["k"]), moe_layers=int(n["L_moe"]), moe_ffn=int(n["F_e"]),
                   shared_experts=int(n["E_s"])) if moe else {}
    if mamba:
        if n["d_ssm"] % n["a_ssm"]:
            raise UsageError(f"d_ssm={n['d_ssm']} is not a whole number of the a_ssm={n['a_ssm']} Mamba heads")
        experts["hybrid"] = (int(n["L_att"]), int(n["L_ssm"]), int(n["a_ssm"]), int(n["d_ssm"] // n["a_ssm"]),
                             int(n["n_ssm"]), int(n["g_ssm"]))
    family = "nemotron_h" if mamba else "llama" if gated else "gpt"
    shape_only = presets.Model(name="KEY=VALUE", title="the shape given", family=family,
                               hidden=int(n["h"]), layers=int(n["L"]), heads=int(n["a"]),
                               kv_heads=int(n["h_kv"] * n["a"] // n["h"]), ffn=int(n["F"]), vocab=int(n["V"]),
                               seq=int(n["s"]), tied=bool(gated and untied is False), **experts)
    # the GPT count holds the embedding once (tied): an untied LM head adds its own V·h (Nemotron-H's holds both)
    phi = shape_only.parameters + (int(n["V"] * n["h"]) if untied and family == "gpt" else 0)
    embedding = "" if untied is None else (", untied embeddings" if untied else ", tied embeddings")
    kind = "Nemotron-H" if mamba else "Llama MoE" if moe else "Llama" if gated else "GPT"
    return shape_only, phi, kind, embedding


def _phi_from_shape(texts: dict, gated: bool, tied: str | None = None, moe: bool = False, mamba: bool = False,
                    gated_typed: bool = True) -> dict:
    """Φ from the shape given as KEY=VALUE (h, L, a, h_kv, F, V, s): GPT's count (biases, learned
    positions, tied embedding), or with gated=1 Llama's (SwiGLU, grouped-query attention, untied
    embeddings) — said in a note; ``tied`` (the typed tied= text, None when not typed) overrides the count's
    own embedding: a second V·h for an untied GPT (Megatron-LM --untie-embeddings-and-output-weights), one
    less for a tied Llama.  ``moe`` (moe=1, gated=1): with E, k, F_e, L_moe and E_s (the shared experts, 0 for none)
    given, Llama's count of its MoE layers (Mixtral's, Llama 4's: presets.formula.phi_llama) and Φ_E beside Φ
    unless typed.  ``mamba`` (mamba=1, gated=0): with L_att, L_ssm, a_ssm, d_ssm, n_ssm and g_ssm given, the
    Nemotron-H count (presets.formula.phi_nemotron_h: Mamba-2 mixers, attention layers, squared-ReLU MLPs, MoE layers
    when moe=1).  Without the whole shape, texts unchanged (Φ is then missing).  A Φ typed beside the whole shape
    is kept, and said where the shape counts another by more than 1 % (the FLOPs count the shape, the states Φ);
    ``gated_typed``: whether gated= was typed (untyped, an F other than GPT's 4h is said to be counted ungated)."""
    counted = _shape_count(texts, gated, tied, moe, mamba)
    if counted is None:
        return texts
    shape_only, phi, kind, embedding = counted
    if not gated_typed and kind == "GPT" and shape_only.ffn != 4 * shape_only.hidden:
        # the default ungated MLP is GPT's, 4h wide: another width is likelier a SwiGLU model's (8h/3 rounded)
        notes.add(f"gated=0 (not given): the MLP counted ungated, GPT's two matmuls of width F; F={shape_only.ffn} is "
                  f"not GPT's 4h = {4 * shape_only.hidden}: give gated=1 for a SwiGLU MLP (Llama's), three matmuls")
    if "Phi" in texts:
        typed = float(parse_number("Phi", value_text(texts["Phi"]), integer=False))
        if abs(typed - int(phi)) > 0.01 * int(phi):
            notes.add(f"Phi={typed:g} typed, where the shape typed counts Φ = {int(phi):,} ({kind} count{embedding}): the "
                      "weights, gradients, optimizer and data-parallel traffic take Phi, the FLOPs, compute time "
                      "and MFU the shape; give the two alike")
        return texts
    notes.add(f"Phi={phi} from the shape ({kind} count{embedding}; give Phi= to override)", restates_default=True)
    if moe and "Phi_E" not in texts:
        notes.add(f"Phi_E={shape_only.expert_parameters} from the shape (the routed experts, L_moe·E·3·h·F_e; give "
                  "Phi_E= to override)", restates_default=True)
        return {**texts, "Phi": str(phi), "Phi_E": str(shape_only.expert_parameters)}
    return {**texts, "Phi": str(phi)}


def _word(value):
    # a typed value as its word, None as None (G=0 given as a Python int is typed, and refused, as "0" is)
    return None if value is None else value_text(value)


def bound(target: Subject, texts: dict, dtype: str | None, args, *, typed: frozenset = frozenset(),
          check: bool = True, also_used: frozenset = frozenset(), gpus_per_node: str | None = None) -> tuple[dict, dict, str | None]:
    """(symbol → exact value, time symbol → value, dtype): ``target`` at the KEY=VALUE ``texts``
    (units already converted) completed from the presets of ``args`` (model, model_config,
    hardware: which link each level uses is ``presets.link_values``' rule, on nodes of
    ``gpus_per_node`` GPUs — default the G in ``texts`` — else the preset's), then checked by
    :func:`bind`.  The one binding ``eval`` and ``compare`` share; what the user is told goes to
    :mod:`symcomm.base.notes`."""
    model, config, hardware = (getattr(args, key, None) for key in ("model", "model_config", "hardware"))
    typed_times = [key for key in texts if key in _TIME_NAMES]
    flat_g = bool(hardware) and "G" in texts and S.G not in target.symbols()
    if flat_g:      # read before the presets take it as the node size (an empty G would leave the preset's)
        parse_number(_SPELLED.get("G", "G"), texts["G"], integer=True, least=1)
    if model or config or hardware:  # presets fill values; KEY=VALUE wins
        texts, dtype = _presets().fill_from_presets(target, texts, model_name=model, config_path=config,
                                         hardware_name=hardware, dtype=dtype,
                                         gpus_per_node=gpus_per_node or _word(texts.get("G")))
        if flat_g:
            # a flat algorithm's G places its ranks on nodes of G GPUs (which link each step uses: the preset's
            # rule above), as compare's does; no formula of it to bind
            notes.add(placed_note(texts["G"]))
            texts = {key: text for key, text in texts.items() if key != "G"}
    if "s" in texts and "s" not in typed and (model or config):
        notes.add(f"s={texts['s']} is the preset's sequence length (its context window); give s= for "
             "the length you train at")
    values, times = bind(target, texts, check=check, also_used=also_used)
    note_unread_times([key for key in typed_times if key not in _names_of(target)[1]], target.label)
    return values, times, dtype
