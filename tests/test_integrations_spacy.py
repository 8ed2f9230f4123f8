"""The "fastspectral" spaCy component: entry point, benepar's extensions, heads, batching,
worker processes, the fallbacks of parse() inside nlp.pipe, to_disk / spacy.load."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

spacy = pytest.importorskip("spacy")

from _toy import coordination_treebank, dep_treebank  # noqa: E402
from conftest import subprocess_env  # noqa: E402

# registers the factory in this process (an installed package does it through its entry
# point: test_entry_point_registers_the_factory_without_an_import)
import fastspectral.integrations.spacy  # noqa: E402,F401

ROOT = Path(__file__).resolve().parents[1]
TAGS = {"the": "DT", "a": "DT", "dog": "NN", "cat": "NN", "dogs": "NNS", "barks": "VBZ",
        "sees": "VBZ", "sleeps": "VBZ", "bark": "VBP", "big": "JJ", "and": "CC", ".": "."}
TEXTS = ["the dog barks.", "a cat sees the dog. the cat sleeps.", "dogs bark.",
         "the cat sees a dog and the dog barks.", "a dog sleeps."]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    from fastspectral import PCFG, SHAGParser

    d = tmp_path_factory.mktemp("models")
    pcfg, shag = d / "pcfg.fsm", d / "shag.fsm"
    PCFG().fit(coordination_treebank(40)).save(pcfg)
    SHAGParser(n_states=2).fit(dep_treebank()).save(shag)
    return {"pcfg": pcfg, "shag": shag}


def _nlp(model, tagger=False, **config):
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    if tagger:          # a rule-based tagger: token.tag_ from a table
        ruler = nlp.add_pipe("attribute_ruler")
        for w, t in TAGS.items():
            ruler.add([[{"LOWER": w}]], {"TAG": t})
    nlp.add_pipe("fastspectral", config={"model": str(model), **config})
    return nlp


def _words(sent):
    return [t.text for t in sent if not t.is_space]


def test_entry_point_registers_the_factory_without_an_import(tmp_path, models):
    """The pyproject entry point, installed as package metadata, is all spaCy needs."""
    import tomllib

    eps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    lines = "".join(f"{k} = {v}\n" for k, v in eps["spacy_factories"].items())
    dist = tmp_path / "fastspectral_ep-0.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: fastspectral-ep\nVersion: 0.0\n")
    (dist / "entry_points.txt").write_text("[spacy_factories]\n" + lines)
    script = textwrap.dedent(f"""
        import sys, spacy
        assert "fastspectral" not in sys.modules        # nothing imported by hand
        nlp = spacy.blank("en")
        nlp.add_pipe("sentencizer")
        nlp.add_pipe("fastspectral", config={{"model": {str(models['pcfg'])!r}}})
        doc = nlp("the dog barks.")
        print(list(doc.sents)[0]._.parse_string)
    """)
    env = subprocess_env(tmp_path)
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "(S (NP (DT the) (NN dog)) (VP (VBZ barks)) (. .))"


def test_constituency_extensions_match_parse(models):
    import fastspectral
    from fastspectral.trees.tree import Tree

    nlp = _nlp(models["pcfg"])
    model = fastspectral.load(models["pcfg"])
    for doc in nlp.pipe(TEXTS):
        for sent in doc.sents:
            want = model.parse([_words(sent)], jobs=1)[0].children[0]   # TOP removed
            assert sent._.parse_string == want.to_string()
            assert sent._.labels == (want.label,)
            assert sent._.parent is None
            cons = list(sent._.constituents)
            assert cons[0] == sent
            kids = sent._.children
            assert [k.text for k in kids] == [" ".join(Tree("x", [c]).leaves())
                                              for c in want.children]
            for c in cons[1:]:
                assert c._.parent is not None and c._.parent.start <= c.start
                assert c.end <= c._.parent.end
            tok = sent[0:1]
            assert tok._.labels == () or tok._.labels[0] != "DT"   # tags are not labels
    doc = nlp("the dog barks.")
    sent = next(doc.sents)
    assert sent[0:2]._.labels == ("NP",)
    assert sent[2:3]._.labels == ("VP",)
    assert sent[1:3]._.labels == ()
    with pytest.raises(ValueError, match="not a constituent"):
        sent[1:3]._.children


def test_tagger_tags_are_given_to_the_model(models):
    import fastspectral

    model = fastspectral.load(models["pcfg"])
    nlp = _nlp(models["pcfg"], tagger=True)
    doc = nlp("a dog sees the cat.")
    sent = next(doc.sents)
    tags = [t.tag_ for t in sent]
    assert doc.has_annotation("TAG") and tags[0] == "DT"
    want = model.parse([_words(sent)], tags=[tags], jobs=1)[0].children[0]
    assert sent._.parse_string == want.to_string()
    # tags="none" ignores the tagger
    nlp = _nlp(models["pcfg"], tagger=True, tags="none")
    sent = next(nlp("a dog sees the cat.").sents)
    assert sent._.parse_string == model.parse([_words(sent)], jobs=1)[0].children[0].to_string()


def test_dependency_model_sets_heads(models):
    import fastspectral
    from fastspectral.trees.conll import DepSentence

    model = fastspectral.load(models["shag"])
    nlp = _nlp(models["shag"], tagger=True)
    doc = nlp("the dog barks. the big dog sleeps.")
    assert doc.has_annotation("DEP")
    assert [s.text for s in doc.sents] == ["the dog barks.", "the big dog sleeps."]
    for sent in doc.sents:
        items = [DepSentence(words=_words(sent), xpos=[t.tag_ for t in sent],
                             heads=[-1] * len(sent))]
        heads = model.parse(items, jobs=1)[0].heads
        got = [0 if t.head.i == t.i else t.head.i - sent.start + 1 for t in sent]
        assert got == heads
        assert [t.dep_ for t in sent].count("ROOT") == heads.count(0)
    doc = nlp("the dog  barks.")                          # a whitespace token
    space = [t for t in doc if t.is_space]
    assert len(space) == 1 and space[0].head.i == space[0].i - 1 and space[0].dep_ == "dep"
    assert len(list(doc.sents)) == 1
    doc = nlp("  the dog barks.  a cat sleeps.")            # whitespace before a sentence
    assert doc[0].is_space and doc[0].head.i == 1 and doc[0].dep_ == "dep"
    assert [s.text.strip() for s in doc.sents] == ["the dog barks.", "a cat sleeps."]
    assert not any(t.head.sent != t.sent for t in doc)


def test_pipe_parses_each_batch_in_one_call(models):
    nlp = _nlp(models["pcfg"])
    comp = nlp.get_pipe("fastspectral")
    calls = []
    parse = comp.model.parse

    def counting(items, **kw):
        calls.append(len(items))
        return parse(items, **kw)

    comp.model.parse = counting
    texts = TEXTS * 3
    docs = list(nlp.pipe(texts, batch_size=4))
    n_sents = [len(list(d.sents)) for d in nlp.pipe(texts, batch_size=4)]
    assert len(calls) == 2 * 4                       # 15 docs in batches of 4, two runs
    assert calls[:4] == [sum(n_sents[i:i + 4]) for i in range(0, 15, 4)]
    one = [[s._.parse_string for s in nlp(t).sents] for t in texts]
    assert [[s._.parse_string for s in d.sents] for d in docs] == one


def test_tokens_the_model_cannot_take_get_the_fallback(models):
    nlp = _nlp(models["pcfg"], max_memory="1M")
    long = " ".join(["the dog barks and"] * 250)          # one sentence of 1,000 words
    texts = ["", "   ", "the (dog) barks.", long, "the dog\n\nbarks.", "dogs bark."]
    docs = list(nlp.pipe(texts, batch_size=10))
    assert docs[0]._._fastspectral_parses is None and docs[1]._._fastspectral_parses is None
    s = next(docs[2].sents)
    assert "-LRB-" in s._.parse_string                    # escaped, reads back
    from fastspectral.trees.tree import Tree
    assert Tree.fromstring(s._.parse_string).leaves() == ["the", "-LRB-", "dog", "-RRB-", "barks",
                                                          "."]
    s = next(docs[3].sents)
    assert len(s) == 1000
    t = Tree.fromstring(s._.parse_string)                 # the flat fallback tree
    assert len(t.leaves()) == 1000 and t.height == 3
    s = next(docs[4].sents)
    assert "\n\n" in s.text and len(Tree.fromstring(s._.parse_string).leaves()) == 4
    assert s._.labels                                     # whitespace token inside the span


def test_no_sentence_boundaries_is_a_clear_error(models):
    nlp = spacy.blank("en")
    nlp.add_pipe("fastspectral", config={"model": str(models["pcfg"])})
    with pytest.raises(ValueError, match="sentencizer"):
        nlp("the dog barks.")
    assert len(nlp("")) == 0                              # an empty doc passes


def test_to_disk_and_spacy_load_round_trip(models, tmp_path):
    import shutil

    src = tmp_path / "m.fsm"
    shutil.copyfile(models["pcfg"], src)
    nlp = _nlp(src)
    want = [[s._.parse_string for s in d.sents] for d in nlp.pipe(TEXTS)]
    nlp.to_disk(tmp_path / "pipeline")
    assert (tmp_path / "pipeline" / "fastspectral" / "model.fsm").is_file()
    src.unlink()                                          # only the copy is left
    loaded = spacy.load(tmp_path / "pipeline")
    assert [[s._.parse_string for s in d.sents] for d in loaded.pipe(TEXTS)] == want


@pytest.mark.slow
@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_n_process_two(models, method, tmp_path):
    """Two worker processes give the serial result, after the parent has used its OpenMP
    threads (no fork hang); run in a subprocess under a timeout."""
    script = textwrap.dedent(f"""
        import multiprocessing, sys
        sys.path.insert(0, {str(ROOT / 'tests')!r})
        import spacy
        from test_integrations_spacy import TEXTS
        if __name__ == "__main__":
            multiprocessing.set_start_method({method!r}, force=True)
            nlp = spacy.blank("en")
            nlp.add_pipe("sentencizer")
            nlp.add_pipe("fastspectral", config={{"model": {str(models['pcfg'])!r}, "jobs": None}})
            texts = TEXTS * 8
            serial = [[s._.parse_string for s in d.sents] for d in nlp.pipe(texts)]
            par = [[s._.parse_string for s in d.sents]
                   for d in nlp.pipe(texts, n_process=2, batch_size=4)]
            assert par == serial, (par[:2], serial[:2])
            print("ok", len(par))
    """)
    path = tmp_path / "run.py"
    path.write_text(script)
    env = subprocess_env()
    out = subprocess.run([sys.executable, str(path)], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["ok", "40"]


def test_worker_processes_use_one_thread_each(models):
    import multiprocessing

    nlp = _nlp(models["pcfg"])
    comp = nlp.get_pipe("fastspectral")
    assert comp._threads() is None                        # the main process: the model's
    with multiprocessing.get_context("fork").Pool(1) as pool:
        assert pool.apply(comp._threads) == 1
    assert _nlp(models["pcfg"], jobs=3).get_pipe("fastspectral")._threads() == 3


def test_bad_config_is_refused(models):
    with pytest.raises(ValueError, match="tags must be"):
        _nlp(models["pcfg"], tags="xpos")
    with pytest.raises(ValueError, match="jobs"):
        _nlp(models["pcfg"], jobs=0)


def test_latent_dep_scores_the_upstream_trees(models, tmp_path, caplog):
    import fastspectral
    from _toy import dep_treebank_svo
    from fastspectral.trees.conll import DepSentence

    path = tmp_path / "ld.fsm"
    ld = fastspectral.LatentDependencyModel(n_states=2).fit(dep_treebank_svo())
    ld.save(path)
    nlp = _nlp(models["shag"], tagger=True)                  # heads from the SHAG component
    nlp.add_pipe("fastspectral", name="latent", config={"model": str(path)})
    doc = nlp("the dog sees a cat. dogs bark.")
    for sent in doc.sents:
        heads = [0 if t.head.i == t.i else t.head.i - sent.start + 1 for t in sent]
        item = DepSentence(words=_words(sent), xpos=[t.tag_ for t in sent], heads=heads)
        assert sent._.fastspectral_log_prob == pytest.approx(float(ld.log_prob([item])[0]))
    alone = spacy.blank("en")
    alone.add_pipe("sentencizer")
    alone.add_pipe("fastspectral", config={"model": str(path)})
    with caplog.at_level("WARNING", logger="fastspectral"):
        doc = alone("the dog barks.")
    assert next(doc.sents)._.fastspectral_log_prob is None
    assert "no heads" in caplog.text


def test_docs_examples():
    """The examples of docs/integrations.md run as written."""
    import doctest

    pytest.importorskip("nltk")
    res = doctest.testfile(str(ROOT / "docs" / "integrations.md"), module_relative=False,
                           optionflags=doctest.ELLIPSIS)
    assert res.attempted > 20 and res.failed == 0


def test_a_missing_model_file_is_reported_when_used_not_when_probed(tmp_path):
    """spaCy probes ``component.model`` while it builds a pipeline: that never raises; parsing
    with no model file raises FileNotFoundError naming it."""
    missing = tmp_path / "absent.fsm"
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    comp = nlp.add_pipe("fastspectral", config={"model": str(missing)})
    assert comp.model is None and hasattr(comp, "model")
    with pytest.raises(FileNotFoundError, match="absent.fsm: no such model file"):
        nlp("the dog barks.")
    bare = spacy.blank("en").add_pipe("fastspectral")
    with pytest.raises(ValueError, match="has no model"):
        bare._require_model()
