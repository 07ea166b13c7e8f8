"""The KEY=VALUE words of ``eval`` and ``compare`` before any formula: split into values and options, their
other spellings, bandwidths and sizes with a unit turned into the symbols' own values, the time constants'
names and units.  SymPy-free (stdlib and ``symcomm.base``), so that the primitives' fast path
(:mod:`symcomm.training.fasteval`) and the SymPy binding (:mod:`symcomm.training.binding`) read the same words
the same way: one code path, not two.
"""

from __future__ import annotations

import functools
import numbers

from ..base import memo, notes
from ..base.errors import InputError
from ..base.inputs import MAX_VALUE, SIZE_UNITS, parse_bandwidth, parse_fraction, parse_size_bytes, split_unit
from ..base.units import bytes_per_element
from ..numbers.exactops import plain_exact
from ..base.crossing import SWITCH
from ..presets.hardware_values import (KERNEL_SHARES, datasheet_moved, declared_wiring_note, dtype_measured, memory_uncounted,
                                       mesh_board_note)
from ..presets.fit_errors import memory_verdict
from ..presets.models import RUN_OPTION_NAMES
from ..presets.systems import TYPED_CONSTANTS, TYPED_DATASHEET
from .megatron_features import (a2a_overlap_refusal, bf16_count_refusal, flex_dispatch_refusal, head_split_refusal, op_framework_refusal, router_capacity_refusal,
                                routing_note, schedule_refusal,
                                selective_framework_note, straddle_note, whole_numbers)
from .frameworks import MEGATRON_CORE
from .settings import OPTIONS, fused_grouped_mlp_shape_refusal

#: bad input: reported in one line, exit status 2 by the CLI
UsageError = InputError

#: the time constants' CLI names: those of ``symbols.TIME_SYMBOLS`` (written out here, without SymPy;
#: ``tests/training/test_fasteval.py`` holds the two equal)
TIME_NAMES = frozenset(("alpha", "alpha_inter", "beta", "beta_inter", "gamma"))
#: the time constants that count messages, not elements (× 1, not × bytes per element)
PER_MESSAGE_NAMES = frozenset(("alpha", "alpha_inter"))
_TIME_NAMES = TIME_NAMES


#: parameter names the CLI accepts besides the symbols' own names
ALIASES = {"gpus_per_node": "G"}
#: how an error names a parameter that has another spelling: both, so the user finds the one they typed
_SPELLED = {key: f"{key} ({typed})" for typed, key in ALIASES.items()}
def value_text(value) -> str:
    """A Python value as the KEY=VALUE word it stands for (the API's keyword values as the command line would
    type them: numbers exactly, text as given, a bool as 0 or 1); the grammar that then reads it is the one
    :func:`symcomm.base.inputs.parse_fraction`, so the API refuses and accepts what the command line does."""
    if type(value) is str:
        return value
    if type(value).__module__ == "numpy" and type(value).__name__ in ("bool", "bool_"):
        value = bool(value)         # numpy's bool is no numbers.Integral: "True" as a word was refused
    if isinstance(value, bool):
        value = int(value)
    # numpy's scalars as the Python numbers they hold: numpy 2's repr of a float64 is "np.float64(1.0)", words the
    # grammar refuses (an outsider's find: M=np.float64(2**20) was refused with "no parentheses")
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, float) or (isinstance(value, numbers.Real) and type(value).__module__ == "numpy"):
        return repr(float(value))
    return str(value)


def api_word(value) -> str | None:
    """:func:`value_text` of a number or text the API was given, None for anything else (a list, a dict, None)."""
    return value_text(value) if isinstance(value, (numbers.Real, str)) else None


def given(args, target_options) -> tuple[dict, dict]:
    """(symbol values, option values as text) of ``args``: the command's KEY=VALUE words
    (``args.assignments``), or the Python API's keyword values (``args.values``, a mapping) taken as they are —
    a value stays a Python int or text until the binding parses it (:func:`value_text` for anything else), so
    no text is joined and split again; an option (a word the subject's settings read) is text either way."""
    values = getattr(args, "values", None)
    if values is None:
        return split_assignments(args.assignments, target_options)
    return split_values(values, target_options)


