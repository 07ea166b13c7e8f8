"""The hardware file a calibration writes, and the model ``symcomm nccl-tests`` reads back from one.

:func:`hardware_document` turns fits (:mod:`symcomm.measurement.calibrate`) into a hardware file (schema
``hardware``): links from the fits, the rest from a base preset, every fit's curve with the γ it held.
:func:`model_from` is the :class:`~symcomm.measurement.nccl_prediction.Prediction` a hardware preset or
file gives for one collective: its calibration at the group's level, else the catalog formula at its links.
"""

from __future__ import annotations

import math

from ..base.crossing import crossing_of
from ..collectives.algorithms import DEFAULT_ALGORITHM
from ..base.errors import InputError
from . import nccl_prediction
from .calibrate import Fit, held_gamma
from .nccl_prediction import Prediction
from .nccl_tests import Collective
from ..presets import entry_gamma, link_values, spans_nodes
from ..presets.describe import link_document, part_facts


#: how far two logs of one test may fit apart and still be read as the same link (run-to-run spread of nccl-tests on
#: one machine is a few percent; two machines or a doctored log are not one link)
SAME_LINK_SPREAD = 0.10


def hardware_document(fits: list[Fit], base=None, name: str = "calibrated") -> dict:
    """The hardware file (schema ``hardware``) of these fits: links from the fits (all-reduce's
    when there is one), the rest from ``base`` (a preset), and every fit's curve, each with the γ
    its fit held (``gamma_held``: the file's γ, :func:`held_gamma` of ``base``)."""
    gamma, gamma_source = held_gamma(base)
    for f in fits:
        if f.gamma != gamma:
            raise InputError(f"log {f.log.path!r}: its fit held γ = {f.gamma:g} s/byte, but the file written with "
                             f"base {getattr(base, 'name', None)!r} carries γ = {gamma:g}: fit with that base")

    def pick(level):
        mine = [f for f in fits if f.level == level and not f.model.algorithm == "hierarchical"]
        mine.sort(key=lambda f: (f.model.collective.name != "all_reduce", -f.model.ranks))
        if not mine:
            return None
        # logs of the same test the file would choose between by their order: refused where they disagree
        twins = [f for f in mine[1:] if (f.model.collective.name, f.model.ranks) ==
                 (mine[0].model.collective.name, mine[0].model.ranks)]
        for twin in twins:
            if abs(twin.bandwidth / mine[0].bandwidth - 1) > SAME_LINK_SPREAD:
                raise InputError(
                    f"logs {mine[0].log.path!r} and {twin.log.path!r} both measure {mine[0].model.collective.name} on "
                    f"{mine[0].model.ranks} ranks ({'across nodes' if level == 'inter' else 'inside one node'}) but fit "
                    f"{mine[0].bandwidth / 1e9:.4g} and {twin.bandwidth / 1e9:.4g} GB/s, more than "
                    f"{100 * SAME_LINK_SPREAD:g} % apart: the file holds one link per level; give the log you trust")
        return mine[0]

    paths = sorted({f.log.path for f in fits})
    title = f"calibrated from nccl-tests ({', '.join(paths)})"
    if len(title) > 1000:                  # the schema's limit: the paths are in each entry's source anyway
        title = f"calibrated from {len(paths)} nccl-tests logs (each calibration entry names its own)"
    document: dict = {"name": name, "title": title}
    links = {}
    for level in ("intra", "inter"):
        f = pick(level)
        if f is not None:
            links[level] = {"bytes_per_second": f.bandwidth, "latency_s": f.alpha,
                            "source": f"fitted by symcomm calibrate: {f.model.collective.name}/{f.model.algorithm} "
                                      f"on {f.model.ranks} ranks, {f.log.path}"}
            if level == "inter":
                # the per-step link of a flat algorithm across nodes: not the two-level forms' inter-node phase;
                # read per NIC at its run's k ranks per node (presets.systems._per_nic)
                links[level]["fitted_as"] = "flat"
                if f.model.gpus_per_node:
                    links[level]["fitted_on"] = {"collective": f.model.collective.name, "algorithm": f.model.algorithm,
                                                 "ranks": f.model.ranks, "gpus_per_node": f.model.gpus_per_node}
    # the two meanings of the inter-node link are kept apart (presets.link_values): the two-level fit is
    # the two-level forms' inter_two_level, never the flat algorithms' inter
    two = [f for f in fits if f.model.algorithm == "hierarchical"]
    two.sort(key=lambda f: (f.model.collective.name != "all_reduce", -f.model.ranks))
    if two:
        t = two[0].model.times
        links["inter_two_level"] = {
            "bytes_per_second": 1 / t["beta_inter"], "latency_s": t["alpha_inter"], "fitted_as": "two_level",
            "source": f"fitted by symcomm calibrate: two-level {two[0].model.collective.name} on "
                      f"{two[0].model.ranks} ranks with the intra-node α, β held, {two[0].log.path}"}
    # Without a two-level fit beside a flat multi-node one, inter_two_level is left out: the file's inter,
    # marked fitted_as flat, then refuses the two-level forms across nodes, naming it.  Neither the flat
    # fit (another formula's β) nor the base preset's physical link (the same 16-rank A100 log is 2× slower
    # than its IB HDR link predicts for the two-level form) is that link: either would be a confident
    # number the log contradicts.  (Holding the preset's intra link to fit it fails on that log: the
    # preset's NVLink latency alone exceeds the measured latency rows.)
    for level, other in (("intra", "inter"), ("inter", "intra")):
        if level in links:
            continue
        if base is not None:
            link = getattr(base, level)
            if level == "inter" and getattr(base, "inter_as_fitted", None) is not None:
                link = base.inter_as_fitted      # the fit as written, not its per-NIC reading (converted on read)
            links[level] = {"bytes_per_second": link.bytes_per_second, "latency_s": link.latency_s,
                            "source": f"not measured: preset {base.name}'s {link.name} ({link.source})"}
            if level == "inter" and getattr(base, "inter_as_fitted", None) is not None:
                links[level]["fitted_as"] = "flat"
                if len(base.inter_fitted_on) == 4:
                    links[level]["fitted_on"] = dict(base.inter_fitted_on)
            if level == "inter" and "inter_two_level" not in links:
                # a --base file's two meanings go on as they were: its own inter_two_level, or its mark
                # that the flat link is not the two-level one (presets.hardware_file)
                if base.inter_two_level is not None:
                    t = base.inter_two_level
                    links["inter_two_level"] = {"bytes_per_second": t.bytes_per_second, "latency_s": t.latency_s,
                                                "source": f"not measured: {base.name}'s inter_two_level ({t.source})"}
                elif base.two_level_unknown:
                    links[level]["fitted_as"] = "flat"
        else:
            copied = {k: v for k, v in links[other].items() if k not in ("fitted_as", "fitted_on")}
            links[level] = {**copied, "source": f"not measured (no {'single-node' if level == 'intra' else 'multi-node'} "
                                                f"log): the {other}-node fit copied"}
    document.update({level: links[level] for level in ("intra", "inter", "inter_two_level") if level in links})
    gpn = max((f.model.gpus_per_node or 1) for f in fits)
    document["gpus_per_node"] = int(base.gpus_per_node if base is not None and all(
        f.model.gpus_per_node >= f.model.ranks for f in fits) else gpn)
    if base is not None:
        document.update(part_facts(base))
        if base.step_time:
            # the preset's constants, not its errors: those were measured at its links, not these (eval: "off by
            # unknown"), so its source's error figures are said to be that preset's fit, not this file's
            document["step_time"] = {**dict(base.step_time),
                                     "source": f"preset {base.name}'s constants, carried over by symcomm calibrate; "
                                               f"that preset's fit, at its own links (its errors not carried over): "
                                               f"{base.step_time_source}"}
        document["source"] = (f"links fitted by symcomm calibrate from nccl-tests logs; memory, HBM, peak FLOP/s and "
                              f"step-time constants from preset {base.name} ({base.source}); {gamma_source}")
    else:
        document["source"] = f"links fitted by symcomm calibrate from nccl-tests logs; {gamma_source}"
    document["calibration"] = [{
        "collective": f.model.collective.name, "algorithm": f.model.algorithm, "ranks": f.model.ranks,
        "gpus_per_node": f.model.gpus_per_node,
        **{k: float(v) for k, v in f.model.times.items() if k != "gamma"}, "gamma_held": f.gamma,
        "sizes_bytes": list(f.model.sizes), "efficiency": [round(e, 6) for e in f.model.efficiency],
        "stderr": dict(f.stderr), "size_range_bytes": list(f.size_range),
        "fit_rms_relative": f.rms, "fit_rows": len(f.fitted_rows), "all_rows_rms_relative": f.rms_all,
        **({"held_out_rms_relative": f.held_out_rms} if f.held_out_rms is not None else {}),
        "source": f"{f.log.path} ({f.log.device or 'device not named'})",
    } for f in fits]
    return document


