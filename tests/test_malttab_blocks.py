"""The block reader of Malt-TAB files (trees.files.iter_line_blocks, trees.conll._malttab_block)
gives what the line-by-line reader gives: the same sentences, start lines and errors."""
import io

import pytest
from hypothesis import given, settings, strategies as st

from fastspectral.errors import FormatError
from fastspectral.trees import conll, files
from fastspectral.trees.conll import DepSentence, read_malttab
from fastspectral.trees.files import iter_line_blocks, iter_lines


def _line_by_line(source, encoding="utf-8", heads_optional=False):
    """The sentences (and the error, if any) of the line-by-line reader."""
    out = []
    try:
        for s in conll._malttab_lines(iter_lines(source, encoding), files.source_name(source),
                                      heads_optional):
            out.append(s)
    except FormatError as exc:
        return out, (str(exc), exc.path, exc.line)
    return out, None


def _blocks(source, encoding="utf-8", heads_optional=False):
    out = []
    try:
        for s in read_malttab(source, encoding, heads_optional=heads_optional):
            out.append(s)
    except FormatError as exc:
        return out, (str(exc), exc.path, exc.line)
    return out, None


def _same(a, b):
    (sa, ea), (sb, eb) = a, b
    assert ea == eb
    assert len(sa) == len(sb)
    for x, y in zip(sa, sb):
        assert type(x) is DepSentence and x.__dict__ == y.__dict__


TEXTS = {
    "plain": "The\tDT\t2\ndog\tNN\t3\nbarks\tVBZ\t0\n\nDogs\tNNS\t2\nbark\tVBP\t0\n",
    "relations": "a\tDT\t2\tdet\nb\tNN\t0\tROOT\n\nc\tX\t0\tROOT\n",
    "mixed columns": "a\tDT\t2\tdet\nb\tNN\t0\n\nc\tX\t0\n",
    "crlf, bom, spaces": "\ufeffa\tDT\t2 \r\nb\tNN\t0\r\n\r\n  \r\n\n\nc\tX\t0\t\r\n",
    "no final newline": "a\tDT\t0\n\n\nb\tNN\t0",
    "unicode": "caf\u00e9\tNN\t0\n\n\u00bfqu\u00e9?\tX\t0\n",
    "head too large": "a\tDT\t2\nb\tNN\t0\n\nc\tX\t2\n\nd\tX\t0\n",
    "negative head": "a\tDT\t0\n\nb\tNN\t-1\n",
    "head not a number": "a\tDT\t0\n\nb\tNN\tx\n",
    "empty head": "a\tDT\t0\n\nb\tNN\t\tdet\n",
    "unicode digit head": "a\tDT\t0\n\nb\tNN\t\u0663\n",
    "huge head": "a\tDT\t0\n\nb\tNN\t99999999999999999999999\n",
    "underscore head": "a\tDT\t0\n\nb\tNN\t_\n",
    "two columns": "a\tDT\n\nb\tNN\n",
    "five columns": "a\tDT\t0\n\nb\tNN\t0\tx\ty\n",
    "spaces for tabs": "a\tDT\t0\n\nb NN 0\n",
}


@pytest.mark.parametrize("block", [1, 5, 16, 1 << 20])
@pytest.mark.parametrize("heads_optional", [False, True])
@pytest.mark.parametrize("name", sorted(TEXTS))
def test_blocks_read_like_lines(tmp_path, monkeypatch, name, heads_optional, block):
    monkeypatch.setattr(files, "BLOCK_BYTES", block)
    path = tmp_path / "t.dp"
    path.write_bytes(TEXTS[name].encode("utf-8"))
    expected = _line_by_line(path, heads_optional=heads_optional)
    _same(_blocks(path, heads_optional=heads_optional), expected)
    _same(_blocks(str(path), heads_optional=heads_optional), expected)       # a str path
    lines = TEXTS[name].split("\n")
    _same(_blocks(io.StringIO(TEXTS[name]), heads_optional=heads_optional),
          _line_by_line(io.StringIO(TEXTS[name]), heads_optional=heads_optional))
    _same(_blocks(lines, heads_optional=heads_optional),
          _line_by_line(lines, heads_optional=heads_optional))


