"""Turn the engine's objects into plain data for the templates.

Templates do no arithmetic and hold no formula text: every formula reaches them here,
already printed by :mod:`symcomm.core.printing`, once as LaTeX.  Each row also carries its
convention and its source, so that no table shows a formula without them.
"""

from __future__ import annotations

import functools
import statistics

import sympy as sp

from ..core import symbols as S
from ..collectives.algorithms import POW2, algorithms_of
from ..collectives.bounds import LOWER_BOUNDS
from ..core.cost import Cost, Traffic
from ..core.chapters import Chapter
from ..collectives.primitives import PRIMITIVES
from ..core.printing import latex, latex_lines, pulled, visible_length
from ..core.proof import DEFAULT, POWER_OF_TWO, AtLeast, Claim, Limit, Proof, check, is_definition

_GREEK = {S.alpha: r"\alpha", S.beta: r"\beta", S.gamma: r"\gamma",
          S.alpha_inter: r"\alpha_{\mathrm{inter}}", S.beta_inter: r"\beta_{\mathrm{inter}}"}


def time_latex(cost) -> str:
    """T = a·α + b·β + c·γ with the coefficients kept apart, as the literature tabulates; legs that run at once
    (``Cost.concurrent``) as e·max(s·β, c·β_inter), their elements out of the β and β_inter coefficients."""
    coeffs = dict(cost.coefficients)
    for e, stays, across in cost.concurrent:
        coeffs[S.beta] = sp.expand(coeffs.get(S.beta, 0) - e * stays)
        coeffs[S.beta_inter] = sp.expand(coeffs.get(S.beta_inter, 0) - e * across)
    parts = []
    for sym, coef in coeffs.items():
        coef = sp.sympify(coef, strict=True)
        if coef == 0:
            continue
        if not coef.has(sp.Piecewise):
            coef = pulled(coef)   # what latex() prints: 2(N−1) needs no brackets
        text = latex(coef)
        if coef.is_Add or (coef.is_Piecewise):
            text = rf"\left({text}\right)"
        parts.append(_GREEK[sym] if coef == 1 else rf"{text}\,{_GREEK[sym]}")
    for e, stays, across in cost.concurrent:
        legs = rf"\max\left({latex(stays)}\,{_GREEK[S.beta]},\ {latex(across)}\,{_GREEK[S.beta_inter]}\right)"
        e = pulled(sp.sympify(e, strict=True)) if not sp.sympify(e, strict=True).has(sp.Piecewise) else e
        text = latex(e)
        parts.append(rf"\left({text}\right)\,{legs}" if sp.sympify(e, strict=True).is_Add else rf"{text}\,{legs}")
    return " + ".join(parts) if parts else "0"


def _two_level(cost, intra, inter) -> str:
    """a + [b]_inter: the intra-node coefficient, then the inter-node one, expanded
    (2N/G − 2 reads better than −2(G − N)/G)."""
    across = cost.coefficient(inter)
    if across == 0:
        return latex(cost.coefficient(intra))
    return rf"{latex(cost.coefficient(intra))} + \left[{latex(sp.expand(across), pull_factors=False)}\right]_{{\mathrm{{inter}}}}"


def _exponent_of_two(x):
    """e when x = 2^e (a power of 2, of 4..., times a power of 2), else None."""
    coef, rest = x.as_coeff_Mul()
    if not (coef.is_Rational and coef > 0 and (coef.p & (coef.p - 1)) == 0 and (coef.q & (coef.q - 1)) == 0):
        return None
    shift = coef.p.bit_length() - coef.q.bit_length()
    if rest == 1:
        return sp.Integer(shift)
    if rest.is_Pow and rest.base.is_Integer and rest.base > 1 and (int(rest.base) & (int(rest.base) - 1)) == 0:
        return rest.exp * (int(rest.base).bit_length() - 1) + shift
    return None


def _scaled_power_of_two(x) -> bool:
    return (x.is_Mul or x.is_Pow) and not x.is_Number and _exponent_of_two(x) is not None


