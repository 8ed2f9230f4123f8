"""Tests of the lexical disambiguator (fastspectral.lexical, Shah et al. 2010) and the
``fastspectral lexical`` command group."""
from __future__ import annotations

import numpy as np
import pytest

from fastspectral.errors import FormatError
from fastspectral.lexical.data import (LabelScheme, corpus_from_sentences,
                                       decode_alt, encode_alt, revocalize,
                                       undiacritize, vocal_pattern)
from fastspectral.lexical.metrics import coverage, evaluate
from fastspectral.lexical.model import LexicalDisambiguator, candidates, train
from fastspectral.trees.conll import DepSentence, read_conllu, write_conllu
from fastspectral.trees.corpus import read_tagging_input


def lex_main(argv):
    from fastspectral.cli import main
    return main(["lexical"] + [str(a) for a in argv])


# ------------------------------------------------------------------------------------------
# a synthetic corpus whose labels are known: the label of an ambiguous word is set by its
# neighbour, so context (M_full) must beat the most frequent label (unigram)
# ------------------------------------------------------------------------------------------
VERBS = ["fish", "swim", "run", "walk", "sing"]
NOUNS = ["opener", "lid", "top", "label", "crusher"]
SUBJ = ["they", "we", "you", "dogs"]
DETS = ["a", "the", "this"]


def _sent(words, lemmas, upos, xpos, feats, comments=()):
    n = len(words)
    return DepSentence(words=words, lemmas=lemmas, upos=upos, xpos=xpos, feats=feats,
                       heads=[0] + [1] * (n - 1), comments=list(comments))


def synthetic(n, seed, doc_every=10):
    """Sentences 'SUBJ can VERB' (can = AUX, 60 %) or 'DET can NOUN' (can = NOUN), and
    'I saw DET NOUN' (saw = VERB, past) / 'the saw cuts' (saw = NOUN): the label of 'can'
    is given by the next word, the label of 'saw' by the previous one."""
    rng = np.random.default_rng(seed)
    out = []
    for k in range(n):
        com = [f"# newdoc id = d{k // doc_every}"] if k % doc_every == 0 else []
        r = rng.random()
        if r < 0.45:
            s, v = rng.choice(SUBJ), rng.choice(VERBS)
            out.append(_sent([s, "can", v], [s, "can", v], ["PRON", "AUX", "VERB"],
                             ["PRP", "MD", "VB"], ["_", "VerbForm=Fin", "VerbForm=Inf"], com))
        elif r < 0.75:
            d, nn = rng.choice(DETS), rng.choice(NOUNS)
            out.append(_sent([d, "can", nn], [d, "can", nn], ["DET", "NOUN", "NOUN"],
                             ["DT", "NN", "NN"], ["_", "Number=Sing", "Number=Sing"], com))
        elif r < 0.9:
            d, nn = rng.choice(DETS), rng.choice(NOUNS)
            out.append(_sent(["I", "saw", d, nn], ["I", "see", d, nn],
                             ["PRON", "VERB", "DET", "NOUN"], ["PRP", "VBD", "DT", "NN"],
                             ["Case=Nom", "Tense=Past", "_", "Number=Sing"], com))
        else:
            out.append(_sent(["the", "saw", "cuts"], ["the", "saw", "cut"],
                             ["DET", "NOUN", "VERB"], ["DT", "NN", "VBZ"],
                             ["_", "Number=Sing", "Tense=Pres"], com))
    return out


# Arabic-like: the same undiacritised token, vocalised by the previous word
def arabic(n, seed):
    rng = np.random.default_rng(seed)
    out = []
    for k in range(n):
        com = [f"# orig_file_sentence DOC{k // 8}#{k % 8 + 1}"]
        if rng.random() < 0.6:   # preposition + genitive
            out.append(_sent(["فِي", "اَلبَيتِ"], ["فِي", "بَيت"], ["ADP", "NOUN"],
                             ["P---------", "N------S2D"],
                             ["AdpType=Prep", "Case=Gen|Definite=Def|Number=Sing"], com))
        else:                    # verb + nominative subject
            out.append(_sent(["كَتَبَ", "اَلبَيتُ"], ["كَتَب", "بَيت"], ["VERB", "NOUN"],
                             ["VP-A-3MS--", "N------S1D"],
                             ["Aspect=Perf|Person=3", "Case=Nom|Definite=Def|Number=Sing"],
                             com))
    return out


