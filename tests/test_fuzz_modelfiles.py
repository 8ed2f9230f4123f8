"""Model files are untrusted input: an edited array or a flipped byte gives a ModelFileError at
load time (naming the array), never another exception and never a crash.

Small models of every kind that parses or scores (PCFG, spectral / pivot / EM L-PCFG, SHAG
with and without a lexical model, both language models, HMM; and the kinds read by their own
loaders: first- and second-order MST, the dependency re-ranker with and without its spectral
model, the latent dependency model plain and with tags and STOP operators, eigenwords, Brown
clusters, ATM, CCM, the lexical disambiguator) are saved once; each case edits one file and
hands it to a worker process that loads it and uses it (parses, scores trees, looks words up:
``USE`` in the worker), so that a segfault fails the test instead of killing pytest.  The
outcome of every case must be ``ok`` (a harmless edit) or ``ModelFileError``.  Meta entries
of the newer kinds are deleted or given values of other types as well, and every loader gap
the fuzzing found is pinned in ``test_newer_kinds_issue_cases``.

Every kind of the registry (``fastspectral.models.REGISTRY``, not a list kept here) must have
a small model among them (``test_every_registry_kind_has_a_small_model``), and each kind's
files get the mutations of ``test_mutated_file_of_every_kind``: truncated, bytes flipped, a
forged JSON header (another kind, version, meta), arrays of other dtypes or shapes, non-finite
values (the zip rewritten, so its CRC-32 is valid), and object arrays that would run pickle.
"""
from __future__ import annotations

import io
import json
import os
import random
import select
import subprocess
import sys
import textwrap
import zipfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _toy import coordination_treebank, dep_treebank, dep_treebank_svo

from fastspectral import models

#: the models of every kind are fitted once for the module, and each case runs in a worker
pytestmark = pytest.mark.slow

WORKER = textwrap.dedent('''
    import json, logging, sys, warnings
    logging.disable(logging.CRITICAL)
    warnings.simplefilter("ignore")
    from fastspectral import load
    from fastspectral.errors import ModelFileError
    from fastspectral.trees.conll import DepSentence
    words = [["the", "dog", "barks", "."], ["a", "cat", "sees", "the", "dog", "."],
             ["dogs", "bark", "and", "the", "cat", "sleeps", "."]]
    deps = [DepSentence(words=w, xpos=t, heads=[-1] * len(w)) for w, t in (
        (["the", "dog", "barks"], ["DT", "NN", "VBZ"]),
        (["a", "big", "cat", "sleeps"], ["DT", "JJ", "NN", "VBZ"]))]
    tagged = [["DT", "NN", "VBZ", "."], ["DT", "NN", "VBZ", "DT", "NN", "."],
              ["NNS", "VBP", "CC", "DT", "NN", "VBZ", "."]]
    # sentences with heads: the gold-like tree, a left chain, and an unknown word
    scored = [DepSentence(words=w, xpos=t, heads=h) for w, t, h in (
        (["the", "dog", "sees", "a", "cat"], ["DT", "NN", "VBZ", "DT", "NN"], [2, 3, 0, 5, 3]),
        (["a", "big", "zebra", "sleeps"], ["DT", "JJ", "NN", "VBZ"], [0, 1, 2, 3]),
        (["dogs"], ["NNS"], [0]))]

    def use_latent_dep(m):
        m.log_prob(scored, return_sign=True, jobs=2)
        m.fragment_log_prob(scored, jobs=2)
        m.log_prob(scored[:1], heads=[[2, 3, 0, 5, 3], [0, 1, 2, 3, 4]], jobs=2)

    def use_eigenwords(m):
        m.transform(["the", "dog", "zebra"])
        m.nearest("dog", 3)
        m.log_likelihood([["the", "dog", "barks"], ["zebra"]])

    def use_brown(m):
        m.transform(["the", "dog", "zebra"])
        m.log_likelihood([["the", "dog", "barks"], ["zebra"]])

    def use_unsupervised(m):
        m.parse(words, tags=tagged, jobs=2)

    #: how each kind that the generic dispatch below does not cover is used after loading
    USE = {"MSTParser": lambda m: m.parse(deps + scored, jobs=2),
           "RerankDepParser": lambda m: m.parse(deps + scored, jobs=2),
           "LexicalDisambiguator": lambda m: m.parse(deps + scored, jobs=2),
           "LatentDependencyModel": use_latent_dep, "Eigenwords": use_eigenwords,
           "BrownClusters": use_brown, "ATMParser": use_unsupervised,
           "CCMParser": use_unsupervised}
    for line in sys.stdin:
        path = json.loads(line)
        try:
            m = load(path)
            kind = getattr(m, "input_kind", "sequences")
            name = type(m).__name__
            if name in USE:
                USE[name](m)
            elif kind == "sentences":
                m.parse(words, jobs=2)
            elif kind == "dependency":
                m.parse(deps, jobs=2)
            else:
                m.perplexity([["the", "dog", "barks"], ["a", "cat", "sleeps"]])
            out = "ok"
        except ModelFileError as exc:
            out = "ModelFileError: " + str(exc)
        except Exception as exc:
            out = f"{type(exc).__name__}: {exc}"
        print(json.dumps(out), flush=True)
''')


