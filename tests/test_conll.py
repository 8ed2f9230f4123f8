"""Tests of fastspectral.trees.conll: CoNLL-U / CoNLL-X / Malt-TAB readers and writers."""
import gzip
import io
import os
import re

import pytest

from fastspectral.errors import FormatError
from fastspectral.trees.conll import (DepSentence, read_conllu, read_conllx,
                                      read_malttab, write_conllu, write_conllx, write_malttab)
from fastspectral.trees.files import iter_lines
from conftest import data_path

# the shared data folder beside the checkout (tests/conftest.py)
DATA = os.fspath(data_path())
UD = os.path.join(DATA, "ud", "en_ewt-ud-dev.conllu")
WSJ_DP = os.path.join(DATA, "dep", "wsj-sample.dp")
ESP_TRAIN = os.path.join(DATA, "conll2007", "esp.train")
ESP_TEST = os.path.join(DATA, "conll2007", "esp.test")
EUS_TRAIN = os.path.join(DATA, "conll2007", "eus.train")
PADT = os.path.join(DATA, "arabic", "padt-v1.3-dev.conllu")

needs_data = pytest.mark.skipif(not os.path.isdir(DATA), reason="shared data not available")


def _blocks_and_word_lines(path, encoding="utf-8"):
    """Independent count: blank-line separated blocks and integer-ID word lines."""
    with open(path, encoding=encoding) as fh:
        text = fh.read()
    blocks = [b for b in re.split(r"\n\s*\n", text) if b.strip()]
    words = len(re.findall(r"^\d+\t", text, flags=re.M))
    return len(blocks), words


def _errors(text):
    """Parse CoNLL-U text given as a list of lines; return the FormatError raised."""
    with pytest.raises(FormatError) as info:
        list(read_conllu(io.StringIO(text)))
    return info.value


# ------------------------------------------------------------------ real files

@pytest.mark.slow
@needs_data
@pytest.mark.parametrize("path,reader,encoding,n_sents", [
    (WSJ_DP, read_malttab, "utf-8", 3914),
    (UD, read_conllu, "utf-8", 2001),
    (ESP_TRAIN, read_conllx, "utf-8", 2949),
    (ESP_TEST, read_conllx, "utf-8", 563),
    (EUS_TRAIN, read_conllx, "latin-1", 2595),
    (PADT, read_conllu, "utf-8", 786),
])
def test_real_file_counts(path, reader, encoding, n_sents):
    sents = list(reader(path, encoding=encoding))
    assert len(sents) == n_sents
    blocks, word_lines = _blocks_and_word_lines(path, encoding)
    assert blocks == n_sents
    n_words = sum(len(s) for s in sents)
    if reader is read_malttab:
        with open(path) as fh:
            word_lines = sum(1 for line in fh if line.strip())
    assert n_words == word_lines
    for s in sents:
        assert all(0 <= h <= len(s) for h in s.heads)
        assert s.ids == [str(i) for i in range(1, len(s) + 1)]
        assert len(s.tags) == len(s)


@needs_data
def test_ud_first_sentence_fields():
    it = read_conllu(UD)
    s = next(it)
    assert s.comments[0].startswith("# newdoc id = weblog-blogspot.com_nominations")
    assert s.metadata()["text"] == "From the AP comes this story :"
    assert s.words == ["From", "the", "AP", "comes", "this", "story", ":"]
    assert s.lemmas[3] == "come"
    assert s.upos == ["ADP", "DET", "PROPN", "VERB", "DET", "NOUN", "PUNCT"]
    assert s.xpos == ["IN", "DT", "NNP", "VBZ", "DT", "NN", ":"]
    assert s.tags == s.xpos
    assert s.heads == [3, 3, 4, 0, 6, 4, 4]
    assert s.rels[3] == "root"
    assert s.deps[2] == "4:obl:from"
    assert s.feats[1] == "Definite=Def|PronType=Art"
    assert s.feats_dict(1) == {"Definite": "Def", "PronType": "Art"}
    assert s.feats_dict(0) == {}
    assert s.misc_dict(0) == {}
    assert s.line == 1
    assert s.extra_lines == []
    assert s.is_tree()
    s.validate_tree()
    second = next(it)
    assert second.line == 13


