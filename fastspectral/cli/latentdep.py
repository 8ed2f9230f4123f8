"""``fastspectral train latent-dep TREEBANK -o MODEL``: options of the spectral latent-variable
dependency model (:class:`fastspectral.latentdep.LatentDependencyModel`)."""
from __future__ import annotations

from .._argtypes import positive_int
from . import kit

DESCRIPTION = ("spectral latent-variable dependency model (Dhillon, Rodu, Collins, Foster & "
               "Ungar 2012): p-hat(words | tree) from eigenwords; scores trees (a re-ranking "
               "feature), does not parse")

EPILOG = """\
input: a dependency treebank (CoNLL-U, CoNLL-X, Malt-TAB; PTB trees are converted with
Collins head rules).  Without --embeddings, eigenwords of dimension --dim are learned from the
training words; 'fastspectral train eigenwords' learns them from a larger corpus.

'fastspectral parse MODEL TREES' writes TREES unchanged with a comment
'# latent_dep_log_prob = L' (log |p-hat|) before each sentence.

examples:
  fastspectral train eigenwords brown-tagged.txt wsj-sample.mrg -o en.eigenwords --dim 30
  fastspectral train latent-dep wsj-train.dp -o wsj.ldep --embeddings en.eigenwords --states 16
  fastspectral train latent-dep wsj-train.dp -o wsj-pos.ldep --embeddings en.eigenwords \\
      --states 30 --tag-column auto
  fastspectral train latent-dep wsj-train.dp -o wsj-stop.ldep --embeddings en.eigenwords \\
      --states 16 --stop-events
  fastspectral parse wsj.ldep candidates.conllx -o scored.conllx
"""


def add_arguments(parser, cls) -> None:
    g = parser.add_argument_group("latent-dep options")
    kit.option(g, "--states", cls, "n_states", type=positive_int, metavar="M",
               help="hidden states m (at most the eigenword dimension)")
    kit.reads(kit.option(g, "--embeddings", cls, "embeddings", metavar="FILE",
                         help="eigenword file (fastspectral train eigenwords), or 'one-hot'",
                         show_default="eigenwords learned on the training words"), regular=True)
    kit.option(g, "--dim", cls, "dim", type=positive_int, metavar="K",
               help="dimension of the eigenwords learned without --embeddings")
    kit.renamed_flag(g, "--tags", "--tag-column")
    kit.option(g, "--tag-column", cls, "tag_column", choices=("upos", "xpos", "auto"),
               help="append one-hot part-of-speech tags of this column to the word vectors",
               show_default="words only")
    kit.option(g, "--tag-weight", cls, "tag_weight", type=float, metavar="W",
               help="weight of the tag block")
    kit.option(g, "--ridge", cls, "ridge", type=float, metavar="R",
               help="ridge of the pseudo-inverses, relative to the largest singular value")
    kit.option(g, "--stop-events", cls, "stop_events", action="store_const", const=True,
               help="also score valency: a STOP event per node and side (geometric number "
                    "of children per hidden state; an extension of the paper's model)",
               show_default="off")
    kit.option(g, "--stop-adjacency", cls, "stop_adjacency", action="store_const", const=True,
               help="with --stop-events: two STOP symbols per side (no child / some "
                    "children), the DMV's adjacency", show_default="off")
    kit.option(g, "--stop-weight", cls, "stop_weight", type=float, metavar="W",
               help="weight of the STOP coordinate of the augmented vectors (--stop-events)")
    kit.add_seed(g, cls)
    kit.add_jobs(g, cls)


def build(args, cls, preset):
    emb = getattr(args, "embeddings", None)
    if emb is not None and emb != "one-hot":
        kit.require_file(emb, "embeddings file")
    return kit.build_estimator(args, cls, preset)


_COLUMN_NAMES = {"upos": "UPOS", "xpos": "XPOS"}


def read(args):
    """The training sentences (:func:`kit.read_training_data`); ``--tag-column upos`` / ``xpos``
    needs that column filled: Malt-TAB has no UPOS column, PTB trees give XPOS only."""
    from ..errors import FormatError

    data = kit.read_training_data(args, "dependency")
    column = getattr(args, "tag_column", None)
    if column in _COLUMN_NAMES and all(t == "_" for s in data for t in getattr(s, column)):
        other = "xpos" if column == "upos" else "upos"
        filled = any(t != "_" for s in data for t in getattr(s, other))
        hint = f": use --tag-column {other} or auto" if filled else ""
        raise FormatError(f"--tag-column {column}: the {_COLUMN_NAMES[column]} column is empty "
                          f"('_' in every sentence){hint}", args.treebank)
    return data