class Worker:
    """A process that loads and uses model files; a crash fails the case that caused it."""

    def __init__(self):
        self.proc = None

    def start(self):
        env = dict(os.environ, OMP_NUM_THREADS="2")
        self.proc = subprocess.Popen([sys.executable, "-c", WORKER], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env=env)

    def run(self, path: str, what: str, timeout: float = 60.0) -> str:
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        self.proc.stdin.write(json.dumps(str(path)) + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else ""
        if not line:
            self.proc.kill()
            rc = self.proc.wait()
            err = self.proc.stderr.read()[-2000:]
            self.proc = None
            pytest.fail(f"{what}: the worker died (exit status {rc}) or hung\n{err}")
        return json.loads(line)

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)


# ---- small models of every kind ---------------------------------------------------------------
def treebank(k=40, seed=0):
    return coordination_treebank(k, seed, max_clauses=3)


def token_corpus(n=300, seed=0):
    rng = random.Random(seed)
    vocab = "the a dog cat barks sleeps sees big small and".split()
    return [[rng.choice(vocab) for _ in range(rng.randint(2, 8))] for _ in range(n)]


def small_models(synthetic_grammar):
    """(name, fitted model) of every kind that parses or scores."""
    from fastspectral import PCFG
    from fastspectral.dependency import SHAGParser
    from fastspectral.hmm.model import HMM
    from fastspectral.lm.kneser_ney import KneserNeyBigramLM
    from fastspectral.lm.saul_pereira import LatentBigramLM
    from fastspectral.lpcfg import EMLPCFG, PivotLPCFG, SpectralLPCFG

    trees = treebank()
    deps = dep_treebank()
    corpus = token_corpus()
    return [
        ("pcfg", PCFG(jobs=1).fit(trees)),
        ("spectral", SpectralLPCFG(n_states=2, jobs=1).fit(trees)),
        ("pivot", PivotLPCFG(n_states=2, jobs=1).fit(trees)),
        ("em", EMLPCFG(n_states=2, iterations=2, jobs=1).fit(trees)),
        ("shag", SHAGParser(method="spectral", n_states=2).fit(deps)),
        ("shag-lex", SHAGParser(method="det+f", lexical="lex+f").fit(deps)),
        ("kn-lm", KneserNeyBigramLM(min_count=1).fit(corpus)),
        ("latent-lm", LatentBigramLM(2, "em", iterations=2, min_count=1).fit(corpus)),
        ("hmm", HMM(n_states=2, min_count=1).fit(corpus)),
    ] + newer_models(synthetic_grammar)


def lexical_corpus(n=40, seed=0):
    """Sentences whose label (UPOS, features, lemma) of "can" / "saw" is set by a neighbour."""
    from fastspectral.trees.conll import DepSentence

    rng = random.Random(seed)
    rows = [(["they", "can", "fish"], ["they", "can", "fish"], ["PRON", "AUX", "VERB"],
             ["_", "VerbForm=Fin", "VerbForm=Inf"]),
            (["a", "can", "opens"], ["a", "can", "open"], ["DET", "NOUN", "VERB"],
             ["_", "Number=Sing", "Tense=Pres"]),
            (["I", "saw", "the", "lid"], ["I", "see", "the", "lid"],
             ["PRON", "VERB", "DET", "NOUN"], ["Case=Nom", "Tense=Past", "_", "Number=Sing"])]
    out = []
    for k in range(n):
        w, lem, upos, feats = rng.choice(rows)
        out.append(DepSentence(words=w, lemmas=lem, upos=upos, xpos=upos, feats=feats,
                               heads=[0] + [1] * (len(w) - 1),
                               comments=[f"# newdoc id = d{k // 10}"] if k % 10 == 0 else []))
    return out


