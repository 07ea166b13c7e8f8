"""The KEY=VALUE words of ``eval`` and ``compare`` before any formula: split into values and options, their
other spellings, bandwidths and sizes with a unit turned into the symbols' own values, the time constants'
names and units.  SymPy-free (stdlib and ``symcomm.base``), so that the primitives' fast path
(:mod:`symcomm.training.fasteval`) and the SymPy binding (:mod:`symcomm.training.binding`) read the same words
the same way: one code path, not two.
"""

from __future__ import annotations

from ..base import notes
from ..base.errors import InputError
from ..base.units import bytes_per_element

#: bad input: reported in one line, exit status 2 by the CLI
UsageError = InputError

#: the time constants' CLI names: those of ``symbols.TIME_SYMBOLS`` (written out here, without SymPy;
#: ``tests/training/test_fasteval.py`` holds the two equal)
TIME_NAMES = frozenset(("alpha", "alpha_inter", "beta", "beta_inter", "gamma"))
#: the time constants that count messages, not elements (× 1, not × bytes per element)
PER_MESSAGE_NAMES = frozenset(("alpha", "alpha_inter"))
_TIME_NAMES = TIME_NAMES


#: parameter names the CLI accepts besides the symbols' own names
ALIASES = {"gpus_per_node": "G"}
#: how an error names a parameter that has another spelling: both, so the user finds the one they typed
_SPELLED = {key: f"{key} ({typed})" for typed, key in ALIASES.items()}
def split_assignments(items: list[str], target_options: set[str]) -> tuple[dict, dict]:
    """KEY=VALUE words → (symbol values as text, option values as text)."""
    values, options = {}, {}
    for item in items:
        if "=" not in item:
            raise UsageError(f"{item!r} is not KEY=VALUE; write for example N=8 M=1073741824")
        key, text = item.split("=", 1)
        typed = key.strip()
        if not typed:
            raise UsageError(f"{item!r} is not KEY=VALUE: the name before '=' is empty; write for example N=8")
        key = ALIASES.get(typed, typed)
        if key in values or key in options:
            raise UsageError(f"{typed} is given twice; give each parameter once")
        if key in target_options:
            options[key] = text
        else:
            values[key] = text
    return values, options


#: the one rule for time constants, said in --help, the README and every output
TIME_RULE = ("alpha, alpha_inter: seconds per message; beta, beta_inter: seconds per byte moved, gamma: seconds per "
             "byte reduced (bytes = elements × --dtype, bf16 when a time is asked without it); or bw=50GB/s, "
             "bw_inter=400Gb/s per direction instead of beta, beta_inter")
_TIME_UNITS = {"alpha": "s/message", "alpha_inter": "s/message", "beta": "s/byte", "beta_inter": "s/byte",
               "gamma": "s/byte reduced"}


def _with_units(texts: dict, dtype: str | None) -> tuple[dict, str | None, dict]:
    """Bandwidths (bw=50GB/s → beta) and sizes with a unit (M=1GiB → elements of --dtype) turned into the
    symbols' own values; --dtype defaults to bf16 (said in a note) once a time or a byte size is given, since
    β and γ are per byte.  Returns (texts, dtype, how each converted value was derived)."""
    from ..base.inputs import SIZE_UNITS, parse_bandwidth, parse_size_bytes, split_unit

    out, derived = dict(texts), {}
    for key, target in (("bw", "beta"), ("bw_inter", "beta_inter")):
        if key in out:
            if target in out:
                raise UsageError(f"give {key} or {target}, not both ({target} = 1 / {key})")
            try:
                rate = parse_bandwidth(key, out.pop(key))
            except InputError as err:
                raise UsageError(str(err)) from None
            out[target] = repr(1.0 / rate)
            derived[target] = f"1 / {key} = 1 / ({rate:g} bytes/s)"
    sized = "M" in out and split_unit(out["M"], SIZE_UNITS)[1] is not None
    if dtype is None and (sized or any(key in out for key in _TIME_NAMES)):
        dtype = "bf16"
        notes.add("--dtype bf16 (2 bytes per element): beta and gamma are seconds per byte; give "
              "--dtype to change it", restates_default=True)
    if sized:
        try:
            nbytes = parse_size_bytes("M", out["M"])
        except InputError as err:
            raise UsageError(str(err)) from None
        size = bytes_per_element(dtype)
        if nbytes % size:
            raise UsageError(f"M={out['M']} is not a whole number of {dtype} elements ({size} bytes each)")
        derived["M"] = f"{out['M']} / {size} bytes per {dtype} element"
        out["M"] = str(nbytes // size)
    return out, dtype, derived
