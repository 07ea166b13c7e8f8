"""The search: every option combination over the layouts that fit, pruned by a lower bound on the step time
(see :mod:`symcomm.planner`), every block's kernel run together with the others', then folded and ranked."""

from __future__ import annotations

import time as _time

import numpy as np

from ..base import notes
from ..base.units import bytes_per_element, human_size
from .fold import TOLERANCE, Plan, _Block, _compared, _fold, layout_rank
from ..training.words import say_unread_step
from ..training.frameworks import FRAMEWORKS, blackwell_head_dim_note, framework_attention, planned_schedules
from ..training.settings import FLEX_DISPATCHERS, TORCH_PIPELINING_FRAMEWORKS
from ..training.megatron_features import selective_framework_note
from .kernels import _all_quantities, _base_values, _options, names_read
from .layouts import enumerate_layouts, memory_floor, tiles_domains
from .report import ASSUMPTIONS, DISPATCH_ASSUMPTION, MARGIN_ASSUMPTION, MEMORY_ASSUMPTION
from .request import (RECOMPUTE, SP_CHOICES, PlanError, Request, _compare_spec, _schemes, check_request,
                      checked_memory, expert_tp_run)

def _matches(spec: dict, layouts: dict, rows: np.ndarray, block: _Block) -> np.ndarray:
    keep = np.ones(rows.size, dtype=bool)
    for key, value in spec.items():
        if key in ("t", "p", "v", "c", "e", "d", "mb"):
            keep &= layouts[key][rows] == value
    setting = block.setting()
    for key, name in (("zero", "zero"), ("framework", "framework"), ("recompute", "recompute"), ("sp", "sp")):
        if key in spec and setting[name] != spec[key]:
            keep[:] = False
    if "raf" in spec:       # per row: a framework's default may differ under a pipeline (fold._Block.setting)
        piped = layouts["p"][rows] >= 2
        keep &= np.where(piped, block.setting(2)["reshard_after_forward"] == spec["raf"],
                         setting["reshard_after_forward"] == spec["raf"])
    return keep


def _unmatched(spec: dict, layouts: dict, blocks: list) -> str:
    """Which of the --compare ``spec``'s keys leave no layout, in words: each key the others match without (the
    error named --sp, --recompute, --zero and --framework whatever was given, raf=1 or p=2 among them)."""
    alone = [key for key in spec if any(_matches({k: v for k, v in spec.items() if k != key}, layouts, b.rows, b).any()
                                        for b in blocks)]
    shown = lambda key: f"{key}={int(spec[key]) if isinstance(spec[key], bool) else spec[key]}"   # noqa: E731
    if alone:
        return ("leaving out " + " or ".join(shown(key) for key in alone) + " finds layouts: it asks for a setting "
                "this request does not search, or a size its other flags and values rule out")
    return ("no one key alone: their combination is not among the layouts and settings this request searches (check "
            "the flags it gives, --framework, --zero, --sp, --recompute, --tp/--pp/...)")


def _check_finite(name: str, values: np.ndarray) -> None:
    """The last line of defence (as symcomm.training.steptime.check_finite for eval hybrid): a step-model output
    that is inf or nan (a zero bandwidth, peak or eta reaching a division) is refused, never ranked."""
    bad = ~np.isfinite(values)
    if bad.any():
        raise PlanError(f"the step model gives {name} = {values[bad][0]} (not a finite number) with these values: "
                        "check the hardware's bandwidths, peak_flops, hbm_bytes_per_second and step_time")


#: the planner's split columns (symcomm.planner.layouts.COLUMNS "split") by number
SPLITS = ("even", "first_last")


#: what makes two rows one layout for the uneven splits (:func:`_best_split_only`)
SPLIT_KEYS = ("t", "p", "v", "c", "e", "d", "mb")


