"""Accuracy and speed of the k-best re-ranking parser (Dhillon et al. 2012, table 1 style).

WSJ dependency sample split as the SHAG results (docs/notes/dependency.md): first 80 % train, last
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

``--sweep-extra``: further dev experiments (self-training of the spectral model on raw text
parsed by the base parser, ``--raw``; one-hot POS / eigenword-cluster inputs; feature forms;
several spectral models), each scored on the dev split and by 3-fold CV of the re-ranker over
the jack-knifed training lists (docs/notes/rerank.md, "Further attempts").

``--cache DIR`` keeps the k-best lists of the dev split (and the parsed raw text) between runs
(a benchmark cache, not a model file).  ``--cv N --data UD.conllu``: N-fold cross-validation
on one file (UD EWT dev).

``--order2-dev``: the re-ranker with the second-order model's score (``base_order=2``;
rescoring alone / with the order-2 tree added; the perceptron started from either score),
with and without log p-hat, at each of ``--gains``, on the dev split; ``--base-order2`` (main
mode): also the order-2 base parser's row and the re-rankers with the order-2 column
(``--gain-order2``: their gain); docs/notes/rerank.md, "The second-order score as a re-ranker
feature".

``--sweep-order2``: the spectral model of the order-2 re-ranker (``base_order=2``,
``order2_best``; the lists with the order-2 scores and trees as ``fit`` builds them, cached in
``--cache``): reference rows (base parsers of order 1 and 2; baseline + order-2 column and + the
default spectral model at gains 3 / 10 / 30) and ``--extra-models`` x ``--extra-forms`` x
``--gains``, each on the dev split and by 3-fold CV of the re-ranker over the jack-knifed
training lists; then the pre-declared selection rule (``order2_select``; docs/notes/rerank.md,
"Choosing the spectral model for the order-2 re-ranker")::

    PYTHONPATH=. python benchmarks/bench_rerank.py --sweep-order2 --embeddings en30.eigenwords \
        --cache DIR --extra-models words:16:0.3:0,pos:8:0.3:0:adj1 --gains 3,10,30 --jobs 1

``--start-grid``: the perceptron's start (``fixed_base``, ``--start-weights``, ``--gains``)
of the baseline re-rankers over first-order lists and with the order-2 column, on the dev
split and by 3-fold CV over the training lists (docs/notes/rerank.md, "A stable start")::

    PYTHONPATH=. python benchmarks/bench_rerank.py --start-grid --cache DIR --gains 1,3,10,30

``--base-only``: the base parser alone (``MSTParser(order=...)`` for each of ``--orders``,
first-order and second-order sibling; docs/notes/rerank.md, "Second-order sibling base parser"):
UAS (no punctuation) and complete match, training CPU-seconds, parsing CPU-seconds and
sentences/s.  ``--base-split dev`` (the dev split above, one row per ``--base-epochs``),
``test`` (whole training part -> test part, ``--epochs``), or with ``--cv N`` N folds of
``--data``::

    PYTHONPATH=. python benchmarks/bench_rerank.py --base-only --base-split dev --orders 1,2 \
        --base-epochs 3,5,10 --jobs 1
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import pickle
import resource
import sys
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


def base_mst(args):
    """The re-ranker's base parser: ``--epochs`` perceptron iterations, ``--jobs`` threads."""
    from fastspectral.rerank import MSTParser

    return MSTParser(iterations=args.epochs, jobs=args.jobs)


def spectral_from_params(params, spectral_input="words"):
    """The re-ranker's latent dependency model of the constructor arguments ``params`` over
    the defaults of ``spectral_input`` (16 states; POS tags: 8, one-hot)."""
    from fastspectral.rerank.providers import spectral_from_params as new

    return new(params, spectral_input)


def shag_from_params(params):
    """The re-ranker's SHAG model of ``params`` over its defaults (spectral, 8, LEX+FCP)."""
    from fastspectral.rerank.providers import shag_from_params as new

    return new(params)


def spectral_model(emb, tags, states, ridge=0.3, spectral_input="words"):
    """The latent dependency model of :func:`spectral_params`."""
    return spectral_from_params(spectral_params(emb, tags, states, ridge), spectral_input)


def spectral_params(emb, tags, states, ridge=0.3):
    p = {"n_states": int(states), "tag_column": None if tags == "none" else tags,
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
    base_m = RerankDepParser(k=args.k, mst=base_mst(args), jobs=args.jobs, features="base")
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
        m = RerankDepParser(k=args.k, mst=base_mst(args), jobs=args.jobs, features=features,
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
        r = rerank("base", dense_gain=g, rerank_iterations=e)
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
        m = RerankDepParser(k=args.k, mst=base_mst(args), jobs=args.jobs,
                            features="base+spectral", spectral_scores="both",
                            spectral=spectral_from_params(sp, "pos" if emb == "pos" else "words"),
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
                       rerank_iterations=epochs[-1], spectral_scores=which)
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
            r = rerank("base+spectral", lp, dense_gain=g, rerank_iterations=e, logp_norm=norm,
                       logp_sign=sign, spectral_scores=which)
            rows.append({"features": "base+spectral", "embeddings": key[0], "tags": key[1],
                         "states": key[2], "ridge": key[3], "spectral_scores": which,
                         "gain": g, "rerank_epochs": e, "norm": norm, "sign": sign, "dev": r})
            print(json.dumps(rows[-1]), flush=True)
    res["rows"] = rows
    return res


# ---------------------------------------------------------------------------------------------
# --sweep-extra: further development experiments on the same split (docs/notes/rerank.md, "Further
# attempts"): self-training of the spectral model on parsed raw text, non-negative (one-hot)
# observations, feature forms of the spectral score, several spectral models at once.  Each
# setting is scored on the dev split (314 sentences) and by 3-fold cross-validation of the
# re-ranker over the jack-knifed training lists (2,817 sentences: less noisy).

def dev_lists(args, tr, dev):
    """The jack-knifed lists of ``tr`` and the dev lists (cached in --cache)."""
    from fastspectral.rerank import RerankDepParser

    base_m = RerankDepParser(k=args.k, mst=base_mst(args), jobs=args.jobs, features="base")
    cache = os.path.join(args.cache, f"dev_lists_k{args.k}_e{args.epochs}.pkl") \
        if args.cache else None
    if cache and os.path.exists(cache):
        with open(cache, "rb") as fh:
            return pickle.load(fh)
    jack = base_m.training_lists(tr)
    dev_data = base_m._lists(base_m._new_mst().fit(tr), dev, args.jobs)
    if cache:
        os.makedirs(args.cache, exist_ok=True)
        with open(cache, "wb") as fh:
            pickle.dump((jack, dev_data), fh)
    return jack, dev_data


def raw_parses(args, tr):
    """The raw text (``--raw``) parsed by each jack-knife fold's base parser (trained on the
    other folds, as for the lists) and by the parser of the whole of ``tr`` (last)."""
    from fastspectral.rerank import RerankDepParser
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                    "experiments"))
    from rerank_selftrain import read_tagged_text

    raw = read_tagged_text(args.raw, tagset=args.raw_tagset)
    path = os.path.join(args.cache, f"raw_heads_e{args.epochs}_{len(raw)}.pkl") \
        if args.cache else None
    if path and os.path.exists(path):
        with open(path, "rb") as fh:
            return raw, pickle.load(fh)
    m = RerankDepParser(k=args.k, mst=base_mst(args), jobs=args.jobs, features="base")
    cuts = m._cuts(len(tr))
    heads = []
    for f in range(len(cuts)):
        rest = tr if f == len(cuts) - 1 else tr[:cuts[f]] + tr[cuts[f + 1]:]
        (mst, t, c) = timed(lambda: m._new_mst().fit(rest))
        (h, t, c) = timed(lambda: mst.predict_heads(raw, jobs=args.jobs))
        print(f"raw text parsed: {len(raw)} sentences, {c:.1f} CPU s", flush=True)
        heads.append([np.asarray(x, np.int32) for x in h])
    if path:
        with open(path, "wb") as fh:
            pickle.dump(heads, fh)
    return raw, heads


def cluster_map(emb_file, n_clusters):
    """Word -> cluster id: k-means (``scipy.cluster.vq.kmeans2``, seed 0) of the length-
    normalised eigenwords; ``(map, lowercase)``."""
    from scipy.cluster.vq import kmeans2
    from fastspectral.embeddings.eigenwords import load_embeddings

    ew = load_embeddings(emb_file)
    E = np.asarray(ew.embeddings_, np.float64)
    E = E / np.maximum(np.linalg.norm(E, axis=1, keepdims=True), 1e-12)
    _, lab = kmeans2(E, n_clusters, seed=0, minit="++", iter=20)
    return {w: f"c{c}" for w, c in zip(ew.words_, lab)}, bool(ew.lowercase)