#: the models of :func:`newer_models`
NEWER_KINDS = ("mst", "mst2", "rerank", "rerank-spectral", "rerank-order2", "latent-dep",
               "latent-dep-stop", "eigenwords", "brown", "atm", "ccm", "lexical", "em-pruner")


def newer_models(synthetic_grammar):
    """(name, fitted model) of the kinds read by their own loaders: first- and second-order
    MST, the dependency re-ranker with and without its spectral model and with the
    second-order score (``base_order=2``), the latent dependency model (plain; with tags and
    STOP operators), eigenwords, Brown clusters, ATM, CCM, the lexical disambiguator and an
    L-PCFG with a pruning model (``pruner_states``)."""
    from fastspectral.lpcfg import EMLPCFG
    from fastspectral.embeddings.brown_clusters import BrownClusters
    from fastspectral.embeddings.eigenwords import Eigenwords
    from fastspectral.latentdep.model import LatentDependencyModel
    from fastspectral.lexical import LexicalDisambiguator
    from fastspectral.rerank import MSTParser, RerankDepParser
    from fastspectral.unsupervised.atm import ATMParser
    from fastspectral.unsupervised.ccm import CCMParser

    from fastspectral.trees.conll import DepSentence

    deps = dep_treebank_svo()
    # trees that contradict the others: the base parser errs, the re-ranker learns weights
    alt = [DepSentence(words=s.words, xpos=s.xpos, heads=h) for s, h in (
        (deps[16], [3, 3, 0, 3, 4]), (deps[17], [3, 1, 0, 5, 6, 3]), (deps[3], [2, 4, 4, 0]))]
    words = [s.words for s in deps] + token_corpus(60, 1)
    spectral = LatentDependencyModel(n_states=2, embeddings="one-hot", ridge=1e-3)
    rr = dict(k=3, rerank_bits=16, rerank_iterations=2, jobs=1,
              mst=MSTParser(iterations=2, bits=16, jobs=1))
    trees = synthetic_grammar.sample(60, seed=1)
    return [
        ("mst", MSTParser(iterations=2, bits=16, jobs=1).fit(deps)),
        ("mst2", MSTParser(iterations=2, bits=16, jobs=1, order=2).fit(deps)),
        ("rerank", RerankDepParser(features="base", **rr).fit(deps + alt * 2)),
        ("rerank-spectral", RerankDepParser(features="base+spectral", spectral=spectral,
                                            **rr).fit(deps + alt * 2)),
        ("rerank-order2", RerankDepParser(features="base", base_order=2,
                                          **rr).fit(deps + alt * 2)),
        ("latent-dep", LatentDependencyModel(n_states=2, dim=3, jobs=1).fit(deps)),
        ("latent-dep-stop", LatentDependencyModel(
            n_states=2, embeddings="one-hot", tag_column="xpos", ridge=1e-3, stop_events=True,
            stop_adjacency=True, jobs=1).fit(deps)),
        ("eigenwords", Eigenwords(dim=2, window=1, min_count=1).fit(words)),
        ("brown", BrownClusters(n_clusters=3, min_count=1).fit(words)),
        ("atm", ATMParser(rank=2, embedding_dim=5).fit(trees)),
        ("ccm", CCMParser(iterations=2).fit(trees)),
        ("lexical", LexicalDisambiguator(C=1.0).fit(lexical_corpus())),
        ("em-pruner", EMLPCFG(n_states=3, iterations=2, pruner_states=2, pruner_threshold=1e-3,
                              jobs=1).fit(treebank())),
    ]


@pytest.fixture(scope="module")
def saved(tmp_path_factory, synthetic_grammar):
    folder = tmp_path_factory.mktemp("models")
    out = {}
    for name, model in small_models(synthetic_grammar):
        path = folder / f"{name}.model"
        model.save(path)
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        out[name] = (path, arrays)
    return out


@pytest.fixture(scope="module")
def worker():
    w = Worker()
    yield w
    w.close()


def write_arrays(path, arrays):
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)


