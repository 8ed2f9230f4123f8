"""Tests of the compiled stage-1/stage-2 pieces of fastspectral.lexical (Shah et al. 2010) and
of the shape-analogy guesser of vocalised corpora."""
from __future__ import annotations

import numpy as np
import pytest

from fastspectral.lexical import engine as E
from fastspectral.lexical.analyser import SuffixGuesser, _vocalised_lemma_rule
from fastspectral.lexical.data import corpus_from_sentences
from fastspectral.lexical.candidates import candidates
from fastspectral.lexical.rankers import _stage2_rows
from fastspectral.lexical.training import train

from test_lexical import synthetic


def _prepared():
    lr = train(synthetic(300, 5), rankers=("M_uni",), C=1.0)
    corpus = corpus_from_sentences(synthetic(60, 6), False)
    F = lr.fs.transform(corpus.tokens, corpus.sent_starts)
    c = candidates(lr.tables, lr.space, lr.fs, lr.guesser, corpus.tokens, F)
    return lr, corpus, F, c


def test_tables_counts_equal_brute_force_counts():
    lr, *_ = _prepared()
    t = lr.tables
    sents = synthetic(300, 5)
    corpus = corpus_from_sentences(sents, False)
    F = lr.fs.transform(corpus.tokens, corpus.sent_starts)
    V = lr.space.lv[[lr.space.label_index[lab] for lab in corpus.labels]]
    rng = np.random.default_rng(0)
    for _ in range(200):
        col = int(rng.integers(F.shape[1]))
        m = int(rng.integers(V.shape[1]))
        i = int(rng.integers(len(corpus)))
        f, v = F[i, col], V[i, m]
        want = int(np.sum((F[:, col] == f) & (V[:, m] == v)))
        row = m * t.ftot + t.col_base[col] + f
        lo, hi = t.indptr[row], t.indptr[row + 1]
        got = dict(zip(t.indices[lo:hi].tolist(), t.counts[lo:hi].tolist())).get(int(v), 0)
        assert got == want
        assert t.fcount[t.col_base[col] + f] == int(np.sum(F[:, col] == f))


@pytest.mark.parametrize("centre", [True, False])
def test_design_matrix_times_lambda_is_the_eq6_score(centre):
    """The compiled design rows (stage 2) and the compiled scorer (prediction) agree: X @ lambda
    is eq. 6 (minus each token's mean when centred)."""
    lr, corpus, F, c = _prepared()
    spec = E.RankerSpec("t", -1, tuple(range(lr.space.n_targets)), (), False, 2)
    ptr, vals = E.row_values(c, -1, lr.space.n_targets)
    n_bins = 5
    rng = np.random.default_rng(1)
    lam, lam_doc = E.uniform_weights(spec, len(lr.cols), n_bins)
    lam = rng.normal(size=lam.shape)
    blocks = rng.integers(0, 2, len(ptr) - 1)
    X = E.design(lr.tables, F, lr.cols, ptr, vals, spec, n_bins, None, None, blocks, centre)
    ranker = E.Ranker(spec, lam, lam_doc * 0, 0.0)
    s = E.score(lr.tables, F, lr.cols, ptr, vals, ranker, n_bins, None, None, blocks)
    xs = X @ lam.ravel()
    if not centre:      # the scorer drops what is constant within a token: compare centred
        xs = E._centre(xs, ptr)
    assert np.allclose(xs, E._centre(s, ptr))
    # eq. 6 written out for a few rows: sum over (template, target) of lambda * beta*
    t = lr.tables
    g_col, g_target = E.groups(spec, lr.cols)
    ref = np.zeros(len(vals))
    for r in range(len(vals)):
        j = np.searchsorted(ptr, r, side="right") - 1
        for g, (col, m) in enumerate(zip(g_col, g_target)):
            f, v = F[j, col], vals[r, m]
            if f < 0 or v < 0:
                continue
            fr = t.col_base[col] + f
            n = t.fcount[fr]
            lo, hi = t.indptr[m * t.ftot + fr], t.indptr[m * t.ftot + fr + 1]
            c = dict(zip(t.indices[lo:hi].tolist(), t.counts[lo:hi].tolist())).get(int(v), 0)
            if n:
                cls = min(int(np.log2(n)), n_bins - 1)
                ref[r] += lam[blocks[j], g * n_bins + cls] * c / n
    assert np.allclose(E._centre(ref, ptr), E._centre(s, ptr))


