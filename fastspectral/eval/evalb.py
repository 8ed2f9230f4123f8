"""EVALB-exact constituency scoring (Sekine & Collins ``evalb``, with any parameter file).

Kept as one module (about 900 lines): a transcription of one C program; the parameters,
reader, scorer and report keep its structure side by side, to be checked against it (the
pieces shared with the ``DEBUG`` trace are in :mod:`fastspectral.eval._evalb_base`).

This module re-implements the scoring of the standard ``evalb`` program and writes the very same
report, character for character: the per-sentence table, the totals row, ``=== Summary ===`` and the
``-- All --`` / ``-- len<=40 --`` blocks.  It has its own bracket reader, because EVALB reads trees
its own way (one tree per line, ``()`` and ``(TOP )`` are trees without words, deleted labels remove
words, ...); it depends on nothing else in the package but :mod:`fastspectral.errors`.

What is scored (all of it as EVALB does it)
-------------------------------------------
* Reading.  A line is one sentence.  ``(LABEL word)`` is a terminal (POS tag ``LABEL``); every other
  ``(LABEL ...)`` is a bracket (``LABEL`` may be empty, as in ``( (S ...) )`` or ``()``).  Terminals
  whose tag is in ``delete_labels`` are dropped (the word with them).  Bracket spans are counted in
  the remaining words, so a bracket left dominating nothing is empty and is ignored.
* Sentence length (for the ``len<=cutoff`` block, printed in the ``Len.`` column) is the number of
  gold terminals, punctuation included, whose tag is not in ``delete_labels_for_length``.
* Status 2, *skip*: the prediction has no word left (e.g. ``()`` or ``(TOP )``).
* Status 1, *error*: gold and prediction have a different number of words (after the quote repair
  below) or a different word somewhere.  Error and skip sentences add 1 to "Number of sentence" (and
  to the len<=cutoff block when the gold length is within the cutoff), count nothing else, and print
  zeros.  ``quote_labels`` enables EVALB's repair step (re-inserting a quote-like token ``'`` ``"``
  ``/`` that was deleted on one side only); ``COLLINS.prm`` declares no quote label, so by default
  the repair does nothing.
* Brackets: labels lose their function tags (everything from the first ``-`` or ``=`` after the
  label's first character; labels written ``-XXX-`` such as ``-NONE-`` keep that part), then
  brackets whose label is in ``delete_labels`` (``TOP``) or that are empty are dropped.  Gold and
  predicted brackets are matched greedily in file order, each gold bracket taking the first still
  unmatched predicted bracket with the same span and an equal label -- a multiset match, with
  ``equal_labels`` (``ADVP`` = ``PRT``) making labels equal.
* Crossing: number of predicted brackets that cross (overlap without nesting) at least one gold
  bracket.  Complete match: gold count = predicted count = matched count.  Tagging accuracy compares
  the (raw) tags of all non-deleted words.
* MAX_ERROR: EVALB writes ``N : Length unmatch (a|b)`` / ``N : Words unmatch (a|b)`` on standard
  error for each error sentence and counts them; when one more error arrives after
  ``max_error + 1`` of them (the 12th error with ``MAX_ERROR 10``) it exits at once with status 1:
  its report is then only the header and the lines of the sentences before that one, without
  totals or summary.  We reproduce exactly that: :attr:`EvalbResult.aborted` is true,
  :attr:`EvalbResult.aborted_at` is the 1-based line of the sentence that stopped it,
  :meth:`EvalbResult.report` is the truncated text, :meth:`EvalbResult.errors_text` the standard
  error (the stopping sentence's line included), :attr:`EvalbResult.exit_status` is 1, and the
  summary attributes cover the sentences scored before the stop.  ``max_error=None`` never stops.
* Parameters: :class:`EvalbParams` holds every key of EVALB's parameter files (``DEBUG``,
  ``MAX_ERROR``, ``CUTOFF_LEN``, ``LABELED``, ``DELETE_LABEL``, ``DELETE_LABEL_FOR_LENGTH``,
  ``QUOTE_LABEL``, ``EQ_LABEL``, ``EQ_WORD``); ``EvalbParams.from_file`` reads a ``.prm`` file,
  ``"collins"`` (the default) and ``"new"`` are ``COLLINS.prm`` and ``new.prm``.  ``DEBUG >= 1``
  adds EVALB's per-sentence dumps to the report (module :mod:`._evalb_trace`).
* :func:`run_evalb` is the command ``evalb [-p PRM] [-e N] [-c N] [-d|-D] GOLD TEST``: report on
  standard output, error lines on standard error, EVALB's exit status returned.

Deliberate differences from the C program (none of them visible on well-formed input)
-------------------------------------------------------------------------------------
* Malformed lines (unbalanced brackets, a word outside ``(TAG word)``, two words in one bracket)
  raise :class:`~fastspectral.errors.FormatError` naming the file and line; EVALB loops on its error
  routine until it exits, or reads uninitialised memory.
* Different numbers of gold and predicted lines raise ``FormatError`` naming the file that has the
  extra line, once the common lines are scored (EVALB prints a message on stderr and reports the
  common prefix); when MAX_ERROR stops first, nothing is raised, as EVALB never gets there.
* Parameter files: where EVALB warns on stderr and goes on (unknown keyword, empty value,
  ``EQ_LABEL`` without two values) or reads junk as 0 (``atoi``), ``from_file`` raises a
  one-line ``FormatError``; so does a label key with two labels (inert in EVALB).
* Bytes: files are decoded with ``encoding`` (default UTF-8; ``FormatError`` with the line for
  undecodable bytes; ``latin-1`` reads anything, as EVALB does).  Lines are split at ``\\n`` only
  and cut at their first NUL, as EVALB's ``fgets`` and C strings do.
* No fixed limits (EVALB splits lines longer than 4999 bytes, parameter lines longer than 499,
  and overflows beyond 200 words, 200 brackets, 20 quote terms, 30-byte labels).
* The function-tag rule keeps ``-XXX-`` labels as the EVALB README describes (the C code would
  reduce a *bracket* labelled ``-NONE-`` to the empty label; such brackets do not occur in
  treebanks).
"""
from __future__ import annotations