def test_error_lines_in_later_blocks(tmp_path, monkeypatch):
    monkeypatch.setattr(files, "BLOCK_BYTES", 64)
    good = "w\tT\t0\n\n" * 50
    path = tmp_path / "t.dp"
    path.write_text(good + "x\tT\t3\n\n" + good)
    sents, err = _blocks(path)
    assert len(sents) == 50
    assert err == (f"{path}:101: head 3 is out of range: the sentence has 1 words", str(path),
                   101)
    path.write_bytes((good + "caf\xe9\tNN\t0\n").encode("latin-1"))
    sents, err = _blocks(path)
    assert len(sents) == 50 and err[2] == 101 and "invalid utf-8 byte" in err[0]
    _same(_blocks(path), _line_by_line(path))
    assert _blocks(path, encoding="latin-1")[0][-1].words == ["caf\u00e9"]


def test_sentence_objects_are_independent(tmp_path):
    path = tmp_path / "t.dp"
    path.write_text("a\tDT\t0\n\nb\tNN\t0\n")
    a, b = read_malttab(path)
    a.ids.append("2")
    a.lemmas[0] = "x"
    assert b.ids == ["1"] and b.lemmas == ["_"]
    assert b == DepSentence(words=["b"], xpos=["NN"], heads=[0], line=3)
    assert b.line == 3 and all(type(h) is int for h in b.heads)


_TOKENS = st.sampled_from(["a", "DT", "0", "1", "2", "3", "_", "-1", "x y", "\u00e9", "", " ",
                           "12345678901234567890"])
_LINE = st.one_of(st.lists(_TOKENS, min_size=1, max_size=5).map("\t".join),
                  st.sampled_from(["", " ", "\r"]))


@settings(max_examples=150, deadline=None)
@given(st.lists(_LINE, max_size=30), st.sampled_from([1, 3, 10, 40]), st.booleans(),
       st.sampled_from(["\n", "\r\n"]))
def test_random_files(lines, block, heads_optional, newline):
    import os
    import tempfile

    text = newline.join(lines)
    fd, path = tempfile.mkstemp(suffix=".dp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(text.encode("utf-8"))
        old = files.BLOCK_BYTES
        files.BLOCK_BYTES = block
        try:
            got = _blocks(path, heads_optional=heads_optional)
            blocks = [ln for _, b in iter_line_blocks(path) for ln in b]
        finally:
            files.BLOCK_BYTES = old
        _same(got, _line_by_line(path, heads_optional=heads_optional))
        assert blocks == [ln for _, ln in iter_lines(path)]
    finally:
        os.unlink(path)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=60), st.sampled_from([1, 4, 32]),
       st.sampled_from(["utf-8", "latin-1"]))
def test_line_blocks_of_random_bytes(data, block, encoding):
    import os
    import tempfile

    fd, path = tempfile.mkstemp()
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data.replace(b"\x1f\x8b", b"ab"))
        old = files.BLOCK_BYTES
        files.BLOCK_BYTES = block

        def run(gen):
            out = []
            try:
                for item in gen:
                    out.append(item)
            except FormatError as exc:
                return out, (str(exc), exc.line)
            return out, None
        try:
            got, gerr = run(ln for first, b in iter_line_blocks(path, encoding)
                            for ln in zip(range(first, first + len(b)), b))
        finally:
            files.BLOCK_BYTES = old
        want, werr = run(iter_lines(path, encoding))
        assert gerr == werr
        if gerr is None:
            assert got == want
        else:                         # the lines before the bad block are read
            assert got == want[:len(got)]
    finally:
        os.unlink(path)
