// symcomm's number grammar for the page: the command line's (symcomm/base/inputs.py, parse_number), so that
// the page accepts exactly what `symcomm eval` accepts and refuses the rest in its words. The regular
// expressions, spaces and bounds are not written here: they come from SYMCOMM_CATALOG.grammar, which
// symcomm.views.site writes from symcomm.base.inputs.grammar(). This file follows parse_fraction step by step
// (the same checks in the same order, so the same first error); tests/integration/test_site.py runs it in node
// against the Python on a table of strings. A classic script (Chromium runs no ES module from file://).
(function (root) {
  "use strict";

  function make(G) {
    const SPACE = G.space;
    // Python's named groups (?P<name>...) are (?<name>...) in JavaScript; nothing else differs
    const js = (pattern) => pattern.replace(/\(\?P</g, "(?<");
    const FACTOR = new RegExp(`^(?:${js(G.factor)})$`);
    const DEC_PARTS = new RegExp(`^(?:${js(G.dec_parts)})$`);
    const TIMES = new RegExp(js(G.times));
    const MAX = BigInt(G.max_value);
    const MIN = { n: BigInt(G.min_value[0]), d: BigInt(G.min_value[1]) };
    const LOG10_MAX = G.log10_max;
    const SIZE_UNITS = Object.fromEntries(Object.entries(G.size_units).map(([k, v]) => [k, BigInt(v)]));

    // ---- exact fractions {n, d}: BigInts, d > 0, in lowest terms (Python's Fraction)

    const abs = (x) => (x < 0n ? -x : x);
    function gcd(a, b) { a = abs(a); b = abs(b); while (b) [a, b] = [b, a % b]; return a; }
    function frac(n, d = 1n) {
      if (d < 0n) { n = -n; d = -d; }
      const g = gcd(n, d) || 1n;
      return { n: n / g, d: d / g };
    }
    const mul = (x, y) => frac(x.n * y.n, x.d * y.d);
    const div = (x, y) => frac(x.n * y.d, x.d * y.n);
    const cmp = (x, y) => { const a = x.n * y.d, b = y.n * x.d; return a < b ? -1 : a > b ? 1 : 0; };
    const tenTo = (p) => (p >= 0 ? frac(10n ** BigInt(p)) : frac(1n, 10n ** BigInt(-p)));

    /** The correctly rounded Number of a fraction (Python's float(Fraction)): a quotient of at least
     *  64 bits, its remainder kept as a sticky low bit, rounded once by Number(). */
    function toFloat(x) {
      if (x.n === 0n) return 0;
      const sign = x.n < 0n ? -1 : 1, n = abs(x.n);
      const k = 66 + x.d.toString(2).length - n.toString(2).length;
      const scaledN = k >= 0 ? n << BigInt(k) : n, scaledD = k >= 0 ? x.d : x.d << BigInt(-k);
      let q = scaledN / scaledD;
      if (q * scaledD !== scaledN) q |= 1n;
      return sign * Number(q) * 2 ** -k;
    }

    // ---- Python's text helpers, as the messages use them

    const chars = (t) => Array.from(t);
    function strip(t) {
      let a = 0, b = t.length;
      while (a < b && SPACE.includes(t[a])) a += 1;
      while (b > a && SPACE.includes(t[b - 1])) b -= 1;
      return t.slice(a, b);
    }
    const cut = (t) => (chars(t).length <= 40 ? t : chars(t).slice(0, 37).join("") + "...");
    const short = (t) => cut(strip(t));
    const HIDDEN = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]/u;
    /** Python's repr() of a string. */
    function repr(t) {
      const quote = t.includes("'") && !t.includes('"') ? '"' : "'";
      let out = quote;
      for (const ch of t) {
        const c = ch.codePointAt(0);
        if (ch === quote || ch === "\\") out += "\\" + ch;
        else if (ch === "\t") out += "\\t";
        else if (ch === "\n") out += "\\n";
        else if (ch === "\r") out += "\\r";
        else if (ch !== " " && (c < 0x20 || c === 0x7f || (c >= 0x80 && HIDDEN.test(ch)))) {
          out += c < 0x100 ? "\\x" + c.toString(16).padStart(2, "0")
            : c < 0x10000 ? "\\u" + c.toString(16).padStart(4, "0") : "\\U" + c.toString(16).padStart(8, "0");
        } else out += ch;
      }
      return out + quote;
    }
    const group = (digits) => digits.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
    /** Python's f"{x:g}". */
    function formatG(x) {
      if (x === 0) return "0";
      const [mantissa, exponent] = x.toExponential(5).split("e");
      const e = Number(exponent);
      const trim = (s) => (s.includes(".") ? s.replace(/0+$/, "").replace(/\.$/, "") : s);
      if (e < -4 || e >= 6) return `${trim(mantissa)}e${e < 0 ? "-" : "+"}${String(Math.abs(e)).padStart(2, "0")}`;
      return trim(x.toFixed(5 - e));
    }
    function show(x) {
      if (x.d === 1n && x.n === MAX) return "2**100";
      if (x.d === 1n) return (x.n < 0n ? "-" : "") + group(abs(x.n).toString());
      return formatG(toFloat(x));
    }
    function boundText(integer, least, most) {
      const kind = integer ? "a whole number" : "a number";
      return least === null ? `${kind} up to ${show(most)}` : `${kind} from ${show(least)} to ${show(most)}`;
    }

    class InputError extends Error {}
    const notANumber = (key, text) => new InputError(
      `${key}=${repr(cut(text))} is not a number; ${key} takes a number written in ASCII (${G.examples}, 5e-6)`);

    // ---- the grammar (inputs._factor, inputs.parse_fraction)

    /** [exact value, estimated log10 of its magnitude] of one factor, bounded before computing. */
    function factor(key, text, piece) {
      const m = FACTOR.exec(piece);
      if (m === null) throw notANumber(key, text);
      const g = m.groups;
      if (g.base !== undefined) {
        const baseDigits = g.base.replace(/^0+/, ""), expDigits = g.exp.replace(/^0+/, "");
        if (baseDigits.length > 40 || expDigits.length > 6) return [frac(0n), Infinity];
        const base = BigInt(g.base), exp = BigInt(g.exp);
        if (base === 0n || base === 1n || exp === 0n) return [frac(base === 0n || base === 1n ? base ** exp : 1n), 0];
        const size = Number(exp) * Math.log10(Number(base));
        if (size > LOG10_MAX + 1) return [frac(0n), Infinity];
        return [frac(base ** exp), size];
      }
      const parts = DEC_PARTS.exec(g.dec).groups;
      const whole = parts.int || "", fraction = parts.frac || "", exp = parts.exp || "0";
      const digits = (whole + fraction).replace(/^0+/, "");
      if (!digits) return [frac(0n), -Infinity];
      const tiny = new InputError(`${key}=${short(text)} is not allowed: a nonzero number below ${G.min_value_shown} is ` +
                                  "too small to compute with (write 0 for nothing)");
      if (digits.length > 60 || exp.replace(/^[+-]+/, "").replace(/^0+/, "").length > 6) {
        if (exp.startsWith("-") && digits.length <= 60) throw tiny;
        return [frac(0n), Infinity];
      }
      const power = Number(exp) - fraction.length;
      const size = digits.length - 1 + power;
      if (size > LOG10_MAX + 1) return [frac(0n), Infinity];
      if (size < -40) throw tiny;
      return [mul(frac(BigInt(digits)), tenTo(power)), size];
    }

    /** The text as an exact fraction within [least, most] (least null: any sign), or an InputError
     *  in the command line's words naming key. */
    function parseFraction(key, text, { integer = false, least = frac(0n), most = frac(MAX) } = {}) {
      if (typeof text !== "string") throw new InputError(`${key} takes a number given as text; got ${typeof text}`);
      const length = chars(text).length;
      if (length > G.max_text) throw new InputError(`${key}: a number of ${length} characters is not allowed: at most ${G.max_text}`);
      const bound = () => new InputError(`${key}=${short(text)} is not allowed: ${key} takes ${boundText(integer, least, most)}`);
      let body = strip(text), sign = 1n;
      if (body.startsWith("-")) { sign = -1n; body = body.slice(1); } else if (body.startsWith("+")) body = body.slice(1);
      if (!body) throw notANumber(key, text);
      const halves = body.split("/");
      if (halves.length > 2) throw notANumber(key, text);
      if (body.includes("(") || body.includes(")")) {
        throw new InputError(`${key}=${short(text)} is not allowed: the grammar has no parentheses; give the value, or ` +
                             "one factor after '/' (a*c/b)");
      }
      if (halves.length === 2 && halves[1].split(TIMES).length > 1) {
        throw new InputError(`${key}=${short(text)} is not allowed: a product after '/' reads as (a/b)·c in Python and C ` +
                             "and as a/(b·c) elsewhere; put the divisor last, one factor (a*c/b), or give the value");
      }
      const sizes = [], values = [];
      for (const half of halves) {
        const factors = half.split(TIMES);
        if (factors.length > G.max_factors) throw new InputError(`${key}=${repr(text)} is not allowed: at most ${G.max_factors} factors`);
        let value = frac(1n), size = 0;
        for (const piece of factors) {
          const [v, s] = factor(key, text, piece);
          if (s === Infinity || size + s > LOG10_MAX + 1) throw bound();
          value = mul(value, v);
          size = s === -Infinity || size === -Infinity ? -Infinity : size + s;
        }
        values.push(value);
        sizes.push(size);
      }
      let value = values[0];
      if (values.length === 2) {
        if (values[1].n === 0n) throw new InputError(`${key}=${short(text)} is not allowed: division by zero`);
        if (sizes[1] > LOG10_MAX + 1) throw bound();
        value = div(values[0], values[1]);
      }
      value = frac(sign * value.n, value.d);
      if (integer && value.d !== 1n) throw new InputError(`${key}=${short(text)} is not allowed: ${key} takes a whole number`);
      const tooSmall = value.n !== 0n && cmp(frac(abs(value.n), value.d), MIN) < 0;
      const outside = (least !== null && cmp(value, least) < 0) || cmp(value, most) > 0;
      if (tooSmall && !outside) {      // within the range but below what is computed with: said as such
        throw new InputError(`${key}=${short(text)} is not allowed: a nonzero number below ${G.min_value_shown} is ` +
                             "too small to compute with (write 0 for nothing)");
      }
      if (outside || cmp(frac(abs(value.n), value.d), frac(MAX)) > 0 || tooSmall) throw bound();
      return value;
    }

    /** A symbol's value (inputs.parse_number): whole numbers ≥ least when integer, else any number ≥ 0. */
    function parseNumber(key, text, integer, least = 1n) {
      return parseFraction(key, text, { integer, least: integer ? frac(BigInt(least)) : frac(0n), most: frac(MAX) });
    }

    /** (number text, unit) when text ends in one of units (longest first), else (text, null). */
    function splitUnit(text, units) {
      const body = strip(String(text));
      for (const unit of Object.keys(units).sort((a, b) => b.length - a.length)) {
        if (body.endsWith(unit) && strip(body.slice(0, -unit.length))) return [strip(body.slice(0, -unit.length)), unit];
      }
      return [body, null];
    }

    /** A size in bytes with its unit, 1GiB, 512MiB (inputs.parse_size_bytes). */
    function parseSizeBytes(key, text) {
      const [number, unit] = splitUnit(text, SIZE_UNITS);
      if (unit === null) {
        throw new InputError(`${key}=${short(String(text))} has no size unit; write for example ${key}=1GiB or ${key}=512MiB ` +
                             `(units: ${Object.keys(SIZE_UNITS).join(", ")})`);
      }
      const value = mul(parseFraction(key, number, { integer: false, least: frac(0n) }), frac(SIZE_UNITS[unit]));
      if (value.d !== 1n) throw new InputError(`${key}=${short(String(text))} is not a whole number of bytes`);
      if (value.n < 1n || value.n > MAX) throw new InputError(`${key}=${short(String(text))} is not allowed: a size from 1 byte to 2**100 bytes`);
      return value.n;
    }

    /** M as eval reads it (training.binding._with_units): a size with a unit is bytes, turned into elements of the
     *  dtype; any other text is a count of elements. Returns the text of the element count. */
    function elementsText(text, dtype, bytesPerElement) {
      if (splitUnit(text, SIZE_UNITS)[1] === null) return text;
      const bytes = parseSizeBytes("M", text);
      const size = BigInt(bytesPerElement);
      if (bytes % size !== 0n) throw new InputError(`M=${text} is not a whole number of ${dtype} elements (${size} bytes each)`);
      return (bytes / size).toString();
    }

    return { parseFraction, parseNumber, parseSizeBytes, splitUnit, elementsText, toFloat, InputError };
  }

  if (typeof module !== "undefined" && module.exports) module.exports = make;   // node, for the tests
  if (root.SYMCOMM_CATALOG) root.SYMCOMM_NUMBERS = make(root.SYMCOMM_CATALOG.grammar);
})(globalThis);
