"""What a plan's printed code may hold as text (:mod:`symcomm.training.hybridplan`,
:mod:`symcomm.training.primitiveplan`): every value of the data or of a call is a parameter's default
(:class:`Constants`), never text of the code; only the program's own words (:func:`word`) and whole numbers checked
to be ints (:func:`digits`) are printed as themselves.  One place, so both printers refuse the same things."""

from __future__ import annotations


class Constants:
    """The printed code's constants: each a parameter of its own, its value the parameter's default (a word or a
    whole number met again is the same parameter; any other object by identity)."""

    def __init__(self):
        self.values: list = []
        self.index: dict = {}

    def __call__(self, value) -> str:
        key = (type(value), value) if isinstance(value, (str, int)) else id(value)
        if key not in self.index:
            self.index[key] = len(self.values)
            self.values.append(value)
        return f"_k{self.index[key]}"


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
