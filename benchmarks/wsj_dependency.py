"""Luque et al. (2012) Table 1 and Figure 1 on the full WSJ: unlexicalised SHAGs on POS tags.

Trains on sections 02-21 (``dep/wsj02-21.dp``, Malt-TAB, gold POS) and scores section 22
(``dep/wsj22.dp``, the development set: there is no test section here, every setting is chosen
on it) with UAS without punctuation, as ``fastspectral eval`` prints it.

Stages, each row by row and resumable (one JSON line per row in ``--results``; a row
already there is not run again; ``--stages`` picks stages):

``spectral-curve``
    Figure 1: UAS on section 22 against the number of states of the spectral SHAG (one process
    reads the data once and fits ``SHAGParser(method="spectral", n_states=n)`` for each n; the
    parser and its defaults are those of ``fastspectral train shag``).
``em-curve``
    EM at a few state counts, one training run per count with snapshots after the listed
    iterations (``fit_em`` as ``SHAGParser.fit`` calls it, same seed and back-off weight); the
    learner's cumulative CPU seconds at each snapshot are recorded.
``rows``
    Table 1 as a user meets it, whole processes: ``/usr/bin/time -v fastspectral train shag``
    (user + system CPU seconds, maximum RSS), ``fastspectral parse`` of section 22,
    ``fastspectral eval``.  Rows: DET, DET+F, SPECTRAL with the curve's best n, EM with the EM
    curve's best (n, iterations), LEX+FCP and SPECTRAL + LEX+FCP (``--lexical``).
``learner``
    The two learners alone on the same encoded data, in one process (CPU seconds): the
    spectral learner with the curve's best n against EM with its best (n, iterations) and
    with the cheapest (n, iterations) that reaches the spectral model's UAS.
``mst`` (not in the default stages)
    The first stage of the Dhillon et al. (2012) re-ranking pipeline, whole processes as
    ``rows``: ``fastspectral train mst`` (defaults; ``--mst-orders 1,2`` for both orders).
``rerank`` (not in the default stages)
    The whole Dhillon et al. (2012) pipeline as one ``fastspectral train rerank-dep`` process
    per row (jack-knifed k-best lists of 02-21, the spectral model, the re-ranker, the final
    base parser), for each of ``--mst-orders`` (``--base-order``) and ``--rerank-features``
    (default: ``base`` and ``base+spectral``, the baseline re-ranker and + log p-hat).
``controls`` (not in the default stages; ``benchmarks/wsj_rerank_controls.py``)
    The controls of log p-hat in the re-ranker, in one process per order of ``--mst-orders``:
    the jack-knifed k-best lists of 02-21 and the k-best lists of section 22 are built once,
    as ``RerankDepParser.fit`` and ``parse`` build them with the defaults of ``fastspectral
    train rerank-dep`` (``training_lists``; the base parser trained on all of 02-21 for the
    section-22 lists; with order 2 the second-order model's scores and trees), with the
    spectral model's log p-hat of every candidate (jack-knifed on 02-21; the model of all of
    02-21 on section 22), and kept in ``--work`` (a pickle; a later run reads it).  From the
    same lists, re-rankers (``fit_lists``, ``rerank_scores``) with the baseline features,
    with + log p-hat, and with + placebo columns (``--placebo-seeds``: log p-hat replaced by
    random numbers, :func:`bench_rerank.placebo_scores`, the same columns and normalisation),
    each row's section-22 UAS and its error reduction against the baseline re-ranker;
    ``--rerank-seeds``: also the baseline and + log p-hat re-rankers with other perceptron
    seeds (the order the perceptron visits the lists in); ``--fit-params``: re-rankers of
    other fit settings from the same lists; ``--spectral-params``: log p-hat of other latent
    dependency models on the same lists (jack-knifed as ``RerankDepParser`` does; kept in a
    pickle of their own).

The table is printed from the results at the end (``--stages table`` prints only it).

    PYTHONPATH=. python benchmarks/wsj_dependency.py [--results results/wsj_dependency.jsonl]
        [--states 2-20] [--em-states 5,10,15,20] [--em-iterations 5,10,25,50,100,200,400]
        [--stages spectral-curve,em-curve,rows,learner,table] [--jobs 2]
    PYTHONPATH=. python benchmarks/wsj_dependency.py --stages mst,table [--mst-orders 1,2]
    PYTHONPATH=. python benchmarks/wsj_dependency.py --stages rerank,table [--mst-orders 1,2]
    PYTHONPATH=. python benchmarks/wsj_dependency.py --stages controls,table --jobs 1 \
        --work DIR [--mst-orders 1,2,2k] [--placebo-seeds 0,1,2,3,4] [--rerank-seeds 0,1,2]
        [--fit-params JSON] [--spectral-params JSON ...]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
if str(ROOT / "benchmarks") not in sys.path:       # wsj_rerank_controls, bench_rerank
    sys.path.append(str(ROOT / "benchmarks"))

# stage controls (and the two helpers it shares with the other stages)
from wsj_rerank_controls import (FIT_PARAMS, control_rows, controls_table,  # noqa: E402,F401
                                 cpu_s, err_red, order_setting)

PAPER = {"DET": 69.45, "DET+F": 75.91, "SPECTRAL": 80.44, "EM": 81.68,
         "LEX+FCP": None, "SPECTRAL + LEX+FCP": None,
         # Dhillon et al. (2012), table 1, section 23, predicted tags (gold tags here)
         "MST order 1": 90.8, "RERANK order 1 base": 91.3, "RERANK order 1 base+spectral": 91.7,
         "MST order 2": 91.8, "RERANK order 2 base": 92.4, "RERANK order 2 base+spectral": 92.7,
         "RERANK order 2k base": 92.4, "RERANK order 2k base+spectral": 92.7}
PAPER_DEV = {"SPECTRAL": (79.75, 9), "EM": (80.51, 15)}


def data_dir() -> Path:
    """The shared data folder (``FASTSPECTRAL_DATA`` overrides ``../shared/data``)."""
    return Path(os.environ.get("FASTSPECTRAL_DATA", ROOT.parent / "shared" / "data"))


def int_list(text: str) -> list[int]:
    """``"2-20"`` or ``"5,10,15"`` as a list of integers."""
    if "-" in text:
        a, b = text.split("-")
        return list(range(int(a), int(b) + 1))
    return [int(x) for x in text.split(",") if x]


class Results:
    """JSON lines keyed by ``row``: read at start, appended as rows finish."""

    def __init__(self, path: Path):
        self.path = path
        self.rows = {}
        if path.exists():
            for line in path.read_text().splitlines():
                if line.strip():
                    r = json.loads(line)
                    self.rows[r["row"]] = r

    def __contains__(self, key):
        return key in self.rows

    def add(self, rec: dict):
        self.rows[rec["row"]] = rec
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a") as fh:
            fh.write(json.dumps(rec) + "\n")
        print(json.dumps(rec), file=sys.stderr, flush=True)


def uas(gold, pred) -> float:
    from fastspectral.eval.attachment import attachment_scores

    return attachment_scores(gold, pred, punct="exclude").uas


def spectral_curve(res: Results, train, dev, states, jobs):
    from fastspectral.dependency.model import SHAGParser

    for n in states:
        key = f"curve spectral n={n}"
        if key in res:
            continue
        c0, w0 = cpu_s(), time.perf_counter()
        p = SHAGParser(method="spectral", n_states=n).fit(train)
        c1, w1 = cpu_s(), time.perf_counter()
        pred = p.parse(dev, jobs=jobs)
        c2, w2 = cpu_s(), time.perf_counter()
        res.add({"row": key, "method": "spectral", "states": n, "uas": uas(dev, pred),
                 "fit_cpu_s": c1 - c0, "fit_wall_s": w1 - w0, "parse_cpu_s": c2 - c1,
                 "parse_wall_s": w2 - w1, "load": os.getloadavg()[0]})


def em_curve(res: Results, train, dev, em_states, em_iters, jobs):
    from fastspectral.dependency.data import modifier_sequences
    from fastspectral.dependency.em import fit_em
    from fastspectral.dependency.model import SHAGParser

    for n in em_states:
        keys = [f"curve em n={n} it={it}" for it in em_iters]
        if all(k in res for k in keys):
            continue
        p = SHAGParser(method="em", n_states=n, iterations=0).fit(train)
        enc = p.encode(train)
        seqs = modifier_sequences(enc)
        cpu_at = []
        c0 = cpu_s()
        info = fit_em(enc, seqs, p._H, p._M, n, max(em_iters), seed=p.random_state,
                      snapshots=em_iters, smoothing=float(p.backoff_weight),
                      callback=lambda it, ll: cpu_at.append(cpu_s() - c0))
        for it, key in zip(em_iters, keys):
            if key in res:
                continue
            p.op_ = info.snapshots[it]
            c1 = cpu_s()
            pred = p.parse(dev, jobs=jobs)
            res.add({"row": key, "method": "em", "states": n, "iterations": it,
                     "uas": uas(dev, pred), "learn_cpu_s": cpu_at[it - 1],
                     "learn_wall_s": info.time[it - 1], "parse_cpu_s": cpu_s() - c1,
                     "loglik": info.loglik[it - 1], "load": os.getloadavg()[0]})


_TIME_FIELDS = {"User time (seconds)": "user_s", "System time (seconds)": "sys_s",
                "Maximum resident set size (kbytes)": "max_rss_kb",
                "Elapsed (wall clock) time (h:mm:ss or m:ss)": "wall"}


def timed(cmd: list[str]) -> dict:
    """Run ``cmd`` under ``/usr/bin/time -v``; its CPU seconds, maximum RSS and wall time."""
    load = os.getloadavg()[0]
    r = subprocess.run(["/usr/bin/time", "-v", *cmd], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{r.stderr[-2000:]}")
    out = {"load": load}
    for line in r.stderr.splitlines():
        k, _, v = line.strip().rpartition(": ")
        if k in _TIME_FIELDS:
            out[_TIME_FIELDS[k]] = v
    wall = out.pop("wall").split(":")
    out["wall_s"] = sum(float(x) * 60 ** i for i, x in enumerate(reversed(wall)))
    out["cpu_s"] = float(out.pop("user_s")) + float(out.pop("sys_s"))
    out["max_rss_mb"] = int(out.pop("max_rss_kb")) / 1024
    out["stdout"] = r.stdout
    return out


def eval_uas(gold: Path, pred: Path) -> float:
    """UAS without punctuation as ``fastspectral eval`` prints it."""
    r = subprocess.run(["fastspectral", "eval", str(gold), str(pred)], capture_output=True,
                       text=True, check=True)
    m = re.search(r"without punctuation\s+([\d.]+)", r.stdout)
    if m is None:
        raise RuntimeError(f"no UAS in the output of fastspectral eval:\n{r.stdout}")
    return float(m.group(1))


def whole_process_row(res: Results, key: str, args: list[str], train: Path, dev: Path,
                      work: Path, jobs: int, kind: str = "shag"):
    if key in res:
        return
    work.mkdir(parents=True, exist_ok=True)
    stem = re.sub(r"[^A-Za-z0-9]+", "_", key)
    model, pred = work / f"{stem}.{kind}", work / f"{stem}.22.dp"
    tr = timed(["fastspectral", "train", kind, str(train), "-o", str(model), "-q", *args])
    pa = timed(["fastspectral", "parse", str(model), str(dev), "-o", str(pred), "-q",
                "--jobs", str(jobs)])
    res.add({"row": key, "args": [kind, *args], "uas": eval_uas(dev, pred),
             "train_cpu_s": tr["cpu_s"], "train_wall_s": tr["wall_s"],
             "train_rss_mb": tr["max_rss_mb"], "train_load": tr["load"],
             "parse_cpu_s": pa["cpu_s"], "parse_wall_s": pa["wall_s"],
             "parse_rss_mb": pa["max_rss_mb"], "parse_load": pa["load"]})


def best(rows: dict, prefix: str):
    """The record with the highest UAS among those whose key starts with ``prefix`` (ties:
    the smaller model, then the fewer iterations)."""
    cand = [r for k, r in rows.items() if k.startswith(prefix)]
    if not cand:
        return None
    return max(cand, key=lambda r: (r["uas"], -r["states"], -r.get("iterations", 0)))


def table(res: Results) -> str:
    rows = res.rows
    out = []
    sp = sorted((r for k, r in rows.items() if k.startswith("curve spectral")),
                key=lambda r: r["states"])
    if sp:
        out.append("Figure 1 (section 22 UAS against states), spectral:")
        out.append("| states | " + " | ".join(str(r["states"]) for r in sp) + " |")
        out.append("|---|" + "---|" * len(sp))
        out.append("| UAS | " + " | ".join(f"{r['uas']:.2f}" for r in sp) + " |")
        out.append("| fit CPU-s | " + " | ".join(f"{r['fit_cpu_s']:.1f}" for r in sp) + " |")
        out.append("")
    em = [r for k, r in rows.items() if k.startswith("curve em")]
    if em:
        its = sorted({r["iterations"] for r in em})
        out.append("EM (section 22 UAS; learner CPU-s in brackets):")
        out.append("| states | " + " | ".join(f"{it} it." for it in its) + " |")
        out.append("|---|" + "---|" * len(its))
        for n in sorted({r["states"] for r in em}):
            cells = []
            for it in its:
                r = rows.get(f"curve em n={n} it={it}")
                cells.append("" if r is None else f"{r['uas']:.2f} ({r['learn_cpu_s']:.1f})")
            out.append(f"| {n} | " + " | ".join(cells) + " |")
        out.append("")
    tab = [(k[4:], r) for k, r in rows.items() if k.startswith("row ")]
    if tab:
        out.append("Table 1 (whole processes; CPU-s = user + system):")
        out.append("| model | settings | UAS §22 | paper (§23) | train CPU-s | train RSS MB | "
                   "parse CPU-s | load |")
        out.append("|---|---|---|---|---|---|---|---|")
        for label, r in tab:
            paper = PAPER.get(label)
            out.append(f"| {label} | `{' '.join(r['args'])}` | {r['uas']:.2f} | "
                       f"{'' if paper is None else f'{paper:.2f}'} | {r['train_cpu_s']:.1f} | "
                       f"{r['train_rss_mb']:.0f} | {r['parse_cpu_s']:.1f} | "
                       f"{r['train_load']:.1f} |")
        s, e = rows.get("row SPECTRAL"), rows.get("row EM")
        if s and e:
            out.append("")
            out.append(f"training CPU-s, whole processes: EM / SPECTRAL = "
                       f"{e['train_cpu_s'] / s['train_cpu_s']:.1f}x")
    lr = rows.get("learner")
    if lr:
        out.append(f"learners alone, one process (load {lr['load']:.1f}): spectral n="
                   f"{lr['spectral_states']} {lr['spectral_cpu_s']:.2f} CPU-s (best of "
                   f"{lr['reps']}), EM (n={lr['em_states']}, {lr['em_iterations']} it.) "
                   f"{lr['em_cpu_s']:.1f} CPU-s (best of {lr['reps_em']}): "
                   f"{lr['em_cpu_s'] / lr['spectral_cpu_s']:.0f}x; EM to the spectral "
                   f"model's UAS: (n={lr['em_match_states']}, {lr['em_match_iterations']} it.) "
                   f"{lr['em_match_cpu_s']:.1f} CPU-s: "
                   f"{lr['em_match_cpu_s'] / lr['spectral_cpu_s']:.0f}x")
    out += controls_table(rows)
    return "\n".join(out)


# --------------------------------------------------------------------------------------------
def learner_times(res: Results, train, reps: int = 5, reps_em: int = 2):
    """CPU seconds of the two learners alone on the same encoded data, in one process:
    ``learn_spectral`` with the curve's best n (best of ``reps``); ``fit_em`` with the EM
    curve's best (n, iterations), and with the cheapest (n, iterations) of the EM curve that
    reaches the spectral model's UAS (best of ``reps_em``; merging and initialisation
    included)."""
    if "learner" in res:
        return
    from fastspectral.dependency.data import modifier_sequences
    from fastspectral.dependency.em import fit_em
    from fastspectral.dependency.model import SHAGParser
    from fastspectral.dependency.spectral import learn_spectral

    bs, be = best(res.rows, "curve spectral"), best(res.rows, "curve em")
    reach = [r for k, r in res.rows.items() if k.startswith("curve em") and r["uas"] >= bs["uas"]]
    bm = min(reach, key=lambda r: r["learn_cpu_s"]) if reach else be
    p = SHAGParser(method="spectral", n_states=bs["states"])
    p.fit(train[:200])                              # compiled code loaded (not timed)
    p = SHAGParser(method="det").fit(train)         # symbol tables
    enc = p.encode(train)
    seqs = modifier_sequences(enc)
    d = SHAGParser()

    def run(f):
        c0 = cpu_s()
        f()
        return cpu_s() - c0

    t_sp = min(run(lambda: learn_spectral(enc, seqs, p._H, p._M, bs["states"], basis=d.basis,
                                          smoothing=d.backoff_weight, ridge=d.ridge))
               for _ in range(reps))

    def em(r):
        return min(run(lambda: fit_em(enc, seqs, p._H, p._M, r["states"], r["iterations"],
                                      seed=d.random_state, smoothing=d.backoff_weight))
                   for _ in range(reps_em))

    res.add({"row": "learner", "spectral_states": bs["states"], "spectral_cpu_s": t_sp,
             "reps": reps, "reps_em": reps_em, "em_states": be["states"],
             "em_iterations": be["iterations"], "em_cpu_s": em(be),
             "em_match_states": bm["states"], "em_match_iterations": bm["iterations"],
             "em_match_cpu_s": em(bm), "load": os.getloadavg()[0]})


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--results", type=Path, default=ROOT / "results" / "wsj_dependency.jsonl")
    ap.add_argument("--states", default="2-20")
    ap.add_argument("--em-states", default="5,10,15,20")
    ap.add_argument("--em-iterations", default="5,10,25,50,100,200,400")
    ap.add_argument("--stages", default="spectral-curve,em-curve,rows,learner,table")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--mst-orders", default="1",
                    help="stages mst, rerank and controls: the MST parsers' orders (rerank "
                         "and controls: 1, 2 = first-order lists rescored by a second-order "
                         "model, 2k = the second-order model's own k-best lists)")
    ap.add_argument("--rerank-features", default="base,base+spectral",
                    help="stage rerank: the re-rankers' --features, one row each")
    ap.add_argument("--placebo-seeds", default="0,1,2,3,4",
                    help="stage controls: the seeds of the placebo rows")
    ap.add_argument("--rerank-seeds", default="0",
                    help="stage controls: also the baseline and + log p-hat re-rankers with "
                         "these perceptron seeds (random_state)")
    ap.add_argument("--fit-params", type=json.loads, default=None, metavar="JSON",
                    help="stage controls: re-ranker settings of the fit alone, on the same "
                         "lists (e.g. '{\"fixed_base\": true}'; rows ORDER+NAME=VALUE)")
    ap.add_argument("--spectral-params", type=json.loads, action="append", default=None,
                    metavar="JSON",
                    help="stage controls: log p-hat of another latent dependency model on "
                         "the same lists (its constructor arguments, and spectral_input; "
                         "e.g. '{\"n_states\": 30}'; rows ORDER+spectral:NAME=VALUE; "
                         "repeatable)")
    ap.add_argument("--work", type=Path, default=None,
                    help="stage controls: folder of the k-best lists kept between runs "
                         "(default: wsj_dependency_models next to --results)")
    ap.add_argument("--train", type=Path, default=None,
                    help="training treebank (default: dep/wsj02-21.dp of the data folder)")
    ap.add_argument("--dev", type=Path, default=None,
                    help="scored treebank (default: dep/wsj22.dp of the data folder)")
    a = ap.parse_args(argv)
    stages = a.stages.split(",")
    res = Results(a.results)
    d = data_dir() / "dep"
    train_p, dev_p = a.train or d / "wsj02-21.dp", a.dev or d / "wsj22.dp"
    if {"spectral-curve", "em-curve", "learner"} & set(stages):
        from fastspectral.trees.conll import read_malttab

        train, dev = list(read_malttab(str(train_p))), list(read_malttab(str(dev_p)))
        if "spectral-curve" in stages:
            spectral_curve(res, train, dev, int_list(a.states), a.jobs)
        if "em-curve" in stages:
            em_curve(res, train, dev, int_list(a.em_states), int_list(a.em_iterations),
                     a.jobs)
        if "learner" in stages:
            learner_times(res, train)
    if "rows" in stages:
        work = a.results.parent / "wsj_dependency_models"
        rows = [("DET", ["--method", "det"]), ("DET+F", ["--method", "det+f"])]
        bs, be = best(res.rows, "curve spectral"), best(res.rows, "curve em")
        if bs:
            rows.append(("SPECTRAL", ["--method", "spectral", "--states", str(bs["states"])]))
        if be:
            rows.append(("EM", ["--method", "em", "--states", str(be["states"]),
                                "--iterations", str(be["iterations"])]))
        rows.append(("LEX+FCP", ["--method", "det", "--lexical", "lex+fcp"]))
        if bs:
            rows.append(("SPECTRAL + LEX+FCP", ["--method", "spectral", "--states",
                                                str(bs["states"]), "--lexical", "lex+fcp"]))
        for label, args in rows:
            whole_process_row(res, f"row {label}", args, train_p, dev_p, work, a.jobs)
    if "mst" in stages:          # the first stage of the Dhillon et al. (2012) pipeline
        work = a.results.parent / "wsj_dependency_models"
        for order in int_list(a.mst_orders):
            whole_process_row(res, f"row MST order {order}", ["--order", str(order)], train_p,
                              dev_p, work, a.jobs, kind="mst")
    if "rerank" in stages:       # the Dhillon et al. (2012) pipeline, as `train rerank-dep` runs it
        work = a.results.parent / "wsj_dependency_models"
        for order in a.mst_orders.split(","):
            for features in a.rerank_features.split(","):
                whole_process_row(res, f"row RERANK order {order} {features}",
                                  order_setting(order, a.jobs)[2] +
                                  ["--features", features, "--jobs", str(a.jobs)],
                                  train_p, dev_p, work, a.jobs, kind="rerank-dep")
    if "controls" in stages:     # log p-hat against placebo columns, from one set of lists
        work = a.work or a.results.parent / "wsj_dependency_models"
        for order in a.mst_orders.split(","):
            for spectral in a.spectral_params or [None]:
                control_rows(res, train_p, dev_p, order, a.jobs, work,
                             int_list(a.placebo_seeds), rerank_seeds=int_list(a.rerank_seeds),
                             fit_params=a.fit_params, spectral=spectral)
    if "table" in stages:
        print(table(res))


if __name__ == "__main__":
    main()
