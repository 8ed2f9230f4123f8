"""Tests of the EVALB-exact scorer (fastspectral.eval.evalb).

The reference reports of the C EVALB lie in ``../shared/evalb`` beside the checkout (fixture
``evalb_dir`` of tests/conftest.py; the tests that need them skip with a reason when absent).
"""
import gzip
import io
import random
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import data_path, need
from fastspectral.errors import FormatError
from fastspectral.eval.evalb import (BUILTIN_PARAMS, COLLINS_PARAMS, HEADER, NEW_PARAMS,
                                     EvalbParams, evaluate, evaluate_files, read_evalb_tree,
                                     run_evalb, score_sentence)

WSJ22 = data_path("ptb", "wsj22.trees")
PRM_FILE = {"collins": "COLLINS.prm", "new": "new.prm"}
SUFFIX = {"collins": "", "new": ".new"}


def _run(gold, pred, params="collins", **kw):
    out, err = io.StringIO(), io.StringIO()
    rc = run_evalb(gold, pred, params, stdout=out, stderr=err, **kw)
    return rc, out.getvalue(), err.getvalue()


def _table_statuses(report: str) -> dict:
    """{sentence id: status} of the per-sentence table of an EVALB report."""
    rows = {}
    for line in report.splitlines()[3:]:
        if line.startswith("====="):
            break
        f = line.split()
        rows[int(f[0])] = int(f[2])
    return rows


# ------------------------------------------------------------------ reference reports
@pytest.mark.parametrize("prm", ["collins", "new"])
@pytest.mark.parametrize("name", ["pred-parser", "pred-perturbed"])
def test_reference_report_byte_for_byte(evalb_dir, name, prm):
    expected = (evalb_dir / f"{name}{SUFFIX[prm]}.evalb").read_bytes().decode("ascii")
    result = evaluate_files(evalb_dir / "gold.trees", evalb_dir / f"{name}.trees", prm)
    assert result.report() == expected
    assert not result.aborted and result.exit_status == 0
    # the same through run_evalb, with the built-in name and with EVALB's own parameter file
    for params in (prm, evalb_dir / PRM_FILE[prm], str(evalb_dir / PRM_FILE[prm])):
        rc, out, err = _run(evalb_dir / "gold.trees", evalb_dir / f"{name}.trees", params)
        assert (rc, out) == (0, expected)
        # one "N : ... unmatch (a|b)" line on stderr per error sentence of EVALB's table
        errs = [int(line.split(" : ")[0]) for line in err.splitlines()]
        assert all(re.fullmatch(r"\d+ : (Length|Words) unmatch \(.*\|.*\)", line)
                   for line in err.splitlines()), err
        assert errs == [i for i, s in _table_statuses(expected).items() if s == 1]


@pytest.mark.parametrize("prm", ["collins", "new"])
def test_reference_max_error_stop(evalb_dir, prm):
    """pred-abort: EVALB's stdout, stderr and exit status 1, to the character."""
    expected_out = (evalb_dir / f"pred-abort{SUFFIX[prm]}.evalb").read_bytes().decode("ascii")
    expected_err = (evalb_dir / f"pred-abort{SUFFIX[prm]}.stderr").read_bytes().decode("ascii")
    for params in (prm, evalb_dir / PRM_FILE[prm]):
        rc, out, err = _run(evalb_dir / "gold.trees", evalb_dir / "pred-abort.trees", params)
        assert rc == 1
        assert out == expected_out
        assert err == expected_err
    res = evaluate_files(evalb_dir / "gold.trees", evalb_dir / "pred-abort.trees", prm)
    assert res.aborted and res.aborted_at == 12 and len(res.sentences) == 11
    assert res.errors_text() == expected_err and res.exit_status == 1


def test_reference_streams_get_bytes(evalb_dir, capsysbinary):
    """Default streams (sys.stdout / sys.stderr): the very bytes EVALB writes."""
    rc = run_evalb(evalb_dir / "gold.trees", evalb_dir / "pred-abort.trees")
    cap = capsysbinary.readouterr()
    assert rc == 1
    assert cap.out == (evalb_dir / "pred-abort.evalb").read_bytes()
    assert cap.err == (evalb_dir / "pred-abort.stderr").read_bytes()


