"""EVALB's ``DEBUG`` output (parameter ``DEBUG 1`` / ``2``, options ``-d`` / ``-D``).

With ``DEBUG >= 1`` EVALB prints, after each sentence's line, a dump of its internal arrays
(``dsp_info``); with ``DEBUG >= 2`` it also prints, before the line, a trace of its reading
(``label=..., word=..., wid=...``), of the quote repair and of the bracket matching
(``1.res=...``, ``LABEL[..]``, ``BRACKET[..]``, ``EXTRA[..]``, ``CROSSING[..]``).  That output
shows EVALB's arrays as they stand, so this module models them as EVALB keeps them: every
bracket read (deleted and empty ones included) with its ``result`` code (9 undecided, 0
unmatched, 1 matched, 5 deleted), every kept terminal with its ``result`` (9, or 1/0 once the
tags are compared) and the byte offsets EVALB uses to print a bracket's text.

It is a separate, slower path used only when ``params.debug > 0``; its scores are the scores of
:func:`fastspectral.eval.evalb._score` (the tests check that both agree).  Lines are first read
by :func:`fastspectral.eval.evalb.read_evalb_tree`, so malformed input raises the same
``FormatError`` on both paths.  Padding (``%-6s``, ``%-16s``) counts bytes in the file's encoding,
as C's ``printf`` does.  The text is transcribed from EVALB's source (``dsp_info`` and the
``DEBUG>1`` ``printf`` calls); no reference output of the C program with ``DEBUG`` set is at hand,
so it is not checked against the binary.
"""
from __future__ import annotations

from ._evalb_base import SentenceResult, _Compiled, _strip_function_tags

_SPACE = " \t\n\v\f\r"              # C's isspace()
_TERM = _SPACE + "()"               # EVALB's is_terminator()
_MAX_QUOTE_TERM = 20                # EVALB's quote-term array (fix_quote's debug loop runs over it)


class _Side:
    """One side (gold or test) as EVALB's ``read_line`` leaves it."""

    __slots__ = ("line", "terms", "quotes", "brackets", "length")

    def __init__(self, line):
        self.line = line
        self.terms = []        # [word, label, result]
        self.quotes = []       # [word, label, index, bracket, ends]
        self.brackets = []     # [start, end, buf_start, buf_end, label, result]
        self.length = 0        # r_wn: terminals not in DELETE_LABEL_FOR_LENGTH


def _read(c: _Compiled, line: str, out: list) -> _Side:
    """EVALB's ``read_line`` on a line already checked by ``read_evalb_tree``."""
    if "\0" in line:
        line = line[:line.index("\0")]
    side = _Side(line)
    terms, quotes, brackets = side.terms, side.quotes, side.brackets
    dbg2 = c.debug > 1
    n = len(line)
    stack: list = []
    wid = 0
    p = 0
    while p < n:
        ch = line[p]
        if ch in _SPACE:
            p += 1
        elif ch == "(":
            p += 1
            i = p
            while p < n and line[p] not in _TERM:
                p += 1
            label = line[i:p]
            if p < n and line[p] in _SPACE:
                q = p + 1
                while q < n and line[q] in _SPACE:
                    q += 1
                k = q
                while q < n and line[q] not in _TERM:
                    q += 1
                word = line[k:q]
                closed = q < n and line[q] == ")"
                if closed and label not in c.delete_len:
                    side.length += 1
                if dbg2:
                    out.append(f"label={label}, word={word}, wid={wid}\n")
                if closed and label in c.quote and word in ("'", '"', "/"):
                    quotes.append([word, label, wid, len(brackets), list(stack)])
                if closed:
                    if label not in c.delete:
                        terms.append([word, label, 9])
                        wid += 1
                    p = q + 1
                    continue
            # a non-terminal: bracket text starts right after the label
            stack.append(len(brackets))
            brackets.append([wid, -1, p, -1, label, 9])
        else:                                   # ")" (the line was checked: nothing else)
            b = brackets[stack.pop()]
            b[1] = wid
            b[3] = p
            p += 1
    return side


