"""``fastspectral sentences TREEBANK [--tags] [-o OUT]``: the sentences of a treebank as text.

One sentence a line, words separated by spaces (``word/TAG`` tokens with ``--tags``): the
input of ``fastspectral parse`` made from a treebank, so that a model is evaluated on it
without writing Python.  PTB trees lose their ``-NONE-`` elements (the words a parser sees);
a tree with nothing else gives an empty line, so line ``k`` is always the ``k``-th sentence.
CoNLL-U / CoNLL-X / Malt-TAB sentences give their FORMs (and XPOS, else UPOS, as tags).
"""
from __future__ import annotations

import sys

from . import kit

EPILOG = """\
input: PTB brackets, CoNLL-U, CoNLL-X, Malt-TAB or word/TAG text (detected; --format
overrides).  Output: one sentence a line, the words separated by spaces; --tags writes
word/TAG tokens (the tag after the last '/').  '.gz' files are read and written compressed.

examples:
  fastspectral sentences wsj22.trees -o wsj22.txt
  fastspectral parse wsj.pcfg wsj22.txt -o wsj22.parsed
  fastspectral eval wsj22.trees wsj22.parsed
  fastspectral sentences wsj22.dp --tags -o wsj22.tagged
  fastspectral parse wsj.mst wsj22.tagged -o wsj22.conllu && fastspectral eval wsj22.dp wsj22.conllu
"""


def add_sentences_command(sub, common, fmt) -> None:
    from ..trees.readers import FORMATS

    p = sub.add_parser("sentences", parents=[common], formatter_class=fmt, epilog=EPILOG,
                       help="write the sentences of a treebank as text, one a line",
                       description="Write the words (or word/TAG tokens) of every sentence of a "
                                   "treebank, one sentence a line: the input of 'fastspectral "
                                   "parse'.")
    kit.reads(p.add_argument("treebank", metavar="TREEBANK",
                             help="PTB, CoNLL-U, CoNLL-X or Malt-TAB file ('-': standard input)"))
    kit.writes(p.add_argument("-o", "--output", metavar="OUT", default=None,
                              help="output file (default or '-': standard output)"))
    p.add_argument("--tags", action="store_true",
                   help="write word/TAG tokens (default: words only)")
    p.add_argument("--format", choices=FORMATS, default=None,
                   help="treebank format (default: detected)")
    kit.add_encoding(p, help="encoding of the treebank (default: utf-8; output is utf-8)")
    p.set_defaults(func=cmd_sentences)


def cmd_sentences(args) -> int:
    """``fastspectral sentences``."""
    from ..trees.files import open_output
    from ..trees.readers import read_treebank

    kit.require_file(args.treebank, "treebank")
    kit.require_output_path(args.output, "output file", inputs=[args.treebank])
    name = "<stdin>" if kit.is_stdio(args.treebank) else args.treebank
    source = kit.stdin_source(whole=True) if kit.is_stdio(args.treebank) else args.treebank
    items = read_treebank(source, format=args.format, encoding=args.encoding)
    dest = sys.stdout if kit.is_stdio(args.output) else args.output
    n = 0
    with open_output(dest, "utf-8") as fh:
        for k, item in enumerate(items, 1):
            fh.write(sentence_line(item, args.tags, name, k) + "\n")
            n += 1
    kit.logger.info(f"wrote {n} sentences")
    return 0


def sentence_line(item, tags: bool, name: str = None, k: int = 0) -> str:
    """One line of text of a treebank item: a ``Tree`` (``-NONE-`` removed), a
    ``DepSentence`` or a list of ``(word, tag)``; ``tags``: ``word/TAG`` tokens.  A word
    with white space in it (one sentence a line could not hold it) is a FormatError naming
    the ``k``-th sentence of ``name``."""
    from ..errors import FormatError
    from ..trees.conll import DepSentence
    from ..trees.tree import Tree

    if isinstance(item, Tree):
        from ..trees.transforms import clean

        try:
            pairs = clean(item).pos()
        except ValueError:              # nothing but -NONE- elements: an empty line
            pairs = []
        line = None
    elif isinstance(item, DepSentence):
        pairs = list(zip(item.words, item.tags))
        line = item.line
    else:
        pairs = [tuple(p) for p in item]
        line = None
    for word, tag in pairs:
        if not word or any(c.isspace() for c in word) or (tags and (
                not tag or any(c.isspace() for c in tag))):
            what = f"word {word!r}" if not word or any(c.isspace() for c in word) \
                else f"tag {tag!r} of {word!r}"
            raise FormatError(f"sentence {k}: the {what} is empty or holds white space, which "
                              "one sentence a line cannot hold", name, line)
    if tags and pairs and all(t == "_" for _, t in pairs):
        raise FormatError(f"sentence {k} has no tags (XPOS and UPOS are '_'): leave out "
                          "--tags", name, line)
    if tags:
        return " ".join(f"{w}/{t}" for w, t in pairs)
    return " ".join(w for w, _ in pairs)
