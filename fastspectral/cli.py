"""The ``fastspectral`` command line: ``train``, ``parse``, ``eval``, ``demo`` and ``bench``.

Run ``fastspectral COMMAND --help`` (or ``python -m fastspectral COMMAND --help``) for the options
of each command.  Contract:

* ``train MODEL_TYPE TREEBANK -o MODEL [--format F] [model options]``: ``MODEL_TYPE`` is looked up
  in :data:`MODEL_TYPES` (``type -> module``); the module provides ``cli_add_arguments(parser)``,
  ``cli_train(args, data) -> model`` and optionally ``cli_read(args) -> data`` (default: the items
  of :func:`fastspectral.trees.readers.read_treebank`).  The model is written with
  ``model.save(MODEL)``.  A registered module missing from this build is listed by
  ``train --help`` and reports "not available in this build".
* ``parse MODEL [INPUT] [-o OUTPUT] [--jobs N]``: the model (``fastspectral.io.load``) declares
  ``input_kind``: ``"sentences"`` (default) reads one tokenised sentence a line (``word/TAG``
  tokens give the tags) and writes one bracketed tree a line (an empty input line gives an empty
  output line); ``"dependency"`` reads CoNLL-U / CoNLL-X / Malt-TAB and writes the same format.
  ``INPUT`` / ``OUTPUT`` default to stdin / stdout (``-`` also means them).
* ``eval GOLD PRED``: bracketed trees are scored by the EVALB-exact scorer (``COLLINS.prm``) and
  EVALB's report is printed; dependency files get UAS / LAS.
* ``demo``: samples a treebank from the built-in latent PCFG (:mod:`fastspectral.synthetic`),
  trains every model of :data:`DEMO_MODELS`, parses held-out sentences from their words and prints
  F1, training seconds and sentences per second.
* ``bench``: times training and parsing for several ``--jobs`` values on the synthetic treebank
  or on ``--train`` / ``--test`` files.

Exit status: 0 on success; 2 for usage errors and for any
:class:`~fastspectral.errors.FastSpectralError` or ``OSError`` (a one-line
``fastspectral: error: ...`` on stderr, the traceback only with ``--debug``); 130 on Ctrl-C.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import inspect
import io
import os
import sys
import time

from . import __version__
from ._progress import Progress
from ._argtypes import markov_order as _h_order, positive_int as _positive_int
from .errors import FastSpectralError, FormatError

__all__ = ["main", "build_parser", "MODEL_TYPES", "DEMO_MODELS", "register_demo_model",
           "CommandError"]

#: Model types of ``fastspectral train``: name -> module implementing the CLI plug-in protocol.
MODEL_TYPES: dict[str, str] = {
    "pcfg": "fastspectral.grammar.cli",
    "spectral": "fastspectral.lpcfg.cli",
    "shag": "fastspectral.dependency.cli",
    "pivot": "fastspectral.lpcfg.latent_cli",
    "em": "fastspectral.lpcfg.latent_cli",
    "pivot-em": "fastspectral.lpcfg.latent_cli",
}

#: Commands handed whole to another module's ``main(argv) -> int`` (their own sub-commands).
DELEGATED_COMMANDS: dict[str, tuple[str, str]] = {
    "lm": ("fastspectral.lm.cli", "latent bigram language models (Saul-Pereira): train / eval"),
}


class CommandError(FastSpectralError):
    """A command-line problem detected before any work starts (missing file, bad option value)."""


# ------------------------------------------------------------------------------------------------
# plug-ins
# ------------------------------------------------------------------------------------------------
def load_model_type(name: str):
    """Import the plug-in module of model type ``name``; return ``(module, None)`` or
    ``(None, reason)`` when it is not part of this build (missing module or failed import)."""
    mod_name = MODEL_TYPES[name]
    try:
        spec = importlib.util.find_spec(mod_name)
    except (ImportError, ValueError) as exc:
        return None, str(exc)
    if spec is None:
        return None, f"module {mod_name} not found"
    try:
        module = importlib.import_module(mod_name)
    except Exception as exc:  # a plug-in that cannot be imported must not break the other commands
        return None, f"{mod_name} failed to import: {type(exc).__name__}: {exc}"
    for fn in ("cli_add_arguments", "cli_train"):
        if not callable(getattr(module, fn, None)):
            return None, f"{mod_name} has no {fn}()"
    return module, None


# ------------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------------




def _is_stdio(path) -> bool:
    return path is None or path == "-"


def _require_file(path, what: str) -> None:
    """Raise :class:`CommandError` naming ``path`` unless it is an existing regular file."""
    if _is_stdio(path):
        return
    if not os.path.exists(path):
        raise CommandError(f"{what} not found: {path}")
    if os.path.isdir(path):
        raise CommandError(f"{what} is a directory, not a file: {path}")


def _require_output_dir(path, what: str) -> None:
    """Fail early (before long work) when ``path`` cannot be created."""
    if _is_stdio(path):
        return
    if os.path.isdir(path):
        raise CommandError(f"{what} is a directory: {path}")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise CommandError(f"cannot write {what} {path}: directory {parent} does not exist")


def _info(args, text: str) -> None:
    """A status line on stderr unless ``--quiet``."""
    if not getattr(args, "quiet", False):
        print(text, file=sys.stderr, flush=True)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _make_progress(args, label: str) -> Progress:
    return Progress(label, enabled=False if args.quiet else None, force=args.progress)


def _call_parse(model, sentences, *, tags=None, jobs=None, progress=None):
    """``model.parse(sentences, ...)`` passing only the keyword arguments the model accepts."""
    kwargs = {"tags": tags, "jobs": jobs, "progress": progress}
    try:
        params = inspect.signature(model.parse).parameters
        accepts_all = any(p.kind is p.VAR_KEYWORD for p in params.values())
        kwargs = {k: v for k, v in kwargs.items()
                  if v is not None and (accepts_all or k in params)}
    except (TypeError, ValueError):  # builtin without a signature: pass what was given
        kwargs = {k: v for k, v in kwargs.items() if v is not None}
    return model.parse(sentences, **kwargs)


@contextlib.contextmanager
def _errors_in(path):
    """Name ``path`` in the ``FormatError`` of a model that checks the data it was given
    (a model sees sentences, not files: its errors carry the sentence's line only)."""
    try:
        yield
    except FormatError as exc:
        if exc.path is not None:
            raise
        raise FormatError(exc.message, path, exc.line) from None


# ------------------------------------------------------------------------------------------------
# train
# ------------------------------------------------------------------------------------------------
def cmd_train(args) -> int:
    """``fastspectral train``: read a treebank, fit the model type's plug-in, save the model."""
    module, reason = load_model_type(args.model_type)
    if module is None:
        raise CommandError(f"model type {args.model_type!r} is not available in this build "
                           f"({reason})")
    _require_file(args.treebank, "treebank")
    _require_output_dir(args.output, "model file")
    t0 = time.perf_counter()
    if callable(getattr(module, "cli_read", None)):
        data = module.cli_read(args)
    else:
        from .trees.readers import read_treebank
        data = list(read_treebank(args.treebank, format=args.format))
    t1 = time.perf_counter()
    with _errors_in(args.treebank):
        model = module.cli_train(args, data)
    t2 = time.perf_counter()
    model.save(args.output)
    _info(args, f"fastspectral: trained {args.model_type} on {len(data)} items from "
                f"{args.treebank} (read {t1 - t0:.2f} s, train {t2 - t1:.2f} s); "
                f"model saved to {args.output}")
    return 0


# ------------------------------------------------------------------------------------------------
# parse
# ------------------------------------------------------------------------------------------------
def _read_stdin_text() -> io.StringIO:
    data = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read()
    if isinstance(data, bytes):
        data = data.decode("utf-8")
    buf = io.StringIO(data)
    buf.name = "<stdin>"
    return buf


def _open_output(path):
    """``(file, should_close)`` for an output path or stdout."""
    if _is_stdio(path):
        return sys.stdout, False
    return open(path, "w", encoding="utf-8", newline="\n"), True


def cmd_parse(args) -> int:
    """``fastspectral parse``: parse sentences (or dependency files) with a saved model."""
    from .io import load

    _require_file(args.model, "model file")
    _require_file(args.input, "input file")
    _require_output_dir(args.output, "output file")
    model = load(args.model)
    kind = getattr(model, "input_kind", "sentences")
    if kind == "sentences":
        return _parse_sentences(args, model)
    if kind == "dependency":
        return _parse_dependency(args, model)
    raise CommandError(f"model {args.model} has an unsupported input kind {kind!r}")


#: Sentences read, parsed and written at a time by ``fastspectral parse`` (bounded memory on
#: corpora of any size; large enough for the parallel kernels to balance their threads).
PARSE_CHUNK = 20000


def _parse_sentences(args, model) -> int:
    from itertools import islice

    from .trees.readers import iter_sentences

    tagged = {"auto": None, "yes": True, "no": False}[args.tagged]
    source = sys.stdin if _is_stdio(args.input) else args.input
    stream = iter_sentences(source, tagged=tagged)
    bar = _make_progress(args, "parsing")
    total = None
    if bar.enabled and not _is_stdio(args.input):
        from .trees.conll import iter_lines
        total = sum(1 for _, line in iter_lines(args.input) if line.strip())
    t0 = time.perf_counter()
    n_parsed = 0
    fh, close = _open_output(args.output)
    try:
        while True:
            raw = list(islice(stream, PARSE_CHUNK))
            if not raw:
                break
            todo = [i for i, s in enumerate(raw) if s.words]
            words = [raw[i].words for i in todo]
            tags = None
            if any(raw[i].tags is not None for i in todo):
                tags = [raw[i].tags for i in todo]
            base = n_parsed

            def progress(done, _chunk_total, _base=base):
                bar(_base + done, total)

            trees = _call_parse(model, words, tags=tags, jobs=args.jobs,
                                progress=progress) if words else []
            if len(trees) != len(words):
                raise FastSpectralError(f"the model returned {len(trees)} parses for "
                                        f"{len(words)} sentences")
            out = [""] * len(raw)
            for i, t in zip(todo, trees):
                out[i] = "" if t is None else str(t)
            fh.write("".join(line + "\n" for line in out))
            fh.flush()
            n_parsed += len(words)
    finally:
        bar.close()
        if close:
            fh.close()
    elapsed = time.perf_counter() - t0
    rate = n_parsed / elapsed if elapsed > 0 else float("inf")
    _info(args, f"fastspectral: parsed {_plural(n_parsed, 'sentence')} in {elapsed:.2f} s "
                f"({rate:.1f} sentences/s)")
    return 0


_DEP_WRITERS = {"conllu": "write_conllu", "conllx": "write_conllx", "malttab": "write_malttab"}


def _parse_dependency(args, model) -> int:
    from .trees import conll
    from .trees.readers import detect_format, read_treebank

    source = _read_stdin_text() if _is_stdio(args.input) else args.input
    fmt = args.format or detect_format(source)
    if fmt not in _DEP_WRITERS:
        raise CommandError(f"this model parses dependency files (CoNLL-U, CoNLL-X or Malt-TAB); "
                           f"{'stdin' if _is_stdio(args.input) else args.input} is {fmt!r}")
    sents = list(read_treebank(source, format=fmt, heads_optional=True))   # unparsed input
    bar = _make_progress(args, "parsing")
    t0 = time.perf_counter()
    try:
        with _errors_in("<stdin>" if _is_stdio(args.input) else args.input):
            parsed = _call_parse(model, sents, jobs=args.jobs, progress=bar)
    finally:
        bar.close()
    elapsed = time.perf_counter() - t0
    writer = getattr(conll, _DEP_WRITERS[fmt])
    if _is_stdio(args.output):
        writer(parsed, sys.stdout)
        sys.stdout.flush()
    else:
        writer(parsed, args.output)
    rate = len(sents) / elapsed if elapsed > 0 else float("inf")
    _info(args, f"fastspectral: parsed {_plural(len(sents), 'sentence')} in {elapsed:.2f} s "
                f"({rate:.1f} sentences/s)")
    return 0


# ------------------------------------------------------------------------------------------------
# eval
# ------------------------------------------------------------------------------------------------
def cmd_eval(args) -> int:
    """``fastspectral eval``: EVALB for bracketed trees, UAS/LAS for dependency files."""
    from .trees.readers import detect_format

    _require_file(args.gold, "gold file")
    _require_file(args.pred, "prediction file")
    fmt = args.format or detect_format(args.gold)
    if fmt == "ptb":
        from .eval.evalb import evaluate_files
        report = evaluate_files(args.gold, args.pred).report()
    elif fmt in ("conllu", "conllx", "malttab"):
        from .eval.attachment import evaluate_dependency_files
        report = evaluate_dependency_files(args.gold, args.pred, punct=args.punct,
                                           format=args.format).report()
    else:
        raise CommandError(f"cannot evaluate {args.gold}: it is {fmt!r} data, not bracketed "
                           "trees or a dependency treebank")
    sys.stdout.write(report)
    sys.stdout.flush()
    return 0


# ------------------------------------------------------------------------------------------------
# demo and bench
# ------------------------------------------------------------------------------------------------
def _pcfg_factory(v, h):
    def make(args):
        from .grammar.pcfg import PCFG
        return PCFG(v=v, h=h, jobs=args.jobs)
    return make


def _construct(cls, **kwargs):
    """``cls(**kwargs)`` keeping only the keyword arguments its constructor accepts."""
    try:
        params = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        return cls(**kwargs)
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return cls(**kwargs)
    return cls(**{k: v for k, v in kwargs.items() if k in params})


def _spectral_factory(args):
    from .lpcfg.spectral import SpectralLPCFG
    return _construct(SpectralLPCFG, jobs=args.jobs)


#: Models trained by ``fastspectral demo``: ``(name, factory)``; ``factory(args)`` returns an
#: unfitted model with ``fit(trees)`` and ``parse(list_of_words, ...)``.  A factory raising
#: ``ImportError`` is reported as not available.
DEMO_MODELS: list = [
    ("pcfg v=1 h=0", _pcfg_factory(1, 0)),
    ("pcfg v=2 h=1", _pcfg_factory(2, 1)),
    ("spectral L-PCFG", _spectral_factory),
]


def register_demo_model(name: str, factory) -> None:
    """Add (or replace) a model of ``fastspectral demo``."""
    for i, (n, _) in enumerate(DEMO_MODELS):
        if n == name:
            DEMO_MODELS[i] = (name, factory)
            return
    DEMO_MODELS.append((name, factory))


def _evaluate_model(model, train_trees, test_words, gold_lines, jobs, bar=None, tags=None):
    """Fit, parse and score one model; returns ``(train_s, parse_s, sentences_per_s, F1)``."""
    from .eval.evalb import evaluate

    t0 = time.perf_counter()
    fitted = model.fit(train_trees)
    if fitted is not None:
        model = fitted
    t1 = time.perf_counter()
    pred = _call_parse(model, test_words, tags=tags, jobs=jobs, progress=bar)
    t2 = time.perf_counter()
    pred_lines = ["" if t is None else str(t) for t in pred]
    f1 = evaluate(gold_lines, pred_lines).fmeasure
    parse_s = t2 - t1
    rate = len(test_words) / parse_s if parse_s > 0 else float("inf")
    return t1 - t0, parse_s, rate, f1


def _synthetic_split(args):
    from .synthetic import LatentPCFG

    grammar = LatentPCFG.default(n_states=args.n_states, seed=args.seed)
    trees = grammar.sample(args.n_train + args.n_test, seed=args.seed)
    return grammar, trees[:args.n_train], trees[args.n_train:]


def _mean_len(trees) -> float:
    return sum(len(t.leaves()) for t in trees) / max(len(trees), 1)


def cmd_demo(args) -> int:
    """``fastspectral demo``: synthetic treebank -> train -> parse held-out words -> F1."""
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
    for name, factory in DEMO_MODELS:
        if wanted is not None and not any(w in name for w in wanted):
            continue
        try:
            model = factory(args)
        except ImportError as exc:
            print(f"{name:<18} not available in this build ({exc})")
            continue
        bar = _make_progress(args, name)
        try:
            train_s, parse_s, rate, f1 = _evaluate_model(model, train, words, gold, args.jobs, bar)
        finally:
            bar.close()
        print(f"{name:<18} {train_s:8.2f} {parse_s:8.2f} {rate:9.1f} {f1:7.2f}", flush=True)
    return 0


def cmd_bench(args) -> int:
    """``fastspectral bench``: PCFG training/parsing time and F1 for several ``--jobs`` values."""
    from .grammar.pcfg import PCFG

    if (args.train is None) != (args.test is None):
        raise CommandError("--train and --test go together (or neither, for the synthetic data)")
    if args.train is None:
        _, train, test = _synthetic_split(args)
        source = f"synthetic latent PCFG ({args.n_states} states, seed {args.seed})"
    else:
        from .trees.readers import read_treebank
        from .trees.transforms import clean

        _require_file(args.train, "training treebank")
        _require_file(args.test, "test treebank")
        train = list(read_treebank(args.train, format=args.format))
        test = [clean(t) for t in read_treebank(args.test, format=args.format)]
        source = f"{args.train} -> {args.test}"
    if args.max_len is not None:
        test = [t for t in test if len(t.leaves()) <= args.max_len]
    if args.limit is not None:
        test = test[:args.limit]
    if not test:
        raise CommandError("no test sentences left (check --max-len / --limit)")
    gold = [str(t) for t in test]
    words = [t.leaves() for t in test]
    tags = [[tag for _, tag in t.pos()] for t in test] if args.gold_tags else None
    h = "inf" if args.h is None else args.h
    print(f"bench: {source}; {len(train)} training trees, {len(test)} test sentences "
          f"(mean {_mean_len(test):.1f} words); PCFG v={args.v} h={h}"
          f"{', gold tags' if args.gold_tags else ''}")
    print(f"{'jobs':>4} {'train s':>8} {'parse s':>8} {'sent/s':>9} {'F1':>7}")
    for jobs in args.jobs:
        model = PCFG(v=args.v, h=args.h, jobs=jobs)
        bar = _make_progress(args, f"jobs={jobs}")
        try:
            train_s, parse_s, rate, f1 = _evaluate_model(model, train, words, gold, jobs, bar, tags)
        finally:
            bar.close()
        print(f"{jobs:>4} {train_s:8.2f} {parse_s:8.2f} {rate:9.1f} {f1:7.2f}", flush=True)
    return 0


# ------------------------------------------------------------------------------------------------
# argument parser
# ------------------------------------------------------------------------------------------------
_FORMATS = ("ptb", "conllu", "conllx", "malttab", "brown")

_MAIN_EPILOG = """\
commands:
  train   learn a model from a treebank and save it
  parse   parse sentences (one a line) or dependency files with a saved model
  eval    score predictions: EVALB for trees, UAS/LAS for dependencies
  demo    train and evaluate on the built-in synthetic latent-variable treebank
  bench   time training and parsing for several --jobs values

examples:
  fastspectral demo
  fastspectral train pcfg wsj-train.mrg -o wsj.pcfg
  fastspectral parse wsj.pcfg sentences.txt -o parsed.trees --jobs 4
  fastspectral eval gold.trees parsed.trees

Run 'fastspectral COMMAND --help' for the options of a command.
"""

_TRAIN_EPILOG = """\
examples:
  fastspectral train pcfg wsj-train.mrg -o wsj.pcfg
  fastspectral train pcfg train.trees -o model.pcfg --v 1 --h 0
  fastspectral train pcfg --help          (options of one model type)
"""

_PARSE_EPILOG = """\
input: one tokenised sentence a line; 'word/TAG' tokens give the part-of-speech tags
(the tag follows the last '/'); an empty line gives an empty output line.  Models of
dependency type read and write CoNLL-U, CoNLL-X or Malt-TAB instead.

examples:
  fastspectral parse wsj.pcfg sentences.txt -o parsed.trees
  echo "the dog saw a cat ." | fastspectral parse wsj.pcfg
  fastspectral parse wsj.pcfg tagged.txt --tagged yes --jobs 4 --progress
"""

_EVAL_EPILOG = """\
Bracketed trees (one per line) are scored exactly like EVALB with COLLINS.prm and EVALB's
report is printed; CoNLL-U / CoNLL-X / Malt-TAB files get UAS and LAS with and without
punctuation.

examples:
  fastspectral eval gold.trees parsed.trees
  fastspectral eval gold.conllu parsed.conllu --punct include
"""

_DEMO_EPILOG = """\
The treebank is sampled from fastspectral.synthetic.LatentPCFG.default(n_states, seed): an
English-like latent-variable PCFG, so the models are evaluated against the true trees.

examples:
  fastspectral demo
  fastspectral demo --n-train 5000 --n-test 500 --jobs 4
  fastspectral demo --models pcfg --n-states 3 --seed 1
"""

_BENCH_EPILOG = """\
examples:
  fastspectral bench --jobs 1 2 4
  fastspectral bench --train wsj-sample.mrg --test wsj22.trees --max-len 40 --jobs 1 4
"""


def _common_parent() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    g = p.add_argument_group("general options")
    g.add_argument("--debug", action="store_true", help="show the full traceback on errors")
    g.add_argument("-q", "--quiet", action="store_true",
                   help="no progress bar and no status messages on stderr")
    g.add_argument("--progress", action="store_true",
                   help="draw the progress bar even when stderr is not a terminal")
    return p


def _command_word(argv) -> str | None:
    for a in argv:
        if not a.startswith("-"):
            return a
    return None


def build_parser(load_plugins: bool = True) -> argparse.ArgumentParser:
    """The argument parser; ``load_plugins=False`` skips importing the ``train`` plug-ins."""
    common = _common_parent()
    fmt = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(
        prog="fastspectral", formatter_class=fmt, epilog=_MAIN_EPILOG,
        description="Spectral learning of latent-variable parsers, with compiled chart kernels.")
    parser.add_argument("--version", action="version", version=f"fastspectral {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    # ---- train
    p_train = sub.add_parser("train", formatter_class=fmt, epilog=_TRAIN_EPILOG,
                             help="learn a model from a treebank",
                             description="Learn a model from a treebank and save it.")
    types = p_train.add_subparsers(dest="model_type", metavar="MODEL_TYPE",
                                   title="model types")
    types.required = True
    train_args = argparse.ArgumentParser(add_help=False)
    train_args.add_argument("treebank", metavar="TREEBANK",
                            help="training treebank (PTB brackets, CoNLL-U, CoNLL-X, Malt-TAB; "
                                 "'.gz' accepted)")
    train_args.add_argument("-o", "--output", required=True, metavar="MODEL",
                            help="where to write the model file")
    train_args.add_argument("--format", choices=_FORMATS, default=None,
                            help="treebank format (default: detected from the content)")
    for name in MODEL_TYPES:
        module, reason = load_model_type(name) if load_plugins else (None, None)
        if module is not None:
            desc = getattr(module, "DESCRIPTION", f"{name} model")
            p = types.add_parser(name, parents=[train_args, common], formatter_class=fmt,
                                 help=desc, description=f"Train a {desc}.",
                                 epilog=getattr(module, "EPILOG", None))
            module.cli_add_arguments(p)
        else:
            note = "not available in this build" + (f" ({reason})" if reason else "")
            p = types.add_parser(name, parents=[train_args, common], formatter_class=fmt,
                                 help=note if load_plugins else None,
                                 description=f"Model type {name!r}: {note}.")
        p.set_defaults(func=cmd_train)

    # ---- parse
    p = sub.add_parser("parse", parents=[common], formatter_class=fmt, epilog=_PARSE_EPILOG,
                       help="parse sentences with a saved model",
                       description="Parse sentences (or dependency files) with a saved model.")
    p.add_argument("model", metavar="MODEL", help="model file written by 'fastspectral train'")
    p.add_argument("input", metavar="INPUT", nargs="?", default=None,
                   help="input file (default or '-': standard input)")
    p.add_argument("-o", "--output", metavar="OUTPUT", default=None,
                   help="output file (default or '-': standard output)")
    p.add_argument("--jobs", type=_positive_int, default=None, metavar="N",
                   help="parallel workers (default: the model's setting)")
    p.add_argument("--tagged", choices=("auto", "yes", "no"), default="auto",
                   help="'word/TAG' tokens: auto = per line when every token has a tag, "
                        "yes = required, no = never split tokens (default: auto)")
    p.add_argument("--format", choices=("conllu", "conllx", "malttab"), default=None,
                   help="dependency input format (default: detected)")
    p.set_defaults(func=cmd_parse)

    # ---- eval
    p = sub.add_parser("eval", parents=[common], formatter_class=fmt, epilog=_EVAL_EPILOG,
                       help="score predictions against gold",
                       description="Score predicted trees or dependencies against the gold.")
    p.add_argument("gold", metavar="GOLD", help="gold file")
    p.add_argument("pred", metavar="PRED", help="predicted file (same sentences, same order)")
    p.add_argument("--format", choices=_FORMATS, default=None,
                   help="format of both files (default: detected from GOLD)")
    p.add_argument("--punct", choices=("exclude", "include"), default="exclude",
                   help="dependency scores: headline mode for punctuation (both are printed)")
    p.set_defaults(func=cmd_eval)

    # ---- demo
    p = sub.add_parser("demo", parents=[common], formatter_class=fmt, epilog=_DEMO_EPILOG,
                       help="train and evaluate on the built-in synthetic treebank",
                       description="Sample a treebank from the built-in latent-variable PCFG, "
                                   "train the available models, parse held-out sentences "
                                   "from their words and print F1 and speed.")
    _synthetic_options(p, n_train=2000, n_test=300)
    p.add_argument("--jobs", type=_positive_int, default=2, metavar="N",
                   help="parallel workers for parsing (default: 2)")
    p.add_argument("--models", default=None, metavar="NAMES",
                   help="comma-separated substrings selecting models (default: all), e.g. 'pcfg'")
    p.set_defaults(func=cmd_demo)

    # ---- delegated commands (listed here; main() hands them their arguments)
    for name, (_, help_text) in DELEGATED_COMMANDS.items():
        sub.add_parser(name, help=help_text, add_help=False)

    # ---- bench
    p = sub.add_parser("bench", parents=[common], formatter_class=fmt, epilog=_BENCH_EPILOG,
                       help="time training and parsing for several --jobs values",
                       description="Time PCFG training and parsing (and report F1) for several "
                                   "--jobs values, on the synthetic treebank or on files.")
    p.add_argument("--train", metavar="PATH", default=None, help="training treebank")
    p.add_argument("--test", metavar="PATH", default=None, help="test treebank (gold trees)")
    p.add_argument("--format", choices=("ptb",), default=None,
                   help="treebank format (default: detected)")
    _synthetic_options(p, n_train=2000, n_test=300)
    p.add_argument("--jobs", type=_positive_int, nargs="+", default=[1, 2], metavar="N",
                   help="worker counts to time (default: 1 2)")
    p.add_argument("--v", type=_positive_int, default=2, metavar="V",
                   help="vertical markovisation order (default: 2)")
    p.add_argument("--h", type=_h_order, default=1, metavar="H",
                   help="horizontal markovisation order, or 'inf' (default: 1)")
    p.add_argument("--max-len", type=_positive_int, default=None, metavar="N",
                   help="only test sentences of at most N words")
    p.add_argument("--limit", type=_positive_int, default=None, metavar="N",
                   help="only the first N test sentences")
    p.add_argument("--gold-tags", action="store_true",
                   help="give the parser the gold part-of-speech tags")
    p.set_defaults(func=cmd_bench)
    return parser


def _synthetic_options(p, n_train: int, n_test: int) -> None:
    g = p.add_argument_group("synthetic treebank")
    g.add_argument("--n-train", type=_positive_int, default=n_train, metavar="N",
                   help=f"training trees (default: {n_train})")
    g.add_argument("--n-test", type=_positive_int, default=n_test, metavar="N",
                   help=f"test sentences (default: {n_test})")
    g.add_argument("--n-states", type=_positive_int, default=2, metavar="M",
                   help="hidden states per symbol of the generating grammar (default: 2)")
    g.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")


# ------------------------------------------------------------------------------------------------
# entry point
# ------------------------------------------------------------------------------------------------
def _describe(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        return f"{exc.strerror}: {exc.filename}"
    text = str(exc)
    return text if text else type(exc).__name__


def main(argv=None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    argv = sys.argv[1:] if argv is None else [str(a) for a in argv]
    command = _command_word(argv)
    if command in DELEGATED_COMMANDS:
        mod_name = DELEGATED_COMMANDS[command][0]
        try:
            module = importlib.import_module(mod_name)
        except ImportError as exc:
            print(f"fastspectral: error: command {command!r} is not available in this build "
                  f"({exc})", file=sys.stderr)
            return 2
        return int(module.main(argv[argv.index(command) + 1:]) or 0)
    if command == "train" and not {"-h", "--help"} & set(argv):
        rest = argv[argv.index("train") + 1:]
        model_type = _command_word(rest)
        if model_type in MODEL_TYPES:
            module, reason = load_model_type(model_type)
            if module is None:
                print(f"fastspectral: error: model type {model_type!r} is not available in this "
                      f"build ({reason})", file=sys.stderr)
                return 2
    parser = build_parser(load_plugins=command == "train")
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:
        # the reader of stdout went away (e.g. `| head`): stop quietly
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 0
    except (FastSpectralError, OSError) as exc:
        if args.debug:
            raise
        print(f"fastspectral: error: {_describe(exc)}", file=sys.stderr, flush=True)
        return 2
    except KeyboardInterrupt:
        if args.debug:
            raise
        print("fastspectral: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
