"""Memory safety of the compiled kernels and the chart memory budget.

* the heap overrun behind the 300/400-word crashes: a rule product that underflows to 0 listed
  a cell's symbol again, overrunning the per-cell lists (run in a subprocess: a regression
  crashes that process, not pytest);
* sentences of 300, 500 and 1,000 words for every model kind (PCFG, spectral, pivot, EM
  L-PCFGs, SHAG) with small models, and the refusal path of the memory budget;
* every kernel rejects out-of-range inputs at its Python boundary with a ValueError;
* long random sentences keep the marginal identities (each position is covered by one
  preterminal, the root span by one symbol), also with rule weights down to 1e-300;
* out of memory: with the k-th allocation of a kernel made to fail (``alloc.h``), for every k
  up to the call's allocations, each kernel raises a MemoryError naming the sentence, and
  gives its usual result once k passes them; the kernels share the allocator, the buffer
  grower and the ``n_threads`` argument.
"""
from __future__ import annotations

import json
import logging
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastspectral import _memory
from fastspectral._ext.cky import ChartGrammar, chart_marginals, parse_batch, prune_batch
from _toy import coordination_treebank, dep_treebank
from test_cky import random_grammar, random_lexical


def run_python(code: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=timeout)


# ---- an overrun of the chart buffers --------------------------------------------------------------------
UNDERFLOW = """
    import json, sys
    import numpy as np
    from fastspectral._ext.cky import ChartGrammar, parse_batch, chart_marginals
    # X -> X X | T T | X T | T X, and Y -> X X with the smallest positive weight: every Y
    # product underflows to 0 (before the fix: Y listed once per split, past the S-entry lists)
    def grammar(with_y):
        par, lef, rig = [0, 0, 0, 0, 1], [0, 2, 0, 2, 0], [0, 2, 2, 0, 0]
        pr = [0.25, 0.25, 0.25, 0.25, 5e-324]
        k = 5 if with_y else 4
        return ChartGrammar(3, np.array(par[:k], np.int32), np.array(lef[:k], np.int32),
                            np.array(rig[:k], np.int32), np.array(pr[:k]),
                            np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0),
                            np.array([1.0, 0.0, 0.0]), np.array([0, 1, 2], np.int32),
                            np.array([0, 0, 1], np.uint8), 3)
    out = {}
    for n in (50, 300):
        lens = np.array([n], np.int64)
        pos = np.arange(n, dtype=np.int32)
        sym = np.full(n, 2, np.int32)
        pr = np.full(n, 0.5)
        for mode in (0, 1):
            res = []
            for with_y in (True, False):
                g = grammar(with_y)
                nodes, noff, counts, logz = parse_batch(g, lens, np.array([0, n], np.int64),
                                                        pos, sym, pr, mode)
                res.append((int(counts[0]), float(logz[0]), nodes[:3 * counts[0]].tolist()))
            out[f"{n}-{mode}"] = res
    print(json.dumps(out))
"""


@pytest.mark.slow
def test_underflowing_products_do_not_overrun_the_cell_lists():
    """Before the fix this process died with "double free or corruption" (n = 50) or SIGSEGV
    (n = 300); now Y's zero products change nothing: the trees and scores equal those of the
    grammar without Y."""
    res = run_python(UNDERFLOW)
    assert res.returncode == 0, res.stderr[-3000:]
    out = json.loads(res.stdout)
    for key, (with_y, without_y) in out.items():
        assert with_y[0] > 0, key
        assert with_y == without_y, key


# ---- long sentences, every model kind -----------------------------------------------------------
LONG = """
    import json, logging, random, sys
    logging.disable(logging.CRITICAL)
    sys.path.insert(0, %(tests)r)
    from test_kernel_safety import long_sentence, dep_sentence
    from _toy import coordination_treebank, dep_treebank
    from fastspectral import PCFG
    from fastspectral.lpcfg import SpectralLPCFG, PivotLPCFG, EMLPCFG
    from fastspectral.dependency import SHAGParser
    trees = coordination_treebank()
    out = {}
    for name, model in (("pcfg", PCFG(jobs=2)), ("pcfg-viterbi", PCFG(jobs=2, decode="viterbi")),
                        ("spectral", SpectralLPCFG(n_states=2, jobs=2)),
                        ("pivot", PivotLPCFG(n_states=2, jobs=2)),
                        ("em", EMLPCFG(n_states=2, iterations=2, jobs=2))):
        model.fit(trees)
        for n in (300, 500, 1000):
            t = model.parse([long_sentence(n), long_sentence(9)])
            st = model.last_parse_stats_
            out[f"{name}-{n}"] = [t[0].leaves() == long_sentence(n), str(t[0]).count("(") - n,
                                  getattr(st, "fallback", 0) + getattr(st, "fallback_flat", 0),
                                  st.too_long]
    shag = SHAGParser(method="spectral", n_states=2).fit(dep_treebank())
    for n in (300, 500):
        heads = shag.predict_heads([dep_sentence(n)])[0]
        out[f"shag-{n}"] = [len(heads) == n, int(((heads >= 0) & (heads <= n)).all()),
                            shag.last_parse_stats_.fallback, shag.last_parse_stats_.too_long]
    shag.max_memory = "1M"
    heads = shag.predict_heads([dep_sentence(1000), dep_sentence(4)])
    out["shag-1000-refused"] = [heads[1].tolist(), heads[0][:4].tolist(),
                                shag.last_parse_stats_.too_long]
    print(json.dumps(out))
"""