def split_values(given_values: dict, target_options) -> tuple[dict, dict]:
    """A mapping NAME → value → (symbol values, option values as text), with :func:`split_assignments`'s rules
    (the other spellings, a name given twice)."""
    values, options = {}, {}
    for typed, value in given_values.items():
        key = ALIASES.get(typed, typed)
        if key in values or key in options:
            raise UsageError(f"{typed} is given twice; give each parameter once")
        if key in target_options:
            options[key] = value_text(value)
        else:
            values[key] = value
    return values, options


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
    # (base.inputs imported with the module: an import statement here cost its lookups on every answer)
    out, derived = dict(texts), {}
    for key, target in (("bw", "beta"), ("bw_inter", "beta_inter")) if ("bw" in out or "bw_inter" in out) else ():
        if key in out:
            if target in out:
                raise UsageError(f"give {key} or {target}, not both ({target} = 1 / {key})")
            try:
                rate = parse_bandwidth(key, value_text(out.pop(key)))
            except InputError as err:
                raise UsageError(str(err)) from None
            out[target] = repr(1.0 / rate)
            derived[target] = f"1 / {key} = 1 / ({rate:g} bytes/s)"
    # a unit is text (M="1GiB"); a number given as a Python value has none
    sized = "M" in out and type(out["M"]) is str and split_unit(out["M"], SIZE_UNITS)[1] is not None
    if dtype is None and (sized or not _TIME_NAMES.isdisjoint(out)):
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


def input_rows(model, model_config, hardware, dtype_typed: bool, dtype, typed: frozenset, derived: dict,
               value_names: tuple, time_names: tuple) -> tuple[list, dict | None]:
    """Each input's (name, unit, source, is a time constant) — ``value_names``: (name, unit) of each symbol
    value, ``time_names`` the time constants' names, in the answer's order — and the dtype's row (None without
    a dtype): where each value came from (typed, derived from a unit, a preset, a default)."""
    from .. import presets

    # the presets read once per answer, not once per input
    model_names = set(presets.model(model).values()) if model else set()
    system = presets.hardware(hardware) if hardware else None

    def source(name: str) -> str:
        if name in derived:
            return "typed, " + derived[name]
        if name in typed:
            return "typed"
        if name == "Phi" and not (model or model_config):
            return "derived from the shape (h, L, a, h_kv, F, V, s)"
        if name in model_names:
            return f"model preset {model}"
        if model_config and name != "G":
            return f"config file {model_config}"
        if system is not None:
            # γ = 0 for want of an HBM bandwidth, or because the file's fitted β already holds the reduction
            if name == "gamma" and (system.hbm_bytes_per_second is None or system.reduction_folded):
                return f"hardware {hardware}: " + "; ".join(system.defaults_used())
            return f"hardware {hardware}"
        return "default"

    rows = [(name, unit, source(name), False) for name, unit in value_names]
    rows += [(name, _TIME_UNITS[name], source(name), True) for name in time_names]
    dtype_row = None
    if dtype:
        dtype_row = {"value": dtype, "unit": f"{bytes_per_element(dtype)} bytes per element",
                     "source": "typed (--dtype)" if dtype_typed else
                     ("default (--hardware gives per-byte constants)" if hardware else
                      "default (a time or a byte size was asked)")}
    return rows, dtype_row


@functools.lru_cache(maxsize=256)
def units_of(result: tuple, extras: tuple, unit: str) -> tuple:
    """(key, unit) of every number in an answer whose result and extras have these keys (alpha and beta there
    are counts, not the inputs α, β); a function of the keys and the unit alone, worded once per process."""
    out = {"send": unit, "recv": unit, "total": unit, "time": "s",
           "alpha": "messages on the critical path (the count multiplying α)",
           "alpha_inter": "messages across nodes on the critical path (the count multiplying α_inter)",
           "beta": f"{unit} moved on the critical path (the count multiplying β)",
           "beta_inter": f"{unit} moved across nodes on the critical path (the count multiplying β_inter)",
           "gamma": f"{unit} reduced on the critical path (the count multiplying γ)"}
    out = {key: value for key, value in out.items() if key in result}
    out.update({"bubble_fraction": "ratio", "gpus": "GPUs"})
    return tuple((key, value) for key, value in out.items() if key in result or key in extras)


