"""Tests of the bigram language models (fastspectral.lm) and the ``fastspectral lm`` CLI."""
import math

import numpy as np
import pytest

from fastspectral.errors import ModelFileError, NotFittedError
from fastspectral.io.modelfile import load
from fastspectral.lm import KneserNeyBigramLM, LatentBigramLM
from fastspectral.trees.corpus import read_corpus


def lm_main(argv):
    from fastspectral.cli import main
    return main(["lm"] + list(argv))

M, NW = 3, 40


def _true_model(seed=0):
    """A latent bigram model over NW words + </s> whose states have anchor words."""
    rng = np.random.default_rng(seed)
    s = rng.dirichlet(np.full(NW + 1, 0.5), size=M).T  # rows: words, last row = </s>
    s[:M] = 0.0
    s[np.arange(M), np.arange(M)] = 0.12  # word h is emitted only by state h
    s[NW] = 0.1  # every state ends the sentence with probability ~0.1
    s /= s.sum(axis=0)
    r = rng.dirichlet(np.full(M, 0.4), size=NW + 1)  # rows: words, last row = <s>
    return r, s


def _sample(r, s, n_sent, seed):
    rng = np.random.default_rng(seed)
    sents = []
    while len(sents) < n_sent:
        prev, sent = NW, []  # row NW of r is <s>
        while len(sent) < 60:
            h = rng.choice(M, p=r[prev])
            w = rng.choice(NW + 1, p=s[:, h])
            if w == NW:
                break
            sent.append(f"w{w}")
            prev = w
        sents.append(sent)  # may be empty: the bigram (<s>, </s>)
    return sents


def _true_perplexity(r, s, sents):
    ll, n = 0.0, 0
    for sent in sents:
        prev = NW
        for w in [int(x[1:]) for x in sent] + [NW]:
            ll += math.log(r[prev] @ s[w])
            prev = w if w < NW else None
            n += 1
    return math.exp(-ll / n)


@pytest.fixture(scope="module")
def corpus():
    r, s = _true_model()
    train = _sample(r, s, 6000, 1)
    test = _sample(r, s, 800, 2)
    return r, s, train, test


@pytest.mark.slow
def test_pivot_recovers_synthetic_model(corpus):
    r, s, train, test = corpus
    true_ppl = _true_perplexity(r, s, test)
    lm = LatentBigramLM(M, "pivot", min_count=1, lowercase=False, anchor_min_count=1).fit(train)
    ppl = lm.perplexity(test)
    assert ppl < true_ppl * 1.01, (ppl, true_ppl)
    assert sorted(lm.anchor_words_) == ["w0", "w1", "w2"]
    # s(w | h) matches the truth up to the permutation given by the anchors
    perm = [int(np.argmax(lm.s_[lm.vocab_.index[f"w{h}"]])) for h in range(M)]
    ids = [lm.vocab_.index[f"w{i}"] for i in range(NW)] + [lm.vocab_.index["</s>"]]
    assert np.abs(lm.s_[np.ix_(ids, perm)] - s).max() < 0.03
    # a one-state model (a unigram) is clearly worse: the test is not trivially passed
    uni = LatentBigramLM(1, "em", iterations=5, min_count=1, lowercase=False).fit(train)
    assert uni.perplexity(test) > true_ppl * 1.1


def test_em_likelihood_is_monotone_and_pivot_em_runs(corpus):
    _, _, train, test = corpus
    lm = LatentBigramLM(M, "em", iterations=40, min_count=1, random_state=3).fit(train)
    ll = lm.train_loglik_
    assert len(ll) == 40
    assert np.all(np.diff(ll) >= -1e-10)
    assert ll[-1] > ll[0] + 0.05
    pe = LatentBigramLM(M, "pivot-em", iterations=5, min_count=1, anchor_min_count=1)
    pe.fit(train, dev=test)
    assert len(pe.dev_perplexity_) == 6 and 0 <= pe.best_iteration_ <= 5
    assert pe.perplexity(test) == pytest.approx(pe.dev_perplexity_.min(), rel=1e-9)
    assert np.all(np.diff(pe.train_loglik_) >= -1e-10)


