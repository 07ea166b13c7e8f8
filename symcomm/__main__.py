"""The ``symcomm`` command's entry (``python -m symcomm``, and the console script).

``symcomm plan`` goes straight to the planner (:func:`symcomm.commands.plan.main`), which never loads SymPy for
the combinations it has generated kernels for: it starts in the time of numpy's import.  ``symcomm eval`` goes
straight to :func:`symcomm.commands.evaluate.main`, which answers a collective primitive from its generated exact
code, without SymPy.  Every other subcommand goes to :func:`symcomm.commands.main.main` (``prove`` with the
collector off: :func:`_prove`).
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    # no argv: the process's own command line (python -m symcomm, the console script), which ends with the command
    ending = argv is None
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["plan"]:
        from .commands.plan import main as plan_main

        return plan_main(argv)
    if argv[:1] == ["eval"]:
        # a primitive answered from its generated exact code: no SymPy (symcomm.training.fasteval)
        from .commands.evaluate import main as eval_main

        return eval_main(argv)
    if argv[:1] == ["prove"]:
        return _prove(argv, ending)
    from .commands.main import main as cli_main

    return cli_main(argv)


def _prove(argv: list[str], ending: bool = False) -> int:
    """``symcomm prove`` with the cyclic garbage collector off, on again after (an in-process caller keeps it).

    The command keeps everything it builds to its end (SymPy's modules, the chapters, their claims, the proofs'
    expressions), so the collector's passes free next to nothing: timed by ``gc.callbacks`` they took 0.19-0.20 s of
    a run's ~2.8 s CPU; off, the run's peak memory grows by 3 MiB (76 to 79 MiB).  When the process ends with the
    command (``ending``), what it made stays frozen: the interpreter's last collection at exit walked all of it
    (0.3-0.6 s CPU of a run, paired fresh processes) to free memory the process hands back whole."""
    import gc

    enabled = gc.isenabled()
    gc.disable()
    try:
        from .commands.main import main as cli_main

        return cli_main(argv)
    finally:
        if enabled:
            # what was made while it was off joins the oldest generation, as if it had survived the passes (frozen and
            # thawed: both move every tracked object there); left young, it was all scanned by the next pass (0.1 s)
            gc.freeze()
            if not ending:
                gc.unfreeze()
            gc.enable()


if __name__ == "__main__":
    sys.exit(main())
