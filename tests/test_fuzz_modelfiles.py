"""Model files are untrusted input: an edited array or a flipped byte gives a ModelFileError at
load time (naming the array), never another exception and never a crash (issue 11).

Small models of every kind that parses or scores (PCFG, spectral / pivot / EM L-PCFG, SHAG
with and without a lexical model, both language models, HMM) are saved once; each case edits
one file and hands it to a worker process that loads it and parses (or scores) a few inputs,
so that a segfault fails the test instead of killing pytest.  The outcome of every case must
be ``ok`` (a harmless edit) or ``ModelFileError``.
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

from _toy import coordination_treebank, dep_treebank

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
    for line in sys.stdin:
        path = json.loads(line)
        try:
            m = load(path)
            kind = getattr(m, "input_kind", "sequences")
            if kind == "sentences":
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


def small_models():
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
    ]


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    folder = tmp_path_factory.mktemp("models")
    out = {}
    for name, model in small_models():
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


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
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


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
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


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
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
