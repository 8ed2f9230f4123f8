"""Penn Treebank tokenisation of raw text, and a check for text that was not tokenised.

:func:`tokenize` splits one sentence of raw text the way the Penn Treebank's words are
split, with a few regular expressions in the manner of the treebank's ``tokenizer.sed``
(Robert MacIntyre) and of NLTK's ``TreebankWordTokenizer``; NLTK is **not** a dependency of
fastspectral, this module needs nothing but :mod:`re`:

* double quotes become ````` (opening: at the start or after a space or a bracket) and ``''``
  (closing);
* punctuation is split off: ``, ; : ? ! ...`` and ``--`` (a comma or colon between digits
  stays: ``1,000``, ``10:30``), ``$ % # @`` (``US$`` and ``C$`` stay whole), ``&`` unless it
  is inside a word (``AT&T``);
* the sentence-final period is split off (``U.S.`` at the end gives ``U.S.`` and ``.``; inside
  the sentence abbreviations keep their period);
* clitics are split: ``n't`` (``don't`` -> ``do n't``, ``can't`` -> ``ca n't``), ``'s 'm 'd
  'll 're 've`` and a possessive ``'`` (``investors'`` -> ``investors '``); ``cannot``, ``gonna``,
  ``gotta``, ``wanna``, ``gimme``, ``lemme`` are split in two like the treebank does;
* brackets become the treebank's words: ``(`` ``)`` ``[`` ``]`` ``{`` ``}`` ->
  ``-LRB- -RRB- -LSB- -RSB- -LCB- -RCB-``.

:func:`untokenized` finds the tokens of already split text that a Penn Treebank tokenisation
would have split (punctuation or a clitic glued to a word: ``Hello,``, ``world!``,
``don't``, ``"Yes``), what the command line warns about.
"""
from __future__ import annotations

import re

__all__ = ["tokenize", "untokenized", "BRACKET_WORDS"]

#: The Penn Treebank's words for brackets.
BRACKET_WORDS = {"(": "-LRB-", ")": "-RRB-", "[": "-LSB-", "]": "-RSB-", "{": "-LCB-",
                 "}": "-RCB-"}

_SUBS = [
    # opening double quotes
    (re.compile(r'^"'), " `` "),
    (re.compile(r'([\s(\[{<])"'), r"\1 `` "),
    (re.compile(r"``"), " `` "),
    # punctuation
    (re.compile(r"\.\.\."), " ... "),
    (re.compile(r"([:,])(?!\d)"), r" \1 "),
    (re.compile(r"(?<!\d)([:,])"), r" \1 "),
    (re.compile(r"[;@#%?!]"), r" \g<0> "),
    (re.compile(r"(?<![A-Za-z])\$"), " $ "),
    (re.compile(r"(?<![A-Za-z0-9])&|&(?![A-Za-z0-9])"), " & "),
    (re.compile(r"--"), " -- "),
    (re.compile(r"[\[\](){}<>]"), r" \g<0> "),
]
_CLOSING_QUOTES = [
    (re.compile(r'"'), " '' "),
    (re.compile(r"(\S)('')"), r"\1 \2 "),
]
_FINAL_PERIOD = re.compile(r"([^.])(\.)([\]\)}>\"']*)\s*$")
_ABBREVIATION = re.compile(r"(?:^|\s)(\S*[A-Za-z]\.\S*[A-Za-z])\.([\]\)}>\"']*)\s*$"
                           r"|(?:^|\s)([A-Z])\.([\]\)}>\"']*)\s*$")
_CLITICS = [
    (re.compile(r"([^' ])('[sSmMdD]|') "), r"\1 \2 "),
    (re.compile(r"([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) "), r"\1 \2 "),
]
_SPLIT_WORDS = [re.compile(p) for p in (
    r"(?i)\b(can)(not)\b", r"(?i)\b(d)('ye)\b", r"(?i)\b(gim)(me)\b", r"(?i)\b(gon)(na)\b",
    r"(?i)\b(got)(ta)\b", r"(?i)\b(lem)(me)\b", r"(?i)\b(more)('n)\b", r"(?i)\b(wan)(na)\b",
    r"(?i)(?:^|(?<=\s))('t)(is)\b", r"(?i)(?:^|(?<=\s))('t)(was)\b")]


def tokenize(text: str) -> list[str]:
    """The Penn Treebank tokens of one sentence of raw text (see the module docstring).

    >>> tokenize('"We can\\'t stop," he said (twice).')
    ['``', 'We', 'ca', "n't", 'stop', ',', "''", 'he', 'said', '-LRB-', 'twice', '-RRB-', '.']
    >>> tokenize("AT&T's U.S. unit paid $1,000 -- 5% more.")
    ['AT&T', "'s", 'U.S.', 'unit', 'paid', '$', '1,000', '--', '5', '%', 'more', '.']
    """
    text = " ".join(text.split())
    for pattern, repl in _SUBS:
        text = pattern.sub(repl, text)
    if _ABBREVIATION.search(text):       # 'U.S.' at the end: the word keeps its period
        text = _ABBREVIATION.sub(lambda m: f" {m.group(1) or m.group(3)}. ."
                                 f"{m.group(2) or m.group(4) or ''} ", text)
    else:
        text = _FINAL_PERIOD.sub(r"\1 \2\3 ", text)
    for pattern, repl in _CLOSING_QUOTES:
        text = pattern.sub(repl, text)
    text = f" {text} "
    for pattern, repl in _CLITICS:
        text = pattern.sub(repl, text)
    for pattern in _SPLIT_WORDS:
        text = pattern.sub(r" \1 \2 ", text)
    return [BRACKET_WORDS.get(tok, tok) for tok in text.split()]


_GLUED = re.compile(
    r"""\w[,;:!?"]+$            # punctuation after a word: Hello, world! yes"
      | ^["(\[{]+\w             # an opening quote or bracket before one: "Yes (see
      | \w[)\]}]+[,.;:!?]*$     # a closing bracket after one: it)
      | \w(n't|'(s|m|d|ll|re|ve))$   # a clitic: don't John's we'll
      | ,\D | \D,\w             # a comma inside letters: a,b
      | \d%$ | ^\$\d | \w\.\.\.$ | [a-z]s'$   # 5% $5 well... investors'
    """, re.VERBOSE | re.IGNORECASE)
_FINAL = re.compile(r"\w[.!?]+[\"')\]]*$")


def untokenized(words) -> list[str]:
    """The tokens of one sentence of split text that a Penn Treebank tokenisation would have
    split further: punctuation, a bracket or a clitic glued to a word (``Hello,`` ``world!``
    ``don't`` ``John's`` ``"Yes``), and a last token ending in a sentence-final ``.``
    (``dog.``; a tokenised sentence ends with the token ``.``, after an abbreviation too:
    ``U.S. .``).  Tokenised text (``1,000``, ``U.S.`` inside a sentence, ``n't``, ``'s``, ``...``)
    gives ``[]``.

    >>> untokenized(["Hello,", "world!"])
    ['Hello,', 'world!']
    >>> untokenized(["We", "do", "n't", "pay", "$", "1,000", "for", "U.S.", "bonds", "."])
    []
    """
    out = [w for w in words if _GLUED.search(w)]
    if words and words[-1] not in out and _FINAL.search(words[-1]):
        out.append(words[-1])
    return out