def preset_shape(args, name: str, option_texts: dict, takes) -> dict:
    """A model preset's (or config's) shape is used as plan uses it: with fewer K, V heads than
    heads ``gqa`` defaults to 1, ``embeddings`` to 1 (its vocabulary is known), with tied
    embeddings ``tied`` defaults to 1, with MoE layers ``moe`` to 1 and with MLA ranks ``attention``
    to mla (``Model.settings``), each said in a note; an option given explicitly (gqa=0) still wins.  ``takes``:
    the options the subject ``name`` takes (``subjects.option_names``, passed in: this module reads no subject)."""
    if not (args.model or args.model_config):
        return option_texts
    # a shipped model preset's defaults are the same for the same subject and options: found once, its notes
    # said again on every call (a config or a model file is read again: it may have changed)
    model = str(args.model)
    key = (name, model, tuple(option_texts.items())) if not args.model_config and not (
        "/" in model or "\\" in model or model.endswith(".json")) else None     # not a path: presets.systems._is_path
    held = _SHAPE_DEFAULTS.get(key) if key is not None else None
    if held is not None:
        added, said = held
        for text in said:
            notes.add(text, restates_default=True)
        return {**option_texts, **added} if added else option_texts
    wanted = [key for key in RUN_OPTION_NAMES if key in takes and key not in option_texts]
    if not wanted:
        return option_texts
    with notes.collected() as said:      # the notes said here, kept with the defaults for the next call
        out = _shape_defaults(args, wanted, option_texts)
    for note in said:
        notes.add(note.text, restates_default=note.restates_default)
    if key is not None and all(note.restates_default for note in said):
        if len(_SHAPE_DEFAULTS) >= 256:
            _SHAPE_DEFAULTS.clear()
        _SHAPE_DEFAULTS[key] = ({k: v for k, v in out.items() if k not in option_texts}, [n.text for n in said])
    return out


#: (subject name, shipped model, option words as given) → (the options its shape sets, the notes that say so)
_SHAPE_DEFAULTS: dict = {}


def hardware_wiring(args, option_texts: dict, takes) -> dict:
    """The nodes' wiring a hardware file declares (its ``nvlink``: mesh, GPUs wired point to point) as the ``nvlink``
    option where the words give none, said in a note: a property of the nodes, as the file's GPUs per node is; a preset
    (NVSwitch boards) and a file without the field leave the option's own default.  ``takes``: the options the
    subject takes (:func:`preset_shape`'s)."""
    if "nvlink" not in takes or "nvlink" in option_texts or not getattr(args, "hardware", None):
        return option_texts
    from .. import presets

    try:
        system = presets.hardware(args.hardware)
    except ValueError as err:
        raise UsageError(str(err)) from None
    said = declared_wiring_note(system, "nvlink=")
    if said is None:
        return option_texts
    notes.add(said)
    return {**option_texts, "nvlink": system.nvlink}


def model_of(args):
    """The model a command names: the preset (--model), the config file (--model-config), or None."""
    from .. import presets

    if args.model:
        return presets.model(args.model)
    return presets.model_from_config(args.model_config) if args.model_config else None


def _shape_defaults(args, wanted: list, option_texts: dict) -> dict:
    """:func:`preset_shape` of the options ``wanted`` (those the subject takes and were not given)."""
    from .. import presets

    if args.model and args.model_config:
        raise UsageError("give --model or --model-config, not both")
    try:
        model = model_of(args)
    except ValueError as err:
        raise UsageError(str(err)) from None
    out = dict(option_texts)
    filled = model.run_options()       # the page's model views run the same (symcomm.views.site.model_view)
    if "moe" in wanted and "moe" in filled:
        notes.add(f"moe=1: {model.name} has {model.moe_layers} MoE layers of {model.experts} experts "
                  f"({model.shared_experts} shared); give moe=0 to count them as dense", restates_default=True)
        out["moe"] = filled["moe"]
    if "attention" in wanted and "attention" in filled:
        notes.add(f"attention=mla: {model.name} has multi-head latent attention (q_lora, kv_lora, d_nope, d_rope, "
                  "d_v from the preset); give attention=mha to count it as multi-head attention", restates_default=True)
        out["attention"] = filled["attention"]
    if "mamba" in wanted and "mamba" in filled:
        attention, mamba = model.hybrid[:2]
        notes.add(f"mamba=1: {model.name} is a hybrid Mamba-Transformer of {model.layers} layers ({attention} attention, "
                  f"{mamba} Mamba-2, {model.moe_layers} MoE); give mamba=0 to count its layers as transformer layers",
                  restates_default=True)
        out["mamba"] = filled["mamba"]
    if "moe_latent" in wanted and "moe_latent" in filled:
        notes.add(f"moe_latent=1: {model.name}'s routed experts are {model.moe_latent} wide (LatentMoE: its tokens "
                  f"projected h → h_lat = {model.moe_latent} before the dispatch and back after the combine); give "
                  "moe_latent=0 to count them h wide", restates_default=True)
        out["moe_latent"] = filled["moe_latent"]
    if "gqa" in wanted and "gqa" in filled:
        notes.add(f"gqa=1: {model.name} has {model.kv_heads} K, V heads for {model.heads} heads "
              "(grouped-query attention, as plan assumes); give gqa=0 for full-width K, V", restates_default=True)
        out["gqa"] = filled["gqa"]
    if "embeddings" in wanted and "embeddings" in filled:
        notes.add(f"embeddings=1: {model.name}'s V × h embedding and LM head on the end stages, as plan "
              "counts them; give embeddings=0 to leave them out", restates_default=True)
        out["embeddings"] = filled["embeddings"]
    if "tied" in wanted and "tied" in filled:
        notes.add(f"tied=1: {model.name} ties its embedding and LM head; give tied=0 to untie", restates_default=True)
        out["tied"] = filled["tied"]
    return out


