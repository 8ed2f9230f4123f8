"""The second-order sibling model (McDonald & Pereira 2006): the compiled decoder against a
brute-force enumeration of every projective tree, its first-order special case, and the
``MSTParser(order=2)`` training, parsing and model files."""
from __future__ import annotations

import numpy as np
import pytest

from fastspectral.dependency.eisner import eisner, eisner2, eisner2_packed, eisner_packed

from _dep_brute import all_projective_trees


def sibling_parts(heads):
    """The (h, s, m) sibling parts of a tree (1-based heads, 0 = root): s is the modifier of h
    next to m on h's side of it, closer to h, or h itself for the innermost one."""
    n = len(heads)
    parts = []
    for m in range(1, n + 1):
        h = heads[m - 1]
        between = [j for j in range(min(h, m) + 1, max(h, m)) if heads[j - 1] == h]
        if not between:
            s = h
        else:
            s = max(between) if m > h else min(between)
        parts.append((h, s, m))
    return parts


def tree_score(A, G, heads):
    return (sum(A[h, m] for h, _, m in sibling_parts(heads))
            + sum(G[h, s, m] for h, s, m in sibling_parts(heads)))


def test_sibling_parts_by_hand():
    # root -> 2; 2 -> 1, 4; 4 -> 3, 5, 6
    heads = (2, 0, 4, 2, 4, 4)
    assert set(sibling_parts(heads)) == {(0, 0, 2), (2, 2, 1), (2, 2, 4), (4, 4, 3),
                                         (4, 4, 5), (4, 5, 6)}


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6])
@pytest.mark.parametrize("single_root", [False, True])
def test_decoder_equals_brute_force_max(n, single_root):
    trees = all_projective_trees(n, single_root)
    rng = np.random.default_rng(100 * n + single_root)
    for _ in range(6):
        A = rng.normal(size=(n + 1, n + 1))
        G = rng.normal(size=(n + 1, n + 1, n + 1))
        heads = eisner2(A, G, single_root=single_root)
        assert tuple(int(h) for h in heads) in set(trees)
        ref = max(tree_score(A, G, t) for t in trees)
        assert tree_score(A, G, heads) == pytest.approx(ref, rel=0, abs=1e-9)
        res = eisner2_packed(A.ravel(), np.array([0, A.size]), G.ravel(),
                             np.array([0, G.size]), np.array([n], np.int32), single_root, 1)
        assert res.best[0] == pytest.approx(ref, rel=0, abs=1e-9)


@pytest.mark.parametrize("single_root", [False, True])
def test_zero_sibling_scores_give_first_order_eisner(single_root):
    rng = np.random.default_rng(7)
    for n in (1, 2, 5, 9, 17, 30):
        A = rng.normal(size=(n + 1, n + 1))
        G = np.zeros((n + 1, n + 1, n + 1))
        h2 = eisner2(A, G, single_root=single_root)
        h1 = eisner(A, single_root=single_root)
        s1 = sum(A[h, m] for m, h in enumerate(h1, 1))
        s2 = sum(A[h, m] for m, h in enumerate(h2, 1))
        assert s2 == pytest.approx(s1, abs=1e-9)
        # continuous random scores: the best tree is unique
        np.testing.assert_array_equal(h1, h2)


def random_packed(seed=3, lengths=(3, 0, 12, 1, 25, 7)):
    """A packed batch of random arc and sibling scores: ``lengths, arcs, aoff, sibs, soff``."""
    rng = np.random.default_rng(seed)
    lengths = np.array(lengths, np.int32)
    n1 = lengths.astype(np.int64) + 1
    aoff = np.concatenate([[0], np.cumsum(n1 ** 2)])
    soff = np.concatenate([[0], np.cumsum(n1 ** 3)])
    return lengths, rng.normal(size=int(aoff[-1])), aoff, rng.normal(size=int(soff[-1])), soff