def _reinsert(q, side: _Side, out: list, dbg2: bool) -> None:
    """EVALB's ``reinsert_term``."""
    word, label, ind, bra, ends = q
    side.terms.insert(ind, [word, label, 9])
    if dbg2:
        out.append(f"bra={bra}, ind={ind}\n")
    for k, b in enumerate(side.brackets):
        if dbg2:
            out.append(f"bracket[{k}]={{{b[0]},{b[1]}}}\n")
        if k >= bra:
            b[0] += 1
            b[1] += 1
    if dbg2:
        out.append(f"endslen={len(ends)}\n")
    for k in ends:
        side.brackets[k][1] += 1


def _fix_quote(c: _Compiled, g: _Side, t: _Side, out: list) -> None:
    """EVALB's ``fix_quote``."""
    dbg2 = c.debug > 1
    q1, q2 = g.quotes, t.quotes
    if dbg2:
        for i in range(max(_MAX_QUOTE_TERM, len(q1), len(q2))):
            if i < len(q1):
                out.append(f"{q1[i][2]}: {q1[i][1]} - {q1[i][0]}\n")
            if i < len(q2):
                out.append(f"{q2[i][2]}: {q2[i][1]} - {q2[i][0]}\n")
    delete = c.delete
    for i in range(len(q2)):
        ind = q2[i][2]
        for j in range(len(q1)):
            if q1[j][2] == ind and q1[j][1] != q2[i][1]:
                if q1[j][1] in delete and q2[i][1] not in delete:
                    _reinsert(q1[j], g, out, dbg2)
                    for k in range(j, len(q1)):
                        q1[k][2] += 1
                elif q2[i][1] in delete and q1[j][1] not in delete:
                    _reinsert(q2[i], t, out, dbg2)
                    for k in range(i, len(q2)):
                        q2[k][2] += 1


def _massage(c: _Compiled, side: _Side) -> int:
    """EVALB's ``massage_data`` for one side; returns the number of kept brackets."""
    kept = 0
    for b in side.brackets:
        b[5] = 0
        if b[0] == b[1]:
            b[5] = 5
            continue
        b[4] = _strip_function_tags(b[4])
        if b[4] in c.delete_bracket:
            b[5] = 5
        else:
            kept += 1
    return kept


def _calc(c: _Compiled, g: _Side, t: _Side, sent_id: int, out: list) -> SentenceResult:
    """EVALB's ``calc_result`` with its ``DEBUG > 1`` printing."""
    dbg2 = c.debug > 1
    if dbg2:
        out.append("\n")
    if not t.terms:
        return SentenceResult(sent_id, g.length, 2)
    if len(g.terms) != len(t.terms):
        _fix_quote(c, g, t, out)
        if len(g.terms) != len(t.terms):
            return SentenceResult(sent_id, g.length, 1, message=(
                f"Length unmatch ({len(g.terms)}|{len(t.terms)})"))
    for a, b in zip(g.terms, t.terms):
        if not c.word_eq(a[0], b[0]):
            return SentenceResult(sent_id, g.length, 1, message=f"Words unmatch ({a[0]}|{b[0]})")

    r_bn1 = _massage(c, g)
    r_bn2 = _massage(c, t)
    b1s, b2s = g.brackets, t.brackets

    def text(side, b):
        return side.line[b[2]:b[3]]

    match = 0
    match_j = [0] * len(b2s)
    for b1 in b1s:
        match_found = False
        for j, b2 in enumerate(b2s):
            if dbg2:
                out.append(f"1.res={b1[5]}, 2.res={b2[5]}, 1.start={b1[0]}, 2.start={b2[0]}, "
                           f"1.end={b1[1]}, 2.end={b2[1]}\n")
            if b1[5] != 5 and b2[5] == 0 and b1[0] == b2[0] and b1[1] == b2[1]:
                if not c.labeled or c.label_eq(b1[4], b2[4]):
                    b1[5] = b2[5] = 1
                    match += 1
                    match_found = True
                    break
                if dbg2:
                    out.append(f"  LABEL[{b1[0]}-{b1[1] - 1}]: {text(g, b1)}\n")
                match_found = True
                match_j[j] = 1
        if not match_found and b1[5] != 5 and dbg2:
            out.append(f"  BRACKET[{b1[0]}-{b1[1] - 1}]: {text(g, b1)}\n")
    if dbg2:
        for j, b2 in enumerate(b2s):
            if b2[5] == 0 and not match_j[j]:
                out.append(f"  EXTRA[{b2[0]}-{b2[1] - 1}]: {text(t, b2)}\n")

    crossing = 0
    last_i = -1
    for b2 in b2s:
        for i, b1 in enumerate(b1s):
            if b1[5] != 5 and b2[5] != 5 and (
                    (b1[0] < b2[0] and b1[1] > b2[0] and b1[1] < b2[1]) or
                    (b1[0] > b2[0] and b1[0] < b2[1] and b1[1] > b2[1])):
                if i != last_i:
                    if dbg2:
                        out.append(f"  CROSSING[{b1[0]}-{b1[1] - 1}]: {text(g, b1)}\n")
                    last_i = i
                crossing += 1
                break

    correct = 0
    for a, b in zip(g.terms, t.terms):
        if c.label_eq(a[1], b[1]):
            a[2] = b[2] = 1
            correct += 1
        else:
            a[2] = b[2] = 0
    return SentenceResult(sent_id, g.length, 0, match, r_bn1, r_bn2, crossing, len(g.terms),
                          correct)


