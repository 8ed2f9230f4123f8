"""The second-order MST score as a re-ranker feature (``RerankDepParser(base_order=2)``): the
compiled candidate-score kernel against a per-part Python reference, training / parsing /
model files, old files, bad values, the command line."""
from __future__ import annotations

import numpy as np
import pytest

from fastspectral import cli
from fastspectral.errors import ModelFileError
from fastspectral.rerank import MSTParser, RerankDepParser
from fastspectral.rerank.features import (arc_features, sibling_features,
                                          tree_sibling_parts)
from fastspectral.rerank.model import _argmax_segments, order2_scores
from fastspectral.rerank.reranker import RerankData

from _conll_files import write_conllu

KW = dict(k=8, features="base", rerank_bits=16, rerank_iterations=3, jobs=2,
          mst=MSTParser(iterations=2, bits=18, jobs=2))


@pytest.fixture(scope="module")
def synthetic(synthetic_grammar):
    from fastspectral.dependency.data import trees_to_dep_sentences
    from fastspectral.trees.transforms import clean

    g = synthetic_grammar
    return list(trees_to_dep_sentences(clean(t) for t in g.sample(300, seed=7)))


@pytest.fixture(scope="module")
def order2(synthetic):
    return RerankDepParser(base_order=2, **KW).fit(synthetic[:240])


def reference_scores(mst2, sents, data):
    """Per candidate, per arc and per sibling part, in Python: the sum of the hashed
    features' weights."""
    enc = mst2.encode(sents)
    bits = int(mst2.bits)
    out = np.empty(data.n_candidates)
    for c in range(data.n_candidates):
        b = int(data.sent[c])
        n = int(data.lengths[b])
        t0 = int(enc.tok_off[b])
        W, P, F = (x[t0:t0 + n + 1] for x in (enc.W, enc.P, enc.F))
        heads = data.candidate_heads(c)
        total = 0.0
        for m in range(1, n + 1):
            total += mst2.weights_[arc_features(W, P, F, n, int(heads[m - 1]), m, bits)].sum()
        for h, s, m in tree_sibling_parts(np.asarray(heads, np.int64)):
            total += mst2.weights_[sibling_features(W, P, F, n, h, s, m, bits)].sum()
        out[c] = total
    return out


@pytest.mark.slow
def test_candidate_kernel_equals_the_reference(order2, synthetic):
    sents = synthetic[240:252]
    mst = order2.mst_
    enc = mst.encode(sents)
    data = RerankData(mst.kbest_encoded(enc, 8, 1), enc)
    assert data.n_candidates > len(sents)            # several candidates per list
    fast = order2_scores(order2.mst2_, sents, data, 2)
    np.testing.assert_allclose(fast, reference_scores(order2.mst2_, sents, data),
                               rtol=1e-10, atol=1e-10)
    np.testing.assert_array_equal(fast, order2_scores(order2.mst2_, sents, data, 1))
    # the second-order decoder's own best tree scores at least as high as every candidate
    best = order2.mst2_.predict_heads(sents, jobs=1)
    for b, h in enumerate(best):
        sub, cand = data.subset([b])
        sub.heads = np.asarray(h, np.int64)          # one candidate: the decoder's tree
        sub.cand_off, sub.cand_hoff, sub.sent = np.array([0, 1]), np.zeros(1, np.int64), \
            np.zeros(1, np.int64)
        top = order2_scores(order2.mst2_, [sents[b]], sub, 1)[0]
        assert top >= fast[cand].max() - 1e-9


def test_order2_best_tree_joins_the_list(order2, synthetic):
    """order2_best: each list holds the second-order decoder's tree (appended when missing,
    with the first-order score of it as base score), so the second-order score alone picks
    the second-order parse."""
    sents = synthetic[240:270]
    mst, mst2 = order2.mst_, order2.mst2_
    enc = mst.encode(sents)
    data = RerankData(mst.kbest_encoded(enc, 3, 1), enc)
    aug = order2._with_order2_best(mst, mst2, sents, data, 2)
    best = mst2.predict_heads(sents, jobs=1)
    counts, new = np.diff(data.cand_off), np.diff(aug.cand_off)
    assert ((new - counts) >= 0).all() and ((new - counts) <= 1).all()
    assert (new > counts).any() and (new == counts).any()     # some added, some present
    arcs = mst.arc_scores(enc, 1)
    for b, h in enumerate(best):
        lists = [aug.candidate_heads(c).tolist() for c in range(aug.cand_off[b],
                                                                 aug.cand_off[b + 1])]
        assert lists[:counts[b]] == [data.candidate_heads(c).tolist()
                                     for c in range(data.cand_off[b], data.cand_off[b + 1])]
        assert h.tolist() in lists
        if new[b] > counts[b]:
            assert lists[-1] == h.tolist() and h.tolist() not in lists[:-1]
            n1 = len(h) + 1
            block = arcs[enc.pair_off[b]:enc.pair_off[b + 1]].reshape(n1, n1)
            first = sum(block[int(x), m + 1] for m, x in enumerate(h))
            assert abs(aug.base[aug.cand_off[b + 1] - 1] - first) < 1e-9
    sc = order2_scores(mst2, sents, aug, 1)
    pick = _argmax_segments(sc, aug.cand_off)
    where = [[aug.candidate_heads(c).tolist() for c in range(aug.cand_off[b],
                                                             aug.cand_off[b + 1])].index(
        h.tolist()) + aug.cand_off[b] for b, h in enumerate(best)]
    np.testing.assert_allclose(sc[pick], sc[where], atol=1e-9)   # the decoder's tree is best
    assert (pick == where).sum() >= len(best) - 2                # (ties aside)


