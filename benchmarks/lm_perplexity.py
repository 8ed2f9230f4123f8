"""Brown-corpus perplexities of the Saul-Pereira latent bigram model (pivot, pivot+EM, EM) and of
an interpolated Kneser-Ney bigram model, like table 2 of Cohen & Collins (2014).

Split (whole sentences, file order, see ``fastspectral.trees.corpus.read_corpus``): train = the first
800,000 tokens, dev = the next 100,000 (used only to pick the number of EM iterations), test =
the next 200,000.  Words are lower-cased; training words seen once become ``<unk>``.

Usage::

    python benchmarks/lm_perplexity.py                       # m in 2 4 8 16 32
    python benchmarks/lm_perplexity.py --states 8 --em-iterations 100 --pivot-em-iterations 20

Rows: ``pivot`` (MDP 2 + concave EM for r), ``pivot, s smoothed`` (the same with ``s(. | h)``
interpolated with the unigram, weight 0.1: the initialisation of pivot-em), ``pivot-em`` and
``em``.  For pivot+EM and EM the model is trained for the given number of iterations, the dev
perplexity is recorded after each one and the best iteration is kept (its number is printed);
"time" is the training time up to that iteration (pre-EM work + that many EM iterations).
Output: one markdown table row per (m, method).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from fastspectral.lm import KneserNeyBigramLM, LatentBigramLM  # noqa: E402
from fastspectral.trees.corpus import read_corpus  # noqa: E402

BROWN = "/work/shared/data/brown/brown-tagged.txt"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default=BROWN)
    ap.add_argument("--states", type=int, nargs="+", default=[2, 4, 8, 16, 32])
    ap.add_argument("--em-iterations", type=int, default=100)
    ap.add_argument("--pivot-em-iterations", type=int, default=20)
    ap.add_argument("--train-tokens", type=int, default=800000)
    ap.add_argument("--dev-tokens", type=int, default=100000)
    ap.add_argument("--test-tokens", type=int, default=200000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    train = read_corpus(args.corpus, max_tokens=args.train_tokens)
    n_train = sum(len(s) for s in train)
    dev = read_corpus(args.corpus, skip_tokens=n_train, max_tokens=args.dev_tokens)
    n_dev = sum(len(s) for s in dev)
    test = read_corpus(args.corpus, skip_tokens=n_train + n_dev, max_tokens=args.test_tokens)
    n_test = sum(len(s) for s in test)
    print(f"train {n_train} tokens / {len(train)} sentences, dev {n_dev} / {len(dev)}, "
          f"test {n_test} / {len(test)} (read in {time.perf_counter() - t0:.1f}s)")
    t = time.perf_counter()
    kn = KneserNeyBigramLM().fit(train)
    kn_time = time.perf_counter() - t
    print(f"vocabulary {len(kn.vocab_)} (incl. <s> </s> <unk>), KN discounts "
          f"{[round(float(d), 3) for d in kn.discounts_]}")
    # warm-up: numba compilation (cached) not counted in the timings
    LatentBigramLM(2, "pivot-em", iterations=1).fit(train[:2000])
    print()
    print("| m | method | EM iterations (best on dev / run) | dev ppl | test ppl "
          "| train time (s) |")
    print("|---|---|---|---|---|---|")
    print(f"| - | Kneser-Ney (interpolated, modified) | - | {kn.perplexity(dev):.1f} | "
          f"{kn.perplexity(test):.1f} | {kn_time:.1f} |", flush=True)
    for m in args.states:
        for label, method, iters in (
                ("pivot", "pivot", 0),
                ("pivot, s smoothed (pivot-em, 0 iterations)", "pivot-em", 0),
                ("pivot-em", "pivot-em", args.pivot_em_iterations),
                ("em", "em", args.em_iterations)):
            lm = LatentBigramLM(m, method, iterations=iters, random_state=args.seed)
            lm.fit(train, dev=dev)
            em_time = lm.timings_.get("em", 0.0)
            pre = lm.fit_time_ - em_time
            to_best = pre + (em_time * lm.best_iteration_ / iters if iters else 0.0)
            its = "-" if iters == 0 else f"{lm.best_iteration_} / {iters}"
            print(f"| {m} | {label} | {its} | {lm.dev_perplexity_[lm.best_iteration_]:.1f} | "
                  f"{lm.perplexity(test):.1f} | {to_best:.1f} |", flush=True)


if __name__ == "__main__":
    main()
