"""SHAG data layer, spectral / EM / back-off learners, SHAGParser, model files and CLI hook."""
import itertools
import os

import numpy as np
import pytest

from fastspectral.dependency.backoff import BackoffSHAG
from fastspectral.dependency.data import (SymbolVocab, encode_sentences, modifier_sequences,
                                          token_classes)
from fastspectral.dependency.model import SHAGParser
from fastspectral.errors import FormatError, ModelFileError, NotFittedError
from fastspectral.trees.conll import DepSentence, read_malttab

from _pfa import pfa_prob, sample_pfa, two_state_pfa
from conftest import data_path

WSJ = str(data_path("dep", "wsj-sample.dp"))


def _sent(words, tags, heads):
    return DepSentence(words=list(words), xpos=list(tags), heads=list(heads))


# ------------------------------------------------------------------------------ data layer
def test_modifier_sequences_head_outwards():
    # 1 2 3 4 5 ; root -> 3; 3 -> 1, 2 (left), 3 -> 4, 5 (right)
    s = _sent("a b c d e".split(), ["A", "B", "C", "D", "E"], [3, 3, 0, 3, 3])
    tags = SymbolVocab(["A", "B", "C", "D", "E"], unk_id=0)
    enc = encode_sentences([s], tags)
    seqs = modifier_sequences(enc)
    got = {}
    for q in range(len(seqs.seq_pos)):
        mods = seqs.mods[seqs.seq_start[q]:seqs.seq_start[q] + seqs.seq_len[q]]
        got[(int(seqs.seq_pos[q]), int(seqs.seq_dir[q]))] = list(mods)
    # root (position 0) has only its right sequence; left sequences go 2 then 1
    assert (0, 0) not in got
    assert got[(0, 1)] == [3]
    assert got[(3, 0)] == [2, 1]
    assert got[(3, 1)] == [4, 5]
    assert got[(1, 0)] == [] and got[(5, 1)] == []
    assert len(got) == 2 * 5 + 1
    assert list(enc.hsym) == [0, 1, 2, 3, 4, 5] and list(enc.msym[1:]) == [0, 1, 2, 3, 4]


def test_token_classes():
    assert list(token_classes([",", "and", "dog", "y", "--"], [",", "CC", "NN", "cc", ":"])) == \
        [2, 1, 0, 1, 2]


# ------------------------------------------------------------------------------ spectral
def _sentences_from_sequences(left, right, tags="abc"):
    """One sentence per (left, right) pair: head 'H' with leaf modifiers."""
    sents = []
    for L, R in zip(left, right):
        words = [tags[a] for a in reversed(L)] + ["h"] + [tags[a] for a in R]
        hpos = len(L) + 1
        heads = [hpos] * len(L) + [0] + [hpos] * len(R)
        sents.append(_sent(words, [w.upper() if w != "h" else "H" for w in words], heads))
    return sents


@pytest.mark.slow
def test_spectral_recovers_sequence_distribution():
    rng = np.random.default_rng(0)
    pfa = two_state_pfa()
    n = 6000
    left = sample_pfa(rng, pfa, n)
    right = sample_pfa(rng, pfa, n)
    sents = _sentences_from_sequences(left, right)
    p = SHAGParser(method="spectral", n_states=2, backoff_weight=0.0).fit(sents)
    h = p.tags_.index["H"] + 1
    ids = {c: p.tags_.index[c.upper()] for c in "abc"}
    total_err = 0.0
    for length in range(4):
        for seq in itertools.product(range(3), repeat=length):
            true = pfa_prob(pfa, seq)
            for d in (0, 1):
                est = p.op_.sequence_weight(h, d, [ids["abc"[a]] for a in seq])
                assert abs(est - true) < 0.02
                total_err += abs(est - true)
    assert total_err < 0.25
    # one state cannot represent the two-state distribution as well
    p1 = SHAGParser(method="spectral", n_states=1, backoff_weight=0.0).fit(sents)
    err1 = sum(abs(p1.op_.sequence_weight(h, 1, [ids["abc"[a]] for a in seq]) - pfa_prob(pfa, seq))
               for L in range(4) for seq in itertools.product(range(3), repeat=L))
    err2 = sum(abs(p.op_.sequence_weight(h, 1, [ids["abc"[a]] for a in seq]) - pfa_prob(pfa, seq))
               for L in range(4) for seq in itertools.product(range(3), repeat=L))
    assert err2 < 0.5 * err1


