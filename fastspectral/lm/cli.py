"""``fastspectral lm``: train and evaluate bigram language models from the command line.

::

    fastspectral lm train CORPUS -o MODEL --states M --method pivot|pivot-em|em|kn
                          [--tokens 800000] [--skip-tokens 0] [--iterations K]
                          [--dev CORPUS --dev-skip-tokens N --dev-tokens N] ...
    fastspectral lm eval MODEL CORPUS [--skip-tokens 800000] [--tokens N]

``CORPUS`` is a Brown-style ``word/tag`` file (one sentence a line) or plain whitespace-
tokenised text (one sentence a line); ``--format auto`` (default) decides from the first
non-empty line (``brown`` when every token there is ``word/tag``).  Gzip files are accepted.

Token windows: sentences are taken whole, in file order.  ``--skip-tokens K`` drops sentences
until at least ``K`` tokens were dropped; ``--tokens N`` then takes sentences until at least
``N`` tokens were taken.  So ``train --tokens 800000`` and ``eval --skip-tokens 800000`` use
disjoint sentences.  Exit status 0 on success, 2 on bad input (one-line message).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Iterator

from .._argtypes import nonneg_int as _nonneg, positive_int as _pos
from ..errors import FastSpectralError, FormatError
from ..trees.brown import read_brown
from ..trees.conll import iter_lines

from .corpus import detect_format, read_corpus  # noqa: F401  (re-exported)

__all__ = ["main", "read_corpus", "detect_format", "build_parser"]


def build_parser() -> argparse.ArgumentParser:
    """The ``fastspectral lm`` argument parser."""
    p = argparse.ArgumentParser(prog="fastspectral lm",
                                description="Saul-Pereira latent bigram language models "
                                            "(pivot / pivot-em / em) and a Kneser-Ney baseline")
    sub = p.add_subparsers(dest="command", metavar="{train,eval}")
    sub.required = True
    t = sub.add_parser("train", help="train a bigram language model",
                       description="Train a language model on a token window of CORPUS.")
    t.add_argument("corpus", metavar="CORPUS", help="word/tag (Brown) or plain text, one "
                                                    "sentence a line")
    t.add_argument("-o", "--output", required=True, metavar="MODEL", help="model file to write")
    t.add_argument("--method", choices=("pivot", "pivot-em", "em", "kn"), default="pivot",
                   help="learning method (kn = interpolated Kneser-Ney; default pivot)")
    t.add_argument("--states", type=_pos, default=8, metavar="M", help="hidden states (8)")
    t.add_argument("--iterations", type=_nonneg, default=None, metavar="K",
                   help="EM iterations (default: pivot 0, pivot-em 10, em 100)")
    t.add_argument("--tokens", type=_pos, default=800000, metavar="N",
                   help="training tokens (whole sentences; default 800000)")
    t.add_argument("--skip-tokens", type=_nonneg, default=0, metavar="K",
                   help="skip this many tokens first (default 0)")
    t.add_argument("--min-count", type=_pos, default=2, metavar="C",
                   help="words seen fewer times become <unk> (default 2)")
    t.add_argument("--case-sensitive", action="store_true", help="do not lower-case words")
    t.add_argument("--anchor-min-count", type=_pos, default=None, metavar="C",
                   help="words seen fewer times cannot be anchors (pivot methods)")
    t.add_argument("--anchor-top", type=_pos, default=None, metavar="K",
                   help="only the K most frequent words can be anchors (default 100)")
    t.add_argument("--dev", default=None, metavar="CORPUS",
                   help="held-out corpus: keep the EM iteration with the best perplexity")
    t.add_argument("--dev-skip-tokens", type=_nonneg, default=0, metavar="K")
    t.add_argument("--dev-tokens", type=_pos, default=None, metavar="N")
    t.add_argument("--format", choices=("auto", "brown", "text"), default="auto")
    t.add_argument("--seed", type=int, default=0, help="random seed (em)")
    e = sub.add_parser("eval", help="perplexity of a model on a corpus",
                       description="Print the per-token perplexity of MODEL on a token window "
                                   "of CORPUS (</s> counted as a token).")
    e.add_argument("model", metavar="MODEL")
    e.add_argument("corpus", metavar="CORPUS")
    e.add_argument("--skip-tokens", type=_nonneg, default=0, metavar="K",
                   help="skip this many tokens first (e.g. 800000 after training on them)")
    e.add_argument("--tokens", type=_pos, default=None, metavar="N",
                   help="evaluate this many tokens (default: to the end)")
    e.add_argument("--format", choices=("auto", "brown", "text"), default="auto")
    return p


def _train(args) -> int:
    from .kneser_ney import KneserNeyBigramLM
    from .saul_pereira import LatentBigramLM

    t0 = time.perf_counter()
    sents = read_corpus(args.corpus, args.format, args.skip_tokens, args.tokens)
    if not sents:
        raise ValueError(f"{args.corpus}: no sentences in the requested token window")
    ntok = sum(len(s) for s in sents)
    dev = None
    if args.dev is not None:
        dev = read_corpus(args.dev, args.format, args.dev_skip_tokens, args.dev_tokens)
    if args.method == "kn":
        model = KneserNeyBigramLM(min_count=args.min_count, lowercase=not args.case_sensitive)
        model.fit(sents)
        extra = ""
    else:
        kw = {}
        if args.anchor_min_count is not None:
            kw["anchor_min_count"] = args.anchor_min_count
        if args.anchor_top is not None:
            kw["anchor_top"] = args.anchor_top
        model = LatentBigramLM(n_states=args.states, method=args.method,
                               em_iterations=args.iterations, min_count=args.min_count,
                               lowercase=not args.case_sensitive, random_state=args.seed, **kw)
        model.fit(sents, dev=dev)
        extra = f", EM iterations kept {model.best_iteration_}"
        if len(model.dev_perplexity_):
            extra += f", dev perplexity {model.dev_perplexity_.min():.2f}"
    model.save(args.output)
    print(f"trained {args.method} on {ntok} tokens ({len(sents)} sentences), vocabulary "
          f"{len(model.vocab_)}{extra}, {time.perf_counter() - t0:.1f}s -> {args.output}")
    return 0


def _eval(args) -> int:
    from ..io.modelfile import load
    from .kneser_ney import KneserNeyBigramLM
    from .saul_pereira import LatentBigramLM

    model = load(args.model)
    if not isinstance(model, (LatentBigramLM, KneserNeyBigramLM)):
        raise ValueError(f"{args.model}: not a language model ({type(model).__name__})")
    sents = read_corpus(args.corpus, args.format, args.skip_tokens, args.tokens)
    ll, n = model.log_likelihood(sents)
    if n == 0:
        raise ValueError(f"{args.corpus}: no tokens in the requested window")
    import math

    print(f"perplexity {math.exp(-ll / n):.2f} ({n} predicted tokens incl. </s>, "
          f"{len(sents)} sentences)")
    return 0


def main(argv=None) -> int:
    """Entry point of ``fastspectral lm``; returns the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exc:  # argparse: usage errors exit 2, --help exits 0
        return int(exc.code or 0)
    try:
        return _train(args) if args.command == "train" else _eval(args)
    except (FormatError, FastSpectralError, FileNotFoundError, ValueError) as exc:
        print(f"fastspectral lm: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