def _value(key: str, given, whole: bool, least: int) -> tuple:
    """:func:`_parsed` of a value as given: a word, or a Python value of the API.  A Python int within the bounds
    is the number its digits parse to (the grammar reads str(n) as n exactly), so it is taken as it is; anything
    else is read as its word (words.value_text), through the one grammar, with its refusals."""
    if type(given) is int and (least if whole else 0) <= given <= MAX_VALUE:
        return given, given
    if type(given) is float:
        return _parsed_float(key, given, whole, least)
    return _parsed(key, given if type(given) is str else value_text(given), whole, least)


@functools.lru_cache(maxsize=1024)
def _parsed_float(key: str, given: float, whole: bool, least: int) -> tuple:
    # a float read as its repr (words.value_text), once per value: keyed by floats only, so no equal int or
    # Fraction (1.0 == 1, 2**-30 == Fraction(1, 2**30)) shares its entry
    return _parsed(key, repr(given), whole, least)


@functools.lru_cache(maxsize=4096)
def _parsed(key: str, text: str, whole: bool, least: int) -> tuple:
    """(the exact value, as the answer shows it): binding.parse_value's rule — a time constant any number ≥ 0, a
    symbol a whole number ≥ its least value; the same words give the same immutable numbers, parsed once."""
    value = parse_fraction(key, text, integer=whole, least=least if whole else 0)
    if value.denominator == 1:
        return value.numerator, value.numerator
    return value, plain_exact(value)


#: the shape names a model's parameter count Φ depends on (presets.formula): one typed over a preset's leaves its Φ
PHI_SHAPE = ("h", "L", "F", "V", "h_kv", "h_q", "E", "F_e", "E_s", "L_moe")


#: layer counts that only an option reads: typed without it, the layout priced is not the one asked (a first/last
#: stage count priced as an even split), so refused rather than noted as unused (the communication reads both under
#: pipeline_split=first_last, so a word it leaves unread was typed without it)
NEEDS_OPTION = {"L_first": "pipeline_split=first_last", "L_last": "pipeline_split=first_last"}


#: what an eval hybrid --hardware answer's ``time`` is (its JSON time_is): the communication its terms count, on the GPU
#: they count, which under an uneven pipeline split is the last stage's, not always the stage that sets the step
TIME_IS = ("communication alone (no compute, overlap or bubble) of the GPU the terms count: under an uneven pipeline "
           "split the last stage's (busiest_stage says which stage sets the step; comm_time is that stage's); "
           "step_time is the whole step")


def needs_option_refusal(key: str) -> str:
    """Why ``key`` (of :data:`NEEDS_OPTION`) typed without its option is refused, in one line."""
    return (f"{key} is read only with {NEEDS_OPTION[key]}: without it the layout priced would not be the one typed; "
            f"give {NEEDS_OPTION[key]} with {key}, or leave {key} out")


def layout_refusal(step_texts: dict, options: dict, numbers: dict) -> str | None:
    """Why the step model refuses a layout once the model's shape is known (the experts' fused grouped MLP, the heads'
    split, v off the interleaved schedule), or None: eval's general path raises it, its generated path falls back to
    the general one to do so."""
    return (fused_grouped_mlp_shape_refusal(step_texts, options, numbers) or head_split_refusal(options, numbers)
            or schedule_refusal(options, numbers) or router_capacity_refusal(options, numbers)
            or bf16_count_refusal(options, numbers) or flex_dispatch_refusal(options, numbers)
            or a2a_overlap_refusal(step_texts, options, numbers))


