"""Property-based tests of every reader: random bytes give trees / sentences or a
FormatError, never another exception; random trees and CoNLL sentences round-trip through
their writer and reader; damaged files (a dropped bracket, an edited column, a truncated
``.gz``) give a FormatError naming the file and the line.

The readers are those of every input format (bracketed trees, CoNLL-U / CoNLL-X / Malt-TAB,
Brown ``word/tag``, plain text, each forced and detected) and of every model kind of the
registry (``fastspectral.models.REGISTRY``: what ``fastspectral train KIND`` reads, by the
kind's input kind), so that a new kind is fuzzed by its registry line alone."""
from __future__ import annotations

import argparse
import gzip
import io

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from fastspectral import models
from fastspectral.errors import FormatError
from fastspectral.trees import (DepSentence, Tree, read_brown, read_conllu, read_conllx,
                                read_malttab, read_ptb, read_treebank, write_brackets,
                                write_conllu, write_conllx)
from fastspectral.trees.brown import write_brown
from fastspectral.trees.conll import write_malttab
from fastspectral.trees.readers import detect_format, read_sentences

FAST = settings(max_examples=40, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])

def _corpus(name, *args, **kw):
    """A reader of :mod:`fastspectral.trees.corpus` (the readers of the sequence models, the
    lexical disambiguator, the unsupervised parsers and the training data)."""
    from fastspectral.trees import corpus

    return lambda p: getattr(corpus, name)(p, *args, **kw)


READERS = {
    "ptb": lambda p: list(read_ptb(p)),
    "conllu": lambda p: list(read_conllu(p)),
    "conllu-heads-optional": lambda p: list(read_conllu(p, heads_optional=True)),
    "conllx": lambda p: list(read_conllx(p)),
    "malttab": lambda p: list(read_malttab(p)),
    "brown": lambda p: list(read_brown(p)),
    "treebank": lambda p: list(read_treebank(p)),
    **{f"treebank-{fmt}": (lambda fmt: lambda p: list(read_treebank(p, format=fmt)))(fmt)
       for fmt in ("ptb", "conllu", "conllx", "malttab", "brown")},
    "detect": lambda p: detect_format(p),
    "sentences": lambda p: list(read_sentences(p)),
    "tagged": lambda p: list(read_sentences(p, tagged=True)),
    "plain-text": lambda p: list(read_sentences(p, tagged=False)),
    **{f"corpus-{fmt}": _corpus("read_corpus", fmt)
       for fmt in ("auto", "brown", "text", "ptb", "conll")},
    **{f"sequences-{fmt}": _corpus("read_sequences", "word", fmt)
       for fmt in ("auto", "text", "tagged", "ptb", "conll")},
    "sequences-tags": _corpus("read_sequences", "tag"),
    "words": _corpus("read_words"),
    "tagged-sentences": _corpus("read_tagged"),
    "conllu-sentences": _corpus("read_conllu_sentences"),
    "tagging-input": _corpus("read_tagging_input"),
    "brown-universal-tags": _corpus("read_brown_universal"),
}


def training_reader(kind: str):
    """What ``fastspectral train KIND`` reads (``cli.kit.read_training_data`` for the kind's
    input kind)."""
    from fastspectral.cli.kit import read_training_data

    input_kind = models.get(kind).input_kind
    return lambda p: read_training_data(argparse.Namespace(treebank=str(p)), input_kind)


REGISTRY_KINDS = sorted(models.REGISTRY)
for _kind in REGISTRY_KINDS:
    READERS[f"train-{_kind}"] = training_reader(_kind)


def read_or_format_error(reader, path):
    """The reader's result, or None for a FormatError naming ``path`` (and a line when it has
    one, in its message as ``path:line:``): never another exception."""
    try:
        return READERS[reader](path)
    except FormatError as exc:
        assert exc.path == str(path), (exc.path, path)
        assert exc.line is None or exc.line >= 1
        where = f"{path}:{exc.line}: " if exc.line is not None else f"{path}: "
        assert str(exc).startswith(where), (str(exc), where)
        return None


# ---- random bytes -------------------------------------------------------------------------------
# bytes biased towards the characters the formats are made of
PIECES = st.sampled_from([b"(", b")", b" ", b"\t", b"\n", b"\r\n", b"#", b"_", b"/", b"-",
                          b"1", b"2", b"0", b"3-4", b"1.1", b"NP", b"the", b"\xc3\xa9", b"\xff",
                          b"\x00", b"\xef\xbb\xbf", b"(S", b"(TOP ", b"word/TAG "])