def spectral_view(sents, what, clusters=None):
    """The sentences as a spectral model reads them: words; POS tags as words; eigenword
    cluster ids as words."""
    from fastspectral.trees.conll import DepSentence

    if what == "words":
        return list(sents)
    if what == "pos":
        return [DepSentence(words=list(s.tags), heads=list(s.heads)) for s in sents]
    cl, low = clusters
    return [DepSentence(words=[cl.get(w.lower() if low else w, "<unk>") for w in s.words],
                        xpos=list(s.xpos), heads=list(s.heads)) for s in sents]


def extra_scores(args, spec, tr, dev, jack, dev_data, raw):
    """Spectral scores (jack-knifed on the training lists; trained on ``tr`` for the dev
    lists) of the model ``spec`` = ``input:states:ridge:raw_sentences``."""
    from fastspectral.rerank import RerankDepParser
    from fastspectral.trees.conll import DepSentence

    what, states, ridge, n_raw, *rest = spec.split(":")
    n_raw = int(n_raw)
    stop = rest[0] if rest else ""       # "stopW" / "adjW": STOP events, stop_weight W
    clusters = None
    if what.startswith("cluster"):
        clusters = cluster_map(args.embeddings, int(what[len("cluster"):]))
        emb = "one-hot"
    else:
        emb = args.embeddings if what == "words" else "one-hot"
    sp = spectral_params(emb, "none", int(states), float(ridge))
    if emb == "one-hot":
        sp["embeddings"] = "one-hot"
    if stop:
        if not stop.startswith(("stop", "adj")):
            raise ValueError(f"model {spec!r}: the fifth field is stopW (STOP events) or adjW "
                             "(STOP events with adjacency)")
        adj = stop.startswith("adj")
        sp.update(stop_events=True, stop_adjacency=adj,
                  stop_weight=float(stop[3 if adj else 4:] or 1.0))
    m = RerankDepParser(k=args.k, mst=base_mst(args), jobs=args.jobs,
                        features="base+spectral", spectral=spectral_from_params(sp),
                        spectral_scores="both")

    def auto(f):
        if n_raw == 0:
            return []
        text, heads = raw
        return [DepSentence(words=s.words, xpos=s.xpos, heads=list(h))
                for s, h in zip(text[:n_raw], heads[f][:n_raw])]

    cuts = m._cuts(len(tr))
    vt = spectral_view(tr, what, clusters)
    all_heads = jack.data.heads_list()
    parts = []
    t, c = time.perf_counter(), cpu()
    for f in range(len(cuts) - 1):
        model = m._new_spectral().fit(vt[:cuts[f]] + vt[cuts[f + 1]:] +
                                      spectral_view(auto(f), what, clusters))
        lo, hi = int(jack.data.cand_off[cuts[f]]), int(jack.data.cand_off[cuts[f + 1]])
        parts.append(m._spectral_scores(model, [vt[b] for b in jack.data.sent[lo:hi]],
                                        all_heads[lo:hi], args.jobs, hi - lo))
    tr_scores = tuple(np.concatenate([p[j] for p in parts]) for j in range(4))
    model = m._new_spectral().fit(vt + spectral_view(auto(len(cuts) - 1), what, clusters))
    vd = spectral_view(dev, what, clusters)
    dev_scores = m._spectral_scores(model, [vd[b] for b in dev_data.sent],
                                    dev_data.heads_list(), args.jobs, dev_data.n_candidates)
    _, gold_sign = model.log_prob(vd, return_sign=True, jobs=args.jobs)
    info = {"cpu_s": round(cpu() - c, 1), "seconds": round(time.perf_counter() - t, 1),
            "gold_negative_dev": round(float((gold_sign < 0).mean()), 3)}
    return tr_scores, dev_scores, info


def spectral_columns(data, scores, forms):
    """Dense re-ranker columns of one spectral model: ``tree`` (log |p-hat| minus the list's
    best, p-hat < 0), ``tree-word`` (that per word), ``rank`` (rank of log |p-hat| in the list
    over the list's size), ``fragment`` (fragment log p-hat minus the list's best, negative
    fragments minus the list's fewest)."""
    from fastspectral.rerank.model import _normalise

    lp, sign, frag, fneg = scores
    cols = []
    for form in forms:
        if form in ("tree", "tree-word"):
            cols += [_normalise(lp, data, "max" if form == "tree" else "word"),
                     (sign < 0).astype(np.float64)]
        elif form == "rank":
            order = np.lexsort((-lp, data.sent))
            rank = np.empty(len(lp))
            rank[order] = np.arange(len(lp)) - data.cand_off[data.sent[order]]
            cols.append(rank / np.maximum(np.diff(data.cand_off)[data.sent] - 1, 1))
        elif form == "fragment":
            cols += [_normalise(frag, data, "max"), data.relative(-np.asarray(fneg))]
        elif form.startswith("shag-"):
            cols += shag_columns(data, scores, form)
        else:
            raise ValueError(f"unknown form {form!r}")
    return cols


def shag_columns(data, scores, form):
    """Dense columns of a SHAG model's scores ``(log |w|, sign, summed log posteriors, None)``
    (``fastspectral.rerank.shag_scores``): ``shag-tree[-NORM]``: log |w(tree)| normalised in
    its list (NORM: max (default), word, list; a zero / non-finite weight gets the list's
    lowest value), the "w <= 0 or not finite" and "w < 0" indicators; ``shag-arc[-NORM]``:
    the summed clipped log arc posteriors, normalised the same way."""
    from fastspectral.rerank.model import _normalise, shag_tree_columns

    logw, sign, post = scores[:3]
    kind, _, norm = form[len("shag-"):].partition("-")
    norm = norm or "max"
    if kind == "tree":
        return shag_tree_columns(logw, sign, data, norm)
    if kind == "arc":
        return [_normalise(post, data, norm)]
    raise ValueError(f"unknown form {form!r}")


def shag_extra_scores(args, spec, tr, dev, jack, dev_data):
    """SHAG scores (``fastspectral.rerank.shag_scores``) of the jack-knifed training lists (a
    model trained on the other folds scores each fold) and of the dev lists (a model trained
    on ``tr``) for the model ``spec`` = ``METHOD:STATES:LEXICAL``."""
    from fastspectral.rerank import RerankDepParser
    from fastspectral.rerank.shag_scores import jackknife_shag_scores, new_shag, shag_scores

    method, states, lexical = spec.split(":")
    params = {"method": method, "n_states": int(states), "lexical": lexical}
    cuts = RerankDepParser(folds=3)._cuts(len(tr))
    t, c = time.perf_counter(), cpu()
    tr_s = jackknife_shag_scores(tr, jack.data, cuts, params, args.jobs)
    model = new_shag(params).fit(tr)
    dev_s = shag_scores(model, dev, dev_data, args.jobs)
    info = {"shag": spec, "cpu_s": round(cpu() - c, 1), "seconds": round(time.perf_counter() - t, 1),
            "neg_frac_dev": round(float((dev_s[1] < 0).mean()), 4),
            "zero_frac_dev": round(float((dev_s[1] == 0).mean()), 4)}
    return (*tr_s, None), (*dev_s, None), info


def extra_evaluate(args, jack, dev_data, dev_eval, models, gain):
    """Dev UAS and 3-fold CV UAS over the training lists of the re-ranker with the dense
    columns of ``models`` (``[(train scores, dev scores, forms)]``; [] = baseline features)."""
    from fastspectral.rerank import RerankDepParser
    from fastspectral.rerank.model import TrainingLists, _argmax_segments

    class Extra(RerankDepParser):
        columns = None

        def _raw_dense(self, data, *unused, **unused_kw):
            return np.ascontiguousarray(np.stack([data.relative(data.base)] +
                                                 self.columns(data), axis=1))

    def fit(data, correct, cols):
        r = Extra(k=args.k, features="base", dense_gain=gain, rerank_iterations=5,
                  jobs=args.jobs)
        r.columns = cols
        r.fit_lists(TrainingLists(data, None, correct, 1, {}))
        return r

    def cols_of(which, cand=None):
        return lambda d: sum((spectral_columns(d, tuple(x if cand is None or x is None
                                                        else x[cand] for x in mdl[which]), mdl[2])
                              for mdl in models), [])

    r = fit(jack.data, jack.correct, cols_of(0))
    r.columns = cols_of(1)
    pick = _argmax_segments(r.rerank_scores(None, dev_data), dev_data.cand_off)
    dev_uas = dev_eval(pick)
    D = jack.data
    cuts = np.linspace(0, len(D.lengths), 4).astype(int)
    got = 0
    for f in range(3):
        Dtr, ctr = D.subset(np.r_[0:cuts[f], cuts[f + 1]:len(D.lengths)])
        Dte, cte = D.subset(np.arange(cuts[f], cuts[f + 1]))
        r = fit(Dtr, jack.correct[ctr], cols_of(0, ctr))
        r.columns = cols_of(0, cte)
        pick = _argmax_segments(r.rerank_scores(None, Dte), Dte.cand_off)
        got += int(jack.correct[cte][pick].sum())
    return {"dev": dev_uas, "cv": round(100.0 * got / jack.n_tokens, 2)}


