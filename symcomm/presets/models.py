"""Model presets, shipped as data (``models.json``), and a Hugging Face ``config.json`` read as one.

A model's Φ is never stored: :meth:`Model.parameters` computes it from the architecture with the
formula that ``derivations/parameters.py`` derives and checks against the published counts.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from fractions import Fraction
from importlib import resources
from pathlib import Path

from ..base.errors import InputError

#: a Hugging Face config.json is a few KiB; anything past this is not one
MAX_CONFIG_BYTES = 1024 * 1024

FAMILIES = ("gpt", "llama", "deepseek", "nemotron_h", "nemotron4")
#: the causal convolution's kernel width of a Mamba-2 mixer (MambaMixer d_conv, 4; megatron/core/ssm/mamba_mixer.py)
MAMBA_CONV = 4


# -- models ---------------------------------------------------------------------------------------

#: the layout options a model preset fills where they are not typed (:meth:`Model.run_options`)
RUN_OPTION_NAMES = ("gqa", "tied", "embeddings", "moe", "attention", "mamba", "moe_latent")
#: the step model's settings (not the hybrid's) a model's shape or config fixes (:meth:`Model.settings`), filled by eval
#: beside the layout options unless typed
STEP_SHAPE_SETTINGS = ("q_width", "dropout")


@dataclass(frozen=True)
class Model:
    name: str
    title: str
    family: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int
    seq: int
    experts: int = 1
    top_k: int = 1
    moe_layers: int = 0
    moe_ffn: int = 0
    shared_experts: int = 0
    tied: bool = False
    mla: tuple = ()                     # (q_lora_rank, kv_lora_rank, qk_nope, qk_rope, v_head)
    head_dim: int = 0                   # one head's width where a·head_dim ≠ h (config.json head_dim); 0: h/a
    # nemotron_h: (attention layers, Mamba layers, Mamba heads, Mamba head width, state size, groups)
    hybrid: tuple = ()
    moe_latent: int = 0                 # LatentMoE's moe_latent_size: the routed experts' width (0: h, no latent)
    sliding: tuple = ()                 # (window, layers): that many layers attend over the last window tokens only
    published_parameters: float | None = None
    source: str = ""
    #: what a config.json sets that a model does not carry into a setting, as the KEY=VALUE words that set it
    #: (group-limited routing, multi-token prediction): said by :meth:`config_note`
    config_words: tuple = ()
    #: (what the config sets that the step model does not price as the model runs it, the sequence length past which
    #: it matters: 0 at any): said by :meth:`shape_notes`
    unpriced: tuple = ()
    #: trained with dropout (p > 0), as its config or recipe sets it: the memory model's dropout masks (run setting
    #: dropout); presets without it train with none
    dropout: bool = False

    @property
    def moe(self) -> bool:
        return self.moe_layers > 0

    def config_note(self) -> str | None:
        """What eval and plan say of a config.json whose routing or multi-token prediction a setting names apart
        (:attr:`config_words`), or None."""
        if not self.config_words:
            return None
        return (f"{self.name} sets {', '.join(why for why, _ in self.config_words)}, which the setting takes as its "
                f"own words, not from the config: type {' '.join(word for _, word in self.config_words)}")

    def sliding_note(self, seq: int) -> str | None:
        """What the step model overcounts for a model whose layers attend over a sliding window shorter than the
        sequence: the attention core counts the full s × s (symcomm.training.flops, the papers' convention),
        where such a layer's queries read the last ``window`` keys only (not a bound on the step: the measured
        gpt-oss runs are slower than the model, for causes not modelled).  None where no window is shorter."""
        if not self.sliding or seq <= self.sliding[0]:
            return None
        window, layers = self.sliding
        return (f"{self.name}: {layers} of its {self.layers} layers attend over a sliding window of {window} tokens; "
                f"the step model counts their attention core over the full s × s (s = {seq}): more work than those "
                "layers do (the step's measured error is in its off-by line)")

    def context_seq_note(self) -> str | None:
        """What plan says where a config.json's model is planned at its own sequence (eval says it of any model it
        fills s from): a Hugging Face config gives its context window (max_position_embeddings, 163,840 for
        DeepSeek-V3), not a training length."""
        if not self.source.startswith(CONFIG_SOURCE):
            return None
        return (f"s = {self.seq:,} is {self.name}'s max_position_embeddings, its context window, taken as the "
                "training sequence: give s= (plan: --seq) for the length the run trains at")

    def shape_notes(self, seq: int) -> tuple[str, ...]:
        """What the step model counts otherwise than this model runs at sequence length ``seq``: its sliding window
        (:meth:`sliding_note`) and what its config sets that the model does not price (:attr:`unpriced`)."""
        said = self.sliding_note(seq)
        return ((said,) if said else ()) + tuple(f"{self.name}: {what}" for what, longer in self.unpriced
                                                 if seq > longer)

    @property
    def head(self) -> int:
        """One attention head's width: head_dim when the config sets one apart from h/a, else h/a."""
        return self.head_dim or self.hidden // self.heads

    @property
    def head_widths(self) -> tuple[int, int]:
        """(a query/key head's width, a value head's): MLA's qk_nope + qk_rope and v_head, else :attr:`head` both."""
        if self.mla:
            _q_rank, _kv_rank, nope, rope, value = self.mla
            return nope + rope, value
        return self.head, self.head

    @property
    def attention(self) -> str:
        """The run setting ``attention`` this model runs: mla with MLA ranks, else mha."""
        return "mla" if self.mla else "mha"

    def settings(self) -> dict[str, str]:
        """The run settings (text form) this model's shape fixes, as eval fills them unless typed:
        moe=1 with MoE layers, gqa=1 with fewer K, V heads than heads, attention=mla with MLA ranks, dropout=0 when
        it trains without dropout."""
        out = {} if self.dropout else {"dropout": "0"}
        if self.moe:
            out["moe"] = "1"
        if self.kv_heads < self.heads and not self.mla:
            out["gqa"] = "1"
        if self.hybrid:
            out["mamba"] = "1"
        if self.moe_latent:
            out["moe_latent"] = "1"
        if self.mla:
            out["attention"] = "mla"
        elif self.head_dim and self.head_dim * self.heads != self.hidden:
            out["q_width"] = "heads"
        return out

    def run_options(self) -> dict[str, str]:
        """The layout options (text form) eval fills from this preset where they are not typed, and the page's view
        of the preset runs (of :data:`RUN_OPTION_NAMES`): :meth:`settings` but the step model's (:data:`STEP_SHAPE_SETTINGS`), the embedding and LM head counted
        (embeddings=1) and tied=1 where the model ties them."""
        out = {key: value for key, value in self.settings().items() if key not in STEP_SHAPE_SETTINGS}
        out["embeddings"] = "1"
        if self.tied:
            out["tied"] = "1"
        return out

    def formula_options(self) -> dict:
        """The keyword options of :func:`symcomm.presets.formula.parameter_formula` for this model."""
        out = {"tied": self.tied, "head_dim": bool(self.head_dim), "q_compressed": not self.mla or bool(self.mla[0])}
        return {**out, "latent": True} if self.moe_latent else out

    @property
    def gated(self) -> bool:
        """A gated MLP (SwiGLU: three h × F matrices): the llama and deepseek families; GPT's has two, and
        Nemotron-H's and Nemotron-4's (squared ReLU) two."""
        return self.family not in ("gpt", "nemotron_h", "nemotron4")

    def architecture(self) -> dict:
        """Values of the architecture symbols for :func:`parameter_formula` (SymPy symbols: loads it)."""
        from .formula import E, E_s, F, F_e, L, L_moe, V, a, d_head, d_nope, d_rope, d_v, h, kv_r, n_kv, q_r, s

        out = {h: self.hidden, L: self.layers, a: self.heads, n_kv: self.kv_heads, F: self.ffn,
               V: self.vocab, s: self.seq, E: self.experts, L_moe: self.moe_layers,
               F_e: self.moe_ffn or self.ffn, E_s: self.shared_experts, d_head: self.head}
        if self.mla:
            out.update(zip((q_r, kv_r, d_nope, d_rope, d_v), self.mla))
        if self.hybrid:
            from .formula import L_att, L_ssm, a_ssm, d_ssm, g_ssm, n_ssm
            out.update(zip((L_att, L_ssm, a_ssm, d_ssm, n_ssm, g_ssm), self.mamba_values()))
        if self.moe_latent:
            from .formula import h_lat
            out[h_lat] = self.moe_latent
        return out

    def mamba_values(self) -> tuple:
        """(L_att, L_ssm, a_ssm, d_ssm, n_ssm, g_ssm) of a hybrid Mamba model: d_ssm = heads × head width."""
        attention, mamba, heads, width, state, groups = self.hybrid
        return attention, mamba, heads, heads * width, state, groups

    @functools.cached_property
    def parameters(self) -> int:
        """Φ from the architecture (exact integer): :func:`parameter_formula` term by term, in integer
        arithmetic (tests/presets/test_presets.py holds it equal to the SymPy formula for every preset)."""
        return _phi(self)

    @functools.cached_property
    def expert_parameters(self) -> int:
        """Φ_E = L_moe·E·3h·F_e, 2h·F_e not gated, h_lat for h under LatentMoE (:func:`phi_experts`)."""
        up = 3 if self.gated else 2
        width = self.moe_latent or self.hidden
        return self.moe_layers * self.experts * up * width * (self.moe_ffn or self.ffn) if self.moe else 0

    def values(self) -> dict[str, int]:
        """CLI symbol values this model fixes: Phi, h, L, a, h_kv, s, V, F (+ E, k, L_moe, Phi_E, F_e,
        E_s for MoE, E_s = 0 included; + q_lora, kv_lora, d_nope, d_rope, d_v for MLA).  h_kv is the
        K, V heads times :attr:`head`."""
        out = {"Phi": self.parameters, "h": self.hidden, "L": self.layers, "a": self.heads,
               "h_kv": self.kv_heads * self.head, "s": self.seq, "V": self.vocab, "F": self.ffn}
        if self.moe:
            out.update({"E": self.experts, "k": self.top_k, "L_moe": self.moe_layers,
                        "Phi_E": self.expert_parameters, "F_e": self.moe_ffn or self.ffn,
                        "E_s": self.shared_experts})
        if self.mla:
            out.update(zip(("q_lora", "kv_lora", "d_nope", "d_rope", "d_v"), self.mla))
        elif self.head_dim and self.head_dim * self.heads != self.hidden:
            out["h_q"] = self.heads * self.head_dim
        if self.hybrid:
            out.update(zip(("L_att", "L_ssm", "a_ssm", "d_ssm", "n_ssm", "g_ssm"), self.mamba_values()))
        if self.moe_latent:
            out["h_lat"] = self.moe_latent
        return out


