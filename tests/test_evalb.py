"""Tests of the EVALB-exact scorer (fastspectral.eval.evalb)."""
import random
import time
from pathlib import Path

import pytest

from fastspectral.errors import FormatError
from fastspectral.eval.evalb import (HEADER, EvalbParams, evaluate, evaluate_files,
                                     read_evalb_tree, score_sentence)

SHARED = Path(__file__).resolve().parents[2] / "shared"
EVALB_DIR = SHARED / "evalb"
WSJ22 = SHARED / "data" / "ptb" / "wsj22.trees"


def _need(path: Path):
    if not path.exists():
        pytest.skip(f"reference data {path} is absent (the shared folder is not beside the repo)")


# ------------------------------------------------------------------ reference reports
@pytest.mark.parametrize("name", ["pred-parser", "pred-perturbed"])
def test_reference_report_byte_for_byte(name):
    _need(EVALB_DIR)
    expected = (EVALB_DIR / f"{name}.evalb").read_bytes().decode("ascii")
    result = evaluate_files(EVALB_DIR / "gold.trees", EVALB_DIR / f"{name}.trees")
    assert result.report() == expected
    assert not result.aborted


def _summary_value(text: str, block: str, key: str) -> float:
    part = text.split(f"-- {block} --")[1]
    for line in part.splitlines():
        if line.startswith(key):
            return float(line.split("=")[1])
    raise KeyError(key)


@pytest.mark.parametrize("name", ["pred-parser", "pred-perturbed"])
def test_reference_attributes(name):
    _need(EVALB_DIR)
    text = (EVALB_DIR / f"{name}.evalb").read_text()
    gold = (EVALB_DIR / "gold.trees").read_text().splitlines()
    pred = (EVALB_DIR / f"{name}.trees").read_text().splitlines()
    r = evaluate(gold, pred)
    for summ, block in ((r.all, "All"), (r.le40, "len<=40")):
        assert summ.n_sentences == _summary_value(text, block, "Number of sentence ")
        assert summ.n_error == _summary_value(text, block, "Number of Error")
        assert summ.n_skip == _summary_value(text, block, "Number of Skip")
        assert summ.n_valid == _summary_value(text, block, "Number of Valid")
        for attr, key in (("recall", "Bracketing Recall"), ("precision", "Bracketing Precision"),
                          ("fmeasure", "Bracketing FMeasure"),
                          ("complete_match", "Complete match"),
                          ("avg_crossing", "Average crossing"), ("no_crossing", "No crossing"),
                          ("two_or_less_crossing", "2 or less crossing"),
                          ("tagging_accuracy", "Tagging accuracy")):
            assert round(getattr(summ, attr), 2) == pytest.approx(
                _summary_value(text, block, key), abs=1e-9), (block, attr)
    assert r.fmeasure == r.all.fmeasure and r.recall == r.all.recall
    assert r.counts["sentences"] == 400
    # status column of the table
    statuses = {s.id: s.status for s in r.sentences if s.status}
    table = {int(l.split()[0]): int(l.split()[2]) for l in text.splitlines()[3:403]
             if int(l.split()[2])}
    assert statuses == table


# ------------------------------------------------------------------ hand-made cases
GOLD_PRT = "(TOP (S (NP (PRP He)) (VP (VBD looked) (PRT (RP up)) (NP (DT the) (NN word))) (. .)))"
PRED_ADVP = "(TOP (S (NP (PRP He)) (VP (VBD looked) (ADVP (RP up)) (NP (DT the) (NN word))) (. .)))"


def test_advp_prt_equivalence():
    r = score_sentence(GOLD_PRT, PRED_ADVP)
    assert (r.status, r.matched, r.gold_brackets, r.test_brackets) == (0, 5, 5, 5)
    assert r.complete_match
    no_eq = EvalbParams(equal_labels=())
    r2 = score_sentence(GOLD_PRT, PRED_ADVP, no_eq)
    assert (r2.matched, r2.gold_brackets, r2.test_brackets) == (4, 5, 5)
    assert r2.recall == pytest.approx(80.0)
    # a genuinely different label still fails, and unlabelled scoring ignores labels
    pred_np = PRED_ADVP.replace("ADVP", "NP")
    assert score_sentence(GOLD_PRT, pred_np).matched == 4
    assert score_sentence(GOLD_PRT, pred_np, EvalbParams(labeled=False)).matched == 5


def test_multiset_matching():
    gold = "(TOP (S (NP (NP (DT the) (NN dog))) (VP (VBD barked))))"
    one = "(TOP (S (NP (DT the) (NN dog)) (VP (VBD barked))))"
    three = "(TOP (S (NP (NP (NP (DT the) (NN dog)))) (VP (VBD barked))))"
    r1 = score_sentence(gold, one)
    assert (r1.matched, r1.gold_brackets, r1.test_brackets) == (3, 4, 3)
    r3 = score_sentence(gold, three)
    assert (r3.matched, r3.gold_brackets, r3.test_brackets) == (4, 4, 5)
    assert r3.recall == 100.0 and r3.precision == 80.0 and not r3.complete_match
    assert score_sentence(gold, gold).complete_match