# ---------------------------------------------------------------------------------------------
# --tag-dmv: a diagnostic for the valency question (docs/notes/rerank.md, "STOP events"): observable
# (count-based, no latent states) generative models of the POS tags of a tree, scored on the
# same lists: arcs p(child tag | head tag, direction), + geometric valency (one stop
# probability per head tag and direction: what STOP events add per state), + the DMV's
# adjacency (Klein & Manning 2004: the stop probability depends on whether the head already
# has a child on that side).

def _tag_arrays(sents, data, tag_index):
    """Per token of every candidate of ``data`` (lists of ``sents``; None: the sentences'
    own trees): candidate, tag, head tag (``len(tag_index)`` = ROOT), direction (1: left
    child), global token index of the head (-1: root)."""
    tags = [np.fromiter((tag_index.get(t, 0) for t in s.tags), np.int64, len(s.words))
            for s in sents]
    st_off = np.zeros(len(sents) + 1, np.int64)
    st_off[1:] = np.cumsum([len(t) for t in tags])
    alltags = np.concatenate(tags)
    if data is None:
        sent = np.arange(len(sents))
        L = np.diff(st_off)
        heads = np.concatenate([np.asarray(s.heads, np.int64) for s in sents])
    else:
        sent = data.sent
        L = data.lengths[sent]
        heads = None
    C = len(sent)
    cand = np.repeat(np.arange(C), L)
    tok_start = np.zeros(C + 1, np.int64)
    tok_start[1:] = np.cumsum(L)
    pos = np.arange(tok_start[-1]) - tok_start[cand]
    if heads is None:
        heads = data.heads[np.repeat(data.cand_hoff, L) + pos]
    tag = alltags[st_off[sent[cand]] + pos]
    root = heads <= 0
    htag = np.where(root, len(tag_index), alltags[st_off[sent[cand]] + np.maximum(heads, 1) - 1])
    left = (~root) & (pos < heads - 1)
    hglob = np.where(root, -1, tok_start[cand] + heads - 1)
    return cand, tag, htag, left.astype(np.int64), hglob, C, tok_start


def tag_dmv_scores(train_sents, sents, data, smooth=0.5):
    """``{"arcs", "arcs+geometric", "arcs+adjacency"}`` -> log p of every candidate's tags
    (count-based models of ``train_sents``' gold trees, add-``smooth`` smoothing)."""
    tagset = sorted({t for s in train_sents for t in s.tags})
    index = {t: i + 1 for i, t in enumerate(tagset)}        # 0: unknown
    T = len(index) + 1
    cand, tag, htag, left, hglob, C, ts = _tag_arrays(train_sents, None, index)
    arcs = np.zeros((2, T + 1, T))
    np.add.at(arcs, (left, htag, tag), 1.0)
    logp_arc = np.log((arcs + smooth) / (arcs.sum(axis=2, keepdims=True) + smooth * T))
    ok = hglob >= 0
    n = len(tag)
    nd = [np.bincount(hglob[ok & (left == d)], minlength=n) for d in (0, 1)]
    nodes = np.bincount(tag, minlength=T).astype(np.float64)
    geo, adj = [], []
    for d in (0, 1):
        kids = np.bincount(tag, weights=nd[d], minlength=T)
        s = (nodes + smooth) / (nodes + kids + 2 * smooth)      # geometric MLE
        geo.append((np.log(s), np.log1p(-s)))
        # DMV: stop before the first child (s0) and after one (s1)
        none = np.bincount(tag, weights=(nd[d] == 0), minlength=T)
        s0 = (none + smooth) / (nodes + 2 * smooth)
        has = nodes - none
        s1 = (has + smooth) / (has + np.bincount(tag, weights=np.maximum(nd[d] - 1, 0),
                                                minlength=T) + 2 * smooth)
        adj.append((np.log(s0), np.log1p(-s0), np.log(s1), np.log1p(-s1)))
    cand, tag, htag, left, hglob, C, ts = _tag_arrays(sents, data, index)
    n = len(tag)
    ok = hglob >= 0
    a = np.bincount(cand, weights=logp_arc[left, htag, tag], minlength=C)
    g = np.zeros(C)
    dm = np.zeros(C)
    for d in (0, 1):
        k = np.bincount(hglob[ok & (left == d)], minlength=n).astype(np.float64)
        ls, l1s = geo[d]
        g += np.bincount(cand, weights=ls[tag] + k * l1s[tag], minlength=C)
        s0, n0, s1, n1 = adj[d]
        w = np.where(k == 0, s0[tag], n0[tag] + np.maximum(k - 1, 0) * n1[tag] + s1[tag])
        dm += np.bincount(cand, weights=w, minlength=C)
    return {"arcs": a, "arcs+geometric": a + g, "arcs+adjacency": a + dm,
            "geometric": g, "adjacency": dm}


def sweep_tag_dmv(args, tr, dev, jack, dev_data, dev_correct, dev_eval):
    """The diagnostic models of :func:`tag_dmv_scores`: jack-knifed on the training lists,
    trained on ``tr`` for the dev lists; each alone as the picker, its within-list
    correlation, and the re-ranker with it as the tree column (dev + CV)."""
    from fastspectral.rerank.model import _argmax_segments

    cuts = np.linspace(0, len(tr), 4).astype(int)
    parts = []
    for f in range(3):
        rest = tr[:cuts[f]] + tr[cuts[f + 1]:]
        lo, hi = int(jack.data.cand_off[cuts[f]]), int(jack.data.cand_off[cuts[f + 1]])
        sub = jack.data.subset(np.arange(cuts[f], cuts[f + 1]))[0]
        parts.append(tag_dmv_scores(rest, tr[cuts[f]:cuts[f + 1]], sub))
        assert len(parts[-1]["arcs"]) == hi - lo
    tr_s = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    dev_s = tag_dmv_scores(tr, dev, dev_data)
    gains = [float(g) for g in args.gains.split(",")]
    for name in tr_s:
        info = {"tag_model": name,
                "dev_alone": dev_eval(_argmax_segments(dev_s[name], dev_data.cand_off)),
                "dev_corr": round(within_list_corr(dev_s[name], dev_correct, dev_data), 4),
                "train_corr": round(within_list_corr(tr_s[name], jack.correct, jack.data), 4)}
        print(json.dumps(info), flush=True)
        one = lambda x: (x, np.ones_like(x), None, None)
        for g in gains:
            r = extra_evaluate(args, jack, dev_data, dev_eval,
                               [(one(tr_s[name]), one(dev_s[name]), ["tree"])], g)
            print(json.dumps({"tag_model": name, "gain": g, **r}), flush=True)


def spectral_speed(args, tr, jack):
    """``--spectral-speed``: fit and scoring CPU seconds (one thread) of the spectral models of
    ``--extra-models`` (words input only), alternated ``--repeat`` times: fit on ``tr``,
    ``log_prob`` and ``fragment_log_prob`` of the jack-knifed lists' trees."""
    from threadpoolctl import threadpool_limits
    from fastspectral.rerank import RerankDepParser

    heads = jack.data.heads_list()
    cand = [tr[b] for b in jack.data.sent]
    print(json.dumps({"load_avg": os.getloadavg(), "trees": len(cand)}), flush=True)
    for rep in range(args.repeat):
        for spec in args.extra_models.split(","):
            what, states, ridge, _, *rest = spec.split(":")
            sp = spectral_params(args.embeddings, "none", int(states), float(ridge))
            if rest:
                sp.update(stop_events=True, stop_adjacency=rest[0].startswith("adj"),
                          stop_weight=float(rest[0].lstrip("stopadj") or 1.0))
            new = RerankDepParser(spectral=spectral_from_params(sp))._new_spectral
            with threadpool_limits(limits=1):
                model, _, fit_c = timed(lambda: new().fit(tr))
            model.log_prob(cand[:100], heads=heads[:100], jobs=1)          # compiled
            model.fragment_log_prob(cand[:100], heads=heads[:100], jobs=1)
            _, _, lp_c = timed(lambda: model.log_prob(cand, heads=heads, jobs=1))
            _, _, fr_c = timed(lambda: model.fragment_log_prob(cand, heads=heads, jobs=1))
            print(json.dumps({"round": rep, "model": spec, "fit_cpu_s": round(fit_c, 2),
                              "log_prob_cpu_s": round(lp_c, 2),
                              "trees_per_cpu_s": round(len(cand) / lp_c),
                              "fragment_cpu_s": round(fr_c, 2)}), flush=True)
    print(json.dumps({"load_avg_end": os.getloadavg()}), flush=True)