def at_power_of_two(expr) -> sp.Expr:
    """``expr`` as shown for an algorithm that runs only on N = 2ʲ ranks: ⌈log₂N⌉ is log₂N
    there, 2^⌈log₂N⌉ is N, and what these make equal collapses (⌈log₂N⌉ + log₂N is 2 log₂N,
    the max of N/4 and N/2 is N/2).  The printed form is proved equal to ``expr`` on that
    domain, or the build stops: the docs never show a formula the engine did not derive."""
    return _at_power_of_two(sp.sympify(expr, strict=True))


# once per expression in a process: the cheat sheet's power-of-two algorithms share most of their fields (45 asked in a
# build, 18 different), and each is a rewrite, a proof and a cancel
@functools.lru_cache(maxsize=1024)
def _at_power_of_two(expr: sp.Expr) -> sp.Expr:
    if not expr.has(S.log2_ceil(S.N), S.log2(S.N), S.OnesBelow):
        return expr
    j = sp.Symbol("j", integer=True, positive=True)
    # one pass: xreplace swaps a matched node whole, so ⌈log₂N⌉ and log₂N become j before any N inside them is
    # reached, and every node above is rebuilt (Max and Min evaluated) once, not once per pass
    at = expr.xreplace({S.log2_ceil(S.N): j, S.log2(S.N): j, S.N: 2 ** j})
    # 2^j/2 → 2^(j−1), so that ⌈log₂⌉ of it evaluates (to j − 1) and the max of the two collapses
    at = at.replace(_scaled_power_of_two, lambda x: 2 ** _exponent_of_two(x)).xreplace({})

    def back(power):           # 2^(a·j + c) → N^a · 2^c
        exponent = sp.expand(_exponent_of_two(power))
        a = exponent.coeff(j)
        return S.N ** a * sp.Integer(2) ** (exponent - a * j)
    shown = at.replace(lambda x: _scaled_power_of_two(x) and x.has(j), back).xreplace({j: S.log2(S.N)})
    shown = sp.cancel(shown) if not shown.has(sp.Max, sp.Min, S.log2_ceil(S.N)) else shown
    if not check(Claim(shown, expr, domain=POWER_OF_TWO)):
        raise ArithmeticError(f"at N = 2^j, {expr} was rewritten as {shown}, which could not be proved equal")
    return shown


def cost_row(cost, power_of_two: bool = False) -> dict:
    """A cost's printed fields; ``power_of_two`` for an algorithm that needs N = 2ʲ (its
    formulas are shown in log₂N, as the convention says: :func:`at_power_of_two`)."""
    if power_of_two:   # the printed fields only: the busier role's send and recv, already chosen
        cost = Cost(Traffic(at_power_of_two(cost.send), at_power_of_two(cost.recv)), at_power_of_two(cost.total),
                    tuple((sym, at_power_of_two(coef)) for sym, coef in cost.coefficients), None,
                    tuple((at_power_of_two(e), stays, across) for e, stays, across in cost.concurrent))
    return {
        "send": latex(cost.send),
        "recv": latex(cost.recv),
        "total": latex(cost.total),
        "alpha": _two_level(cost, S.alpha, S.alpha_inter),
        "beta": _two_level(cost, S.beta, S.beta_inter),
        "gamma": latex(cost.gamma),
        "time": time_latex(cost),
    }


# -- claims and derivations ----------------------------------------------------------------

_RELATION = {Claim: "=", AtLeast: r"\ge"}
_INLINE = 48      # a formula printed wider than this (visible_length) is displayed, not inline


def _domain_words(domain) -> str:
    """Where a claim is proved, said beside its name when it is narrower than every claim's (symbols ≥ 1, N ≥ 2): its
    powers of two and its least values, e.g. " (N a power of two; p ≥ 3)"; "" for the default domain."""
    if domain is None:
        return ""
    default = dict(DEFAULT.least)
    said = [f"{sym} a power of two" for sym in sorted(domain.power_of_two, key=str)]
    said += [f"{sym} ≥ {least}" for sym, least in domain.least if default.get(sym, 1) != least]
    return f" ({'; '.join(said)})" if said else ""


