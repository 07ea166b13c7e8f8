"""Presets against their published figures, Φ against hand counts, config.json, eval --model/--hardware."""

import json
from pathlib import Path

import pytest

from symcomm import presets
from symcomm.base.errors import InputError
from symcomm.commands.main import main

from conftest import symcomm_command


def rel(x, y):
    return abs(x - y) / y


# per-direction bytes/s from the datasheets' own figures (bidirectional NVLink ÷ 2, Gb/s ÷ 8)
@pytest.mark.parametrize("name, bytes_per_second", [
    ("nvlink3", 600e9 / 2),             # A100: 600 GB/s total
    ("nvlink4", 900e9 / 2),             # H100/H200: 900 GB/s total
    ("nvlink5", 1800e9 / 2),            # B200: 1.8 TB/s total
    ("ib-hdr", 200e9 / 8),              # 200 Gb/s
    ("ib-ndr", 400e9 / 8),              # 400 Gb/s
    ("ib-xdr", 800e9 / 8),              # 800 Gb/s
    ("roce-400g", 400e9 / 8),           # 400 GbE
    ("pcie4", 16e9 * 16 * 128 / 130 / 8),   # 16 GT/s × 16 lanes, 128b/130b
    ("pcie5", 32e9 * 16 * 128 / 130 / 8),   # 32 GT/s
])
def test_links_per_direction(name, bytes_per_second):
    link = presets.link(name)
    assert rel(link.bytes_per_second, bytes_per_second) < 2e-3
    assert link.source and link.latency_source and link.conversion
    assert 0 < link.latency_s < 20e-6


def test_systems_and_beta_per_byte():
    h100 = presets.hardware("h100")
    # the H100 SXM's 80 GB as NVML reports it: 81,559 MiB (Modal's table of nvidia-smi totals, hardware.json's source)
    assert h100.gpus_per_node == 8 and h100.memory_bytes == 81_559 * 2**20
    assert h100.beta_per_byte == pytest.approx(2 / 900e9)          # s per byte inside the node
    assert h100.beta_inter_per_byte == pytest.approx(8 / 400e9)    # s per byte across nodes
    assert h100.gamma_per_byte == pytest.approx(3 / 3.35e12)
    values = h100.values(2)                                        # bf16: β per element = 2 × β per byte
    assert values["beta_inter"] == pytest.approx(16 / 400e9) and values["G"] == 8
    for name in presets.hardware_names():
        system = presets.hardware(name)
        assert system.source and system.memory_bytes > 0 and system.hbm_bytes_per_second > 0
    assert presets.hardware("a100").inter.name == "ib-hdr"
    assert presets.hardware("b200").intra.name == "nvlink5"
    with pytest.raises(ValueError, match="--hardware 'x100' is not allowed; choose one of a100"):
        presets.hardware("x100")


# Φ written out by hand (weights and biases of each block), and the published totals
@pytest.mark.parametrize("name, hand, published, tolerance", [
    # 12Lh² + 13Lh + (V + s)h + 2h with L=96, h=12288, V=50257, s=2048 (GPT-3 "175B")
    ("gpt3-175b", 12 * 96 * 12288 ** 2 + 13 * 96 * 12288 + (50257 + 2048) * 12288 + 2 * 12288, 175e9, 0.01),
    # 80 × (8192² × 2 + 8192 × 1024 × 2 + 3 × 8192 × 28672 + 2 × 8192) + 2 × 32000 × 8192 + 8192 ("70B")
    ("llama2-70b", 80 * (2 * 8192 ** 2 + 2 * 8192 * 1024 + 3 * 8192 * 28672 + 2 * 8192) + 2 * 32000 * 8192 + 8192,
     70e9, 0.02),
    ("llama3-8b", 8_030_261_248, 8_030_261_248, 0),                 # the model card's exact count
    ("llama3-70b", 70_553_706_496, 70.6e9, 0.001),
    ("llama3-405b", 405_853_388_800, 405e9, 0.005),
    ("mixtral-8x7b", 46_702_792_704, 46.7e9, 0.001),
    ("deepseek-v3", 671_026_419_200, 671e9, 0.001),                 # without the 14B MTP module (report §4.2)
    # Llama 3.1 keeps Llama 3's weight shapes (its config.json differs in RoPE scaling and context only)
    ("llama3.1-8b", 8_030_261_248, 8.03e9, 0.001),
    ("llama3.1-70b", 70_553_706_496, 70.6e9, 0.001),
    ("llama3.1-405b", 405_853_388_800, 405e9, 0.005),
    # per layer: Q 2048 × 32·128, K and V 2048 × 4·128, O 32·128 × 2048 = 18,874,368; 128 experts × 3 × 2048 × 768
    # = 603,979,776; router 2048 × 128; 2 norms; × 48; + 2 × 151936 × 2048 + 2048 (Qwen3 report Table 2: 30.5B)
    ("qwen3-30b-a3b", (18_874_368 + 603_979_776 + 262_144 + 4096) * 48 + 2 * 151936 * 2048 + 2048, 30.5e9, 0.002),
    # per layer: Q, O 4096 × 64·128 each, K, V 4096 × 4·128 each = 71,303,168; 128 × 3 × 4096 × 1536; router;
    # norms; × 94; + 2 × 151936 × 4096 + 4096 (Qwen3 report Table 2: 235B)
    ("qwen3-235b-a22b", (71_303_168 + 2_415_919_104 + 524_288 + 8192) * 94 + 2 * 151936 * 4096 + 4096, 235e9, 0.001),
    # per layer: Q, O 2880 × 64·64 each, K, V 2880 × 8·64 each = 26,542,080; 128 × 3 × 2880 × 2880; router 2880 × 128;
    # norms; × 36; + 2 × 201088 × 2880 + 2880; biases and sinks not counted (model card: 116.83B with them)
    ("gpt-oss-120b", (26_542_080 + 3_185_049_600 + 368_640 + 5760) * 36 + 2 * 201088 * 2880 + 2880, 116.83e9, 0.001),
])
def test_parameter_counts(name, hand, published, tolerance):
    model = presets.model(name)
    assert model.parameters == hand
    assert rel(model.parameters, published) <= tolerance
    assert model.source


def test_model_values_for_the_strategies():
    llama = presets.model("llama3-70b").values()
    # V = 128,256: Llama 3's tokenizer (Llama Team 2024, The Llama 3 Herd of Models, §3.1.1: 128K tokens)
    # F = 28,672: the SwiGLU width (Llama 3 Herd, Table 3: FFN dimension 28,672 for 70B)
    assert llama == {"Phi": 70_553_706_496, "h": 8192, "L": 80, "a": 64, "h_kv": 8 * 128, "s": 8192, "V": 128_256,
                     "F": 28_672}
    dsv3 = presets.model("deepseek-v3").values()
    assert dsv3["E"] == 256 and dsv3["k"] == 8 and dsv3["L_moe"] == 58
    assert dsv3["Phi_E"] == 58 * 256 * 3 * 7168 * 2048
    with pytest.raises(ValueError, match="--model 'gpt5' is not allowed"):
        presets.model("gpt5")


def test_hugging_face_config_gpt2_and_llama(tmp_path):
    gpt2 = tmp_path / "gpt2" / "config.json"
    gpt2.parent.mkdir()
    gpt2.write_text(json.dumps({"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12,
                                "n_positions": 1024, "vocab_size": 50257}))
    assert presets.model_from_config(gpt2).parameters == 124_439_808     # GPT-2 small, as published
    llama = tmp_path / "config.json"
    llama.write_text(json.dumps({"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
                                 "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
                                 "vocab_size": 128256, "max_position_embeddings": 8192,
                                 "tie_word_embeddings": False}))
    assert presets.model_from_config(llama).parameters == 8_030_261_248
    mixtral = tmp_path / "mixtral.json"
    mixtral.write_text(json.dumps({"model_type": "mixtral", "hidden_size": 4096, "intermediate_size": 14336,
                                   "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
                                   "vocab_size": 32000, "max_position_embeddings": 32768,
                                   "num_local_experts": 8, "num_experts_per_tok": 2}))
    model = presets.model_from_config(mixtral)
    assert model.parameters == 46_702_792_704 and model.values()["k"] == 2
    # a snapshot's config.json is named by its folder, another file by itself (an outsider's llama32-1b.json in a
    # scratch folder was titled by the folder)
    assert presets.model_from_config(gpt2).title == "gpt2 (config.json)"
    assert model.title == "mixtral.json (config.json)"
    # transformers' NemotronConfig at Nemotron-4 15B's shape: the squared-ReLU family, Φ as the preset's (the hand count
    # of derivations/parameters.py: (88,080,384 + 301,989,888 + 4·6144)·32 + 2·256000·6144 + 2·6144)
    nemotron = tmp_path / "nemotron.json"
    nemotron.write_text(json.dumps({"model_type": "nemotron", "hidden_size": 6144, "intermediate_size": 24576,
                                    "num_hidden_layers": 32, "num_attention_heads": 48, "num_key_value_heads": 8,
                                    "vocab_size": 256000, "max_position_embeddings": 4096, "hidden_act": "relu2",
                                    "tie_word_embeddings": False}))
    model = presets.model_from_config(nemotron)
    assert (model.family, model.gated, model.parameters) == ("nemotron4", False, 15_628_775_424)
    with pytest.raises(ValueError, match="no such file"):
        presets.model_from_config(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"model_type": "llama", "hidden_size": 8}))
    with pytest.raises(ValueError, match="lacks num_hidden_layers"):
        presets.model_from_config(bad)
    # a config without its context window is refused for that, not for its parameter count (which it does not change)
    windowless = tmp_path / "windowless.json"
    windowless.write_text(json.dumps({k: v for k, v in json.loads(llama.read_text()).items()
                                      if k != "max_position_embeddings"}))
    with pytest.raises(ValueError, match=r"lacks max_position_embeddings \(the model's context window, which eval's s"):
        presets.model_from_config(windowless)


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_eval_with_presets(capsys, tmp_path):
    code, out, err = run(capsys, "eval", "dp", "--model", "llama3-8b", "N=8", "--json")
    assert code == 0, err
    got = json.loads(out)
    assert got["values"]["Phi"] == 8_030_261_248
    assert got["send"] == 2 * 8_030_261_248 * 7 // 8
    code, out, err = run(capsys, "eval", "all_reduce", "--hardware", "h100", "N=8", "M=2**30", "--json")
    assert code == 0, err
    got = json.loads(out)
    assert got["dtype"] == "bf16"                      # --hardware gives β per byte: bf16 unless told
    M = 2 ** 30
    hand = 14 * 3.4e-6 + 2 * 7 / 8 * M * 2 / 450e9 + 7 / 8 * M * 2 * 3 / 3.35e12
    assert got["time"] == pytest.approx(hand, rel=1e-12)
    code, out, err = run(capsys, "eval", "all_reduce", "--hardware", "h100", "N=8", "M=2**30", "alpha=0", "--json")
    assert json.loads(out)["time"] == pytest.approx(hand - 14 * 3.4e-6, rel=1e-12)   # KEY=VALUE wins
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"n_embd": 768, "n_layer": 12, "n_head": 12, "n_positions": 1024,
                                  "vocab_size": 50257}))
    code, out, err = run(capsys, "eval", "dp", "--model-config", str(config), "N=2", "--json")
    assert code == 0 and json.loads(out)["values"]["Phi"] == 124_439_808