def sweep_extra(args, train):
    from fastspectral.rerank.model import _argmax_segments, count_correct

    ndev = int(0.9 * len(train))
    tr, dev = train[:ndev], train[ndev:]
    jack, dev_data = dev_lists(args, tr, dev)
    dev_correct, dev_tok = count_correct(dev, dev_data)
    keep_dev = keep_counts(dev)

    def dev_eval(pick):
        return list_scores(dev_correct, dev_tok, dev_data, keep_dev, pick)[0]

    out = {"load_avg_start": os.getloadavg()}
    out["dev_base_parser"] = dev_eval(dev_data.cand_off[:-1])
    out["cv_base_parser"] = round(100.0 * jack.correct[jack.data.cand_off[:-1]].sum()
                                  / jack.n_tokens, 2)
    print(json.dumps(out), flush=True)
    if args.spectral_speed:
        return spectral_speed(args, tr, jack)
    if args.tag_dmv:
        return sweep_tag_dmv(args, tr, dev, jack, dev_data, dev_correct, dev_eval)
    if args.shag_models:
        return sweep_shag(args, tr, dev, jack, dev_data, dev_correct, dev_tok, keep_dev,
                          dev_eval)
    raw = raw_parses(args, tr) if any(int(m.split(":")[3]) for m in
                                      args.extra_models.split(",")) else None
    scores = {}
    for spec in args.extra_models.split(","):
        tr_s, dev_s, info = extra_scores(args, spec, tr, dev, jack, dev_data, raw)
        scores[spec] = (tr_s, dev_s)
        lp = dev_s[0]
        alone = dev_eval(_argmax_segments(lp, dev_data.cand_off))
        # each score alone as the picker, and its mean within-list correlation with the
        # candidates' correct heads (on the dev lists and on the jack-knifed training lists)
        info["dev_fragment_alone"] = dev_eval(_argmax_segments(dev_s[2], dev_data.cand_off))
        for j, name in ((0, "tree"), (2, "fragment")):
            info[f"dev_{name}_corr"] = round(within_list_corr(dev_s[j], dev_correct,
                                                              dev_data), 4)
            info[f"train_{name}_corr"] = round(within_list_corr(tr_s[j], jack.correct,
                                                                jack.data), 4)
        print(json.dumps({"model": spec, **info, "dev_log_p_alone": alone}), flush=True)
    gains = [float(g) for g in args.gains.split(",")]
    runs = [([], None)]
    runs += [([m], forms) for m in scores for forms in args.extra_forms.split(",")]
    if not args.no_rank_forms:
        runs += [([m], forms) for m in args.extra_models.split(",")[:2]
                 for forms in ("rank", "tree-word+fragment")]
    runs += [(c.split("+"), "tree+fragment") for c in args.extra_combos.split(",") if c]
    for models, forms in runs:
        for g in gains:
            mdl = [(*scores[m], forms.split("+")) for m in models]
            r = extra_evaluate(args, jack, dev_data, dev_eval, mdl, g)
            print(json.dumps({"models": models, "forms": forms, "gain": g, **r}), flush=True)
    print(json.dumps({"load_avg_end": os.getloadavg()}), flush=True)


def sweep_shag(args, tr, dev, jack, dev_data, dev_correct, dev_tok, keep_dev, dev_eval):
    """``--sweep-extra --shag-models ...``: the SHAG model's tree weight and arc posteriors as
    re-ranker columns (docs/notes/rerank.md, "SHAG scores"), beside the baseline re-ranker and the
    section-3 model's scores (``--extra-models``, the default model first), dev + 3-fold CV."""
    from fastspectral.rerank.model import _argmax_segments

    scores = {}
    for spec in [m for m in args.extra_models.split(",") if m]:
        tr_s, dev_s, info = extra_scores(args, spec, tr, dev, jack, dev_data, None)
        scores[spec] = (tr_s, dev_s)
        print(json.dumps({"model": spec, **info}), flush=True)
    for spec in args.shag_models.split(","):
        tr_s, dev_s, info = shag_extra_scores(args, spec, tr, dev, jack, dev_data)
        scores["shag:" + spec] = (tr_s, dev_s)
        # each score alone as the picker, and its within-list correlation with correctness
        for j, name in ((0, "tree"), (2, "arc")):
            x = np.where(np.isfinite(dev_s[j]), dev_s[j], -1e300)
            info[f"dev_{name}_alone"] = dev_eval(_argmax_segments(x, dev_data.cand_off))
            info[f"dev_{name}_corr"] = round(within_list_corr(dev_s[j], dev_correct,
                                                              dev_data), 4)
        print(json.dumps(info), flush=True)
    gains = [float(g) for g in args.gains.split(",")]
    extra = [m for m in args.extra_models.split(",") if m]
    runs = [([], [])]
    runs += [([m], ["tree", "fragment"]) for m in extra]
    for spec in args.shag_models.split(","):
        key = "shag:" + spec
        for forms in args.shag_forms.split(","):
            runs.append(([key], forms.split("+")))
    for combo in [c for c in args.shag_combos.split(",") if c]:
        parts = combo.split("|")            # MODEL=FORM+FORM|MODEL=FORM...
        runs.append(([p.split("=")[0] for p in parts],
                     [p.split("=")[1].split("+") for p in parts]))
    for models, forms in runs:
        for g in gains:
            per = forms if models and isinstance(forms[0], list) else [forms] * len(models)
            mdl = [(*scores[m], f) for m, f in zip(models, per)]
            r = extra_evaluate(args, jack, dev_data, dev_eval, mdl, g)
            print(json.dumps({"models": models, "forms": per, "gain": g, **r}), flush=True)
    print(json.dumps({"load_avg_end": os.getloadavg()}), flush=True)


def within_list_corr(x, correct, data):
    """Mean over the lists of the correlation between ``x`` (non-finite values: the list's
    lowest finite one) and the candidates' correct heads (lists where either is constant are
    skipped)."""
    out = []
    for b in range(len(data.cand_off) - 1):
        a, e = data.cand_off[b], data.cand_off[b + 1]
        v = np.asarray(x[a:e], np.float64)
        ok = np.isfinite(v)
        if not ok.any():
            continue
        v = np.where(ok, v, v[ok].min())
        y = correct[a:e].astype(np.float64)
        if v.std() > 0 and y.std() > 0:
            out.append(np.corrcoef(v, y)[0, 1])
    return float(np.mean(out)) if out else float("nan")


def order2_dev(args, train):
    """Dev split (first 90 % of the training part trains, last 10 % scored): the re-ranker
    with and without the second-order model's score column (``base_order=2``), with and
    without log p-hat, at each of ``--gains`` (docs/notes/rerank.md, "The second-order score as a
    re-ranker feature")."""
    from fastspectral.rerank import RerankDepParser
    from fastspectral.rerank.model import (TrainingLists, _argmax_segments, count_correct,
                                           order2_scores)


    class StartFirst(RerankDepParser):
        """The perceptron started from the first-order score even with base_order=2 (the
        default starts from the second-order score): a dev comparison."""

        def _initial_dense(self, D):
            v = np.zeros(D)
            v[0] = 1.0
            return v

    ndev = int(0.9 * len(train))
    tr, dev = train[:ndev], train[ndev:]
    keep_dev = keep_counts(dev)
    res = {"train_sentences": len(tr), "dev_sentences": len(dev),
           "load_avg_start": os.getloadavg()}
    sp = spectral_params(args.embeddings, args.tags, args.states, args.ridge)
    m = RerankDepParser(k=args.k, mst=base_mst(args), jobs=args.jobs, features="base+spectral",
                        spectral=spectral_from_params(sp), base_order=2)
    (jack, dev_data), t, c = timed(lambda: dev_lists(args, tr, dev))
    res["cpu_s"] = {"lists": c}
    (_, o2_tr), t, c = timed(lambda: m.jackknife_order2_scores(tr, jack.data))
    res["cpu_s"]["order2_jackknife"] = c
    mst2, t, c = timed(lambda: m._new_mst2().fit(tr))
    res["cpu_s"]["order2_fit"] = c
    o2_dev = order2_scores(mst2, dev, dev_data, args.jobs)
    spec_tr, t, c = timed(lambda: m.jackknife_log_prob(tr, jack.data))
    res["cpu_s"]["spectral_jackknife"] = c
    spec = m._new_spectral().fit(tr)
    spec_dev = m._log_prob(spec, dev, dev_data, args.jobs)
    # order2_best: the lists with the second-order model's best tree added (jack-knifed:
    # training_lists refits the fold parsers)
    aug, t, c = timed(lambda: m.training_lists(tr))
    res["cpu_s"]["training_lists_order2_best"] = c
    mst = m._new_mst().fit(tr)
    dev_aug = m._with_order2_best(mst, mst2, dev, dev_data, args.jobs)
    o2_dev_aug = order2_scores(mst2, dev, dev_aug, args.jobs)
    spec_dev_aug = m._log_prob(spec, dev, dev_aug, args.jobs)
    dev_correct, dev_tok = count_correct(dev, dev_data)
    aug_correct, _ = count_correct(dev, dev_aug)
    res["dev_base_order1"] = list_scores(dev_correct, dev_tok, dev_data, keep_dev,
                                         dev_data.cand_off[:-1])
    res["dev_base_order2"] = scores(dev, mst2.parse(dev, jobs=args.jobs))
    res["dev_order2_score_alone_on_lists"] = list_scores(
        dev_correct, dev_tok, dev_data, keep_dev, _argmax_segments(o2_dev, dev_data.cand_off))
    res["dev_order2_score_alone_on_lists_with_best"] = list_scores(
        aug_correct, dev_tok, dev_aug, keep_dev, _argmax_segments(o2_dev_aug, dev_aug.cand_off))
    res["dev_oracle"] = list_scores(dev_correct, dev_tok, dev_data, keep_dev, _argmax_segments(
        dev_correct.astype(np.float64), dev_data.cand_off))
    res["dev_oracle_with_best"] = list_scores(aug_correct, dev_tok, dev_aug, keep_dev,
                                              _argmax_segments(aug_correct.astype(np.float64),
                                                               dev_aug.cand_off))
    res["dev_lists_given_the_best"] = int(dev_aug.n_candidates - dev_data.n_candidates)
    print(json.dumps(res), flush=True)
    rows = []
    for g in [float(x) for x in args.gains.split(",")]:
        for feats in ("base", "base+spectral"):
            for order, best, start in ((1, False, "first"), (2, False, "first"),
                                       (2, True, "first"), (2, False, "second"),
                                       (2, True, "second")):
                cls = RerankDepParser if start == "second" or order == 1 else StartFirst
                r = cls(k=args.k, mst=base_mst(args), jobs=args.jobs,
                        features=feats, spectral=spectral_from_params(sp), base_order=order,
                        order2_best=best, dense_gain=g,
                        rerank_iterations=args.final_rerank_epochs)
                if best:
                    L, D, lp, o2, cor = aug, dev_aug, spec_dev_aug, o2_dev_aug, aug_correct
                else:
                    L = TrainingLists(jack.data, spec_tr[0], jack.correct, jack.n_tokens, {},
                                      *spec_tr[1:], mst2=o2_tr)
                    D, lp, o2, cor = dev_data, spec_dev, o2_dev, dev_correct
                r.fit_lists(L)
                sc = r.rerank_scores(dev, D, logp=lp, threads=args.jobs, mst2=o2)
                rows.append({"gain": g, "features": feats, "base_order": order,
                             "order2_best": best, "start": start,
                             "dev": list_scores(cor, dev_tok, D, keep_dev,
                                                _argmax_segments(sc, D.cand_off)),
                             "dense_weights": r.dense_weights_.round(3).tolist()})
                print(json.dumps(rows[-1]), flush=True)
    res["rows"] = rows
    res["load_avg_end"] = os.getloadavg()
    return res