def _ljust(s: str, width: int, encoding: str) -> str:
    """``%-<width>s``: pad to ``width`` bytes in ``encoding``."""
    n = len(s.encode(encoding, "surrogateescape"))
    return s + " " * (width - n) if n < width else s


def _dsp_info(g: _Side, t: _Side, encoding: str) -> str:
    """EVALB's ``dsp_info`` (printed after each sentence's line when ``DEBUG >= 1``)."""
    wn1, wn2 = len(g.terms), len(t.terms)
    bn1, bn2 = len(g.brackets), len(t.brackets)
    out = [f"-<1>---(wn1={wn1:3d}, bn1={bn1:3d})-           ",
           f"-<2>---(wn2={wn2:3d}, bn2={bn2:3d})-\n"]
    for i in range(max(wn1, wn2)):
        a = g.terms[i] if i < wn1 else None
        if a is not None and a[0] != "":
            out.append(f"{i:3d} : {a[2]} : {_ljust(a[1], 6, encoding)}  "
                       f"{_ljust(a[0], 16, encoding)}      ")
        else:
            out.append(" " * 40)
        b = t.terms[i] if i < wn2 else None
        if b is not None and b[0] != "":
            out.append(f"{i:3d} : {b[2]} : {_ljust(b[1], 6, encoding)}  "
                       f"{_ljust(b[0], 16, encoding)}\n")
        else:
            out.append("\n")
    out.append("\n")
    for i in range(max(bn1, bn2)):
        if i < bn1:
            a = g.brackets[i]
            out.append(f"{i:3d} : {a[5]} : {a[0]:3d}  {a[1]:3d}  {_ljust(a[4], 6, encoding)}      ")
        else:
            out.append(" " * 32)
        if i < bn2:
            b = t.brackets[i]
            out.append(f"{i:3d} : {b[5]} : {b[0]:3d}  {b[1]:3d}  {_ljust(b[4], 6, encoding)}\n")
        else:
            out.append("\n")
    out.append("\n")
    out.append("========\n")
    return "".join(out)


def trace_sentence(c: _Compiled, gold_line: str, test_line: str, sent_id: int,
                   encoding: str = "utf-8"):
    """Score one sentence as EVALB does with ``DEBUG = c.debug``.

    Returns ``(result, before, after)``: the :class:`SentenceResult`, the text EVALB prints
    before the sentence's line (``DEBUG >= 2``: reading, quote repair and matching traces; for an
    error sentence this is everything printed before its ``Error()``) and after it
    (``dsp_info``; empty for an error sentence that stops EVALB, which never gets there).
    """
    out: list = []
    g = _read(c, gold_line, out)
    t = _read(c, test_line, out)
    r = _calc(c, g, t, sent_id, out)
    after = _dsp_info(g, t, encoding) if c.debug >= 1 else ""
    return r, "".join(out), after