def test_max_error_override(evalb_dir):
    gold, pred = evalb_dir / "gold.trees", evalb_dir / "pred-abort.trees"
    ref_out = (evalb_dir / "pred-abort.evalb").read_text()
    ref_err = (evalb_dir / "pred-abort.stderr").read_text()
    g = gold.read_text().splitlines()
    p = pred.read_text().splitlines()
    n_bad = sum(a != b for a, b in zip(g, p))          # the retagged sentences: all errors
    assert n_bad > 12
    # -e 11: one more error tolerated, one more line in each stream
    rc, out, err = _run(gold, pred, max_error=11)
    assert rc == 1 and out.startswith(ref_out) and err.startswith(ref_err)
    assert len(out.splitlines()) == len(ref_out.splitlines()) + 1
    assert len(err.splitlines()) == len(ref_err.splitlines()) + 1
    # -e large: nothing stops, the summary counts every error, exit status 0
    rc, out, err = _run(gold, pred, max_error=n_bad)
    assert rc == 0 and "=== Summary ===" in out
    assert f"Number of Error sentence  = {n_bad:6d}" in out
    assert len(err.splitlines()) == n_bad and err.startswith(ref_err)
    # the override wins over the parameter file; -e -1 stops at the first error
    rc, out, err = _run(gold, pred, evalb_dir / "new.prm", max_error=-1)
    assert (rc, out, err) == (1, HEADER, ref_err.splitlines(keepends=True)[0])
    # EvalbParams(max_error=None) never stops
    res = evaluate_files(gold, pred, EvalbParams(max_error=None))
    assert not res.aborted and res.all.n_error == n_bad and len(res.errors) == n_bad


def test_cutoff_override(evalb_dir):
    rc, out, _ = _run(evalb_dir / "gold.trees", evalb_dir / "pred-parser.trees", cutoff_len=10)
    ref = (evalb_dir / "pred-parser.evalb").read_text()
    assert rc == 0 and "-- len<=10 --" in out
    assert out.split("-- len<=")[0] == ref.split("-- len<=")[0]       # only the last block differs
    assert out != ref


def _summary_value(text: str, block: str, key: str) -> float:
    part = text.split(f"-- {block} --")[1]
    for line in part.splitlines():
        if line.startswith(key):
            return float(line.split("=")[1])
    raise KeyError(key)


@pytest.mark.parametrize("name", ["pred-parser", "pred-perturbed"])
def test_reference_attributes(evalb_dir, name):
    text = (evalb_dir / f"{name}.evalb").read_text()
    gold = (evalb_dir / "gold.trees").read_text().splitlines()
    pred = (evalb_dir / f"{name}.trees").read_text().splitlines()
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
    statuses = {s.id: s.status for s in r.sentences if s.status}
    assert statuses == {i: s for i, s in _table_statuses(text).items() if s}


# ------------------------------------------------------------------ parameter files
def test_builtin_params_are_the_distribution_files(evalb_dir):
    assert EvalbParams.from_file(evalb_dir / "COLLINS.prm") == COLLINS_PARAMS == EvalbParams()
    assert EvalbParams.from_file(evalb_dir / "new.prm") == NEW_PARAMS
    assert EvalbParams.builtin("collins") is COLLINS_PARAMS
    assert EvalbParams.builtin("NEW") is NEW_PARAMS and set(BUILTIN_PARAMS) == {"collins", "new"}
    assert EvalbParams.resolve(None) is COLLINS_PARAMS
    assert EvalbParams.resolve(NEW_PARAMS) is NEW_PARAMS
    with pytest.raises(ValueError):
        EvalbParams.builtin("magerman")