def test_packed_batch_threads_agree_and_inf_arcs():
    lengths, arcs, aoff, sibs, soff = random_packed()
    # forbid the arc 0 -> 2 of the first sentence
    arcs[aoff[0] + 2] = -np.inf
    r1 = eisner2_packed(arcs, aoff, sibs, soff, lengths, True, 1)
    r2 = eisner2_packed(arcs, aoff, sibs, soff, lengths, True, 2)
    np.testing.assert_array_equal(r1.heads, r2.heads)
    np.testing.assert_array_equal(r1.best, r2.best)
    assert np.isfinite(r1.best).all()
    assert r1.heads[1] != 0
    for b, n in enumerate(lengths):
        h = r1.heads[r1.head_off[b]:r1.head_off[b + 1]]
        A = arcs[aoff[b]:aoff[b + 1]].reshape(n + 1, n + 1)
        G = sibs[soff[b]:soff[b + 1]].reshape(n + 1, n + 1, n + 1)
        assert tree_score(A, G, tuple(int(x) for x in h)) == pytest.approx(r1.best[b])
        assert int((h == 0).sum()) == (1 if n else 0)
    # with zero sibling scores, the packed first-order decoder's best scores
    r0 = eisner2_packed(arcs, aoff, np.zeros_like(sibs), soff, lengths, True, 2)
    r00 = eisner_packed(arcs, aoff, lengths, True, 2)
    np.testing.assert_allclose(r0.best, r00.best, atol=1e-9)


def test_bad_arguments():
    with pytest.raises(ValueError, match="sibling"):
        eisner2(np.zeros((3, 3)), np.zeros((3, 3, 2)))
    with pytest.raises(ValueError, match="runs past the sibling"):
        eisner2_packed(np.zeros(16), np.array([0, 16]), np.zeros(10), np.array([0, 64]),
                       np.array([3], np.int32))
    from fastspectral._ext.eisner2 import eisner2_batch

    n = 3
    arcs, sibs = np.zeros((n + 1) ** 2), np.zeros((n + 1) ** 3)
    heads, best = np.zeros(n, np.int32), np.zeros(1)
    i64 = lambda *v: np.array(v, np.int64)  # noqa: E731
    ok = dict(aoff=i64(0), soff=i64(0), lengths=np.array([n], np.int32), hoff=i64(0))
    eisner2_batch(arcs, ok["aoff"], sibs, ok["soff"], ok["lengths"], ok["hoff"], heads, best)
    for kw in ({"aoff": i64(-1)}, {"soff": i64(1)}, {"lengths": np.array([-2], np.int32)},
               {"lengths": np.array([n + 1], np.int32)}, {"hoff": i64(1)},
               {"aoff": np.zeros(0, np.int64)}):
        a = dict(ok, **kw)
        with pytest.raises(ValueError):
            eisner2_batch(arcs, a["aoff"], sibs, a["soff"], a["lengths"], a["hoff"], heads,
                          best)


# ---------------------------------------------------------------- the parser
def _sent(text, heads):
    from fastspectral.trees.conll import DepSentence

    words, tags = zip(*(w.split("/") for w in text.split()))
    return DepSentence(words=words, xpos=tags, heads=heads)


TRAIN = [_sent("the/DT dog/NN barks/VBZ", [2, 3, 0]),
         _sent("a/DT cat/NN sleeps/VBZ", [2, 3, 0]),
         _sent("dogs/NNS bark/VBP", [2, 0]),
         _sent("the/DT big/JJ dog/NN sleeps/VBZ", [3, 3, 4, 0])] * 5


def test_sibling_features_of_a_tree_match_the_parts():
    from fastspectral.rerank.features import sibling_features, tree_sibling_parts

    heads = np.array([2, 0, 4, 2, 4, 4], np.int32)
    got = {tuple(int(x) for x in p) for p in tree_sibling_parts(heads)}
    assert got == set(sibling_parts(tuple(int(h) for h in heads)))
    W = np.arange(7) + 3
    f1 = sibling_features(W, W, W, 6, 4, 5, 6, 16)
    f2 = sibling_features(W, W, W, 6, 4, 4, 6, 16)   # 6 as the innermost: other features
    assert len(f1) == len(f2) > 0 and set(f1) != set(f2)
    assert ((0 <= f1) & (f1 < 1 << 16)).all()


