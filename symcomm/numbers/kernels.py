"""The planner's kernels as data: common-subexpression graphs run by a small numpy interpreter.

A kernel computes every quantity the planner reports (:mod:`symcomm.planner`) for one option combination
of the step model, over numpy arrays of layouts.  ``python -m symcomm.tools.codegen`` turns the SymPy
expressions of :func:`symcomm.training.steptime.step_model` into a graph, one per model family
(``symcomm/planner/kerneldata/<family>.json``): a list of nodes, each an operation of :data:`OPS` applied to
earlier nodes, shared by every option combination of that family (equal subexpressions are one node),
and per combination the nodes that are its quantities.  This module reads such a file (through
:func:`symcomm.base.files.read_capped` and :func:`symcomm.base.inputs.loads`: a regular file, size-capped, strict
JSON, nesting capped), checks every field by the rules of its schema (``symcomm/schema/kernels.schema.json``)
and every node (a known operation, its arity, arguments that are earlier nodes: no cycle, nothing else)
and runs it.

Nothing read is executed as code: an operation's name is looked up in :data:`OPS`, a dict of numpy and
``operator`` functions, and an unknown name is refused (:class:`symcomm.base.errors.InputError`).  There is
no ``eval``, ``exec`` or SymPy here: ``symcomm plan`` runs on numpy alone.  Arithmetic on scalars (the
model, the hardware) stays in Python floats, arrays (the layouts) in float64 numpy, as the printed
kernels did: a scalar division by zero raises ZeroDivisionError, which the planner reports.
"""

from __future__ import annotations

import functools
import math
import operator
import re
from dataclasses import dataclass
from importlib import resources
from typing import Callable

import numpy as np

from ..base.errors import InputError

#: the format a kernel file declares (a change of the node vocabulary is a new format)
FORMAT = "symcomm-kernels/1"
#: the largest kernel file read, in bytes, and the most nodes one may hold
MAX_BYTES = 4 * 1024 * 1024
MAX_NODES = 200_000
#: the folder of the package that holds the shipped kernel files
FOLDER = "kerneldata"
#: a parameter's name
_NAME = r"[A-Za-z_][A-Za-z0-9_]{0,39}"


def _float(value):
    """A parameter's value as the interpreter computes with it: float64 (a Python float, or a float64 array).  An
    integer would stay integer through numpy's max, min and where (np.maximum(2, 3) is an int64) and wrap past
    2**63 without a word: a MoE model's FLOPs per step (DeepSeek-V3, 8192 sequences of 4096 tokens: ~1e19) came out
    negative so, where eval's exact Python ints do not."""
    if np.ndim(value) == 0:
        return float(value)
    return np.asarray(value, dtype=np.float64)


def _fold(function: Callable) -> Callable:
    return lambda *args: functools.reduce(function, args)


def _power(base, exponent):
    # a whole exponent as Python does it (exact on floats); any other through numpy, so that a negative
    # base gives nan, as the printed kernels did, never a Python complex number
    if np.ndim(exponent) == 0 and float(exponent).is_integer():
        return operator.pow(base, exponent)
    return np.power(np.asarray(base, dtype=np.float64), exponent)


def _ceil_log2(x):
    # ⌈log₂ x⌉ on floats, as symcomm.numbers.codeprint prints symcomm.core.symbols.CeilLog2 for numpy
    return np.ceil(np.log2(x))


#: operation → (function, least arguments, most arguments (None: any)).  "arg" (a parameter, by index)
#: and "num" (a finite number) and "nan" (no branch of a piecewise taken) are the leaves; "pow" takes any earlier
#: node as its exponent (a number, or a parameter: the routed experts k of the MoE dispatch, symcomm.training.routing)
OPS: dict[str, tuple[Callable | None, int, int | None]] = {
    "arg": (None, 1, 1),
    "num": (None, 1, 1),
    "nan": (None, 0, 0),
    "add": (_fold(operator.add), 2, None),
    "mul": (_fold(operator.mul), 2, None),
    "div": (operator.truediv, 2, 2),
    "pow": (_power, 2, 2),
    "max": (_fold(np.maximum), 2, None),
    "min": (_fold(np.minimum), 2, None),
    "where": (np.where, 3, 3),
    "lt": (np.less, 2, 2),
    "le": (np.less_equal, 2, 2),
    "gt": (np.greater, 2, 2),
    "ge": (np.greater_equal, 2, 2),
    "eq": (np.equal, 2, 2),
    "ne": (np.not_equal, 2, 2),
    "and": (_fold(np.logical_and), 2, None),
    "or": (_fold(np.logical_or), 2, None),
    "not": (np.logical_not, 1, 1),
    "ceil": (np.ceil, 1, 1),
    "floor": (np.floor, 1, 1),
    "log2": (np.log2, 1, 1),
    "ceil_log2": (_ceil_log2, 1, 1),
}


