"""Sequence HMMs (fastspectral.hmm): spectral (HKZ 2009), EM and spectral-initialised EM, beside
hmmlearn's CategoricalHMM, Kneser-Ney and the Saul-Pereira latent bigram models.

Sections (run any subset)::

    python benchmarks/bench_hmm.py --convergence         # spectral p(x) error vs sample size
    python benchmarks/bench_hmm.py --tags                # WSJ POS-tag sequences, m = 10 20 40
    python benchmarks/bench_hmm.py --brown               # Brown words, 800k training tokens
    python benchmarks/bench_hmm.py --hmmlearn            # hmmlearn CategoricalHMM rows (slow)
    python benchmarks/bench_hmm.py --speed               # paired spectral / EM fit times
                                                         # (string and encoded input)
    python benchmarks/bench_hmm.py --stages              # the spectral fit's stage times
    python benchmarks/bench_hmm.py --init                # spectral-init EM vs random starts

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

``--speed``: paired fit times on the tag sequences (settings chosen on the development split,
then spectral fits and EM to convergence alternating in one process, CPU and wall seconds),
for two input forms: the token strings, and the sequences encoded once (``HMM.encode``: ids
bound to their symbols; the integer input hmmlearn's ``fit(X, lengths)`` takes), which give
the same models (checked).

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


def _timed(make, train):
    """``(model, wall s, CPU s)`` of ``make().fit(train)`` (CPU: this process, all threads)."""
    import resource

    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    model = make().fit(train)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    return model, wall, (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)


def tags(args):
    from fastspectral.lm.kneser_ney import KneserNeyBigramLM

    train, tr90, dev, test = _tag_data()
    n_test = sum(len(s) + 1 for s in test)
    print(f"\n## WSJ POS tags: train {len(train)} sequences ({len(tr90)} + dev {len(dev)}), "
          f"test {len(test)} sequences, {n_test} events (tokens + ends); EM protocol: "
          f"tol {args.tol:g} nats/event, at most {args.max_em_iterations} iterations; "
          f"load average {os.getloadavg()}\n")
    HMM(n_states=4, method="spectral-em", iterations=1).fit(tr90[:300], dev=dev[:50])  # warm-up
    HMM(n_states=4, method="em", iterations=1).fit(tr90[:300])
    t0 = time.perf_counter()
    kn = KneserNeyBigramLM(min_count=1, lowercase=False).fit(train)
    kn_time = time.perf_counter() - t0
    rows = [{"system": "fastspectral lm Kneser-Ney bigram", "m": "-", "fit": kn_time,
             "test": kn.perplexity(test), "dev": KneserNeyBigramLM(min_count=1, lowercase=False)
             .fit(tr90).perplexity(dev)}]
    curves, speed = {}, []
    for m in args.states:
        # --- selection on the development split (never on the test set)
        sp = HMM(n_states=m, method="spectral", field="tag", ridge=None).fit(tr90, dev=dev)
        ridge, mix, w_sp = sp.ridge_, sp.state_mixing_, sp.backoff_weight_
        em_runs = []
        for seed in args.em_seeds:
            em_runs.append(HMM(n_states=m, method="em", field="tag",
                               iterations=args.max_em_iterations, tol=args.tol,
                               random_state=seed).fit(tr90, dev=dev))
        em = em_runs[0]
        sem = HMM(n_states=m, method="spectral-em", field="tag",
                  iterations=args.em_iterations, random_state=args.seed).fit(tr90, dev=dev)
        cm = {"spectral-em": sem.dev_perplexity_.tolist(), "em": []}
        for seed, r in zip(args.em_seeds, em_runs):
            final = float(r.dev_perplexity_[-1])
            cm["em"].append({"seed": seed, "curve": r.dev_perplexity_.tolist(),
                             "iterations": int(r.iterations_run_), "final": final,
                             "spectral_em_reaches_at": _first_at_or_below(
                                 sem.dev_perplexity_, final)})
        curves[m] = cm
        # --- refit on all training sequences with the chosen settings; paired timings
        mk_sp = lambda: HMM(n_states=m, method="spectral", field="tag", ridge=ridge,  # noqa
                            state_mixing=mix, backoff_weight=w_sp)
        mk_em = lambda: HMM(n_states=m, method="em", field="tag",  # noqa: E731
                            iterations=args.max_em_iterations, tol=args.tol,
                            backoff_weight=em.backoff_weight_, random_state=args.seed)
        sp_t = []
        for _ in range(3):
            full_sp, wall, cpu = _timed(mk_sp, train)
            sp_t.append((wall, cpu))
        full_em, em_wall, em_cpu = _timed(mk_em, train)
        for _ in range(2):
            _, wall, cpu = _timed(mk_sp, train)
            sp_t.append((wall, cpu))
        sp_wall = float(np.median([t[0] for t in sp_t]))
        sp_cpu = float(np.median([t[1] for t in sp_t]))
        speed.append({"m": m, "spectral_wall": sp_wall, "spectral_cpu": sp_cpu,
                      "em_wall": em_wall, "em_cpu": em_cpu,
                      "em_iterations": int(full_em.iterations_run_),
                      "load": os.getloadavg()[0]})
        raw, sign = full_sp.raw_log_probability(test)
        lp = full_sp.log_probability(test)
        rows.append({"system": "spectral HMM, alone (w = 0)", "m": m, "fit": sp_wall,
                     "test": _at(full_sp, test, 0.0), "dev": _at(sp, dev, 0.0),
                     "settings": f"ridge {ridge:g}, mixing {mix:g}",
                     "raw_nonpositive": int((sign <= 0).sum()),
                     "positive": int(np.isfinite(lp).sum())})
        rows.append({"system": "spectral HMM + KN", "m": m, "fit": sp_wall,
                     "test": _ppl(full_sp, test), "dev": _ppl(sp, dev),
                     "settings": f"ridge {ridge:g}, mixing {mix:g}, w {w_sp:g}",
                     "positive": int(np.isfinite(lp).sum())})
        lp = full_em.log_probability(test)
        its = int(full_em.iterations_run_)
        rows.append({"system": "EM HMM, alone (w = 0)", "m": m, "fit": em_wall,
                     "test": _at(full_em, test, 0.0), "dev": _at(em, dev, 0.0),
                     "settings": f"{its} iterations (tol)",
                     "per_iteration": full_em.timings_["em"] / max(its, 1),
                     "positive": int((full_em.raw_log_probability(test)[1] > 0).sum())})
        rows.append({"system": "EM HMM + KN", "m": m, "fit": em_wall,
                     "test": _ppl(full_em, test), "dev": _ppl(em, dev),
                     "settings": f"{its} iterations (tol), w {em.backoff_weight_:g}",
                     "positive": int(np.isfinite(lp).sum())})
        print(f"m={m}: spectral ridge {ridge:g} mixing {mix:g} w {w_sp:g}: dev alone "
              f"{_at(sp, dev, 0.0):.3f}; EM (seed {args.seed}) {em.iterations_run_} "
              f"iterations, dev alone {_at(em, dev, 0.0):.3f}; fit wall/CPU spectral "
              f"{sp_wall:.3f}/{sp_cpu:.3f} s, EM {em_wall:.2f}/{em_cpu:.2f} s "
              f"({its} iterations): {em_wall / sp_wall:.0f}x wall, {em_cpu / sp_cpu:.0f}x CPU; "
              f"load {os.getloadavg()[0]:.1f}", flush=True)
        for r in cm["em"]:
            print(f"   EM seed {r['seed']}: converged at {r['iterations']} iterations, final dev "
                  f"{r['final']:.3f} (w 0.2); spectral-init EM reaches it at iteration "
                  f"{r['spectral_em_reaches_at']} (its dev: " +
                  " ".join(f"{i}:{sem.dev_perplexity_[i]:.3f}" for i in (0, 1, 5, 10, 20, 50)
                           if i < len(sem.dev_perplexity_)) + ")", flush=True)
    print("\n| system | m | settings (chosen on dev) | fit (s) | dev ppl | test ppl "
          "| test sequences with p > 0 | per EM iteration (s) |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        pos = f"{r['positive']} / {len(test)}" if "positive" in r else f"{len(test)} / {len(test)}"
        per = f"{r['per_iteration']:.3f}" if "per_iteration" in r else "-"
        print(f"| {r['system']} | {r['m']} | {r.get('settings', '-')} | {r['fit']:.3f} | "
              f"{r['dev']:.3f} | {r['test']:.3f} | {pos} | {per} |")
    print("\n| m | spectral fit wall / CPU (s) | EM fit wall / CPU (s) | EM iterations | "
          "ratio wall | ratio CPU | load |")
    print("|---|---|---|---|---|---|---|")
    for r in speed:
        print(f"| {r['m']} | {r['spectral_wall']:.3f} / {r['spectral_cpu']:.3f} | "
              f"{r['em_wall']:.2f} / {r['em_cpu']:.2f} | {r['em_iterations']} | "
              f"{r['em_wall'] / r['spectral_wall']:.0f}x | {r['em_cpu'] / r['spectral_cpu']:.0f}x"
              f" | {r['load']:.1f} |")
    for r in rows:
        if "raw_nonpositive" in r:
            print(f"spectral m={r['m']}: raw estimate p(x) <= 0 for {r['raw_nonpositive']} of "
                  f"{len(test)} test sequences")
    RESULTS["tags"] = {"rows": rows, "curves": curves, "speed": speed}


def speed(args):
    """Paired fit times: spectral (settings chosen on the development split) and EM to
    convergence (random start ``--seed``, tol, at most ``--max-em-iterations``), on all training
    sequences, alternating spectral / EM ``--pairs`` times in one process; CPU seconds of the
    process (all threads) and wall seconds.  Two input forms, both timed in every pair: the
    token strings (every ``fit`` hashes them) and the same sequences encoded once
    (``HMM.encode``: integer ids bound to their symbols, the input form of hmmlearn's
    ``fit(X, lengths)``), alternating string / encoded fits (spectral) and their order (EM,
    every other pair).  The models of the two forms are checked to be the same (test
    perplexities equal).  The first spectral fit of the process (Numba kernels loaded from the
    cache) is reported apart; the warm-up fits exclude imports and JIT compilation from the
    timed fits."""
    train, tr90, dev, test = _tag_data()
    print(f"\n## paired fit times (WSJ tags, {len(train)} sequences); load average "
          f"{os.getloadavg()}\n", flush=True)
    mk0 = lambda: HMM(n_states=10, method="spectral", field="tag", ridge=1.0,  # noqa: E731
                      state_mixing=0.3, backoff_weight=0.1)
    _, first_wall, first_cpu = _timed(mk0, train)
    print(f"first spectral fit of the process (kernels loaded from the Numba cache): "
          f"{first_wall:.3f} s wall, {first_cpu:.3f} CPU-s", flush=True)
    HMM(n_states=4, method="em", iterations=1).fit(tr90[:300])          # warm-up
    t0 = time.process_time()
    enc = HMM(field="tag").encode(train)
    enc_cpu = time.process_time() - t0
    mk0().fit(enc)                                                        # warm-up
    print(f"encoding the {sum(map(len, train))} training tokens once: {enc_cpu * 1e3:.1f} ms CPU",
          flush=True)
    forms = {"strings": train, "encoded": enc}
    out = []
    for m in args.states:
        sel = HMM(n_states=m, method="spectral", field="tag", ridge=None).fit(tr90, dev=dev)
        mk_sp = lambda: HMM(n_states=m, method="spectral", field="tag",  # noqa: E731
                            ridge=sel.ridge_, state_mixing=sel.state_mixing_,
                            backoff_weight=sel.backoff_weight_)
        mk_em = lambda: HMM(n_states=m, method="em", field="tag",  # noqa: E731
                            iterations=args.max_em_iterations, tol=args.tol,
                            backoff_weight=0.2, random_state=args.seed)
        sp_t = {f: [] for f in forms}
        em_t = {f: [] for f in forms}
        models, loads = {}, []
        for pair in range(args.pairs):
            for _ in range(args.repeats):
                for f, x in forms.items():
                    models[("sp", f)], wall, cpu = _timed(mk_sp, x)
                    sp_t[f].append((wall, cpu))
            for f in (list(forms) if pair % 2 == 0 else list(forms)[::-1]):
                models[("em", f)], wall, cpu = _timed(mk_em, forms[f])
                em_t[f].append((wall, cpu, int(models[("em", f)].iterations_run_)))
            loads.append(os.getloadavg()[0])
        ppl = {k: v.perplexity(test) for k, v in models.items()}
        same = ppl[("sp", "strings")] == ppl[("sp", "encoded")] and \
            ppl[("em", "strings")] == ppl[("em", "encoded")]
        r = {"m": m, "ridge": sel.ridge_, "mixing": sel.state_mixing_,
             "load": float(np.mean(loads)), "same_model": bool(same),
             "test_ppl_spectral": ppl[("sp", "strings")], "test_ppl_em": ppl[("em", "strings")],
             "em_iterations": em_t["strings"][0][2]}
        for f in forms:
            sfx = "" if f == "strings" else "_encoded"
            r["spectral_wall" + sfx] = float(np.median([t[0] for t in sp_t[f]]))
            r["spectral_cpu" + sfx] = float(np.median([t[1] for t in sp_t[f]]))
            r["spectral_cpu_min" + sfx] = float(min(t[1] for t in sp_t[f]))
            r["em_wall" + sfx] = float(np.median([t[0] for t in em_t[f]]))
            r["em_cpu" + sfx] = float(np.median([t[1] for t in em_t[f]]))
            print(f"m={m} {f}: spectral (ridge {sel.ridge_:g}, mixing {sel.state_mixing_:g}) "
                  f"median of {len(sp_t[f])}: {r['spectral_wall' + sfx] * 1e3:.1f} ms wall, "
                  f"{r['spectral_cpu' + sfx] * 1e3:.1f} ms CPU (min "
                  f"{r['spectral_cpu_min' + sfx] * 1e3:.1f}); EM ({em_t[f][0][2]} iterations) "
                  f"median of {len(em_t[f])}: {r['em_wall' + sfx]:.2f} s wall, "
                  f"{r['em_cpu' + sfx]:.2f} CPU-s; ratio "
                  f"{r['em_wall' + sfx] / r['spectral_wall' + sfx]:.0f}x wall, "
                  f"{r['em_cpu' + sfx] / r['spectral_cpu' + sfx]:.0f}x CPU", flush=True)
        print(f"m={m}: load {r['load']:.1f}; test perplexity spectral "
              f"{r['test_ppl_spectral']:.4f}, EM {r['test_ppl_em']:.4f}; the same models from "
              f"both input forms: {'yes' if same else 'NO'}", flush=True)
        out.append(r)
    print("\n| m | input | spectral fit wall / CPU (ms), median (min) | EM to convergence wall / "
          "CPU (s) | EM iterations | ratio wall | ratio CPU | load average |")
    print("|---|---|---|---|---|---|---|---|")
    for r in out:
        for f in forms:
            sfx = "" if f == "strings" else "_encoded"
            print(f"| {r['m']} | {f} | {r['spectral_wall' + sfx] * 1e3:.1f} / "
                  f"{r['spectral_cpu' + sfx] * 1e3:.1f} ({r['spectral_cpu_min' + sfx] * 1e3:.1f}) "
                  f"| {r['em_wall' + sfx]:.2f} / {r['em_cpu' + sfx]:.2f} | {r['em_iterations']} | "
                  f"{r['em_wall' + sfx] / r['spectral_wall' + sfx]:.0f}x | "
                  f"{r['em_cpu' + sfx] / r['spectral_cpu' + sfx]:.0f}x | {r['load']:.1f} |")
    RESULTS["speed"] = {"first_wall": first_wall, "first_cpu": first_cpu,
                        "encode_cpu": enc_cpu, "rows": out}


def stages(args):
    """CPU time of the spectral fit's stages on the tag sequences (``time.process_time``,
    medians of ``--stage-repeats`` calls each, one process), at the settings the development
    split chose at m = 10 (ridge 5, mixing 0.5) and every m of ``--states``: the whole ``fit``
    from the strings and from an encoding, and the stages it runs."""
    from fastspectral._blas import blas_single_thread
    from fastspectral.hmm.data import read_training
    from fastspectral.hmm.model import _training_input

    train, _, _, _ = _tag_data()
    enc = HMM(field="tag").encode(train)
    R = args.stage_repeats

    def med(f):
        f()
        ts = []
        for _ in range(R):
            t0 = time.process_time()
            f()
            ts.append(time.process_time() - t0)
        return float(np.median(ts)) * 1e3

    print(f"\n## spectral fit stages (WSJ tags; CPU ms, medians of {R}); load average "
          f"{os.getloadavg()}\n")
    rows = []
    for m in args.states:
        mk = lambda: HMM(n_states=m, method="spectral", field="tag", ridge=5.0,  # noqa: E731
                         state_mixing=0.5, backoff_weight=0.8)
        _, table, full, counts = _training_input(enc, 1, False)
        model = mk()
        model.symbols_ = table
        model._set_rare_weights(full, counts)
        M = model.n_latent_symbols_
        H = S.dense_hankel(full, M, 512)

        def proj():
            with blas_single_thread():
                return S._projections(None, m, 5.0, 1e-10, H.n_seq, 0, csr=H.csr,
                                      shape=H.counts.shape)
        U, X, sv = proj()
        A = S._operators(H, U, X)
        r = {"m": m,
             "fit, strings": med(lambda: mk().fit(train)),
             "fit, encoded": med(lambda: mk().fit(enc)),
             "hashing the strings": med(lambda: read_training(train, 1, False)),
             "checking an encoding + its table": med(lambda: _training_input(enc, 1, False)),
             "Hankel counting + CSR": med(lambda: S.dense_hankel(full, M, 512)),
             "smoother": med(lambda: model._fit_smoother(full, counts, H.pairs)),
             "randomized SVD + pseudo-inverse": med(proj),
             "operators": med(lambda: S._operators(H, U, X)),
             "finish_operators": med(lambda: S.finish_operators(H.blocks(), H.prefix_counts(),
                                                                M, U, X, sv, A))}
        rows.append(r)
    keys = [k for k in rows[0] if k != "m"]
    print("| stage | " + " | ".join(f"m = {r['m']}" for r in rows) + " |")
    print("|---|" + "---|" * len(rows))
    for k in keys:
        print(f"| {k} | " + " | ".join(f"{r[k]:.2f}" for r in rows) + " |")
    RESULTS["stages"] = rows


def init_curves(args):
    """Spectral-initialised EM against EM from random starts (the aim "reaches EM's
    perplexity in <= 1/5 of its iterations").  Per m and random seed: EM to convergence (tol,
    at most --max-em-iterations) and its perplexity after every iteration; the spectral start
    (each of --inits) run --init-iterations iterations; "reaches": the first iteration whose
    perplexity is at most the seed's converged one.  Two protocols: development (train on the
    first 90%, perplexity of the last 10%: where the start's settings were chosen) and test
    (train on all training sequences, perplexity of the test set recorded after every
    iteration; nothing is chosen on it: EM stops by the training tolerance).  Interpolation
    weight fixed at 0.2 (w of the EM methods when none is chosen)."""
    train, tr90, dev, test = _tag_data()
    print(f"\n## spectral-initialised EM vs EM from random starts (WSJ tags); load average "
          f"{os.getloadavg()}\n", flush=True)
    out = []
    for split, tr, ev in (("dev", tr90, dev), ("test", train, test)):
        if split not in args.init_splits:
            continue
        for m in args.states:
            em = {}
            for seed in args.em_seeds:
                r = HMM(n_states=m, method="em", field="tag", iterations=args.max_em_iterations,
                        tol=args.tol, backoff_weight=0.2, random_state=seed).fit(tr, dev=ev)
                em[seed] = (int(r.iterations_run_), float(r.dev_perplexity_[-1]),
                            r.dev_perplexity_.tolist())
            for init in args.inits:
                sem = HMM(n_states=m, method="spectral-em", field="tag",
                          iterations=args.init_iterations, backoff_weight=0.2,
                          random_state=args.seed, spectral_init=init).fit(tr, dev=ev)
                c = sem.dev_perplexity_
                row = {"split": split, "m": m, "init": init, "curve": c.tolist(),
                       "init_time": sem.timings_.get("spectral_init"), "seeds": []}
                for seed, (its, final, curve) in em.items():
                    hit = _first_at_or_below(c, final)
                    row["seeds"].append({"seed": seed, "iterations": its, "final": final,
                                         "curve": curve, "reaches_at": hit,
                                         "met": hit is not None and hit <= its / 5})
                out.append(row)
                print(f"{split} m={m} {init}: start " + " / ".join(
                    f"{c[i]:.3f}" for i in (0, 1, 5, 10, 20, 30) if i < len(c)) + " | " +
                    "; ".join(f"seed {q['seed']}: {q['iterations']} its -> {q['final']:.3f}, "
                              f"reached at {q['reaches_at']} "
                              f"({'within' if q['met'] else 'beyond'} 1/5 of EM's iterations)"
                              for q in row["seeds"]), flush=True)
    print("\n| split | m | start | EM seed: converged at iteration, final ppl | "
          "spectral-init EM ppl at 0 / 1 / 5 / 10 / 20 | reaches it at (limit = 1/5) | met |")
    print("|---|---|---|---|---|---|---|")
    for r in out:
        c = r["curve"]
        print(f"| {r['split']} | {r['m']} | {r['init']} | " +
              "; ".join(f"{q['seed']}: {q['iterations']}, {q['final']:.3f}" for q in r["seeds"])
              + " | " + " / ".join(f"{c[i]:.3f}" for i in (0, 1, 5, 10, 20) if i < len(c)) +
              " | " + " / ".join(f"{q['reaches_at'] if q['reaches_at'] is not None else 'never'}"
                                 f" ({q['iterations'] // 5})" for q in r["seeds"]) + " | " +
              f"{sum(q['met'] for q in r['seeds'])} of {len(r['seeds'])} |")
    RESULTS["init"] = out


def _at(model, seqs, w) -> float:
    """Perplexity with the interpolation weight set to ``w`` (0: the hidden-state model
    alone)."""
    old = model.backoff_weight_
    model.backoff_weight_ = w
    try:
        return model.perplexity(seqs)
    finally:
        model.backoff_weight_ = old


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
    print("\n## hmmlearn CategoricalHMM beside our Baum-Welch (tags; paired timings)\n")
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
    ap.add_argument("--speed", action="store_true",
                    help="paired spectral / EM-to-convergence fit times only")
    ap.add_argument("--stages", action="store_true",
                    help="CPU time of the spectral fit's stages (strings and encoded input)")
    ap.add_argument("--stage-repeats", type=int, default=100,
                    help="--stages: calls per stage (median)")
    ap.add_argument("--init", action="store_true",
                    help="spectral-initialised EM against EM from random starts (dev and test)")
    ap.add_argument("--inits", nargs="+", default=["classes", "anchors", "moments", "split"],
                    help="--init: the spectral starts compared")
    ap.add_argument("--init-splits", nargs="+", default=["dev", "test"])
    ap.add_argument("--init-iterations", type=int, default=30,
                    help="--init: iterations of the spectral-initialised EM curves")
    ap.add_argument("--pairs", type=int, default=2, help="--speed: EM fits per m")
    ap.add_argument("--states", type=int, nargs="+", default=[10, 20, 40])
    ap.add_argument("--hmmlearn-states", type=int, nargs="+", default=[10, 20, 40])
    ap.add_argument("--brown-states", type=int, nargs="+", default=[16, 32])
    ap.add_argument("--brown-caps", type=int, nargs="+", default=[1000, 3000])
    ap.add_argument("--brown-em-iterations", type=int, default=30)
    ap.add_argument("--em-iterations", type=int, default=100,
                    help="iterations of the spectral-initialised EM curve (and hmmlearn)")
    ap.add_argument("--max-em-iterations", type=int, default=500,
                    help="EM to convergence: at most this many iterations")
    ap.add_argument("--tol", type=float, default=1e-4,
                    help="EM convergence: stop when an iteration gains < tol nats per event")
    ap.add_argument("--em-seeds", type=int, nargs="+", default=[0, 1, 2],
                    help="random starts of EM (the first also gives the timed refit)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=None, help="write the results here")
    args = ap.parse_args(argv)
    if not (args.convergence or args.tags or args.hmmlearn or args.brown or args.speed or
            args.init or args.stages):
        args.convergence = args.tags = True
    for flag, part in (("convergence", convergence), ("tags", tags), ("speed", speed),
                       ("stages", stages),
                       ("init", init_curves), ("brown", brown), ("hmmlearn", hmmlearn_rows)):
        if getattr(args, flag):
            part(args)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(RESULTS, fh, indent=1, default=float)


if __name__ == "__main__":
    main()