@needs_data
def test_ud_multiword_and_empty_nodes_positions():
    sents = list(read_conllu(UD))
    extras = [e for s in sents for e in s.extra_lines]
    assert sum(1 for _, line in extras if re.match(r"\d+-\d+\t", line)) == 359
    assert sum(1 for _, line in extras if re.match(r"\d+\.\d+\t", line)) == 4
    for s in sents:
        for pos, line in s.extra_lines:
            wid = line.split("\t")[0]
            if "-" in wid:
                assert int(wid.split("-")[0]) == pos + 1      # range line precedes its first word
            else:
                assert int(wid.split(".")[0]) == pos          # empty node follows word `pos`
    today = next(s for s in sents if s.extra_lines and s.extra_lines[0][1].startswith("1-2\tToday's"))
    assert today.extra_lines[0][0] == 0
    assert today.words[:2] == ["Today", "'s"]


@pytest.mark.slow
@needs_data
def test_ud_write_reproduces_text_exactly(tmp_path):
    with open(UD, encoding="utf-8") as fh:
        original = fh.read()
    buf = io.StringIO()
    assert write_conllu(read_conllu(UD), buf) == 2001
    strip = lambda t: "\n".join(line.rstrip() for line in t.rstrip().split("\n"))
    assert strip(buf.getvalue()) == strip(original)
    assert buf.getvalue() == original  # this file has no trailing whitespace at all
    # to a path, and gzip-compressed, then read back equal
    out = tmp_path / "copy.conllu.gz"
    write_conllu(read_conllu(UD), out)
    with gzip.open(out, "rt", encoding="utf-8") as fh:
        assert fh.read() == original
    assert list(read_conllu(out)) == list(read_conllu(UD))


@pytest.mark.slow
@needs_data
@pytest.mark.parametrize("path,reader,writer,encoding", [
    (PADT, read_conllu, write_conllu, "utf-8"),
    (ESP_TRAIN, read_conllx, write_conllx, "utf-8"),
    (ESP_TEST, read_conllx, write_conllx, "utf-8"),
    (EUS_TRAIN, read_conllx, write_conllx, "latin-1"),
    (WSJ_DP, read_malttab, write_malttab, "utf-8"),
])
def test_round_trip_read_write_read(tmp_path, path, reader, writer, encoding):
    first = list(reader(path, encoding=encoding))
    out = tmp_path / "out.txt"
    assert writer(first, out, encoding=encoding) == len(first)
    second = list(reader(out, encoding=encoding))
    assert second == first
    # the 10-column and Malt-TAB files here have no trailing whitespace: text is identical too
    with open(path, encoding=encoding) as a, open(out, encoding=encoding) as b:
        assert b.read().rstrip("\n") == a.read().rstrip("\n")


@needs_data
def test_eus_needs_latin1_and_reports_bad_line():
    with open(EUS_TRAIN, "rb") as fh:
        expected = next(i for i, raw in enumerate(fh, 1) if _not_utf8(raw))
    with pytest.raises(FormatError) as info:
        for _ in read_conllx(EUS_TRAIN):
            pass
    assert info.value.line == expected
    assert info.value.path == EUS_TRAIN
    assert f"{EUS_TRAIN}:{expected}:" in str(info.value)
    assert "latin-1" in str(info.value)
    s = next(s for s in read_conllx(EUS_TRAIN, encoding="latin-1") if "iñaki" in " ".join(s.words).lower())
    assert s is not None


def _not_utf8(raw):
    try:
        raw.decode("utf-8")
        return False
    except UnicodeDecodeError:
        return True


@needs_data
def test_conllx_column_mapping():
    s = next(read_conllx(ESP_TRAIN))
    assert s.words[:2] == ["El", "aumento"]
    assert s.upos[:2] == ["d", "n"]        # CPOSTAG
    assert s.xpos[:2] == ["da", "nc"]      # POSTAG
    assert s.tags == s.xpos
    assert s.feats_dict(0) == {"gen": "m", "num": "s"}
    assert s.heads[:2] == [2, 8]
    assert s.rels[1] == "SUJ"
    assert s.deps[1] == "8" and s.misc[1] == "SUJ"  # PHEAD, PDEPREL kept verbatim


