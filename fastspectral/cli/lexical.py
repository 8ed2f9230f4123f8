"""Lexical disambiguation (Shah et al. 2010): ``fastspectral train lexical`` options, and the
``fastspectral lexical`` command group.

* ``lexical train CONLLU -o MODEL``: the same as ``fastspectral train lexical``;
* ``lexical tag MODEL INPUT [-o OUT]``: CoNLL-U in (LEMMA/XPOS/FEATS may be ``_``) or plain text
  (one sentence of tokens a line), CoNLL-U out with the chosen lemma, UPOS, XPOS, FEATS; for a
  vocalised (Arabic) model FORM holds the chosen vocalised form and MISC ``InputForm=`` the
  input's FORM where it differs; MISC ``LexAlt=`` the second choice (for A2/E2);
* ``lexical eval GOLD PRED``: A1/A2/E1/E2 and the accuracy of every label element;
* ``lexical cv CONLLU --folds 10``: every model of table 5 (one line each: name, E1, E2 ...),
  the coverage upper bound, the per-LE table 4 and the speed.
"""
from __future__ import annotations

from .._argtypes import float_in, int_at_least, positive_int
from . import kit

DESCRIPTION = "lexical disambiguator: lemma, tags, features, vocalisation (Shah et al. 2010)"

EPILOG = """\
input: CoNLL-U (or CoNLL-X) with FORM, LEMMA, UPOS, XPOS, FEATS; Arabic FORMs with short-vowel
diacritics are read undiacritised and their vocalised form becomes part of the label.

examples:
  fastspectral lexical train padt-train.conllu -o padt.lex
  fastspectral lexical tag padt.lex raw.txt -o tagged.conllu
  fastspectral lexical eval gold.conllu tagged.conllu
  fastspectral lexical cv padt-v1.3-dev.conllu --folds 10
  fastspectral parse padt.lex input.conllu -o output.conllu
"""


_epsilon_value = float_in(0.0, what="a number >= 0", auto=True)
_c_value = float_in(0.0, lo_open=True, what="a positive number", auto=True)
_fraction = float_in(0.0, 1.0, lo_open=True, what="a number in (0, 1)")


def _model_options(g, cls, variant: bool = True) -> None:
    from ..lexical.engine import LOSSES
    from ..lexical.model import VARIANTS

    if variant:
        kit.option(g, "--variant", cls, "variant", choices=VARIANTS,
                   help="model of table 5: full = M_full, uni = M_uni, baseline = M_baseline, "
                        "ind = M_ind, unigram = most frequent label")
    kit.not_a_path(kit.option(g, "--features", cls, "features", metavar="LIST",
               help="context templates: all, table3, or a comma-separated list of Freq, "
                    "PrevWord, NextWord, PrevFirst, PrevLast, NextFirst, NextLast, Doc, "
                    "Prefix2, Suffix2, Suffix3"))
    kit.option(g, "--vocalised", cls, "vocalised", choices=("auto", "yes", "no"),
               help="FORMs carry Arabic diacritics: tokens are undiacritised, the label "
                    "holds the vocalised form")
    kit.option(g, "--split", cls, "split", type=_fraction, metavar="F",
               help="share of the training sentences counted in stage 1 (stage 2 is fitted "
                    "on the rest)")
    kit.switch(g, "--no-refit", "refit", value=False,
               help="keep the stage-1 counts of the first part (default: count again on all "
                    "training data)")
    kit.switch(g, "--no-cross-fit", "cross_fit", value=False,
               help="fit stage 2 on the second part only (the paper's direction; default: "
                    "both parts, each scored with the other's counts)")
    kit.option(g, "--C", cls, "C", type=_c_value, metavar="X",
               help="SVR regularisation; auto = chosen on a held-out half of the stage-2 rows",
               show_default="auto")
    kit.option(g, "--epsilon", cls, "epsilon", type=_epsilon_value, metavar="X",
               help="SVR epsilon; auto = chosen with C on a held-out half of the stage-2 rows",
               show_default="auto")
    kit.option(g, "--loss", cls, "loss", choices=LOSSES, help="SVR loss")
    kit.option(g, "--frequency-classes", cls, "frequency_classes", type=int_at_least(1),
               metavar="K", help="frequency classes of a feature with their own shrinkage "
                                 "weight (1, 2-3, 4-7, ...)")
    kit.option(g, "--unknown", cls, "unknown", choices=("suffix", "none"),
               help="candidates of unknown tokens: suffix guesser, or one empty analysis")
    kit.option(g, "--known-guesses", cls, "known_guesses", choices=("inner", "auto", "yes", "no"),
               help="known tokens also get the guesser's unseen inflections of their lemmas "
                    "(inner: chosen by M_full's E1 on an inner split of the training data; "
                    "auto: for vocalised corpora)")
    kit.option(g, "--graded", cls, "graded", choices=("inner", "no", "unknown", "all"),
               help="stage-2 targets: 0/1, or graded by shared label elements for tokens "
                    "outside the lexicon / for all tokens (inner: no or unknown, chosen by "
                    "M_full's E1 on an inner split of the training data)")
    kit.option(g, "--unknown-weights", cls, "unknown_weights", choices=("inner", "yes", "no"),
               help="a second set of shrinkage weights for tokens outside the lexicon (inner: "
                    "chosen by M_full's E1 on an inner split of the training data)")
    kit.option(g, "--iterations", cls, "iterations", type=positive_int, metavar="N",
               help="liblinear iterations")
    kit.renamed_flag(g, "--max-iter", "--iterations")
    kit.add_seed(g, cls)


