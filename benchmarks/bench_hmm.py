"""Sequence HMMs (fastspectral.hmm): spectral (HKZ 2009), EM and spectral-initialised EM, beside
hmmlearn's CategoricalHMM, Kneser-Ney and the Saul-Pereira latent bigram models.

Sections (run any subset)::

    python benchmarks/bench_hmm.py --convergence         # spectral p(x) error vs sample size
    python benchmarks/bench_hmm.py --tags                # WSJ POS-tag sequences, m = 10 20 40
    python benchmarks/bench_hmm.py --brown               # Brown words, 800k training tokens
    python benchmarks/bench_hmm.py --hmmlearn            # hmmlearn CategoricalHMM rows (slow)

``--convergence``: sequences sampled from a known 3-state HMM over 5 symbols (stop
probabilities 0.2-0.3); the spectral estimate (single-symbol basis, no ridge) of ``p(x)`` for
every sequence of length <= 3 against the truth, at 1e3, 1e4 and 1e5 training sequences
(L1 error summed over those 156 sequences, max relative error, non-positive estimates).

``--tags``: POS-tag sequences of ../shared/data/ptb/wsj-sample.mrg (train, 3,914 sequences,
45 tags) and wsj22.trees (test, 1,700 sequences).  Settings are chosen on a development split
(the last 10% of the training sequences; models trained on the first 90%): the spectral ridge
(0.3, 1, 3), the EM iteration (best of ``--em-iterations``), and the interpolation weight of
the Kneser-Ney bigram (grid of ``fastspectral.hmm.model.BACKOFF_GRID``); the chosen settings
are then refitted on all training sequences and scored on the test set.  Perplexity per event,
the end of every sequence counted.  The spectral-initialised EM curve is compared with EM's on
the development split: the first iteration whose development perplexity reaches EM's best.

``--brown``: Brown words (../shared/data/brown/brown-tagged.txt), the splits of
benchmarks/lm_perplexity.py: train = the first 800,000 tokens, dev = the next 100,000 (settings
chosen there), test = the next 200,000; words lower-cased, training words seen once are
``<unk>`` (the vocabulary of the Kneser-Ney and Saul-Pereira models).

``--hmmlearn`` (needs ``pip install hmmlearn``; skipped when absent): CategoricalHMM, 100 EM
iterations (tol = -inf), on the tag sequences; its test perplexity is per token without an end
event (it has none).  Paired timing: our Baum-Welch iteration is timed right before each
hmmlearn fit, on the same data and number of states, in the same process.

The machine's 2 cores are shared with other jobs: timings are noisy; compare only the timings
of one run.
"""
from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from fastspectral.hmm import HMM, read_sequences  # noqa: E402
from fastspectral.hmm import em as E  # noqa: E402
from fastspectral.hmm import spectral as S  # noqa: E402
from fastspectral.hmm.data import Encoded  # noqa: E402

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data")
RESULTS: dict = {}


def _ppl(model, seqs) -> float:
    return model.perplexity(seqs)


def _alone(model, seqs) -> float:
    """Perplexity of the hidden-state model nearly alone: interpolation weight 0.001 (a floor
    for the events the spectral model clips to 0)."""
    w = model.backoff_weight_
    model.backoff_weight_ = 0.001
    try:
        return model.perplexity(seqs)
    finally:
        model.backoff_weight_ = w


def _enc(seqs) -> Encoded:
    off = np.zeros(len(seqs) + 1, dtype=np.int64)
    off[1:] = np.cumsum([len(s) for s in seqs])
    return Encoded(off, np.array([x for s in seqs for x in s], dtype=np.int64))


# ---------------------------------------------------------------------------- convergence
def _sample(start, trans, emit, n, rng):
    m, V = emit.shape
    h = (rng.random(n)[:, None] > np.cumsum(start)[None, :]).sum(1)
    alive = np.arange(n)
    steps = []
    while alive.size:
        x = np.minimum((rng.random(alive.size)[:, None] > np.cumsum(emit[h], 1)).sum(1), V - 1)
        go = x != V - 1
        steps.append((alive[go], x[go]))
        alive, h = alive[go], h[go]
        h = np.minimum((rng.random(alive.size)[:, None] > np.cumsum(trans[h], 1)).sum(1), m - 1)
    seqs = [[] for _ in range(n)]
    for who, what in steps:
        for i, a in zip(who.tolist(), what.tolist()):
            seqs[i].append(a)
    return seqs


