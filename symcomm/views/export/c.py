"""``--format c``: a standalone C99 header, one ``static inline double`` function per formula.

Functions take ``double`` arguments named by the symbols' CLI names, in the order of
:data:`symcomm.core.symbols.SYMBOLS` (the comment above each function lists them).  The header
includes only ``<math.h>``; link with ``-lm``.  ⌈log₂x⌉ and log₂ of a power of two are
computed exactly by two helpers (``symcomm_ceil_log2``, ``symcomm_log2``).  Doubles are
exact for integers below 2⁵³.

**Arguments eval would refuse give NAN.**  Each function returns ``NAN`` (test it with ``isnan``)
unless every argument is one ``symcomm eval`` would accept: finite, at least its least (N ≥ 2 for a
collective, 1 for another whole number, 0 for α, β, a fraction), at most 2¹⁰⁰, whole for an integer
symbol, and zero or at least 10⁻³⁰; and unless the values meet the formula's requirements between
arguments (a power of two, a multiple of N, ...), each rule's test written from
:data:`symcomm.core.rules.KINDS` over doubles.  Without them, N = 0 divides by zero (±inf or NaN by
accident), ⌈log₂0⌉ would be 0, and recursive doubling on 6 ranks 2.585 messages: numbers that look
confident.  C has no message to carry: the comment above each function states the requirements.
"""

from __future__ import annotations

import re

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

/* The mantissa frexp gives (0.5 exactly for a power of two). */
static inline double symcomm_mantissa(double x)
{
    int e;
    return frexp(x, &e);
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


def _rule_test(kind: str, exprs: list, printer: HeaderPrinter) -> str:
    """The C test of one rule (:data:`symcomm.core.rules.KINDS`) on the formula's arguments: its kind's test with x, y
    the rule's expressions printed; evaluated after the range checks (&& stops at the first that fails)."""
    from ...core.rules import KINDS

    test = KINDS[kind].c
    # the kind's test names x and y: replaced as whole words by the printed expressions, parenthesised
    values = dict(zip("xy", (f"({printer.doprint(e)})" for e in exprs)))
    return "(" + re.sub(r"\b[xy]\b", lambda m: values[m.group(0)], test) + ")"


def to_c(chosen: list[Formula]) -> str:
    printer = HeaderPrinter()
    parts = ["/* Closed-form communication costs exported by symcomm (standalone C99 header; link with -lm).",
             " * One static inline double function per formula; arguments are doubles named by symcomm's",
             " * symbol names, in symcomm's symbol order (listed in each comment with its unit).",
             f" * Convention: {_comment(COLLECTIVE_TIME_CONVENTION)}.",
             " * beta, gamma (and beta_inter) are per element: the per-byte constants symcomm eval takes times the bytes",
             " * per element. A formula that takes B_e (bytes per element of the run's dtype: 2 for bf16) counts the",
             " * terms it runs in a width of their own (fp32 gradients) in elements of that dtype, so its time is eval's.",
             " * Doubles hold whole numbers exactly below 2^53: above it a count may round (the Python and JavaScript",
             " * exports are exact).",
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
        comment.append(f"Arguments: {', '.join(f'{i.cli_name} [{i.unit}]' for i in f.parameters) or 'none'} "
                       "(NAN when one is out of range"
                       + (" or a requirement fails)." if f.checked_rules() else ")."))
        parts.append("/* " + "\n * ".join(_comment(line) for line in comment) + " */")
        guard = " && ".join([f"symcomm_arg_ok({info.cli_name}, {f.least_of(info)}.0, "
                             f"{int(bool(info.symbol.is_integer))})" for info in f.parameters]
                            + [_rule_test(kind, exprs, printer) for kind, _message, exprs in f.checked_rules()])
        body = f"    if (!({guard}))\n        return NAN;\n" if guard else ""
        parts.append(f"static inline double {f.name}({args})\n{{\n{body}    return {printer.doprint(f.expr)};\n}}\n")
    parts.append("#endif /* SYMCOMM_FORMULAS_H */\n")
    return "\n".join(parts)


FORMAT = Format(name="c", order=40, render=to_c, description="a standalone C99 header (link with -lm)")