def long_sentence(n):
    words = "the dog barks and a cat sees the dog and".split()
    w = []
    while len(w) < n - 1:
        w += words
    return w[:n - 1] + ["."]


def dep_sentence(n):
    from fastspectral.trees.conll import DepSentence

    toks = ("the/DT big/JJ dog/NN sleeps/VBZ " * (n // 4 + 1)).split()[:n]
    words, tags = zip(*(t.split("/") for t in toks))
    return DepSentence(words=list(words), xpos=list(tags), heads=[-1] * n)


@pytest.mark.slow
def test_long_sentences_every_model_kind(request):
    res = run_python(LONG % {"tests": str(request.path.parent)})
    assert res.returncode == 0, res.stderr[-3000:]
    out = json.loads(res.stdout)
    for name in ("pcfg", "pcfg-viterbi", "spectral", "pivot", "em"):
        for n in (300, 500, 1000):
            same_words, phrases, fallback, too_long = out[f"{name}-{n}"]
            assert same_words and fallback == 0 and too_long == 0, (name, n, out[f"{name}-{n}"])
            assert phrases > n / 4      # a real tree, not the flat fallback (2 phrases)
    for n in (300, 500):
        assert out[f"shag-{n}"] == [True, 1, 0, 0]
    short, chain, too_long = out["shag-1000-refused"]
    assert chain == [0, 1, 2, 3] and too_long == 1 and len(short) == 4


@pytest.fixture(scope="module")
def small_models():
    from fastspectral import PCFG
    from fastspectral.dependency import SHAGParser
    from fastspectral.lpcfg import EMLPCFG, PivotLPCFG, SpectralLPCFG

    trees = coordination_treebank()
    return {"pcfg": PCFG(jobs=2).fit(trees),
            "spectral": SpectralLPCFG(n_states=2, jobs=2).fit(trees),
            "pivot": PivotLPCFG(n_states=2, jobs=2).fit(trees),
            "em": EMLPCFG(n_states=2, iterations=2, jobs=2).fit(trees),
            "shag": SHAGParser(method="spectral", n_states=2).fit(dep_treebank())}


@pytest.mark.parametrize("kind", ["pcfg", "spectral", "pivot", "em"])
def test_memory_budget_refuses_only_the_long_sentence(small_models, kind, caplog):
    """With a budget below the 300-word chart, that sentence gets the flat tree with a warning
    naming it and its length; the others are parsed exactly as without a budget, whatever the
    threads."""
    model = small_models[kind]
    sents = [long_sentence(9), long_sentence(300), long_sentence(13), long_sentence(40)]
    model.max_memory = 0
    ref = [str(t) for t in model.parse(sents)]
    try:
        model.max_memory = "4M"
        with caplog.at_level(logging.WARNING, logger="fastspectral"):
            got = model.parse(sents, jobs=2)
        assert model.last_parse_stats_.too_long == 1
        assert [got[k].leaves() for k in range(4)] == sents
        assert got[1].children[0].children[0].label == "DT"       # flat: tags under the root
        assert [str(t) for k, t in enumerate(got) if k != 1] == \
            [r for k, r in enumerate(ref) if k != 1]
        msg = " ".join(r.getMessage() for r in caplog.records)
        assert "sentence 2 " in msg and "300 words" in msg and "4.0 MiB" in msg
    finally:
        model.max_memory = None


def test_budget_threshold_is_exact_and_threads_do_not_change_parses(small_models):
    """A PCFG sentence whose chart needs exactly the budget is parsed, one byte less refuses it;
    a sentence that fits the budget but not its share per thread is parsed alone, with the same
    tree as with one thread."""
    model = small_models["pcfg"]
    g = model.grammar_
    n = 120
    need = _memory.pcfg_chart_bytes(n, g.n_symbols, model.coarse_.n_symbols)
    sents = [long_sentence(n), long_sentence(11)]
    try:
        model.max_memory = need
        one = [str(t) for t in model.parse(sents, jobs=1)]
        assert model.last_parse_stats_.too_long == 0
        two = [str(t) for t in model.parse(sents, jobs=2)]   # need > budget / 2: alone
        assert two == one and model.last_parse_stats_.too_long == 0
        model.max_memory = need - 1
        model.parse(sents, jobs=2)
        assert model.last_parse_stats_.too_long == 1
    finally:
        model.max_memory = None


def test_lpcfg_pruned_chart_budget_in_the_kernel(small_models, monkeypatch):
    """The tensor kernel counts the pruned charts as it allocates them (its cell index alone is
    16 (n + 1)^2 bytes): a sentence over its thread's share is parsed again alone with the whole
    budget (same tree), and refused only when even that is not enough.  (The dense coarse chart
    of this tiny grammar is always larger, so its pre-check is switched off here.)"""
    model = small_models["spectral"]
    monkeypatch.setattr(_memory, "lpcfg_chart_bytes", lambda n, n_coarse: 0)
    n = 200
    sents = [long_sentence(n), long_sentence(9)]
    try:
        model.max_memory = 0
        ref = [str(t) for t in model.parse(sents, jobs=1)]
        model.max_memory = 1_000_000              # the 200-word charts need 0.65 - 1 MB
        got = [str(t) for t in model.parse(sents, jobs=2)]
        assert model.last_parse_stats_.too_long == 0 and got == ref
        model.max_memory = 300_000
        got = model.parse(sents, jobs=2)
        assert model.last_parse_stats_.too_long == 1
        assert str(got[1]) == ref[1] and got[0].leaves() == sents[0]
        assert str(got[0]).count("(") - n == 2    # the flat tree
    finally:
        model.max_memory = None


def test_parse_size_and_budget(monkeypatch):
    assert _memory.parse_size("2G") == 2 * 2 ** 30
    assert _memory.parse_size("512m") == 512 * 2 ** 20
    assert _memory.parse_size("1.5GiB") == int(1.5 * 2 ** 30)
    assert _memory.parse_size("1000") == 1000 and _memory.parse_size(0) == 0
    assert _memory.parse_size("none") == 0
    for bad in ("", "2X", "-1G", "G", True, -5, "1e9"):
        with pytest.raises(ValueError):
            _memory.parse_size(bad)
    monkeypatch.setenv(_memory.ENV_VAR, "3M")
    assert _memory.resolve_budget(None) == 3 * 2 ** 20
    assert _memory.resolve_budget("1G") == 2 ** 30 and _memory.resolve_budget(0) is None
    monkeypatch.delenv(_memory.ENV_VAR)
    assert _memory.resolve_budget(None) == int(0.5 * _memory.physical_memory())


def test_cli_max_memory(tmp_path, small_models, capsys):
    from fastspectral.cli import main

    path = tmp_path / "m.pcfg"
    small_models["pcfg"].save(path)
    inp = tmp_path / "in.txt"
    inp.write_text(" ".join(long_sentence(9)) + "\n\n" + " ".join(long_sentence(300)) + "\n")
    out = tmp_path / "out.txt"
    assert main(["parse", str(path), str(inp), "-o", str(out), "-q", "--max-memory", "4M"]) == 0
    lines = out.read_text().splitlines()
    assert len(lines) == 3 and lines[2].startswith("(TOP (S (DT the) (NN dog)")
    # the warning names the input line of the refused sentence (line 3: an empty line 2)
    err = capsys.readouterr().err
    assert f"{inp}:3 (300 words" in err and "of this batch" not in err
    try:
        rc = main(["parse", str(path), str(inp), "--max-memory", "lots"])
    except SystemExit as exc:
        rc = exc.code
    assert rc == 2


# ---- input checks at the kernels' Python boundary -----------------------------------------------
def _pcfg_inputs(n=5):
    g = random_grammar(3)
    pos, sym, prob = random_lexical(g, n, 4)
    return g, g.chart_grammar("sum"), pos, sym, prob


def test_cky_kernels_check_their_inputs():
    g, cg, pos, sym, prob = _pcfg_inputs()
    n = 5
    lens, offs = np.array([n], np.int64), np.array([0, len(pos)], np.int64)
    parse_batch(cg, lens, offs, pos, sym, prob, 1)              # the valid call
    bad = []
    s2 = sym.copy(); s2[0] = g.n_symbols; bad.append((lens, offs, pos, s2, prob))
    s3 = sym.copy(); s3[1] = -1; bad.append((lens, offs, pos, s3, prob))
    p2 = pos.copy(); p2[-1] = n; bad.append((lens, offs, p2, sym, prob))
    bad.append((lens, np.array([0, len(pos) + 5], np.int64), pos, sym, prob))
    bad.append((lens, np.array([3, len(pos)], np.int64), pos, sym, prob))
    bad.append((np.array([0], np.int64), offs, pos, sym, prob))
    bad.append((np.array([40000], np.int64), offs, pos, sym, prob))
    bad.append((lens, offs, pos, sym[:-1], prob))
    for args in bad:
        with pytest.raises(ValueError):
            parse_batch(cg, *args, 1)
        with pytest.raises(ValueError):
            prune_batch(cg, *args)
    with pytest.raises(ValueError):
        parse_batch(cg, lens, offs, pos, sym, prob, 2)
    with pytest.raises(ValueError):
        chart_marginals(cg, n, pos, s2, prob)
    with pytest.raises(ValueError):       # a projection outside the coarse grammar
        parse_batch(cg, lens, offs, pos, sym, prob, 1, coarse=cg,
                    proj=np.full(g.n_symbols, g.n_symbols, np.int32), coarse_lex_offsets=offs,
                    coarse_lex_pos=pos, coarse_lex_sym=sym, coarse_lex_prob=prob)
    S = g.n_symbols
    args = dict(n_symbols=S, parent=g.bin_parent, left=g.bin_left, right=g.bin_right,
                prob=g.bin_prob, un_parent=g.un_parent, un_child=g.un_child, un_prob=g.un_prob,
                root=g.root_prob, sym_class=g.sym_class, is_tag=g.is_preterminal.astype(np.uint8),
                n_classes=len(g.classes))
    ChartGrammar(**args)
    for key, value in (("prob", -g.bin_prob), ("prob", g.bin_prob * np.nan),
                       ("un_prob", g.un_prob[:-1]), ("root", np.full_like(g.root_prob, np.inf)),
                       ("sym_class", g.sym_class + len(g.classes)), ("left", g.bin_left + S)):
        with pytest.raises(ValueError):
            ChartGrammar(**dict(args, **{key: value}))


def _tensor_args():
    from fastspectral.lpcfg.params import LatentGrammar

    rng = np.random.default_rng(0)
    m = np.array([2, 2, 1], np.int32)
    lg = LatentGrammar(m, [0, 0], [0, 2], [2, 2], [rng.random((2, 2, 1)), rng.random((2, 1, 1))],
                       [0], [2], [rng.random((2, 1))], {0: rng.random(2)})
    n = 3
    items = [(i, i + 1, 2) for i in range(n)] + [(i, i + 1, 0) for i in range(n)] + \
        [(i, j, 0) for i in range(n) for j in range(i + 2, n + 1)]
    ii, jj, ss = (np.array(x, np.int32) for x in zip(*items))
    order = np.lexsort((ss, ii, jj - ii))          # by (length, start, symbol)
    ii, jj, ss = ii[order], jj[order], ss[order]
    lw = np.where(jj - ii == 1, 1.0, 0.0) * (ss == 2)
    lo = np.where((jj - ii == 1) & (ss == 2), 0, -1).astype(np.int64)
    g = [lg.S, lg.m, lg.bin_parent, lg.bin_left, lg.bin_right, lg.toff, lg.T, lg.rl_ptr,
         lg.rl_rule, lg.un_parent, lg.un_child, lg.uoff, lg.U, lg.uc_ptr, lg.uc_rule, lg.c1,
         lg.c1off]
    batch = [np.array([n], np.int32), np.array([0, len(ii)], np.int64), ii, jj, ss, lw, lo,
             np.ones(1)]
    return g, batch


def test_tensor_kernel_checks_its_inputs():
    from fastspectral._ext.tensor_chart import decode_batch, inside_outside_batch, project_items

    g, batch = _tensor_args()
    mu, Z, st = inside_outside_batch(*g, *batch)
    assert st[0] == 0 and Z[0] > 0
    names = ["S", "m", "bin_parent", "bin_left", "bin_right", "toff", "T", "rl_ptr", "rl_rule",
             "un_parent", "un_child", "uoff", "U", "uc_ptr", "uc_rule", "c1", "c1off"]
    edits = {"m": lambda a: a * 0, "bin_right": lambda a: a + 5,
             "toff": lambda a: a + 100, "T": lambda a: a[:-1], "rl_rule": lambda a: a[::-1].copy(),
             "rl_ptr": lambda a: a[::-1].copy(), "uoff": lambda a: a + 9,
             "uc_rule": lambda a: a + 3, "c1off": lambda a: a + 7}
    for name, f in edits.items():
        k = names.index(name)
        g2 = list(g)
        g2[k] = np.ascontiguousarray(f(np.asarray(g[k])), dtype=np.asarray(g[k]).dtype)
        with pytest.raises(ValueError):
            inside_outside_batch(*g2, *batch)
    n, ptr, ii, jj, ss, lw, lo, table = batch
    for b2 in ([n, ptr, ii, jj + 1, ss, lw, lo, table],          # a span past the sentence
               [n, ptr, ii, jj, ss + 3, lw, lo, table],          # a symbol out of range
               [n, ptr, ii, jj, ss, lw, lo + 5, table],          # a leaf vector past the table
               [n, ptr + 1, ii, jj, ss, lw, lo, table],          # offsets not from 0
               [n * 0 + 40000, ptr, ii, jj, ss, lw, lo, table]):
        with pytest.raises(ValueError):
            inside_outside_batch(*g, *b2)
    # a per-sentence byte limit: status -2, nothing written
    mu, Z, st = inside_outside_batch(*g, *batch, max_bytes=100)
    assert st[0] == -2
    sym_class = np.array([0, 1, 2], np.int32)
    is_pre = np.array([0, 0, 1], np.uint8)
    decode_batch(n, ptr, ii, jj, ss, np.ones(len(ii)), sym_class, is_pre, 3)
    with pytest.raises(ValueError):
        decode_batch(n, ptr, ii, jj, ss, np.ones(len(ii)), sym_class + 3, is_pre, 3)
    with pytest.raises(ValueError):
        decode_batch(n, ptr, ii, jj, ss, np.ones(len(ii) - 1), sym_class, is_pre, 3)
    proj_ptr = np.array([0, 1, 2, 3], np.int32)
    proj_sym = np.array([0, 1, 2], np.int32)
    lex = (np.array([0, 0], np.int64), np.zeros(0, np.int32), np.zeros(0, np.int32))
    project_items(n, ptr, ii, jj, ss, np.ones(len(ii)), 0.5, proj_ptr, proj_sym, is_pre, *lex)
    with pytest.raises(ValueError):
        project_items(n, ptr, ii, jj, ss, np.ones(len(ii)), 0.5, proj_ptr, proj_sym + 7, is_pre,
                      *lex)
    with pytest.raises(ValueError):
        project_items(n, ptr, ii, jj, ss, np.ones(len(ii)), 0.5, proj_ptr[:2], proj_sym[:1],
                      is_pre, *lex)


def test_dependency_kernels_check_their_inputs():
    from fastspectral._ext import eisner, shag

    H, M, N, K, C = 3, 2, 2, 1, 4
    rng = np.random.default_rng(1)
    alpha1, beta = rng.random((H, 2, N)), rng.random((H, 2, N))
    A = rng.random((H, 2, M, N, N)) * 0.3
    nxt = np.zeros((K, C), np.int32)
    n = 3
    hsym = np.array([2, 0, 1, 0], np.int32)
    msym = np.array([0, 0, 1, 0], np.int32)
    cls = np.zeros(4, np.int32)
    tok = np.array([0, 4], np.int64)
    P = (n + 1) ** 2
    lw, ls = np.ones(P * K), np.ones(4 * 2 * K)
    poff = np.array([0, P], np.int64)
    mu, logz, status = np.zeros(P), np.zeros(1), np.zeros(1, np.int32)
    shag.inside_outside_batch(alpha1, beta, A, nxt, hsym, msym, cls, tok, lw, ls, poff, mu,
                              logz, status)
    assert status[0] == 0
    for kw in ({"hsym": hsym + 3}, {"msym": msym + 2}, {"cls": cls - 1},
               {"tok": np.array([-1, 4], np.int64)}, {"poff": np.array([-2, P], np.int64)},
               {"lw": lw[:-1]}, {"nxt": nxt + 1}):
        a = dict(hsym=hsym, msym=msym, cls=cls, tok=tok, lw=lw, poff=poff, nxt=nxt)
        a.update(kw)
        with pytest.raises(ValueError):
            shag.inside_outside_batch(alpha1, beta, A, a["nxt"], a["hsym"], a["msym"], a["cls"],
                                      a["tok"], a["lw"], ls, a["poff"], mu, logz, status)
    scores = rng.random(P)
    heads, best = np.zeros(n, np.int32), np.zeros(1)
    eisner.eisner_batch(scores, np.array([0], np.int64), np.array([n], np.int32),
                        np.array([0], np.int64), heads, best)
    for off, lens, hoff in ((np.array([-1], np.int64), np.array([n], np.int32),
                             np.array([0], np.int64)),
                            (np.array([0], np.int64), np.array([-3], np.int32),
                             np.array([0], np.int64)),
                            (np.array([0], np.int64), np.array([n + 1], np.int32),
                             np.array([0], np.int64)),
                            (np.array([0], np.int64), np.array([n], np.int32),
                             np.array([-1], np.int64))):
        with pytest.raises(ValueError):
            eisner.eisner_batch(scores, off, lens, hoff, heads, best)


def test_feature_kernel_checks_its_inputs():
    from fastspectral._ext.lpcfg_features import node_feature_keys

    i32 = lambda *v: np.array(v, np.int32)  # noqa: E731
    i64 = lambda *v: np.array(v, np.int64)  # noqa: E731
    # a root with two preterminal children over a 2-word tree
    args = dict(parent=i32(-1, 0, 0), left=i32(1, -1, -1), right=i32(2, -1, -1),
                side=i32(3, 0, 1), code=i64(5, 6, 7), lexclass=i64(-1, 1, 2),
                start=i32(0, 0, 1), end=i32(2, 1, 2), tree=i32(0, 0, 0), tok_off=i64(0),
                tree_len=i32(2), tags=i32(4, 5))
    node_feature_keys(**args)
    for key, value in (("parent", i32(-1, 3, 0)), ("left", i32(-2, -1, -1)),
                       ("tree", i32(0, 1, 0)), ("end", i32(2, 1, 3)), ("start", i32(0, 1, 1)),
                       ("side", i32(3, 0, 5)), ("tags", i32(4)),
                       ("left", i32(-1, -1, -1))):   # a right child under a node with no left
        with pytest.raises(ValueError):
            node_feature_keys(**dict(args, **{key: value}))


# ---- long random sentences: marginal identities -------------------------------------------------
@pytest.mark.slow
@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10 ** 6), n=st.integers(60, 220), tiny=st.booleans())
def test_long_random_sentences_keep_marginal_identities(seed, n, tiny):
    """Random grammars (with ``tiny``: rule weights scaled down to 1e-300, so that products
    underflow) on sentences of 60-220 words: every position is covered by exactly one
    preterminal and the whole span by one root symbol, in expectation: the marginals of the
    one-word cells and of the root cell sum to 1; Viterbi and max-recall parses exist."""
    from fastspectral.grammar.grammar import Grammar

    g = random_grammar(seed % 1000, n_nt=4, n_tags=3)
    if tiny:
        rng = np.random.default_rng(seed)
        scale = 10.0 ** -rng.integers(0, 300, g.bin_prob.shape[0])
        g = Grammar(g.symbols, g.is_preterminal, g.root_prob, g.bin_parent, g.bin_left,
                    g.bin_right, g.bin_prob * scale, g.un_parent, g.un_child, g.un_prob,
                    g.lexicon)
    pos, sym, prob = random_lexical(g, n, seed + 1)
    res = chart_marginals(g.chart_grammar("sum"), n, pos, sym, prob)
    if res["logz"] == -np.inf:
        return
    tags = g.is_preterminal
    pre = res["marg_pre"]
    cover = np.array([pre[i, i + 1, tags].sum() for i in range(n)])
    np.testing.assert_allclose(cover, 1.0, rtol=1e-6)
    np.testing.assert_allclose(res["marg_post"][0, n].sum(), 1.0, rtol=1e-6)
    lens, offs = np.array([n], np.int64), np.array([0, len(pos)], np.int64)
    for mode in (0, 1):
        cg = g.chart_grammar("max" if mode == 0 else "sum")
        nodes, noff, counts, logz = parse_batch(cg, lens, offs, pos, sym, prob, mode)
        assert counts[0] > 0
        spans = nodes[:3 * counts[0]].reshape(-1, 3)
        assert spans[:, 0].min() == 0 and spans[:, 1].max() == n


