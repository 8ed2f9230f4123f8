"""Accuracy and speed of the k-best re-ranking parser (Dhillon et al. 2012, table 1 style).

WSJ dependency sample split as the SHAG results (docs/dependency.md): first 80 % train, last
20 % test; the base parser's epochs are chosen on a development part (the last 10 % of the
training part), then everything is trained on the whole training part and scored on the test
part: UAS without punctuation and complete match (fastspectral.eval.attachment) of the base
parser, the re-ranker with the baseline features, and the re-ranker + log p-hat.  Speeds:
sentences/s (wall) and CPU-seconds of base parsing, k-best and re-ranking with --jobs threads.

    PYTHONPATH=. python benchmarks/bench_rerank.py [--epochs 3,5,10] [--jobs 2] [--k 50]
"""
from __future__ import annotations

import argparse
import json
import os
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


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "..", "..",
                                                   "shared", "data", "dep", "wsj-sample.dp"))
    ap.add_argument("--epochs", default="3,5,10")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--k", type=int, default=50)
    ap.add_argument("--no-spectral", action="store_true")
    args = ap.parse_args(argv)
    from fastspectral.rerank import MSTParser, RerankDepParser
    from fastspectral.rerank.reranker import RerankData
    from fastspectral.trees.readers import read_treebank

    sents = list(read_treebank(args.data))
    ntr = int(0.8 * len(sents))
    train, test = sents[:ntr], sents[ntr:]
    ndev = int(0.9 * len(train))
    tr, dev = train[:ndev], train[ndev:]
    out = {"load_avg_start": os.getloadavg(), "train": len(train), "test": len(test)}
    # base parser epochs on the development part
    dev_uas = {}
    for ep in [int(x) for x in args.epochs.split(",")]:
        p = MSTParser(epochs=ep, jobs=args.jobs).fit(tr)
        dev_uas[ep] = scores(dev, p.parse(dev))[0]
        print("dev epochs", ep, dev_uas[ep], flush=True)
    epochs = max(dev_uas, key=lambda e: (dev_uas[e], -e))
    out["dev_uas_by_epochs"] = dev_uas
    out["epochs"] = epochs
    spectral = not args.no_spectral
    if spectral:
        try:
            from fastspectral import models
            models.model_class("latent-dep")
        except Exception as exc:  # noqa: BLE001 - report and go on without it
            print("no spectral model:", exc)
            spectral = False
    m = RerankDepParser(k=args.k, epochs=epochs, jobs=args.jobs,
                        features="base+spectral" if spectral else "base")
    lists, t_lists, _ = timed(lambda: m.training_lists(train))
    out["seconds"] = dict(lists.seconds)
    m.mst_, t_mst, _ = timed(lambda: m._new_mst().fit(train))
    out["seconds"]["mst"] = t_mst
    m.spectral_ = None
    if spectral:
        m.spectral_, t_spec, _ = timed(lambda: m._new_spectral().fit(train))
        out["seconds"]["spectral_final"] = t_spec
    m.rerank = False
    base_pred, t, c = timed(lambda: m.parse(test))
    out["base"] = scores(test, base_pred)
    out["speed_base"] = {"sent_per_s": len(test) / t, "cpu_s": c}
    m.rerank = True
    rows = {}
    for feats in (["base", "base+spectral"] if spectral else ["base"]):
        m.features = feats
        sp = m.spectral_
        if feats == "base":
            m.spectral_ = None
        m.fit_lists(lists)
        out["seconds"]["rerank_" + feats] = m.fit_info_.seconds["rerank"]
        pred, t, c = timed(lambda: m.parse(test))
        rows[feats] = scores(test, pred)
        out["speed_parse_" + feats] = {"sent_per_s": len(test) / t, "cpu_s": c}
        # the pieces: k-best (scoring + decoding), k-best decoding alone, re-ranking
        enc = m.mst_.encode(test)
        kb, t, c = timed(lambda: m.mst_.kbest_encoded(enc, args.k, args.jobs))
        out["speed_kbest_with_arc_scores"] = {"sent_per_s": len(test) / t, "cpu_s": c}
        arcs = m.mst_.arc_scores(enc, args.jobs)
        from fastspectral.rerank.kbest import kbest_packed
        _, t, c = timed(lambda: kbest_packed(arcs, enc.pair_off, enc.lengths, args.k,
                                             m.mst_.single_root_, args.jobs))
        out["speed_kbest_decode"] = {"sent_per_s": len(test) / t, "cpu_s": c}
        data = RerankData(kb, enc)
        _, t, c = timed(lambda: m.rerank_scores(test, data))
        out["speed_rerank_" + feats] = {"sent_per_s": len(test) / t, "cpu_s": c}
        out["oracle_uas_train_lists"] = m.fit_info_.oracle_uas
        m.spectral_ = sp
    out["rerank"] = rows
    if "base+spectral" in rows:
        e0 = 100 - rows["base"][0]
        out["error_reduction_pct"] = 100 * (e0 - (100 - rows["base+spectral"][0])) / e0
    out["load_avg_end"] = os.getloadavg()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
