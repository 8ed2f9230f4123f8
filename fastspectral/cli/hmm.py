"""``fastspectral train hmm``: options of the sequence HMM (:class:`fastspectral.hmm.HMM`).

The hook protocol of the train command: :data:`DESCRIPTION`, :data:`EPILOG`,
:func:`add_arguments` (options whose help shows the defaults of ``HMM.__init__``),
:func:`build` (the unfitted estimator), :func:`read` (the training sequences of
``args.treebank``) and :func:`fit` (with ``--dev``: the EM iteration and the back-off weight are
chosen on the development sequences).
"""
from __future__ import annotations

from .._argtypes import nonneg_float, nonneg_int, positive_int, unit_interval
from . import kit
from .kit import class_default as _default

DESCRIPTION = ("hidden Markov model of sequences: spectral (Hsu, Kakade & Zhang 2009), EM "
               "(Baum-Welch), or spectral-initialised EM")

EPILOG = """\
examples:
  fastspectral train hmm wsj-sample.mrg -o tags.hmm --states 40 --field tag
  fastspectral train hmm wsj-sample.mrg -o tags-em.hmm --states 20 --field tag --method em
  fastspectral train hmm brown-tagged.txt -o brown.hmm --states 32 --tokens 800000 \\
      --min-count 2 --lowercase --max-vocab 2000 --dev brown-tagged.txt \\
      --dev-skip-tokens 800000 --dev-tokens 100000
  fastspectral lm eval tags.hmm wsj22.trees          (perplexity, the end of sequence counted)

input: one sequence a line (tokens, or word/TAG tokens with --field tag), PTB trees (their
words or POS tags), or CoNLL files (words, UPOS, XPOS); --format auto detects it.
"""

_OPTIONS = (
    # flag, parameter, argparse keywords, help
    ("--method", "method", {"choices": ("spectral", "em", "spectral-em")},
     "estimation algorithm"),
    ("--states", "n_states", {"type": positive_int, "metavar": "M"}, "hidden states"),
    ("--field", "field", {"choices": ("word", "tag", "upos", "xpos")},
     "what each token contributes: its word or its POS tag (upos / xpos: a CoNLL column)"),
    ("--iterations", "iterations", {"type": nonneg_int, "metavar": "K"},
     "EM iterations"),
    ("--tol", "tol", {"type": nonneg_float, "metavar": "T"},
     "EM: stop when an iteration gains less than T nats per event of training likelihood"),
    ("--backoff-weight", "backoff_weight", {"type": unit_interval, "metavar": "W"},
     "weight of the Kneser-Ney bigram interpolated into every prediction"),
    ("--ridge", "ridge", {"type": nonneg_float, "metavar": "R"},
     "spectral: ridge of the pseudo-inverse, in units of the Hankel block's sampling noise"),
    ("--state-mixing", "state_mixing", {"type": unit_interval, "metavar": "S"},
     "spectral: share of the averaged state after each symbol mixed into the filter state"),
    ("--negative", "negative", {"choices": ("abs", "clip")},
     "spectral: negative event weights made positive by absolute value or clipped at 0"),
    ("--max-basis", "max_basis", {"type": nonneg_int, "metavar": "B"},
     "spectral: length-2 prefixes and suffixes in the Hankel basis"),
    ("--min-count", "min_count", {"type": positive_int, "metavar": "C"},
     "symbols seen fewer times become <unk>"),
    ("--max-vocab", "max_vocab", {"type": positive_int, "metavar": "K"},
     "the hidden-state model sees the K most frequent symbols; the others share <unk>"),
    ("--spectral-init", "spectral_init", {"choices": ("classes", "anchors", "moments", "split")},
     "spectral-em: the starting point (docs/notes/hmm.md)"),
    ("--seed", "random_state", {"type": int, "metavar": "S"}, "random seed"),
)

_SHOWN = {"iterations": "em 100, spectral-em 20 (spectral: unused)",
          "backoff_weight": "chosen on --dev, else spectral 0.05, EM 0.2",
          "state_mixing": "chosen on --dev, else 0.3", "tol": "none: all iterations",
          "max_vocab": "no cap"}

_FORMATS = ("auto", "text", "tagged", "ptb", "conll")


def add_arguments(parser, cls) -> None:
    """The HMM options (``dest`` = the parameter name, default None = the class's default)
    and the input options (``--format``, token windows, ``--dev``)."""
    g = parser.add_argument_group("HMM options")
    for flag, name, kwargs, text in _OPTIONS:
        shown = _SHOWN.get(name, _default(cls, name))
        g.add_argument(flag, dest=name, default=None, help=f"{text} (default: {shown})",
                       **kwargs)
    g.add_argument("--lowercase", dest="lowercase", action="store_true", default=None,
                   help=f"lower-case tokens (default: {_default(cls, 'lowercase')})")
    i = parser.add_argument_group("input")
    if "--format" not in parser._option_string_actions:
        i.add_argument("--format", dest="format", choices=_FORMATS, default=None,
                       help="input format (default: auto, detected from the content)")
    i.add_argument("--tokens", type=positive_int, default=None, metavar="N",
                   help="read whole sequences until N tokens were read (default: all)")
    i.add_argument("--skip-tokens", type=nonneg_int, default=0, metavar="K",
                   help="skip whole sequences until K tokens were skipped (default: 0)")
    kit.reads(i.add_argument("--dev", default=None, metavar="FILE",
                             help="development sequences: choose the back-off weight and the EM "
                                  "iteration on them"))
    i.add_argument("--dev-skip-tokens", type=nonneg_int, default=0, metavar="K",
                   help="token window of --dev: skip K tokens first (default: 0)")
    i.add_argument("--dev-tokens", type=positive_int, default=None, metavar="N",
                   help="token window of --dev: read N tokens (default: all)")


def build(args, cls, preset: dict):
    """``cls(**preset, **given options)``: the options the user gave, the class's defaults
    for the others."""
    kwargs = dict(preset)
    for name in cls._get_param_names():
        value = getattr(args, name, None)
        if value is not None and name not in kwargs:
            kwargs[name] = value
    return cls(**kwargs)


def _field(args) -> str:
    from ..hmm.model import HMM

    return getattr(args, "field", None) or _default(HMM, "field")


def _read(args, path, skip, tokens):
    from ..errors import FormatError
    from ..trees.corpus import read_sequences

    fmt = getattr(args, "format", None) or getattr(args, "corpus_format", None) or "auto"
    seqs = read_sequences(path, field=_field(args), fmt=fmt,
                          encoding=getattr(args, "encoding", None) or "utf-8",
                          skip_tokens=skip or 0, max_tokens=tokens)
    if not seqs:
        raise FormatError("no sequences in the requested token window", path, None)
    return seqs


def read(args):
    """The training sequences of ``args.treebank`` (``--field``, ``--format``, ``--encoding``,
    ``--skip-tokens``, ``--tokens``)."""
    return _read(args, args.treebank, getattr(args, "skip_tokens", 0),
                 getattr(args, "tokens", None))


def fit(args, model, sequences):
    """``model.fit(sequences)``, with the ``--dev`` sequences when given."""
    dev_path = getattr(args, "dev", None)
    if dev_path is None:
        return model.fit(sequences)
    import os

    if not os.path.isfile(dev_path):
        raise FileNotFoundError(f"dev file not found: {dev_path}")
    dev = _read(args, dev_path, getattr(args, "dev_skip_tokens", 0),
                getattr(args, "dev_tokens", None))
    return model.fit(sequences, dev=dev)