# ---- out of memory: every kernel raises MemoryError naming the sentence ------------------------
def _sweep(module, call, check=None, limit=5000):
    """Make the k-th allocation of ``module`` fail (and every later one), k = 0, 1, ...: each
    ``call()`` must raise a MemoryError naming a sentence until k passes the call's
    allocations, and then give the result of a run without failures (``check(result)``).
    Returns how many allocation counts failed."""
    failed = 0
    try:
        for k in range(limit):
            module._fail_allocations_after(k)
            try:
                res = call()
            except MemoryError as exc:
                assert "out of memory for sentence" in str(exc) or "cannot allocate" in str(exc)
                failed += 1
                continue
            module._fail_allocations_after(-1)
            if check is not None:
                ok = check(res)
                assert ok is None or ok, f"{module.__name__}: another result after the failures"
            return failed
        pytest.fail(f"{module.__name__}: still failing after {limit} allocations")
    finally:
        module._fail_allocations_after(-1)


def test_status_codes_match_the_pxd():
    """The Python side's codes are those of status.pxd, and the helper names the sentence."""
    import pathlib
    import re

    from fastspectral._ext import _status

    pxd = pathlib.Path(_status.__file__).with_name("status.pxd").read_text()
    codes = {m[0]: int(m[1]) for m in re.findall(r"^\s+ST_(\w+) = (-?\d+)", pxd, re.M)}
    assert codes == {"OK": _status.OK, "NO_MEMORY": _status.NO_MEMORY,
                     "OVER_BUDGET": _status.OVER_BUDGET}
    _status.raise_for_status(np.array([0, -2, 1], np.int32), "k")     # not errors
    with pytest.raises(MemoryError, match=r"^k: out of memory for sentence 2 of the batch "
                                          r"\(7 words\); 1 more"):
        _status.raise_for_status(np.array([0, -1, 3, -1]), "k", [3, 7, 1, 2])


