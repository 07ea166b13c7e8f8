"""``--format javascript``: a standalone ES module, one exported function per formula.

The module imports nothing and runs in a browser (``<script type="module">``) and in node
(save it as ``.mjs``, or beside a ``package.json`` that says ``"type": "module"``).  Each
function takes one object of named values, named by the symbols' CLI names, e.g.
``all_reduce__ring__send({N: 8n, M: 1024n})``; names it does not use are ignored, so one
object of values can serve every function.

**Exact counts.**  A formula without a time symbol (α, β, γ, α_inter, β_inter, or the step
model's peak, η, HBM bandwidth, κ) is a count: ``send``, ``recv``, ``total``, the α/β/γ
coefficients, the extras.  It is computed exactly, as :func:`symcomm.numbers.evaluation.exact` does:

* every argument is read as an exact value, as ``symcomm eval`` would read it typed (a port of
  :func:`symcomm.base.inputs.parse_fraction`: the same grammar, bounds and messages): a ``BigInt`` as
  its digits; a ``Number`` as it prints (``1.25`` is 5/4, ``0.1`` is 1/10; an integer above
  2⁵³ − 1 is refused with a ``RangeError``, since it may already be rounded); a string by the
  command line's grammar (``"123"``, ``"3/4"``, ``"2**30"``, ``"2.5e3"``); or ``{num, den}`` with
  ``BigInt`` fields (a result of another function) as ``"num/den"``;
* every intermediate value is a ``BigInt`` or an exact rational (a ``BigInt`` numerator and
  denominator in lowest terms): sums, products, quotients and integer powers through the
  module's helpers ``_add``, ``_mul``, ``_pow``, ``_q``; comparisons (Piecewise, Min, Max),
  ceiling and floor exact; ⌈log₂n⌉ the bit length of n − 1 (``_ceil_log2``); log₂ of a power of
  two exact (``_log2``; any other log₂ gives a float ``Number``, as the Python export does);
  the set bits of 0 … n − 1 (``_ones_below``) exact;
* the result is a ``BigInt`` when the value is whole, else a frozen ``{num, den}`` of
  ``BigInt`` s in lowest terms, ``den`` > 1 (its ``toString()`` is ``"num/den"``).

**Float times.**  A formula with a time symbol (the quantity ``time``) gives a ``Number``
(seconds).  The time symbols are read as ``Number`` s and only the arithmetic that touches them
is floating point: every sub-expression free of them (a coefficient: messages, elements moved
or reduced, a condition of a Piecewise) is computed exactly, as a count is, and converted to a
``Number`` once (a sum's or a product's time-free terms or factors are gathered into one exact
value first).  So ⌈log₂(N + 1)⌉ at N = 2⁷⁰ is 71, not the 70 a double's N + 1 = N would give,
and a time is within a few rounding errors of the exact value.

**Requirements.**  Each function checks the requirements of :attr:`Formula.checks` whose
symbols it takes (a power of two, a multiple of N, a divisible layout, ...) on the exact
values of its arguments, before computing, and throws a ``RangeError``
whose message is the one ``symcomm eval`` prints for the same values: each rule
(:mod:`symcomm.core.rules`) travels as data, its message with ``{x}``, ``{y}`` filled in by ``_need``, its
kind's test written from :data:`symcomm.core.rules.KINDS`.

**Arguments.**  Each argument is checked first, as the command line checks it: more than 200
characters, not a number (``NaN``, ``"abc"``), a magnitude above 2¹⁰⁰, a nonzero one below
10⁻³⁰, a non-whole value for an integer symbol, or one below its least (N ≥ 2 for a collective,
1 for another whole number, 0 for α, β, ...) throws a ``RangeError`` with the one line ``symcomm
eval`` prints for that value typed as ``String(x)``; a boolean, ``null``, an array or another
object throws a ``TypeError`` with the same words; a missing argument a ``TypeError``.  (G is
named ``G`` only, where the command line also says ``gpus_per_node``.)
"""

from __future__ import annotations

import json
import re

import sympy as sp
from sympy.printing.jscode import JavascriptCodePrinter

from ...base import inputs as _inputs
from ...core import rules as _rules
from ...core import symbols as S
from ...core.rewrite import free_symbols
from ...training.subjects import COLLECTIVE_TIME_CONVENTION
from . import QUANTITIES, Format, Formula
from ...presets.hardware_values import TYPED_HARDWARE

