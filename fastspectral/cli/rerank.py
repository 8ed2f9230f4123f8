"""``fastspectral train rerank-dep``: base parser, jack-knifed k-best lists, spectral model
and re-ranker in one model file (Dhillon et al. 2012, section 4;
:class:`fastspectral.rerank.RerankDepParser`)."""
from __future__ import annotations

from .._argtypes import positive_int
from . import kit
from .mst import add_common

DESCRIPTION = ("k-best re-ranking dependency parser with spectral tree probabilities "
               "(Dhillon et al. 2012)")

EPILOG = """\
The base parser (fastspectral train mst) gives k-best lists; the re-ranker learns from
jack-knifed lists of the training data; with --features base+spectral it also reads log
p-hat of the latent dependency model (fastspectral train latent-dep), trained on the same
treebank (with --embeddings FILE: an eigenword dictionary, 'fastspectral train eigenwords');
with --kbest-order 2 the lists are a second-order (sibling) MST model's own k best (the
paper's second-order setting); with --base-order 2 the score of every candidate of the
first-order lists under a second-order MST model, whose own best tree joins each list
(--no-order2-best: rescoring only); with --features
base+shag the tree weight and arc posteriors of the split-head-automaton model
(fastspectral train shag: spectral, 8 states, LEX+FCP); base+spectral+shag: both.
'fastspectral parse MODEL INPUT --no-rerank' gives the base parser's trees.

examples:
  fastspectral train rerank-dep wsj.dp -o wsj.rerank --k 50 --features base+spectral
  fastspectral train eigenwords brown-tagged.txt wsj.dp -o en30.eigenwords --dim 30
  fastspectral train rerank-dep wsj.dp -o wsj.rerank --embeddings en30.eigenwords
  fastspectral train rerank-dep wsj.dp -o wsj.rerank --features base+spectral --kbest-order 2
  fastspectral train rerank-dep wsj.dp -o wsj.rerank --features base --base-order 2
  fastspectral parse wsj.rerank test.conllu -o parsed.conllu [--no-rerank]
"""


def add_arguments(parser, cls) -> None:
    from ..rerank.model import (FEATURES, LOGP_NORMS, SPECTRAL_DEFAULTS, SPECTRAL_INPUTS,
                                SPECTRAL_SCORES)

    g = parser.add_argument_group("re-ranker (Dhillon et al. 2012, section 4)")
    kit.option(g, "--k", cls, "k", type=positive_int, metavar="K", help="trees per k-best list")
    kit.option(g, "--features", cls, "features", choices=FEATURES,
               help="re-ranker features: the paper's baseline features and the base score "
                    "(base), also log p-hat of the spectral model (base+spectral), the tree "
                    "weight and arc posteriors of the split-head-automaton model, spectral "
                    "+ LEX+FCP (base+shag), or both (base+spectral+shag)")
    kit.option(g, "--spectral-scores", cls, "spectral_scores", choices=SPECTRAL_SCORES,
               help="the spectral model's scores: p-hat of the tree (with its sign), of its "
                    "depth-1 fragments, or both")
    kit.option(g, "--spectral-input", cls, "spectral_input", choices=SPECTRAL_INPUTS,
               help="what the spectral model reads as words: the words (eigenwords) or the "
                    "POS tags (one-hot; 8 states unless --states)")
    kit.option(g, "--logp-norm", cls, "logp_norm", choices=LOGP_NORMS,
               help="log p-hat within its list: minus the list's best (max), that per word "
                    "(word), standardised in the list (list)")
    kit.option(g, "--dense-gain", cls, "dense_gain", type=float, metavar="G",
               help="scale of the dense features (base score, log p-hat) in the perceptron")
    g.add_argument("--states", type=positive_int, metavar="M", default=None,
                   help="hidden states of the spectral model (default: "
                        f"{SPECTRAL_DEFAULTS['n_states']})")
    g.add_argument("--spectral-ridge", type=float, metavar="R", default=None,
                   help="ridge of the spectral model's pseudo-inverses (default: 0.3)")
    g.add_argument("--stop-events", action="store_true", default=False,
                   help="the spectral model also scores valency (STOP events; "
                        "LatentDependencyModel(stop_events=True))")
    g.add_argument("--stop-adjacency", action="store_true", default=False,
                   help="with --stop-events: the STOP symbol tells a side without children "
                        "from one with children (stop_adjacency=True)")
    g.add_argument("--kbest-order", type=int, choices=(1, 2), metavar="O", default=1,
                   help="2: the base parser is a second-order (sibling) MST model and the "
                        "lists are its own k best (MSTParser(order=2)); 1: first-order "
                        "(default)")
    kit.option(g, "--base-order", cls, "base_order", type=int, choices=(1, 2), metavar="O",
               help="2: a second-order (sibling) MST model, jack-knifed on the same folds, "
                    "rescores every candidate of the first-order k-best lists; its score is "
                    "one more re-ranker feature (1: none)")
    kit.switch(g, "--no-order2-best", "order2_best", value=False,
               help="with --base-order 2: only rescore the first-order lists (by default "
                    "each list also gets the second-order model's best tree)")
    kit.switch(g, "--fixed-base", "fixed_base",
               help="keep the weight of the base score the re-ranker starts from (the "
                    "first-order score; the second-order one with --base-order 2) fixed at "
                    "--start-weight (default: fixed with --base-order 2 only)")
    kit.switch(g, "--no-fixed-base", "fixed_base", value=False,
               help="let the perceptron update the base score's weight too")
    kit.option(g, "--start-weight", cls, "start_weight", type=float, metavar="W",
               help="the base score's weight at the perceptron's start",
               show_default="1000 when fixed, else 1")
    kit.option(g, "--folds", cls, "folds", type=positive_int, metavar="F",
               help="jack-knife folds of the training lists")
    kit.option(g, "--rerank-iterations", cls, "rerank_iterations", type=positive_int,
               metavar="N", help="averaged-perceptron iterations (epochs) of the re-ranker")
    kit.renamed_flag(g, "--rerank-epochs", "--rerank-iterations")
    kit.option(g, "--rerank-bits", cls, "rerank_bits", type=positive_int, metavar="B",
               help="hash the re-ranker's features into 2**B weights (16..28)")
    kit.reads(g.add_argument("--embeddings", metavar="FILE", default=None,
                   help="eigenword dictionary of the spectral model (default: learnt from "
                        "the treebank's words)"), regular=True)
    from ..rerank.mst import MSTParser

    # the base parser's options set the nested mst=MSTParser(...) (see build); --seed and
    # --jobs are the re-ranker's own (and its base parser's)
    add_common(parser.add_argument_group("base parser (McDonald et al. 2005)"), MSTParser)