def test_eval_preset_errors(capsys):
    code, out, err = run(capsys, "eval", "dp", "--model", "nope", "N=8")
    assert code == 2 and err.count("\n") == 1 and "--model 'nope' is not allowed; choose one of" in err
    code, out, err = run(capsys, "eval", "dp", "--hardware", "tpu", "N=8")
    assert code == 2 and "--hardware 'tpu' is not allowed" in err


def test_units_dtypes_and_human_quantities():
    from symcomm.base.units import DTYPES, human_size, human_time

    assert DTYPES == {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1}
    assert human_size(3 * 2 ** 30) == "3.00 GiB" and human_time(2.5e-6) == "2.5 µs"


def test_flat_group_over_several_nodes_pays_the_network(capsys):
    # ring all-reduce of Φ on 64 H100s (8 nodes of 8): every ring step waits the network's α_inter, and NCCL
    # spreads the ring's crossings over the 8 NICs of a node (k = 8 ranks per node): of the elements a rank
    # sends 1/8 cross at its NIC (β_inter) and 7/8 stay on NVLink (β), the two legs at once, so the slower
    # sets the time: max(7/8/450e9, 1/8/50e9) = 2.5e-12 s/byte, the NIC's leg; a note says so
    import json as _json
    from symcomm.presets import hardware, model

    assert main(["eval", "dp", "N=64", "--model", "llama3-8b", "--hardware", "h100", "--json", "--verbose"]) == 0
    out = capsys.readouterr()
    got = _json.loads(out.out)
    h100, phi = hardware("h100").values(1), model("llama3-8b").values()["Phi"]
    split = max(7 / 8 * h100["beta"], 1 / 8 * h100["beta_inter"])
    assert split == pytest.approx(2.5e-12, rel=1e-12)
    hand = (2 * 63 * h100["alpha_inter"] + 2 * 63 / 64 * phi * 2 * split
            + 63 / 64 * phi * 2 * h100["gamma"])
    assert got["time"] == pytest.approx(hand, rel=1e-9)
    assert "spans nodes" in out.err and "8 ranks on a node" in out.err


def test_only_a_ring_spreads_its_crossings_and_the_fewest_ranks_on_a_node_set_k(capsys):
    # link_values, by hand on the H100 preset (NVLink 450 GB/s, IB NDR 50 GB/s per GPU):
    # 12 ranks on nodes of 8 sit 8 + 4: the node of 4 has 4 NICs for the ring's crossings, and a ring step
    # waits for its slowest hop, so k = 4; its NVLink and NIC legs run at once: β = max(3/4 · 1/450e9,
    # 1/4 · 1/50e9) = max(1.6667e-12, 5e-12) = 5e-12 s/byte
    from symcomm.presets import hardware, link_values

    h100 = hardware("h100")
    ring, why = link_values(h100, 12, False, spread=True)
    assert ring["alpha"] == 9.6e-6 and ring["beta"] == pytest.approx(5e-12, rel=1e-12)
    assert "4 ranks on a node" in why
    # an algorithm of neither rule (a pipeline send, a tree) keeps each rank's crossings on its own NIC at the
    # full inter-node β (50 GB/s), as before
    other, why = link_values(h100, 12, False)
    assert other["beta"] == 1 / 50e9 and "not a ring" in why
    # inside a node nothing changes: NVLink's α, β
    inside, why = link_values(h100, 8, False, spread=True)
    assert (inside["alpha"], inside["beta"], why) == (3.4e-6, 1 / 450e9, "")