def add_arguments(parser, cls) -> None:
    """``fastspectral train lexical`` options."""
    _model_options(parser.add_argument_group("lexical disambiguator options"), cls)


def read(args):
    """The training sentences: a CoNLL-U / CoNLL-X file (heads may be ``_``)."""
    from ..errors import FormatError
    from ..trees.conll import DepSentence
    from ..trees.readers import read_treebank

    fmt = getattr(args, "format", None)
    if fmt not in (None, "conllu", "conllx"):
        raise kit.CommandError(f"lexical models are trained on CoNLL-U or CoNLL-X files, not "
                               f"{fmt}")
    sents = list(read_treebank(args.treebank, format=fmt,
                               encoding=getattr(args, "encoding", None) or "utf-8",
                               heads_optional=True))
    if not sents:
        raise FormatError("the treebank is empty", args.treebank)
    if not isinstance(sents[0], DepSentence) or not any(s.lemmas != ["_"] * len(s) or
                                                        s.upos != ["_"] * len(s)
                                                        for s in sents[:50]):
        raise FormatError("lexical training needs a CoNLL-U or CoNLL-X file with LEMMA, UPOS, "
                          "XPOS or FEATS", args.treebank)
    return sents


def fit(args, model, data):
    return model.fit(data)


# ------------------------------------------------------------------------------------------------
# the `fastspectral lexical` command group
# ------------------------------------------------------------------------------------------------
def add_lexical_command(sub, common, fmt, full: bool = True) -> None:
    """``fastspectral lexical train|tag|eval|cv``; ``full=False`` (another command runs) lists
    the commands without importing the model class for the defaults of their options."""
    from .. import models

    p = sub.add_parser("lexical", formatter_class=fmt,
                       help="lexical disambiguation: train / tag / eval / cv",
                       description="Lexical disambiguation with factored labels and two-stage "
                                   "shrinkage (Shah et al. 2010): choose each token's lemma, "
                                   "tags, features and (Arabic) vocalised form.",
                       epilog=EPILOG)
    lsub = p.add_subparsers(dest="lexical_command", metavar="{train,tag,eval,cv}")
    lsub.required = True
    cls = models.model_class("lexical") if full else None

    def command(name, help, description):
        return lsub.add_parser(name, parents=[common], formatter_class=fmt, help=help,
                               description=description, epilog=EPILOG)

    def add_format(q):
        q.add_argument("--format", choices=("conllu", "conllx"), default=None,
                       help="input format (default: detected)")

    t = command("train", help="train a model (= fastspectral train lexical)",
                description="Train a lexical disambiguator on a CoNLL-U file.")
    kit.reads(t.add_argument("treebank", metavar="CONLLU",
                             help="training file (CoNLL-U or CoNLL-X)"))
    kit.writes(t.add_argument("-o", "--output", required=True, metavar="MODEL",
                              help="model file to write"))
    kit.add_encoding(t)
    add_format(t)
    if cls is not None:
        _model_options(t.add_argument_group("lexical disambiguator options"), cls)
    t.set_defaults(func=_train)

    g = command("tag", help="tag a CoNLL-U or plain-text file",
                description="Choose the lemma, UPOS, XPOS, FEATS (and, for vocalised models, "
                            "the vocalised FORM) of every token.  INPUT: CoNLL-U (only FORM is "
                            "read) or plain text, one sentence of whitespace-separated tokens a "
                            "line.  Output: CoNLL-U; HEAD and DEPREL are copied, '_' where the "
                            "input has none; MISC LexAlt= holds the second choice, InputForm= "
                            "the input FORM where a vocalised model replaced it.")
    kit.reads(g.add_argument("model", metavar="MODEL"), regular=True)
    kit.reads(g.add_argument("input", metavar="INPUT"))
    kit.writes(g.add_argument("-o", "--output", default=None, metavar="OUT",
                              help="output file (default or '-': standard output)"))
    kit.add_encoding(g)
    g.add_argument("--no-alt", dest="alt", action="store_false",
                   help="do not write the second choice (MISC LexAlt)")
    g.set_defaults(func=_tag)

    e = command("eval", help="A1/A2/E1/E2 and per-LE accuracy of a tagged file",
                description="Score PRED (the output of 'lexical tag') against GOLD: A1 (first "
                            "choice right), A2 (first or second choice right, from MISC "
                            "LexAlt), E1 = 100 - A1, E2 = 100 - A2 (percent), and the accuracy "
                            "of every label element.")
    kit.reads(e.add_argument("gold", metavar="GOLD"))
    kit.reads(e.add_argument("pred", metavar="PRED"))
    kit.add_encoding(e, help="encoding of both files")
    e.set_defaults(func=_eval)

    c = command("cv", help="k-fold cross-validation of every model of tables 4 and 5",
                description="Cross-validate unigram, M_baseline, M_ind, M_uni, M_full (one line "
                            "each: name, E1, E2, A1, A2, E1/E2 on covered tokens) and the per-LE "
                            "models M_e (table 4) on folds of whole documents; stage-2 "
                            "hyperparameters are chosen inside the training folds.")
    kit.reads(c.add_argument("treebank", metavar="CONLLU"))
    c.add_argument("--folds", type=int_at_least(2), default=10, metavar="K",
                   help="folds (default: 10)")
    kit.add_encoding(c)
    add_format(c)
    c.add_argument("--no-per-le", dest="per_le", action="store_false",
                   help="do not print table 4 (per label element)")
    kit.writes(c.add_argument("--json", default=None, metavar="FILE",
                              help="also write every number as JSON"))
    if cls is not None:
        _model_options(c.add_argument_group("model options"), cls, variant=False)
    c.set_defaults(func=_cv)


