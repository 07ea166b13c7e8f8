"""Render expressions for people and for code: one function per output format.

SymPy's printers do the work.  The LaTeX printer is SymPy's, taught two things that
its default gets wrong for this subject: log₂N prints as \\log_2 N, and symbols print
in the source article's notation (Φ, α_inter...).  Everything that shows a formula — the CLI,
the templates, the exporters — goes through :func:`render`.  ⌈log₂N⌉ prints itself
(:class:`symcomm.core.symbols.CeilLog2`), through the log₂ of the printer it is given.

Prose is escaped here too, once per target: :func:`tex_text` for LaTeX,
:func:`markdown_text` for Markdown prose and :func:`markdown_cell` for a Markdown table
cell.
"""

from __future__ import annotations

import contextlib
import functools
import re
import threading

import sympy as sp
from sympy.core import exprtools
from sympy.core.expr import Expr
from sympy.core.kind import NumberKind
from sympy.printing.latex import LatexPrinter
from sympy.printing.mathml import MathMLPresentationPrinter

from . import symbols as S

FORMATS = ("text", "latex", "markdown", "python", "mathml")


#: LaTeX of each subexpression printed in this process, per printer settings: the docs build prints hundreds of
#: formulas that share most of their parts (the step model's variants), and SymPy's LaTeX printer is a pure
#: function of the expression, its keyword arguments and the settings (it keeps no state between calls)
_PRINTED: dict[tuple, dict] = {}
#: parts remembered per settings before the memo starts afresh (the export's 921 formulas print about 1 100)
_PRINTED_MOST = 200_000


def _looked_up(printed: dict, expr, kwargs: dict) -> tuple:
    """(the memo's key, the text kept under it or None); (None, None) when an argument is unhashable (a list, a
    dict): that part is printed as it comes."""
    try:
        key = (expr, tuple(sorted(kwargs.items())))
        return key, printed.get(key)
    except TypeError:
        return None, None


def _kept(printed: dict, key, text: str) -> str:
    """``text`` kept under ``key``: a long-lived process (the API) keeps a bounded memo, started afresh when full."""
    if len(printed) >= _PRINTED_MOST:
        printed.clear()
    printed[key] = text
    return text


class _PrintedOnce:
    """A SymPy printer mixin: each subexpression printed once per process and settings, kept as text in the
    memo ``_MEMO`` (one dict per settings) and handed back through :meth:`_from_text`; a result
    :meth:`_as_text` cannot write as text (None) is returned as printed, not kept."""

    _MEMO: dict[tuple, dict]

    def __init__(self, settings=None):
        super().__init__(settings)
        self._printed = self._MEMO.setdefault(tuple(sorted((settings or {}).items())), {})

    def _as_text(self, printed):
        return printed

    def _from_text(self, text: str):
        return text

    def _print(self, expr, **kwargs):
        key, text = _looked_up(self._printed, expr, kwargs)
        if key is None:
            return super()._print(expr, **kwargs)
        if text is None:
            printed = super()._print(expr, **kwargs)
            text = self._as_text(printed)
            if text is None:
                return printed
            _kept(self._printed, key, text)
        return self._from_text(text)


class SymcommLatexPrinter(_PrintedOnce, LatexPrinter):
    """SymPy's LaTeX printer with log₂ written the way papers write it; each subexpression printed once
    per process and settings (:data:`_PRINTED`)."""

    _MEMO = _PRINTED

    def _print_Integer(self, expr):
        # 300647710720 → 300\,647\,710\,720: digits grouped in threes, as tables print them
        text = str(abs(int(expr)))
        if len(text) <= 5:
            return str(expr)
        groups = [text[max(0, i - 3):i] for i in range(len(text), 0, -3)][::-1]
        return ("-" if expr < 0 else "") + r"\,".join(groups)

    def _print_log2(self, expr, exp=None):
        arg = expr.args[0]
        inner = self._print(arg)
        body = rf"\log_2 {inner}" if arg.is_Symbol else rf"\log_2\left({inner}\right)"
        return rf"\left({body}\right)^{{{exp}}}" if exp else body