# ---------------------------------------------------------------------------------------------
# --sweep-order2: the spectral model of the ORDER-2 re-ranker (base_order=2, order2_best, the
# perceptron started from the order-2 score) chosen on the dev split and by 3-fold CV of the
# re-ranker over the jack-knifed training lists (docs/notes/rerank.md, "Choosing the spectral model
# for the order-2 re-ranker").

#: the current default of the order-2 rows: spectral model spec, feature form, gain
ORDER2_DEFAULT = ("words:16:0.3:0", "tree+fragment", 30.0)
#: feature form of --extra-forms -> RerankDepParser.spectral_scores
FORM_SCORES = {"tree": "tree", "fragment": "fragment", "tree+fragment": "both"}


def order2_lists(args, tr, dev):
    """The order-2 re-ranker's lists exactly as ``fit`` builds them (``training_lists`` with
    ``base_order=2``, ``order2_best=True``: jack-knifed first-order lists + each fold's
    second-order tree + jack-knifed second-order scores) and the dev lists as ``parse`` builds
    them (first-order k-best of the parser of ``tr`` + the order-2 parser's tree, order-2
    scores); cached in ``--cache``."""
    from fastspectral.rerank import RerankDepParser
    from fastspectral.rerank.model import order2_scores

    path = os.path.join(args.cache, f"order2_lists_k{args.k}_e{args.epochs}.pkl") \
        if args.cache else None
    if path and os.path.exists(path):
        with open(path, "rb") as fh:
            return pickle.load(fh)
    m = RerankDepParser(k=args.k, mst=base_mst(args), jobs=args.jobs, features="base",
                        base_order=2, order2_best=True)
    lists, _, c_lists = timed(lambda: m.training_lists(tr))
    (mst, mst2), _, c_dev = timed(lambda: (m._new_mst().fit(tr), m._new_mst2().fit(tr)))
    dev_first = m._lists(mst, dev, args.jobs)
    dev_aug = m._with_order2_best(mst, mst2, dev, dev_first, args.jobs)
    o2_dev = order2_scores(mst2, dev, dev_aug, args.jobs)
    dev_o2 = scores(dev, mst2.parse(dev, jobs=args.jobs))
    out = {"lists": lists, "dev": dev_aug, "o2_dev": o2_dev, "dev_base_order2": dev_o2,
           "cpu_s": {"training_lists": round(c_lists, 1), "dev_models": round(c_dev, 1)},
           "dev_lists_given_the_order2_tree": int(dev_aug.n_candidates -
                                                  dev_first.n_candidates)}
    if path:
        os.makedirs(args.cache, exist_ok=True)
        with open(path, "wb") as fh:
            pickle.dump(out, fh)
    return out


def order2_spectral_scores(args, spec, tr, dev, lists, dev_data, raw):
    """:func:`extra_scores` of the model ``spec`` on the order-2 lists (jack-knifed on the
    training lists on the folds of ``fit``), cached in ``--cache``."""
    from types import SimpleNamespace

    if spec.startswith("noise"):
        return placebo_scores(spec, lists.data, dev_data)
    name = spec.replace(":", "_").replace("/", "_")
    emb = os.path.basename(args.embeddings or "none")
    path = os.path.join(args.cache, f"order2_spec_{name}_{emb}_k{args.k}_e{args.epochs}.pkl") \
        if args.cache else None
    if path and os.path.exists(path):
        with open(path, "rb") as fh:
            return pickle.load(fh)
    out = extra_scores(args, spec, tr, dev, SimpleNamespace(data=lists.data), dev_data, raw)
    if path:
        with open(path, "wb") as fh:
            pickle.dump(out, fh)
    return out


def placebo_scores(spec, data, dev_data):
    """A control for :func:`order2_spectral_scores`: ``noiseSEED`` gives every candidate
    random "spectral" scores (log p-hat and fragment log p-hat N(0, 10^2), sign -1 / +1 with
    probability 1/2, 0-4 negative fragments; numpy ``default_rng(SEED)``), no information
    about the trees; the same columns and normalisation as a spectral model's."""
    rng = np.random.default_rng(int(spec[len("noise"):] or 0))

    def draw(n):
        return (10.0 * rng.standard_normal(n), rng.choice([-1.0, 1.0], n),
                10.0 * rng.standard_normal(n), rng.integers(0, 5, n).astype(np.float64))

    tr, dev = draw(data.n_candidates), draw(dev_data.n_candidates)
    return tr, dev, {"cpu_s": 0.0, "seconds": 0.0,
                     "gold_negative_dev": None, "placebo": True}


FIXED_BASE = {"auto": None, "yes": True, "no": False}


def order2_evaluate(args, lists, dev, dev_data, o2_dev, dev_eval, cv_keep, spec_scores,
                    form, gain):
    """Dev UAS / CM and 3-fold CV UAS / CM over the training lists of the order-2 re-ranker
    (``RerankDepParser(base_order=2, order2_best=True)``, its own ``fit_lists`` and
    ``rerank_scores``): baseline features + order-2 column (``spec_scores`` None) or also the
    spectral columns of ``form`` (``(train scores, dev scores)``).  CV: the lists cut in 3
    (the folds of the jack-knife, as ``--sweep-extra``), the re-ranker trained on two and
    scoring the third."""
    from fastspectral.rerank import RerankDepParser
    from fastspectral.rerank.model import TrainingLists, _argmax_segments

    def new():
        return RerankDepParser(k=args.k, mst=base_mst(args), jobs=args.jobs,
                               features="base" if spec_scores is None else "base+spectral",
                               base_order=2, order2_best=True, dense_gain=gain,
                               rerank_iterations=args.final_rerank_epochs, logp_norm="max",
                               logp_sign=True, spectral_scores=FORM_SCORES[form or "tree"],
                               fixed_base=FIXED_BASE[getattr(args, "fixed_base", "auto")],
                               start_weight=getattr(args, "start_weight", None))

    tr_s, dev_s = spec_scores if spec_scores is not None else ((None,) * 4, None)

    def sel(x, c):
        return None if x is None else x[c]

    r = new().fit_lists(TrainingLists(lists.data, tr_s[0], lists.correct, lists.n_tokens, {},
                                      *tr_s[1:], mst2=lists.mst2))
    pick = _argmax_segments(r.rerank_scores(dev, dev_data, logp=dev_s, threads=args.jobs,
                                            mst2=o2_dev), dev_data.cand_off)
    out = {"dev": dev_eval(pick)}
    D = lists.data
    cuts = np.linspace(0, len(D.lengths), 4).astype(int)
    got, whole = 0, 0
    for f in range(3):
        Dtr, ctr = D.subset(np.r_[0:cuts[f], cuts[f + 1]:len(D.lengths)])
        Dte, cte = D.subset(np.arange(cuts[f], cuts[f + 1]))
        r = new().fit_lists(TrainingLists(Dtr, sel(tr_s[0], ctr), lists.correct[ctr], 1, {},
                                          *(sel(x, ctr) for x in tr_s[1:]),
                                          mst2=lists.mst2[ctr]))
        sc = r.rerank_scores(None, Dte, logp=tuple(sel(x, cte) for x in tr_s),
                             threads=args.jobs, mst2=lists.mst2[cte])
        pick = _argmax_segments(sc, Dte.cand_off)
        c = lists.correct[cte][pick]
        got += int(c.sum())
        whole += int((c == cv_keep[cuts[f]:cuts[f + 1]]).sum())
    out["cv"] = (round(100.0 * got / lists.n_tokens, 2),
                 round(100.0 * whole / len(D.lengths), 2))
    return out


