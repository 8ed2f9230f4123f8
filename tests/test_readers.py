"""Tests of fastspectral.trees.readers (detection, dispatch, raw sentences) and trees.brown."""
import gzip
import io
import os

import pytest

from fastspectral.errors import FormatError
from fastspectral.trees.brown import read_brown, write_brown
from fastspectral.trees.conll import DepSentence
from fastspectral.trees.readers import (FORMATS, RawSentence, detect_format, iter_sentences,
                                        read_sentences, read_treebank)
from conftest import data_path

# the shared data folder beside the checkout (tests/conftest.py)
DATA = os.fspath(data_path())
BROWN = os.path.join(DATA, "brown", "brown-tagged.txt")
needs_data = pytest.mark.skipif(not os.path.isdir(DATA), reason="shared data not available")

REAL = [
    ("dep/wsj-sample.dp", "malttab", "utf-8", 3914),
    ("ud/en_ewt-ud-dev.conllu", "conllu", "utf-8", 2001),
    ("conll2007/esp.train", "conllx", "utf-8", 2949),
    ("conll2007/esp.test", "conllx", "utf-8", 563),
    ("conll2007/eus.train", "conllx", "latin-1", 2595),
    ("arabic/padt-v1.3-dev.conllu", "conllu", "utf-8", 786),
    ("ptb/wsj-sample.mrg", "ptb", "utf-8", None),
    ("ptb/wsj22.trees", "ptb", "utf-8", None),
    ("brown/brown-tagged.txt", "brown", "utf-8", 57340),
]


# ------------------------------------------------------------------ detection

@needs_data
@pytest.mark.parametrize("rel,fmt,encoding,count", REAL)
def test_detect_format_real_files(rel, fmt, encoding, count):
    assert detect_format(os.path.join(DATA, rel)) == fmt


@needs_data
@pytest.mark.parametrize("rel,fmt,encoding,count", [r for r in REAL if r[1] != "brown"])
def test_read_treebank_real_files(rel, fmt, encoding, count):
    n = 0
    first = None
    for item in read_treebank(os.path.join(DATA, rel), encoding=encoding):
        if first is None:
            first = item
        n += 1
    if count is not None:
        assert n == count
    else:
        assert n > 0
    if fmt == "ptb":
        assert type(first).__name__ == "Tree"
        assert first.leaves()[:2] in (["Pierre", "Vinken"], ["Influential", "members"])
    else:
        assert isinstance(first, DepSentence) and len(first) > 0


@needs_data
def test_brown_streaming_count():
    n_sents = n_tokens = 0
    slashed = None
    for sent in read_brown(BROWN):
        n_sents += 1
        n_tokens += len(sent)
        if slashed is None:
            slashed = next((wt for wt in sent if "/" in wt[0]), None)
    assert n_sents == 57340
    assert n_tokens == 1161192
    assert slashed is not None and "/" not in slashed[1]   # e.g. ('1-1/2', 'cd')


@needs_data
def test_brown_first_sentence_and_dispatch():
    first = next(read_brown(BROWN))
    assert first[:3] == [("The", "at"), ("Fulton", "np-tl"), ("County", "nn-tl")]
    assert first[-1] == (".", ".")
    via = next(read_treebank(BROWN))
    assert via == first