def test_crossing_count():
    gold = "(TOP (S (NP (DT a) (NN b)) (VP (VB c) (NP (DT d) (NN e)))))"
    pred = "(TOP (S (X (DT a) (NN b) (VB c)) (Y (DT d) (NN e))))"
    r = score_sentence(gold, pred)
    # X = (0,3) crosses VP = (2,5); Y = (3,5) nests inside VP; S matches
    assert (r.matched, r.gold_brackets, r.test_brackets, r.crossing) == (1, 4, 3, 1)
    assert r.line() == ("   1    5    0   25.00  33.33     1      4    3      1"
                        "      5     5   100.00\n")
    # one predicted bracket crossing two gold brackets counts once
    gold2 = "(TOP (S (A (X a) (X b)) (B (X c) (X d)) (C (X e) (X f))))"
    pred2 = "(TOP (S (X a) (D (X b) (X c) (X d) (X e)) (X f)))"
    assert score_sentence(gold2, pred2).crossing == 1


def _random_tree(rng, words, labels):
    def build(i, j):
        if j - i == 1 and rng.random() < 0.7:
            return f"({rng.choice(['NN', 'VB', 'DT'])} {words[i]})"
        if j - i == 1:
            return f"({rng.choice(labels)} ({rng.choice(['NN', 'DT'])} {words[i]}))"
        cuts = sorted(rng.sample(range(i + 1, j), min(j - i - 1, rng.randint(1, 3))))
        bounds = [i] + cuts + [j]
        kids = " ".join(build(a, b) for a, b in zip(bounds, bounds[1:]))
        return f"({rng.choice(labels)} {kids})"
    return f"(TOP {build(0, len(words))})"


def _reference_counts(gold_line, pred_line, eq=(("ADVP", "PRT"),)):
    """Direct transcription of EVALB's double loops (matching, then crossing)."""
    c = EvalbParams()
    g = read_evalb_tree(gold_line, c)
    t = read_evalb_tree(pred_line, c)

    def kept(tree):
        return [[s, e, lab, 0] for s, e, lab in zip(tree.starts, tree.ends, tree.labels)
                if s != e and lab != "TOP"]
    gb, tb = kept(g), kept(t)
    eqs = set(eq) | {(b, a) for a, b in eq}
    match = 0
    for gbr in gb:
        for tbr in tb:
            if tbr[3] == 0 and gbr[0] == tbr[0] and gbr[1] == tbr[1] and \
                    (gbr[2] == tbr[2] or (gbr[2], tbr[2]) in eqs):
                tbr[3] = 1
                match += 1
                break
    crossing = 0
    for ts, te, _, _ in tb:
        for gs, ge, _, _ in gb:
            if (gs < ts < ge < te) or (ts < gs < te < ge):
                crossing += 1
                break
    return match, len(gb), len(tb), crossing


def test_matching_and_crossing_against_bruteforce():
    rng = random.Random(7)
    labels = ["NP", "VP", "ADVP", "PRT", "S"]
    for _ in range(300):
        n = rng.randint(1, 12)
        words = [f"w{i}" for i in range(n)]
        gold = _random_tree(rng, words, labels)
        pred = _random_tree(rng, words, labels)
        r = score_sentence(gold, pred)
        assert (r.matched, r.gold_brackets, r.test_brackets, r.crossing) == \
            _reference_counts(gold, pred), (gold, pred)


def test_skip_sentences():
    gold = "(TOP (S (NP (DT The) (NN cat)) (VP (VBD sat)) (. .)))"
    for pred in ["()", "(TOP )", "", "(TOP (. .))"]:
        r = score_sentence(gold, pred)
        assert r.status == 2 and r.length == 4 and r.words == 0, pred
        assert r.line() == ("   1    4    2    0.00   0.00     0      0    0      0"
                            "      0     0     0.00\n")