#: SymPy's gcd_terms, which factor_terms calls on every sum it meets (by its module's global name)
_GCD_TERMS = exprtools.gcd_terms
#: gcd_terms of each sum factor_terms gathered in this process: the formulas printed share most of their sums (the
#: step model's variants, a strategy's send inside its time), and factor_terms walks each again (3205 calls, 605
#: different, in a docs build).  gcd_terms is a pure function of its arguments and SymPy's values are immutable.
_GATHERED: dict = {}
_GATHERING = threading.Lock()


def _gcd_terms_once(terms, isprimitive=False, clear=True, fraction=True):
    try:
        key = (terms, isprimitive, clear, fraction)
        out = _GATHERED.get(key)
    except TypeError:        # a list of terms: gathered as it comes
        return _GCD_TERMS(terms, isprimitive, clear, fraction)
    if out is None:
        if len(_GATHERED) >= _PRINTED_MOST:      # a long-lived process (the API) keeps a bounded memo
            _GATHERED.clear()
        out = _GATHERED[key] = _GCD_TERMS(terms, isprimitive, clear, fraction)
    return out


@functools.lru_cache(maxsize=8192)
def pulled(expr):
    """``sympy.factor_terms(expr)`` (numeric factors pulled out of sums), once per expression in a process: the
    LaTeX, its lines and the MathML of one formula all print this form, and it is most of their cost; each sum
    inside it gathered once per process (:data:`_GATHERED`), only while factor_terms runs here."""
    with _GATHERING:
        exprtools.gcd_terms = _gcd_terms_once
        try:
            return sp.factor_terms(expr)
        finally:
            exprtools.gcd_terms = _GCD_TERMS


#: SymPy's Expr.is_constant, which its LaTeX printer asks (sympy.simplify.fraction(term, exact=True), in _print_Mul)
#: of every negative exponent but −1: it simplifies the exponent, then evaluates and differentiates it, 0.01-0.1 s a
#: call (its first call in a build 0.17 s) for exponents as plain as −ℓ or −⌈log₂(N + 1)⌉
_IS_CONSTANT = Expr.is_constant
_CONSTANCY = threading.RLock()


def _plainly_varying(expr) -> bool:
    """True when ``expr`` is a number-valued symbol, or ⌈log₂⌉ of a positive one plus a whole number ≥ 0 (unbounded,
    so it grows), times a nonzero number, plus a number: not constant, which SymPy's is_constant also answers (False) the long way
    (tests/core/test_printing.py compares the two).  False means only "not known so cheaply"."""
    _, rest = expr.as_coeff_Add()
    coefficient, term = rest.as_coeff_Mul()
    if coefficient == 0:
        return False
    if term.is_Symbol:
        return term.kind is NumberKind
    if isinstance(term, S.CeilLog2):
        offset, inner = term.args[0].as_coeff_Add()
        return (offset.is_Integer and offset >= 0 and inner.is_Symbol and inner.is_positive is True
                and inner.kind is NumberKind)
    return False


def _is_constant_shortcut(self, *wrt, **flags):
    if not wrt and _plainly_varying(self):
        return False
    return _IS_CONSTANT(self, *wrt, **flags)


@contextlib.contextmanager
def _constancy_shortcut():
    """Expr.is_constant answered at once for :func:`_plainly_varying` expressions, only while this printer prints
    (as :func:`pulled` swaps gcd_terms); the swap is undone by whoever made it, so a nested print keeps it."""
    with _CONSTANCY:
        swapped = Expr.is_constant is _IS_CONSTANT
        if swapped:
            Expr.is_constant = _is_constant_shortcut
        try:
            yield
        finally:
            if swapped:
                Expr.is_constant = _IS_CONSTANT


