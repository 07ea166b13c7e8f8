"""The result of a plan: each option combination's block of layouts, the rows folding the settings that give
one layout the same step time and memory, every column of a row (with the ``symcomm eval`` words that
reproduce it), and the ``--compare`` row with its rank."""

from __future__ import annotations

import functools
import shlex
from dataclasses import dataclass, field

import numpy as np

from ..training import frameworks as _frameworks
from ..training import settings
from .request import Request

#: in display order
AXES = ("tp", "cp", "ep", "pp", "dp")
#: step times (and memories) of one layout this close, relatively, are the same number: their rows fold
TOLERANCE = 1e-9


@dataclass
class _Block:
    """One option combination and the layouts it applies to."""
    options: tuple
    scheme: tuple
    recompute: str
    sp: bool
    rows: np.ndarray              # indices into the layouts
    memory: np.ndarray
    fits: np.ndarray              # memory (when checked) and bubble within bounds
    bound: np.ndarray             # a lower bound on the step time
    compare: np.ndarray           # rows the --compare spec matches
    step: np.ndarray | None = None
    q: dict | None = None         # every quantity over the rows, from the kernel

    def setting(self, p: int = 1) -> dict:
        scheme = self.scheme
        row = _frameworks.FRAMEWORKS[scheme.framework]
        reshard = (row.reshard_after_forward if scheme.reshard_after_forward is None else scheme.reshard_after_forward)
        if scheme.reshard_after_forward is None and p >= 2 and row.reshard_when_piped is not None:
            reshard = row.reshard_when_piped        # torchtitan keeps the units gathered under a pipeline
        grad_dtype = dict(self.options).get("grad_dtype")      # a layout-dependent one (Framework.cp_grad_dtype)
        return {"framework": scheme.framework, "zero": scheme.zero,
                "reshard_after_forward": int(scheme.zero == 3 and reshard),
                "recompute": self.recompute, "sp": int(self.sp),     # printed 0/1, as every row has it
                **({"grad_dtype": grad_dtype} if grad_dtype else {})}

    def label(self) -> str:
        return f"{self.scheme.name} rc={self.recompute}" + (" sp" if self.sp else "")


@dataclass
class Plan:
    request: Request
    layouts: dict                 # folded rows, best first: column → numpy array
    considered: int               # layouts × option combinations after divisibility
    fitting: int                  # of them within memory (and --max-bubble), before each layout's best split is kept
    evaluated: int                # whose step time was computed, fitting or not (a combination's layouts at once)
    combinations: tuple           # (option combinations timed, option combinations in all)
    seconds: float
    assumptions: tuple[str, ...] = field(default_factory=tuple)
    compare: dict | None = None   # the --compare row, with its rank
    _blocks: list = field(default_factory=list, repr=False)
    _values: dict = field(default_factory=dict, repr=False)
    _layouts: dict = field(default_factory=dict, repr=False)
    straddling: int = 0           # layouts left out: their groups straddle the NVLink domains (layouts.tiles_domains)

    def __len__(self) -> int:
        return len(self.layouts["step_time"])

    def rows(self, top: int | None = None, axes: bool = False) -> list[dict]:
        """The first ``top`` rows (all: None) with every column; ``axes``: the first row's per-axis figures."""
        n = len(self) if top is None else min(top, len(self))
        return self._rows(self.layouts["block"][:n], self.layouts["row"][:n], self.layouts["settings"][:n],
                          list(range(1, n + 1)), axes)

    def _rows(self, blocks, rows, settings, ranks, axes: bool = False) -> list[dict]:
        """Rows (each: the option combination ``blocks[i]`` at layout ``rows[i]``), every quantity evaluated
        once per option combination over its rows."""
        req = self.request
        out: list = [None] * len(rows)
        names = ("step_time", "model_flops", "model_flops_causal", "compute_time", "exposed_comm_time", "bubble_time",
                 "optimizer_time", "memory_per_gpu")
        for block_index in np.unique(np.asarray(blocks, dtype=np.int64)):
            chosen = np.flatnonzero(np.asarray(blocks) == block_index)
            at = np.asarray(rows, dtype=np.int64)[chosen]
            block = self._blocks[block_index]
            where = np.searchsorted(block.rows, at)
            got = {name: block.q[name][where] for name in names}
            for j, i in enumerate(chosen):
                layout = {k: int(self._layouts[k][at[j]]) for k in ("t", "p", "v", "c", "e", "d", "mb", "m")}
                split = int(self._layouts["split"][at[j]])
                layout.update({"pipeline_split": ("even", "first_last")[split],
                               "L_first": int(self._layouts["L_first"][at[j]]) if split else None,
                               "L_last": int(self._layouts["L_last"][at[j]]) if split else None})
                step = float(got["step_time"][j])
                out[i] = {"rank": ranks[i], **layout, "schedule": "interleaved" if layout["v"] > 1 else "1f1b",
                          "settings": [self._blocks[k].setting(layout["p"]) for k in settings[i]],
                          "labels": [self._blocks[k].label() for k in settings[i]], "step_time": step,
                          "tokens_per_second": req.batch * req.seq / step,
                          "mfu": float(got["model_flops"][j]) / (step * req.gpus * self._values["peak"]),
                          # eval's mfu_causal: causal attention counted at half, as Megatron-LM counts it
                          "mfu_causal": float(got["model_flops_causal"][j]) / (step * req.gpus * self._values["peak"]),
                          **{name: float(got[name][j]) for name in ("compute_time", "exposed_comm_time",
                                                                      "bubble_time", "optimizer_time")},
                          "memory_bytes": float(got["memory_per_gpu"][j]),
                          "bubble_fraction": (layout["p"] - 1) / (layout["v"] * layout["m"]),
                          "eval_command": shlex.join(eval_words(req, layout, self._blocks[settings[i][0]]))}
        if axes and out:
            first, block = out[0], self._blocks[int(blocks[0])]
            where = int(np.searchsorted(block.rows, int(rows[0])))
            got = {name: float(x[where]) for name, x in block.q.items()}
            first["axes"] = {axis: {"comm_time": got[f"comm_time_{axis}"],
                                    "exposed_comm_time": got[f"exposed_comm_time_{axis}"],
                                    "stage": _stage(axis, first["p"], req.embeddings)}
                             for axis in AXES if f"comm_time_{axis}" in got}
        return out