def _gqa_projections(m: Model):
    """W_Q, W_O (h × a·head) and W_K, W_V (h × n_kv·head) of one grouped-query attention layer, exactly: formula's
    attention_gqa at ``m`` (head: the config's head_dim, else h/a as a Fraction)."""
    h, a, n_kv = m.hidden, m.heads, m.kv_heads
    head = m.head_dim or Fraction(h, a)
    return h * (a * head) + 2 * h * (n_kv * head) + (a * head) * h


def _phi(m: Model) -> int:
    """:func:`symcomm.presets.formula.parameter_formula` at ``m``, exactly (Fraction where h/a enters)."""
    h, L, a, n_kv, F, V, s = m.hidden, m.layers, m.heads, m.kv_heads, m.ffn, m.vocab, m.seq
    E, L_moe, F_e, E_s = m.experts, m.moe_layers, m.moe_ffn or m.ffn, m.shared_experts
    if m.family == "gpt":
        kv = Fraction(n_kv * h, a)         # K, V widths: h for multi-head attention (n_kv = a)
        value = L * ((2 * h ** 2 + 2 * h * kv + 2 * h + 2 * kv) + 2 * h * F + F + h + 4 * h) + V * h + s * h + 2 * h
    elif m.family == "llama":
        attention = _gqa_projections(m)
        dense = attention + 3 * h * F + 2 * h
        moe = attention + (E + E_s) * 3 * h * F_e + h * E + 2 * h
        value = (L - L_moe) * dense + L_moe * moe + (1 if m.tied else 2) * V * h + h
    elif m.family == "deepseek":
        if not m.mla:
            raise ValueError(f"model {m.name!r}: the deepseek family needs the MLA ranks and head widths")
        q_r, kv_r, d_nope, d_rope, d_v = m.mla
        # q_lora_rank null (read as 0): no query latent, W_Q is h × a·(d_nope + d_rope) (attention_mla)
        query = (h * q_r + q_r + q_r * a * (d_nope + d_rope)) if q_r else h * a * (d_nope + d_rope)
        attention = (query + h * (kv_r + d_rope) + kv_r + kv_r * a * (d_nope + d_v) + a * d_v * h)
        dense = attention + 3 * h * F + 2 * h
        moe = attention + (E + E_s) * 3 * h * F_e + h * E + E + 2 * h
        value = (L - L_moe) * dense + L_moe * moe + 2 * V * h + h
    elif m.family == "nemotron_h":
        L_att, L_ssm, H, d_in, N, g = m.mamba_values()
        attention = _gqa_projections(m) + h
        conv = d_in + 2 * g * N
        mamba = h + h * (2 * d_in + 2 * g * N + H) + conv * (MAMBA_CONV + 1) + 3 * H + d_in + d_in * h
        latent = m.moe_latent
        # LatentMoE: the routed experts h_lat wide, the two projections h × h_lat (the shared experts stay h wide)
        routed = E * 2 * latent * F_e + 2 * h * latent if latent else E * 2 * h * F_e
        moe = routed + E_s * 2 * h * F_e + h * E + h
        value = (L_att * attention + L_ssm * mamba + L_moe * moe + (L - L_att - L_ssm - L_moe) * (2 * h * F + h)
                 + 2 * V * h + h)
    elif m.family == "nemotron4":
        value = L * (_gqa_projections(m) + 2 * h * F + 4 * h) + 2 * V * h + 2 * h
    else:
        raise ValueError(f"model family {m.family!r} is not allowed; choose {', '.join(FAMILIES)}")
    return int(value)