def check(worker, path, what):
    res = worker.run(path, what)
    assert res == "ok" or res.startswith("ModelFileError"), f"{what}: {res}"
    return res


# ---- cases ------------------------------------------------------------------------------------
def test_unedited_models_load_and_parse(saved, worker):
    for name, (path, _) in saved.items():
        assert worker.run(path, name) == "ok", name


def test_issue_cases(saved, worker, tmp_path):
    """The cases of the issue: a spectral model whose ``lex_off`` was moved by 1e12 (a crash
    while parsing before), PCFG symbol ids out of range (IndexError tracebacks before)."""
    _, arrays = saved["spectral"]
    a = dict(arrays)
    a["lex_off"] = a["lex_off"] + 10 ** 12
    write_arrays(tmp_path / "m.model", a)
    res = worker.run(tmp_path / "m.model", "spectral lex_off + 1e12")
    assert res.startswith("ModelFileError") and "'lex_off'" in res, res
    _, arrays = saved["pcfg"]
    for name in ("fine_bin_parent", "fine_un_child", "coarse_bin_right", "fine_lex_tag_word"):
        a = dict(arrays)
        a[name] = a[name].copy()
        a[name].flat[0] = 10 ** 6
        write_arrays(tmp_path / "p.model", a)
        res = worker.run(tmp_path / "p.model", f"pcfg {name}")
        assert res.startswith("ModelFileError") and repr(name) in res, res


def with_meta(arrays: dict, edit) -> dict:
    """``arrays`` with the header's meta changed by ``edit(meta)`` (in place)."""
    header = json.loads(bytes(arrays["__meta__"]).decode("utf-8"))
    edit(header["meta"])
    out = dict(arrays)
    out["__meta__"] = np.frombuffer(json.dumps(header).encode("utf-8"), dtype=np.uint8)
    return out


def edited(arrays: dict, name: str, how: str, pos: int = 0) -> dict:
    a = dict(arrays)
    new = edit_array(arrays[name], how, pos)
    if new is None:
        del a[name]
    else:
        a[name] = new
    return a


#: the gaps the fuzzing of the newer kinds found, each pinned: (model, array or None, edit
#: or meta change, what the message must name).  Before the fix: a segfault (lexical count
#: tables, template names), an IndexError / TypeError / KeyError while parsing, or a model
#: that loaded NaN parameters or a prefix-less array name.
NEWER_CASES = [
    ("lexical", "t_col_base", "huge_value", "'t_col_base'"),          # segfault
    ("lexical", "t_ftot", "add_big", "'t_ftot'"),                     # segfault
    ("lexical", "t_doc_words_idx", "add_big", "'t_doc_words_idx'"),   # segfault
    ("lexical", "t_docv0_idx", "add_big", "'t_docv0_idx'"),           # segfault
    ("lexical", "t_docv0_shape", "add_big", "'t_docv0_shape'"),       # MemoryError
    ("lexical", "t_indices", "two_dims", "'t_indices'"),              # SystemError (Numba)
    ("lexical", "t_fcount", "two_dims", "'t_fcount'"),                # TypingError (Numba)
    ("lexical", "t_lex_label", "add_big", "'t_lex_label'"),           # IndexError
    ("lexical", "t_lex_ptr", "two_dims", "'t_lex_ptr'"),              # TypeError
    ("lexical", "lamdoc_M_full", "truncate", "'lamdoc_M_full'"),      # IndexError
    ("latent-dep", "E_L", "nan", "'E_L'"),                            # loaded silently
    ("latent-dep-stop", "stop_R", "huge_value", "'stop_R'"),          # loaded silently
    ("eigenwords", "embeddings", "nan", "'embeddings'"),              # loaded silently
    ("brown", "class_bigrams", "negative", "'class_bigrams'"),        # loaded silently
    ("atm", "anchor_counts", "two_dims", "'anchor_counts'"),          # loaded silently
    ("ccm", "yield_logprob", "nan", "'yield_logprob'"),               # loaded silently
    ("rerank", "mst.weight_index", "add_big", "'mst.weight_index'"),  # named 'weight_index'
    # a finite 1e308 base weight: inf - inf = NaN scores, the argmax gave a sentence the
    # k-best candidate of another (ValueError: 'heads' has 1 values for 3 words)
    ("rerank", "mst.weight_value", ("set", 13, 1e308), "'mst.weight_value'"),
    ("rerank-spectral", "spec.leaf", "nan", "'spec.leaf'"),           # loaded silently
    ("lexical", None, ("fs_names", []), "'fs_names'"),                # segfault
    ("lexical", None, ("fs_names", ["Freq", "x"]), "'fs_names'"),     # AttributeError
    ("lexical", None, ("labels", []), "array 't_"),                   # IndexError
    ("lexical", None, ("vocabs", [[1, "a"]]), "'vocabs'"),            # AttributeError
    ("lexical", None, ("n_bins", 1e308), "'n_bins'"),                 # OverflowError
    ("lexical", None, ("rankers", {}), "'rankers'"),                  # KeyError
    ("lexical", None, ("params/variant", "x"), "'params'"),           # KeyError
    ("lexical", None, ("params/analyser", "x"), "'params'"),          # TypeError
    ("lexical", None, ("rankers/M_full/blocks", 7), "'blocks'"),      # ValueError
    ("lexical", None, ("rankers/M_full/level", 1e308), "'level'"),    # IndexError
    ("latent-dep", None, ("params/log_floor", "x"), "'params'"),      # ValueError
    ("rerank-spectral", None, ("spectral/params/log_floor", None), "'spectral'"),  # TypeError
    ("eigenwords", None, ("words", "abc"), "'words'"),                # named no field
]


