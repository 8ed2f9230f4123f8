"""Digests of every model kind's model file and output: the before / after check of a refactor.

For every kind of :data:`fastspectral.models.REGISTRY` this fits a small model on the data of
``tests/test_estimators.py`` (the built-in synthetic latent PCFG: 300 training trees, their
dependency conversion and their yields; the same small settings), saves its model file and
prints one line per kind: the sha256 of the model file's arrays (names, dtypes, shapes and
bytes, in name order; the JSON header is left out, it records the fitting time) and the sha256
of what the model produces on 12 fixed held-out items (bracketed trees, head sequences or the
sequence log-likelihoods, as the tests compare them).  Fitting and parsing run with one thread.

    python tools/digests.py --out /tmp/digests_before.json     # before the change
    ... change the code, rebuild the kernels ...
    python tools/digests.py --compare /tmp/digests_before.json # after: exit 0 when identical

``--compare FILE`` prints the kinds whose digests differ and exits 1 when any does (2 for a
missing or unreadable FILE); ``--kinds a,b`` restricts the run to some kinds.  Run it with
``PYTHONPATH`` set to the checkout under test.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import sys
import tempfile
import time

import numpy as np

#: small, fast settings per model kind (those of tests/test_estimators.py)
SMALL = {
    "spectral-lpcfg": {"n_states": 2},
    "pivot-lpcfg": {"n_states": 2},
    "em-lpcfg": {"n_states": 2, "iterations": 2},
    "shag": {"n_states": 2},
    "latent-bigram-lm": {"n_states": 2},
}


def make_data():
    """Training and held-out items for each input kind (as tests/test_estimators.py)."""
    from fastspectral.dependency.data import trees_to_dep_sentences
    from fastspectral.synthetic import LatentPCFG
    from fastspectral.trees.transforms import clean

    g = LatentPCFG.default(n_states=2, seed=0)
    trees = g.sample(300, seed=3)
    test = g.sample(12, seed=4)
    deps = list(trees_to_dep_sentences(clean(t) for t in trees))
    return {
        "sentences": (trees, [t.leaves() for t in test]),
        "dependency": (deps[:250], deps[250:262]),
        "sequences": ([t.leaves() for t in trees], [t.leaves() for t in test]),
    }


def _sha(parts) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else str(p).encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()


def array_digest(path) -> str:
    """sha256 over the arrays of a model file (not its JSON header)."""
    parts = []
    with np.load(path, allow_pickle=False) as z:
        for name in sorted(z.files):
            if name == "__meta__":
                continue
            a = np.ascontiguousarray(z[name])
            parts += [name, a.dtype.str, a.shape, a.tobytes()]
    return _sha(parts)


def output_text(model, items) -> list[str]:
    """What a model produces for ``items``, as text (trees, heads, or log-likelihoods)."""
    if model.input_kind == "sentences":
        return [str(t) for t in model.parse(items, jobs=1)]
    if model.input_kind == "dependency":
        return [" ".join(map(str, s.heads)) for s in model.parse(items, jobs=1)]
    return [repr(model.log_likelihood(items))]


def digests(kinds=None) -> dict:
    """``{kind: {"arrays": sha256, "output": sha256}}`` for the kinds (default: all).  The
    learners' warnings are silenced while it runs (and the level restored after)."""
    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        return _digests(kinds)
    finally:
        logging.disable(previous)


def _digests(kinds) -> dict:
    from fastspectral import models

    data = make_data()
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for kind in sorted(kinds or models.REGISTRY):
            cls = models.model_class(kind)
            params = dict(SMALL.get(kind, {}))
            if "jobs" in cls._get_param_names():
                params["jobs"] = 1
            t0 = time.perf_counter()
            model = cls(**params)
            train, test = data[cls.input_kind]
            model.fit(train)
            path = os.path.join(tmp, kind + ".fsm")
            model.save(path)
            out[kind] = {"arrays": array_digest(path),
                         "output": _sha(output_text(model, test))}
            print(f"{kind:22s} arrays {out[kind]['arrays'][:16]}  output "
                  f"{out[kind]['output'][:16]}  ({time.perf_counter() - t0:.1f} s)", flush=True)
    return out


def compare(now: dict, before: dict) -> list[str]:
    """The differences between two digest tables, one line each (empty when identical)."""
    lines = []
    for kind in sorted(set(now) | set(before)):
        if kind not in before:
            lines.append(f"{kind}: not in the earlier digests")
        elif kind not in now:
            lines.append(f"{kind}: not computed now")
        else:
            for what in ("arrays", "output"):
                if now[kind][what] != before[kind][what]:
                    lines.append(f"{kind}: {what} differ")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="write the digests to this JSON file")
    ap.add_argument("--compare", help="compare with the digests of this JSON file")
    ap.add_argument("--kinds", help="comma-separated model kinds (default: every kind)")
    args = ap.parse_args(argv)
    before = None
    if args.compare:
        try:
            with open(args.compare, encoding="utf-8") as fh:
                before = json.load(fh)
        except (OSError, ValueError) as exc:
            print(f"digests: error: {args.compare}: {exc}", file=sys.stderr)
            return 2
    kinds = args.kinds.split(",") if args.kinds else None
    if kinds and before is not None:
        before = {k: v for k, v in before.items() if k in kinds}
    now = digests(kinds)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump(now, fh, indent=1, sort_keys=True)
    if before is not None:
        diff = compare(now, before)
        for line in diff:
            print(line)
        print("identical" if not diff else f"{len(diff)} difference(s)")
        return 1 if diff else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