def test_param_file_every_key(tmp_path):
    prm = tmp_path / "all.prm"
    prm.write_bytes(b"# comment\r\nDEBUG 2\r\nMAX_ERROR -3\nCUTOFF_LEN 25   \t\n"
                    b"LABELED 0\nxy\n\n   \nDELETE_LABEL TOP\nDELETE_LABEL_FOR_LENGTH -NONE-\n"
                    b"QUOTE_LABEL POS\nEQ_LABEL ADVP\tPRT\nEQ_WORD colour color\n"
                    b"CUTOFF_LEN 30\nDELETE_LABEL .\nDEBUG 0\x00 junk after NUL")
    p = EvalbParams.from_file(prm)
    assert p == EvalbParams(labeled=False, cutoff_len=30, max_error=-3, debug=0,
                            delete_labels=("TOP", "."), delete_labels_for_length=("-NONE-",),
                            quote_labels=("POS",), equal_labels=(("ADVP", "PRT"),),
                            equal_words=(("colour", "color"),))
    # an empty file: EVALB's built-in defaults
    (tmp_path / "empty.prm").write_bytes(b"")
    assert EvalbParams.from_file(tmp_path / "empty.prm") == EvalbParams(
        delete_labels=(), delete_labels_for_length=(), equal_labels=())
    # EQ_WORD is used: the words count as equal
    gold = "(TOP (S (NP (JJ colour)) (VP (VB x))))"
    pred = "(TOP (S (NP (JJ color)) (VP (VB x))))"
    assert score_sentence(gold, pred).status == 1
    assert score_sentence(gold, pred, EvalbParams(equal_words=(("color", "colour"),))).status == 0


BAD_PRM = [
    (b"BOGUS 1", "unknown keyword"),
    (b"debug 0", "unknown keyword"),
    (b"MAX_ERROR ten", "integer"),
    (b"MAX_ERROR 10 12", "integer"),
    (b"LABELED 1.5", "integer"),
    (b"CUTOFF_LEN", "no value"),
    (b"DELETE_LABEL", "no value"),
    (b"EQ_LABEL ADVP", "two values"),
    (b"EQ_WORD a b c", "two values"),
    (b"DELETE_LABEL NP VP", "one label"),
    (b"  DEBUG 0", "keyword"),
    (b"DELETE_LABEL \xff\xfe", "decode"),
    (b"\x01\x02\x03 \n\n", "unknown keyword"),
]


@pytest.mark.parametrize("content,words", BAD_PRM)
def test_odd_param_file_is_a_one_line_format_error(tmp_path, content, words):
    prm = tmp_path / "odd.prm"
    prm.write_bytes(b"MAX_ERROR 10\n" + content + b"\nLABELED 1\n")
    with pytest.raises(FormatError) as ei:
        EvalbParams.from_file(prm)
    assert ei.value.path == str(prm) and ei.value.line == 2
    assert words in str(ei.value) and "\n" not in str(ei.value)
    # through run_evalb too, before anything is written
    g = tmp_path / "g.trees"
    g.write_text("(TOP (NN a))\n")
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(FormatError):
        run_evalb(g, g, prm, stdout=out, stderr=err)
    assert out.getvalue() == err.getvalue() == ""


def test_run_evalb_argument_errors(tmp_path):
    g = tmp_path / "g.trees"
    g.write_text("(TOP (NN a))\n")
    with pytest.raises(ValueError):
        run_evalb(g, g, encoding="utf-16")
    with pytest.raises(ValueError):
        run_evalb(g, g, encoding="no-such-codec")
    with pytest.raises(ValueError):
        run_evalb(g, g, max_error="3")
    with pytest.raises(OSError):
        run_evalb(g, tmp_path / "missing.trees")
    with pytest.raises(OSError):
        run_evalb(g, g, tmp_path / "missing.prm")