def test_eisner_kernels_out_of_memory():
    from fastspectral._ext import eisner as k1, eisner2 as k2
    from fastspectral.dependency.eisner import eisner_batch, eisner2_packed

    rng = np.random.default_rng(5)
    mats = [rng.normal(size=(n + 1, n + 1)) for n in (4, 6)]
    ref = eisner_batch(mats, jobs=1)
    check = lambda got: all(np.array_equal(a, b) for a, b in zip(got, ref))  # noqa: E731
    # per sentence: the chart, the back-pointers, the backtracking stack
    assert _sweep(k1, lambda: eisner_batch(mats, jobs=1), check) == 6
    k1._fail_allocations_after(2)               # the first sentence's backtracking stack
    try:
        with pytest.raises(MemoryError, match=r"^eisner: .* sentence 1 of the batch \(4 words"):
            eisner_batch(mats, jobs=1)
        k1._fail_allocations_after(5)           # the second sentence's
        with pytest.raises(MemoryError, match=r"sentence 2 of the batch \(6 words\)"):
            eisner_batch(mats, jobs=1)
    finally:
        k1._fail_allocations_after(-1)
    n = 5
    A = rng.normal(size=(n + 1, n + 1))
    G = rng.normal(size=(n + 1,) * 3)
    args = (A.ravel(), np.array([0, A.size]), G.ravel(), np.array([0, G.size]),
            np.array([n], np.int32))
    ref2 = eisner2_packed(*args, jobs=1).heads
    assert _sweep(k2, lambda: eisner2_packed(*args, jobs=1),
                  lambda r: np.array_equal(r.heads, ref2)) == 3


