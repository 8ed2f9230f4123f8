"""Punctuation tags never disagree with the words' training evidence or shape: EVALB
deletes the COLLINS.prm punctuation tags, so such a disagreement is a "Length unmatch" sentence,
and more than ten of them abort EVALB's report."""
from __future__ import annotations

import pytest
from conftest import data_path, need

from fastspectral import PCFG
from fastspectral.eval.evalb import EvalbParams, evaluate
from fastspectral.grammar.lexicon import PUNCT_TAGS, punctuation_tag
from fastspectral.trees import Tree


@pytest.mark.parametrize("word,tag", [(".", "."), ("?", "."), ("!", "."), ("?!", "."),
                                      (",", ","), (";", ":"), ("--", ":"), ("...", ":"),
                                      ("-", ":"), ("``", "``"), ("`", "``"), ("''", "''"),
                                      ('"', "''"), ("\u201c", "``"), ("\u201d", "''"),
                                      ("#", None), ("$", None), ("%", None), ("a.", None),
                                      ("U.S.", None), ("", None)])
def test_punctuation_tag_by_shape(word, tag):
    assert punctuation_tag(word) == tag


def _tree(s):
    return Tree.fromstring(s)


TRAIN = [
    "(TOP (S (NP (DT the) (NN dog)) (VP (VBZ barks)) (. .)))",
    "(TOP (S (NP (DT the) (NNS cats)) (VP (VBP sleep)) (. .)))",
    "(TOP (S (NP (NP (DT the) (NNS cats) (POS ')) (NN bowl)) (VP (VBZ is) (ADJP (JJ empty))) (. .)))",
    "(TOP (S (NP (DT a) (NN dog)) (, ,) (NP (DT a) (NN cat)) (VP (VBP run)) (. !)))",
    "(TOP (S (`` `) (NP (DT the) (NN cat)) ('' ') (VP (VBZ runs)) (. .)))",
] * 20


@pytest.fixture(scope="module")
def small():
    return PCFG(v=1, h=0, prune_threshold=None, jobs=1).fit([_tree(s) for s in TRAIN])


def _tags(model, words):
    return [t for _, t in model.parse([words], jobs=1)[0].pos()]


def test_unknown_tokens_get_punctuation_tags_by_shape_only(small):
    tags = _tags(small, ["the", "zorp", "barks", "?"])
    assert tags[-1] == "." and tags[1] not in PUNCT_TAGS
    tags = _tags(small, ["the", "dog", ";", "the", "cat", "runs", "."])
    assert tags[2] == ":" or ":" not in small.grammar_.tag_symbols
    assert all(t not in PUNCT_TAGS for t in _tags(small, ["Zorp", "barks"]))


def test_apostrophe_is_possessive_or_closing_quote(small):
    possessive = _tags(small, ["the", "cats", "'", "bowl", "is", "empty", "."])
    assert possessive[2] == "POS"
    closing = _tags(small, ["`", "the", "cat", "'", "runs", "."])
    assert closing[3] == "''"
    elision = _tags(small, ["Dunkin", "'", "runs", "."])
    assert elision[1] == "''"


@pytest.mark.slow
def test_no_length_mismatch_on_section_22():
    """The default PCFG trained on the WSJ sample tags §22's punctuation as the gold does: EVALB
    (COLLINS.prm) scores every one of the 181 sentences with an ambiguous punctuation token
    (without the rule, 10 of them are "Length unmatch" sentences)."""
    from conftest import without_punctuation_rule

    from fastspectral.trees.readers import read_treebank
    from fastspectral.trees.transforms import clean

    train = list(read_treebank(need(data_path("ptb", "wsj-sample.mrg"))))
    test = [t for t in map(clean, read_treebank(need(data_path("ptb", "wsj22.trees"))))
            if any(w in ("'", "?", "!", ";", "--", "...", "`", ":") for w in t.leaves())]
    model = PCFG(jobs=2).fit(train)
    gold = [str(t) for t in test]
    words = [t.leaves() for t in test]
    result = evaluate(gold, [str(t) for t in model.parse(words, jobs=2)],
                      EvalbParams(max_error=None))
    assert result.all.n_error == 0
    assert not result.aborted
    before = evaluate(gold, [str(t) for t in without_punctuation_rule(model).parse(words, jobs=2)],
                      EvalbParams(max_error=None))
    assert before.all.n_error > 0       # the test can fail
