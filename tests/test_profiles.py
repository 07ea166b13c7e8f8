"""Backend profiles: rules resolve to catalog algorithms; gloo's wire model against the
committed measurements; strategies under a backend."""

import json
from pathlib import Path

import pytest

from symcomm import symbols as S
from symcomm.algorithms import ALGORITHMS
from symcomm.cli import main
from symcomm.evaluation import exact
from symcomm.predict import rows_from
from symcomm.primitives import PRIMITIVES
from symcomm.profiles import GLOO, NCCL_CHUNK_BYTES, PROFILES, chunks, gloo_wire, profile, strategy_cost
from symcomm.strategies import STRATEGIES

DATA = Path(__file__).resolve().parent.parent / "derivations" / "data" / "gloo_measurements.json"


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_every_rule_names_a_catalog_algorithm_with_a_source(name):
    for rule in PROFILES[name].rules:
        assert rule.primitive in PRIMITIVES
        assert rule.implementation.key in ALGORITHMS
        assert rule.source


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8])
def test_textbook_and_gloo_cover_every_primitive_for_any_n(n):
    for name in ("textbook", "gloo"):
        for primitive in PRIMITIVES:
            if primitive == "send_recv" and n != 2:
                continue
            assert profile(name).rule(primitive, n, 4096)


@pytest.mark.parametrize("name", sorted(PROFILES))
@pytest.mark.parametrize("primitive", sorted(PRIMITIVES))
def test_a_group_of_one_costs_zero_under_every_profile(name, primitive):
    # a group of one rank has no peer: nothing can be sent, received or added (definition;
    # NCCL src/enqueue.cc runs nRanks == 1 as a local copy with cost 0)
    for nbytes in (None, 4, 1 << 30):
        rule = profile(name).rule(primitive, 1, nbytes)
        assert rule.algorithm == "alone" and "one rank" in rule.source
        cost = profile(name).cost(primitive, 1, nbytes)
        assert all(exact(v, {S.N: 1, S.M: 1 << 28}) == 0 for v in cost.fields().values())


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_strategies_with_groups_of_one_evaluate_under_every_profile(name, capsys):
    # c = 1 and p = 1 (t = 1 too) are the common case: those groups cost nothing
    base = ["eval", "hybrid", "d=8", "Phi=70000000000", "b=64", "s=4096", "h=8192", "L=80", "m=8",
            "gpus_per_node=8", "--backend", name, "--json"]
    for sizes in (["t=8", "p=1", "c=1"], ["t=1", "p=2", "c=2"]):
        assert main(base + sizes) == 0, capsys.readouterr().err
        got = json.loads(capsys.readouterr().out)
        alone = [t for t in got["terms"] if t["algorithm"] == "alone"]
        assert alone and all(t["send"] == 0 for t in alone)


