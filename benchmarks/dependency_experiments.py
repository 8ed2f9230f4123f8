"""Held-out UAS of the SHAG dependency parsers (Luque et al. 2012 replication).

Datasets (``--datasets``, comma-separated):

* ``wsj``: /work/shared/data/dep/wsj-sample.dp (Malt-TAB), first 80 % train, last 20 % test;
* ``esp``: /work/shared/data/conll2007/esp.train -> esp.test (CoNLL-X);
* ``ewt``: /work/shared/data/ud/en_ewt-ud-dev.conllu, 5-fold cross-validation (contiguous
  folds; UAS micro-averaged over all test tokens of the five folds).

Models: DET, DET+F, SPECTRAL with n = 2..14 states, EM with n states after 5/10/25/100
iterations (one training run, snapshots), LEX / LEX+F / LEX+FCP alone and combined with
SPECTRAL.  The SPECTRAL headline row uses the number of states n* chosen on a development
split (the last 10 % of the training part; for ``ewt`` on fold 1's training part); EM is run
with n* and the other ``--em-states``.  UAS excludes punctuation
(``fastspectral.eval.attachment``).

The headline training-time comparison (``paired``) is measured on each training set in one
process, interleaved, best of 5 for both learners on the same encoded sequences: the spectral
learner with n* states against EM with the (states, iterations) that is best on the
development split (EM's time includes its sequence merging and initialisation).

Other times: ``fit`` is the wall time of ``SHAGParser.fit`` (data encoding included); ``learn`` is
the learner alone on already-encoded sequences (spectral: statistics + SVDs; EM: sequence
merging + initialisation + iterations up to the snapshot).  Parsing speed is sentences/s of
``parse`` (inside-outside + MBR Eisner) with ``--jobs`` threads.

    PYTHONPATH=. python benchmarks/dependency_experiments.py --out results.json
    PYTHONPATH=. python benchmarks/dependency_experiments.py \
        --paired-only wsj=8,14,25 esp=6,14,25 ewt=3,14,10 [--reps 5]

The second form re-measures only the paired training times, for the configurations a full run
selected on the development splits (printed in its log and summary).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from fastspectral.dependency.data import modifier_sequences  # noqa: E402
from fastspectral.dependency.em import fit_em  # noqa: E402
from fastspectral.dependency.model import BACKOFF_WEIGHT, RIDGE, SHAGParser  # noqa: E402
from fastspectral.dependency.spectral import learn_spectral  # noqa: E402
from fastspectral.eval.attachment import attachment_scores  # noqa: E402
from fastspectral.trees.conll import read_conllu, read_conllx, read_malttab  # noqa: E402

DATA = "/work/shared/data"
TAGSET = "auto"          # --tagset: the tag column of every parser


def _parser(**kw):
    """A SHAGParser reading the ``--tagset`` tag column."""
    return SHAGParser(tag_column=TAGSET, **kw)


def load_splits(name):
    """List of (train, test) pairs of a dataset."""
    if name == "wsj":
        s = list(read_malttab(f"{DATA}/dep/wsj-sample.dp"))
        cut = int(0.8 * len(s))
        return [(s[:cut], s[cut:])]
    if name == "esp":
        return [(list(read_conllx(f"{DATA}/conll2007/esp.train")),
                 list(read_conllx(f"{DATA}/conll2007/esp.test")))]
    if name == "ewt":
        s = list(read_conllu(f"{DATA}/ud/en_ewt-ud-dev.conllu"))
        k = 5
        bounds = [round(i * len(s) / k) for i in range(k + 1)]
        return [(s[:bounds[i]] + s[bounds[i + 1]:], s[bounds[i]:bounds[i + 1]]) for i in range(k)]
    raise ValueError(name)


class Scorer:
    """Accumulates predictions over folds and scores them together."""

    def __init__(self):
        self.gold, self.pred = [], []
        self.fit_s = 0.0
        self.learn_s = 0.0
        self.parse_s = 0.0
        self.n_parsed = 0
        self.extra = {}

    def add(self, gold, pred, fit_s=0.0, parse_s=0.0, learn_s=0.0):
        """Add one fold's gold and predicted sentences and its times."""
        self.gold.extend(gold)
        self.pred.extend(pred)
        self.fit_s += fit_s
        self.learn_s += learn_s
        self.parse_s += parse_s
        self.n_parsed += len(gold)

    def result(self):
        """UAS (punctuation excluded), summed times and parsing speed."""
        r = attachment_scores(self.gold, self.pred, punct="exclude")
        out = {"uas": r.uas, "fit_s": self.fit_s, "learn_s": self.learn_s,
               "parse_sent_per_s": self.n_parsed / self.parse_s if self.parse_s else None}
        out.update(self.extra)
        return out