@pytest.fixture(scope="module")
def synth():
    return synthetic(400, 1), synthetic(120, 2)


@pytest.fixture(scope="module")
def fitted(synth):
    return LexicalDisambiguator(C=1.0).fit(synth[0])


def _labels(sents):
    return corpus_from_sentences(sents, False).labels


# ------------------------------------------------------------------------------------------
# data: undiacritisation, labels, label elements
# ------------------------------------------------------------------------------------------
def test_undiacritize_removes_exactly_the_diacritics_and_tatweel():
    marks = "".join(chr(c) for c in range(0x064B, 0x0653)) + "\u0670" + "\u0640"
    assert undiacritize("ك" + marks + "تب") == "كتب"
    # letters, hamza forms, maddah (U+0653, not listed) and Latin text are kept
    keep = "أإآءؤئ\u0653abc١٢"
    assert undiacritize(keep) == keep
    assert undiacritize("مَجمُوعَةٌ") == "مجموعة"
    assert undiacritize("اَلأَمِيرِكِيِّينَ") == "الأميركيين"
    assert undiacritize("عــربي") == "عربي"            # tatweel


def test_vocal_pattern_round_trip():
    for form in ("مَجمُوعَةٌ", "اَلبَيتِ", "كتب", "١٥"):
        pat = vocal_pattern(form)
        assert revocalize(undiacritize(form), pat) == form
    assert vocal_pattern("كَتَبَ") == "·َ·َ·َ"
    assert revocalize("كتاب", vocal_pattern("كَتَبَ")) == "كتاب"   # wrong length: unchanged


def test_label_factoring_positional_xpos_feats_and_vocalization():
    labels = {("بَيت", "NOUN", "N------S2D", "Case=Gen|Definite=Def|Number=Sing", "اَلبَيتِ"),
              ("كَتَب", "VERB", "VP-A-3MS--", "Aspect=Perf|Person=3", "كَتَبَ")}
    sch = LabelScheme.from_labels(labels, vocalised=True)
    # positions whose character never varies (2, 4, 7) are not LEs
    assert sch.xpos_positions == [0, 1, 3, 5, 6, 8, 9]
    assert sch.names == ["Lemma", "UPOS", "XPOS[0]", "XPOS[1]", "XPOS[3]", "XPOS[5]",
                         "XPOS[6]", "XPOS[8]", "XPOS[9]", "Aspect", "Case",
                         "Definite", "Number", "Person", "Vocalization"]
    el = dict(zip(sch.names, sch.elements(sorted(labels)[0])))
    assert el["Lemma"] == "بَيت" and el["UPOS"] == "NOUN" and el["XPOS[8]"] == "2"
    assert el["Case"] == "Gen" and el["Aspect"] == "" and el["Vocalization"] == "·َ··َ··ِ"
    assert sch.morph(sorted(labels)[0]) == sorted(labels)[0][1:]
    assert LabelScheme.from_meta(sch.to_meta()) == sch
    # a tagset of varied lengths: one XPOS element; no vocalization
    sch2 = LabelScheme.from_labels({("a", "DET", "DT", "_", ""),
                                    ("can", "AUX", "MD", "VerbForm=Fin", "")}, False)
    assert sch2.names == ["Lemma", "UPOS", "XPOS", "VerbForm"]


def test_alt_label_encoding_round_trip():
    lab = ("a|b=c", "X", "N%09", "Case=Gen|Number=Sing", "اَل بَيتِ")
    enc = encode_alt(lab)
    assert "|" not in enc and "=" not in enc and " " not in enc
    assert decode_alt(enc) == lab


