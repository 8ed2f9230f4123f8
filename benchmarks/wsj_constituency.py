"""The standard WSJ constituency benchmark at full scale (Cohen & Collins 2014, table 1).

    python benchmarks/wsj_constituency.py [--rows spectral:8 spectral:16 pivot:8 ...]
        [--train wsj02-21.trees] [--dev wsj22.trees] [--dev-limit N]
        [--work DIR] [--results FILE.jsonl] [--em-iterations 40] [--pivot-em-iterations 8]
        [--eval-every 1] [--jobs 1] [--float32-tensors] [--pruner-states M]
        [--pruner-threshold T] [--keep-models] [--table]

Every row (PCFG; spectral, pivot, Pivot+EM and EM with m = 8, 16, 24, 32 by default) is run as a
user meets it, as whole processes under ``/usr/bin/time -v``: ``fastspectral train`` on the
training treebank, ``fastspectral parse`` of the words of the development section (one thread by
default), ``fastspectral eval`` (EVALB, COLLINS.prm). A row prints F1 beside the paper's figure,
training CPU-seconds (user + sys), wall seconds and peak RSS, the model file's size and parsing
sentences per CPU-second (the parse process's user + sys, model loading included).
``--float32-tensors`` trains the L-PCFG rows with ``train --float32-tensors`` (rows ``KIND:M+f32``).
``--pruner-states M`` trains each L-PCFG row with a pruning model of M states in its model file
(``train --pruner-states M``; rows ``KIND:M+pM``, with ``+tT`` for a ``--pruner-threshold T``
other than the learner's default).

EM and Pivot+EM rows train once to ``--em-iterations`` / ``--pivot-em-iterations`` in one
process that saves the model after every iteration (``EMLPCFG.fit(callback=...)``; the CPU time
and peak RSS up to each iteration are recorded there, saving excluded); each saved model is then
parsed and scored like any other row, which gives the development curve; the row's F1 is the
best iteration's (ties: the earliest), chosen on the development section as in the paper.
``--eval-every N`` saves and scores only every N-th iteration (and the last).

Results are JSON lines appended to ``--results`` (default ``results/wsj_constituency.jsonl``;
``results/`` is ignored by git), one per finished row or EM iteration; a row already there is
skipped, so an interrupted run continues where it stopped. ``--table`` prints the Markdown table
of what the results file holds and exits.

    python benchmarks/wsj_constituency.py --side-by-side MODEL [MODEL ...] [--dev-limit 400]
        [--berkeley-grammar ../shared/peers/berkeley-wsj02-21-sm3.gr]

parses the same development sentences with the Berkeley parser (its 1.7 jar, one thread, the
JVM's start and the grammar's loading included) and with each fastspectral MODEL, alternating
(model, Berkeley, model, ...) so that the ratio of sentences per CPU-second is measured within
one run on a shared machine, and appends one ``side-by-side`` record per parser run.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, ".."))
DATA = os.path.normpath(os.path.join(ROOT, "..", "shared", "data", "ptb"))

#: Cohen & Collins (2014), table 1: F1 on all of section 22 (EM iterations chosen on section 22)
PAPER = {
    "em": {8: 86.69, 16: 88.32, 24: 88.35, 32: 88.56},
    "spectral": {8: 85.60, 16: 87.77, 24: 88.53, 32: 88.82},
    "pivot": {8: 83.56, 16: 86.00, 24: 86.87, 32: 86.40},
    "pivot-em": {8: 86.83, 16: 88.14, 24: 88.64, 32: 88.55},
}
PAPER_ITERATIONS = {
    "em": {8: 40, 16: 30, 24: 30, 32: 20},
    "pivot-em": {8: 2, 16: 6, 24: 2, 32: 2},
}
KINDS = ("pcfg", "spectral", "pivot", "pivot-em", "em")
STATES = (8, 16, 24, 32)
EM_KINDS = ("em", "pivot-em")


def default_rows():
    rows = ["pcfg"]
    for kind in ("spectral", "pivot", "pivot-em", "em"):
        rows += [f"{kind}:{m}" for m in STATES]
    return rows


def parse_row(text):
    """``"kind"`` or ``"kind:m"`` -> ``(kind, m or None)``."""
    kind, _, m = text.partition(":")
    if kind not in KINDS:
        raise argparse.ArgumentTypeError(f"unknown row {text!r} (kinds: {', '.join(KINDS)})")
    if kind == "pcfg":
        if m:
            raise argparse.ArgumentTypeError("the pcfg row has no states")
        return kind, None
    if not m.isdigit() or int(m) < 1:
        raise argparse.ArgumentTypeError(f"row {text!r}: expected {kind}:M with M >= 1")
    return kind, int(m)


def row_name(kind, m):
    return kind if m is None else f"{kind}:{m}"


# ---------------------------------------------------------------------------------------------
# measuring whole processes

_TIME_FIELDS = {
    "User time (seconds)": "user_s",
    "System time (seconds)": "sys_s",
    "Maximum resident set size (kbytes)": "max_rss_kb",
    "Elapsed (wall clock) time (h:mm:ss or m:ss)": "wall",
}


def _wall_seconds(text):
    parts = [float(p) for p in text.split(":")]
    s = 0.0
    for p in parts:
        s = s * 60 + p
    return s


def timed(cmd, log):
    """Run ``cmd`` under ``/usr/bin/time -v``; returns ``{cpu_s, wall_s, max_rss_mb, rc}``.
    The command's standard error (and the time report) go to ``log``; standard output is
    returned as ``stdout``."""
    with open(log, "w", encoding="utf-8") as err:
        err.write(" ".join(cmd) + "\n")
        err.flush()
        proc = subprocess.run(["/usr/bin/time", "-v"] + cmd, stdout=subprocess.PIPE,
                              stderr=err, text=True)
    with open(log, encoding="utf-8") as fh:
        text = fh.read()
    got = {}
    for line in text.splitlines():
        key, sep, value = line.strip().rpartition(": ")
        if sep and key in _TIME_FIELDS:
            got[_TIME_FIELDS[key]] = value
    if "user_s" not in got:
        raise RuntimeError(f"{log}: no /usr/bin/time report")
    return {"cpu_s": round(float(got["user_s"]) + float(got["sys_s"]), 2),
            "wall_s": round(_wall_seconds(got["wall"]), 2),
            "max_rss_mb": round(int(got["max_rss_kb"]) / 1024, 1),
            "rc": proc.returncode, "stdout": proc.stdout}


def fastspectral_cmd(*args):
    return [sys.executable, "-m", "fastspectral", *args]


def evalb_f1(gold, pred, log):
    """EVALB (COLLINS.prm) bracketing F1 of ``pred`` against ``gold`` via ``fastspectral eval``."""
    proc = subprocess.run(fastspectral_cmd("eval", gold, pred), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
    with open(log, "w", encoding="utf-8") as fh:
        fh.write(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        raise RuntimeError(f"eval failed ({log}): {proc.stderr.strip()}")
    found = re.search(r"Bracketing FMeasure\s*=\s*([0-9.]+)", proc.stdout)
    if not found:
        raise RuntimeError(f"{log}: no Bracketing FMeasure in the eval output")
    return float(found.group(1))


def parse_and_score(model, words, gold, out, work, jobs):
    """Parse ``words`` with ``model`` (whole process), score against ``gold``."""
    base = os.path.splitext(out)[0]
    p = timed(fastspectral_cmd("parse", model, words, "-o", out, "--jobs", str(jobs), "-q"),
              base + ".parse.log")
    if p["rc"] != 0:
        raise RuntimeError(f"parse failed: see {base}.parse.log")
    n = count_lines(words)
    f1 = evalb_f1(gold, out, base + ".eval.log")
    return {"f1": f1, "parse_cpu_s": p["cpu_s"], "parse_wall_s": p["wall_s"],
            "parse_max_rss_mb": p["max_rss_mb"], "sentences": n,
            "sentences_per_cpu_s": round(n / max(p["cpu_s"], 1e-9), 2)}


def count_lines(path):
    with open(path, encoding="utf-8") as fh:
        return sum(1 for _ in fh)


# ---------------------------------------------------------------------------------------------
# results file

def read_results(path):
    out = []
    if os.path.exists(path):
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                line = line.strip()
                if line:
                    out.append(json.loads(line))
    return out


def append_result(path, record):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(record, sort_keys=True) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def done(results, key, record_type="row"):
    return next((r for r in results if r.get("type") == record_type and r.get("key") == key),
                None)


# ---------------------------------------------------------------------------------------------
# rows

def run_plain(kind, m, args, words, gold, results):
    key = row_name(kind, m) + args.tag
    if done(results, key):
        print(f"{key}: already in {args.results}", flush=True)
        return
    stem = os.path.join(args.work, key.replace(":", "-").replace("/", "-"))
    model = stem + ".model"
    cmd = ["train", kind, *args.train, "-o", model, "-q"]
    if m is not None:
        cmd += ["--states", str(m)]
        if args.float32_tensors:
            cmd.append("--float32-tensors")
        cmd += pruner_options(args)
    cmd += [*args.train_args, "--jobs", str(args.jobs)]
    t = timed(fastspectral_cmd(*cmd), stem + ".train.log")
    if t["rc"] != 0:
        raise RuntimeError(f"{key}: training failed, see {stem}.train.log")
    size = os.path.getsize(model)
    rec = {"type": "row", "key": key, "kind": kind, "m": m,
           "train_cpu_s": t["cpu_s"], "train_wall_s": t["wall_s"],
           "train_max_rss_mb": t["max_rss_mb"], "model_mb": round(size / 2**20, 1),
           **parse_and_score(model, words, gold, stem + ".trees", args.work, args.jobs),
           "paper_f1": PAPER.get(kind, {}).get(m), "dev": args.dev_desc,
           "when": time.strftime("%Y-%m-%d %H:%M:%S")}
    append_result(args.results, rec)
    results.append(rec)
    print(format_row(rec), flush=True)
    if not args.keep_models:
        os.remove(model)


def run_em(kind, m, args, words, gold, results):
    key = row_name(kind, m) + args.tag
    if done(results, key):
        print(f"{key}: already in {args.results}", flush=True)
        return
    iterations = args.em_iterations if kind == "em" else args.pivot_em_iterations
    stem = os.path.join(args.work, key.replace(":", "-").replace("/", "-"))
    trace = stem + ".iterations.jsonl"
    scored = eval_iterations(iterations, args.eval_every)
    have = {r["iteration"] for r in read_results(trace)}
    if not all(os.path.exists(f"{stem}.it{k}.model") or
               done(results, f"{key}@{k}", "iteration") for k in scored) \
            or not set(scored) <= have:
        if os.path.exists(trace):
            os.remove(trace)
        cmd = [sys.executable, os.path.abspath(__file__), "--em-child", kind, str(m),
               str(iterations), stem, str(args.jobs), str(int(args.float32_tensors)),
               str(args.eval_every), str(args.pruner_states or 0),
               str(args.pruner_threshold or 0), *args.train]
        t = timed(cmd, stem + ".train.log")
        if t["rc"] != 0:
            raise RuntimeError(f"{key}: training failed, see {stem}.train.log")
        train_whole = t
    else:
        train_whole = None
    curve = []
    for it in read_results(trace):
        k = it["iteration"]
        if k not in scored:
            continue
        ikey = f"{key}@{k}"
        prev = done(results, ikey, "iteration")
        if prev is None:
            model = f"{stem}.it{k}.model"
            rec = {"type": "iteration", "key": ikey, "row": key, "kind": kind, "m": m,
                   "iteration": k, "train_cpu_s": it["cpu_s"], "train_wall_s": it["wall_s"],
                   "train_max_rss_mb": it["max_rss_mb"], "loglik": it["loglik"],
                   "model_mb": round(os.path.getsize(model) / 2**20, 1),
                   **parse_and_score(model, words, gold, f"{stem}.it{k}.trees", args.work,
                                     args.jobs),
                   "dev": args.dev_desc}
            append_result(args.results, rec)
            results.append(rec)
            prev = rec
            print(f"  {ikey}: F1 {rec['f1']:.2f}  train {rec['train_cpu_s']:.0f} CPU-s "
                  f"{rec['train_max_rss_mb'] / 1024:.1f} GB", flush=True)
        curve.append(prev)
    best = max(curve, key=lambda r: (r["f1"], -r["iteration"]))
    rec = {k: v for k, v in best.items() if k not in ("type", "key", "row")}
    rec.update({"type": "row", "key": key, "chosen_iteration": best["iteration"],
                "curve": [[r["iteration"], r["f1"]] for r in curve],
                "paper_f1": PAPER[kind].get(m),
                "paper_iteration": PAPER_ITERATIONS[kind].get(m),
                "when": time.strftime("%Y-%m-%d %H:%M:%S")})
    if train_whole is not None:
        rec["train_process_cpu_s"] = train_whole["cpu_s"]
        rec["train_process_max_rss_mb"] = train_whole["max_rss_mb"]
    append_result(args.results, rec)
    results.append(rec)
    print(format_row(rec), flush=True)
    if not args.keep_models:
        for r in curve:
            path = f"{stem}.it{r['iteration']}.model"
            if os.path.exists(path):
                os.remove(path)


def pruner_options(args):
    """The ``train`` options of ``--pruner-states`` / ``--pruner-threshold``."""
    out = []
    if args.pruner_states:
        out += ["--pruner-states", str(args.pruner_states)]
        if args.pruner_threshold is not None:
            out += ["--pruner-threshold", repr(args.pruner_threshold)]
    return out


def eval_iterations(iterations, every):
    """The EM iterations saved and scored: every ``every``-th and the last."""
    return [k for k in range(1, iterations + 1) if k % every == 0 or k == iterations]


def em_child(kind, m, iterations, stem, jobs, float32, every, pruner_states, pruner_threshold,
             train):
    """Train EM / Pivot+EM in this process, saving the model after every iteration; the CPU
    time (user + sys of this process), wall time and peak RSS up to each iteration (saving
    excluded) go to ``STEM.iterations.jsonl``.  ``pruner_states`` > 0: with a pruning model
    of that many states (``pruner_threshold`` > 0: its threshold), fitted first."""
    import resource

    from fastspectral.lpcfg.em import EMLPCFG
    from fastspectral.trees.readers import read_treebank

    t0 = time.perf_counter()
    saving = [0.0, 0.0]   # cpu, wall spent saving so far

    def cpu():
        ru = resource.getrusage(resource.RUSAGE_SELF)
        return ru.ru_utime + ru.ru_stime

    trees = [t for path in train for t in read_treebank(path)]
    model = EMLPCFG(n_states=m, iterations=iterations,
                    init="random" if kind == "em" else "pivot", jobs=jobs)
    if pruner_states:
        model.set_params(pruner_states=pruner_states)
        if pruner_threshold:
            model.set_params(pruner_threshold=pruner_threshold)

    scored = set(eval_iterations(iterations, every))

    def callback(it, est, loglik):
        c, w = cpu(), time.perf_counter()
        rec = {"iteration": it, "cpu_s": round(c - saving[0], 2),
               "wall_s": round(w - t0 - saving[1], 2), "loglik": float(loglik),
               "max_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}
        # the attributes fit sets after its last iteration (the file's metadata only)
        est.n_iter_ = it
        est.n_train_trees_ = len(trees)
        est.fit_time_ = rec["wall_s"]
        if it in scored:
            if float32:
                est.float32_tensors()     # this iteration's tensors (the next one installs anew)
            est.save(f"{stem}.it{it}.model")
        saving[0] += cpu() - c
        saving[1] += time.perf_counter() - w
        with open(stem + ".iterations.jsonl", "a", encoding="utf-8") as fh:
            fh.write(json.dumps(rec) + "\n")
        return False

    model.fit(trees, callback=callback)


def side_by_side(args, words, gold, results):
    """Berkeley parser and fastspectral models on the same sentences, alternating."""
    jar = os.path.join(os.path.dirname(args.berkeley_grammar), "BerkeleyParser-1.7.jar")
    n = count_lines(words)

    def berkeley(rep):
        out = os.path.join(args.work, f"berkeley{rep}.out")
        t = timed(["java", "-Xmx8g", "-jar", jar, "-gr", args.berkeley_grammar,
                   "-inputFile", words, "-outputFile", out], out + ".log")
        if t["rc"] != 0:
            raise RuntimeError(f"the Berkeley parser failed: see {out}.log")
        trees = out + ".trees"
        with open(out, encoding="utf-8") as fh, open(trees, "w", encoding="utf-8") as w:
            for line in fh:       # its root is "( ... )"; eval wants (TOP ...)
                line = line.strip()
                w.write(("(TOP " + line[2:] if line.startswith("( ") else line) + "\n")
        return {"f1": evalb_f1(gold, trees, out + ".eval.log"), "parse_cpu_s": t["cpu_s"],
                "parse_wall_s": t["wall_s"], "parse_max_rss_mb": t["max_rss_mb"],
                "sentences": n, "sentences_per_cpu_s": round(n / max(t["cpu_s"], 1e-9), 2)}

    order = []
    for model in args.side_by_side:
        order += [("fastspectral", model), ("berkeley", args.berkeley_grammar)]
    order.append(("fastspectral", args.side_by_side[0]))
    for rep, (who, what) in enumerate(order):
        if who == "berkeley":
            got = berkeley(rep)
        else:
            got = parse_and_score(what, words, gold,
                                  os.path.join(args.work, f"side{rep}.trees"), args.work,
                                  args.jobs)
        rec = {"type": "side-by-side", "key": f"{who}:{os.path.basename(what)}#{rep}",
               "parser": who, "model": what, "run": rep, **got, "dev": args.dev_desc,
               "when": time.strftime("%Y-%m-%d %H:%M:%S")}
        append_result(args.results, rec)
        results.append(rec)
        print(f"{rec['key']}: F1 {rec['f1']:.2f}  {rec['sentences_per_cpu_s']:.1f} sentences "
              f"per CPU-s ({rec['parse_cpu_s']:.1f} CPU-s, {rec['parse_wall_s']:.0f} s, "
              f"{_gb(rec['parse_max_rss_mb'])})", flush=True)


# ---------------------------------------------------------------------------------------------
# output

def _gb(mb):
    return f"{mb / 1024:.1f} GB"


def format_row(r):
    paper = f"{r['paper_f1']:.2f}" if r.get("paper_f1") is not None else "-"
    it = ""
    if "chosen_iteration" in r:
        it = f" (it {r['chosen_iteration']}; paper {r.get('paper_iteration')})"
    return (f"{r['key']}: F1 {r['f1']:.2f}{it}  paper {paper}  train {r['train_cpu_s']:.0f} CPU-s"
            f" {r['train_wall_s']:.0f} s {_gb(r['train_max_rss_mb'])}  model {r['model_mb']:.0f} MB"
            f"  parse {r['sentences_per_cpu_s']:.1f} sent/CPU-s ({r['parse_cpu_s']:.0f} CPU-s, "
            f"{_gb(r['parse_max_rss_mb'])})")


def table(results):
    lines = ["| row | F1 | paper | EM it. (paper) | train CPU-s | train wall s | train peak RSS "
             "| model MB | parse sent/CPU-s | parse peak RSS |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        if r.get("type") != "row":
            continue
        paper = f"{r['paper_f1']:.2f}" if r.get("paper_f1") is not None else "-"
        it = (f"{r['chosen_iteration']} ({r.get('paper_iteration')})"
              if "chosen_iteration" in r else "-")
        lines.append(f"| {r['key']} | {r['f1']:.2f} | {paper} | {it} | {r['train_cpu_s']:.0f} | "
                     f"{r['train_wall_s']:.0f} | {_gb(r['train_max_rss_mb'])} | "
                     f"{r['model_mb']:.0f} | {r['sentences_per_cpu_s']:.1f} | "
                     f"{_gb(r['parse_max_rss_mb'])} |")
    for r in results:
        if r.get("type") == "row" and r.get("curve"):
            lines.append(f"\n{r['key']} dev curve (iteration, F1): "
                         + ", ".join(f"{k} {f:.2f}" for k, f in r["curve"]))
    return "\n".join(lines)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--em-child"]:
        kind, m, iterations, stem, jobs, float32, every, p_states, p_thr, *train = argv[1:]
        em_child(kind, int(m), int(iterations), stem, int(jobs), bool(int(float32)), int(every),
                 int(p_states), float(p_thr), train)
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", nargs="+", type=parse_row, default=None,
                    help="rows KIND[:M] (default: pcfg and every kind at m = 8 16 24 32)")
    ap.add_argument("--train", nargs="+", default=[os.path.join(DATA, "wsj02-21.trees")])
    ap.add_argument("--dev", default=os.path.join(DATA, "wsj22.trees"))
    ap.add_argument("--dev-limit", type=int, default=0,
                    help="score only the first N development sentences (0: all)")
    ap.add_argument("--work", default="/tmp/wsj_constituency")
    ap.add_argument("--results", default=os.path.join(ROOT, "results", "wsj_constituency.jsonl"))
    ap.add_argument("--em-iterations", type=int, default=40)
    ap.add_argument("--pivot-em-iterations", type=int, default=8)
    ap.add_argument("--eval-every", type=int, default=1,
                    help="EM rows: save and score every N-th iteration and the last")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--float32-tensors", action="store_true",
                    help="train the L-PCFG rows with --float32-tensors (rows KIND:M+f32)")
    ap.add_argument("--pruner-states", type=int, default=0, metavar="M",
                    help="train the L-PCFG rows with a pruning model of M states "
                         "(rows KIND:M+pM)")
    ap.add_argument("--pruner-threshold", type=float, default=None, metavar="T",
                    help="its marginal threshold (default: the learner's)")
    ap.add_argument("--keep-models", action="store_true")
    ap.add_argument("--train-args", default="", metavar="ARGS",
                    help="more options of `fastspectral train` for the spectral, pivot and pcfg "
                         "rows, e.g. '--moment-smoothing 10' (needs --label)")
    ap.add_argument("--label", default="",
                    help="a name for --train-args, added to the row names (KIND:M+LABEL)")
    ap.add_argument("--table", action="store_true", help="print the table of --results and exit")
    ap.add_argument("--side-by-side", nargs="+", metavar="MODEL", default=None,
                    help="instead of rows: the Berkeley parser and these models, alternating")
    ap.add_argument("--berkeley-grammar",
                    default=os.path.join(ROOT, "..", "shared", "peers",
                                         "berkeley-wsj02-21-sm3.gr"))
    args = ap.parse_args(argv)
    args.train_args = shlex.split(args.train_args)
    if args.train_args and not args.label:
        ap.error("--train-args needs --label (the rows' name for these settings)")
    if args.label and not all(c.isalnum() or c in "-_.=" for c in args.label):
        ap.error(f"--label {args.label!r}: letters, digits and - _ . = only")
    if args.table:
        print(table(read_results(args.results)))
        return 0
    rows = args.rows or [parse_row(r) for r in default_rows()]
    # the processes run the fastspectral this script imports (PYTHONPATH=. for the checkout's
    # in-place build, else the installed package)
    import fastspectral
    here = os.path.dirname(os.path.dirname(os.path.abspath(fastspectral.__file__)))
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [here] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    os.makedirs(args.work, exist_ok=True)
    for path in [*args.train, args.dev]:
        if not os.path.exists(path):
            ap.error(f"{path}: no such file")
    from fastspectral.trees.readers import read_treebank

    suffix = str(args.dev_limit) if args.dev_limit else ""
    gold = os.path.join(args.work, f"dev{suffix}.gold")
    words = os.path.join(args.work, f"dev{suffix}.words")
    dev_trees = list(read_treebank(args.dev))
    if args.dev_limit:
        dev_trees = dev_trees[:args.dev_limit]
    with open(gold, "w", encoding="utf-8") as g, open(words, "w", encoding="utf-8") as w:
        for t in dev_trees:
            g.write(str(t) + "\n")
            w.write(" ".join(t.leaves()) + "\n")
    args.dev_desc = f"{os.path.basename(args.dev)}[:{len(dev_trees)}]"
    args.tag = ("+f32" if args.float32_tensors else "") + \
        (f"+p{args.pruner_states}" if args.pruner_states else "") + \
        (f"+t{args.pruner_threshold:g}" if args.pruner_states and
         args.pruner_threshold is not None else "") + \
        (f"+{args.label}" if args.label else "") + \
        (f"/dev{args.dev_limit}" if args.dev_limit else "")
    results = read_results(args.results)
    if args.side_by_side:
        side_by_side(args, words, gold, results)
        return 0
    if args.train_args and any(kind in EM_KINDS for kind, _ in rows):
        ap.error("--train-args applies to the spectral, pivot and pcfg rows only")
    for kind, m in rows:
        if args.float32_tensors and m is None:
            continue                    # the PCFG has no tensors
        if kind in EM_KINDS:
            run_em(kind, m, args, words, gold, results)
        else:
            run_plain(kind, m, args, words, gold, results)
    print(table([r for r in results if r.get("dev") == args.dev_desc]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