def test_a_pairwise_all_to_all_spanning_nodes_mixes_the_levels_by_its_peers_on_the_node(capsys):
    # by hand on the H100 preset (NVLink 450 GB/s, 3.4 µs; IB NDR 50 GB/s per GPU, 9.6 µs): a pairwise
    # all-to-all of 16 ranks on nodes of 8 sends to 7 of its 15 peers over NVLink and to 8 across (one-port: the
    # two add), so per step α = 7/15·3.4 µs + 8/15·9.6 µs and β = 7/15/450e9 + 8/15/50e9 s/byte; 12 ranks: the
    # node of 4 is the busiest, 3 of 11 peers beside it and 8 across
    from symcomm.presets import hardware, link_values

    h100 = hardware("h100")
    got, why = link_values(h100, 16, False, crossing="peers")
    assert got["alpha"] == pytest.approx(7 / 15 * 3.4e-6 + 8 / 15 * 9.6e-6, rel=1e-12)
    assert got["beta"] == pytest.approx(7 / 15 / 450e9 + 8 / 15 / 50e9, rel=1e-12)
    assert "7 of its 15 peers on its node and 8 across" in why
    twelve, _ = link_values(h100, 12, False, crossing="peers")
    assert twelve["beta"] == pytest.approx(3 / 11 / 450e9 + 8 / 11 / 50e9, rel=1e-12)
    # eval of the primitive (its SymPy-free path) prices it so: 1 GiB of bf16 per rank, M = 2^29 elements,
    # 15 blocks of 2^25 elements = 15·2^26 bytes sent: T = 15·α + 15·2^26·β with the mixed α, β above
    # (before the split: every byte at 50 GB/s, 15·9.6 µs + 15·2^26/50e9 = 20.28 ms)

    assert main(["eval", "all_to_all", "--algorithm", "pairwise", "N=16", "M=1GiB", "--hardware", "h100",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    hand = 15 * (7 / 15 * 3.4e-6 + 8 / 15 * 9.6e-6) + 15 * 2 ** 26 * (7 / 15 / 450e9 + 8 / 15 / 50e9)
    assert out["time"] == pytest.approx(hand, rel=1e-9) and out["time"] == pytest.approx(11.88e-3, rel=1e-3)


def _shapes():
    """Every preset, and variations of each (tied or not, other widths), as Models."""
    import dataclasses

    for name in presets.model_names():
        model = presets.model(name)
        yield model
        yield dataclasses.replace(model, tied=not model.tied, seq=model.seq + 7, vocab=model.vocab + 3)
        if model.family == "llama":
            yield dataclasses.replace(model, kv_heads=model.heads, ffn=model.ffn + 64)


def test_parameters_in_integers_equal_the_sympy_formula():
    # Model.parameters is plain integer arithmetic (no SymPy at start); the SymPy formula is the reference
    for model in _shapes():
        reference = presets.parameter_formula(model.family, **model.formula_options()).subs(model.architecture())
        assert reference.is_Integer and model.parameters == int(reference), model.name
        if model.moe:
            assert model.expert_parameters == int(presets.phi_experts(model.gated, bool(model.moe_latent)).subs(model.architecture())), model.name


def test_a_hardware_files_gamma_is_the_one_its_calibration_held(tmp_path):
    # γ per byte = 3 / HBM bandwidth (read two operands, write one): 3 / 3.35e12 for the h100 preset
    assert presets.hardware("h100").gamma_per_byte == pytest.approx(3 / 3.35e12, rel=1e-15)
    entry = {"collective": "all_reduce", "algorithm": "ring", "ranks": 8, "alpha": 1e-6, "beta": 1e-11,
             "sizes_bytes": [64], "efficiency": [1.0]}
    base = {"intra": {"bytes_per_second": 1e11, "latency_s": 1e-6}, "inter": {"bytes_per_second": 1e10,
            "latency_s": 5e-6}, "gpus_per_node": 8, "hbm_bytes_per_second": 2e12}
    # no calibration: the links are not fitted, γ = 3 / 2e12
    assert presets.calibrated_gamma(base) == (1.5e-12, False)
    # every entry held 3 / 2e12: the fitted β is the link's own, γ stays 3 / 2e12
    assert presets.calibrated_gamma({**base, "calibration": [{**entry, "gamma_held": 1.5e-12}]}) == (1.5e-12, False)
    # an entry without gamma_held (an older calibrate, which held 0): its β holds the reduction, γ = 0
    old = tmp_path / "old.json"
    old.write_text(json.dumps({**base, "calibration": [entry]}))
    assert presets.calibrated_gamma(json.loads(old.read_text())) == (0.0, True)
    system = presets.hardware(str(old))
    assert system.gamma_per_byte == 0 and system.values(2)["gamma"] == 0
    assert any("gamma_held" in text for text in system.defaults_used())


def test_each_meaning_of_the_inter_node_link_goes_to_the_algorithms_of_its_formula(tmp_path):
    # A hand-written file with both links (round numbers, so that each value is recognisable): flat
    # algorithms spanning nodes and the strategies' groups across nodes take inter (100 GB/s, 1 µs), the
    # two-level forms' inter-node phase inter_two_level (10 GB/s, 5 µs), and everything inside a node intra.
    from symcomm.base.errors import InputError

    doc = {"intra": {"bytes_per_second": 3e11, "latency_s": 2e-6},
           "inter": {"bytes_per_second": 1e11, "latency_s": 1e-6, "fitted_as": "flat"},
           "inter_two_level": {"bytes_per_second": 1e10, "latency_s": 5e-6, "fitted_as": "two_level"},
           "gpus_per_node": 8}
    path = tmp_path / "both.json"
    path.write_text(json.dumps(doc))
    hw = presets.hardware(str(path))
    flat, _ = presets.link_values(hw, 16, two_level=False, bytes_per_element=2)
    assert (flat["alpha"], flat["beta"]) == (1e-6, 2 / 1e11)
    two, _ = presets.link_values(hw, 16, two_level=True, bytes_per_element=2)
    assert (two["alpha"], two["beta"], two["alpha_inter"], two["beta_inter"]) == (2e-6, 2 / 3e11, 5e-6, 2 / 1e10)
    inside, _ = presets.link_values(hw, 8, two_level=False)
    assert (inside["alpha"], inside["beta"]) == (2e-6, 1 / 3e11)
    assert (hw.values(1)["alpha_inter"], hw.values(1)["beta_inter"]) == (1e-6, 1 / 1e11)   # the strategies'
    # a flat-fitted inter without inter_two_level: the two-level forms across nodes are refused, naming it;
    # inside one node (N = G) their inter-node phase has one node and costs nothing, so they run
    del doc["inter_two_level"]
    path.write_text(json.dumps(doc))
    hw = presets.hardware(str(path))
    with pytest.raises(InputError, match="inter_two_level"):
        presets.link_values(hw, 16, two_level=True)
    with pytest.raises(InputError, match="inter_two_level"):
        presets.link_values(hw, None, two_level=True)      # N unknown: it may span nodes
    assert presets.link_values(hw, 8, two_level=True)[0]["alpha"] == 2e-6
    # unmarked (a physical link, as a preset's): one link for both meanings
    del doc["inter"]["fitted_as"]
    path.write_text(json.dumps(doc))
    hw = presets.hardware(str(path))
    two, _ = presets.link_values(hw, 16, two_level=True)
    assert (two["alpha_inter"], two["beta_inter"]) == (1e-6, 1 / 1e11)
    # the schema names the allowed meanings
    doc["inter"]["fitted_as"] = "hierarchical"
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError, match="fitted_as"):
        presets.hardware(str(path))


def test_hugging_face_configs_of_moe_without_shared_experts_and_mla(tmp_path):
    # Qwen/Qwen3-30B-A3B config.json's keys: head_dim 128 (32 heads × 128 ≠ hidden 2048), 128 experts of width 768,
    # no shared expert; the count is the hand count of test_parameter_counts (30,532,110,336)
    qwen = tmp_path / "qwen3.json"
    qwen.write_text(json.dumps({"model_type": "qwen3_moe", "hidden_size": 2048, "intermediate_size": 6144,
                                "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4,
                                "head_dim": 128, "vocab_size": 151936, "max_position_embeddings": 40960,
                                "num_experts": 128, "num_experts_per_tok": 8, "moe_intermediate_size": 768,
                                "tie_word_embeddings": False}))
    model = presets.model_from_config(qwen)
    assert model.parameters == presets.model("qwen3-30b-a3b").parameters
    assert model.values()["E_s"] == 0 and model.values()["h_kv"] == 4 * 128
    # 32 heads × 128 = 4096 ≠ hidden 2048: the Q and output projections are 4096 wide (q_width=heads, h_q)
    # and no dropout key: trained without dropout (dropout=0)
    assert model.settings() == {"moe": "1", "gqa": "1", "q_width": "heads", "dropout": "0"}
    assert model.values()["h_q"] == 4096
    # DeepSeek-V2-Lite-like MLA without query compression (q_lora_rank null): W_Q is h × a·(d_nope + d_rope) and
    # there is no query latent norm; one layer, dense, so Φ is countable by hand:
    #   W_Q 2048 × 16·192 + W_DKV 2048 × (512 + 64) + kv norm 512 + W_UKV 512 × 16·256 + W_O 16·128 × 2048
    #   + MLP 3 × 2048 × 10944 + 2 norms 2 × 2048; embeddings 2 × 102400 × 2048; final norm 2048
    lite = tmp_path / "lite.json"
    lite.write_text(json.dumps({"model_type": "deepseek_v2", "hidden_size": 2048, "intermediate_size": 10944,
                                "num_hidden_layers": 1, "num_attention_heads": 16, "num_key_value_heads": 16,
                                "vocab_size": 102400, "max_position_embeddings": 4096, "q_lora_rank": None,
                                "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
                                "v_head_dim": 128}))
    model = presets.model_from_config(lite)
    hand = (2048 * 16 * 192 + 2048 * 576 + 512 + 512 * 16 * 256 + 16 * 128 * 2048 + 3 * 2048 * 10944 + 2 * 2048
            + 2 * 102400 * 2048 + 2048)
    assert model.parameters == hand
    assert model.values()["q_lora"] == 0 and model.settings() == {"attention": "mla", "dropout": "0"}
    assert presets.parameter_formula(model.family, **model.formula_options()).subs(model.architecture()) == hand


def test_hugging_face_moe_configs_make_only_their_moe_layers_moe(tmp_path):
    # transformers' Qwen3-MoE: layer i is MoE when (i + 1) % decoder_sparse_step == 0 and i is not in mlp_only_layers;
    # DeepSeek-V3: i >= first_k_dense_replace and i % moe_layer_freq == 0.  Qwen3-30B-A3B's shape with a sparse step
    # of 2 and layers 0 and 1 listed dense: of 48 layers, 24 have (i + 1) even, of which layer 1 is listed: 23 MoE
    # layers, 25 dense ones with the 6144-wide MLP; each MoE layer's experts and router are 128 × 3 × 2048 × 768
    # + 2048 × 128 = 604,241,920 parameters against a dense MLP's 3 × 2048 × 6144 = 37,748,736
    base = {"model_type": "qwen3_moe", "hidden_size": 2048, "intermediate_size": 6144, "num_hidden_layers": 48,
            "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128, "vocab_size": 151936,
            "max_position_embeddings": 40960, "num_experts": 128, "num_experts_per_tok": 8,
            "moe_intermediate_size": 768, "tie_word_embeddings": False}
    every = tmp_path / "every.json"
    every.write_text(json.dumps({**base, "decoder_sparse_step": 1, "mlp_only_layers": []}))
    sparse = tmp_path / "sparse.json"
    sparse.write_text(json.dumps({**base, "decoder_sparse_step": 2, "mlp_only_layers": [0, 1]}))
    whole = presets.model_from_config(every)
    assert whole.values()["L_moe"] == 48 and whole.parameters == presets.model("qwen3-30b-a3b").parameters
    model = presets.model_from_config(sparse)
    assert model.values()["L_moe"] == 23
    assert whole.parameters - model.parameters == 25 * (604_241_920 - 37_748_736)
    # DeepSeek's every other layer past the first three: layers 4, 6, ..., 60 of 61, 29 of them
    assert presets.models._moe_layers({"first_k_dense_replace": 3, "moe_layer_freq": 2}, 61, "x") == 29
    for bad in ({"decoder_sparse_step": 0}, {"mlp_only_layers": [48]}, {"mlp_only_layers": "0"},
                {"decoder_sparse_step": 2, "moe_layer_freq": 2}):
        hostile = tmp_path / "bad.json"
        hostile.write_text(json.dumps({**base, **bad}))
        with pytest.raises(InputError, match="--model-config"):
            presets.model_from_config(hostile)


def test_a_config_s_routing_and_mtp_are_said_as_the_words_that_set_them(tmp_path):
    # DeepSeek-V3's config.json: n_group 8, topk_group 4 (group-limited routing) and num_nextn_predict_layers 1 (MTP);
    # a setting names those itself (router_groups, router_group_topk; mtp, D_mtp), so the config's are said, not taken
    config = {"model_type": "deepseek_v3", "hidden_size": 7168, "intermediate_size": 18432, "num_hidden_layers": 61,
              "num_attention_heads": 128, "num_key_value_heads": 128, "vocab_size": 129280,
              "max_position_embeddings": 4096, "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128,
              "qk_rope_head_dim": 64, "v_head_dim": 128, "n_routed_experts": 256, "num_experts_per_tok": 8,
              "moe_intermediate_size": 2048, "n_shared_experts": 1, "first_k_dense_replace": 3, "moe_layer_freq": 1,
              "n_group": 8, "topk_group": 4, "num_nextn_predict_layers": 1}
    path = tmp_path / "dsv3.json"
    path.write_text(json.dumps(config))
    model = presets.model_from_config(path)
    assert model.values()["L_moe"] == 58 and model.parameters == presets.model("deepseek-v3").parameters
    assert model.config_note().endswith("type router_groups=8 router_group_topk=4 mtp=1 D_mtp=1")
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps({k: v for k, v in config.items()
                                 if k not in ("n_group", "topk_group", "num_nextn_predict_layers")}))
    assert presets.model_from_config(plain).config_note() is None


def test_hugging_face_config_of_llama4_interleaved_moe_with_its_shared_expert(tmp_path):
    # meta-llama/Llama-4-Maverick-17B-128E's config.json: the language model under text_config (hidden 5120, 48
    # layers, 40 heads of 128 and 8 K, V heads, dense MLP intermediate_size_mlp 16384, experts intermediate_size
    # 8192, 128 of them top-1, every second layer MoE: interleave_moe_layer_step 2, vocabulary 202048, untied).  By
    # hand: attention 5120·5120 + 2·5120·1024 + 5120·5120 = 62,914,560 a layer; 24 dense layers of 3·5120·16384
    # + 2·5120; 24 MoE layers of (128 routed + 1 shared, Llama4TextMoe.shared_expert) · 3·5120·8192 + the router
    # 5120·128 + 2·5120; embeddings 2·202048·5120 and the final norm: 400,711,848,960, Meta's "400B total"
    config = tmp_path / "maverick.json"
    config.write_text(json.dumps({"model_type": "llama4", "_name_or_path": "Llama-4-Maverick", "text_config": {
        "model_type": "llama4_text", "hidden_size": 5120, "intermediate_size": 8192, "intermediate_size_mlp": 16384,
        "num_hidden_layers": 48, "num_attention_heads": 40, "num_key_value_heads": 8, "head_dim": 128,
        "vocab_size": 202048, "max_position_embeddings": 1048576, "num_local_experts": 128,
        "num_experts_per_tok": 1, "interleave_moe_layer_step": 2, "tie_word_embeddings": False}}))
    model = presets.model_from_config(config)
    attention = 5120 * 5120 + 2 * 5120 * 1024 + 5120 * 5120
    hand = (24 * (attention + 3 * 5120 * 16384 + 2 * 5120)
            + 24 * (attention + 129 * 3 * 5120 * 8192 + 5120 * 128 + 2 * 5120) + 2 * 202048 * 5120 + 5120)
    assert hand == 400_711_848_960 and model.parameters == hand
    assert (model.values()["L_moe"], model.values()["E_s"], model.values()["F"], model.values()["F_e"]) == \
        (24, 1, 16384, 8192)