@dataclass(frozen=True)
class Kernel:
    """One option combination's quantities: call it with the parameters, in order, as numbers or arrays;
    it returns one value per quantity, in order."""
    quantities: tuple[str, ...]
    _graph: "Graph"
    _outputs: tuple[int, ...]

    @functools.cached_property
    def _used(self) -> tuple[int, ...]:
        # the file's index of each parameter it reads, in order: found on first use, since a plan that runs its
        # kernels together (run_together) never asks, and a file holds every combination of its family
        return tuple(sorted(_reachable_params(self._graph, self._outputs)))

    @functools.cached_property
    def params(self) -> tuple[str, ...]:
        return tuple(self._graph.params[i] for i in self._used)

    @functools.cached_property
    def _program(self) -> tuple:
        return self._graph.program(self._outputs)

    def __call__(self, *args) -> tuple:
        if len(args) != len(self.params):
            raise TypeError(f"this kernel takes {len(self.params)} arguments ({', '.join(self.params)}), "
                            f"got {len(args)}")
        return self._graph.run(self._program, dict(zip(self._used, map(_float, args))), self._outputs)

    def as_tuple(self) -> tuple:
        """(parameters, quantities, function): what the planner calls."""
        return self.params, self.quantities, self


class Graph:
    """A checked node list: ``nodes[i] = (operation, arguments...)``, every argument an earlier node."""

    def __init__(self, params: tuple, nodes: tuple, what: str):
        self.params = params
        self.nodes = nodes
        self.what = what
        _check_nodes(params, nodes, what)

    def program(self, outputs: tuple) -> tuple:
        """The nodes ``outputs`` need, in order, each with the nodes whose value it is the last to read."""
        needed = set()
        stack = list(outputs)
        while stack:
            i = stack.pop()
            if i in needed:
                continue
            needed.add(i)
            if self.nodes[i][0] not in _LEAVES:
                stack.extend(self.nodes[i][1:])
        order = sorted(needed)
        frees = _last_reads(self.nodes, order, frozenset(outputs))
        return tuple((i, tuple(frees.get(i, ()))) for i in order)

    def run(self, program: tuple, args: dict, outputs: tuple) -> tuple:
        nodes, values = self.nodes, {}
        for i, free in program:
            values[i] = _node_value(nodes[i], args, values)
            for a in free:                  # a temporary array read for the last time: let it go
                del values[a]
        return tuple(values[i] for i in outputs)


#: the operations that read no node
_LEAVES = ("arg", "num", "nan")
#: what computing one node costs beyond its elements, in elements: its numpy calls and the interpreter's step, ~8 µs
#: against ~1.7 ns an element (measured on the bench's 16,384-GPU plan: the two ways cost alike there)
PER_NODE = 4096


def run_together(calls: list, args: dict) -> list[tuple]:
    """Each kernel's quantities at its own rows: ``calls`` are (kernel, rows) pairs (rows: sorted indices into the
    arrays), ``args`` every parameter by name, its arrays over all rows.  The kernels of one graph run together:
    the rows fall into classes (the rows read by the same kernels), and each class is one pass over the nodes its
    kernels need, at its rows only, each node once however many of them share it (the option combinations of a
    family share most of their nodes; the uneven splits' own nodes run only at the uneven splits' rows).  Every
    operation is elementwise, so a node's value at a row is what a call over any rows holding it gives
    (:meth:`Kernel.__call__`), the same floats; a quantity is its array at the kernel's rows, or the scalar."""
    out: list = [None] * len(calls)
    groups: dict = {}
    for k, (kernel, _rows) in enumerate(calls):
        groups.setdefault(id(kernel._graph), (kernel._graph, []))[1].append(k)
    for graph, members in groups.values():
        got = _run_graph(graph, [calls[k] for k in members], args)
        for k, quantities in zip(members, got):
            out[k] = quantities
    return out