def run_model(p, train, test, jobs, scorer, fit=True):
    """Fit ``p`` (optionally), parse ``test`` and record UAS inputs and times in ``scorer``."""
    t0 = time.perf_counter()
    if fit:
        p.fit(train)
    t1 = time.perf_counter()
    pred = p.parse(test, jobs=jobs)
    t2 = time.perf_counter()
    scorer.add(test, pred, t1 - t0, t2 - t1)
    return p


def dev_uas(kw, train, jobs):
    """UAS of a model trained on the first 90 % of ``train`` on the last 10 %."""
    cut = int(0.9 * len(train))
    p = _parser(**kw).fit(train[:cut])
    pred = p.parse(train[cut:], jobs=jobs)
    return attachment_scores(train[cut:], pred, punct="exclude").uas


def learner_time(p, train, n, reps=3):
    """Seconds of learn_spectral alone (best of ``reps``) on the encoded training data."""
    enc = p.encode(train)
    seqs = modifier_sequences(enc)
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        learn_spectral(enc, seqs, p._H, p._M, n, basis=p.basis, smoothing=p.backoff_weight,
                       ridge=p.ridge)
        best = min(best, time.perf_counter() - t)
    return best, enc, seqs


def em_dev_choice(train, em_ns, em_iters, jobs, smoothing):
    """(n, iterations) of the EM model with the best UAS on the development split (last 10 %
    of ``train``), and all the development UAS values."""
    cut = int(0.9 * len(train))
    p = _parser(method="em", n_states=2, iterations=0).fit(train[:cut])
    enc = p.encode(train[:cut])
    seqs = modifier_sequences(enc)
    dev = {}
    for n in em_ns:
        info = fit_em(enc, seqs, p._H, p._M, n, max(em_iters), seed=0, snapshots=em_iters,
                         smoothing=smoothing)
        for it in em_iters:
            p.op_ = info.snapshots[it]
            pred = p.parse(train[cut:], jobs=jobs)
            dev[(n, it)] = attachment_scores(train[cut:], pred, punct="exclude").uas
    return max(dev, key=lambda k: (dev[k], -k[0], -k[1])), dev


def paired_times(train, n_spec, n_em, it_em, reps=5, smoothing=0.0):
    """Best-of-``reps`` seconds of the spectral learner (``n_spec`` states) and of EM
    (``n_em`` states, ``it_em`` iterations, sequence merging and initialisation included), on
    the same encoded training data, interleaved in one process; both with the back-off
    interpolation ``smoothing`` (its DET+F counts included in both times)."""
    p = _parser(method="det").fit(train)          # symbol tables only
    enc = p.encode(train)
    seqs = modifier_sequences(enc)
    H, M = p._H, p._M
    ts, te = float("inf"), float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        learn_spectral(enc, seqs, H, M, n_spec, smoothing=smoothing, ridge=RIDGE)
        ts = min(ts, time.perf_counter() - t)
        t = time.perf_counter()
        fit_em(enc, seqs, H, M, n_em, it_em, seed=0, smoothing=smoothing)
        te = min(te, time.perf_counter() - t)
    return ts, te