def test_vocalised_lemma_rule_strips_prefix_and_suffix():
    rule = _vocalised_lemma_rule("اَلمُعَارِضِينَ", "مُعَارِض")
    assert rule == (3, 4, "", "")


def test_vocalised_guesser_transfers_pattern_and_lemma_rule():
    """An unknown vocalised word gets the vocalisation and lemma of training words of the same
    shape (same skeleton and ending), not its bare letters."""
    pairs = [("المعارضين", ("مُعَارِض", "ADJ", "A-----MP2D", "Case=Gen", "اَلمُعَارِضِينَ")),
             ("المقاتلين", ("مُقَاتِل", "ADJ", "A-----MP2D", "Case=Gen", "اَلمُقَاتِلِينَ"))]
    g = SuffixGuesser().fit(pairs, vocalised=True)
    out = g("المقاومين")
    assert ("مُقَاوِم", "ADJ", "A-----MP2D", "Case=Gen", "اَلمُقَاوِمِينَ") in out
    assert g("") == []


def test_stage2_rows_keep_ambiguous_tokens_with_one_gold():
    lr, corpus, F, c = _prepared()
    gold = lr.space.lv[[lr.space.label_index.get(lab, 0) for lab in corpus.labels]]
    keep, ptr, vals, y = _stage2_rows(c, -1, gold, lr.space.n_targets, "unknown",
                                      len(lr.scheme.names))
    assert len(keep) > 0 and np.all(np.diff(ptr) >= 2)
    for j in range(len(keep)):
        assert y[ptr[j]:ptr[j + 1]].sum() == 1.0


def test_templates_vectorised_equal_the_per_token_definition():
    from fastspectral.lexical.features import TEMPLATES, FeatureSpace
    sents = synthetic(40, 7)
    corpus = corpus_from_sentences(sents, False)
    toks, starts = corpus.tokens, list(corpus.sent_starts)
    fs = FeatureSpace.for_features(TEMPLATES).fit(toks, starts)
    F = fs.transform(toks, starts)
    sent_of = np.searchsorted(np.asarray(starts), np.arange(len(toks)), side="right") - 1
    for col, name in enumerate(fs.names):
        for i, t in enumerate(toks):
            first = i == starts[sent_of[i]]
            last = i == starts[sent_of[i] + 1] - 1
            nb = ("<s>" if first else toks[i - 1]) if name.startswith("Prev") else \
                ("</s>" if last else toks[i + 1])
            want = {"Freq": t, "Prefix2": t[:2], "Suffix2": t[-2:], "Suffix3": t[-3:],
                    "PrevWord": nb, "NextWord": nb}.get(name)
            if want is None:
                want = nb if nb in ("<s>", "</s>") else (nb[:1] if name.endswith("First")
                                                         else nb[-1:])
            assert fs.vocabs[col][F[i, col]] == want


def test_candidates_follow_the_tags_when_any_candidate_has_the_tag():
    lr, corpus, F, c = _prepared()
    j = corpus.tokens.index("can")
    tags = ["_"] * len(corpus)
    tags[j] = "MD"
    ct = candidates(lr.tables, lr.space, lr.fs, lr.guesser, corpus.tokens, F, tags=tags)
    got = [ct.overlay.label(int(k)) for k in ct.label[ct.ptr[j]:ct.ptr[j + 1]]]
    assert got and all(lab[2] == "MD" for lab in got)
    tags[j] = "NO-SUCH-TAG"     # no candidate has it: all are kept
    ct = candidates(lr.tables, lr.space, lr.fs, lr.guesser, corpus.tokens, F, tags=tags)
    assert np.array_equal(np.diff(ct.ptr), np.diff(c.ptr))
    assert np.array_equal(ct.label, c.label)


