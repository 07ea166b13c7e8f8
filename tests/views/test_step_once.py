"""Issue 25, item 3: the docs build evaluates no step model twice.

The page asks for a hybrid variant's step model three ways (its bundles for ``formulas/hybrid__step.js``, its
catalog entry, the values its view opens with); each must be the one model built for that run setting and gated
value.  The counter is on the builds themselves (the uncached ``step_model``), keyed by the run setting the model
reports (``StepModel.options``: every option's text, defaults filled in), so that the same model asked under two
spellings of its options would count twice.  A whole build, counted the same way (python build_docs.py with this
counter around ``steptime.step_model``, ``_evaluators`` and ``quantities``), built 76 step models, compiled 16 and
evaluated 34 points, none twice (the report of the branch fix-docs).
"""

from __future__ import annotations

import collections
import functools

from symcomm.training import steptime
from symcomm.training.subjects import subject
from symcomm.views import site


def test_a_hybrid_variants_step_model_is_built_once_for_its_bundles_entry_and_opening(monkeypatch):
    built = collections.Counter()
    build = steptime.step_model.__wrapped__

    @functools.lru_cache(maxsize=None)
    def counted(run_bytes=2, **options):
        model = build(run_bytes, **options)
        built[(str(run_bytes), model.options)] += 1
        return model

    monkeypatch.setattr(steptime, "step_model", counted)
    site._step_quantities.cache_clear()          # built by an earlier test in this process: count from nothing
    try:
        for sub in (subject("hybrid"), subject("hybrid", recompute="full")):
            first = site.step_bundles(sub)
            entry = site.catalog_entry(sub)
            site.opening_values(sub, hardware="h100", entry=entry)
            site.opening_values(sub, hardware="a100")          # builds its own entry: the same models
            again = site.step_bundles(sub)
            assert all(first[name] == again[name] for name in first)
    finally:
        site._step_quantities.cache_clear()      # no model of this counter stays behind for another test
    # two variants × the page's two gated values (site.GATED: 0 and 1) × its two dropout values (site.DROPOUT), each
    # built once
    assert sorted(built.values()) == [1] * 8, built