@pytest.mark.parametrize("name,array,how,names", NEWER_CASES,
                         ids=[f"{c[0]}-{c[1] or c[2][0]}" for c in NEWER_CASES])
def test_newer_kinds_issue_cases(saved, worker, tmp_path, name, array, how, names):
    """Each loader gap found by fuzzing the newer kinds is a ModelFileError naming the array
    or meta field."""
    _, arrays = saved[name]
    if array is not None and isinstance(how, tuple):
        a = dict(arrays)
        a[array] = arrays[array].copy()
        a[array].flat[how[1]] = how[2]
    elif array is not None:
        a = edited(arrays, array, how)
    else:
        key, value = how

        def edit(meta):
            *parents, last = key.split("/")
            for k in parents:
                meta = meta[k]
            meta[last] = value
        a = with_meta(arrays, edit)
    write_arrays(tmp_path / "m.model", a)
    res = worker.run(tmp_path / "m.model", f"{name}: {array or how}")
    assert res.startswith("ModelFileError") and names in res, res


META_VALUES = (None, "x", -1, 1e308, True, [], {}, ["x"], [[1, "a"]])


def meta_paths(meta: dict, prefix=()):
    """Every key of ``meta`` and of the objects inside it (two levels: ``params``, the
    re-ranker's nested models, the lexical rankers)."""
    for k, v in meta.items():
        yield prefix + (k,)
        if isinstance(v, dict) and len(prefix) < 2:
            yield from meta_paths(v, prefix + (k,))


def test_meta_entries_missing_or_of_the_wrong_type(saved, worker, tmp_path):
    """Every meta entry of each model of the newer kinds (hyperparameters included) deleted or
    replaced by a value of another type: the model loads and parses, or the file is a
    ModelFileError."""
    rng = random.Random(5)
    n = 0
    for name in NEWER_KINDS:
        _, arrays = saved[name]
        header = json.loads(bytes(arrays["__meta__"]).decode("utf-8"))
        for path in meta_paths(header["meta"]):
            for value in ["<delete>"] + rng.sample(META_VALUES, 1):
                def edit(meta):
                    for k in path[:-1]:
                        meta = meta[k]
                    if value == "<delete>":
                        del meta[path[-1]]
                    else:
                        meta[path[-1]] = value
                write_arrays(tmp_path / "m.model", with_meta(arrays, edit))
                check(worker, tmp_path / "m.model", f"{name}: meta {'/'.join(path)} = {value!r}")
                n += 1
    assert n > 300


EDITS = ("add_big", "negative", "nan", "truncate", "extend", "float_dtype", "two_dims",
         "huge_value", "zero_all", "drop")


