"""The ``symcomm`` command's entry (``python -m symcomm``, and the console script).

``symcomm plan`` goes straight to the planner (:func:`symcomm.commands.plan.main`), which never loads SymPy for
the combinations it has generated kernels for: it starts in the time of numpy's import.  ``symcomm eval`` goes
straight to :func:`symcomm.commands.evaluate.main`, which answers a collective primitive from its generated exact
code, without SymPy.  Every other subcommand goes to :func:`symcomm.commands.main.main`.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["plan"]:
        from .commands.plan import main as plan_main

        return plan_main(argv)
    if argv[:1] == ["eval"]:
        # a primitive answered from its generated exact code: no SymPy (symcomm.training.fasteval)
        from .commands.evaluate import main as eval_main

        return eval_main(argv)
    from .commands.main import main as cli_main

    return cli_main(argv)


if __name__ == "__main__":
    sys.exit(main())
