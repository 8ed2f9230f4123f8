"""Accuracy and speed of the k-best re-ranking parser (Dhillon et al. 2012, table 1 style).

WSJ dependency sample split as the SHAG results (docs/dependency.md): first 80 % train, last
20 % test.  Every choice is made on a development split of the training part (``--sweep``: the
first 90 % of it trains, the last 10 % is the dev set; never the test part).  Then everything
is trained on the whole training part and scored on the test part: UAS without punctuation and
complete match (fastspectral.eval.attachment) of the base parser, the re-ranker with the
baseline features, and the re-ranker + log p-hat.  Speeds: sentences/s (wall) and CPU-seconds
of base parsing, k-best and re-ranking with --jobs threads, with the load average.

    # dev sweep (spectral model: eigenwords, tags, states; re-ranker: log p-hat
    # normalisation, sign feature, dense gain, epochs), then the test run with its choices
    PYTHONPATH=. python benchmarks/bench_rerank.py --sweep --embeddings en30.eigenwords
    PYTHONPATH=. python benchmarks/bench_rerank.py --embeddings en30.eigenwords \\
        --states 16 --tags auto --gain 3 --norm max [--epochs 10] [--jobs 2] [--k 50]

``--cache DIR`` keeps the k-best lists of the dev split between runs (a benchmark cache, not a
model file).  ``--cv N --data UD.conllu``: N-fold cross-validation on one file (UD EWT dev).
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import pickle
import resource
import time

import numpy as np


def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def scores(gold, pred):
    from fastspectral.eval.attachment import attachment_scores

    r = attachment_scores(gold, pred)
    return round(r.uas, 2), round(r.without_punct.ucm, 2)


def timed(fn):
    t, c = time.perf_counter(), cpu()
    out = fn()
    return out, time.perf_counter() - t, cpu() - c


def spectral_params(emb, tags, states, ridge=0.3):
    p = {"n_states": int(states), "tags": None if tags == "none" else tags,
         "ridge": float(ridge)}
    if emb == "pos":                      # the POS-tag model: one-hot tags, no tag block
        p.update(embeddings="one-hot", tags=None)
    elif emb not in (None, "treebank"):
        p["embeddings"] = emb
    return p


def list_scores(correct, n_tokens, data, keep_per_sent, pick):
    """UAS (no punctuation) and complete match of the candidates ``pick`` of each list."""
    got = correct[pick]
    return (round(100.0 * got.sum() / max(1, n_tokens), 2),
            round(100.0 * float(np.mean(got == keep_per_sent)), 2))


def keep_counts(sents):
    from fastspectral.eval.attachment import is_punctuation
    from fastspectral.rerank.model import _upos

    return np.array([sum(not is_punctuation(w, t, u) for w, t, u in
                         zip(s.words, s.tags, _upos(s))) for s in sents], dtype=np.int64)


def sweep(args, train):
    """Development sweep: the first 90 % of the training part trains (jack-knifed lists),
    the last 10 % is scored."""
    from fastspectral.rerank import RerankDepParser
    from fastspectral.rerank.model import TrainingLists, _argmax_segments, count_correct

    ndev = int(0.9 * len(train))
    tr, dev = train[:ndev], train[ndev:]
    keep_dev = keep_counts(dev)
    base_m = RerankDepParser(k=args.k, epochs=args.epochs, jobs=args.jobs, features="base")
    cache = os.path.join(args.cache, f"dev_lists_k{args.k}_e{args.epochs}.pkl") \
        if args.cache else None
    if cache and os.path.exists(cache):
        with open(cache, "rb") as fh:
            jack, dev_data = pickle.load(fh)
    else:
        t = time.perf_counter()
        jack = base_m.training_lists(tr)
        mst = base_m._new_mst().fit(tr)
        dev_data = base_m._lists(mst, dev, args.jobs)
        print(f"dev lists: {time.perf_counter() - t:.1f} s", flush=True)
        if cache:
            os.makedirs(args.cache, exist_ok=True)
            with open(cache, "wb") as fh:
                pickle.dump((jack, dev_data), fh)
    dev_correct, dev_tok = count_correct(dev, dev_data)
    res = {"dev_sentences": len(dev), "train_sentences": len(tr)}
    res["dev_base"] = list_scores(dev_correct, dev_tok, dev_data, keep_dev,
                                  dev_data.cand_off[:-1])
    res["dev_oracle"] = list_scores(dev_correct, dev_tok, dev_data, keep_dev, _argmax_segments(
        dev_correct.astype(np.float64), dev_data.cand_off))
    print("dev base", res["dev_base"], "oracle", res["dev_oracle"], flush=True)

    def rerank(features, lp=None, **kw):
        m = RerankDepParser(k=args.k, epochs=args.epochs, jobs=args.jobs, features=features,
                            **kw)
        trs = lp[0] if lp else (None,) * 4
        L = TrainingLists(jack.data, trs[0], jack.correct, jack.n_tokens, {}, *trs[1:])
        m.fit_lists(L)
        s = m.rerank_scores(dev, dev_data, logp=lp[1] if lp else None, threads=args.jobs)
        return list_scores(dev_correct, dev_tok, dev_data, keep_dev,
                           _argmax_segments(s, dev_data.cand_off))

    gains = [float(g) for g in args.gains.split(",")]
    epochs = [int(e) for e in args.rerank_epochs.split(",")]
    rows = []
    for g, e in itertools.product(gains, epochs):
        if args.skip_base:
            break
        r = rerank("base", dense_gain=g, rerank_epochs=e)
        rows.append({"features": "base", "gain": g, "rerank_epochs": e, "dev": r})
        print(json.dumps(rows[-1]), flush=True)
    # stage 1: the spectral model (default re-ranker settings); log p-hat alone as a diagnostic
    spec_rows = {}
    for emb, tags, st, ridge in itertools.product(
            args.sweep_embeddings.split(","), args.sweep_tags.split(","),
            [int(x) for x in args.sweep_states.split(",")],
            [float(x) for x in args.sweep_ridges.split(",")]):
        if emb == "pos" and tags != "none":
            continue
        emb_file = args.embeddings if emb == "file" else (emb if emb == "pos" else None)
        sp = spectral_params(emb_file, tags, st, ridge)
        m = RerankDepParser(k=args.k, epochs=args.epochs, jobs=args.jobs,
                            features="base+spectral", spectral_params=sp,
                            spectral_scores="both",
                            spectral_input="pos" if emb == "pos" else "words")
        t, c = time.perf_counter(), cpu()
        try:
            spec_tr = m.jackknife_log_prob(tr, jack.data)
            spec = m._new_spectral().fit(tr)
            spec_dev = m._log_prob(spec, dev, dev_data, args.jobs)
        except ValueError as exc:
            print("skip", emb, tags, st, exc, flush=True)
            continue
        secs, cs = time.perf_counter() - t, cpu() - c
        key = (emb, tags, st, ridge)
        lp = (spec_tr, spec_dev)
        lp_dev, sg_dev, fr_dev = spec_dev[:3]
        alone = list_scores(dev_correct, dev_tok, dev_data, keep_dev,
                            _argmax_segments(lp_dev, dev_data.cand_off))
        alone_frag = list_scores(dev_correct, dev_tok, dev_data, keep_dev,
                                 _argmax_segments(fr_dev, dev_data.cand_off))
        best_r = None
        for which in ("tree", "fragment", "both"):
            r = rerank("base+spectral", lp, dense_gain=gains[len(gains) // 2],
                       rerank_epochs=epochs[-1], spectral_scores=which)
            best_r = r if best_r is None or r[0] > best_r[0] else best_r
            rows.append({"features": "base+spectral", "embeddings": emb, "tags": tags,
                         "states": st, "ridge": ridge, "spectral_scores": which,
                         "gain": gains[len(gains) // 2], "rerank_epochs": epochs[-1],
                         "norm": "max", "sign": True, "dev": r,
                         "tree_logp_alone_dev": alone, "fragment_logp_alone_dev": alone_frag,
                         "neg_frac_dev": round(float((sg_dev < 0).mean()), 4),
                         "seconds": round(secs, 1), "cpu_s": round(cs, 1)})
            print(json.dumps(rows[-1]), flush=True)
        spec_rows[key] = (best_r, lp)
    # stage 2: the re-ranker's handling of log p-hat for the best spectral models
    best = sorted(spec_rows, key=lambda k: -spec_rows[k][0][0])[:args.top]
    for key in best:
        lp = spec_rows[key][1]
        for which, norm, sign, g, e in itertools.product(
                ("tree", "fragment", "both"), args.norms.split(","), (True, False), gains,
                epochs):
            if which == "fragment" and not sign:
                continue            # the sign only enters with the tree's p-hat
            r = rerank("base+spectral", lp, dense_gain=g, rerank_epochs=e, logp_norm=norm,
                       logp_sign=sign, spectral_scores=which)
            rows.append({"features": "base+spectral", "embeddings": key[0], "tags": key[1],
                         "states": key[2], "ridge": key[3], "spectral_scores": which,
                         "gain": g, "rerank_epochs": e, "norm": norm, "sign": sign, "dev": r})
            print(json.dumps(rows[-1]), flush=True)
    res["rows"] = rows
    return res


def final(args, train, test):
    from fastspectral.rerank import RerankDepParser
    from fastspectral.rerank.kbest import kbest_packed
    from fastspectral.rerank.reranker import RerankData

    out = {"load_avg_start": os.getloadavg(), "train": len(train), "test": len(test)}
    sp = spectral_params("pos" if args.spectral_input == "pos" else args.embeddings,
                         args.tags, args.states, args.ridge)
    out["spectral_params"] = sp
    kw = dict(k=args.k, epochs=args.epochs, jobs=args.jobs, dense_gain=args.gain,
              rerank_epochs=args.final_rerank_epochs, logp_norm=args.norm,
              logp_sign=not args.no_sign, spectral_params=sp,
              spectral_scores=args.spectral_scores, spectral_input=args.spectral_input)
    m = RerankDepParser(features="base+spectral", **kw)
    (lists, t_lists, c_lists) = timed(lambda: m.training_lists(train))
    out["seconds"] = dict(lists.seconds)
    m.mst_, t, c = timed(lambda: m._new_mst().fit(train))
    out["seconds"]["mst"] = t
    out["cpu_s"] = {"training_lists": c_lists, "mst": c}
    m.spectral_, t, c = timed(lambda: m._new_spectral().fit(train))
    out["seconds"]["spectral_final"] = t
    out["cpu_s"]["spectral_final"] = c
    out["oracle_uas_train_lists"] = None
    rows, speeds = {}, {}
    out["load_avg_speed"] = os.getloadavg()
    m.rerank = False
    base_pred, t, c = timed(lambda: m.parse(test))
    rows["base_parser"] = scores(test, base_pred)
    speeds["base_parse"] = {"sent_per_s": len(test) / t, "cpu_s": c}
    m.rerank = True
    sp_model = m.spectral_
    for feats in ("base", "base+spectral"):
        m.features = feats
        m.spectral_ = sp_model if feats == "base+spectral" else None
        _, t, c = timed(lambda: m.fit_lists(lists))
        out["seconds"]["rerank_" + feats], out["cpu_s"]["rerank_" + feats] = t, c
        out["oracle_uas_train_lists"] = m.fit_info_.oracle_uas
        pred, t, c = timed(lambda: m.parse(test))
        rows[feats] = scores(test, pred)
        speeds["parse_" + feats] = {"sent_per_s": len(test) / t, "cpu_s": c}
        enc = m.mst_.encode(test)
        kb, t, c = timed(lambda: m.mst_.kbest_encoded(enc, args.k, args.jobs))
        speeds["kbest_with_arc_scores"] = {"sent_per_s": len(test) / t, "cpu_s": c}
        arcs = m.mst_.arc_scores(enc, args.jobs)
        _, t, c = timed(lambda: kbest_packed(arcs, enc.pair_off, enc.lengths, args.k,
                                             m.mst_.single_root_, args.jobs))
        speeds["kbest_decode"] = {"sent_per_s": len(test) / t, "cpu_s": c}
        data = RerankData(kb, enc)
        _, t, c = timed(lambda: m.rerank_scores(test, data, threads=args.jobs))
        speeds["rerank_" + feats] = {"sent_per_s": len(test) / t, "cpu_s": c}
    out["rerank"] = rows
    out["speed"] = speeds
    e0 = 100 - rows["base"][0]
    out["error_reduction_pct"] = 100 * (e0 - (100 - rows["base+spectral"][0])) / e0
    out["load_avg_end"] = os.getloadavg()
    return out


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "..", "..",
                                                   "shared", "data", "dep", "wsj-sample.dp"))
    ap.add_argument("--epochs", type=int, default=10, help="base parser epochs")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--k", type=int, default=50)
    ap.add_argument("--embeddings", default=None, help="eigenword file of the spectral model")
    ap.add_argument("--states", type=int, default=16)
    ap.add_argument("--tags", default="auto", choices=("none", "auto", "upos", "xpos"))
    ap.add_argument("--ridge", type=float, default=0.3)
    ap.add_argument("--gain", type=float, default=3.0)
    ap.add_argument("--norm", default="max", choices=("max", "word", "list"))
    ap.add_argument("--no-sign", action="store_true")
    ap.add_argument("--spectral-scores", default="both", choices=("tree", "fragment", "both"))
    ap.add_argument("--spectral-input", default="words", choices=("words", "pos"))
    ap.add_argument("--final-rerank-epochs", type=int, default=5)
    ap.add_argument("--sweep", action="store_true", help="the development sweep only")
    ap.add_argument("--sweep-embeddings", default="treebank,file")
    ap.add_argument("--sweep-tags", default="none,auto")
    ap.add_argument("--sweep-states", default="8,16,30")
    ap.add_argument("--sweep-ridges", default="0.3")
    ap.add_argument("--norms", default="max,word,list")
    ap.add_argument("--skip-base", action="store_true")
    ap.add_argument("--gains", default="1,3,10")
    ap.add_argument("--rerank-epochs", default="1,5")
    ap.add_argument("--top", type=int, default=2)
    ap.add_argument("--cache", default=None)
    ap.add_argument("--cv", type=int, default=0, help="N-fold cross-validation on --data")
    args = ap.parse_args(argv)
    from fastspectral.trees.readers import read_treebank

    sents = list(read_treebank(args.data))
    if args.sweep:
        ntr = int(0.8 * len(sents))
        print(json.dumps(sweep(args, sents[:ntr])))
        return
    if args.cv:
        cuts = np.linspace(0, len(sents), args.cv + 1).astype(int)
        outs = []
        for f in range(args.cv):
            test = sents[cuts[f]:cuts[f + 1]]
            train = sents[:cuts[f]] + sents[cuts[f + 1]:]
            outs.append(final(args, train, test))
            print(json.dumps(outs[-1]), flush=True)
        mean = {k: np.mean([o["rerank"][k] for o in outs], axis=0).round(2).tolist()
                for k in outs[0]["rerank"]}
        print(json.dumps({"cv_mean": mean}))
        return
    ntr = int(0.8 * len(sents))
    print(json.dumps(final(args, sents[:ntr], sents[ntr:]), indent=1))


if __name__ == "__main__":
    main()
