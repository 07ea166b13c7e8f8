"""The input embedding whole on every tensor-parallel rank (tp_embedding=replicated: KempnerForge's plan,
kempnerforge/distributed/tensor_parallel.py at 3ad9d9a, apply_tensor_parallel leaves token_embedding out), against
Megatron-Core's and torchtitan's vocabulary-parallel one.  Every expected value is counted by hand from the placement:
a rank holds V·h of the embedding instead of V·h/t, and no collective joins its output in the forward."""

import subprocess
import sys

import pytest
import sympy as sp

from symcomm.base.errors import InputError
from symcomm.core.symbols import V, h, p, t
from symcomm.training import steptime
from symcomm.training.hybrid import hybrid_terms

NO_COMM = {"alpha": 0.0, "beta": 0.0, "gamma": 0.0, "alpha_inter": 0.0, "beta_inter": 0.0, "G": 8}
# V·h = 1000·64 = 64,000 embedding parameters; Φ = 10⁶ + the untied embedding and LM head 128,000
TINY = {**NO_COMM, "h": 64, "L": 4, "a": 4, "h_kv": 64, "F": 256, "V": 1000, "s": 32, "Phi": 1_128_000, "e": 1,
        "v": 1, "d": 1, "c": 1, "b": 2, "m": 1, "t": 2, "p": 1, "peak": 1e12, "eta": 1.0, "kappa": 0.0, "hbm": 1e30}
PLAIN = {"embeddings": "1", "gqa": "1", "gated": "0", "flash": "1", "tied": "0"}


def _memory(values, **options):
    return {k[len("memory_"):]: float(x) for k, x in steptime.quantities(values, 2, **options).items()
            if k.startswith("memory_")}


def test_each_rank_holds_the_whole_embedding_and_its_states():
    megatron = {**PLAIN, "framework": "megatron", "zero": "1", "grad_dtype": "same"}
    split = _memory(TINY, **megatron)
    whole = _memory(TINY, **megatron, tp_embedding="replicated")
    # t = 2: a rank holds 64,000 embedding parameters instead of 32,000, 32,000 more; at d = 1 Megatron-LM's
    # distributed optimizer keeps each one's bf16 weight (2 bytes), bf16 gradient (grad_dtype same: 2) and fp32
    # master weight and two moments (12): 16 bytes
    assert whole["per_gpu"] - split["per_gpu"] == pytest.approx(32_000 * 16)
    assert whole["weights"] - split["weights"] == pytest.approx(32_000 * 2)


def test_pytorchs_fsdp_root_holds_the_whole_embedding():
    fsdp2 = {**PLAIN, "framework": "fsdp2", "zero": "3", "grad_dtype": "fp32"}
    root = _memory(TINY, **fsdp2, tp_embedding="replicated")["root_params"]
    # the root unit kept gathered through the backward, bf16: the embedding's 64,000 whole and the LM head's 64,000
    # over t = 2 (it stays ColwiseParallel)
    assert root == 2 * (64_000 + 32_000)


@pytest.mark.parametrize("sp_on, forward", [(True, "embedding-output reduce-scatter (first stage)"),
                                            (False, "embedding-output all-reduce (first stage)")])
def test_no_collective_joins_the_embedding_output(sp_on, forward):
    def labels(**extra):
        return {term.what for term in hybrid_terms(zero=3, framework="fsdp2", sp=sp_on, embeddings=True, **extra)
                if term.axis == "tp"}
    split, whole = labels(), labels(tp_embedding="replicated")
    # vocabulary-parallel: each rank looks up its own rows, the partial sums joined over t; whole: each rank looks
    # up every token itself and keeps its own sequence shard, nothing to join
    assert forward in split and forward not in whole
    # the rest stays: with sequence parallelism the first norm's Shard(1) → Replicate gradient is all-gathered back
    assert split - whole == {forward}


def test_the_data_parallel_reduction_moves_the_whole_embeddings_gradient():
    def reduced(**extra):
        terms = [x for x in hybrid_terms(zero=0, framework="megatron", embeddings=True, **extra)
                 if x.axis == "dp" and x.primitive == "all_reduce"]
        assert len(terms) == 1
        return terms[0].message
    # p = 1: the one stage's gradient, larger by the (1 − 1/t)·V·h parameters each rank holds beyond its share
    more = (reduced(tp_embedding="replicated") - reduced()).subs(p, 1)
    assert sp.simplify(more - V * h * (1 - 1 / t)) == 0


@pytest.mark.parametrize("words, said", [
    (("p=2", "d=8", "tp_embedding=replicated"), "tp_embedding=replicated with p=2 is not modelled"),
    (("p=1", "d=16", "tp_embedding=vocab_split"), "tp_embedding=vocab_split is not allowed; choose vocab_parallel or "
                                                  "replicated"),
    # KempnerForge keeps the LM head whole when tied (tensor_parallel.py: no sequence parallelism, no head plan)
    (("p=1", "d=16", "tied=1", "tp_embedding=replicated"), "tp_embedding=replicated with tied=1 is not modelled"),
])
def test_refused_in_one_line(words, said):
    out = subprocess.run([sys.executable, "-m", "symcomm", "eval", "hybrid", "--model", "llama3-8b", "--hardware", "h100",
                          "t=4", "c=1", "b=64", "m=4", "s=8192", "zero=3", "framework=fsdp2", "sp=1", *words],
                         capture_output=True, text=True)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert said in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_refused_without_the_embedding():
    with pytest.raises(InputError, match="tp_embedding=replicated needs embeddings=1"):
        hybrid_terms(embeddings=False, tp_embedding="replicated")


def test_refused_without_tensor_parallelism():
    # at t = 1 every rank holds the whole embedding either way: a typed value that places nothing is said, not kept
    out = subprocess.run([sys.executable, "-m", "symcomm", "eval", "hybrid", "--model", "llama3-8b", "--hardware", "h100",
                          "t=1", "p=1", "d=64", "c=1", "b=64", "m=1", "s=8192", "zero=3", "framework=fsdp2",
                          "tp_embedding=replicated"], capture_output=True, text=True)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "tp_embedding=replicated with t=1 places nothing" in out.stderr