@pytest.mark.slow
def test_order2_trains_parses_and_round_trips(order2, synthetic, tmp_path):
    test = synthetic[240:]
    assert isinstance(order2.mst2_, MSTParser) and order2.mst2_.order == 2
    assert order2.mst_.order == 1
    assert order2.dense_weights_.shape == (2,) and order2.dense_scale_.shape == (2,)
    assert order2.dense_weights_[1] != 0.0          # the second-order column was learnt
    assert "mst2" in order2.fit_info_.seconds
    rescore = RerankDepParser(base_order=2, order2_best=False, **KW).fit(synthetic[:240])
    assert rescore.fit_info_.n_sentences == 240
    assert [s.heads for s in rescore.parse(test)] != []
    out = [s.heads for s in order2.parse(test)]
    assert all(len(h) == len(s.words) for h, s in zip(out, test))
    order2.save(tmp_path / "o2.fsm")
    again = RerankDepParser.load(tmp_path / "o2.fsm")
    assert again.base_order == 2 and again.mst2_.order == 2
    assert [s.heads for s in again.parse(test)] == out
    np.testing.assert_array_equal(again.mst2_.weights_, order2.mst2_.weights_)
    # a file without its second-order model, or with a first-order one there
    meta, arrays = order2._model_file()
    with pytest.raises(ModelFileError, match="second-order"):
        RerankDepParser._from_model_file({**meta, "mst2": None}, arrays)
    bad = {**meta, "mst2": {**meta["mst2"], "params": {**meta["mst2"]["params"], "order": 1}}}
    with pytest.raises(ModelFileError, match="mst2"):
        RerankDepParser._from_model_file(bad, arrays)
    with pytest.raises(ModelFileError, match="mst2.weight_value"):
        RerankDepParser._from_model_file(meta, {**arrays, "mst2.weight_value":
                                                np.full_like(arrays["mst2.weight_value"],
                                                             np.nan)})


def test_base_order_1_is_unchanged(synthetic, tmp_path):
    train, test = synthetic[:240], synthetic[240:]
    a = RerankDepParser(**KW).fit(train)
    b = RerankDepParser(base_order=1, **KW).fit(train)
    assert a.mst2_ is None and b.mst2_ is None and "mst2" not in a.fit_info_.seconds
    assert a.dense_weights_.shape == (1,)
    np.testing.assert_array_equal(a.weights_, b.weights_)
    np.testing.assert_array_equal(a.dense_weights_, b.dense_weights_)
    assert [s.heads for s in a.parse(test)] == [s.heads for s in b.parse(test)]
    # a file written before base_order existed loads as base_order 1
    meta, arrays = a._model_file()
    params = dict(meta["params"])
    del params["base_order"]
    meta = {k: v for k, v in meta.items() if k != "mst2"}
    old = RerankDepParser._from_model_file({**meta, "params": params}, arrays)
    assert old.base_order == 1 and old.mst2_ is None
    assert [s.heads for s in old.parse(test)] == [s.heads for s in a.parse(test)]


def test_bad_base_order_and_lists_without_scores(synthetic, order2):
    for bad in (0, 3, True, "2", None):
        with pytest.raises(ValueError, match="base_order"):
            RerankDepParser(base_order=bad).fit(synthetic[:20])
    with pytest.raises(ValueError, match="order2_best"):
        RerankDepParser(base_order=2, order2_best=1).fit(synthetic[:20])
    lists = RerankDepParser(**KW).training_lists(synthetic[:60])
    assert lists.mst2 is None
    with pytest.raises(ValueError, match="second-order scores"):
        RerankDepParser(base_order=2, **KW).fit_lists(lists)


