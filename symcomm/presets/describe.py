"""A hardware's facts as documents: what ``symcomm presets`` prints of a preset (:func:`describe_hardware`) and what a
written hardware file takes from its base (:func:`part_facts`, :func:`link_document`: ``symcomm calibrate`` and
``calibrate-step``, symcomm.measurement.calibration_file)."""

from __future__ import annotations


def link_document(x) -> dict:
    """A link (:class:`symcomm.presets.systems.Link`) with its sources, as a hardware file writes it."""
    return {"title": x.title, "bytes_per_second": x.bytes_per_second, "latency_s": x.latency_s,
            "published": x.published, "conversion": x.conversion, "source": x.source, "latency_source": x.latency_source}


def describe_hardware(system) -> dict:
    """A preset's values with their units and sources (``symcomm presets``)."""
    return {"name": system.name, "title": system.title,
            "intra": {"name": system.intra.name, **link_document(system.intra)},
            "inter": {"name": system.inter.name, **link_document(system.inter)}, "gpus_per_node": system.gpus_per_node,
            "memory_bytes": system.memory_bytes, "hbm_bytes_per_second": system.hbm_bytes_per_second,
            "source": system.source, "peak_flops": dict(system.peak_flops), "peak_source": system.peak_source,
            **({"peak_flops_bounds": {d: [lo, hi] for d, lo, hi in system.peak_bounds}} if system.peak_bounds else {}),
            "step_time": dict(system.step_time), "step_time_source": system.step_time_source,
            "attention_shares": dict(system.attention_shares), "attention_source": system.attention_source}


def part_facts(base) -> dict:
    """What a written hardware file (symcomm.measurement.calibration_file's hardware_document, step_time_document)
    takes from its base as the part's own published facts, none of them fitted: its memory and HBM bandwidth, its
    peaks (or their bounds where no datasheet gives one), its compute capability (the precision recipes it runs) and
    its attention kernels' published shares (attention_kernel=fa2, triton, cudnn); a base that leaves one out (a file:
    unknown) leaves it out here too.  Without the shares a run typed attention_kernel=fa2 that the calibration priced
    on the base would be refused on the file it wrote."""
    out: dict = {}
    if base.memory_bytes is not None:
        out["memory_bytes"] = base.memory_bytes
    if base.hbm_bytes_per_second is not None:
        out["hbm_bytes_per_second"] = base.hbm_bytes_per_second
    if base.peak_flops or base.peak_bounds:
        out["peak_source"] = base.peak_source
    if base.peak_flops:
        out["peak_flops"] = dict(base.peak_flops)
    if base.peak_bounds:
        out["peak_flops_bounds"] = {dtype: [low, high] for dtype, low, high in base.peak_bounds}
    if base.compute_capability:
        out["compute_capability"] = list(base.compute_capability)
    if base.attention_shares:
        out["attention_shares"] = dict(base.attention_shares)
        out["attention_source"] = base.attention_source
    return out