# ------------------------------------------------------------------ encodings and bytes
def test_encoding_errors_and_latin1(tmp_path):
    g = tmp_path / "g.trees"
    p = tmp_path / "p.trees"
    g.write_bytes(b"(TOP (NN a))\n(TOP (S (NN caf\xe9) (NN b)))\n")
    p.write_bytes(b"(TOP (NN a))\n(TOP (S (NN cafe) (NN b)))\n")
    with pytest.raises(FormatError) as ei:
        run_evalb(g, p, stdout=io.StringIO(), stderr=io.StringIO())
    assert ei.value.path == str(g) and ei.value.line == 2 and "utf-8" in str(ei.value)
    # latin-1 reads any byte, as EVALB does; the error line carries the word's own bytes
    out = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    err = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    rc = run_evalb(g, p, stdout=out, stderr=err, encoding="latin-1")
    assert rc == 0
    assert err.buffer.getvalue() == b"2 : Words unmatch (caf\xe9|cafe)\n"
    assert out.buffer.getvalue().startswith(HEADER.encode())


def test_nul_ends_a_line_and_gzip(tmp_path):
    g = tmp_path / "g.trees.gz"
    with gzip.open(g, "wb") as fh:
        fh.write(b"(TOP (S (NN a) (NN b)))\n")
    p = tmp_path / "p.trees"
    p.write_bytes(b"(TOP (S (NN a) (NN b)))\x00 ((( \xff\n")
    res = evaluate_files(g, p)
    assert res.all.complete == 1
    bad = tmp_path / "bad.trees.gz"
    bad.write_bytes(b"\x1f\x8b\x08\x00garbage")
    with pytest.raises(FormatError) as ei:
        evaluate_files(bad, p)
    assert ei.value.path == str(bad) and "\n" not in str(ei.value)


# ------------------------------------------------------------------ DEBUG (-d / -D)
_DUMP = re.compile(r"-<1>---.*?========\n", re.S)
_TRACE_LINE = re.compile(r"(label=.*, word=.*, wid=\d+|1\.res=.*|  (LABEL|BRACKET|EXTRA|CROSSING)"
                         r"\[-?\d+--?\d+\]: .*|bra=\d+, ind=\d+|bracket\[\d+\]=\{.*\}|"
                         r"endslen=\d+|-?\d+: \S* - \S*|)\n")


@pytest.mark.slow
@pytest.mark.parametrize("prm", ["collins", "new"])
@pytest.mark.parametrize("name", ["pred-perturbed", "pred-abort"])
def test_debug_output_wraps_the_reference_report(evalb_dir, name, prm):
    """DEBUG 1 / 2 add EVALB's dumps and traces around the lines; the scores do not change."""
    gold, pred = evalb_dir / "gold.trees", evalb_dir / f"{name}.trees"
    ref = (evalb_dir / f"{name}{SUFFIX[prm]}.evalb").read_text()
    plain = evaluate_files(gold, pred, prm)
    for debug in (1, 2):
        rc, out, err = _run(gold, pred, prm, debug=debug)
        assert rc == plain.exit_status and err == plain.errors_text()
        res = evaluate_files(gold, pred, EvalbParams.resolve(prm).with_overrides(debug=debug))
        assert res.sentences == plain.sentences and res.abort_sentence == plain.abort_sentence
        assert out.splitlines().count("========") == len(plain.sentences)   # a dump per line
        stripped = _DUMP.sub("", out)
        if debug == 1:
            assert stripped == ref
        else:
            kept = "".join(m.group(0) for m in re.finditer(r".*\n", stripped)
                           if not _TRACE_LINE.fullmatch(m.group(0)))
            assert kept == "".join(line for line in ref.splitlines(keepends=True)
                                   if line != "\n")


