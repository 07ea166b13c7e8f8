"""The interactive page, ``docs/site/``: every catalog formula live in the browser, offline.

``build_docs.py`` writes it beside the Markdown; it opens from the file system (no server, no
network, no CDN).  What it computes comes from the same SymPy expressions as everything else:

* ``formulas/<primitive>.js`` (every algorithm of a primitive: its chart draws them all) and
  ``formulas/<strategy variant>.js`` (one per variant; ``formulas/hybrid__step.js`` the step model of every hybrid
  variant, one graph as data shared by all and its runner written once: :func:`step_script`), loaded by
  app.js when a view first needs them (script insertion), so the first view loads only what it shows — the
  functions of the ``javascript`` export (:func:`symcomm.views.export.javascript.to_script`: exact ``BigInt`` counts, float
  times, the requirement checks with the command line's messages), for the quantities *as the page
  shows them*: in **bytes** of the chosen dtype, with α, β, γ per message / per byte, which is what
  ``symcomm eval --dtype D --json`` answers (``B_e`` below is the bytes per element; a strategy's
  fp32 gradient buffers are widened by 4/B_e, :func:`symcomm.training.terms.cost_in_bytes_of`);
* ``formulas/helpers.js`` — the helpers those scripts share (exact arithmetic, the number reader, the rules'
  tests), loaded once by ``index.html`` before any of them;
* ``catalog.js`` — the subjects, their parameters, requirements, sources and their formulas as
  MathML (SymPy's presentation printer, :class:`symcomm.core.printing.SymcommMathMLPrinter`), the
  symbols, dtypes, hardware and model presets;
* ``index.html``, ``app.js``, ``style.css`` — the page itself (``templates/site/``); ``numbers.js``, its
  reader of numbers, the command line's grammar (:func:`symcomm.base.inputs.grammar`, in ``catalog.js``).

Scripts are classic scripts, not ES modules: Chromium refuses a module loaded from ``file://`` (a dynamic
``import()`` too), and the page must open from the file system; a script element inserted on demand loads there.
The page keeps its state in the URL's fragment, so a link reproduces what was on screen.
"""

from __future__ import annotations

import json
from functools import lru_cache

import sympy as sp

from ..base.crossing import PEERS
from ..core import symbols as S
from ..core.cost import Cost
from ..templates import FOLDER as TEMPLATE_FOLDER
from ..presets.hardware_values import TYPED_HARDWARE, dtype_measured, element_refusal, memory_uncounted

SITE_TEMPLATES = TEMPLATE_FOLDER / "site"

#: bytes per element of the run's dtype, B_e: the page counts every subject in bytes of it, as ``eval --dtype`` gives
#: them (the exports read the same symbol where a subject runs some terms in a width of its own)
BYTES, BYTES_INFO = S.BYTES, S.BYTES_INFO

#: the page's units of each quantity (as ``symcomm eval --dtype D --json`` reports them)
UNITS = {"send": "bytes", "recv": "bytes", "total": "bytes", "alpha": "messages", "alpha_inter": "messages",
         "beta": "bytes moved", "beta_inter": "bytes moved", "gamma": "bytes reduced", "time": "s"}
#: the values the page opens with (a user changes them).  Every view must open on values eval accepts,
#: with or without any model or hardware preset (tests/integration/test_site.py evaluates them all through eval):
#: b = d·m·1 (the hybrid needs b/d divisible by m: b=8 with d=4, m=8 opened on an error); p = 1 divides
#: every preset's L (deepseek-v3 has 61 layers, gpt3-175b 96, llama3-405b 126)
START = {"N": 8, "M": 2 ** 26, "G": 8, "C": 4, "K": 2 ** 19, "Phi": 7_000_000_000, "b": 32, "s": 4096, "h": 4096,
         "L": 32, "m": 8, "v": 1, "k": 2, "f": 1, "E": 8, "h_kv": 1024, "a": 32, "d": 4, "t": 2, "p": 1, "c": 1,
         "e": 1, "L_moe": 32, "Phi_E": 1_000_000_000, "V": 32000, "F": 11008, "F_e": 14336, "E_s": 0,
         # attention=mla: DeepSeek-V3's latent ranks and head widths (its config.json)
         "q_lora": 1536, "kv_lora": 512, "d_nope": 128, "d_rope": 64, "d_v": 128,
         # recompute=block: a quarter of the 32 layers of the opening's one chunk recompute
         "L_rc": 8,
         # cpu_offload=1: half of the 32 layers' activations in host memory
         "L_off": 16,
         # mamba=1: of the 32 layers 4 attention and 16 Mamba-2 (the rest dense MLPs), Nemotron 3 Nano's mixer
         "L_att": 4, "L_ssm": 16, "a_ssm": 64, "d_ssm": 4096, "n_ssm": 128, "g_ssm": 8,
         # moe_latent=1: Nemotron 3 Super's latent width
         "h_lat": 1024,
         # mtp=1: DeepSeek-V3's one multi-token-prediction depth
         "D_mtp": 1}