def eval_words(req: Request, layout: dict, block: _Block) -> list[str]:
    """The ``symcomm eval hybrid`` command that reproduces a row (its step time and memory): the same model,
    hardware, GPUs per node, dtype, batch, seq, layout and every option of its step model, spelled as eval
    spells them (the row's first setting: the others it lists give the same numbers)."""
    from .. import presets

    model = (["--model", req.model.name] if req.model.name in presets.model_names()
             else ["--model-config", req.model.name])
    words = ["symcomm", "eval", "hybrid", *model, "--hardware", req.hardware.name, "--dtype", req.dtype]
    sizes = ("t", "p", "v", "c", "e", "d", "m") if req.model.moe else ("t", "p", "v", "c", "d", "m")
    words += [f"{k}={layout[k]}" for k in sizes if k != "v" or layout["v"] > 1]
    words += [f"b={req.batch}", f"s={req.seq}", f"G={req.G}"]
    words += [f"peak={req.peak!r}"] if req.peak is not None else []      # a typed peak, as plan was given it
    words += [f"{name}={value!r}" for name, value in req.constants]        # and the typed constants
    if layout.get("L_first") is not None:                  # an uneven split (symcomm.training.stages)
        words += [f"L_first={layout['L_first']}", f"L_last={layout['L_last']}"]
    words += _setting_words(block.options)
    return words


@functools.lru_cache(maxsize=None)
def _setting_words(options: tuple) -> tuple[str, ...]:
    """The KEY=VALUE words of one option combination: read and checked once per combination, not once per row
    (a plan of every layout reads a few dozen combinations tens of thousands of times); dropout always, at its
    default too, since eval fills a preset's own (dropout=0) where the words leave it out."""
    keys = [k for k, _ in options]
    return settings.format(settings.RunSetting.from_key(options), keys + ([] if "dropout" in keys else ["dropout"]))


@functools.lru_cache(maxsize=None)
def _stage(axis: str, stages: int, embeddings: bool) -> str:
    """Which pipeline stage the axis's busiest GPU is on (symcomm.training.terms.busiest_stage)."""
    from ..numbers import kernels

    known = kernels.stage(axis, stages, embeddings)
    if known is not None:
        return known
    from ..training.terms import busiest_stage
    from ..training.subjects import subject

    terms = [term for term in subject("hybrid", embeddings=bool(embeddings), moe=True).terms
             if term.axis == axis]
    return busiest_stage(terms, int(stages))


def layout_rank(layouts: dict, keys: tuple) -> np.ndarray:
    """Each layout's place in the order of its ``keys`` columns, equal columns one place: sorting rows by it
    sorts them as by the columns themselves (and lexsort is stable), one key for many over the layouts once
    rather than over every (setting, layout) row."""
    cols = [layouts[k] for k in keys]
    order = np.lexsort(cols[::-1])
    cols_o = [c[order] for c in cols]
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = np.cumsum(np.r_[False, np.any([c[1:] != c[:-1] for c in cols_o], axis=0)])
    return rank