def _best_split_only(block: _Block, layouts: dict, rank: np.ndarray) -> None:
    """Of the uneven splits tried for one layout (same t, p, v, c, e, d, mb) in this option combination, only the
    fastest (then the least memory) stays among the rows: the others no longer fit.  ``rank``: each layout's
    :func:`layout_rank` by :data:`SPLIT_KEYS`."""
    if not np.any(layouts["split"][block.rows] == 1):
        return
    key = rank[block.rows]
    order = np.argsort(key, kind="stable")         # by layout; within one, as searched
    key_o = key[order]
    new = np.r_[True, key_o[1:] != key_o[:-1]]
    if new.all():
        return
    # each layout's first row of the least step time, then of the least memory (both finite: checked before);
    # a lexsort by the two floats as well cost ten times as much
    starts, group = np.flatnonzero(new), np.cumsum(new) - 1
    step, memory = block.step[order], block.memory[order]
    best = step == np.minimum.reduceat(step, starts)[group]
    best &= memory == np.minimum.reduceat(np.where(best, memory, np.inf), starts)[group]
    kept = np.flatnonzero(best)
    kept = kept[np.r_[True, group[kept][1:] != group[kept][:-1]]]
    dropped = np.ones(order.size, dtype=bool)
    dropped[kept] = False
    block.fits[order[dropped]] = False


def _top_steps(best: np.ndarray, new: np.ndarray, top: int) -> np.ndarray:
    """The ``top`` smallest distinct step times (values within TOLERANCE count once) of both."""
    s = np.sort(np.concatenate([best, new]))
    if s.size:
        s = s[np.r_[True, np.diff(s) > TOLERANCE * s[1:]]]
    return s[:top]


def _why_not(req: Request, spec: dict) -> str:
    """Why no enumerated layout matches ``spec``: the expert rules the enumeration applies (layouts.py) named when
    the compared e breaks one, else the general rule."""
    fixed = {"t": req.tp, "p": req.pp, "v": req.vp, "c": req.cp, "e": req.ep, "d": req.dp, "mb": req.micro_batch}
    flags = {"t": "--tp", "p": "--pp", "v": "--vp", "c": "--cp", "e": "--ep", "d": "--dp", "mb": "--micro-batch"}
    clash = next((key for key, value in spec.items() if fixed.get(key) is not None and fixed[key] != value), None)
    if clash is not None:
        return f"{clash}={spec[clash]} against {flags[clash]} {fixed[clash]}: give one of them"
    e = spec.get("e")
    if e is not None and req.model.moe:
        if req.dispatcher in FLEX_DISPATCHERS and not (e <= req.G or e % req.G == 0):
            return (f"--dispatcher {req.dispatcher} places the expert group on whole nodes: e={e} must be at most "
                    f"G={req.G} or a multiple of it")
        if req.router_groups > 1 and e & (e - 1):
            return (f"--router-groups {req.router_groups} needs e a power of two (e={e}): the routed places are "
                    "counted where the expert group's nodes and the router groups divide one another")
    return f"t·p·c·d must be --gpus={req.gpus} and every divisibility rule hold"


def _settings_rules(req: Request) -> str:
    """The rules the search applies to the settings with each layout (eval's: symcomm.training.hybrid), those that the
    request's fixed options make bind, for the error when no layout runs them."""
    said = []
    if req.framework is not None:
        row = FRAMEWORKS[req.framework]
        if not row.cp_algorithms:
            said.append(f"--framework {req.framework} runs no context parallelism: c = 1")
        elif req.cp_algorithm not in row.cp_algorithms:
            said.append(f"--framework {req.framework} runs context parallelism by {' or '.join(row.cp_algorithms)} "
                        f"only: give --cp-algorithm {row.cp_algorithms[0]}, or c = 1")
        searched = sorted({s.zero for s in row.schemes})
        if not row.pipeline_zero:
            said.append(f"--framework {req.framework} runs no pipeline: p = 1")
        elif set(searched) - set(row.pipeline_zero):
            said.append(f"--framework {req.framework}'s pipeline runs ZeRO stage "
                        f"{', '.join(map(str, row.pipeline_zero))} only"
                        + (f", and plan searches it at ZeRO {', '.join(map(str, searched))}: p = 1 (eval hybrid "
                           f"framework={req.framework} zero={row.pipeline_zero[-1]} prices a pipeline layout you give)"
                           if not set(searched) & set(row.pipeline_zero) else ""))
        if req.framework in TORCH_PIPELINING_FRAMEWORKS:
            said.append(f"--framework {req.framework}'s 1F1B pipeline (torch.distributed.pipelining's Schedule1F1B) "
                        f"needs at least p micro-batches, m ≥ p: --batch {req.batch} over the d replicas")
    if req.sp:
        said.append(f"sequence parallel (--sp 1) needs t > 1 and t | seq/c (seq={req.seq})")
    if req.sp is False and req.model.moe:
        said.append("without sequence parallel (--sp 0) an MoE model needs t = 1 (Megatron-Core)")
    if req.recompute == "op":
        said.append("--recompute op with t > 1 needs sequence parallel")
    fixed = [flag for flag, value in (("--sp", req.sp), ("--recompute", req.recompute), ("--framework", req.framework),
                                      ("--zero", req.zero), ("--tp", req.tp), ("--pp", req.pp), ("--cp", req.cp))
             if value is not None]
    return "; ".join(said or ["the settings' rules"]) + (f"; fix fewer of {', '.join(fixed)}" if fixed else "")