def model_from(hardware, coll: Collective, ranks: int, gpus_per_node: int | None,
               algorithm: str | None = None) -> Prediction:
    """The model ``symcomm nccl-tests`` predicts with: the hardware's calibration of this
    collective at the group's level (same ranks, else the nearest, said in a note), else the
    catalog formula at the hardware's links.  Which level — inside a node or across nodes — is
    ``presets.spans_nodes``, the rule ``eval`` and ``compare`` use: a fit of a multi-node run
    describes the network and never prices a single-node group, nor the reverse."""
    from ..collectives.algorithms import algorithm as catalog_algorithm

    g = gpus_per_node or hardware.gpus_per_node
    spans = spans_nodes(ranks, g)
    named = [e for e in getattr(hardware, "calibration", ()) if e["collective"] == coll.name
             and (algorithm is None or e["algorithm"] == algorithm)]
    entries = [e for e in named if spans_nodes(e["ranks"], e.get("gpus_per_node") or g) == spans]
    notes = []
    if named and not entries:
        other = named[0]
        notes.append(f"the calibration of {coll.name} in --hardware {hardware.name} is of {other['ranks']} ranks "
                     f"{'across nodes' if not spans else 'inside one node'}; {ranks} ranks on nodes of {g} GPUs "
                     f"run {'across nodes' if spans else 'inside one node'}, so it does not apply")
    if entries:
        entries.sort(key=lambda e: (abs(math.log(e["ranks"] / ranks)), e["ranks"] != ranks))
        e = entries[0]
        if e["ranks"] != ranks:
            notes.append(f"calibrated on {e['ranks']} ranks, predicting {ranks}: the α-β formula at N={ranks} "
                         f"with that calibration's α, β and efficiency curve")
        times = {k: float(e[k]) for k in ("alpha", "beta", "alpha_inter", "beta_inter") if k in e}
        # the γ its fit held (0 for an entry that does not say: its fit folded the reduction into β),
        # which presets.check_hardware_document holds equal to the γ eval takes from the same file
        times["gamma"] = entry_gamma(e) or 0.0
        problems = nccl_prediction.problems(coll.primitive, e["algorithm"], ranks, e.get("gpus_per_node") or g)
        if problems:
            raise InputError(f"--ranks {ranks}: the calibrated algorithm {e['algorithm']} cannot run: {problems[0]}")
        held_out = e.get("held_out_rms_relative")
        error = (f"relative RMS {100 * held_out:.1f} % over the log's rows, each predicted by the calibration made "
                 "without it (calibrate's leave-one-out)" if held_out is not None else
                 "not measured: the calibration records no leave-one-out error (recalibrate the log)")
        if e["ranks"] != ranks:
            error = (f"unknown at {ranks} ranks: the log was measured on {e['ranks']}"
                     + (f", where its leave-one-out relative RMS is {100 * held_out:.1f} %" if held_out is not None
                        else ""))
        return Prediction(coll, e["algorithm"], ranks, e.get("gpus_per_node") if e["ranks"] == ranks else min(g, ranks),
                          times, tuple(e["sizes_bytes"]), tuple(e["efficiency"]), e.get("source", ""), tuple(notes),
                          error)
    # across nodes too the flat ring, as NCCL runs it (no two-level algorithm of its own) and as eval prices it: its
    # crossings over each node's NICs, the two legs at once (base.crossing)
    name = algorithm or ("ring" if coll.primitive in ("broadcast", "reduce") else DEFAULT_ALGORITHM[coll.primitive])
    problems = nccl_prediction.problems(coll.primitive, name, ranks, g)
    if problems:
        raise InputError(f"--algorithm {name} cannot run on {ranks} ranks: {problems[0]}")
    two_level = any(str(sym) in ("alpha_inter", "beta_inter")
                    for sym, _ in catalog_algorithm(coll.primitive, name).cost.coefficients)
    values, why = link_values(hardware, ranks, two_level, g, crossing=crossing_of(coll.primitive, name))
    notes.append(f"no calibration of {coll.name}{' at this level' if named else ''} in --hardware {hardware.name}: "
                 f"the catalog's {name} formula at its links")
    if two_level and spans:
        notes.append(f"{ranks} ranks span nodes of {g} GPUs: the two-level form, each level at its own α, β")
    elif why:
        notes.append(why)
    times = {k: float(values[k]) for k in ("alpha", "beta", "gamma", "alpha_inter", "beta_inter")}
    # a preset's α, β are NCCL's cost-model constants, no measurement of any cluster (hardware.json _convention); a
    # calibrated file's links were fitted on another collective's log, whose error is that log's, not this one's
    fitted = [link.source for link in (hardware.intra, hardware.inter) if link.source.startswith("fitted by symcomm")]
    error = (f"unknown: no {coll.name} log {'at this level ' if named else ''}was fitted; the links' alpha and beta "
             f"were fitted on another log ({fitted[0].removeprefix('fitted by symcomm calibrate: ')}), whose error "
             f"does not carry over to {coll.name}/{name} on {ranks} ranks: symcomm calibrate fits a log of it and "
             "measures its error" if fitted else
             "unknown: no log of this cluster was fitted; the links' alpha and beta are the hardware's own values "
             "(a preset's: NCCL's cost-model constants and datasheet bandwidths), not a measurement: symcomm "
             "calibrate fits a log and measures its error")
    return Prediction(coll, name, ranks, min(g, ranks), times, source=f"--hardware {hardware.name}", notes=tuple(notes),
                      error=error)


