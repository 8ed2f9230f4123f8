"""NLTK interop: Tree <-> nltk.Tree and DepSentence <-> DependencyGraph round trips, every
constituency and dependency learner fitting NLTK objects, and the ParserI adapter."""
from __future__ import annotations

import subprocess
import sys

import pytest

nltk = pytest.importorskip("nltk")

from _toy import coordination_treebank, dep_treebank, dep_treebank_svo  # noqa: E402

from fastspectral import models  # noqa: E402
from fastspectral.trees.conll import DepSentence  # noqa: E402
from fastspectral.rerank import MSTParser  # noqa: E402
from fastspectral.trees.tree import Tree  # noqa: E402

PTB = ["(TOP (S (NP (DT the) (NN dog)) (VP (VBZ barks)) (. .)))",
       "( (S (NP (-NONE- *)) (VP (VB go) (-LRB- -LRB-) (NN here) (-RRB- -RRB-))))",
       "(X (Y a) (Z (W b) (V c)))"]


@pytest.mark.parametrize("text", PTB)
def test_tree_round_trips(text):
    t = Tree.fromstring(text)
    n = t.to_nltk()
    assert isinstance(n, nltk.Tree)
    assert n == nltk.Tree.fromstring(text)           # labels, leaves, the empty root label
    assert n.leaves() == t.leaves() and n.pos() == t.pos()
    assert Tree.from_nltk(n) == t
    assert Tree.from_nltk(nltk.Tree.fromstring(text)) == t
    assert n.pformat(margin=sys.maxsize) == t.to_string()


def test_brackets_in_words_escape_on_request():
    t = Tree("S", [Tree("NN", ["("]), Tree("NN", ["a)b"]), Tree("-LRB-", ["x"])])
    n = t.to_nltk()
    assert n.leaves() == ["(", "a)b", "x"]                    # verbatim by default
    assert Tree.from_nltk(n) == t
    e = t.to_nltk(escape=True)
    assert e.leaves() == ["-LRB-", "a-RRB-b", "x"]
    assert e.pformat(margin=sys.maxsize) == t.to_string()    # what Tree writes
    assert nltk.Tree.fromstring(e.pformat(margin=sys.maxsize)) == e
    back = Tree.from_nltk(e, unescape=True)
    assert back.leaves() == ["(", "a)b", "x"] and back[2].label == "("


def test_from_nltk_refuses_non_string_leaves():
    with pytest.raises(TypeError, match="leaf"):
        Tree.from_nltk(nltk.Tree("NP", [("dog", "NN")]))
    with pytest.raises(TypeError, match="label"):
        Tree.from_nltk(nltk.Tree(3, ["a"]))


def test_deep_trees_convert_without_recursion():
    t = Tree("X", ["w"])
    for _ in range(5000):
        t = Tree("X", [Tree("Y", ["w"]), t])
    assert Tree.from_nltk(t.to_nltk()) == t


def test_dependency_graph_round_trips():
    text = ("1\tthe\tthe\tDET\tDT\t_\t2\tdet\t_\t_\n"
            "2\tdog\tdog\tNOUN\tNN\tNumber=Sing\t3\tnsubj\t_\t_\n"
            "3\tbarks\tbark\tVERB\tVBZ\t_\t0\troot\t_\t_\n")
    g = nltk.parse.DependencyGraph(text, top_relation_label="root")
    s = DepSentence.from_nltk(g)
    assert s.words == ["the", "dog", "barks"] and s.heads == [2, 3, 0]
    assert s.upos == ["DET", "NOUN", "VERB"] and s.xpos == ["DT", "NN", "VBZ"]
    assert s.rels == ["det", "nsubj", "root"] and s.feats[1] == "Number=Sing"
    g2 = s.to_nltk()
    assert g2.to_conll(10) == g.to_conll(10)
    assert g2.root["address"] == 3
    assert g2.tree() == nltk.Tree("barks", [nltk.Tree("dog", ["the"])])
    assert DepSentence.from_nltk(g2) == s
    for d in dep_treebank():
        assert DepSentence.from_nltk(d.to_nltk()) == d


def _kinds(input_kind):
    return [k for k, e in models.REGISTRY.items() if e.input_kind == input_kind
            and k != "lexical"]


SMALL = {"spectral-lpcfg": {"n_states": 2}, "pivot-lpcfg": {"n_states": 2},
         "em-lpcfg": {"n_states": 2, "iterations": 1}, "shag": {"n_states": 2},
         "rerank-dep": {"features": "base", "k": 4, "folds": 2,
                        "mst": MSTParser(iterations=1)},
         "mst": {"iterations": 1},
         "latent-dep": {"n_states": 2}}


def _output(model, test):
    if model.input_kind == "sentences":
        return [str(t) for t in model.parse(test, jobs=1)]
    if model.kind == "latent-dep":
        return list(model.log_prob(test))
    return [s.heads for s in model.parse(test, jobs=1)]