def _train(args) -> int:
    from .train import run_training

    return run_training(args, "lexical")


def _load(path):
    from ..io import load
    from ..lexical.model import LexicalDisambiguator

    kit.require_file(path, "model file")
    model = load(path)
    if not isinstance(model, LexicalDisambiguator):
        raise kit.CommandError(f"{path}: a {type(model).__name__} is not a lexical model "
                               "(train one with 'fastspectral lexical train')")
    return model


def _tag(args) -> int:
    from ..lexical.data import gc_paused

    kit.require_file(args.input, "input file")
    kit.require_output_path(args.output, "output file", inputs=[args.input, args.model])
    with gc_paused():
        return _tag_with(args, _load(args.model))


def _tag_with(args, model) -> int:
    import time

    from ..lexical.data import apply_labels, corpus_from_sentences
    from ..trees.corpus import read_tagging_input
    from ..trees.files import open_output

    sents, is_conll = read_tagging_input(args.input, args.encoding)
    if is_conll and _is_conllx(args.input, args.encoding, sents):
        sents = [_without_columns_9_10(s) for s in sents]
    t0 = time.perf_counter()
    nonempty = [s for s in sents if len(s)]
    corpus = corpus_from_sentences(nonempty, model.vocalised_, labelled=False)
    first, second, _ = model.predict_corpus(corpus)
    out = []
    k = 0
    for s in sents:
        n = len(s)
        unknown_heads = any(h < 0 for h in s.heads)
        tagged = apply_labels(s, first[k:k + n], second[k:k + n] if args.alt else None,
                              model.vocalised_)
        out.append(_format(tagged, unknown_heads))
        k += n
    elapsed = time.perf_counter() - t0
    import sys

    dest = sys.stdout if kit.is_stdio(args.output) else args.output
    with open_output(dest, "utf-8") as fh:
        fh.write("".join(out))
    rate = len(corpus) / elapsed if elapsed > 0 else float("inf")
    kit.logger.info(f"tagged {len(corpus)} tokens in {len(sents)} sentences in {elapsed:.2f} s "
                    f"({rate:,.0f} tokens/s)")
    return 0