#: the symbols that make a formula a time, computed in floats (the rest are counts, exact)
FLOAT_SYMBOLS = frozenset(S.TIME_SYMBOLS) | frozenset(
    S.SYMBOLS[name].symbol for name in TYPED_HARDWARE if name in S.SYMBOLS)


def is_time(f: Formula) -> bool:
    """True when ``f`` is computed in floats (it has a time symbol), False for an exact count."""
    return bool(free_symbols(f.expr) & FLOAT_SYMBOLS)


def _piecewise(printer, expr) -> str:
    """One line: (c1 ? e1 : (c2 ? e2 : e3)); the last branch must be the default."""
    *pairs, (last, cond) = expr.args
    if cond != sp.true:
        raise ValueError("a Piecewise without a default branch cannot be exported to JavaScript")
    text = printer._print(last)
    for e, c in reversed(pairs):
        text = f"(({printer._print(c)}) ? ({printer._print(e)}) : ({text}))"
    return text


#: the code of each subexpression printed in this process, per printer class and settings: the page's scripts print
#: the 31 hybrid variants' formulas, mostly the same subtrees, each script with printers of its own
_PRINTED: dict[tuple, dict] = {}
_PRINTED_MOST = 200_000


class _Remembered(JavascriptCodePrinter):
    """A code printer that prints each subexpression once per process: its text is a pure function of the
    expression, the keyword arguments and the settings, unless printing it declared a number constant or noted an
    unsupported part (the printer's own state, which ``doprint`` reads): such a text is printed afresh each time."""

    def doprint(self, expr, assign_to=None):
        # a whole expression printed before: its code again (SymPy's doprint walks the whole tree first)
        if assign_to is not None or not isinstance(expr, sp.Basic):
            return super().doprint(expr, assign_to)
        return self._remembered(expr, {"doprint": True}, lambda e, doprint: super(_Remembered, self).doprint(e),
                                self)

    # CodePrinter.doprint's pass unwrapping re(UnevaluatedExpr) rebuilds the whole tree (replace) for every formula;
    # the exported formulas hold neither (tests/views/test_js_memo.py), as numbers.codeprint says
    _handle_UnevaluatedExpr = staticmethod(lambda expr: expr)

    def _remembered(self, expr, kwargs, printing, *printers):
        try:
            key = (expr, tuple(sorted(kwargs.items())))
            memo = _PRINTED.setdefault((type(self), repr(sorted(self._settings.items(), key=str))), {})
            text = memo.get(key)
        except TypeError:          # an unhashable part: printed as it comes
            return printing(expr, **kwargs)
        if text is None:
            text = printing(expr, **kwargs)
            if not any(getattr(p, "_number_symbols", None) or getattr(p, "_not_supported", None) for p in printers):
                if len(memo) >= _PRINTED_MOST:
                    memo.clear()
                memo[key] = text
        return text


class ExactJavascriptPrinter(_Remembered):
    """JavaScript that keeps every value exact: ``BigInt`` s and rationals through the module's helpers.

    Every operation is a helper call (JavaScript has no operator overloading): an integer
    prints as a ``BigInt`` literal (``3n``), 3/4 as ``_q(3n, 4n)``, a sum as ``_add(...)``, a
    product as ``_mul(...)``, a power as ``_pow(base, exponent)`` (an integer exponent,
    possibly symbolic), a comparison as ``(_cmp(a, b) < 0)``.  Anything else is refused at
    export time, not at run time."""

    ceil_log2_function = "_ceil_log2"
    ones_below_function = "_ones_below"
    _OPS = {"==": "===", "!=": "!==", "<": "<", "<=": "<=", ">": ">", ">=": ">="}

    def _print(self, expr, **kwargs):
        return self._remembered(expr, kwargs, super()._print, self)

    def _calls(self, name: str, args) -> str:
        return f"{name}({', '.join(self._print(a) for a in args)})"

    def _print_Integer(self, expr):
        return f"{expr.p}n"

    def _print_Rational(self, expr):
        return f"_q({expr.p}n, {expr.q}n)"

    def _print_Add(self, expr, order=None):
        return self._calls("_add", expr.args)

    def _print_Mul(self, expr):
        return self._calls("_mul", expr.args)

    def _print_Pow(self, expr):
        if expr.exp.is_Rational and not expr.exp.is_Integer:
            raise ValueError(f"{expr}: a fractional power cannot be exported exactly to JavaScript")
        return self._calls("_pow", (expr.base, expr.exp))

    def _print_Relational(self, expr):
        return f"(_cmp({self._print(expr.lhs)}, {self._print(expr.rhs)}) {self._OPS[expr.rel_op]} 0)"

    def _print_Min(self, expr):
        return self._calls("_min", expr.args)

    def _print_Max(self, expr):
        return self._calls("_max", expr.args)

    def _print_ceiling(self, expr):
        return self._calls("_ceil", expr.args)

    def _print_floor(self, expr):
        return self._calls("_floor", expr.args)

    def _print_log2(self, expr):
        return self._calls("_log2", expr.args)

    def _print_Piecewise(self, expr):
        return _piecewise(self, expr)

    def _print_Function(self, expr):
        raise ValueError(f"{expr.func}: no exact JavaScript for this function")

    def _print_Float(self, expr):
        raise ValueError(f"{expr}: a float constant has no exact JavaScript form")

    def _print_not_supported(self, expr):
        raise ValueError(f"{type(expr).__name__} ({expr}): no exact JavaScript for it")

    _print_NaN = _print_Infinity = _print_NegativeInfinity = _print_ComplexInfinity = _print_not_supported