def test_em_increases_likelihood_and_fits():
    from fastspectral.dependency.em import fit_em

    rng = np.random.default_rng(1)
    pfa = two_state_pfa()
    left = sample_pfa(rng, pfa, 1500)
    right = sample_pfa(rng, pfa, 1500)
    sents = _sentences_from_sequences(left, right)
    p = SHAGParser(method="det").fit(sents)
    enc = encode_sentences(sents, p.tags_)
    seqs = modifier_sequences(enc)
    res = fit_em(enc, seqs, p._H, p._M, 2, iterations=60, seed=3, snapshots=(5, 60))
    op = res.model
    ll = np.array(res.loglik)
    assert np.all(np.diff(ll) > -1e-6 * np.abs(ll[1:]))       # EM never decreases the likelihood
    assert set(res.snapshots) == {5, 60}
    # proper distributions: sum_{a,i'} A[a,i',i] + beta[i] = 1, alpha sums to 1
    h = p.tags_.index["H"] + 1
    np.testing.assert_allclose(op.A[h].sum(axis=(1, 2)) + op.beta[h], 1.0, atol=1e-9)
    np.testing.assert_allclose(op.alpha1[h].sum(axis=1), 1.0, atol=1e-9)
    ids = [p.tags_.index[c] for c in "ABC"]
    err = sum(abs(op.sequence_weight(h, 1, [ids[a] for a in seq]) - pfa_prob(pfa, seq))
              for L in range(3) for seq in itertools.product(range(3), repeat=L))
    assert err < 0.15


# ------------------------------------------------------------------------------ back-off
def test_backoff_models_are_normalised():
    sents = list(itertools.islice(read_malttab(WSJ), 300))
    tags = SymbolVocab(sorted({t for s in sents for t in s.tags}), unk_id=0)
    words = SymbolVocab(sorted({w for s in sents for w in s.words}), unk_id=None or 0)
    words.unk_id = len(words)
    enc = encode_sentences(sents, tags, words)
    seqs = modifier_sequences(enc)
    M = len(tags)
    for states, lexical in [("none", False), ("f", False), ("fcp", True)]:
        m = BackoffSHAG(states, lexical, M, len(words)).fit(enc, seqs)
        K = m.K
        # P_A over tags + STOP sums to 1 in every context (including unseen head words)
        for hs, hw in [(1, 5), (3, int(words.unk_id)), (0, -1)]:
            for d in (0, 1):
                for k in range(K):
                    out = np.arange(M + 1)
                    pa = m._p_a(np.full(M + 1, hs), np.full(M + 1, hw), np.full(M + 1, d),
                                np.full(M + 1, k), out)
                    assert pa.sum() == pytest.approx(1.0)
                    assert (pa > 0).all()
        if lexical:
            V = len(words) + 1
            pb = m._p_b(np.full(V, 2), np.arange(V), np.full(V, 4), np.full(V, 7), np.full(V, 1))
            assert pb.sum() == pytest.approx(1.0)


# ------------------------------------------------------------------------------ parser
@pytest.fixture(scope="module")
def wsj():
    sents = list(itertools.islice(read_malttab(WSJ), 700))
    return sents[:600], sents[600:]


def _uas(gold, pred):
    c = t = 0
    for g, p in zip(gold, pred):
        c += sum(int(a == b) for a, b in zip(g.heads, p.heads))
        t += len(g.heads)
    return 100.0 * c / t


def test_parsers_learn_and_rank(wsj, tmp_path):
    train, test = wsj
    scores = {}
    for name, kw in {"det": dict(method="det"), "det+f": dict(method="det+f"),
                     "spectral": dict(method="spectral", n_states=4),
                     "lex+f": dict(method="det", lexical="lex+f"),
                     "spec+lex": dict(method="spectral", n_states=4, lexical="lex+fcp")}.items():
        p = SHAGParser(**kw).fit(train)
        pred = p.parse(test, jobs=2)
        assert len(pred) == len(test)
        for g, q in zip(test, pred):
            assert isinstance(q, DepSentence) and q.words == g.words and q.is_tree()
            assert q.rels == ["_"] * len(g.words)
            assert sum(h == 0 for h in q.heads) == 1           # single-root treebank
        scores[name] = _uas(test, pred)
    assert scores["det"] > 55
    assert scores["det+f"] > scores["det"]
    assert scores["spectral"] > scores["det"]
    assert scores["spec+lex"] > scores["spectral"]