def claim_row(claim, proof: Proof | None = None) -> dict:
    """A claim as its two sides, printed apart.

    ``same`` is true when both sides print alike (a composed cost against the form typed
    from its source, say): the templates then show the expression once, as what both
    sides come to, instead of a line that reads as a tautology.  ``statement`` is the
    whole relation on one line."""
    if isinstance(claim, Limit):
        lhs = rf"\lim_{{{latex(claim.var)} \to {latex(claim.point)}}} {latex(claim.expr)}"
        rhs, relation = latex(claim.value), "="
        lhs_lines, rhs_lines = [lhs], [rhs]
    else:
        lhs, rhs, relation = latex(claim.lhs), latex(claim.rhs), _RELATION[type(claim)]
        lhs_lines, rhs_lines = latex_lines(claim.lhs), latex_lines(claim.rhs)
    same = lhs == rhs and not isinstance(claim, Limit)
    statement = f"{lhs} {relation} {rhs}"
    # for a display that breaks long formulas: the left side, then the relation and the right side
    lines = lhs_lines if same else lhs_lines + [f"{relation} {rhs_lines[0]}"] + rhs_lines[1:]
    return {"name": claim.name + _domain_words(getattr(claim, "domain", None)), "statement": statement, "lhs": lhs,
            "rhs": rhs, "lines": lines,
            "long": visible_length(lhs if same else statement) > _INLINE,
            "relation": relation, "same": same,
            "source": claim.source, "holds": None if proof is None else bool(proof),
            "definition": is_definition(claim)}


def derivation_row(derivation) -> dict:
    """The chain as the templates show it: a step that prints exactly as the one before
    (a composed cost and the form typed from the source, say) adds no row; its reason
    joins the row it repeats.  Every step is still proved (``Derivation.step_claims``)."""
    steps = []
    for i, step in enumerate(derivation.steps):
        relation = "" if i == 0 else ("=" if step.relation == "=" else r"\xrightarrow{N \to \infty}")
        text = latex(step.expr)
        if steps and step.relation == "=" and text == steps[-1]["latex"]:
            steps[-1]["reasons"].append(step.reason)
            steps[-1]["reason"] = "; ".join(steps[-1]["reasons"])
            continue
        lines = latex_lines(step.expr)
        lines[0] = f"{relation} {lines[0]}" if relation else lines[0]
        steps.append({"relation": relation, "latex": text, "lines": lines, "reason": step.reason,
                      "reasons": [step.reason]})
    return {"title": derivation.title, "lhs": derivation.lhs, "convention": derivation.convention,
            "source": derivation.source, "steps": steps,
            "claims": [claim_row(c) for c in derivation.claims]}


def cell(value) -> dict:
    """One table cell: math (printed by SymPy) or text, already formatted."""
    if isinstance(value, bool):
        return {"math": False, "text": "yes" if value else "no"}
    if isinstance(value, int):
        return {"math": False, "text": f"{value:,}"}
    if isinstance(value, float):
        return {"math": False, "text": f"{value:.6g}"}
    if isinstance(value, sp.Basic):
        return {"math": True, "text": latex(value)}
    return {"math": False, "text": str(value)}


#: a text column whose widest cell is longer than this (characters) wraps in the LaTeX document
WRAP_AT = 40
#: the characters the unwrapped columns of a table with wrapping ones may hold side by side: the wrapping ones take half
#: the line, and \scriptsize text fills the other half at about this many characters
BESIDE_WRAPPED = 70