def test_vocalised_model_file_keeps_guesser_settings(tmp_path):
    """known_guesses, the chosen C and epsilon survive the model file, and the loaded model
    tags unknown words exactly as the fitted one."""
    from fastspectral.lexical import LexicalDisambiguator
    from fastspectral.lexical.data import undiacritize
    from fastspectral.trees.conll import DepSentence
    from test_lexical import arabic

    m = LexicalDisambiguator(known_guesses="yes").fit(arabic(200, 3))
    assert m.learned_.known_guesses and set(m.epsilon_) == set(m.C_)
    path = tmp_path / "ar.lex"
    m.save(path)
    m2 = LexicalDisambiguator.load(path)
    assert m2.learned_.known_guesses and m2.epsilon_ == m.epsilon_ and m2.C_ == m.C_
    raw = [DepSentence(words=["في", "البيوت"], heads=[-1, -1])] + \
        [DepSentence(words=[undiacritize(w) for w in s.words], heads=[-1] * len(s))
         for s in arabic(5, 9)]
    a, b = m.parse(raw), m2.parse(raw)
    assert [s.words for s in a] == [s.words for s in b]
    assert [s.lemmas for s in a] == [s.lemmas for s in b]
    with pytest.raises(ValueError, match="known_guesses"):
        LexicalDisambiguator(known_guesses="sometimes").fit(arabic(20, 3))


def test_without_inflections_is_the_plain_candidate_set():
    """Dropping the rows known_guesses added gives exactly the candidates built without them
    (what the inner choice compares)."""
    from test_lexical import _sent, arabic

    # an accusative of another noun: its shape is an unseen inflection of the known البيت
    acc = [_sent(["رَأَى", "اَلبَابَ"], ["رَأَى", "بَاب"], ["VERB", "NOUN"],
                 ["VP-A-3MS--", "N------S4D"],
                 ["Aspect=Perf|Person=3", "Case=Acc|Definite=Def|Number=Sing"],
                 [f"# orig_file_sentence ACC{k}#1"]) for k in range(6)]
    lr = train(arabic(200, 3) + acc, rankers=("M_full",), known_guesses="yes")
    corpus = corpus_from_sentences(arabic(40, 11), lr.vocalised)
    F = lr.fs.transform(corpus.tokens, corpus.sent_starts)
    yes = candidates(lr.tables, lr.space, lr.fs, lr.guesser, corpus.tokens, F,
                     vocalised=True, known_guesses=True)
    no = candidates(lr.tables, lr.space, lr.fs, lr.guesser, corpus.tokens, F,
                    vocalised=True, known_guesses=False)
    assert yes.inflected.any() and not yes.inflected[yes.ptr[:-1]].any()
    assert len(yes.label) > len(no.label)
    drop = yes.without_inflections()
    assert np.array_equal(drop.ptr, no.ptr) and np.array_equal(drop.label, no.label)
    assert np.array_equal(drop.lv, no.lv) and np.array_equal(drop.known, no.known)


def test_fast_inflections_equal_the_filtered_shape_guesses(shared_data):
    """SuffixGuesser.inflections (labels built only where the undiacritised lemma can match)
    gives exactly the guesses of _guess_shapes whose lemma is a lexicon lemma, in order."""
    from collections import defaultdict

    from fastspectral.trees.corpus import read_conllu_sentences as read_corpus

    sents = read_corpus(shared_data / "arabic" / "padt-v1.3-dev.conllu")
    c = corpus_from_sentences(sents[:300], True)
    pairs = sorted(set(zip(c.tokens, c.labels)))
    g = SuffixGuesser().fit(pairs, True)
    lemmas = defaultdict(set)
    for t, lab in pairs:
        lemmas[t].add(lab[0])
    n = 4 * g.max_vocalised_guesses
    found = 0
    for t in sorted(lemmas):
        if not t:
            continue
        want = [lab for lab in g._guess_shapes(t, n) if lab[0] in lemmas[t]]
        assert g.inflections(t, lemmas[t]) == want, t
        found += len(want)
    assert found > len(lemmas)