# ------------------------------------------------------------------------------------------
# candidate sets (eq. 9), coverage, metrics
# ------------------------------------------------------------------------------------------
def test_candidate_sets_and_coverage_bound(synth):
    train_s, test_s = synth
    lr = train(train_s, rankers=(), C=1.0)
    corpus = corpus_from_sentences(test_s + [_sent(["a", "CAN", "zzzed"], ["a", "can", "zzz"],
                                                   ["DET", "NOUN", "VERB"], ["DT", "NN", "VBD"],
                                                   ["_"] * 3)], False)
    F = lr.fs.transform(corpus.tokens, corpus.sent_starts)
    c = candidates(lr.tables, lr.space, lr.fs, lr.guesser, corpus.tokens, F)
    sets = [[c.overlay.label(int(k)) for k in c.label[c.ptr[j]:c.ptr[j + 1]]]
            for j in range(len(corpus))]
    seen = {}
    for lab, tok in zip(_labels(train_s), corpus_from_sentences(train_s, False).tokens):
        seen.setdefault(tok, {}).setdefault(lab, 0)
        seen[tok][lab] += 1
    j = corpus.tokens.index("can")
    # eq. 9: exactly the labels seen with the token, the most frequent first
    assert set(sets[j]) == set(seen["can"])
    assert sets[j][0] == max(seen["can"], key=seen["can"].get)
    assert c.known[j]
    # a token seen only in lower case gets the lower-case token's labels; an unknown token
    # gets the suffix guesser's analyses (lemma by the ending rule)
    assert set(sets[-2]) == set(seen["can"]) and c.known[-2]
    assert not c.known[-1] and all(lab[0].startswith("zzz") for lab in sets[-1])
    # coverage: gold among the candidates; it bounds A1 and A2 of every model
    gold = corpus.labels
    cov = coverage(gold, sets)
    assert 0.9 < cov < 1.0
    assert cov == pytest.approx(np.mean([g in s for g, s in zip(gold, sets)]))
    # an analyser's answers join the candidate set of every token
    c2 = candidates(lr.tables, lr.space, lr.fs, lr.guesser, corpus.tokens, F,
                    analyser=lambda t: [{"lemma": t + "!", "upos": "X"}] if t == "can" else [])
    extra = [c2.overlay.label(int(k)) for k in c2.label[c2.ptr[j]:c2.ptr[j + 1]]]
    assert extra[-1] == ("can!", "X", "_", "_", "") and len(extra) == len(sets[j]) + 1


def test_metrics_a1_a2_e1_e2():
    g = [("a",) * 5, ("b",) * 5, ("c",) * 5, ("d",) * 5]
    first = [g[0], g[0], g[2], g[0]]
    second = [None, g[1], g[0], None]
    sc = evaluate(g, first, second)
    assert sc.a1 == 0.5 and sc.a2 == 0.75
    assert sc.e1 == pytest.approx(50.0) and sc.e2 == pytest.approx(25.0)
    assert evaluate(g, first).a2 is None
    with pytest.raises(ValueError):
        evaluate(g, first[:2])


# ------------------------------------------------------------------------------------------
# the models
# ------------------------------------------------------------------------------------------
def test_full_model_beats_the_unigram_baseline_where_context_decides(synth, fitted):
    train_s, test_s = synth
    gold = _labels(test_s)
    corpus = corpus_from_sentences(test_s, False)
    unigram = LexicalDisambiguator(variant="unigram").fit(train_s)
    a_uni = evaluate(gold, *unigram.predict_corpus(corpus)[:2]).a1
    full = evaluate(gold, *fitted.predict_corpus(corpus)[:2])
    # 'can' is AUX in 60 % of its sentences: the unigram model gets only those right
    assert full.a1 > 0.99 and a_uni < 0.9
    assert full.a2 == 1.0
    # every model of table 5 runs; M_baseline and M_ind also use the context
    for variant in ("uni", "baseline", "ind"):
        m = LexicalDisambiguator(variant=variant, C=1.0).fit(train_s)
        first, second, _ = m.predict_corpus(corpus)
        assert evaluate(gold, first, second).a1 > a_uni, variant


def test_parse_fills_columns_and_save_load_gives_identical_output(synth, fitted, tmp_path):
    import fastspectral

    _, test_s = synth
    bare = [DepSentence(words=s.words, heads=s.heads, comments=s.comments) for s in test_s]
    out = fitted.parse(bare)
    assert [o.upos for o in out[:3]] == [s.upos for s in test_s[:3]]
    assert all(o.lemmas == s.lemmas and o.feats == s.feats for o, s in zip(out, test_s))
    path = tmp_path / "m.lex"
    fitted.save(path)
    loaded = fastspectral.load(path)
    again = loaded.parse(bare)
    assert [s.to_conllu() for s in again] == [s.to_conllu() for s in out]
    assert loaded.get_params() == fitted.get_params()
    # tags restrict the candidates: 'can' forced to NOUN
    tagged = fitted.parse([bare[0]], tags=[["_", "NOUN", "_"]])
    assert tagged[0].upos[1] == "NOUN"


