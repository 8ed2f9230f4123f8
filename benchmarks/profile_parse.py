"""Where the wall time of ``model.parse`` goes, at a given thread count.

Every function of the compiled modules ``fastspectral._ext.*`` is wrapped with a wall-clock
timer before the model is loaded; one ``parse`` of the test sentences then shows how much of its
wall time is spent inside the kernels (which release the GIL and run their OpenMP threads) and
how much outside them (the serial, GIL-held part of the parse path that bounds the speed-up by
Amdahl's law), followed by ``cProfile``'s functions with the largest own time.

    python benchmarks/profile_parse.py MODEL.fsm --jobs 1 16 --limit 800

``--stages`` instead prints the CPU seconds (``time.process_time``: every thread of the
process) of the stages of an L-PCFG parse, each timed by wrapping its function: the coarse pass
(``posterior_prune``), the PCFG pass and the L-PCFG passes (``LatentPCFGBase._run`` with a
one-state or a latent grammar; a model with a pruning model has two, told by their states), the
item projections, the decoding, and the rest:

    python benchmarks/profile_parse.py MODEL.fsm --stages --jobs 1 --limit 300

``--stages --clock wall`` times the same stages by the wall clock instead: a stage whose wall
time falls less than its CPU time from J=1 to J=2 leaves threads waiting (serial work around
a kernel, or a few sentences in one call):

    python benchmarks/profile_parse.py MODEL.fsm --stages --clock wall --jobs 1 2 --limit 400
"""
from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--test", default=os.path.join(HERE, "..", "..", "shared", "data", "ptb",
                                                   "wsj22.trees"))
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--jobs", type=int, nargs="+", default=[1])
    ap.add_argument("--top", type=int, default=18, help="cProfile rows (0: no cProfile, whose "
                    "overhead inflates the Python part)")
    ap.add_argument("--stages", action="store_true",
                    help="CPU seconds per stage of an L-PCFG parse (see above)")
    ap.add_argument("--clock", choices=["cpu", "wall"], default="cpu",
                    help="with --stages: CPU seconds of the process (default) or wall seconds")
    ap.add_argument("--warm", action="store_true",
                    help="warm up on all the test sentences first (the lexicon's per-word-type "
                    "cache filled, as bench_scaling.py does), not only on 20")
    args = ap.parse_args(argv)
    if args.stages:
        return stages(args)

    import importlib
    import pkgutil

    import fastspectral._ext as ext

    spent: dict = {}

    def timed(name, f):
        def wrapper(*a, **k):
            t = time.perf_counter()
            try:
                return f(*a, **k)
            finally:
                spent[name] = spent.get(name, 0.0) + time.perf_counter() - t
        return wrapper

    for info in pkgutil.iter_modules(ext.__path__):
        mod = importlib.import_module(f"fastspectral._ext.{info.name}")
        for name in dir(mod):
            f = getattr(mod, name)
            if callable(f) and not name.startswith("_") and not isinstance(f, type) and \
                    getattr(f, "__module__", "") == mod.__name__:
                setattr(mod, name, timed(f"{info.name}.{name}", f))

    import fastspectral
    from fastspectral.trees import read_ptb

    sents = [[w for w, t in tree.pos() if t != "-NONE-"] for tree in read_ptb(args.test)]
    sents = sents[:args.limit] if args.limit else sents
    model = fastspectral.load(args.model)
    model.parse(sents if args.warm else sents[:20], jobs=max(args.jobs))
    for j in args.jobs:
        prof = cProfile.Profile() if args.top else None
        spent.clear()
        t0 = time.perf_counter()
        if prof:
            prof.enable()
        model.parse(sents, jobs=j)
        if prof:
            prof.disable()
        wall = time.perf_counter() - t0
        kern = sum(spent.values())
        print(f"## {os.path.basename(args.model)} J={j}: wall {wall:.2f} s"
              f"{' (under cProfile)' if prof else ''}, "
              f"inside kernels {kern:.2f} s ({100 * kern / wall:.0f} %), outside "
              f"{wall - kern:.2f} s ({100 * (wall - kern) / wall:.0f} %)")
        for name, t in sorted(spent.items(), key=lambda x: -x[1]):
            print(f"   {name:40s} {t:8.3f} s")
        if prof:
            s = io.StringIO()
            pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(args.top)
            print("\n".join(line for line in s.getvalue().splitlines()[6:] if line.strip()))


def stages(args):
    """CPU seconds per stage of ``model.parse`` (an L-PCFG model), one parse per J."""
    import numpy as np

    import fastspectral
    import fastspectral._ext.tensor_chart as tc
    import fastspectral.grammar.chart as chart
    from fastspectral.lpcfg.latent import LatentPCFGBase
    from fastspectral.trees import read_ptb

    spent: dict = {}
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    unit = "CPU-s" if args.clock == "cpu" else "s"

    def timed(name, f):
        def wrapper(*a, **k):
            t = clock()
            try:
                return f(*a, **k)
            finally:
                spent[name] = spent.get(name, 0.0) + clock() - t
        return wrapper

    run = LatentPCFGBase._run

    def run_timed(grammar, *a, **k):
        # the pruning model's pass (``--pruner-states``) is told apart by its states
        name = "PCFG pass" if np.all(grammar.m == 1) else f"L-PCFG pass, m={grammar.m.max()}"
        return timed(name, run)(grammar, *a, **k)

    LatentPCFGBase._run = staticmethod(run_timed)
    chart.posterior_prune = timed("coarse pass", chart.posterior_prune)
    tc.project_items = timed("item projection", tc.project_items)
    tc.decode_batch = timed("decoding", tc.decode_batch)
    sents = [[w for w, t in tree.pos() if t != "-NONE-"] for tree in read_ptb(args.test)]
    sents = sents[:args.limit] if args.limit else sents
    model = fastspectral.load(args.model)
    if not isinstance(model, LatentPCFGBase):
        raise SystemExit(f"{args.model}: --stages needs an L-PCFG model")
    model.parse(sents, jobs=max(args.jobs))     # warm-up: float32 tensors, tables, caches
    for j in args.jobs:
        spent.clear()
        t0 = clock()
        model.parse(sents, jobs=j)
        total = clock() - t0
        print(f"## {os.path.basename(args.model)} J={j}: {total:.2f} {unit}, "
              f"{len(sents) / total:.1f} sentences per {unit}")
        for name, t in sorted(spent.items(), key=lambda x: -x[1]):
            print(f"   {name:20s} {t:7.2f} {unit:5s} {100 * t / total:5.1f} %")
        rest = total - sum(spent.values())
        print(f"   {'the rest':20s} {rest:7.2f} {unit:5s} {100 * rest / total:5.1f} %")
        print(f"   {model.last_parse_stats_}")


if __name__ == "__main__":
    main()
