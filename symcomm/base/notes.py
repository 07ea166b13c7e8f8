"""Notes: what symcomm says beside an answer, collected as values and never printed here.

The library returns and only the commands print (ARCHITECTURE.md).  A note is added wherever
the reason for it is known (a preset filled a value, a typed value went unused); whoever asked
collects them with :func:`collected`: the command line prints them after its answer (the ones
that only restate a default with ``--verbose`` only) and prints none when the command is
refused, so a refusal is one line; the Python API returns them in its ``Result``.  With no
collector (a caller of the engine's functions), a note goes nowhere.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True)
class Note:
    text: str
    #: true when the note only says which default was taken (shown with ``--verbose``); false when
    #: it tells the user something the answer alone would hide (a value typed but not used)
    restates_default: bool = False
    #: the names a value was typed for and no formula of the answer read (the note's "N not used by …"), so that a
    #: caller gathering many answers' notes (calibrate-step over a file of runs) groups them by name, not by text
    unread: tuple = ()


_BUCKET: ContextVar[list | None] = ContextVar("symcomm_notes", default=None)


def add(text: str, *, restates_default: bool = False, unread: tuple = ()) -> None:
    bucket = _BUCKET.get()
    if bucket is not None and _unsaid(bucket, text):
        bucket.append(Note(text, restates_default, tuple(unread)))


def extend(held) -> None:
    """Add the notes ``held`` (Notes said before: one collection's, so each text once) under :func:`add`'s rule,
    each note itself: a Note is immutable, so the one said before serves again (a warm API call says its plan's
    notes without building them anew)."""
    bucket = _BUCKET.get()
    if bucket is not None and not bucket:
        bucket.extend(held)     # nothing said yet, and ``held``, one collection's, says each text once
    elif bucket is not None:
        for note in held:
            if _unsaid(bucket, note.text):
                bucket.append(note)


def _unsaid(bucket: list, text: str) -> bool:
    # the one rule of both: a text said once in a collection is not said again
    for note in bucket:
        if note.text == text:
            return False
    return True


class collected:
    """Collect the notes added inside the ``with`` block into the list it yields (a class, not a generator:
    the Python API enters one per call, and this costs a third of a generator-based context manager)."""

    __slots__ = ("bucket", "token")

    def __enter__(self) -> list[Note]:
        self.bucket: list[Note] = []
        self.token = _BUCKET.set(self.bucket)
        return self.bucket

    def __exit__(self, *exc) -> bool:
        _BUCKET.reset(self.token)
        return False


def shown(bucket: list[Note], verbose: bool) -> list[str]:
    """The lines a command prints: every note that says more than a default; all with ``verbose``."""
    return [f"symcomm: note: {n.text}" for n in bucket if verbose or not n.restates_default]


def add_flag(parser) -> None:
    """Give a command's argparse parser the ``--verbose`` flag that :func:`shown` reads."""
    if "--verbose" not in parser._option_string_actions:
        parser.add_argument("-v", "--verbose", action="store_true",
                            help="also print the notes that only say which default was taken")