@needs_data
def test_malttab_wsj_fields():
    s = next(read_malttab(WSJ_DP))
    assert s.words[:3] == ["Pierre", "Vinken", ","]
    assert s.tags[:3] == ["NNP", "NNP", ","]
    assert s.xpos == s.tags and set(s.upos) == {"_"}
    assert s.heads == [2, 8, 2, 5, 6, 2, 2, 0, 8, 11, 9, 9, 15, 15, 12, 9, 16, 8]
    assert set(s.rels) == {"_"}
    assert s.is_tree()
    # the word "#" is data, not a comment
    sents = list(read_malttab(WSJ_DP))
    assert any("#" in x.words for x in sents)


@needs_data
def test_readers_stream_lazily():
    consumed = []

    def lines():
        with open(UD, encoding="utf-8") as fh:
            for line in fh:
                consumed.append(1)
                yield line

    it = read_conllu(lines())
    first = next(it)
    assert len(first) == 7
    assert len(consumed) <= 13  # the first sentence (12 lines) plus its closing blank line
    it.close()


# ------------------------------------------------------------------ sources and tolerance

SMALL = (
    "# sent_id = a\n"
    "# text = I'm here\n"
    "1-2\tI'm\t_\t_\t_\t_\t_\t_\t_\t_\n"
    "1\tI\tI\tPRON\tPRP\tCase=Nom\t3\tnsubj\t3:nsubj\t_\n"
    "2\t'm\tbe\tAUX\tVBP\t_\t3\tcop\t3:cop\t_\n"
    "2.1\tis\tbe\tAUX\tVBZ\t_\t_\t_\t3:cop\t_\n"
    "3\there\there\tADV\tRB\t_\t0\troot\t0:root\tSpaceAfter=No\n"
    "\n"
    "1\tOk\tok\tINTJ\tUH\t_\t0\troot\t0:root\t_\n"
    "\n"
)


def test_small_conllu_parsed_and_written_back():
    sents = list(read_conllu(io.StringIO(SMALL)))
    assert len(sents) == 2
    a, b = sents
    assert a.extra_lines == [(0, "1-2\tI'm\t_\t_\t_\t_\t_\t_\t_\t_"),
                             (2, "2.1\tis\tbe\tAUX\tVBZ\t_\t_\t_\t3:cop\t_")]
    assert a.heads == [3, 3, 0] and a.misc_dict(2) == {"SpaceAfter": "No"}
    assert a.comments == ["# sent_id = a", "# text = I'm here"]
    assert a.metadata() == {"sent_id": "a", "text": "I'm here"}
    assert b.words == ["Ok"] and b.comments == [] and b.line == 9
    assert a.to_conllu() + b.to_conllu() == SMALL
    buf = io.StringIO()
    write_conllu(sents, buf)
    assert buf.getvalue() == SMALL


@pytest.mark.parametrize("variant", ["crlf", "no_final_blank", "trailing_ws", "many_blanks",
                                     "bom", "bytes", "binary_file", "gzip_path", "plain_path"])
def test_tolerated_variants(tmp_path, variant):
    expected = list(read_conllu(io.StringIO(SMALL)))
    text = SMALL
    if variant == "crlf":
        src = io.StringIO(text.replace("\n", "\r\n"), newline="")
    elif variant == "no_final_blank":
        src = io.StringIO(text.rstrip("\n"))
    elif variant == "trailing_ws":
        src = io.StringIO("\n".join(line + "  \t " if line else "   " for line in text.split("\n")))
    elif variant == "many_blanks":
        src = io.StringIO("\n\n" + text.replace("\n\n", "\n \n\n\t\n") + "\n\n")
    elif variant == "bom":
        src = io.BytesIO(b"\xef\xbb\xbf" + text.encode())
    elif variant == "bytes":
        src = [line.encode() for line in text.splitlines(keepends=True)]
    elif variant == "binary_file":
        src = io.BytesIO(text.encode())
    elif variant == "gzip_path":
        src = tmp_path / "x.conllu.gz"
        with gzip.open(src, "wt") as fh:
            fh.write(text)
    else:
        src = tmp_path / "x.conllu"
        src.write_text(text)
    got = list(read_conllu(src))
    assert got == expected
    if variant == "crlf":
        assert got[0].comments == ["# sent_id = a", "# text = I'm here"]


def test_gzip_detected_by_magic_not_name(tmp_path):
    p = tmp_path / "no_extension"
    with gzip.open(p, "wt") as fh:
        fh.write(SMALL)
    assert len(list(read_conllu(p))) == 2


def test_iter_lines_numbers_and_strips_terminators():
    got = list(iter_lines(io.BytesIO(b"a\r\nb\n\nc")))
    assert got == [(1, "a"), (2, "b"), (3, ""), (4, "c")]


