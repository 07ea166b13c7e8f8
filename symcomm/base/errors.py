"""The exceptions symcomm raises on purpose.

Every front end (the CLI, ``build_docs.py``, a user's script) catches :class:`SymcommError`
and reports it in one line; the CLI exits with status 2 for an :class:`InputError`.
An :class:`InputError` is also a :class:`ValueError`, so code written against the earlier
releases (``except ValueError``) keeps working.  The message names the parameter (or the
file and the field) and what is allowed: it is meant to be shown to the user as it is.
"""

from __future__ import annotations


class SymcommError(Exception):
    """Base of every error symcomm raises deliberately."""


class InputError(SymcommError, ValueError):
    """Bad input (a value, an option, a file): one line naming it and what is allowed."""


class OutputError(InputError, OSError):
    """An output path symcomm refuses or fails to write (not a regular file, missing folder,
    disk full...).  Also an :class:`OSError`, which is what a failed write has always been."""