def test_kbest_kernel_out_of_memory():
    from fastspectral._ext import kbest_eisner
    from fastspectral.rerank.kbest import kbest_batch

    rng = np.random.default_rng(2)
    mats = [rng.normal(size=(n + 1, n + 1)) for n in (3, 5)]
    ref = kbest_batch(mats, 6, jobs=1)

    def check(got):
        for (h1, s1), (h2, s2) in zip(got, ref):
            assert np.array_equal(h1, h2) and np.array_equal(s1, s2)

    # the chart, then the derivation lists and heaps (alloc.grow) as they are needed
    assert _sweep(kbest_eisner, lambda: kbest_batch(mats, 6, jobs=1), check) > 8


def test_shag_kernel_out_of_memory():
    from fastspectral._ext import shag

    H, M, N, K, C = 3, 2, 2, 1, 4
    rng = np.random.default_rng(1)
    alpha1, beta = rng.random((H, 2, N)), rng.random((H, 2, N))
    A = rng.random((H, 2, M, N, N)) * 0.3
    nxt = np.zeros((K, C), np.int32)
    n = 3
    hsym, msym = np.array([2, 0, 1, 0], np.int32), np.array([0, 0, 1, 0], np.int32)
    cls, tok = np.zeros(4, np.int32), np.array([0, 4], np.int64)
    P = (n + 1) ** 2
    lw, ls, poff = np.ones(P * K), np.ones(4 * 2 * K), np.array([0, P], np.int64)

    def call():
        mu, logz, status = np.zeros(P), np.zeros(1), np.zeros(1, np.int32)
        shag.inside_outside_batch(alpha1, beta, A, nxt, hsym, msym, cls, tok, lw, ls, poff, mu,
                                  logz, status, 0, 1)
        return mu, status

    ref = call()
    assert ref[1][0] == 0
    assert _sweep(shag, call, lambda r: np.array_equal(r[0], ref[0]) and r[1][0] == 0) == 18