def test_str_source_is_a_path_not_text():
    with pytest.raises(FileNotFoundError):
        list(read_conllu("1\tx\tx\tX\tX\t_\t0\troot\t_\t_"))


# ------------------------------------------------------------------ errors with file and line

def _line(i, head="0", wid=None):
    return f"{wid or i}\tw{i}\t_\tX\tX\t_\t{head}\tdep\t_\t_\n"


def test_error_wrong_column_count():
    err = _errors(_line(1) + "2\tw\t_\tX\tX\t_\t1\tdep\t_\n")
    assert err.line == 2 and "10" in err.message and "found 9" in err.message


def test_error_space_separated_columns_hint():
    err = _errors("1 w _ X X _ 0 root _ _\n")
    assert err.line == 1 and "tabs" in err.message


def test_error_non_integer_head():
    err = _errors(_line(1) + _line(2, head="x"))
    assert err.line == 2 and "HEAD 'x' is not an integer" in err.message


def test_error_head_out_of_range_and_negative():
    err = _errors(_line(1, head="2") + _line(2, head="3") + "\n")
    assert err.line == 2 and "out of range" in err.message and "2 words" in err.message
    err = _errors(_line(1, head="-1"))
    assert err.line == 1 and "negative" in err.message


def test_error_ids_not_consecutive():
    err = _errors(_line(1) + _line(3))
    assert err.line == 2 and "expected word ID 2, found 3" in err.message
    err = _errors("\n# c\n" + _line(2))
    assert err.line == 3
    err = _errors(_line(1, wid="x"))
    assert err.line == 1 and "invalid ID" in err.message


def test_error_bad_multiword_and_empty_node():
    err = _errors(_line(1) + "3-4\tab\t_\t_\t_\t_\t_\t_\t_\t_\n" + _line(2))
    assert err.line == 2 and "range" in err.message
    err = _errors(_line(1) + "1-2\tab\t_\t_\t_\t_\t_\t_\t_\t_\n")
    assert err.line == 2
    err = _errors(_line(1) + "2-3\tab\t_\t_\t_\t_\t_\t_\t_\t_\n" + _line(2) + "\n")
    assert err.line == 2 and "ends at word 3" in err.message
    err = _errors(_line(1) + "2.1\tx\t_\t_\t_\t_\t_\t_\t_\t_\n")
    assert err.line == 2 and "empty node" in err.message


def test_error_empty_sentence_only_comments():
    err = _errors(_line(1) + "\n# sent_id = 2\n# text = nothing\n\n" + _line(1))
    assert err.line == 3 and "no word lines" in err.message
    err = _errors(_line(1) + "\n# trailing comment at end of file\n")
    assert err.line == 3


def test_error_comment_inside_sentence():
    err = _errors(_line(1) + "# late\n")
    assert err.line == 2 and "comment" in err.message


def test_error_message_names_file_and_line(tmp_path):
    p = tmp_path / "bad.conllu"
    p.write_text(SMALL + _line(1) + _line(2, head="7") + "\n")
    with pytest.raises(FormatError) as info:
        list(read_conllu(p))
    assert info.value.path == str(p) and info.value.line == 12
    assert str(info.value).startswith(f"{p}:12: ")


def test_error_invalid_utf8_line(tmp_path):
    p = tmp_path / "latin.conllu"
    p.write_bytes(_line(1).encode() + "\n1\tni\u00f1o\t_\tX\tX\t_\t0\troot\t_\t_\n".encode("latin-1"))
    with pytest.raises(FormatError) as info:
        list(read_conllu(p))
    assert info.value.line == 3 and info.value.path == str(p)
    assert [s.words for s in read_conllu(p, encoding="latin-1")] == [["w1"], ["ni\u00f1o"]]


def test_error_sentences_before_the_error_are_yielded():
    it = read_conllu(io.StringIO(_line(1) + "\n" + _line(1, head="q")))
    assert next(it).words == ["w1"]
    with pytest.raises(FormatError):
        next(it)


def test_conllx_errors():
    with pytest.raises(FormatError) as info:
        list(read_conllx(io.StringIO(_line(1) + "1-2\tab\t_\t_\t_\t_\t_\t_\t_\t_\n")))
    assert info.value.line == 2 and "invalid ID" in info.value.message
    with pytest.raises(FormatError) as info:
        list(read_conllx(io.StringIO(_line(1) + _line(2, head="9"))))
    assert info.value.line == 2


