"""The command layer's one parser class and its one mapping from errors to exit statuses.

Both entries of the ``symcomm`` command use them: :func:`symcomm.commands.main.main` (every subcommand) and
:func:`symcomm.commands.plan.main` (``symcomm plan``, which must start without SymPy, so this module imports
nothing that loads it: errors, notes, units).  What a command prints is decided here once:

* its answer (the subcommand's ``run(args)`` prints it, on stdout);
* then the notes collected while it ran (:mod:`symcomm.base.notes`; the ones that only restate a default
  with ``--verbose``), on stderr — none before or instead of a refusal;
* bad input of any kind (a usage error of argparse, a :class:`~symcomm.base.errors.SymcommError`, a
  ``ValueError``): one line ``symcomm: error: ...`` on stderr and exit status 2;
* a closed pipe (``symcomm list | head``): exit 0, quietly, as a filter should; Ctrl-C: exit 130.
"""

from __future__ import annotations

import argparse
import sys

from ..base import notes
from ..base.errors import InputError, SymcommError
from ..base.units import bytes_per_element

#: exit statuses (a failed proof's 1 is the ``prove`` command's own answer)
BAD_INPUT = 2
INTERRUPTED = 130   # 128 + SIGINT, as a shell reports it
#: an error line longer than this is cut (a message quoting a whole file would drown the terminal); a message naming
#: the hybrid strategy's whole label and its needed names is over 500 characters, and is read whole
LONGEST_ERROR = 1000


class Parser(argparse.ArgumentParser):
    """argparse whose usage errors (a missing value, an unknown flag, a bad choice) are raised as one
    :class:`InputError` instead of printing the usage and exiting: :func:`run` reports it in one line."""

    def error(self, message):
        raise InputError(message)

    def parse_known_args(self, args=None, namespace=None):
        # argparse keeps the last of an option given twice (--gpus 8 --gpus 16): refused, as KEY=VALUE words given
        # twice are, rather than one of the two silently dropped
        counted: dict = {}
        for word in args or ():
            action = self._option_string_actions.get(str(word).split("=", 1)[0]) if str(word).startswith("-") else None
            if isinstance(action, argparse._StoreAction):
                counted[action.dest] = counted.get(action.dest, 0) + 1
                if counted[action.dest] == 2:
                    raise InputError(f"{action.option_strings[-1]} is given twice; give it once")
        return super().parse_known_args(args, namespace)


def one_line(err: BaseException) -> str:
    """The error's message as one line (whitespace folded), cut at :data:`LONGEST_ERROR` characters."""
    text = " ".join(str(err).split())
    return text if len(text) <= LONGEST_ERROR else text[:LONGEST_ERROR - 3] + "..."


def _shown(word: str) -> str:
    # a word with spaces or control characters is quoted, so the one error line stays one line
    return word if word and word.isprintable() and not any(c.isspace() for c in word) else repr(word)


def _actions(parser: argparse.ArgumentParser):
    """Every option of ``parser`` and of its subcommands' parsers."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _actions(sub)
        elif action.option_strings:
            yield action


#: the options naming a file to write: each command refuses an empty one with the path it expects
#: (base.files.check_output and the commands' own words)
_WRITES = frozenset({"-o", "--output", "--plot"})


def _refuse_empty(parser: argparse.ArgumentParser, args, argv: list[str]) -> None:
    """An option given an empty value (``--hardware "$HW"`` with HW unset) is refused by its name: read as not
    given it answered another question (counts without a time, the default dtype) in silence."""
    for action in _actions(parser):
        if getattr(args, action.dest, None) == "" and action.nargs is None and not _WRITES & set(action.option_strings):
            typed = next((s for s in action.option_strings if s in argv), action.option_strings[-1])
            raise InputError(f"{typed} '' is empty: give it a value or leave the option out")


def run(parser: argparse.ArgumentParser, argv: list[str] | None) -> int:
    """Parse ``argv`` with ``parser`` (built from :class:`Parser`, each subcommand setting ``run``), run
    the subcommand, print its notes after its answer, and return the exit status."""
    try:
        # KEY=VALUE words may follow options (eval all_reduce --algorithm ring N=8 M=8): argparse
        # leaves those after an option unparsed, so they are given to the command's ``assignments``
        args, extra = parser.parse_known_args(argv)
        stray = [word for word in extra if word.startswith("-") or "=" not in word]
        if stray or (extra and not hasattr(args, "assignments")):
            raise InputError(f"unrecognized arguments: {' '.join(_shown(w) for w in stray or extra)}")
        if extra:
            args.assignments = list(args.assignments) + extra
        _refuse_empty(parser, args, argv or [])
        if getattr(args, "dtype", None):
            bytes_per_element(args.dtype)   # a bad --dtype is named before anything is computed
        with notes.collected() as said:
            code = args.run(args)
        # after the answer, and never before a refusal (which leaves this block by its exception)
        for line in notes.shown(said, getattr(args, "verbose", False)):
            print(line, file=sys.stderr)
        return code
    except (SymcommError, ValueError) as err:
        print(f"symcomm: error: {one_line(err)}", file=sys.stderr)
        return BAD_INPUT
    except BrokenPipeError:
        # the reader left: stop quietly (closing stderr keeps Python from reporting the pipe at exit)
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        print("symcomm: interrupted", file=sys.stderr)
        return INTERRUPTED


def run_one(register_cli, argv: list[str] | None) -> int:
    """One subcommand's entry without the rest of the CLI (``symcomm plan``, ``symcomm eval``: their modules
    start without SymPy): its ``register_cli`` on :class:`Parser`, the notes' ``--verbose`` flag, :func:`run`."""
    parser = Parser(prog="symcomm")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    register_cli(commands)
    for command in commands.choices.values():
        notes.add_flag(command)
    return run(parser, argv)
