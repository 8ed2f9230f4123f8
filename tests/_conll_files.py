"""CoNLL-U files written by the dependency CLI tests (MST, re-ranker)."""
from __future__ import annotations


def write_conllu(path, sents, heads=True):
    """``sents`` as a CoNLL-U file: the parser tag in both tag columns; with ``heads=False``
    the head column is ``_`` (input to parse)."""
    lines = []
    for s in sents:
        for i, (w, t) in enumerate(zip(s.words, s.tags)):
            h = str(s.heads[i]) if heads else "_"
            lines.append(f"{i + 1}\t{w}\t_\t{t}\t{t}\t_\t{h}\t_\t_\t_")
        lines.append("")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
