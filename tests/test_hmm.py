"""Sequence HMMs (fastspectral.hmm): spectral convergence on a known HMM, forward-backward
against brute-force enumeration, scoring, model files, input readers, the CLI hook."""
from __future__ import annotations

import argparse
import itertools
import math

import numpy as np
import pytest

from fastspectral.base import clone
from fastspectral.errors import FormatError, NotFittedError
from fastspectral.hmm import HMM, read_sequences
from fastspectral.hmm import em as E
from fastspectral.hmm import spectral as S
from fastspectral.hmm.data import Encoded, SymbolTable, encode


# ---------------------------------------------------------------------------- a known HMM
def _true_hmm():
    """2 hidden states, 3 symbols, stop probabilities 0.3 / 0.2 (emit[:, 3] = stop)."""
    start = np.array([0.7, 0.3])
    trans = np.array([[0.8, 0.2], [0.3, 0.7]])
    obs = np.array([[0.6, 0.3, 0.1], [0.1, 0.2, 0.7]])
    stop = np.array([0.3, 0.2])
    emit = np.hstack([obs * (1 - stop)[:, None], stop[:, None]])
    return start, trans, emit


def _sample(start, trans, emit, n, seed):
    """``n`` sequences of symbol ids sampled from the HMM (vectorised over sequences)."""
    rng = np.random.default_rng(seed)
    m, V = emit.shape
    h = (rng.random(n)[:, None] > np.cumsum(start)[None, :]).sum(1)
    alive = np.arange(n)
    steps = []
    while alive.size:
        x = (rng.random(alive.size)[:, None] > np.cumsum(emit[h], axis=1)).sum(1)
        x = np.minimum(x, V - 1)
        go = x != V - 1
        steps.append((alive[go], x[go]))
        alive, h = alive[go], h[go]
        h = np.minimum((rng.random(alive.size)[:, None] >
                        np.cumsum(trans[h], axis=1)).sum(1), m - 1)
    seqs = [[] for _ in range(n)]
    for who, what in steps:
        for i, a in zip(who.tolist(), what.tolist()):
            seqs[i].append(a)
    return seqs


def _enc(seqs) -> Encoded:
    off = np.zeros(len(seqs) + 1, dtype=np.int64)
    off[1:] = np.cumsum([len(s) for s in seqs])
    return Encoded(off, np.array([x for s in seqs for x in s], dtype=np.int64))


def _all_sequences(M, max_len):
    return [list(t) for L in range(max_len + 1) for t in itertools.product(range(M), repeat=L)]


def _brute(seq, start, trans, emit):
    """p(x) by summing over every hidden path."""
    m, V = emit.shape
    tot = 0.0
    for hs in itertools.product(range(m), repeat=len(seq) + 1):
        p = start[hs[0]]
        for t, x in enumerate(seq):
            p *= emit[hs[t], x] * trans[hs[t], hs[t + 1]]
        tot += p * emit[hs[-1], V - 1]
    return tot


def test_forward_matches_brute_force():
    start, trans, emit = _true_hmm()
    seqs = _all_sequences(3, 4)
    lp = E.log_probability(_enc(seqs), start, trans, emit)
    brute = np.array([_brute(s, start, trans, emit) for s in seqs])
    np.testing.assert_allclose(np.exp(lp), brute, rtol=1e-12, atol=0)
    # the sequences of length L hold start^T (diag(1 - stop) trans)^L stop
    D = np.diag(1 - emit[:, -1]) @ trans
    lens = np.array([len(s) for s in seqs])
    for L in range(5):
        assert brute[lens == L].sum() == pytest.approx(
            start @ np.linalg.matrix_power(D, L) @ emit[:, -1], rel=1e-12)


def test_baum_welch_counts_match_brute_force():
    start, trans, emit = _true_hmm()
    seqs = [[0, 2, 1], [], [2, 2], [1]]
    ll, s_cnt, t_cnt, e_cnt = E.baum_welch_stats(_enc(seqs), start, trans, emit)
    m, V = emit.shape
    s_ref, t_ref, e_ref, ll_ref = np.zeros(m), np.zeros((m, m)), np.zeros((m, V)), 0.0
    for seq in seqs:
        obs = list(seq) + [V - 1]
        paths, weights = [], []
        for hs in itertools.product(range(m), repeat=len(obs)):
            p = start[hs[0]]
            for t, x in enumerate(obs):
                p *= emit[hs[t], x] * (trans[hs[t], hs[t + 1]] if t + 1 < len(obs) else 1.0)
            paths.append(hs)
            weights.append(p)
        z = sum(weights)
        ll_ref += math.log(z)
        for hs, p in zip(paths, weights):
            s_ref[hs[0]] += p / z
            for t, x in enumerate(obs):
                e_ref[hs[t], x] += p / z
                if t + 1 < len(obs):
                    t_ref[hs[t], hs[t + 1]] += p / z
    assert ll == pytest.approx(ll_ref, rel=1e-12)
    np.testing.assert_allclose(s_cnt, s_ref, atol=1e-12)
    np.testing.assert_allclose(t_cnt, t_ref, atol=1e-12)
    np.testing.assert_allclose(e_cnt, e_ref, atol=1e-12)