def run_dataset(name, states, em_states, em_iters, jobs, log, smoothing):
    """All models on one dataset; returns ``{row label: result dict, "_meta": ...}``."""
    splits = load_splits(name)
    res = {}
    S = {}

    def sc(key):
        if key not in S:
            S[key] = Scorer()
        return S[key]

    # choose n* on a development split of the first training set
    sm = smoothing
    dev = {n: dev_uas(dict(method="spectral", n_states=n, backoff_weight=sm), splits[0][0], jobs)
           for n in states}
    n_star = max(dev, key=lambda n: (dev[n], -n))
    log(f"[{name}] dev UAS by n: " + ", ".join(f"{n}:{u:.2f}" for n, u in dev.items())
        + f" -> n* = {n_star}")
    dev0 = {n: dev_uas(dict(method="spectral", n_states=n, backoff_weight=0.0), splits[0][0], jobs)
            for n in states}
    n_star0 = max(dev0, key=lambda n: (dev0[n], -n))
    log(f"[{name}] unsmoothed: dev UAS by n: "
        + ", ".join(f"{n}:{u:.2f}" for n, u in dev0.items()) + f" -> n* = {n_star0}")
    dev00 = {n: dev_uas(dict(method="spectral", n_states=n, backoff_weight=0.0, ridge=0.0),
                        splits[0][0], jobs) for n in states}
    n_star00 = max(dev00, key=lambda n: (dev00[n], -n))
    log(f"[{name}] unsmoothed, no ridge: dev UAS by n: "
        + ", ".join(f"{n}:{u:.2f}" for n, u in dev00.items()) + f" -> n* = {n_star00}")
    dev1 = {n: dev_uas(dict(method="spectral", n_states=n, basis=1, backoff_weight=0.0, ridge=0.0),
                       splits[0][0], jobs)
            for n in states}
    n_star1 = max(dev1, key=lambda n: (dev1[n], -n))
    log(f"[{name}] basis 1 (paper): dev UAS by n: "
        + ", ".join(f"{n}:{u:.2f}" for n, u in dev1.items()) + f" -> n* = {n_star1}")
    em_ns = sorted(set(em_states) | {n_star})
    (em_n, em_it), em_dev = em_dev_choice(splits[0][0], em_ns, em_iters, jobs, sm)
    log(f"[{name}] EM dev UAS: " + ", ".join(f"{k}:{u:.2f}" for k, u in em_dev.items())
        + f" -> n = {em_n}, {em_it} iterations")
    (em0_n, em0_it), em0_dev = em_dev_choice(splits[0][0], em_ns, em_iters, jobs, 0.0)
    log(f"[{name}] unsmoothed EM dev UAS: "
        + ", ".join(f"{k}:{u:.2f}" for k, u in em0_dev.items())
        + f" -> n = {em0_n}, {em0_it} iterations")
    t_spec = t_em = t_spec0 = t_em0 = 0.0
    for fold, (train, test) in enumerate(splits):
        log(f"[{name}] fold {fold + 1}/{len(splits)}: {len(train)} train / {len(test)} test")
        run_model(_parser(method="det"), train, test, jobs, sc("DET"))
        run_model(_parser(method="det+f"), train, test, jobs, sc("DET+F"))
        run_model(_parser(method="spectral", n_states=n_star1, basis=1, backoff_weight=0.0,
                          ridge=0.0),
                  train, test, jobs, sc("SPECTRAL basis 1 (paper), unsmoothed, dev-selected n"))
        run_model(_parser(method="spectral", n_states=n_star00, backoff_weight=0.0, ridge=0.0),
                  train, test, jobs, sc("SPECTRAL no ridge, unsmoothed, dev-selected n"))
        run_model(_parser(method="spectral", n_states=n_star0, backoff_weight=0.0), train, test,
                  jobs, sc("SPECTRAL unsmoothed, dev-selected n"))
        run_model(_parser(method="em", n_states=em0_n, iterations=em0_it, backoff_weight=0.0),
                  train, test, jobs, sc("EM unsmoothed, dev-selected (n, it)"))
        ts, te = paired_times(train, n_star, em_n, em_it, smoothing=sm)
        t_spec += ts
        t_em += te
        ts, te = paired_times(train, n_star0, em0_n, em0_it, smoothing=0.0)
        t_spec0 += ts
        t_em0 += te
        for n in states:
            p = run_model(_parser(method="spectral", n_states=n, backoff_weight=sm), train, test,
                          jobs, sc(f"SPECTRAL n={n}"))
            lt, enc, seqs = learner_time(p, train, n)
            S[f"SPECTRAL n={n}"].learn_s += lt
        for n in em_ns:
            p = _parser(method="em", n_states=n, iterations=0).fit(train)
            enc = p.encode(train)
            seqs = modifier_sequences(enc)
            t0 = time.perf_counter()
            info = fit_em(enc, seqs, p._H, p._M, n, max(em_iters), seed=0,
                             snapshots=em_iters, smoothing=sm)
            total = time.perf_counter() - t0
            for it in em_iters:
                p.op_ = info.snapshots[it]
                s = sc(f"EM n={n} it={it}")
                t1 = time.perf_counter()
                pred = p.parse(test, jobs=jobs)
                s.add(test, pred, 0.0, time.perf_counter() - t1, info.time[it - 1])
            log(f"[{name}]   EM n={n}: {max(em_iters)} iterations in {total:.1f} s")
            info = fit_em(enc, seqs, p._H, p._M, n, max(em_iters), seed=0,
                             snapshots=em_iters, smoothing=0.0)
            for it in em_iters:                      # the paper's (unsmoothed) EM
                p.op_ = info.snapshots[it]
                pred = p.parse(test, jobs=jobs)
                sc(f"EM unsmoothed n={n} it={it}").add(test, pred, 0.0, 0.0,
                                                       info.time[it - 1])
        for lex, label in [("lex", "LEX"), ("lex+f", "LEX+F"), ("lex+fcp", "LEX+FCP")]:
            run_model(_parser(method="det", lexical=lex), train, test, jobs, sc(label))
            run_model(_parser(method="spectral", n_states=n_star, lexical=lex, backoff_weight=sm),
                      train, test, jobs, sc(f"SPECTRAL n*={n_star} + {label}"))
    for k, s in S.items():
        res[k] = s.result()
    res["_meta"] = {"n_star": n_star, "dev_uas": dev, "em_states": em_ns, "smoothing": sm,
                    "n_star_unsmoothed": n_star0, "dev_uas_unsmoothed": dev0,
                    "n_star_unsmoothed_noridge": n_star00, "dev_uas_unsmoothed_noridge": dev00,
                    "em_dev_choice_unsmoothed": [em0_n, em0_it],
                    "em_dev_uas_unsmoothed": {f"n={k[0]} it={k[1]}": v
                                              for k, v in em0_dev.items()},
                    "paired_time_spectral_unsmoothed_s": t_spec0,
                    "paired_time_em_unsmoothed_s": t_em0,
                    "n_star_basis1": n_star1, "dev_uas_basis1": dev1,
                    "em_dev_choice": [em_n, em_it],
                    "em_dev_uas": {f"n={k[0]} it={k[1]}": v for k, v in em_dev.items()},
                    "paired_time_spectral_s": t_spec, "paired_time_em_s": t_em,
                    "folds": len(splits), "train_sentences": len(splits[0][0]),
                    "test_sentences": sum(len(t) for _, t in splits)}
    return res


