"""Benchmark of the lexical disambiguator (Shah et al. 2010; docs/notes/lexical.md).

1. 10-fold cross-validation (folds of whole documents) on PADT (UD Arabic PADT v1.3 dev,
   28k words) and on UD English EWT dev (25k words): every model of table 5 (unigram,
   M_baseline, M_ind, M_uni, M_full) with E1/E2 on all tokens and on the tokens whose gold
   label is among the candidates, the per-LE table 4 (unigram, M_e, M_full), the coverage
   upper bound and the time spent.  Stage-2 ``C`` is chosen inside the training folds
   (``C=None``); nothing is tuned on a test fold.
2. Speed: ``LexicalDisambiguator().fit`` (M_full) on at least ``--speed-tokens`` tokens (the
   corpus repeated, documents renamed) and ``parse`` of the same tokens; tokens per second; and
   the whole processes ``fastspectral lexical train`` / ``tag`` on the same tokens (CPU seconds
   of the child processes).
3. The paper's table 5 figures, checked on the numbers just measured.
4. ``--profile``: where the CPU time of ``fit`` and ``parse`` goes (CPU seconds of the main
   steps: candidate sets, guessers, counts, design matrices, liblinear, scoring, the inner
   choices) and the start-up CPU of a process that imports what training needs.

    PYTHONPATH=. python benchmarks/bench_lexical.py [--folds 10] [--json out.json]
    PYTHONPATH=. python benchmarks/bench_lexical.py --speed-only --profile
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from fastspectral.lexical.cv import cross_validate, format_report  # noqa: E402
from fastspectral.trees.corpus import read_conllu_sentences as read_corpus  # noqa: E402
from fastspectral.lexical.model import LexicalDisambiguator  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_DATA = os.path.join(os.path.dirname(os.path.dirname(HERE)), "shared", "data")
CORPORA = {"PADT": ("arabic", "padt-v1.3-dev.conllu"),
           "EWT": ("ud", "en_ewt-ud-dev.conllu")}
#: the paper's table 5 (E1, E2 in percent)
PAPER = {"M_full": (9.4, 3.8), "M_uni": (11.6, 6.4), "M_baseline": (13.6, 9.1),
         "M_ind": (18.7, 6.0)}


def repeated(sents, n_tokens):
    """The corpus repeated until it has ``n_tokens`` tokens; each copy's documents renamed."""
    out, k, total = [], 0, 0
    while total < n_tokens:
        for s in sents:
            s2 = copy.copy(s)
            s2.comments = [c.replace("orig_file_sentence ", f"orig_file_sentence copy{k}-")
                           .replace("newdoc id = ", f"newdoc id = copy{k}-") for c in s.comments]
            out.append(s2)
            total += len(s)
        k += 1
    return out


def speed(sents, n_tokens):
    big = repeated(sents, n_tokens)
    n = sum(len(s) for s in big)
    model = LexicalDisambiguator()
    model.fit(big[:200])            # compile / load the kernels outside the timing
    model.parse(big[:20])
    t0, c0 = time.perf_counter(), time.process_time()
    model.fit(big)
    fit, fit_cpu = time.perf_counter() - t0, time.process_time() - c0
    t0, c0 = time.perf_counter(), time.process_time()
    model.parse(big)
    tag, tag_cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"tokens": n, "fit_seconds": fit, "tag_seconds": tag, "fit_cpu_seconds": fit_cpu,
            "tag_cpu_seconds": tag_cpu, "fit_tokens_per_s": n / fit,
            "tag_tokens_per_s": n / tag,
            # the settings chosen on the inner split of this training data
            "chosen": {"known_guesses": model.known_guesses_, "graded": model.graded_,
                       "unknown_weights": model.unknown_weights_}}