def test_em_increases_the_likelihood():
    start, trans, emit = _true_hmm()
    enc = _enc(_sample(start, trans, emit, 2000, seed=1))
    rng = np.random.default_rng(0)
    unigram = np.full(4, 0.25)
    s, t, e = E.random_init(3, 2, unigram, rng)
    lls = []
    for _ in range(15):
        s, t, e, ll = E.em_step(enc, s, t, e)
        lls.append(ll)
    assert all(b >= a - 1e-8 for a, b in zip(lls, lls[1:]))
    np.testing.assert_allclose(t.sum(1), 1.0)
    np.testing.assert_allclose(e.sum(1), 1.0)


def test_spectral_estimate_converges_to_the_truth():
    start, trans, emit = _true_hmm()
    test = _all_sequences(3, 4)
    truth = np.exp(E.log_probability(_enc(test), start, trans, emit))
    errs = []
    for n, seed in ((300, 3), (3000, 4), (30000, 5)):
        op = S.learn_operators(_enc(_sample(start, trans, emit, n, seed)), 3, 2,
                               max_basis=0, ridge=0.0)
        lp, sign = S.raw_log_probability(op, _enc(test))
        errs.append(np.abs(sign * np.exp(lp) - truth).sum())
    assert errs[1] < 0.7 * errs[0] and errs[2] < 0.7 * errs[1], errs
    assert errs[2] < 0.02


def test_spectral_with_length2_basis_and_ridge_is_consistent():
    start, trans, emit = _true_hmm()
    test = _all_sequences(3, 3)
    truth = np.exp(E.log_probability(_enc(test), start, trans, emit))
    op = S.learn_operators(_enc(_sample(start, trans, emit, 30000, 7)), 3, 2, max_basis=16,
                           ridge=1.0)
    lp, sign = S.raw_log_probability(op, _enc(test))
    assert np.abs(sign * np.exp(lp) - truth).sum() < 0.02
    # streaming conditionals multiply to the joint estimate when nothing is clipped
    q, resets = S.spectral_conditionals(op, _enc(test))
    seq = np.repeat(np.arange(len(test)), [len(s) + 1 for s in test])
    lq = np.bincount(seq, weights=np.log(q), minlength=len(test))
    assert resets.sum() == 0
    np.testing.assert_allclose(np.exp(lq), truth, atol=0.01)


def _strings(seqs):
    names = ["a", "b", "c"]
    return [[names[x] for x in s] for s in seqs]


def _toy(train_seed, dev_seed):
    """3000 training and 300 development sequences of the true HMM, as strings."""
    start, trans, emit = _true_hmm()
    train = _strings(_sample(start, trans, emit, 3000, train_seed))
    dev = _strings(_sample(start, trans, emit, 300, dev_seed))
    return train, dev


@pytest.fixture(scope="module")
def toy():
    return _toy(11, 12)


@pytest.mark.slow
@pytest.mark.parametrize("method", ["spectral", "em", "spectral-em"])
def test_scoring_api_and_model_file(tmp_path, toy, method):
    train, dev = toy
    model = HMM(n_states=2, method=method, iterations=10, max_basis=8).fit(train, dev=dev)
    test = dev[:50] + [["a", "zzz", "b"], []]         # an unknown symbol, an empty sequence
    ll, n = model.log_likelihood(test)
    assert n == sum(len(s) + 1 for s in test)
    lp = model.log_probability(test)
    assert np.all(np.isfinite(lp)) and ll == pytest.approx(lp.sum())
    cond = model.conditional_probabilities(test)
    assert [len(c) for c in cond] == [len(s) + 1 for s in test]
    np.testing.assert_allclose([np.log(c).sum() for c in cond], lp)
    d = model.next_distribution([[], ["a"], ["c", "c"]])
    np.testing.assert_allclose(d.sum(axis=1), 1.0)
    assert model.perplexity(test) == pytest.approx(math.exp(-ll / n))
    path = tmp_path / "m.hmm"
    model.save(path)
    from fastspectral.io.modelfile import load
    for again in (HMM.load(path), load(path)):
        assert type(again) is HMM and again.get_params() == model.get_params()
        assert again.log_likelihood(test) == (ll, n)
        assert again.predict_next([["a"], ["c"]]) == model.predict_next([["a"], ["c"]])
        np.testing.assert_array_equal(again.raw_log_probability(test)[0],
                                      model.raw_log_probability(test)[0])