def convergence(args):
    rng = np.random.default_rng(0)
    m, M = 3, 5
    start = rng.dirichlet(np.ones(m))
    trans = rng.dirichlet(np.ones(m) * 0.5, size=m)
    obs = rng.dirichlet(np.ones(M) * 0.5, size=m)
    stop = np.array([0.2, 0.3, 0.25])
    emit = np.hstack([obs * (1 - stop)[:, None], stop[:, None]])
    test = [list(t) for L in range(4) for t in itertools.product(range(M), repeat=L)]
    truth = np.exp(E.log_probability(_enc(test), start, trans, emit))
    print(f"\n## spectral p(x) vs truth: 3-state HMM, 5 symbols; all {len(test)} sequences of "
          f"length <= 3 (total probability {truth.sum():.3f}); mean of {args.repeats} samples\n")
    print("| training sequences | L1 error (sum over the test sequences) | max relative error "
          "| non-positive estimates | fit (s) |")
    print("|---|---|---|---|---|")
    rows = []
    for n in (1000, 10000, 100000):
        l1, rel, nonpos, fit = [], [], [], []
        for r in range(args.repeats):
            seqs = _sample(start, trans, emit, n, np.random.default_rng(1000 * r + n))
            t0 = time.perf_counter()
            op = S.learn_operators(_enc(seqs), M, m, max_basis=0, ridge=0.0)
            fit.append(time.perf_counter() - t0)
            lp, sign = S.raw_log_probability(op, _enc(test))
            est = sign * np.exp(lp)
            l1.append(np.abs(est - truth).sum())
            rel.append(np.max(np.abs(est - truth) / truth))
            nonpos.append(int((est <= 0).sum()))
        rows.append({"n": n, "l1": float(np.mean(l1)), "max_rel": float(np.mean(rel)),
                     "nonpos": float(np.mean(nonpos)), "fit": float(np.median(fit))})
        print(f"| {n:,} | {np.mean(l1):.4f} | {np.mean(rel):.3f} | {np.mean(nonpos):.1f} "
              f"| {np.median(fit):.3f} |", flush=True)
    RESULTS["convergence"] = rows


# ---------------------------------------------------------------------------- WSJ tags
def _tag_data():
    train = read_sequences(os.path.join(DATA, "ptb", "wsj-sample.mrg"), field="tag")
    test = read_sequences(os.path.join(DATA, "ptb", "wsj22.trees"), field="tag")
    k = int(round(0.9 * len(train)))
    return train, train[:k], train[k:], test


def _first_at_or_below(curve, target):
    hit = np.nonzero(np.asarray(curve) <= target + 1e-12)[0]
    return int(hit[0]) if len(hit) else None