def test_vocalised_corpus_undiacritised_tokens_and_vocalised_output(tmp_path):
    data = arabic(200, 3)
    m = LexicalDisambiguator(C=1.0).fit(data)
    assert m.vocalised_ and "Vocalization" in m.label_elements_
    raw = [DepSentence(words=[undiacritize(w) for w in s.words], heads=[-1] * len(s))
           for s in arabic(30, 4)]
    out = m.parse(raw)
    gold = arabic(30, 4)
    assert [o.words for o in out] == [g.words for g in gold]     # vocalised by context
    assert [o.feats for o in out] == [g.feats for g in gold]
    assert all(o.heads == [0, 0] for o in out)
    assert "InputForm=" in out[0].misc[1]


def test_parameter_and_input_errors(synth):
    train_s, _ = synth
    for bad in ({"variant": "best"}, {"split": 1.0}, {"C": 0}, {"features": "Freq,Nope"},
                {"frequency_classes": 0}, {"unknown": "x"}, {"analyser": 3}, {"loss": "l1"}):
        with pytest.raises((ValueError, TypeError)) as err:
            LexicalDisambiguator(**bad).fit(train_s)
        assert "\n" not in str(err.value)
    # the numeric hyperparameters go through the base's checks (bools, NaN refused; names)
    for bad, name in (({"split": 0.0}, "split"), ({"split": float("nan")}, "split"),
                      ({"C": -1.0}, "C"), ({"C": True}, "C"), ({"epsilon": -0.5}, "epsilon"),
                      ({"frequency_classes": 31}, "frequency_classes"),
                      ({"frequency_classes": 2.0}, "frequency_classes"),
                      ({"iterations": 0}, "iterations"), ({"iterations": True}, "iterations")):
        with pytest.raises(ValueError, match=f"^{name} must be") as err:
            LexicalDisambiguator(**bad)._validate_params()
        assert "\n" not in str(err.value)
    LexicalDisambiguator(C=None, epsilon=None, frequency_classes=np.int64(30))._validate_params()
    blank = [DepSentence(words=["a", "b"], heads=[0, 1], line=7)]
    with pytest.raises(FormatError, match="line 7: word 1 .* no LEMMA"):
        LexicalDisambiguator().fit(blank)
    with pytest.raises(TypeError):
        LexicalDisambiguator().fit([["a", "b"]])
    with pytest.raises(TypeError):
        LexicalDisambiguator().fit(train_s).parse("a sentence")


def test_cross_validation_folds_are_whole_documents(synth):
    from fastspectral.lexical.cv import fold_indices

    sents = synth[0]
    parts = fold_indices(sents, 4)
    assert sorted(i for p in parts for i in p) == list(range(len(sents)))
    for p in parts:
        assert p == list(range(p[0], p[-1] + 1))
        assert p[0] % 10 == 0                    # a new document every 10 sentences
    with pytest.raises(ValueError):
        fold_indices(sents[:3], 4)