def order2_select(rows, default=ORDER2_DEFAULT, tie=0.05):
    """The pre-declared rule of docs/notes/rerank.md ("Choosing the spectral model for the order-2
    re-ranker"): among the spectral rows whose dev UAS beats the baseline + order-2 row at the
    same gain, the highest CV error reduction over that row (ties: higher dev UAS); the
    default row instead when it is eligible and the best's CV UAS is at most ``tie`` above
    its own; None when no eligible row reduces the CV error.  ``rows``: dicts with
    ``model`` (None: the baseline + order-2 row; ``noise*``: the placebo control, never
    chosen), ``forms``, ``gain``, ``dev`` and ``cv``
    ((UAS, CM) pairs).  Returns ``(chosen row or None, eligible rows with their
    'cv_error_reduction_pct')``."""
    ref = {r["gain"]: r for r in rows if r["model"] is None}
    eligible = []
    for r in rows:
        if r["model"] is None or r["gain"] not in ref or r["model"].startswith("noise"):
            continue            # the reference rows and the placebo control are no candidates
        b = ref[r["gain"]]
        if r["dev"][0] > b["dev"][0]:
            red = 100.0 * (r["cv"][0] - b["cv"][0]) / (100.0 - b["cv"][0])
            eligible.append({**r, "cv_error_reduction_pct": round(red, 3)})
    good = [r for r in eligible if r["cv_error_reduction_pct"] > 0]
    if not good:
        return None, eligible
    best = max(good, key=lambda r: (r["cv_error_reduction_pct"], r["dev"][0]))
    dflt = [r for r in eligible if (r["model"], r["forms"], r["gain"]) == default]
    if dflt and best["cv"][0] - dflt[0]["cv"][0] <= tie + 1e-9:
        return dflt[0], eligible
    return best, eligible


def sweep_order2(args, train):
    """``--sweep-order2``: reference rows (base parsers of order 1 and 2, baseline + order-2
    column, + the default spectral model) and the spectral models of ``--extra-models`` x
    ``--extra-forms`` x ``--gains`` in the order-2 re-ranker, each on the dev split and by
    3-fold CV over the training lists; then the pre-declared selection (``order2_select``)."""
    from fastspectral.rerank.model import _argmax_segments, count_correct

    ndev = int(0.9 * len(train))
    tr, dev = train[:ndev], train[ndev:]
    res = {"mode": "sweep-order2", "train_sentences": len(tr), "dev_sentences": len(dev),
           "load_avg_start": os.getloadavg()}
    o2, t, c = timed(lambda: order2_lists(args, tr, dev))
    lists, dev_data, o2_dev = o2["lists"], o2["dev"], o2["o2_dev"]
    res["cpu_s_lists"] = o2["cpu_s"]
    res["cpu_s_lists_this_run"] = round(c, 1)
    dev_correct, dev_tok = count_correct(dev, dev_data)
    keep_dev, keep_tr = keep_counts(dev), keep_counts(tr)

    def dev_eval(pick):
        return list_scores(dev_correct, dev_tok, dev_data, keep_dev, pick)

    def cv_eval(pick):
        return list_scores(lists.correct, lists.n_tokens, lists.data, keep_tr, pick)

    res["dev_base_order1"] = dev_eval(dev_data.cand_off[:-1])
    res["dev_base_order2"] = o2["dev_base_order2"]
    res["dev_order2_score_alone"] = dev_eval(_argmax_segments(o2_dev, dev_data.cand_off))
    res["cv_base_order1"] = cv_eval(lists.data.cand_off[:-1])
    res["cv_order2_score_alone"] = cv_eval(_argmax_segments(lists.mst2, lists.data.cand_off))
    res["dev_oracle"] = dev_eval(_argmax_segments(dev_correct.astype(np.float64),
                                                  dev_data.cand_off))
    res["cv_oracle"] = cv_eval(_argmax_segments(lists.correct.astype(np.float64),
                                                lists.data.cand_off))
    res["dev_lists_given_the_order2_tree"] = o2["dev_lists_given_the_order2_tree"]
    print(json.dumps(res), flush=True)
    gains = [float(g) for g in args.gains.split(",")]
    # the reference rows (baseline + order-2 column; the default spectral model's own form)
    # at gains 3 / 10 / 30 and every screened gain
    ref_gains = sorted(set(gains) | {3.0, 10.0, 30.0})
    rows = []

    def run(model, forms, spec_scores, g):
        r = order2_evaluate(args, lists, dev, dev_data, o2_dev, dev_eval, keep_tr,
                            spec_scores, forms, g)
        rows.append({"model": model, "forms": forms, "gain": g, **r})
        print(json.dumps(rows[-1]), flush=True)

    for g in ref_gains:
        run(None, None, None, g)
    models = [m for m in args.extra_models.split(",") if m]
    if ORDER2_DEFAULT[0] in models:
        models.remove(ORDER2_DEFAULT[0])
    models.insert(0, ORDER2_DEFAULT[0])
    raw = raw_parses(args, tr) if any(int(m.split(":")[3]) for m in models
                                      if not m.startswith("noise")) else None
    forms = [f for f in args.extra_forms.split(",") if f]
    for spec in models:
        tr_s, dev_s, info = order2_spectral_scores(args, spec, tr, dev, lists, dev_data, raw)
        for j, name in ((0, "tree"), (2, "fragment")):
            info[f"dev_{name}_alone"] = dev_eval(_argmax_segments(dev_s[j], dev_data.cand_off))[0]
            info[f"dev_{name}_corr"] = round(within_list_corr(dev_s[j], dev_correct,
                                                              dev_data), 4)
            info[f"train_{name}_corr"] = round(within_list_corr(tr_s[j], lists.correct,
                                                                lists.data), 4)
        print(json.dumps({"model": spec, **info}), flush=True)
        for form in (forms if spec != ORDER2_DEFAULT[0] else
                     sorted(set(forms) | {ORDER2_DEFAULT[1]})):
            for g in (ref_gains if (spec, form) == ORDER2_DEFAULT[:2] else gains):
                run(spec, form, (tr_s, dev_s), g)
    chosen, eligible = order2_select(rows)
    print(json.dumps({"eligible_rows": len(eligible), "spectral_rows":
                      sum(r["model"] is not None for r in rows),
                      "chosen": chosen, "load_avg_end": os.getloadavg()}), flush=True)
    return rows, chosen


