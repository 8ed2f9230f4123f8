"""Convergence of the spectral latent dependency model's p-hat(words | tree) with the sample.

The true model is :class:`fastspectral.latentdep.synthetic.LatentDependencyGenerator` (hidden
states with directional parent-to-child transitions T_L / T_R and word emissions O; tree shapes
independent of the states).  For M = 10^3, 10^4, 10^5 sampled training trees
:class:`~fastspectral.latentdep.LatentDependencyModel` estimates p(x | y) of held-out trees:

* ``one-hot`` words (k = V): the estimate is of p(x | y) itself;
* ``k-dim`` words (random non-negative k-dimensional vectors F, k < V): the estimate is of the
  smoothed model whose emission is F F^T O (what eigenwords give; see docs/notes/latentdep.md).

We report the median and mean relative error |p_hat - p| / p and the fraction of negative
estimates.

``--stop LO HI``: the model with valency instead (per-state stop probabilities drawn in
[LO, HI], tree shapes drawn by the states; ``LatentDependencyModel(stop_events=True)``
estimates p(x, valency | y)); ``--max-nodes`` caps the trees (a larger one is drawn again).

    python experiments/latentdep_convergence.py [--sizes 1000 10000 100000] [--test 500]
    python experiments/latentdep_convergence.py --stop 0.6 0.9 --max-nodes 60
"""
import argparse
import sys
import time

import numpy as np
from threadpoolctl import threadpool_limits

from fastspectral.embeddings import Eigenwords
from fastspectral.latentdep import LatentDependencyGenerator, LatentDependencyModel


def fixed_embeddings(words, F):
    ew = Eigenwords(dim=F.shape[1], lowercase=False)
    ew.words_ = ["<unk>"] + list(words)
    ew.embeddings_ = np.vstack([np.zeros(F.shape[1]), F])
    ew.counts_ = np.ones(len(ew.words_), np.int64)
    ew.singular_values_, ew.fit_time_ = np.ones(F.shape[1]), 0.0
    return ew


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--test", type=int, default=500, help="held-out trees (default 500)")
    ap.add_argument("--states", type=int, default=3, help="hidden states of the true model")
    ap.add_argument("--words", type=int, default=20, help="vocabulary of the true model")
    ap.add_argument("--dim", type=int, default=6, help="k of the k-dim word vectors")
    ap.add_argument("--seed", type=int, default=0, help="seed of the true model")
    ap.add_argument("--ridge", type=float, default=1e-3, help="ridge of the estimator")
    ap.add_argument("--stop", type=float, nargs=2, default=None, metavar=("LO", "HI"),
                    help="the model with STOP events, stop probabilities in [LO, HI]")
    ap.add_argument("--max-nodes", type=int, default=14,
                    help="largest tree (with --stop: larger ones are drawn again)")
    args = ap.parse_args(argv)
    g = LatentDependencyGenerator(n_states=args.states, n_words=args.words, seed=args.seed,
                                  stop=args.stop, max_nodes=args.max_nodes)
    test = g.sample(args.test, seed=12345)
    F = np.random.default_rng(args.seed + 1).random((args.words, args.dim))
    setups = {"one-hot": ("one-hot", g.log_prob(test)),
              f"{args.dim}-dim": (fixed_embeddings(g.words, F),
                                  g.log_prob(test, emission=F @ (F.T @ g.O)))}
    nodes = np.mean([len(s.words) for s in test])
    print(f"true model: LatentDependencyGenerator(n_states={args.states}, n_words={args.words}, "
          f"seed={args.seed}, stop={args.stop}, max_nodes={args.max_nodes}); {args.test} "
          f"held-out trees ({nodes:.1f} words on average)")
    print("| words | training trees M | fit seconds (CPU) | median rel. error | "
          "mean rel. error | 90th pct | negative p-hat |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for k, M in enumerate(args.sizes):
        train = g.sample(M, seed=1000 + k)
        for name, (emb, truth) in setups.items():
            c0 = time.process_time()
            with threadpool_limits(limits=1):
                model = LatentDependencyModel(n_states=args.states, embeddings=emb,
                                              ridge=args.ridge,
                                              stop_events=args.stop is not None).fit(train)
            fit_cpu = time.process_time() - c0
            lp, sign = model.log_prob(test, return_sign=True, jobs=1)
            err = np.abs(sign * np.exp(lp - truth) - 1.0)
            print(f"| {name} | {M:,} | {fit_cpu:.2f} | {np.median(err):.4f} | {err.mean():.4f} "
                  f"| {np.quantile(err, 0.9):.4f} | {np.mean(sign < 0):.3f} |")
            sys.stdout.flush()
    if args.stop is not None:
        print(f"trees over {args.max_nodes} nodes drawn again: {g.rejected}")


if __name__ == "__main__":
    main()