def test_arc_posteriors_are_distributions(wsj):
    train, test = wsj
    p = SHAGParser(method="det+f", lexical="lex+fcp").fit(train)
    s = test[3]
    mu = p.arc_posteriors(s)
    n = len(s.words)
    assert mu.shape == (n + 1, n + 1)
    np.testing.assert_allclose(mu[:, 1:].sum(axis=0), 1.0, rtol=1e-9)
    assert abs(mu[0, 1:].sum() - 1.0) < 1e-9           # exactly one root child
    assert np.all(mu >= -1e-12)


def test_save_load_roundtrip(wsj, tmp_path):
    train, test = wsj
    from fastspectral.io.modelfile import load

    for kw in [dict(method="spectral", n_states=3), dict(method="det", lexical="lex+fcp"),
               dict(method="em", n_states=2, iterations=3)]:
        p = SHAGParser(**kw).fit(train)
        path = tmp_path / f"m-{kw['method']}.npz"
        p.save(path)
        q = SHAGParser.load(path)
        r = load(path)
        assert isinstance(r, SHAGParser) and r.lexical == p.lexical and r.n_states == p.n_states
        a = [x.heads for x in p.parse(test[:40], jobs=1)]
        assert a == [x.heads for x in q.parse(test[:40], jobs=2)]
        assert a == [x.heads for x in r.parse(test[:40])]


def test_errors(wsj, tmp_path):
    train, _ = wsj
    with pytest.raises(NotFittedError):
        SHAGParser().parse(train[:1])
    with pytest.raises(ValueError, match="method"):
        SHAGParser(method="nope").fit(train[:5])
    with pytest.raises(ValueError, match="lexical"):
        SHAGParser(lexical="lex+x").fit(train[:5])
    with pytest.raises(ValueError, match="n_states"):
        SHAGParser(n_states=0).fit(train[:5])
    bad = _sent(["a", "b"], ["X", "Y"], [2, 1])               # a cycle
    with pytest.raises(FormatError, match="sentence 2"):
        SHAGParser().fit([train[0], bad])
    with pytest.raises(FormatError):
        SHAGParser().fit([_sent(["a"], ["X"], [5])])
    p = SHAGParser(method="det").fit(train[:50])
    with pytest.raises(FormatError):
        p.parse([_sent([], [], [])])
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"not a model")
    with pytest.raises(ModelFileError):
        SHAGParser.load(junk)
    # unseen tags at parse time fall back to the most frequent tag
    out = p.parse([_sent(["x", "y"], ["ZZZ", "QQQ"], [0, 1])])
    assert out[0].is_tree()


def test_constituency_trees_and_estimator_contract(wsj):
    from fastspectral.base import clone
    from fastspectral.dependency.data import trees_to_dep_sentences
    from fastspectral.trees.transforms import clean
    from fastspectral.trees.tree import Tree

    train, test = wsj
    # constituency trees are converted with head rules
    t = Tree.fromstring("(TOP (S (NP (DT The) (NN dog)) (VP (VBZ barks)) (. .)))")
    sents = trees_to_dep_sentences([clean(t)])
    assert sents[0].words == ["The", "dog", "barks", "."]
    assert sents[0].heads == [2, 3, 0, 3]
    m2 = SHAGParser(method="det+f").fit(sents * 5)
    assert m2.parse(sents)[0].heads == [2, 3, 0, 3]
    # __init__ stores its arguments unchanged; fit validates and resolves them
    raw = SHAGParser(n_states="3", backoff_weight=2.0, random_state=None)
    assert raw.n_states == "3" and raw.backoff_weight == 2.0 and raw.random_state is None
    with pytest.raises(ValueError, match="n_states"):
        raw.fit(train[:5])
    with pytest.raises(ValueError, match="backoff_weight"):
        SHAGParser(backoff_weight=2.0).fit(train[:5])
    p = SHAGParser(method="em", n_states=2, iterations=2, random_state=4).fit(train[:100])
    assert p.fit_time_ > 0 and p.fit_info_.n_sentences == 100 and len(p.fit_info_.loglik) == 2
    c = clone(p)
    assert c.get_params() == p.get_params() and not hasattr(c, "op_")
    assert repr(c) == "SHAGParser(iterations=2, method='em', n_states=2, random_state=4)"
    q = SHAGParser(**p.get_params()).fit(train[:100])          # the same seed: the same model
    np.testing.assert_array_equal(q.op_.A, p.op_.A)
    with pytest.raises(ValueError, match="jobs"):
        p.parse(test[:2], jobs=0)
    with pytest.raises(TypeError):
        p.parse(test[:2], None)                                  # keyword-only arguments


