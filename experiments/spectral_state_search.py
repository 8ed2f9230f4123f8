"""Latent states per symbol group of the spectral L-PCFG, chosen on a development split.

Narayan & Cohen (2016), "Optimizing spectral learning of latent-variable PCFGs" (EMNLP),
choose the number of latent states of every nonterminal on development data instead of one
``m`` for all.  This harness does a coordinate search of that kind over the largest groups of
symbols of the binarised grammar (a group: the symbols of one treebank category, e.g. every
``NP^X``; the intermediate symbols ``@NP^X|Y`` of the binarisation form their own group
``@NP``; every part-of-speech tag is a group):

1. the training treebank is prepared once and every symbol's ``Omega^a`` is decomposed once for
   the largest number of states tried (``SpectralLPCFG._decompose``); an estimate with fewer
   states of a symbol uses the leading singular vectors of that decomposition
   (``SpectralLPCFG._estimate_from``), so a trial costs the moments and a parse, not a fit;
2. from ``--states`` everywhere, the groups in order of training nodes, each tries the values
   of ``--values`` in turn and keeps the first that raises F1 on the *search* half of the
   development sentences (the odd-numbered ones, 1, 3, 5, ...) by more than ``--min-gain``;
3. every trial also scores the other half (the *check* half, never used to choose), so the
   log shows whether a gain on the search half carries over.

Each trial is one JSON line of ``--log`` (resumable: a state map already there is not parsed
again); the chosen states per symbol are written to ``--out`` (JSON), the ``--state-map FILE`` of
``fastspectral train spectral``.  The chosen model is then trained and scored as a user does
it (``benchmarks/wsj_constituency.py --train-args "--state-map FILE" --label ...``).

    python experiments/spectral_state_search.py --states 24 --values 32 16 --groups 12 \\
        --log results/state_search.jsonl --out results/state_map.json
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
PTB = os.path.normpath(os.path.join(HERE, "..", "..", "shared", "data", "ptb"))


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def group_of(symbol: str) -> str:
    """The group of a binarised symbol: its treebank category (before ``^`` / ``|`` and the
    ``+`` of collapsed unary chains), with the ``@`` of intermediate symbols kept."""
    head = "@" if symbol.startswith("@") else ""
    base = symbol.lstrip("@").split("^", 1)[0].split("|", 1)[0].split("+", 1)[0]
    return head + base


def read_log(path) -> dict:
    out = {}
    if path and os.path.exists(path):
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    rec = json.loads(line)
                    out[rec["key"]] = rec
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--train", default=os.path.join(PTB, "wsj02-21.trees"))
    ap.add_argument("--dev", default=os.path.join(PTB, "wsj22.trees"))
    ap.add_argument("--dev-limit", type=int, default=0, help="the first N dev trees (0: all)")
    ap.add_argument("--states", type=int, default=24, help="the states every group starts at")
    ap.add_argument("--values", type=int, nargs="+", default=[32, 16],
                    help="the states each group tries, in this order")
    ap.add_argument("--groups", type=int, default=12, help="the largest N groups are searched")
    ap.add_argument("--min-gain", type=float, default=0.0)
    ap.add_argument("--log", default="state_search.jsonl")
    ap.add_argument("--out", default="state_map.json")
    ap.add_argument("--train-args", default="{}",
                    help="JSON of further SpectralLPCFG parameters")
    args = ap.parse_args(argv)

    from fastspectral import _gc
    from fastspectral._blas import blas_single_thread
    from fastspectral.eval.evalb import evaluate
    from fastspectral.lpcfg import SpectralLPCFG
    from fastspectral.lpcfg.latent import resolve_random_state
    from fastspectral.trees import read_ptb

    dev = list(read_ptb(args.dev))
    if args.dev_limit:
        dev = dev[:args.dev_limit]
    gold = [str(t) for t in dev]
    sents = [[w for w, t in tr.pos() if t != "-NONE-"] for tr in dev]
    halves = {"search": list(range(0, len(dev), 2)), "check": list(range(1, len(dev), 2))}

    model = SpectralLPCFG(n_states=args.states, jobs=1, **json.loads(args.train_args))
    model._validate_params()
    seed = resolve_random_state(model.random_state)
    c0, t0 = _cpu(), time.perf_counter()
    with blas_single_thread(), _gc.paused():
        prep = model._prepare_treebank(read_ptb(args.train), t0)
        g, nodes = prep.grammar, prep.nodes
        counts = np.bincount(nodes.label, minlength=g.n_symbols)
        base = model._target_states(g, counts)
        top = max([args.states, *args.values])
        widest = np.where(base > 1, top, base)
        dec = model._decompose(nodes, g, seed, targets=widest)
    print(f"prepared and decomposed for {top} states: {_cpu() - c0:.0f} CPU-s", flush=True)

    groups: dict = {}
    for a in np.flatnonzero(base > 1):
        groups.setdefault(group_of(g.symbols[a]), []).append(int(a))
    order = sorted(groups, key=lambda k: -int(counts[groups[k]].sum()))[:args.groups]
    print("groups searched (training nodes): " + ", ".join(
        f"{k} ({int(counts[groups[k]].sum()):,})" for k in order), flush=True)

    log = read_log(args.log)

    def trial(choice: dict) -> dict:
        key = json.dumps(sorted(choice.items()))
        if key in log:
            return log[key]
        targets = base.copy()
        for grp, k in choice.items():
            targets[groups[grp]] = k
        c = _cpu()
        with blas_single_thread(), _gc.paused():
            est = model._estimate_from(dec, nodes, g, prep.n_trees, targets)
        model.singular_values_ = est.singular_values
        model._install(prep.pcfg, est.arrays)
        model.n_train_trees_ = prep.n_trees
        model.pruner_ = None
        model.float32_tensors()
        c_fit = _cpu() - c
        c = _cpu()
        out = [str(t) for t in model.parse(sents, jobs=1)]
        c_parse = _cpu() - c
        rec = {"key": key, "choice": choice,
               "f1": evaluate(gold, out).fmeasure,
               **{h: evaluate([gold[i] for i in idx], [out[i] for i in idx]).fmeasure
                  for h, idx in halves.items()},
               "estimate_cpu_s": round(c_fit, 1), "parse_cpu_s": round(c_parse, 1),
               "tensor_mb": round(model.lpcfg_.T.nbytes / 2**20, 1),
               "when": time.strftime("%Y-%m-%d %H:%M:%S")}
        with open(args.log, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(rec) + "\n")
        log[key] = rec
        print(f"{_describe(choice, args.states)}: search {rec['search']:.2f} check "
              f"{rec['check']:.2f} all {rec['f1']:.2f} ({c_fit:.0f} + {c_parse:.0f} CPU-s)",
              flush=True)
        return rec

    current: dict = {}
    best = trial(current)
    for grp in order:
        for k in args.values:
            if k == current.get(grp, args.states):
                continue
            rec = trial({**current, grp: k})
            if rec["search"] > best["search"] + args.min_gain:
                current, best = {**current, grp: k}, rec
                break
    print(f"chosen: {_describe(current, args.states)}: search {best['search']:.2f} (from "
          f"{trial({})['search']:.2f}), check {best['check']:.2f} (from {trial({})['check']:.2f}),"
          f" all {best['f1']:.2f} (from {trial({})['f1']:.2f})", flush=True)
    with open(args.out, "w", encoding="utf-8") as fh:
        json.dump({g.symbols[a]: k for grp, k in sorted(current.items()) for a in groups[grp]},
                  fh, indent=0, sort_keys=True)
        fh.write("\n")


def _describe(choice: dict, states: int) -> str:
    if not choice:
        return f"all {states}"
    return ", ".join(f"{k}={v}" for k, v in choice.items())


if __name__ == "__main__":
    main()