def test_nccl_decides_the_chunk_count_of_its_chains(capsys):
    # NCCL src/include/device.h NCCL_STEPS = 8, src/init.cc DEFAULT_BUFFSIZE = 4 MiB,
    # src/include/collectives.h BROADCAST_CHUNKSTEPS = REDUCE_CHUNKSTEPS = 1: 512 KiB chunks
    assert NCCL_CHUNK_BYTES == 512 * 1024
    nccl = profile("nccl")
    assert chunks(nccl, 1024, n=8) == 1                 # 4 KiB fits one chunk
    assert chunks(nccl, 2 ** 30, n=8) == 8192           # 4 GiB / 512 KiB
    assert chunks(nccl, 2 ** 30, 2, n=8) == 4096        # bf16: 2 GiB / 512 KiB
    assert chunks(nccl, 2 ** 17 + 1, n=8) == 2          # one element past a chunk: a second chunk
    with pytest.raises(ValueError, match="^C: .*give N= and M="):
        chunks(nccl, None)
    with pytest.raises(ValueError, match="^C: .*give C="):
        chunks(profile("textbook"), 1024, n=8)
    # one chunk: the chain is N − 1 rounds of the whole buffer (hand count: 0→1→…→7)
    assert main(["eval", "broadcast", "N=8", "M=1024", "--backend", "nccl", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert (got["alpha"], got["beta"], got["send"], got["total"]) == (7, 7 * 1024, 1024, 7 * 1024)
    # 8192 chunks of 2**17 elements: rounds N + C − 2 (the last chunk leaves rank 6 in round 6 + 8191)
    assert main(["eval", "reduce", "N=8", "M=2**30", "--backend", "nccl_nvls", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert (got["alpha"], got["beta"], got["gamma"]) == (8198, 8198 * 2 ** 17, 8198 * 2 ** 17)


def test_mpich_switch_points():
    mpich = profile("mpich")
    assert mpich.rule("all_reduce", 8, 2048).algorithm == "recursive_doubling"
    assert mpich.rule("all_reduce", 8, 1 << 20).algorithm == "rabenseifner"
    # MPICH allreduce_intra_reduce_scatter_allgather.c: non-powers of two fold to 2^⌊log₂N⌋
    assert mpich.rule("all_reduce", 6, 1 << 20).algorithm == "rabenseifner_fold"
    assert mpich.rule("all_reduce", 12, 1 << 20).algorithm == "rabenseifner_fold"
    # short messages (≤ 2048 B): recursive doubling, folded to 2^⌊log₂N⌋ on non-powers of two
    # (MPICH allreduce_intra_recursive_doubling.c: pof2 = MPL_pof2(size), rem = size − pof2)
    assert mpich.rule("all_reduce", 12, 1024).algorithm == "recursive_doubling_fold"
    assert mpich.rule("all_reduce", 6, 2048).algorithm == "recursive_doubling_fold"
    assert mpich.rule("all_reduce", 8, 2048).algorithm == "recursive_doubling"
    # reduce: binomial ≤ 2048 B (MPIR_CVAR_REDUCE_SHORT_MSG_SIZE), else Rabenseifner, with the
    # fold on non-powers of two (MPICH reduce_intra_reduce_scatter_gather.c)
    assert mpich.rule("reduce", 12, 2048).algorithm == "binomial_tree"
    assert mpich.rule("reduce", 16, 1 << 20).algorithm == "rabenseifner"
    for n in (3, 5, 6, 7, 12, 24):
        assert mpich.rule("reduce", n, 1 << 20).algorithm == "rabenseifner_fold"
        assert mpich.rule("all_reduce", n, 1 << 20).algorithm == "rabenseifner_fold"
        assert mpich.rule("all_reduce", n, 1 << 10).algorithm == "recursive_doubling_fold"
    # MPICH cvars.txt MPIR_CVAR_BCAST_*: < 12288 B binomial (any N), < 524288 B scatter +
    # recursive doubling on powers of two, else scatter + ring allgather
    assert mpich.rule("broadcast", 16, 1024).algorithm == "binomial_tree"
    assert mpich.rule("broadcast", 12, 1024).algorithm == "binomial_tree"
    assert mpich.rule("broadcast", 4, 1 << 20).algorithm == "binomial_tree"      # p < 8
    assert mpich.rule("broadcast", 16, 1 << 16).algorithm == "scatter_rd_allgather"
    assert mpich.rule("broadcast", 16, 1 << 20).algorithm == "scatter_allgather"
    assert mpich.rule("broadcast", 12, 1 << 16).algorithm == "scatter_allgather"   # medium, not 2^k
    assert mpich.rule("broadcast", 12, 1 << 20).algorithm == "scatter_allgather"
    assert mpich.rule("scatter", 12, 1 << 20).algorithm == "binomial_tree"
    assert mpich.rule("gather", 12, 1 << 20).algorithm == "binomial_tree"
    # MPIR_CVAR_ALLTOALL_SHORT_MSG_SIZE = 256 bytes per destination block, p ≥ 8
    assert mpich.rule("all_to_all", 16, 16 * 256).algorithm == "bruck"          # 256 B per block
    assert mpich.rule("all_to_all", 16, 16 * 257).algorithm == "pairwise"       # 257 B per block
    assert mpich.rule("all_to_all", 64, 64 * 64).algorithm == "bruck"           # 4 KiB buffer, 64 B blocks
    assert mpich.rule("all_to_all", 4, 4 * 16).algorithm == "pairwise"          # p < 8
    assert mpich.rule("all_gather", 8, 1 << 20).algorithm == "ring"
    assert mpich.rule("reduce_scatter", 8, 1 << 10).algorithm == "recursive_halving"


def test_unknown_backend_and_missing_rule_are_explained():
    with pytest.raises(ValueError, match="choose one of"):
        profile("openmpi")
    # a profile that says nothing of a primitive explains itself
    from dataclasses import replace
    bare = replace(profile("nccl"), rules=tuple(r for r in profile("nccl").rules if r.primitive != "broadcast"))
    with pytest.raises(ValueError, match="no rule for broadcast"):
        bare.rule("broadcast", 8, 1024)
    # NCCL runs broadcast and reduce as pipelined chains along the ring (NCCL user guide)
    assert profile("nccl").rule("broadcast", 8, 1024).algorithm == "ring"
    assert profile("nccl").rule("reduce", 8, 1024).algorithm == "ring"


def test_eval_backend_checks_what_the_backend_runs(capsys):
    # N = 6 under MPICH: the fold (P = 4); rank 1 sends 2·(3/4)M in the core + M back to rank 0
    assert main(["eval", "all_reduce", "N=6", "M=2**20", "--backend", "mpich", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["algorithm"].startswith("rabenseifner_fold") and got["send"] == 2 * 3 * 2 ** 20 // 4 + 2 ** 20
    # a long message of M = 2**20 + 2 does not split into the fold's 4 core blocks: one line naming M
    # (a short one of M = 6 needs no blocks: recursive doubling with the fold sends whole buffers)
    assert main(["eval", "all_reduce", "N=6", "M=1048578", "--backend", "mpich"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "M=1048578" in err and "2^⌊log₂N⌋=4" in err
    assert main(["eval", "all_reduce", "N=6", "M=6", "--backend", "mpich", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["algorithm"].startswith("recursive_doubling_fold")


def test_gloo_overhead_is_three_preambles_per_message():
    assert GLOO.overhead.per_message_sent == 96
    assert GLOO.overhead.per_message_received == 48
    assert GLOO.overhead.per_message == 144


@pytest.mark.parametrize("primitive", ["all_reduce", "all_gather", "all_to_all", "scatter", "gather", "broadcast"])
@pytest.mark.parametrize("n", [2, 4, 8])
def test_gloo_payload_equals_the_catalog_formula_when_blocks_divide(primitive, n):
    m = n * 4096
    cost = GLOO.cost(primitive, n, 4 * m)
    wire = gloo_wire(primitive, n, m, 4)
    values = {S.N: n, S.M: m}
    others = wire[1:] if primitive in ("broadcast", "scatter", "gather") else wire
    assert max(w.payload for w in others) == 4 * exact(cost.others.send, values)
    assert sum(w.payload for w in wire) == 4 * exact(cost.total, values)


def test_gloo_reduce_model_above_two_segments_per_rank(capsys):
    # gloo/reduce.cc: up to 2·N·1 MiB two segments per rank (the ring reduce-scatter exactly);
    # beyond, numSegments 1 MiB segments and C − 2 loop rounds. Hand count, fp32, N = 2,
    # M = 2**22 (16 MiB): C = 16, a non-root sends 14 segments + its 8 MiB chunk = 22 MiB = 1.375 M;
    # N = 8, M = 2**23: C = 32, 30 + 4 = 34 MiB = 1.0625 M (both measured: tests/test_measure.py)
    gloo = profile("gloo")
    assert gloo.rule("reduce", 8, 16 * 2 ** 20).algorithm == "ring_gather"       # = 2·N MiB
    assert gloo.rule("reduce", 8, 16 * 2 ** 20 + 4).algorithm == "ring_segmented"
    # segments of at most 1 MiB: K = 2**18 fp32 or 2**19 bf16 elements
    assert gloo.segment(4) == 2 ** 18 and gloo.segment(2) == 2 ** 19
    with pytest.raises(ValueError, match="^C: .*give C="):
        chunks(gloo, 2 ** 22, n=2)                    # gloo runs no pipelined chain
    for n, m, want in ((2, 2 ** 22, 22 * 2 ** 20), (8, 2 ** 23, 34 * 2 ** 20)):
        assert main(["eval", "reduce", f"N={n}", f"M={m}", "--backend", "gloo", "--dtype", "fp32", "--json"]) == 0
        got = json.loads(capsys.readouterr().out)
        assert got["algorithm"].startswith("ring_segmented") and got["send"] == want
        assert max(w.payload for w in gloo_wire("reduce", n, m, 4)[1:]) == want


def test_gloo_reduce_sends_surplus_segments_above_two_segments_per_rank():
    # 16 MiB on 2 ranks: 16 segments of 1 MiB; the ring loop runs over 14 of them, the ring needs 8
    wire = gloo_wire("reduce", 2, 2 ** 22, 4)
    assert wire[1].payload == 14 * 2 ** 20 + 8 * 2 ** 20
    assert gloo_wire("reduce", 8, 2 ** 22, 4)[1].payload == 16 * 2 ** 20 * 7 // 8 + 2 ** 21


def test_fsdp_under_gloo_costs_more_than_textbook():
    zero3, values = STRATEGIES["zero3"], {S.N: 8, S.Phi: 2 ** 20}
    gloo = exact(strategy_cost(zero3, "gloo", values).send, values)
    book = exact(strategy_cost(zero3, "textbook", values).send, values)
    assert book == 3 * 7 * 2 ** 20 // 8
    assert gloo == 4 * 7 * 2 ** 20 // 8      # gloo's reduce-scatter is a whole all-reduce


def test_eval_backend_cli(capsys):
    assert main(["eval", "zero3", "N=8", "Phi=1048576", "--backend", "gloo", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["send"] == 4 * 7 * 2 ** 20 // 8
    assert any(t["collective"] == "all_reduce" for t in got["terms"])
    assert main(["eval", "all_reduce", "N=8", "M=256", "--backend", "mpich", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["algorithm"].startswith("recursive_doubling")
    assert main(["eval", "zero3", "N=8", "Phi=1", "--backend", "nope"]) == 2
    assert "nope" in capsys.readouterr().err


@pytest.mark.skipif(not DATA.exists(), reason="no committed measurement file")
def test_committed_measurements_match_the_gloo_profile():
    saved = json.loads(DATA.read_text())
    rows = rows_from(saved, "gloo")
    assert rows and all(row.matched for row in rows), [r.as_dict() for r in rows if not r.matched][:1]
    covered = {(r.name, r.n) for r in rows}
    for n in (2, 3, 4, 8):
        for name in ("all_reduce", "reduce_scatter", "all_gather", "broadcast", "reduce", "ddp", "fsdp"):
            assert (name, n) in covered


def test_a_term_of_its_own_element_type_is_sized_in_its_own_bytes():
    # Megatron reduces gradients in fp32 in a bf16 run (Term.dtype = "fp32"). A 600-element
    # gradient is 2400 B in fp32, past MPICH's MPIR_CVAR_ALLREDUCE_SHORT_MSG_SIZE = 2048
    # (src/mpi/coll/cvars.txt: recursive doubling when ≤ 2048 B): Rabenseifner; the same
    # gradient kept in bf16 (grad_dtype=same) is 1200 B: recursive doubling.
    from symcomm.profiles import strategy_terms
    hybrid = STRATEGIES["hybrid"]
    values = {S.d: 4, S.t: 1, S.p: 1, S.c: 1, S.Phi: 600, S.b: 4, S.s: 8, S.h: 8, S.L: 2, S.m: 1, S.G: 8}
    runs = {}
    for grad in ("fp32", "same"):
        terms = strategy_terms(hybrid, "mpich", values, 2, framework="megatron", zero=0, grad_dtype=grad)
        (dp,) = [term for term in terms if term.axis == "dp"]
        runs[grad] = (dp.algorithm, exact(dp.cost.send, values))
    # hand count on d = 4 ranks: Rabenseifner sends 2·(3/4)·600 = 900 elements, recursive
    # doubling log₂4 · 600 = 1200
    assert runs == {"fp32": ("rabenseifner", 900), "same": ("recursive_doubling", 1200)}


@pytest.mark.parametrize("name", sorted(PROFILES) + [None])
def test_ring_attention_on_a_group_of_one_costs_nothing(name, capsys):
    # N = 1: no peer, no ring (definition); ring-flash-attention's dK, dV "return to their owner"
    # is a send from a rank to itself there, which a group of one does not make
    args = ["eval", "cp_ring", "N=1", "b=1", "s=4096", "h=4096", "L=2", "backward=ring_flash_attn", "--json"]
    assert main(args + (["--backend", name] if name else [])) == 0
    got = json.loads(capsys.readouterr().out)
    assert (got["send"], got["recv"], got["total"], got["alpha"], got["beta"]) == (0, 0, 0, 0, 0)
    assert all(term["send"] == 0 for term in got["terms"])


def test_mpich_on_twelve_ranks_by_hand(capsys):
    # N = 12: pof2 = 8, rem = 4 (MPICH). All-reduce of 256 fp32 (1 KiB, short): an odd rank below 8
    # takes its neighbour's buffer, swaps M with partners at distance 1, 2, 4 and sends the result
    # back: 3M + M = 1024 elements; rounds 1 + 3 + 1 = 5.
    assert main(["eval", "all_reduce", "N=12", "M=256", "--backend", "mpich", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["algorithm"].startswith("recursive_doubling_fold") and (got["send"], got["alpha"]) == (1024, 5)
    # reduce of 2**20 fp32 (long): core rank 1 (rank 2) sends its 7/8 M of the reduce-scatter, then
    # its P/2 = 4 blocks of M/8 to rank 0: 7/8 M + M/2; the root receives M (rank 1's fold) + 7/8 M
    # + 7/8 M = 2.75 M, more than core rank 1's 7/8 M + 3/8 M + M (fold) = 2.25 M, so recv (the
    # busier of root and non-roots) is the root's; rounds 1 + 3 + 3 = 7
    m = 2 ** 20
    assert main(["eval", "reduce", "N=12", f"M={m}", "--backend", "mpich", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["algorithm"].startswith("rabenseifner_fold") and got["alpha"] == 7
    assert got["send"] == 7 * m // 8 + m // 2
    assert got["recv"] == m + 2 * 7 * m // 8


def _reduce_grid():
    """(N, M, bytes per element): N = 2 … 9; M from one element to well past 2·N·1 MiB, on and
    beside the multiples of a segment (K elements), of N segments and of 2N segments, odd sizes."""
    for n in range(2, 10):
        for item in (4, 2):
            k = GLOO.segment(item)
            sizes = {1, 2, 7, 2 * n - 1, 2 * n + 1, k - 1, k, k + 1, n * k - 1, n * k + 1,
                     2 * n * k - 1, 2 * n * k, 2 * n * k + 1, 2 * n * k + 3, (2 * n + 1) * k + 5,
                     3 * n * k + 7, 4 * n * k + k // 2 + 1, 5 * n * k - 3, 2 ** 22 + 1, 2 ** 23 - 5}
            for m in sorted(sizes):
                yield n, m, item


def test_gloo_reduce_closed_form_is_gloo_wire_for_every_n_and_m():
    # the catalog's reduce/ring_segmented (a closed form in N, M and K) against gloo_wire, which
    # walks gloo/reduce.cc's loops segment by segment: payload of the root, of the busiest other
    # rank, and in total, to the byte, wherever segments are partial or empty
    from symcomm.algorithms import algorithm
    cost = algorithm("reduce", "ring_segmented").cost
    for n, m, item in _reduce_grid():
        wire = gloo_wire("reduce", n, m, item)
        values = {S.N: n, S.M: m, S.K: GLOO.segment(item)}
        got = [item * exact(x, values) for x in (cost.root.send, cost.others.send, cost.total)]
        assert got == [wire[0].payload, max(w.payload for w in wire[1:]), sum(w.payload for w in wire)], (n, m, item)


def test_gloo_reduce_sends_by_hand_at_sixteen_mib():
    # M = 2**22 fp32 (16 MiB), segments of 1 MiB (K = 2**18): N = 2: 16 segments, 8 per chunk, a
    # non-root sends 14 in the loop + its 8 MiB chunk = 22 MiB = 1.375 M; N = 3: 18 segments (16
    # full, 2 empty), 6 per chunk: 16 − 2 in the loop + 6 MiB = 20 MiB = 1.25 M; N = 4: 16, 4 per
    # chunk: 14 + 4 = 18 MiB = 1.125 M (all three measured: derivations/data/gloo_measurements.json)
    from symcomm.profiles import algorithm_under
    m = 2 ** 22
    for n, want in ((2, 22), (3, 20), (4, 18)):
        impl, rule = algorithm_under(GLOO, "reduce", {S.N: n, S.M: m}, 4)
        assert impl.name == "ring_segmented" and "K = 262144" in rule.source
        assert 4 * exact(impl.cost.others.send, {S.N: n, S.M: m}) == want * 2 ** 20
        assert max(w.payload for w in gloo_wire("reduce", n, m, 4)[1:]) == want * 2 ** 20


def test_mpich_broadcast_on_twelve_ranks_by_hand(capsys):
    # MPICH cvars.txt MPIR_CVAR_BCAST_*: < 12288 B binomial (bcast_intra_binomial.c, masks 8, 4, 2, 1 on
    # 12 ranks: the root sends 4 times, in 4 rounds); 262 KiB on a non-power of two: scatter + ring
    # allgather with blocks B = M/12 = 5462: the root scatters 11B, then passes 11B round the ring
    # (22B); rank 8 receives its subtree's 4B, then 11B; rounds ⌈log₂12⌉ + 11 = 15; in total the
    # scatter moves ones(12) = 20 blocks (Σ popcount(0..11)) and the ring 12·11
    assert main(["eval", "broadcast", "N=12", "M=1024", "--backend", "mpich", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["algorithm"].startswith("binomial_tree")
    assert (got["send"], got["recv"], got["total"], got["alpha"]) == (4 * 1024, 1024, 11 * 1024, 4)
    block = 5462
    assert main(["eval", "broadcast", "N=12", f"M={12 * block}", "--backend", "mpich", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["algorithm"].startswith("scatter_allgather")
    assert (got["send"], got["recv"], got["total"], got["alpha"]) == (22 * block, 15 * block, 152 * block, 15)


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_hybrid_with_presets_and_groups_of_one_under_every_profile(name, capsys):
    # c = 1 and t = 1: the TP and CP terms are groups of one (cost 0); the pipeline's sends and the
    # data-parallel pair remain. Megatron's distributed optimizer (zero=1) reduce-scatters fp32
    # gradients over d = 4: 3/4 of the stage's Φ/p fp32 bytes, and all-gathers bf16 parameters:
    # 3/4 of Φ/p bf16 bytes — except gloo, whose reduce-scatter is a whole all-reduce (twice that)
    assert main(["eval", "hybrid", "--model", "llama3-70b", "d=4", "t=1", "p=2", "c=1", "m=4", "b=16", "G=8",
                 "--hardware", "h100", "--backend", name, "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["unit"] == "bytes"
    terms = {t["label"]: t for t in got["terms"]}
    assert all(t["send"] == 0 for t in got["terms"] if t["group"] == 1)
    shard = got["values"]["Phi"] // 2
    factor = 2 if name == "gloo" else 1
    assert terms["gradient reduce-scatter (backward)"]["send"] == factor * 3 * shard * 4 // 4
    assert terms["parameter all-gather (after the step)"]["send"] == 3 * shard * 2 // 4
    assert got["time"] > 0
