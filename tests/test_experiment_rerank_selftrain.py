"""Raw tagged text for the spectral model of the re-ranker (experiments/rerank_selftrain.py: a
research harness, not part of the package)."""
from __future__ import annotations

import sys

import pytest

from conftest import REPO
from fastspectral.errors import FormatError

sys.path.insert(0, str(REPO / "experiments"))
from rerank_selftrain import brown_to_ptb, read_tagged_text  # noqa: E402


@pytest.mark.parametrize("brown, ptb", [
    ("nn", "NN"), ("nns", "NNS"), ("nn-tl", "NN"), ("np$", "NNP"), ("np-tl", "NNP"),
    ("at", "DT"), ("in", "IN"), ("cs", "IN"), ("ppss+md", "PRP"), ("md*", "MD"),
    ("bedz", "VBD"), ("hvz", "VBZ"), ("jjt", "JJS"), ("fw-nn", "FW"), ("--", ":"),
    ("---hl", ":"), ("(", "-LRB-"), ("''", "''"), ("pp$", "PRP$"), ("wps", "WP"),
    ("xyz", "XYZ"),
])
def test_brown_to_ptb(brown, ptb):
    assert brown_to_ptb(brown) == ptb


def test_read_tagged_text_brown(tmp_path):
    p = tmp_path / "raw.txt"
    p.write_text("The/at dog/nn can/md bark/vb ./.\n\nThey/ppss bark/vb loudly/rb ./.\n"
                 "Go/vb home/nr ./.\n")
    sents = read_tagged_text(p, tagset="brown")
    assert [s.words for s in sents] == [["The", "dog", "can", "bark", "."],
                                        ["They", "bark", "loudly", "."], ["Go", "home", "."]]
    assert sents[0].xpos == ["DT", "NN", "MD", "VB", "."]
    assert sents[1].xpos == ["PRP", "VBP", "RB", "."]      # present tense after a subject
    assert sents[2].xpos == ["VB", "NN", "."]              # sentence-initial: imperative
    assert all(h == -1 for s in sents for h in s.heads)
    assert [s.line for s in sents] == [1, 3, 4]
    assert read_tagged_text(p, tagset="ptb")[0].xpos == ["at", "nn", "md", "vb", "."]
    assert len(read_tagged_text(p, limit=2)) == 2


def test_read_tagged_text_errors(tmp_path):
    p = tmp_path / "bad.txt"
    p.write_text("a/DT b/NN\nc/DT untagged\n")
    with pytest.raises(FormatError) as err:
        read_tagged_text(p)
    assert str(err.value).startswith(f"{p}:2: ") and "\n" not in str(err.value)
    with pytest.raises(ValueError, match="tagset"):
        read_tagged_text(p, tagset="claws")
    with pytest.raises(ValueError, match="limit"):
        read_tagged_text(p, limit=-1)


def test_not_in_the_package():
    from pathlib import Path

    import fastspectral.rerank

    assert not (Path(fastspectral.rerank.__file__).parent / "selftrain.py").exists()