def cli_speed(sents, n_tokens):
    """Whole processes, as a user runs them: ``fastspectral lexical train`` and ``tag`` of the
    corpus repeated to ``n_tokens`` tokens (written to a temporary CoNLL-U file), CPU seconds of
    each child process (``resource.getrusage(RUSAGE_CHILDREN)``: start-up, reading, fitting or
    tagging, writing) and wall seconds."""
    import resource
    import subprocess
    import tempfile

    from fastspectral.trees.conll import write_conllu

    big = repeated(sents, n_tokens)
    out = {"tokens": sum(len(s) for s in big)}
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "corpus.conllu")
        write_conllu(big, data)
        model = os.path.join(tmp, "model.lex")
        runs = {"train": ["lexical", "train", data, "-o", model, "-q"],
                "tag": ["lexical", "tag", model, data, "-o", os.path.join(tmp, "out.conllu"),
                        "-q"]}
        for what, argv in runs.items():
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "fastspectral"] + argv, check=True)
            wall = time.perf_counter() - t0
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            out[f"{what}_wall_seconds"] = wall
            out[f"{what}_cpu_seconds"] = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime -
                                                                        r0.ru_stime)
    return out


#: the functions whose CPU time ``--profile`` reports (module, attribute, label); nested
#: entries are included in the ones that call them (SVR fits in fit_lambda, in _fit_ranker)
PROFILED = (("model", "candidates", "candidate sets (eq. 9, guessed inflections included)"),
            ("analyser", "SuffixGuesser.inflections", "  of which guessed inflections"),
            ("analyser", "SuffixGuesser.fit", "guessers (suffixes / word shapes)"),
            ("engine", "Tables.build", "stage-1 counts"),
            ("model", "_stage2_rows", "stage-2 rows and targets"),
            ("engine", "design", "design matrices (_design_kernel, document scores)"),
            ("engine", "fit_lambda", "stage 2: (C, epsilon) grid and final SVR fits"),
            ("engine", "_svr", "  of which liblinear (LinearSVR.fit)"),
            ("engine", "score", "scoring (eq. 6, _score kernel, document scores)"),
            ("model", "_InnerE1.__call__", "inner choices (fits + scoring, included above)"))


def cpu_profile(sents, n_tokens):
    """CPU seconds of the main steps of ``fit`` and ``parse`` on the corpus repeated to
    ``n_tokens`` tokens (``time.process_time`` around each listed function, all threads of
    the process), and of the imports a training process needs."""
    import functools
    import importlib
    import subprocess

    big = repeated(sents, n_tokens)
    acc, calls = {}, {}
    saved = []
    for mod, attr, label in PROFILED:
        m = importlib.import_module(f"fastspectral.lexical.{mod}")
        owner, name = (m, attr) if "." not in attr else \
            (getattr(m, attr.split(".")[0]), attr.split(".")[1])
        fn = getattr(owner, name)
        saved.append((owner, name, vars(owner)[name]))   # the raw attribute (classmethod ...)
        def timed(*a, __fn=fn, __label=label, **k):
            t0 = time.process_time()    # the whole process: Numba's parallel kernels too
            try:
                return __fn(*a, **k)
            finally:
                acc[__label] = acc.get(__label, 0.0) + time.process_time() - t0
                calls[__label] = calls.get(__label, 0) + 1
        setattr(owner, name, functools.wraps(fn)(timed))
    try:
        model = LexicalDisambiguator()
        model.fit(big[:200])
        model.parse(big[:20])
        out = {}
        for what, run in (("fit", lambda: model.fit(big)), ("parse", lambda: model.parse(big))):
            acc.clear()
            calls.clear()
            c0 = time.process_time()
            run()
            total = time.process_time() - c0
            out[what] = {"cpu_seconds": total,
                         "steps": {k: (acc[k], calls[k]) for _, _, k in PROFILED if k in acc}}
    finally:
        for owner, name, fn in saved:
            setattr(owner, name, fn)
    imports = {}
    for label, code in (("python", "pass"),
                        ("numpy, scipy, numba, fastspectral.lexical.model",
                         "import fastspectral.cli, fastspectral.lexical.model"),
                        ("... and sklearn.svm (LinearSVR)",
                         "import fastspectral.cli, fastspectral.lexical.model; "
                         "from sklearn.svm import LinearSVR"),
                        ("... and only sklearn.svm._liblinear",
                         "import fastspectral.cli, fastspectral.lexical.model; "
                         "from sklearn.svm import _liblinear")):
        r0 = resource_children()
        subprocess.run([sys.executable, "-c", code], check=True)
        imports[label] = resource_children() - r0
    out["imports"] = imports
    return out