import gzip
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..errors import FormatError
from ._evalb_base import SentenceResult, _Compiled, _strip_function_tags

__all__ = [
    "EvalbParams", "SentenceResult", "EvalbSummary", "EvalbResult", "COLLINS_PARAMS", "NEW_PARAMS",
    "BUILTIN_PARAMS", "score_sentence", "evaluate", "evaluate_files", "run_evalb",
    "read_evalb_tree", "EvalbTree",
]

_COLLINS_DELETE = ("TOP", "-NONE-", ",", ":", "``", "''", ".")

HEADER = (
    "  Sent.                        Matched  Bracket   Cross        Correct Tag\n"
    " ID  Len.  Stat. Recal  Prec.  Bracket gold test Bracket Words  Tags Accracy\n"
    "============================================================================\n"
)
_RULE = "============================================================================\n"


# ----------------------------------------------------------------------------------------------
# parameters
# ----------------------------------------------------------------------------------------------
_C_SPACE = " \t\n\v\f\r"              # C's isspace() in the "C" locale
_C_SPACE_B = b" \t\n\v\f\r"
_INT = re.compile(r"[+-]?[0-9]+\Z", re.ASCII)
_KEYS = ("DEBUG", "MAX_ERROR", "CUTOFF_LEN", "LABELED", "DELETE_LABEL", "DELETE_LABEL_FOR_LENGTH",
         "QUOTE_LABEL", "EQ_LABEL", "EQ_WORD")