class FloatJavascriptPrinter(_Remembered):
    """SymPy's JavaScript printer over ``Number`` s for the parts of a time that hold a time symbol;
    every sub-expression free of them (a coefficient: a count) is printed by the exact printer and
    converted to a ``Number`` once, by ``_float``.  A sum's or a product's time-free terms or factors
    are gathered into one exact sum or product first, so that a coefficient is one exact value."""

    def __init__(self, exact: ExactJavascriptPrinter, settings=None):
        super().__init__(settings or {})
        self.exact = exact

    def _print(self, expr, **kwargs):
        # the text depends on the exact printer too, which has no settings of its own (ExactJavascriptPrinter())
        return self._remembered(expr, kwargs, self._printed, self, self.exact)

    def _printed(self, expr, **kwargs):
        if isinstance(expr, sp.Basic) and not (free_symbols(expr) & FLOAT_SYMBOLS):
            if not isinstance(expr, sp.Expr):
                return self.exact._print(expr)           # a condition: an exact comparison
            if expr.is_Integer and abs(expr.p) < 2 ** 53:
                return str(expr.p)
            return f"_float({self.exact._print(expr)})"
        return super()._print(expr, **kwargs)

    def _split(self, args):
        free = [a for a in args if not (free_symbols(a) & FLOAT_SYMBOLS)]
        timed = [a for a in args if free_symbols(a) & FLOAT_SYMBOLS]
        return free, timed

    def _print_Add(self, expr, order=None):
        free, timed = self._split(expr.args)
        parts = [self._print(a) for a in timed]
        if free:
            parts.append(self._print(sp.Add(*free, evaluate=False) if len(free) > 1 else free[0]))
        return "(" + " + ".join(parts) + ")"

    def _print_Mul(self, expr):
        free, timed = self._split(expr.args)
        parts = [self._print(a) for a in timed]
        if free:
            parts.insert(0, self._print(sp.Mul(*free, evaluate=False) if len(free) > 1 else free[0]))
        return "(" + "*".join(parts) + ")"

    def _print_Piecewise(self, expr):
        return _piecewise(self, expr)