def calibrated_range(model: Prediction) -> tuple[int, int] | None:
    """The smallest and largest size a calibrated model was measured at (None for the catalog
    formula at a preset's links, which has no measured range)."""
    return (int(model.sizes[0]), int(model.sizes[-1])) if model.sizes else None


def extrapolated(sizes, measured: tuple[int, int] | None) -> list[int]:
    """The sizes (> 0) outside the calibrated range ``measured``: their efficiency is extrapolated."""
    if measured is None:
        return []
    return [int(s) for s in sizes if s > 0 and not measured[0] <= s <= measured[1]]


def step_time_document(base, fit, runs_path: str, name: str | None = None) -> dict:
    """The hardware file (schema ``hardware``) ``symcomm calibrate-step`` writes: the ``base`` hardware's
    (a preset's links, GPUs per node, memory, HBM and peaks; a file's whole document) with its
    ``step_time`` replaced by ``fit`` (:class:`symcomm.measurement.step_fit.StepFit`): the constants (held
    ones at the base's value, each with why), the errors in sample and left one out, and the runs."""
    from ..base.inputs import read_json
    from ..presets.systems import MAX_HARDWARE_BYTES
    from .step_fit import NOT_DETERMINED

    if base.from_file:
        document = dict(read_json(base.name, "--hardware", "hardware", limit=MAX_HARDWARE_BYTES))
    else:
        document = {"title": base.title, "source": f"preset {base.name} ({base.source})",
                    "intra": link_document(base.intra), "inter": link_document(base.inter),
                    "gpus_per_node": base.gpus_per_node, **part_facts(base)}
    document["name"] = name or f"{base.name.rsplit('/', 1)[-1].removesuffix('.json')}-calibrated"
    inside, out = fit.in_sample, fit.leave_one_out
    # what the runs determine of each fitted constant travels with the file: eval's constants line prints the source,
    # so a fit whose constants trade along a valley (runs of one layout) is not read as holding for any layout
    spread = [f"{name} {low:.4g} to {high:.4g}" for name, (low, high) in sorted(fit.spans.items())
              if name in fit.fitted and high > low]
    spans = (f"; the runs fit as well (mean |error| within {100 * NOT_DETERMINED:g} points) with {', '.join(spread)}: "
             "runs of another model or layout can be off by more than the leave-one-out" if spread else "")
    document["step_time"] = {
        **fit.constants,
        "source": (f"fitted by symcomm calibrate-step on {inside.runs} measured runs ({runs_path}), base "
                   f"{base.name}: fitted {', '.join(fit.fitted) or 'none'}; mean |error| {100 * inside.mean:.1f} %, "
                   f"max {100 * inside.max:.1f} %; leave-one-out mean {100 * out.mean:.1f} %, max "
                   f"{100 * out.max:.1f} %{spans}"),
        "fitted": list(fit.fitted), "held": dict(fit.held), "frameworks": list(fit.frameworks),
        "precisions": list(fit.precisions), "attention_kernels": list(fit.kernels),
        "errors": {"in_sample": inside.as_dict(), "leave_one_out": out.as_dict()},
        "runs": [row.as_dict() for row in fit.rows]}
    return document
