"""``--format c``: a standalone C99 header, one ``static inline double`` function per formula.

Functions take ``double`` arguments named by the symbols' CLI names, in the order of
:data:`symcomm.core.symbols.SYMBOLS` (the comment above each function lists them).  The header
includes only ``<math.h>``; link with ``-lm``.  ⌈log₂x⌉ and log₂ of a power of two are
computed exactly by two helpers (``symcomm_ceil_log2``, ``symcomm_log2``).  Doubles are
exact for integers below 2⁵³.

**Out-of-range arguments give NAN.**  C has types, so only the ranges are checked: each
function returns ``NAN`` (test it with ``isnan``) unless every argument is one ``symcomm eval``
would accept: finite, at least its least (N ≥ 2 for a collective, 1 for another whole number, 0
for α, β, a fraction), at most 2¹⁰⁰, whole for an integer symbol, and zero or at least 10⁻³⁰.
Without it, N = 0 divides by zero (±inf or NaN by accident) and ⌈log₂0⌉ would be 0: a number
that looks confident.  The requirements between arguments (a power of two, a multiple of N)
are not checked here: the comment above each function states them.
"""

from __future__ import annotations

import sympy as sp
from sympy.printing.c import C99CodePrinter

from ...training.subjects import COLLECTIVE_TIME_CONVENTION
from . import QUANTITIES, Format, Formula


class HeaderPrinter(C99CodePrinter):
    """C99 over doubles, with the two exact log₂ helpers of the header."""

    #: ⌈log₂⌉ (:class:`symcomm.core.symbols.CeilLog2`) prints as a call of the header's exact helper
    ceil_log2_function = "symcomm_ceil_log2"
    #: Σ popcount below n (:class:`symcomm.core.symbols.OnesBelow`)
    ones_below_function = "symcomm_ones_below"

    def _print_log2(self, expr):
        return f"symcomm_log2({self._print(expr.args[0])})"

    def _print_Integer(self, expr):
        return f"{expr.p}.0"  # double constants: no int/int division anywhere

    def _print_Piecewise(self, expr):
        # one line: (c1 ? e1 : (c2 ? e2 : e3))
        *pairs, (last, cond) = expr.args
        if cond != sp.true:
            raise ValueError("a Piecewise without a default branch cannot be exported to C")
        text = self._print(last)
        for e, c in reversed(pairs):
            text = f"(({self._print(c)}) ? ({self._print(e)}) : ({text}))"
        return text


_HELPERS = """\
/* 1 when x is a value the command line accepts for an argument: finite, least <= x <= 2^100,
 * whole when integer, and zero or at least 1e-30 (symcomm.base.inputs); else 0 (the function gives NAN). */
static inline int symcomm_arg_ok(double x, double least, int integer)
{
    return isfinite(x) && x >= least && x <= 0x1p100 && (!integer || x == floor(x)) && (x == 0.0 || x >= 1e-30);
}

/* log2(x), exact for a power of two (frexp gives 0.5 * 2^e), else the C library's log2. */
static inline double symcomm_log2(double x)
{
    int e;
    double mantissa = frexp(x, &e);
    return mantissa == 0.5 ? (double)(e - 1) : log2(x);
}

/* The set bits of 0, 1, ..., x - 1 summed (x a whole number >= 0): exact below 2^53. */
static inline double symcomm_ones_below(double x)
{
    double total = 0.0, bit = 1.0;
    while (bit < x) {
        double period = 2.0 * bit;
        double rest = fmod(x, period) - bit;
        total += floor(x / period) * bit + (rest > 0.0 ? rest : 0.0);
        bit = period;
    }
    return total;
}

/* ceil(log2(x)) for x > 0, exact: the smallest k with 2^k >= x. */
static inline double symcomm_ceil_log2(double x)
{
    int e;
    double mantissa = frexp(x, &e);
    return mantissa == 0.5 ? (double)(e - 1) : (double)e;
}
"""


def _comment(text: str) -> str:
    """Text that cannot end or nest a C comment (-Wcomment is part of -Wall)."""
    return str(text).replace("*/", "* /").replace("/*", "/ *")


def to_c(chosen: list[Formula]) -> str:
    printer = HeaderPrinter()
    parts = ["/* Closed-form communication costs exported by symcomm (standalone C99 header; link with -lm).",
             " * One static inline double function per formula; arguments are doubles named by symcomm's",
             " * symbol names, in symcomm's symbol order (listed in each comment).",
             f" * Convention: {_comment(COLLECTIVE_TIME_CONVENTION)}.",
             " */",
             "#ifndef SYMCOMM_FORMULAS_H", "#define SYMCOMM_FORMULAS_H", "", "#include <math.h>", "",
             _HELPERS]
    for f in chosen:
        args = ", ".join(f"double {name}" for name in f.argnames) or "void"
        comment = [f"{f.title}: {f.quantity} ({QUANTITIES.get(f.quantity, 'see the source')}).",
                   f"  {f.latex}",
                   f"Convention: {f.convention}."]
        if f.requires:
            comment.append(f"Requires: {'; '.join(f.requires)}.")
        if f.options:
            comment.append(f"Options: {', '.join(f'{k}={v}' for k, v in f.options)}.")
        comment.append(f"Source: {f.source}.")
        comment.append(f"Arguments: {', '.join(f.argnames) or 'none'} (NAN when one is out of range).")
        parts.append("/* " + "\n * ".join(_comment(line) for line in comment) + " */")
        guard = " && ".join(f"symcomm_arg_ok({info.cli_name}, {f.least_of(info)}.0, {int(bool(info.symbol.is_integer))})"
                            for info in f.parameters)
        body = f"    if (!({guard}))\n        return NAN;\n" if guard else ""
        parts.append(f"static inline double {f.name}({args})\n{{\n{body}    return {printer.doprint(f.expr)};\n}}\n")
    parts.append("#endif /* SYMCOMM_FORMULAS_H */\n")
    return "\n".join(parts)


FORMAT = Format(name="c", order=40, render=to_c, description="a standalone C99 header (link with -lm)")