def test_sibling_scores_are_the_sums_of_the_part_features():
    from fastspectral.rerank.features import sibling_features, sibling_scores

    rng = np.random.default_rng(11)
    bits = 12
    w = rng.normal(size=1 << bits)
    lengths = np.array([4, 1, 7], np.int32)
    n1 = lengths.astype(np.int64) + 1
    tok_off = np.concatenate([[0], np.cumsum(n1)])
    trip_off = np.concatenate([[0], np.cumsum(n1 ** 3)])
    W = rng.integers(3, 40, size=int(tok_off[-1]))
    P = rng.integers(3, 9, size=int(tok_off[-1]))
    W[tok_off[:-1]] = P[tok_off[:-1]] = 1
    out = np.full(int(trip_off[-1]), np.nan)
    sibling_scores(w, W, P, W, tok_off, lengths, trip_off, out)
    checked = 0
    for b, n in enumerate(lengths):
        Wb, Pb = W[tok_off[b]:tok_off[b + 1]], P[tok_off[b]:tok_off[b + 1]]
        G = out[trip_off[b]:trip_off[b + 1]].reshape(n + 1, n + 1, n + 1)
        for h in range(n + 1):
            for m in range(1, n + 1):
                if h == m:
                    continue
                for s in [h] + list(range(min(h, m) + 1, max(h, m))):
                    ids = sibling_features(Wb, Pb, Wb, n, h, s, m, bits)
                    assert G[h, s, m] == pytest.approx(w[ids].sum(), abs=1e-12)
                    checked += 1
    assert checked > 50


def test_order2_parser_trains_parses_and_round_trips(tmp_path):
    from fastspectral.io.modelfile import load as load_model
    from fastspectral.rerank import MSTParser

    p = MSTParser(order=2, iterations=5, bits=16, jobs=1).fit(TRAIN)
    test = [_sent("a/DT big/JJ cat/NN barks/VBZ", [-1, -1, -1, -1])]
    assert p.parse(test)[0].heads == [3, 3, 4, 0]
    gold = [s.heads for s in TRAIN]
    assert [list(h) for h in p.predict_heads(TRAIN)] == [list(h) for h in gold]
    path = tmp_path / "m2.mst"
    p.save(path)
    q = load_model(path)
    assert q.order == 2
    np.testing.assert_array_equal(q.weights_, p.weights_)
    assert [list(h) for h in q.predict_heads(TRAIN + test, jobs=2)] == \
        [list(h) for h in p.predict_heads(TRAIN + test, jobs=1)]
    kb = q.kbest(test, 5)                   # the second-order model's own k best
    assert list(kb.trees(0)[0]) == list(q.predict_heads(test)[0])


def test_order_is_checked_and_old_files_load_as_first_order(tmp_path):
    from fastspectral.rerank import MSTParser

    with pytest.raises(ValueError, match="order"):
        MSTParser(order=3).fit(TRAIN)
    p = MSTParser(iterations=2, bits=16, jobs=1).fit(TRAIN)
    meta, arrays = p._model_file()
    del meta["params"]["order"]          # a file written before the order parameter
    q = MSTParser._from_model_file(meta, arrays)
    assert q.order == 1
    assert [list(h) for h in q.predict_heads(TRAIN)] == [list(h) for h in p.predict_heads(TRAIN)]


def test_cli_train_order2_and_parse(tmp_path, capsys):
    from fastspectral import cli
    from fastspectral.io.modelfile import load as load_model
    from fastspectral.trees.conll import read_conllu

    from _conll_files import write_conllu

    train, inp, model, out = (tmp_path / n for n in ("t.conllu", "in.conllu", "m.mst",
                                                     "out.conllu"))
    write_conllu(train, TRAIN)
    write_conllu(inp, TRAIN[:4], heads=False)
    assert cli.main(["train", "mst", str(train), "-o", str(model), "--iterations", "5",
                     "--bits", "16", "--order", "2", "-q"]) == 0
    assert load_model(model).order == 2
    assert cli.main(["parse", str(model), str(inp), "-o", str(out), "-q"]) == 0
    assert [s.heads for s in read_conllu(out)] == [s.heads for s in TRAIN[:4]]
    capsys.readouterr()
    try:
        rc = cli.main(["train", "mst", str(train), "-o", str(model), "--order", "3", "-q"])
    except SystemExit as exc:
        rc = exc.code
    err = capsys.readouterr().err
    assert rc == 2 and "invalid choice" in err and "Traceback" not in err


