"""Convergence of the spectral L-PCFG estimate of p(tree) with the number of training trees.

The true model is the built-in synthetic L-PCFG (:class:`fastspectral.synthetic.LatentPCFG`,
2 hidden states per symbol).  For M = 10^3, 10^4, 10^5 sampled training trees the learner
(``v=1, h=None`` so the grammar is the true CNF skeleton, relative-frequency lexicon, no smoothing,
every symbol split) estimates p(tree) of held-out sampled trees; we report the median and mean
relative error |p_hat - p| / p.  Samples use a large length/depth limit so that the sampling
distribution is the model's own (the default limits condition on short trees, which biases every
estimate by the acceptance probability).

    python experiments/lpcfg_convergence.py [--sizes 1000 10000 100000] [--test 500] [--seed 3]
"""
import argparse
import sys
import time

import numpy as np
from threadpoolctl import threadpool_limits

from fastspectral.lpcfg import SpectralLPCFG
from fastspectral.synthetic import LatentPCFG


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--test", type=int, default=500, help="held-out trees (default 500)")
    ap.add_argument("--states", type=int, default=2, help="hidden states of the true model")
    ap.add_argument("--seed", type=int, default=3, help="seed of the true model")
    args = ap.parse_args(argv)
    gm = LatentPCFG.default(n_states=args.states, seed=args.seed, max_depth=10_000)
    test = gm.sample(args.test, seed=12345, max_len=60)  # p(tree) of short trees: no underflow
    p = np.array([gm.tree_probability(t) for t in test])
    print(f"true model: LatentPCFG.default(n_states={args.states}, seed={args.seed}); "
          f"{args.test} held-out trees")
    print("| training trees M | fit seconds (CPU) | median rel. error | mean rel. error | "
          "90th pct | trees with error > 0.5 |")
    print("|---:|---:|---:|---:|---:|---:|")
    for k, M in enumerate(args.sizes):
        train = gm.sample(M, seed=1000 + k, max_len=10_000)
        c0 = time.process_time()
        with threadpool_limits(limits=1):
            model = SpectralLPCFG(n_states=args.states, v=1, h=None, lexicon="mle",
                                  moment_smoothing=0.0, min_count=1).fit(train)
        fit_cpu = time.process_time() - c0
        ph = np.array([model.tree_probability(t) for t in test])
        err = np.abs(ph - p) / p
        print(f"| {M:,} | {fit_cpu:.1f} | {np.median(err):.4f} | {err.mean():.4f} | "
              f"{np.quantile(err, 0.9):.4f} | {np.mean(err > 0.5):.3f} |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