# ------------------------------------------------------------------------------------------
# the command line
# ------------------------------------------------------------------------------------------
def test_cli_train_tag_eval_cv_round_trip(tmp_path, capsys, synth):
    train_f = tmp_path / "train.conllu"
    gold_f = tmp_path / "gold.conllu"
    write_conllu(arabic(160, 5), train_f)
    write_conllu(arabic(40, 6), gold_f)
    model = tmp_path / "m.lex"
    assert lex_main(["train", train_f, "-o", model, "--C", "1", "-q"]) == 0
    # CoNLL-U input with LEMMA/XPOS/FEATS '_' and HEAD '_'
    bare = tmp_path / "bare.conllu"
    bare.write_text("".join(
        "".join(f"{i + 1}\t{undiacritize(w)}\t_\t_\t_\t_\t_\t_\t_\t_\n"
                for i, w in enumerate(s.words)) + "\n" for s in arabic(40, 6)),
        encoding="utf-8")
    out = tmp_path / "out.conllu"
    assert lex_main(["tag", model, bare, "-o", out, "-q"]) == 0
    tagged = list(read_conllu(out, heads_optional=True))
    gold = list(read_conllu(gold_f))
    assert [t.words for t in tagged] == [g.words for g in gold]
    assert [t.lemmas for t in tagged] == [g.lemmas for g in gold]
    assert all(h == -1 for t in tagged for h in t.heads)         # HEAD stays '_'
    capsys.readouterr()
    assert lex_main(["eval", gold_f, out]) == 0
    report = capsys.readouterr().out
    assert "A1 100.00%" in report and "E1 0.00" in report and "Vocalization" in report
    # plain-text input: one sentence a line
    text = tmp_path / "in.txt"
    text.write_text("في البيت\nكتب البيت\n", encoding="utf-8")
    assert lex_main(["tag", model, text, "-q"]) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln and ln[0].isdigit()]
    assert [ln.split("\t")[1] for ln in lines] == ["فِي", "اَلبَيتِ", "كَتَبَ", "اَلبَيتُ"]
    # cross-validation: one line per model of table 5, name then E1 and E2
    eng = tmp_path / "eng.conllu"
    write_conllu(synth[0][:150], eng)
    assert lex_main(["cv", eng, "--folds", "3", "--C", "1", "-q", "--json",
                     tmp_path / "cv.json"]) == 0
    rep = capsys.readouterr().out
    rows = {ln.split()[0]: ln.split() for ln in rep.splitlines() if ln.startswith(("M_", "uni"))}
    assert set(rows) == {"M_full", "M_uni", "M_baseline", "M_ind", "unigram"}
    for r in rows.values():
        float(r[1]), float(r[2])
    assert "coverage upper bound" in rep and "Lemma" in rep
    import json
    assert json.loads((tmp_path / "cv.json").read_text())["folds"] == 3
    # the generic parse command reads the registry's dependency kind
    from fastspectral.cli import main
    parsed = tmp_path / "parsed.conllu"
    assert main(["parse", str(model), str(bare), "-o", str(parsed), "-q"]) == 0
    assert [s.lemmas for s in read_conllu(parsed)] == [g.lemmas for g in gold]