_HELPERS = r"""
// ---- exact arithmetic: a value is a BigInt, or a _Q (BigInt numerator and denominator in lowest
// terms, denominator > 1); a Number (a float) only after a log2 of a non-power of two, and then
// everything it touches is computed in floats.

class _Q {
  constructor(n, d) { this.n = n; this.d = d; }
}

function _gcd(a, b) {
  if (a < 0n) a = -a;
  if (b < 0n) b = -b;
  while (b !== 0n) [a, b] = [b, a % b];
  return a;
}

/** n/d exactly: a BigInt when whole, else a _Q in lowest terms. */
function _q(n, d) {
  if (d === 0n) throw new RangeError("division by zero");
  if (d < 0n) { n = -n; d = -d; }
  if (d === 1n) return n;
  const g = _gcd(n, d);
  if (g !== 1n) { n /= g; d /= g; }
  return d === 1n ? n : new _Q(n, d);
}

const _isFloat = (xs) => xs.some((x) => typeof x === "number");
const _float = (x) => (typeof x === "number" ? x : typeof x === "bigint" ? Number(x) : Number(x.n) / Number(x.d));

function _add(...xs) {
  if (_isFloat(xs)) return xs.reduce((s, x) => s + _float(x), 0);
  let n = 0n, d = 1n;
  for (const x of xs) {
    if (typeof x === "bigint") n += x * d;
    else { n = n * x.d + x.n * d; d *= x.d; }
  }
  return _q(n, d);
}

function _mul(...xs) {
  if (_isFloat(xs)) return xs.reduce((s, x) => s * _float(x), 1);
  let n = 1n, d = 1n;
  for (const x of xs) {
    if (typeof x === "bigint") n *= x;
    else { n *= x.n; d *= x.d; }
  }
  return _q(n, d);
}

/** x ** e for an integer e (a BigInt); 0 ** (negative) is a division by zero. */
function _pow(x, e) {
  if (typeof x === "number" || typeof e === "number") return Math.pow(_float(x), _float(e));
  if (typeof e !== "bigint") throw new RangeError(`a power with the exponent ${_str(e)} is not exact`);
  const n = typeof x === "bigint" ? x : x.n, d = typeof x === "bigint" ? 1n : x.d;
  return e >= 0n ? _q(n ** e, d ** e) : _q(d ** -e, n ** -e);
}

/** -1, 0 or 1 as a < b, a = b, a > b. */
function _cmp(a, b) {
  if (typeof a === "number" || typeof b === "number") {
    const x = _float(a), y = _float(b);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  const l = (typeof a === "bigint" ? a : a.n) * (typeof b === "bigint" ? 1n : b.d);
  const r = (typeof b === "bigint" ? b : b.n) * (typeof a === "bigint" ? 1n : a.d);
  return l < r ? -1 : l > r ? 1 : 0;
}

const _min = (...xs) => xs.reduce((m, x) => (_cmp(x, m) < 0 ? x : m));
const _max = (...xs) => xs.reduce((m, x) => (_cmp(x, m) > 0 ? x : m));

function _floor(x) {
  if (typeof x === "number") return Math.floor(x);
  if (typeof x === "bigint") return x;
  const q = x.n / x.d;   // BigInt division truncates toward zero
  return x.n < 0n ? q - 1n : q;   // x is not whole here
}

const _ceil = (x) => (typeof x === "number" ? Math.ceil(x) : -_floor(_mul(-1n, x)));

const _bits = (n) => (n === 0n ? 0n : BigInt(n.toString(2).length));

/** ceil(log2(x)) for x > 0, exact: the bit length of ceil(x) - 1 for x >= 1. */
function _ceil_log2(x) {
  if (typeof x === "number") return Math.ceil(Math.log2(x));
  if (_cmp(x, 0n) <= 0) throw new RangeError(`ceil(log2(${_str(x)})) is not defined`);
  if (_cmp(x, 1n) >= 0) return _bits(_ceil(x) - 1n);
  return -(_bits(_floor(_q(_den(x), _num(x)))) - 1n);
}

/** log2(x): exact (a BigInt) when x is 2^k or 1/2^k, else a float. */
function _log2(x) {
  if (typeof x !== "number" && _cmp(x, 0n) > 0) {
    const n = _num(x), d = _den(x);
    if ((n & (n - 1n)) === 0n && (d & (d - 1n)) === 0n) return _bits(n) - _bits(d);
  }
  return Math.log2(_float(x));
}

/** The set bits of 0, 1, ..., x - 1 summed (x a whole number >= 0), exact. */
function _ones_below(x) {
  const n = typeof x === "bigint" ? x : typeof x === "number" ? BigInt(Math.trunc(x)) : x.n / x.d;
  let total = 0n;
  for (let bit = 1n; bit < n; bit *= 2n) {
    const period = 2n * bit, rest = (n % period) - bit;
    total += (n / period) * bit + (rest > 0n ? rest : 0n);
  }
  return total;
}

const _num = (x) => (typeof x === "bigint" ? x : x.n);
const _den = (x) => (typeof x === "bigint" ? 1n : x.d);
const _str = (x) => (x instanceof _Q ? `${x.n}/${x.d}` : String(x));

/** The result: a BigInt, a frozen {num, den} (a non-whole rational), or a Number. */
function _out(x) {
  if (!(x instanceof _Q)) return x;
  return Object.freeze({ num: x.n, den: x.d, toString() { return `${this.num}/${this.den}`; } });
}

// ---- arguments

function _value(args, name) {
  if (args === null || typeof args !== "object") {
    throw new TypeError("pass one object of named values, e.g. {N: 8n, M: 1024n}");
  }
  const x = args[name];
  if (x === undefined) throw new TypeError(`missing argument ${name}`);
  return x;
}

// ---- arguments, read as the command line reads them: a port of symcomm.base.inputs.parse_fraction
// (the same grammar, bounds and one-line messages); a value is judged as it would be typed:
// a BigInt or a Number as String() writes it, {num, den} as "num/den", text as it is.

const _MAX_TEXT = 200, _MAX_FACTORS = 4, _MAX_VALUE = 2n ** 100n, _LOG10_MAX = 100 * Math.log10(2);
const _MIN_VALUE = _q(1n, 10n ** 30n);
const _EXAMPLES = __EXAMPLES__;
const _WS = "[ \\t\\n\\r\\f\\v]*";
const _FACTOR = new RegExp(`^${_WS}(?:([0-9]+)${_WS}(?:\\*\\*|\\^)${_WS}([0-9]+)|(__DECIMAL__))${_WS}$`);
const _DEC_PARTS = /^([0-9]*)(?:\.([0-9]*))?(?:[eE]([-+]?[0-9]+))?$/;

/** Python's len(): code points, not UTF-16 units. */
function _len(text) {
  let n = 0;
  for (const _ of text) n += 1;
  return n;
}

/** Python's repr() of a str, as the command line quotes what it could not read. */
function _repr(text) {
  const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
  const body = text.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/\r/g, "\\r").replace(/\t/g, "\\t");
  return quote + (quote === "'" ? body.replace(/'/g, "\\'") : body) + quote;
}

const _cut = (text) => (_len(text) <= 40 ? text : [...text].slice(0, 37).join("") + "...");
const _short = (text) => _cut(text.trim());
const _notANumber = (key, text) =>
  new RangeError(`${key}=${_repr(_cut(text))} is not a number; ${key} takes a number written in ASCII (${_EXAMPLES}, 5e-6)`);
const _strip0 = (digits) => digits.replace(/^0+/, "");

/** One factor: [exact value, estimated log10 of its magnitude], bounded before computing. */
function _factor(key, text, piece) {
  const m = _FACTOR.exec(piece);
  if (m === null) throw _notANumber(key, text);
  if (m[1] !== undefined) {
    if (_strip0(m[1]).length > 40 || _strip0(m[2]).length > 6) return [0n, Infinity];
    const base = BigInt(m[1]), exp = BigInt(m[2]);
    if (base === 0n || base === 1n || exp === 0n) return [base === 0n || base === 1n ? base ** exp : 1n, 0];
    const size = Number(exp) * Math.log10(Number(base));
    if (size > _LOG10_MAX + 1) return [0n, Infinity];
    return [base ** exp, size];
  }
  const parts = _DEC_PARTS.exec(m[3]);
  const whole = parts[1] || "", frac = parts[2] || "", exp = parts[3] || "0";
  const digits = _strip0(whole + frac);
  if (!digits) return [0n, -Infinity];
  const tiny = () => _tiny(key, text);
  if (digits.length > 60 || _strip0(exp.replace(/^[+-]/, "")).length > 6) {
    if (exp.startsWith("-") && digits.length <= 60) throw tiny();
    return [0n, Infinity];
  }
  const power = Number(exp) - frac.length;
  const size = digits.length - 1 + power;
  if (size > _LOG10_MAX + 1) return [0n, Infinity];
  if (size < -40) throw tiny();
  return [power >= 0 ? BigInt(digits) * 10n ** BigInt(power) : _q(BigInt(digits), 10n ** BigInt(-power)), size];
}

const _tiny = (key, text) => new RangeError(`${key}=${_short(text)} is not allowed: a nonzero number below 1e-30 is ` +
                                            "too small to compute with (write 0 for nothing)");
/** symcomm.base.inputs.parse_fraction: text as an exact value within [least, 2**100], or a RangeError with the
 * command line's words; `bound` is its description of the range ("a whole number from 2 to 2**100"). */
function _parseFraction(key, text, integer, least, bound) {
  const length = _len(text);
  if (length > _MAX_TEXT) throw new RangeError(`${key}: a number of ${length} characters is not allowed: at most ${_MAX_TEXT}`);
  const outOfBounds = () => new RangeError(`${key}=${_short(text)} is not allowed: ${key} takes ${bound}`);
  let body = text.trim(), sign = 1n;
  if (body.startsWith("-")) { sign = -1n; body = body.slice(1); }
  else if (body.startsWith("+")) body = body.slice(1);
  if (!body) throw _notANumber(key, text);
  const halves = body.split("/");
  if (halves.length > 2) throw _notANumber(key, text);
  const values = [], sizes = [];
  for (const half of halves) {
    const factors = half.split(/(?<!\*)\*(?!\*)/);
    if (factors.length > _MAX_FACTORS) throw new RangeError(`${key}=${_repr(text)} is not allowed: at most ${_MAX_FACTORS} factors`);
    let value = 1n, size = 0;
    for (const piece of factors) {
      const [v, s] = _factor(key, text, piece);
      if (s === Infinity || size + s > _LOG10_MAX + 1) throw outOfBounds();
      value = _mul(value, v);
      size = s === -Infinity || size === -Infinity ? -Infinity : size + s;
    }
    values.push(value);
    sizes.push(size);
  }
  let value = values[0];
  if (values.length === 2) {
    if (_cmp(values[1], 0n) === 0) throw new RangeError(`${key}=${_short(text)} is not allowed: division by zero`);
    if (sizes[1] > _LOG10_MAX + 1) throw outOfBounds();
    value = _mul(values[0], _pow(values[1], -1n));
  }
  value = _mul(sign, value);
  if (integer && typeof value !== "bigint") throw new RangeError(`${key}=${_short(text)} is not allowed: ${key} takes a whole number`);
  const magnitude = _cmp(value, 0n) < 0 ? _mul(-1n, value) : value;
  const inRange = (least === null || _cmp(value, least) >= 0) && _cmp(magnitude, _MAX_VALUE) <= 0;
  if (!inRange || (_cmp(value, 0n) !== 0 && _cmp(magnitude, _MIN_VALUE) < 0)) throw inRange ? _tiny(key, text) : outOfBounds();
  return value;
}

/** How a value is written on the command line, or a TypeError (in its words) for what is no number. */
function _typed(name, x) {
  if (typeof x === "bigint") return x.toString();
  if (typeof x === "number") return String(x);
  if (typeof x === "string") return x;
  if (typeof x === "object" && x !== null && typeof x.num === "bigint" && typeof x.den === "bigint") {
    return `${x.num}/${x.den}`;
  }
  let text;
  try {
    text = Array.isArray(x) ? `[${x.slice(0, 6).map(String).join(", ")}${x.length > 6 ? ", ..." : ""}]` : String(x);
  } catch (e) {
    text = typeof x;
  }
  const error = _notANumber(name, text);
  throw new TypeError(error.message);
}

/** The argument `name` as an exact value (a BigInt or a _Q), checked as `symcomm eval` checks it. */
function _exact(args, name, integer, least, bound) {
  const x = _value(args, name);
  const value = _parseFraction(name, _typed(name, x), integer, least, bound);
  if (typeof x === "number" && Number.isInteger(x) && !Number.isSafeInteger(x)) {
    throw new RangeError(`${name}=${x} is a Number above 2^53 and may be rounded: pass a BigInt or a string`);
  }
  return value;
}

/** The argument `name` as a Number (for the times), checked as `symcomm eval` checks it. */
function _number(args, name, integer, least, bound) {
  const x = _value(args, name);
  const value = _parseFraction(name, _typed(name, x), integer, least, bound);
  return typeof x === "number" ? x : _float(value);
}

// ---- requirements: the rules' tests (symcomm.core.rules.KINDS) and their messages, as data

const _whole = (x) => typeof x === "bigint";

const _HOLDS = {
__HOLDS__
};

/** Throws a RangeError with the message `symcomm eval` prints ({x}, {y}: the values) when (x, y) breaks the rule. */
function _need(kind, message, x, y) {
  if (!_HOLDS[kind](x, y)) throw new RangeError(message.replaceAll("{x}", _str(x)).replaceAll("{y}", _str(y)));
}
"""