#: a nemotron_h preset's "hybrid" fields, in Model.hybrid's order (Megatron-Core's names in the comments of models.json)
HYBRID_KEYS = ("attention_layers", "mamba_layers", "mamba_heads", "mamba_head_dim", "mamba_state", "mamba_groups")


def _model_from(name: str, data: dict) -> Model:
    mla = tuple(data[key] for key in ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
                                      "qk_rope_head_dim", "v_head_dim")) if data.get("kv_lora_rank") else ()
    return Model(name=name, title=data.get("title", name), family=data["family"], hidden=int(data["hidden"]),
                 layers=int(data["layers"]), heads=int(data["heads"]),
                 kv_heads=int(data.get("kv_heads", data["heads"])), ffn=int(data["ffn"]),
                 vocab=int(data["vocab"]), seq=int(data["seq"]), experts=int(data.get("experts", 1)),
                 top_k=int(data.get("top_k", 1)), moe_layers=int(data.get("moe_layers", 0)),
                 moe_ffn=int(data.get("moe_ffn", 0)), shared_experts=int(data.get("shared_experts", 0)),
                 tied=bool(data.get("tied", False)), mla=mla, head_dim=int(data.get("head_dim", 0)),
                 hybrid=tuple(int(data["hybrid"][key]) for key in HYBRID_KEYS) if data.get("hybrid") else (),
                 moe_latent=int(data.get("moe_latent", 0)),
                 sliding=((int(data["sliding_window"]["window"]), int(data["sliding_window"]["layers"]))
                          if data.get("sliding_window") else ()),
                 published_parameters=data.get("published_parameters"), source=data.get("source", ""),
                 config_words=tuple(tuple(pair) for pair in data.get("config_words", ())),
                 unpriced=tuple((str(what), int(longer)) for what, longer in data.get("unpriced", ())),
                 dropout=bool(data.get("dropout", False)))