@pytest.mark.parametrize("kind", _kinds("sentences"))
def test_constituency_learners_fit_nltk_trees(kind):
    trees = coordination_treebank(20)
    cls = models.model_class(kind)
    a = cls(**SMALL.get(kind, {})).fit(trees)
    b = cls(**SMALL.get(kind, {})).fit([t.to_nltk() for t in trees])
    test = [t.leaves() for t in trees[:4]]
    assert _output(a, test) == _output(b, test)


def test_constituency_fit_still_names_a_wrong_item():
    cls = models.model_class("pcfg")
    with pytest.raises(TypeError, match="tree 1 is a dict"):
        cls().fit([Tree.fromstring(PTB[0]), {}])


@pytest.mark.parametrize("kind", _kinds("dependency"))
def test_dependency_learners_fit_dependency_graphs(kind):
    sents = dep_treebank_svo()
    cls = models.model_class(kind)
    params = {k: v for k, v in SMALL.get(kind, {}).items() if k in cls._get_param_names()}
    a = cls(**params).fit(sents)
    b = cls(**params).fit([s.to_nltk() for s in sents])
    test = sents[:6] if kind == "latent-dep" else [
        DepSentence(words=s.words, xpos=s.xpos, heads=[-1] * len(s)) for s in sents[:6]]
    assert _output(a, test) == _output(b, test)


@pytest.fixture(scope="module")
def pcfg():
    return models.model_class("pcfg")().fit(coordination_treebank(40))


def test_parser_implements_parser_i(pcfg, tmp_path):
    from nltk.parse.api import ParserI

    from fastspectral.integrations.nltk import Parser

    p = Parser(pcfg)
    assert isinstance(p, ParserI)
    sents = [["the", "dog", "barks", "."], ["a", "cat", "sleeps", "."], ["dogs", "bark", "."]]
    want = [t.to_nltk() for t in pcfg.parse(sents, jobs=1)]
    assert next(p.parse(sents[0])) == want[0]
    assert p.parse_one(sents[1]) == want[1]                 # NLTK's own helpers
    assert p.parse_all(sents[2]) == [want[2]]
    assert [list(x) for x in p.parse_sents(sents)] == [[w] for w in want]
    tagged = [("the", "DT"), ("dog", "NN"), ("barks", "VBZ"), (".", ".")]
    assert p.parse_one(tagged) == pcfg.parse([sents[0]], tags=[["DT", "NN", "VBZ", "."]],
                                             jobs=1)[0].to_nltk()
    with pytest.raises(NotImplementedError, match="no NLTK grammar"):
        p.grammar()
    pcfg.save(tmp_path / "m.fsm")
    assert Parser(tmp_path / "m.fsm").parse_one(sents[0]) == want[0]


def test_parse_sents_is_batched(pcfg):
    from fastspectral.integrations.nltk import Parser

    calls = []
    parse = pcfg.parse

    class Counting:
        input_kind, kind = pcfg.input_kind, pcfg.kind

        def parse(self, items, **kw):
            calls.append(len(items))
            return parse(items, **kw)

    p = Parser(Counting(), batch_size=3)
    sents = [["the", "dog", "barks", "."]] * 7
    assert len([next(x) for x in p.parse_sents(sents)]) == 7
    assert calls == [3, 3, 1]


def test_parser_with_a_dependency_model():
    from fastspectral.integrations.nltk import Parser

    shag = models.model_class("shag")(n_states=2).fit(dep_treebank())
    p = Parser(shag)
    g = p.parse_one([("the", "DT"), ("dog", "NN"), ("barks", "VBZ")])
    assert isinstance(g, nltk.parse.DependencyGraph)
    heads = shag.parse([DepSentence(words=["the", "dog", "barks"], xpos=["DT", "NN", "VBZ"],
                                    heads=[-1] * 3)], jobs=1)[0].heads
    assert [g.nodes[i]["head"] for i in (1, 2, 3)] == heads
    assert len(p.parse_one([]).nodes) == 1                 # an empty sentence: an empty graph


def test_parser_refuses_models_that_do_not_parse():
    from fastspectral.integrations.nltk import Parser

    lm = models.model_class("kneser-ney-bigram-lm")().fit([["a", "b"], ["b", "a"]])
    with pytest.raises(TypeError, match="does not parse"):
        Parser(lm)
    with pytest.raises(ValueError, match="batch_size"):
        Parser(models.model_class("pcfg")().fit(coordination_treebank(5)), batch_size=0)


def test_import_fastspectral_imports_neither_nltk_nor_spacy():
    code = ("import sys, fastspectral\n"
            "from fastspectral import PCFG, SHAGParser, ATMParser\n"
            "import fastspectral.integrations\n"
            "PCFG().fit([fastspectral.trees.tree.Tree.fromstring('(S (A a))')])\n"
            "assert not {'nltk', 'spacy'} & set(sys.modules), sorted(sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
