"""Element types and human-readable quantities.

Formulas count elements; bytes = elements × bytes per element.  Sizes use binary
prefixes (KiB = 2¹⁰ bytes); times use SI prefixes.
"""

from __future__ import annotations

from .errors import InputError

#: dtype name → bytes per element
DTYPES: dict[str, int] = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1}


def bytes_per_element(dtype: str) -> int:
    """Bytes per element of a dtype name, or of a positive integer given as text."""
    if dtype in DTYPES:
        return DTYPES[dtype]
    if isinstance(dtype, str) and dtype.isascii() and dtype.isdigit() and len(dtype) <= 3 and 1 <= int(dtype) <= 64:
        return int(dtype)
    shown = dtype if len(str(dtype)) <= 20 else str(dtype)[:17] + "..."
    raise InputError(f"--dtype {shown!r} is not allowed; choose one of {', '.join(DTYPES)} "
                     "or a whole number of bytes per element from 1 to 64")


_SIZES = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")


def human_size(count: float, unit: str = "bytes") -> str:
    """1610612736 bytes → '1.50 GiB'; elements get SI-free grouping instead."""
    if unit != "bytes":
        return f"{count:,} elements" if isinstance(count, int) else f"{count:,.6g} elements"
    value, index = float(count), 0
    while abs(value) >= 1024 and index < len(_SIZES) - 1:
        value /= 1024
        index += 1
    return f"{int(count)} B" if index == 0 and float(count).is_integer() else f"{value:.2f} {_SIZES[index]}"


def human_time(seconds: float) -> str:
    """0.0123 → '12.3 ms'."""
    for scale, name in ((1, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")):
        if abs(seconds) >= scale:
            return f"{seconds / scale:.3g} {name}"
    return f"{seconds:.3g} s"


# -- link rates: bits vs bytes, stated once ----------------------------------------------------------

_RATE_UNITS = {"b/s": 1 / 8, "bps": 1 / 8, "B/s": 1.0}
_RATE_PREFIXES = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def rate_bytes_per_second(text: str) -> float:
    """'400 Gb/s' → 5e10 bytes/s; '900 GB/s' → 9e11.  Lower-case b is bits (÷ 8), upper-case B
    bytes; prefixes are decimal (G = 10⁹), as link and network rates are quoted."""
    import re

    match = re.fullmatch(r"\s*([0-9.]+(?:[eE][-+]?\d+)?)\s*([KMGT]?)(b/s|bps|B/s)\s*", text)
    if not match:
        raise ValueError(f"rate {text!r} is not allowed; write e.g. 400 Gb/s (bits) or 900 GB/s (bytes)")
    number, prefix, unit = match.groups()
    return float(number) * _RATE_PREFIXES[prefix] * _RATE_UNITS[unit]


def human_rate(bytes_per_second: float) -> str:
    """5e10 → '50 GB/s (400 Gb/s)': bytes and bits, decimal prefixes."""
    for scale, name in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "K"), (1, "")):
        if abs(bytes_per_second) >= scale:
            return f"{bytes_per_second / scale:.4g} {name}B/s ({bytes_per_second * 8 / scale:.4g} {name}b/s)"
    return f"{bytes_per_second:.4g} B/s"