# the command line's own examples and decimal pattern (symcomm.base.inputs), so that the two readers
# name and accept the same numbers; backslashes doubled for the JavaScript template literal
_HELPERS = _HELPERS.replace("__EXAMPLES__", json.dumps(_inputs._EXAMPLES)).replace(
    "__DECIMAL__", _inputs._DECIMAL.replace("\\", "\\\\")).replace(
    "__HOLDS__", "\n".join(f"  {name}: (x, y) => {kind.javascript}," for name, kind in _rules.KINDS.items()))


#: the names the helpers define at their top level (functions, classes, constants): what a script that shares them
#: (:func:`helpers_script`) hands on, and what a script built with ``helpers=`` takes from it
HELPER_NAMES = tuple(dict.fromkeys(re.findall(r"^(?:function|class)\s+(_\w+)", _HELPERS, re.M) + [
    name for line in _HELPERS.splitlines() if line.startswith("const ")
    for name in re.findall(r"(?:^const |, )(_\w+) = ", line)]))


def _js(text: str) -> str:
    """A JavaScript string literal."""
    return json.dumps(str(text), ensure_ascii=False)


def _comment(text: str) -> str:
    """Text that cannot end a JSDoc comment."""
    return str(text).replace("*/", "* /")


def _check_lines(f: Formula, printer: ExactJavascriptPrinter) -> list[str]:
    """One ``_need(...)`` line per rule whose symbols are all arguments of ``f`` (on their exact values)."""
    return [f"_need({_js(kind)}, {_js(message)}, {', '.join(printer.doprint(e) for e in exprs)});"
            for kind, message, exprs in f.checked_rules()]


