"""The eigenword dictionary (CCA word vectors)."""
from __future__ import annotations

import numpy as np
import pytest

from fastspectral.embeddings import Eigenwords


def _corpus(seed=0, n=400):
    rng = np.random.default_rng(seed)
    dets, nouns, verbs = ["the", "a", "every"], ["dog", "cat", "bird", "fish"], \
        ["runs", "sleeps", "eats", "sings"]
    return [[rng.choice(dets), rng.choice(nouns), rng.choice(verbs)] for _ in range(n)]


def test_neighbours_share_the_word_class(tmp_path):
    ew = Eigenwords(dim=3, window=1, min_count=1).fit(_corpus())
    assert ew.embeddings_.shape == (len(ew.words_), 3)
    assert ew.words_[0] == "<unk>"
    for w, cls in (("dog", {"cat", "bird", "fish"}), ("runs", {"sleeps", "eats", "sings"}),
                   ("the", {"a", "every"})):
        assert ew.nearest(w, 1)[0][0] in cls
    np.testing.assert_allclose(np.linalg.norm(ew.embeddings_[1:], axis=1), 1.0)
    ew.save(tmp_path / "e.ew")
    back = Eigenwords.load(tmp_path / "e.ew")
    np.testing.assert_array_equal(back.transform(["Dog", "zzz"]), ew.transform(["dog", "<unk>"]))


def test_bad_input():
    with pytest.raises(ValueError, match="dim"):
        Eigenwords(dim=0).fit(_corpus())
    with pytest.raises(TypeError):
        Eigenwords().fit("the dog")
    with pytest.raises(ValueError, match="no words"):
        Eigenwords().fit([[]])


def test_cli_and_reuse_by_atm(tmp_path, synthetic_grammar):
    import subprocess
    import sys

    trees = synthetic_grammar.sample(200, seed=1)
    tb = tmp_path / "t.trees"
    tb.write_text("".join(str(t) + "\n" for t in trees))
    out = tmp_path / "e.ew"
    r = subprocess.run([sys.executable, "-m", "fastspectral", "train", "eigenwords", str(tb),
                        "-o", str(out), "--dim", "6", "--min-count", "1"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    from fastspectral.unsupervised import ATMParser

    m = ATMParser(rank=2, embeddings=str(out)).fit(trees)
    assert np.isfinite(m.distances_).all()