def test_a_hardware_file_changed_between_two_evaluations_is_read_again(tmp_path):
    # what the shipped presets fill is kept per subject (issue 25: the API's speed); a file is not, since it may
    # change: ring all-reduce inside one node, α = the intra link's latency as the file says it at each call
    import symcomm

    doc = {"intra": {"bytes_per_second": 1e11, "latency_s": 1e-6}, "inter": {"bytes_per_second": 1e10,
           "latency_s": 5e-6}, "gpus_per_node": 8, "hbm_bytes_per_second": 2e12}
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(doc))
    first = symcomm.evaluate("all_reduce", algorithm="ring", hardware=str(path), N=8, M=2 ** 20)
    assert first["inputs"]["alpha"]["value"] == 1e-6
    doc["intra"]["latency_s"] = 3e-6
    path.write_text(json.dumps(doc))
    again = symcomm.evaluate("all_reduce", algorithm="ring", hardware=str(path), N=8, M=2 ** 20)
    assert again["inputs"]["alpha"]["value"] == 3e-6
    # ring: 2(N − 1) = 14 messages on the critical path (Patarasuk & Yuan 2009), α apart: 14 × 2 µs more
    assert again["time"] - first["time"] == pytest.approx(14 * 2e-6, rel=1e-9)
    # the shipped preset, asked twice, answers alike (and says its notes both times)
    one, two = (symcomm.evaluate("all_reduce", algorithm="ring", hardware="h100", N=16, M=2 ** 20) for _ in "ab")
    assert one.to_dict() == two.to_dict() and one.notes == two.notes and one.notes


@pytest.mark.parametrize("field, value, hint", [
    # an outsider's copies of h100.json with the figure the outputs print typed as the field's: each was priced
    # (a step of 29 years at 900 bytes/s of NVLink; 80 bytes of memory "46194647700 % too many")
    (("intra", "bytes_per_second"), 900, "for 900 GB/s write 900e9; for 900 Gb/s, 112.5e9"),
    (("hbm_bytes_per_second",), 3.35, "for 3.35 TB/s write 3.35e12"),
    (("peak_flops", "bf16"), 989.4, "for 989.4 TFLOP/s write 989.4e12"),
    (("memory_bytes",), 80, "for 80 GiB 85899345920"),
])
def test_a_hardware_file_figure_in_the_printed_unit_is_refused_naming_the_field_s(tmp_path, capsys, field, value,
                                                                                  hint):
    # an H100-like file (its datasheet figures, in the fields' own units), then one figure slipped
    doc = {"intra": {"bytes_per_second": 450e9, "latency_s": 3.4e-6}, "inter": {"bytes_per_second": 50e9,
           "latency_s": 9.6e-6}, "gpus_per_node": 8, "memory_bytes": 85520809984, "hbm_bytes_per_second": 3.35e12,
           "peak_flops": {"bf16": 989.4e12}, "step_time": {"eta": 0.8, "kappa": 12.5}}
    path = tmp_path / "fine.json"
    path.write_text(json.dumps(doc))
    assert main(HYBRID_8B[:2] + ["--hardware", str(path)] + HYBRID_8B[2:]) == 0
    capsys.readouterr()
    where = doc
    for key in field[:-1]:
        where = where[key]
    where[field[-1]] = value
    path = tmp_path / "slip.json"
    path.write_text(json.dumps(doc))
    code = main(HYBRID_8B[:2] + ["--hardware", str(path)] + HYBRID_8B[2:])
    err = capsys.readouterr().err
    assert code == 2 and f"field {'/'.join(field)!r}: {value:g} is not allowed" in err and hint in err, err
    assert "Traceback" not in err


# -- a GPU whose peak no datasheet gives: torchtitan's Grand Teton H100s ------------------------------------------

HYBRID_8B = ["eval", "hybrid", "--model", "llama3-8b", "t=1", "p=1", "d=8", "c=1", "b=16", "m=1", "s=8192", "--json"]


def test_h100_gt_bounds_its_peak_by_the_datasheets_nvl_and_sxm_columns():
    # torchtitan benchmarks/llama3_h100_202412_torchtitan.md, footnote 2: "between SXM and NVL"; the H100 datasheet
    # prints with sparsity NVL BF16 1,671 and FP8 3,341 TFLOPS (halved for dense); the SXM end is the h100 preset's
    gt, sxm = presets.hardware("h100-gt"), presets.hardware("h100")
    bounds = {dtype: (lo, hi) for dtype, lo, hi in gt.peak_bounds}
    assert bounds["bf16"] == (1671e12 / 2, sxm.peak("bf16")) and bounds["fp8"] == (3341e12 / 2, sxm.peak("fp8"))
    assert gt.memory_bytes == 96e9 and gt.hbm_bytes_per_second == 2.4e12   # "96GB HBM2e with 2.4 TB/sec"
    assert not gt.peak_flops
    with pytest.raises(InputError, match=r"no datasheet gives its dense bf16 peak, only bounds.*give peak=FLOP/s"):
        gt.compute_values("bf16")
    assert gt.compute_values("bf16", typed={"peak": 900e12})["peak"] == 900e12
    with pytest.raises(InputError, match=r"peak=1e\+15 is outside the bounds"):
        gt.compute_values("bf16", typed={"peak": 1e15})
    fp8 = gt.compute_values("bf16", "fp8_tensor", typed={"peak": 835.5e12, "peak_fp8": 1670.5e12})
    assert (fp8["peak"], fp8["peak_fp8"]) == (835.5e12, 1670.5e12)


def _eval(*words):
    return symcomm_command(*HYBRID_8B, *words)


def test_eval_on_a_bounded_peak_needs_a_typed_one_and_a_typed_peak_wins_everywhere():
    refused = _eval("--hardware", "h100-gt")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "Traceback" not in refused.stderr
    assert "peak" in refused.stderr and "8.355e+14" in refused.stderr
    low, high = (json.loads(_eval("--hardware", "h100-gt", f"peak={p}").stdout) for p in ("835.5e12", "989.4e12"))
    assert low["constants"]["peak"] == 835.5e12 and low["constants"]["peak_source"].startswith("typed (peak)")
    # the same run at a lower peak takes longer; memory does not depend on the peak
    assert low["step_time"] > high["step_time"] and low["memory_per_gpu"] == high["memory_per_gpu"]
    # on a preset with a datasheet peak a typed one wins too: typing the datasheet's own value changes nothing
    sxm = json.loads(_eval("--hardware", "h100").stdout)
    same = json.loads(_eval("--hardware", "h100", "peak=989.4e12").stdout)
    assert same["step_time"] == sxm["step_time"] and sxm["constants"]["peak_source"].startswith("NVIDIA")
    half = json.loads(_eval("--hardware", "h100", "peak=494.7e12").stdout)
    assert half["step_time"] > sxm["step_time"]


def test_a_borrowing_preset_takes_its_widths_from_its_own_datasheet():
    # w_half is held at the additive roofline of the fitted part's datasheet, peak · 2 bytes / (2 · HBM bandwidth):
    # h100's 989.4e12 / 3.35e12 = 295.3.  A preset borrowing h100's fitted constants takes the same rule from its own
    # datasheet: H200's 4.8 TB/s give 989.4e12 / 4.8e12 = 206.1; h100-gt's 2.4 TB/s at the peak it is typed at
    # (989.4e12: 412.3, 835.5e12: 348.1); the shares and passes it borrows unchanged
    h100 = presets.hardware("h100").compute_values()
    assert h100["w_half"] == pytest.approx(989.4e12 / 3.35e12)
    h200 = presets.hardware("h200").compute_values()
    assert h200["w_half"] == pytest.approx(989.4e12 / 4.8e12) and h200["w_half_expert"] == h200["w_half"]
    assert (h200["eta"], h200["kappa"], h200["kappa_moe"]) == (h100["eta"], h100["kappa"], h100["kappa_moe"])
    for peak in (989.4e12, 835.5e12):
        gt = presets.hardware("h100-gt").compute_values(typed={"peak": peak})
        assert gt["w_half"] == pytest.approx(peak / 2.4e12)
    # a typed width wins over the roofline, as over any fitted constant
    assert presets.hardware("h200").compute_values(typed={"w_half": 100.0})["w_half"] == 100.0
    # and eval runs at it: the constants line of the answer
    answer = json.loads(_eval("--hardware", "h200").stdout)
    assert answer["constants"]["w_half"] == pytest.approx(989.4e12 / 4.8e12)


def test_a_step_time_says_how_far_off_its_fit_measured_it(tmp_path):
    # the leave-one-out errors hardware.json records for the fit that gave the constants (h200 and h100-gt borrow
    # h100's); a hardware file that records none says the error is unknown instead of printing a bare number
    stored = json.loads((Path(presets.__file__).parent / "hardware.json").read_text(encoding="utf-8"))["systems"]
    expected = stored["h100"]["step_time"]["errors"]["leave_one_out"]
    for name in ("h100", "h200"):
        got = json.loads(_eval("--hardware", name).stdout)["step_time_error"]
        assert got["of"] == "h100" and got["runs"] == expected["runs"]
        assert (got["mean"], got["max"], got["signed_mean"]) == (expected["mean"], expected["max"],
                                                                  expected["signed_mean"])
    text = symcomm_command(*HYBRID_8B[:-1], "--hardware", "a100", "flash=0").stdout
    a100 = stored["a100"]["step_time"]["errors"]["leave_one_out"]
    assert f"off by       typically {100 * a100['mean']:.0f} %, up to {100 * a100['max']:.0f} %" in text
    h100 = presets.hardware("h100")
    document = {"intra": {"bytes_per_second": 450e9, "latency_s": 3.4e-6},
                "inter": {"bytes_per_second": 50e9, "latency_s": 9.6e-6}, "gpus_per_node": 8,
                "memory_bytes": 80e9, "hbm_bytes_per_second": 3.35e12, "peak_flops": dict(h100.peak_flops),
                "step_time": {"eta": 0.8, "kappa": 5}}
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(document))
    mine = symcomm_command(*HYBRID_8B[:-1], "--hardware", str(path))
    assert mine.returncode == 0, mine.stderr
    assert "off by       unknown: no fit error is recorded for these constants" in mine.stdout