RANDOM_TEXT = st.one_of(st.binary(max_size=300),
                        st.lists(PIECES, max_size=60).map(b"".join))


@FAST
@given(data=RANDOM_TEXT, reader=st.sampled_from(sorted(READERS)), gz=st.booleans())
def test_random_bytes(tmp_path, data, reader, gz):
    path = tmp_path / ("in.gz" if gz else "in.txt")
    path.write_bytes(gzip.compress(data) if gz else data)
    read_or_format_error(reader, path)


# text of each format with an edit: well-formed lines of every format, shuffled and cut
LINES = st.sampled_from([
    "(TOP (S (NP (DT the) (NN dog)) (VP (VBZ barks))))", "( (S (NN a)) )", "(TOP", "(NN x))",
    "1\tthe\tthe\tDET\tDT\t_\t2\tdet\t_\t_", "2\tdog\tdog\tNOUN\tNN\t_\t0\troot\t_\t_",
    "1-2\tdont\t_\t_\t_\t_\t_\t_\t_\t_", "1.1\tx\tx\tX\tX\t_\t_\t_\t_\t_",
    "# sent_id = 1", "# newdoc id = d", "the\tDT\t2", "dog\tNN\t0\troot", "The/at dog/nn barks/vbz",
    "the dog barks", "a/DT b", "/x y/", "", " ", "\t", "\u00e9t\u00e9/nn", "1\ta\tb", "x" * 40])


@FAST
@given(lines=st.lists(LINES, max_size=12), kind=st.sampled_from(REGISTRY_KINDS),
       gz=st.booleans())
def test_every_registry_kind_reads_mixed_lines(tmp_path, lines, kind, gz):
    """Lines of every format mixed: what each registry kind trains on is read, or a
    FormatError names the file and line."""
    data = "\n".join(lines).encode()
    path = tmp_path / ("in.gz" if gz else "in.txt")
    path.write_bytes(gzip.compress(data) if gz else data)
    read_or_format_error(f"train-{kind}", path)


@FAST
@given(lines=st.lists(LINES, max_size=12), reader=st.sampled_from(sorted(READERS)))
def test_every_reader_reads_mixed_lines(tmp_path, lines, reader):
    path = tmp_path / "in.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    read_or_format_error(reader, path)


@pytest.mark.parametrize("kind", REGISTRY_KINDS)
def test_every_registry_kind_has_a_reader(kind, tmp_path):
    """Each kind reads a file of its input kind (so the fuzzing above reaches a real reader,
    not only its errors)."""
    entry = models.get(kind)
    path = tmp_path / "ok.txt"
    if entry.input_kind == "sequences":
        path.write_text("the dog barks\na cat sleeps\n")
    elif entry.input_kind == "dependency":
        path.write_text("1\tthe\tthe\tDET\tDT\t_\t2\tdet\t_\t_\n"
                        "2\tdog\tdog\tNOUN\tNN\t_\t0\troot\t_\t_\n\n")
    else:
        path.write_text("(TOP (S (NP (DT the) (NN dog)) (VP (VBZ barks))))\n")
    items = READERS[f"train-{kind}"](path)
    assert len(items) >= 1


@FAST
@given(data=st.lists(PIECES, min_size=5, max_size=80).map(b"".join),
       reader=st.sampled_from(sorted(READERS)), cut=st.integers(1, 40))
def test_truncated_gzip_names_file_and_line(tmp_path, data, reader, cut):
    """A truncated ``.gz`` file: a FormatError with the file name and the line reached."""
    z = gzip.compress(data * 20)
    assume(cut < len(z) - 8)
    path = tmp_path / "cut.gz"
    path.write_bytes(z[:-cut])
    try:
        READERS[reader](path)
    except FormatError as exc:
        assert exc.path == str(path) and exc.line is not None and exc.line >= 1
        if "gzip" in str(exc):
            assert str(exc).startswith(f"{path}:{exc.line}: ")
    else:
        pytest.fail("a truncated gzip file was read without an error")