def edit_array(a: np.ndarray, how: str, pos: int):
    """One edit of an array (None: drop it from the file)."""
    if how == "drop":
        return None
    a = a.astype(np.int64) if a.dtype.kind in "iub" else a.copy()
    k = pos % a.size if a.size else 0
    if how == "add_big" and a.size:
        a.flat[k] = a.flat[k] + (10 ** 12 if a.dtype.kind in "iu" else 1e300)
    elif how == "negative" and a.size:
        a.flat[k] = -1 - abs(a.flat[k]) if a.dtype.kind in "iuf" else a.flat[k]
    elif how == "nan" and a.size and a.dtype.kind == "f":
        a.flat[k] = np.nan
    elif how == "huge_value" and a.size:
        a.flat[k] = np.iinfo(np.int32).max if a.dtype.kind in "iu" else np.inf
    elif how == "truncate":
        a = a.reshape(-1)[:-1] if a.ndim == 1 else a[:-1]
    elif how == "extend":
        a = np.concatenate([a, a[-1:] if a.shape[0] else np.zeros((1,) + a.shape[1:], a.dtype)])
    elif how == "float_dtype":
        a = a.astype(np.float64) + 0.5
    elif how == "two_dims":
        a = a.reshape(1, -1) if a.ndim == 1 else a.reshape(-1)
    elif how == "zero_all":
        a = np.zeros_like(a)
    return a


def test_every_array_every_edit(saved, worker, tmp_path):
    """Each array of each model gets the edits most likely to break an unchecked index: too
    big, negative, NaN, one entry short or long, wrong dtype or dimensions, missing."""
    rng = random.Random(11)
    n = 0
    for name, (_, arrays) in saved.items():
        for arr_name in sorted(arrays):
            if arr_name == "__meta__":
                continue
            for how in rng.sample(EDITS, 4):
                a = dict(arrays)
                new = edit_array(arrays[arr_name], how, rng.randrange(1 << 30))
                if new is None:
                    del a[arr_name]
                else:
                    a[arr_name] = new
                path = tmp_path / f"{name}.model"
                write_arrays(path, a)
                check(worker, path, f"{name}: {arr_name} {how}")
                n += 1
    assert n > 100


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_array_edits(saved, worker, tmp_path, data):
    name = data.draw(st.sampled_from(sorted(saved)), label="model")
    _, arrays = saved[name]
    arr_name = data.draw(st.sampled_from(sorted(k for k in arrays if k != "__meta__")),
                         label="array")
    a = dict(arrays)
    x = arrays[arr_name]
    x = x.astype(np.int64) if x.dtype.kind in "iub" else x.copy()
    if x.size:
        k = data.draw(st.integers(0, x.size - 1), label="position")
        if x.dtype.kind in "iu":
            x.flat[k] = data.draw(st.sampled_from([-(2 ** 40), -2, -1, 0, 1, 7, 2 ** 31 - 1,
                                                   2 ** 31, 2 ** 40]), label="value")
        elif x.dtype.kind == "f":
            x.flat[k] = data.draw(st.sampled_from([np.nan, np.inf, -np.inf, -1.0, 0.0, 1e308,
                                                   -1e-300, 2.0]), label="value")
    a[arr_name] = x
    path = tmp_path / "edited.model"
    write_arrays(path, a)
    check(worker, path, f"{name}: {arr_name}")


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_byte_flips(saved, worker, tmp_path, data):
    """Flipped bytes anywhere in the file (zip headers, the JSON header, array data)."""
    name = data.draw(st.sampled_from(sorted(saved)), label="model")
    raw = bytearray(saved[name][0].read_bytes())
    for _ in range(data.draw(st.integers(1, 8), label="flips")):
        k = data.draw(st.integers(0, len(raw) - 1), label="position")
        raw[k] = data.draw(st.integers(0, 255), label="byte")
    path = tmp_path / "flipped.model"
    path.write_bytes(bytes(raw))
    check(worker, path, f"{name}: byte flips")


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_array_bytes_with_valid_zip(saved, worker, tmp_path, data):
    """Bytes flipped inside one array's data, the zip rewritten with correct checksums (so
    the change reaches the loader's checks instead of the zip CRC)."""
    name = data.draw(st.sampled_from(sorted(saved)), label="model")
    path0 = saved[name][0]
    with zipfile.ZipFile(path0) as z:
        members = {n: z.read(n) for n in z.namelist()}
    member = data.draw(st.sampled_from(sorted(m for m in members if m != "__meta__.npy")),
                       label="member")
    raw = bytearray(members[member])
    for _ in range(data.draw(st.integers(1, 6), label="flips")):
        k = data.draw(st.integers(0, len(raw) - 1), label="position")
        raw[k] = data.draw(st.integers(0, 255), label="byte")
    members[member] = bytes(raw)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for n, b in members.items():
            z.writestr(n, b)
    path = tmp_path / "rezipped.model"
    path.write_bytes(buf.getvalue())
    check(worker, path, f"{name}: bytes of {member}")