def _fold(layouts: dict, done: list) -> dict:
    """Rows of one layout whose step times and memories agree (within TOLERANCE) become one row
    listing every setting that gives them; the rows sorted by step time, then memory."""
    keys = ("t", "p", "v", "c", "e", "d", "mb", "split", "L_first", "L_last")
    parts = [(i, b.rows[b.fits], b.step[b.fits], b.memory[b.fits]) for i, b in done if b.fits.any()]
    if not parts:
        return {k: np.zeros(0) for k in (*keys, "m", "step_time", "memory_bytes", "block", "row")} | {"settings": []}
    block = np.concatenate([np.full(r.size, i) for i, r, _, _ in parts])
    row = np.concatenate([r for _, r, _, _ in parts])
    step = np.concatenate([s for _, _, s, _ in parts])
    memory = np.concatenate([m for _, _, _, m in parts])
    # by layout, then memory: equal memories adjacent (their order among themselves changes no group)
    rank = layout_rank(layouts, keys)[row]
    order = np.lexsort((memory, rank))
    rank_o = rank[order]
    same_layout = np.r_[False, rank_o[1:] == rank_o[:-1]]
    mem_o = memory[order]
    new_memory = ~same_layout | np.r_[True, np.abs(np.diff(mem_o)) > TOLERANCE * mem_o[1:]]
    memory_group = np.empty(row.size, dtype=np.int64)
    memory_group[order] = np.cumsum(new_memory)
    # within a (layout, memory) group, by step time
    order = np.lexsort((step, memory_group))
    grp_o, step_o = memory_group[order], step[order]
    new = np.r_[True, (grp_o[1:] != grp_o[:-1]) | (np.abs(np.diff(step_o)) > TOLERANCE * step_o[1:])]
    group = np.cumsum(new) - 1
    # each folded row shows one member: their step times and memories are the same number (within TOLERANCE),
    # so the first setting in search order, not the one rounding happens to make faster by 1e-16
    first = np.lexsort((block[order], group))
    heads = order[first[np.r_[True, group[first][1:] != group[first][:-1]]]]
    ranked = np.lexsort((memory[heads], step[heads]))
    heads = heads[ranked]
    out = {k: layouts[k][row[heads]] for k in (*keys, "m")}
    out.update({"step_time": step[heads], "memory_bytes": memory[heads], "block": block[heads], "row": row[heads]})
    out["settings"] = _Settings(group, block[order], ranked)
    return out


class _Settings:
    """The settings (block indices, sorted, each once) of every folded row, in rank order: a sequence
    whose items are built when read (the planner shows a few of maybe 10⁵ rows)."""

    def __init__(self, groups: np.ndarray, blocks: np.ndarray, ranked: np.ndarray):
        width = int(blocks.max()) + 1 if blocks.size else 1
        pairs = np.sort(groups.astype(np.int64) * width + blocks.astype(np.int64))
        pairs = pairs[np.r_[True, pairs[1:] != pairs[:-1]][:pairs.size]]   # np.unique's answer, without its hashing
        self._groups, self._blocks, self._ranked = pairs // width, pairs % width, ranked

    def __len__(self) -> int:
        return int(self._ranked.size)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        g = int(self._ranked[index])
        low, high = np.searchsorted(self._groups, (g, g + 1))
        return [int(b) for b in self._blocks[low:high]]

    def __iter__(self):
        return (self[i] for i in range(len(self)))


def _compared(result: Plan, spec: dict, done: list) -> dict:
    """The best layout matching --compare (fitting ones first), with its rank among the folded rows:
    1 + the rows strictly faster."""
    candidates = []
    for i, block in done:
        for j in np.flatnonzero(block.compare):
            candidates.append((not bool(block.fits[j]), float(block.step[j]), float(block.memory[j]), i, int(j)))
    fits_not, step, _, i, j = min(candidates)
    block = result._blocks[i]
    row = int(block.rows[j])
    same = [k for k, b in done if b.compare.any() and _same_row(b, row) is not None
            and abs(b.step[_same_row(b, row)] - step) <= TOLERANCE * step
            and abs(b.memory[_same_row(b, row)] - block.memory[j]) <= TOLERANCE * block.memory[j]]
    faster = int(np.sum(result.layouts["step_time"] < step * (1 - TOLERANCE)))
    out = result._rows([i], [row], [sorted(set(same))], [faster + 1], axes=True)[0]
    out["fits"] = not fits_not
    out["matching"] = len(candidates)
    return out


def _same_row(block: _Block, row: int):
    hit = np.flatnonzero(block.rows == row)
    return int(hit[0]) if hit.size else None