@dataclass(frozen=True)
class EvalbParams:
    """EVALB parameters; the defaults are those of ``COLLINS.prm``.

    Attributes
    ----------
    labeled: labelled (``LABELED 1``) or unlabelled bracket matching.
    cutoff_len: sentences of gold length <= this go to the second summary block (``CUTOFF_LEN``).
    max_error: number of error sentences tolerated (``MAX_ERROR``); EVALB stops at the
        ``max_error + 2``-th error (any integer, as in EVALB; a negative one stops at the first
        error).  ``None`` never stops.
    delete_labels: ``DELETE_LABEL`` entries (tags: word deleted; bracket labels: bracket deleted).
    delete_labels_for_length: tags not counted in the sentence length (``DELETE_LABEL_FOR_LENGTH``).
    equal_labels: pairs of labels counted as equal (``EQ_LABEL``), for brackets and tags.
    equal_words: pairs of words counted as equal (``EQ_WORD``).
    quote_labels: ``QUOTE_LABEL`` entries used by the quote repair (none in ``COLLINS.prm``).
    debug: ``DEBUG`` (EVALB's ``-d`` / ``-D``): 0 the plain report; >= 1 adds EVALB's dump of each
        sentence after its line; >= 2 adds its bracket-matching trace as well.
    """

    labeled: bool = True
    cutoff_len: int = 40
    max_error: int | None = 10
    delete_labels: tuple[str, ...] = _COLLINS_DELETE
    delete_labels_for_length: tuple[str, ...] = ("-NONE-",)
    equal_labels: tuple[tuple[str, str], ...] = (("ADVP", "PRT"),)
    equal_words: tuple[tuple[str, str], ...] = ()
    quote_labels: tuple[str, ...] = ()
    debug: int = 0

    def __post_init__(self):
        # accept lists from callers, store tuples (hashable, immutable)
        for name in ("delete_labels", "delete_labels_for_length", "quote_labels"):
            vals = getattr(self, name)
            if isinstance(vals, str):
                raise ValueError(f"EvalbParams.{name} must be a sequence of labels, not a string")
            vals = tuple(vals)
            for v in vals:
                if not isinstance(v, str):
                    raise ValueError(f"EvalbParams.{name}: every entry must be a str, got {v!r}")
            object.__setattr__(self, name, vals)
        for name in ("equal_labels", "equal_words"):
            pairs = tuple(tuple(p) for p in getattr(self, name))
            for p in pairs:
                if len(p) != 2 or not all(isinstance(x, str) for x in p):
                    raise ValueError(f"EvalbParams.{name}: every entry must be a pair of str, "
                                     f"got {p!r}")
            object.__setattr__(self, name, pairs)
        for name in ("cutoff_len", "debug") + (() if self.max_error is None else ("max_error",)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int):
                raise ValueError(f"EvalbParams.{name} must be an int, got {v!r}")
        object.__setattr__(self, "labeled", bool(self.labeled))

    # -- construction ------------------------------------------------------------------------
    @classmethod
    def builtin(cls, name: str) -> "EvalbParams":
        """The parameters of EVALB's ``COLLINS.prm`` (``"collins"``) or ``new.prm`` (``"new"``)."""
        try:
            return BUILTIN_PARAMS[name.lower()]
        except (KeyError, AttributeError):
            raise ValueError(f"no built-in EVALB parameter set {name!r} "
                             f"(known: {', '.join(sorted(BUILTIN_PARAMS))})") from None

    @classmethod
    def resolve(cls, spec=None, *, encoding: str = "utf-8") -> "EvalbParams":
        """``EvalbParams`` from ``spec``: ``None`` (``COLLINS.prm``), an ``EvalbParams``, a
        built-in name (``"collins"``, ``"new"``, any case) or the path of a parameter file."""
        if spec is None:
            return COLLINS_PARAMS
        if isinstance(spec, EvalbParams):
            return spec
        if isinstance(spec, str) and spec.lower() in BUILTIN_PARAMS:
            return BUILTIN_PARAMS[spec.lower()]
        return cls.from_file(spec, encoding=encoding)

    @classmethod
    def from_file(cls, path, *, encoding: str = "utf-8") -> "EvalbParams":
        """Read an EVALB parameter file (``COLLINS.prm``, ``new.prm`` ...) as EVALB reads it.

        Lines are cut at their first NUL and lose their trailing white space; lines starting with
        ``#`` or shorter than 3 bytes are ignored; every other line is ``KEY value``.  Keys not
        given keep EVALB's built-in defaults (``DEBUG 0``, ``MAX_ERROR 10``, ``CUTOFF_LEN 40``,
        ``LABELED 1``, no deleted, quote or equal labels); a repeated scalar key keeps its last
        value, list keys accumulate.  Where EVALB only warns and goes on (unknown key, empty
        value, ``EQ_LABEL`` without two values) or reads junk as 0 (``atoi``), this raises a
        one-line :class:`~fastspectral.errors.FormatError` naming the file and line, as it does
        for an integer key without an integer, a label key with more than one label and a line
        that cannot be decoded with ``encoding``.  ``OSError`` when the file cannot be read.
        """
        _check_encoding(encoding)
        data = Path(path).read_bytes()
        kw = dict(labeled=True, cutoff_len=40, max_error=10, debug=0, delete_labels=[],
                  delete_labels_for_length=[], equal_labels=[], equal_words=[], quote_labels=[])
        lines = data.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        for lineno, raw in enumerate(lines, 1):
            raw = raw.split(b"\0", 1)[0].rstrip(_C_SPACE_B)
            if raw[:1] == b"#" or len(raw) < 3:      # EVALB: comment, or too short to matter
                continue
            line = _decode(raw, encoding, path, lineno)
            if line[0] in _C_SPACE:
                raise FormatError("a parameter line must start with its keyword, not with white "
                                  "space", path, lineno)
            parts = re.split(r"[ \t\n\v\f\r]+", line)
            key, vals = parts[0], parts[1:]
            if key not in _KEYS:
                raise FormatError(f"unknown keyword {key!r} in EVALB parameter file (known: "
                                  f"{' '.join(_KEYS)})", path, lineno)
            if not vals:
                raise FormatError(f"{key} has no value", path, lineno)
            if key in ("DEBUG", "MAX_ERROR", "CUTOFF_LEN", "LABELED"):
                if len(vals) != 1 or not _INT.match(vals[0]):
                    raise FormatError(f"{key} needs one integer, got {' '.join(vals)!r}",
                                      path, lineno)
                v = int(vals[0])
                name = {"DEBUG": "debug", "MAX_ERROR": "max_error", "CUTOFF_LEN": "cutoff_len",
                        "LABELED": "labeled"}[key]
                kw[name] = (v != 0) if key == "LABELED" else v
            elif key in ("EQ_LABEL", "EQ_WORD"):
                if len(vals) != 2:
                    raise FormatError(f"{key} requires two values, got {len(vals)}: "
                                      f"{' '.join(vals)!r}", path, lineno)
                kw["equal_labels" if key == "EQ_LABEL" else "equal_words"].append(tuple(vals))
            else:
                if len(vals) != 1:
                    raise FormatError(f"{key} takes one label (labels contain no white space), "
                                      f"got {' '.join(vals)!r}", path, lineno)
                kw[{"DELETE_LABEL": "delete_labels",
                    "DELETE_LABEL_FOR_LENGTH": "delete_labels_for_length",
                    "QUOTE_LABEL": "quote_labels"}[key]].append(vals[0])
        return cls(**kw)

    from_prm_file = from_file      # the older name

    def with_overrides(self, *, max_error=None, cutoff_len=None, debug=None) -> "EvalbParams":
        """A copy with EVALB's command-line overrides (``-e N``, ``-c N``, ``-d``/``-D``) applied;
        ``None`` keeps the value of the parameters."""
        kw = {k: v for k, v in (("max_error", max_error), ("cutoff_len", cutoff_len),
                                ("debug", debug)) if v is not None}
        return replace(self, **kw) if kw else self


COLLINS_PARAMS = EvalbParams()
#: The parameters of ``new.prm`` of the EVALB distribution.
NEW_PARAMS = EvalbParams(
    delete_labels=("TOP", "S1", "-NONE-", ",", ":", "``", "''", ".", "?", "!"),
    quote_labels=("``", "''", "POS", "NN", "CD", "VBZ", ":"))
BUILTIN_PARAMS = {"collins": COLLINS_PARAMS, "new": NEW_PARAMS}


