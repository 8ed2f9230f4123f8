"""The spectral latent dependency model on the WSJ dependency sample: training time, scoring
speed, and whether log p-hat prefers the gold tree to perturbed ones (a re-ranking proxy).

Split as the SHAG results: first 80 % of ../shared/data/dep/wsj-sample.dp for training, last
20 % for test; the hyperparameters (states, ridge) are chosen on a dev split (the last 10 % of
the training part, the model fitted on the rest), never on test.

Pairwise accuracy: for each sentence, ``--perturb`` trees that move one word to another head
(no cycles, one root); the fraction of (gold, perturbed) pairs where log |p-hat(gold)| is
larger (ties count 1/2).  Chance is 0.5.

    python experiments/latentdep_wsj.py [--embeddings FILE] [--states 4 8 16] [--ridge 1e-3 1e-2]
"""
import argparse
import resource
import time

import numpy as np
from threadpoolctl import threadpool_limits

from fastspectral.latentdep import LatentDependencyModel
from fastspectral.trees.readers import read_treebank


def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def perturbations(sents, k, seed):
    """``k`` one-arc perturbations of each sentence (heads lists)."""
    rng = np.random.default_rng(seed)
    out, owner = [], []
    for si, s in enumerate(sents):
        heads = np.asarray(s.heads)
        n = len(heads)
        if n < 3:
            continue
        kids = [[] for _ in range(n + 1)]
        for i, h in enumerate(heads, 1):
            kids[h].append(i)
        made = 0
        for _ in range(20 * k):
            if made == k:
                break
            i = int(rng.integers(1, n + 1))
            h = int(rng.integers(1, n + 1))
            if h == i or h == heads[i - 1]:
                continue
            stack, below = [i], set()          # the subtree of i: h must not be in it
            while stack:
                v = stack.pop()
                below.add(v)
                stack.extend(kids[v])
            if h in below:
                continue
            new = heads.copy()
            new[i - 1] = h
            out.append(new)
            owner.append(si)
            made += 1
    return out, np.asarray(owner)


def pairwise(model, sents, seed=0, k=10):
    alt, owner = perturbations(sents, k, seed)
    gold = model.log_prob(sents)
    pert = model.log_prob([sents[i] for i in owner], heads=alt)
    g = gold[owner]
    return float(np.mean((g > pert) + 0.5 * (g == pert)))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--treebank", default="../shared/data/dep/wsj-sample.dp")
    ap.add_argument("--embeddings", default=None,
                    help="eigenword file (default: learned from the training words)")
    ap.add_argument("--dim", type=int, default=30)
    ap.add_argument("--states", type=int, nargs="+", default=[4, 8, 16])
    ap.add_argument("--ridge", type=float, nargs="+", default=[1e-3, 1e-2])
    ap.add_argument("--perturb", type=int, default=10)
    ap.add_argument("--tags", default=None, choices=("upos", "xpos", "auto"),
                    help="append one-hot POS tags to the eigenwords (default: words only)")
    ap.add_argument("--tag-weight", type=float, nargs="+", default=[1.0])
    args = ap.parse_args(argv)
    sents = list(read_treebank(args.treebank))
    cut = int(0.8 * len(sents))
    train, test = sents[:cut], sents[cut:]
    dcut = int(0.9 * len(train))
    sub, dev = train[:dcut], train[dcut:]
    print(f"{len(train)} training / {len(test)} test sentences; dev = last {len(dev)} of train; "
          f"embeddings: {args.embeddings or f'learned on the training words (dim {args.dim})'}")
    best = None
    print("| states | ridge | tag weight | dev pairwise acc. |")
    print("|---:|---:|---:|---:|")
    weights = args.tag_weight if args.tags else [1.0]
    for m in args.states:
        for r in args.ridge:
            for tw in weights:
                model = LatentDependencyModel(n_states=m, embeddings=args.embeddings,
                                              dim=args.dim, ridge=r, tag_column=args.tags,
                                              tag_weight=tw).fit(sub)
                acc = pairwise(model, dev, seed=1, k=args.perturb)
                print(f"| {m} | {r:g} | {tw:g} | {acc:.3f} |", flush=True)
                if best is None or acc > best[0]:
                    best = (acc, m, r, tw)
    _, m, r, tw = best
    c0, w0 = cpu(), time.perf_counter()
    with threadpool_limits(limits=1):
        model = LatentDependencyModel(n_states=m, embeddings=args.embeddings, dim=args.dim,
                                      ridge=r, tag_column=args.tags, tag_weight=tw).fit(train)
    fit_cpu, fit_wall = cpu() - c0, time.perf_counter() - w0
    acc = pairwise(model, test, seed=2, k=args.perturb)
    alt, owner = perturbations(test, 50, 3)
    cand = [test[i] for i in owner]
    model.log_prob(cand[:10], heads=alt[:10])          # compiled already; warm
    for jobs in (1, 2):
        c0, w0 = cpu(), time.perf_counter()
        model.log_prob(cand, heads=alt, jobs=jobs)
        c, w = cpu() - c0, time.perf_counter() - w0
        print(f"log_prob, jobs={jobs}: {len(alt)} trees in {w:.3f} s wall "
              f"({len(alt) / w:,.0f} trees/s), {c:.3f} s CPU ({len(alt) / c:,.0f} trees/CPU-s)")
    print(f"chosen on dev: states={m}, ridge={r:g}, tags={args.tags}, tag weight={tw:g}; fit on {len(train)} sentences: "
          f"{fit_cpu:.2f} s CPU ({fit_wall:.2f} s wall, eigenwords included when learned); "
          f"test pairwise accuracy {acc:.3f}")


if __name__ == "__main__":
    main()