def wrapping_columns(widest: list[int]) -> list[bool]:
    """Which columns wrap, given each column's widest cell (characters): every column wider than WRAP_AT, and then, while
    the columns left unwrapped beside them would not fit in the other half of the line, the widest of those too."""
    wide = [w > WRAP_AT for w in widest]
    while any(wide) and sum(w for w, x in zip(widest, wide) if not x) > BESIDE_WRAPPED:
        wide[max((w, i) for i, (w, x) in enumerate(zip(widest, wide)) if not x)[1]] = True
    return wide


def table_context(table) -> dict:
    rows = [[cell(v) for v in row] for row in table.rows]
    # the LaTeX column types: l, or a wrapping column for long prose and identifiers (its share of the line by
    # how many such columns there are), so a table stays within the page
    widest = [max([len(table.columns[i])] + [len(r[i]["text"]) for r in rows if not r[i]["math"]])
              for i in range(len(table.columns))]
    wide = wrapping_columns(widest)
    share = 0.5 / max(1, sum(wide))
    spec = "".join(f">{{\\raggedright\\arraybackslash}}p{{{share:.2f}\\linewidth}}" if w else "l" for w in wide)
    return {"title": table.title, "columns": list(table.columns), "caption": table.caption,
            "source": table.source, "rows": rows, "latex_columns": spec}


def chapter_context(chapter: Chapter, proofs: dict | None = None) -> dict:
    proofs = proofs or {}
    return {
        "tables": [table_context(t) for t in chapter.all_tables()],
        "number": chapter.number, "slug": chapter.slug, "title": chapter.title, "intro": chapter.intro,
        "derivations": [derivation_row(d) for d in chapter.derivations],
        "claims": [claim_row(c, proofs.get(id(c))) for c in chapter.claims],
        # the claims proved, as the cheat sheet's total counts them: the definitions (true by construction) apart
        "claim_count": sum(1 for c in chapter.all_claims() if not is_definition(c)),
        "definition_count": sum(1 for c in chapter.all_claims() if is_definition(c)),
    }


# -- the cheat sheet -------------------------------------------------------------------------

def primitive_rows() -> list[dict]:
    """The source article's §1.5 comparison table, from the primitives' own data."""
    rows = []
    for p in PRIMITIVES.values():
        senders, receivers = p.pattern.split("→")
        rows.append({"title": p.title, "name": p.name, "senders": senders, "receivers": receivers,
                     "reduces": "yes" if p.reduces else "no", "summary": p.summary, "use": p.use,
                     "input": latex(p.input_elements), "output": latex(p.output_elements)})
    return rows


def algorithm_rows() -> list[dict]:
    rows = []
    for p in PRIMITIVES.values():
        for alg in algorithms_of(p.name):
            rows.append({"primitive": p.title, "primitive_name": p.name, "name": alg.name,
                         "summary": alg.summary, "source": alg.source,
                         "requires": "; ".join(r.text for r in alg.requires) or "any N",
                         "composed_of": " + ".join(f"{ph.primitive}/{ph.algorithm}" for ph in alg.phases),
                         **cost_row(alg.cost, POW2 in alg.requires)})
    return rows


def bound_rows() -> list[dict]:
    return [{"primitive": PRIMITIVES[name].title, "source": source, **cost_row(bound)}
            for name, (bound, source) in LOWER_BOUNDS.items()]


def _strategy_subjects():
    from ..training.subjects import every

    return [sub for sub in every() if sub.kind == "strategy"]


def strategy_rows() -> list[dict]:
    from ..training.subjects import aliases

    rows = []
    for sub in _strategy_subjects():
        cost = sub.cost
        rows.append({"name": sub.name, "aliases": ", ".join(a for a, own in aliases().items() if own == sub.name),
                     "title": sub.title,
                     "options": ", ".join(f"{n}={v}" for n, v in sub.options.items()),
                     "source": sub.source, "convention": sub.convention,
                     "send": latex(cost.send), "total": latex(cost.total),
                     # a time that depends on where groups land (Piecewise) is shown per chapter
                     "time": None if cost.time.has(sp.Piecewise) else time_latex(cost),
                     "terms": [{"label": t.label, "collective": t.primitive, "algorithm": t.algorithm,
                                "group": latex(t.group), "message": latex(t.message), "count": latex(t.count)}
                               for t in sub.terms]})
    return rows