def _check_encoding(encoding: str) -> None:
    """Reject encodings that are unknown or not ASCII-compatible (EVALB works on bytes and
    splits lines at the byte ``\\n``)."""
    try:
        ok = "( )\n#-=".encode(encoding) == b"( )\n#-="
    except LookupError:
        raise ValueError(f"unknown encoding {encoding!r}") from None
    except (UnicodeError, TypeError):
        ok = False
    if not ok:
        raise ValueError(f"encoding {encoding!r} is not ASCII-compatible; EVALB files need one "
                         "that is (utf-8, latin-1, ...)")


def _decode(raw: bytes, encoding: str, path, lineno: int) -> str:
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as exc:
        raise FormatError(f"cannot decode the line as {encoding} (byte 0x{raw[exc.start]:02x} "
                          f"at byte {exc.start + 1})", path, lineno) from None


_compiled_cache: dict[EvalbParams, _Compiled] = {}


def _compile(params) -> _Compiled:
    params = EvalbParams.resolve(params)
    c = _compiled_cache.get(params)
    if c is None:
        c = _compiled_cache[params] = _Compiled(params)
    return c


# ----------------------------------------------------------------------------------------------
# reader
# ----------------------------------------------------------------------------------------------
# One token per match: terminal "(TAG<ws>word)" (word may be empty: "(TOP )"), an opening bracket
# "(LABEL" (label may be empty), a closing bracket, or a stray word (malformed input).
# re.ASCII: whitespace is C's isspace() (a no-break space is part of a word, as in EVALB).
_TOKEN = re.compile(r"\(([^\s()]*)(?:(\s+)([^\s()]*)\))?|(\))|([^\s()]+)", re.ASCII)


@dataclass
class EvalbTree:
    """A sentence as EVALB sees it (after deleting the terminals with deleted tags).

    ``words`` / ``tags``: the kept terminals; ``starts`` / ``ends`` / ``labels``: every bracket in
    the order its opening parenthesis appears (spans over kept words, end exclusive; raw labels);
    ``length``: terminals not deleted for length (the ``Len.`` of a gold tree); ``quotes``: the
    quote-like terminals seen, as ``[word, tag, index, n_brackets_before, open_brackets]``.
    """

    words: list
    tags: list
    starts: list
    ends: list
    labels: list
    length: int
    quotes: list = field(default_factory=list)


def read_evalb_tree(line: str, params: EvalbParams | None = None, *, path=None,
                    lineno: int | None = None) -> EvalbTree:
    """Read one line the way EVALB's ``read_line`` does; raise ``FormatError`` if malformed.

    ``path`` and ``lineno`` only serve the error message.
    """
    c = params if isinstance(params, _Compiled) else _compile(params)
    delete = c.delete
    delete_len = c.delete_len
    quote = c.quote
    words: list = []
    tags: list = []
    starts: list = []
    ends: list = []
    labels: list = []
    quotes: list = []
    stack: list = []
    length = 0
    wid = 0
    if "\0" in line:                             # EVALB's C strings end at the first NUL
        line = line[:line.index("\0")]
    for label, ws, word, close, stray in _TOKEN.findall(line):
        if ws:                                   # terminal (TAG word)
            if label not in delete_len:
                length += 1
            if quote and label in quote and word in ("'", '"', "/"):
                quotes.append([word, label, wid, len(starts), list(stack)])
            if label in delete:
                continue
            words.append(word)
            tags.append(label)
            wid += 1
        elif close:
            if not stack:
                raise FormatError("unbalanced brackets (too many ')'); EVALB expects one "
                                  "tree per line", path, lineno)
            ends[stack.pop()] = wid
        elif stray:
            raise FormatError(f"word {stray!r} outside a '(TAG word)' bracket (or two elements "
                              f"in one bracket); EVALB expects one tree per line", path, lineno)
        else:                                    # opening bracket of a non-terminal
            stack.append(len(starts))
            starts.append(wid)
            ends.append(-1)
            labels.append(label)
    if stack:
        raise FormatError("unbalanced brackets (too many '('); EVALB expects one tree per line",
                          path, lineno)
    return EvalbTree(words, tags, starts, ends, labels, length, quotes)


def _reinsert(tree: EvalbTree, q) -> None:
    """EVALB's ``reinsert_term``: put back a deleted quote terminal and shift the brackets."""
    word, tag, ind, bra, open_brackets = q
    tree.words.insert(ind, word)
    tree.tags.insert(ind, tag)
    starts, ends = tree.starts, tree.ends
    for k in range(bra, len(starts)):
        starts[k] += 1
        ends[k] += 1
    for k in open_brackets:
        ends[k] += 1


def _fix_quote(c: _Compiled, gold: EvalbTree, test: EvalbTree) -> None:
    """EVALB's ``fix_quote``: repair quote tokens deleted on one side only (in place)."""
    q1, q2 = gold.quotes, test.quotes
    delete = c.delete
    for i in range(len(q2)):
        ind = q2[i][2]
        for j in range(len(q1)):
            if q1[j][2] == ind and q1[j][1] != q2[i][1]:
                if q1[j][1] in delete and q2[i][1] not in delete:
                    _reinsert(gold, q1[j])
                    for k in range(j, len(q1)):
                        q1[k][2] += 1
                elif q2[i][1] in delete and q1[j][1] not in delete:
                    _reinsert(test, q2[i])
                    for k in range(i, len(q2)):
                        q2[k][2] += 1