def latex(expr, pull_factors: bool = True) -> str:
    """LaTeX in the papers' shape: numeric factors pulled out, 2M(N−1)/N not M(2N−2)/N
    (``pull_factors=False`` prints a sum as it stands, leading term first: 2N/G − 2)."""
    return _latex(sp.sympify(expr, strict=True), pull_factors)


# printed once per expression in a process: the docs build prints the same formula for a chapter, its table, the
# LaTeX document and each page variant that shares it (factor_terms is most of the cost); a pure function of both
@functools.lru_cache(maxsize=8192)
def _latex(expr, pull_factors: bool) -> str:
    if pull_factors and not expr.has(sp.Piecewise):
        expr = pulled(expr)
        with _constancy_shortcut():
            return SymcommLatexPrinter({"mul_symbol": None}).doprint(expr)
    with _constancy_shortcut():
        return SymcommLatexPrinter({"mul_symbol": None, "order": "rev-lex"}).doprint(expr)


def visible_length(tex: str) -> int:
    """A rough width of printed LaTeX math, in characters: commands count as one glyph,
    \\left, \\right, braces and spaces as none (only to decide where a line is long)."""
    tex = re.sub(r"\\(left|right)\b", "", tex)
    tex = re.sub(r"\\[a-zA-Z]+", "x", tex)
    return len(re.sub(r"[{}\\ ]", "", tex))


def latex_lines(expr, width: int = 80) -> list[str]:
    """:func:`latex`, broken for a display that is too narrow for it: a sum whose printed
    form is wider than ``width`` (see :func:`visible_length`) is cut between its terms, each
    line after the first starting with its sign.  Anything else is one line."""
    expr = sp.sympify(expr, strict=True)
    whole = latex(expr)
    if visible_length(whole) <= width:
        return [whole]
    # the same form and order as latex() prints
    if expr.has(sp.Piecewise):
        printer = SymcommLatexPrinter({"mul_symbol": None, "order": "rev-lex"})
    else:
        expr, printer = pulled(expr), SymcommLatexPrinter({"mul_symbol": None})
    if not expr.is_Add:
        return [whole]
    lines: list[str] = []
    for i, term in enumerate(printer._as_ordered_terms(expr, order=printer._settings["order"])):
        with _constancy_shortcut():
            text = printer.doprint(term)
        if i:
            text = f"- {text[1:].lstrip()}" if text.startswith("-") else f"+ {text}"
        if lines and visible_length(lines[-1] + text) <= width:
            lines[-1] = f"{lines[-1]} {text}"
        else:
            lines.append(text)
    return lines


_MATHML_RELATIONS = {"<": "&lt;", "<=": "&le;", ">": "&gt;", ">=": "&ge;", "==": "=", "!=": "&ne;"}


#: the MathML of each subexpression printed in this process, per printer settings (its XML text, handed to the
#: parent as a text node): the page prints the time and send of 31 hybrid variants, whose cases and terms are mostly the same
#: subtrees; SymPy's MathML printer, like its LaTeX one, is a pure function of the expression and the settings
_MATHML_PRINTED: dict[tuple, dict] = {}