def test_full_cli_train_and_parse(tmp_path):
    from fastspectral.cli import main

    model = tmp_path / "shag.npz"
    train = tmp_path / "train.dp"
    with open(WSJ) as fh:
        lines = fh.read().split("\n\n")[:150]
    train.write_text("\n\n".join(lines) + "\n\n")
    assert main(["train", "shag", str(train), "-o", str(model), "--states", "3", "-q"]) == 0
    out = tmp_path / "out.dp"
    assert main(["parse", str(model), str(train), "-o", str(out), "-q"]) == 0
    pred = list(read_malttab(out))
    assert len(pred) == 150 and all(s.is_tree() for s in pred)
    assert os.path.getsize(model) > 0


def test_batching_does_not_change_results(wsj):
    train, test = wsj
    p = SHAGParser(method="spectral", n_states=3, lexical="lex+f").fit(train)
    a = [s.heads for s in p.parse(test[:60], jobs=2)]
    p.batch_size = 7
    assert [s.heads for s in p.parse(test[:60], jobs=1)] == a
    assert [list(h) for h in p.predict_heads(test[:60])] == a


def test_fallback_for_zero_weight_sentences(wsj):
    """Sentences the spectral/EM model gives no weight are parsed with the DET+F back-off."""
    train, test = wsj
    p = SHAGParser(method="spectral", n_states=3).fit(train)
    q = SHAGParser(method="det+f").fit(train)
    p.op_.beta[:] = 0.0                     # every tree now has weight zero
    got = [s.heads for s in p.parse(test[:30])]
    assert p.last_parse_stats_.fallback == 30 and p.last_parse_stats_.sentences == 30
    p.parse(test[:4])                       # counted per call, not accumulated
    assert p.last_parse_stats_.fallback == 4
    assert got == [s.heads for s in q.parse(test[:30])]
    from fastspectral.dependency.data import encode_sentences as enc_s
    enc = enc_s(test[:5], p.tags_)
    sub = enc.subset([3, 1])
    assert list(sub.lengths) == [len(test[3].words), len(test[1].words)]
    assert list(sub.msym[1:1 + len(test[3].words)]) == list(p.tags_.ids(test[3].tags))