@functools.lru_cache(maxsize=None)
def _load(filename: str) -> dict:
    text = resources.files(__package__).joinpath(filename).read_text(encoding="utf-8")
    return json.loads(text)


def model_names() -> tuple[str, ...]:
    return tuple(k for k in _load("models.json") if not k.startswith("_"))


def model(name: str) -> Model:
    """A shipped model preset, or ValueError naming the ones that exist."""
    if name in _SHIPPED:
        return _SHIPPED[name]
    data = _load("models.json")
    if name.startswith("_") or name not in data:
        raise InputError(f"--model {name!r} is not allowed; choose one of {', '.join(model_names())}")
    _SHIPPED[name] = _model_from(name, data[name])
    return _SHIPPED[name]


#: the shipped presets built once per process (a Model is immutable; its Φ is computed on first use)
_SHIPPED: dict[str, Model] = {}


#: the GPT-2 key names a config may give beside the Llama-style ones, for the same figure
_CONFIG_SYNONYMS = (("n_embd", "hidden_size"), ("n_layer", "num_hidden_layers"), ("n_head", "num_attention_heads"),
                    ("n_inner", "intermediate_size"), ("n_positions", "max_position_embeddings"))


#: where a model read from a config.json says it came from (Model.source's start)
CONFIG_SOURCE = "Hugging Face config.json"
#: why a config must give its context window (the refusal's words)
CONTEXT_WINDOW = "the model's context window, which eval's s and plan's --seq default to"