@pytest.mark.parametrize("word, known", [("hbm=1e12", False), ("peak=900e12", False),
                                         ("hbm=3.35e12", True), ("peak=989.4e12", True)])
def test_a_datasheet_value_typed_over_the_hardware_s_own_leaves_the_fit_error_unknown(word, known):
    # h100's constants were fitted at its own datasheet peak (989.4 TFLOP/s bf16) and HBM bandwidth (3.35 TB/s):
    # another typed there moves the step time (2.95 s to 4.58 s at hbm=1e12, an outsider's test) onto constants no
    # run measured, as a typed eta does, so no fit error is claimed; the hardware's own value typed again changes nothing
    got = json.loads(_eval("--hardware", "h100", word).stdout)
    assert (got["step_time_error"] is not None) == known
    # a part whose peak only bounds give (h100-gt) takes a typed one within them as its peak: the borrowed error stays
    assert json.loads(_eval("--hardware", "h100-gt", "peak=9e14").stdout)["step_time_error"] is not None


def test_what_no_published_run_measured_is_said_before_the_fits_error(tmp_path):
    # a100's fitted runs (derivations/data/published_runs.json: Narayanan et al. 2021 Table 1, Korthikanti et al. 2022
    # Table 5) are Megatron-LM runs without flash attention (flash=0 in each) and its check runs Megatron, DeepSpeed
    # and PyTorch FSDP (LLM Foundry) ones: no run measured FSDP2 (framework=fsdp2) with its constants, so eval and
    # plan say it first; the fitted setting itself says nothing of it.  The flash-attention core (eta_attn) is not
    # said: a100 holds FlashAttention-2's published share for it (hardware.json attention_shares.fused), not eta
    fitted = json.loads(symcomm_command(*HYBRID_8B, "--hardware", "a100", "flash=0").stdout)["step_time_error"]
    assert fitted["unchecked"] == []
    flash = json.loads(symcomm_command(*HYBRID_8B, "--hardware", "a100").stdout)["step_time_error"]
    assert flash["unchecked"] == []
    # without that published share (nor the block's eta_attn, held from it) the flash core is read as eta: said first
    from dataclasses import replace

    a100 = presets.hardware("a100")
    bare = replace(a100, attention_shares=(), step_time=tuple((k, v) for k, v in a100.step_time if k != "eta_attn"))
    assert [text.split(" ")[0] for text in bare.unchecked(("megatron",), ("eta", "eta_attn"))] == ["eta_attn"]
    fsdp = symcomm_command(*HYBRID_8B[:-1], "--hardware", "a100", "flash=0", "framework=fsdp2", "zero=3")
    assert fsdp.returncode == 0, fsdp.stderr
    assert ("off by       unknown where it was checked on no measured run: framework=fsdp2 (no measured run of it was fitted or checked "
            "with a100's constants); what was checked: typically") in fsdp.stdout
    # deepspeed has a100 check runs (BLOOM, MT-NLG): checked, so not said
    deepspeed = json.loads(symcomm_command(*HYBRID_8B, "--hardware", "a100", "flash=0", "framework=deepspeed",
                                           "zero=1").stdout)["step_time_error"]
    assert deepspeed["unchecked"] == [] and "deepspeed" in deepspeed["checks"]
    # plan: the frameworks of the rows it shows
    plan = symcomm_command("plan", "--model", "llama3-8b", "--hardware", "a100", "--gpus", "64", "--batch", "64",
                           "--framework", "fsdp2", "--top", "3")
    assert plan.returncode == 0, plan.stderr
    assert "step times off by unknown where it was checked on no measured run: framework=fsdp2 (" in plan.stdout
    # and each row of it marked, the mark read in the header
    assert "(† in the rows: fsdp2, checked on no measured run)" in plan.stdout
    table = plan.stdout.split("\n\n")[1].splitlines()[1:]
    assert table and all(line.endswith(" †") for line in table)
    # a hardware file whose step_time records no frameworks (written before it did): nothing said of them
    h100 = presets.hardware("h100")
    document = {"intra": {"bytes_per_second": 450e9, "latency_s": 3.4e-6},
                "inter": {"bytes_per_second": 50e9, "latency_s": 9.6e-6}, "gpus_per_node": 8,
                "memory_bytes": 80e9, "hbm_bytes_per_second": 3.35e12, "peak_flops": dict(h100.peak_flops),
                "step_time": {"eta": 0.8, "kappa": 5, "eta_attn": 0.5,
                              "errors": {"leave_one_out": {"mean": 0.1, "max": 0.2, "signed_mean": 0.0, "runs": 5}}}}
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(document))
    mine = json.loads(symcomm_command(*HYBRID_8B, "--hardware", str(path), "framework=fsdp", "zero=3").stdout)
    assert mine["step_time_error"]["unchecked"] == []


def test_a_precision_recipe_no_published_run_measured_is_said_before_the_fits_error():
    # b200's fitted and checked runs ran bf16, fp8_tensor and mxfp8 (hardware.json step_time.precisions,
    # checked_precisions, recounted here from the fit script's step_fit.json): its eta_fp8 has timed no block-scaled
    # FP8 GEMM (precision=fp8_block), whose error the fit's band does not measure; h100's DeepSeek-V3 rows (Megatron-
    # Bridge, 'fp8-sc', subchannel scaling) ran it, so there it is measured and not said
    import json
    from importlib import resources

    results = json.loads(resources.files("symcomm.derivations").joinpath("data", "step_fit.json").read_text())
    fitted_b200 = {run["id"] for run in results["systems"]["b200"]["runs"]}
    checked = {row["precision_option"] for found in results["checks"].values() if found["constants_from"] == "b200"
               for row in found["runs"]}
    assert "fp8_block" not in checked and fitted_b200
    assert presets.hardware("b200").step_precisions == ("bf16", "fp8_tensor", "mxfp8")
    assert "fp8_block" in presets.hardware("h100").step_precisions
    b200 = json.loads(symcomm_command(*HYBRID_8B, "--hardware", "b200", "precision=fp8_block").stdout)
    assert [text.split(" ")[0] for text in b200["step_time_error"]["unchecked"]] == ["precision=fp8_block"]
    h100 = json.loads(symcomm_command(*HYBRID_8B, "--hardware", "h100", "precision=fp8_block").stdout)
    assert h100["step_time_error"]["unchecked"] == []
    # a borrowing preset reads its lender's: h200 runs h100's constants
    assert presets.hardware("h200").step_precisions == presets.hardware("h100").step_precisions
    plan = symcomm_command("plan", "--model", "llama3-8b", "--hardware", "b200", "--gpus", "8", "--batch", "64",
                           "--precision", "fp8_block", "--framework", "megatron", "--top", "2")
    assert plan.returncode == 0, plan.stderr
    assert "step times off by unknown where it was checked on no measured run: precision=fp8_block (" in plan.stdout


def test_a_step_time_says_how_far_off_its_constants_were_on_the_models_own_runs(tmp_path):
    # hardware.json's step_time.models: per model preset and framework option, the errors of these constants on that
    # model's published runs, counted here again from the fit script's other output, step_fit.json: a fitted run at
    # its leave-one-out error (predicted by the constants fitted without it), a check run at its error
    from symcomm.derivations import modern

    results = json.loads((Path(modern.__file__).parent / "data" / "step_fit.json").read_text(encoding="utf-8"))
    model_of = {r["id"]: r["model"]["name"] for r in modern.runs()}

    def band(rows, key):
        errors = [r[key] for r in rows]
        return min(errors), max(errors), len(errors)

    # gpt-oss-120b on h100: its two Megatron-Bridge rows are fitting runs of h100's constants
    fitted = [r for r in results["systems"]["h100"]["runs"] if model_of[r["id"].split("+")[0]] == "gpt-oss-120b"]
    low, high, runs = band(fitted, "loo_error")
    words = ("eval", "hybrid", "--model", "gpt-oss-120b", "t=1", "p=4", "d=16", "c=1", "e=8", "b=1280", "m=80",
             "s=4096", "moe=1", "zero=1", "--json")
    got = json.loads(symcomm_command(*words, "--hardware", "h100").stdout)["step_time_error"]
    assert got["model_name"] == "gpt-oss-120b" and list(got["model"]) == ["megatron"]
    own = got["model"]["megatron"]
    assert (own["lowest"], own["highest"], own["runs"], own["fitted"]) == (low, high, runs, runs) and runs == 2
    assert own["hardware"] == ["h100"] and own["highest"] < 0          # both predicted too fast
    text = symcomm_command(*words[:-1], "--hardware", "h100").stdout
    assert (f"gpt-oss-120b with framework=megatron, on its own 2 published runs (h100, 2 of them fitted on, each "
            f"predicted by the fit without it): {100 * low:+.0f} % to {100 * high:+.0f} %") in text
    assert "predicted too fast)" in text
    # llama3.1-8b under FSDP2 on h100's constants: torchtitan's check runs, on h100-gt and h200 (which borrow them)
    checks = [r for system in ("h100-gt", "h200") for r in results["checks"][system]["runs"]
              if model_of[r["id"].split("+")[0]] == "llama3.1-8b" and r["framework_option"] == "fsdp2"]
    low, high, runs = band(checks, "error")
    got = presets.hardware("h100-gt").step_time_error("fsdp2", model="llama3.1-8b")["model"]["fsdp2"]
    assert (got["lowest"], got["highest"], got["runs"], got["fitted"]) == (low, high, runs, 0)
    assert got["hardware"] == ["h100-gt", "h200"]
    # another framework than the run's, a model with no run, and a model typed by its shape: nothing said
    assert "model" not in presets.hardware("h100").step_time_error("deepspeed", model="gpt-oss-120b")
    assert "model" not in presets.hardware("h100").step_time_error("megatron", model="mixtral-8x7b")
    shape = json.loads(symcomm_command("eval", "hybrid", "--hardware", "h100", "h=2048", "L=24", "a=16", "F=8192",
                                       "h_kv=2048", "V=50368", "gated=0", "tied=1", "embeddings=1", "G=8", "t=1",
                                       "p=1", "d=8", "c=1", "b=16", "m=1", "s=2048", "--json").stdout)["step_time_error"]
    assert "model" not in shape
    # plan says it of the model it searches
    plan = symcomm_command("plan", "--model", "gpt-oss-120b", "--hardware", "h100", "--gpus", "64", "--seq", "4096",
                           "--batch", "1280", "--framework", "megatron", "--top", "2")
    assert plan.returncode == 0, plan.stderr
    assert "gpt-oss-120b with framework=megatron, on its own 2 published runs" in plan.stdout
    # one run, one value: no range
    one = {**presets.hardware("h100").step_time_error("megatron"), "model_name": "m",
           "model": {"megatron": {"lowest": 0.05, "highest": 0.05, "signed_mean": 0.05, "runs": 1, "fitted": 0,
                                  "hardware": ["a"]}}}
    assert ("m with framework=megatron, on its own 1 published run (a, none fitted on): +5 % (signed mean +5 %: "
            "predicted too slow)") in presets.step_error_words(one)


