"""``python -m symcomm.tools.screenshot --screenshot PNG``: the interactive page's screenshot as headless
Chromium draws it (:func:`symcomm.views.site.screenshot`); build_docs.py copies the committed one,
derivations/data/site.png, into docs/site/.  A developer tool: it parses its arguments and prints its one
error line here, the page's code only draws."""

from __future__ import annotations

import argparse
import sys

from ..base.errors import OutputError
from ..base.files import check_output
from ..views import site


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m symcomm.tools.screenshot",
                                     description="the interactive page's screenshot")
    parser.add_argument("--screenshot", required=True, metavar="PNG", help="where to write the PNG")
    parser.add_argument("--page", default="docs/site/index.html", help="the page to open (default: docs/site/index.html)")
    parser.add_argument("--fragment", default="", help="state to open it in, e.g. '#subject=all_reduce__ring&N=64'")
    args = parser.parse_args(argv)
    try:
        check_output(args.screenshot, "--screenshot")    # before Chromium starts, not after
    except OutputError as err:
        print(f"python -m symcomm.tools.screenshot: error: {err}", file=sys.stderr)
        return 2
    site.screenshot(args.screenshot, args.page, args.fragment)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