def start_grid(args, train):
    """``--start-grid``: the perceptron's start (``fixed_base`` x ``start_weight`` x
    ``dense_gain``) of the baseline re-ranker over first-order lists and of the baseline +
    order-2 column re-ranker, each on the dev split and by 3-fold CV over the jack-knifed
    training lists (docs/notes/rerank.md, "A stable start for the order-2 re-ranker")."""
    from fastspectral.rerank import RerankDepParser
    from fastspectral.rerank.model import TrainingLists, _argmax_segments, count_correct

    ndev = int(0.9 * len(train))
    tr, dev = train[:ndev], train[ndev:]
    keep_dev, keep_tr = keep_counts(dev), keep_counts(tr)
    weights = [float(w) for w in args.start_weights.split(",")]
    gains = [float(g) for g in args.gains.split(",")]
    o1, o1_dev = dev_lists(args, tr, dev)
    o2 = order2_lists(args, tr, dev)
    cases = {1: (o1, o1_dev, None, None), 2: (o2["lists"], o2["dev"], o2["lists"].mst2,
                                               o2["o2_dev"])}
    print(json.dumps({"mode": "start-grid", "load_avg_start": os.getloadavg()}), flush=True)
    for order, (L, dev_data, tr2, dev2) in cases.items():
        D = L.data
        dev_correct, dev_tok = count_correct(dev, dev_data)

        def lists(idx):
            sub, c = D.subset(idx)
            return sub, TrainingLists(sub, None, L.correct[c], 1, {}, None, None, None,
                                      mst2=None if tr2 is None else tr2[c]), c

        def fit_score(kw):
            new = dict(features="base", base_order=order, rerank_iterations=5, **kw)
            m = RerankDepParser(**new).fit_lists(
                TrainingLists(D, None, L.correct, 1, {}, None, None, None, mst2=tr2))
            pick = _argmax_segments(m.rerank_scores(None, dev_data, threads=args.jobs,
                                                    mst2=dev2), dev_data.cand_off)
            out = {"dev": list_scores(dev_correct, dev_tok, dev_data, keep_dev, pick)}
            cuts = np.linspace(0, len(D.lengths), 4).astype(int)
            got = np.zeros(len(D.lengths), np.int64)
            for f in range(3):
                _, tl, _ = lists(np.r_[0:cuts[f], cuts[f + 1]:len(D.lengths)])
                te, _, c = lists(np.arange(cuts[f], cuts[f + 1]))
                m = RerankDepParser(**new).fit_lists(tl)
                sc = m.rerank_scores(None, te, threads=args.jobs,
                                     mst2=None if tr2 is None else tr2[c])
                got[cuts[f]:cuts[f + 1]] = L.correct[c][_argmax_segments(sc, te.cand_off)]
            out["cv"] = (round(100.0 * got.sum() / L.n_tokens, 2),
                         round(100.0 * float(np.mean(got == keep_tr)), 2))
            return out

        start = L.mst2 if order == 2 else None
        ref = {"order": order, "reference": True,
               "dev_base": list_scores(dev_correct, dev_tok, dev_data, keep_dev,
                                       dev_data.cand_off[:-1] if dev2 is None else
                                       _argmax_segments(dev2, dev_data.cand_off)),
               "cv_base": list_scores(L.correct, L.n_tokens, D, keep_tr,
                                      D.cand_off[:-1] if start is None else
                                      _argmax_segments(start, D.cand_off))}
        print(json.dumps(ref), flush=True)
        for g in gains:
            print(json.dumps({"order": order, "fixed_base": False, "start_weight": 1.0,
                              "gain": g, **fit_score(dict(dense_gain=g, fixed_base=False,
                                                           start_weight=1.0))}), flush=True)
            for w in weights:
                print(json.dumps({"order": order, "fixed_base": True, "start_weight": w,
                                  "gain": g, **fit_score(dict(dense_gain=g, fixed_base=True,
                                                               start_weight=w))}), flush=True)
    print(json.dumps({"load_avg_end": os.getloadavg()}), flush=True)


def final(args, train, test):
    from fastspectral.rerank import RerankDepParser
    from fastspectral.rerank.kbest import kbest_packed
    from fastspectral.rerank.reranker import RerankData

    out = {"load_avg_start": os.getloadavg(), "train": len(train), "test": len(test)}
    sp = spectral_params("pos" if args.spectral_input == "pos" else args.embeddings,
                         args.tags, args.states, args.ridge)
    if args.stop_events:
        sp.update(stop_events=True, stop_adjacency=args.stop_adjacency,
                  stop_weight=args.stop_weight)
    out["spectral_params"] = sp
    kw = dict(k=args.k, mst=base_mst(args), jobs=args.jobs, dense_gain=args.gain,
              rerank_iterations=args.final_rerank_epochs, logp_norm=args.norm,
              logp_sign=not args.no_sign,
              spectral=spectral_from_params(sp, args.spectral_input),
              spectral_scores=args.spectral_scores, spectral_input=args.spectral_input,
              shag=shag_from_params({"method": args.shag_method, "n_states": args.shag_states,
                                     "lexical": args.shag_lexical}),
              shag_scores=args.shag_scores,
              order2_best=not args.no_order2_best, fixed_base=FIXED_BASE[args.fixed_base],
              start_weight=args.start_weight)
    all_feats = "base+spectral+shag" if args.shag else "base+spectral"
    m = RerankDepParser(features=all_feats, **kw)
    (lists, t_lists, c_lists) = timed(lambda: m.training_lists(train))
    out["seconds"] = dict(lists.seconds)
    lists_by_order = {1: lists}
    if args.base_order2:
        # the order-2 rows' lists: the second-order scores (and, with order2_best, the
        # second-order model's best tree added), jack-knifed
        m.base_order = 2
        lists_by_order[2], t, c = timed(lambda: m.training_lists(train))
        m.base_order = 1
        out["seconds_lists_order2"] = dict(lists_by_order[2].seconds)
        out["cpu_s_lists_order2"] = c
    m.mst_, t, c = timed(lambda: m._new_mst().fit(train))
    out["seconds"]["mst"] = t
    out["cpu_s"] = {"training_lists": c_lists, "mst": c}
    m.spectral_, t, c = timed(lambda: m._new_spectral().fit(train))
    out["seconds"]["spectral_final"] = t
    out["cpu_s"]["spectral_final"] = c
    m.shag_ = None
    if args.shag:
        m.shag_, t, c = timed(lambda: m._new_shag().fit(train))
        out["seconds"]["shag_final"] = t
        out["cpu_s"]["shag_final"] = c
        out["shag_params"] = m._new_shag().get_params()
    m.mst2_ = None
    if args.base_order2:
        m.mst2_, t, c = timed(lambda: m._new_mst2().fit(train))
        out["seconds"]["mst2_final"] = t
        out["cpu_s"]["mst2_final"] = c
    out["oracle_uas_train_lists"] = None
    rows, speeds = {}, {}
    out["load_avg_speed"] = os.getloadavg()
    m.rerank = False
    base_pred, t, c = timed(lambda: m.parse(test))
    rows["base_parser"] = scores(test, base_pred)
    speeds["base_parse"] = {"sent_per_s": len(test) / t, "cpu_s": c}
    if args.base_order2:
        pred, t, c = timed(lambda: m.mst2_.parse(test))
        rows["base_parser_order2"] = scores(test, pred)
        speeds["base_parse_order2"] = {"sent_per_s": len(test) / t, "cpu_s": c}
    m.rerank = True
    sp_model, shag_model = m.spectral_, m.shag_
    runs = [(f, 1) for f in ("base", "base+spectral") + (("base+shag", "base+spectral+shag")
                                                          if args.shag else ())]
    if args.base_order2:
        runs = [(f, o) for f, _ in runs for o in (1, 2)]
    for feats, order in runs:
        m.features = feats
        m.base_order = order
        m.dense_gain = args.gain_order2 if order == 2 and args.gain_order2 else args.gain
        feats = feats + ("+order2" if order == 2 else "")
        m.spectral_ = sp_model if m._spectral else None
        m.shag_ = shag_model if m._shag else None
        _, t, c = timed(lambda: m.fit_lists(lists_by_order[order]))
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
        if m._order2 and m.order2_best:
            data, t0, c0 = timed(lambda: m._with_order2_best(m.mst_, m.mst2_, test, data,
                                                             args.jobs))
            speeds["order2_best_tree"] = {"sent_per_s": len(test) / t0, "cpu_s": c0}
        _, t, c = timed(lambda: m.rerank_scores(test, data, threads=args.jobs))
        speeds["rerank_" + feats] = {"sent_per_s": len(test) / t, "cpu_s": c}
    out["rerank"] = rows
    out["speed"] = speeds
    e0 = 100 - rows["base"][0]
    out["error_reduction_pct"] = 100 * (e0 - (100 - rows["base+spectral"][0])) / e0
    out["error_reduction_pct_by_features"] = {f: 100 * (e0 - (100 - rows[f][0])) / e0
                                              for f in rows if f.startswith("base+")}
    out["load_avg_end"] = os.getloadavg()
    return out