def _jsdoc(f: Formula, time: bool) -> str:
    lines = [f"{f.title}: {f.quantity} ({QUANTITIES.get(f.quantity, 'see the source')}).",
             "",
             f"Formula (LaTeX): {f.latex}",
             f"Convention: {f.convention}."]
    if f.requires:
        lines.append(f"Requires: {'; '.join(f.requires)} (checked: a RangeError with the command line's message).")
    if f.options:
        lines.append(f"Options: {', '.join(f'{k}={v}' for k, v in f.options)}.")
    lines.append(f"Source: {f.source}.")
    lines.append("Computed in floating point (a time)." if time else
                 "Computed exactly: a BigInt when whole, else a frozen {num, den} of BigInts.")
    lines.append("")
    lines.append("@param {Object} args - named values; names not listed here are ignored")
    kind = "number|bigint|string" if time else "bigint|number|string|{num: bigint, den: bigint}"
    for info in f.parameters:
        integer = ", integer" if info.symbol.is_integer else ""
        lines.append(f"@param {{{kind}}} args.{info.cli_name} - {info.meaning} [{info.unit}{integer}]")
    lines.append("@returns {number} seconds" if time and f.quantity == "time" else
                 "@returns {number}" if time else "@returns {bigint|{num: bigint, den: bigint}}")
    return "/**\n" + "\n".join((" * " + _comment(line)).rstrip() for line in lines) + "\n */"