def test_sentence_over_the_memory_budget_is_decoded_first_order(caplog):
    """A second-order parse whose sibling block would pass ``max_memory`` falls back to the
    first-order decoding of its arc scores (warned, counted); the other sentences keep their
    second-order parses, in their places."""
    import logging

    from fastspectral import _memory
    from fastspectral.rerank import MSTParser

    p = MSTParser(order=2, iterations=5, bits=16, jobs=1).fit(TRAIN)
    tags = ["DT", "JJ", "NN", "VBZ", "NNS", "VBP"]
    long = _sent(" ".join(f"w{i}/{tags[i % 6]}" for i in range(40)), [-1] * 40)
    short = [_sent("a/DT big/JJ cat/NN barks/VBZ", [-1] * 4), TRAIN[2]]
    items = [short[0], long, short[1]]
    full = p.predict_heads(items)
    assert p.last_parse_stats_.too_long == 0
    enc = p.encode([long])
    first = eisner_packed(p.arc_scores(enc), enc.pair_off, enc.lengths, p.single_root_, 1)
    p.max_memory = _memory.mst2_chart_bytes(39)          # the 40-word sentence is over it
    with caplog.at_level(logging.WARNING, logger="fastspectral"):
        got = p.predict_heads(items)
    assert p.last_parse_stats_.too_long == 1
    assert "40 words" in caplog.text and "first-order" in caplog.text
    assert list(full[1]) != list(first.heads)            # the two decoders differ here
    np.testing.assert_array_equal(got[1], first.heads)
    for k in (0, 2):
        np.testing.assert_array_equal(got[k], full[k])
    p.max_memory = 0                                      # no limit
    assert [list(h) for h in p.predict_heads(items)] == [list(h) for h in full]
    p.max_memory = 0
    import importlib

    eis = importlib.import_module("fastspectral.dependency.eisner")
    old = eis.EISNER2_MAX_WORDS
    eis.EISNER2_MAX_WORDS = 39                           # the kernel's length limit
    try:
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="fastspectral"):
            got = p.predict_heads(items)
    finally:
        eis.EISNER2_MAX_WORDS = old
    assert p.last_parse_stats_.too_long == 1 and "kernel's limit" in caplog.text
    np.testing.assert_array_equal(got[1], first.heads)


def test_training_sentences_over_the_budget_are_decoded_first_order(caplog):
    """Training a second-order model on a treebank with a sentence over ``max_memory``: that
    sentence is decoded first-order in every epoch (warned once), the others second-order; the
    model still learns the treebank."""
    import logging

    from fastspectral import _memory
    from fastspectral.rerank import MSTParser

    heads = []
    for i in range(30):                     # DT -> NN -> VBZ chains; the first VBZ is the root
        if i % 3 == 0:
            heads.append(i + 2)
        elif i % 3 == 1:
            heads.append(i + 2)
        else:
            heads.append(0 if i == 2 else 3)
    long = _sent(" ".join(f"w{i}/{['DT', 'NN', 'VBZ'][i % 3]}" for i in range(30)), heads)
    p = MSTParser(order=2, iterations=5, bits=16, jobs=1)
    p.max_memory = _memory.mst2_chart_bytes(29)
    with caplog.at_level(logging.WARNING, logger="fastspectral"):
        p.fit(TRAIN + [long])
    assert caplog.text.count("30 words") == 1 and "in training" in caplog.text
    assert [list(h) for h in p.predict_heads(TRAIN)] == [s.heads for s in TRAIN]