def _row_classes(calls: list, n: int) -> tuple[list, list]:
    """(the rows of each class, each kernel's classes as bits): a class is the rows the same kernels read; None
    past 62 sets of rows."""
    sets: dict = {}
    for k, (_kernel, rows) in enumerate(calls):
        sets.setdefault(rows.tobytes(), (rows, []))[1].append(k)
    if len(sets) > 62:                              # a row's sets as the bits of one int64: too many for one
        return None
    code = np.zeros(n, dtype=np.int64)
    for s, (rows, _ks) in enumerate(sets.values()):
        code[rows] |= 1 << s
    codes, of_row = np.unique(code, return_inverse=True)
    of_row = np.ravel(of_row)
    classes, bits = [], [0] * len(calls)
    for c, signature in enumerate(codes.tolist()):
        if not signature:                           # rows no kernel reads
            continue
        bit = 1 << len(classes)
        classes.append(np.flatnonzero(of_row == c))
        for s, (_rows, ks) in enumerate(sets.values()):
            if signature >> s & 1:
                for k in ks:
                    bits[k] |= bit
    return classes, bits


def _run_graph(graph: "Graph", calls: list, args: dict) -> list[tuple]:
    nodes = graph.nodes
    named = {i: _float(args[name]) for i, name in enumerate(graph.params) if name in args}
    n = next((v.shape[0] for v in named.values() if np.ndim(v) == 1), None)
    found = _row_classes(calls, n) if n is not None else None
    classes, bits = found if found is not None else ([None], [1] * len(calls))
    # each node's classes: those of the kernels reading it as a quantity, handed down to what it reads
    mask: dict = {}
    for (kernel, _rows), bit in zip(calls, bits):
        for o in kernel._outputs:
            mask[o] = mask.get(o, 0) | bit
    for i in range(len(nodes) - 1, -1, -1):
        m = mask.get(i)
        if m is not None and nodes[i][0] not in _LEAVES:
            for a in nodes[i][1:]:
                mask[a] = mask.get(a, 0) | m
    order = sorted(mask)
    passes = [(None, order)]
    if found is not None:
        codes = np.array([mask[i] for i in order], dtype=np.int64)
        merged = _merged([(rows, (codes >> c & 1).astype(bool)) for c, rows in enumerate(classes)])
        if sum(_cost(p) for p in merged) < len(order) * (n + PER_NODE):
            positions = np.asarray(order)
            passes = [(rows, positions[needs].tolist()) for rows, needs in merged]
    outputs = {o for kernel, _rows in calls for o in kernel._outputs}
    scalars: dict = {}
    arrays: dict = {}
    for rows, here in passes:
        at = named if rows is None else {i: (v[rows] if np.ndim(v) == 1 else v) for i, v in named.items()}
        for i, value in _run_class(graph, here, at, outputs):
            if np.ndim(value) == 0:
                scalars[i] = value
            elif rows is None:
                arrays[i] = value
            else:
                if i not in arrays:
                    arrays[i] = np.empty(n, dtype=value.dtype)
                arrays[i][rows] = value
    return [tuple(scalars[o] if o in scalars else arrays[o][rows] for o in kernel._outputs)
            for kernel, rows in calls]


def _cost(part: tuple) -> int:
    """A pass over ``part`` = (its rows, the nodes it needs as a mask over the program): its nodes' elements and
    a fixed cost per node (:data:`PER_NODE` elements' worth)."""
    rows, needs = part
    return int(np.count_nonzero(needs)) * (rows.size + PER_NODE)


def _merged(parts: list) -> list:
    """Classes of rows joined while joining two lowers the cost: small classes needing mostly the same nodes
    cost less as one pass (each node's fixed cost once) than apart."""
    parts = list(parts)
    while len(parts) > 1:
        best = None
        for a in range(len(parts)):
            for b in range(a + 1, len(parts)):
                joined = (parts[a][0].size + parts[b][0].size, parts[a][1] | parts[b][1])
                gain = _cost(parts[a]) + _cost(parts[b]) - int(np.count_nonzero(joined[1])) * (joined[0] + PER_NODE)
                if gain > 0 and (best is None or gain > best[0]):
                    best = (gain, a, b)
        if best is None:
            break
        _, a, b = best
        joined = (np.sort(np.concatenate([parts[a][0], parts[b][0]])), parts[a][1] | parts[b][1])
        parts = [p for k, p in enumerate(parts) if k not in (a, b)] + [joined]
    return parts


def _run_class(graph: "Graph", here: list, args: dict, outputs: set):
    """The nodes ``here`` (sorted) in order, each let go after its last reader; yields (node, value) for each
    of ``outputs`` as it is computed."""
    nodes = graph.nodes
    for i in here:
        if nodes[i][0] == "arg" and nodes[i][1] not in args:
            raise TypeError(f"run_together: no value for the parameter {graph.params[nodes[i][1]]!r}")
    frees = _last_reads(nodes, here)
    read = {a for free in frees.values() for a in free}
    values: dict = {}
    for i in here:
        value = _node_value(nodes[i], args, values)
        if i in outputs:
            yield i, value
        if i in read:
            values[i] = value
        for a in frees.get(i, ()):          # read for the last time: let it go
            del values[a]