def test_debug_dump_of_one_sentence():
    gold = "(TOP (S (NP-SBJ (DT The) (NN cat)) (VP (VBD sat) (PRT (RP down))) (. .)))"
    pred = "(TOP (S (NP (DT The)) (NN cat) (VP (VBD sat) (ADVP (RB down))) (, .)))"
    rep = evaluate([gold], [pred], EvalbParams(debug=1)).report()
    line = "   1    5    0   75.00  75.00     3      4    4      0      4     3    75.00\n"
    # EVALB's dsp_info: terminals "%3d : %d : %-6s  %-16s" (result 1 = tag correct), then the
    # brackets "%3d : %d : %3d  %3d  %-6s" (result 5 deleted, 1 matched, 0 not), labels without
    # function tags
    t = "{:3d} : {} : {:<6}  {:<16}"
    b = "{:3d} : {} : {:3d}  {:3d}  {:<6}"
    dump = ("-<1>---(wn1=  4, bn1=  5)-           -<2>---(wn2=  4, bn2=  5)-\n"
            + "".join(t.format(i, r, tag1, w) + "      " + t.format(i, r, tag2, w) + "\n"
                      for i, (r, tag1, tag2, w) in enumerate(
                          [(1, "DT", "DT", "The"), (1, "NN", "NN", "cat"),
                           (1, "VBD", "VBD", "sat"), (0, "RP", "RB", "down")]))
            + "\n"
            + "".join(b.format(i, r, s, e, l1) + "      " + b.format(i, r2, s2, e2, l2) + "\n"
                      for i, (r, s, e, l1, r2, s2, e2, l2) in enumerate(
                          [(5, 0, 4, "TOP", 5, 0, 4, "TOP"), (1, 0, 4, "S", 1, 0, 4, "S"),
                           (0, 0, 2, "NP", 0, 0, 1, "NP"), (1, 2, 4, "VP", 1, 2, 4, "VP"),
                           (1, 3, 4, "PRT", 1, 3, 4, "ADVP")]))
            + "\n========\n")
    assert rep.startswith(HEADER + line + dump)
    rep2 = evaluate([gold], [pred], EvalbParams(debug=2)).report()
    trace = rep2[len(HEADER):rep2.index(line)]
    assert trace.startswith("label=TOP, word=, wid=0\n")
    assert "label=., word=., wid=4\nlabel=TOP, word=, wid=0\n" in trace   # gold, then test
    assert "label=,, word=., wid=4\n\n1.res=5, 2.res=5, 1.start=0, 2.start=0, 1.end=4, " \
           "2.end=4\n" in trace
    # the gold NP-SBJ (0,2) has no predicted bracket over its span; the predicted NP (0,1) none in
    # gold: EVALB prints their text from the label on
    assert "  BRACKET[0-1]:  (DT The) (NN cat)\n" in trace
    assert trace.endswith("  EXTRA[0-0]:  (DT The)\n")
    assert "CROSSING" not in trace and "LABEL[" not in trace


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


def test_scores_all_1700_sentences():
    """(Speed lives in benchmarks/, not in timed assertions.)"""
    need(WSJ22)
    gold = WSJ22.read_text().splitlines()
    # a prediction that differs: drop every third bracket label to X
    pred = [line.replace("(NP (", "(X (", 1) if i % 3 == 0 else line
            for i, line in enumerate(gold)]
    res = evaluate(gold, pred)
    assert res.all.n_valid == len(gold) == 1700
    assert 0 < res.recall < 100


# ------------------------------------------------------------------ properties (hypothesis)
_LABELS = ["S", "NP", "VP", "NP-SBJ-1", "PP=2", "ADVP", "PRT", "S1", "TOP", "-NONE-", "", "X"]
_TAGS = ["NN", "DT", "VB", "POS", "''", "``", ",", ".", ":", "?", "-NONE-", "-LRB-", "CD"]
_WORDS = ["a", "dog", "'", '"', "/", ".", "*T*-1", "café", "--", "0", "-LRB-"]


@st.composite
def _trees(draw, depth=0):
    """A random one-line bracketed tree (any labels, deleted tags, quote-like words)."""
    if depth >= 4 or draw(st.integers(0, 3)) == 0:
        return f"({draw(st.sampled_from(_TAGS))} {draw(st.sampled_from(_WORDS))})"
    kids = draw(st.lists(_trees(depth + 1), min_size=1, max_size=4))
    return f"({draw(st.sampled_from(_LABELS))} {' '.join(kids)})"


@pytest.mark.slow
@settings(max_examples=80, deadline=None)
@given(st.lists(_trees(), min_size=1, max_size=6),
       st.sampled_from(["collins", "new"]), st.sampled_from([0, 2]))
