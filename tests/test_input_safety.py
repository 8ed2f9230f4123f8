"""The library is safe on any input: memory independent of token length, one-line TypeErrors
(and NotFittedErrors) for the wrong kind of input to every kind of the registry, flat-tree
fallbacks counted and reported, probability arrays of model files checked, the eigenword
dimension capped at the data's rank, most-probable fallback tags, and a warning when Malt-TAB
cannot hold a model's scores."""
from __future__ import annotations

import io
import logging
import tracemalloc
import warnings

import numpy as np
import pytest

from fastspectral import cli, models
from fastspectral.errors import ModelFileError, NotFittedError
from fastspectral.trees.conll import DepSentence
from fastspectral.trees.tree import Tree

from conftest import data_path, need

KINDS = sorted(models.REGISTRY)

#: small, fast settings per model kind (as in test_estimators.py)
SMALL = {
    "spectral-lpcfg": {"n_states": 2},
    "pivot-lpcfg": {"n_states": 2},
    "em-lpcfg": {"n_states": 2, "iterations": 2},
    "shag": {"n_states": 2},
    "latent-bigram-lm": {"n_states": 2},
}


def _dep(text, heads):
    words, tags = zip(*(w.split("/") for w in text.split()))
    return DepSentence(words=words, xpos=tags, upos=tags, heads=heads)


TOY = [_dep("the/DT dog/NN barks/VBZ", [2, 3, 0]),
       _dep("a/DT cat/NN sleeps/VBZ", [2, 3, 0]),
       _dep("dogs/NNS bark/VBP loudly/RB", [2, 0, 2]),
       _dep("the/DT big/JJ dog/NN sleeps/VBZ", [3, 3, 4, 0])] * 5


@pytest.fixture(scope="module")
def data(synthetic_grammar):
    """Training items per input kind, from the built-in synthetic grammar."""
    from fastspectral.dependency.data import trees_to_dep_sentences
    from fastspectral.trees.transforms import clean

    g = synthetic_grammar
    trees = g.sample(300, seed=3)
    deps = list(trees_to_dep_sentences(clean(t) for t in trees))
    return {"sentences": trees, "dependency": deps[:250],
            "sequences": [t.leaves() for t in trees]}


@pytest.fixture(scope="module")
def fitted(data):
    """One fitted model of every kind (fitted lazily, once)."""
    cache = {}

    def get(kind):
        if kind not in cache:
            cls = models.model_class(kind)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cache[kind] = cls(**SMALL.get(kind, {})).fit(data[cls.input_kind])
        return cache[kind]
    return get


# ---- 1. memory independent of the token length ---------------------------------------------
BIG = "x" * (1 << 20)        # one 1 MB token


def _peak_mb(fn):
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 2 ** 20
    finally:
        tracemalloc.stop()


def test_mst_trains_and_parses_a_1mb_token_in_small_memory(tmp_path):
    from fastspectral.rerank import MSTParser

    sents = TOY + [_dep(f"{BIG}/NN barks/VBZ", [2, 0])]
    model = {}

    def train_and_parse():
        model["m"] = m = MSTParser(iterations=2, bits=16, jobs=1).fit(sents)
        out = m.parse(sents, jobs=1)
        assert [s.heads for s in out][-1] in ([2, 0], [0, 1])

    # a fixed-width unicode array held 4 MB per token (about 300 MB here)
    assert _peak_mb(train_and_parse) < 200
    m = model["m"]
    assert BIG in m._index("words_") and m.words_.dtype == object
    m.save(tmp_path / "m.fsm")
    loaded = MSTParser.load(tmp_path / "m.fsm")
    assert [s.heads for s in loaded.parse(sents, jobs=1)] == \
        [s.heads for s in m.parse(sents, jobs=1)]


def test_mst_vocabulary_order_and_unknown_words_unchanged():
    """The object vocabularies sort and look up exactly like the unicode arrays did."""
    from fastspectral.rerank import MSTParser
    from fastspectral.rerank.features import FIRST_ID, UNK_ID

    m = MSTParser(iterations=1, bits=16, jobs=1).fit(TOY)
    words = sorted({w for s in TOY for w in s.words})
    assert m.words_.tolist() == words
    assert m.prefixes_.tolist() == sorted({w[:5] for w in words})
    enc = m.encode([_dep("the/DT zebra/NN", [2, 0])])
    assert enc.W[1:].tolist() == [FIRST_ID + words.index("the"), UNK_ID]