def plan(req: Request, top: int | None = None) -> Plan:
    """The layouts that fit, folded and sorted by step time (then memory).  With ``top``, the
    step time is computed only where it can reach the ``top`` best rows or the --compare
    layout; ``None``: everywhere."""
    started = _time.perf_counter()
    check_request(req)
    spec = _compare_spec(req)
    layouts = enumerate_layouts(req)
    model = req.model
    for said in model.shape_notes(req.seq):       # eval says them too (symcomm.training.words.with_model_shape)
        notes.add(said)
    if model.config_note():
        notes.add(model.config_note())
    if layouts["t"].size == 0:
        raise PlanError(
            f"no layout of these sizes: need t | heads ({model.heads}) and t | G ({req.G}), p | layers ({model.layers}) "
            f"or an uneven split of them, c | seq ({req.seq})"
            + (f", c | heads/t and c | K/V heads/t ({model.kv_heads} K/V heads; --cp-algorithm ulysses)"
               if req.cp_algorithm == "ulysses" else "")
            + f", d = gpus/(t·p·c) and micro-batches dividing batch ({req.batch})"
            + (f", e | experts ({model.experts}) and "
               + ("e | d·c" if expert_tp_run(req.dispatcher, req.expert_tp) == "tp" else "e | t·d·c (--expert-tp 1)")
               if model.moe else "")
            + (f", e at most G ({req.G}) or a multiple of it (--dispatcher {req.dispatcher})"
               if model.moe and req.dispatcher in FLEX_DISPATCHERS else "")
            + f"; --gpus={req.gpus} with the fixed options leaves none")
    floor_ok = (req.hardware.fits(checked_memory(req, memory_floor(req, layouts))) if req.memory_check
                else np.ones(layouts["t"].size, dtype=bool))
    # a layout whose groups straddle the NVLink domains is priced as if each stayed in one (eval says so of it): ranked
    # only where no layout tiles them (the report says which rows straddle), else left out and counted
    tiles = tiles_domains(req, layouts)
    straddling = int((~tiles).sum()) if tiles.any() else 0
    if straddling:
        floor_ok = floor_ok & tiles
    if spec:                                                  # the compared layout is shown whatever it holds
        wanted = np.ones(layouts["t"].size, dtype=bool)
        for key in ("t", "p", "v", "c", "e", "d", "mb"):
            if key in spec:
                wanted &= layouts[key] == spec[key]
        if not wanted.any():
            raise PlanError(f"--compare {','.join(f'{k}={v}' for k, v in req.compare)} is not a layout of this "
                            f"request: {_why_not(req, spec)}")
        floor_ok = floor_ok | wanted
    layouts = {k: v[floor_ok] for k, v in layouts.items()}
    run_bytes = bytes_per_element(req.dtype)
    base = _base_values(req)
    values = {**base, **{k: layouts[k].astype(np.float64) for k in ("t", "p", "v", "c", "e", "d", "m", "L_first",
                                                                      "L_last")}}
    T, S = layouts["t"], layouts["c"]
    bubble_fraction = (layouts["p"] - 1) / (layouts["v"] * layouts["m"])

    pending: list = []
    for sp_on in (SP_CHOICES if req.sp is None else (req.sp,)):
        if sp_on:
            sp_ok = (T > 1) & ((req.seq // S) % T == 0)          # SP splits the local sequence over t
        else:
            sp_ok = (T == 1) if model.moe else np.ones(T.size, dtype=bool)   # Megatron-Core: MoE with t > 1 needs SP
        for recompute in (RECOMPUTE if req.recompute is None else (req.recompute,)):
            # recompute=op with t > 1 needs sp=1 (symcomm.training.hybrid: torchtitan's TP always shards the norms)
            op_ok = sp_ok if recompute != "op" or sp_on else sp_ok & (T == 1)
            for scheme in _schemes(req):
                if req.recompute is None and selective_framework_note(scheme.framework, recompute):
                    continue        # Megatron's selective recompute, which torchtitan does not run: searched only asked
                # what the framework runs (eval's rules: frameworks.framework_refusal, hybrid._framework_limits)
                row = FRAMEWORKS[scheme.framework]
                runs = op_ok & ((layouts["p"] == 1) if scheme.zero not in row.pipeline_zero else True)
                runs = runs & ((layouts["c"] == 1) if req.cp_algorithm not in row.cp_algorithms else True)
                runs = runs & ((layouts["e"] == 1) if model.moe and not row.expert_parallel else True)
                for schedule, split in (("1f1b", 0), ("interleaved", 0), ("1f1b", 1), ("interleaved", 1)):
                    if schedule not in planned_schedules(scheme, model.moe):
                        continue
                    # torch.distributed.pipelining's Schedule1F1B: m ≥ p (eval's rule, hybrid._TORCH_1F1B_M)
                    torch_1f1b = schedule == "1f1b" and scheme.framework in TORCH_PIPELINING_FRAMEWORKS
                    rows = np.flatnonzero(runs & ((layouts["v"] == 1) if schedule == "1f1b" else (layouts["v"] > 1))
                                          & (layouts["split"] == split)
                                          & ((layouts["m"] >= layouts["p"]) if torch_1f1b else True))
                    # a framework reducing in another element type with context parallelism (DeepSpeed-Ulysses:
                    # fp32) has its c ≥ 2 layouts priced at that type, as eval is told (hybrid._framework_limits)
                    cp_rows = rows[layouts["c"][rows] > 1] if row.cp_grad_dtype else rows[:0]
                    for these, grad_dtype in ((np.setdiff1d(rows, cp_rows), None), (cp_rows, row.cp_grad_dtype)):
                        if these.size:
                            pending.append((_options(req, scheme, recompute, sp_on, schedule, SPLITS[split],
                                                     grad_dtype), scheme, recompute, sp_on, these))
    if not pending and layouts["t"].size:      # layouts left past the memory floor, none running the settings
        raise PlanError(f"no layout of --gpus={req.gpus} runs the fixed settings: {_settings_rules(req)}")
    # every combination's kernel in one pass over its family's graph (most nodes are shared), then each block; a
    # framework whose own attention core is another kernel on this GPU than the hardware's fused one (PyTorch SDPA's
    # FlashAttention-2 below Hopper: framework_attention, eval's rule) in a pass of its own, at that kernel's share
    found: list = [None] * len(pending)
    passes: dict = {}
    for i, (_o, scheme, *_rest) in enumerate(pending):
        extra, said = framework_attention(scheme.framework, req.hardware, req.attention_kernel, req.typed_hardware)
        if said:
            notes.add(said)
        # the plan times the fused core (flash=1) as eval does, and says where that rests on a TE version
        said_heads = blackwell_head_dim_note(scheme.framework, req.hardware, req.model, True, req.attention_kernel)
        if said_heads:
            notes.add(said_heads)
        passes.setdefault(tuple(sorted(extra.items())), []).append(i)
    for extra, members in passes.items():
        got = _all_quantities([(pending[i][0], pending[i][4]) for i in members], run_bytes, {**values, **dict(extra)})
        for i, q in zip(members, got):
            found[i] = q
    blocks: list[_Block] = []
    for (options, scheme, recompute, sp_on, rows), q in zip(pending, found):
        memory = q["memory_per_gpu"]
        fits = (bubble_fraction[rows] <= req.max_bubble if req.max_bubble is not None
                else np.ones(rows.size, dtype=bool))
        if req.memory_check:                  # eval hybrid's rule too (one function)
            fits &= req.hardware.fits(checked_memory(req, memory))
        compute, optimizer = q["compute_time"], q["optimizer_time"]
        for name, got in (("memory_per_gpu", memory), ("compute_time", compute),
                          ("optimizer_time", optimizer)):
            _check_finite(name, got)
        block = _Block(options, scheme, recompute, sp_on, rows, memory, fits,
                       compute * (1 + bubble_fraction[rows]) + optimizer,
                       np.zeros(rows.size, dtype=bool), q=q)
        if spec:
            block.compare = _matches(spec, layouts, rows, block)
        blocks.append(block)

    split_rank = layout_rank(layouts, SPLIT_KEYS)
    # counted before a timed block keeps only each layout's fastest split (_best_split_only): a count the timed
    # blocks, which --top decides, would move (57,566 fit at --top 1, 54,013 at --top 10000: an outsider's test)
    fitting = int(sum(b.fits.sum() for b in blocks))

    def time_block(block: _Block) -> None:
        block.step = block.q["step_time"]
        _check_finite("step_time", block.step)
        _best_split_only(block, layouts, split_rank)
        if np.any(block.step < block.bound * (1 - 1e-9)):
            raise RuntimeError("the step model's step time fell below compute · (1 + bubble fraction) + optimizer: "
                               "symcomm.planner's pruning bound no longer holds for it")

    # the compared layout first: its step time bounds what must be evaluated for its rank
    compare_step = -np.inf
    for block in blocks:
        if block.compare.any():
            time_block(block)
            compare_step = max(compare_step, float(np.min(block.step[block.compare])))
    if spec and compare_step == -np.inf:
        raise PlanError(f"--compare {','.join(f'{k}={v}' for k, v in req.compare)} matches no layout of this "
                        f"request: {_unmatched(spec, layouts, blocks)}")
    best = np.zeros(0)
    lowest = [float(np.min(b.bound[b.fits])) if b.fits.any() else np.inf for b in blocks]
    for i in np.argsort(lowest, kind="stable"):
        block = blocks[i]
        if lowest[i] == np.inf:
            break
        threshold = np.inf if top is None or best.size < top else best[top - 1]
        if lowest[i] > max(threshold, compare_step) * (1 + 1e-6):
            break                                             # sorted: every later block is slower still
        if block.step is None:
            time_block(block)
        if top is not None:
            best = _top_steps(best, block.step[block.fits], top)
    done = [(i, b) for i, b in enumerate(blocks) if b.step is not None]
    if not any(b.fits.any() for b in blocks):
        raise PlanError(
            "no layout fits"
            + (f" in {human_size(req.hardware.memory_bytes)} per GPU ({req.hardware.name})" if req.memory_check else "")
            + (" at the high end of the memory model's measured error" if req.memory_margin else "")
            + (f" with a bubble ≤ {req.max_bubble:g}" if req.max_bubble is not None else "")
            + "; try more --gpus, a smaller --micro-batch"
            + (", a larger --max-bubble" if req.max_bubble is not None else "")
            + (", or --no-memory-check" if req.memory_check else ""))
    if req.constants:       # a typed constant no step model of this plan reads is said, in eval's words
        typed = [name for name, _ in req.constants]
        say_unread_step(typed, typed, (), names_read(blocks, run_bytes), ())
    folded = _fold(layouts, [(i, b) for i, b in done])
    dispatch = DISPATCH_ASSUMPTION.format(req.dispatcher, expert_tp_run(req.dispatcher, req.expert_tp),
                                          _routing_words(req))
    result = Plan(req, folded, sum(b.rows.size for b in blocks), fitting,
                  sum(b.rows.size for _, b in done), (len(done), len(blocks)), 0.0,
                  ASSUMPTIONS + ((dispatch,) if req.model.moe else ())
                  + ((MEMORY_ASSUMPTION,) if req.memory_check else ("memory not checked",))
                  + ((MARGIN_ASSUMPTION,) if req.memory_margin else ()),
                  None, blocks, values, layouts, straddling)
    if spec:
        result.compare = _compared(result, spec, done)
    result.seconds = _time.perf_counter() - started
    return result


def _routing_words(req) -> str:
    """How a MoE plan's tokens are routed, in the assumptions' words."""
    if req.router_groups == 1:
        return "ungrouped routing (--router-groups 1)"
    return (f"group-limited routing: {req.router_group_topk} of {req.router_groups} expert groups per token "
            "(--router-groups, --router-group-topk; e a power of two)")