def test_an_moe_on_a_part_fitted_on_dense_runs_says_its_routing_passes_were_never_measured():
    # a100's fitted runs are dense (derivations/data/published_runs.json): its block leaves kappa_moe out, read as 0,
    # and an MoE evaluated on it says so first; h100's was fitted on MoE runs (Qwen3, DeepSeek-V3, gpt-oss: its
    # fitted_on), so nothing is said there
    words = ("eval", "hybrid", "--model", "mixtral-8x7b", "t=1", "p=4", "c=1", "d=8", "e=8", "b=256", "m=32", "s=4096",
             "zero=1", "moe=1", "--json")
    assert "kappa_moe" not in dict(presets.hardware("a100").step_time)
    a100 = json.loads(symcomm_command(*words, "--hardware", "a100").stdout)["step_time_error"]
    assert a100["unchecked"] == ["kappa_moe (no fitted run reads it: taken as 0)"]
    h100 = json.loads(symcomm_command(*words, "--hardware", "h100").stdout)["step_time_error"]
    assert h100["unchecked"] == []
    # the text says the MoE's own constants beside the others, as the preset holds them; a dense run's line has none
    held = dict(presets.hardware("h100").step_time)
    text = symcomm_command(*words[:-1], "--hardware", "h100").stdout
    assert (f"kappa {held['kappa']}, w_half_expert {held['w_half_expert']:g} elements, kappa_moe "
            f"{held['kappa_moe']:g}, eta_attn") in text
    # (its value, that is: the preset's source, printed after the constants, names kappa_moe among those fitted)
    assert f"kappa_moe {held['kappa_moe']:g}" not in symcomm_command(*HYBRID_8B[:-1], "--hardware", "h100").stdout
    # a dense model on a100 reads no kappa_moe: nothing said
    assert json.loads(symcomm_command(*HYBRID_8B, "--hardware", "a100", "flash=0").stdout)["step_time_error"][
        "unchecked"] == []


def test_a_step_time_says_how_far_off_its_constants_were_on_runs_never_fitted_on():
    # hardware.json's step_time.checks: per framework option, the errors of the check runs predicted with these
    # constants; eval says the run's own framework's (h100-gt borrows h100's constants and their checks), plan
    # every framework's when it searches them all; the hardware named are those the runs ran on
    stored = json.loads((Path(presets.__file__).parent / "hardware.json").read_text(encoding="utf-8"))["systems"]
    fsdp2 = stored["h100"]["step_time"]["checks"]["fsdp2"]
    got = presets.hardware("h100-gt").step_time_error("fsdp2")
    assert list(got["checks"]) == ["fsdp2"] and got["checks"]["fsdp2"]["runs"] == fsdp2["runs"]
    assert presets.hardware("h100").step_time_error("no-such-framework")["checks"] == {}
    assert set(presets.hardware("h100").step_time_error()["checks"]) == set(stored["h100"]["step_time"]["checks"])
    words = presets.step_error_words(got)
    assert (f"framework=fsdp2 on {fsdp2['runs']} published runs never fitted on ({', '.join(fsdp2['hardware'])}): "
            "typically "
            f"{100 * fsdp2['mean']:.0f} %, up to {100 * fsdp2['max']:.0f} %") in words
    one = {**got, "checks": {"x": {"mean": 0.1, "max": 0.1, "signed_mean": -0.1, "runs": 1, "hardware": ["a"]}}}
    assert "framework=x on 1 published run never fitted on (a): typically 10 %, up to 10 % (signed mean -10 %)" \
        in presets.step_error_words(one)
    text = symcomm_command(*HYBRID_8B[:-1], "--hardware", "h100", "framework=fsdp2", "zero=3")
    assert text.returncode == 0, text.stderr
    assert f"framework=fsdp2 on {fsdp2['runs']} published runs never fitted on" in text.stdout
    assert "framework=megatron on" not in text.stdout


def test_the_presets_wing_names_the_same_rings_as_the_catalog():
    # presets may not import collectives (same floor): its copy of the ring set must not drift
    from symcomm.collectives.algorithms import SPREADS_OVER_NICS
    from symcomm.presets.systems import _RINGS

    assert _RINGS == SPREADS_OVER_NICS


def test_a_flat_fit_across_nodes_is_read_once_as_the_per_nic_link(tmp_path):
    # A flat ring fitted on 16 ranks, 8 per node, measured β_fit = 1/100 GB/s per step, the node's links
    # 1/300 GB/s.  The fit is the split at the log's own k = 8, its two legs at once: β_fit = max(7/8·β_intra,
    # 1/8·β_inter); 7/8·(1/3e11) = 2.9167e-12 < 1e-11, so the network's leg is the slower and
    # β_inter = 8·β_fit = 8e-11 s/byte (12.5 GB/s per NIC).
    from symcomm.base.errors import InputError

    doc = {"intra": {"bytes_per_second": 3e11, "latency_s": 2e-6},
           "inter": {"bytes_per_second": 1e11, "latency_s": 1e-6, "fitted_as": "flat",
                     "fitted_on": {"collective": "all_reduce", "algorithm": "ring", "ranks": 16, "gpus_per_node": 8}},
           "gpus_per_node": 8}
    path = tmp_path / "flat.json"
    path.write_text(json.dumps(doc))
    hw = presets.hardware(str(path))
    assert hw.values(1)["beta_inter"] == pytest.approx(8e-11, rel=1e-12)
    assert "beta_inter = 8·beta_fit" in hw.inter.conversion
    # the log's own group priced again gives back its fit (no second split) ...
    same, _ = presets.link_values(hw, 16, False, spread=True)
    assert same["beta"] == pytest.approx(1 / 1e11, rel=1e-12)
    # ... and 32 ranks (k = 8 too) the same per step, while 12 ranks (8 + 4: k = 4) lean on the NIC more:
    # max(3/4·(1/3e11), 1/4·8e-11) = max(2.5e-12, 2e-11) = 2e-11
    assert presets.link_values(hw, 32, False, spread=True)[0]["beta"] == pytest.approx(1e-11, rel=1e-12)
    assert presets.link_values(hw, 12, False, spread=True)[0]["beta"] == pytest.approx(2e-11, rel=1e-12)
    # a fit as fast as the node's leg alone or faster (7/8·(1/1e10) = 8.75e-11 > 1e-11) says nothing of the
    # network: refused naming the field
    doc["intra"]["bytes_per_second"] = 1e10
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError, match="field 'inter'.*node's leg alone"):
        presets.hardware(str(path))
    # a tree fit is not split (only a ring's crossings spread): kept whole
    doc["intra"]["bytes_per_second"] = 3e11
    doc["inter"]["fitted_on"]["algorithm"] = "double_binary_tree"
    path.write_text(json.dumps(doc))
    assert presets.hardware(str(path)).values(1)["beta_inter"] == 1 / 1e11


def test_a_flat_all_to_all_fit_across_nodes_is_unmixed_once(tmp_path):
    # A pairwise all-to-all fitted flat on 16 ranks, 8 per node: a rank sends to 7 peers on its node and 8 across,
    # one-port (base.crossing.PEERS), so the fit's per-step values are the mix 7/15 intra + 8/15 inter.  Fit
    # β_fit = 1/(1e11) s/byte, α_fit = 10 µs; node links 1/(3e11) s/byte, 2 µs.  By hand:
    #   β_inter = (15·1e-11 − 7·(1/3e11))/8 = (1.5e-10 − 2.33333e-11)/8 = 1.58333e-11 s/byte
    #   α_inter = (15·10e-6 − 7·2e-6)/8 = (150e-6 − 14e-6)/8 = 17e-6 s
    from symcomm.base.crossing import PEERS
    from symcomm.base.errors import InputError

    doc = {"intra": {"bytes_per_second": 3e11, "latency_s": 2e-6},
           "inter": {"bytes_per_second": 1e11, "latency_s": 1e-5, "fitted_as": "flat",
                     "fitted_on": {"collective": "all_to_all", "algorithm": "pairwise", "ranks": 16,
                                   "gpus_per_node": 8}},
           "gpus_per_node": 8}
    path = tmp_path / "a2a.json"
    path.write_text(json.dumps(doc))
    hw = presets.hardware(str(path))
    assert hw.values(1)["beta_inter"] == pytest.approx(1.5833333333e-11, rel=1e-9)
    assert hw.values(1)["alpha_inter"] == pytest.approx(17e-6, rel=1e-12)
    assert "(15·beta_fit − 7·beta_intra)/8" in hw.inter.conversion
    # the log's own group priced again gives back its fit, α and β (no second mix)
    same, _ = presets.link_values(hw, 16, False, crossing=PEERS)
    assert same["beta"] == pytest.approx(1e-11, rel=1e-12) and same["alpha"] == pytest.approx(1e-5, rel=1e-12)
    # a latency fit below what the node's own 7 sends already take: 15·α_fit < 7·α_intra, refused naming the field
    doc["inter"]["latency_s"] = 5e-7
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError, match="field 'inter'.*alpha_inter.*not positive"):
        presets.hardware(str(path))


