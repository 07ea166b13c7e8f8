"""The content: one module per chapter, each exposing ``CHAPTER`` (a symcomm Chapter).

Adding a chapter is adding one module here: every module of this package that defines
``CHAPTER`` is a chapter, and :data:`CHAPTERS` orders them by ``CHAPTER.number``, the order
of the documentation.  Modules that are tools, not chapters (the fit of the step-time
constants, run as ``python -m symcomm.derivations.fit_step_time``; the check runs' sensitivity to the open
assumptions, ``python -m derivations.sensitivity``), are listed in :data:`TOOLS` and not imported here.
"""

import importlib
import pkgutil

#: modules of this package that are run, not read: never imported to look for a chapter
TOOLS = ("fit_step_time", "sensitivity")


def _chapters() -> tuple:
    found = []
    for info in pkgutil.iter_modules(__path__):
        if info.name in TOOLS:
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        chapter = getattr(module, "CHAPTER", None)
        if chapter is not None:
            found.append(chapter)
    numbers = [chapter.number for chapter in found]
    if len(set(numbers)) != len(numbers):
        raise RuntimeError(f"two chapters share a number: {sorted(numbers)}")
    return tuple(sorted(found, key=lambda chapter: chapter.number))


CHAPTERS = _chapters()