def summary(name, res, em_iters):
    """Headline numbers and target checks of one dataset."""
    meta = res["_meta"]
    n_star = meta["n_star"]
    spec = res[f"SPECTRAL n={n_star}"]
    best_spec = max((v["uas"], k) for k, v in res.items() if k.startswith("SPECTRAL n="))
    em_rows = [(v["uas"], k, v) for k, v in res.items() if k.startswith("EM n=")]
    em_best_uas, em_best_key, em_best = max(em_rows, key=lambda r: r[0])
    ems = {k: v for k, v in res.items() if k.startswith(f"EM n={n_star} ")}
    em_nstar_best = max(ems.items(), key=lambda kv: kv[1]["uas"])
    out = {
        "n_star": n_star,
        "DET": res["DET"]["uas"], "DET+F": res["DET+F"]["uas"],
        "SPECTRAL(n*)": spec["uas"], "best SPECTRAL (oracle n)": best_spec,
        "EM best": (em_best_uas, em_best_key),
        "EM(n*) best": (em_nstar_best[1]["uas"], em_nstar_best[0]),
        "SPECTRAL - DET+F": spec["uas"] - res["DET+F"]["uas"],
        "EM best - SPECTRAL": em_best_uas - spec["uas"],
        "spectral learn s": spec["learn_s"], "spectral fit s": spec["fit_s"],
        "EM learn s to best (n*)": em_nstar_best[1]["learn_s"],
        "EM learn s to overall best": em_best["learn_s"],
        "speedup learn (EM n* best / spectral n*)": em_nstar_best[1]["learn_s"] / spec["learn_s"],
        "speedup learn (EM overall best / spectral n*)": em_best["learn_s"] / spec["learn_s"],
        "parse sent/s (spectral n*)": spec["parse_sent_per_s"],
        "SPECTRAL basis 1 (n* of basis 1)":
            res["SPECTRAL basis 1 (paper), unsmoothed, dev-selected n"]["uas"],
        "SPECTRAL unsmoothed (n*)": res["SPECTRAL unsmoothed, dev-selected n"]["uas"],
        "EM unsmoothed dev-selected": (res["EM unsmoothed, dev-selected (n, it)"]["uas"],
                                       meta["em_dev_choice_unsmoothed"]),
        "unsmoothed: SPECTRAL - DET+F": (res["SPECTRAL unsmoothed, dev-selected n"]["uas"]
                                         - res["DET+F"]["uas"]),
        "unsmoothed: EM - SPECTRAL": (res["EM unsmoothed, dev-selected (n, it)"]["uas"]
                                      - res["SPECTRAL unsmoothed, dev-selected n"]["uas"]),
        "unsmoothed paired speedup": (meta["paired_time_em_unsmoothed_s"]
                                      / meta["paired_time_spectral_unsmoothed_s"]),
        "EM dev-selected (n, it)": meta["em_dev_choice"],
        "EM dev-selected UAS": res[f"EM n={meta['em_dev_choice'][0]} "
                                   f"it={meta['em_dev_choice'][1]}"]["uas"],
        "paired best-of-5 s: spectral n*": meta["paired_time_spectral_s"],
        "paired best-of-5 s: EM dev-selected": meta["paired_time_em_s"],
        "paired speedup": meta["paired_time_em_s"] / meta["paired_time_spectral_s"],
    }
    out["EM dev-selected - SPECTRAL"] = out["EM dev-selected UAS"] - spec["uas"]
    return out


