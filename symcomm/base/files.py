"""Reading and writing files: regular files only, size-capped reads, umask-respecting writes.

symcomm writes only what the user asked for, at the path given: a regular file, replaced
atomically (a temporary file beside it, then ``os.replace``), created with the user's
umask (0644 under umask 022) or, when it replaces a regular file, with that file's
permission bits (a 0640 file stays 0640: replacing it must not widen who may read it),
never through a symbolic link, never over a device, FIFO, socket or directory.  A path that
names a folder (``out/``, ``.``, ``..``) or is empty is refused, not turned into a file name.  A path is checked before any long work starts
(:func:`check_output`), so a bad path never costs a finished measurement.  Reads are
capped in size and refuse anything that is not a regular file (``/dev/zero``, a FIFO).
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

from .errors import InputError, OutputError

KIB = 1024
MIB = 1024 * KIB


def read_capped(path, limit: int, what: str) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes, or InputError naming ``what``."""
    name = os.fspath(path)
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise InputError(f"{what} {name!r}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{what} {name!r}: is a directory; give a file") from None
    except OSError as err:
        raise InputError(f"{what} {name!r}: cannot be read ({err.strerror})") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise InputError(f"{what} {name!r}: is a directory; give a file")
        if not stat.S_ISREG(info.st_mode):
            raise InputError(f"{what} {name!r}: not a regular file (a device, FIFO or socket); give a file")
        if info.st_size > limit:
            raise InputError(f"{what} {name!r}: {info.st_size:,} bytes is too large; at most {limit:,}")
        os.set_blocking(fd, True)
        chunks, size = [], 0
        while True:
            chunk = os.read(fd, min(MIB, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                raise InputError(f"{what} {name!r}: too large; at most {limit:,} bytes")
        return b"".join(chunks)
    except OSError as err:
        raise InputError(f"{what} {name!r}: cannot be read ({err.strerror})") from None
    finally:
        os.close(fd)


def check_output(path, what: str = "-o") -> Path:
    """``path`` if symcomm may write a regular file there; else OutputError in one line.

    Allowed: a path whose folder exists, that is absent or a regular file (not a
    symbolic link).  Nothing is created.  The path is judged as typed: ``Path`` would read
    ``out.json/`` as ``out.json`` and ``''`` as ``.``, so a trailing separator or an empty
    path is refused here, before it is normalised.
    """
    raw = os.fspath(path)
    if isinstance(raw, bytes):
        raw = os.fsdecode(raw)
    if raw == "":
        raise OutputError(f"{what} '': is empty; give a file name")
    separators = tuple(sep for sep in (os.sep, os.altsep) if sep)
    if raw.endswith(separators) or os.path.basename(raw) in (".", ".."):
        raise OutputError(f"{what} {raw!r}: names a folder, not a file (it ends in "
                          f"{raw[-1] if raw.endswith(separators) else os.path.basename(raw)!r}); give a file name, "
                          "e.g. out/result.json")
    path = Path(raw)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        info = None
    except OSError as err:
        raise OutputError(f"{what} {str(path)!r}: cannot be checked ({err.strerror})") from None
    if info is not None:
        if stat.S_ISLNK(info.st_mode):
            raise OutputError(f"{what} {str(path)!r}: is a symbolic link; give the file it points to "
                              "(symcomm does not write through links)")
        if stat.S_ISDIR(info.st_mode):
            raise OutputError(f"{what} {str(path)!r}: is a directory; give a file name")
        if not stat.S_ISREG(info.st_mode):
            raise OutputError(f"{what} {str(path)!r}: not a regular file (a device, FIFO or socket); "
                              "symcomm writes regular files only")
    parent = path.parent
    if not parent.is_dir():
        raise OutputError(f"{what} {str(path)!r}: folder {str(parent)!r} does not exist; create it first "
                          "(nothing was written)")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(f"{what} {str(path)!r}: folder {str(parent)!r} is not writable (nothing was written)")
    return path


def refuse_overwriting(path, read: list, what: str = "-o") -> None:
    """OutputError where ``path`` is a file the command reads (``read``: (its option or name, its path) pairs):
    writing there would replace the measurements the answer comes from.  Paths that do not exist are not compared."""
    for name, source in read:
        try:
            same = os.path.samefile(path, source)
        except (OSError, ValueError, TypeError):
            continue
        if same:
            raise OutputError(f"{what} {os.fspath(path)!r}: is {name} {os.fspath(source)!r}, which this command "
                              "reads; writing there would replace it: give another file name")


def same_path(one, other) -> bool:
    """True where two output paths name one file: the same file when both exist (a link, ``./``), else the same
    resolved name (neither written yet)."""
    try:
        return os.path.samefile(one, other)
    except (OSError, ValueError, TypeError):
        return Path(os.fspath(one)).resolve() == Path(os.fspath(other)).resolve()


def write_file(path, data: str | bytes, what: str = "-o") -> Path:
    """Write ``data`` (text as UTF-8 with ``\\n`` line ends) to the regular file ``path``, atomically.

    The temporary file is created with mode 0666 minus the umask, like any file the user
    creates, in the same folder, and removed if anything fails.  When it replaces a regular
    file, it takes that file's permission bits first (``os.replace`` would otherwise give the
    old name the new file's mode: a private 0600 file would become 0644).
    """
    path = check_output(path, what)
    try:
        # check_output refused anything but an absent path or a regular file
        keep = stat.S_IMODE(os.lstat(path).st_mode) & 0o777
    except FileNotFoundError:
        keep = None
    except OSError as err:
        raise OutputError(f"{what} {str(path)!r}: cannot be checked ({err.strerror})") from None
    payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(tmp, flags, 0o666)
    except OSError as err:
        raise OutputError(f"{what} {str(path)!r}: cannot write in {str(path.parent)!r} ({err.strerror})") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            if keep is not None:
                os.fchmod(handle.fileno(), keep)     # the old file's bits, not the umask's
            handle.write(payload)
        check_output(path, what)      # the target may have changed while writing
        os.replace(tmp, path)
    except BaseException as err:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(err, OSError) and not isinstance(err, OutputError):
            raise OutputError(f"{what} {str(path)!r}: cannot be written ({err.strerror or err})") from None
        raise
    return path


def make_folder(path, what: str = "--out") -> Path:
    """A folder for output (created with its parents under the umask); refuses a non-folder."""
    path = Path(os.fspath(path))
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        info = None
    if info is not None and stat.S_ISLNK(info.st_mode) and path.is_dir():
        return path    # a link to a folder the user made: writing inside it stays inside it
    if info is not None and not stat.S_ISDIR(info.st_mode):
        raise OutputError(f"{what} {str(path)!r}: exists and is not a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise OutputError(f"{what} {str(path)!r}: cannot create the folder ({err.strerror})") from None
    return path