def model_from_config(path: str | Path, seq: int | None = None) -> Model:
    """A model from a Hugging Face ``config.json`` on disk (GPT-2, Llama, Llama 4's language model, Mistral,
    Mixtral, Qwen2, DeepSeek-V2/V3, Nemotron key names); no network."""
    from ..base.inputs import read_json

    path = Path(path)
    what = f"--model-config {str(path)!r}"
    cfg = read_json(path, "--model-config", "model-config", limit=MAX_CONFIG_BYTES)
    if not isinstance(cfg, dict):
        raise InputError(f"{what}: expected a JSON object (a Hugging Face config.json)")

    def get(*keys, default=None, why="needed for the parameter count"):
        for key in keys:
            if cfg.get(key) is not None:
                return cfg[key]
        if default is not None:
            return default
        raise InputError(f"{what} lacks {' / '.join(keys)} ({why})")

    model_type = str(cfg.get("model_type", ""))
    unpriced = []
    if isinstance(cfg.get("text_config"), dict) and cfg.get("num_hidden_layers") is None and cfg.get("n_layer") is None:
        # a multimodal config.json (Llama 4's Llama4Config, Gemma 3's, Mistral 3's) nests the language model's under
        # text_config: that model is timed, checked by the same schema; its vision tower is not counted
        from ..base.inputs import check

        text = check(cfg["text_config"], "model-config", f"{what} text_config")
        # the composite model's tie_word_embeddings is its language model's where that says none (Gemma 3's and
        # Mistral 3's configs carry it at the top); two that disagree are refused
        outer, inner = cfg.get("tie_word_embeddings"), text.get("tie_word_embeddings")
        if outer is not None and inner is not None and outer != inner:
            raise InputError(f"{what}: tie_word_embeddings {outer} and text_config's {inner} disagree; keep one")
        if outer is not None and inner is None:
            text = {**text, "tie_word_embeddings": outer}
        if model_type != "llama4" or cfg.get("vision_config"):
            unpriced.append((f"reads its language model (text_config, {text.get('model_type') or 'untyped'}); the "
                             "vision encoder and projector it also holds are not counted (weights, FLOPs or memory)",
                             0))
        cfg = {**text, "_name_or_path": cfg.get("_name_or_path")}
        model_type = str(cfg.get("model_type", model_type))
    for one, other in _CONFIG_SYNONYMS:
        # a config read by the first of two names for one figure would drop the other in silence (an outsider's Llama 3
        # 8B with n_embd 2048 beside hidden_size 4096 was counted at Φ = 2.7e9)
        if cfg.get(one) is not None and cfg.get(other) is not None and cfg[one] != cfg[other]:
            raise InputError(f"{what}: {one} = {cfg[one]} and {other} = {cfg[other]} name one figure and disagree; "
                             "keep the model's own and remove the other")
    if model_type in ("gpt2", "gpt_neox", "gptj", "opt") or ("n_embd" in cfg and "hidden_size" not in cfg):
        hidden = int(get("n_embd", "hidden_size"))
        data = {"family": "gpt", "hidden": hidden, "layers": get("n_layer", "num_hidden_layers"),
                "heads": get("n_head", "num_attention_heads"),
                "ffn": cfg.get("n_inner") or cfg.get("intermediate_size") or 4 * hidden,
                "vocab": get("vocab_size"),
                "seq": get("n_positions", "max_position_embeddings", why=CONTEXT_WINDOW)}
        data["kv_heads"] = data["heads"]
    else:
        # transformers' NemotronConfig (model_type nemotron: Nemotron-4 and its Minitron prunings) is a squared-ReLU
        # MLP with LayerNorm1P, the nemotron4 family
        family = "deepseek" if cfg.get("kv_lora_rank") else "nemotron4" if model_type == "nemotron" else "llama"
        layers = int(get("num_hidden_layers"))
        experts = int(cfg.get("num_local_experts") or cfg.get("n_routed_experts") or cfg.get("num_experts") or 1)
        data = {"family": family, "hidden": get("hidden_size"), "layers": layers,
                "heads": get("num_attention_heads"),
                "kv_heads": get("num_key_value_heads", default=get("num_attention_heads")),
                "ffn": get("intermediate_size"), "vocab": get("vocab_size"),
                "seq": get("max_position_embeddings", why=CONTEXT_WINDOW),
                "tied": _tied(cfg, model_type, unpriced)}
        if cfg.get("head_dim") and int(cfg["head_dim"]) * int(data["heads"]) != int(data["hidden"]):
            data["head_dim"] = int(cfg["head_dim"])
        if experts > 1 and "interleave_moe_layer_step" in cfg:
            # Llama 4 (transformers' Llama4TextConfig, modeling_llama4.py): every step-th layer MoE (moe_layers lists
            # them where given), its experts intermediate_size wide and one shared expert of that width beside them
            # (Llama4TextMoe.shared_expert, always built); the dense layers' MLP intermediate_size_mlp wide
            step = int(get("interleave_moe_layer_step"))
            moe_layers = len(cfg["moe_layers"]) if cfg.get("moe_layers") else layers // max(step, 1)
            data.update({"ffn": get("intermediate_size_mlp", "intermediate_size"), "experts": experts,
                         "top_k": get("num_experts_per_tok"), "moe_layers": moe_layers,
                         "moe_ffn": get("intermediate_size"), "shared_experts": 1})
        elif experts > 1:
            moe_ffn = cfg.get("moe_intermediate_size") or data["ffn"]
            data.update({"experts": experts, "top_k": get("num_experts_per_tok"), "moe_layers": _moe_layers(cfg, layers,
                                                                                                             what),
                         "moe_ffn": moe_ffn, "shared_experts": _shared_experts(cfg, int(moe_ffn), what)})
        for key in ("layer_types", "no_rope_layers"):
            # one entry a layer: a list of another length says nothing of which layers do what
            if cfg.get(key) and len(cfg[key]) != layers:
                raise InputError(f"{what}: {key} lists {len(cfg[key])} layers; num_hidden_layers is {layers}: give "
                                 "one entry a layer")
        sliding = _sliding_window(cfg, layers, model_type)
        if sliding:
            data["sliding_window"] = sliding
        unpriced += _unpriced_attention(cfg, layers)
        if family == "deepseek":
            data.update({key: get(key) for key in ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
                                                    "v_head_dim")})
            # null (DeepSeek-V2-Lite): no query compression, which q_lora = 0 means
            data["q_lora_rank"] = int(cfg.get("q_lora_rank") or 0)
    data["config_words"] = _config_words(cfg)
    data["unpriced"] = unpriced
    data["dropout"] = _dropout(cfg, what)
    if seq is not None:
        data["seq"] = seq
    _check_shape(data, what)
    # a Hugging Face snapshot's folder names the model when the file is its config.json; another file names itself
    named = path.parent.name if path.name == "config.json" and path.parent.name else path.name
    data["title"] = f"{cfg.get('_name_or_path') or named} (config.json)"
    data["source"] = f"{CONFIG_SOURCE} at {path}"
    return _model_from(str(path), data)