def tags(args):
    from fastspectral.lm.kneser_ney import KneserNeyBigramLM

    train, tr90, dev, test = _tag_data()
    n_test = sum(len(s) + 1 for s in test)
    print(f"\n## WSJ POS tags: train {len(train)} sequences ({len(tr90)} + dev {len(dev)}), "
          f"test {len(test)} sequences, {n_test} events (tokens + ends)\n")
    HMM(n_states=4, method="spectral-em", iterations=1).fit(tr90[:300], dev=dev[:50])  # warm-up
    t0 = time.perf_counter()
    kn = KneserNeyBigramLM(min_count=1, lowercase=False).fit(train)
    kn_time = time.perf_counter() - t0
    kn_test = kn.perplexity(test)
    rows = [{"system": "fastspectral lm Kneser-Ney bigram", "m": "-", "fit": kn_time,
             "test": kn_test, "dev": KneserNeyBigramLM(min_count=1, lowercase=False)
             .fit(tr90).perplexity(dev)}]
    curves = {}
    for m in args.states:
        # --- selection on the development split
        best_sp = None
        for ridge in (0.3, 1.0, 3.0):
            sp = HMM(n_states=m, method="spectral", field="tag", ridge=ridge).fit(tr90, dev=dev)
            d = _ppl(sp, dev)
            if best_sp is None or d < best_sp[0]:
                best_sp = (d, ridge, sp.backoff_weight_)
        em = HMM(n_states=m, method="em", field="tag", iterations=args.em_iterations,
                 random_state=args.seed).fit(tr90, dev=dev)
        sem = HMM(n_states=m, method="spectral-em", field="tag",
                  iterations=args.em_iterations, random_state=args.seed).fit(tr90, dev=dev)
        em_best = float(em.dev_perplexity_.min())
        em_at = int(np.argmin(em.dev_perplexity_))
        sem_reach = _first_at_or_below(sem.dev_perplexity_, em_best)
        em_1 = _first_at_or_below(em.dev_perplexity_, 1.01 * em_best)
        sem_1 = _first_at_or_below(sem.dev_perplexity_, 1.01 * em_best)
        curves[m] = {"em": em.dev_perplexity_.tolist(), "spectral-em": sem.dev_perplexity_.tolist(),
                     "em_best": em_best, "em_best_iteration": em_at,
                     "spectral_em_reaches_at": sem_reach, "em_within_1pct_at": em_1,
                     "spectral_em_within_1pct_at": sem_1}
        # --- refit on all training sequences with the chosen settings, score the test set
        d_sp, ridge, w_sp = best_sp
        t0 = time.perf_counter()
        sp = HMM(n_states=m, method="spectral", field="tag", ridge=ridge,
                 backoff_weight=w_sp).fit(train)
        sp_fit = time.perf_counter() - t0
        raw, sign = sp.raw_log_probability(test)
        lp = sp.log_probability(test)
        rows.append({"system": "spectral HMM", "m": m, "fit": sp_fit, "test": _ppl(sp, test),
                     "alone": _alone(sp, test),
                     "dev": d_sp, "settings": f"ridge {ridge:g}, w {w_sp:g}",
                     "raw_nonpositive": int((sign <= 0).sum()),
                     "positive": int(np.isfinite(lp).sum()), "resets": sp.last_resets_})
        for label, mdl in (("EM HMM", em), ("spectral-init EM HMM", sem)):
            its = max(int(mdl.best_iteration_), 1)
            t0 = time.perf_counter()
            full = HMM(n_states=m, method=mdl.method, field="tag", iterations=its,
                       backoff_weight=mdl.backoff_weight_, random_state=args.seed).fit(train)
            fit = time.perf_counter() - t0
            lp = full.log_probability(test)
            rows.append({"system": label, "m": m, "fit": fit, "test": _ppl(full, test),
                         "alone": _alone(full, test),
                         "dev": mdl.perplexity(dev),
                         "settings": f"{its} iterations, w {mdl.backoff_weight_:g}",
                         "per_iteration": full.timings_["em"] / its,
                         "positive": int(np.isfinite(lp).sum())})
        print(f"m={m}: spectral dev {d_sp:.3f} (ridge {ridge:g}, w {w_sp:g}); EM best dev "
              f"{em_best:.3f} at iteration {em_at}/{args.em_iterations}; spectral-init EM "
              f"reaches it at iteration {sem_reach} (its best {sem.dev_perplexity_.min():.3f} "
              f"at {int(np.argmin(sem.dev_perplexity_))}); within 1% of EM's best: EM at "
              f"iteration {em_1}, spectral-init EM at {sem_1}", flush=True)
    print("\n| system | m | settings (chosen on dev) | fit (s) | dev ppl | test ppl "
          "| test ppl, model alone (w 0.001) | test sequences with p > 0 "
          "| per EM iteration (s) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        pos = f"{r['positive']} / {len(test)}" if "positive" in r else f"{len(test)} / {len(test)}"
        per = f"{r['per_iteration']:.3f}" if "per_iteration" in r else "-"
        alone = f"{r['alone']:.3f}" if "alone" in r else "-"
        print(f"| {r['system']} | {r['m']} | {r.get('settings', '-')} | {r['fit']:.2f} | "
              f"{r['dev']:.3f} | {r['test']:.3f} | {alone} | {pos} | {per} |")
    for r in rows:
        if "raw_nonpositive" in r:
            print(f"spectral m={r['m']}: raw estimate p(x) <= 0 for {r['raw_nonpositive']} of "
                  f"{len(test)} test sequences; state resets {r['resets']}")
    RESULTS["tags"] = {"rows": rows, "curves": curves}


# ---------------------------------------------------------------------------- hmmlearn
def hmmlearn_rows(args):
    try:
        from hmmlearn.hmm import CategoricalHMM
    except ImportError:
        print("\nhmmlearn is not installed: its rows are skipped (pip install hmmlearn)")
        return
    train, _, _, test = _tag_data()
    syms = sorted({t for s in train for t in s})
    index = {t: i for i, t in enumerate(syms)}
    X = np.array([[index[t]] for s in train for t in s])
    lengths = [len(s) for s in train]
    Xt = np.array([[index[t]] for s in test for t in s])
    lt = [len(s) for s in test]
    print(f"\n## hmmlearn CategoricalHMM beside our Baum-Welch (tags; paired timings)\n")
    print("| m | hmmlearn fit (s) | hmmlearn iterations | hmmlearn per iteration (s) | "
          "ours per iteration (s) | speed-up | hmmlearn test ppl (no end event) |")
    print("|---|---|---|---|---|---|---|")
    rows = []
    for m in args.hmmlearn_states:
        ours = HMM(n_states=m, method="em", field="tag", iterations=10,
                   random_state=args.seed).fit(train)
        ours_it = ours.timings_["em"] / 10
        model = CategoricalHMM(n_components=m, n_iter=args.em_iterations, tol=-np.inf,
                               random_state=args.seed)
        t0 = time.perf_counter()
        model.fit(X, lengths)
        fit = time.perf_counter() - t0
        its = model.monitor_.iter
        ppl = math.exp(-model.score(Xt, lt) / len(Xt))
        rows.append({"m": m, "fit": fit, "iterations": its, "per_iteration": fit / its,
                     "ours_per_iteration": ours_it, "test": ppl})
        print(f"| {m} | {fit:.1f} | {its} | {fit / its:.3f} | {ours_it:.4f} | "
              f"{fit / its / ours_it:.0f}x | {ppl:.2f} |", flush=True)
    RESULTS["hmmlearn"] = rows


# ---------------------------------------------------------------------------- Brown words
def brown(args):
    from fastspectral.lm import KneserNeyBigramLM, LatentBigramLM

    path = os.path.join(DATA, "brown", "brown-tagged.txt")
    train = read_sequences(path, max_tokens=800000)
    n_train = sum(map(len, train))
    dev = read_sequences(path, skip_tokens=n_train, max_tokens=100000)
    n_dev = sum(map(len, dev))
    test = read_sequences(path, skip_tokens=n_train + n_dev, max_tokens=200000)
    print(f"\n## Brown words: train {n_train} tokens / {len(train)} sentences, dev {n_dev} / "
          f"{len(dev)}, test {sum(map(len, test))} / {len(test)}\n")
    rows = []
    t0 = time.perf_counter()
    kn = KneserNeyBigramLM().fit(train)
    rows.append({"system": "Kneser-Ney bigram", "m": "-", "fit": time.perf_counter() - t0,
                 "dev": kn.perplexity(dev), "test": kn.perplexity(test), "settings": "-"})
    print(f"KN: dev {rows[-1]['dev']:.1f} test {rows[-1]['test']:.1f}", flush=True)
    common = dict(min_count=2, lowercase=True)
    for m in args.brown_states:
        for method, iters in (("pivot-em", 20), ("em", 100)):
            t0 = time.perf_counter()
            lm = LatentBigramLM(m, method, iterations=iters, random_state=args.seed)
            lm.fit(train, dev=dev)
            rows.append({"system": f"Saul-Pereira {method}", "m": m,
                         "fit": time.perf_counter() - t0,
                         "dev": float(lm.dev_perplexity_[lm.best_iteration_]),
                         "test": lm.perplexity(test),
                         "settings": f"{lm.best_iteration_} / {iters} iterations"})
            print(rows[-1], flush=True)
        best = None
        for cap in args.brown_caps:
            for ridge in (1.0, 10.0):
                t0 = time.perf_counter()
                sp = HMM(n_states=m, method="spectral", ridge=ridge, max_vocab=cap,
                         **common).fit(train, dev=dev)
                fit = time.perf_counter() - t0
                d = sp.perplexity(dev)
                print(f"spectral m={m} cap {cap} ridge {ridge}: dev {d:.1f} "
                      f"(w {sp.backoff_weight_}, fit {fit:.1f}s)", flush=True)
                if best is None or d < best[0]:
                    best = (d, cap, ridge, sp, fit)
        d, cap, ridge, sp, fit = best
        raw, sign = sp.raw_log_probability(test)
        rows.append({"system": "spectral HMM", "m": m, "fit": fit, "dev": d,
                     "test": sp.perplexity(test), "raw_nonpositive": int((sign <= 0).sum()),
                     "alone": _alone(sp, test),
                     "settings": f"max_vocab {cap}, ridge {ridge:g}, w {sp.backoff_weight_:g}"})
        print(rows[-1], flush=True)
        for method, iters in (("em", args.brown_em_iterations),
                              ("spectral-em", args.brown_em_iterations)):
            t0 = time.perf_counter()
            em = HMM(n_states=m, method=method, iterations=iters, max_vocab=cap,
                     random_state=args.seed, **common).fit(train, dev=dev)
            fit = time.perf_counter() - t0
            rows.append({"system": f"{method} HMM", "m": m, "fit": fit,
                         "dev": em.perplexity(dev), "test": em.perplexity(test),
                         "alone": _alone(em, test),
                         "settings": f"max_vocab {cap}, {em.best_iteration_} / {iters} "
                                     f"iterations, w {em.backoff_weight_:g}",
                         "curve": em.dev_perplexity_.tolist(),
                         "per_iteration": em.timings_["em"] / max(iters, 1)})
            print({k: v for k, v in rows[-1].items() if k != "curve"}, flush=True)
    print("\n| system | m | settings (chosen on dev) | fit (s) | dev ppl | test ppl "
          "| test ppl, model alone (w 0.001) |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        alone = f"{r['alone']:.1f}" if "alone" in r else "-"
        print(f"| {r['system']} | {r['m']} | {r['settings']} | {r['fit']:.1f} | {r['dev']:.1f} "
              f"| {r['test']:.1f} | {alone} |")
    for r in rows:
        if "raw_nonpositive" in r:
            print(f"spectral m={r['m']}: raw estimate p(x) <= 0 for {r['raw_nonpositive']} of "
                  f"{len(test)} test sentences")
    RESULTS["brown"] = rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--convergence", action="store_true")
    ap.add_argument("--tags", action="store_true")
    ap.add_argument("--hmmlearn", action="store_true")
    ap.add_argument("--brown", action="store_true")
    ap.add_argument("--states", type=int, nargs="+", default=[10, 20, 40])
    ap.add_argument("--hmmlearn-states", type=int, nargs="+", default=[10, 20, 40])
    ap.add_argument("--brown-states", type=int, nargs="+", default=[16, 32])
    ap.add_argument("--brown-caps", type=int, nargs="+", default=[1000, 3000])
    ap.add_argument("--brown-em-iterations", type=int, default=30)
    ap.add_argument("--em-iterations", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=None, help="write the results here")
    args = ap.parse_args(argv)
    if not (args.convergence or args.tags or args.hmmlearn or args.brown):
        args.convergence = args.tags = True
    if args.convergence:
        convergence(args)
    if args.tags:
        tags(args)
    if args.brown:
        brown(args)
    if args.hmmlearn:
        hmmlearn_rows(args)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(RESULTS, fh, indent=1, default=float)


if __name__ == "__main__":
    main()
