"""Jinja templates of the docs (``latex/``, ``markdown/``) and of the export (``export/``).

Package data: the source tree keeps them here, at the top, apart from the engine; an
installed symcomm has them as ``symcomm.templates``.  They hold no arithmetic and no
formula text: they print what the engine hands them.
"""

from pathlib import Path

#: the folder the templates are in, wherever symcomm is installed
FOLDER = Path(__file__).resolve().parent
