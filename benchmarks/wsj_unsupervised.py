"""Parikh, Cohen & Xing (2014) on the full WSJ: unsupervised constituency parsing.

The protocol of ``benchmarks/bench_atm.py`` at full scale: ATM and CCM learn from the words
and tags of sections 02-21 plus the raw (tagged) sentences of section 22, no trees; section 22
(the development set; there is no test section here) is parsed from its word/TAG sentences and
scored with ``fastspectral eval --unlabelled --by-length`` (punctuation removed, single-word
brackets not counted, the whole-sentence bracket counted: Klein & Manning's convention, the
scale of the paper's table), at lengths <= 10 and <= 40.

Rows, whole processes under ``/usr/bin/time -v`` (user + system CPU seconds, maximum RSS), one
JSON line each in ``--results``, resumable (a row already there is not run again):

* ATM with the defaults of ``fastspectral train atm`` (eigenwords learned on the training
  words, m = 2, gamma = 0.7, the paper's top-bracket rules);
* CCM learned on the sentences of at most 10 words (Klein & Manning's WSJ10), applied to all;
* CCM learned on the sentences of at most 40 words (the paper's protocol for its <= 40 column;
  ``--ccm40`` adds it: its E-step is cubic in the length);
* right-branching trees (written by this script, scored by ``fastspectral eval``).

    PYTHONPATH=. python benchmarks/wsj_unsupervised.py [--results results/wsj_unsupervised.jsonl]
        [--ccm40] [--atm-args '--dim 3'] [--table-only]
    PYTHONPATH=. python benchmarks/wsj_unsupervised.py --grid '[{"dim": 3}, {"bandwidth": 1}]'

``--grid``: the development sweep of ATM's settings, learned in one process on the same
sentences, section 22 scored as ``fastspectral eval --unlabelled`` scores it.
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wsj_dependency import ROOT, Results, data_dir, timed  # noqa: E402

PAPER = {"ATM": (65.5, 41.1), "CCM": (70.5, 26.1)}


def eval_f1(gold: Path, pred: Path) -> dict:
    """Unlabelled corpus-level F1 at <= 10 and <= 40 words as ``fastspectral eval`` prints it."""
    r = subprocess.run(["fastspectral", "eval", str(gold), str(pred), "--unlabelled",
                        "--by-length"], capture_output=True, text=True, check=True)
    out = {}
    for L in (10, 40):
        m = re.search(rf"<= {L}\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", r.stdout)
        if m is None:
            raise RuntimeError(f"no F1 at <= {L} in the output of fastspectral eval:\n"
                               f"{r.stdout}")
        out[f"f1_{L}"] = float(m.group(4))
        out[f"sents_{L}"] = int(m.group(1))
    return out


def model_row(res, key, kind, args, learn, gold, tagged, work):
    if key in res:
        return
    stem = re.sub(r"[^A-Za-z0-9]+", "_", key)
    model, pred = work / f"{stem}.model", work / f"{stem}.22.trees"
    tr = timed(["fastspectral", "train", kind, *map(str, learn), "-o", str(model), "-q",
                *args])
    pa = timed(["fastspectral", "parse", str(model), str(tagged), "-o", str(pred), "-q"])
    res.add({"row": key, "args": [kind, *args], **eval_f1(gold, pred),
             "train_cpu_s": tr["cpu_s"], "train_wall_s": tr["wall_s"],
             "train_rss_mb": tr["max_rss_mb"], "train_load": tr["load"],
             "parse_cpu_s": pa["cpu_s"], "parse_wall_s": pa["wall_s"],
             "parse_rss_mb": pa["max_rss_mb"], "parse_load": pa["load"]})


def branching_row(res, gold, work):
    key = "right-branching"
    if key in res:
        return
    from fastspectral.trees.ptb import write_brackets
    from fastspectral.trees.readers import read_treebank
    from fastspectral.unsupervised import branching_tree

    trees = list(read_treebank(str(gold)))
    pred = work / "right_branching.22.trees"
    write_brackets([branching_tree(t.leaves(), [q for _, q in t.pos()], "right")
                    for t in trees], str(pred))
    res.add({"row": key, "args": [], **eval_f1(gold, pred)})


def grid(res, settings_list, learn, gold, learn_first=None):
    """ATM with each of ``settings_list`` (ATMParser keyword arguments over the defaults),
    learned in this process on the same sentences as the ``ATM`` row, section 22 scored with
    the same F1 as ``fastspectral eval --unlabelled`` (the development sweep).
    ``learn_first``: learn from the first N sentences of 02-21 only (plus section 22)."""
    import json
    import os

    from fastspectral.eval.unlabelled import evaluate_by_length
    from fastspectral.trees.readers import read_treebank
    from fastspectral.unsupervised import ATMParser

    tag = "" if learn_first is None else f" first {learn_first}"
    todo = [s for s in settings_list
            if f"grid ATM{tag} {json.dumps(s, sort_keys=True)}" not in res]
    if not todo:
        return
    gold_trees = list(read_treebank(str(gold)))
    # the words and tags of 02-21 and of section 22 (the trees' structure is not read)
    sents = list(read_treebank(str(learn[0])))[:learn_first] + gold_trees
    words = [t.leaves() for t in gold_trees]
    tags = [[q for _, q in t.pos()] for t in gold_trees]
    for settings in todo:
        t0 = os.times()
        m = ATMParser(**settings).fit(sents)
        t1 = os.times()
        sc = evaluate_by_length(gold_trees, m.parse(words, tags=tags), (10, 40),
                                sentence_bracket=True)
        res.add({"row": f"grid ATM{tag} {json.dumps(settings, sort_keys=True)}", "args": [],
                 "settings": settings, "learn_first": learn_first, "sentences": len(sents),
                 "f1_10": round(sc[0].f1, 2), "f1_40": round(sc[1].f1, 2),
                 "learn_cpu_s": t1.user + t1.system - t0.user - t0.system,
                 "load": os.getloadavg()[0]})


def table(res) -> str:
    out = ["| model | settings | F1 <= 10 | F1 <= 40 | paper (§23) | train CPU-s | "
           "train RSS MB | parse CPU-s | load |", "|---|---|---|---|---|---|---|---|---|"]
    for key, r in res.rows.items():
        if key.startswith("grid "):
            continue
        paper = PAPER.get(key.split()[0])
        p = "" if paper is None else f"{paper[0]} / {paper[1]}"
        t = (f"{r['train_cpu_s']:.1f} | {r['train_rss_mb']:.0f} | {r['parse_cpu_s']:.1f} | "
             f"{r['train_load']:.1f}" if "train_cpu_s" in r else " | | | ")
        out.append(f"| {key} | `{' '.join(r['args'])}` | {r['f1_10']:.1f} | {r['f1_40']:.1f} | "
                   f"{p} | {t} |")
    g = [r for k, r in res.rows.items() if k.startswith("grid ")]
    if g:
        out += ["", "ATM development sweep (section 22; settings over the defaults):",
                "| settings | F1 <= 10 | F1 <= 40 | learning CPU-s |", "|---|---|---|---|"]
        out += [f"| `{r['settings']}`"
                + ("" if r.get("learn_first") is None else
                   f", learned on the first {r['learn_first']} sentences of 02-21 + section 22")
                + f" | {r['f1_10']:.1f} | {r['f1_40']:.1f} | "
                f"{r['learn_cpu_s']:.1f} |" for r in g]
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--results", type=Path,
                    default=ROOT / "results" / "wsj_unsupervised.jsonl")
    ap.add_argument("--ccm40", action="store_true",
                    help="also CCM learned on the sentences of at most 40 words")
    ap.add_argument("--grid", default=None, metavar="JSON",
                    help="a JSON list of ATMParser settings over the defaults: the "
                         "development sweep (in this process), instead of the rows")
    ap.add_argument("--learn-first", type=int, default=None, metavar="N",
                    help="with --grid: learn from the first N sentences of 02-21 only (plus "
                         "section 22), to see the effect of the amount of data")
    ap.add_argument("--atm-args", default=None, metavar="ARGS",
                    help="also the row of ATM with these options of 'fastspectral train atm' "
                         "(e.g. the sweep's choice: '--dim 3')")
    ap.add_argument("--table-only", action="store_true")
    a = ap.parse_args(argv)
    res = Results(a.results)
    if not a.table_only:
        d = data_dir() / "ptb"
        train, gold = d / "wsj02-21.trees", d / "wsj22.trees"
        work = a.results.parent / "wsj_unsupervised_models"
        work.mkdir(parents=True, exist_ok=True)
        tagged = work / "wsj22.tagged"
        if not tagged.exists():
            subprocess.run(["fastspectral", "sentences", str(gold), "--tags", "-o", str(tagged),
                            "-q"], check=True)
        learn = [train, tagged]          # section 22 as word/TAG sentences: no trees
        if a.grid is not None:
            import json

            grid(res, json.loads(a.grid), learn, gold, a.learn_first)
            print(table(res))
            return
        branching_row(res, gold, work)
        model_row(res, "ATM", "atm", [], learn, gold, tagged, work)
        model_row(res, "CCM (learned on <= 10)", "ccm", ["--max-length", "10"], learn, gold,
                  tagged, work)
        if a.atm_args:
            model_row(res, f"ATM {a.atm_args}", "atm", a.atm_args.split(), learn, gold,
                      tagged, work)
        if a.ccm40:
            model_row(res, "CCM (learned on <= 40)", "ccm", ["--max-length", "40"], learn,
                      gold, tagged, work)
    print(table(res))


if __name__ == "__main__":
    main()
