"""Unlabelled text for the spectral model of the re-ranker (self-training; not in the paper): a
research harness outside the package, a negative result (docs/notes/rerank.md, "Self-training of the
spectral model"), used by ``benchmarks/bench_rerank.py --raw``.

Dhillon et al. (2012) estimate the latent dependency model from ~40,000 gold WSJ trees.  With a
small treebank the moment estimates are noisy, so :class:`~fastspectral.rerank.RerankDepParser`
could add trees that its base parser gives to POS-tagged raw text: the moments are sums over
trees, and more trees (even with some wrong arcs) might make them less noisy.

:func:`read_tagged_text` reads such text (one sentence a line, ``word/TAG`` tokens) into
:class:`~fastspectral.trees.conll.DepSentence` objects without heads; ``tagset="brown"``
maps the Brown corpus tags to Penn Treebank tags (:func:`brown_to_ptb`) so that a parser
trained on the WSJ can read them.
"""
from __future__ import annotations

__all__ = ["read_tagged_text", "brown_to_ptb", "TAGSETS"]

#: tag sets of :func:`read_tagged_text`: as written, or Brown corpus tags mapped to PTB
TAGSETS = ("ptb", "brown")

# Brown tag (without -tl/-hl/-nc suffixes, fw- prefix and '+' contractions) -> PTB tag
_BROWN = {
    "at": "DT", "ap": "JJ", "abn": "DT", "abl": "PDT", "abx": "DT", "dt": "DT", "dti": "DT",
    "dts": "DT", "dtx": "DT", "be": "VB", "bed": "VBD", "bedz": "VBD", "beg": "VBG",
    "bem": "VBP", "ben": "VBN", "ber": "VBP", "bez": "VBZ", "do": "VBP", "dod": "VBD",
    "doz": "VBZ", "hv": "VBP", "hvd": "VBD", "hvg": "VBG", "hvn": "VBN", "hvz": "VBZ",
    "vb": "VB", "vbd": "VBD", "vbg": "VBG", "vbn": "VBN", "vbz": "VBZ", "md": "MD",
    "cc": "CC", "cs": "IN", "in": "IN", "to": "TO", "cd": "CD", "od": "JJ", "ex": "EX",
    "jj": "JJ", "jjr": "JJR", "jjs": "JJS", "jjt": "JJS", "nn": "NN", "nns": "NNS",
    "np": "NNP", "nps": "NNPS", "nr": "NN", "nrs": "NNS", "pn": "NN", "pp$": "PRP$",
    "pp$$": "PRP", "ppl": "PRP", "ppls": "PRP", "ppo": "PRP", "pps": "PRP", "ppss": "PRP",
    "ql": "RB", "qlp": "RB", "rb": "RB", "rbr": "RBR", "rbt": "RBS", "rn": "RB", "rp": "RP",
    "wdt": "WDT", "wp$": "WP$", "wpo": "WP", "wps": "WP", "wql": "WRB", "wrb": "WRB",
    "uh": "UH", "fw": "FW", "nil": "NN", "*": "RB", ".": ".", ",": ",", ":": ":",
    "--": ":", "(": "-LRB-", ")": "-RRB-", "``": "``", "''": "''", "'": "''",
}


def brown_to_ptb(tag: str) -> str:
    """The Penn Treebank tag of a Brown corpus tag (``nn-tl`` -> ``NN``, ``np$`` -> ``NNP``,
    ``ppss+md`` -> ``PRP``, ``md*`` -> ``MD``, ``fw-nn`` -> ``FW``); an unknown tag is
    returned upper-cased."""
    t = tag.lower()
    if t.startswith("fw-"):
        return "FW"
    if t.startswith("--"):
        return ":"
    if t in _BROWN:
        base = t
    else:
        base = t.split("+", 1)[0].split("-", 1)[0]
    if base not in _BROWN and base.endswith("*"):
        base = base[:-1]
    if base not in _BROWN and base.endswith("$") and base[:-1] in _BROWN:
        base = base[:-1]
    return _BROWN.get(base, tag.upper())


def _brown_sentence(tags) -> list:
    """PTB tags of a Brown-tagged sentence; Brown's ``vb`` (base form) becomes ``VBP``
    (present tense) unless it starts the sentence or follows ``to``, a modal or a form of
    "do" (adverbs skipped), as PTB tags them."""
    out = [brown_to_ptb(t) for t in tags]
    for i, t in enumerate(tags):
        if t.lower().split("-", 1)[0] != "vb":
            continue
        j = i - 1
        while j >= 0 and out[j] in ("RB", "RBR"):
            j -= 1
        if j >= 0 and out[j] not in ("TO", "MD") and \
                not tags[j].lower().startswith("do"):
            out[i] = "VBP"
    return out


def read_tagged_text(path, tagset: str = "ptb", limit: int | None = None,
                     encoding: str = "utf-8") -> list:
    """Sentences of a ``word/TAG`` text file (one a line; empty lines skipped) as
    :class:`~fastspectral.trees.conll.DepSentence` objects with ``xpos`` set and unknown heads
    (``-1``); ``tagset="brown"`` maps the tags with :func:`brown_to_ptb`; ``limit``: the
    first that many sentences.  An untagged token raises
    :class:`~fastspectral.errors.FormatError` naming the file and line."""
    from fastspectral.trees.conll import DepSentence
    from fastspectral.trees.readers import iter_sentences

    if tagset not in TAGSETS:
        raise ValueError(f"tagset must be one of {', '.join(TAGSETS)}, not {tagset!r}")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)
                              or limit < 0):
        raise ValueError(f"limit must be an integer >= 0 or None, not {limit!r}")
    out = []
    for raw in iter_sentences(path, tagged=True, encoding=encoding, skip_empty=True):
        if limit is not None and len(out) >= limit:
            break
        tags = _brown_sentence(raw.tags) if tagset == "brown" else raw.tags
        s = DepSentence(words=raw.words, xpos=tags, heads=[-1] * len(raw.words))
        s.line = raw.line
        out.append(s)
    return out