def test_property_tree_against_itself_is_perfect(trees, prm, debug):
    params = EvalbParams.resolve(prm).with_overrides(debug=debug)
    res = evaluate(trees, trees, params)
    assert not res.aborted and res.all.n_error == 0
    for r in res.sentences:
        # a tree left without words (only deleted tags) is a skip sentence; all others are perfect
        assert r.status in (0, 2)
        if r.status == 0:
            assert r.matched == r.gold_brackets == r.test_brackets and r.crossing == 0
            assert r.correct_tags == r.words > 0 and r.complete_match
    a = res.all
    assert a.matched == a.gold_brackets == a.test_brackets and a.correct_tags == a.words
    assert a.complete == a.n_valid and a.crossing == 0
    if a.gold_brackets:
        assert res.recall == res.precision == res.fmeasure == 100.0
    if a.words:
        assert res.tagging_accuracy == 100.0
    assert res.report().startswith(HEADER) and "=== Summary ===" in res.report()


_TREEISH = st.lists(st.sampled_from([b"(", b")", b" ", b"\n", b"\t", b"NN", b"TOP", b"-NONE-",
                                     b"'", b"a", b".", b"POS", b"\xc3\xa9", b"\xff", b"\x00",
                                     b"(NN a)", b"(S ", b"\r"]), max_size=40).map(b"".join)


def _check_run(tmp, gold: bytes, pred: bytes, prm: bytes | None, encoding: str, debug: int):
    g, p, f = tmp / "g.trees", tmp / "p.trees", tmp / "x.prm"
    g.write_bytes(gold)
    p.write_bytes(pred)
    params = "new"
    if prm is not None:
        f.write_bytes(prm)
        params = f
    out, err = io.StringIO(), io.StringIO()
    try:
        rc = run_evalb(g, p, params, debug=debug, stdout=out, stderr=err, encoding=encoding)
    except FormatError as exc:
        assert exc.path in (str(g), str(p), str(f)) and exc.line is not None
        assert "\n" not in str(exc)
        assert out.getvalue() == err.getvalue() == ""
        return
    assert rc in (0, 1) and out.getvalue().startswith(HEADER)
    assert ("=== Summary ===" in out.getvalue()) == (rc == 0)


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=200), st.sampled_from(["utf-8", "latin-1"]), st.sampled_from([0, 2]))
def test_property_random_bytes_as_tree_file(tmp_path, data, encoding, debug):
    """Random bytes as the prediction (and as the gold): a FormatError or a report, nothing else."""
    n = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
    gold = b"(TOP (NN a))\n" * n
    _check_run(tmp_path, gold, data, None, encoding, debug)
    _check_run(tmp_path, data, gold, None, encoding, debug)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_TREEISH, _TREEISH, st.sampled_from(["utf-8", "latin-1"]), st.sampled_from([0, 1, 2]))
def test_property_tree_like_bytes(tmp_path, gold, pred, encoding, debug):
    """Bracket-heavy random bytes reach the tree reader: FormatError or a report."""
    _check_run(tmp_path, gold, pred, None, encoding, debug)


_PRMISH = st.lists(st.sampled_from([b"DEBUG", b"MAX_ERROR", b"CUTOFF_LEN", b"LABELED",
                                    b"DELETE_LABEL", b"EQ_LABEL", b"EQ_WORD", b"QUOTE_LABEL",
                                    b"DELETE_LABEL_FOR_LENGTH", b" ", b"\n", b"#", b"1", b"-2",
                                    b"NN", b"\xff", b"\x00", b"\t", b"x"]), max_size=30).map(b"".join)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(st.binary(max_size=100), _PRMISH), st.sampled_from(["utf-8", "latin-1"]))
def test_property_random_parameter_file(tmp_path, prm, encoding):
    """Random parameter files: a FormatError naming file and line, or parameters that score."""
    _check_run(tmp_path, b"(TOP (S (NN a) (. .)))\n(TOP (NN b))\n",
               b"(TOP (S (NN a) (. .)))\n(TOP (VB b))\n", prm, encoding, 0)