# ----------------------------------------------------------------------------------------------
# per-sentence scoring
# ----------------------------------------------------------------------------------------------
def _score(c: _Compiled, gold: EvalbTree, test: EvalbTree, sent_id: int) -> SentenceResult:
    length = gold.length
    if not test.words:
        return SentenceResult(sent_id, length, 2)
    if len(gold.words) != len(test.words):
        if c.quote:
            _fix_quote(c, gold, test)
        if len(gold.words) != len(test.words):
            return SentenceResult(sent_id, length, 1, message=(
                f"Length unmatch ({len(gold.words)}|{len(test.words)})"))
    eq_word = c.eq_word
    for w1, w2 in zip(gold.words, test.words):
        if w1 != w2 and (w1, w2) not in eq_word:
            return SentenceResult(sent_id, length, 1, message=f"Words unmatch ({w1}|{w2})")

    # brackets kept after zero-span / deleted-label removal
    dele = c.delete_bracket
    strip = _strip_function_tags
    g_brackets = []
    for s, e, lab in zip(gold.starts, gold.ends, gold.labels):
        if s != e:
            lab = strip(lab)
            if lab not in dele:
                g_brackets.append((s, e, lab))
    t_by_span: dict = {}
    t_spans = []
    for s, e, lab in zip(test.starts, test.ends, test.labels):
        if s != e:
            lab = strip(lab)
            if lab not in dele:
                t_spans.append((s, e))
                t_by_span.setdefault((s, e), []).append(lab)

    # greedy multiset matching, gold order then first unmatched predicted bracket
    match = 0
    labeled = c.labeled
    eq_label = c.eq_label
    for s, e, lab in g_brackets:
        cands = t_by_span.get((s, e))
        if not cands:
            continue
        if not labeled:
            cands.pop(0)
            match += 1
            continue
        for k, tl in enumerate(cands):
            if tl == lab or (lab, tl) in eq_label:
                del cands[k]
                match += 1
                break

    # crossing: a predicted (s, e) crosses a gold (a, b) iff s < a < e < b or a < s < b < e
    crossing = 0
    if g_brackets and t_spans:
        n = max(len(gold.words), max(e for _, e, _ in g_brackets), max(e for _, e in t_spans)) + 1
        max_end_from = [-1] * n           # largest gold end among gold brackets starting at a
        min_start_to = [n] * n            # smallest gold start among gold brackets ending at b
        for a, b, _ in g_brackets:
            if b > max_end_from[a]:
                max_end_from[a] = b
            if a < min_start_to[b]:
                min_start_to[b] = a
        for s, e in t_spans:
            if e - s > 1 and (max(max_end_from[s + 1:e]) > e or min(min_start_to[s + 1:e]) < s):
                crossing += 1

    # tagging
    tags2 = test.tags
    correct = 0
    for t1, t2 in zip(gold.tags, tags2):
        if t1 == t2 or (t1, t2) in eq_label:
            correct += 1
    return SentenceResult(sent_id, length, 0, match, len(g_brackets), len(t_spans), crossing,
                          len(gold.words), correct)


def _as_line(item) -> str:
    return item if isinstance(item, str) else str(item)


def score_sentence(gold_str, pred_str, params: EvalbParams | None = None, *,
                   sent_id: int = 1) -> SentenceResult:
    """Score one predicted tree against its gold tree, exactly as EVALB scores a line.

    ``gold_str`` / ``pred_str`` are one-line bracketed trees (or objects whose ``str()`` is one,
    such as :class:`fastspectral.trees.tree.Tree`).  Returns a :class:`SentenceResult`; error and
    skip sentences have status 1 / 2 (no exception).  Malformed brackets raise ``FormatError``.
    """
    c = _compile(params)
    gold = read_evalb_tree(_as_line(gold_str), c, lineno=sent_id)
    test = read_evalb_tree(_as_line(pred_str), c, lineno=sent_id)
    return _score(c, gold, test, sent_id)