def test_a_gpt_shape_with_grouped_query_attention_counts_its_narrow_k_and_v():
    """A shape typed with gated=0 is counted as GPT (biases, learned positions), and its K, V projections are h_kv
    wide, not h: Nemotron-4 340B (NeMo-Framework-Launcher conf/training/nemotron/nemotron_340b.yaml: h 18432, 96
    layers, 96 heads, 8 query groups of h/a = 192, FFN 4h = 73728 squared-ReLU, untied, 256k vocabulary, seq 4096).
    Per layer by hand: W_Q, W_O 2·18432² + W_K, W_V 2·18432·1536 + biases 2·18432 + 2·1536, MLP 2·18432·73728 +
    73728 + 18432, norms 4·18432; then V·h twice (untied), s·h, 2h: 341.1B, the published 340B within 1 %."""
    import symcomm

    h, L, h_kv, F, V, s = 18432, 96, 1536, 73728, 256000, 4096
    per_layer = 2 * h * h + 2 * h * h_kv + 2 * h + 2 * h_kv + 2 * h * F + F + h + 4 * h
    hand = L * per_layer + 2 * V * h + s * h + 2 * h
    layout = dict(t=8, p=8, d=2, c=1, b=32, m=16, G=8)
    got = symcomm.evaluate("hybrid", h=h, L=L, a=96, h_kv=h_kv, F=F, V=V, s=s, gated=0, tied=0, **layout)
    assert got["inputs"]["Phi"]["value"] == hand
    assert abs(hand / 340e9 - 1) < 0.01
    # multi-head attention (h_kv = h) is GPT-3's count unchanged: 4h² + 4h per layer
    mha = symcomm.evaluate("hybrid", h=h, L=L, a=96, h_kv=h, F=F, V=V, s=s, gated=0, **layout)
    assert mha["inputs"]["Phi"]["value"] == L * (4 * h * h + 4 * h + 2 * h * F + F + 5 * h) + V * h + s * h + 2 * h


def test_a_sliding_window_shorter_than_the_sequence_is_said_by_eval_and_plan(capsys, tmp_path):
    # gpt-oss-120b: 18 of its 36 layers attend over the last 128 tokens (config.json layer_types, sliding_window);
    # the step model counts every layer's attention core over the full s × s, so past s = 128 it counts more work
    # than those layers do, said by eval, the Python API and plan alike; at s = 128 nothing is overcounted, and
    # nothing is said
    layout = ("t=1", "p=1", "c=1", "d=64", "e=64", "b=512", "m=8", "G=8")
    said = "18 of its 36 layers attend over a sliding window of 128 tokens"
    code, out, err = run(capsys, "eval", "hybrid", "--model", "gpt-oss-120b", "--hardware", "h100", *layout, "s=8192")
    assert code == 0, err
    assert said in err and "s = 8192" in err and "more work than those layers do" in err
    code, out, err = run(capsys, "eval", "hybrid", "--model", "gpt-oss-120b", "--hardware", "h100", *layout, "s=128")
    assert code == 0, err
    assert "sliding window" not in err
    import symcomm

    answer = symcomm.evaluate("hybrid", model="gpt-oss-120b", hardware="h100", t=1, p=1, c=1, d=64, e=64, b=512,
                              m=8, s=8192, G=8)
    assert any(said in str(n) for n in answer.notes)
    code, out, err = run(capsys, "plan", "--model", "gpt-oss-120b", "--hardware", "h100", "--gpus", "64", "--batch",
                         "512", "--seq", "8192", "--top", "1")
    assert code == 0, err
    assert said in err
    # a model with no window says nothing
    code, out, err = run(capsys, "eval", "hybrid", "--model", "qwen3-30b-a3b", "--hardware", "h100", *layout, "s=8192")
    assert code == 0, err
    assert "sliding window" not in err


def test_hugging_face_configs_sliding_windows(tmp_path):
    def model(**keys):
        path = tmp_path / "config.json"
        path.write_text(json.dumps({"model_type": "llama", "hidden_size": 2048, "intermediate_size": 6144,
                                    "num_hidden_layers": 4, "num_attention_heads": 16, "num_key_value_heads": 4,
                                    "vocab_size": 32000, "max_position_embeddings": 4096, **keys}))
        return presets.model_from_config(path)

    # gpt-oss's form: layer_types names each layer, the "sliding_attention" ones slide (here 2 of 4)
    kinds = ["sliding_attention", "full_attention"] * 2
    assert model(sliding_window=128, layer_types=kinds).sliding == (128, 2)
    # Mistral's: a window and no layer_types, every layer slides
    assert model(sliding_window=4096).sliding == (4096, 4)
    # Qwen2/3 set a window but switch it off (use_sliding_window false); a null window is none
    assert model(sliding_window=4096, use_sliding_window=False).sliding == ()
    assert model(sliding_window=None).sliding == ()
    assert model(sliding_window=128, layer_types=["full_attention"] * 4).sliding == ()


def test_hugging_face_configs_qwen2_moe_shared_experts_gemma3_and_what_is_not_priced(tmp_path):
    def read(name, doc):
        path = tmp_path / name
        path.write_text(json.dumps(doc))
        return presets.model_from_config(path)

    # Qwen/Qwen1.5-MoE-A2.7B's config.json: one shared expert MLP 5632 wide beside 60 routed ones 1408 wide, read as
    # 5632 / 1408 = 4 shared experts of the routed width (an outsider's Φ was 13.49e9 with none). By hand, per layer
    # (transformers' Qwen2MoeDecoderLayer, biases and the shared expert's one-row gate left out as the count leaves
    # them): attention 4·2048² (16 heads of 128 = h), (60 + 4) experts · 3·2048·1408, router 2048·60, norms 2·2048;
    # 24 layers, untied 151936-row embedding and head, final norm 2048: 14.3156e9, the model card's 14.3B
    qwen = {"model_type": "qwen2_moe", "hidden_size": 2048, "intermediate_size": 5632, "moe_intermediate_size": 1408,
            "shared_expert_intermediate_size": 5632, "num_experts": 60, "num_experts_per_tok": 4,
            "decoder_sparse_step": 1, "mlp_only_layers": [], "num_hidden_layers": 24, "num_attention_heads": 16,
            "num_key_value_heads": 16, "vocab_size": 151936, "max_position_embeddings": 8192,
            "tie_word_embeddings": False, "sliding_window": 32768, "use_sliding_window": False}
    model = read("qwen.json", qwen)
    layer = 4 * 2048 ** 2 + 64 * 3 * 2048 * 1408 + 2048 * 60 + 2 * 2048
    assert model.shared_experts == 4
    assert model.parameters == 24 * layer + 2 * 151936 * 2048 + 2048 == 14_315_587_584
    with pytest.raises(InputError, match="shared_expert_intermediate_size 2000 is not a whole number"):
        read("odd.json", {**qwen, "shared_expert_intermediate_size": 2000})

    # google/gemma-3-27b-it's config.json: the language model under text_config (gemma3_text), its embedding tied by
    # Gemma's default (no tie_word_embeddings key), every 6th of its 62 layers global and the other 52 sliding over
    # 1024 tokens. By hand: attention 2·5376·(32·128) + 2·5376·(16·128), gated MLP 3·5376·21504, norms 2·5376, per
    # layer; one 262208 × 5376 matrix, final norm 5376: 27.0087e9 (the vision tower's 0.4e9 not counted, and said)
    gemma = {"model_type": "gemma3", "text_config": {
        "model_type": "gemma3_text", "hidden_size": 5376, "intermediate_size": 21504, "num_hidden_layers": 62,
        "num_attention_heads": 32, "num_key_value_heads": 16, "head_dim": 128, "vocab_size": 262208,
        "sliding_window": 1024, "sliding_window_pattern": 6, "max_position_embeddings": 131072},
        "vision_config": {"model_type": "siglip_vision_model", "hidden_size": 1152}}
    model = read("gemma.json", gemma)
    layer = 2 * 5376 * 32 * 128 + 2 * 5376 * 16 * 128 + 3 * 5376 * 21504 + 2 * 5376
    assert model.tied and model.sliding == (1024, 52)
    assert model.parameters == 62 * layer + 262208 * 5376 + 5376 == 27_008_663_808
    notes = " ".join(model.shape_notes(4096))
    assert "52 of its 62 layers attend over a sliding window of 1024 tokens" in notes
    assert "vision encoder and projector it also holds are not counted" in notes
    # the composite config's own tie_word_embeddings is its language model's where that says none (Mistral 3 style);
    # two that disagree are refused
    assert not read("outer.json", {**gemma, "tie_word_embeddings": False}).tied
    with pytest.raises(InputError, match="tie_word_embeddings False and text_config's True disagree"):
        read("both.json", {**gemma, "tie_word_embeddings": False,
                           "text_config": {**gemma["text_config"], "tie_word_embeddings": True}})
    # the nested model is held to the same schema as a top-level one
    with pytest.raises(InputError, match="text_config: field 'num_hidden_layers'"):
        read("bad.json", {**gemma, "text_config": {**gemma["text_config"], "num_hidden_layers": 10 ** 9}})
    # a model type whose default is not known here is read untied, and said
    untyped = read("untyped.json", {k: v for k, v in qwen.items() if k not in ("model_type", "tie_word_embeddings")})
    assert not untyped.tied and "sets no tie_word_embeddings" in " ".join(untyped.shape_notes(4096))

    # Qwen3-Next's linear-attention layers and Llama 4's chunked attention are priced as softmax attention over the
    # whole causal s × s: said (the chunks only past a chunk's length)
    kinds = ["linear_attention"] * 3 + ["full_attention"]
    nextish = read("next.json", {**qwen, "layer_types": kinds * 6})
    assert "18 of its 24 layers are linear attention" in " ".join(nextish.shape_notes(4096))
    chunked = read("chunked.json", {**qwen, "attention_chunk_size": 8192, "no_rope_layers": [1, 1, 1, 0] * 6})
    assert chunked.shape_notes(8192) == ()
    assert "18 of its 24 layers attend within chunks of 8192 tokens" in " ".join(chunked.shape_notes(8193))