def param_gather_note(step_texts: dict | None, options: dict, numbers: dict | None = None) -> str | None:
    """What eval says of overlap_param_gather=1 under framework=megatron, or None: without overlap_grad_reduce=1,
    that Megatron-LM's launcher refuses it and Megatron-Core and Megatron-Bridge run it
    (steptime._check_megatron_overlap); on a 1F1B pipeline, that its fill waits on each later stage's whole gather
    (overlap.fill_gather_waits)."""
    texts = step_texts or {}
    if str(options.get("framework", "megatron")) != "megatron" or \
            str(texts.get("overlap_param_gather")) not in ("1", "True"):
        return None
    if str(texts.get("overlap_grad_reduce")) in ("0", "False"):
        return ("overlap_param_gather=1 with overlap_grad_reduce=0: Megatron-LM's arguments.py refuses it, Megatron-Core "
                "and Megatron-Bridge run it (the parameter gathers overlapped, the gradient reduction not): priced so")
    stages = (numbers or {}).get("p")
    if str(options.get("schedule", "1f1b")) == "1f1b" and stages is not None and stages >= 2:
        return (f"overlap_param_gather=1 on a 1F1B pipeline: Megatron-LM starts no stage's gather ahead without virtual "
                f"stages (align_param_gather off), so the fill waits on each of the {int(stages) - 1} later stages' "
                "whole all-gather in turn, counted in the exposed data-parallel time; overlap_param_gather=0 waits on "
                "one, every stage at once (schedule=interleaved starts each chunk's ahead)")
    return None


def layout_notes(system, options: dict, numbers: dict, step_texts: dict | None = None) -> tuple[str, ...]:
    """What eval says of a layout whatever its numbers (both of its paths): the NVLink board's wiring, groups that
    straddle NVLink domains, group-limited routing a dispatcher does not count, recompute=op under a framework that
    does not run it, recompute=selective where the framework's own selective checkpointing is op-level."""
    framework = str(options.get("framework", OPTIONS["framework"].default))
    # plan refuses it (and leaves it out of its search); eval prices the op list as asked, and says so
    op = str(options.get("recompute")) == "op" and op_framework_refusal(framework) is not None
    said = (mesh_board_note(system, numbers.get("G"), str(options.get("nvlink", SWITCH))),
            straddle_note(options, numbers), routing_note(options), balance_note(framework, options),
            moe_share_note(options, numbers),
            partial_node_note(numbers), selective_framework_note(framework, str(options.get("recompute"))),
            chunk_split_note(options), param_gather_note(step_texts, options, numbers),
            dropout_note(framework, step_texts),
            f"recompute=op is torchtitan's op-level selective checkpointing (framework=fsdp2), no mode of framework="
            f"{framework}: priced as asked, with {framework}'s data-parallel schedule; for a run of {framework} give "
            "recompute=selective, full or none" if op else None)
    return tuple(note for note in said if note)


def balance_note(framework: str, options: dict) -> str | None:
    """What eval says of every MoE layout, which its --json assumptions said alone (an expert reviewer's find): the
    routing is priced balanced, and Megatron-Core's own default dispatcher is not the one eval prices by default."""
    if options.get("moe") not in (True, "1", 1):         # as routing_note reads it
        return None
    said = ("MoE priced under balanced routing: each expert receives its k/E share of the tokens, as Megatron-Core's "
            "moe_router_force_load_balancing runs it (the published benchmark runs' setting); a trained router's "
            "imbalance makes the busiest expert rank's GEMMs and all-to-alls larger, which the step does not count")
    if framework in MEGATRON_CORE and str(options.get("dispatcher", "alltoall")) == "alltoall":
        said += ("; dispatcher=alltoall: Megatron-Core's own default, allgather (transformer_config.py), is not "
                 "modelled (the published recipes run alltoall or flex)")
    return said


def dropout_note(framework: str, step_texts: dict | None) -> str | None:
    """What dropout=1 counts under framework=fsdp2 (an outsider typed it and saw no change), or None: the eager block's
    and the op list's counts are the tensors torchtitan's Llama saves, and it has no dropout module; only the count of
    a compiled block (Korthikanti et al.'s, compile=1) holds the masks."""
    if framework != "fsdp2" or str((step_texts or {}).get("dropout")) not in ("1", "True"):
        return None
    return ("dropout=1 under framework=fsdp2: the masks are counted in a compiled block (compile=1, Korthikanti et "
            "al.'s count) only; the eager block's count and recompute=op's list are the tensors torchtitan's Llama "
            "saves, and it has no dropout (torchtitan/models/llama/model.py)")