def symbol_rows() -> list[dict]:
    return [{"latex": latex(info.symbol), "cli": info.cli_name, "meaning": info.meaning, "unit": info.unit,
             # a count may be 0 where the symbol says so (E_s, q_lora, L_first: nonnegative, not positive)
             "assumption": ("positive integer" if info.symbol.is_positive else "integer ≥ 0")
             if info.symbol.is_integer else ("positive real" if info.symbol.is_positive else "real ≥ 0")}
            for info in S.SYMBOLS.values()]


# -- the source article's pictures, executed -----------------------------------------------------------

_LETTERS = "ABCDEFGH"


def _picture_inputs(primitive, n: int):
    """Labelled buffers: rank r's data is named by letter r (block j gets subscript j)."""
    import numpy as np

    # the smallest M that shows the primitive: N blocks where it splits or joins blocks
    # (or exchanges them), one element otherwise, as the source article draws them
    splits = S.M / S.N in (primitive.input_elements, primitive.output_elements)
    message = n if splits or primitive.name == "all_to_all" else 1
    blocks = int(sp.sympify(primitive.input_elements, strict=True).subs({S.N: n, S.M: message}))

    def buffer(rank):
        if blocks == 1:
            return np.array([sp.Symbol(_LETTERS[rank])], dtype=object)
        return np.array([sp.Symbol(f"{_LETTERS[rank]}_{j}") for j in range(blocks)], dtype=object)
    inputs = [buffer(r) for r in range(n)]
    if primitive.name in ("broadcast", "scatter"):
        inputs = [inputs[0]] + [None] * (n - 1)
    if primitive.name == "send_recv":
        inputs = [inputs[0], None]
    return inputs


def picture_rows(n: int = 4) -> list[dict]:
    """Each primitive's definition run on labelled data: what every GPU holds before and after."""
    rows = []
    for p in PRIMITIVES.values():
        ranks = 2 if p.name == "send_recv" else n
        inputs = _picture_inputs(p, ranks)
        outputs = p.define(inputs)
        show = lambda buf: "" if buf is None else ", ".join(latex(x) for x in buf)
        rows.append({"title": p.title, "ranks": list(range(ranks)),
                     "before": [show(x) for x in inputs], "after": [show(x) for x in outputs]})
    return rows


def usage_rows() -> list[dict]:
    """Which collectives each strategy is made of (the source article's §1.6 'key applications')."""
    return [{"name": sub.name, "title": sub.title,
             "collectives": ", ".join(dict.fromkeys(PRIMITIVES[t.primitive].title for t in sub.terms))}
            for sub in _strategy_subjects()]


# -- the speed page (a committed result of python -m symcomm.tools.bench) ------------------------------------

def _seconds(x: float) -> str:
    if x >= 1:
        return f"{x:.2f} s"
    if x >= 1e-3:
        return f"{x * 1e3:.1f} ms"
    return f"{x * 1e6:.2f} µs"


def _figure(goal: dict) -> str:
    """A goal's figure in the unit the bench says it is in (a ratio, seconds or microseconds), with the CPU median
    of one call beside a ratio whose goal bounds the call too."""
    value = goal["figure"]
    if value is None:
        return "—"
    unit = goal["unit"]
    if unit == "µs":
        shown = f"{value:.2f} µs"
    elif unit == "s":
        shown = f"{value:.2f} s"
    else:
        shown = f"{value:,.0f}×" if value >= 100 else f"{value:.2f}×"
    if goal.get("per_call_s") is not None:
        shown += f", {_seconds(goal['per_call_s'])} a call"
    return shown


