"""``fastspectral demo`` and ``fastspectral bench``: the registry's models on the built-in
synthetic latent-variable treebank (or, for ``bench``, on treebank files)."""
from __future__ import annotations

import time

from .. import models
from .._argtypes import markov_order, positive_int
from . import kit

DEMO_EPILOG = """\
The treebank is sampled from fastspectral.synthetic.LatentPCFG.default(n_states, seed): an
English-like latent-variable PCFG, so the models are evaluated against the true trees.  The
models are the registry's demo entries (fastspectral/models.py).

examples:
  fastspectral demo
  fastspectral demo --n-train 5000 --n-test 500 --jobs 4
  fastspectral demo --models pcfg --n-states 3 --seed 1
"""

BENCH_EPILOG = """\
examples:
  fastspectral bench --jobs 1 2 4
  fastspectral bench --train wsj-sample.mrg --test wsj22.trees --max-len 40 --jobs 1 4
  fastspectral bench --model spectral --train wsj-sample.mrg --test wsj22.trees --limit 300
"""


def _h_text(text: str) -> str:
    markov_order(text)        # validates ('inf' or an integer >= 0)
    return text


def demo_models() -> list[tuple[str, models.ModelKind, dict]]:
    """``(label, entry, constructor arguments)`` of every demo entry of the registry."""
    return [(label, entry, dict(kwargs)) for entry in models.REGISTRY.values()
            for label, kwargs in entry.demo]


def _synthetic_options(p, n_train: int, n_test: int) -> None:
    g = p.add_argument_group("synthetic treebank")
    g.add_argument("--n-train", type=positive_int, default=n_train, metavar="N",
                   help=f"training trees (default: {n_train})")
    g.add_argument("--n-test", type=positive_int, default=n_test, metavar="N",
                   help=f"test sentences (default: {n_test})")
    g.add_argument("--n-states", type=positive_int, default=2, metavar="M",
                   help="hidden states per symbol of the generating grammar (default: 2)")
    g.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")


def add_demo_commands(sub, common, fmt) -> None:
    p = sub.add_parser("demo", parents=[common], formatter_class=fmt, epilog=DEMO_EPILOG,
                       help="train and evaluate on the built-in synthetic treebank",
                       description="Sample a treebank from the built-in latent-variable PCFG, "
                                   "train the registry's demo models, parse held-out sentences "
                                   "from their words and print F1 and speed.")
    _synthetic_options(p, n_train=2000, n_test=300)
    p.add_argument("--jobs", type=positive_int, default=2, metavar="N",
                   help="parallel workers for parsing (default: 2)")
    kit.not_a_path(p.add_argument("--models", default=None, metavar="NAMES",
                   help="comma-separated substrings selecting models (default: all), e.g. 'pcfg'"))
    p.set_defaults(func=cmd_demo)

    names = [n for n, (e, _) in models.train_commands().items() if e.input_kind == "sentences"]
    p = sub.add_parser("bench", parents=[common], formatter_class=fmt, epilog=BENCH_EPILOG,
                       help="time training and parsing for several --jobs values",
                       description="Time training and parsing (and report F1) of a "
                                   "constituency model for several --jobs values, on the "
                                   "synthetic treebank or on files.")
    p.add_argument("--model", choices=names, default="pcfg",
                   help="model type of 'fastspectral train' (default: pcfg)")
    kit.reads(p.add_argument("--train", metavar="PATH", default=None, help="training treebank"))
    kit.reads(p.add_argument("--test", metavar="PATH", default=None,
                             help="test treebank (gold trees)"))
    p.add_argument("--format", choices=("ptb",), default=None,
                   help="treebank format (default: detected)")
    _synthetic_options(p, n_train=2000, n_test=300)
    p.add_argument("--jobs", type=positive_int, nargs="+", default=[1, 2], metavar="N",
                   help="worker counts to time (default: 1 2)")
    p.add_argument("--v", type=positive_int, default=None, metavar="V",
                   help="vertical markovisation order (default: the model's)")
    p.add_argument("--h", type=_h_text, default=None, metavar="H",
                   help="horizontal markovisation order, or 'inf' (default: the model's)")
    p.add_argument("--max-len", type=positive_int, default=None, metavar="N",
                   help="only test sentences of at most N words")
    p.add_argument("--limit", type=positive_int, default=None, metavar="N",
                   help="only the first N test sentences")
    p.add_argument("--gold-tags", action="store_true",
                   help="give the parser the gold part-of-speech tags")
    p.set_defaults(func=cmd_bench)


def evaluate_model(model, train_trees, test_words, gold_lines, jobs, bar=None, tags=None):
    """Fit, parse and score one model; returns ``(train_s, parse_s, sentences_per_s, F1)``."""
    from ..eval.evalb import evaluate

    t0 = time.perf_counter()
    model = model.fit(train_trees)
    t1 = time.perf_counter()
    pred = model.parse(test_words, tags=tags, jobs=jobs, progress=bar)
    t2 = time.perf_counter()
    pred_lines = ["" if t is None else str(t) for t in pred]
    f1 = evaluate(gold_lines, pred_lines).fmeasure
    parse_s = t2 - t1
    rate = len(test_words) / parse_s if parse_s > 0 else float("inf")
    return t1 - t0, parse_s, rate, f1