def test_fitted_hmm_is_close_to_the_truth(toy):
    train, dev = toy
    start, trans, emit = _true_hmm()
    ids = {"a": 0, "b": 1, "c": 2}
    truth = E.log_probability(_enc([[ids[t] for t in s] for s in dev]), start, trans, emit)
    for method in ("spectral", "em"):
        model = HMM(n_states=2, method=method, iterations=50, max_basis=8,
                    backoff_weight=0.0).fit(train)
        lp = model.log_probability(dev)
        assert abs(lp.sum() - truth.sum()) / abs(truth.sum()) < 0.01, method


@pytest.mark.slow
def test_predict_next_on_a_deterministic_language():
    train = [["DT", "NN", "VBZ"], ["DT", "JJ", "NN", "VBZ"], ["NNS", "VBP"]] * 40
    for method in ("spectral", "em", "spectral-em"):
        model = HMM(n_states=8, method=method, iterations=30).fit(train)
        assert model.predict_next([["DT", "JJ"], ["NNS", "VBP"], ["DT", "NN"]]) == \
            ["NN", "</s>", "VBZ"], method


def test_vocabulary_cap_keeps_a_distribution(toy):
    train, dev = toy
    train = train + [["d", "e", "a"], ["f"]] * 3
    model = HMM(n_states=2, max_vocab=2, max_basis=4).fit(train)
    assert model.n_latent_symbols_ == 3 and len(model.symbols_) == 7
    d = model.next_distribution([["a"], ["d", "e"]])
    np.testing.assert_allclose(d.sum(axis=1), 1.0)
    assert np.all(np.isfinite(model.log_probability(dev + [["f", "e"]])))


def test_smoother_is_the_kneser_ney_bigram_of_fastspectral_lm(toy):
    from fastspectral.lm.kneser_ney import KneserNeyBigramLM

    train, dev = toy
    train = train + [["A", "rare", "b"], ["c", "Once"]]
    dev = dev + [["never", "seen", "a"], ["RARE"]]
    model = HMM(n_states=2, min_count=2, lowercase=True, max_basis=4).fit(train)
    kn = KneserNeyBigramLM(min_count=2, lowercase=True).fit(train)
    ll, n = kn.log_likelihood(dev)
    png = model._ngram_probs(model._encode(dev))
    assert len(png) == n and np.log(png).sum() == pytest.approx(ll, rel=1e-12)


def test_symbol_table_and_encoding():
    t = SymbolTable.build([["b", "a", "b", "<s>"], ["c", "B"]], min_count=1, lowercase=True)
    assert t.symbols == ["<unk>", "b", "a", "c"]
    enc = encode([["B", "x"], []], t)
    assert enc.offsets.tolist() == [0, 2, 2] and enc.ids.tolist() == [1, 0]
    assert SymbolTable.build([["a", "a", "b"]], min_count=2).symbols == ["<unk>", "a"]
    assert SymbolTable.build([["a", "a", "b", "c"]], max_vocab=1).symbols == ["<unk>", "a"]


def test_estimator_contract_and_errors(toy):
    train, _ = toy
    model = HMM(n_states=3, method="em", field="tag")
    assert clone(model).get_params() == model.get_params()
    assert "n_states=3" in repr(model)
    with pytest.raises(NotFittedError):
        model.log_likelihood([["a"]])
    for bad in ({"n_states": 0}, {"method": "gibbs"}, {"field": "lemma"},
                {"backoff_weight": 1.0}, {"ridge": -1.0}, {"iterations": -1},
                {"max_vocab": 0}, {"lowercase": "yes"}, {"spectral_init": "kmeans"}):
        with pytest.raises(ValueError):
            HMM(**bad).fit(train)
    with pytest.raises(TypeError):
        HMM().fit("a b c")
    with pytest.raises(TypeError):
        HMM().fit(["a", "b"])
    with pytest.raises(TypeError):
        HMM().fit([[1, 2]])
    with pytest.raises(ValueError):
        HMM().fit([])