def speed_page(report: dict, environment=None) -> str:
    """docs/speed.md from a ``python -m symcomm.tools.bench`` report: the one rendering the docs build
    (``environment``: its Markdown environment) and the bench's own writer share."""
    if environment is None:
        import jinja2

        from ..core.printing import markdown_text
        from ..templates import FOLDER

        # the docs build's Markdown settings (build_docs.environments), so both write the same bytes
        environment = jinja2.Environment(loader=jinja2.FileSystemLoader(str(FOLDER)), undefined=jinja2.StrictUndefined,
                                         keep_trailing_newline=True, trim_blocks=False)
        environment.filters["md"] = markdown_text
    return environment.get_template("markdown/speed.md.j2").render(**speed_context(report))


def speed_context(report: dict) -> dict:
    """Rows of the speed page from a ``python -m symcomm.tools.bench`` report (numbers formatted here)."""
    goals = []
    for goal in report["goals"]:
        m = goal["measured"]
        detail = ""
        if "a" in m and "b" in m:
            # the CPU median beside the minimum: a goal with a per-call bound is judged on the median
            detail = (f"A {_seconds(m['a']['wall_min_s'])} (CPU {_seconds(m['a']['cpu_min_s'])}, median "
                      f"{_seconds(m['a']['cpu_median_s'])}), "
                      f"B {_seconds(m['b']['wall_min_s'])} (CPU {_seconds(m['b']['cpu_min_s'])}, median "
                      f"{_seconds(m['b']['cpu_median_s'])}); "
                      f"A/B, the median of the rounds' ratios: {m['ratio_wall_median_of_rounds']:.3g}")
        elif "a" in m:
            detail = f"wall {_seconds(m['a']['wall_min_s'])} (median {_seconds(m['a']['wall_median_s'])}), " \
                     f"CPU {_seconds(m['a']['cpu_min_s'])}"
        elif "speedup" in m:
            detail = ", ".join(f"{k.replace('_', ' ')} {_seconds(m['ours_per_configuration_s'][k])} "
                               f"({v:,.1f}×)" for k, v in m["speedup"].items()) + \
                     f"; llm-analysis {_seconds(m['llm_analysis_s'])}"
        elif "bytes_before" in goal:
            # the page's views: each one's first renders (ms) and what it loaded before the first
            detail = "; ".join(f"{ident}: median {statistics.median(v['first_render_ms']):.0f} ms (least "
                               f"{min(v['first_render_ms']):.0f}, most {max(v['first_render_ms']):.0f}), "
                               f"{v['bytes_before']:,} bytes in {len(v['files_before'])} files before it"
                               for ident, v in m.items())
        elif "ours_per_configuration_s" in m:
            detail = ", ".join(f"{k.replace('_', ' ')} {_seconds(v)}" for k, v in m["ours_per_configuration_s"].items())
        goals.append({"goal": goal["goal"], "target": goal["target"], "figure": _figure(goal),
                      "met": {True: "yes", False: "**no**", None: "skipped"}[goal["met"]], "what": goal["what"],
                      "detail": detail})
    machine = report["machine"]
    scaling = [{"gpus": f"{row['gpus']:,}", "batch": f"{row['batch']:,}", "layouts": f"{row['layouts_considered']:,}",
                "warm": _seconds(row["plan_in_process_s"]), "cold": _seconds(row["cold_wall_min_s"]),
                "cold_cpu": _seconds(row["cold_cpu_min_s"])} for row in report["scaling"]["gpus"]]
    space = [{"fixed": row["fixed"], "layouts": f"{row['layouts_considered']:,}",
              "warm": _seconds(row["plan_in_process_s"])} for row in report["scaling"]["search_space"]]
    return {"goals": goals, "scaling": scaling, "search_space": space, "method": report["method"],
            "machine": (f"{machine['cpus']} CPUs, Python {machine['python']}, numpy {machine['numpy']}, "
                        f"SymPy {machine['sympy']}; load average {machine['load_average_at_start'][0]:.1f} at the "
                        f"start, {machine['load_average_at_end'][0]:.1f} at the end"),
            "seconds": f"{report['seconds']:.0f} s"}
