"""What a plan's printed code may hold as text (:mod:`symcomm.training.hybridplan`,
:mod:`symcomm.training.primitiveplan`): every value of the data or of a call is a parameter's default
(:class:`Constants`), never text of the code; only the program's own words (:func:`word`) and whole numbers checked
to be ints (:func:`digits`) are printed as themselves.  One place, so both printers refuse the same things."""

from __future__ import annotations


class Constants:
    """The printed code's constants: each a parameter of its own, its value the parameter's default (a word or a
    whole number met again is the same parameter, and so is a tuple or mapping of those equal to one met before,
    such as a row's words made again for a plan's second fill; any other object by identity)."""

    def __init__(self):
        self.values: list = []
        self.index: dict = {}

    def __call__(self, value) -> str:
        # one parameter less is one default less copied into every call's frame; the printed code never changes a
        # constant (it copies a mapping before setting a value), so two equal ones are one
        key = _content(value)
        if key is None:
            key = id(value)
        if key not in self.index:
            self.index[key] = len(self.values)
            self.values.append(value)
        return f"_k{self.index[key]}"


def _content(value):
    """``value`` as a key equal for equal values of the same types throughout: words, whole numbers, truth values and
    None, in tuples and mappings; None for anything else (a float: 0.0 and -0.0 are equal; an object: by identity)."""
    kind = type(value)
    if kind in (str, int, bool) or value is None:
        return kind, value
    if kind is tuple:
        items = tuple([_content(item) for item in value])
    elif kind is dict:
        items = tuple([(_content(name), _content(item)) for name, item in value.items()])
        if any(part is None for pair in items for part in pair):
            return None
        return kind, items
    else:
        return None
    return None if any(item is None for item in items) else (kind, items)


def word(words: frozenset, text: str) -> str:
    """``text`` printed as itself, when it is one of the program's own ``words`` (a key every answer has)."""
    if text not in words:
        raise ValueError(f"not a word every answer has: {text!r}")
    return repr(text)


def digits(number) -> str:
    """A whole number of the data printed as its digits, nothing else."""
    if type(number) is not int:
        raise ValueError(f"not an int: {number!r}")
    return str(number)