def markdown(all_res, states, em_iters):
    """The results as a Markdown table (one column per dataset)."""
    names = list(all_res)
    keys = (["DET", "DET+F", "SPECTRAL basis 1 (paper), unsmoothed, dev-selected n",
             "SPECTRAL no ridge, unsmoothed, dev-selected n",
             "SPECTRAL unsmoothed, dev-selected n", "EM unsmoothed, dev-selected (n, it)"]
            + [f"SPECTRAL n={n}" for n in states])
    em_keys = sorted({k for r in all_res.values() for k in r if k.startswith("EM n=")},
                     key=lambda k: (int(k.split()[1][2:]), int(k.split("it=")[1])))
    lex = ["LEX", "LEX+F", "LEX+FCP"]
    lines = ["| model | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]

    def row(label, getter):
        cells = []
        for nm in names:
            v = getter(all_res[nm])
            cells.append("" if v is None else f"{v:.2f}")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")

    em0_keys = sorted({k for r in all_res.values() for k in r
                       if k.startswith("EM unsmoothed n=")},
                      key=lambda k: (int(k.split()[2][2:]), int(k.split("it=")[1])))
    for k in keys + em_keys + em0_keys:
        row(k, lambda r, k=k: r.get(k, {}).get("uas"))
    for k in lex:
        row(k, lambda r, k=k: r.get(k, {}).get("uas"))
    for k in lex:
        row(f"SPECTRAL n* + {k}", lambda r, k=k: next(
            (v["uas"] for kk, v in r.items() if kk.startswith("SPECTRAL n*=")
             and kk.endswith(f"+ {k}")), None))
    row("n* (dev-selected states)", lambda r: float(r["_meta"]["n_star"]))
    return "\n".join(lines)


def paired_only(configs, reps, smoothing):
    """Print the paired training times (summed over folds) for ``NAME=NS,NE,IT`` configs."""
    _warm_numba()
    print("| dataset | spectral n | EM (n, iterations) | spectral s | EM s | ratio |")
    print("|---|---|---|---|---|---|")
    for item in configs:
        name, cfg = item.split("=")
        ns, ne, it = (int(x) for x in cfg.split(","))
        ts = te = 0.0
        for train, _ in load_splits(name):
            a, b = paired_times(train, ns, ne, it, reps, smoothing)
            ts += a
            te += b
        print(f"| {name} | {ns} | ({ne}, {it}) | {ts:.4f} | {te:.3f} | {te / ts:.0f}x |",
              flush=True)


def _warm_numba():
    """Compile / load the Numba kernels of both learners (compilation is not training time)."""
    from fastspectral.dependency import em as _em
    _em.em_step(np.ones((2, 1)), np.full((2, 1, 1, 1), 0.5), np.full((2, 1), 0.5),
                np.array([0, 1, 1]), np.array([0]), np.array([1]), np.array([1.0]),
                np.array([0]))
    train = load_splits("wsj")[0][0][:50]
    paired_times(train, 2, 2, 1, reps=1)


def main(argv=None):
    """Command-line entry point."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", default="wsj,esp,ewt")
    ap.add_argument("--states", default="2-14", help="range a-b or comma list")
    ap.add_argument("--em-states", default="4,8", help="EM state counts besides n*")
    ap.add_argument("--em-iterations", default="5,10,25,100")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default=None, help="write the results as JSON here")
    ap.add_argument("--paired-only", nargs="+", default=None, metavar="NAME=NS,NE,IT",
                    help="only the paired training-time comparison, for given configurations "
                         "(spectral states, EM states, EM iterations), e.g. wsj=8,14,25; the "
                         "dev-selected ones of a full run")
    ap.add_argument("--reps", type=int, default=5, help="best-of repetitions of --paired-only")
    ap.add_argument("--tagset", choices=("auto", "upos", "xpos"), default="auto",
                    help="tag column of all parsers (default auto: UPOS for the UD treebank, "
                         "the fine tags for WSJ and Spanish)")
    ap.add_argument("--smoothing", type=float, default=BACKOFF_WEIGHT,
                    help="back-off interpolation weight of the spectral and EM models (default: "
                         "the parser's default); unsmoothed rows are always added")
    args = ap.parse_args(argv)
    global TAGSET
    TAGSET = args.tagset
    if args.paired_only:
        paired_only(args.paired_only, args.reps, args.smoothing)
        return
    if "-" in args.states:
        a, b = args.states.split("-")
        states = list(range(int(a), int(b) + 1))
    else:
        states = [int(x) for x in args.states.split(",")]
    em_states = [int(x) for x in args.em_states.split(",") if x]
    em_iters = tuple(int(x) for x in args.em_iterations.split(","))

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    _warm_numba()
    all_res = {}
    summaries = {}
    for name in args.datasets.split(","):
        t0 = time.perf_counter()
        all_res[name] = run_dataset(name, states, em_states, em_iters, args.jobs, log,
                                    args.smoothing)
        summaries[name] = summary(name, all_res[name], em_iters)
        log(f"[{name}] done in {time.perf_counter() - t0:.0f} s")
        log(json.dumps(summaries[name], indent=1, default=str))
    print(markdown(all_res, states, em_iters))
    print()
    print(json.dumps(summaries, indent=1, default=str))
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({"results": all_res, "summary": summaries}, fh, indent=1, default=str)


if __name__ == "__main__":
    main()