@pytest.mark.slow
def test_cli_base_order_2(synthetic, tmp_path):
    train, inp, model = tmp_path / "t.conllu", tmp_path / "in.conllu", tmp_path / "m.rr"
    write_conllu(train, synthetic[:150])
    write_conllu(inp, synthetic[240:], heads=False)
    assert cli.main(["train", "rerank-dep", str(train), "-o", str(model), "--features", "base",
                     "--k", "5", "--iterations", "2", "--bits", "18", "--rerank-bits", "16",
                     "--base-order", "2", "-q"]) == 0
    m = RerankDepParser.load(model)
    assert m.base_order == 2 and m.mst2_.order == 2 and m.order2_best
    out = tmp_path / "out.conllu"
    assert cli.main(["parse", str(model), str(inp), "-o", str(out), "-q"]) == 0
    assert out.read_text().strip()
    assert cli.main(["train", "rerank-dep", str(train), "-o", str(model), "--features", "base",
                     "--k", "5", "--iterations", "2", "--bits", "18", "--rerank-bits", "16",
                     "--base-order", "2", "--no-order2-best", "-q"]) == 0
    assert not RerankDepParser.load(model).order2_best


def test_sentence_over_the_kbest_budget_gets_the_second_order_tree(order2, synthetic, caplog):
    """With ``base_order=2`` a sentence too big for the k-best chart gets the second-order
    model's best tree (not the first-order parser's); the others are re-ranked as before."""
    import logging

    from fastspectral import _memory

    test = synthetic[240:270]
    lengths = [len(s.words) for s in test]
    longest = int(np.argmax(lengths))
    full = [list(h) for h in order2.predict_heads(test)]
    over = [k for k, n in enumerate(lengths) if n == lengths[longest]]
    budget = _memory.kbest_chart_bytes(lengths[longest] - 1)
    try:
        order2.max_memory = budget
        with caplog.at_level(logging.WARNING, logger="fastspectral"):
            got = [list(h) for h in order2.predict_heads(test)]
        assert order2.last_parse_stats_.too_long == len(over)
        # the second-order model under the same budget (its own fallback may apply)
        second = [list(h) for h in order2.mst2_.predict_heads(test)]
        # the others, parsed alone under the same budget (the second-order tree added to
        # their lists is under that budget too)
        rest = [k for k in range(len(test)) if k not in over]
        alone = dict(zip(rest, (list(h) for h in order2.predict_heads([test[k] for k in rest]))))
    finally:
        order2.max_memory = None
        order2.mst_.max_memory = None
        order2.mst2_.max_memory = None
    assert "second-order base parser's best tree" in caplog.text
    for k in range(len(test)):
        assert got[k] == (second[k] if k in over else alone[k])
        if k not in over and _memory.mst2_chart_bytes(lengths[k]) <= budget:
            assert got[k] == full[k]        # nothing under any budget: re-ranked as before


def test_fixed_base_keeps_the_start_weight(synthetic, order2):
    """``fixed_base``: the base score's dense weight stays at ``start_weight`` through the
    perceptron (the second-order score's by default with ``base_order=2``); the other dense
    weights are learnt.  Defaults: fixed at 1000 with ``base_order=2``, learnt from 1 with
    ``base_order=1``."""
    assert order2._fixed_base and order2._start_weight == 1000.0
    assert order2.dense_weights_[-1] == 1000.0            # the order-2 column, untouched
    assert order2.dense_weights_[0] != 0.0                # the first-order score, learnt
    free = RerankDepParser(base_order=2, fixed_base=False, **KW).fit(synthetic[:240])
    assert free._start_weight == 1.0 and free.dense_weights_[-1] != 1.0
    one = RerankDepParser(fixed_base=True, start_weight=7, **KW).fit(synthetic[:240])
    assert one.dense_weights_.tolist() == [7.0]
    dflt = RerankDepParser(**KW)
    assert not dflt._fixed_base and dflt._start_weight == 1.0
    # a re-ranker trained with fixed_base round-trips (its parameters are saved)
    meta, arrays = one._model_file()
    back = RerankDepParser._from_model_file(meta, arrays)
    assert back.fixed_base is True and back.start_weight == 7
    np.testing.assert_array_equal(back.dense_weights_, one.dense_weights_)
    for bad in ({"fixed_base": 1}, {"fixed_base": "yes"}, {"start_weight": 0},
                {"start_weight": -1.0}, {"start_weight": float("inf")},
                {"start_weight": True}, {"start_weight": "big"}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            RerankDepParser(**bad).fit(synthetic[:20])


def test_cli_fixed_base_and_start_weight(synthetic, tmp_path):
    from fastspectral import cli
    from fastspectral.trees.conll import write_conllu

    train = tmp_path / "train.conllu"
    write_conllu(synthetic[:60], train)
    model = tmp_path / "m.fsm"
    base = ["train", "rerank-dep", str(train), "-o", str(model), "--features", "base", "--k",
            "4", "--iterations", "1", "--bits", "16", "--rerank-bits", "16", "-q"]
    assert cli.main(base + ["--fixed-base", "--start-weight", "5"]) == 0
    m = RerankDepParser.load(model)
    assert m.fixed_base is True and m.start_weight == 5.0 and m.dense_weights_.tolist() == [5.0]
    assert cli.main(base + ["--base-order", "2", "--no-fixed-base"]) == 0
    m = RerankDepParser.load(model)
    assert m.fixed_base is False and m.start_weight is None
    assert cli.main(base + ["--start-weight", "0"]) != 0