class SymcommMathMLPrinter(_PrintedOnce, MathMLPresentationPrinter):
    """SymPy's presentation MathML printer taught what its default gets wrong here: ⌈log₂N⌉ and
    ones(n) as the papers write them (not ``ceillog2(N)``), a Piecewise as cases, and relations
    escaped (SymPy writes its text unescaped, so ``<`` would end up raw in the page); each subexpression
    printed once per process (:data:`_MATHML_PRINTED`)."""

    _MEMO = _MATHML_PRINTED

    def _as_text(self, node):
        # doprint writes the whole tree with no indent or newline, so a subtree's text is the same wherever it
        # stands: kept as text, and handed to the parent as a node that writes it as it is
        return node.toxml() if hasattr(node, "toxml") else None

    def _from_text(self, text: str):
        return self.dom.createTextNode(text)      # SymPy's raw text node: written unescaped

    def _row(self, *nodes):
        row = self.dom.createElement("mrow")
        for node in nodes:
            row.appendChild(node)
        return row

    def _op(self, text: str):
        node = self.dom.createElement("mo")
        node.appendChild(self.dom.createTextNode(text))
        return node

    def _word(self, text: str):
        node = self.dom.createElement("mtext")
        node.appendChild(self.dom.createTextNode(text))
        return node

    def _log2_of(self, arg):
        name = self.dom.createElement("msub")
        log = self.dom.createElement("mi")
        log.appendChild(self.dom.createTextNode("log"))
        two = self.dom.createElement("mn")
        two.appendChild(self.dom.createTextNode("2"))
        name.appendChild(log)
        name.appendChild(two)
        inner = self._print(arg)
        if not arg.is_Symbol:
            inner = self._row(self._op("("), inner, self._op(")"))
        return self._row(name, self._op("&ApplyFunction;"), inner)

    def _print_CeilLog2(self, expr):
        return self._row(self._op("&lceil;"), self._log2_of(expr.args[0]), self._op("&rceil;"))

    def _print_log2(self, expr):
        return self._log2_of(expr.args[0])

    def _print_OnesBelow(self, expr):
        name = self.dom.createElement("mi")
        name.appendChild(self.dom.createTextNode("ones"))
        return self._row(name, self._op("&ApplyFunction;"),
                         self._row(self._op("("), self._print(expr.args[0]), self._op(")")))

    def _print_Relational(self, expr):
        return self._row(self._print(expr.lhs), self._op(_MATHML_RELATIONS[expr.rel_op]), self._print(expr.rhs))

    def _print_Piecewise(self, expr):
        table = self.dom.createElement("mtable")
        table.setAttribute("columnalign", "left left")
        for value, cond in expr.args:
            row = self.dom.createElement("mtr")
            for node in (self._print(value),
                         self._word("otherwise") if cond == sp.true else
                         self._row(self._word("if "), self._print(cond))):
                cell = self.dom.createElement("mtd")
                cell.appendChild(node)
                row.appendChild(cell)
            table.appendChild(row)
        return self._row(self._op("{"), table)


def mathml(expr) -> str:
    """Presentation MathML of ``expr`` (the contents of a ``<math>`` element), in the same shape as
    :func:`latex` prints it: numeric factors pulled out of a sum without cases."""
    return _mathml(sp.sympify(expr, strict=True))


@functools.lru_cache(maxsize=8192)
def _mathml(expr) -> str:
    if not expr.has(sp.Piecewise):
        expr = pulled(expr)
    return SymcommMathMLPrinter({"mul_symbol": None}).doprint(expr)


def render(expr, fmt: str = "text") -> str:
    expr = sp.sympify(expr, strict=True)
    if fmt == "text":
        return sp.sstr(expr)
    if fmt == "latex":
        return latex(expr)
    if fmt == "markdown":
        return f"${latex(expr)}$"
    if fmt == "python":
        return sp.pycode(expr)
    if fmt == "mathml":
        return f'<math xmlns="http://www.w3.org/1998/Math/MathML" display="block">{mathml(expr)}</math>'
    raise ValueError(f"--format {fmt!r} is not allowed; choose one of {', '.join(FORMATS)}")


# -- text for LaTeX --------------------------------------------------------------------------