def chunk_split_note(options: dict) -> str | None:
    """What L_first and L_last count under the interleaved schedule (symcomm.training.stages), or None: the first and
    last model chunks, as a Megatron pipeline layout string places them; Megatron-LM's first/last flags size whole
    stages (an outsider typed --decoder-first-pipeline-num-layers 16 with v = 2 as L_first=16 and got the stages the
    wrong way round)."""
    if str(options.get("schedule")) != "interleaved" or str(options.get("pipeline_split")) != "first_last":
        return None
    return ("pipeline_split=first_last with schedule=interleaved: L_first and L_last are the layers of the first and "
            "last model chunks (the first stage's first chunk, the last stage's last), as a pipeline layout string "
            "places them (--pipeline-model-parallel-layout, account_for_embedding/loss_in_pipeline_split), not Megatron-"
            "LM's --decoder-first-pipeline-num-layers and --decoder-last-pipeline-num-layers, which set a whole stage's "
            "layers over its v chunks alike (with v ≥ 2 the first stage's second chunk is then no middle chunk): those flags "
            "are this split only with v = 1")


def note_unread_times(unread: list, label: str) -> None:
    """Say the time constants typed that ``label``'s time reads nothing of (a flat algorithm reads no alpha_inter,
    beta_inter): eval's two binding paths (binding.bound, fasteval._cold) say it alike."""
    if unread:
        notes.add(f"{', '.join(unread)} not used by {label}: a flat algorithm is priced on one link, typed alpha and "
                  "beta; a group spanning nodes is priced across the two links of a --hardware preset or file",
                  unread=tuple(unread))


def moe_share_note(options: dict, numbers: dict) -> str | None:
    """What eval says where a pipeline splits a model whose MoE layers are some of its layers (L_moe < L): each
    stage is priced holding them in the model's proportion, not where the model puts its dense ones."""
    if options.get("moe") not in (True, "1", 1):        # as routing_note reads it
        return None
    found = whole_numbers(numbers, "L", "L_moe", "p")
    if found is None or not (found[1] < found[0] and found[2] > 1):
        return None
    layers, moe_layers, _ = found
    return (f"each pipeline stage is priced holding MoE layers in the model's proportion, L_moe/L = {moe_layers}/"
            f"{layers} of its layers, not where the model places its {layers - moe_layers} dense ones (DeepSeek-V3 "
            "first, Llama 4 Maverick between its MoE ones): per-stage collective counts are averages and may be "
            f"fractional, a stage holding only MoE layers does up to L/L_moe = {layers / moe_layers:.3g} times the "
            "expert work and holds up to that many times the expert memory priced, and a stage holding only dense "
            "layers holds no experts, though priced with their share of its layers")


def partial_node_note(numbers: dict) -> str | None:
    """What eval says where the job's GPUs do not fill whole nodes (NVLink domains) of G: priced as typed, where plan
    takes whole nodes only."""
    # the common case first, in the numbers as given (ints or Fractions): every eval asks (symcomm.evaluate's warm
    # call too, whose microseconds tools/bench.py counts)
    try:
        gpus, g = numbers["t"] * numbers["c"] * numbers["d"] * numbers["p"], numbers["G"]
        if gpus <= g or gpus % g == 0:
            return None
    except (KeyError, TypeError, ZeroDivisionError):
        return None
    found = whole_numbers(numbers, "t", "c", "d", "p", "G")
    if found is None:
        return None
    t, c, d, p, g = found
    gpus = t * c * d * p
    return (f"the job's {gpus} GPUs do not fill whole nodes of G={g} ({gpus / g:.3g} nodes): priced as typed, each "
            "group on the nodes Megatron's rank order puts it; plan takes whole nodes only")


def kv_width_refusal(h: int, a: int, kv: int) -> str | None:
    """Why a K/V width ``kv`` is no whole number of the heads of width h/a, or None: one rule for a shape typed whole
    (binding._phi_from_shape) and a width typed over a preset's (:func:`typed_heads_refusal`)."""
    if (kv * a) % h == 0:
        return None
    width = f"{h // a}" if h % a == 0 else f"{h}/{a}"
    return f"h_kv={kv} (K/V width) is not a whole number of heads of width h/a = {width}"


