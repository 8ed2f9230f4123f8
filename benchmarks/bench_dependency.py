"""Benchmarks of the dependency kernels.

1. First-order Eisner argmax (``fastspectral._ext.eisner``) against torch-struct's
   ``DependencyCRF(...).argmax`` on CPU, one thread each, random scores, sentence lengths
   10-40, batch sizes 1 and 32; reports sentences/second and the speed ratio measured in the
   same run, and checks that both return the same trees.
2. SHAG parsing speed (inside-outside + MBR Eisner) of a spectral model on held-out WSJ.

torch and torch-struct are *not* dependencies of fastspectral: install them only for this
benchmark (e.g. in a separate virtual environment with ``--system-site-packages``)::

    pip install torch==2.13.0 torch-struct
    PYTHONPATH=. python benchmarks/bench_dependency.py [--repeat 5] [--skip-torch]

torch-struct 0.5 with torch >= 2 raises "a view of a leaf Variable that requires grad is
being used in an in-place operation" in ``DepTree._check_potentials``; this script replaces
that method by an identical one whose length-masking fills run under ``torch.no_grad()``
(for full-length batches these fills touch empty slices, so the algorithm is unchanged).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from fastspectral.dependency.eisner import eisner_packed  # noqa: E402


def _patch_torch_struct():
    import torch
    import torch_struct.deptree as dt

    def _check_potentials(self, arc_scores, lengths=None):
        semiring = self.semiring
        batch, N, N2, *_ = self._get_dimension(arc_scores)
        assert N == N2, "Non-square potentials"
        if lengths is None:
            lengths = torch.LongTensor([N - 1] * batch).to(arc_scores.device)
        assert max(lengths) <= N, "Length longer than N"
        arc_scores = semiring.convert(arc_scores)
        with torch.no_grad():
            for b in range(batch):
                semiring.zero_(arc_scores[:, b, lengths[b] + 1:, :])
                semiring.zero_(arc_scores[:, b, :, lengths[b] + 1:])
        return arc_scores, batch, N, lengths

    dt.DepTree._check_potentials = _check_potentials


def _to_square(arc):
    """torch-struct potentials (B, n, n) [head, child] with root scores on the diagonal ->
    our (B, n+1, n+1) matrices with the root as position 0."""
    B, n, _ = arc.shape
    S = np.full((B, n + 1, n + 1), -1e9)
    S[:, 1:, 1:] = arc
    idx = np.arange(n)
    S[:, 0, 1:] = arc[:, idx, idx]
    S[:, idx + 1, idx + 1] = -1e9
    return S


def _ours(S_batch, batch):
    """Decode (B, n+1, n+1) matrices ``batch`` sentences per kernel call, one thread."""
    B, n1, _ = S_batch.shape
    heads = []
    for a in range(0, B, batch):
        chunk = S_batch[a:a + batch]
        b = len(chunk)
        off = np.arange(b + 1, dtype=np.int64) * n1 * n1
        h = eisner_packed(chunk.reshape(-1), off, np.full(b, n1 - 1, np.int32),
                          single_root=False, jobs=1).heads
        heads.append(h.reshape(b, n1 - 1))
    return np.concatenate(heads)


def bench_eisner(lengths, batches, n_sent, repeat, use_torch):
    """Sentences/s of our Eisner argmax (and torch-struct's, if ``use_torch``) per length/batch."""
    rng = np.random.default_rng(0)
    rows = []
    torch = None
    if use_torch:
        import torch
        from torch_struct import DependencyCRF

        _patch_torch_struct()
        torch.set_num_threads(1)
    for n in lengths:
        arc = rng.normal(size=(n_sent, n, n)).astype(np.float32)
        S = _to_square(arc.astype(np.float64))
        for batch in batches:
            # ours
            _ours(S[:batch], batch)
            best = float("inf")
            for _ in range(repeat):
                t = time.perf_counter()
                ours = _ours(S, batch)
                best = min(best, time.perf_counter() - t)
            row = {"length": n, "batch": batch, "ours_sent_per_s": n_sent / best}
            if torch is not None:
                t_arc = torch.from_numpy(arc)
                DependencyCRF(t_arc[:batch].clone()).argmax
                tbest = float("inf")
                n_torch = min(n_sent, max(batch, 64))        # torch is slow: fewer sentences
                for _ in range(max(1, repeat // 2)):
                    t = time.perf_counter()
                    outs = []
                    for a in range(0, n_torch, batch):
                        outs.append(DependencyCRF(t_arc[a:a + batch].clone()).argmax)
                    tbest = min(tbest, time.perf_counter() - t)
                row["torch_sent_per_s"] = n_torch / tbest
                row["ratio"] = row["ours_sent_per_s"] / row["torch_sent_per_s"]
                # agreement: torch-struct marginals [b, head, child], root on the diagonal
                m = torch.cat(outs).numpy()
                th = np.zeros((len(m), n), dtype=np.int64)
                for b in range(len(m)):
                    hh, cc = np.nonzero(m[b] > 0.5)
                    th[b, cc] = np.where(hh == cc, 0, hh + 1)
                row["same_trees"] = float(np.mean(np.all(th == ours[:len(m)], axis=1)))
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def bench_shag(repeat):
    """Sentences/s of SHAGParser.parse on the held-out WSJ sample, 1 and 2 threads."""
    from fastspectral.dependency.model import SHAGParser
    from fastspectral.trees.conll import read_malttab

    sents = list(read_malttab("/work/shared/data/dep/wsj-sample.dp"))
    cut = int(0.8 * len(sents))
    train, test = sents[:cut], sents[cut:]
    rows = []
    for kw in [dict(method="spectral", n_states=5, backoff_weight=0.0),
               dict(method="spectral"),          # the default: 8 states + 2 back-off states
               dict(method="spectral", lexical="lex+fcp")]:
        p = SHAGParser(**kw).fit(train)
        for jobs in (1, 2):
            best = float("inf")
            for _ in range(repeat):
                t = time.perf_counter()
                p.parse(test, jobs=jobs)
                best = min(best, time.perf_counter() - t)
            row = {"model": kw, "jobs": jobs, "sentences": len(test),
                   "words_per_sentence": sum(len(s.words) for s in test) / len(test),
                   "sent_per_s": len(test) / best}
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def main(argv=None):
    """Command-line entry point."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--sentences", type=int, default=256, help="random sentences per length")
    ap.add_argument("--skip-torch", action="store_true")
    ap.add_argument("--skip-shag", action="store_true")
    ap.add_argument("--json", default=None, help="write all results to this file")
    args = ap.parse_args(argv)
    use_torch = not args.skip_torch
    if use_torch:
        try:
            import torch  # noqa: F401
            import torch_struct  # noqa: F401
        except ImportError:
            print("torch / torch-struct not installed: timing fastspectral only", file=sys.stderr)
            use_torch = False
    res = {"eisner": bench_eisner([10, 20, 30, 40], [1, 32], args.sentences, args.repeat,
                                  use_torch)}
    if not args.skip_shag:
        res["shag"] = bench_shag(max(1, args.repeat // 2))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(res, fh, indent=1)


if __name__ == "__main__":
    main()