#: the dropout probabilities a Hugging Face config.json may set, each read and bounded: the hidden (residual) dropout
#: whose masks a layer keeps, GPT-NeoX's and Nemotron-H's hidden_dropout, GPT-2's and GPT-J's resid_pdrop, OPT's dropout
#: (:data:`HIDDEN_DROPOUT_KEYS`); and the attention's and the embedding's (Llama's, Qwen's, Mistral's and DeepSeek's
#: attention_dropout, GPT-2's attn_pdrop and embd_pdrop), which keep no h-wide mask: the attention's is applied inside
#: the attention kernel (a flash kernel keeps no mask), Llama-family models have no residual dropout (transformers'
#: modeling_llama.py)
HIDDEN_DROPOUT_KEYS = ("hidden_dropout", "resid_pdrop", "dropout")
DROPOUT_KEYS = HIDDEN_DROPOUT_KEYS + ("attention_dropout", "attn_pdrop", "embd_pdrop")
#: transformers' defaults where a config leaves its hidden dropout out: GPT2Config resid_pdrop 0.1, OPTConfig dropout
#: 0.1 (configuration_gpt2.py, configuration_opt.py); every other family's default is 0
HIDDEN_DROPOUT_DEFAULTS = {"gpt2": ("resid_pdrop", 0.1), "opt": ("dropout", 0.1)}


def _dropout(cfg: dict, what: str) -> bool:
    """Does the config train with hidden dropout: any of :data:`HIDDEN_DROPOUT_KEYS` above 0, or absent where
    transformers' default for the model type is (:data:`HIDDEN_DROPOUT_DEFAULTS`); every key of :data:`DROPOUT_KEYS`
    given must be a number from 0 to below 1."""
    for key in DROPOUT_KEYS:
        value = cfg.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1):
            raise InputError(f"{what}: {key} must be a dropout probability from 0 to below 1 (got {value!r})")
    default = HIDDEN_DROPOUT_DEFAULTS.get(str(cfg.get("model_type", "")))
    if default is not None and cfg.get(default[0]) is None:
        return default[1] > 0
    return any((cfg.get(key) or 0) > 0 for key in HIDDEN_DROPOUT_KEYS)