# ---- constituency trees -------------------------------------------------------------------------
LABELS = st.sampled_from(["S", "NP", "VP", "PP", "NP-SBJ", "ADJP", "SBAR", "@S", "S^VP", "X"])
WORDS = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc", "Zs", "Zl", "Zp"),
                                       blacklist_characters="()\u0085\u00a0\u1680\u180e"
                                                            "\u2000\u2001\u2002\u2003\u2004"
                                                            "\u2005\u2006\u2007\u2008\u2009"
                                                            "\u200a\u2028\u2029\u202f\u205f"
                                                            "\u3000\ufeff\x1c\x1d\x1e\x1f"),
                min_size=1, max_size=6)
PRETERMINAL = st.builds(lambda t, w: Tree(t, [w]), st.sampled_from(["DT", "NN", "VB", ",", "."]),
                        WORDS)
TREES = st.recursive(PRETERMINAL, lambda kids: st.builds(lambda l, c: Tree(l, c), LABELS,
                                                         st.lists(kids, min_size=1, max_size=3)),
                     max_leaves=12).map(lambda t: Tree("TOP", [t]))


@FAST
@given(trees=st.lists(TREES, min_size=1, max_size=4), gz=st.booleans())
def test_trees_round_trip(tmp_path, trees, gz):
    path = tmp_path / ("t.mrg.gz" if gz else "t.mrg")
    write_brackets(trees, path)
    back = list(read_ptb(path))
    assert [str(t) for t in back] == [str(t) for t in trees]


@FAST
@given(trees=st.lists(TREES, min_size=2, max_size=5), data=st.data())
def test_trees_with_a_dropped_bracket(tmp_path, trees, data):
    """One ``(`` or ``)`` deleted: a FormatError at a line of the damaged tree (or the tree
    after it), or trees that still parse (a dropped pair can leave a valid file)."""
    lines = [t.to_string() for t in trees]
    k = data.draw(st.integers(0, len(lines) - 1), label="tree")
    brackets = [i for i, ch in enumerate(lines[k]) if ch in "()"]
    i = data.draw(st.sampled_from(brackets), label="bracket")
    lines[k] = lines[k][:i] + lines[k][i + 1:]
    path = tmp_path / "damaged.mrg"
    path.write_text("\n".join(lines) + "\n")
    try:
        list(read_ptb(path))
    except FormatError as exc:
        assert exc.path == str(path)
        assert k + 1 <= exc.line <= k + 2, (exc.line, k + 1, str(exc))


def test_missing_bracket_points_at_its_tree(tmp_path):
    """The issue's case: a ``)`` missing on line 7 of a raw multi-line file is reported there,
    not at the next tree as "node without a label"."""
    text = ("( (S (NP-SBJ (NNP Pierre) (NNP Vinken))\n"
            "    (VP (MD will) (VP (VB join) (NP (DT the) (NN board))))\n"
            "    (. .) ))\n"
            "( (S (NP-SBJ (NNP Mr.) (NNP Vinken))\n"
            "    (VP (VBZ is) (NP (NN chairman)))\n"
            "    (. .) ))\n"
            "( (S (NP-SBJ (NNP Mr.) (NNP Vinken))\n"        # line 7 ...
            "    (VP (VBZ is) (NP (NN chairman))\n"         # line 8: a ')' is missing
            "    (. .) ))\n"
            "( (S (NP-SBJ (DT The) (NN board))\n"           # line 10: the next tree
            "    (VP (VBZ meets))\n"
            "    (. .) ))\n")
    path = tmp_path / "raw.mrg"
    path.write_text(text)
    with pytest.raises(FormatError) as err:
        list(read_ptb(path))
    assert err.value.line == 9
    assert "tree starting on line 7 is not closed before the tree starting on line 10" in \
        str(err.value)
    # one tree a line: the unclosed tree's own line
    path.write_text("(TOP (S (NN a)))\n(TOP (S (NN b))\n(TOP (S (NN c)))\n")
    with pytest.raises(FormatError) as err:
        list(read_ptb(path))
    assert err.value.line == 2 and "line 2 is not closed" in str(err.value)


def test_truncated_gzip_message(tmp_path):
    lines = "".join(f"(TOP (S (NN w{i})))\n" for i in range(2000)).encode()
    path = tmp_path / "big.mrg.gz"
    path.write_bytes(gzip.compress(lines)[:3000])
    with pytest.raises(FormatError) as err:
        list(read_ptb(path))
    msg = str(err.value)
    assert msg.startswith(f"{path}:{err.value.line}: truncated gzip file")
    assert err.value.line > 1


# ---- dependency sentences -----------------------------------------------------------------------
TOKEN = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABC.,'-0123456789éü", min_size=1, max_size=5)