def test_hugging_face_configs_layer_kinds_by_their_defaults_and_lengths(tmp_path):
    # an outsider's second round: Llama 4 Scout's config.json gives "no_rope_layers": [], which transformers'
    # Llama4TextConfig builds from no_rope_layer_interval (4): layer i full attention where (i + 1) % 4 == 0, the other
    # 36 of 48 chunked; a Qwen3-Next config with full_attention_interval and no layer_types; a Gemma 3 config without
    # sliding_window_pattern (transformers' default 6); lists of another length than the layers; two shared-expert
    # fields that disagree
    base = {"model_type": "llama", "hidden_size": 2048, "intermediate_size": 6144, "num_hidden_layers": 48,
            "num_attention_heads": 16, "num_key_value_heads": 4, "vocab_size": 32000, "max_position_embeddings": 4096,
            "tie_word_embeddings": False}

    def read(**keys):
        path = tmp_path / "config.json"
        path.write_text(json.dumps({**base, **keys}))
        return presets.model_from_config(path)

    scout = read(attention_chunk_size=8192, no_rope_layers=[])
    assert "36 of its 48 layers attend within chunks of 8192 tokens" in " ".join(scout.shape_notes(16384))
    nextish = read(full_attention_interval=4)
    assert "36 of its 48 layers are linear attention" in " ".join(nextish.shape_notes(4096))
    gemma = read(model_type="gemma3_text", sliding_window=1024)
    assert gemma.sliding == (1024, 48 - 48 // 6)
    with pytest.raises(InputError, match="layer_types lists 144 layers; num_hidden_layers is 48"):
        read(layer_types=["linear_attention"] * 144)
    with pytest.raises(InputError, match="no_rope_layers lists 500 layers"):
        read(attention_chunk_size=8192, no_rope_layers=[1] * 500)
    with pytest.raises(InputError, match="field 'sliding_window'"):
        read(sliding_window="1024")
    moe = {"num_experts": 60, "num_experts_per_tok": 4, "moe_intermediate_size": 1408}
    with pytest.raises(InputError, match="n_shared_experts 2 and shared_expert_intermediate_size 5632 .4 experts"):
        read(**moe, n_shared_experts=2, shared_expert_intermediate_size=5632)
    assert read(**moe, n_shared_experts=4, shared_expert_intermediate_size=5632).shared_experts == 4
    # a list where an object goes: the refusal keeps its rule, the value cut short
    path = tmp_path / "listed.json"
    path.write_text(json.dumps({"model_type": "gemma3", "text_config": [{**base, "note": "x" * 300}]}))
    with pytest.raises(InputError, match="field 'text_config': .{1,45} is not of type 'object'"):
        presets.model_from_config(path)


def test_plan_says_a_configs_context_window_is_taken_as_the_sequence(capsys, tmp_path):
    # a config.json gives its context window (max_position_embeddings), not a training length: plan without --seq
    # plans at it and says so (an outsider's DeepSeek-V3 config was planned at 163,840 tokens, 780 s a step, said only
    # in the header); with --seq, nothing to say
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "llama", "hidden_size": 1024, "intermediate_size": 4096,
                                "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 8,
                                "vocab_size": 32000, "max_position_embeddings": 32768, "tie_word_embeddings": False}))
    said = "s = 32,768 is config.json's max_position_embeddings, its context window, taken as the training sequence"
    words = ("plan", "--model-config", str(path), "--hardware", "h100", "--gpus", "8", "--batch", "8", "--top", "1")
    code, out, err = run(capsys, *words)
    assert code == 0, err
    assert said.replace("config.json's", f"{path}'s") in err
    code, out, err = run(capsys, *words, "--seq", "4096")
    assert code == 0, err
    assert "context window" not in err


def test_a_config_giving_one_figure_under_two_names_that_disagree_is_refused(tmp_path):
    # an outsider's Llama 3 8B config.json with "n_embd": 2048 beside "hidden_size": 4096 was read by the GPT-2 name,
    # Φ = 2,696,417,280 without a word, where the file without it gives 8,030,261,248
    llama = {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
             "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256,
             "max_position_embeddings": 8192, "tie_word_embeddings": False}
    fine = tmp_path / "fine.json"
    fine.write_text(json.dumps(llama))
    assert presets.model_from_config(fine).parameters == presets.model("llama3-8b").parameters
    both = tmp_path / "both.json"
    both.write_text(json.dumps({**llama, "n_embd": 2048}))
    with pytest.raises(InputError, match="n_embd = 2048 and hidden_size = 4096 name one figure and disagree"):
        presets.model_from_config(both)
    # the same figure under both names is one figure, and the config stays a Llama's (gated MLP, grouped K and V)
    both.write_text(json.dumps({**llama, "n_embd": 4096}))
    assert presets.model_from_config(both).parameters == presets.model("llama3-8b").parameters


@pytest.mark.parametrize("kernels, said", [(["fused"], True), (["fa2", "fused"], False), (None, False)])
def test_a_named_kernels_share_no_fitted_run_ran_is_said_unchecked(tmp_path, kernels, said):
    # a calibrated file whose runs all ran the fused core reads eta_fa2 as FlashAttention-2's published share when
    # asked for attention_kernel=fa2: its fit measured nothing of it, so its error band does not cover it (an outsider
    # saw "off by typically 0 %, up to 1 %" there); a file whose runs ran fa2 measured it, and one that records no
    # kernels (a preset, a file written before the record) says nothing
    block = {"eta": 0.6, "kappa": 6.0, "w_half": 300.0, "eta_attn": 0.5, "errors": {"in_sample": {"mean": 0.01, "max": 0.02,
             "signed_mean": 0.0, "runs": 8}, "leave_one_out": {"mean": 0.01, "max": 0.02, "signed_mean": 0.0,
                                                                "runs": 8}},
             **({"attention_kernels": kernels} if kernels is not None else {})}
    document = {"intra": {"bytes_per_second": 1e11, "latency_s": 1e-6}, "inter": {"bytes_per_second": 1e10,
                "latency_s": 5e-6}, "gpus_per_node": 8, "hbm_bytes_per_second": 2e12, "memory_bytes": 8e10,
                "peak_flops": {"bf16": 1e15}, "attention_shares": {"fa2": 0.3}, "step_time": block}
    path = tmp_path / "calibrated.json"
    path.write_text(json.dumps(document))
    unchecked = presets.hardware(str(path)).unchecked((), ("eta", "eta_fa2"))
    assert any(text.startswith("eta_fa2 (the published share of FlashAttention-2") for text in unchecked) is said
    # a run of the fused core reads no eta_fa2: nothing to say
    assert not presets.hardware(str(path)).unchecked((), ("eta", "eta_attn"))


def test_time_constants_typed_for_a_flat_ring_are_read_or_refused_never_dropped():
    # without --hardware a flat ring runs on the one link typed: alpha_inter, beta_inter are read by nothing, and said
    # so (an outsider's 40.4 ms came out with no word of them); with --hardware and N = 16 over nodes of 8 the ring's
    # α and β are the mix of the hardware's two links, which a typed α_inter (1 s!) did not enter: refused, naming it
    import symcomm

    plain = symcomm.evaluate("all_reduce", algorithm="ring", N=16, M=2 ** 29, dtype="bf16", alpha=5e-6, beta=2e-11,
                             alpha_inter=1e-5, beta_inter=4e-11, gamma=0)
    # by hand on the one link: 2·15 steps of α + 2·15/16·2^29 elements of 2 bytes at β: 30·5e-6 + 2,013,265,920·2e-11
    assert float(plain["time"]) == pytest.approx(30 * 5e-6 + 2_013_265_920 * 2e-11, rel=1e-12)
    assert any(note.startswith("alpha_inter, beta_inter not used by all_reduce / ring") for note in plain.notes)
    # (an untyped call first: its links' mix is then held for the next calls, which must refuse all the same)
    symcomm.evaluate("all_reduce", algorithm="ring", N=16, M=2 ** 29, dtype="bf16", hardware="h100")
    for typed in ({"alpha_inter": 1.0}, {"beta": 1e-9}):
        with pytest.raises(InputError, match=rf"{next(iter(typed))} with --hardware: N=16 spans nodes"):
            symcomm.evaluate("all_reduce", algorithm="ring", N=16, M=2 ** 29, dtype="bf16", hardware="h100", **typed)
    # inside one node there is no mix: a typed α is the ring's own
    inside = symcomm.evaluate("all_reduce", algorithm="ring", N=8, M=2 ** 29, dtype="bf16", hardware="h100",
                              alpha=1.0)
    assert float(inside["time"]) > 14       # 2·7 steps of 1 s


def test_a_part_that_borrows_constants_and_ran_no_published_run_says_so_before_the_donors_error():
    # an outsider's find: H100 PCIe (350 W, no published run) printed "typically 6 %, up to 19 %", the H100 SXM fit's
    # leave-one-out error, as its own; a part with check runs of its own (h200: KempnerForge, torchtitan) keeps the
    # donor's figures beside its own checks
    from symcomm import presets

    for name, donor in (("h100-pcie", "h100"), ("a100-pcie", "a100")):
        said = presets.hardware(name).step_time_error(framework="megatron", frameworks=("megatron",))["unchecked"]
        assert said[0] == (f"hardware {name} (it borrows {donor}'s constants; no published run on it was fitted or "
                           "checked)")
    for name in ("h100", "h200", "h100-gt"):
        said = presets.hardware(name).step_time_error(framework="megatron", frameworks=("megatron",))["unchecked"]
        assert not any(x.startswith("hardware ") for x in said)


def test_errors_below_one_percent_are_said_to_a_tenth():
    # an outsider's calibration: a leave-one-out signed mean of -0.3 % was printed "+0 %", a 0.2 % fit "0 %"
    from symcomm.presets.fit_errors import step_error_words

    said = step_error_words({"mean": 0.002, "max": 0.004, "signed_mean": -0.003, "of": "h100-calibrated",
                             "runs": 6})
    assert "typically 0.2 %, up to 0.4 % (signed mean -0.3 %)" in said
    said = step_error_words({"mean": 0.056, "max": 0.174, "signed_mean": -0.017, "of": "h100", "runs": 16})
    assert "typically 6 %, up to 17 % (signed mean -2 %)" in said