_TEX_TEXT = {
    "Φ": r"$\Phi$", "Ψ": r"$\Psi$", "α": r"$\alpha$", "β": r"$\beta$", "γ": r"$\gamma$",
    "−": "-", "–": "--", "—": "---", "≥": r"$\ge$", "≤": r"$\le$", "→": r"$\to$", "×": r"$\times$",
    "·": r"$\cdot$", "≈": r"$\approx$", "∞": r"$\infty$", "⌈": r"$\lceil$", "⌉": r"$\rceil$",
    "₂": r"$_2$", "²": r"$^2$", "¹": r"$^1$", "⁰": r"$^0$", "³": r"$^3$", "µ": r"$\mu$", "§": r"\S{}",
    "⌊": r"$\lfloor$", "⌋": r"$\rfloor$", "≠": r"$\ne$", "…": r"\ldots{}", "“": "``", "”": "''", "’": "'", "‘": "`", "½": r"$\frac12$",
    "σ": r"$\sigma$", "Σ": r"$\Sigma$", "ε": r"$\epsilon$", "⁻": r"$^-$", "√": r"$\surd$",
    "⁹": r"$^9$", "ᵀ": r"$^{\top}$", "÷": r"$\div$", "η": r"$\eta$", "ć": r"\'c",
    "ä": r"\"a", "ö": r"\"o", "ü": r"\"u", "é": r"\'e", "ø": r"{\o}",
}
_TEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
                "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}
_CJK_GROUP = re.compile(r"\s*[（(][^)）]*[\u2e80-\u9fff][^)）]*[)）]")
_CJK = re.compile(r"[\u2e80-\u9fff\u3000-\u303f\uff00-\uffef]+")


# with breaks=True a line may break after _, /, - and +: file paths and identifiers
# (src/mpi/coll/bcast/bcast_intra_binomial.c, bridge-25.11-h100-llama3-70b-fp8cs) are words too long for a line
_TEX_BREAKS = {"_": r"\_\allowbreak{}", "/": r"/\allowbreak{}", "-": r"-\allowbreak{}", "+": r"+\allowbreak{}"}


def tex_text(text: str, breaks: bool = False) -> str:
    """Prose for pdflatex: specials escaped, known symbols mapped, CJK dropped (the
    source article's title in Chinese has no glyphs in pdflatex; the English citation stays).
    ``breaks=True`` lets a line break after ``_``, ``/``, ``-`` and ``+`` (long paths and names)."""
    text = _CJK.sub("", _CJK_GROUP.sub("", str(text)))
    # str.translate runs the character loop in C (the LaTeX document's prose is ~4,000 texts a build, a character at a
    # time in Python before); each character's replacement is decided once, by the rule below, and kept
    return text.translate(_TEX_BY_CODE[bool(breaks)])


class _TexCharacters(dict):
    """Code point → its text in LaTeX prose, decided on first use: a break point (``breaks``), a special escaped, a
    known symbol mapped, ASCII as it is, anything else ``?``."""

    def __init__(self, breaks: bool):
        super().__init__()
        self.breaks = breaks

    def __missing__(self, code: int) -> str:
        ch = chr(code)
        if self.breaks and ch in _TEX_BREAKS:
            out = _TEX_BREAKS[ch]
        elif ch in _TEX_SPECIAL:
            out = _TEX_SPECIAL[ch]
        elif ch in _TEX_TEXT:
            out = _TEX_TEXT[ch]
        else:
            out = ch if code < 128 else "?"
        self[code] = out
        return out


#: without and with line breaks after _, /, - and +
_TEX_BY_CODE = {False: _TexCharacters(False), True: _TexCharacters(True)}


# -- text for Markdown -----------------------------------------------------------------------

_MD_SPECIAL = re.compile(r"([\\|*_`<>\[\]])")


def markdown_text(text) -> str:
    """Prose for a Markdown page: characters Markdown would read as markup are escaped
    (backslash, ``|``, ``*``, ``_``, backtick, ``<``, ``>``, brackets)."""
    return _MD_SPECIAL.sub(r"\\\1", str(text))


def markdown_cell(text) -> str:
    """Text for one cell of a Markdown table: ``|`` escaped, line breaks made spaces
    (the rest is left as written: a cell may hold ``$LaTeX$`` and inline markup)."""
    return str(text).replace("|", r"\|").replace("\n", " ")