# ----------------------------------------------------------------------------------------------
# totals
# ----------------------------------------------------------------------------------------------
@dataclass
class EvalbSummary:
    """Totals of one summary block (``-- All --`` or ``-- len<=40 --``).

    Raw counts: ``n_sentences``, ``n_error``, ``n_skip``, ``gold_brackets``, ``test_brackets``,
    ``matched``, ``words``, ``correct_tags``, ``crossing``, ``complete``, ``no_crossing_sents``,
    ``two_or_less_crossing_sents``.  The percentage properties are computed exactly as EVALB does.
    """

    n_sentences: int = 0
    n_error: int = 0
    n_skip: int = 0
    gold_brackets: int = 0
    test_brackets: int = 0
    matched: int = 0
    words: int = 0
    correct_tags: int = 0
    crossing: int = 0
    complete: int = 0
    no_crossing_sents: int = 0
    two_or_less_crossing_sents: int = 0

    def add(self, r: SentenceResult) -> None:
        """Add one sentence's result (EVALB's ``individual_result``)."""
        self.n_sentences += 1
        if r.status == 1:
            self.n_error += 1
        elif r.status == 2:
            self.n_skip += 1
        else:
            self.gold_brackets += r.gold_brackets
            self.test_brackets += r.test_brackets
            self.matched += r.matched
            if r.gold_brackets == r.test_brackets == r.matched:
                self.complete += 1
            self.words += r.words
            self.crossing += r.crossing
            if r.crossing == 0:
                self.no_crossing_sents += 1
            if r.crossing <= 2:
                self.two_or_less_crossing_sents += 1
            self.correct_tags += r.correct_tags

    @property
    def n_valid(self) -> int:
        """Sentences that were scored (neither error nor skip)."""
        return self.n_sentences - self.n_error - self.n_skip

    @property
    def recall(self) -> float:
        """Bracketing recall, percent."""
        return 100.0 * self.matched / self.gold_brackets if self.gold_brackets > 0 else 0.0

    @property
    def precision(self) -> float:
        """Bracketing precision, percent."""
        return 100.0 * self.matched / self.test_brackets if self.test_brackets > 0 else 0.0

    @property
    def fmeasure(self) -> float:
        """Bracketing F1, percent, as ``2*P*R/(P+R)`` from the percentages (0.0 when P+R is 0;
        EVALB prints ``-nan`` then, and so does :meth:`EvalbResult.report`)."""
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r > 0 else 0.0

    @property
    def complete_match(self) -> float:
        """Percentage of valid sentences matched completely."""
        n = self.n_valid
        return 100.0 * self.complete / n if n > 0 else 0.0

    @property
    def avg_crossing(self) -> float:
        """Average number of crossing brackets per valid sentence."""
        n = self.n_valid
        return 1.0 * self.crossing / n if n > 0 else 0.0

    @property
    def no_crossing(self) -> float:
        """Percentage of valid sentences without crossing brackets."""
        n = self.n_valid
        return 100.0 * self.no_crossing_sents / n if n > 0 else 0.0

    @property
    def two_or_less_crossing(self) -> float:
        """Percentage of valid sentences with at most two crossing brackets."""
        n = self.n_valid
        return 100.0 * self.two_or_less_crossing_sents / n if n > 0 else 0.0

    @property
    def tagging_accuracy(self) -> float:
        """Percentage of correctly tagged (non-deleted) words in valid sentences."""
        return 100.0 * self.correct_tags / self.words if self.words > 0 else 0.0

    @property
    def counts(self) -> dict:
        """The raw integer counts as a dict."""
        return {
            "sentences": self.n_sentences, "error_sentences": self.n_error,
            "skip_sentences": self.n_skip, "valid_sentences": self.n_valid,
            "gold_brackets": self.gold_brackets, "test_brackets": self.test_brackets,
            "matched_brackets": self.matched, "words": self.words,
            "correct_tags": self.correct_tags, "crossing": self.crossing,
            "complete_match_sentences": self.complete,
            "no_crossing_sentences": self.no_crossing_sents,
            "two_or_less_crossing_sentences": self.two_or_less_crossing_sents,
        }

    def block(self, title: str) -> str:
        """The summary block text as EVALB prints it (``title`` is e.g. ``All``)."""
        p, r = self.precision, self.recall
        f = "  -nan" if p + r == 0 else "%6.2f" % (2 * p * r / (p + r))
        return (
            f"\n-- {title} --\n"
            f"Number of sentence        = {self.n_sentences:6d}\n"
            f"Number of Error sentence  = {self.n_error:6d}\n"
            f"Number of Skip  sentence  = {self.n_skip:6d}\n"
            f"Number of Valid sentence  = {self.n_valid:6d}\n"
            f"Bracketing Recall         = {r:6.2f}\n"
            f"Bracketing Precision      = {p:6.2f}\n"
            f"Bracketing FMeasure       = {f}\n"
            f"Complete match            = {self.complete_match:6.2f}\n"
            f"Average crossing          = {self.avg_crossing:6.2f}\n"
            f"No crossing               = {self.no_crossing:6.2f}\n"
            f"2 or less crossing        = {self.two_or_less_crossing:6.2f}\n"
            f"Tagging accuracy          = {self.tagging_accuracy:6.2f}\n"
        )