def _bounds(f: Formula, info) -> str:
    """The arguments of ``_exact`` / ``_number`` after the name: integer, least, the range in words
    (:func:`symcomm.base.inputs._bound_text`, as ``symcomm eval`` says it)."""
    integer = bool(info.symbol.is_integer)
    least = f.least_of(info)
    return f"{'true' if integer else 'false'}, {least}n, {_js(_inputs._bound_text(integer, least, _inputs.MAX_VALUE))}"


def _function(f: Formula, exact: ExactJavascriptPrinter, floats: FloatJavascriptPrinter, exported: bool = True) -> str:
    time = is_time(f)
    checks = _check_lines(f, exact)
    reads = ", ".join(f"{info.cli_name} = {'_number' if info.symbol in FLOAT_SYMBOLS else '_exact'}(args, "
                      f"{_js(info.cli_name)}, {_bounds(f, info)})" for info in f.parameters)
    body = [f"  const {reads};"] if reads else []
    body += [f"  {line}" for line in checks]
    body.append(f"  return {floats.doprint(f.expr)};" if time else f"  return _out({exact.doprint(f.expr)});")
    # the module's functions carry their JSDoc; the page's script (:func:`to_script`, not exported) none
    head = f"{_jsdoc(f, time)}\nexport function" if exported else "function"
    return f"{head} {f.name}(args = {{}}) {{\n" + "\n".join(body) + "\n}\n"