#: the options of ``add_common`` that configure the nested base parser
MST_OPTIONS = ("iterations", "minibatch", "bits", "tag_column")


def build(args, cls, preset):
    """The re-ranker of the options: its own parameters, the base parser's options as
    ``mst=MSTParser(...)`` (with the re-ranker's ``--seed`` and ``--jobs``) and the spectral
    model's as ``spectral=`` (the default model of ``--spectral-input`` with them set)."""
    from ..rerank.mst import MSTParser
    from ..rerank.providers import spectral_from_params

    model = kit.build_estimator(args, cls, preset)
    given = {name: getattr(args, name) for name in MST_OPTIONS if hasattr(args, name)}
    if getattr(args, "kbest_order", 1) == 2:
        if model.base_order == 2:
            raise kit.CommandError("--kbest-order 2 and --base-order 2 exclude each other: "
                                   "the second-order lists already carry the second-order "
                                   "score")
        given["order"] = 2
    if given:
        model.mst = MSTParser(**given, random_state=model.random_state, jobs=model.jobs)
        model.mst._validate_params()        # named as the options: "bits must be ..."
    extra = {}
    if getattr(args, "embeddings", None) is not None:
        kit.require_file(args.embeddings, "embeddings file")
        extra["embeddings"] = args.embeddings
    if getattr(args, "states", None) is not None:
        extra["n_states"] = args.states
    if getattr(args, "spectral_ridge", None) is not None:
        if not 0 <= args.spectral_ridge < float("inf"):
            raise kit.CommandError(f"--spectral-ridge must be >= 0, not {args.spectral_ridge}")
        extra["ridge"] = args.spectral_ridge
    if getattr(args, "stop_events", False):
        extra["stop_events"] = True
    if getattr(args, "stop_adjacency", False):
        if not extra.get("stop_events"):
            raise kit.CommandError("--stop-adjacency needs --stop-events")
        extra["stop_adjacency"] = True
    if extra:
        if model.features not in ("base+spectral", "base+spectral+shag"):
            flag = "--embeddings" if "embeddings" in extra else \
                "--states" if "n_states" in extra else \
                "--spectral-ridge" if "ridge" in extra else "--stop-events"
            raise kit.CommandError(f"{flag} needs --features base+spectral (or "
                                   "base+spectral+shag)")
        if "embeddings" in extra and model.spectral_input == "pos":
            raise kit.CommandError("--embeddings needs --spectral-input words")
        model.spectral = spectral_from_params(extra, model.spectral_input)
    return model