def typed_heads_refusal(model, numbers: dict, shape: dict) -> str | None:
    """Why an h, a or h_kv typed over a preset leaves the model's heads no whole width, or None: its heads are h/a
    wide (a preset whose config sets head_dim apart from h/a keeps that width, and MLA's heads have widths of their
    own: neither is asked), and its K/V width h_kv a whole number of them, as a shape typed whole must be
    (binding._phi_from_shape)."""
    if model.head_dim or model.mla or not any(numbers.get(k, shape.get(k)) != shape.get(k) for k in ("h", "a", "h_kv")):
        return None
    h, a, kv = (numbers.get(k) for k in ("h", "a", "h_kv"))
    if None in (h, a, kv) or not all(float(x).is_integer() and x >= 1 for x in (h, a, kv)):
        return None     # the binding's own rules refuse these
    h, a, kv = int(h), int(a), int(kv)
    if h % a:
        return (f"h={h} with {model.name}'s a={a} heads gives heads of width h/a = {h}/{a}, no whole number: give "
                f"h a multiple of a, or a typed with it")
    said = kv_width_refusal(h, a, kv)
    return said and (f"{said}: give h_kv= a multiple of {h // a} with the h typed over {model.name}'s "
                     f"h={shape['h']:g}")


def with_model_shape(model, numbers: dict, step_texts: dict) -> tuple[dict, dict]:
    """The step model's float inputs and option words with a preset model's shape filled in where the words gave
    none (its values as floats, kept beside the model), ``gated`` from the model, and Qwen3-style query heads wider
    than h counted as the preset has them (q_width=heads, said as a default taken).  One rule for the general
    path (``answers.py``) and the generated one (``hybridfast.py``)."""
    shape = memo.once(model, "_answers_float_shape", lambda: {k: float(x) for k, x in model.values().items()})
    numbers = {**{k: x for k, x in shape.items() if k not in numbers}, **numbers}
    typed_over = [name for name in PHI_SHAPE if name in shape and numbers.get(name, shape[name]) != shape[name]]
    said = typed_heads_refusal(model, numbers, shape)
    if said:
        raise InputError(said)
    if typed_over and numbers.get("Phi") == shape.get("Phi"):
        notes.add(f"{', '.join(f'{name}={numbers[name]:g}' for name in typed_over)} typed over {model.name}'s "
                  f"{', '.join(f'{name}={shape[name]:g}' for name in typed_over)}: its Φ = {shape['Phi']:,.0f} is "
                  "still the preset's count of its own shape (the weights, gradients, optimizer and data-parallel "
                  "traffic); give Phi= for the shape typed")
    elif not typed_over and "Phi" in shape and numbers.get("Phi", shape["Phi"]) != shape["Phi"]:
        # the reverse: Φ typed alone moves what counts parameters, while the FLOPs count the layers' shape
        notes.add(f"Phi={numbers['Phi']:g} typed over {model.name}'s Φ = {shape['Phi']:,.0f}: the weights, gradients, "
                  "optimizer and data-parallel traffic take it; the FLOPs, compute time and MFU count the model's "
                  "shape (h, L, F, V and the heads), which it does not change; give the shape typed for both")
    for said in model.shape_notes(int(numbers["s"])) if "s" in numbers else ():   # plan's too (planner.search.plan)
        notes.add(said)
    if model.config_note():
        notes.add(model.config_note())
    step_texts = {"gated": bool(model.gated), **step_texts}
    if "q_width" in model.settings() and "q_width" not in step_texts:
        notes.add(f"q_width=heads: {model.name}'s {model.heads} heads are {model.head} wide, h_q = "
                  f"{model.heads * model.head} where h = {model.hidden}; give q_width=h to count them h wide",
                  restates_default=True)
        step_texts = {**step_texts, "q_width": model.settings()["q_width"]}
    if "dropout" in model.settings() and "dropout" not in step_texts:
        where = ("its config.json sets no hidden dropout" if model.source.startswith("Hugging Face config.json")
                 else "as its preset records (symcomm/presets/models.json)")
        notes.add(f"dropout=0: {model.name} trains without dropout, {where}, so no layer keeps a dropout mask; give "
                  "dropout=1 to count them", restates_default=True)
        step_texts = {**step_texts, "dropout": model.settings()["dropout"]}
    return numbers, step_texts


def say_unread_step(typed, step_names, needed, read, said) -> None:
    """Say the names typed for the step model alone (in ``step_names``, the binding's also-used ones, and not in the
    communication's ``needed``) that this setting's step model does not read (not in ``read``, its arguments: an
    expert's width for a dense model, v under 1F1B), but those a note of ``said`` names already: said, not refused,
    as the binding says of a name no formula uses.  One rule for the general and the generated path and the plan."""
    names = sorted(name for name in typed if name in step_names and name not in needed and name not in read
                   and not any(note.startswith(name + " not used") for note in said))
    if names:
        notes.add(f"{', '.join(names)} not used by the step model of this setting", unread=tuple(names))