# ------------------------------------------------------------------------------------------
# speed measures that must not change the results (docs/notes/lexical.md, "Speed")
# ------------------------------------------------------------------------------------------
def test_inner_choice_memo_gives_the_results_of_fresh_fits(monkeypatch):
    """The inner choices share design matrices, SVR fits and inner errors whose inputs are
    equal (content-keyed memo): the scores, choices and final weights equal those of a fit in
    which every key is new (no memo hit), and the memo does save fits."""
    import itertools

    import fastspectral.lexical.rankers as rankers
    from fastspectral.lexical.model import LexicalDisambiguator
    from test_lexical import arabic

    sents = arabic(160, 4)
    calls = []
    real_fit = E.fit_lambda

    def counting(*a, **k):
        calls.append(1)
        return real_fit(*a, **k)

    monkeypatch.setattr(E, "fit_lambda", counting)
    m = LexicalDisambiguator().fit(sents)
    n_memo = len(calls)
    calls.clear()
    fresh = itertools.count()
    monkeypatch.setattr(rankers, "_digest", lambda *a: next(fresh))   # never the same key
    m2 = LexicalDisambiguator().fit(sents)
    assert n_memo < len(calls)
    for attr in ("known_guesses_", "known_guesses_scores_", "graded_", "graded_scores_",
                 "unknown_weights_", "unknown_weights_scores_", "C_", "epsilon_"):
        assert getattr(m, attr) == getattr(m2, attr), attr
    for k in m.lambdas_:
        assert all(np.array_equal(a, b) for a, b in zip(m.lambdas_[k][:2], m2.lambdas_[k][:2]))
        assert m.lambdas_[k][2] == m2.lambdas_[k][2]


def test_candidate_lists_are_the_candidates_of_every_token():
    """predict_labels' "_candidates" (built on demand) lists every token's candidate labels in
    candidate order, as a sequence (indexing, negative indices, slices, iteration)."""
    from fastspectral.lexical.model import predict_labels

    lr, corpus, F, c = _prepared()
    out = predict_labels(lr, corpus, ["unigram"])
    lists = out["_candidates"]
    ov = c.overlay
    want = [[ov.label(int(k)) for k in c.label[c.ptr[j]:c.ptr[j + 1]]]
            for j in range(len(corpus))]
    assert len(lists) == len(want) and list(lists) == want
    assert lists[-1] == want[-1] and lists[2:5] == want[2:5]
    with pytest.raises(IndexError):
        lists[len(want)]
    first, second = out["unigram"]
    assert first == [w[0] for w in want]
    assert second == [w[1] if len(w) > 1 else None for w in want]


def test_apply_labels_misc_keeps_other_items_and_replaces_lexalt():
    from fastspectral.lexical.data import apply_labels, encode_alt
    from fastspectral.trees.conll import DepSentence

    lab = ("dog", "NOUN", "NN", "Number=Sing", "")
    alt = ("dog", "VERB", "VB", "_", "")
    s = DepSentence(words=["dog", "dog", "dog", "dog"], heads=[0, 1, 1, -1],
                    misc=["_", "SpaceAfter=No", "A=1|LexAlt=old|B=2", "LexAltX=1"])
    out = apply_labels(s, [lab] * 4, [alt, alt, alt, None], False)
    new = "LexAlt=" + encode_alt(alt)
    assert out.misc == [new, "SpaceAfter=No|" + new, "A=1|B=2|" + new, "LexAltX=1"]
    assert out.lemmas == ["dog"] * 4 and out.upos == ["NOUN"] * 4
    assert out.heads == [0, 1, 1, 0]