def test_kneser_ney_normalises_and_handles_unknown_words(corpus):
    _, _, train, test = corpus
    kn = KneserNeyBigramLM(min_count=3).fit(train[:300] + [["zzz", "w1"]])
    V = kn.vocab_.words
    preds = [w for w in V if w != "<s>"]
    for ctx in ["<s>", "w0", "w5", "<unk>", "w39", "</s>", "never-seen"]:
        total = sum(kn.prob(ctx, w) for w in preds)
        assert total == pytest.approx(1.0, abs=1e-9), ctx
    assert kn.prob("w1", "never-seen") == kn.prob("w1", "<unk>") > 0
    assert 1.0 < kn.perplexity(test) < 1e4
    # discounts are data-driven and in the valid ranges
    assert 0 < kn.discounts_[0] <= 1 and np.all(kn.discounts_ >= 0)
    with pytest.raises(NotFittedError):
        KneserNeyBigramLM().perplexity(test)


def test_latent_model_normalises(corpus):
    _, _, train, _ = corpus
    lm = LatentBigramLM(4, "em", iterations=3, min_count=2).fit(train[:500])
    preds = [w for w in lm.vocab_.words if w != "<s>"]
    for ctx in ["<s>", "w3", "<unk>"]:
        assert sum(lm.prob(ctx, w) for w in preds) == pytest.approx(1.0, abs=1e-9)


def test_save_load_identical_perplexity(corpus, tmp_path):
    _, _, train, test = corpus
    for model in (LatentBigramLM(M, "pivot-em", iterations=2, anchor_min_count=1).fit(train),
                  KneserNeyBigramLM().fit(train)):
        path = tmp_path / f"{model.kind}.npz"
        model.save(path)
        again = type(model).load(path)
        assert again.perplexity(test) == model.perplexity(test)
        assert load(path).perplexity(test) == model.perplexity(test)
    with pytest.raises(ModelFileError):
        KneserNeyBigramLM.load(tmp_path / "latent-bigram-lm.npz")


def test_bad_parameters():
    with pytest.raises(ValueError, match="method"):
        LatentBigramLM(3, method="spectral").fit([["a", "b"]])
    with pytest.raises(ValueError, match="n_states"):
        LatentBigramLM(0).fit([["a", "b"]])
    with pytest.raises(ValueError, match="floor"):
        LatentBigramLM(2, "em", floor=1.0).fit([["a", "b"]])
    with pytest.raises(ValueError, match="discount"):
        KneserNeyBigramLM(discount="good-turing").fit([["a", "b"]])
    with pytest.raises(ValueError, match="min_count"):
        KneserNeyBigramLM(min_count=0).fit([["a", "b"]])
    with pytest.raises(ValueError):  # too few anchor candidates for the states
        LatentBigramLM(5, anchor_min_count=1000).fit([["a", "b"], ["b", "a"]])


def test_cli_round_trip(corpus, tmp_path, capsys):
    _, _, train, _ = corpus
    train = [s for s in train if s]  # a file holds no empty sentences
    brown = tmp_path / "tiny.txt"
    brown.write_text("".join(" ".join(f"{w}/nn" for w in s) + "\n" for s in train[:1500]))
    text = tmp_path / "tiny-plain.txt"
    text.write_text("".join(" ".join(s) + "\n" for s in train[:1500]))
    ntok = sum(len(s) for s in train[:1000])
    model = tmp_path / "m.npz"
    assert lm_main(["train", str(brown), "-o", str(model), "--states", "3", "--method",
                    "pivot-em", "--iterations", "2", "--tokens", str(ntok)]) == 0
    capsys.readouterr()
    assert lm_main(["eval", str(model), str(brown), "--skip-tokens", str(ntok)]) == 0
    out_brown = capsys.readouterr().out
    assert lm_main(["eval", str(model), str(text), "--skip-tokens", str(ntok)]) == 0
    out_text = capsys.readouterr().out
    assert out_brown.startswith("perplexity ") and out_brown == out_text
    held = read_corpus(str(text), skip_tokens=ntok)
    assert len(held) == 500
    expected = LatentBigramLM.load(model).perplexity(held)
    assert float(out_brown.split()[1]) == pytest.approx(expected, abs=0.006)
    kn = tmp_path / "kn.npz"
    assert lm_main(["train", str(text), "-o", str(kn), "--method", "kn"]) == 0
    assert lm_main(["eval", str(kn), str(brown), "--tokens", "100"]) == 0
    # errors: one line on stderr, exit 2
    capsys.readouterr()
    bad = tmp_path / "bad.txt"
    bad.write_text("the/at dog/nn\nthe/at dog\n")
    assert lm_main(["train", str(bad), "-o", str(tmp_path / "x.npz"), "--format", "brown"]) == 2
    err = capsys.readouterr().err
    assert "bad.txt:2" in err and err.count("\n") == 1
    assert lm_main(["eval", str(tmp_path / "missing.npz"), str(text)]) == 2
    assert "missing.npz" in capsys.readouterr().err
    assert lm_main(["train", str(tmp_path / "nope.txt"), "-o", str(model)]) == 2
    assert lm_main(["train", str(text), "-o", str(model), "--states", "0"]) == 2
    assert lm_main(["eval", str(model), str(text), "--skip-tokens", "10000000"]) == 2