def test_lpcfg_partitions_with_a_1mb_word():
    """The partitioned L-PCFG statistics (the Dask path) map words through a dict."""
    from fastspectral.lpcfg.spectral import SpectralLPCFG

    # 80 distinct words: a fixed-width array of the vocabulary held 80 x 4 MB
    base = [Tree.fromstring(f"(TOP (S (NP (DT the) (NN dog{i})) (VP (VBZ barks))))")
            for i in range(80)] + \
        [Tree.fromstring("(TOP (S (NP (DT a) (NN cat)) (VP (VBZ sleeps))))")] * 20
    big = Tree.fromstring(f"(TOP (S (NP (DT the) (NN {BIG})) (VP (VBZ barks))))")
    parts = [base[::2] + [big], base[1::2] + [big]]
    out = {}

    def fit():
        out["m"] = SpectralLPCFG(n_states=2, jobs=1).fit_partitions(parts)

    assert _peak_mb(fit) < 200
    assert out["m"].parse([["the", "dog", "barks"]], jobs=1)[0].leaves() == \
        ["the", "dog", "barks"]


def test_no_fixed_width_string_arrays_in_the_package():
    """No ``dtype=str`` / ``astype(str)`` / ``"<U"`` arrays of tokens anywhere."""
    import pathlib
    import re

    import fastspectral

    root = pathlib.Path(fastspectral.__file__).parent
    pattern = re.compile(r"dtype\s*=\s*(str|np\.str_|\"<?U\d*\")|astype\((str|\"<?U\d*\")\)")
    bad = [f"{p.relative_to(root)}:{i}" for p in root.rglob("*.py")
           for i, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert bad == []


# ---- 2 and 6. the wrong kind of input, for every kind --------------------------------------
#: the methods that take items (sentences, trees or sequences), and those that take words
ITEM_METHODS = ("parse", "log_likelihood", "perplexity", "log_probability", "predict_heads",
                "kbest", "log_prob", "fragment_log_prob")
WORD_METHODS = ("transform", "ids")
TREE_METHODS = ("tree_probability",)


def _methods(model):
    kinds = [(m, "items") for m in ITEM_METHODS] + [(m, "words") for m in WORD_METHODS] + \
        [(m, "tree") for m in TREE_METHODS]
    from fastspectral.lpcfg.latent import LatentPCFGBase

    out = [(m, k) for m, k in kinds if callable(getattr(model, m, None))]
    if isinstance(model, LatentPCFGBase):         # scores treebank trees
        out = [(m, "trees" if m == "log_likelihood" else k) for m, k in out]
    return out


def _bad_inputs(input_kind, takes):
    """``{label: input}`` that must give a TypeError."""
    if takes == "words":
        return {"a string": "the dog", "non-string words": [1, 2]}
    if takes == "tree":
        return {"a string": "(S (NN dog))", "a list of words": ["the", "dog"]}
    if takes == "trees":
        return {"a string": "(S (NN dog))", "lists of words": [["the", "dog"]],
                "one tree": Tree.fromstring("(TOP (S (NN dog)))")}
    if input_kind == "dependency":
        return {"a string": "the dog", "a flat list of strings": ["the", "dog"],
                "lists of words": [["the", "dog"]],
                "non-string words": [DepSentence(words=[1, 2], xpos=["DT", "NN"],
                                                 upos=["DT", "NN"], heads=[2, 0])]}
    return {"a string": "the dog", "a flat list of strings": ["the dog", "a cat"],
            "non-string tokens": [[1, 2, 3]], "a mixed sentence": [["the", 3]]}


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_has_an_entry_point_checked_here(kind, fitted):
    m = fitted(kind)
    assert _methods(m), f"{kind}: no method of this test takes its input"


@pytest.mark.parametrize("kind", KINDS)
def test_wrong_input_is_a_type_error(kind, fitted):
    m = fitted(kind)
    for name, takes in _methods(m):
        for label, bad in _bad_inputs(m.input_kind, takes).items():
            with pytest.raises(TypeError) as err:
                getattr(m, name)(bad)
            msg = str(err.value)
            assert "\n" not in msg and "attribute" not in msg, (kind, name, label, msg)


@pytest.mark.parametrize("kind", KINDS)
def test_fit_refuses_the_wrong_input(kind):
    cls = models.model_class(kind)
    model = cls(**SMALL.get(kind, {}))
    for label, bad in _bad_inputs(cls.input_kind, "items").items():
        with pytest.raises(TypeError) as err:
            model.fit(bad)
        assert "attribute" not in str(err.value), (kind, label, str(err.value))


@pytest.mark.parametrize("kind", KINDS)
def test_methods_before_fit_raise_not_fitted(kind, data):
    cls = models.model_class(kind)
    model = cls(**SMALL.get(kind, {}))
    trees = data["sentences"][:2]
    items = [t.leaves() for t in trees] if cls.input_kind == "sentences" else \
        data[cls.input_kind][:2]
    for name, takes in _methods(model):
        arg = {"items": items, "trees": trees, "tree": trees[0], "words": ["the", "dog"]}[takes]
        with pytest.raises(NotFittedError):
            getattr(model, name)(arg)


def test_language_models_refuse_characters_as_words(fitted):
    for kind in ("latent-bigram-lm", "kneser-ney-bigram-lm"):
        m = fitted(kind)
        with pytest.raises(TypeError, match="string"):
            m.perplexity("the dog barks")
        with pytest.raises(TypeError, match="string"):
            type(m)().fit(["the dog", "a cat"])
    with pytest.raises(TypeError, match="string"):
        models.model_class("brown")().fit(["the dog", "a cat"])
    # (word, tag) pairs are still accepted by the language models
    m = fitted("kneser-ney-bigram-lm")
    assert m.log_likelihood([[("the", "DT"), ("dog", "NN")]]) == \
        m.log_likelihood([["the", "dog"]])


def test_input_checks_share_one_helper():
    """HMM, Eigenwords, Brown and the language models use the one check of base.py."""
    from fastspectral import base
    from fastspectral.hmm import data as hmm_data

    assert hmm_data.check_sequences is base.check_sequences
    with pytest.raises(TypeError, match=r"sequences\[1\] holds a int"):
        base.check_sequences([["a"], ["b", 2]])
    with pytest.raises(TypeError, match="one sentence"):
        base.check_dep_sentences(TOY[0])
    with pytest.raises(TypeError, match="one tree"):
        base.check_trees(Tree.fromstring("(S (NN a))"))
    assert base.check_words(("a", "b")) == ["a", "b"]


def test_parse_of_a_generator_still_parses_every_sentence(fitted):
    """The checks see lists: a generator is not consumed by them."""
    for kind in ("ccm", "atm", "latent-dep"):
        m = fitted(kind)
        items = [TOY[0], TOY[1]] if m.input_kind == "dependency" else \
            [["the", "dog", "barks"], ["a", "cat", "sleeps"]]
        assert len(m.parse(x for x in items)) == 2


# ---- 3. degenerate grammars: fallbacks counted and reported; probabilities checked ------------
def _one_word_trees():
    return [Tree.fromstring("(TOP (S (NN dog)))"), Tree.fromstring("(TOP (S (VB runs)))")] * 3


def test_flat_fallbacks_are_counted():
    from fastspectral.grammar.pcfg import PCFG

    m = PCFG(jobs=1).fit(_one_word_trees())
    m.parse([["dog", "runs"], ["runs", "dog", "dog"], ["dog"]], jobs=1)
    assert m.last_parse_stats_.fallback == 2 and m.last_parse_stats_.flat_fallbacks == 2


def test_cli_warns_with_the_number_of_flat_fallbacks(tmp_path, capsys):
    train = tmp_path / "t.mrg"
    train.write_text("".join(str(t) + "\n" for t in _one_word_trees()))
    text = tmp_path / "in.txt"
    text.write_text("dog runs\nruns dog dog\ndog\n" * 70)       # 140 of 210 have no parse
    model = tmp_path / "m.pcfg"
    assert cli.main(["train", "pcfg", str(train), "-o", str(model), "-q"]) == 0
    capsys.readouterr()
    assert cli.main(["parse", str(model), str(text), "-o", str(tmp_path / "o.trees"),
                     "--chunk-size", "50"]) == 0
    err = capsys.readouterr().err
    assert "140 sentence(s) have no parse under the grammar" in err


def _resave(src, dst, change):
    from fastspectral.io.modelfile import load_model_file, save_model_file

    kind, meta, arrays = load_model_file(src)
    arrays = {k: np.array(v) for k, v in arrays.items()}
    change(arrays)
    save_model_file(dst, kind, meta, arrays)       # a valid checksum over the changed arrays


def _probability_arrays(kind, arrays):
    import re

    from fastspectral.io.validate import VALUE_RANGES

    return {name: check for name in arrays for pattern, check in VALUE_RANGES[kind].items()
            if re.fullmatch(pattern, name)}


#: floating-point arrays that are not probabilities (weights, spectral parameters, scores,
#: histories of any sign), per kind: every other floating-point array must be in VALUE_RANGES
UNBOUNDED = {
    "atm": {"distances"}, "brown": {"embeddings"}, "eigenwords": {"embeddings",
                                                                   "singular_values"},
    "em-lpcfg": {"lex_table"}, "pivot-lpcfg": {"lex_table"},
    "spectral-lpcfg": {"lpcfg_T", "lpcfg_U", "lpcfg_c1", "lex_table", "sv_vals"},
    "hmm": {"train_loglik", "dev_perplexity", "alpha1", "A", "beta", "c", "W", "fallback",
            "singular_values"},
    "latent-bigram-lm": {"train_loglik", "dev_perplexity"},
    "latent-dep": {"leaf", "leaf_tags", "E_L", "E_R", "c1", "singular_values", "stop_L",
                   "stop_R"},
    "lexical": {"t_doc_tokens", "lam_M_full", "lamdoc_M_full"},
    "mst": {"weight_value"}, "shag": {"op_alpha1", "op_beta", "op_A"},
    "rerank-dep": {"rerank_value", "dense_weights", "dense_scale", "mst.weight_value",
                   "spec.leaf", "spec.leaf_tags", "spec.E_L", "spec.E_R", "spec.c1",
                   "spec.singular_values", "spec.stop_L", "spec.stop_R"},
}


@pytest.mark.parametrize("kind", KINDS)
def test_every_probability_array_is_checked(kind, fitted, tmp_path):
    from fastspectral.io.modelfile import load_model_file
    from fastspectral.io.validate import VALUE_RANGES

    assert kind in VALUE_RANGES, "every kind lists its probability arrays"
    m = fitted(kind)
    path = tmp_path / "m.fsm"
    m.save(path)
    _, _, arrays = load_model_file(path)
    probs = _probability_arrays(kind, arrays)
    floats = {k for k, v in arrays.items() if np.asarray(v).dtype.kind == "f"}
    assert floats - set(probs) <= UNBOUNDED.get(kind, set()), "unclassified arrays"
    cls = type(m)
    bad_values = {"prob": [1e300, 1.5, -0.25, np.nan], "logprob": [0.5, 1e300, np.inf],
                  "count": [-1.0, np.inf]}
    for name, check in probs.items():
        if np.asarray(arrays[name]).size == 0:
            continue
        for value in bad_values[check]:
            def change(a, value=value, name=name):
                a[name] = a[name].astype(np.float64)
                a[name].flat[0] = value
            _resave(path, tmp_path / "bad.fsm", change)
            with pytest.raises(ModelFileError, match=name):
                cls.load(tmp_path / "bad.fsm")
        if check != "count":
            def to_int(a, name=name):
                a[name] = a[name].astype(np.int64)
            _resave(path, tmp_path / "bad.fsm", to_int)
            with pytest.raises(ModelFileError, match="floating"):
                cls.load(tmp_path / "bad.fsm")
    cls.load(path)                                  # the file itself loads


def test_integer_or_huge_pcfg_probabilities_are_refused(tmp_path):
    from fastspectral.grammar.pcfg import PCFG

    from _toy import coordination_treebank

    m = PCFG(jobs=1).fit(coordination_treebank(20))
    m.save(tmp_path / "m.pcfg")
    _resave(tmp_path / "m.pcfg", tmp_path / "int.pcfg",
            lambda a: a.__setitem__("fine_bin_prob", a["fine_bin_prob"].astype(np.int64)))
    with pytest.raises(ModelFileError, match="fine_bin_prob.*floating"):
        PCFG.load(tmp_path / "int.pcfg")

    def huge(a):
        a["fine_bin_prob"][0] = 1e300
    _resave(tmp_path / "m.pcfg", tmp_path / "huge.pcfg", huge)
    with pytest.raises(ModelFileError, match="fine_bin_prob"):
        PCFG.load(tmp_path / "huge.pcfg")
    (tmp_path / "in.txt").write_text("the dog barks\n")
    rc = cli.main(["parse", str(tmp_path / "huge.pcfg"), str(tmp_path / "in.txt"), "-o",
                   str(tmp_path / "o.trees"), "-q"])
    assert rc == 2


# ---- 4. the eigenword dimension is capped at the data's rank ---------------------------------
def test_eigenwords_dim_capped_with_a_warning(caplog):
    from fastspectral.embeddings.eigenwords import Eigenwords

    sents = [["the", "dog", "barks"], ["a", "cat", "sleeps"], ["the", "cat", "barks"]] * 10
    with caplog.at_level(logging.WARNING, logger="fastspectral"):
        m = Eigenwords(dim=3000, min_count=1, random_state=0).fit(sents)
    d = m.embeddings_.shape[1]
    assert 1 <= d < 10
    assert len(m.singular_values_) == d
    assert not (np.abs(m.embeddings_) < 1e-12).all(axis=0).any(), "no all-zero column"
    assert any("dim=3000" in r.getMessage() for r in caplog.records)
    assert m.get_params()["dim"] == 3000                 # the hyperparameter is unchanged
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="fastspectral"):
        small = Eigenwords(dim=2, min_count=1, random_state=0).fit(sents)
    assert small.embeddings_.shape[1] == 2 and not caplog.records