#: an option that makes a start value invalid, and the value its subjects open with instead (the page
#: changes one option at a time): moe=1 with t > 1 needs sp=1 (Megatron-Core refuses MoE with tensor
#: parallelism without sequence parallelism, the strategy's own check); the interleaved schedule needs
#: p ≥ 2 and v ≥ 2 (v = 1 Megatron-LM runs as 1F1B, and eval refuses it; the page's interleaved view splits the layers
#: first/last, PAGE_VARIANTS, so that L need not divide into p·v chunks)
START_WITH_OPTION = {("moe", "1"): {"t": 1}, ("schedule", "interleaved"): {"p": 2, "v": 2},
                     ("mamba", "1"): {"L_moe": 12},     # with moe=1 the 12 layers not attention or Mamba are MoE
                     ("pipeline_split", "first_last"): {"p": 2},     # a first/last split needs p ≥ 2 stages
                     ("recompute", "op"): {"t": 1}}                  # op with t > 1 needs sp=1 (training.hybrid)


def start_values(sub) -> dict[str, int]:
    """What a subject's view opens with, before a preset or the user changes it: :data:`START`, with
    the values :data:`START_WITH_OPTION` gives for the subject's options."""
    out = dict(START)
    for key, value in sub.options.items():
        out.update(START_WITH_OPTION.get((key, str(value)), {}))
    return out