def test_estimator_contract(corpus):
    from fastspectral.base import clone

    _, _, train, test = corpus
    lm = LatentBigramLM(M, "em", min_count=1, random_state=5)
    assert lm.iterations is None                    # stored unchanged; resolved by fit
    lm.fit(train[:400])
    assert lm.iterations_ == 100 and len(lm.train_loglik_) == 100 and lm.fit_time_ > 0
    assert repr(lm) == "LatentBigramLM(method='em', min_count=1, n_states=3, random_state=5)"
    again = clone(lm).fit(train[:400])              # same parameters and seed: same model
    assert again.perplexity(test) == lm.perplexity(test)
    assert not hasattr(clone(lm), "r_")
    with pytest.raises(NotFittedError):
        clone(lm).perplexity(test)
    kn = KneserNeyBigramLM(lowercase=False).fit(train)
    assert kn.get_params() == {"min_count": 2, "lowercase": False, "discount": "modified"}
    assert kn.fit_time_ >= 0 and KneserNeyBigramLM.input_kind == "sequences"


def test_treebanks_are_read_as_their_words_by_train_and_eval(tmp_path, capsys):
    """``train kn-lm`` / ``lm eval`` on a PTB or CoNLL file read its words (the detection the
    HMMs use), not its lines: no ``(np`` in the vocabulary, the HMM's token count."""
    from fastspectral.cli import main
    from fastspectral.io import load
    from fastspectral.trees.conll import DepSentence, write_conllu
    from fastspectral.trees.corpus import read_corpus, read_sequences

    ptb = tmp_path / "t.mrg"
    ptb.write_text("(S (NP (DT The) (NN dog)) (VP (VBZ barks) (NP (-NONE- *T*-1))))\n"
                   "( (S (NP (PRP it)) (VP (VBD ran) (. .))))\n")
    words = [["The", "dog", "barks"], ["it", "ran", "."]]
    conll = tmp_path / "t.conllu"
    write_conllu([DepSentence(words=w, heads=[0] + [1] * (len(w) - 1)) for w in words], conll)
    for path in (ptb, conll):
        assert read_corpus(path) == words == read_sequences(path, field="word")
        assert read_corpus(path, skip_tokens=1) == words[1:]
        model = tmp_path / (path.name + ".kn")
        assert main(["train", "kn-lm", str(path), "-o", str(model), "-q", "--min-count",
                     "1"]) == 0
        vocab = load(model).vocab_.words
        assert not any("(" in w or ")" in w or "\t" in w for w in vocab), vocab
        assert {"the", "dog", "barks", "it", "ran"} <= set(vocab)
        capsys.readouterr()
        assert lm_main(["eval", str(model), str(path)]) == 0
        assert "(8 predicted tokens incl. </s>, 2 sentences)" in capsys.readouterr().out
    with pytest.raises(ValueError, match="unknown corpus format 'xml'"):
        read_corpus(ptb, "xml")
