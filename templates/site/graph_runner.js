// The runner of the page's step model (symcomm.views.site.step_script puts it at the head of
// formulas/hybrid__step.js, before the model's graph as data).  The graph is one list of nodes, each an
// operation applied to earlier nodes (symcomm.numbers.graphs: the planner's kernel format), shared by every
// hybrid variant and gated value; a function is its quantities' output nodes.  Each function runs only the
// nodes its outputs read, in order, in floats, as symcomm.numbers.kernels runs the planner's kernels.  Nothing
// read is run as code: an operation's name is looked up in OPS, and an unknown one throws.
"use strict";

/** A named argument as a Number (a BigInt, a Number or a decimal string). */
function _arg(args, name) {
  const x = args[name];
  if (x === undefined) throw new TypeError(`missing argument ${name}`);
  const value = typeof x === "bigint" ? Number(x) : typeof x === "object" && x !== null ? Number(x.num) / Number(x.den) : Number(x);
  if (!Number.isFinite(value)) throw new RangeError(`${name}=${x} is not a finite number`);
  return value;
}

const fold = (f) => (...xs) => xs.reduce((a, b) => f(a, b));
/** operation → its function on the values of its argument nodes ("arg", "num", "nan" are the leaves). */
const OPS = {
  add: fold((a, b) => a + b), mul: fold((a, b) => a * b), div: (a, b) => a / b, pow: (a, b) => Math.pow(a, b),
  max: fold((a, b) => Math.max(a, b)), min: fold((a, b) => Math.min(a, b)), where: (c, a, b) => (c ? a : b),
  lt: (a, b) => a < b, le: (a, b) => a <= b, gt: (a, b) => a > b, ge: (a, b) => a >= b,
  eq: (a, b) => a === b, ne: (a, b) => a !== b,
  and: fold((a, b) => a && b), or: fold((a, b) => a || b), not: (a) => !a,
  ceil: Math.ceil, floor: Math.floor, log2: Math.log2, ceil_log2: (x) => Math.ceil(Math.log2(x)),
};
const LEAVES = new Set(["arg", "num", "nan"]);

/** The nodes the outputs read, in order (an earlier node first). */
function reachable(nodes, outputs) {
  const seen = new Set(), stack = [...outputs];
  while (stack.length) {
    const i = stack.pop();
    if (seen.has(i)) continue;
    seen.add(i);
    if (!LEAVES.has(nodes[i][0])) stack.push(...nodes[i].slice(1));
  }
  return [...seen].sort((a, b) => a - b);
}

/** The function of one combination: {name: value} → {quantity: Number}; its program found on the first call. */
function runner(graph, quantities, outputs) {
  const { params, nodes } = graph;
  let program = null, read = null;
  return function (args = {}) {
    if (program === null) {
      program = reachable(nodes, outputs);
      for (const i of program) {
        const op = nodes[i][0];
        if (!LEAVES.has(op) && !Object.prototype.hasOwnProperty.call(OPS, op)) throw new Error(`unknown operation ${op}`);
      }
      // every parameter the outputs read, in name order, checked before any arithmetic (as a printed function does)
      read = program.filter((i) => nodes[i][0] === "arg").map((i) => nodes[i][1]).sort((a, b) => params[a] < params[b] ? -1 : 1);
    }
    const given = {};
    for (const p of read) given[p] = _arg(args, params[p]);
    const values = new Array(nodes.length);
    for (const i of program) {
      const [op, ...of] = nodes[i];
      values[i] = op === "arg" ? given[of[0]] : op === "num" ? of[0] : op === "nan" ? NaN : OPS[op](...of.map((j) => values[j]));
    }
    const out = {};
    quantities.forEach((q, k) => { out[q] = values[outputs[k]]; });
    return out;
  };
}