# ---- 5. the flat fallback's tags are argmax_t P(t | w) -------------------------------------
def test_best_tags_take_the_tag_prior():
    """A frequent tag beats a rare one that gives a word a larger P(w | t)."""
    from fastspectral.grammar.pcfg import PCFG

    trees = [Tree.fromstring("(TOP (S (NN would) (VB go)))")] * 9 + \
        [Tree.fromstring(f"(TOP (S (NN x{i}) (VB go)))") for i in range(30)] + \
        [Tree.fromstring("(TOP (S (JJ would) (VB go)))")]
    m = PCFG(jobs=1).fit(trees)
    # P(would | JJ) = 1 > P(would | NN) = 9/39, but P(NN | would) = 0.9
    assert m.best_tags(["would", "go"]) == ["NN", "VB"]
    assert m.best_tags(["would", "go"], tags=["JJ", None]) == ["JJ", "VB"]


@pytest.mark.slow
def test_fallback_tag_accuracy_on_wsj22():
    from fastspectral.grammar.pcfg import PCFG
    from fastspectral.trees.readers import read_treebank
    from fastspectral.trees.transforms import clean

    m = PCFG(jobs=1).fit(read_treebank(need(data_path("ptb", "wsj-sample.mrg"))))
    ok = n = 0
    for t in list(read_treebank(need(data_path("ptb", "wsj22.trees"))))[:500]:
        t = clean(t)
        gold = [tag for _, tag in t.pos()]
        ok += sum(a == b for a, b in zip(m.best_tags(t.leaves()), gold))
        n += len(gold)
    assert ok / n > 0.9                # argmax_t P(w | t) alone: about 0.80


# ---- 7. Malt-TAB cannot hold the latent-dep scores: a warning --------------------------------
def test_malttab_warns_that_scores_are_not_written(fitted, caplog):
    from fastspectral.trees.conll import write_conllu as write, write_malttab

    m = fitted("latent-dep")
    scored = m.parse(TOY[:3])
    with caplog.at_level(logging.WARNING, logger="fastspectral"):
        write_malttab(scored, io.StringIO())
    msgs = [r.getMessage() for r in caplog.records]
    assert len(msgs) == 1 and "not written" in msgs[0]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="fastspectral"):
        write_malttab(TOY[:3], io.StringIO())       # nothing lost: no warning
        buf = io.StringIO()
        write(scored, buf)                          # CoNLL-U keeps them
    assert not caplog.records and "latent_dep_log_prob" in buf.getvalue()