def add_hardware_report(out: dict, system, compute: dict, typed_names, options: dict, dtype: str, reads,
                        model: str | None = None) -> dict:
    """The step report's words of its hardware, added to ``out``: the constants with their sources (``typed_names``
    the hardware values typed over the hardware's, presets.hardware_values.TYPED_HARDWARE, in the order to say them),
    the memory verdict beside the figures (the planner's rule, ``presets.Hardware.fits``), the fit's error with the
    checks of the run's framework (``options``: the step options, each absent one at its default) and what of the
    setting no run checked (``reads``: the names the step model reads), the errors on the model preset's own runs
    (``model``: its name, None for a model typed by its shape), and the defaults taken.  One rule for the general
    path (``answers.py``) and the generated one (``hybridfast.py``)."""
    return with_hardware_report(out, system, hardware_words(system, compute, typed_names, options, dtype, reads,
                                                            model))


def hardware_words(system, compute: dict, typed_names, options: dict, dtype: str, reads,
                   model: str | None = None) -> tuple:
    """What :func:`add_hardware_report` adds whatever the numbers: (the constants with their sources, what the fit's
    error is asked of: the run's framework and the constants it reads, or None where a typed constant leaves it
    unknown, the units added, the defaults taken, the framework whose memory count the verdict is of), worded once by
    a plan (hybridfast)."""
    precision = options.get("precision", OPTIONS["precision"].default)
    framework = options.get("framework", OPTIONS["framework"].default)
    peaks = [name for name in typed_names if name in TYPED_DATASHEET]
    typed = [name for name in typed_names if name in TYPED_CONSTANTS and name in compute]     # those the run reads
    peak_source = f"typed ({', '.join(peaks)}); the hardware's: {system.peak_source}" if peaks else system.peak_source
    source = (f"typed ({', '.join(typed)}); the hardware's: {system.step_time_source}" if typed
              else system.step_time_source)
    constants = {**compute, "source": source, "peak_source": peak_source,
                 "dtype": dtype if str(precision) == "bf16" else "bf16"}     # the peak's dtype
    # a named kernel's share: typed, fitted by a calibration (the hardware's step_time) or published (attention_source)
    shares = [name for name in KERNEL_SHARES if name in compute]
    if shares:
        constants["kernel_share_from"] = ("typed" if shares[0] in typed else "step_time"
                                          if shares[0] in dict(system.step_time) else "attention_source")
    units = {"gpu_memory_bytes": "bytes", "memory_excess_bytes": "bytes",
             "step_time_error": "ratios (predicted / measured - 1); runs, fitted: counts"}
    # the fit's error is that of its own constants on 16-bit runs, at the hardware's own peaks and HBM bandwidth: with
    # one typed over them (a datasheet value other than the hardware's own, which the constants were not measured
    # with), or another --dtype, none is known (None)
    moved = datasheet_moved(system, {name: compute[name] for name in peaks if name in compute})
    asked = None if typed or moved or not dtype_measured(dtype, str(precision)) else (
        framework, (), tuple(sorted(name for name in compute if name in reads)), model, str(precision))
    return constants, asked, units, tuple(system.defaults_used()), framework, memory_uncounted(dtype, str(precision))


def verdict_of(system, framework, uncounted):
    """The memory verdict of a call's bytes per GPU (one rule for eval's paths and a plan's): the hardware's, or
    unknown where the count is not the run's (``uncounted``: why)."""
    if uncounted:
        return functools.partial(memory_verdict, None, have=None, band=system.memory_band, framework=framework,
                                 uncounted=uncounted)
    return functools.partial(system.memory_verdict, framework=framework)


def with_hardware_report(out: dict, system, words: tuple) -> dict:
    """:func:`add_hardware_report` by its :func:`hardware_words`: the memory verdict and the fit's error made anew
    (both are the answer's own mappings), the words copied."""
    constants, asked, units, defaults, framework, uncounted = words
    out["constants"] = dict(constants)
    out.update(verdict_of(system, framework, uncounted)(out["memory_per_gpu"]))
    out["step_time_error"] = None if asked is None else system.step_time_error(*asked)
    out["units"].update(units)
    out["assumptions"] += defaults
    return out