def _is_conllx(path, encoding, sents) -> bool:
    """Whether a 10-column input is CoNLL-X (columns 9-10 PHEAD / PDEPREL, not CoNLL-U DEPS /
    MISC): detected so, or a bare integer in column 9 (a PHEAD; DEPS is ``head:rel``)."""
    from ..errors import FormatError
    from ..trees.readers import detect_format

    try:
        if not kit.is_stdio(path) and detect_format(path, encoding) == "conllx":
            return True
    except FormatError:
        pass
    return any(d.isdigit() for s in sents for d in s.deps)


def _without_columns_9_10(sent):
    """A copy with ``_`` in DEPS and MISC (CoNLL-X PHEAD / PDEPREL are not CoNLL-U's)."""
    import copy

    out = copy.copy(sent)
    out.deps = ["_"] * len(sent)
    out.misc = ["_"] * len(sent)
    return out


def _format(sent, unknown_heads: bool) -> str:
    """CoNLL-U of a tagged sentence; HEAD and DEPREL ``_`` when the input had no heads."""
    if not unknown_heads:
        return sent.to_conllu()
    lines = list(sent.comments)
    extras = sorted(sent.extra_lines, key=lambda e: e[0])
    k = 0
    for i in range(len(sent)):
        while k < len(extras) and extras[k][0] <= i:
            lines.append(extras[k][1])
            k += 1
        cells = (sent.ids[i], sent.words[i], sent.lemmas[i], sent.upos[i], sent.xpos[i],
                 sent.feats[i], "_", "_", sent.deps[i], sent.misc[i])
        lines.append("\t".join(c if c else "_" for c in cells))
    lines.extend(e[1] for e in extras[k:])
    return "\n".join(lines) + "\n\n"


def _eval(args) -> int:
    from ..lexical.metrics import evaluate_files, format_scores

    kit.require_file(args.gold, "gold file")
    kit.require_file(args.pred, "prediction file")
    scores = evaluate_files(args.gold, args.pred, encoding=args.encoding)
    print(format_scores(scores))
    return 0


def _cv(args) -> int:
    import json

    from ..lexical.cv import cross_validate, format_report

    kit.require_file(args.treebank, "treebank")
    sents = read(args)
    params = {}
    for name in ("features", "vocalised", "split", "refit", "cross_fit", "C", "epsilon", "loss",
                 "frequency_classes", "unknown", "known_guesses", "graded", "unknown_weights",
                 "iterations", "random_state"):
        if hasattr(args, name):
            params[name] = getattr(args, name)
    if "iterations" in params:                  # the training function's name of it
        params["max_iter"] = params.pop("iterations")
    if len(sents) < args.folds:
        raise kit.CommandError(f"{args.treebank}: {len(sents)} sentences cannot make "
                               f"{args.folds} folds")
    bar = kit.make_progress(args, "folds")
    try:
        res = cross_validate(sents, args.folds, progress=bar, **params)
    finally:
        bar.close()
    print(format_report(res, per_le=args.per_le))
    if args.json:
        kit.require_output_path(args.json, "JSON file", inputs=[args.treebank])
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(res, fh, indent=1, ensure_ascii=False)
    return 0