@st.composite
def dep_sentences(draw):
    n = draw(st.integers(1, 8))
    words = draw(st.lists(TOKEN, min_size=n, max_size=n))
    tags = draw(st.lists(st.sampled_from(["NN", "VB", "DT", "JJ", ",", "."]), min_size=n,
                         max_size=n))
    heads = [draw(st.integers(0, n)) for _ in range(n)]
    rels = draw(st.lists(st.sampled_from(["nsubj", "obj", "det", "root", "punct"]), min_size=n,
                         max_size=n))
    return DepSentence(words=words, xpos=tags, upos=["X"] * n, heads=heads, rels=rels)


@FAST
@given(sents=st.lists(dep_sentences(), min_size=1, max_size=4),
       fmt=st.sampled_from(["conllu", "conllx", "malttab"]), gz=st.booleans())
def test_conll_round_trip(tmp_path, sents, fmt, gz):
    path = tmp_path / (f"d.{fmt}" + (".gz" if gz else ""))
    {"conllu": write_conllu, "conllx": write_conllx, "malttab": write_malttab}[fmt](sents, path)
    back = list({"conllu": read_conllu, "conllx": read_conllx, "malttab": read_malttab}[fmt](path))
    assert [s.words for s in back] == [s.words for s in sents]
    assert [s.heads for s in back] == [s.heads for s in sents]
    assert [s.xpos for s in back] == [s.xpos for s in sents]


@FAST
@given(sents=st.lists(dep_sentences(), min_size=1, max_size=3),
       fmt=st.sampled_from(["conllu", "conllx", "malttab"]), data=st.data())
def test_conll_with_an_edited_line(tmp_path, sents, fmt, data):
    """A column removed, a head or an ID replaced: a FormatError naming that line, or a file
    that still reads."""
    buf = io.StringIO()
    {"conllu": write_conllu, "conllx": write_conllx, "malttab": write_malttab}[fmt](sents, buf)
    lines = buf.getvalue().split("\n")
    k = data.draw(st.sampled_from([i for i, ln in enumerate(lines) if ln and ln[0] != "#"]),
                  label="line")
    cols = lines[k].split("\t")
    how = data.draw(st.sampled_from(["drop", "head", "id", "extra"]), label="edit")
    if how == "drop":
        cols.pop(data.draw(st.integers(0, len(cols) - 1)))
    elif how == "head":
        cols[2 if fmt == "malttab" else 6] = data.draw(st.sampled_from(["-3", "x", "99", ""]))
    elif how == "id" and fmt != "malttab":
        cols[0] = data.draw(st.sampled_from(["0", "x", "7", "2.5.1"]))
    else:
        cols.append("extra")
    lines[k] = "\t".join(cols)
    path = tmp_path / f"e.{fmt}"
    path.write_text("\n".join(lines))
    try:
        list({"conllu": read_conllu, "conllx": read_conllx, "malttab": read_malttab}[fmt](path))
    except FormatError as exc:
        assert exc.path == str(path) and exc.line is not None
        assert 1 <= exc.line <= len(lines)


@FAST
@given(sents=st.lists(st.lists(st.tuples(TOKEN, st.sampled_from(["nn", "vb", "at", "nn-tl"])),
                               min_size=1, max_size=6), min_size=1, max_size=4))
def test_brown_round_trip(tmp_path, sents):
    path = tmp_path / "b.pos"
    write_brown(sents, path)
    assert [list(map(tuple, s)) for s in read_brown(path)] == [list(s) for s in sents]


def test_brown_universal_reader_names_the_line_of_an_undecodable_byte(tmp_path):
    """A byte that is not UTF-8 in a Brown file read with universal tags: a FormatError with
    the file and line, not a UnicodeDecodeError (and .gz files read)."""
    from fastspectral.trees.corpus import read_brown_universal as read_brown_tagged

    path = tmp_path / "b.txt"
    path.write_bytes(b"The/at dog/nn ./.\nA/at \x80/nn\n")
    with pytest.raises(FormatError) as err:
        read_brown_tagged(path)
    assert err.value.path == str(path) and err.value.line == 2
    assert str(err.value).startswith(f"{path}:2: ")
    gz = tmp_path / "b.txt.gz"
    gz.write_bytes(gzip.compress(b"The/at dog/nn ./.\n"))
    [(words, tags)] = read_brown_tagged(gz)
    assert words == ["The", "dog", "."] and len(tags) == 3