def test_error_sentences():
    gold = "(TOP (S (NP (DT The) (NN cat)) (VP (VBD sat)) (. .)))"
    r = score_sentence(gold, "(TOP (S (NP (DT The) (NN dog)) (VP (VBD sat)) (. .)))")
    assert r.status == 1 and r.message == "Words unmatch (cat|dog)"
    r = score_sentence(gold, "(TOP (S (NP (NN cat)) (VP (VBD sat)) (. .)))")
    assert r.status == 1 and r.message == "Length unmatch (3|2)" and r.length == 4
    # a punctuation token tagged as a word is a length mismatch (nothing repairs it)
    r = score_sentence(gold, "(TOP (S (NP (DT The) (NN cat)) (VP (VBD sat)) (NN .)))")
    assert r.status == 1
    # errors count as sentences but add nothing else
    res = evaluate([gold, gold], [gold, "(TOP (S (NP (NN cat)) (VP (VBD sat))))"])
    assert (res.all.n_sentences, res.all.n_error, res.all.n_valid) == (2, 1, 1)
    assert res.all.gold_brackets == 3 and res.all.words == 3
    assert res.le40.n_error == 1


def test_punctuation_deletion():
    gold = "(TOP (S (NP (NNP John)) (, ,) (VP (VBD left) (NP (NN town))) (. .)))"
    # the comma and period attach elsewhere: the brackets still match once punctuation is gone
    pred = "(TOP (S (NP (NNP John) (, ,)) (VP (VBD left) (NP (NN town)) (. .))))"
    r = score_sentence(gold, pred)
    assert (r.matched, r.gold_brackets, r.test_brackets, r.crossing) == (4, 4, 4, 0)
    assert r.length == 5 and r.words == 3 and r.correct_tags == 3
    # punctuation tags are not scored for tagging either
    r = score_sentence(gold, pred.replace("(, ,)", "(: ,)"))
    assert r.correct_tags == 3 and r.words == 3
    # a bracket dominating only punctuation disappears
    r = score_sentence(gold, "(TOP (S (NP (NNP John)) (PRN (, ,)) (VP (VBD left) (NP (NN town))) (. .)))")
    assert (r.matched, r.test_brackets) == (4, 4)


def test_function_tags_and_traces():
    gold = ("( (S (NP-SBJ-1 (NNP John)) (VP (VBD tried) (S (NP-SBJ (-NONE- *-1)) "
            "(VP (TO to) (VP (VB leave))))) (. .)) )")
    pred = "(TOP (S (NP (NNP John)) (VP (VBD tried) (S (VP (TO to) (VP (VB leave))))) (. .)))"
    r = score_sentence(gold, pred)
    # NP-SBJ over the trace is empty once -NONE- is deleted; the outer empty-labelled bracket stays
    assert (r.gold_brackets, r.test_brackets, r.matched) == (7, 6, 6)
    assert r.length == 5 and r.words == 4


def test_length_cutoff_with_none():
    words = " ".join(f"(NN w{i})" for i in range(39))
    gold = f"(TOP (S (NP {words}) (-NONE- *) (-NONE- *T*) (. .)))"
    pred = f"(TOP (S (NP {words}) (. .)))"
    res = evaluate([gold], [pred])
    s = res.sentences[0]
    assert s.length == 40 and s.words == 39            # 39 words + '.', traces not counted
    assert res.le40.n_sentences == 1 and res.le40.n_valid == 1
    res2 = evaluate([gold], [pred], EvalbParams(delete_labels_for_length=()))
    assert res2.sentences[0].length == 42 and res2.le40.n_sentences == 0
    assert res2.report().splitlines()[-12] == "Number of sentence        =      0"
    res3 = evaluate([gold], [pred], EvalbParams(cutoff_len=10))
    assert "-- len<=10 --" in res3.report() and res3.le40.n_sentences == 0


def test_empty_lines_and_nan_fmeasure():
    res = evaluate(["", "(TOP (NN a))"], ["", "()"])
    assert [s.status for s in res.sentences] == [2, 2]
    assert res.sentences[0].length == 0
    rep = res.report()
    assert "Bracketing FMeasure       =   -nan\n" in rep
    assert res.fmeasure == 0.0
    # totals row without brackets prints only the word columns
    assert rep.splitlines()[6] == "      0     0     0.00"
    # an empty gold line against a tree is an error sentence
    res = evaluate([""], ["(TOP (NN a))"])
    assert res.sentences[0].status == 1


def test_max_error_stops_like_evalb():
    good = "(TOP (S (NP (DT a) (NN b)) (VP (VB c))))"
    bad = "(TOP (S (NP (DT a) (NN x)) (VP (VB c))))"
    gold = [good] * 20
    pred = [good] * 3 + [bad] * 15 + [good] * 2
    res = evaluate(gold, pred)                         # max_error 10: the 12th error stops it
    assert res.aborted and res.aborted_at == 3 + 12
    assert len(res.sentences) == 14 and res.all.n_error == 11
    rep = res.report()
    assert rep.startswith(HEADER) and "Summary" not in rep and len(rep.splitlines()) == 3 + 14
    res = evaluate(gold, pred, EvalbParams(max_error=None))
    assert not res.aborted and res.all.n_error == 15 and res.all.n_valid == 5
    res = evaluate(gold[:14], pred[:14])               # 11 errors: tolerated
    assert not res.aborted and res.all.n_error == 11
    res = evaluate(gold, pred, EvalbParams(max_error=0))
    assert res.aborted_at == 5 and res.all.n_error == 1