def test_cky_kernels_out_of_memory():
    from fastspectral._ext import cky

    g, cg, pos, sym, prob = _pcfg_inputs(6)
    lens, offs = np.array([6], np.int64), np.array([0, len(pos)], np.int64)
    coarse = dict(coarse=cg, proj=np.arange(g.n_symbols, dtype=np.int32),
                  coarse_lex_offsets=offs, coarse_lex_pos=pos, coarse_lex_sym=sym,
                  coarse_lex_prob=prob)
    calls = []
    for mode in (0, 1):
        for kw in ({}, coarse):
            calls.append(lambda mode=mode, kw=kw: parse_batch(
                g.chart_grammar("max" if mode == 0 else "sum"), lens, offs, pos, sym, prob,
                mode, **kw)[2:])
    for kw in ({"dense": True}, {"dense": False}, dict(coarse, coarse_threshold=1e-3)):
        calls.append(lambda kw=kw: prune_batch(cg, lens, offs, pos, sym, prob, 1e-4, 1, **kw))
    for kw in ({}, {"viterbi": True}, {"dense": True}):
        calls.append(lambda kw=kw: chart_marginals(cg, 6, pos, sym, prob, **kw)["logz"])
    for call in calls:
        ref = call()
        assert _sweep(cky, call, lambda got: repr(got) == repr(ref)) >= 1


