"""Stage ``controls`` of ``benchmarks/wsj_dependency.py``: the re-ranker of Dhillon et al.
(2012) trained many times from one set of k-best lists, to tell what log p-hat adds from
what any extra column or another perceptron seed gives.

:func:`control_lists` builds the jack-knifed k-best lists of the training treebank and the
lists of the scored one once, as ``RerankDepParser.fit`` and ``parse`` build them, with every
candidate's log p-hat, and keeps them in a work folder (a pickle);
:func:`control_spectral` scores the same lists with another latent dependency model (its own
pickle); :func:`control_rows` trains re-rankers from them (``fit_lists``, ``rerank_scores``):
the baseline features, + log p-hat, + placebo columns, other perceptron seeds, other fit
settings (:data:`FIT_PARAMS`), one JSON row each; :func:`controls_table` prints the rows.
The command line is ``wsj_dependency.py``'s (``--stages controls``).
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
import pickle
import sys
import time
from pathlib import Path

__all__ = ["order_setting", "cpu_s", "control_lists", "control_spectral", "control_rows",
           "controls_table", "err_red", "FIT_PARAMS"]


def order_setting(order: str, jobs: int, params: dict | None = None
                  ) -> tuple[int, dict, list[str]]:
    """An order of ``--mst-orders`` as ``(base_order, RerankDepParser params, train
    rerank-dep options)``: ``1`` first-order lists; ``2`` first-order lists rescored by a
    second-order model (``--base-order 2``); ``2k`` the second-order model's own k-best lists
    (``--kbest-order 2``: ``mst`` of ``params``, or the default base parser, with
    ``order=2``; the paper's second-order setting).  ``params``: the re-ranker's other
    settings, returned with the order's."""
    from sklearn.base import clone

    from fastspectral.rerank import MSTParser

    params = dict(params or {})
    if order == "2k":
        mst = params.get("mst")
        mst = MSTParser(random_state=0, jobs=jobs) if mst is None else clone(mst)
        return 1, {**params, "mst": mst.set_params(order=2)}, ["--kbest-order", "2"]
    if order not in ("1", "2"):
        raise SystemExit(f"--mst-orders: 1, 2 or 2k, not {order!r}")
    return int(order), params, ["--base-order", order]


def cpu_s() -> float:
    """User + system CPU seconds of this process so far (all its threads)."""
    return time.process_time()


# stage controls: the re-ranker's rows of one set of k-best lists


def control_lists(train_p: Path, dev_p: Path, order: str, jobs: int, work: Path,
                  params: dict | None = None) -> dict:
    """The k-best lists of the controls, built once and kept in ``work``: the jack-knifed
    training lists of ``train_p`` (``RerankDepParser.training_lists`` with the defaults of
    ``fastspectral train rerank-dep``, or ``RerankDepParser(**params)``, and
    the order's settings, :func:`order_setting`), the lists of ``dev_p`` as
    ``RerankDepParser.predict_heads`` makes them (the base parser of all of ``train_p``; with
    order 2 the second-order model's best tree added and its scores), and log p-hat of every
    candidate (``jackknife_log_prob`` on the training lists; the spectral model of all of
    ``train_p`` on the dev lists), with the CPU seconds of each piece."""
    from fastspectral.rerank import RerankDepParser
    from fastspectral.trees.corpus import read_training_items

    params = dict(params or {})
    base_order, full, _ = order_setting(str(order), jobs, params)
    path = lists_path(train_p, dev_p, order, work, params)
    if path.exists():
        return read_pickle(path, "lists")
    train = read_training_items(str(train_p), "dependency")
    dev = read_training_items(str(dev_p), "dependency")
    # the model `train rerank-dep --base-order ORDER --jobs JOBS` builds (its other defaults)
    base = RerankDepParser(**{"jobs": jobs, **full, "features": "base",
                              "base_order": base_order})
    spec = RerankDepParser(**{"jobs": jobs, **full, "features": "base+spectral",
                              "base_order": base_order})
    cpu, load = {}, os.getloadavg()[0]

    def timed_cpu(key, f):
        c0 = cpu_s()
        r = f()
        cpu[key] = cpu_s() - c0
        print(f"{key}: {cpu[key]:.1f} CPU-s", file=sys.stderr, flush=True)
        return r

    lists = timed_cpu("training_lists", lambda: base.training_lists(train))
    mst = timed_cpu("mst", lambda: base._new_mst().fit(train))
    dev_data = timed_cpu("dev_lists", lambda: base._lists(mst, dev, jobs))
    o2_dev = None
    if base_order == 2:
        mst2 = timed_cpu("mst2", lambda: base._new_mst2().fit(train))

        def dev2():
            d = base._with_order2_best(mst, mst2, dev, dev_data, jobs) if base.order2_best \
                else dev_data
            return d, base._order2_scores(mst2, dev, d, jobs)
        dev_data, o2_dev = timed_cpu("dev_order2", dev2)
    spec_tr = timed_cpu("spectral_jackknife",
                        lambda: spec.jackknife_log_prob(train, lists.data))
    model = timed_cpu("spectral", lambda: spec._new_spectral().fit(spec._spectral_view(train)))
    spec_dev = timed_cpu("dev_spectral", lambda: spec._log_prob(model, dev, dev_data, jobs))
    out = {"lists": lists, "dev": dev, "dev_data": dev_data, "dev_mst2": o2_dev,
           "spec_train": spec_tr, "spec_dev": spec_dev, "cpu_s": cpu, "load": load,
           "train": str(train_p), "dev_path": str(dev_p), "order": order}
    write_pickle(path, out)
    return out


def param_tag(params: dict) -> str:
    """``""``, or ``_`` and a short hash of ``params`` (names of the kept pickles)."""
    return "" if not params else \
        "_" + hashlib.sha1(repr(sorted(params.items())).encode()).hexdigest()[:10]


def lists_path(train_p: Path, dev_p: Path, order, work: Path, params: dict) -> Path:
    """The pickle of :func:`control_lists`: named by both treebanks, their sizes, the order
    and the re-ranker's settings."""
    st_t, st_d = train_p.stat(), dev_p.stat()
    return work / (f"controls_{train_p.stem}_{st_t.st_size}_{dev_p.stem}_{st_d.st_size}"
                   f"_order{order}{param_tag(params)}.pkl")


def read_pickle(path: Path, what: str):
    with open(path, "rb") as fh:
        out = pickle.load(fh)
    print(f"{what} read from {path}", file=sys.stderr, flush=True)
    return out


def write_pickle(path: Path, obj) -> None:
    """``obj`` to ``path`` through a temporary file (a killed run leaves no half file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as fh:
        pickle.dump(obj, fh, protocol=pickle.HIGHEST_PROTOCOL)
    tmp.replace(path)


def spectral_label(spectral: dict) -> str:
    """The suffix ``+spectral:NAME=VALUE,...`` of the rows of another spectral model."""
    return "+spectral:" + ",".join(f"{k}={v}" for k, v in sorted(spectral.items()))


def control_spectral(train_p: Path, dev_p: Path, order, jobs: int, work: Path,
                     params: dict, spectral: dict) -> dict:
    """The lists of :func:`control_lists` with log p-hat of another latent dependency model:
    ``spectral`` holds its constructor arguments over the re-ranker's defaults
    (:func:`~fastspectral.rerank.providers.spectral_from_params`) and optionally
    ``spectral_input`` (``"words"`` or ``"pos"``, the re-ranker's); the jack-knife on the
    training lists and the model of all of ``train_p`` on the dev lists, as
    ``RerankDepParser(spectral=..., spectral_input=...)`` computes them.  The scores are kept
    in ``work`` beside the lists (their own pickle; the lists are not built again)."""
    from fastspectral.rerank import RerankDepParser
    from fastspectral.rerank.providers import spectral_from_params
    from fastspectral.trees.corpus import read_training_items

    params, sp = dict(params or {}), dict(spectral)
    L = control_lists(train_p, dev_p, order, jobs, work, params)
    lp = lists_path(train_p, dev_p, order, work, params)
    path = lp.with_name(f"{lp.stem}_spectral{param_tag(sp)}.pkl")
    if path.exists():
        got = read_pickle(path, "spectral scores")
    else:
        inp = sp.pop("spectral_input", params.get("spectral_input", "words"))
        base_order, full, _ = order_setting(str(order), jobs, params)
        spec = RerankDepParser(**{"jobs": jobs, **full, "features": "base+spectral",
                                  "base_order": base_order, "spectral_input": inp,
                                  "spectral": spectral_from_params(sp, inp)})
        train = read_training_items(str(train_p), "dependency")
        cpu, c0 = {}, cpu_s()
        tr = spec.jackknife_log_prob(train, L["lists"].data)
        cpu["spectral_jackknife"], c0 = cpu_s() - c0, cpu_s()
        model = spec._new_spectral().fit(spec._spectral_view(train))
        cpu["spectral"], c0 = cpu_s() - c0, cpu_s()
        dv = spec._log_prob(model, L["dev"], L["dev_data"], jobs)
        cpu["dev_spectral"] = cpu_s() - c0
        print(f"spectral {sp} ({inp}): " + ", ".join(f"{k} {v:.1f}" for k, v in cpu.items())
              + " CPU-s", file=sys.stderr, flush=True)
        got = {"spec_train": tr, "spec_dev": dv, "cpu_s": cpu}
        write_pickle(path, got)
    return {**L, "spec_train": got["spec_train"], "spec_dev": got["spec_dev"],
            "spectral_cpu_s": got["cpu_s"]}


def control_rows(res, train_p: Path, dev_p: Path, order: str, jobs: int, work: Path,
                 seeds: list[int], params: dict | None = None, rerank_seeds=(),
                 fit_params: dict | None = None, spectral: dict | None = None):
    """Rows ``controls order ORDER ...``: from one set of lists (:func:`control_lists`), the
    first-order base parser's best tree, the oracle, and re-rankers (``fit_lists`` on the
    jack-knifed lists, ``rerank_scores`` of the dev lists) with the baseline features, + log
    p-hat and + placebo columns (one row per seed), each with its section-22 UAS without
    punctuation and its error reduction against the baseline re-ranker.  ``params``: the
    re-rankers' other settings (default: those of ``fastspectral train rerank-dep``);
    ``rerank_seeds``: also the baseline and + log p-hat re-rankers with these
    ``random_state`` (the perceptron's order of the lists; 0 is the default's);
    ``fit_params``: settings of the re-rankers' fit alone (:data:`FIT_PARAMS`; the same
    lists), rows ``controls order ORDER+NAME=VALUE,... ...``; ``spectral``: log p-hat of
    another latent dependency model on the same lists (:func:`control_spectral`), rows
    ``controls order ORDER+spectral:NAME=VALUE,... ...`` (the baseline rows again, for the
    table: the same lists and fit give the same numbers)."""
    fit_params = dict(fit_params or {})
    if set(fit_params) - FIT_PARAMS:
        raise SystemExit(f"--fit-params: only {', '.join(sorted(FIT_PARAMS))}, not "
                         f"{', '.join(sorted(set(fit_params) - FIT_PARAMS))}")
    suffix = "".join(f"+{k}={v}" for k, v in sorted(fit_params.items()))
    if spectral:
        suffix += spectral_label(spectral)
    pre = f"controls order {order}{suffix} "
    extra = [s for s in rerank_seeds if s != (params or {}).get("random_state", 0)]
    want = ["lists", "base", "base+spectral"] + [f"base+placebo seed={s}" for s in seeds] + \
        [f"{f} perceptron seed={s}" for s in extra for f in ("base", "base+spectral")]
    if all(pre + w in res for w in want):
        return
    import numpy as np
    from bench_rerank import placebo_scores
    from fastspectral.eval.attachment import attachment_scores
    from fastspectral.rerank import RerankDepParser
    from fastspectral.rerank.model import TrainingLists, _argmax_segments

    params = dict(params or {})
    base_order, full, _ = order_setting(str(order), jobs, params)
    L = control_spectral(train_p, dev_p, order, jobs, work, params, spectral) if spectral \
        else control_lists(train_p, dev_p, order, jobs, work, params)
    lists, dev, D, o2 = L["lists"], L["dev"], L["dev_data"], L["dev_mst2"]

    def dev_uas(pick) -> float:
        pred = [dataclasses.replace(s, heads=[int(h) for h in D.candidate_heads(c)])
                for s, c in zip(dev, pick)]
        return attachment_scores(dev, pred, punct="exclude").uas

    if pre + "lists" not in res:
        from fastspectral.rerank.model import count_correct

        correct, n_tok = count_correct(dev, D)
        oracle = _argmax_segments(correct.astype(np.float64), D.cand_off)
        lp, sign = L["spec_dev"][:2]
        res.add({"row": pre + "lists", "train": L["train"], "dev": L["dev_path"],
                 "train_sentences": int(len(lists.data.lengths)),
                 "train_candidates": int(lists.data.n_candidates),
                 "dev_sentences": len(dev), "dev_candidates": int(D.n_candidates),
                 "mst_uas": dev_uas(D.cand_off[:-1]), "oracle_uas": dev_uas(oracle),
                 "train_oracle_uas": 100.0 * float(np.maximum.reduceat(
                     lists.correct, lists.data.cand_off[:-1]).sum()) / max(1, lists.n_tokens),
                 "dev_logp_not_finite": float(np.mean(~np.isfinite(lp) | (sign == 0))),
                 "dev_logp_negative": float(np.mean(sign < 0)),
                 "cpu_s": {k: round(v, 1) for k, v in L["cpu_s"].items()},
                 "lists_cpu_s": round(sum(L["cpu_s"].values()), 1), "load": L["load"],
                 **({"spectral_cpu_s": {k: round(v, 1) for k, v in
                                        L["spectral_cpu_s"].items()}} if spectral else {})})
    spec = (L["spec_train"], L["spec_dev"])
    rows = [("base", "base", None, {}), ("base+spectral", "base+spectral", spec, {})]
    for s in seeds:
        tr, dv, _ = placebo_scores(f"noise{s}", lists.data, D)
        rows.append((f"base+placebo seed={s}", "base+spectral", (tr, dv), {}))
    for s in extra:
        rows += [(f"base perceptron seed={s}", "base", None, {"random_state": s}),
                 (f"base+spectral perceptron seed={s}", "base+spectral", spec,
                  {"random_state": s})]
    for label, features, scores, more in rows:
        if pre + label in res:
            continue
        tr, dv = scores if scores is not None else ((None,) * 4, None)
        load, c0 = os.getloadavg()[0], cpu_s()
        r = RerankDepParser(**{"jobs": jobs, **full, **fit_params, **more,
                               "features": features, "base_order": base_order})
        r.fit_lists(TrainingLists(lists.data, tr[0], lists.correct, lists.n_tokens, {},
                                  *tr[1:], mst2=lists.mst2))
        c1 = cpu_s()
        pick = _argmax_segments(r.rerank_scores(dev, D, logp=dv, threads=jobs, mst2=o2),
                                D.cand_off)
        got = dev_uas(pick)
        ref = res.rows.get(pre + "base")
        res.add({"row": pre + label, "features": features, "uas": got,
                 "error_reduction_pct": None if label == "base" or ref is None
                 else err_red(got, ref["uas"]),
                 "mistakes": r.fit_info_.mistakes, "fit_cpu_s": c1 - c0,
                 "score_cpu_s": cpu_s() - c1, "load": load})


def err_red(x: float, ref: float) -> float:
    """Error reduction (%) of UAS ``x`` over ``ref``."""
    return 100.0 * (x - ref) / (100.0 - ref)


#: the re-ranker's settings that change its fit and not its k-best lists (``--fit-params``)
FIT_PARAMS = {"fixed_base", "start_weight", "dense_gain", "rerank_iterations", "rerank_bits",
              "logp_norm", "logp_sign"}


def controls_table(rows: dict) -> list[str]:
    out = []
    orders = sorted({k.split(" ")[2] for k in rows if k.startswith("controls order ")})
    for order in orders:
        pre = f"controls order {order} "
        a, li = rows.get(pre + "base"), rows.get(pre + "lists")
        if a is None or li is None:
            continue
        out.append(f"Controls of log p-hat, order {order} (one set of lists; section 22 UAS "
                   f"without punctuation; lists built in {li['lists_cpu_s']:.0f} CPU-s, "
                   f"load {li['load']:.1f}):")
        out.append("| re-ranker | UAS §22 | error reduction vs baseline (%) | fit CPU-s |")
        out.append("|---|---|---|---|")
        first = "order 2" if order.startswith("2k") else "order 1"
        out.append(f"| base parser's best ({first}) | {li['mst_uas']:.2f} | | |")
        out.append(f"| oracle of the lists | {li['oracle_uas']:.2f} | | |")
        groups = {"base+placebo": [], "base": [a["uas"]],
                  "base+spectral": [rows[pre + "base+spectral"]["uas"]]
                  if pre + "base+spectral" in rows else []}
        for k, r in rows.items():
            if not k.startswith(pre) or k == pre + "lists":
                continue
            label = k[len(pre):]
            if " seed=" in label:
                groups[label.split(" ")[0]].append(r["uas"])
            red = "" if r is a else f"{err_red(r['uas'], a['uas']):+.1f}"
            out.append(f"| {label} | {r['uas']:.2f} | {red} | {r['fit_cpu_s']:.1f} |")
        import statistics

        # the means: their error reduction against the baseline's mean when it has several
        # perceptron seeds, else against the baseline row
        ref = groups["base"]
        ref_m, ref_name = (statistics.mean(ref), "the baseline's mean") if len(ref) > 1 \
            else (a["uas"], "the baseline")
        for name, xs in groups.items():
            if len(xs) < 2:
                continue
            m = statistics.mean(xs)
            red = "" if name == "base" else f"{err_red(m, ref_m):+.1f} (vs {ref_name})"
            out.append(f"| {name}, mean (sd) of {len(xs)} | {m:.2f} "
                       f"({statistics.stdev(xs):.2f}) | {red} | |")
        out.append("")
    return out