def test_quote_repair_only_when_configured():
    gold = "(TOP (S (NP (NP (NNS Analysts) (POS ')) (NN Pay)) (VP (VBD rose))))"
    pred = "(TOP (S (NP (NNS Analysts) ('' ')) (NP (NN Pay)) (VP (VBD rose))))"
    assert score_sentence(gold, pred).status == 1      # COLLINS.prm: no QUOTE_LABEL
    params = EvalbParams(quote_labels=("``", "''", "POS"))
    r = score_sentence(gold, pred, params)
    assert r.status == 0 and r.words == 4 and r.correct_tags == 3
    # after re-insertion the prediction's brackets are S(0,4) NP(0,2) NP(2,3) VP(3,4): S, the
    # inner NP and VP match gold's S(0,4) NP(0,3) NP(0,2) VP(3,4) (without the shift only S would)
    assert (r.matched, r.gold_brackets, r.test_brackets, r.crossing) == (3, 4, 4, 0)
    # the same repair on the gold side
    r = score_sentence(pred, gold, params)
    assert r.status == 0 and (r.matched, r.gold_brackets, r.test_brackets) == (3, 4, 4)
    assert r.length == 4          # length counts the deleted quote as well


def test_line_count_mismatch_names_file(tmp_path):
    g = tmp_path / "gold.trees"
    p = tmp_path / "pred.trees"
    g.write_text("(TOP (NN a))\n(TOP (NN b))\n")
    p.write_text("(TOP (NN a))\n")
    with pytest.raises(FormatError) as ei:
        evaluate_files(g, p)
    assert ei.value.path == str(g) and ei.value.line == 2 and "gold" in str(ei.value)
    p.write_text("(TOP (NN a))\n(TOP (NN b))\n(TOP (NN c))\n")
    with pytest.raises(FormatError) as ei:
        evaluate_files(g, p)
    assert ei.value.path == str(p) and ei.value.line == 3
    # a final newline is not an extra (empty) line, an extra blank line is
    p.write_text("(TOP (NN a))\n(TOP (NN b))")
    assert evaluate_files(g, p).all.n_valid == 2
    p.write_text("(TOP (NN a))\n(TOP (NN b))\n\n")
    with pytest.raises(FormatError):
        evaluate_files(g, p)


def test_malformed_lines_raise(tmp_path):
    g = tmp_path / "g.trees"
    p = tmp_path / "p.trees"
    g.write_text("(TOP (NN a))\n(TOP (S (NN a) (NN b)))\n")
    for bad in ["(TOP (S (NN a) (NN b))", "(TOP (S (NN a) (NN b))))", "(TOP (S (NN a b)))",
                "(TOP (S (NN a) b))"]:
        p.write_text("(TOP (NN a))\n" + bad + "\n")
        with pytest.raises(FormatError) as ei:
            evaluate_files(g, p)
        assert ei.value.path == str(p) and ei.value.line == 2, bad


def test_prm_file_and_objects(tmp_path):
    prm = tmp_path / "COLLINS.prm"
    prm.write_text("##  comment\nDEBUG 0\nMAX_ERROR 10\nCUTOFF_LEN 40\nLABELED 1\n"
                   + "".join(f"DELETE_LABEL {x}\n" for x in
                             ["TOP", "-NONE-", ",", ":", "``", "''", "."])
                   + "DELETE_LABEL_FOR_LENGTH -NONE-\nEQ_LABEL ADVP PRT\n\n# EQ_WORD  Ex ex\n")
    assert EvalbParams.from_prm_file(prm) == EvalbParams()
    prm.write_text("BOGUS 1\n")
    with pytest.raises(FormatError):
        EvalbParams.from_prm_file(prm)

    class T:  # anything whose str() is a one-line tree is accepted
        def __init__(self, s):
            self.s = s

        def __str__(self):
            return self.s
    res = evaluate([T(GOLD_PRT)], [T(PRED_ADVP)])
    assert res.all.complete == 1


def test_speed_1700_sentences():
    _need(WSJ22)
    gold = WSJ22.read_text().splitlines()
    # a prediction that differs: drop every third bracket label to X
    pred = [line.replace("(NP (", "(X (", 1) if i % 3 == 0 else line
            for i, line in enumerate(gold)]
    t = time.perf_counter()
    res = evaluate(gold, pred)
    elapsed = time.perf_counter() - t
    assert res.all.n_valid == len(gold) == 1700
    assert 0 < res.recall < 100
    assert elapsed < 3.0, f"scoring 1,700 sentences took {elapsed:.2f}s"