def _node_value(node: tuple, args: dict, values: dict):
    """One node's value: a parameter's (by index), a number, NaN, or its operation on the values it reads."""
    op = node[0]
    if op == "arg":
        return args[node[1]]
    if op == "num":
        return float(node[1])
    if op == "nan":
        return math.nan
    return OPS[op][0](*[values[a] for a in node[1:]])


def _last_reads(nodes: tuple, order: list, keep: frozenset = frozenset()) -> dict:
    """node → the nodes (but ``keep``) it is the last in ``order`` to read: where each may be let go."""
    last: dict = {}
    for i in order:
        if nodes[i][0] not in _LEAVES:
            for a in nodes[i][1:]:
                last[a] = i
    frees: dict = {}
    for a, i in last.items():
        if a not in keep:
            frees.setdefault(i, []).append(a)
    return frees


def _check_nodes(params: tuple, nodes: tuple, what: str) -> None:
    """Every node a known operation with its arity, its arguments earlier nodes (so: no cycle)."""
    if len(nodes) > MAX_NODES:
        raise InputError(f"{what}: {len(nodes):,} nodes is too many; at most {MAX_NODES:,}")
    for i, node in enumerate(nodes):
        where = f"{what}: node {i}"
        if not node or not isinstance(node[0], str):
            raise InputError(f"{where}: a node is [operation, arguments...]")
        op, args = node[0], node[1:]
        if op not in OPS:
            raise InputError(f"{where}: unknown operation {op!r}; allowed: {', '.join(OPS)}")
        _, least, most = OPS[op]
        if len(args) < least or (most is not None and len(args) > most):
            raise InputError(f"{where}: {op} takes {least}" + ("" if most == least else
                             f" to {most}" if most is not None else " or more") + f" arguments, got {len(args)}")
        if op == "num":
            value = args[0]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise InputError(f"{where}: num takes one finite number")
            continue
        if op == "arg":
            if isinstance(args[0], bool) or not isinstance(args[0], int) or not 0 <= args[0] < len(params):
                raise InputError(f"{where}: arg takes a parameter index below {len(params)}")
            continue
        for a in args:
            if isinstance(a, bool) or not isinstance(a, int) or not 0 <= a < i:
                raise InputError(f"{where}: arguments are indices of earlier nodes (0 to {i - 1}), got {a!r}")


def _fail(what: str, text: str):
    raise InputError(f"{what}: {text}")


def _strings(value, what: str, pattern: str, most: int) -> tuple:
    if not isinstance(value, list) or len(value) > most or not all(
            isinstance(x, str) and re.fullmatch(pattern, x) for x in value):
        _fail(what, f"a list of at most {most} names ({pattern})")
    return tuple(value)