def opening_values(sub, model: str = "", hardware: str = "", entry: dict | None = None) -> dict[str, str]:
    """The text of every input of a subject's view as the page opens it with these presets chosen
    (nothing typed): a model preset's value, else the hardware's GPUs per node for G (and for a two-level
    form N in whole nodes of them, M a multiple of N), else the start
    value (app.js's ``valueText``, in the same order).  ``entry``: the subject's catalog entry if the caller
    has it (a built page's catalog.js; building one costs the subject's SymPy, seconds for a hybrid variant)."""
    from .. import presets

    entry = entry or catalog_entry(sub)
    names = entry["params"] + (entry["step"]["params"] if "step" in entry else [])
    model_values = presets.model(model).values() if model and sub.kind != "primitive" else {}
    start = start_values(sub)
    out = {}
    for name in names:
        if name in model_values:
            out[name] = str(model_values[name])
        elif hardware and name == "G":
            out[name] = str(presets.hardware(hardware).values(1)["G"])
        elif hardware and entry.get("two_level") and name in ("N", "M"):
            # a two-level form runs on whole nodes: N rounded up to a multiple of G, M to a multiple of that N
            g = int(presets.hardware(hardware).values(1)["G"])
            n = -(-int(start["N"]) // g) * g
            out[name] = str(n if name == "N" else -(-int(start["M"]) // n) * n)
        elif name not in ("L_first", "L_last"):
            out[name] = str(start[name])
    if "L_first" in names and "L_first" not in model_values:
        chunks = int(out.get("p", 1)) * (int(out["v"]) if "v" in out else 1)
        out["L_first"], out["L_last"] = (str(x) for x in opening_split(int(out["L"]), chunks))
    return out


@lru_cache(maxsize=1)
def _formula_class():
    from dataclasses import dataclass

    from .export import Formula

    @dataclass(frozen=True)
    class BytesFormula(Formula):
        """An exported formula whose arguments may include ``B_e`` (bytes per element), and also read the
        ``tested`` symbols of its subject: those its subject's rules test (page_formulas), so that every function of
        the page refuses a layout its rules refuse, as eval does, though its own quantity reads only some of them."""

        tested: frozenset = frozenset()

        @property
        def parameters(self):
            read = free_symbols(self.expr) | self.tested
            own = tuple(info for info in S.SYMBOLS.values() if info.symbol in read)
            return own + ((BYTES_INFO,) if BYTES in read else ())

    return BytesFormula


def bytes_quantities(sub) -> dict[str, sp.Expr]:
    """The subject's quantities as the page shows them: send, recv, total and the β, γ coefficients
    in bytes of ``B_e`` bytes per element (a term with its own element type counted at its own size),
    the α coefficients in messages, the time with α per message and β, γ per byte; the extras as they are."""
    # elements of B_e bytes → bytes: Cost.widened scales traffic, β and γ, never the α messages
    in_elements = sub.cost_in(BYTES)
    in_bytes = in_elements.widened(BYTES)
    if in_elements.root is None:
        fields = in_bytes.fields()
    else:
        # a rooted cost's send and recv are the busier of the root and the others (Cost.larger): B_e·max(x, y) =
        # max(B_e·x, B_e·y) as B_e > 0, so the elements' max (decided once, the docs print it too) times B_e,
        # not a second proof on both sides scaled; the rest read off the same cost without its root
        rest = Cost(in_bytes.others, in_bytes.total, in_bytes.coefficients).fields()
        fields = {"send": BYTES * in_elements.send, "recv": BYTES * in_elements.recv,
                  **{key: expr for key, expr in rest.items() if key not in ("send", "recv")}}
    out = {key: sp.sympify(expr, strict=True) for key, expr in fields.items()}
    out["time"] = sp.sympify(in_bytes.time, strict=True)
    out.update({key: sp.sympify(expr, strict=True) for key, expr in sub.extras.items()})
    return out


#: the page's interleaved view splits the layers first/last (symcomm.training.stages), opening on the balanced split of
#: the model's L (:func:`opening_split`): an even split of L over p·v chunks when there is one (the even numbers), a
#: value where L has none (deepseek-v3's L = 61 on p = 2) instead of a refusal
PAGE_VARIANTS = {(("schedule", "interleaved"),): {"schedule": "interleaved", "pipeline_split": "first_last"}}


@lru_cache(maxsize=1)
def subjects() -> tuple:
    """Every subject the page offers: the catalog's algorithms, each strategy at its defaults and
    one option changed at a time (the ``javascript`` export's subjects); the hybrid's interleaved schedule
    with the first/last split (:data:`PAGE_VARIANTS`); the hybrid with each model preset's options
    (:func:`model_options`), which the page opens when the model is chosen."""
    from ..training.strategies import STRATEGIES
    from ..training.subjects import every, of_strategy

    from .. import presets

    out = []
    for sub in every(with_variants=True):
        wider = PAGE_VARIANTS.get(tuple(sub.changed.items())) if sub.name == "hybrid" else None
        out.append(of_strategy(STRATEGIES["hybrid"], **wider) if wider else sub)
    # each model preset's own view: the hybrid with the options eval fills from it (a view changes one option, and
    # Mixtral is moe=1, gqa=1 and embeddings=1 at once: the page priced it as a dense model with full-width K, V)
    hybrid = STRATEGIES["hybrid"]
    for name in presets.model_names():
        view = of_strategy(hybrid, **{k: v for k, v in presets.model(name).run_options().items() if k in hybrid.options})
        if all(sub.ident != view.ident for sub in out):
            out.append(view)
    return tuple(out)


def model_clash(sub, model: str) -> dict[str, tuple[str, str]]:
    """{option: (the value eval fills from the model preset, the view's)} where a strategy's view prices other
    options than ``eval --model`` runs (app.js's ``modelClash``, the same rule): the page refuses such a view with
    the model, and opens the one that matches (:func:`model_view`) when the model is chosen."""
    from .. import presets

    if not model or sub.kind == "primitive":
        return {}
    return {key: (value, sub.options[key]) for key, value in model_options(model).items()
            if key in sub.options and sub.options[key] != value}


def model_options(model: str) -> dict[str, str]:
    """Every option a model preset fills (:data:`~symcomm.presets.models.RUN_OPTION_NAMES`) as it runs with it: the
    preset's, else the hybrid's default (Mixtral's mamba=0: a Mamba view prices another model)."""
    from .. import presets
    from ..presets.models import RUN_OPTION_NAMES
    from ..training.strategies import STRATEGIES

    defaults = STRATEGIES["hybrid"].resolve()
    return {**{key: defaults[key] for key in RUN_OPTION_NAMES}, **presets.model(model).run_options()}


def model_view(sub, model: str):
    """The view of ``sub``'s strategy with its options and those the model preset fixes, or None when the page has
    none (it then refuses the model on ``sub``'s view and names the command line)."""
    clash = model_clash(sub, model)
    wanted = {**sub.options, **{key: ours for key, (ours, _) in clash.items()}}
    return next((other for other in subjects() if other.name == sub.name and other.options == wanted), None)


def opening_split(layers: int, chunks: int) -> tuple[int, int]:
    """(L_first, L_last) the page opens with for L = ``layers`` over ``chunks`` = p·v model chunks (app.js's
    ``openingSplit``, the same rule): one chunk holds the whole model (L, L); two share it (⌊L/2⌋, the rest);
    else the middle chunks ⌊L/(p·v)⌋ each and the two ends the rest, halved (⌊R/2⌋, R − ⌊R/2⌋) — an even
    split whenever p·v divides L, and a valid one (R ≥ 0) whatever L."""
    if chunks <= 1:
        return layers, layers
    if chunks == 2:
        return layers // 2, layers - layers // 2
    ends = layers - (chunks - 2) * (layers // chunks)
    return ends // 2, ends - ends // 2


def page_formulas(sub) -> list:
    """The page's formulas of one subject, named like the export's (``<ident>__<quantity>``)."""
    from .export import requirement_checks
    from ..training.subjects import COLLECTIVE_TIME_CONVENTION

    formula = _formula_class()
    checks = requirement_checks(sub)
    convention = (COLLECTIVE_TIME_CONVENTION if sub.kind == "primitive" else sub.convention)
    quantities = bytes_quantities(sub)
    # the symbols the subject's rules test among those its quantities read: every function reads them (a rule over
    # symbols no one quantity holds together, mamba=1's L ≥ L_att + L_ssm, is then checked by each)
    used = frozenset().union(*(free_symbols(expr) for expr in quantities.values()))
    tested = frozenset().union(*(sp.sympify(x, strict=True).free_symbols
                                 for _, _, *exprs in checks for x in exprs if x is not None)) & used
    return [formula(f"{sub.ident}__{quantity}", sub.kind, sub.ident, sub.name, quantity, expr, sub.title,
                    sub.summary, convention + "; in bytes of B_e bytes per element", sub.source,
                    sub.algorithm or None, tuple(sub.options.items()), sub.requires, checks, tested=tested)
            for quantity, expr in quantities.items()]


#: the step model's variants the page offers: the hybrid's own options (recompute=none|selective|full, the
#: one setting eval and plan take), a gated MLP or not, dropout or not (the default without a model; a model preset's
#: own, as eval fills it: Model.dropout); its other options at their defaults
GATED = ("0", "1")
DROPOUT = ("0", "1")


def step_function(sub, gated: str, dropout: str) -> str:
    """The page's name of one step variant of a hybrid subject (app.js stepOf builds the same)."""
    return f"{sub.ident}__step_gated_{gated}_dropout_{dropout}"


def step_quantities(sub, gated: str, dropout: str = "1") -> dict[str, sp.Expr]:
    """The step model of a hybrid subject (:func:`symcomm.training.steptime.step_model`) as the page takes it:
    communication in elements of ``B_e`` bytes, and the bubble's share of the step, as ``eval hybrid --hardware``
    reports them.  β, γ stay per element here: the page's runner reads them per byte and multiplies by ``B_e``
    (:func:`step_graph`), which rewrites no expression (SymPy re-evaluating every Max and Min of a rewritten step
    model cost most of the docs build)."""
    return dict(_step_quantities(tuple(sorted(sub.options.items())), gated, dropout))


@lru_cache(maxsize=None)
def _step_quantities(options: tuple, gated: str, dropout: str = "1"):
    # one model per option set and gated value in a build: the catalog, the step script and opening_values share it
    from types import MappingProxyType

    from ..training import steptime

    model = steptime.step_model(BYTES, **dict(options), gated=gated, dropout=dropout)   # recompute as the subject has it
    out = {key: sp.sympify(expr, strict=True) for key, expr in model.quantities().items()}
    out["bubble_fraction_of_step"] = steptime.quotient(out["bubble_time"], out["step_time"])
    return MappingProxyType(out)


def step_bundles(sub) -> dict[str, dict]:
    """The step model of a hybrid subject, one bundle per gated and dropout value (:func:`step_function`) →
    {quantity: expression} (the step model is float arithmetic in eval too:
    :func:`symcomm.training.steptime.quantities`)."""
    return {step_function(sub, gated, dropout): step_quantities(sub, gated, dropout)
            for gated in GATED for dropout in DROPOUT}


#: the symbols the page reads per byte whose step model counts them per element (β per element = β·B_e)
PER_BYTE = (S.beta, S.gamma, S.beta_inter)


def step_graph(bundles: dict[str, dict]) -> dict:
    """Every bundle (function name → {quantity: expression}) as one graph (:mod:`symcomm.numbers.graphs`):
    the nodes shared by every variant (equal subexpressions one node), and per function its quantities and
    their output nodes — what differs from one view to the next is data, the runner is written once."""
    from ..numbers.graphs import GraphBuilder
    from ..numbers.rational import _cli_name

    builder = GraphBuilder()
    free = frozenset().union(*(free_symbols(e) for quantities in bundles.values() for e in quantities.values()))
    builder.params = sorted({_cli_name(x) for x in free} | {BYTES.name})
    for symbol in PER_BYTE:
        if symbol in free:     # the page passes β, γ per byte: per element is that times B_e, as eval --dtype has it
            builder.read_as(symbol, builder.node("mul", builder.arg(BYTES.name), builder.arg(_cli_name(symbol))))
    functions = {}
    for name, quantities in bundles.items():
        functions[name] = {"quantities": list(quantities), "outputs": [builder.add(e) for e in quantities.values()]}
    return {"params": builder.params, "nodes": builder.nodes, "functions": functions}


def step_script(bundles: dict[str, dict], namespace: str = "SYMCOMM_FORMULAS") -> str:
    """The page's step-model script: the runner (``templates/site/graph_runner.js``) once, the graph of every
    bundle as data (:func:`step_graph`), each function registered by its name in ``namespace``."""
    runner = (SITE_TEMPLATES / "graph_runner.js").read_text(encoding="utf-8")
    data = json.dumps(step_graph(bundles), ensure_ascii=False, separators=(",", ":"))
    return ("// Generated by symcomm (symcomm.views.site.step_script): the step model of every hybrid variant, "
            "one graph shared by all.\n(function () {\n" + runner
            + f"\nconst graph = {data};\nconst out = globalThis[{json.dumps(namespace)}] = globalThis[{json.dumps(namespace)}] || {{}};\n"
            "for (const [name, f] of Object.entries(graph.functions)) out[name] = runner(graph, f.quantities, f.outputs);\n"
            "})();\n")


def free_symbols(expr: sp.Basic) -> frozenset:
    """``expr.free_symbols``, walked once per expression in a build and each shared subtree once
    (:func:`symcomm.core.rewrite.free_symbols`; the page asks of each formula once per symbol)."""
    from ..core.rewrite import free_symbols as walked

    return walked(expr)


def _subject_entry(sub, formulas) -> dict:
    used = frozenset().union(*(free_symbols(f.expr) for f in formulas))
    params = [info.cli_name for info in S.SYMBOLS.values() if info.symbol in used and info.symbol not in S.TIME_SYMBOLS]
    times = [S.BY_SYMBOL[sym].cli_name for sym in S.TIME_SYMBOLS if sym in used]
    return {
        "ident": sub.ident, "kind": sub.kind, "owner": sub.name, "algorithm": sub.algorithm,
        "options": dict(sub.options), "changed": dict(sub.changed), "title": sub.title, "summary": sub.summary,
        "source": sub.source, "convention": formulas[0].convention, "requires": list(sub.requires),
        "params": params, "times": times,
        "least": _least(sub, params),
        # start values of this subject that differ from the catalog's "start" (START_WITH_OPTION)
        "start": {k: v for k, v in start_values(sub).items() if v != START.get(k) and k in params},
        "two_level": any(sym in (S.alpha_inter, S.beta_inter) for sym, _ in sub.cost.coefficients),
        # a flat ring spanning nodes spreads its crossings over the NICs of its ranks on a node (presets.link_values)
        "spreads": bool(sub.spreads_over_nics),
        # a pairwise all-to-all spanning nodes sends to k − 1 peers on its node, N − k across (base.crossing.PEERS)
        "peers": sub.crossing == PEERS,
        "quantities": [f.quantity for f in formulas],
    }


def _least(sub, names) -> dict[str, int]:
    """The least whole value of each named symbol, as eval checks it (``training.binding.bind``): the subject's
    own (N ≥ 2 for a collective), else the symbol's (0 for E_s, 1 for the others)."""
    out = {}
    for name in names:
        sym = S.symbol(name)
        if sym.is_integer:
            out[name] = int(sub.least.get(sym, S.least_value(sym)))
    return out


def _step_entry(bundles: dict, params: list[str]) -> dict:
    """What the page needs to call the step model: its file, the symbols beyond the communication's
    (F, h_kv, V, ...), the hardware constants it takes, its quantities in order."""
    free = frozenset().union(*(free_symbols(e) for quantities in bundles.values() for e in quantities.values()))
    # the hardware's constants (its preset gives them, as eval takes them from --hardware), never typed inputs:
    # peak_fp8, eta_fp8 too (precision=fp8_*; peak_fp4, eta_fp4: nvfp4), which the page used to show as an input
    # reading "undefined"
    hardware = [info.cli_name for info in S.SYMBOLS.values()
                if info.cli_name in TYPED_HARDWARE]
    extra = [info.cli_name for info in S.SYMBOLS.values() if info.symbol in free and info.cli_name not in params
             and info.symbol not in S.TIME_SYMBOLS and info.cli_name not in hardware]
    quantities = list(dict.fromkeys(q for quantities in bundles.values() for q in quantities))
    return {"params": extra, "hardware": hardware, "quantities": quantities,
            # the constants it reads: with its framework and precision, what its fit's error (step_errors) is of
            "reads": [info.cli_name for info in S.SYMBOLS.values() if info.cli_name in hardware and info.symbol in free]}


def error_key(sub, step_entry: dict) -> str:
    """The key of a hybrid view's fit error in :func:`step_errors`: its framework, precision and the constants its
    step model reads, which :meth:`~symcomm.presets.systems.Hardware.step_time_error` is asked of (as eval asks)."""
    return "|".join((sub.options["framework"], sub.options["precision"], ",".join(sorted(step_entry["reads"]))))


def step_errors(keys) -> tuple[list[str], dict]:
    """(the distinct texts, hardware → {error key → its text's index}): eval's "off by" words
    (:func:`~symcomm.presets.fit_errors.step_error_words` of :meth:`Hardware.step_time_error`, no model preset's own
    runs) for each view's :func:`error_key`, which the page shows beside its step time (it showed none)."""
    from .. import presets
    from ..presets.fit_errors import step_error_words

    index: dict[str, int] = {}
    out = {}
    for name in presets.hardware_names():
        system = presets.hardware(name)
        out[name] = {}
        for key in sorted(keys):
            framework, precision, reads = key.split("|")
            error = system.step_time_error(framework, (), tuple(reads.split(",")) if reads else (), None, precision)
            out[name][key] = index.setdefault(step_error_words(error), len(index))
    return list(index), out


def memory_words() -> dict:
    """The memory model's measured band, the same for every GPU: {lowest, highest (with the runs that ran over
    their GPU's memory), words per framework}, as eval says it (:func:`~symcomm.presets.fit_errors.fits_words`);
    None where no check measured it."""
    from .. import presets
    from ..presets import fit_errors
    from ..training.strategies import STRATEGIES

    band = presets.hardware(presets.hardware_names()[0]).memory_band
    if band is None:
        return None
    words = {framework: fit_errors.memory_band_words(fit_errors.memory_error(
                 band, None if fit_errors.band_measures(band, framework) else framework))
             for framework in STRATEGIES["hybrid"].options["framework"].allowed}
    return {"lowest": band[0], "highest": fit_errors.highest_error(band), "words": words}


def catalog_entry(sub) -> dict:
    """The page's catalog entry of one subject (its parameters, time constants, quantities...)."""
    entry = {**_subject_entry(sub, page_formulas(sub)), "file": subject_file(sub)}
    if sub.name == "hybrid":
        entry["step"] = {**_step_entry(step_bundles(sub), entry["params"]), "file": step_file(sub)}
        entry["step"]["error_key"] = error_key(sub, entry["step"])
        entry["least"].update(_least(sub, entry["step"]["params"]))
    return entry


def _mathml_script(subs_formulas) -> str:
    """The formulas of ``time`` and ``send`` of each subject as MathML, kept in the owner's script
    (the catalog stays small: the page loads a formula's MathML with its functions)."""
    from ..core.printing import render

    shown = {}
    for sub, formulas in subs_formulas:
        by_name = {f.quantity: f for f in formulas}
        shown[sub.ident] = {q: render(by_name[q].expr, "mathml") for q in ("time", "send") if q in by_name}
    data = json.dumps(shown, ensure_ascii=False, indent=0)
    return f"Object.assign(globalThis.SYMCOMM_MATHML = globalThis.SYMCOMM_MATHML || {{}}, {data});\n"


def _presets() -> tuple[dict, dict]:
    from .. import presets
    from ..base.units import DTYPES
    from ..training.settings import PRECISIONS

    hardware = {}
    for name in presets.hardware_names():
        system = presets.hardware(name)
        compute = {}
        for dtype in DTYPES:
            try:
                compute[dtype] = system.compute_values(dtype)
            except ValueError as err:      # no peak at this dtype: what eval says
                compute[dtype] = {"error": str(err)}
        # a low precision runs at the bf16 peak plus peak_fp8 × eta_fp8 (nvfp4: peak_fp4 × eta_fp4) whatever --dtype
        # (Hardware.compute_values)
        by_precision = {}
        for precision in PRECISIONS[1:]:
            try:
                by_precision[precision] = system.compute_values("bf16", precision)
            except ValueError as err:      # no FP8 (FP4) peak, or no eta_fp8 (eta_fp4) fitted: what eval says
                by_precision[precision] = {"error": str(err)}
        hardware[name] = {"title": system.title, **system.values(1), "compute": compute,
                          "compute_precision": by_precision, "memory_bytes": system.memory_bytes}
    models = {name: {"title": presets.model(name).title, "gated": "1" if presets.model(name).gated else "0",
                     "options": model_options(name),
                     "q_width": presets.model(name).settings().get("q_width", ""),
                     "dropout": presets.model(name).settings().get("dropout", "1"),
                     **presets.model(name).values()}
              for name in presets.model_names()}
    return hardware, models


#: the subjects' long texts that many share (the 30 hybrid variants one source of ~6 KB, every collective one
#: convention): written once in the catalog's "texts", each entry holding the index of its own, which app.js reads
#: back before anything else (catalog.js, loaded before every first render, was two thirds repeated sources)
SHARED_TEXTS = ("source", "convention", "summary")


def shared_texts(entries: list[dict]) -> tuple[list[str], list[dict]]:
    """(the distinct texts of :data:`SHARED_TEXTS` in order of first use, the entries with each such text replaced
    by its index in that list); the entries given are left as they are."""
    index: dict[str, int] = {}
    out = []
    for entry in entries:
        out.append({key: index.setdefault(value, len(index)) if key in SHARED_TEXTS else value
                    for key, value in entry.items()})
    return list(index), out


def catalog(entries: list[dict]) -> dict:
    from .export import QUANTITIES
    from ..base.inputs import MAX_VALUE, grammar
    from ..base.units import DTYPES

    hardware, models = _presets()
    symbols = {info.cli_name: {"meaning": info.meaning, "unit": info.unit, "integer": bool(info.symbol.is_integer)}
               for info in S.SYMBOLS.values()}
    texts, subjects_ = shared_texts(entries)
    error_texts, errors = step_errors({entry["step"]["error_key"] for entry in entries if "step" in entry})
    for name, table in errors.items():
        hardware[name]["step_errors"] = table
    return {"symbols": symbols, "dtypes": DTYPES, "hardware": hardware, "models": models,
            "units": UNITS, "start": START, "max_value": str(MAX_VALUE),
            "shared_texts": list(SHARED_TEXTS), "texts": texts, "subjects": subjects_,
            # the command line's number grammar, which numbers.js reads: the page accepts what eval accepts
            "grammar": grammar(),
            # the export's words, counted in bytes as the page counts
            "meanings": {key: text.replace("elements", "bytes") for key, text in QUANTITIES.items()},
            # eval's refusal of a 1-byte --dtype under a low precision recipe, before any hardware's (element_refusal)
            "element_refusals": _element_refusals(DTYPES),
            # eval's "off by" (each hardware's step_errors index them) and its memory model's band
            "error_texts": error_texts, "error_unknown": _unknown_error(), "memory_band": memory_words(),
            # a step timed at a --dtype the fits measured (hardware_values.dtype_measured), where eval shows the error
            "dtype_measured": {f"{dtype}|{precision}": dtype_measured(dtype, precision)
                               for dtype in DTYPES for precision in _precisions()},
            # a --dtype whose run the memory model does not count: eval's verdict unknown, saying why
            "memory_uncounted": {f"{dtype}|{precision}": memory_uncounted(dtype, precision)
                                 for dtype in DTYPES for precision in _precisions()}}


def _unknown_error() -> str:
    from ..presets.fit_errors import step_error_words

    return step_error_words(None)


def _precisions():
    from ..training.settings import PRECISIONS

    return PRECISIONS


def _element_refusals(dtypes) -> dict:
    """'dtype|precision' → eval's one-line refusal of that pair (presets.hardware_values.element_refusal)."""
    from ..training.settings import PRECISIONS

    return {f"{dtype}|{precision}": element_refusal(dtype, precision) for dtype in dtypes for precision in PRECISIONS
            if element_refusal(dtype, precision)}


#: the page's shared helpers (exact arithmetic, the number reader, the rules' tests): loaded once by index.html,
#: before any formula script, which takes them from ``globalThis.SYMCOMM_HELPERS``
HELPERS_FILE = "formulas/helpers.js"
HELPERS_NAMESPACE = "SYMCOMM_HELPERS"


def subject_file(sub) -> str:
    """The script that holds a subject's functions, loaded when its view first opens: a primitive's algorithms
    share one (the chart draws every algorithm of the primitive), a strategy's variant has its own (the 29
    hybrid variants together are megabytes; one is what a view shows)."""
    return f"formulas/{sub.name}.js" if sub.kind == "primitive" else f"formulas/{sub.ident}.js"


#: the one script of the step model of every hybrid variant (:func:`step_script`)
STEP_FILE = "formulas/hybrid__step.js"


def step_file(sub) -> str:
    """The script of a hybrid variant's step model (loaded when its view has a hardware preset): one for all."""
    return STEP_FILE


def files() -> dict[str, str]:
    """Relative path → text of every file of the page, in a fixed order (the same bytes every build)."""
    from .export.javascript import helpers_script, to_script

    scripts: dict[str, list] = {}      # file → [(subject, its formulas)], in the subjects' order
    entries, steps = [], {}            # steps: function name → {quantity: expression}, every hybrid variant
    for sub in subjects():
        formulas = page_formulas(sub)
        scripts.setdefault(subject_file(sub), []).append((sub, formulas))
        entry = {**_subject_entry(sub, formulas), "file": subject_file(sub)}
        if sub.name == "hybrid":
            stepping = step_bundles(sub)
            steps.update(stepping)
            entry["step"] = {**_step_entry(stepping, entry["params"]), "file": step_file(sub)}
            entry["step"]["error_key"] = error_key(sub, entry["step"])
            entry["least"].update(_least(sub, entry["step"]["params"]))
        entries.append(entry)
    out: dict[str, str] = {HELPERS_FILE: helpers_script(HELPERS_NAMESPACE)}
    for name, pairs in scripts.items():
        out[name] = (to_script([f for _, formulas in pairs for f in formulas], helpers=HELPERS_NAMESPACE)
                     + _mathml_script(pairs))
    out[STEP_FILE] = step_script(steps)
    data = json.dumps(catalog(entries), ensure_ascii=False, indent=0, sort_keys=False)
    out["catalog.js"] = ("// Generated by symcomm (symcomm.views.site): the page's subjects, presets and formulas as MathML.\n"
                         f"globalThis.SYMCOMM_CATALOG = {data};\n")
    for name in ("index.html", "numbers.js", "app.js", "style.css"):
        out[name] = (SITE_TEMPLATES / name).read_text(encoding="utf-8")
    return dict(sorted(out.items()))


#: the page's byte budget of a first view (issue 25: "≤ 1 MB loaded before" the first render)
FIRST_VIEW_BUDGET = 1_000_000


def _site_text(folder, name: str) -> str:
    from ..base.files import MIB, read_capped

    return read_capped(folder / name, 16 * MIB, "docs/site").decode("utf-8")


def first_view_files(folder, ident: str) -> dict[str, int]:
    """The files a view of the page loads before its first render, and their sizes in bytes, from the built page
    in ``folder`` alone (no browser): index.html, what it references (src=, href=), the subject's script and, for a
    hybrid variant, its step model's (the page opens with a hardware preset, so the step section draws)."""
    import re
    from pathlib import Path

    folder = Path(folder)
    names = ["index.html"] + re.findall(r'<(?:script|link)\b[^>]*?(?:src|href)="([^"]+)"', _site_text(folder, "index.html"))
    catalog_text = _site_text(folder, "catalog.js")
    data = json.loads(catalog_text[catalog_text.index("{"):catalog_text.rindex("}") + 1])
    entry = next((e for e in data["subjects"] if e["ident"] == ident), None)
    if entry is None:
        from ..base.errors import InputError
        idents = [e["ident"] for e in data["subjects"]]
        raise InputError(f"the page has no subject {ident!r}: it offers {len(idents)} ({', '.join(idents[:3])}, ...; "
                         f"catalog.js lists them; the URL's subject= names one)")
    names += [entry["file"]] + ([entry["step"]["file"]] if "step" in entry else [])
    missing = [name for name in dict.fromkeys(names) if not (folder / name).is_file()]
    if missing:
        from ..base.errors import InputError
        raise InputError(f"{folder}: the view of {ident} loads {', '.join(missing)}, which the folder lacks "
                         "(python build_docs.py writes the whole page)")
    return {name: (folder / name).stat().st_size for name in dict.fromkeys(names)}


def committed_screenshot() -> bytes | None:
    """The page's screenshot as committed (``python -m symcomm.tools.screenshot --screenshot
    derivations/data/site.png`` makes it; a browser is needed, so the docs build copies it)."""
    from importlib import resources

    shot = resources.files("symcomm.derivations") / "data" / "site.png"
    return shot.read_bytes() if shot.is_file() else None


SCREENSHOT = "screenshot.png"


def screenshot(path: str, page: str = "docs/site/index.html", fragment: str = "") -> None:
    """Save a PNG of the page as headless Chromium draws it (needs selenium, chromium and
    chromedriver); build_docs.py copies the committed one, derivations/data/site.png, into docs/site/."""
    import shutil
    from pathlib import Path

    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.support.ui import WebDriverWait

    from ..base.files import write_file

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--host-resolver-rules=MAP * ~NOTFOUND",
                 "--hide-scrollbars", "--window-size=1200,1900"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver") or "chromedriver"), options=options)
    try:
        driver.get(Path(page).resolve().as_uri() + fragment)
        WebDriverWait(driver, 30).until(lambda d: d.execute_script("return document.body.dataset.state") == "ready")
        write_file(path, driver.get_screenshot_as_png(), "--screenshot")
    finally:
        driver.quit()