def _synthetic_split(args):
    from ..synthetic import LatentPCFG

    grammar = LatentPCFG.default(n_states=args.n_states, seed=args.seed)
    trees = grammar.sample(args.n_train + args.n_test, seed=args.seed)
    return grammar, trees[:args.n_train], trees[args.n_train:]


def _mean_len(trees) -> float:
    return sum(len(t.leaves()) for t in trees) / max(len(trees), 1)


def _with_jobs(cls, kwargs, jobs):
    if "jobs" in cls._get_param_names():
        kwargs = {**kwargs, "jobs": jobs}
    return cls(**kwargs)


def cmd_demo(args) -> int:
    """Synthetic treebank -> train -> parse held-out words -> F1."""
    grammar, train, test = _synthetic_split(args)
    print(f"synthetic treebank: built-in latent PCFG ({len(grammar.nonterminals)} phrasal "
          f"symbols, {len(grammar.preterminals)} tags, {len(grammar.vocabulary)} words, "
          f"{args.n_states} hidden states per symbol, seed {args.seed})")
    print(f"train: {len(train)} trees (mean {_mean_len(train):.1f} words)   "
          f"test: {len(test)} sentences (mean {_mean_len(test):.1f} words), parsed from words "
          f"only with --jobs {args.jobs}")
    gold = [str(t) for t in test]
    words = [t.leaves() for t in test]
    wanted = None if not args.models else {m.strip() for m in args.models.split(",")}
    print(f"{'model':<18} {'train s':>8} {'parse s':>8} {'sent/s':>9} {'F1':>7}")
    for label, entry, kwargs in demo_models():
        if wanted is not None and not any(w in label for w in wanted):
            continue
        try:
            model = _with_jobs(entry.load_class(), kwargs, args.jobs)
        except ImportError as exc:
            print(f"{label:<18} not available in this build ({exc})")
            continue
        bar = kit.make_progress(args, label)
        try:
            train_s, parse_s, rate, f1 = evaluate_model(model, train, words, gold, args.jobs, bar)
        finally:
            bar.close()
        print(f"{label:<18} {train_s:8.2f} {parse_s:8.2f} {rate:9.1f} {f1:7.2f}", flush=True)
    return 0


def cmd_bench(args) -> int:
    """Training / parsing time and F1 of one model type for several ``--jobs`` values."""
    entry, preset = models.train_commands()[args.model]
    cls = entry.load_class()
    if (args.train is None) != (args.test is None):
        raise kit.CommandError("--train and --test go together (or neither, for the synthetic "
                               "data)")
    if args.train is None:
        _, train, test = _synthetic_split(args)
        source = f"synthetic latent PCFG ({args.n_states} states, seed {args.seed})"
    else:
        from ..trees.readers import read_treebank
        from ..trees.transforms import clean

        kit.require_file(args.train, "training treebank")
        kit.require_file(args.test, "test treebank")
        train = list(read_treebank(args.train, format=args.format))
        test = [clean(t) for t in read_treebank(args.test, format=args.format)]
        source = f"{args.train} -> {args.test}"
    if args.max_len is not None:
        test = [t for t in test if len(t.leaves()) <= args.max_len]
    if args.limit is not None:
        test = test[:args.limit]
    if not test:
        raise kit.CommandError("no test sentences left (check --max-len / --limit)")
    gold = [str(t) for t in test]
    words = [t.leaves() for t in test]
    tags = [[tag for _, tag in t.pos()] for t in test] if args.gold_tags else None
    kwargs = dict(preset)
    if args.v is not None:
        kwargs["v"] = args.v
    if args.h is not None:
        kwargs["h"] = markov_order(args.h)
    probe = cls(**kwargs)
    h = probe.get_params().get("h", "-")
    print(f"bench: {source}; {len(train)} training trees, {len(test)} test sentences "
          f"(mean {_mean_len(test):.1f} words); {args.model} v={probe.get_params().get('v', '-')}"
          f" h={'inf' if h is None else h}{', gold tags' if args.gold_tags else ''}")
    print(f"{'jobs':>4} {'train s':>8} {'parse s':>8} {'sent/s':>9} {'F1':>7}")
    for jobs in args.jobs:
        model = _with_jobs(cls, kwargs, jobs)
        bar = kit.make_progress(args, f"jobs={jobs}")
        try:
            train_s, parse_s, rate, f1 = evaluate_model(model, train, words, gold, jobs, bar, tags)
        finally:
            bar.close()
        print(f"{jobs:>4} {train_s:8.2f} {parse_s:8.2f} {rate:9.1f} {f1:7.2f}", flush=True)
    return 0