def _whole(value, what: str, least: int, most: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= most:
        _fail(what, f"a whole number from {least} to {most}")
    return value


def from_data(data, what: str) -> dict:
    """A kernel file's data → {(options, run bytes): Kernel}, every field checked by the rules of
    ``symcomm/schema/kernels.schema.json`` (here, by hand: jsonschema's import alone would cost a quarter of
    the planner's start; ``tests/numbers/test_kernels.py`` holds the two to the same verdicts) and every node by
    :func:`_check_nodes`."""
    if not isinstance(data, dict) or set(data) != {"format", "family", "params", "nodes", "kernels"}:
        _fail(what, "the top level is an object of exactly format, family, params, nodes, kernels")
    if data["format"] != FORMAT:
        _fail(what, f"format {data['format']!r} is not {FORMAT!r}; regenerate with python -m symcomm.tools.codegen")
    if not isinstance(data["family"], dict):
        _fail(f"{what}: field 'family'", "an object")
    params = _strings(data["params"], f"{what}: field 'params'", _NAME, 256)
    nodes = data["nodes"]
    if not isinstance(nodes, list) or not all(isinstance(n, list) for n in nodes):
        _fail(f"{what}: field 'nodes'", "a list of nodes, each a list [operation, arguments...]")
    graph = Graph(params, tuple(tuple(n) for n in nodes), what)
    kernels = data["kernels"]
    if not isinstance(kernels, list) or len(kernels) > 4096:
        _fail(f"{what}: field 'kernels'", "a list of at most 4096 kernels")
    out = {}
    for k, kernel in enumerate(kernels):
        where = f"{what}: field 'kernels/{k}'"
        if not isinstance(kernel, dict) or set(kernel) != {"options", "run_bytes", "quantities", "outputs"}:
            _fail(where, "an object of exactly options, run_bytes, quantities, outputs")
        pairs = kernel["options"]
        if not isinstance(pairs, list) or len(pairs) > 32 or not all(
                isinstance(p, list) and len(p) == 2 and isinstance(p[0], str) and len(p[0]) <= 40
                and _option_value(p[1]) for p in pairs):
            _fail(f"{where}/options", "a list of at most 32 [option, value] pairs: a name, and a string, "
                                      "a boolean, an integer or null")
        run_bytes = _whole(kernel["run_bytes"], f"{where}/run_bytes", 1, 16)
        names = _strings(kernel["quantities"], f"{where}/quantities", r"[a-z_]{1,40}", 64)
        outputs = kernel["outputs"]
        if not isinstance(outputs, list) or len(outputs) != len(names) or not all(
                not isinstance(o, bool) and isinstance(o, int) and 0 <= o < len(graph.nodes) for o in outputs):
            _fail(f"{where}/outputs", "one node index per quantity")
        outputs = tuple(outputs)
        options = tuple((a, b) for a, b in pairs)
        out[(options, run_bytes)] = Kernel(names, graph, outputs)
    return out


def _option_value(value) -> bool:
    """A kernel key's value as symcomm.training.settings.RunSetting.key types it: a flag (boolean), a
    stage (integer), a choice (string), or null ("as the framework does")."""
    return value is None or isinstance(value, (bool, int)) or (isinstance(value, str) and len(value) <= 40)


def _reachable_params(graph: Graph, outputs: tuple) -> set:
    found, seen, stack = set(), set(), list(outputs)
    while stack:
        i = stack.pop()
        if i in seen:
            continue
        seen.add(i)
        node = graph.nodes[i]
        if node[0] == "arg":
            found.add(node[1])
        elif node[0] not in ("num", "nan"):
            stack.extend(node[1:])
    return found


def _load(path, what: str):
    """A JSON file through symcomm's reader: regular file, size cap, UTF-8, no NaN/Infinity, depth cap."""
    from ..base.files import read_capped
    from ..base.inputs import loads

    raw = read_capped(path, MAX_BYTES, what)
    where = f"{what} {str(path)!r}"
    try:
        return loads(raw.decode("utf-8"), where), where
    except UnicodeDecodeError:
        raise InputError(f"{where}: not UTF-8 text") from None


def read(path, what: str = "kernel file") -> dict:
    """A kernel file (shipped or not): size-capped, strict JSON, every field and every node checked."""
    data, where = _load(path, what)
    return from_data(data, where)


@functools.lru_cache(maxsize=None)
def _index() -> dict:
    data, where = _load(resources.files("symcomm.planner").joinpath(FOLDER, "index.json"), "symcomm/planner/kerneldata")
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("families"), list) \
            or not isinstance(data.get("stages"), list):
        _fail(where, f"an object of format {FORMAT!r}, families and stages; regenerate with python -m symcomm.tools.codegen")
    return data


@functools.lru_cache(maxsize=None)
def _family(name: str) -> dict:
    return read(resources.files("symcomm.planner").joinpath(FOLDER, f"{name}.json"), "symcomm/planner/kerneldata")


def family_key(options: tuple, run_bytes: int) -> tuple:
    """What selects a kernel file: (run bytes, gated, tied, moe, embeddings, cp algorithm, attention, q_width,
    precision); attention, q_width and precision are keyed only away from their defaults (mha, h, bf16)."""
    o = dict(options)
    return (int(run_bytes), o.get("gated"), o.get("tied"), o.get("moe"), o.get("embeddings"), o.get("cp"),
            o.get("attention", "mha"), o.get("q_width", "h"), o.get("precision", "bf16"))


def shipped(options: tuple, run_bytes: int) -> Kernel | None:
    """The shipped kernel of this option combination (``symcomm.planner.option_key``), or None."""
    key = list(family_key(options, run_bytes))
    name = next((f["file"] for f in _index()["families"] if f["key"] == key), None)
    if name is None:
        return None
    return _family(name).get((tuple(options), int(run_bytes)))


def stage(axis: str, stages: int, embeddings: bool) -> str | None:
    """The busiest GPU's pipeline stage for this axis (symcomm.training.terms.busiest_stage), as shipped."""
    for entry in _index()["stages"]:
        if entry["embeddings"] == bool(embeddings) and entry["axis"] == axis:
            return entry["stages"][min(int(stages), 3) - 1]
    return None
