"""Language models: ``fastspectral train lm`` / ``train kn-lm`` options, and the ``fastspectral lm``
command group (``lm train``: the same as ``train lm`` / ``train kn-lm`` with ``--method kn``;
``lm eval``: per-token perplexity of any sequence model).

``CORPUS`` is a Brown-style ``word/tag`` file or plain whitespace-tokenised text, one sentence a
line, or a treebank (PTB trees, CoNLL-U / CoNLL-X / Malt-TAB: their words); ``--format auto``
detects which (:func:`fastspectral.trees.corpus.detect_corpus_format`, as the HMMs do); gzip
files are accepted.  Token
windows: ``--skip-tokens K`` drops whole sentences until ``K`` tokens were dropped, ``--tokens N``
then takes whole sentences until ``N`` were taken, so ``train --tokens 800000`` and ``eval
--skip-tokens 800000`` use disjoint sentences.
"""
from __future__ import annotations

import math

from .._argtypes import nonneg_int, positive_int
from . import kit

DESCRIPTION = "latent bigram language model (Saul-Pereira: pivot, pivot-em, em)"

DESCRIPTIONS = {"kn-lm": "interpolated Kneser-Ney bigram language model (baseline)"}

EPILOG = """\
examples:
  fastspectral train lm brown-tagged.txt -o brown.lm --states 16 --method pivot-em
  fastspectral train kn-lm brown-tagged.txt -o brown.kn
  fastspectral lm eval brown.lm brown-tagged.txt --skip-tokens 800000
"""


def add_corpus_window(g, train: bool = True) -> None:
    """``--tokens``, ``--skip-tokens``, ``--format`` (and ``--dev ...`` for training)."""
    g.add_argument("--tokens", type=positive_int, default=800000 if train else None,
                   metavar="N", help="tokens to read (whole sentences; default: "
                                     f"{'800000' if train else 'to the end'})")
    g.add_argument("--skip-tokens", type=nonneg_int, default=0, metavar="K",
                   help="skip this many tokens first (default: 0)")
    g.add_argument("--format", dest="corpus_format",
                   choices=("auto", "brown", "text", "ptb", "conll"), default="auto",
                   help="corpus format: auto = detected (word/tag lines, plain text, PTB trees "
                        "or CoNLL files: their words), brown, text, ptb, conll (default: auto)")
    if train:
        kit.reads(g.add_argument("--dev", default=None, metavar="CORPUS",
                       help="held-out corpus: keep the EM iteration with the best perplexity"))
        g.add_argument("--dev-skip-tokens", type=nonneg_int, default=0, metavar="K")
        g.add_argument("--dev-tokens", type=positive_int, default=None, metavar="N")


def add_arguments(parser, cls, methods=("pivot", "pivot-em", "em")) -> None:
    """The language model options; ``methods``: the ``--method`` choices (``lm train`` adds
    ``kn``, which trains the Kneser-Ney model instead)."""
    g = parser.add_argument_group("language model options")
    if "method" in cls._get_param_names():
        kn = "; kn = interpolated Kneser-Ney" if "kn" in methods else ""
        kit.option(g, "--method", cls, "method", choices=methods, help="learning method" + kn)
        kit.add_states(g, cls, help="hidden states")
        kit.add_iterations(g, cls, show_default="pivot 0, pivot-em 10, em 100")
        kit.option(g, "--anchor-min-count", cls, "anchor_min_count", type=positive_int,
                   metavar="C", help="words seen fewer times cannot be anchors (pivot methods)")
        kit.option(g, "--anchor-top", cls, "anchor_top", type=positive_int, metavar="K",
                   help="only the K most frequent words can be anchors")
        kit.add_seed(g, cls)
    kit.option(g, "--min-count", cls, "min_count", type=positive_int, metavar="C",
               help="words seen fewer times become <unk>")
    kit.switch(g, "--case-sensitive", "lowercase", value=False, help="do not lower-case words")
    add_corpus_window(g)


def _window(args, path, skip, tokens):
    from ..trees.corpus import read_corpus

    sents = read_corpus(path, args.corpus_format, skip, tokens,
                        encoding=getattr(args, "encoding", None) or "utf-8")
    if not sents:
        raise kit.CommandError(f"{path}: no sentences in the requested token window")
    return sents


def read(args):
    return _window(args, args.treebank, args.skip_tokens, args.tokens)


