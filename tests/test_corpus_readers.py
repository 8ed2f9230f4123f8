"""The learners' corpus readers (fastspectral.trees.corpus): one format detection, one
file-opening path (.gz, standard input, FormatError with file and line)."""
from __future__ import annotations

import gzip
import io
import sys

import pytest

from fastspectral.errors import FormatError
from fastspectral.trees.conll import DepSentence, write_conllu, write_malttab
from fastspectral.trees.corpus import (detect_corpus_format, read_brown_universal, read_corpus,
                                       read_sequences, read_tagged, read_tagging_input,
                                       read_training_items, read_words)
from fastspectral.trees.tree import Tree

PTB = ("(S (NP (DT The) (NN dog)) (VP (VBZ barks) (NP (-NONE- *T*-1))))\n"
       "( (S (NP (PRP it)) (VP (VBD ran) (. .))))\n")
WORDS = [["The", "dog", "barks"], ["it", "ran", "."]]


def _stdin(monkeypatch, text: str):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode("utf-8"))))


def test_one_detection_for_every_format(tmp_path):
    files = {"text": "the dog barks\nit ran .\n", "tagged": "The/DT dog/NN\nit/PRP ran/VBD\n",
             "ptb": PTB}
    for fmt, text in files.items():
        (tmp_path / fmt).write_text(text)
        assert detect_corpus_format(tmp_path / fmt) == fmt
    sents = [DepSentence(words=w, heads=[0] + [1] * (len(w) - 1)) for w in WORDS]
    write_conllu(sents, tmp_path / "c.conllu")
    with open(tmp_path / "m.dp", "w") as fh:
        write_malttab(sents, fh)
    for name in ("c.conllu", "m.dp"):
        assert detect_corpus_format(tmp_path / name) == "conll"
        assert read_corpus(tmp_path / name) == WORDS == read_words(tmp_path / name)
    assert read_corpus(tmp_path / "ptb") == WORDS
    assert read_sequences(tmp_path / "ptb", field="tag") == [["DT", "NN", "VBZ"],
                                                             ["PRP", "VBD", "."]]
    assert read_corpus(tmp_path / "tagged") == [["The", "dog"], ["it", "ran"]]


def test_standard_input(monkeypatch):
    _stdin(monkeypatch, PTB)
    assert read_corpus("-") == WORDS
    _stdin(monkeypatch, PTB)
    assert read_words("-") == [["The", "dog", "barks", "*T*-1"], ["it", "ran", "."]]
    _stdin(monkeypatch, PTB)
    trees = read_training_items("-", "sentences")
    assert len(trees) == 2 and isinstance(trees[0], Tree)
    _stdin(monkeypatch, "The/DT dog/NN\n\nit/PRP ran/VBD\n")
    assert read_tagged("-") == [(["The", "dog"], ["DT", "NN"]), (["it", "ran"], ["PRP", "VBD"])]
    _stdin(monkeypatch, "the/DT dog\n")
    with pytest.raises(FormatError, match=r"<stdin>:1: token 'dog'"):
        read_tagged("-")
    _stdin(monkeypatch, "a\tDT\t2\tdet\nb\tNN\t0\troot\n\n")
    sents, is_file = read_tagging_input("-")
    assert is_file and [s.words for s in sents] == [["a", "b"]]


def test_brown_universal_reads_gzip_and_names_the_line(tmp_path):
    path = tmp_path / "b.txt.gz"
    with gzip.open(path, "wt") as fh:
        fh.write("The/at dog/nn ran/vbd ./.\n\nA/at n/a/nn\n")
    assert read_brown_universal(path) == [(["The", "dog", "ran", "."],
                                           ["DET", "NOUN", "VERB", "."]),
                                          (["A", "n/a"], ["DET", "NOUN"])]
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"The/at\n\xff/nn\n")
    with pytest.raises(FormatError, match=r"bad.txt:2: invalid utf-8 byte"):
        read_brown_universal(bad)


def test_training_items_of_the_wrong_kind_are_refused(tmp_path):
    (tmp_path / "t.txt").write_text("The/DT dog/NN\n")
    with pytest.raises(FormatError, match=r"t.txt: this model is trained on bracketed trees"):
        read_training_items(tmp_path / "t.txt", "sentences")
    (tmp_path / "t.mrg").write_text(PTB)
    deps = read_training_items(tmp_path / "t.mrg", "dependency")
    assert [d.words for d in deps] == WORDS
    assert read_training_items(tmp_path / "t.mrg", "sequences") == WORDS
    with pytest.raises(ValueError, match="unknown input kind"):
        read_training_items(tmp_path / "t.mrg", "pictures")
    (tmp_path / "e.txt").write_text("\n\n")
    with pytest.raises(FormatError, match="e.txt: the corpus is empty"):
        read_training_items(tmp_path / "e.txt", "sequences")