def test_malttab_errors_and_variants():
    s = list(read_malttab(io.StringIO("a\tDT\t2\tdet\nb\tNN\t0\n")))
    assert len(s) == 1 and s[0].rels == ["det", "_"] and s[0].heads == [2, 0]
    for text, line, what in [
        ("a\tDT\t2\nb\tNN\n", 2, "3 or 4"),
        ("a\tDT\t2\nb\tNN\t0\tx\ty\n", 2, "3 or 4"),
        ("a\tDT\t2\nb\tNN\tz\n", 2, "not an integer"),
        ("a\tDT\t0\n\na\tDT\t0\nb\tNN\t5\n", 4, "out of range"),
        ("a\tDT\t-2\n", 1, "negative"),
    ]:
        with pytest.raises(FormatError) as info:
            list(read_malttab(io.StringIO(text)))
        assert info.value.line == line and what in info.value.message


# ------------------------------------------------------------------ DepSentence

def test_depsentence_defaults_and_checks():
    s = DepSentence(words=["a", "b"], heads=[2, 0], xpos=["DT", "NN"])
    assert s.ids == ["1", "2"] and s.lemmas == ["_", "_"] and s.upos == ["_", "_"]
    assert s.tags == ["DT", "NN"] and len(s) == 2
    s2 = DepSentence(words=["a"], heads=[0], upos=["DET"])
    assert s2.tags == ["DET"]
    with pytest.raises(ValueError):
        DepSentence(words=["a", "b"], heads=[0])
    with pytest.raises(ValueError):
        DepSentence(words=["a"], heads=[0], rels=["x", "y"])
    assert DepSentence() == DepSentence() and len(DepSentence()) == 0
    np = pytest.importorskip("numpy")
    arr = DepSentence(words=("a", "b"), heads=np.array([2, 0]))
    assert arr.heads == [2, 0] and type(arr.heads[0]) is int and arr.words == ["a", "b"]
    assert arr == DepSentence(words=["a", "b"], heads=[2, 0]) and arr.is_tree()
    # line is informational: not part of equality
    assert DepSentence(words=["a"], heads=[0], line=5) == DepSentence(words=["a"], heads=[0])


def test_validate_tree_cycles_and_roots():
    ok = DepSentence(words=list("abc"), heads=[2, 0, 2])
    assert ok.is_tree() and ok.tree_error() is None
    ok.validate_tree()
    cyc = DepSentence(words=list("abcd"), heads=[2, 0, 4, 3])
    assert not cyc.is_tree()
    assert "cycle" in cyc.tree_error() and "[3, 4]" in cyc.tree_error()
    with pytest.raises(FormatError):
        cyc.validate_tree()
    two_roots = DepSentence(words=list("ab"), heads=[0, 0])
    assert not two_roots.is_tree() and two_roots.is_tree(single_root=False)
    self_loop = DepSentence(words=list("ab"), heads=[0, 2])
    assert not self_loop.is_tree(single_root=False)
    bad = DepSentence(words=list("ab"), heads=[0, 5])
    assert "outside" in bad.tree_error()


def test_cycle_is_not_a_reading_error():
    text = _line(1, head="2") + _line(2, head="1") + "\n"
    (s,) = read_conllu(io.StringIO(text))
    assert s.heads == [2, 1] and not s.is_tree(single_root=False)
    with pytest.raises(FormatError) as info:
        s.validate_tree()
    assert info.value.line == 1 and "cycle" in info.value.message


# ------------------------------------------------------------------ writers