def base_only(args, train, test, epochs_list, label):
    """Rows of the base parser alone for each order in ``--orders`` and epochs in
    ``epochs_list``: accuracy on ``test``, training CPU-s (``--jobs`` threads), and the parse
    speed measured ``--repeat`` times, the orders alternated (CPU-s at ``--jobs`` threads and
    wall sentences/s at ``--speed-jobs`` threads)."""
    from fastspectral.rerank import MSTParser

    orders = [int(x) for x in args.orders.split(",")]
    for o in orders:     # load the compiled kernels (Numba cache) before any timing
        MSTParser(order=o, iterations=1, bits=16, jobs=1).fit(train[:20]).predict_heads(test[:5])
    rows = []
    for ep in epochs_list:
        models = {}
        for o in orders:
            load0 = os.getloadavg()
            m, t, c = timed(lambda: MSTParser(order=o, iterations=ep, jobs=args.jobs).fit(train))
            models[o] = m
            pred = m.parse(test, jobs=args.jobs)
            uas, cm = scores(test, pred)
            rows.append({"split": label, "order": o, "epochs": ep, "train": len(train),
                         "test": len(test), "uas_no_punct": uas, "complete_match": cm,
                         "train_cpu_s": round(c, 2), "train_wall_s": round(t, 2),
                         "train_errors_per_epoch": m.fit_info_.errors,
                         "load_avg_train": load0})
            print(json.dumps(rows[-1]), flush=True)
        if args.speed_jobs:
            speed = {o: {"cpu_s": [], "wall_sent_per_s": []} for o in orders}
            load0 = os.getloadavg()
            for _ in range(args.repeat):
                for o in orders:
                    _, t, c = timed(lambda: models[o].predict_heads(test, jobs=args.jobs))
                    speed[o]["cpu_s"].append(round(c, 3))
                    _, t2, _ = timed(lambda: models[o].predict_heads(test, jobs=args.speed_jobs))
                    speed[o]["wall_sent_per_s"].append(round(len(test) / t2, 1))
            for o in orders:
                speed[o]["sent_per_cpu_s_median"] = round(
                    len(test) / float(np.median(speed[o]["cpu_s"])), 1)
            print(json.dumps({"split": label, "epochs": ep, "parse_speed": speed,
                              "jobs_cpu": args.jobs, "jobs_wall": args.speed_jobs,
                              "n_sentences": len(test), "load_avg_start": load0,
                              "load_avg_end": os.getloadavg()}), flush=True)
    return rows


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
    ap.add_argument("--stop-events", action="store_true",
                    help="main mode: the spectral model with STOP events (stop_events=True)")
    ap.add_argument("--stop-adjacency", action="store_true",
                    help="main mode, with --stop-events: stop_adjacency=True")
    ap.add_argument("--stop-weight", type=float, default=1.0)
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
    ap.add_argument("--fixed-base", choices=("auto", "yes", "no"), default="auto",
                    help="--sweep-order2 and the main mode: RerankDepParser(fixed_base=None / "
                         "True / False), the base score's weight kept at its start")
    ap.add_argument("--start-grid", action="store_true",
                    help="dev + CV of the baseline re-rankers (order 1, order 2) over "
                         "fixed_base x --start-weights x --gains")
    ap.add_argument("--start-weights", default="1,10,100,1000,3000",
                    help="--start-grid: the fixed start weights")
    ap.add_argument("--start-weight", type=float, default=None,
                    help="--sweep-order2 and the main mode: RerankDepParser(start_weight=W) "
                         "(default None: the class's)")
    ap.add_argument("--sweep-extra", action="store_true",
                    help="further dev experiments (self-training, one-hot inputs, feature "
                         "forms, several spectral models; dev + CV over the training lists)")
    ap.add_argument("--raw", default=os.path.join(os.path.dirname(__file__), "..", "..",
                                                  "shared", "data", "brown",
                                                  "brown-tagged.txt"))
    ap.add_argument("--raw-tagset", default="brown", choices=("ptb", "brown"))
    ap.add_argument("--extra-models", default="words:16:0.3:0,pos:8:0.03:57340,"
                    "words:16:0.3:57340,pos:8:0.03:0,cluster64:8:0.3:0,cluster64:16:0.3:0,"
                    "cluster64:16:0.3:57340",
                    help="spectral models INPUT:STATES:RIDGE:RAW_SENTENCES[:stopW], INPUT one "
                         "of words, pos, clusterN (k-means of the eigenwords, one-hot); "
                         "with --sweep-order2 also noiseSEED (random scores: a placebo); "
                         "stopW: with STOP events, stop_weight W (e.g. stop1); adjW: STOP "
                         "events with the DMV's adjacency (stop_adjacency=True)")
    ap.add_argument("--extra-forms", default="tree,fragment,tree+fragment",
                    help="--sweep-extra: the column sets run for each model")
    ap.add_argument("--spectral-speed", action="store_true",
                    help="--sweep-extra: fit / scoring CPU seconds of the --extra-models "
                         "(words input), one thread, --repeat alternated rounds")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--tag-dmv", action="store_true",
                    help="--sweep-extra: the count-based tag models with / without valency "
                         "(a diagnostic) instead of the spectral models")
    ap.add_argument("--no-rank-forms", action="store_true",
                    help="--sweep-extra: skip the rank / per-word forms of the first two "
                         "models")
    ap.add_argument("--extra-combos", default="words:16:0.3:0+pos:8:0.03:0,"
                    "words:16:0.3:0+pos:8:0.03:57340,words:16:0.3:0+cluster64:8:0.3:0,"
                    "words:16:0.3:0+pos:8:0.03:57340+cluster64:8:0.3:0")
    ap.add_argument("--shag", action="store_true",
                    help="main mode: also the re-rankers with the SHAG scores (base+shag, "
                         "base+spectral+shag; SHAG model: --shag-method, --shag-states, "
                         "--shag-lexical; --shag-scores)")
    ap.add_argument("--shag-method", default="spectral", choices=("spectral", "em", "det",
                                                                   "det+f"))
    ap.add_argument("--shag-states", type=int, default=8)
    ap.add_argument("--shag-lexical", default="lex+fcp", choices=("none", "lex", "lex+f",
                                                                  "lex+fcp"))
    ap.add_argument("--shag-scores", default="both", choices=("tree", "arc", "both"))
    ap.add_argument("--shag-models", default="",
                    help="--sweep-extra: SHAG models METHOD:STATES:LEXICAL (e.g. "
                         "spectral:8:lex+fcp) whose tree weight / arc posteriors are re-ranker "
                         "columns (with --extra-models as the section-3 reference)")
    ap.add_argument("--shag-forms", default="shag-tree,shag-arc,shag-tree+shag-arc",
                    help="column sets of each SHAG model (shag-tree[-max|-word|-list], "
                         "shag-arc[-...])")
    ap.add_argument("--shag-combos", default="",
                    help="MODEL=FORM+FORM|MODEL=FORM,...: several models at once")
    ap.add_argument("--base-order2", action="store_true",
                    help="main mode: also the re-rankers with the second-order model's score "
                         "(base_order=2) and the second-order base parser's row")
    ap.add_argument("--gain-order2", type=float, default=None,
                    help="main mode, --base-order2: dense_gain of the order-2 rows (default: "
                         "--gain)")
    ap.add_argument("--no-order2-best", action="store_true",
                    help="main mode, --base-order2: order2_best=False (rescoring only)")
    ap.add_argument("--order2-dev", action="store_true",
                    help="dev split: the re-ranker with / without the second-order score "
                         "column (base_order=2), with / without log p-hat, at each of --gains")
    ap.add_argument("--sweep-order2", action="store_true",
                    help="the order-2 re-ranker (base_order=2, order2_best) with the spectral "
                         "models of --extra-models x --extra-forms x --gains (and the "
                         "reference rows), on the dev split and by 3-fold CV over the "
                         "training lists; then the pre-declared selection rule")
    ap.add_argument("--cv", type=int, default=0, help="N-fold cross-validation on --data")
    ap.add_argument("--base-only", action="store_true",
                    help="the base parser alone, for each of --orders (--base-split, --cv)")
    ap.add_argument("--orders", default="1,2", help="--base-only: MSTParser orders")
    ap.add_argument("--base-split", default="dev", choices=("dev", "test"),
                    help="--base-only: the dev split (--base-epochs) or the test part "
                         "(--epochs)")
    ap.add_argument("--base-epochs", default="3,5,10", help="--base-only --base-split dev")
    ap.add_argument("--speed-jobs", type=int, default=2,
                    help="--base-only: threads of the wall-clock parse speed (0: no speed)")
    args = ap.parse_args(argv)
    from fastspectral.trees.readers import read_treebank

    sents = list(read_treebank(args.data))
    if args.base_only:
        if args.cv:
            cuts = np.linspace(0, len(sents), args.cv + 1).astype(int)
            rows = []
            for f in range(args.cv):
                rows += base_only(args, sents[:cuts[f]] + sents[cuts[f + 1]:],
                                  sents[cuts[f]:cuts[f + 1]], [args.epochs], f"cv{f}")
            mean = {o: np.mean([[r["uas_no_punct"], r["complete_match"]] for r in rows
                                if r["order"] == o], axis=0).round(2).tolist()
                    for o in sorted({r["order"] for r in rows})}
            print(json.dumps({"cv_mean": mean}))
            return
        ntr = int(0.8 * len(sents))
        if args.base_split == "dev":
            nd = int(0.9 * ntr)
            base_only(args, sents[:nd], sents[nd:ntr],
                      [int(x) for x in args.base_epochs.split(",")], "dev")
        else:
            base_only(args, sents[:ntr], sents[ntr:], [args.epochs], "test")
        return
    if args.order2_dev:
        print(json.dumps(order2_dev(args, sents[:int(0.8 * len(sents))])))
        return
    if args.start_grid:
        start_grid(args, sents[:int(0.8 * len(sents))])
        return
    if args.sweep_order2:
        sweep_order2(args, sents[:int(0.8 * len(sents))])
        return
    if args.sweep_extra:
        sweep_extra(args, sents[:int(0.8 * len(sents))])
        return
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
