"""Hardware and model presets, shipped as data (``hardware.json``, ``models.json``).

Every value carries its source.  Bandwidths are per GPU and per direction in bytes/s;
``β`` per byte = 1 / bandwidth (seconds per byte), and per element = that × bytes per
element.  A model's Φ is never stored: :func:`parameter_count` computes it from the
architecture with the formula that ``derivations/parameters.py`` derives and checks
against the published counts.

    >>> from symcomm.presets import hardware, model
    >>> hardware("h100").beta_inter_per_byte    # 1 / 50 GB/s
    2e-11
    >>> model("llama3-8b").parameters
    8030261248
"""

from __future__ import annotations

# the wing's public face: the names the rest of symcomm reads as ``presets.X`` (models in .models, hardware
# files and the link rule in .systems)
from .models import Model, model, model_from_config, model_names
from .fit_errors import fits_words, memory_band_words, step_error_words
from .describe import describe_hardware
from .systems import (Hardware, calibrated_gamma, check_hardware_document, entry_gamma,
                      fill_from_presets, hardware, hardware_file, hardware_names, link, link_values, spans_nodes)

# -- the parameter-count formula (SymPy, in .formula; loaded on first use) -------------------------

#: names of :mod:`symcomm.presets.formula` reachable from here (``from symcomm.presets import phi_llama``)
_FORMULA = ("F", "F_e", "V", "n_kv", "E_s", "q_r", "kv_r", "d_nope", "d_rope", "d_v", "d_head", "h", "L", "a", "s", "E",
            "L_moe", "attention_mha_biased", "attention_gqa", "attention_mla", "phi_gpt", "phi_llama",
            "phi_deepseek", "phi_experts", "parameter_formula")


def __getattr__(name):
    if name in _FORMULA:
        from . import formula

        return getattr(formula, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