@pytest.mark.slow
@needs_data
def test_read_treebank_on_open_files_replays_sniffed_lines():
    path = os.path.join(DATA, "ud", "en_ewt-ud-dev.conllu")
    with open(path, "rb") as fh:
        sents = list(read_treebank(fh))
    assert len(sents) == 2001
    assert sents[0].comments[0].startswith("# newdoc id")
    with open(path, encoding="utf-8") as fh:
        assert list(read_treebank(fh)) == sents
    # a seekable file is rewound by detect_format
    with open(path, encoding="utf-8") as fh:
        assert detect_format(fh) == "conllu"
        assert fh.readline().startswith("# newdoc id")
    path = os.path.join(DATA, "ptb", "wsj22.trees")
    with open(path, encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    assert sum(1 for _ in read_treebank(lines)) == 1700


@needs_data
def test_read_treebank_errors_keep_file_name():
    path = os.path.join(DATA, "conll2007", "eus.train")
    with pytest.raises(FormatError) as info:
        list(read_treebank(path))
    assert info.value.path == path and info.value.line > 0
    with open(path, "rb") as fh:
        with pytest.raises(FormatError) as info2:
            list(read_treebank(fh))
    assert info2.value.path == path and info2.value.line == info.value.line


def _write(tmp_path, name, text, gz=False):
    p = tmp_path / name
    if gz:
        with gzip.open(p, "wt", encoding="utf-8") as fh:
            fh.write(text)
    else:
        p.write_text(text, encoding="utf-8")
    return p


CONLLX_LINE = "1\tEl\tel\td\tda\tgen=m\t0\tROOT\t_\t_\n"
CONLLU_LINE = "1\tThe\tthe\tDET\tDT\t_\t0\troot\t0:root\t_\n"


@pytest.mark.parametrize("name,text,expected", [
    ("a.txt", "( (S (NP (DT a)) (VP (VBZ is))) )\n", "ptb"),
    ("a.txt", "\n\n   (TOP (S (NN x)))\n", "ptb"),
    ("a.txt", CONLLX_LINE + "\n", "conllx"),
    ("a.txt", CONLLU_LINE + "\n", "conllu"),              # UPOS values -> CoNLL-U
    ("a.txt", "# sent_id = 1\n" + CONLLX_LINE, "conllu"),  # comments are CoNLL-U only
    ("a.txt", "1-2\tdel\t_\t_\t_\t_\t_\t_\t_\t_\n" + CONLLX_LINE, "conllu"),
    ("a.conll", CONLLU_LINE, "conllx"),                   # extension breaks the tie
    ("a.conllx", CONLLU_LINE, "conllx"),
    ("a.conllu", CONLLX_LINE, "conllu"),
    ("a.conll", "# c\n" + CONLLU_LINE, "conllu"),         # CoNLL-U-only content wins
    ("a.txt", "#\t#\t2\nx\tNN\t0\n", "malttab"),          # '#' word, not a comment
    ("a.txt", "a\tDT\t2\tdet\nb\tNN\t0\troot\n", "malttab"),
    ("a.txt", "The/DT dog/NN 1/2/CD\n", "brown"),
    ("a.mrg", CONLLX_LINE, "conllx"),                     # content beats a wrong extension
    ("a.dp", "", "malttab"),                              # empty: extension only
    ("a.trees", "\n\n", "ptb"),
    ("a.conllu.gz", CONLLX_LINE, "conllu"),               # .gz stripped before the extension
])
def test_detect_format_rules(tmp_path, name, text, expected):
    p = _write(tmp_path, name, text, gz=name.endswith(".gz"))
    assert detect_format(p) == expected
    assert detect_format(p) in FORMATS


def test_detect_format_gzip_content(tmp_path):
    p = _write(tmp_path, "x.gz", "The/DT dog/NN\n", gz=True)
    assert detect_format(p) == "brown"
    assert list(read_treebank(p)) == [[("The", "DT"), ("dog", "NN")]]


def test_detect_format_failures(tmp_path):
    p = _write(tmp_path, "plain.txt", "\n# comment\nthe dog barks\n")
    with pytest.raises(FormatError) as info:
        detect_format(p)
    assert info.value.line == 3 and info.value.path == str(p)
    assert str(info.value).startswith(f"{p}:3: ")
    p = _write(tmp_path, "empty.txt", "\n  \n")
    with pytest.raises(FormatError) as info:
        detect_format(p)
    assert "empty" in info.value.message and info.value.path == str(p)
    with pytest.raises(TypeError):
        detect_format(iter(["a/b\n"]))


def test_read_treebank_explicit_format_and_bad_name(tmp_path):
    p = _write(tmp_path, "x.txt", "a\tDT\t2\nb\tNN\t0\n")
    (s,) = read_treebank(p, format="malttab")
    assert s.words == ["a", "b"] and s.heads == [2, 0]
    with pytest.raises(ValueError):
        read_treebank(p, format="xml")
    with pytest.raises(FormatError) as info:  # wrong explicit format: reader error with line
        list(read_treebank(p, format="conllu"))
    assert info.value.line == 1


def test_read_treebank_iterable_of_lines():
    lines = ["\n", "a\tDT\t2\n", "b\tNN\t0\n", "\n", "c\tNN\t0\n"]
    sents = list(read_treebank(lines))
    assert [s.words for s in sents] == [["a", "b"], ["c"]]
    assert [s.line for s in sents] == [2, 5]          # line numbers survive the sniffing
    lines = [CONLLU_LINE, "\n"] * 300                    # longer than the sniffing window
    assert len(list(read_treebank(iter(lines)))) == 300
    with pytest.raises(FormatError) as info:
        list(read_treebank(["a\tDT\t2\n", "b\tNN\tq\n"]))
    assert info.value.line == 2


def test_read_treebank_ptb_dispatch(tmp_path):
    p = _write(tmp_path, "x.mrg", "( (S (NP (DT a)) (VP (VBZ is))) )\n(TOP (NN b))\n")
    trees = list(read_treebank(p))
    assert len(trees) == 2 and trees[0].leaves() == ["a", "is"] and trees[1].label == "TOP"


# ------------------------------------------------------------------ brown errors and writer

def test_brown_errors_name_file_and_line(tmp_path):
    for bad, what in [("word", "no '/tag'"), ("word/", "empty tag"), ("/tag", "empty word")]:
        p = _write(tmp_path, "b.txt", f"a/DT b/NN\n\n  \nx/X {bad} y/Y\n")
        it = read_brown(p)
        assert next(it) == [("a", "DT"), ("b", "NN")]
        with pytest.raises(FormatError) as info:
            next(it)
        assert info.value.line == 4 and info.value.path == str(p)
        assert what in info.value.message and repr(bad) in info.value.message


def test_brown_tolerance_and_round_trip(tmp_path):
    src = io.BytesIO(b"a/DT  b/c/NN \r\n\r\n\tx/X\r\n")
    sents = list(read_brown(src))
    assert sents == [[("a", "DT"), ("b/c", "NN")], [("x", "X")]]
    p = tmp_path / "out.pos.gz"
    assert write_brown(sents, p) == 2
    assert list(read_brown(p)) == sents
    with pytest.raises(ValueError):
        write_brown([[("a b", "NN")]], io.StringIO())
    with pytest.raises(ValueError):
        write_brown([[("a", "N/N")]], io.StringIO())


# ------------------------------------------------------------------ raw sentences

def test_read_sentences_tagged_untagged_and_empty(tmp_path):
    p = _write(tmp_path, "in.txt",
               "The/DT dog/NN barks/VBZ\n"
               "The dog barks\n"
               "\n"
               "and/or this\n"          # one token untagged -> whole line untagged
               "1/2/CD x//SYM\n"        # tag after the LAST '/'
               "a/ b/NN\n"              # empty tag -> untagged line
               "   \n"
               "end/NN")                # no final newline
    got = read_sentences(p)
    assert isinstance(got, list) and all(isinstance(s, RawSentence) for s in got)
    assert got == [
        RawSentence(["The", "dog", "barks"], ["DT", "NN", "VBZ"], 1),
        RawSentence(["The", "dog", "barks"], None, 2),
        RawSentence([], None, 3),
        RawSentence(["and/or", "this"], None, 4),
        RawSentence(["1/2", "x/"], ["CD", "SYM"], 5),
        RawSentence(["a/", "b/NN"], None, 6),
        RawSentence([], None, 7),
        RawSentence(["end"], ["NN"], 8),
    ]
    words, tags, line = got[0]
    assert (words[0], tags[0], line) == ("The", "DT", 1)
    assert [s.line for s in read_sentences(p, skip_empty=True)] == [1, 2, 4, 5, 6, 8]
    plain = read_sentences(p, tagged=False)
    assert plain[0] == RawSentence(["The/DT", "dog/NN", "barks/VBZ"], None, 1)
    assert all(s.tags is None for s in plain)


def test_read_sentences_tagged_required_and_streaming():
    with pytest.raises(FormatError) as info:
        read_sentences(io.StringIO("a/DT\nb/NN c\n"), tagged=True)
    assert info.value.line == 2 and "'c'" in info.value.message
    ok = read_sentences(io.StringIO("a_DT\n\nb/c_NN\n"), tagged=True, sep="_")
    assert ok == [RawSentence(["a"], ["DT"], 1), RawSentence([], None, 2),
                  RawSentence(["b/c"], ["NN"], 3)]
    it = iter_sentences(["x y\r\n", "z\n"])
    assert next(it) == RawSentence(["x", "y"], None, 1)
    assert next(it) == RawSentence(["z"], None, 2)
    with pytest.raises(StopIteration):
        next(it)


def test_read_sentences_bad_encoding(tmp_path):
    p = tmp_path / "l1.txt"
    p.write_bytes(b"ok line\nni\xf1o\n")
    with pytest.raises(FormatError) as info:
        read_sentences(p)
    assert info.value.line == 2
    assert read_sentences(p, encoding="latin-1")[1].words == ["ni\u00f1o"]


def test_unparsed_dependency_input():
    """Parser input may lack heads: ``heads_optional=True`` reads HEAD ``_`` as -1 (and
    Malt-TAB ``word<TAB>tag`` lines); the default still refuses it, naming file and line."""
    from fastspectral.trees.conll import read_conllu, read_malttab
    from fastspectral.trees.readers import read_treebank

    conllu = "1\tThe\tthe\tDET\tDT\t_\t_\t_\t_\t_\n2\tdog\tdog\tNOUN\tNN\t_\t_\t_\t_\t_\n\n"
    with pytest.raises(FormatError, match="HEAD '_' is not an integer"):
        list(read_conllu(io.StringIO(conllu)))
    (s,) = read_conllu(io.StringIO(conllu), heads_optional=True)
    assert s.words == ["The", "dog"] and s.heads == [-1, -1]
    malt = "The\tDT\nold\tJJ\t_\ndog\tNN\t0\n\n"
    with pytest.raises(FormatError, match="3 or 4"):
        list(read_malttab(io.StringIO(malt)))
    (m,) = read_malttab(io.StringIO(malt), heads_optional=True)
    assert m.tags == ["DT", "JJ", "NN"] and m.heads == [-1, -1, 0]
    (t,) = read_treebank(io.StringIO("The\tDT\t_\ndog\tNN\t_\n\n"), heads_optional=True)
    assert t.words == ["The", "dog"] and t.heads == [-1, -1]


# ------------------------------------------------------------------ shared file helpers

def test_file_helpers_shared_by_every_reader(tmp_path):
    """trees.files is the one home of the source / output helpers: the readers and writers of
    every format use it, so gzip by magic bytes, stdin and binary outputs behave alike."""
    from fastspectral.trees import conll, files
    from fastspectral.trees.ptb import read_ptb, write_brackets
    from fastspectral.trees.tree import Tree

    assert conll.iter_lines is files.iter_lines            # re-exported for one version
    # gzip recognised by content for PTB too (the name has no .gz)
    p = tmp_path / "trees.mrg"
    with gzip.open(p, "wt", encoding="utf-8") as fh:
        fh.write("(TOP (A a))\r\n(TOP (B b))\n")
    assert [t.leaves() for t in read_ptb(p)] == [["a"], ["b"]]
    # an open binary destination is written, flushed and detached, not closed
    buf = io.BytesIO()
    assert write_brackets([Tree.fromstring("(TOP (A a))")], buf) == 1
    assert not buf.closed and buf.getvalue() == b"(TOP (A a))\n"
    with pytest.raises(TypeError, match="cannot write"):
        with files.open_output(42):
            pass
    # standard input read whole into a seekable, named buffer: detection then reading work
    stdin = io.TextIOWrapper(io.BytesIO(b"The/DT dog/NN\nni\xf1o/NN\n"), encoding="latin-1")
    src = files.read_stdin(stdin)
    assert files.source_name(src) == files.STDIN_NAME and files.is_stdio("-")
    assert not files.is_stdio("x") and files.is_stdio(None)
    assert detect_format(src) == "brown"
    with pytest.raises(FormatError) as info:
        list(read_treebank(src))
    assert info.value.path == "<stdin>" and info.value.line == 2
    src.seek(0)
    assert list(read_treebank(src, encoding="latin-1"))[1] == [("ni\u00f1o", "NN")]
    with pytest.raises(TypeError, match="bytes object"):
        list(files.iter_lines(b"abc"))
