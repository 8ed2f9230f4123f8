"""Raw tagged text for the spectral model (fastspectral.rerank.selftrain) and sub-lists of
packed k-best lists (RerankData.subset)."""
from __future__ import annotations

import numpy as np
import pytest

from fastspectral.errors import FormatError
from fastspectral.rerank.selftrain import brown_to_ptb, read_tagged_text


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


def test_rerank_data_subset():
    from fastspectral.rerank.mst import MSTParser
    from fastspectral.trees.conll import DepSentence

    def sent(text, heads):
        words, tags = zip(*(w.split("/") for w in text.split()))
        return DepSentence(words=words, xpos=tags, heads=heads)

    train = [sent("the/DT dog/NN barks/VBZ", [2, 3, 0]),
             sent("the/DT big/JJ dog/NN sleeps/VBZ", [3, 3, 4, 0]),
             sent("dogs/NNS bark/VBP", [2, 0])] * 4
    from fastspectral.rerank.reranker import RerankData

    mst = MSTParser(epochs=2, bits=16).fit(train)
    enc = mst.encode(train[:3])
    data = RerankData(mst.kbest_encoded(enc, 5, 1), enc)
    sub, cand = data.subset([2, 0])
    assert list(sub.lengths) == [2, 3]
    assert np.array_equal(sub.base, data.base[cand])
    for c_sub, c in enumerate(cand):
        assert np.array_equal(sub.candidate_heads(c_sub), data.candidate_heads(c))
    one, _ = data.subset([1])
    assert np.array_equal(one.P, data.P[data.tok_off[1]:data.tok_off[2]])
    assert np.array_equal(np.diff(one.tok_off), np.diff(data.tok_off)[[1]])
    # the re-ranker's scores of a sub-list are those of the same candidates in the whole
    from fastspectral.rerank.reranker import score_candidates

    rng = np.random.default_rng(0)
    w, v = rng.normal(size=1 << 16), rng.normal(size=1)

    def scores(d):
        out = np.empty(d.n_candidates)
        score_candidates(w, v, d.P, d.tok_off, d.lengths, d.heads, d.cand_off, d.cand_hoff,
                         d.base[:, None].copy(), out)
        return out

    assert np.allclose(scores(sub), scores(data)[cand])