def test_compiled_document_scores_equal_the_sparse_products():
    """Tables.doc_scores (compiled, one dense row of S @ C per query document) gives exactly
    the floating-point numbers of the scipy.sparse block products it replaced, rows in any
    order, values outside the table 0."""
    from test_lexical import arabic

    lr = train(arabic(120, 2), rankers=("M_full",), C=1.0, epsilon=0.1,
               known_guesses="no", graded="no", unknown_weights="no")
    corpus = corpus_from_sentences(arabic(40, 9), lr.vocalised)
    F = lr.fs.transform(corpus.tokens, corpus.sent_starts)
    S, qloc = lr.tables.doc_similarity(F[:, 0], np.asarray(corpus.docs))
    rng = np.random.default_rng(3)
    assert lr.tables.doc_values
    for m, cm in lr.tables.doc_values.items():
        q = rng.integers(0, S.shape[0], 3000)
        v = rng.integers(-2, cm.shape[1] + 3, 3000)
        got = lr.tables.doc_scores(m, S, q, v)
        want = lr.tables.doc_scores_reference(m, S, q, v, block=3)
        assert np.array_equal(got, want) and (got != 0).any()
        assert np.all(got[(v < 0) | (v >= cm.shape[1])] == 0)


def test_apply_labels_vocalised_input_form_and_empty_misc():
    """Vocalised models: FORM becomes the label's vocalised form, the input FORM goes to MISC
    InputForm= (before LexAlt=, after the input's other items); an old InputForm is dropped;
    an unchanged FORM adds nothing; an empty MISC without a second choice stays "_"."""
    from fastspectral.lexical.data import apply_labels, encode_alt
    from fastspectral.trees.conll import DepSentence

    lab = ("kataba", "VERB", "VP", "_", "kataba")
    same = ("ktb", "X", "X", "_", "ktb")
    alt = ("kutub", "NOUN", "NN", "_", "kutub")
    s = DepSentence(words=["ktb", "ktb", "ktb", "ktb", "ktb"], heads=[0, 1, 1, 1, 1],
                    misc=["_", "A=1", "InputForm=x|B=2", "", "_"])
    out = apply_labels(s, [lab, lab, lab, same, lab], [alt, alt, None, None, None], True)
    new = "LexAlt=" + encode_alt(alt)
    assert out.words == ["kataba", "kataba", "kataba", "ktb", "kataba"]
    assert out.misc == ["InputForm=ktb|" + new, "A=1|InputForm=ktb|" + new,
                        "B=2|InputForm=ktb", "_", "InputForm=ktb"]
    assert out.feats == ["_"] * 5 and out.lemmas[3] == "ktb"


def test_gc_paused_restores_the_collector():
    import gc

    from fastspectral.lexical.data import gc_paused

    assert gc.isenabled()
    with pytest.raises(RuntimeError):
        with gc_paused():
            assert not gc.isenabled()
            raise RuntimeError
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()       # left as it was
    finally:
        gc.enable()


def test_lazy_guesser_is_fitted_on_first_use_and_equals_the_eager_one():
    import pickle

    from test_lexical import arabic

    from fastspectral.lexical.analyser import SuffixGuesser
    from fastspectral.lexical.candidates import _guesser_pairs, _LazyGuesser

    lr = train(arabic(120, 2), rankers=("M_full",), C=1.0, epsilon=0.1,
               known_guesses="no", graded="no", unknown_weights="no")
    lazy = lr.guesser
    assert isinstance(lazy, _LazyGuesser) and lazy._fitted is None
    lazy = pickle.loads(pickle.dumps(lazy))
    eager = SuffixGuesser().fit(_guesser_pairs(lr.tables, lr.fs, lr.space), lr.vocalised)
    words = lr.fs.vocabs[0][:40] + ["zzqq", "kataba", ""]
    assert [lazy(w) for w in words] == [eager(w) for w in words]
    lemmas = {lab[0] for lab in lr.space.labels[:50]}
    assert [lazy.inflections(w, lemmas) for w in words] == \
        [eager.inflections(w, lemmas) for w in words]
    assert lazy._fitted is not None and lazy.vocalised == eager.vocalised