def test_tag_reads_malttab_and_refuses_ptb(tmp_path, capsys):
    """``lexical tag`` on Malt-TAB reads its sentences (not a sentence per line); a PTB
    treebank is refused with one line naming the file, as ``parse`` refuses it."""
    from fastspectral.trees.conll import write_malttab

    train_f = tmp_path / "train.conllu"
    write_conllu(arabic(160, 5), train_f)
    model = tmp_path / "m.lex"
    assert lex_main(["train", train_f, "-o", model, "--C", "1", "-q"]) == 0
    gold = arabic(30, 6)
    malt = tmp_path / "in.dp"
    bare = [DepSentence(words=[undiacritize(w) for w in s.words], xpos=list(s.xpos),
                        heads=list(s.heads), rels=["dep"] * len(s)) for s in gold]
    write_malttab(bare, malt)
    out = tmp_path / "out.conllu"
    capsys.readouterr()
    assert lex_main(["tag", model, malt, "-o", out]) == 0
    assert "tagged 60 tokens in 30 sentences" in capsys.readouterr().err
    tagged = list(read_conllu(out))
    assert [t.words for t in tagged] == [g.words for g in gold]
    assert [t.lemmas for t in tagged] == [g.lemmas for g in gold]
    assert [t.heads for t in tagged] == [g.heads for g in gold]
    sents, is_treebank = read_tagging_input(malt)
    assert is_treebank and len(sents) == 30
    ptb = tmp_path / "t.mrg"
    ptb.write_text("(S (NP (NN a)) (VP (VB b)))\n")
    assert lex_main(["tag", model, ptb, "-o", tmp_path / "x.conllu"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and str(ptb) in err and "PTB" in err, err
    assert not (tmp_path / "x.conllu").exists()


def test_cli_bad_input_gives_one_line_errors(tmp_path, capsys):
    bad = tmp_path / "bad.conllu"
    bad.write_text("1\tword\tlemma\tNOUN\n\n", encoding="utf-8")
    assert lex_main(["train", bad, "-o", tmp_path / "m.lex"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "bad.conllu:1" in err and "columns" in err
    good = tmp_path / "good.conllu"
    write_conllu(arabic(30, 1), good)
    other = tmp_path / "other.conllu"
    write_conllu(arabic(30, 2)[:29] + [_sent(["x", "y"], ["x", "y"], ["X", "X"], ["_", "_"],
                                              ["_", "_"])], other)
    assert lex_main(["eval", good, other]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "other.conllu" in err and "does not match" in err
    assert lex_main(["tag", tmp_path / "missing.lex", good]) == 2
    assert "model file not found" in capsys.readouterr().err
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n", encoding="utf-8")
    with pytest.raises(FormatError, match="empty"):
        read_tagging_input(str(empty))


@pytest.mark.slow
def test_padt_sample_round_trip(shared_data):
    """A few hundred PADT sentences: training, tagging, and the vocalised output."""
    from fastspectral.trees.corpus import read_conllu_sentences

    sents = read_conllu_sentences(shared_data / "arabic" / "padt-v1.3-dev.conllu")
    train_s, test_s = sents[:300], sents[300:340]
    m = LexicalDisambiguator(C=0.1).fit(train_s)       # speed: benchmarks/bench_lexical.py
    assert m.vocalised_ and "Case" in m.label_elements_
    out = m.parse([DepSentence(words=[undiacritize(w) for w in s.words], heads=s.heads,
                               comments=s.comments) for s in test_s])
    gold = corpus_from_sentences(test_s, True).labels
    pred = corpus_from_sentences(out, True).labels
    acc = np.mean([g == p for g, p in zip(gold, pred)])
    assert 0.4 < acc < 1.0
    assert all(undiacritize(o) == undiacritize(g) for s, t in zip(out, test_s)
               for o, g in zip(s.words, t.words))


def test_known_guesses_inner_is_chosen_on_the_training_data_and_recorded():
    """known_guesses="inner" (the default): the choice comes from an inner split of the
    training sentences (the second half of the stage-2 tokens of both directions), is recorded
    in known_guesses_ / known_guesses_scores_ and the model file, and the model is the one
    fitted with that setting given explicitly."""
    from fastspectral.lexical.training import _split_point

    sents = arabic(200, 3)
    m = LexicalDisambiguator().fit(sents)
    sc = m.known_guesses_scores_
    assert set(sc) == {"no", "yes", "tokens"}
    assert m.known_guesses_ == (sc["yes"] < sc["no"])
    corpus = corpus_from_sentences(sents, True)
    cut = corpus.sent_starts[_split_point(corpus, 0.5)]
    n = len(corpus)
    assert sc["tokens"] == (n - cut) - (n - cut) // 2 + cut - cut // 2
    m2 = LexicalDisambiguator(known_guesses="yes" if m.known_guesses_ else "no").fit(sents)
    assert m2.known_guesses_scores_ is None and m2.known_guesses_ == m.known_guesses_
    for k in m.lambdas_:
        assert np.array_equal(m.lambdas_[k][0], m2.lambdas_[k][0])
    # the uni variant (no stage 2 of its own) still chooses with M_full
    assert LexicalDisambiguator(variant="uni").fit(sents).known_guesses_scores_ == sc


def test_cross_validation_chooses_the_inner_settings_inside_each_training_fold(monkeypatch):
    """Every fold's choices (known_guesses, graded targets, unknown-token weights) are made
    by train() on that fold's training sentences only: each inner choice sees exactly the
    training tokens, never a held-out sentence; each fold's choice is reported."""
    import fastspectral.lexical.cv as cvmod
    import fastspectral.lexical.inner_cv as inner_cv
    import fastspectral.lexical.training as training

    sents = arabic(120, 5)
    seen, sizes, asked = [], [], []
    real_train, real_choose = cvmod.train, training._choose_settings

    def spy_train(train_sents, **kw):
        seen.append({id(s) for s in train_sents})
        sizes.append([])
        asked.append([])
        return real_train(train_sents, **kw)

    def spy_choose(inner, options):
        sizes[-1].append(sum(len(d[2]) for d in inner.dirs))
        asked[-1].append(tuple(options))
        return real_choose(inner, options)

    monkeypatch.setattr(cvmod, "train", spy_train)
    monkeypatch.setattr(training, "_choose_settings", spy_choose)      # graded, weights
    monkeypatch.setattr(inner_cv, "_choose_settings", spy_choose)      # known_guesses
    res = cvmod.cross_validate(sents, 3, features="table3")
    parts = cvmod.fold_indices(sents, 3)
    assert len(seen) == len(sizes) == 3 == len(res["known_guesses_folds"])
    for ids, test_ids, size, opts in zip(seen, parts, sizes, asked):
        assert not ids & {id(sents[i]) for i in test_ids}
        n_train = sum(len(s) for i, s in enumerate(sents) if i not in set(test_ids))
        assert size == [n_train] * 3
        assert opts == [("no", "yes"), training.GRADED_GRID, training.UNKNOWN_WEIGHTS_GRID]
    for k in res["known_guesses_folds"]:
        sc = k["inner_E1"]
        assert k["known_guesses"] == (sc["yes"] < sc["no"])
        g = k["graded_inner_E1"]
        assert k["graded"] == min(training.GRADED_GRID, key=lambda o: (g[o], o != "no"))
        u = k["unknown_weights_inner_E1"]
        assert k["unknown_weights"] == (u["yes"] < u["no"])
    report = cvmod.format_report(res, per_le=False)
    assert "graded targets per fold: " + " ".join(k["graded"] for k in res["known_guesses_folds"]) \
        in report
    assert "unknown_weights per fold: " in report


def test_inner_choice_takes_the_lowest_inner_e1_ties_to_the_first_option():
    """_choose_settings: the option with the lowest inner E1, ties to the earlier (simpler)
    option, with every score and the token count recorded."""
    from fastspectral.lexical.inner_cv import _choose_settings

    class Fake:
        tokens = 7

        def __init__(self, e1):
            self.e1, self.calls = e1, []

        def __call__(self, kg, graded, uw):
            self.calls.append((kg, graded, uw))
            return self.e1[(kg, graded, uw)]

    opts = {"no": (False, "no", True), "unknown": (False, "unknown", True)}
    tie = Fake({(False, "no", True): 3.0, (False, "unknown", True): 3.0})
    assert _choose_settings(tie, opts) == ("no", {"no": 3.0, "unknown": 3.0, "tokens": 7})
    better = Fake({(False, "no", True): 3.0, (False, "unknown", True): 2.5})
    assert _choose_settings(better, opts)[0] == "unknown"
    assert better.calls == list(opts.values())


def test_graded_and_unknown_weights_inner_are_chosen_on_the_training_data_and_recorded(
        tmp_path):
    """graded="inner" / unknown_weights="inner" (the defaults): the choice is the inner
    argmin, is recorded in graded_ / unknown_weights_ (+ scores) and the model file, and the
    model equals the one fitted with those settings given explicitly."""
    from fastspectral.lexical.model import GRADED_GRID

    sents = arabic(200, 3)
    m = LexicalDisambiguator().fit(sents)
    g, u = m.graded_scores_, m.unknown_weights_scores_
    assert set(g) == set(GRADED_GRID) | {"tokens"} and set(u) == {"no", "yes", "tokens"}
    assert g["tokens"] == u["tokens"] == m.known_guesses_scores_["tokens"]
    assert m.graded_ == min(GRADED_GRID, key=lambda o: (g[o], o != "no"))
    assert m.unknown_weights_ == (u["yes"] < u["no"])
    assert all(r.spec.blocks == (2 if m.unknown_weights_ else 1)
               for r in m.learned_.rankers.values() if not r.spec.uniform)
    m2 = LexicalDisambiguator(known_guesses="yes" if m.known_guesses_ else "no",
                              graded=m.graded_,
                              unknown_weights="yes" if m.unknown_weights_ else "no").fit(sents)
    assert m2.graded_scores_ is None and m2.unknown_weights_scores_ is None
    assert (m2.graded_, m2.unknown_weights_) == (m.graded_, m.unknown_weights_)
    for k in m.lambdas_:
        assert np.array_equal(m.lambdas_[k][0], m2.lambdas_[k][0])
    import fastspectral

    path = tmp_path / "m.lex"
    m.save(path)
    m3 = fastspectral.load(path)
    assert (m3.graded_, m3.graded_scores_) == (m.graded_, g)
    assert (m3.unknown_weights_, m3.unknown_weights_scores_) == (m.unknown_weights_, u)
    # the settings change the fit: the other weight-set choice gives other weights
    m4 = LexicalDisambiguator(known_guesses="yes" if m.known_guesses_ else "no",
                              graded=m.graded_,
                              unknown_weights="no" if m.unknown_weights_ else "yes").fit(sents)
    assert m4.lambdas_["M_full"][0].shape[0] != m.lambdas_["M_full"][0].shape[0]
    # nothing to choose for a variant without stage 2
    mu = LexicalDisambiguator(variant="uni").fit(sents)
    assert mu.graded_scores_ is None and mu.unknown_weights_scores_ is None
    with pytest.raises(ValueError, match="graded"):
        LexicalDisambiguator(graded="sometimes").fit(sents)
    with pytest.raises(ValueError, match="unknown_weights"):
        LexicalDisambiguator(unknown_weights="maybe").fit(sents)


def test_inner_c_epsilon_chosen_once_and_reused_by_the_later_inner_fits(monkeypatch):
    """With inner choices, (C, epsilon) of each weight set come from the grid of the first
    inner fit; the later inner fits reuse them (no grid); the final fit runs its own grid."""
    from fastspectral.lexical import engine, inner_cv

    calls = []
    real = engine.fit_lambda

    def spy(X, y, ptr, C, epsilon, *a, **k):
        out = real(X, y, ptr, C, epsilon, *a, **k)
        calls.append((C, epsilon, out[2], out[3], X.shape[0]))
        return out

    inner_calls = []
    real_call = inner_cv._InnerE1.__call__

    def spy_inner(self, *a):
        n = len(calls)
        out = real_call(self, *a)
        inner_calls.extend(range(n, len(calls)))
        return out

    monkeypatch.setattr(engine, "fit_lambda", spy)
    monkeypatch.setattr(inner_cv._InnerE1, "__call__", spy_inner)
    m = LexicalDisambiguator().fit(arabic(200, 3))
    inner = [calls[i] for i in inner_calls]
    final = [c for i, c in enumerate(calls) if i not in set(inner_calls)]
    grid = [c for c in inner if c[0] is None]
    assert 1 <= len(grid) <= 2 and inner[:len(grid)] == grid     # the first inner fit
    chosen = [(c[2], c[3]) for c in grid]
    later = inner[len(grid):]
    assert all(c[0] is not None and c[1] is not None for c in later)
    assert {(c[0], c[1]) for c in later} <= set(chosen)
    assert final and all(c[0] is None and c[1] is None for c in final)
    r = m.learned_.rankers["M_full"]
    assert [(c, e) for c, e in zip(r.C, r.epsilon) if c is not None] == \
        [(c[2], c[3]) for c in final]
    # without inner choices every weight set keeps its own grid
    calls.clear()
    LexicalDisambiguator(known_guesses="no", graded="no", unknown_weights="no").fit(
        arabic(200, 3))
    assert calls and all(c[0] is None for c in calls)


def test_parse_stats_count_unknown_words_and_unmatched_tags(fitted):
    from fastspectral.lexical.model import LexicalParseStats

    bare = [DepSentence(words=["I", "can", "zzyzx"], heads=[0, 1, 2]),
            DepSentence(words=["The", "can", "qwv", "plk"], heads=[0, 1, 2, 3]),
            DepSentence(words=[], heads=[])]
    fitted.parse(bare)
    # "The" is known lower-cased; zzyzx, qwv, plk are not in the lexicon
    assert fitted.last_parse_stats_ == LexicalParseStats(sentences=3, words=7,
                                                         unknown_words=3, tag_fallbacks=0)
    # 'can' tagged NOUN (a candidate of it) in the first, ADJ (none is) in the second
    out = fitted.parse(bare, tags=[["_", "NOUN", "_"], ["_", "ADJ", "_", "_"], []])
    assert out[0].upos[1] == "NOUN" and out[1].upos[1] in ("AUX", "NOUN")
    assert fitted.last_parse_stats_ == LexicalParseStats(sentences=3, words=7,
                                                         unknown_words=3, tag_fallbacks=1)
    fitted.parse([])
    assert fitted.last_parse_stats_ == LexicalParseStats()