def fit_params(args, model) -> dict:
    """The keywords of ``fit`` (and of ``fit_statistics``, learning from partitions) beyond the
    training data: ``{"dev": sentences}`` of the ``--dev`` corpus for a latent model (whose best
    EM iteration by dev perplexity is kept), else ``{}``."""
    if getattr(args, "dev", None) is not None and "method" in model.get_params():
        kit.require_file(args.dev, "dev corpus")
        return {"dev": _window(args, args.dev, args.dev_skip_tokens, args.dev_tokens)}
    return {}


def fit(args, model, sents):
    """Fit with the ``--dev`` corpus when given (the best EM iteration is kept)."""
    return model.fit(sents, **fit_params(args, model))


# ------------------------------------------------------------------------------------------------
# the `fastspectral lm` command group
# ------------------------------------------------------------------------------------------------
def add_lm_command(sub, common, fmt, full: bool = True) -> None:
    """``fastspectral lm train|eval``; ``full=False`` (another command runs) lists the command
    without importing the language model classes for the defaults shown by ``lm train``."""
    from .. import models

    p = sub.add_parser("lm", formatter_class=fmt, help="language models: train / eval",
                       description="Sequence models: train a bigram language model, or print "
                                   "the perplexity of any sequence model on a corpus.",
                       epilog=EPILOG)
    lm_sub = p.add_subparsers(dest="lm_command", metavar="{train,eval}")
    lm_sub.required = True
    t = lm_sub.add_parser("train", parents=[common], formatter_class=fmt,
                          help="train a bigram language model (= fastspectral train lm)",
                          description="Train a language model on a token window of CORPUS "
                                      "(--method kn: interpolated Kneser-Ney).",
                          epilog=EPILOG)
    kit.reads(t.add_argument("treebank", metavar="CORPUS",
                             help="word/tag (Brown) or plain text, one sentence a line"))
    kit.writes(t.add_argument("-o", "--output", required=True, metavar="MODEL",
                              help="model file to write"))
    kit.add_encoding(t)
    t.set_defaults(func=_lm_train)
    if full:
        add_arguments(t, models.model_class("latent-bigram-lm"),
                      methods=("pivot", "pivot-em", "em", "kn"))
    _add_lm_eval(lm_sub, common, fmt)


def _add_lm_eval(lm_sub, common, fmt) -> None:
    e = lm_sub.add_parser("eval", parents=[common], formatter_class=fmt,
                          help="perplexity of a sequence model on a corpus",
                          description="Print the per-token perplexity of MODEL (any sequence "
                                      "model: HMM, Saul-Pereira LM, Kneser-Ney) on a token "
                                      "window of CORPUS (</s> counted as a token).",
                          epilog=EPILOG)
    kit.reads(e.add_argument("model", metavar="MODEL"), regular=True)
    kit.reads(e.add_argument("corpus", metavar="CORPUS"))
    kit.add_encoding(e)
    add_corpus_window(e, train=False)
    e.set_defaults(func=_lm_eval)


def _lm_train(args) -> int:
    from .train import run_training

    if getattr(args, "method", None) == "kn":
        del args.method
        return run_training(args, "kn-lm")
    return run_training(args, "lm")


def _lm_eval(args) -> int:
    from ..io import load

    kit.require_file(args.model, "model file")
    kit.require_file(args.corpus, "corpus")
    model = load(args.model)
    if not getattr(model, "language_model", False):
        raise kit.CommandError(f"{args.model}: this is a {getattr(model, 'kind', '?')!r} model, "
                               "not a language model (lm eval takes the kinds hmm, "
                               "latent-bigram-lm and kneser-ney-bigram-lm)")
    field = getattr(model, "field", None)
    encoding = args.encoding or "utf-8"
    if field is not None:
        from ..trees.corpus import read_sequences
        sents = read_sequences(args.corpus, field=field, fmt=args.corpus_format,
                               encoding=encoding, skip_tokens=args.skip_tokens,
                               max_tokens=args.tokens)
    else:
        from ..trees.corpus import read_corpus
        sents = read_corpus(args.corpus, args.corpus_format, args.skip_tokens, args.tokens,
                            encoding=encoding)
    ll, n = model.log_likelihood(sents)
    if n == 0:
        raise kit.CommandError(f"{args.corpus}: no tokens in the requested window")
    print(f"perplexity {math.exp(-ll / n):.2f} ({n} predicted tokens incl. </s>, "
          f"{len(sents)} sentences)")
    return 0