@dataclass
class EvalbResult:
    """Result of :func:`evaluate`: per-sentence results and the two summary blocks.

    ``all`` / ``le40`` are :class:`EvalbSummary` objects (``le40`` uses ``params.cutoff_len``);
    ``recall``, ``precision``, ``fmeasure``, ``complete_match``, ``avg_crossing``,
    ``no_crossing``, ``two_or_less_crossing``, ``tagging_accuracy`` and ``counts`` read the
    ``-- All --`` block.  ``aborted`` / ``aborted_at``: EVALB's MAX_ERROR stop (see module doc);
    ``abort_sentence`` is the error sentence that stopped it (not in ``sentences``).
    :meth:`report` is EVALB's standard output, :meth:`errors_text` its standard error and
    :attr:`exit_status` its exit status.
    """

    sentences: list
    all: EvalbSummary
    le40: EvalbSummary
    params: EvalbParams
    aborted: bool = False
    aborted_at: int | None = None
    abort_sentence: SentenceResult | None = None
    # DEBUG >= 1 only: EVALB's text printed before / after each sentence's line, and before the
    # stop (None when params.debug is 0)
    trace_before: list | None = field(default=None, repr=False)
    trace_after: list | None = field(default=None, repr=False)
    abort_trace: str = field(default="", repr=False)

    recall = property(lambda self: self.all.recall, doc="Bracketing recall (all), percent.")
    precision = property(lambda self: self.all.precision, doc="Bracketing precision (all), percent.")
    fmeasure = property(lambda self: self.all.fmeasure, doc="Bracketing F1 (all), percent.")
    complete_match = property(lambda self: self.all.complete_match,
                              doc="Complete match (all), percent.")
    avg_crossing = property(lambda self: self.all.avg_crossing, doc="Average crossing (all).")
    no_crossing = property(lambda self: self.all.no_crossing, doc="No crossing (all), percent.")
    two_or_less_crossing = property(lambda self: self.all.two_or_less_crossing,
                                    doc="2 or less crossing (all), percent.")
    tagging_accuracy = property(lambda self: self.all.tagging_accuracy,
                                doc="Tagging accuracy (all), percent.")
    counts = property(lambda self: self.all.counts, doc="Raw counts of the All block.")

    @property
    def le_cutoff(self) -> EvalbSummary:
        """Alias of ``le40`` (the block for ``length <= params.cutoff_len``)."""
        return self.le40

    @property
    def exit_status(self) -> int:
        """EVALB's exit status: 1 when MAX_ERROR stopped it, else 0."""
        return 1 if self.aborted else 0

    @property
    def errors(self) -> list:
        """The error sentences (status 1) in order, the one that stopped EVALB included."""
        out = [r for r in self.sentences if r.status == 1]
        if self.abort_sentence is not None:
            out.append(self.abort_sentence)
        return out

    def totals_line(self) -> str:
        """The totals row printed under the table (with its newline)."""
        a = self.all
        out = ""
        if a.gold_brackets > 0 and a.test_brackets > 0:
            out = "                %6.2f %6.2f %6d %5d %5d  %5d" % (
                a.recall, a.precision, a.matched, a.gold_brackets, a.test_brackets, a.crossing)
        return out + "  %5d %5d   %6.2f\n" % (a.words, a.correct_tags, a.tagging_accuracy)

    def pieces(self):
        """EVALB's output in the order it is written: ``(stream, text)`` pairs, ``stream`` being
        1 (standard output) or 2 (standard error, the ``N : message`` error lines)."""
        yield 1, HEADER
        before, after = self.trace_before, self.trace_after
        for k, r in enumerate(self.sentences):
            if before is not None and before[k]:
                yield 1, before[k]
            if r.status == 1:
                yield 2, f"{r.id} : {r.message}\n"
            yield 1, r.line()
            if after is not None and after[k]:
                yield 1, after[k]
        if self.aborted:
            if self.abort_trace:
                yield 1, self.abort_trace
            r = self.abort_sentence
            yield 2, f"{r.id} : {r.message}\n"
            return
        yield 1, _RULE + self.totals_line() + "=== Summary ===\n"
        yield 1, self.all.block("All")
        yield 1, self.le40.block(f"len<={self.params.cutoff_len}")

    def report(self) -> str:
        """EVALB's complete standard output for this evaluation, character for character."""
        return "".join(text for stream, text in self.pieces() if stream == 1)

    def errors_text(self) -> str:
        """EVALB's standard error: one ``N : Length unmatch (a|b)`` / ``N : Words unmatch (a|b)``
        line per error sentence, the one that stopped it included."""
        return "".join(text for stream, text in self.pieces() if stream == 2)

    def write(self, stdout=None, stderr=None, *, encoding: str = "utf-8") -> int:
        """Write :meth:`report` to ``stdout`` and :meth:`errors_text` to ``stderr`` (default
        ``sys.stdout`` / ``sys.stderr``), interleaved as EVALB writes them; return
        :attr:`exit_status`.  Streams with a ``buffer`` get bytes in ``encoding`` (EVALB writes
        the words of its error lines as the bytes it read)."""
        import sys
        streams = {1: sys.stdout if stdout is None else stdout,
                   2: sys.stderr if stderr is None else stderr}
        pending_stream, pending = None, []
        for stream, text in self.pieces():
            if stream != pending_stream and pending:
                _write_text(streams[pending_stream], "".join(pending), encoding)
                pending = []
            pending_stream = stream
            pending.append(text)
        if pending:
            _write_text(streams[pending_stream], "".join(pending), encoding)
        for s in streams.values():
            flush = getattr(s, "flush", None)
            if flush is not None:
                flush()
        return self.exit_status

    def __str__(self) -> str:
        return self.report()


def _write_text(stream, text: str, encoding: str) -> None:
    buf = getattr(stream, "buffer", None)
    if buf is not None:
        stream.flush()
        buf.write(text.encode(encoding))
    else:
        stream.write(text)