def resource_children() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def format_profile(prof) -> str:
    lines = []
    for what in ("fit", "parse"):
        p = prof[what]
        lines.append(f"  {what}: {p['cpu_seconds']:.2f} CPU-s in all")
        for label, (sec, n) in p["steps"].items():
            lines.append(f"    {sec:6.2f}  {label} ({n} calls)")
    lines.append("  whole-process start-up (CPU-s of `python -c ...`):")
    for label, sec in prof["imports"].items():
        lines.append(f"    {sec:6.2f}  {label}")
    return "\n".join(lines)


def targets(res):
    t5 = res["table5"]
    lines = []
    for key, label in (("E1", "all tokens"), ("E1_covered", "covered tokens")):
        e = {m: t5[m][key] for m in t5}
        lowest = min(e, key=e.get)
        rel = 100 * (e["M_uni"] - e["M_full"]) / e["M_uni"]
        order = sorted(PAPER, key=lambda m: e[m])
        met_low = "as in the paper" if lowest == "M_full" else "unlike the paper"
        met_rel = "yes" if rel >= 10 else "no"
        lines.append(f"  {label}: lowest E1 {lowest} ({met_low}); "
                     f"M_full {rel:.1f} % below M_uni ({met_rel}: >= 10 %); "
                     f"E1 order {' < '.join(order)} (paper: M_full < M_uni < M_baseline < M_ind)")
    return lines


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=os.environ.get("FASTSPECTRAL_DATA", DEFAULT_DATA))
    ap.add_argument("--folds", type=int, default=10)
    ap.add_argument("--corpora", default="PADT,EWT")
    ap.add_argument("--speed-tokens", type=int, default=100000)
    ap.add_argument("--json", default=None)
    ap.add_argument("--speed-only", action="store_true", help="skip the cross-validation")
    ap.add_argument("--profile", action="store_true",
                    help="also print the CPU seconds of the main steps of fit and parse")
    args = ap.parse_args(argv)
    out = {"load_average": os.getloadavg(), "corpora": {}}
    for name in args.corpora.split(","):
        path = os.path.join(args.data, *CORPORA[name])
        sents = read_corpus(path)
        print(f"== {name}: {path}")
        res = {"seconds": 0.0}
        if not args.speed_only:
            t0 = time.perf_counter()
            res = cross_validate(sents, args.folds)
            res["seconds"] = time.perf_counter() - t0
            print(format_report(res))
            print("targets (paper table 5: " +
                  ", ".join(f"{m} {a}/{b}" for m, (a, b) in PAPER.items()) + "):")
            print("\n".join(targets(res)))
        sp = speed(sents, args.speed_tokens)
        res["speed"] = sp
        print(f"speed (M_full, corpus repeated to {sp['tokens']} tokens): fit "
              f"{sp['fit_seconds']:.1f} s wall / {sp['fit_cpu_seconds']:.1f} s CPU "
              f"({sp['fit_tokens_per_s']:,.0f} tokens/s), tag {sp['tag_seconds']:.1f} s wall / "
              f"{sp['tag_cpu_seconds']:.1f} s CPU ({sp['tag_tokens_per_s']:,.0f} tokens/s); "
              f"chosen on the inner split: {sp['chosen']}")
        cs = cli_speed(sents, args.speed_tokens)
        res["cli_speed"] = cs
        print(f"whole processes ({cs['tokens']} tokens): `fastspectral lexical train` "
              f"{cs['train_cpu_seconds']:.1f} CPU-s ({cs['train_wall_seconds']:.1f} s wall), "
              f"`fastspectral lexical tag` {cs['tag_cpu_seconds']:.1f} CPU-s "
              f"({cs['tag_wall_seconds']:.1f} s wall)")
        if args.profile:
            prof = cpu_profile(sents, args.speed_tokens)
            res["profile"] = prof
            print(f"where the CPU time goes ({sp['tokens']} tokens, in-process):")
            print(format_profile(prof))
        print(f"(cross-validation {res['seconds']:.0f} s; load average "
              f"{', '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores)")
        print()
        out["corpora"][name] = res
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(out, fh, indent=1, ensure_ascii=False)


if __name__ == "__main__":
    main()
