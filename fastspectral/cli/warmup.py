"""Compile (and cache) the package's Numba kernels by running every command once on toy data.

``python -m fastspectral.cli.warmup`` runs ``fastspectral train NAME`` for every train command of
the registry (and the methods and orders that select other kernels), then ``parse`` (or
``lm eval``) of each model, in this process, on tiny data generated in code
(:mod:`fastspectral.synthetic`): no files outside a temporary folder.  Every ``cache=True``
kernel a real run of these commands calls is thereby compiled for the signatures the commands
use and written to the package's Numba cache (:mod:`fastspectral._jit`).  ``setup.py``'s build
step runs it in the build tree so that ``pip install .`` installs the cache with the package;
``FASTSPECTRAL_NO_WARMUP=1`` skips that.  ``--list`` prints the commands without running them.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

#: (train name, data set, options): every train command, plus the options that pick other kernels
RUNS = (
    ("pcfg", "trees", []),
    ("spectral", "trees", ["--states", "2"]),
    ("pivot", "trees", ["--states", "2"]),
    ("em", "trees", ["--states", "2", "--iterations", "2"]),
    ("pivot-em", "trees", ["--states", "2", "--iterations", "2"]),
    ("shag", "conllu", ["--states", "2"]),
    ("shag", "conllu", ["--method", "det"]),
    ("shag", "conllu", ["--method", "det+f"]),
    ("shag", "conllu", ["--method", "spectral", "--states", "2"]),
    ("shag", "conllu", ["--method", "em", "--states", "2", "--iterations", "2"]),
    ("lm", "text", ["--states", "2"]),
    ("lm", "text", ["--states", "2", "--method", "pivot"]),
    ("lm", "text", ["--states", "2", "--method", "em", "--iterations", "2"]),
    ("kn-lm", "text", []),
    ("hmm", "text", ["--states", "2"]),
    ("hmm", "text", ["--states", "2", "--method", "spectral"]),
    ("hmm", "text", ["--states", "2", "--method", "em", "--iterations", "2"]),
    ("hmm", "text", ["--states", "2", "--method", "spectral-em", "--iterations", "2"]),
    # thousands of word types: the sparse Hankel paths of real corpora
    ("hmm", "bigtext", ["--states", "2", "--iterations", "1"]),
    ("lexical", "arabic", []),
    ("eigenwords", "text", ["--dim", "4"]),
    ("brown", "text", []),
    ("atm", "trees", []),
    ("atm", "trees", ["--vectors", "brown"]),
    ("ccm", "trees", ["--iterations", "2"]),
    ("mst", "malttab", ["--iterations", "1"]),
    ("mst", "malttab", ["--iterations", "1", "--order", "2"]),
    ("rerank-dep", "malttab", ["--iterations", "1", "--k", "4"]),
    ("rerank-dep", "malttab", ["--iterations", "1", "--k", "4", "--states", "2",
                               "--features", "base+spectral+shag"]),
    ("latent-dep", "malttab", ["--states", "2", "--dim", "4"]),
)

#: models scored by ``lm eval`` instead of parsed; models with neither
SCORED = ("lm", "kn-lm", "hmm")
NOT_PARSED = ("eigenwords", "brown")

_LETTERS = "بتثجحخدذرزسشصضطظعغفقكلمنهوي"
_MARKS = "\u064e\u064f\u0650"  # fatha, damma, kasra


def _arabic(word: str, tag: str) -> tuple[str, str]:
    """A made-up vocalised Arabic form and lemma of ``word`` (the vowels depend on the tag,
    so that one unvocalised spelling has several analyses)."""
    h = sum(ord(c) * 31 ** i for i, c in enumerate(word))
    cons = [_LETTERS[(h >> (5 * i)) % len(_LETTERS)] for i in range(3)]
    v = sum(map(ord, tag))
    form = "".join(c + _MARKS[(v + i) % 3] for i, c in enumerate(cons))
    return form, "".join(cons)


def write_data(folder: str, n: int = 160, seed: int = 0, n_big: int = 4000) -> dict:
    """Toy training and parse files of every input format under ``folder``: {name: (train, parse)}
    (``bigtext``: sentences whose words carry one of ``n_big`` suffixes, a large vocabulary)."""
    import numpy as np

    from ..dependency.data import trees_to_dep_sentences
    from ..synthetic import LatentPCFG
    from ..trees.conll import write_conllu, write_malttab
    from ..trees.ptb import write_brackets
    from ..trees.transforms import clean

    g = LatentPCFG.default(n_states=2, seed=seed)
    trees = g.sample(n, seed=seed + 1)
    held = g.sample(8, seed=seed + 2)
    deps = list(trees_to_dep_sentences(clean(t) for t in trees))
    deps_held = list(trees_to_dep_sentences(clean(t) for t in held))
    for s in deps + deps_held:
        s.upos = list(s.xpos)
        s.rels = ["dep"] * len(s.words)
    out = {}

    def path(name):
        return os.path.join(folder, name)

    out["trees"] = (path("train.mrg"), path("parse.mrg"))
    write_brackets(trees, out["trees"][0])
    write_brackets(held, out["trees"][1])
    out["text"] = (path("train.txt"), path("parse.txt"))
    for items, p in ((trees, out["text"][0]), (held, out["text"][1])):
        with open(p, "w", encoding="utf-8") as f:
            f.writelines(" ".join(f"{w}/{t}" for w, t in t_.pos()) + "\n" for t_ in items)
    out["bigtext"] = (path("train-big.txt"), out["text"][1])
    rng = np.random.default_rng(seed)
    with open(out["bigtext"][0], "w", encoding="utf-8") as f:
        for t_ in g.sample(4 * n_big // 5, seed=seed + 3):
            f.write(" ".join(f"{w}{rng.integers(n_big)}/{t}" for w, t in t_.pos()) + "\n")
    out["conllu"] = (path("train.conllu"), path("parse.conllu"))
    write_conllu(deps, out["conllu"][0])
    write_conllu(deps_held, out["conllu"][1])
    out["malttab"] = (path("train.dp"), path("parse.dp"))
    write_malttab(deps, out["malttab"][0])
    write_malttab(deps_held, out["malttab"][1])
    arabic = []
    for s in deps + deps_held:
        a = s.__class__(**{k: list(v) if isinstance(v, list) else v
                           for k, v in s.__dict__.items()})
        pairs = [_arabic(w, t) for w, t in zip(s.words, s.xpos)]
        a.words = [p[0] for p in pairs]
        a.lemmas = [p[1] for p in pairs]
        a.feats = [f"Number={'Sing' if t.endswith('S') else 'Plur'}" if t.startswith("N") else "_"
                   for t in s.xpos]
        arabic.append(a)
    out["arabic"] = (path("train-ar.conllu"), path("parse-ar.conllu"))
    write_conllu(arabic[:len(deps)], out["arabic"][0])
    write_conllu(arabic[len(deps):], out["arabic"][1])
    return out


def commands(folder: str, files: dict) -> list[list[str]]:
    """The command lines of the warm-up (arguments of :func:`fastspectral.cli.main`)."""
    cmds = []
    for i, (name, data, opts) in enumerate(RUNS):
        train, held = files[data]
        model = os.path.join(folder, f"{i}-{name}.model")
        cmds.append(["train", name, train, "-o", model, "-q"] + opts)
        if name in SCORED:
            cmds.append(["lm", "eval", model, held, "-q"])
        elif name not in NOT_PARSED:
            extra = (["--input", "trees"] if data == "trees"
                     else ["--output-format", "conllu"] if name == "latent-dep" else [])
            cmds.append(["parse", model, held, "-q", "-o", os.path.join(folder, f"{i}.out")]
                        + extra)
    return cmds


def run(verbose: bool = True, only=None) -> int:
    """Run every warm-up command (``only``: of these train names); the number that failed (each
    failure is reported)."""
    import contextlib
    import io

    from . import main

    failed = 0
    with tempfile.TemporaryDirectory(prefix="fastspectral-warmup-") as folder:
        files = write_data(folder)
        name = None
        for cmd in commands(folder, files):
            name = cmd[1] if cmd[0] == "train" else name  # a parse follows its train command
            if only and name not in only:
                continue
            t0 = time.perf_counter()
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                rc = main(cmd)
            model = cmd[2] if cmd[0] == "lm" else cmd[1]
            if cmd[0] == "train":
                label = " ".join(cmd[:2] + cmd[cmd.index("-q") + 1:])
            else:
                label = " ".join(cmd[:1 + (cmd[0] == "lm")]) + " " + os.path.basename(model)
            if rc:
                failed += 1
                print(f"warm-up: {label.strip()}: exit {rc}: {err.getvalue().strip()}",
                      file=sys.stderr)
            elif verbose:
                print(f"warm-up: {label.strip()} ({time.perf_counter() - t0:.1f} s)",
                      file=sys.stderr)
    return failed


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fastspectral.cli.warmup",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--list", action="store_true", help="print the commands and exit")
    ap.add_argument("-q", "--quiet", action="store_true")
    ap.add_argument("--only", default="", help="comma-separated train names (default: all)")
    args = ap.parse_args(argv)
    if args.list:
        for name, data, opts in RUNS:
            print(" ".join(["train", name, f"<{data}>"] + opts))
        return 0
    from .._jit import CACHE_DIR, cache_files

    t0 = time.perf_counter()
    failed = run(verbose=not args.quiet, only=[n for n in args.only.split(",") if n])
    n = len(cache_files(CACHE_DIR))
    print(f"warm-up: {n} cache files in {CACHE_DIR} ({time.perf_counter() - t0:.0f} s)",
          file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