# ---------------------------------------------------------------------------- input
def test_read_sequences_formats(tmp_path):
    text = tmp_path / "plain.txt"
    text.write_text("the dog barks\n\nthe cat sleeps now\na b\n")
    assert read_sequences(text) == [["the", "dog", "barks"], ["the", "cat", "sleeps", "now"],
                                    ["a", "b"]]
    assert read_sequences(text, skip_tokens=1, max_tokens=4) == [["the", "cat", "sleeps",
                                                                  "now"]]
    with pytest.raises(FormatError):
        read_sequences(text, field="tag")
    tagged = tmp_path / "tagged.txt"
    tagged.write_text("The/DT dog/NN barks/VBZ\nIt/PRP 1/2/CD\n")
    assert read_sequences(tagged, field="tag") == [["DT", "NN", "VBZ"], ["PRP", "CD"]]
    assert read_sequences(tagged) == [["The", "dog", "barks"], ["It", "1/2"]]
    ptb = tmp_path / "t.mrg"
    ptb.write_text("( (S (NP-SBJ (DT The) (NN dog)) (VP (VBZ barks) (NP (-NONE- *T*)))))\n")
    assert read_sequences(ptb, field="tag") == [["DT", "NN", "VBZ"]]
    assert read_sequences(ptb, field="word") == [["The", "dog", "barks"]]
    conllu = tmp_path / "s.conllu"
    conllu.write_text("# text = Dogs bark\n1\tDogs\tdog\tNOUN\tNNS\t_\t2\tnsubj\t_\t_\n"
                      "2\tbark\tbark\tVERB\tVBP\t_\t0\troot\t_\t_\n\n")
    assert read_sequences(conllu, field="upos") == [["NOUN", "VERB"]]
    assert read_sequences(conllu, field="xpos") == [["NNS", "VBP"]]
    assert read_sequences(conllu, field="tag") == [["NNS", "VBP"]]
    with pytest.raises(ValueError):
        read_sequences(text, field="lemma")
    with pytest.raises(ValueError):
        read_sequences(ptb, field="upos")
    with pytest.raises(FileNotFoundError):
        read_sequences(tmp_path / "missing.txt")
    bad = tmp_path / "bad.txt"
    bad.write_text("The/DT dog/\n")
    with pytest.raises(FormatError, match="bad.txt:1"):
        read_sequences(bad, fmt="tagged", field="tag")


def test_cli_hook(tmp_path):
    from fastspectral.cli import hmm as hook

    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(["The/DT dog/NN barks/VBZ", "A/DT cat/NN sleeps/VBZ",
                                 "Dogs/NNS bark/VBP"] * 20) + "\n")
    p = argparse.ArgumentParser()
    p.add_argument("treebank")
    p.add_argument("--encoding", default="utf-8")
    hook.add_arguments(p, HMM)
    assert "default: 16" in p.format_help()
    args = p.parse_args([str(corpus), "--states", "3", "--field", "tag", "--method", "em",
                         "--iterations", "5", "--tokens", "30", "--dev", str(corpus)])
    model = hook.build(args, HMM, {})
    assert model.get_params()["n_states"] == 3 and model.method == "em"
    assert model.ridge == 1.0                       # not given: the class's default
    data = hook.read(args)
    assert sum(map(len, data)) == 30 and data[0] == ["DT", "NN", "VBZ"]
    fitted = hook.fit(args, model, data)
    assert fitted.best_iteration_ <= 5 and len(fitted.dev_perplexity_) == 6
    args = p.parse_args([str(corpus), "--states", "2", "--field", "tag", "--method",
                         "spectral-em", "--spectral-init", "moments", "--iterations", "2"])
    assert hook.build(args, HMM, {}).get_params()["spectral_init"] == "moments"


# ---------------------------------------------------------------------------- real data
def test_every_test_sequence_gets_a_positive_probability(shared_data):
    train = read_sequences(shared_data / "ptb" / "wsj-sample.mrg", field="tag",
                           max_tokens=30000)
    test = read_sequences(shared_data / "ptb" / "wsj22.trees", field="tag", max_tokens=10000)
    assert len({t for s in train for t in s}) > 40
    model = HMM(n_states=20, field="tag").fit(train)
    raw, sign = model.raw_log_probability(test)
    assert (sign <= 0).any()                 # the raw spectral estimate is not always positive
    lp = model.log_probability(test)
    assert np.all(np.isfinite(lp)) and np.all(lp < 0)
    ll, n = model.log_likelihood(test)
    assert n == sum(len(s) + 1 for s in test)
    assert 5.0 < math.exp(-ll / n) < 15.0