def test_writers_formats_and_errors():
    s = DepSentence(words=["a", "b"], heads=[2, 0], xpos=["DT", "NN"], rels=["det", "root"],
                    deps=["2:det", "0:root"], comments=["# x = 1"],
                    extra_lines=[(0, "1-2\tab\t_\t_\t_\t_\t_\t_\t_\t_")])
    buf = io.StringIO()
    write_conllx([s], buf)
    assert buf.getvalue() == ("# x = 1\n1\ta\t_\t_\tDT\t_\t2\tdet\t2:det\t_\n"
                              "2\tb\t_\t_\tNN\t_\t0\troot\t0:root\t_\n\n")
    buf = io.StringIO()
    write_conllx([s], buf, comments=False, columns_9_10=False)
    assert buf.getvalue() == "1\ta\t_\t_\tDT\t_\t2\tdet\t_\t_\n2\tb\t_\t_\tNN\t_\t0\troot\t_\t_\n\n"
    buf = io.StringIO()
    write_malttab([s, DepSentence(words=["c"], heads=[0], upos=["X"])], buf)
    assert buf.getvalue() == "a\tDT\t2\tdet\nb\tNN\t0\troot\n\nc\tX\t0\n\n"
    back = list(read_malttab(io.StringIO(buf.getvalue())))
    assert back[0].words == ["a", "b"] and back[0].tags == ["DT", "NN"] and back[1].tags == ["X"]
    # binary file objects are accepted too
    raw = io.BytesIO()
    write_conllu([s], raw)
    assert raw.getvalue().decode().startswith("# x = 1\n1-2\tab")
    assert list(read_conllu(io.BytesIO(raw.getvalue()))) == [s]
    with pytest.raises(ValueError):
        write_conllu([DepSentence(words=["a\tb"], heads=[0])], io.StringIO())
    with pytest.raises(ValueError):
        write_conllu([DepSentence(words=["a"], heads=[3])], io.StringIO())
    with pytest.raises(ValueError):
        write_malttab([DepSentence()], io.StringIO())
    # empty strings become "_" so the output reads back
    buf = io.StringIO()
    write_conllu([DepSentence(words=["a"], heads=[0], lemmas=[""])], buf)
    assert list(read_conllu(io.StringIO(buf.getvalue())))[0].lemmas == ["_"]


def test_write_conllu_fast_path_same_text_and_errors():
    """The writer formats a column at a time; the text and the errors are those of joining
    each row's cells (empty -> "_", str() of other values) and of the per-value checks."""
    import numpy as np

    from fastspectral.trees.conll import _cell

    def reference(sent):
        rows = zip(sent.ids, sent.words, sent.lemmas, sent.upos, sent.xpos, sent.feats,
                   sent.heads, sent.rels, sent.deps, sent.misc)
        lines = ["\t".join(map(_cell, r)) for r in rows]
        for pos, text in sorted(sent.extra_lines, key=lambda e: e[0], reverse=True):
            lines.insert(pos, text)
        return "\n".join(["# c"] + lines + [""]) + "\n"

    s = DepSentence(words=["a", "b", "c"], heads=[2, 0, np.int64(2)], lemmas=["", "x", "y"],
                    misc=["_", "", "K=v"], comments=["# c"],
                    extra_lines=[(0, "1-2\tab\t_\t_\t_\t_\t_\t_\t_\t_"),
                                 (3, "3.1\tz\t_\t_\t_\t_\t_\t_\t_\t_")])
    assert s.to_conllu() == reference(s)
    t = DepSentence(words=["a", "b"], heads=[True, 0], comments=["# c"])
    assert t.to_conllu() == reference(t)
    for bad in ("a\tb", "a\nb", "a\rb"):
        with pytest.raises(ValueError, match="tab or a line break"):
            DepSentence(words=["x", bad], heads=[0, 1]).to_conllu()
    with pytest.raises(ValueError, match="outside"):
        DepSentence(words=["x", "y"], heads=[0, -1]).to_conllu()


# ------------------------------------------------------------------ from_tagged, toy_treebank
def test_from_tagged_and_toy_treebank():
    import doctest
    import fastspectral.trees.conll as conll
    s = DepSentence.from_tagged("a/DT 3/4/CD cat/NN", [3, 3, 0])
    assert s.words == ["a", "3/4", "cat"] and s.xpos == ["DT", "CD", "NN"]
    assert s.heads == [3, 3, 0] and s.is_tree()
    assert DepSentence.from_tagged("a/DT cat/NN").heads == [-1, -1]
    for bad in ("a/DT cat", "a/DT /NN", "a/DT cat/"):
        with pytest.raises(ValueError, match="is not word/TAG"):
            DepSentence.from_tagged(bad)
    bank = conll.toy_treebank(2)
    assert len(bank) == 8 and all(s.is_tree() for s in bank)
    assert bank[0] == bank[4] and bank[0] is not bank[4]
    bank[0].heads[0] = 1                      # new objects each call
    assert conll.toy_treebank(1)[0].heads == [2, 3, 0]
    result = doctest.testmod(conll, optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.failed == 0 and result.attempted >= 3