# ------------------------------------------------------------------------------ tag columns
def test_tagset_choice_and_errors(tmp_path):
    from fastspectral.dependency.data import choose_tagset, with_tagset
    from fastspectral.trees.conll import read_conllu, read_conllx

    ud = list(itertools.islice(read_conllu(str(data_path("ud", "en_ewt-ud-dev.conllu"))), 300))
    esp = list(itertools.islice(read_conllx(str(data_path("conll2007", "esp.train"))), 50))
    wsj = list(itertools.islice(read_malttab(WSJ), 50))
    assert choose_tagset(ud) == "upos"          # Universal POS tags
    assert choose_tagset(esp) == "xpos"         # CoNLL-X coarse tags are not UD's
    assert choose_tagset(wsj) == "xpos"         # Malt-TAB: one tag column
    assert with_tagset(wsj, "xpos") is wsj
    p = SHAGParser(method="spectral", n_states=3).fit(ud[:250])
    assert p.tag_column_ == "upos" and "AUX" in p.tags_.symbols and "VBZ" not in p.tags_.symbols
    q = SHAGParser(method="spectral", n_states=3, tag_column="xpos").fit(ud[:250])
    assert q.tag_column_ == "xpos" and "VBZ" in q.tags_.symbols
    pred = p.parse(ud[250:])
    assert all(s.is_tree() and s.xpos == g.xpos for s, g in zip(pred, ud[250:]))
    assert p.arc_posteriors(ud[260]).shape == (len(ud[260].words) + 1,) * 2
    path = tmp_path / "ud.npz"
    p.save(path)
    r = SHAGParser.load(path)
    assert r.tag_column_ == "upos"
    assert [s.heads for s in r.parse(ud[250:])] == [s.heads for s in pred]
    with pytest.raises(FormatError, match="UPOS"):      # a Malt-TAB sentence has no UPOS
        p.parse(wsj[:2])
    with pytest.raises(ValueError, match="tag_column"):
        SHAGParser(tag_column="fine").fit(ud[:5])
    # given tags replace the sentences' tags in the model's column: a Malt-TAB sentence (no
    # UPOS) parses with UPOS tags given, and the result equals parsing a UD copy of it
    tags = [list(s.upos) for s in ud[250:260]]
    plain = [DepSentence(words=list(s.words), xpos=list(s.xpos), heads=list(s.heads))
             for s in ud[250:260]]
    with pytest.raises(FormatError, match="UPOS"):
        p.parse(plain)
    got = p.parse(plain, tags=tags)
    assert [s.heads for s in got] == [s.heads for s in pred[:10]]
    assert all(s.xpos == g.xpos for s, g in zip(got, plain))       # the output keeps its tags
    assert [s.heads for s in p.parse(ud[250:260], tags=[None] * 10)] == \
        [s.heads for s in pred[:10]]
    with pytest.raises(ValueError, match="tags"):
        p.parse(plain, tags=tags[:3])
    with pytest.raises(ValueError, match="sentence 1"):
        p.parse(plain[:1], tags=[tags[0][:-1]])


def test_cli_errors_name_the_file(tmp_path, capsys):
    from fastspectral.cli import main

    bad = tmp_path / "cycle.conllu"
    bad.write_text("1\tThe\t_\tDT\tDT\t_\t2\tdet\t_\t_\n2\tdog\t_\tNN\tNN\t_\t1\troot\t_\t_\n\n")
    assert main(["train", "shag", str(bad), "-o", str(tmp_path / "m.npz"), "-q"]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:1: sentence 1: the heads contain a cycle" in err
    ud = tmp_path / "ud.conllu"
    with open(str(data_path("ud", "en_ewt-ud-dev.conllu"))) as fh:
        ud.write_text("\n\n".join(fh.read().split("\n\n")[:60]) + "\n\n")
    model = tmp_path / "ud.npz"
    assert main(["train", "shag", str(ud), "-o", str(model), "--states", "2", "-q"]) == 0
    dp = tmp_path / "x.dp"
    with open(WSJ) as fh:
        dp.write_text("\n\n".join(fh.read().split("\n\n")[:3]) + "\n\n")
    assert main(["parse", str(model), str(dp), "-o", str(tmp_path / "o.dp"), "-q"]) == 2
    assert f"{dp}:1: sentence 1: no UPOS tags" in capsys.readouterr().err


def test_cli_parses_unparsed_input(tmp_path):
    from fastspectral.cli import main

    train = tmp_path / "train.dp"
    with open(WSJ) as fh:
        train.write_text("\n\n".join(fh.read().split("\n\n")[:200]) + "\n\n")
    model = tmp_path / "m.npz"
    assert main(["train", "shag", str(train), "-o", str(model), "--states", "3", "-q"]) == 0
    raw = tmp_path / "raw.dp"                  # word<TAB>tag only: the input of a parser
    raw.write_text("The\tDT\nold\tJJ\ndog\tNN\nbarks\tVBZ\n.\t.\n\n")
    out = tmp_path / "out.dp"
    assert main(["parse", str(model), str(raw), "-o", str(out), "--format", "malttab",
                 "-q"]) == 0
    (s,) = read_malttab(out)
    assert s.words == ["The", "old", "dog", "barks", "."] and s.is_tree()