# ----------------------------------------------------------------------------------------------
# drivers
# ----------------------------------------------------------------------------------------------
def evaluate(gold_lines, pred_lines, params=None, *, gold_path=None, pred_path=None,
             encoding: str = "utf-8") -> EvalbResult:
    """Score predicted trees against gold trees, one tree per line, exactly as EVALB does.

    ``gold_lines`` / ``pred_lines``: iterables of one-line bracketed trees (strings, possibly with
    their newline, or objects whose ``str()`` is one).  An empty line is a sentence without words
    (a skip sentence on the predicted side, as in EVALB).  ``params``: an :class:`EvalbParams`,
    ``None`` / ``"collins"`` (``COLLINS.prm``), ``"new"`` (``new.prm``) or a parameter file.
    Sentences are scored in order until MAX_ERROR stops the evaluation (lines after that point
    are not read, as in EVALB); then different numbers of lines raise ``FormatError`` naming the
    side (``gold_path`` / ``pred_path`` when given) and the first line without a partner.
    ``encoding`` only serves the column widths of the ``DEBUG`` dump (EVALB pads bytes).
    Returns an :class:`EvalbResult`.
    """
    params = EvalbParams.resolve(params, encoding=encoding)
    c = _compile(params)
    gold_lines = [_as_line(x) for x in gold_lines]
    pred_lines = [_as_line(x) for x in pred_lines]
    gname = gold_path or "<gold>"
    pname = pred_path or "<prediction>"
    trace = None
    if c.debug > 0:
        from ._evalb_trace import trace_sentence
        trace = trace_sentence
    before: list | None = [] if trace else None
    after: list | None = [] if trace else None
    results: list = []
    all_s = EvalbSummary()
    le_s = EvalbSummary()
    cutoff = params.cutoff_len
    max_error = params.max_error
    errors = 0
    for i, (gl, pl) in enumerate(zip(gold_lines, pred_lines), 1):
        gold = read_evalb_tree(gl, c, path=gname, lineno=i)
        test = read_evalb_tree(pl, c, path=pname, lineno=i)
        if trace is None:
            r = _score(c, gold, test, i)
        else:
            r, pre, post = trace(c, gl, pl, i, encoding)
        if r.status == 1:
            # EVALB's Error(): `if (Error_count++ > Max_error) exit(1);` before the line is printed
            if max_error is not None and errors > max_error:
                return EvalbResult(results, all_s, le_s, params, True, i, r, before, after,
                                   pre if trace else "")
            errors += 1
        results.append(r)
        if trace is not None:
            before.append(pre)
            after.append(post)
        all_s.add(r)
        if r.length <= cutoff:
            le_s.add(r)
    ng, np_ = len(gold_lines), len(pred_lines)
    if ng > np_:
        raise FormatError(f"gold has {ng} lines but the prediction has {np_} (too many lines "
                          f"in the gold file; EVALB needs one tree per line in both)",
                          gname, np_ + 1)
    if np_ > ng:
        raise FormatError(f"prediction has {np_} lines but the gold has {ng} (too many lines in "
                          f"the test file; EVALB needs one tree per line in both)",
                          pname, ng + 1)
    return EvalbResult(results, all_s, le_s, params, False, None, None, before, after)


def _read_lines(path, encoding: str = "utf-8") -> list:
    """The lines of a tree file as EVALB's ``fgets`` sees them: split at ``\\n`` only (a final
    newline does not start an empty line), each cut at its first NUL, decoded strictly
    (``FormatError`` with the line otherwise).  ``.gz`` files are decompressed."""
    p = Path(path)
    if p.suffix == ".gz":
        import zlib
        try:
            with gzip.open(p, "rb") as fh:
                data = fh.read()
        except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
            msg = " ".join(str(exc).split()) or type(exc).__name__
            raise FormatError(f"not a readable gzip file ({msg})", p) from None
    else:
        data = p.read_bytes()
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    out = []
    for i, raw in enumerate(lines, 1):
        if b"\0" in raw:
            raw = raw[:raw.index(b"\0")]
        out.append(_decode(raw, encoding, p, i))
    return out


def evaluate_files(gold_path, pred_path, params=None, *, encoding: str = "utf-8") -> EvalbResult:
    """Run :func:`evaluate` on two files with one tree per line (``.gz`` accepted).

    Like ``evalb -p COLLINS.prm gold_path pred_path`` (``params`` as in :func:`evaluate`,
    default ``COLLINS.prm``); ``result.report()`` is the text EVALB prints.  Malformed lines,
    lines that cannot be decoded with ``encoding`` and different line counts raise
    ``FormatError`` (file and line); a file that cannot be opened raises ``OSError``.
    """
    _check_encoding(encoding)
    params = EvalbParams.resolve(params, encoding=encoding)
    return evaluate(_read_lines(gold_path, encoding), _read_lines(pred_path, encoding), params,
                    gold_path=str(gold_path), pred_path=str(pred_path), encoding=encoding)


def run_evalb(gold_path, pred_path, params="collins", *, max_error: int | None = None,
              cutoff_len: int | None = None, debug: int | None = None, stdout=None, stderr=None,
              encoding: str = "utf-8") -> int:
    """``evalb [-p PRM] [-e N] [-c N] [-d|-D] GOLD TEST``: write EVALB's report and error lines.

    ``params``: ``"collins"`` (default, ``COLLINS.prm``), ``"new"`` (``new.prm``), the path of
    a parameter file or an :class:`EvalbParams`.  ``max_error`` / ``cutoff_len`` / ``debug``
    override the parameters (EVALB's ``-e``, ``-c``, ``-d``=1 / ``-D``=2); ``None`` keeps them.
    Writes the report to ``stdout`` and the ``N : Length unmatch (a|b)`` lines to ``stderr``
    (default ``sys.stdout`` / ``sys.stderr``) and returns EVALB's exit status: 1 when MAX_ERROR
    stopped the report, else 0.  Everything is read and scored before anything is written, so
    bad input leaves both streams untouched: malformed tree or parameter files (and lines not
    decodable with ``encoding``) raise ``FormatError`` naming file and line; files that cannot
    be opened raise ``OSError``; an unknown or non-ASCII-compatible ``encoding`` or a bad override
    raises ``ValueError``.
    """
    _check_encoding(encoding)
    for name, v in (("max_error", max_error), ("cutoff_len", cutoff_len), ("debug", debug)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
            raise ValueError(f"{name} must be an int or None, got {v!r}")
    p = EvalbParams.resolve(params, encoding=encoding)
    p = p.with_overrides(max_error=max_error, cutoff_len=cutoff_len, debug=debug)
    result = evaluate_files(gold_path, pred_path, p, encoding=encoding)
    return result.write(stdout, stderr, encoding=encoding)