def test_damaged_embeddings_file_is_named(saved, tmp_path):
    """An eigenword file given as ``embeddings`` (latent-dep, the re-ranker's spectral model) is
    read outside ``fastspectral.load``: its errors name the file too (the CLI's one line)."""
    from fastspectral.embeddings.eigenwords import load_embeddings
    from fastspectral.errors import ModelFileError

    _, arrays = saved["eigenwords"]
    path = tmp_path / "bad.eigenwords"
    for a in (edited(arrays, "embeddings", "nan"), with_meta(arrays, lambda m: m.pop("words")),
              with_meta(arrays, lambda m: m.update(params=["x"]))):
        write_arrays(path, a)
        with pytest.raises(ModelFileError, match=f"^{path}: "):
            load_embeddings(str(path))


# ---- every kind of the registry -----------------------------------------------------------------
REGISTRY_KINDS = sorted(models.REGISTRY)

FUZZ = settings(max_examples=12, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def header_of(arrays: dict) -> dict:
    return json.loads(bytes(arrays["__meta__"]).decode("utf-8"))


@pytest.fixture(scope="module")
def by_kind(saved) -> dict:
    """``{registry kind: [names of the saved models of that kind]}``, read from the files."""
    out: dict = {}
    for name, (_, arrays) in sorted(saved.items()):
        out.setdefault(models.get(header_of(arrays)["kind"]).kind, []).append(name)
    return out


def models_of(by_kind, kind):
    if kind not in by_kind:
        pytest.fail(f"no small model of kind {kind!r}: add one to small_models() "
                    "(tests/test_fuzz_modelfiles.py)")
    return by_kind[kind]


@pytest.mark.parametrize("kind", REGISTRY_KINDS)
def test_every_registry_kind_has_a_small_model(kind, by_kind):
    assert models_of(by_kind, kind)


JSON = st.recursive(st.none() | st.booleans() | st.integers(-2 ** 63, 2 ** 64)
                    | st.floats(allow_nan=False) | st.text(max_size=8),
                    lambda kids: st.lists(kids, max_size=4)
                    | st.dictionaries(st.text(max_size=6), kids, max_size=4), max_leaves=10)

DTYPES = ("bool", "int8", "uint8", "int16", "int32", "uint32", "int64", "uint64", "float16",
          "float32", "float64", ">f8", ">i8", "complex128", "U3", "S2")


def header_member(header) -> np.ndarray:
    return np.frombuffer(json.dumps(header).encode("utf-8"), dtype=np.uint8)


def forged_header(arrays: dict, data) -> dict:
    """``arrays`` with a header changed: another kind, version or format, the meta (or one
    entry of it) replaced by other JSON, or bytes that are not JSON at all."""
    header = header_of(arrays)
    a = dict(arrays)
    how = data.draw(st.sampled_from(["kind", "version", "format", "meta", "entry", "header",
                                     "bytes"]), label="header edit")
    if how == "kind":
        aliases = [x for e in models.REGISTRY.values() for x in e.aliases]
        header["kind"] = data.draw(st.sampled_from(REGISTRY_KINDS + aliases) | JSON, label="kind")
    elif how in ("version", "format"):
        header[how] = data.draw(JSON, label=how)
    elif how == "meta":
        header["meta"] = data.draw(JSON, label="meta")
    elif how == "entry":
        paths = list(meta_paths(header["meta"])) if isinstance(header["meta"], dict) else []
        if paths:
            path = data.draw(st.sampled_from(paths), label="entry")
            meta = header["meta"]
            for k in path[:-1]:
                meta = meta[k]
            if data.draw(st.booleans(), label="delete"):
                del meta[path[-1]]
            else:
                meta[path[-1]] = data.draw(JSON, label="value")
    elif how == "header":
        header = data.draw(JSON, label="header")
    if how == "bytes":
        a["__meta__"] = np.frombuffer(data.draw(st.binary(max_size=40), label="bytes"),
                                      dtype=np.uint8)
    else:
        a["__meta__"] = header_member(header)
    return a


def mutated_array(x: np.ndarray, data) -> np.ndarray | None:
    """One array changed: another dtype, shape or size, non-finite values (None: left out)."""
    how = data.draw(st.sampled_from(["dtype", "nonfinite", "shape", "empty", "drop"]),
                    label="array edit")
    if how == "drop":
        return None
    if how == "empty":
        return np.zeros((0,) * max(x.ndim, 1), dtype=x.dtype)
    if how == "shape":
        flat = x.reshape(-1)
        k = data.draw(st.integers(0, 2), label="shape")
        return (flat.reshape(1, -1, 1), flat[::2], np.concatenate([flat, flat]))[k]
    if how == "dtype":
        dtype = data.draw(st.sampled_from(DTYPES), label="dtype")
        with np.errstate(all="ignore"):
            return x.astype(dtype)
    # non-finite values in a float array (an integer array becomes one)
    y = x.astype(np.float64) if x.dtype.kind != "f" else x.copy()
    if y.size:
        for _ in range(data.draw(st.integers(1, 3), label="values")):
            k = data.draw(st.integers(0, y.size - 1), label="position")
            y.flat[k] = data.draw(st.sampled_from([np.nan, np.inf, -np.inf]), label="value")
    return y


@pytest.mark.parametrize("kind", REGISTRY_KINDS)
@FUZZ
@given(data=st.data())
def test_mutated_file_of_every_kind(kind, saved, by_kind, worker, tmp_path, data):
    """A file of each registry kind, mutated: it loads and is used, or a ModelFileError."""
    name = data.draw(st.sampled_from(models_of(by_kind, kind)), label="model")
    path0, arrays = saved[name]
    how = data.draw(st.sampled_from(["truncate", "flip", "header", "array"]), label="mutation")
    path = tmp_path / "mutated.model"
    if how in ("truncate", "flip"):
        raw = bytearray(path0.read_bytes())
        if how == "truncate":
            raw = raw[:data.draw(st.integers(0, len(raw) - 1), label="length")]
        else:
            for _ in range(data.draw(st.integers(1, 8), label="flips")):
                k = data.draw(st.integers(0, len(raw) - 1), label="position")
                raw[k] ^= data.draw(st.integers(1, 255), label="xor")
        path.write_bytes(bytes(raw))
    else:
        if how == "header":
            a = forged_header(arrays, data)
        else:
            a = dict(arrays)
            member = data.draw(st.sampled_from(sorted(k for k in a if k != "__meta__")),
                               label="array")
            new = mutated_array(a[member], data)
            if new is None:
                del a[member]
            else:
                a[member] = new
        write_arrays(path, a)          # np.savez: every member with a valid CRC-32
    check(worker, path, f"{kind} ({name}): {how}")


class Unpickled:
    """Unpickling this creates the file ``path``: the loaders must never unpickle."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


def object_member(marker, big: bool) -> bytes:
    """A .npy member holding an object array (pickled) that touches ``marker`` when loaded;
    ``big``: over the size above which members are memory-mapped."""
    items = [Unpickled(marker)] + ([b"x" * (2 << 20)] if big else [])
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.array(items, dtype=object), allow_pickle=True)
    return buf.getvalue()


@pytest.mark.parametrize("kind", REGISTRY_KINDS)
def test_object_arrays_are_refused_without_unpickling(kind, saved, by_kind, worker, tmp_path):
    """An array member (or the header) replaced by a pickled object array: a ModelFileError,
    and the pickle never runs."""
    name = models_of(by_kind, kind)[0]
    path0, arrays = saved[name]
    with zipfile.ZipFile(path0) as z:
        members = {n: z.read(n) for n in z.namelist()}
    targets = ["__meta__.npy", sorted(m for m in members if m != "__meta__.npy")[0]]
    for target, big in [(targets[0], False), (targets[1], False), (targets[1], True)]:
        if True:
            marker = tmp_path / f"unpickled-{big}"
            edited_members = dict(members)
            edited_members[target] = object_member(marker, big)
            path = tmp_path / "pickled.model"
            with zipfile.ZipFile(path, "w") as z:
                for n, b in edited_members.items():
                    z.writestr(n, b)
            res = worker.run(path, f"{kind} ({name}): object array {target}")
            assert res.startswith("ModelFileError"), res
            assert not marker.exists(), f"{kind}: loading {target} ran pickle"