def to_javascript(chosen: list[Formula]) -> str:
    exact = ExactJavascriptPrinter()
    floats = FloatJavascriptPrinter(exact)
    header = ["/**",
              " * Closed-form communication costs exported by symcomm: a standalone ES module (no imports),",
              " * for a browser (<script type=\"module\">) or node (as .mjs, or with \"type\": \"module\").",
              " *",
              " * One exported function per formula; each takes one object of named values named by symcomm's",
              " * symbol names, e.g. all_reduce__ring__send({N: 8n, M: 1024n}); other names are ignored.",
              f" * Convention: {_comment(COLLECTIVE_TIME_CONVENTION)}.",
              " *",
              " * Counts (every quantity but a time) are exact: arguments are read as BigInt (a BigInt, a safe",
              " * integer Number, a string \"123\" / \"3/4\" / \"1.25\", a {num, den} of BigInts; a non-integer",
              " * Number as the decimal it prints as), every intermediate value is a BigInt or an exact rational,",
              " * and the result is a BigInt when whole, else a frozen {num, den} of BigInts in lowest terms.",
              " * Times (formulas with alpha, beta, gamma, alpha_inter, beta_inter) are Numbers: alpha, beta, ... are",
              " * read as Numbers and only the arithmetic touching them is float; their coefficients are exact.",
              " * Requirements (a power of two, a multiple of N, a divisible layout, ...) are checked on the exact",
              " * values: a RangeError with the message symcomm eval prints. A missing argument: a TypeError.",
              " * Each argument is checked as symcomm eval checks it (its grammar, its bounds: at most 2**100, N >= 2",
              " * for a collective, a whole number for an integer): a RangeError with the command line's message, a",
              " * TypeError (same words) for a boolean, null, an array or another object.",
              " */",
              "",
              _HELPERS.strip("\n"),
              ""]
    functions = [_function(f, exact, floats) for f in chosen]
    return "\n".join(header) + "\n\n" + "\n".join(functions)


def helpers_script(namespace: str = "SYMCOMM_HELPERS") -> str:
    """The helpers of :func:`to_script` (exact arithmetic, the command line's number reader, the rules' tests) as
    one classic script of their own, frozen into ``globalThis[namespace]``: a page that loads many formula
    scripts loads these once, before any of them (each script built with ``helpers=namespace`` takes them)."""
    names = ", ".join(HELPER_NAMES)
    return ("// Generated by symcomm (symcomm.views.export.javascript.helpers_script): the helpers every\n"
            "// formula script of the page shares, loaded once before any of them.\n"
            "(function () {\n\"use strict\";\n\n" + _HELPERS.strip("\n")
            + f"\n\nglobalThis[{_js(namespace)}] = Object.freeze({{{names}}});\n}})();\n")


def to_script(chosen: list[Formula], namespace: str = "SYMCOMM_FORMULAS", helpers: str | None = None) -> str:
    """The same functions as :func:`to_javascript`, as a classic script instead of an ES module: a
    browser runs a module only when it is served over HTTP, a classic script also from the file
    system (the docs' interactive page).  The functions are added to ``globalThis[namespace]`` by
    name; the helpers stay private to the script, or, with ``helpers`` (a namespace), are taken from
    the script :func:`helpers_script` wrote there (loaded first: else a one-line Error says so).

    Without the JSDoc comments of :func:`to_javascript`: a browser reads none of them (the page shows each
    formula from its catalog entry), and each would print the formula's LaTeX once more; they were most of
    the page's scripts (docs/site/formulas 9.0 MB with them, 3.5 MB without)."""
    exact = ExactJavascriptPrinter()
    floats = FloatJavascriptPrinter(exact)
    functions = [_function(f, exact, floats, exported=False) for f in chosen]
    names = ", ".join(f.name for f in chosen)
    code = "\n".join(functions)
    # a helper is used when it stands as a whole identifier; the identifiers that start with "_" (as every helper's
    # name does: HELPER_NAMES) are collected in one pass: 0.29-0.33 s of CPU over the page's scripts where every
    # identifier took 0.56-0.59 s (a lookbehind search per helper scanned the whole code once per name: seconds)
    words = set(re.findall(r"(?<![\w$])_[\w$]*", code))
    used = [name for name in HELPER_NAMES if name in words]
    prelude = _HELPERS.strip("\n") if helpers is None else (
        f"if (!globalThis[{_js(helpers)}]) throw new Error(\"load the shared helpers (globalThis.{helpers}) "
        f"before this script\");\nconst {{{', '.join(used)}}} = globalThis[{_js(helpers)}];")
    return ("// Generated by symcomm (symcomm.views.export.javascript.to_script): the functions of the javascript export\n"
            "// as a classic script; see that module for the conventions (exact BigInt counts, float times).\n"
            "(function () {\n\"use strict\";\n\n" + prelude + "\n\n" + "\n".join(functions)
            + f"\nObject.assign(globalThis[{_js(namespace)}] = globalThis[{_js(namespace)}] || {{}}, {{{names}}});\n}})();\n")


FORMAT = Format(name="javascript", order=45, render=to_javascript,
                description="a standalone ES module (exact BigInt counts, float times)")
