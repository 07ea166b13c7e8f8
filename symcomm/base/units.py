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
        if isinstance(count, int) or float(count).is_integer():
            return f"{int(count):,} elements"
        # a fractional count (a mean share) to two decimals, not six significant digits
        return f"{float(count):,.2f} elements"
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