def _whole(value) -> int | None:
    """``value`` where a config gives a whole positive number (not a bool), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else None


def _all_but_every(layers: int, interval: int) -> int:
    """The layers of ``layers`` that are not every ``interval``-th one (layer i the other kind where
    (i + 1) % interval == 0: Gemma 3's global layers, Qwen3-Next's full attention, Llama 4's NoPE layers)."""
    return layers - layers // interval


def _config_words(cfg: dict) -> tuple:
    """(what the config sets, the words that set it) for DeepSeek-V3's group-limited routing (n_group, topk_group:
    routing.GROUP_LIMITED_ROUTING's router_groups, router_group_topk) and multi-token prediction
    (num_nextn_predict_layers: mtp, D_mtp), where the config sets them; whole positive numbers only."""
    def count(key):
        return _whole(cfg.get(key))

    out = []
    groups, topk = count("n_group"), count("topk_group")
    if groups and groups > 1 and topk:
        out.append((f"group-limited routing (n_group {groups}, topk_group {topk})",
                    f"router_groups={groups} router_group_topk={topk}"))
    depth = count("num_nextn_predict_layers")
    if depth:
        out.append((f"multi-token prediction (num_nextn_predict_layers {depth})", f"mtp=1 D_mtp={depth}"))
    return tuple(out)


#: which layers of a Hugging Face MoE config are MoE: transformers' Qwen2-MoE and Qwen3-MoE decoder layers
#: (modeling_qwen3_moe.py: layer i is MoE when i is not in mlp_only_layers and (i + 1) % decoder_sparse_step == 0) and
#: DeepSeek-V2/V3's (modeling_deepseek_v3.py: i >= first_k_dense_replace and i % moe_layer_freq == 0); Mixtral's every
#: layer
MOE_LAYER_FIELDS = ("first_k_dense_replace", "decoder_sparse_step", "moe_layer_freq", "mlp_only_layers")


def _moe_layers(cfg: dict, layers: int, what: str) -> int:
    """How many of the ``layers`` layers a MoE config makes MoE (:data:`MOE_LAYER_FIELDS`), counted without a loop
    over the layers: the multiples the step or frequency leave past the dense first ones, less the listed dense
    ones among them."""
    def whole(key, low, default):
        value = cfg.get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= layers:
            raise InputError(f"{what}: {key} must be a whole number from {low} to the {layers} layers (got {value!r})")
        return value

    first = whole("first_k_dense_replace", 0, 0)
    step, freq = whole("decoder_sparse_step", 1, 1), whole("moe_layer_freq", 1, 1)
    if step > 1 and freq > 1:
        raise InputError(f"{what}: decoder_sparse_step (Qwen's MoE) and moe_layer_freq (DeepSeek's) both above 1: give "
                         "the one of the model's family")
    only = cfg.get("mlp_only_layers") or []
    if not isinstance(only, list) or any(
            isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < layers for i in only):
        raise InputError(f"{what}: mlp_only_layers must list layer indices from 0 to {layers - 1}")

    def moe(i):
        return i >= first and (i + 1) % step == 0 and i % freq == 0

    # i in [first, layers) with (i + 1) % step == 0 (step > 1) or i % freq == 0 (freq ≥ 1): one of them is 1
    if step > 1:
        counted = layers // step - first // step
    else:
        counted = (layers - 1) // freq - (first - 1) // freq if first else (layers - 1) // freq + 1
    return counted - sum(1 for i in set(only) if moe(i))


def _sliding_window(cfg: dict, layers: int, model_type: str = "") -> dict | None:
    """{"window", "layers"} of a config whose layers attend over a sliding window: the layers layer_types names
    "sliding_attention" (gpt-oss, transformers' GptOssConfig; Gemma 3's newer configs), else all but every
    sliding_window_pattern-th (Gemma 3's older configs and Cohere 2's: layer i global when (i + 1) % pattern == 0),
    else Gemma 2's even layers (modeling_gemma2.py: sliding where layer_idx % 2 == 0), else every layer where
    sliding_window is set and use_sliding_window is not false (Mistral; Qwen2/3 set the window but switch it off);
    None otherwise."""
    window = cfg.get("sliding_window")
    if isinstance(window, bool) or not isinstance(window, int) or window <= 0 or cfg.get("use_sliding_window") is False:
        return None
    kinds = cfg.get("layer_types")
    if isinstance(kinds, list) and kinds:
        count = sum(1 for kind in kinds if kind == "sliding_attention")
        return {"window": window, "layers": count} if count else None
    # transformers' Gemma3TextConfig: sliding_window_pattern (later _sliding_window_pattern), 6 where left out
    pattern = next((cfg[key] for key in ("sliding_window_pattern", "_sliding_window_pattern") if cfg.get(key)),
                   6 if model_type == "gemma3_text" else None)
    if _whole(pattern):
        count = _all_but_every(layers, pattern)
        return {"window": window, "layers": count} if count > 0 else None
    if model_type == "gemma2":
        return {"window": window, "layers": (layers + 1) // 2}
    return {"window": window, "layers": layers}


#: transformers' tie_word_embeddings where a config leaves it out, by model_type (each configuration_*.py's
#: default): the Llama-style families untied, Gemma's tied
TIED_DEFAULTS = {**dict.fromkeys(("llama", "llama4_text", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3",
                                  "qwen3_moe", "qwen3_next", "deepseek_v2", "deepseek_v3", "gpt_oss", "nemotron",
                                  "nemotron_h", "phi3"), False),
                 **dict.fromkeys(("gemma", "gemma2", "gemma3", "gemma3_text"), True)}


def _tied(cfg: dict, model_type: str, unpriced: list) -> bool:
    """Are the input embedding and the output projection one matrix: tie_word_embeddings where the config gives it,
    else its model type's default (:data:`TIED_DEFAULTS`); a type not listed is read as untied and said so
    (transformers' base PretrainedConfig defaults to tied, most language-model configs override it)."""
    if cfg.get("tie_word_embeddings") is not None:
        return bool(cfg["tie_word_embeddings"])
    if model_type in TIED_DEFAULTS:
        return TIED_DEFAULTS[model_type]
    unpriced.append((f"sets no tie_word_embeddings, and its model_type {model_type or '(none)'!r} is not one whose "
                     "default is known here: read as untied (two vocabulary matrices); add tie_word_embeddings to "
                     "the config to say which", 0))
    return False


def _shared_experts(cfg: dict, moe_ffn: int, what: str) -> int:
    """The shared experts beside the routed ones, each as wide as a routed expert: DeepSeek's n_shared_experts, or
    Qwen2-MoE's and Qwen3-Next's one shared_expert_intermediate_size wide MLP as that width over the routed width
    (Qwen1.5-MoE-A2.7B: 5632 / 1408 = 4; its sigmoid gate, one h-wide row, not counted)."""
    width = cfg.get("shared_expert_intermediate_size")
    if width and width % moe_ffn:
        raise InputError(f"{what}: shared_expert_intermediate_size {width} is not a whole number of the routed "
                         f"experts' width moe_intermediate_size {moe_ffn}: the model counts shared experts as routed "
                         "ones wide")
    given = cfg.get("n_shared_experts")
    if given is not None and width and given != width // moe_ffn:
        raise InputError(f"{what}: n_shared_experts {given} and shared_expert_intermediate_size {width} "
                         f"({width // moe_ffn} experts {moe_ffn} wide) disagree; keep the model's own and remove the "
                         "other")
    return int(given) if given is not None else (width // moe_ffn if width else 0)


def _unpriced_attention(cfg: dict, layers: int) -> list[tuple[str, int]]:
    """What a config's layers do that the step model prices as softmax attention over the whole causal s × s: Qwen3-
    Next's linear-attention layers (layer_types "linear_attention", Gated DeltaNet) and Llama 4's chunked attention
    (attention_chunk_size over the layers layer_types names "chunked_attention", else those no_rope_layers marks 1:
    transformers' Llama4TextModel runs chunked attention where a layer uses RoPE)."""
    out = []
    kinds = cfg.get("layer_types") if isinstance(cfg.get("layer_types"), list) else []
    linear = sum(1 for kind in kinds if kind == "linear_attention")
    interval = cfg.get("full_attention_interval")
    if not kinds and _whole(interval):
        # Qwen3-Next's configs without layer_types: layer i full attention where (i + 1) % interval == 0
        # (transformers' Qwen3NextConfig builds layer_types so), the others linear
        linear = _all_but_every(layers, interval)
    if linear:
        out.append((f"{linear} of its {layers} layers are linear attention (layer_types: Gated DeltaNet); the step "
                    "model prices them as softmax attention with the config's heads, its projections and its causal "
                    "s × s core: not the work or the weights those layers have", 0))
    chunk = cfg.get("attention_chunk_size")
    if _whole(chunk):
        rope = cfg.get("no_rope_layers")
        # transformers' Llama4TextConfig: no_rope_layers empty or left out is built from no_rope_layer_interval (4):
        # layer i without RoPE (full attention) where (i + 1) % interval == 0, the others chunked (Llama 4 Scout's
        # config.json gives [])
        step = _whole(cfg.get("no_rope_layer_interval")) or 4
        count = (sum(1 for kind in kinds if kind == "chunked_attention") if kinds
                 else sum(1 for x in rope if x) if isinstance(rope, list) and rope else _all_but_every(layers, step))
        if count > 0:
            out.append((f"{count} of its {layers} layers attend within chunks of {chunk} tokens "
                        "(attention_chunk_size); the step model counts their attention core over the whole causal "
                        "s × s: more work than those layers do", chunk))
    return out


def _check_shape(data: dict, what: str) -> None:
    """Relations between the fields that a schema cannot state: heads divide the width, K/V
    heads divide the heads, top-k within the experts, dense layers within the layers."""
    hidden, heads, kv = int(data["hidden"]), int(data["heads"]), int(data.get("kv_heads", data["heads"]))
    if hidden % heads:
        raise InputError(f"{what}: hidden size {hidden} is not a multiple of the {heads} attention heads")
    if kv > heads or heads % kv:
        raise InputError(f"{what}: {kv} key/value heads must divide the {heads} attention heads")
    if int(data.get("moe_layers", 0)) > int(data["layers"]) or int(data.get("moe_layers", 0)) < 0:
        raise InputError(f"{what}: first_k_dense_replace must be at most the {data['layers']} layers")
    if int(data.get("top_k", 1)) > int(data.get("experts", 1)):
        raise InputError(f"{what}: num_experts_per_tok {data['top_k']} exceeds the {data['experts']} experts")