def test_tensor_chart_kernels_out_of_memory():
    from fastspectral._ext import tensor_chart
    from fastspectral._ext.tensor_chart import decode_batch, inside_outside_batch, project_items

    g, batch = _tensor_args()
    gs = list(g)
    gs[1] = np.ones(3, np.int32)          # one state per symbol: the scalar kernel
    gs[5] = np.arange(len(g[2]), dtype=np.int64)
    gs[11] = np.arange(len(g[9]), dtype=np.int64)
    gs[16] = np.array([0, -1, -1], np.int64)
    for grammar in (g, gs):
        ref = inside_outside_batch(*grammar, *batch)
        assert ref[2][0] == 0
        assert _sweep(tensor_chart, lambda: inside_outside_batch(*grammar, *batch),
                      lambda got: repr(got) == repr(ref)) >= 5
    n, ptr, ii, jj, ss, lw, lo, table = batch
    sym_class, is_pre = np.array([0, 1, 2], np.int32), np.array([0, 0, 1], np.uint8)
    ref = decode_batch(n, ptr, ii, jj, ss, np.ones(len(ii)), sym_class, is_pre, 3)
    assert _sweep(tensor_chart,
                  lambda: decode_batch(n, ptr, ii, jj, ss, np.ones(len(ii)), sym_class, is_pre,
                                       3),
                  lambda got: repr(got) == repr(ref)) >= 1
    proj = (np.array([0, 1, 2, 3], np.int32), np.array([0, 1, 2], np.int32), is_pre,
            np.array([0, 3], np.int64), np.arange(3, dtype=np.int32), np.full(3, 2, np.int32))
    ref = project_items(n, ptr, ii, jj, ss, np.ones(len(ii)), 0.5, *proj)
    # the position index of the counting pass, then that of the writing pass
    assert _sweep(tensor_chart,
                  lambda: project_items(n, ptr, ii, jj, ss, np.ones(len(ii)), 0.5, *proj),
                  lambda got: repr(got) == repr(ref)) == 2


def test_kernel_sources_share_the_allocator_grower_and_thread_argument():
    """Every kernel allocates through alloc.pxd (so that the failures above reach it), grows its
    buffers only with alloc.grow (no realloc of its own), and names its thread argument
    ``n_threads``."""
    import pathlib
    import re

    import fastspectral._ext as ext

    root = pathlib.Path(ext.__file__).parent
    sources = sorted(root.glob("*.pyx")) + sorted(root.glob("*.pxd"))
    assert len(sources) >= 10
    for path in sources:
        text = path.read_text()
        assert not re.search(r"\bnthreads\b", text), path.name
        assert "libc.stdlib cimport" not in text, f"{path.name} allocates past alloc.pxd"
        if path.name != "alloc.pxd":
            assert "realloc(" not in text, f"{path.name} grows a buffer by hand"
    for name in ("cky", "eisner", "eisner2", "kbest_eisner", "shag", "tensor_chart"):
        text = (root / f"{name}.pyx").read_text()
        assert "from .alloc cimport" in text and "raise_for_status(" in text, name
